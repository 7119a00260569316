//! [`Kubelet`]: a test-only stand-in for the kubelet that runs each Pod's container as a
//! local process.
//!
//! It registers a Node of a real API server (`kubelet/node.rs`) and binds the Pods of its
//! namespace to it. For every Pod bound to it, it unpacks the container's image (an OCI layout the test
//! registers, as a node's image store holds pulled images) into a root filesystem of the
//! pod's own (hard links to one unpacked copy), writes the ConfigMaps and Secrets the pod
//! mounts as files at their mount paths in it, gives the pod an address of its own on this
//! machine (its `status.podIP`: see [`pod_ip`]), and runs the command and arguments — with
//! `$(VAR)` expanded and the image's and the container's environment, the downward API
//! fields and secret references resolved — under `chroot` as the pod's user (root is
//! needed for that), with the `/dev` nodes a container runtime provides. It polls the
//! readiness probe, restarts a container that exits or fails its liveness probe (with
//! CrashLoopBackOff-style backoff, from 1 s), reports the pod's status (phase, IP,
//! conditions, restarts, last termination) and, when a pod is deleted, sends SIGTERM, waits
//! for its grace period, kills, and removes it.
//!
//! Not done: PersistentVolumeClaims (such pods wait with `CreateContainerConfigError`),
//! network isolation (pods share the machine's network, so ports of different pods only
//! differ by address), resource limits, init containers, exec probes.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, Secret};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, Client, ResourceExt as _};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_util::sync::CancellationToken;

use crate::store::now;

mod node;

/// A running container.
#[derive(Debug)]
struct Running {
    child: tokio::process::Child,
    started: String,
    started_at: Instant,
}

/// What the stand-in knows of one pod.
#[derive(Debug)]
struct PodState {
    uid: String,
    ip: String,
    root: PathBuf,
    log: PathBuf,
    program: Vec<String>,
    env: Vec<(String, String)>,
    user: String,
    running: Option<Running>,
    restarts: i32,
    last_terminated: Option<serde_json::Value>,
    waiting: Option<(String, String)>,
    restart_at: Option<Instant>,
    backoff: Duration,
    ready: bool,
    liveness_failures: i32,
    last_liveness: Instant,
    terminating_since: Option<Instant>,
    reported: serde_json::Value,
}

#[derive(Debug, Default)]
struct Shared {
    pods: HashMap<String, PodState>,
}

/// The stand-in; dropping it does not stop the pods: cancel the token given to
/// [`start`](Kubelet::start) (its loop kills every process before it ends).
#[derive(Debug, Clone)]
pub struct Kubelet {
    shared: Arc<Mutex<Shared>>,
    work: PathBuf,
    /// The Node it registered and runs the pods bound to.
    node: String,
}

impl Kubelet {
    /// Starts the stand-in as Node `node` of a real API server, for the pods of
    /// `namespace`, with `images` (reference to OCI layout directory) as its image store and
    /// `work` for root filesystems and logs. It registers the Node, keeps it Ready
    /// (renewing its Lease every 10 s), binds each pod of `namespace` that no node holds to
    /// it (as a scheduler would; none runs) and runs the pods bound to it, so that a
    /// deleted pod is stopped within its grace period as a kubelet stops it.
    pub fn start(
        client: Client,
        node: &str,
        namespace: &str,
        images: BTreeMap<String, PathBuf>,
        work: &Path,
        stop: CancellationToken,
    ) -> Kubelet {
        let kubelet = Kubelet {
            shared: Arc::new(Mutex::new(Shared::default())),
            work: work.to_owned(),
            node: node.to_owned(),
        };
        let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
        let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
        let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
        let this = kubelet.clone();
        tokio::spawn(async move {
            let apis = Apis {
                pods,
                config_maps,
                secrets,
            };
            let mut unpacked: BTreeMap<
                String,
                Result<(PathBuf, runnel_image::layout::ImageConfig), String>,
            > = BTreeMap::new();
            // When the node was last registered or its Lease renewed.
            let mut heartbeat: Option<Instant> = None;
            while !stop.is_cancelled() {
                if heartbeat.is_none_or(|at| at.elapsed() >= node::RENEW_EVERY) {
                    let node = &this.node;
                    let beat = match heartbeat {
                        None => node::register(&client, node).await,
                        Some(_) => node::heartbeat(&client, node).await,
                    };
                    match beat {
                        Ok(()) => heartbeat = Some(Instant::now()),
                        Err(error) => tracing::debug!("node {node} will try again: {error}"),
                    }
                }
                if let Err(error) = this.step(&apis, &images, &mut unpacked).await {
                    tracing::debug!("the kubelet stand-in will retry: {error}");
                }
                tokio::select! {
                    () = stop.cancelled() => {}
                    () = tokio::time::sleep(Duration::from_millis(200)) => {}
                }
            }
            this.kill_all();
        });
        kubelet
    }

    /// Kills the container of pod `name` with SIGKILL, as a crash would; the stand-in
    /// restarts it. Returns whether there was a process.
    pub fn kill(&self, name: &str) -> bool {
        let mut shared = self.shared.lock().expect("not poisoned");
        let Some(state) = shared.pods.get_mut(name) else {
            return false;
        };
        match state.running.as_mut() {
            Some(running) => running.child.start_kill().is_ok(),
            None => false,
        }
    }

    /// What pod `name`'s container printed so far (standard output and error).
    pub fn logs(&self, name: &str) -> String {
        std::fs::read_to_string(self.work.join("pods").join(name).join("container.log"))
            .unwrap_or_default()
    }

    /// The pods with a running process, by name.
    pub fn running(&self) -> Vec<String> {
        let shared = self.shared.lock().expect("not poisoned");
        let mut names: Vec<String> = shared
            .pods
            .iter()
            .filter(|(_, s)| s.running.is_some())
            .map(|(name, _)| name.clone())
            .collect();
        names.sort();
        names
    }

    fn kill_all(&self) {
        let mut shared = self.shared.lock().expect("not poisoned");
        for state in shared.pods.values_mut() {
            if let Some(running) = state.running.as_mut() {
                let _ = running.child.start_kill();
            }
        }
    }

    async fn step(
        &self,
        apis: &Apis,
        images: &BTreeMap<String, PathBuf>,
        unpacked: &mut BTreeMap<
            String,
            Result<(PathBuf, runnel_image::layout::ImageConfig), String>,
        >,
    ) -> Result<(), kube::Error> {
        let listed = apis.pods.list(&ListParams::default()).await?.items;
        let names: Vec<String> = listed.iter().map(|p| p.name_any()).collect();
        // Pods gone from the API: stop what still runs.
        {
            let mut shared = self.shared.lock().expect("not poisoned");
            let gone: Vec<String> = shared
                .pods
                .keys()
                .filter(|n| !names.contains(n))
                .cloned()
                .collect();
            for name in gone {
                if let Some(mut state) = shared.pods.remove(&name)
                    && let Some(running) = state.running.as_mut()
                {
                    let _ = running.child.start_kill();
                }
            }
        }
        for pod in listed {
            match pod.spec.as_ref().and_then(|spec| spec.node_name.as_deref()) {
                Some(bound) if bound == self.node => {}
                Some(_) => continue,
                None => {
                    if pod.metadata.deletion_timestamp.is_none() {
                        node::bind(&apis.pods, &pod.name_any(), &self.node).await?;
                    }
                    continue;
                }
            }
            self.step_pod(apis, &pod, images, unpacked).await?;
        }
        Ok(())
    }

    async fn step_pod(
        &self,
        apis: &Apis,
        pod: &Pod,
        images: &BTreeMap<String, PathBuf>,
        unpacked: &mut BTreeMap<
            String,
            Result<(PathBuf, runnel_image::layout::ImageConfig), String>,
        >,
    ) -> Result<(), kube::Error> {
        let name = pod.name_any();
        let uid = pod.uid().unwrap_or_default();
        let known = self
            .shared
            .lock()
            .expect("not poisoned")
            .pods
            .get(&name)
            .is_some_and(|s| s.uid == uid);
        if !known {
            if pod.metadata.deletion_timestamp.is_some() {
                // Never started here: nothing to stop.
                apis.pods
                    .delete(&name, &DeleteParams::default().grace_period(0))
                    .await
                    .ok();
                return Ok(());
            }
            match self.prepare(apis, pod, images, unpacked).await {
                Ok(state) => {
                    self.shared
                        .lock()
                        .expect("not poisoned")
                        .pods
                        .insert(name.clone(), state);
                }
                Err((reason, message)) => {
                    let status = serde_json::json!({"status": {
                        "phase": "Pending",
                        "conditions": [{"type": "Ready", "status": "False", "reason": reason}],
                        "containerStatuses": [{"name": container(pod).name, "image": container(pod).image, "imageID": "", "ready": false, "restartCount": 0,
                            "state": {"waiting": {"reason": reason, "message": message}}}],
                    }});
                    apis.pods
                        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                        .await?;
                    return Ok(());
                }
            }
        }
        let grace = pod
            .metadata
            .deletion_grace_period_seconds
            .unwrap_or(30)
            .max(0) as u64;
        let status = {
            let mut shared = self.shared.lock().expect("not poisoned");
            let state = shared.pods.get_mut(&name).expect("inserted above");
            if pod.metadata.deletion_timestamp.is_some() {
                let since = *state.terminating_since.get_or_insert_with(|| {
                    if let Some(running) = &state.running
                        && let Some(pid) = running.child.id()
                    {
                        let _ = std::process::Command::new("kill")
                            .args(["-TERM", &pid.to_string()])
                            .status();
                    }
                    Instant::now()
                });
                let exited = match state.running.as_mut() {
                    Some(running) => running.child.try_wait().ok().flatten().is_some(),
                    None => true,
                };
                if !exited && since.elapsed() > Duration::from_secs(grace) {
                    if let Some(running) = state.running.as_mut() {
                        let _ = running.child.start_kill();
                    }
                    None
                } else if exited {
                    Some(serde_json::Value::Null)
                } else {
                    None
                }
            } else {
                self.supervise(state);
                Some(status_of(pod, state))
            }
        };
        match status {
            // Stopped: the pod goes for good.
            Some(serde_json::Value::Null) => {
                self.shared.lock().expect("not poisoned").pods.remove(&name);
                apis.pods
                    .delete(&name, &DeleteParams::default().grace_period(0))
                    .await
                    .ok();
            }
            Some(status) => {
                self.probe(pod, &name).await;
                let status = {
                    let shared = self.shared.lock().expect("not poisoned");
                    shared
                        .pods
                        .get(&name)
                        .map(|state| status_of(pod, state))
                        .unwrap_or(status)
                };
                let changed = {
                    let mut shared = self.shared.lock().expect("not poisoned");
                    let state = shared.pods.get_mut(&name).expect("still tracked");
                    let changed = state.reported != status;
                    state.reported = status.clone();
                    changed
                };
                if changed {
                    apis.pods
                        .patch_status(
                            &name,
                            &PatchParams::default(),
                            &Patch::Merge(&serde_json::json!({"status": status})),
                        )
                        .await?;
                }
            }
            None => {}
        }
        Ok(())
    }

    /// Starts, restarts and notices exits.
    fn supervise(&self, state: &mut PodState) {
        if let Some(running) = state.running.as_mut()
            && let Ok(Some(exit)) = running.child.try_wait()
        {
            let code = exit.code().unwrap_or(137);
            let message: String = std::fs::read_to_string(&state.log)
                .unwrap_or_default()
                .lines()
                .rev()
                .take(3)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n");
            state.last_terminated = Some(serde_json::json!({"terminated": {
                "exitCode": code,
                "reason": if code == 0 { "Completed" } else { "Error" },
                "message": message,
                "startedAt": running.started,
                "finishedAt": now(),
            }}));
            // A container that ran for a while restarts at once; one that keeps failing
            // waits longer each time.
            if running.started_at.elapsed() > Duration::from_secs(60) {
                state.backoff = Duration::from_secs(1);
            }
            state.running = None;
            state.ready = false;
            state.restarts += 1;
            state.restart_at = Some(Instant::now() + state.backoff);
            state.waiting = Some((
                "CrashLoopBackOff".to_owned(),
                format!("back-off {:?} restarting failed container", state.backoff),
            ));
            state.backoff = (state.backoff * 2).min(Duration::from_secs(30));
        }
        if state.running.is_none() && state.restart_at.is_none_or(|at| Instant::now() >= at) {
            match spawn(state) {
                Ok(running) => {
                    state.running = Some(running);
                    state.waiting = None;
                    state.restart_at = None;
                    state.liveness_failures = 0;
                    state.last_liveness = Instant::now();
                }
                Err(message) => {
                    state.waiting = Some(("RunContainerError".to_owned(), message));
                    state.restart_at = Some(Instant::now() + state.backoff);
                }
            }
        }
    }

    /// The readiness probe every step; the liveness probe every period.
    async fn probe(&self, pod: &Pod, name: &str) {
        let container = container(pod);
        let (ip, running, last_liveness) = {
            let shared = self.shared.lock().expect("not poisoned");
            let Some(state) = shared.pods.get(name) else {
                return;
            };
            (
                state.ip.clone(),
                state.running.is_some(),
                state.last_liveness,
            )
        };
        if !running {
            return;
        }
        let ready = match &container.readiness_probe {
            Some(probe) => http_probe(&ip, &container, probe).await,
            None => true,
        };
        let mut live = None;
        if let Some(probe) = &container.liveness_probe {
            let period = Duration::from_secs(probe.period_seconds.unwrap_or(10).max(1) as u64);
            let initial =
                Duration::from_secs(probe.initial_delay_seconds.unwrap_or(0).max(0) as u64);
            if last_liveness.elapsed() >= period.max(initial) {
                live = Some((
                    http_probe(&ip, &container, probe).await,
                    probe.failure_threshold.unwrap_or(3),
                ));
            }
        }
        let mut shared = self.shared.lock().expect("not poisoned");
        let Some(state) = shared.pods.get_mut(name) else {
            return;
        };
        state.ready = ready;
        if let Some((ok, threshold)) = live {
            state.last_liveness = Instant::now();
            state.liveness_failures = if ok { 0 } else { state.liveness_failures + 1 };
            if state.liveness_failures >= threshold
                && let Some(running) = state.running.as_mut()
            {
                let _ = running.child.start_kill();
            }
        }
    }

    async fn prepare(
        &self,
        apis: &Apis,
        pod: &Pod,
        images: &BTreeMap<String, PathBuf>,
        unpacked: &mut BTreeMap<
            String,
            Result<(PathBuf, runnel_image::layout::ImageConfig), String>,
        >,
    ) -> Result<PodState, (String, String)> {
        let name = pod.name_any();
        let container = container(pod);
        let reference = container.image.clone().unwrap_or_default();
        let Some(layout) = images.get(&reference) else {
            return Err((
                "ErrImagePull".to_owned(),
                format!("image {reference} is not in the stand-in's image store"),
            ));
        };
        let (image_root, config) = unpacked
            .entry(reference.clone())
            .or_insert_with(|| {
                let root = self
                    .work
                    .join("images")
                    .join(reference.replace(['/', ':'], "_"));
                let (_, tag) =
                    runnel_image::split_reference(&reference).map_err(|e| e.to_string())?;
                let config =
                    runnel_image::unpack(layout, Some(tag), &root).map_err(|e| e.to_string())?;
                Ok((root, config))
            })
            .clone()
            .map_err(|message| ("ErrImagePull".to_owned(), message))?;
        let directory = self.work.join("pods").join(&name);
        let _ = std::fs::remove_dir_all(&directory);
        let root = directory.join("rootfs");
        link_tree(&image_root, &root)
            .and_then(|()| devices(&root))
            .map_err(|e| ("CreateContainerError".to_owned(), e.to_string()))?;
        let failure = |message: String| ("CreateContainerConfigError".to_owned(), message);
        let spec = pod.spec.clone().unwrap_or_default();
        let user_of = |security: Option<(Option<i64>, Option<i64>)>| security;
        let pod_security = spec
            .security_context
            .as_ref()
            .map(|s| (s.run_as_user, s.run_as_group));
        let container_security = container
            .security_context
            .as_ref()
            .map(|s| (s.run_as_user, s.run_as_group));
        let (user, group) = match (user_of(container_security), user_of(pod_security)) {
            (Some((Some(u), g)), pod) => (
                u.to_string(),
                g.or(pod.and_then(|p| p.1))
                    .map_or_else(|| u.to_string(), |g| g.to_string()),
            ),
            (_, Some((Some(u), g))) => (
                u.to_string(),
                g.map_or_else(|| u.to_string(), |g| g.to_string()),
            ),
            _ => {
                let image_user = if config.config.user.is_empty() {
                    "0:0".to_owned()
                } else {
                    config.config.user.clone()
                };
                let (u, g) = image_user
                    .split_once(':')
                    .map_or((image_user.clone(), image_user.clone()), |(u, g)| {
                        (u.to_owned(), g.to_owned())
                    });
                (u, g)
            }
        };
        for volume in spec.volumes.clone().unwrap_or_default() {
            let mount = container
                .volume_mounts
                .clone()
                .unwrap_or_default()
                .into_iter()
                .find(|m| m.name == volume.name);
            let Some(mount) = mount else { continue };
            let target = root.join(mount.mount_path.trim_start_matches('/'));
            std::fs::create_dir_all(&target).map_err(|e| failure(e.to_string()))?;
            let files: BTreeMap<String, Vec<u8>> = if let Some(source) = &volume.config_map {
                let object = apis
                    .config_maps
                    .get(&source.name)
                    .await
                    .map_err(|e| failure(format!("configmap {}: {e}", source.name)))?;
                object
                    .data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.into_bytes()))
                    .collect()
            } else if let Some(source) = &volume.secret {
                let secret_name = source.secret_name.clone().unwrap_or_default();
                let object = apis
                    .secrets
                    .get(&secret_name)
                    .await
                    .map_err(|e| failure(format!("secret {secret_name}: {e}")))?;
                object
                    .data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.0))
                    .collect()
            } else if volume.empty_dir.is_some() {
                let _ = std::os::unix::fs::chown(&target, user.parse().ok(), group.parse().ok());
                BTreeMap::new()
            } else {
                return Err(failure(format!(
                    "volume {} is of a kind the kubelet stand-in does not mount",
                    volume.name
                )));
            };
            for (file, content) in files {
                std::fs::write(target.join(&file), content).map_err(|e| failure(e.to_string()))?;
            }
        }
        let ip = pod_ip();
        // The environment: the image's, then the container's, in order, with references.
        let mut env: Vec<(String, String)> = config
            .config
            .env
            .iter()
            .filter_map(|pair| {
                pair.split_once('=')
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
            })
            .collect();
        for variable in container.env.clone().unwrap_or_default() {
            let value = if let Some(value) = variable.value {
                expand(&value, &env)
            } else if let Some(source) = variable.value_from {
                if let Some(field) = source.field_ref {
                    match field.field_path.as_str() {
                        "metadata.name" => name.clone(),
                        "metadata.namespace" => pod.namespace().unwrap_or_default(),
                        "status.podIP" => ip.clone(),
                        "spec.nodeName" => self.node.clone(),
                        other => {
                            return Err(failure(format!(
                                "field {other} is not supported by the stand-in"
                            )));
                        }
                    }
                } else if let Some(key) = source.secret_key_ref {
                    let object = apis
                        .secrets
                        .get(&key.name)
                        .await
                        .map_err(|e| failure(format!("secret {}: {e}", key.name)))?;
                    let bytes = object
                        .data
                        .unwrap_or_default()
                        .remove(&key.key)
                        .ok_or_else(|| {
                            failure(format!("secret {} has no key {}", key.name, key.key))
                        })?;
                    String::from_utf8_lossy(&bytes.0).into_owned()
                } else if let Some(key) = source.config_map_key_ref {
                    let object = apis
                        .config_maps
                        .get(&key.name)
                        .await
                        .map_err(|e| failure(format!("configmap {}: {e}", key.name)))?;
                    object
                        .data
                        .unwrap_or_default()
                        .remove(&key.key)
                        .ok_or_else(|| {
                            failure(format!("configmap {} has no key {}", key.name, key.key))
                        })?
                } else {
                    String::new()
                }
            } else {
                String::new()
            };
            env.retain(|(k, _)| k != &variable.name);
            env.push((variable.name, value));
        }
        let mut program: Vec<String> = match &container.command {
            Some(command) => command.clone(),
            None => config.config.entrypoint.clone(),
        };
        match (&container.command, &container.args) {
            (_, Some(args)) => program.extend(args.iter().cloned()),
            (None, None) => program.extend(config.config.cmd.iter().cloned()),
            (Some(_), None) => {}
        }
        let program = program.iter().map(|part| expand(part, &env)).collect();
        Ok(PodState {
            uid: pod.uid().unwrap_or_default(),
            ip,
            log: directory.join("container.log"),
            root,
            program,
            env,
            user: format!("{user}:{group}"),
            running: None,
            restarts: 0,
            last_terminated: None,
            waiting: None,
            restart_at: None,
            backoff: Duration::from_secs(1),
            ready: false,
            liveness_failures: 0,
            last_liveness: Instant::now(),
            terminating_since: None,
            reported: serde_json::Value::Null,
        })
    }
}

#[derive(Debug)]
struct Apis {
    pods: Api<Pod>,
    config_maps: Api<ConfigMap>,
    secrets: Api<Secret>,
}

fn container(pod: &Pod) -> Container {
    pod.spec
        .as_ref()
        .and_then(|s| s.containers.first().cloned())
        .unwrap_or_default()
}

/// Kubernetes' `$(VAR)` expansion: defined variables are replaced, `$$` is a `$`,
/// anything else stays as written.
fn expand(text: &str, env: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(stripped) = after.strip_prefix('$') {
            out.push('$');
            rest = stripped;
        } else if let Some(inner) = after.strip_prefix('(')
            && let Some(end) = inner.find(')')
            && let Some((_, value)) = env.iter().rev().find(|(k, _)| k == &inner[..end])
        {
            out.push_str(value);
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// Runs the container's program under chroot as its user, output to its log.
fn spawn(state: &PodState) -> Result<Running, String> {
    let chroot = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("chroot"))
        .find(|p| p.is_file())
        .ok_or("chroot is not on the PATH")?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&state.log)
        .map_err(|e| e.to_string())?;
    let errors = log.try_clone().map_err(|e| e.to_string())?;
    let child = tokio::process::Command::new(chroot)
        .env_clear()
        .envs(state.env.iter().map(|(k, v)| (k, v)))
        .arg(format!("--userspec={}", state.user))
        .arg(&state.root)
        .args(&state.program)
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(errors))
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("starting {:?} failed: {e}", state.program))?;
    Ok(Running {
        child,
        started: now(),
        started_at: Instant::now(),
    })
}

/// The pod status to report.
fn status_of(pod: &Pod, state: &PodState) -> serde_json::Value {
    let container = container(pod);
    let ready = state.running.is_some() && state.ready;
    let condition = |kind: &str, ok: bool| serde_json::json!({"type": kind, "status": if ok { "True" } else { "False" }});
    let container_state = match (&state.running, &state.waiting) {
        (Some(running), _) => serde_json::json!({"running": {"startedAt": running.started}}),
        (None, Some((reason, message))) => {
            serde_json::json!({"waiting": {"reason": reason, "message": message}})
        }
        (None, None) => serde_json::json!({"waiting": {"reason": "ContainerCreating"}}),
    };
    let mut status = serde_json::json!({
        "name": container.name,
        "image": container.image,
        "imageID": container.image,
        "ready": ready,
        "started": state.running.is_some(),
        "restartCount": state.restarts,
        "state": container_state,
    });
    if let Some(last) = &state.last_terminated {
        status["lastState"] = last.clone();
    }
    serde_json::json!({
        "phase": "Running",
        "podIP": state.ip,
        "podIPs": [{"ip": state.ip}],
        "hostIP": "127.0.0.1",
        "conditions": [
            condition("PodScheduled", true),
            condition("Initialized", true),
            condition("ContainersReady", ready),
            condition("Ready", ready),
        ],
        "containerStatuses": [status],
    })
}

/// The pods' network: RFC 2544's benchmarking range, which nothing on the internet uses,
/// routed to the loopback interface as a whole (`ip route replace local 198.18.0.0/15 dev
/// lo`), so that every address in it is this machine's without configuring each. A real
/// API server proxies to pods (`pods/proxy`, which `runnel status` uses) only at addresses
/// that are not loopback (127.0.0.0/8), which is why pods do not simply get those.
const POD_NETWORK: &str = "198.18.0.0/15";

/// Routes [`POD_NETWORK`] to the loopback interface, once per process (it needs root, as
/// the stand-in's `chroot` does); `false` if that failed.
fn pod_network_routed() -> bool {
    static ROUTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ROUTED.get_or_init(|| {
        let routed = std::process::Command::new("ip")
            .args(["route", "replace", "local", POD_NETWORK, "dev", "lo"])
            .status()
            .is_ok_and(|status| status.success());
        if !routed {
            eprintln!(
                "kubelet stand-in: routing {POD_NETWORK} to loopback failed (not root, or no `ip`); pods get loopback addresses, which a real API server does not proxy to"
            );
        }
        routed
    })
}

/// An address of this machine no pod has had, as the kubelet stand-in gives each pod: unique
/// in this process (tests run several clusters side by side, and pods listen on fixed ports
/// such as the admin endpoint's), and apart from other test processes' by bytes taken from
/// the process id. In 198.18.0.0/15, which is routed to the loopback interface on first use
/// (that needs root), so a real API server proxies to it; on loopback if that fails.
///
/// ```no_run
/// let ip = runnel_test_cluster::pod_ip();
/// let listener = std::net::TcpListener::bind((ip.as_str(), 9090)).unwrap();
/// ```
pub fn pod_ip() -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let process = std::process::id();
    if pod_network_routed() {
        // 512 process slots of 254 pods each.
        let slot = process % 512;
        format!("198.{}.{}.{}", 18 + slot / 256, slot % 256, 1 + n % 254)
    } else {
        let process = 1 + process % 254;
        format!("127.{process}.{}.{}", (n / 250) % 256, 1 + n % 250)
    }
}

/// An HTTP GET probe: 200-399 within the probe's timeout is a success.
async fn http_probe(
    ip: &str,
    container: &Container,
    probe: &k8s_openapi::api::core::v1::Probe,
) -> bool {
    let Some(get) = &probe.http_get else {
        return true;
    };
    let port = match &get.port {
        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(port) => *port,
        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(name) => container
            .ports
            .clone()
            .unwrap_or_default()
            .into_iter()
            .find(|p| p.name.as_deref() == Some(name))
            .map_or(0, |p| p.container_port),
    };
    let path = get.path.clone().unwrap_or_else(|| "/".to_owned());
    let timeout = Duration::from_secs(probe.timeout_seconds.unwrap_or(1).max(1) as u64);
    let attempt = async {
        let mut stream = tokio::net::TcpStream::connect((ip, port as u16))
            .await
            .ok()?;
        let request = format!("GET {path} HTTP/1.0\r\nHost: {ip}\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut head = [0u8; 32];
        let read = stream.read(&mut head).await.ok()?;
        let line = String::from_utf8_lossy(&head[..read]).into_owned();
        let code: u16 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some((200..400).contains(&code))
    };
    tokio::time::timeout(timeout, attempt)
        .await
        .ok()
        .flatten()
        .unwrap_or(false)
}

/// The character devices a container runtime gives every container (`/dev/null`,
/// `/dev/zero`, `/dev/random`, `/dev/urandom`), made in the pod's root: a process that
/// starts a child with its input from `/dev/null` needs it.
fn devices(root: &Path) -> std::io::Result<()> {
    let dev = root.join("dev");
    std::fs::create_dir_all(&dev)?;
    for (name, minor) in [
        ("null", "3"),
        ("zero", "5"),
        ("random", "8"),
        ("urandom", "9"),
    ] {
        let path = dev.join(name);
        if path.exists() {
            continue;
        }
        let status = std::process::Command::new("mknod")
            .args(["-m", "666"])
            .arg(&path)
            .args(["c", "1", minor])
            .status()?;
        if !status.success() {
            return Err(std::io::Error::other(format!(
                "mknod {} failed ({status})",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Recreates the tree at `from` under `to` with hard links (directories are made).
fn link_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            link_tree(&entry.path(), &target)?;
            let permissions = std::fs::metadata(entry.path())?.permissions();
            std::fs::set_permissions(&target, permissions)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        } else {
            std::fs::hard_link(entry.path(), &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_expand_as_kubernetes_expands_them() {
        let env = vec![("POD_IP".to_owned(), "127.0.1.2".to_owned())];
        assert_eq!(expand("$(POD_IP):9090", &env), "127.0.1.2:9090");
        assert_eq!(
            expand("$(UNSET) $$(POD_IP) $", &env),
            "$(UNSET) $(POD_IP) $"
        );
    }
}

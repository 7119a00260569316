//! [`ControlPlane`]: a real Kubernetes control plane (etcd, kube-apiserver with RBAC and the
//! default admission plugins, kube-controller-manager) on loopback, run by
//! `scripts/kube-dev` from binaries built from Go modules.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A real Kubernetes control plane in a directory of its own, stopped and removed when
/// dropped. Its kubeconfig authenticates as an administrator (`system:masters`); [`token`]
/// and [`kubeconfig_with_token`] authenticate as a service account instead, so that what
/// the RBAC rules grant is all a client may do.
///
/// No kubelet runs: Pods stay Pending unless a stand-in such as [`Kubelet`](crate::Kubelet)
/// reports them.
///
/// [`token`]: ControlPlane::token
/// [`kubeconfig_with_token`]: ControlPlane::kubeconfig_with_token
///
/// ```no_run
/// let cluster = runnel_test_cluster::ControlPlane::start();
/// let namespaces = cluster.kubectl(&["get", "namespaces", "-o", "name"]);
/// assert!(String::from_utf8_lossy(&namespaces.stdout).contains("namespace/default"));
/// ```
#[derive(Debug)]
pub struct ControlPlane {
    dir: PathBuf,
    kubeconfig: PathBuf,
}

impl ControlPlane {
    /// Starts a control plane (about 5 to 10 s) with fresh certificates and an empty etcd.
    ///
    /// # Panics
    ///
    /// When `scripts/kube-dev` fails: its binaries are not built (`scripts/kube-dev
    /// install`), or a component does not become ready (the message holds the end of its
    /// log).
    pub fn start() -> ControlPlane {
        let dir = std::env::temp_dir().join(format!(
            "runnel-control-plane-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_nanos())
        ));
        let script = kube_dev();
        let output = Command::new(&script)
            .args(["start", "--dir"])
            .arg(&dir)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|error| panic!("running {} failed: {error}", script.display()));
        assert!(
            output.status.success(),
            "starting a Kubernetes control plane in {} failed (is it built? scripts/kube-dev install): {}",
            dir.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
        let kubeconfig = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        ControlPlane { dir, kubeconfig }
    }

    /// Kills the API server (SIGKILL) and starts it again on the same address and etcd
    /// (`scripts/kube-dev restart-apiserver`, about 3 s): every client's watch ends, and
    /// the server's watch cache starts afresh, so a watch resumed from an older
    /// resourceVersion is answered 410 Gone and its client lists again.
    ///
    /// # Panics
    ///
    /// When the API server does not come back (the message holds the end of its log).
    pub fn restart_api_server(&self) {
        let output = Command::new(kube_dev())
            .args(["restart-apiserver", "--dir"])
            .arg(&self.dir)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|error| panic!("running scripts/kube-dev failed: {error}"));
        assert!(
            output.status.success(),
            "restarting the API server in {} failed: {}",
            self.dir.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }

    /// The administrator's kubeconfig.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The directory holding the control plane's certificates, data and logs.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs `kubectl --kubeconfig <the administrator's> ARGS`.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_with(&self.kubeconfig, args, None)
    }

    /// Runs `kubectl --kubeconfig KUBECONFIG ARGS`, with `input` on its standard input.
    ///
    /// # Panics
    ///
    /// When kubectl cannot be run.
    pub fn kubectl_with(&self, kubeconfig: &Path, args: &[&str], input: Option<&[u8]>) -> Output {
        let mut child = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(args)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|error| panic!("running kubectl failed: {error}"));
        if let Some(input) = input {
            use std::io::Write;
            let mut stdin = child.stdin.take().expect("kubectl's standard input");
            stdin.write_all(input).expect("writing to kubectl");
        }
        child.wait_with_output().expect("waiting for kubectl")
    }

    /// A token of service account `name` in `namespace` (`kubectl create token`).
    ///
    /// # Panics
    ///
    /// When the server does not issue one (the service account does not exist).
    pub fn token(&self, namespace: &str, name: &str) -> String {
        let output = self.kubectl(&["create", "token", name, "-n", namespace]);
        assert!(
            output.status.success(),
            "creating a token of {namespace}/{name} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    /// Writes a kubeconfig to `file` that talks to this control plane as the holder of
    /// `token`, in `namespace`, and returns `file`.
    ///
    /// # Panics
    ///
    /// When the administrator's kubeconfig cannot be read or `file` written.
    pub fn kubeconfig_with_token(&self, file: &Path, token: &str, namespace: &str) -> PathBuf {
        let admin = std::fs::read_to_string(&self.kubeconfig).expect("reading the kubeconfig");
        let field = |name: &str| {
            admin
                .lines()
                .find_map(|line| line.trim().strip_prefix(name))
                .unwrap_or_else(|| panic!("the kubeconfig has no {name}"))
                .trim()
                .to_owned()
        };
        let (server, authority) = (field("server:"), field("certificate-authority-data:"));
        let config = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kube-dev\n  cluster:\n    server: {server}\n    certificate-authority-data: {authority}\nusers:\n- name: token\n  user:\n    token: {token}\ncontexts:\n- name: kube-dev\n  context:\n    cluster: kube-dev\n    user: token\n    namespace: {namespace}\ncurrent-context: kube-dev\n"
        );
        std::fs::write(file, config).expect("writing the kubeconfig");
        file.to_owned()
    }

    /// A client of the API server from `kubeconfig` (the administrator's, or one from
    /// [`kubeconfig_with_token`](ControlPlane::kubeconfig_with_token)).
    ///
    /// # Panics
    ///
    /// When the kubeconfig cannot be read or used.
    pub async fn client(kubeconfig: &Path) -> kube::Client {
        let file = kube::config::Kubeconfig::read_from(kubeconfig).expect("reading a kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(file, &Default::default())
            .await
            .expect("a kubeconfig kube can use");
        kube::Client::try_from(config).expect("a kube client")
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        let mut stop = Command::new(kube_dev());
        stop.args(["stop", "--dir"]).arg(&self.dir);
        if !std::thread::panicking() {
            stop.arg("--purge");
        } else {
            eprintln!(
                "the control plane's certificates, data and logs stay in {}",
                self.dir.display()
            );
        }
        let _ = stop.stdout(Stdio::null()).stderr(Stdio::null()).status();
    }
}

fn kube_dev() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kube-dev")
}

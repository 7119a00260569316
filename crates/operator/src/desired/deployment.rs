//! The Deployment of a streamlet: pods running `APP run-streamlet INSTANCE`.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, RollingUpdateDeployment,
};
use k8s_openapi::api::core::v1::{
    Capabilities, ConfigMapVolumeSource, Container, ContainerPort, EnvVar, EnvVarSource,
    HTTPGetAction, LocalObjectReference, ObjectFieldSelector, PersistentVolumeClaimVolumeSource,
    PodSecurityContext, PodSpec, PodTemplateSpec, Probe, ResourceRequirements, SeccompProfile,
    SecretKeySelector, SecretVolumeSource, SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use runnel_application::{ADMIN_PORT, Quantities};

use super::Streamlet;
use super::configuration::{ENV_PREFIX, config_hash};
use super::scheduling::{affinity, tolerations};
use crate::names::{
    BLUEPRINT_FILE, CONFIG_FILE, CONFIG_HASH_ANNOTATION, CONFIG_MOUNT, SECRET_MOUNT, labels,
    selector,
};

/// The user and group the app image runs as (`app build` writes them into the image).
pub(crate) const APP_USER: i64 = 10001;
/// The container's name.
pub(crate) const CONTAINER: &str = "streamlet";
/// How long a stopping pod may drain: the app waits up to 30 s for streamlets to commit.
const GRACE_SECONDS: i64 = 40;

/// The streamlet's Deployment.
pub(crate) fn deployment(streamlet: &Streamlet<'_>) -> Deployment {
    let app = streamlet.app;
    let mut pod_labels = streamlet.resolved.pod.labels.clone();
    pod_labels.extend(labels(app.name(), streamlet.instance, &app.spec.version));
    let mut annotations = streamlet.resolved.pod.annotations.clone();
    annotations.extend([
        (CONFIG_HASH_ANNOTATION.to_owned(), config_hash(streamlet)),
        ("prometheus.io/scrape".to_owned(), "true".to_owned()),
        ("prometheus.io/port".to_owned(), ADMIN_PORT.to_string()),
        ("prometheus.io/path".to_owned(), "/metrics".to_owned()),
    ]);
    let pod = &streamlet.resolved.pod;
    let pull_secrets: Vec<LocalObjectReference> = app
        .spec
        .image_pull_secrets
        .iter()
        .map(|name| LocalObjectReference { name: name.clone() })
        .collect();
    Deployment {
        metadata: streamlet.metadata(),
        spec: Some(DeploymentSpec {
            replicas: streamlet.replicas,
            selector: LabelSelector {
                match_labels: Some(selector(app.name(), streamlet.instance)),
                match_expressions: None,
            },
            strategy: Some(DeploymentStrategy {
                type_: Some("RollingUpdate".to_owned()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: Some(IntOrString::Int(1)),
                    max_unavailable: Some(IntOrString::Int(0)),
                }),
            }),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(pod_labels),
                    annotations: Some(annotations),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![container(streamlet)],
                    volumes: Some(volumes(streamlet)),
                    image_pull_secrets: (!pull_secrets.is_empty()).then_some(pull_secrets),
                    termination_grace_period_seconds: Some(GRACE_SECONDS),
                    node_selector: (!pod.node_selector.is_empty())
                        .then(|| pod.node_selector.clone()),
                    tolerations: tolerations(pod.tolerations.as_deref()),
                    affinity: affinity(pod.affinity.as_ref()),
                    service_account_name: pod.service_account_name.clone(),
                    // A streamlet never calls the Kubernetes API: no token in its pod (least
                    // privilege; a real API server would otherwise mount one), unless the
                    // user gave it a service account, that is, asked for an identity.
                    automount_service_account_token: Some(pod.service_account_name.is_some()),
                    security_context: Some(PodSecurityContext {
                        run_as_non_root: Some(true),
                        run_as_user: Some(APP_USER),
                        run_as_group: Some(APP_USER),
                        fs_group: Some(APP_USER),
                        seccomp_profile: Some(SeccompProfile {
                            type_: "RuntimeDefault".to_owned(),
                            localhost_profile: None,
                        }),
                        ..PodSecurityContext::default()
                    }),
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}

fn container(streamlet: &Streamlet<'_>) -> Container {
    let resolved = streamlet.resolved;
    let args = [
        "run-streamlet",
        streamlet.instance,
        &format!("{CONFIG_MOUNT}/{BLUEPRINT_FILE}"),
        "--config",
        &format!("{CONFIG_MOUNT}/{CONFIG_FILE}"),
        "--config",
        &format!("{SECRET_MOUNT}/{CONFIG_FILE}"),
        "--kafka",
        streamlet.bootstrap_servers,
        "--admin",
        &format!("$(POD_IP):{ADMIN_PORT}"),
        "--replica",
        "$(POD_NAME)",
        // One token: a bare `off` is a boolean to YAML 1.1 readers such as kubectl's.
        "--view=off",
    ]
    .map(str::to_owned)
    .to_vec();
    let mut ports = vec![ContainerPort {
        name: Some("admin".to_owned()),
        container_port: i32::from(ADMIN_PORT),
        protocol: Some("TCP".to_owned()),
        ..ContainerPort::default()
    }];
    if let Some(port) = resolved.pod.http_port {
        ports.push(ContainerPort {
            name: Some("http".to_owned()),
            container_port: i32::from(port),
            protocol: Some("TCP".to_owned()),
            ..ContainerPort::default()
        });
    }
    let probe = |path: &str, initial: i32, period: i32| Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_owned()),
            port: IntOrString::String("admin".to_owned()),
            ..HTTPGetAction::default()
        }),
        initial_delay_seconds: Some(initial),
        period_seconds: Some(period),
        failure_threshold: Some(3),
        timeout_seconds: Some(2),
        ..Probe::default()
    };
    let mut mounts = vec![
        VolumeMount {
            name: "config".to_owned(),
            mount_path: CONFIG_MOUNT.to_owned(),
            read_only: Some(true),
            ..VolumeMount::default()
        },
        VolumeMount {
            name: "secret".to_owned(),
            mount_path: SECRET_MOUNT.to_owned(),
            read_only: Some(true),
            ..VolumeMount::default()
        },
    ];
    for declared in &streamlet.declared.volume_mounts {
        mounts.push(VolumeMount {
            name: format!("volume-{}", declared.name),
            mount_path: declared.path.clone(),
            read_only: Some(matches!(
                declared.access_mode,
                runnel_blueprint::descriptor::AccessMode::ReadOnlyMany
            )),
            ..VolumeMount::default()
        });
    }
    Container {
        name: CONTAINER.to_owned(),
        image: Some(streamlet.app.spec.image.clone()),
        image_pull_policy: Some("IfNotPresent".to_owned()),
        args: Some(args),
        env: Some(env(streamlet)),
        ports: Some(ports),
        liveness_probe: Some(probe("/health/live", 10, 10)),
        readiness_probe: Some(probe("/health/ready", 2, 5)),
        resources: resources(
            &resolved.pod.resources.requests,
            &resolved.pod.resources.limits,
        ),
        volume_mounts: Some(mounts),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            run_as_non_root: Some(true),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".to_owned()]),
                add: None,
            }),
            ..SecurityContext::default()
        }),
        ..Container::default()
    }
}

fn env(streamlet: &Streamlet<'_>) -> Vec<EnvVar> {
    let field = |name: &str, path: &str| EnvVar {
        name: name.to_owned(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: path.to_owned(),
                api_version: None,
            }),
            ..EnvVarSource::default()
        }),
    };
    let plain = |name: &str, value: &str| EnvVar {
        name: name.to_owned(),
        value: Some(value.to_owned()),
        value_from: None,
    };
    let mut env = vec![
        field("POD_NAME", "metadata.name"),
        field("POD_IP", "status.podIP"),
        plain("RUST_LOG", &streamlet.resolved.log_level),
    ];
    for (name, value) in streamlet.resolved.env(false) {
        env.push(plain(&name, &value));
    }
    for name in streamlet.resolved.env(true).keys() {
        env.push(EnvVar {
            name: name.clone(),
            value: None,
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: streamlet.name(),
                    key: format!("{ENV_PREFIX}{name}"),
                    optional: None,
                }),
                ..EnvVarSource::default()
            }),
        });
    }
    env
}

fn volumes(streamlet: &Streamlet<'_>) -> Vec<Volume> {
    let name = streamlet.name();
    let mut volumes = vec![
        Volume {
            name: "config".to_owned(),
            config_map: Some(ConfigMapVolumeSource {
                name: name.clone(),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        },
        Volume {
            name: "secret".to_owned(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(name),
                ..SecretVolumeSource::default()
            }),
            ..Volume::default()
        },
    ];
    for declared in &streamlet.declared.volume_mounts {
        let claim = streamlet
            .resolved
            .pod
            .volumes
            .get(&declared.name)
            .cloned()
            .unwrap_or_default();
        volumes.push(Volume {
            name: format!("volume-{}", declared.name),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim,
                read_only: None,
            }),
            ..Volume::default()
        });
    }
    volumes
}

fn resources(requests: &Quantities, limits: &Quantities) -> Option<ResourceRequirements> {
    let map = |quantities: &Quantities| {
        let mut map = BTreeMap::new();
        if let Some(cpu) = &quantities.cpu {
            map.insert("cpu".to_owned(), Quantity(cpu.trim().to_owned()));
        }
        if let Some(memory) = &quantities.memory {
            map.insert("memory".to_owned(), Quantity(memory.trim().to_owned()));
        }
        (!map.is_empty()).then_some(map)
    };
    let (requests, limits) = (map(requests), map(limits));
    (requests.is_some() || limits.is_some()).then_some(ResourceRequirements {
        requests,
        limits,
        claims: None,
    })
}

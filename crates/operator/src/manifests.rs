//! The objects that install the operator: a ServiceAccount, least-privilege RBAC (namespaced
//! by default), the operator's Deployment (two replicas with leader election), a Role for
//! the people who deploy apps with `runnel`, and the validating admission webhook that
//! refuses Applications the operator could not run.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    RuleWithOperations, ServiceReference, ValidatingWebhook, ValidatingWebhookConfiguration,
    WebhookClientConfig,
};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EnvVar, EnvVarSource, ObjectFieldSelector,
    PodSecurityContext, PodSpec, PodTemplateSpec, ResourceRequirements, SeccompProfile, Secret,
    SecretVolumeSource, SecurityContext, Service, ServiceAccount, ServicePort, ServiceSpec, Volume,
    VolumeMount,
};
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// The name of the operator's ServiceAccount, Role, binding and Deployment.
pub const OPERATOR: &str = "runnel-operator";
/// The name of the Role for people who deploy apps.
pub const DEPLOYER: &str = "runnel-deployer";
/// The name of the webhook's Secret (its TLS certificate and key) and Service.
pub const WEBHOOK: &str = "runnel-operator-webhook";
/// The port the operator's pods serve the webhook on.
pub const WEBHOOK_PORT: u16 = 8443;
/// Where the webhook's Secret is mounted in the operator's pods.
const WEBHOOK_MOUNT: &str = "/etc/runnel/webhook";

/// What to install.
#[derive(Clone, Debug)]
pub struct Install {
    /// The operator's namespace (and, unless cluster-wide, the only one it manages).
    pub namespace: String,
    /// The operator image (the `runnel` binary; `runnel operator image` builds one).
    pub image: String,
    /// The default Kafka cluster for Applications that name none.
    pub kafka: Option<String>,
    /// Manage every namespace (a ClusterRole) instead of its own (a Role).
    pub cluster_wide: bool,
    /// The validating admission webhook, or `None` for none.
    pub webhook: Option<Webhook>,
}

/// The admission webhook's TLS material, PEM, and where the API server calls it.
#[derive(Clone, Debug)]
pub struct Webhook {
    /// The certificate the operator serves (`tls.crt`), for the names of
    /// [`service_names`] (and the host of `url`).
    pub certificate: String,
    /// Its private key (`tls.key`).
    pub key: String,
    /// The certificate authority that signed it, which the API server trusts for this
    /// webhook alone (`caBundle`).
    pub certificate_authority: String,
    /// `None`: the API server calls the operator's pods through the Service
    /// `runnel-operator-webhook` (port 443). A URL (`https://host:port/validate`): an
    /// operator run elsewhere, with `runnel operator run --webhook-listen`.
    pub url: Option<String>,
}

/// The DNS names the API server may call the webhook's Service by, in `namespace`: what its
/// certificate must hold.
///
/// ```
/// let names = runnel_operator::manifests::service_names("ops");
/// assert!(names.contains(&"runnel-operator-webhook.ops.svc".to_owned()));
/// ```
pub fn service_names(namespace: &str) -> Vec<String> {
    vec![
        WEBHOOK.to_owned(),
        format!("{WEBHOOK}.{namespace}"),
        format!("{WEBHOOK}.{namespace}.svc"),
        format!("{WEBHOOK}.{namespace}.svc.cluster.local"),
    ]
}

/// Every object, in the order to apply them, as JSON values (one YAML document each).
pub fn install(install: &Install) -> Vec<Value> {
    let labels = BTreeMap::from([
        ("app.kubernetes.io/name".to_owned(), OPERATOR.to_owned()),
        ("app.kubernetes.io/part-of".to_owned(), "runnel".to_owned()),
    ]);
    let meta = |name: &str, namespaced: bool| ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespaced.then(|| install.namespace.clone()),
        labels: Some(labels.clone()),
        ..ObjectMeta::default()
    };
    let rules = operator_rules();
    let subject = Subject {
        kind: "ServiceAccount".to_owned(),
        name: OPERATOR.to_owned(),
        namespace: Some(install.namespace.clone()),
        api_group: None,
    };
    let mut objects = vec![to_value(&ServiceAccount {
        metadata: meta(OPERATOR, true),
        ..ServiceAccount::default()
    })];
    if install.cluster_wide {
        objects.push(to_value(&ClusterRole {
            metadata: meta(OPERATOR, false),
            rules: Some(rules),
            aggregation_rule: None,
        }));
        objects.push(to_value(&ClusterRoleBinding {
            metadata: meta(OPERATOR, false),
            role_ref: role_ref("ClusterRole", OPERATOR),
            subjects: Some(vec![subject]),
        }));
    } else {
        objects.push(to_value(&Role {
            metadata: meta(OPERATOR, true),
            rules: Some(rules),
        }));
        objects.push(to_value(&RoleBinding {
            metadata: meta(OPERATOR, true),
            role_ref: role_ref("Role", OPERATOR),
            subjects: Some(vec![subject]),
        }));
    }
    // Leases are always in the operator's own namespace.
    if install.cluster_wide {
        let lease = format!("{OPERATOR}-lease");
        objects.push(to_value(&Role {
            metadata: meta(&lease, true),
            rules: Some(vec![rule(
                "coordination.k8s.io",
                &["leases"],
                &["get", "create", "update"],
            )]),
        }));
        objects.push(to_value(&RoleBinding {
            metadata: meta(&lease, true),
            role_ref: role_ref("Role", &lease),
            subjects: Some(vec![Subject {
                kind: "ServiceAccount".to_owned(),
                name: OPERATOR.to_owned(),
                namespace: Some(install.namespace.clone()),
                api_group: None,
            }]),
        }));
    }
    objects.push(to_value(&Role {
        metadata: meta(DEPLOYER, true),
        rules: Some(deployer_rules()),
    }));
    if let Some(webhook) = &install.webhook {
        objects.push(to_value(&Secret {
            metadata: meta(WEBHOOK, true),
            type_: Some("kubernetes.io/tls".to_owned()),
            data: Some(BTreeMap::from([
                (
                    "tls.crt".to_owned(),
                    ByteString(webhook.certificate.clone().into_bytes()),
                ),
                (
                    "tls.key".to_owned(),
                    ByteString(webhook.key.clone().into_bytes()),
                ),
            ])),
            ..Secret::default()
        }));
        objects.push(to_value(&Service {
            metadata: meta(WEBHOOK, true),
            spec: Some(ServiceSpec {
                selector: Some(labels.clone()),
                ports: Some(vec![ServicePort {
                    name: Some("webhook".to_owned()),
                    port: 443,
                    target_port: Some(IntOrString::String("webhook".to_owned())),
                    ..ServicePort::default()
                }]),
                ..ServiceSpec::default()
            }),
            status: None,
        }));
    }
    objects.push(to_value(&deployment(install, &labels)));
    if let Some(webhook) = &install.webhook {
        objects.push(to_value(&webhook_configuration(install, webhook, &labels)));
    }
    objects
}

/// Asks the API server to let the operator judge every Application created or updated (in
/// the operator's namespace, or every namespace when cluster-wide) before storing it. It
/// fails closed: while no operator answers, Applications cannot be written.
fn webhook_configuration(
    install: &Install,
    webhook: &Webhook,
    labels: &BTreeMap<String, String>,
) -> ValidatingWebhookConfiguration {
    let client_config = WebhookClientConfig {
        ca_bundle: Some(ByteString(
            webhook.certificate_authority.clone().into_bytes(),
        )),
        service: webhook.url.is_none().then(|| ServiceReference {
            name: WEBHOOK.to_owned(),
            namespace: install.namespace.clone(),
            path: Some(crate::webhook::PATH.to_owned()),
            port: Some(443),
        }),
        url: webhook.url.clone(),
    };
    ValidatingWebhookConfiguration {
        metadata: ObjectMeta {
            // Cluster-scoped: one per installation, named after its namespace.
            name: Some(format!("{OPERATOR}.{}", install.namespace)),
            labels: Some(labels.clone()),
            ..ObjectMeta::default()
        },
        webhooks: Some(vec![ValidatingWebhook {
            name: "applications.runnel.dev".to_owned(),
            admission_review_versions: vec!["v1".to_owned()],
            client_config,
            failure_policy: Some("Fail".to_owned()),
            side_effects: "None".to_owned(),
            timeout_seconds: Some(10),
            namespace_selector: (!install.cluster_wide).then(|| LabelSelector {
                match_labels: Some(BTreeMap::from([(
                    "kubernetes.io/metadata.name".to_owned(),
                    install.namespace.clone(),
                )])),
                match_expressions: None,
            }),
            rules: Some(vec![RuleWithOperations {
                api_groups: Some(vec![runnel_application::GROUP.to_owned()]),
                api_versions: Some(vec![runnel_application::VERSION.to_owned()]),
                operations: Some(vec!["CREATE".to_owned(), "UPDATE".to_owned()]),
                resources: Some(vec![runnel_application::PLURAL.to_owned()]),
                scope: Some("Namespaced".to_owned()),
            }]),
            ..ValidatingWebhook::default()
        }]),
    }
}

/// What the operator may do: read Applications, write their status and block their deletion
/// by what they own; manage the ConfigMaps, Secrets, Services, Deployments and
/// PodDisruptionBudgets of streamlets; read pods; hold its lease; publish Events.
fn operator_rules() -> Vec<PolicyRule> {
    vec![
        rule("runnel.dev", &["applications"], &["get", "list", "watch"]),
        rule(
            "runnel.dev",
            &["applications/status"],
            &["get", "patch", "update"],
        ),
        // The operator's objects block their Application's deletion until they are gone
        // (`blockOwnerDeletion`), which the API server allows only to who may update this.
        rule("runnel.dev", &["applications/finalizers"], &["update"]),
        rule(
            "apps",
            &["deployments"],
            &[
                "get", "list", "watch", "create", "patch", "update", "delete",
            ],
        ),
        rule(
            "",
            &["configmaps", "secrets", "services"],
            &[
                "get", "list", "watch", "create", "patch", "update", "delete",
            ],
        ),
        rule(
            "policy",
            &["poddisruptionbudgets"],
            &[
                "get", "list", "watch", "create", "patch", "update", "delete",
            ],
        ),
        rule("", &["pods"], &["get", "list", "watch"]),
        rule(
            "coordination.k8s.io",
            &["leases"],
            &["get", "create", "update"],
        ),
        rule("events.k8s.io", &["events"], &["create", "patch"]),
    ]
}

/// What `runnel deploy | undeploy | scale | configure | status | version` need.
fn deployer_rules() -> Vec<PolicyRule> {
    vec![
        rule(
            "runnel.dev",
            &["applications"],
            &[
                "get", "list", "watch", "create", "patch", "update", "delete",
            ],
        ),
        rule(
            "",
            &["secrets"],
            &["get", "create", "patch", "update", "delete"],
        ),
        rule("", &["pods"], &["get", "list"]),
        rule("", &["pods/proxy"], &["get"]),
        rule("coordination.k8s.io", &["leases"], &["get"]),
    ]
}

fn rule(group: &str, resources: &[&str], verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![group.to_owned()]),
        resources: Some(resources.iter().map(|r| (*r).to_owned()).collect()),
        verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
        ..PolicyRule::default()
    }
}

fn role_ref(kind: &str, name: &str) -> RoleRef {
    RoleRef {
        api_group: "rbac.authorization.k8s.io".to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
    }
}

fn deployment(install: &Install, labels: &BTreeMap<String, String>) -> Deployment {
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
    let mut args = vec!["operator".to_owned(), "run".to_owned()];
    if install.cluster_wide {
        args.push("--all-namespaces".to_owned());
    } else {
        args.extend(["--namespace".to_owned(), "$(POD_NAMESPACE)".to_owned()]);
    }
    args.extend([
        "--lease-namespace".to_owned(),
        "$(POD_NAMESPACE)".to_owned(),
        "--identity".to_owned(),
        "$(POD_NAME)".to_owned(),
    ]);
    if let Some(kafka) = &install.kafka {
        args.extend(["--kafka".to_owned(), kafka.clone()]);
    }
    if install.webhook.is_some() {
        args.extend([
            "--webhook-listen".to_owned(),
            format!("0.0.0.0:{WEBHOOK_PORT}"),
            "--webhook-certificate".to_owned(),
            format!("{WEBHOOK_MOUNT}/tls.crt"),
            "--webhook-key".to_owned(),
            format!("{WEBHOOK_MOUNT}/tls.key"),
        ]);
    }
    // A new certificate rolls the pods, which load it once.
    let annotations = install.webhook.as_ref().map(|webhook| {
        let digest = Sha256::digest(webhook.certificate.as_bytes());
        let hex: String = digest[..8]
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        BTreeMap::from([("runnel.dev/webhook-certificate".to_owned(), hex)])
    });
    let quantity = |cpu: &str, memory: &str| {
        BTreeMap::from([
            ("cpu".to_owned(), Quantity(cpu.to_owned())),
            ("memory".to_owned(), Quantity(memory.to_owned())),
        ])
    };
    Deployment {
        metadata: ObjectMeta {
            name: Some(OPERATOR.to_owned()),
            namespace: Some(install.namespace.clone()),
            labels: Some(labels.clone()),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(2),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                match_expressions: None,
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels.clone()),
                    annotations,
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    service_account_name: Some(OPERATOR.to_owned()),
                    volumes: install.webhook.is_some().then(|| {
                        vec![Volume {
                            name: "webhook".to_owned(),
                            secret: Some(SecretVolumeSource {
                                secret_name: Some(WEBHOOK.to_owned()),
                                ..SecretVolumeSource::default()
                            }),
                            ..Volume::default()
                        }]
                    }),
                    containers: vec![Container {
                        name: "operator".to_owned(),
                        image: Some(install.image.clone()),
                        args: Some(args),
                        env: Some(vec![
                            field("POD_NAME", "metadata.name"),
                            field("POD_NAMESPACE", "metadata.namespace"),
                        ]),
                        ports: install.webhook.is_some().then(|| {
                            vec![ContainerPort {
                                name: Some("webhook".to_owned()),
                                container_port: i32::from(WEBHOOK_PORT),
                                ..ContainerPort::default()
                            }]
                        }),
                        volume_mounts: install.webhook.is_some().then(|| {
                            vec![VolumeMount {
                                name: "webhook".to_owned(),
                                mount_path: WEBHOOK_MOUNT.to_owned(),
                                read_only: Some(true),
                                ..VolumeMount::default()
                            }]
                        }),
                        resources: Some(ResourceRequirements {
                            requests: Some(quantity("50m", "64Mi")),
                            limits: Some(BTreeMap::from([(
                                "memory".to_owned(),
                                Quantity("256Mi".to_owned()),
                            )])),
                            claims: None,
                        }),
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
                    }],
                    security_context: Some(PodSecurityContext {
                        run_as_non_root: Some(true),
                        run_as_user: Some(10001),
                        run_as_group: Some(10001),
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

fn to_value<T: serde::Serialize>(object: &T) -> Value {
    serde_json::to_value(object).expect("objects serialize")
}

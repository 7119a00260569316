//! Every case of the reconcile, on a three-streamlet app: first deploy, scaling, a
//! configuration change, a streamlet leaving the blueprint, a bad blueprint, a failed topic
//! creation, an edited Deployment and undeploy.

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateTerminated, ContainerStateWaiting, ContainerStatus, Pod,
    PodCondition, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt as _;
use runnel_application::{ApplicationDocument, Configuration, Phase, RollbackSpec};
use runnel_blueprint::descriptor::AppDescriptor;

use super::*;
use crate::observed::{ObservedTopic, TopicFailure};

const DESCRIPTOR: &str = r#"{"descriptor-version": 1, "app": "demo", "streamlets": [
  {"type": "generator",
   "outlets": [{"name": "out", "schema": {"format": "avro", "name": "long", "definition": "long"}}],
   "parameters": [{"key": "rate", "type": "int", "default": "5"}]},
  {"type": "double",
   "inlets": [{"name": "in", "schema": {"format": "avro", "name": "long", "definition": "long"}}],
   "outlets": [{"name": "out", "schema": {"format": "avro", "name": "long", "definition": "long"}}]},
  {"type": "logger",
   "inlets": [{"name": "in", "schema": {"format": "avro", "name": "long", "definition": "long"}}],
   "parameters": [{"key": "prefix", "type": "string", "default": "n"}]}
]}"#;

const BLUEPRINT: &str = r#"name = "demo"
[streamlets]
gen = "generator"
twice = "double"
log = "logger"
[topics.numbers]
producers = ["gen.out"]
consumers = ["twice.in"]
partitions = 4
[topics.doubled]
producers = ["twice.out"]
consumers = ["log.in"]
"#;

fn application_from(blueprint: &str) -> Application {
    let descriptor = AppDescriptor::from_json(DESCRIPTOR).unwrap();
    let verified = runnel_blueprint::verify(Path::new("blueprint.toml"), blueprint, &descriptor)
        .blueprint
        .unwrap();
    let document = ApplicationDocument::new(
        &verified,
        blueprint,
        &descriptor,
        "registry.example/demo:1.0",
        "1.0",
    );
    let mut app = Application::from_document(&document);
    app.metadata.namespace = Some("apps".to_owned());
    app.metadata.uid = Some("uid-demo".to_owned());
    app.metadata.generation = Some(1);
    app.spec.kafka.bootstrap_servers = Some("kafka:9092".to_owned());
    app
}

pub(crate) fn application() -> Application {
    application_from(BLUEPRINT)
}

fn context() -> ReconcileContext {
    ReconcileContext {
        now: Timestamp::from_second(1_700_000_000).unwrap(),
        operator_version: "0.1.0".to_owned(),
        default_bootstrap_servers: None,
    }
}

/// Topics as they are once the controller made sure of them.
fn topics_of(plan: &Plan) -> Vec<ObservedTopic> {
    plan.topics
        .iter()
        .map(|t| ObservedTopic {
            name: t.name.clone(),
            partitions: t.partitions,
        })
        .collect()
}

/// The first pass (topics not yet made sure of) and the second, as the controller does.
fn reconcile_fully(app: &Application, mut observed: Observed) -> Plan {
    let first = reconcile(app, &observed, &context());
    if matches!(first.outcome, Outcome::Failed(_)) {
        return first;
    }
    observed.topics = Some(Ok(topics_of(&first)));
    reconcile(app, &observed, &context())
}

/// What the cluster holds once `plan` is applied and every pod is ready.
fn cluster_after(plan: &Plan) -> Observed {
    let mut observed = Observed {
        topics: Some(Ok(topics_of(plan))),
        ..Observed::default()
    };
    for desired in &plan.apply {
        match desired.clone() {
            Desired::ConfigMap(o) => observed.config_maps.push(o),
            Desired::Secret(o) => observed.secrets.push(o),
            Desired::Service(o) => observed.services.push(o),
            Desired::PodDisruptionBudget(o) => observed.pod_disruption_budgets.push(o),
            Desired::Deployment(o) => {
                let replicas = o.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                for index in 0..replicas {
                    observed.pods.push(pod_of(&o, index, ready_status()));
                }
                observed.deployments.push(o);
            }
        }
    }
    observed
}

fn pod_of(deployment: &Deployment, index: i32, status: PodStatus) -> Pod {
    let template = deployment.spec.as_ref().unwrap().template.clone();
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("{}-{index}", deployment.name_any())),
            labels: template.metadata.as_ref().unwrap().labels.clone(),
            annotations: template.metadata.as_ref().unwrap().annotations.clone(),
            ..ObjectMeta::default()
        },
        spec: template.spec,
        status: Some(status),
    }
}

fn ready_status() -> PodStatus {
    PodStatus {
        phase: Some("Running".to_owned()),
        conditions: Some(vec![PodCondition {
            type_: "Ready".to_owned(),
            status: "True".to_owned(),
            ..PodCondition::default()
        }]),
        container_statuses: Some(vec![ContainerStatus {
            name: "streamlet".to_owned(),
            ready: true,
            restart_count: 0,
            ..ContainerStatus::default()
        }]),
        ..PodStatus::default()
    }
}

fn deployment<'a>(plan: &'a Plan, name: &str) -> &'a Deployment {
    plan.apply
        .iter()
        .find_map(|d| match d {
            Desired::Deployment(o) if o.name_any() == name => Some(o),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no Deployment {name} in the plan"))
}

fn replicas(plan: &Plan, name: &str) -> Option<i32> {
    deployment(plan, name).spec.as_ref().unwrap().replicas
}

fn template_hash(deployment: &Deployment) -> String {
    deployment
        .spec
        .as_ref()
        .unwrap()
        .template
        .metadata
        .as_ref()
        .unwrap()
        .annotations
        .as_ref()
        .unwrap()[CONFIG_HASH_ANNOTATION]
        .clone()
}

fn notes(plan: &Plan) -> Vec<String> {
    plan.events
        .iter()
        .map(|e| format!("{}: {}", e.reason, e.note))
        .collect()
}

#[test]
fn first_deploy_lists_topics_then_creates_every_object_and_waits_for_pods() {
    let app = application();
    let first = reconcile(&app, &Observed::default(), &context());
    assert!(
        first.apply.is_empty(),
        "nothing is applied before the topics exist"
    );
    let topics: Vec<(&str, i32)> = first
        .topics
        .iter()
        .map(|t| (t.name.as_str(), t.partitions))
        .collect();
    assert_eq!(
        topics,
        [("numbers", 4), ("doubled", 1), ("demo.dead-letter", 1)]
    );

    let plan = reconcile_fully(&app, Observed::default());
    let applied: Vec<String> = plan.apply.iter().map(Desired::describe).collect();
    assert_eq!(
        applied,
        [
            "ConfigMap demo-gen",
            "Secret demo-gen",
            "Deployment demo-gen",
            "PodDisruptionBudget demo-gen",
            "ConfigMap demo-twice",
            "Secret demo-twice",
            "Deployment demo-twice",
            "PodDisruptionBudget demo-twice",
            "ConfigMap demo-log",
            "Secret demo-log",
            "Deployment demo-log",
            "PodDisruptionBudget demo-log",
        ]
    );
    let budget = plan
        .apply
        .iter()
        .find_map(|d| match d {
            Desired::PodDisruptionBudget(o) if o.name_any() == "demo-twice" => Some(o),
            _ => None,
        })
        .unwrap();
    let spec = budget.spec.as_ref().unwrap();
    assert_eq!(
        spec.max_unavailable,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(1))
    );
    assert_eq!(
        spec.selector.as_ref().unwrap().match_labels,
        deployment(&plan, "demo-twice")
            .spec
            .as_ref()
            .unwrap()
            .selector
            .match_labels,
        "the budget selects the Deployment's pods"
    );
    assert_eq!(budget.owner_references()[0].name, "demo");
    assert_eq!(
        budget.labels(),
        deployment(&plan, "demo-twice").labels(),
        "the same labels as the streamlet's other objects"
    );
    assert!(plan.delete.is_empty());
    assert_eq!(plan.status.phase, Phase::Pending);
    assert_eq!(
        plan.status.message,
        "waiting for gen (0/1 ready), twice (0/1 ready), log (0/1 ready)"
    );
    assert_eq!(
        notes(&plan),
        [
            "Created: created streamlet gen with 1 replicas",
            "Created: created streamlet twice with 1 replicas",
            "Created: created streamlet log with 1 replicas",
        ]
    );
    assert_eq!(plan.outcome, Outcome::Converging(SOON));
    let container = &deployment(&plan, "demo-twice")
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap()
        .containers[0];
    assert_eq!(
        container.args.as_ref().unwrap().join(" "),
        "run-streamlet twice /etc/runnel/config/blueprint.toml --config /etc/runnel/config/runnel.toml --config /etc/runnel/secret/runnel.toml --kafka kafka:9092 --admin $(POD_IP):9090 --replica $(POD_NAME) --view=off"
    );

    // Once the pods are ready the status says so, from the pods.
    let running = reconcile(&app, &cluster_after(&plan), &context());
    assert_eq!(running.status.phase, Phase::Running);
    assert_eq!(
        running.status.message,
        "3 streamlets running, 3/3 replicas ready"
    );
    assert!(running.events.is_empty(), "{:?}", notes(&running));
    assert_eq!(running.outcome, Outcome::Converging(LATER));
}

#[test]
fn scaling_up_and_down_changes_only_that_deployment() {
    let mut app = application();
    let before = reconcile_fully(&app, Observed::default());
    let cluster = cluster_after(&before);
    app.spec.streamlets[1].replicas = 3;
    let up = reconcile(&app, &cluster, &context());
    assert_eq!(replicas(&up, "demo-twice"), Some(3));
    assert_eq!(replicas(&up, "demo-gen"), Some(1));
    assert_eq!(notes(&up), ["Updated: streamlet twice: replicas 1 -> 3"]);
    assert_eq!(
        up.status.phase,
        Phase::Pending,
        "two new pods are not ready yet"
    );
    assert_eq!(up.status.message, "waiting for twice (1/3 ready)");

    let cluster = cluster_after(&up);
    app.spec.streamlets[1].replicas = 0;
    let down = reconcile(&app, &cluster, &context());
    assert_eq!(replicas(&down, "demo-twice"), Some(0));
    assert_eq!(notes(&down), ["Updated: streamlet twice: replicas 3 -> 0"]);
    assert_eq!(
        template_hash(deployment(&down, "demo-twice")),
        template_hash(deployment(&up, "demo-twice")),
        "scaling does not roll the pods"
    );
}

#[test]
fn replicas_beyond_the_partitions_of_the_inlets_are_reported_idle() {
    let mut app = application();
    app.spec.streamlets[1].replicas = 6;
    let plan = reconcile_fully(&app, Observed::default());
    let plan = reconcile(&app, &cluster_after(&plan), &context());
    let twice = &plan.status.streamlets[1];
    assert_eq!((twice.desired_replicas, twice.idle_replicas), (6, 2));
    assert!(
        notes(&plan).contains(
            &"IdleReplicas: streamlet twice runs 6 replicas, but its inlets' topics have at most 4 partitions: 2 replicas hold none and stay idle".to_owned()
        ),
        "{:?}",
        notes(&plan)
    );
    let condition = plan.status.condition("IdleReplicas").unwrap();
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("True", "MoreReplicasThanPartitions")
    );
    assert!(
        condition
            .message
            .starts_with("twice has 2 of 6 replicas without a partition"),
        "{}",
        condition.message
    );

    app.spec.streamlets[1].replicas = 4;
    let plan = reconcile(&app, &cluster_after(&plan), &context());
    assert_eq!(plan.status.streamlets[1].idle_replicas, 0);
    assert_eq!(
        plan.status.condition("IdleReplicas").unwrap().status,
        "False"
    );
    assert!(
        !notes(&plan)
            .iter()
            .any(|note| note.starts_with("IdleReplicas"))
    );
}

#[test]
fn a_configuration_change_rolls_only_the_affected_streamlet() {
    let mut app = application();
    let before = reconcile_fully(&app, Observed::default());
    let cluster = cluster_after(&before);
    app.spec.configuration.assign("log.prefix=doubled").unwrap();
    let after = reconcile(&app, &cluster, &context());
    for (name, changed) in [
        ("demo-gen", false),
        ("demo-twice", false),
        ("demo-log", true),
    ] {
        assert_eq!(
            template_hash(deployment(&before, name)) != template_hash(deployment(&after, name)),
            changed,
            "{name}"
        );
    }
    assert_eq!(
        notes(&after),
        ["Updated: streamlet log: configuration changed, rolling its pods"]
    );
    let config = after
        .apply
        .iter()
        .find_map(|d| match d {
            Desired::ConfigMap(o) if o.name_any() == "demo-log" => o.data.clone(),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        config["runnel.toml"],
        "[streamlets.log]\nprefix = \"doubled\"\n"
    );
}

#[test]
fn where_and_as_whom_pods_run_goes_into_the_pod_spec_and_rolls_only_that_streamlet() {
    let mut app = application();
    let before = reconcile_fully(&app, Observed::default());
    let cluster = cluster_after(&before);
    let pod_spec = |plan: &Plan, name: &str| {
        deployment(plan, name)
            .spec
            .clone()
            .unwrap()
            .template
            .spec
            .unwrap()
    };
    assert_eq!(
        pod_spec(&before, "demo-log").automount_service_account_token,
        Some(false),
        "no identity asked for, no token"
    );
    for assignment in [
        "pods.log.service-account-name=log-reader",
        "pods.log.node-selector.disktype=ssd",
        r#"pods.log.tolerations=[{"key": "dedicated", "operator": "Equal", "value": "streaming", "effect": "NoSchedule"}]"#,
        r#"pods.log.affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"runnel.dev/streamlet": "log"}}}]}}"#,
    ] {
        app.spec.configuration.assign(assignment).unwrap();
    }
    let after = reconcile(&app, &cluster, &context());
    let log = pod_spec(&after, "demo-log");
    assert_eq!(log.service_account_name.as_deref(), Some("log-reader"));
    assert_eq!(log.automount_service_account_token, Some(true));
    assert_eq!(log.node_selector.unwrap()["disktype"], "ssd");
    let tolerations = log.tolerations.unwrap();
    assert_eq!(
        (
            tolerations[0].key.as_deref(),
            tolerations[0].value.as_deref(),
            tolerations[0].effect.as_deref()
        ),
        (Some("dedicated"), Some("streaming"), Some("NoSchedule"))
    );
    let anti = log.affinity.unwrap().pod_anti_affinity.unwrap();
    assert_eq!(
        anti.required_during_scheduling_ignored_during_execution
            .unwrap()[0]
            .topology_key,
        "kubernetes.io/hostname"
    );
    assert_eq!(
        notes(&after),
        ["Updated: streamlet log: configuration changed, rolling its pods"]
    );
    for name in ["demo-gen", "demo-twice"] {
        assert_eq!(
            pod_spec(&after, name),
            pod_spec(&before, name),
            "{name} is untouched"
        );
    }

    // A bad value fails the app and names the key; nothing is applied.
    app.spec
        .configuration
        .assign(r#"pods.log.tolerations=[{"key": "dedicated", "operator": "Equal", "value": "streaming", "effect": "NoScheduleNow"}]"#)
        .unwrap();
    let refused = reconcile(&app, &cluster, &context());
    assert!(refused.apply.is_empty());
    assert_eq!(
        refused.status.message,
        "invalid configuration: pods.log.tolerations[0].effect: 'NoScheduleNow' is not a taint effect (NoSchedule, PreferNoSchedule, NoExecute)"
    );
}

#[test]
fn secret_values_go_to_the_secret_only_and_roll_their_streamlet() {
    let app = application();
    let mut observed = Observed::default();
    let mut secret = Configuration::default();
    secret.assign("kafka.sasl.password=hunter2").unwrap();
    secret
        .assign("runtime.streamlets.gen.kafka.sasl.password=other")
        .unwrap();
    observed.secret_configuration = Ok(secret);
    let plan = reconcile_fully(&app, observed);
    for desired in &plan.apply {
        match desired {
            Desired::Secret(o) => {
                let file =
                    String::from_utf8(o.data.as_ref().unwrap()["runnel.toml"].0.clone()).unwrap();
                assert!(file.contains("sasl.password"), "{file}");
            }
            other => {
                let text = json_of(other).to_string();
                assert!(
                    !text.contains("hunter2") && !text.contains("other\""),
                    "{text}"
                );
            }
        }
    }
}

fn json_of(desired: &Desired) -> serde_json::Value {
    match desired {
        Desired::ConfigMap(o) => serde_json::to_value(o),
        Desired::Secret(o) => serde_json::to_value(o),
        Desired::Deployment(o) => serde_json::to_value(o),
        Desired::Service(o) => serde_json::to_value(o),
        Desired::PodDisruptionBudget(o) => serde_json::to_value(o),
    }
    .unwrap()
}

#[test]
fn a_streamlet_removed_from_the_blueprint_has_its_objects_deleted() {
    let app = application();
    let before = reconcile_fully(&app, Observed::default());
    let cluster = cluster_after(&before);
    let shorter = "name = \"demo\"\n[streamlets]\ngen = \"generator\"\nlog = \"logger\"\n[topics.numbers]\nproducers = [\"gen.out\"]\nconsumers = [\"log.in\"]\npartitions = 4\n";
    let app = application_from(shorter);
    let after = reconcile(&app, &cluster, &context());
    assert_eq!(
        after.delete,
        [
            Stale {
                kind: "ConfigMap",
                name: "demo-twice".to_owned()
            },
            Stale {
                kind: "Deployment",
                name: "demo-twice".to_owned()
            },
            Stale {
                kind: "PodDisruptionBudget",
                name: "demo-twice".to_owned()
            },
            Stale {
                kind: "Secret",
                name: "demo-twice".to_owned()
            },
        ]
    );
    assert_eq!(
        notes(&after),
        [
            // The blueprint is part of every streamlet's configuration.
            "Updated: streamlet gen: configuration changed, rolling its pods",
            "Updated: streamlet log: configuration changed, rolling its pods",
            "Removed: demo-twice is no longer in the blueprint: deleting its Deployment",
        ]
    );
    assert_eq!(after.status.streamlets.len(), 2);
}

#[test]
fn a_bad_blueprint_fails_the_app_alone_and_changes_nothing() {
    let good = application();
    let running = cluster_after(&reconcile_fully(&good, Observed::default()));
    let mut bad = application();
    bad.spec.blueprint = bad
        .spec
        .blueprint
        .replace("consumers = [\"log.in\"]", "consumers = [\"log.inn\"]");
    let plan = reconcile(&bad, &running, &context());
    assert!(plan.apply.is_empty() && plan.delete.is_empty() && plan.topics.is_empty());
    assert_eq!(plan.status.phase, Phase::Failed);
    assert!(
        plan.status
            .message
            .starts_with("the blueprint of application 'demo' has errors:"),
        "{}",
        plan.status.message
    );
    assert!(
        plan.status.message.contains("log.inn"),
        "{}",
        plan.status.message
    );
    let reconciled = plan.status.condition("Reconciled").unwrap();
    assert_eq!(
        (reconciled.status.as_str(), reconciled.reason.as_str()),
        ("False", "InvalidBlueprint")
    );
    assert_eq!(plan.events.len(), 1);
    assert!(plan.events[0].warning && plan.events[0].reason == "InvalidBlueprint");
    assert!(matches!(plan.outcome, Outcome::Failed(_)));
    // The streamlets still running are reported as they are.
    assert_eq!(plan.status.streamlets[0].ready_replicas, 1);
    // Another app, reconciled next, is unaffected.
    let other = reconcile(&good, &running, &context());
    assert_eq!(other.status.phase, Phase::Running);
}

#[test]
fn invalid_configuration_and_protocol_mismatches_are_reported_in_the_status() {
    let mut app = application();
    app.spec.configuration.assign("gen.rate=fast").unwrap();
    app.spec
        .configuration
        .assign("pods.log.resources.limits.memory=lots")
        .unwrap();
    let plan = reconcile(&app, &Observed::default(), &context());
    assert_eq!(plan.status.phase, Phase::Failed);
    assert_eq!(
        plan.status.message,
        "invalid configuration: streamlets.gen.rate: 'fast' is not an integer; pods.log.resources.limits.memory: 'lots' is not a Kubernetes quantity (write it like 250m, 0.5, 64Mi or 1Gi)"
    );
    let mut newer = application();
    newer.spec.protocol_version = runnel_application::PROTOCOL_VERSION + 1;
    let plan = reconcile(&newer, &Observed::default(), &context());
    assert_eq!(plan.events[0].reason, "ProtocolMismatch");
    assert!(
        plan.status.message.ends_with("upgrade the operator"),
        "{}",
        plan.status.message
    );
}

#[test]
fn a_failed_topic_creation_applies_nothing_and_says_which_topic() {
    let app = application();
    let observed = Observed {
        topics: Some(Err(TopicFailure {
            topic: Some("numbers".to_owned()),
            message: "the cluster has 1 broker, the topic asks for 3 replicas".to_owned(),
        })),
        ..Observed::default()
    };
    let plan = reconcile(&app, &observed, &context());
    assert!(plan.apply.is_empty());
    assert_eq!(plan.status.phase, Phase::Failed);
    assert_eq!(
        plan.status.message,
        "creating topic 'numbers' failed: the cluster has 1 broker, the topic asks for 3 replicas"
    );
    assert!(!plan.status.condition("TopicsReady").unwrap().is_true());
    assert_eq!(plan.events[0].reason, "TopicCreationFailed");
    assert!(matches!(plan.outcome, Outcome::Failed(_)));

    let observed = Observed {
        topics: Some(Ok(vec![ObservedTopic {
            name: "numbers".to_owned(),
            partitions: 2,
        }])),
        ..Observed::default()
    };
    let plan = reconcile(&app, &observed, &context());
    assert_eq!(
        plan.status.message,
        "topic 'numbers' has 2 partitions, the blueprint says 4 (runnel never changes an existing topic)"
    );
}

#[test]
fn a_deployment_edited_by_someone_else_gets_the_operators_fields_back() {
    let app = application();
    let before = reconcile_fully(&app, Observed::default());
    let mut cluster = cluster_after(&before);
    let edited = cluster
        .deployments
        .iter_mut()
        .find(|d| d.name_any() == "demo-twice")
        .unwrap();
    let template = &mut edited.spec.as_mut().unwrap().template;
    template.spec.as_mut().unwrap().containers[0].image = Some("someone/else:latest".to_owned());
    template
        .metadata
        .as_mut()
        .unwrap()
        .annotations
        .as_mut()
        .unwrap()
        .insert("example.com/note".to_owned(), "added by hand".to_owned());
    edited.metadata.annotations = Some(BTreeMap::from([(
        "deployment.kubernetes.io/revision".to_owned(),
        "2".to_owned(),
    )]));
    let after = reconcile(&app, &cluster, &context());
    let desired = deployment(&after, "demo-twice");
    assert_eq!(
        desired
            .spec
            .as_ref()
            .unwrap()
            .template
            .spec
            .as_ref()
            .unwrap()
            .containers[0]
            .image
            .as_deref(),
        Some("registry.example/demo:1.0"),
        "the operator's image is applied again"
    );
    // Fields the operator does not set are not in what it applies, so server-side apply
    // leaves them to whoever set them.
    assert!(desired.metadata.annotations.is_none());
    assert!(
        !desired
            .spec
            .as_ref()
            .unwrap()
            .template
            .metadata
            .as_ref()
            .unwrap()
            .annotations
            .as_ref()
            .unwrap()
            .contains_key("example.com/note")
    );
    assert_eq!(
        notes(&after),
        ["Updated: streamlet twice: image someone/else:latest -> registry.example/demo:1.0"]
    );
    assert!(after.delete.is_empty());
}

#[test]
fn an_external_autoscaler_keeps_the_replicas() {
    let mut app = application();
    app.spec
        .configuration
        .assign("scaling.twice.external=true")
        .unwrap();
    let plan = reconcile_fully(&app, Observed::default());
    assert_eq!(
        replicas(&plan, "demo-twice"),
        None,
        "spec.replicas is left to the HPA"
    );
    assert_eq!(replicas(&plan, "demo-gen"), Some(1));
}

#[test]
fn the_autoscaler_follows_the_lag_within_the_partitions() {
    let mut app = application();
    app.spec
        .configuration
        .assign("scaling.twice.max-replicas=8")
        .unwrap();
    app.spec
        .configuration
        .assign("scaling.twice.target-lag=100")
        .unwrap();
    let before = reconcile_fully(&app, Observed::default());
    let mut cluster = cluster_after(&before);
    cluster.lag.insert(
        "twice".to_owned(),
        crate::LagSample {
            lag: 1000,
            rate: None,
            partitions: 4,
        },
    );
    let plan = reconcile(&app, &cluster, &context());
    assert_eq!(
        replicas(&plan, "demo-twice"),
        Some(4),
        "not above the 4 partitions of 'numbers'"
    );
    assert_eq!(
        notes(&plan),
        [
            "Autoscaled: twice: 1 -> 4 replicas (lag 1000 records, target 100 per replica; capped at 4, the partitions of its inlets)"
        ]
    );
    let status = plan.status.streamlets[1].autoscaling.as_ref().unwrap();
    assert_eq!((status.lag, status.replicas), (1000, 4));
    assert_eq!(plan.outcome, Outcome::Converging(SOON));
}

/// The cluster once `app` is applied, with the one pod of `twice` in `status`.
fn with_one_twice_pod(app: &Application, status: PodStatus) -> Observed {
    let plan = reconcile_fully(app, Observed::default());
    let mut cluster = cluster_after(&plan);
    let twice = cluster
        .deployments
        .iter()
        .find(|d| d.name_any() == "demo-twice")
        .unwrap()
        .clone();
    cluster
        .pods
        .retain(|p| !p.name_any().starts_with("demo-twice"));
    cluster.pods.push(pod_of(&twice, 0, status));
    cluster
}

#[test]
fn crashing_pods_make_the_app_degraded_with_the_last_error() {
    let app = application();
    let cluster = with_one_twice_pod(
        &app,
        PodStatus {
            phase: Some("Running".to_owned()),
            container_statuses: Some(vec![ContainerStatus {
                name: "streamlet".to_owned(),
                restart_count: 4,
                state: Some(ContainerState {
                    waiting: Some(ContainerStateWaiting {
                        reason: Some("CrashLoopBackOff".to_owned()),
                        message: Some("back-off 40s restarting failed container".to_owned()),
                    }),
                    ..ContainerState::default()
                }),
                last_state: Some(ContainerState {
                    terminated: Some(ContainerStateTerminated {
                        exit_code: 1,
                        reason: Some("Error".to_owned()),
                        finished_at: Some(Time(Timestamp::from_second(1_699_999_990).unwrap())),
                        ..ContainerStateTerminated::default()
                    }),
                    ..ContainerState::default()
                }),
                ..ContainerStatus::default()
            }]),
            ..PodStatus::default()
        },
    );
    let plan = reconcile(&app, &cluster, &context());
    assert_eq!(plan.status.phase, Phase::Degraded);
    assert_eq!(
        plan.status.message,
        "twice (0/1 ready): CrashLoopBackOff: back-off 40s restarting failed container"
    );
    assert_eq!(plan.status.streamlets[1].restarts, 4);
}

#[test]
fn an_image_that_cannot_be_pulled_raises_a_warning_event() {
    let app = application();
    let cluster = with_one_twice_pod(
        &app,
        PodStatus {
            phase: Some("Pending".to_owned()),
            container_statuses: Some(vec![ContainerStatus {
                name: "streamlet".to_owned(),
                state: Some(ContainerState {
                    waiting: Some(ContainerStateWaiting {
                        reason: Some("ImagePullBackOff".to_owned()),
                        message: Some(
                            "Back-off pulling image \"registry.example/demo:1.0\"".to_owned(),
                        ),
                    }),
                    ..ContainerState::default()
                }),
                ..ContainerStatus::default()
            }]),
            ..PodStatus::default()
        },
    );
    let plan = reconcile(&app, &cluster, &context());
    assert_eq!(plan.status.phase, Phase::Degraded);
    let warnings: Vec<&Event> = plan.events.iter().filter(|e| e.warning).collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].reason, "ImagePullFailed");
    assert!(
        warnings[0].note.starts_with("streamlet twice cannot start: image registry.example/demo:1.0 cannot be pulled (ImagePullBackOff: Back-off pulling image"),
        "{}",
        warnings[0].note
    );
}

#[test]
fn undeploy_applies_and_deletes_nothing() {
    let mut app = application();
    let cluster = cluster_after(&reconcile_fully(&app, Observed::default()));
    app.metadata.deletion_timestamp = Some(Time(Timestamp::from_second(1_700_000_000).unwrap()));
    let plan = reconcile(&app, &cluster, &context());
    assert!(plan.apply.is_empty() && plan.delete.is_empty() && plan.topics.is_empty());
    assert_eq!(plan.status.phase, Phase::Undeploying);
    assert_eq!(plan.status.message, "deleting; 3 pods still ready");
    assert_eq!(plan.outcome, Outcome::Undeploying);
}

#[test]
fn a_streamlet_with_one_state_for_the_instance_runs_one_replica_however_many_are_asked() {
    let descriptor = DESCRIPTOR.replace(
        r#"{"type": "double","#,
        r#"{"type": "double", "state": "instance","#,
    );
    let descriptor = AppDescriptor::from_json(&descriptor).unwrap();
    let mut app = application();
    app.spec.descriptor = descriptor;
    app.spec
        .streamlets
        .iter_mut()
        .find(|streamlet| streamlet.name == "twice")
        .unwrap()
        .replicas = 3;
    let plan = reconcile_fully(&app, Observed::default());
    assert_eq!(replicas(&plan, "demo-twice"), Some(1));
    let warned: Vec<&str> = plan
        .events
        .iter()
        .filter(|event| event.warning && event.reason == "SingleInstanceState")
        .map(|event| event.note.as_str())
        .collect();
    assert_eq!(
        warned,
        [
            "streamlet twice keeps one state for the whole instance, so it runs with 1 replica, not 3; keep its state by input partition to scale it out"
        ]
    );
}

/// An app whose `twice` is autoscaled on lag and whose `log` an HPA scales, running with
/// two generators, and the cluster once it runs.
fn scaled_three_ways() -> (Application, Observed) {
    let mut app = application();
    for assignment in [
        "scaling.twice.max-replicas=4",
        "scaling.twice.target-lag=100",
        "scaling.log.external=true",
    ] {
        app.spec.configuration.assign(assignment).unwrap();
    }
    app.spec.streamlets[0].replicas = 2;
    let plan = reconcile_fully(&app, Observed::default());
    let mut cluster = cluster_after(&plan);
    cluster.lag.insert(
        "twice".to_owned(),
        crate::LagSample {
            lag: 300,
            rate: None,
            partitions: 4,
        },
    );
    let running = reconcile(&app, &cluster, &context());
    app.status = Some(running.status.clone());
    let mut cluster = cluster_after(&running);
    // The API server defaults the replicas the operator leaves out to 1; the HPA keeps them.
    cluster
        .deployments
        .iter_mut()
        .find(|d| d.name_any() == "demo-log")
        .unwrap()
        .spec
        .as_mut()
        .unwrap()
        .replicas = Some(1);
    cluster.lag = BTreeMap::from([(
        "twice".to_owned(),
        crate::LagSample {
            lag: 300,
            rate: None,
            partitions: 4,
        },
    )]);
    (app, cluster)
}

#[test]
fn suspending_keeps_every_object_and_scales_every_streamlet_to_zero() {
    let (mut app, cluster) = scaled_three_ways();
    assert_eq!(
        [
            replicas(&reconcile(&app, &cluster, &context()), "demo-gen"),
            cluster
                .deployment("twice")
                .unwrap()
                .spec
                .as_ref()
                .unwrap()
                .replicas,
            cluster
                .deployment("log")
                .unwrap()
                .spec
                .as_ref()
                .unwrap()
                .replicas,
        ],
        [Some(2), Some(3), Some(1)],
        "running: the spec's replicas, the autoscaler's, the HPA's"
    );
    let applied_before: Vec<String> = reconcile(&app, &cluster, &context())
        .apply
        .iter()
        .map(Desired::describe)
        .collect();

    app.spec.suspended = true;
    let plan = reconcile(&app, &cluster, &context());
    for name in ["demo-gen", "demo-twice", "demo-log"] {
        assert_eq!(replicas(&plan, name), Some(0), "{name}");
    }
    let applied: Vec<String> = plan.apply.iter().map(Desired::describe).collect();
    assert_eq!(applied, applied_before, "every object is kept");
    assert!(plan.delete.is_empty());
    assert_eq!(plan.status.phase, Phase::Suspended);
    assert_eq!(
        plan.status.message,
        "suspended: 3 streamlets scaled to 0 replicas, 6 pods still ready"
    );
    let condition = plan.status.condition("Suspended").unwrap();
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("True", "Suspended")
    );
    assert_eq!(plan.status.condition("Ready").unwrap().status, "False");
    assert_eq!(
        notes(&plan),
        [
            "Updated: streamlet gen: replicas 2 -> 0",
            "Updated: streamlet log: replicas 1 -> 0",
            "Suspended: suspended: every streamlet's Deployment scaled to 0 replicas; the objects, topics and consumer offsets stay",
        ]
    );
    let twice = &plan.status.streamlets[1];
    assert_eq!(twice.desired_replicas, 0);
    assert_eq!(
        twice.autoscaling.as_ref().map(|a| a.replicas),
        Some(3),
        "the autoscaler's last decision stays"
    );
    assert_eq!(
        template_hash(deployment(&plan, "demo-gen")),
        template_hash(cluster.deployment("gen").unwrap()),
        "suspending rolls nothing"
    );
    assert_eq!(plan.outcome, Outcome::Converging(SOON), "pods are stopping");

    // Once the pods are gone it is settled, and says so once.
    app.status = Some(plan.status.clone());
    let settled = reconcile(&app, &cluster_after(&plan), &context());
    assert_eq!(
        settled.status.message,
        "suspended: 3 streamlets scaled to 0 replicas"
    );
    assert!(settled.events.is_empty(), "{:?}", notes(&settled));
    assert_eq!(settled.outcome, Outcome::Converging(LATER));
}

#[test]
fn resuming_restores_the_spec_replicas() {
    let (mut app, cluster) = scaled_three_ways();
    app.spec.suspended = true;
    let suspended = reconcile(&app, &cluster, &context());
    app.status = Some(suspended.status.clone());
    let mut cluster = cluster_after(&suspended);
    cluster.lag.insert(
        "twice".to_owned(),
        crate::LagSample {
            lag: 0,
            rate: None,
            partitions: 4,
        },
    );

    app.spec.suspended = false;
    let resumed = reconcile(&app, &cluster, &context());
    assert_eq!(
        replicas(&resumed, "demo-gen"),
        Some(2),
        "the spec's replicas"
    );
    assert_eq!(
        replicas(&resumed, "demo-twice"),
        Some(1),
        "the autoscaler starts again from the spec's replicas (1), not from 0"
    );
    assert_eq!(
        replicas(&resumed, "demo-log"),
        None,
        "left to the HPA again"
    );
    assert_eq!(resumed.status.phase, Phase::Pending);
    assert_eq!(
        resumed.status.condition("Suspended").unwrap().status,
        "False"
    );
    assert!(
        notes(&resumed).contains(
            &"Resumed: resumed with replicas gen 2, twice 1, log as its autoscaler says".to_owned()
        ),
        "{:?}",
        notes(&resumed)
    );
    assert_eq!(resumed.outcome, Outcome::Converging(SOON));
}

#[test]
fn a_suspended_app_with_a_bad_spec_fails_and_keeps_its_suspended_condition() {
    let (mut app, cluster) = scaled_three_ways();
    app.spec.suspended = true;
    let suspended = reconcile(&app, &cluster, &context());
    app.status = Some(suspended.status.clone());
    app.spec.configuration.assign("gen.rate=fast").unwrap();
    let plan = reconcile(&app, &cluster_after(&suspended), &context());
    assert_eq!(plan.status.phase, Phase::Failed);
    assert!(plan.apply.is_empty());
    assert_eq!(
        plan.status.condition("Suspended").unwrap(),
        suspended.status.condition("Suspended").unwrap(),
        "nothing was applied, so the cluster is still suspended"
    );
}

/// The test clock, `seconds` after [`context`]'s.
fn context_after(seconds: i64) -> ReconcileContext {
    ReconcileContext {
        now: Timestamp::from_second(1_700_000_000 + seconds).unwrap(),
        ..context()
    }
}

fn image(plan: &Plan, name: &str) -> String {
    deployment(plan, name)
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap()
        .containers[0]
        .image
        .clone()
        .unwrap()
}

/// The pod status of a container that keeps crashing.
fn crash_looping() -> PodStatus {
    PodStatus {
        phase: Some("Running".to_owned()),
        container_statuses: Some(vec![ContainerStatus {
            name: "streamlet".to_owned(),
            restart_count: 3,
            state: Some(ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some("CrashLoopBackOff".to_owned()),
                    message: Some("back-off 20s restarting failed container".to_owned()),
                }),
                ..ContainerState::default()
            }),
            ..ContainerStatus::default()
        }]),
        ..PodStatus::default()
    }
}

/// The cluster once `plan` is applied, with every pod of `twice` crashing.
fn twice_crashing_after(plan: &Plan) -> Observed {
    let mut cluster = cluster_after(plan);
    let twice = cluster.deployment("twice").unwrap().clone();
    cluster
        .pods
        .retain(|p| !p.name_any().starts_with("demo-twice"));
    cluster.pods.push(pod_of(&twice, 0, crash_looping()));
    cluster
}

/// Generation 1 with `spec.rollback` set, applied and running, its status written; the
/// cluster that runs it; and the plan that found it running.
fn running_with_rollback() -> (Application, Observed, Plan) {
    let mut app = application();
    app.spec.rollback = Some(RollbackSpec::default());
    let deployed = reconcile_fully(&app, Observed::default());
    app.status = Some(deployed.status.clone());
    let cluster = cluster_after(&deployed);
    let running = reconcile(&app, &cluster, &context());
    app.status = Some(running.status.clone());
    (app, cluster, running)
}

/// Generation 2 of [`running_with_rollback`]: image 2.0 and 2 `gen` replicas, first
/// applied 10 s later, with `twice`'s new pod crash-looping and its old one (generation
/// 1's) still ready, as a rolling update with `maxUnavailable: 0` keeps it.
fn a_second_generation_that_crashes() -> (Application, Observed, Plan) {
    let (mut app, cluster, running) = running_with_rollback();
    app.metadata.generation = Some(2);
    app.spec.image = "registry.example/demo:2.0".to_owned();
    app.spec.streamlets[0].replicas = 2;
    let applied = reconcile(&app, &cluster, &context_after(10));
    assert_eq!(image(&applied, "demo-gen"), "registry.example/demo:2.0");
    app.status = Some(applied.status.clone());
    let mut rolling = twice_crashing_after(&applied);
    let mut old = cluster
        .pods_of("twice")
        .next()
        .expect("generation 1 ran twice")
        .clone();
    old.metadata.name = Some("demo-twice-old".to_owned());
    rolling.pods.push(old);
    (app, rolling, running)
}

#[test]
fn a_running_app_records_its_spec_and_generation() {
    let mut app = application();
    let deployed = reconcile_fully(&app, Observed::default());
    assert_eq!(deployed.status.phase, Phase::Pending);
    assert_eq!(
        deployed.status.last_running_spec, None,
        "nothing ran yet: the pods are not ready"
    );
    let rollout = deployed.status.rollout.clone().unwrap();
    assert_eq!(
        (
            rollout.generation,
            rollout.start_time.as_str(),
            rollout.rolled_back
        ),
        (1, "2023-11-14T22:13:20Z", false)
    );
    app.status = Some(deployed.status.clone());

    let running = reconcile(&app, &cluster_after(&deployed), &context_after(30));
    assert_eq!(running.status.phase, Phase::Running);
    let last = running.status.last_running_spec.as_ref().unwrap();
    assert_eq!(last.generation, 1);
    assert_eq!(last.spec, app.spec);
    assert_eq!(
        running.status.rollout.as_ref().unwrap().start_time,
        "2023-11-14T22:13:20Z",
        "the rollout started when the objects were first applied"
    );
    let condition = running.status.condition("RolledBack").unwrap();
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("False", "NotRolledBack")
    );
}

#[test]
fn a_new_generation_not_ready_before_the_deadline_keeps_trying() {
    let (app, cluster, _) = a_second_generation_that_crashes();
    // Applied at +10 s; the deadline is 300 s later.
    let plan = reconcile(&app, &cluster, &context_after(309));
    assert_eq!(
        plan.status.phase,
        Phase::Running,
        "twice's old pod is ready, so it counts 1/1 ready replicas"
    );
    assert_eq!(image(&plan, "demo-gen"), "registry.example/demo:2.0");
    assert_eq!(replicas(&plan, "demo-gen"), Some(2));
    assert!(plan.events.iter().all(|e| e.reason != "RolledBack"));
    assert_eq!(plan.status.condition("RolledBack").unwrap().status, "False");
    let rollout = plan.status.rollout.as_ref().unwrap();
    assert_eq!(
        (
            rollout.generation,
            rollout.start_time.as_str(),
            rollout.rolled_back
        ),
        (2, "2023-11-14T22:13:30Z", false)
    );
    assert_eq!(
        plan.status.last_running_spec.as_ref().unwrap().generation,
        1,
        "generation 1 is still the one that ran: twice has no ready pod of generation 2"
    );
    assert_eq!(plan.outcome, Outcome::Converging(SOON));
}

#[test]
fn past_the_deadline_the_last_running_spec_is_applied_again() {
    let (app, cluster, running) = a_second_generation_that_crashes();
    let plan = reconcile(&app, &cluster, &context_after(310));

    for name in ["demo-gen", "demo-twice", "demo-log"] {
        assert_eq!(
            image(&plan, name),
            "registry.example/demo:1.0",
            "{name} runs generation 1's image again"
        );
        assert_eq!(
            template_hash(deployment(&plan, name)),
            template_hash(deployment(&running, name)),
            "{name} gets generation 1's configuration"
        );
    }
    assert_eq!(
        replicas(&plan, "demo-gen"),
        Some(1),
        "generation 1's replicas"
    );
    assert_eq!(plan.status.phase, Phase::RolledBack);
    let why = "generation 2 was not ready 300s after it was applied (streamlet twice 0/1 ready, last error: CrashLoopBackOff: back-off 20s restarting failed container): rolled back to generation 1";
    let condition = plan.status.condition("RolledBack").unwrap();
    assert_eq!(
        (
            condition.status.as_str(),
            condition.reason.as_str(),
            condition.message.as_str()
        ),
        ("True", "ReadinessTimeout", why)
    );
    assert_eq!(
        plan.status.condition("Ready").unwrap().reason,
        "RolledBack",
        "generation 2 is not what runs"
    );
    assert!(
        plan.status.message.starts_with(why),
        "{}",
        plan.status.message
    );
    let warning = &plan.events[0];
    assert!(warning.warning);
    assert_eq!(warning.reason, "RolledBack");
    assert_eq!(
        warning.note,
        format!("{why}; it is not tried again, a new spec change is")
    );
    assert!(
        notes(&plan).contains(
            &"Updated: streamlet gen: replicas 2 -> 1; image registry.example/demo:2.0 -> registry.example/demo:1.0".to_owned()
        ),
        "{:?}",
        notes(&plan)
    );
    assert!(plan.status.rollout.as_ref().unwrap().rolled_back);
    assert_eq!(
        plan.status.last_running_spec.as_ref().unwrap().generation,
        1
    );
}

#[test]
fn a_rolled_back_generation_is_not_retried_but_a_newer_one_is() {
    let (mut app, cluster, _) = a_second_generation_that_crashes();
    let rolled_back = reconcile(&app, &cluster, &context_after(310));
    app.status = Some(rolled_back.status.clone());

    // Generation 1's pods are ready again: generation 2 stays rolled back, quietly.
    let settled = reconcile(&app, &cluster_after(&rolled_back), &context_after(1000));
    assert_eq!(image(&settled, "demo-gen"), "registry.example/demo:1.0");
    assert_eq!(replicas(&settled, "demo-gen"), Some(1));
    assert_eq!(settled.status.phase, Phase::RolledBack);
    assert!(
        settled
            .status
            .message
            .ends_with("; 3 streamlets running, 3/3 replicas ready"),
        "{}",
        settled.status.message
    );
    assert_eq!(
        settled.status.condition("RolledBack").unwrap(),
        rolled_back.status.condition("RolledBack").unwrap(),
        "the reason and time of the rollback stay"
    );
    assert!(settled.events.is_empty(), "{:?}", notes(&settled));
    assert_eq!(
        settled
            .status
            .last_running_spec
            .as_ref()
            .unwrap()
            .generation,
        1,
        "generation 1 running again does not make generation 2 the one that ran"
    );
    assert_eq!(settled.outcome, Outcome::Converging(LATER));
    app.status = Some(settled.status.clone());

    // Generation 3 is tried afresh, with its own deadline.
    app.metadata.generation = Some(3);
    app.spec.image = "registry.example/demo:3.0".to_owned();
    let cluster = cluster_after(&settled);
    let third = reconcile(&app, &cluster, &context_after(2000));
    assert_eq!(image(&third, "demo-gen"), "registry.example/demo:3.0");
    assert_eq!(replicas(&third, "demo-gen"), Some(2));
    assert_eq!(
        third.status.condition("RolledBack").unwrap().status,
        "False"
    );
    let rollout = third.status.rollout.as_ref().unwrap();
    assert_eq!(
        (
            rollout.generation,
            rollout.start_time.as_str(),
            rollout.rolled_back
        ),
        (3, "2023-11-14T22:46:40Z", false)
    );
    app.status = Some(third.status.clone());
    let ran = reconcile(&app, &cluster_after(&third), &context_after(2030));
    assert_eq!(ran.status.phase, Phase::Running);
    assert_eq!(ran.status.last_running_spec.as_ref().unwrap().generation, 3);
}

#[test]
fn a_first_deploy_has_nothing_to_roll_back_to() {
    let mut app = application();
    app.spec.rollback = Some(RollbackSpec {
        readiness_timeout_seconds: 60,
    });
    let deployed = reconcile_fully(&app, Observed::default());
    app.status = Some(deployed.status.clone());
    let plan = reconcile(&app, &twice_crashing_after(&deployed), &context_after(3600));
    assert_eq!(plan.status.phase, Phase::Degraded);
    assert_eq!(image(&plan, "demo-twice"), "registry.example/demo:1.0");
    assert_eq!(plan.status.last_running_spec, None);
    assert_eq!(plan.status.condition("RolledBack").unwrap().status, "False");
    assert!(plan.events.iter().all(|e| e.reason != "RolledBack"));
}

#[test]
fn without_spec_rollback_a_failing_generation_stays_applied() {
    let (mut app, cluster, _) = a_second_generation_that_crashes();
    app.spec.rollback = None;
    let plan = reconcile(&app, &cluster, &context_after(3600));
    assert_eq!(image(&plan, "demo-gen"), "registry.example/demo:2.0");
    assert_eq!(image(&plan, "demo-twice"), "registry.example/demo:2.0");
    assert!(plan.events.iter().all(|e| e.reason != "RolledBack"));
    assert_eq!(
        plan.status.last_running_spec.as_ref().unwrap().generation,
        1,
        "kept, for when rollback is switched on"
    );
}

#[test]
fn a_suspended_generation_is_not_rolled_back() {
    let (mut app, cluster, _) = running_with_rollback();
    app.metadata.generation = Some(2);
    app.spec.suspended = true;
    let plan = reconcile(&app, &cluster, &context_after(3600));
    assert_eq!(plan.status.phase, Phase::Suspended);
    assert_eq!(replicas(&plan, "demo-gen"), Some(0));
    assert!(plan.events.iter().all(|e| e.reason != "RolledBack"));
}

#[test]
fn a_schema_that_breaks_what_the_topic_holds_is_refused_naming_the_version() {
    let app = application();
    let first = reconcile(&app, &Observed::default(), &context());
    let kept = runnel_blueprint::kept_schema("01", serde_json::json!("string"));
    let observed = Observed {
        topics: Some(Ok(topics_of(&first))),
        kept_schemas: Some(Ok(runnel_blueprint::KeptSchemas::from([(
            "numbers".to_owned(),
            vec![kept],
        )]))),
        ..Observed::default()
    };
    let plan = reconcile(&app, &observed, &context());
    assert!(plan.apply.is_empty());
    assert_eq!(plan.status.phase, Phase::Failed);
    assert_eq!(plan.events[0].reason, "IncompatibleSchemaChange");
    assert!(
        plan.status.message.contains("'gen.out' cannot write topic 'numbers' with schema 'long': it breaks BACKWARD compatibility with the topic's schema version 1")
            && plan.status.message.contains("'twice.in' cannot read records on topic 'numbers' written with its schema version 1"),
        "{}",
        plan.status.message
    );
    assert!(matches!(plan.outcome, Outcome::Failed(_)));

    // The same schema kept, or a rule of NONE, lets it run.
    let same = runnel_blueprint::kept_schema("02", serde_json::json!("long"));
    let observed = Observed {
        kept_schemas: Some(Ok(runnel_blueprint::KeptSchemas::from([(
            "numbers".to_owned(),
            vec![same],
        )]))),
        ..observed
    };
    let plan = reconcile(&app, &observed, &context());
    assert!(!plan.apply.is_empty(), "{}", plan.status.message);
}

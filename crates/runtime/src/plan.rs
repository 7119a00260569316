//! [`Plan`]: what a run starts, derived from a checked blueprint, the app's streamlet types
//! and the config values; every parameter problem is found here, before anything starts.

use std::collections::{BTreeMap, HashMap};

use runnel_backend::TopicSpec;
use runnel_blueprint::descriptor::{AppDescriptor, Delivery};
use runnel_blueprint::parameter::ParameterValue;
use runnel_blueprint::{Blueprint, Compatibility};
use runnel_streamlet::{ParameterError, resolve_parameters};

use crate::{Factory, LocalConfig, Registry};

/// Why a blueprint cannot be planned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The configuration sets values for instances the blueprint does not have, or parameter
    /// values are missing, unknown or invalid: every problem, a line each.
    #[error("invalid configuration:\n{}", list(.unknown_instances, .parameters))]
    Configuration {
        /// Instances the configuration names that the blueprint does not have.
        unknown_instances: Vec<String>,
        /// Parameter problems of the blueprint's instances.
        parameters: Vec<ParameterError>,
    },
    /// The blueprint uses a type the app does not register (verification prevents this).
    #[error("streamlet '{instance}' has type '{type_name}', which this app does not register")]
    UnknownType {
        /// The instance.
        instance: String,
        /// The type.
        type_name: String,
    },
}

fn list(unknown_instances: &[String], errors: &[ParameterError]) -> String {
    let unknown = unknown_instances.iter().map(|name| {
        format!("  the configuration sets parameters for '{name}', which is not a streamlet of the blueprint")
    });
    unknown
        .chain(errors.iter().map(|error| format!("  {error}")))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Everything a run starts.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The app name.
    pub app: String,
    /// The streamlet instances.
    pub instances: Vec<InstancePlan>,
    /// The topics of the blueprint.
    pub topics: Vec<TopicPlan>,
    /// Where undecodable records go: `<app>.dead-letter`.
    pub dead_letter_topic: String,
}

/// One streamlet instance and how its ports connect.
#[derive(Clone)]
pub struct InstancePlan {
    /// The instance name.
    pub name: String,
    /// The streamlet type.
    pub type_name: String,
    /// Makes the streamlet at every start.
    pub factory: Factory,
    /// Checked parameter values.
    pub parameters: HashMap<String, ParameterValue>,
    /// The inlets with their topics.
    pub inlets: Vec<InletPlan>,
    /// The outlets with their topics.
    pub outlets: Vec<OutletPlan>,
    /// The delivery guarantee the streamlet type asks for.
    pub delivery: Delivery,
    /// Producer settings from the blueprint's `producer-config` of the topics the instance
    /// writes (its one producer serves them all; the topic listed last wins a conflict).
    pub producer_settings: BTreeMap<String, String>,
}

impl std::fmt::Debug for InstancePlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InstancePlan")
            .field("name", &self.name)
            .field("type_name", &self.type_name)
            .field("inlets", &self.inlets)
            .field("outlets", &self.outlets)
            .field("delivery", &self.delivery)
            .finish_non_exhaustive()
    }
}

/// One outlet and its topic.
#[derive(Clone, Debug)]
pub struct OutletPlan {
    /// The outlet name.
    pub port: String,
    /// The topic name.
    pub topic: String,
    /// Whether records name their writer schema in a header: the topic's producers write
    /// with different schemas.
    pub tag_schema: bool,
    /// The rule the topic's schemas keep.
    pub compatibility: Compatibility,
}

/// One inlet: its topic, consumer group and the schemas its producers write with.
#[derive(Clone, Debug)]
pub struct InletPlan {
    /// The inlet name.
    pub port: String,
    /// The topic name.
    pub topic: String,
    /// The consumer group: `<app>.<instance>.<inlet>`.
    pub group: String,
    /// The Avro schemas of the topic's producers.
    pub writer_schemas: Vec<serde_json::Value>,
    /// Consumer settings from the blueprint.
    pub consumer_settings: BTreeMap<String, String>,
    /// The rule the topic's schemas keep.
    pub compatibility: Compatibility,
}

/// A topic to create (or expect) and who writes it.
#[derive(Clone, Debug)]
pub struct TopicPlan {
    /// The id in the blueprint.
    pub id: String,
    /// What to create.
    pub spec: TopicSpec,
    /// Whether Runnel creates it.
    pub managed: bool,
    /// The outlets writing it, as `instance.port`.
    pub producers: Vec<String>,
    /// The inlets reading it, as `instance.port`.
    pub consumers: Vec<String>,
}

/// Plans a run of `blueprint` (already verified against `descriptor`).
///
/// # Errors
///
/// Every parameter problem of every instance at once, or config for unknown instances.
pub fn plan(
    blueprint: &Blueprint,
    descriptor: &AppDescriptor,
    registry: &Registry,
    config: &LocalConfig,
) -> Result<Plan, PlanError> {
    let unknown_instances: Vec<String> = config
        .instances()
        .filter(|name| blueprint.streamlet(name).is_none())
        .map(str::to_owned)
        .collect();
    let mut instances = Vec::new();
    let mut errors = Vec::new();
    for streamlet in &blueprint.streamlets {
        let unknown_type = || PlanError::UnknownType {
            instance: streamlet.name.clone(),
            type_name: streamlet.type_name.clone(),
        };
        let factory = registry
            .factory(&streamlet.type_name)
            .ok_or_else(unknown_type)?;
        let described = descriptor
            .streamlet(&streamlet.type_name)
            .ok_or_else(unknown_type)?;
        let provided = config.values_for(&streamlet.name);
        let parameters = match resolve_parameters(&streamlet.name, &described.parameters, &provided)
        {
            Ok(values) => values,
            Err(problems) => {
                errors.extend(problems);
                HashMap::new()
            }
        };
        let inlets = described
            .inlets
            .iter()
            .filter_map(|inlet| {
                let topic = blueprint.topic_of(&streamlet.name, &inlet.name)?;
                Some(InletPlan {
                    port: inlet.name.clone(),
                    topic: topic.name.clone(),
                    group: format!("{}.{}.{}", blueprint.name, streamlet.name, inlet.name),
                    writer_schemas: writer_schemas(blueprint, descriptor, topic),
                    consumer_settings: topic.consumer_config.clone(),
                    compatibility: topic.compatibility,
                })
            })
            .collect();
        let outlets = described
            .outlets
            .iter()
            .filter_map(|outlet| {
                let topic = blueprint.topic_of(&streamlet.name, &outlet.name)?;
                let schemas = writer_schemas(blueprint, descriptor, topic);
                let distinct = schemas
                    .iter()
                    .enumerate()
                    .filter(|(i, s)| !schemas[..*i].contains(s));
                Some(OutletPlan {
                    port: outlet.name.clone(),
                    topic: topic.name.clone(),
                    tag_schema: distinct.count() > 1,
                    compatibility: topic.compatibility,
                })
            })
            .collect();
        let producer_settings = blueprint
            .topics
            .iter()
            .filter(|topic| {
                topic
                    .producers
                    .iter()
                    .any(|path| path.streamlet == streamlet.name)
            })
            .flat_map(|topic| topic.producer_config.clone())
            .collect();
        instances.push(InstancePlan {
            name: streamlet.name.clone(),
            type_name: streamlet.type_name.clone(),
            factory: factory.clone(),
            parameters,
            inlets,
            outlets,
            delivery: described.delivery,
            producer_settings,
        });
    }
    if !errors.is_empty() || !unknown_instances.is_empty() {
        return Err(PlanError::Configuration {
            unknown_instances,
            parameters: errors,
        });
    }
    let topics = blueprint
        .topics
        .iter()
        .map(|topic| TopicPlan {
            id: topic.id.clone(),
            spec: TopicSpec {
                name: topic.name.clone(),
                partitions: topic.partitions.unwrap_or(1),
                replication: topic.replication,
                config: topic.config.clone(),
            },
            managed: topic.managed,
            producers: topic.producers.iter().map(ToString::to_string).collect(),
            consumers: topic.consumers.iter().map(ToString::to_string).collect(),
        })
        .collect();
    Ok(Plan {
        app: blueprint.name.clone(),
        instances,
        topics,
        dead_letter_topic: format!("{}.dead-letter", blueprint.name),
    })
}

/// The schemas `topic` is written with: its declared `schema` (clients outside the
/// blueprint), then every producer's.
fn writer_schemas(
    blueprint: &Blueprint,
    descriptor: &AppDescriptor,
    topic: &runnel_blueprint::Topic,
) -> Vec<serde_json::Value> {
    let producers = topic.producers.iter().filter_map(|path| {
        let instance = blueprint.streamlet(&path.streamlet)?;
        let outlet = descriptor
            .streamlet(&instance.type_name)?
            .outlet(&path.port)?;
        Some(outlet.schema.definition.clone())
    });
    topic.schema.iter().cloned().chain(producers).collect()
}

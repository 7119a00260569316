//! [`Tools`]: what every tool starts from: the app's blueprint and schemas, and the
//! backplane its topics are on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use runnel_blueprint::Blueprint;
use runnel_blueprint::descriptor::AppDescriptor;

use crate::args::SourceArgs;
use crate::error::{Result, ToolError};
use crate::schemas::Schemas;
use crate::store::Store;

/// The app, its topics' schemas, and where its topics are.
#[derive(Debug)]
pub struct Tools {
    /// The app name (the blueprint's, else the binary's).
    pub app: String,
    /// The blueprint, when one was found.
    pub blueprint: Option<Blueprint>,
    /// The topics' schemas (empty without a blueprint and a descriptor).
    pub schemas: Schemas,
    /// The backplane.
    pub store: Store,
}

impl Tools {
    /// Reads the blueprint `source` names (verified against `descriptor` when there is one)
    /// and opens the backplane it says.
    ///
    /// # Errors
    ///
    /// When the blueprint has errors, there is neither a blueprint nor a backplane to go
    /// by, or the backplane cannot be reached.
    pub async fn open(
        source: &SourceArgs,
        app: Option<&str>,
        descriptor: Option<&AppDescriptor>,
    ) -> Result<Tools> {
        let blueprint = read_blueprint(&source.blueprint, descriptor)?;
        if blueprint.is_none() && source.data_dir.is_none() && source.kafka.is_none() {
            return Err(ToolError::Usage(format!(
                "there is no blueprint at {}; give --blueprint FILE, or say where the topics are with --data-dir DIR or --kafka BOOTSTRAP",
                source.blueprint.display()
            )));
        }
        let schemas = match (&blueprint, descriptor) {
            (Some(blueprint), Some(descriptor)) => Schemas::new(blueprint, descriptor),
            _ => Schemas::default(),
        };
        let mut schemas = schemas;
        let store = open_store(source).await?;
        if store.frames_by_registry() {
            schemas.framed_by_registry();
        }
        // Records written with an older schema (the app's types changed since) decode too.
        for topic in schemas.topics() {
            let kept = store.topic_schemas(&topic).await?;
            schemas.keep(&topic, &kept);
        }
        let app = blueprint
            .as_ref()
            .map(|blueprint| blueprint.name.clone())
            .or_else(|| app.map(str::to_owned))
            .unwrap_or_else(|| "app".to_owned());
        Ok(Tools {
            app,
            blueprint,
            schemas,
            store,
        })
    }

    /// Asks the schema registry for the schemas `records` name that are not known yet, so
    /// they show decoded whatever wrote them.
    ///
    /// # Errors
    ///
    /// When the registry cannot be reached. An id it does not have is left for the record
    /// to show undecoded, saying so.
    pub async fn learn_schemas<'a>(
        &self,
        records: impl IntoIterator<Item = &'a runnel_backend::Record>,
    ) -> Result<()> {
        for id in self.schemas.unknown_registry_ids(records) {
            match self.store.schema_by_id(id).await? {
                Some(schema) => self.schemas.learn(&schema),
                None => self.schemas.learn_missing(id),
            }
        }
        Ok(())
    }

    /// The app's dead-letter topic.
    pub fn dead_letter_topic(&self) -> String {
        format!("{}.dead-letter", self.app)
    }

    /// How the app's run creates `topic`, when the blueprint declares it and manages it
    /// (the same partitions, replication and settings).
    pub fn declared_topic(&self, topic: &str) -> Option<runnel_backend::TopicSpec> {
        let declared = self
            .blueprint
            .as_ref()?
            .topics
            .iter()
            .find(|declared| declared.name == topic && declared.managed)?;
        Some(runnel_backend::TopicSpec {
            name: declared.name.clone(),
            partitions: declared.partitions.unwrap_or(1),
            replication: declared.replication,
            config: declared.config.clone(),
        })
    }

    /// The consumer groups of the blueprint's inlets: (group, topic), in blueprint order.
    pub fn groups(&self) -> Vec<(String, String)> {
        let Some(blueprint) = &self.blueprint else {
            return Vec::new();
        };
        let mut groups = Vec::new();
        for topic in &blueprint.topics {
            for consumer in &topic.consumers {
                let group = format!(
                    "{}.{}.{}",
                    blueprint.name, consumer.streamlet, consumer.port
                );
                groups.push((group, topic.name.clone()));
            }
        }
        groups
    }
}

fn read_blueprint(path: &Path, descriptor: Option<&AppDescriptor>) -> Result<Option<Blueprint>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(ToolError::Io {
                what: format!("reading {}", path.display()),
                source,
            });
        }
    };
    let files = runnel_blueprint::BlueprintFiles::beside(path, &text);
    let verification = match descriptor {
        Some(descriptor) => {
            runnel_blueprint::verify_with_queries(path, &text, descriptor, None, &[], &files)
        }
        None => runnel_blueprint::parse_with_files(path, &text, &files),
    };
    match verification.blueprint {
        Some(blueprint) if !verification.has_errors() => Ok(Some(blueprint)),
        _ => Err(ToolError::Usage(format!(
            "the blueprint has errors:\n{}",
            runnel_blueprint::render_human_with_files(&verification.diagnostics, &text, &files)
        ))),
    }
}

/// The Avro schemas the backplane `source` names keeps for each of `topics` (oldest first),
/// for `verify --against`; none for a topic not created yet, or a backplane that keeps none.
///
/// # Errors
///
/// When the backplane cannot be reached or its schemas read.
pub async fn kept_schemas(
    source: &SourceArgs,
    topics: impl IntoIterator<Item = &str>,
) -> Result<runnel_blueprint::KeptSchemas> {
    let store = open_store(source).await?;
    let mut kept = runnel_blueprint::KeptSchemas::new();
    for topic in topics {
        let schemas = store
            .topic_schemas(topic)
            .await?
            .into_iter()
            .filter_map(|schema| {
                let definition = serde_json::from_str(&schema.definition).ok()?;
                Some(runnel_blueprint::kept_schema(
                    &schema.fingerprint,
                    definition,
                ))
            })
            .collect();
        kept.insert(topic.to_owned(), schemas);
    }
    Ok(kept)
}

async fn open_store(source: &SourceArgs) -> Result<Store> {
    let Some(bootstrap) = &source.kafka else {
        let directory = source.data_dir.clone().unwrap_or_else(|| {
            let beside = source.blueprint.parent().unwrap_or(Path::new(""));
            beside.join(".runnel")
        });
        return Store::embedded(directory);
    };
    let settings = kafka_settings(source)?;
    connect_kafka(bootstrap, settings).await
}

#[cfg(feature = "kafka")]
async fn connect_kafka(bootstrap: &str, settings: BTreeMap<String, String>) -> Result<Store> {
    let config = settings.into_iter().fold(
        runnel_kafka::KafkaConfig::new(bootstrap),
        |config, (key, value)| config.with(key, value),
    );
    let backend = runnel_kafka::KafkaBackend::connect(config)
        .await
        .map_err(ToolError::Kafka)?;
    Ok(Store::Kafka(backend))
}

#[cfg(not(feature = "kafka"))]
async fn connect_kafka(_bootstrap: &str, _settings: BTreeMap<String, String>) -> Result<Store> {
    Err(ToolError::NoKafka)
}

/// The config file's `[kafka]` table, then `--kafka-setting`s.
fn kafka_settings(source: &SourceArgs) -> Result<BTreeMap<String, String>> {
    let mut settings = BTreeMap::new();
    let file = source.config.clone().or_else(|| {
        let beside = source.blueprint.parent().unwrap_or(Path::new(""));
        Some(beside.join("local.toml")).filter(|path| path.is_file())
    });
    if let Some(file) = file {
        settings.extend(kafka_table(&file)?);
    }
    for setting in &source.kafka_settings {
        let Some((key, value)) = setting.split_once('=') else {
            return Err(ToolError::Usage(format!(
                "--kafka-setting '{}' is not KEY=VALUE",
                setting.split('=').next().unwrap_or_default()
            )));
        };
        settings.insert(key.trim().to_owned(), value.trim().to_owned());
    }
    Ok(settings)
}

/// The `[kafka]` table of a TOML file, flattened (`linger.ms = 20` and `"linger.ms" = 20`
/// alike). A syntax error is reported by position only: the offending line may hold a
/// secret.
fn kafka_table(path: &PathBuf) -> Result<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).map_err(|source| ToolError::Io {
        what: format!("reading {}", path.display()),
        source,
    })?;
    let table: toml::Table = text.parse().map_err(|error: toml::de::Error| {
        let at = error.span().map_or(0, |span| span.start);
        let line = text[..at.min(text.len())].matches('\n').count() + 1;
        ToolError::Usage(format!(
            "{} is not valid TOML (line {line}); the line is not shown, as it may hold a secret",
            path.display()
        ))
    })?;
    let mut settings = BTreeMap::new();
    if let Some(toml::Value::Table(kafka)) = table.get("kafka") {
        flatten("", kafka, &mut settings);
    }
    Ok(settings)
}

fn flatten(prefix: &str, table: &toml::Table, out: &mut BTreeMap<String, String>) {
    for (key, value) in table {
        let key = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            toml::Value::Table(inner) => flatten(&key, inner, out),
            toml::Value::String(text) => {
                out.insert(key, text.clone());
            }
            other => {
                out.insert(key, other.to_string());
            }
        }
    }
}

//! [`SchemaRegistry`]: the schemas of a Kafka app's topics, kept in a schema registry that
//! speaks the Confluent API (Confluent Schema Registry, Apicurio Registry's
//! `/apis/ccompat/v7`, Redpanda, Karapace), so plain Kafka clients with a Confluent Avro
//! serializer read Runnel's records and Runnel reads theirs.
//!
//! Configured by settings beside the Kafka ones (never handed to librdkafka), with the names
//! Confluent's serializers use:
//!
//! - `schema.registry.url`: where the registry is; setting it turns the wire format on.
//! - `schema.registry.basic.auth.user.info`: `USER:PASSWORD` for HTTP basic authentication,
//!   a secret (never shown).
//! - `value.subject.name.strategy`: which subject a topic's value schemas are registered
//!   under: `topic` (the default, `<topic>-value`), `record` (the record's full name) or
//!   `topic-record` (`<topic>-<record full name>`); Confluent's class names
//!   (`io.confluent.kafka.serializers.subject.TopicNameStrategy`, ...) are accepted too.
//!
//! Ids and schemas are cached: a schema is registered once per process, and each id is
//! looked up once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apache_avro::Schema;
use apache_avro::rabin::Rabin;
use base64::Engine as _;
use runnel_backend::{Error, Result, TopicSchema};

use crate::KafkaSettings;

/// The setting that names the registry.
pub const REGISTRY_URL: &str = "schema.registry.url";
/// The setting with `USER:PASSWORD` for basic authentication.
pub const REGISTRY_USER_INFO: &str = "schema.registry.basic.auth.user.info";
/// The setting that picks the subject name strategy.
pub const SUBJECT_NAME_STRATEGY: &str = "value.subject.name.strategy";

/// Whether `key` is a registry setting rather than a librdkafka one.
pub(crate) fn is_registry_setting(key: &str) -> bool {
    key.starts_with("schema.registry.") || key == SUBJECT_NAME_STRATEGY
}

/// How long one request to the registry may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Which subject the value schemas of a topic are registered under.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SubjectNameStrategy {
    /// `<topic>-value`: one subject per topic (Confluent's default).
    #[default]
    Topic,
    /// The record's full name: one subject per record type, whatever topic it is on.
    Record,
    /// `<topic>-<record full name>`: one subject per record type and topic.
    TopicRecord,
}

impl SubjectNameStrategy {
    /// The strategy a [`SUBJECT_NAME_STRATEGY`] setting names.
    ///
    /// ```
    /// use runnel_kafka::SubjectNameStrategy;
    /// assert_eq!(SubjectNameStrategy::parse("topic-record"), Some(SubjectNameStrategy::TopicRecord));
    /// assert_eq!(
    ///     SubjectNameStrategy::parse("io.confluent.kafka.serializers.subject.RecordNameStrategy"),
    ///     Some(SubjectNameStrategy::Record)
    /// );
    /// assert_eq!(SubjectNameStrategy::parse("by-magic"), None);
    /// ```
    pub fn parse(text: &str) -> Option<Self> {
        let name = text.rsplit('.').next().unwrap_or(text);
        match name {
            "topic" | "TopicNameStrategy" => Some(SubjectNameStrategy::Topic),
            "record" | "RecordNameStrategy" => Some(SubjectNameStrategy::Record),
            "topic-record" | "TopicRecordNameStrategy" => Some(SubjectNameStrategy::TopicRecord),
            _ => None,
        }
    }

    /// The subject of values of `topic` written with a schema whose full name is `record`
    /// (`None` for a schema that is not a named type).
    ///
    /// # Errors
    ///
    /// The record strategies with a schema that has no name.
    pub fn subject(self, topic: &str, record: Option<&str>) -> Result<String> {
        let named = || {
            record.ok_or_else(|| Error::InvalidSetting {
                setting: SUBJECT_NAME_STRATEGY.to_owned(),
                value: format!("{self:?}"),
                expected: "'topic' for values whose schema is not a named Avro type",
            })
        };
        Ok(match self {
            SubjectNameStrategy::Topic => format!("{topic}-value"),
            SubjectNameStrategy::Record => named()?.to_owned(),
            SubjectNameStrategy::TopicRecord => format!("{topic}-{}", named()?),
        })
    }
}

/// A client of one schema registry, with its caches.
pub(crate) struct SchemaRegistry {
    agent: ureq::Agent,
    /// The API's root, without a trailing slash.
    url: String,
    /// The `Authorization` header's value.
    authorization: Option<String>,
    strategy: SubjectNameStrategy,
    /// Schemas by id.
    by_id: Mutex<HashMap<u32, TopicSchema>>,
}

impl std::fmt::Debug for SchemaRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaRegistry")
            .field("url", &self.url)
            .field("strategy", &self.strategy)
            .finish_non_exhaustive()
    }
}

/// An answer of the registry: its status and body.
type Answer = (u16, String);

impl SchemaRegistry {
    /// The registry `settings` name, if any.
    ///
    /// # Errors
    ///
    /// An unknown subject name strategy.
    pub(crate) fn from_settings(settings: &KafkaSettings) -> Result<Option<Arc<Self>>> {
        let Some(url) = settings.get(REGISTRY_URL).filter(|url| !url.is_empty()) else {
            return Ok(None);
        };
        let strategy = match settings.get(SUBJECT_NAME_STRATEGY) {
            None => SubjectNameStrategy::Topic,
            Some(text) => {
                SubjectNameStrategy::parse(text).ok_or_else(|| Error::InvalidSetting {
                    setting: SUBJECT_NAME_STRATEGY.to_owned(),
                    value: text.to_owned(),
                    expected: "'topic', 'record' or 'topic-record'",
                })?
            }
        };
        let authorization = settings.get(REGISTRY_USER_INFO).map(|user_info| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(user_info)
            )
        });
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(REQUEST_TIMEOUT))
            .http_status_as_error(false)
            .build()
            .into();
        Ok(Some(Arc::new(SchemaRegistry {
            agent,
            url: url.trim_end_matches('/').to_owned(),
            authorization,
            strategy,
            by_id: Mutex::default(),
        })))
    }

    /// Registers `schema` for the values of `topic` under its subject (the registry checks
    /// it against the subject's compatibility rule), and returns every schema of the
    /// subject, oldest first, with their ids.
    ///
    /// # Errors
    ///
    /// [`Error::SchemaRefused`] when the registry refuses it; when it cannot be reached.
    pub(crate) async fn register(
        self: &Arc<Self>,
        topic: &str,
        schema: &TopicSchema,
    ) -> Result<Vec<TopicSchema>> {
        let subject = self
            .strategy
            .subject(topic, record_name(&schema.definition).as_deref())?;
        let body = serde_json::json!({ "schema": schema.definition }).to_string();
        let path = format!("/subjects/{subject}/versions");
        let (status, text) = self.call("POST", &path, Some(body)).await?;
        match status {
            200 => {}
            409 | 422 => {
                return Err(Error::SchemaRefused {
                    topic: topic.to_owned(),
                    subject,
                    reason: registry_message(&text),
                });
            }
            _ => {
                return Err(self.unexpected(
                    &format!("registering a schema under subject '{subject}'"),
                    status,
                    &text,
                ));
            }
        }
        self.subject_schemas(&subject).await
    }

    /// The schemas of `topic`'s values, oldest first, with their ids: those of its subject
    /// under the topic strategy, of every `<topic>-` subject under the topic-record one, and
    /// none under the record strategy (its subjects are not tied to a topic).
    ///
    /// # Errors
    ///
    /// When the registry cannot be reached or answers otherwise than the API says.
    pub(crate) async fn topic_schemas(self: &Arc<Self>, topic: &str) -> Result<Vec<TopicSchema>> {
        match self.strategy {
            SubjectNameStrategy::Topic => self.subject_schemas(&format!("{topic}-value")).await,
            SubjectNameStrategy::Record => Ok(Vec::new()),
            SubjectNameStrategy::TopicRecord => {
                let (status, text) = self.call("GET", "/subjects", None).await?;
                if status != 200 {
                    return Err(self.unexpected("listing subjects", status, &text));
                }
                let subjects: Vec<String> = serde_json::from_str(&text)
                    .map_err(|error| self.malformed("listing subjects", &error))?;
                let prefix = format!("{topic}-");
                let mut schemas = Vec::new();
                for subject in subjects
                    .iter()
                    .filter(|subject| subject.starts_with(&prefix))
                {
                    schemas.extend(self.subject_schemas(subject).await?);
                }
                Ok(schemas)
            }
        }
    }

    /// The schema the registry knows by `id`.
    ///
    /// # Errors
    ///
    /// [`Error::SchemaNotFound`] when it has none; when it cannot be reached.
    pub(crate) async fn schema_by_id(self: &Arc<Self>, id: u32) -> Result<TopicSchema> {
        if let Some(known) = self.cached(id) {
            return Ok(known);
        }
        let (status, text) = self
            .call("GET", &format!("/schemas/ids/{id}"), None)
            .await?;
        match status {
            200 => {}
            404 => return Err(Error::SchemaNotFound { id }),
            _ => return Err(self.unexpected(&format!("looking up schema id {id}"), status, &text)),
        }
        #[derive(serde::Deserialize)]
        struct ById {
            schema: String,
        }
        let what = format!("looking up schema id {id}");
        let answer: ById =
            serde_json::from_str(&text).map_err(|error| self.malformed(&what, &error))?;
        self.remember(id, &answer.schema, &what)
    }

    /// Every version of `subject`, oldest first; none when the subject does not exist.
    async fn subject_schemas(self: &Arc<Self>, subject: &str) -> Result<Vec<TopicSchema>> {
        let what = format!("listing the versions of subject '{subject}'");
        let (status, text) = self
            .call("GET", &format!("/subjects/{subject}/versions"), None)
            .await?;
        match status {
            200 => {}
            404 => return Ok(Vec::new()),
            _ => return Err(self.unexpected(&what, status, &text)),
        }
        let versions: Vec<u32> =
            serde_json::from_str(&text).map_err(|error| self.malformed(&what, &error))?;
        #[derive(serde::Deserialize)]
        struct Version {
            id: u32,
            schema: String,
            #[serde(rename = "schemaType")]
            schema_type: Option<String>,
        }
        let mut schemas = Vec::with_capacity(versions.len());
        for version in versions {
            let what = format!("reading version {version} of subject '{subject}'");
            let (status, text) = self
                .call(
                    "GET",
                    &format!("/subjects/{subject}/versions/{version}"),
                    None,
                )
                .await?;
            if status != 200 {
                return Err(self.unexpected(&what, status, &text));
            }
            let answer: Version =
                serde_json::from_str(&text).map_err(|error| self.malformed(&what, &error))?;
            if answer
                .schema_type
                .as_deref()
                .is_some_and(|kind| kind != "AVRO")
            {
                continue;
            }
            schemas.push(self.remember(answer.id, &answer.schema, &what)?);
        }
        Ok(schemas)
    }

    fn cached(&self, id: u32) -> Option<TopicSchema> {
        self.by_id
            .lock()
            .expect("the schema cache is never poisoned")
            .get(&id)
            .cloned()
    }

    /// The schema `definition` known by `id`, fingerprinted and cached.
    fn remember(&self, id: u32, definition: &str, what: &str) -> Result<TopicSchema> {
        let schema = Schema::parse_str(definition).map_err(|error| Error::Admin {
            operation: format!("{what} at the schema registry {}", self.url),
            source: format!("the registry returned a schema that is not valid Avro: {error}")
                .into(),
        })?;
        let kept =
            TopicSchema::new(schema.fingerprint::<Rabin>().to_string(), definition).with_id(id);
        self.by_id
            .lock()
            .expect("the schema cache is never poisoned")
            .insert(id, kept.clone());
        Ok(kept)
    }

    /// Sends one request (on a blocking thread: the client is synchronous).
    async fn call(
        self: &Arc<Self>,
        method: &'static str,
        path: &str,
        body: Option<String>,
    ) -> Result<Answer> {
        let registry = self.clone();
        let url = format!("{}{path}", self.url);
        let operation = format!("{method} {url}");
        let answered = tokio::task::spawn_blocking(move || {
            let mut response = match body {
                Some(body) => {
                    let mut request = registry
                        .agent
                        .post(&url)
                        .content_type("application/vnd.schemaregistry.v1+json");
                    if let Some(authorization) = &registry.authorization {
                        request = request.header("Authorization", authorization);
                    }
                    request.send(body)?
                }
                None => {
                    let mut request = registry.agent.get(&url);
                    if let Some(authorization) = &registry.authorization {
                        request = request.header("Authorization", authorization);
                    }
                    request.call()?
                }
            };
            let status = response.status().as_u16();
            let text = response
                .body_mut()
                .with_config()
                .limit(16 * 1024 * 1024)
                .read_to_string()?;
            Ok::<_, ureq::Error>((status, text))
        })
        .await
        .unwrap_or_else(|join| std::panic::resume_unwind(join.into_panic()));
        let (status, text) = answered.map_err(|error| Error::Admin {
            operation: format!("asking the schema registry ({operation})"),
            source: Box::new(error),
        })?;
        if status == 401 || status == 403 {
            return Err(Error::Admin {
                operation: format!("asking the schema registry ({operation})"),
                source: format!(
                    "HTTP {status}: the registry refused the credentials; check {REGISTRY_USER_INFO}"
                )
                .into(),
            });
        }
        Ok((status, text))
    }

    fn unexpected(&self, what: &str, status: u16, text: &str) -> Error {
        Error::Admin {
            operation: format!("{what} at the schema registry {}", self.url),
            source: format!("HTTP {status}: {}", registry_message(text)).into(),
        }
    }

    fn malformed(&self, what: &str, error: &serde_json::Error) -> Error {
        Error::Admin {
            operation: format!("{what} at the schema registry {}", self.url),
            source: format!("the answer is not what the Confluent API says: {error}").into(),
        }
    }
}

/// The full name of the record (or enum, or fixed) a schema defines, if it is a named type.
fn record_name(definition: &str) -> Option<String> {
    let schema = Schema::parse_str(definition).ok()?;
    schema.name().map(|name| name.fullname(None))
}

/// The registry's own message in an error answer (`{"error_code":..., "message":...}`),
/// else the body.
fn registry_message(text: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Answer {
        message: String,
    }
    serde_json::from_str::<Answer>(text)
        .map(|answer| answer.message)
        .unwrap_or_else(|_| text.chars().take(500).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_follow_the_strategy() {
        let record = Some("com.example.Reading");
        assert_eq!(
            SubjectNameStrategy::Topic
                .subject("readings", record)
                .unwrap(),
            "readings-value"
        );
        assert_eq!(
            SubjectNameStrategy::Record
                .subject("readings", record)
                .unwrap(),
            "com.example.Reading"
        );
        assert_eq!(
            SubjectNameStrategy::TopicRecord
                .subject("readings", record)
                .unwrap(),
            "readings-com.example.Reading"
        );
        assert_eq!(
            SubjectNameStrategy::Topic.subject("names", None).unwrap(),
            "names-value"
        );
        assert!(SubjectNameStrategy::Record.subject("names", None).is_err());
    }

    #[test]
    fn settings_name_the_registry_and_keep_its_password_secret() {
        let mut settings = KafkaSettings::new();
        assert!(SchemaRegistry::from_settings(&settings).unwrap().is_none());
        settings.set(REGISTRY_URL, "http://registry:8081/");
        settings.set(REGISTRY_USER_INFO, "runnel:hunter2");
        settings.set(SUBJECT_NAME_STRATEGY, "topic-record");
        let registry = SchemaRegistry::from_settings(&settings).unwrap().unwrap();
        assert_eq!(registry.url, "http://registry:8081");
        assert_eq!(registry.strategy, SubjectNameStrategy::TopicRecord);
        assert_eq!(
            registry.authorization.as_deref(),
            Some("Basic cnVubmVsOmh1bnRlcjI=")
        );
        assert!(!format!("{registry:?}").contains("hunter2"));
        assert!(!settings.to_string().contains("hunter2"));
        settings.set(SUBJECT_NAME_STRATEGY, "alphabetical");
        let error = SchemaRegistry::from_settings(&settings).unwrap_err();
        assert_eq!(
            error.to_string(),
            "setting 'value.subject.name.strategy' is 'alphabetical', expected 'topic', 'record' or 'topic-record'"
        );
    }

    #[test]
    fn registry_messages_are_quoted_from_their_json() {
        assert_eq!(
            registry_message(r#"{"error_code":409,"message":"Incompatible schema"}"#),
            "Incompatible schema"
        );
        assert_eq!(registry_message("Bad Gateway"), "Bad Gateway");
    }
}

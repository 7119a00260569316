//! [`ApplicationDocument`]: the Application as a YAML document, written by `app build` and
//! read by `runnel deploy`, without any Kubernetes client code.

use std::collections::BTreeMap;
use std::path::Path;

use runnel_blueprint::descriptor::AppDescriptor;
use runnel_blueprint::{Blueprint, render_human, verify};
use serde::{Deserialize, Serialize};

use crate::{API_VERSION, ApplicationSpec, KIND, PROTOCOL_VERSION, StreamletSpec, TopicSpec};

/// An Application object as the API server takes it: `apiVersion`, `kind`, `metadata` (name,
/// optional namespace, labels) and `spec`.
///
/// ```
/// use std::path::Path;
/// use runnel_application::ApplicationDocument;
/// use runnel_blueprint::descriptor::AppDescriptor;
///
/// let descriptor = AppDescriptor::from_json(r#"{"descriptor-version": 1, "app": "demo", "streamlets": [
///   {"type": "gen", "outlets": [{"name": "out", "schema": {"format": "avro", "name": "long", "definition": "long"}}]},
///   {"type": "log", "inlets": [{"name": "in", "schema": {"format": "avro", "name": "long", "definition": "long"}}]}]}"#)?;
/// let text = "name = \"demo\"\n[streamlets]\ng = \"gen\"\nl = \"log\"\n[topics.n]\nproducers = [\"g.out\"]\nconsumers = [\"l.in\"]\n";
/// let blueprint = runnel_blueprint::verify(Path::new("blueprint.toml"), text, &descriptor).blueprint.unwrap();
/// let document = ApplicationDocument::new(&blueprint, text, &descriptor, "registry.example/demo:1.0", "1.0");
/// let yaml = document.to_yaml();
/// assert!(yaml.starts_with("apiVersion: runnel.dev/v1alpha1\nkind: Application\n"));
/// assert_eq!(ApplicationDocument::from_yaml(Path::new("demo.yaml"), &yaml).unwrap(), document);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationDocument {
    /// `runnel.dev/v1alpha1`.
    pub api_version: String,
    /// `Application`.
    pub kind: String,
    /// Name, namespace and labels.
    pub metadata: DocumentMetadata,
    /// The spec.
    pub spec: ApplicationSpec,
}

/// The metadata an Application document carries.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocumentMetadata {
    /// The app name, which is the blueprint's name.
    pub name: String,
    /// The namespace, when the document pins one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// Why an Application document cannot be read or does not hold together.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DocumentError {
    /// The text is not an Application document.
    #[error("{file} is not an Application document: {message}")]
    Parse {
        /// The file.
        file: String,
        /// The parser's message, with line and column.
        message: String,
    },
    /// The blueprint does not verify against the descriptor; `report` lists every problem.
    #[error("the blueprint of application '{app}' has errors:\n{report}")]
    Blueprint {
        /// The app.
        app: String,
        /// The rendered diagnostics.
        report: String,
    },
    /// The streamlets or topics listed in the spec disagree with the blueprint.
    #[error("application '{app}' does not match its blueprint: {}", problems.join("; "))]
    Mismatch {
        /// The app.
        app: String,
        /// Each disagreement.
        problems: Vec<String>,
    },
}

impl ApplicationDocument {
    /// The document for a verified `blueprint` (its text `blueprint_text`) of the app
    /// `descriptor` describes, running `image`.
    pub fn new(
        blueprint: &Blueprint,
        blueprint_text: &str,
        descriptor: &AppDescriptor,
        image: &str,
        version: &str,
    ) -> ApplicationDocument {
        let labels = BTreeMap::from([
            ("app.kubernetes.io/name".to_owned(), blueprint.name.clone()),
            ("app.kubernetes.io/version".to_owned(), version.to_owned()),
        ]);
        ApplicationDocument {
            api_version: API_VERSION.to_owned(),
            kind: KIND.to_owned(),
            metadata: DocumentMetadata {
                name: blueprint.name.clone(),
                namespace: None,
                labels,
            },
            spec: ApplicationSpec {
                protocol_version: PROTOCOL_VERSION,
                version: version.to_owned(),
                image: image.to_owned(),
                blueprint: blueprint_text.to_owned(),
                descriptor: descriptor.clone(),
                streamlets: streamlets_of(blueprint),
                topics: topics_of(blueprint),
                ..ApplicationSpec::default()
            },
        }
    }

    /// The document as YAML that kubectl reads back as written ([`to_yaml`](crate::to_yaml)).
    pub fn to_yaml(&self) -> String {
        crate::to_yaml(self).expect("an application document always serializes")
    }

    /// Reads a document; `path` is for messages.
    ///
    /// # Errors
    ///
    /// When the text is not YAML of an Application (`apiVersion` and `kind` included).
    pub fn from_yaml(path: &Path, text: &str) -> Result<ApplicationDocument, DocumentError> {
        let parse = |message: String| DocumentError::Parse {
            file: path.display().to_string(),
            message,
        };
        let document: ApplicationDocument =
            serde_norway::from_str(text).map_err(|error| parse(error.to_string()))?;
        if document.api_version != API_VERSION || document.kind != KIND {
            return Err(parse(format!(
                "it is a {} of {}, not an {KIND} of {API_VERSION}",
                document.kind, document.api_version
            )));
        }
        Ok(document)
    }
}

impl ApplicationSpec {
    /// Verifies the blueprint against the descriptor and checks that the listed streamlets
    /// and topics are the blueprint's; returns the verified blueprint.
    ///
    /// # Errors
    ///
    /// [`DocumentError::Blueprint`] with the verifier's report, or
    /// [`DocumentError::Mismatch`] listing each disagreement.
    pub fn verify(&self, app: &str) -> Result<Blueprint, DocumentError> {
        let file = Path::new("blueprint.toml");
        let verification = verify(file, &self.blueprint, &self.descriptor);
        let failed = verification.has_errors();
        let Some(blueprint) = verification.blueprint.filter(|_| !failed) else {
            return Err(DocumentError::Blueprint {
                app: app.to_owned(),
                report: render_human(&verification.diagnostics, &self.blueprint)
                    .trim_end()
                    .to_owned(),
            });
        };
        let mut problems = Vec::new();
        if blueprint.name != app {
            problems.push(format!("the blueprint is named '{}'", blueprint.name));
        }
        let listed: BTreeMap<&str, &str> = self
            .streamlets
            .iter()
            .map(|s| (s.name.as_str(), s.type_name.as_str()))
            .collect();
        let expected = streamlets_of(&blueprint);
        for streamlet in &expected {
            match listed.get(streamlet.name.as_str()) {
                None => problems.push(format!(
                    "streamlet '{}' is in the blueprint but not in spec.streamlets",
                    streamlet.name
                )),
                Some(type_name) if *type_name != streamlet.type_name => problems.push(format!(
                    "streamlet '{}' has type '{type_name}' in spec.streamlets but '{}' in the blueprint",
                    streamlet.name, streamlet.type_name
                )),
                Some(_) => {}
            }
        }
        for name in listed.keys() {
            if !expected.iter().any(|s| s.name == *name) {
                problems.push(format!(
                    "spec.streamlets lists '{name}', which the blueprint does not have"
                ));
            }
        }
        for streamlet in &self.streamlets {
            if streamlet.replicas < 0 {
                problems.push(format!(
                    "streamlet '{}' has {} replicas",
                    streamlet.name, streamlet.replicas
                ));
            }
        }
        if self.topics != topics_of(&blueprint) {
            problems.push("spec.topics differs from the blueprint's topics".to_owned());
        }
        if problems.is_empty() {
            Ok(blueprint)
        } else {
            Err(DocumentError::Mismatch {
                app: app.to_owned(),
                problems,
            })
        }
    }
}

fn streamlets_of(blueprint: &Blueprint) -> Vec<StreamletSpec> {
    blueprint
        .streamlets
        .iter()
        .map(|instance| StreamletSpec {
            name: instance.name.clone(),
            type_name: instance.type_name.clone(),
            replicas: 1,
        })
        .collect()
}

fn topics_of(blueprint: &Blueprint) -> Vec<TopicSpec> {
    blueprint
        .topics
        .iter()
        .map(|topic| TopicSpec {
            name: topic.name.clone(),
            partitions: topic.partitions.map_or(1, |p| p as i32),
            replication_factor: topic.replication.map(i32::from),
            managed: topic.managed,
            config: topic.config.clone(),
            producers: topic.producers.iter().map(ToString::to_string).collect(),
            consumers: topic.consumers.iter().map(ToString::to_string).collect(),
        })
        .collect()
}

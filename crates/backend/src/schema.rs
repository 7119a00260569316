//! [`TopicSchema`]: a schema records of a topic were written with, as a backplane keeps it.

/// A schema some producer wrote records of a topic with: its Rabin fingerprint (in hex, as
/// records name it in the `runnel.schema` header) and its definition (Avro schema JSON).
///
/// A backplane that [keeps schemas](crate::Backend::keeps_schemas) remembers every schema
/// written to a topic, in the order they were first registered. The first is the topic's
/// **base** schema: records written with it carry no schema header, so a topic whose schema
/// never changed costs nothing per record; records written with any later one name it. A
/// reader resolves each record with the schema that wrote it.
///
/// ```
/// use runnel_backend::TopicSchema;
/// let schema = TopicSchema::new("a1b2c3d4e5f60718", r#"{"type": "string"}"#);
/// assert_eq!(schema.fingerprint, "a1b2c3d4e5f60718");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicSchema {
    /// The schema's 64-bit Rabin fingerprint, in hex.
    pub fingerprint: String,
    /// The schema's definition, as JSON text.
    pub definition: String,
}

impl TopicSchema {
    /// A schema with this fingerprint and definition.
    pub fn new(fingerprint: impl Into<String>, definition: impl Into<String>) -> Self {
        TopicSchema {
            fingerprint: fingerprint.into(),
            definition: definition.into(),
        }
    }
}

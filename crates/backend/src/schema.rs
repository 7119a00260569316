//! [`TopicSchema`]: a schema records of a topic were written with, as a backplane keeps it;
//! [`SchemaNaming`]: how each record names it.

/// A schema some producer wrote records of a topic with: its Rabin fingerprint (in hex, as
/// records name it in the `runnel.schema` header), its definition (Avro schema JSON) and,
/// on a backplane with a schema registry, the registry's id for it.
///
/// A backplane that [keeps schemas](crate::Backend::keeps_schemas) remembers every schema
/// written to a topic, in the order they were first registered. Where records name their
/// schema in a header ([`SchemaNaming::Header`]), the first is the topic's **base** schema:
/// records written with it carry no schema header, so a topic whose schema never changed
/// costs nothing per record; records written with any later one name it. Where a registry
/// keeps them ([`SchemaNaming::RegistryId`]), every record starts with its schema's id. A
/// reader resolves each record with the schema that wrote it.
///
/// ```
/// use runnel_backend::TopicSchema;
/// let schema = TopicSchema::new("a1b2c3d4e5f60718", r#"{"type": "string"}"#).with_id(7);
/// assert_eq!(schema.fingerprint, "a1b2c3d4e5f60718");
/// assert_eq!(schema.id, Some(7));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicSchema {
    /// The schema's 64-bit Rabin fingerprint, in hex.
    pub fingerprint: String,
    /// The schema's definition, as JSON text.
    pub definition: String,
    /// The schema registry's id for it, where a registry keeps the topic's schemas.
    pub id: Option<u32>,
}

impl TopicSchema {
    /// A schema with this fingerprint and definition, and no registry id.
    pub fn new(fingerprint: impl Into<String>, definition: impl Into<String>) -> Self {
        TopicSchema {
            fingerprint: fingerprint.into(),
            definition: definition.into(),
            id: None,
        }
    }

    /// The same schema, with the registry's id for it.
    pub fn with_id(mut self, id: u32) -> Self {
        self.id = Some(id);
        self
    }
}

/// How the records of a backplane that [keeps schemas](crate::Backend::keeps_schemas) name
/// the schema they were written with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchemaNaming {
    /// A record written with any schema but its topic's base carries the schema's
    /// fingerprint in the `runnel.schema` header; the value is the Avro encoding alone.
    Header,
    /// Every value is in the Confluent wire format: the magic byte 0, the registry's
    /// schema id as 4 bytes big-endian, then the Avro encoding. Plain Kafka clients with a
    /// Confluent serializer read and write these.
    RegistryId,
}

//! Encoding record values: Avro (the default, schema derived from the Rust type) or JSON.
//!
//! Avro values are the binary encoding of the value alone, with no container header and no
//! schema id in the payload. A record written with any schema but its topic's base schema
//! (the first written to it, which backplanes that keep schemas remember; see
//! `runnel_backend::TopicSchema`) carries a header, [`SCHEMA_HEADER`], holding the hex Rabin
//! fingerprint of its schema, and readers resolve it by that schema, which the backplane
//! keeps too. A record without the header was written with the base schema. Where the
//! backplane keeps no schemas, readers know the schemas the topic's producers write with
//! from the blueprint and the descriptor: with one, every record is read as written with it;
//! with several, the writers tag every record. Either way a record is resolved to the
//! reader's own schema where they differ. Records from writers nobody told the reader about
//! (plain Kafka clients, say) are read with the reader's own schema.

use apache_avro::rabin::Rabin;
use apache_avro::{AvroSchema, Schema};
use bytes::Bytes;
use runnel_blueprint::descriptor::{Format, SchemaDescriptor};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The header that carries the fingerprint of the schema a value was written with.
pub const SCHEMA_HEADER: &str = "runnel.schema";

/// The length of the Confluent wire format's prefix: the magic byte 0 and a 4-byte id.
pub const REGISTRY_PREFIX: usize = 5;

/// The schema registry id a value in the Confluent wire format starts with; `None` when it
/// does not start with the magic byte 0 and an id.
///
/// ```
/// assert_eq!(runnel_codec::registry_id(&[0, 0, 0, 1, 2, 6]), Some(258));
/// assert_eq!(runnel_codec::registry_id(b"{}"), None);
/// ```
pub fn registry_id(bytes: &[u8]) -> Option<u32> {
    match bytes {
        [0, a, b, c, d, ..] => Some(u32::from_be_bytes([*a, *b, *c, *d])),
        _ => None,
    }
}

/// A type that can travel through a port: a serde type with a derived Avro schema.
///
/// Implemented for every type that derives `Serialize`, `Deserialize` and `AvroSchema`:
///
/// ```
/// use apache_avro::AvroSchema;
/// use runnel_codec::Data;
/// use serde::{Deserialize, Serialize};
///
/// /// A temperature reading.
/// #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
/// pub struct Reading {
///     pub sensor: String,
///     pub celsius: f64,
/// }
///
/// fn assert_data<T: Data>() {}
/// assert_data::<Reading>();
/// ```
pub trait Data: Serialize + DeserializeOwned + AvroSchema + Send + Sync + 'static {}

impl<T> Data for T where T: Serialize + DeserializeOwned + AvroSchema + Send + Sync + 'static {}

/// Why a value could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
#[error("{reason}")]
pub struct CodecError {
    reason: String,
}

impl CodecError {
    fn new(reason: impl Into<String>) -> Self {
        CodecError {
            reason: reason.into(),
        }
    }
}

/// What a value that is not Avro looks like, for a decoding error that says what went
/// wrong instead of the Avro decoder's view of it ("cannot convert i64 to usize").
fn foreign_format(bytes: &[u8]) -> Option<&'static str> {
    let text = std::str::from_utf8(bytes).ok()?;
    let trimmed = text.trim_start();
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
    {
        return Some("JSON");
    }
    let printable = !text.is_empty() && text.chars().all(|c| !c.is_control() || c.is_whitespace());
    printable.then_some("text")
}

/// Encodes and decodes the values of one port.
///
/// ```
/// use runnel_blueprint::descriptor::Format;
/// use runnel_codec::Codec;
///
/// let codec = Codec::<String>::new(Format::Avro);
/// let bytes = codec.encode(&"hello".to_owned()).unwrap();
/// assert_eq!(codec.decode(&bytes, None).unwrap(), "hello");
/// ```
#[derive(Debug)]
pub struct Codec<T> {
    format: Format,
    schema: Schema,
    fingerprint: Bytes,
    /// The named types of `schema`, for the direct decoder.
    names: crate::avro_decode::Names,
    /// The distinct schemas the topic's producers write with, by fingerprint.
    writers: Vec<WriterSchema>,
    /// The fingerprint of the topic's base schema: records without a header were written
    /// with it.
    base: Option<Bytes>,
    /// What starts every encoded value where a schema registry keeps the topic's schemas:
    /// the magic byte and the registry's id of the codec's schema.
    prefix: Option<[u8; REGISTRY_PREFIX]>,
    /// Whether every value read starts with a registry id ([`Codec::framed_by_registry`]),
    /// and the ids known, with the fingerprints of their schemas.
    registry: Option<Vec<(u32, Bytes)>>,
    /// Ids the registry said it does not have (at most [`MISSING_IDS_KEPT`]), so values
    /// naming them are not looked up again, one request per record.
    missing_ids: Vec<u32>,
    /// Whether `T` is [`AvroDatum`](crate::AvroDatum): Avro values are then framed and
    /// unframed, and never decoded or encoded.
    datums: bool,
    _type: std::marker::PhantomData<fn() -> T>,
}

/// How many ids the registry does not have a codec remembers.
const MISSING_IDS_KEPT: usize = 1024;

/// A schema some producer of the topic writes with.
#[derive(Debug)]
struct WriterSchema {
    fingerprint: Bytes,
    schema: Schema,
    /// Where the reader's schema can read it: its named types and the reader's defaults
    /// for what its records lack, for the direct decoder.
    resolving: Option<(crate::avro_decode::Names, crate::avro_decode::Defaults)>,
}

impl<T: Data> Codec<T> {
    /// Adds a writer schema, unless it is known already.
    fn add_writer(&mut self, fingerprint: Bytes, schema: Schema) {
        if self
            .writers
            .iter()
            .any(|known| known.fingerprint == fingerprint)
        {
            return;
        }
        let resolving =
            apache_avro::schema_compatibility::SchemaCompatibility::can_read(&schema, &self.schema)
                .ok()
                .and_then(|()| {
                    let names = crate::avro_decode::names(&schema);
                    let defaults = crate::avro_decode::defaults(&names, &self.names)?;
                    Some((names, defaults))
                });
        self.writers.push(WriterSchema {
            fingerprint,
            schema,
            resolving,
        });
    }

    /// A codec of `T` in `format`, reading records as written with `T`'s own schema until
    /// told of others.
    pub fn new(format: Format) -> Self {
        Codec::of_schema(format, T::get_schema())
    }

    /// A codec of values of the schema `definition`, given at run time, rather than `T`'s
    /// own: for [`AvroDatum`](crate::AvroDatum) ports, whose values stay encoded.
    ///
    /// # Errors
    ///
    /// When `definition` is not an Avro schema.
    pub fn with_schema(format: Format, definition: &serde_json::Value) -> Result<Self, CodecError> {
        let schema = Schema::parse(definition)
            .map_err(|error| CodecError::new(format!("invalid avro schema: {error}")))?;
        Ok(Codec::of_schema(format, schema))
    }

    fn of_schema(format: Format, schema: Schema) -> Self {
        let fingerprint = Bytes::from(schema.fingerprint::<Rabin>().to_string());
        let names = crate::avro_decode::names(&schema);
        Codec {
            format,
            schema,
            fingerprint,
            names,
            writers: Vec::new(),
            base: None,
            prefix: None,
            registry: None,
            missing_ids: Vec::new(),
            datums: std::any::TypeId::of::<T>() == std::any::TypeId::of::<crate::AvroDatum>(),
            _type: std::marker::PhantomData,
        }
    }

    /// Adds a schema that some producer of the topic writes with, so its records resolve.
    pub fn with_writer_schema(mut self, definition: &serde_json::Value) -> Self {
        if let Ok(schema) = Schema::parse(definition) {
            let fingerprint = Bytes::from(schema.fingerprint::<Rabin>().to_string());
            self.add_writer(fingerprint, schema);
        }
        self
    }

    /// Adds the topic's base schema: records without a schema header were written with it.
    pub fn with_base_schema(mut self, definition: &serde_json::Value) -> Self {
        if let Ok(schema) = Schema::parse(definition) {
            let fingerprint = Bytes::from(schema.fingerprint::<Rabin>().to_string());
            self.base = Some(fingerprint);
            return self.with_writer_schema(definition);
        }
        self
    }

    /// Encodes every Avro value in the Confluent wire format, with `id`, the schema
    /// registry's id of the codec's schema: the magic byte 0, `id` as 4 bytes big-endian,
    /// then the value.
    ///
    /// ```
    /// use runnel_blueprint::descriptor::Format;
    /// use runnel_codec::Codec;
    ///
    /// let codec = Codec::<String>::new(Format::Avro).with_registry_id(42);
    /// let bytes = codec.encode(&"hi".to_owned()).unwrap();
    /// assert_eq!(bytes, [0, 0, 0, 0, 42, 4, b'h', b'i']);
    /// ```
    pub fn with_registry_id(mut self, id: u32) -> Self {
        let mut prefix = [0; REGISTRY_PREFIX];
        prefix[1..].copy_from_slice(&id.to_be_bytes());
        self.prefix = Some(prefix);
        self
    }

    /// Reads every Avro value as in the Confluent wire format (see
    /// [`with_registry_id`](Codec::with_registry_id)): the schema a value was written with
    /// is the one its id names, which must be [known](Codec::add_registry_schema) by then.
    /// A value that does not start with the magic byte 0 was written before a registry kept
    /// the topic's schemas, and is read as before: with the schema its header names, else
    /// the reader's own.
    ///
    /// ```
    /// use runnel_blueprint::descriptor::Format;
    /// use runnel_codec::{Codec, schema_descriptor};
    ///
    /// let mut reader = Codec::<String>::new(Format::Avro).framed_by_registry();
    /// let bytes = [0, 0, 0, 0, 42, 4, b'h', b'i'];
    /// assert_eq!(reader.unknown_registry_id(&bytes), Some(42));
    /// reader.add_registry_schema(42, &schema_descriptor::<String>(Format::Avro).definition);
    /// assert_eq!(reader.unknown_registry_id(&bytes), None);
    /// assert_eq!(reader.decode(&bytes, None).unwrap(), "hi");
    /// ```
    pub fn framed_by_registry(mut self) -> Self {
        self.registry.get_or_insert_with(Vec::new);
        self
    }

    /// Adds the schema the registry knows by `id`, so values naming it resolve.
    pub fn add_registry_schema(&mut self, id: u32, definition: &serde_json::Value) {
        let Ok(schema) = Schema::parse(definition) else {
            return;
        };
        let fingerprint = Bytes::from(schema.fingerprint::<Rabin>().to_string());
        let known = self.registry.get_or_insert_with(Vec::new);
        if !known.iter().any(|(known, _)| *known == id) {
            known.push((id, fingerprint.clone()));
        }
        self.add_writer(fingerprint, schema);
    }

    /// The registry id `bytes` start with, where the codec reads the wire format and does
    /// not know that id yet: the caller asks the registry for its schema and
    /// [adds](Codec::add_registry_schema) it before decoding, or says the registry
    /// [does not have it](Codec::add_missing_registry_id).
    pub fn unknown_registry_id(&self, bytes: &[u8]) -> Option<u32> {
        let known = self.registry.as_ref()?;
        if self.format != Format::Avro {
            return None;
        }
        let id = registry_id(bytes)?;
        let unknown =
            !known.iter().any(|(known, _)| *known == id) && !self.missing_ids.contains(&id);
        unknown.then_some(id)
    }

    /// Remembers that the registry has no schema with `id` (a value written before the
    /// registry that starts with a zero byte seems to name one), so it is not asked again.
    ///
    /// ```
    /// use runnel_blueprint::descriptor::Format;
    /// use runnel_codec::Codec;
    ///
    /// let mut reader = Codec::<String>::new(Format::Avro).framed_by_registry();
    /// let bytes = [0, 0, 0, 0, 9, 2, b'x'];
    /// assert_eq!(reader.unknown_registry_id(&bytes), Some(9));
    /// reader.add_missing_registry_id(9);
    /// assert_eq!(reader.unknown_registry_id(&bytes), None);
    /// ```
    pub fn add_missing_registry_id(&mut self, id: u32) {
        if self.missing_ids.len() < MISSING_IDS_KEPT && !self.missing_ids.contains(&id) {
            self.missing_ids.push(id);
        }
    }

    /// The definition of the writer schema the codec knows by `fingerprint` (from the
    /// topic's producers, its kept schemas or the registry): what an
    /// [`AvroDatum`](crate::AvroDatum)'s `writer` names.
    pub fn writer_schema(&self, fingerprint: &[u8]) -> Option<serde_json::Value> {
        let writer = self
            .writers
            .iter()
            .find(|known| known.fingerprint == fingerprint)?;
        serde_json::to_value(&writer.schema).ok()
    }

    /// The format values are encoded in.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The fingerprint to put in [`SCHEMA_HEADER`] when tagging, for Avro values.
    pub fn fingerprint(&self) -> Option<&Bytes> {
        (self.format == Format::Avro).then_some(&self.fingerprint)
    }

    /// Encodes `value`.
    ///
    /// # Errors
    ///
    /// When the value does not fit the schema (a derived schema always fits its type).
    pub fn encode(&self, value: &T) -> Result<Vec<u8>, CodecError> {
        match self.format {
            Format::Avro => {
                let mut buffer = Vec::with_capacity(64);
                buffer.extend_from_slice(self.prefix.as_ref().map_or(&[][..], |p| &p[..]));
                if let Some(datum) = self.as_datum(value) {
                    buffer.extend_from_slice(&datum.bytes);
                    return Ok(buffer);
                }
                let start = buffer.len();
                if crate::avro_encode::encode(&self.schema, &self.names, value, &mut buffer).is_ok()
                {
                    return Ok(buffer);
                }
                buffer.truncate(start);
                let value = apache_avro::to_value(value)
                    .map_err(|error| CodecError::new(format!("avro encoding failed: {error}")))?;
                let datum = apache_avro::to_avro_datum(&self.schema, value)
                    .map_err(|error| CodecError::new(format!("avro encoding failed: {error}")))?;
                buffer.extend_from_slice(&datum);
                Ok(buffer)
            }
            Format::Json => serde_json::to_vec(value)
                .map_err(|error| CodecError::new(format!("json encoding failed: {error}"))),
        }
    }

    /// Encodes `value` into bytes of exactly its length: written into a buffer the thread
    /// keeps, then copied into one allocation. (A `Bytes` made from a `Vec` with room to
    /// spare allocates a second time, for its reference count.)
    ///
    /// # Errors
    ///
    /// As [`encode`](Codec::encode).
    pub fn encode_bytes(&self, value: &T) -> Result<Bytes, CodecError> {
        /// A buffer grown past this by a large value is not kept.
        const KEPT_CAPACITY: usize = 64 * 1024;
        thread_local! {
            static ENCODING: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        if let (Format::Avro, Some(datum), None) = (self.format, self.as_datum(value), self.prefix)
        {
            return Ok(datum.bytes.clone());
        }
        if matches!(self.format, Format::Avro) {
            // Falls through to `encode` when the buffer is in use (a value encoding another)
            // or the value does not encode: `encode` words that error, encoding it once more.
            let encoded = ENCODING.try_with(|buffer| {
                let mut buffer = buffer.try_borrow_mut().ok()?;
                buffer.clear();
                if let Some(prefix) = &self.prefix {
                    buffer.extend_from_slice(prefix);
                }
                let encoded =
                    crate::avro_encode::encode(&self.schema, &self.names, value, &mut buffer)
                        .is_ok()
                        .then(|| Bytes::copy_from_slice(&buffer));
                if buffer.capacity() > KEPT_CAPACITY {
                    *buffer = Vec::new();
                }
                encoded
            });
            if let Ok(Some(bytes)) = encoded {
                return Ok(bytes);
            }
        }
        self.encode(value).map(Bytes::from)
    }

    /// Decodes a record's value; a null value (a tombstone) holds no `T`, so it is an error
    /// that says so (the record is then handled as any undecodable one).
    ///
    /// # Errors
    ///
    /// A null value, or bytes that do not decode (see [`decode`](Codec::decode)).
    pub fn decode_value(
        &self,
        value: Option<&[u8]>,
        writer: Option<&[u8]>,
    ) -> Result<T, CodecError> {
        match value {
            Some(bytes) => self.decode(bytes, writer),
            None => Err(CodecError::new(format!(
                "value is null (a tombstone), and the {} codec of {} needs a value",
                self.format,
                self.type_name()
            ))),
        }
    }

    /// Decodes `bytes`, written with the schema whose fingerprint is `writer` (from the
    /// record's [`SCHEMA_HEADER`]), or else with the topic's base or only writer schema.
    ///
    /// # Errors
    ///
    /// Bytes that are not a value of the writer's schema, or a writer schema the codec was
    /// not told of on a topic whose schemas are kept; the error says what the bytes look
    /// like (JSON, text) when they are not Avro.
    pub fn decode(&self, bytes: &[u8], writer: Option<&[u8]>) -> Result<T, CodecError> {
        match self.format {
            Format::Avro => self.decode_avro(bytes, writer),
            Format::Json => serde_json::from_slice(bytes)
                .map_err(|error| CodecError::new(format!("invalid json: {error}"))),
        }
    }

    fn decode_avro(&self, bytes: &[u8], writer: Option<&[u8]>) -> Result<T, CodecError> {
        let Some(known) = &self.registry else {
            return self.decode_plain_avro(bytes, writer);
        };
        // A value without the magic byte was written before the registry kept the topic's
        // schemas: with the schema its header names, else the reader's own.
        let Some(id) = registry_id(bytes) else {
            return self.decode_plain_avro(bytes, writer.or(Some(&self.fingerprint[..])));
        };
        if let Some((_, fingerprint)) = known.iter().find(|(known, _)| *known == id) {
            return self.decode_plain_avro(&bytes[REGISTRY_PREFIX..], Some(fingerprint));
        }
        // An id the registry does not have: an older value that happens to start with a
        // zero byte reads as the reader's own; anything else is an error that says so.
        self.decode_plain_avro(bytes, writer.or(Some(&self.fingerprint[..])))
            .map_err(|_| {
                CodecError::new(format!(
                    "invalid avro for {}: the record was written with schema id {id}, which the schema registry does not have",
                    self.type_name()
                ))
            })
    }

    fn decode_plain_avro(&self, bytes: &[u8], writer: Option<&[u8]>) -> Result<T, CodecError> {
        // The writer's schema: named by the record, else the topic's base, else its only one.
        let writer = writer
            .or(self.base.as_deref())
            .or_else(|| match self.writers.as_slice() {
                [only] => Some(&only.fingerprint[..]),
                _ => None,
            });
        let named = writer.filter(|fingerprint| *fingerprint != self.fingerprint);
        let known_writer = named.and_then(|fingerprint| {
            self.writers
                .iter()
                .find(|known| known.fingerprint == fingerprint)
        });
        if let (Some(fingerprint), None) = (named, known_writer)
            && self.base.is_some()
        {
            // The backplane keeps every schema written to the topic, yet not this one.
            return Err(CodecError::new(format!(
                "invalid avro for {}: the record was written with schema {}, which is not among the schemas kept for its topic",
                self.type_name(),
                String::from_utf8_lossy(fingerprint)
            )));
        }
        if self.datums {
            let datum = crate::AvroDatum {
                bytes: Bytes::copy_from_slice(bytes),
                writer: named.map(Bytes::copy_from_slice),
            };
            let datum: Box<dyn std::any::Any> = Box::new(datum);
            return Ok(*datum
                .downcast::<T>()
                .expect("`datums` is set only for AvroDatum"));
        }
        let direct = match known_writer {
            None => crate::avro_decode::decode(&self.schema, &self.names, bytes),
            Some(WriterSchema {
                schema,
                resolving: Some((names, defaults)),
                ..
            }) => crate::avro_decode::decode_resolving(schema, names, Some(defaults), bytes),
            Some(_) => Err(crate::avro_decode::Fallback),
        };
        if let Ok(value) = direct {
            return Ok(value);
        }
        let mut remaining = bytes;
        let value = match known_writer {
            Some(writer) => {
                apache_avro::from_avro_datum(&writer.schema, &mut remaining, Some(&self.schema))
            }
            None => apache_avro::from_avro_datum(&self.schema, &mut remaining, None),
        }
        .map_err(|error| {
            self.invalid(
                bytes,
                format!("invalid avro for {}: {error}", self.type_name()),
            )
        })?;
        if !remaining.is_empty() {
            return Err(self.invalid(
                bytes,
                format!(
                    "invalid avro for {}: {} bytes left over after the value",
                    self.type_name(),
                    remaining.len()
                ),
            ));
        }
        apache_avro::from_value(&value).map_err(|error| {
            self.invalid(
                bytes,
                format!("avro value does not fit {}: {error}", self.type_name()),
            )
        })
    }

    /// The error for `bytes` that did not decode: `detail`, unless the bytes are plainly
    /// another format, which is then what the error says.
    fn invalid(&self, bytes: &[u8], detail: String) -> CodecError {
        match foreign_format(bytes) {
            Some(format) => CodecError::new(format!(
                "invalid avro for {}: the value is {format}, not Avro; the topic's producers must write Avro with the inlet's schema, or the inlet must be declared `.json()`",
                self.type_name()
            )),
            None => CodecError::new(detail),
        }
    }

    /// `value` as the datum it is, for a codec of [`AvroDatum`](crate::AvroDatum)s.
    fn as_datum<'v>(&self, value: &'v T) -> Option<&'v crate::AvroDatum> {
        if !self.datums {
            return None;
        }
        (value as &dyn std::any::Any).downcast_ref()
    }

    fn type_name(&self) -> String {
        self.schema.name().map_or_else(
            || std::any::type_name::<T>().to_owned(),
            |n| n.fullname(None),
        )
    }
}

/// The descriptor entry for values of `T` in `format`.
pub fn schema_descriptor<T: Data>(format: Format) -> SchemaDescriptor {
    let schema = T::get_schema();
    SchemaDescriptor {
        format,
        name: schema.name().map_or_else(
            || std::any::type_name::<T>().to_owned(),
            |n| n.fullname(None),
        ),
        definition: serde_json::to_value(&schema).unwrap_or(serde_json::Value::Null),
        fingerprint: schema.fingerprint::<Rabin>().to_string(),
    }
}

/// The descriptor entry for Avro values of the schema `definition`, given at run time (a
/// port of [`AvroDatum`](crate::AvroDatum)s): named and fingerprinted as a derived schema is,
/// its definition as Avro writes it back.
///
/// ```
/// let definition = serde_json::json!({"type": "record", "name": "N", "namespace": "demo", "fields": [{"name": "n", "type": "long"}]});
/// let descriptor = runnel_codec::avro_schema_descriptor(&definition).unwrap();
/// assert_eq!(descriptor.name, "demo.N");
/// ```
///
/// # Errors
///
/// When `definition` is not an Avro schema.
pub fn avro_schema_descriptor(
    definition: &serde_json::Value,
) -> Result<SchemaDescriptor, CodecError> {
    let schema = Schema::parse(definition)
        .map_err(|error| CodecError::new(format!("invalid avro schema: {error}")))?;
    Ok(SchemaDescriptor {
        format: Format::Avro,
        name: schema
            .name()
            .map_or_else(|| definition.to_string(), |n| n.fullname(None)),
        definition: serde_json::to_value(&schema).unwrap_or(serde_json::Value::Null),
        fingerprint: schema.fingerprint::<Rabin>().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize, AvroSchema)]
    struct V1 {
        id: String,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize, AvroSchema)]
    #[avro(name = "V1")]
    #[serde(rename = "V1")]
    struct V2 {
        id: String,
        #[avro(default = "0")]
        #[serde(default)]
        count: i64,
    }

    #[test]
    fn bytes_of_exact_length_hold_the_same_encoding_one_value_after_another() {
        let codec = Codec::<V1>::new(Format::Avro);
        for id in [
            "a much longer identifier than the next",
            "b",
            &"c".repeat(100_000),
        ] {
            let value = V1 { id: id.into() };
            let bytes = codec.encode_bytes(&value).unwrap();
            assert_eq!(&bytes[..], &codec.encode(&value).unwrap()[..]);
            assert_eq!(codec.decode(&bytes, None).unwrap(), value);
        }
        let json = Codec::<V1>::new(Format::Json);
        let bytes = json.encode_bytes(&V1 { id: "j".into() }).unwrap();
        assert_eq!(&bytes[..], br#"{"id":"j"}"#);
    }

    #[test]
    fn avro_round_trips() {
        let codec = Codec::<V1>::new(Format::Avro);
        let bytes = codec.encode(&V1 { id: "a".into() }).unwrap();
        assert_eq!(
            codec
                .decode(&bytes, codec.fingerprint().map(|f| &f[..]))
                .unwrap()
                .id,
            "a"
        );
    }

    #[test]
    fn readers_resolve_records_of_an_older_writer() {
        let old = Codec::<V1>::new(Format::Avro);
        let bytes = old.encode(&V1 { id: "a".into() }).unwrap();
        let definition = schema_descriptor::<V1>(Format::Avro).definition;
        let new = Codec::<V2>::new(Format::Avro).with_writer_schema(&definition);
        let value = new
            .decode(&bytes, old.fingerprint().map(|f| &f[..]))
            .unwrap();
        assert_eq!(
            value,
            V2 {
                id: "a".into(),
                count: 0
            }
        );
    }

    #[test]
    fn records_without_a_header_resolve_with_the_topics_only_writer_schema() {
        let old = Codec::<V1>::new(Format::Avro);
        let bytes = old.encode(&V1 { id: "a".into() }).unwrap();
        let definition = schema_descriptor::<V1>(Format::Avro).definition;
        let new = Codec::<V2>::new(Format::Avro).with_writer_schema(&definition);
        assert_eq!(
            new.decode(&bytes, None).unwrap(),
            V2 {
                id: "a".into(),
                count: 0
            }
        );
        // With two writer schemas and no header the reader cannot tell; it uses its own.
        let own = schema_descriptor::<V2>(Format::Avro).definition;
        let ambiguous = Codec::<V2>::new(Format::Avro)
            .with_writer_schema(&definition)
            .with_writer_schema(&own);
        let current = ambiguous
            .encode(&V2 {
                id: "b".into(),
                count: 3,
            })
            .unwrap();
        assert_eq!(ambiguous.decode(&current, None).unwrap().count, 3);
    }

    #[test]
    fn records_without_a_header_are_read_with_the_topics_base_schema() {
        let old = Codec::<V1>::new(Format::Avro);
        let v1 = schema_descriptor::<V1>(Format::Avro).definition;
        let v2 = schema_descriptor::<V2>(Format::Avro).definition;
        let untagged_old = old.encode(&V1 { id: "a".into() }).unwrap();
        let new = Codec::<V2>::new(Format::Avro);
        let tagged_new = new
            .encode(&V2 {
                id: "b".into(),
                count: 7,
            })
            .unwrap();
        // A reader of the new type on a topic whose base is the old schema.
        let reader = Codec::<V2>::new(Format::Avro)
            .with_base_schema(&v1)
            .with_writer_schema(&v2);
        assert_eq!(reader.decode(&untagged_old, None).unwrap().count, 0);
        let fingerprint = new.fingerprint().unwrap().clone();
        assert_eq!(
            reader
                .decode(&tagged_new, Some(&fingerprint))
                .unwrap()
                .count,
            7
        );
        // The old type reads the newer records too, dropping the field it does not know.
        let old_reader = Codec::<V1>::new(Format::Avro)
            .with_base_schema(&v1)
            .with_writer_schema(&v2);
        assert_eq!(
            old_reader
                .decode(&tagged_new, Some(&fingerprint))
                .unwrap()
                .id,
            "b"
        );
        // A schema the topic does not keep is named in the error.
        let error = reader.decode(&tagged_new, Some(b"0123")).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("written with schema 0123, which is not among the schemas kept"),
            "{error}"
        );
    }

    #[test]
    fn values_in_the_wire_format_resolve_by_the_schema_their_id_names() {
        let v1 = schema_descriptor::<V1>(Format::Avro).definition;
        let v2 = schema_descriptor::<V2>(Format::Avro).definition;
        let old = Codec::<V1>::new(Format::Avro).with_registry_id(1);
        let new = Codec::<V2>::new(Format::Avro).with_registry_id(2);
        let old_bytes = old.encode(&V1 { id: "a".into() }).unwrap();
        let new_bytes = new
            .encode_bytes(&V2 {
                id: "b".into(),
                count: 7,
            })
            .unwrap();
        assert_eq!(&old_bytes[..6], [0, 0, 0, 0, 1, 2]);
        assert_eq!(registry_id(&new_bytes), Some(2));

        let mut reader = Codec::<V2>::new(Format::Avro).framed_by_registry();
        assert_eq!(reader.unknown_registry_id(&old_bytes), Some(1));
        let unknown = reader.decode(&old_bytes, None).unwrap_err();
        assert!(
            unknown
                .to_string()
                .contains("schema id 1, which the schema registry does not have"),
            "{unknown}"
        );
        reader.add_registry_schema(1, &v1);
        reader.add_registry_schema(2, &v2);
        assert_eq!(reader.unknown_registry_id(&old_bytes), None);
        assert_eq!(reader.decode(&old_bytes, None).unwrap().count, 0);
        assert_eq!(reader.decode(&new_bytes, None).unwrap().count, 7);

        // The old type reads the new records, dropping the field it does not know.
        let mut old_reader = Codec::<V1>::new(Format::Avro).framed_by_registry();
        old_reader.add_registry_schema(2, &v2);
        assert_eq!(old_reader.decode(&new_bytes, None).unwrap().id, "b");
    }

    #[test]
    fn values_written_before_the_registry_read_as_the_readers_own() {
        let reader = Codec::<V1>::new(Format::Avro).framed_by_registry();
        let plain = Codec::<V1>::new(Format::Avro)
            .encode(&V1 { id: "a".into() })
            .unwrap();
        assert_eq!(reader.decode(&plain, None).unwrap().id, "a");
        // One that starts with a zero byte (an empty string) names no schema the registry
        // has, and still reads.
        let empty = Codec::<V1>::new(Format::Avro)
            .encode(&V1 { id: String::new() })
            .unwrap();
        assert_eq!(reader.decode(&empty, None).unwrap().id, "");
        let json = reader.decode(br#"{"id": "a"}"#, None).unwrap_err();
        assert!(json.to_string().contains("the value is JSON"), "{json}");
        let short = reader.decode(&[0, 0, 1], None).unwrap_err();
        assert!(
            short.to_string().starts_with("invalid avro for V1"),
            "{short}"
        );
    }

    #[test]
    fn garbage_is_a_decoding_error_not_a_panic() {
        let codec = Codec::<V1>::new(Format::Avro);
        let error = codec
            .decode(&[0xff, 0xff, 0xff, 0xff, 0x0f], None)
            .unwrap_err();
        assert!(
            error.to_string().starts_with("invalid avro for V1"),
            "{error}"
        );
        let json = Codec::<V1>::new(Format::Json);
        assert!(json.decode(b"{\"id\": 3}", None).is_err());
        assert_eq!(json.decode(b"{\"id\": \"x\"}", None).unwrap().id, "x");
    }

    #[test]
    fn json_or_text_on_an_avro_port_is_called_what_it_is() {
        let codec = Codec::<V1>::new(Format::Avro);
        let json = codec
            .decode(br#"{"device_id": 17, "value": 3.5}"#, None)
            .unwrap_err();
        assert_eq!(
            json.to_string(),
            "invalid avro for V1: the value is JSON, not Avro; the topic's producers must write Avro with the inlet's schema, or the inlet must be declared `.json()`"
        );
        let text = codec.decode(b"temperature=21.5 unit=C", None).unwrap_err();
        assert!(
            text.to_string().contains("the value is text, not Avro"),
            "{text}"
        );
    }
}

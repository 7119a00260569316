//! [`AvroDatum`]: a value left Avro-encoded, for ports whose schema is known only at run
//! time.

use apache_avro::schema::Schema;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// An Avro value left encoded: its bytes, without any framing, and which schema wrote it.
///
/// Streamlets whose records' schema is known only at run time (SQL streamlets: their
/// inputs' schemas are their producers', their output's is inferred from the query) read
/// and write these through ports given a schema (`Shape::datum_inlet`, `Shape::datum_outlet`
/// in `runnel-streamlet`). The codec of such a port frames and unframes them as it does
/// every value (the schema header, the schema registry's prefix) and never decodes them:
/// the streamlet does, with the schema the datum names.
///
/// ```
/// use runnel_blueprint::descriptor::Format;
/// use runnel_codec::{AvroDatum, Codec};
///
/// let schema = serde_json::json!({"type": "record", "name": "N", "fields": [{"name": "n", "type": "long"}]});
/// let codec = Codec::<AvroDatum>::with_schema(Format::Avro, &schema).unwrap().with_registry_id(7);
/// let datum = AvroDatum::new(vec![0x54]); // n = 42
/// let framed = codec.encode(&datum).unwrap();
/// assert_eq!(framed, [0, 0, 0, 0, 7, 0x54]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AvroDatum {
    /// The value's Avro binary encoding.
    pub bytes: Bytes,
    /// The fingerprint (as in the schema header) of the schema it was written with, when
    /// that is not the port's own schema; `None` when it is.
    pub writer: Option<Bytes>,
}

impl AvroDatum {
    /// A datum of the port's own schema.
    pub fn new(bytes: impl Into<Bytes>) -> Self {
        AvroDatum {
            bytes: bytes.into(),
            writer: None,
        }
    }
}

/// Outside a port given a schema, a datum is what it is: Avro `bytes`.
impl apache_avro::AvroSchema for AvroDatum {
    fn get_schema() -> Schema {
        Schema::Bytes
    }
}

impl Serialize for AvroDatum {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(&self.bytes)
    }
}

impl<'de> Deserialize<'de> for AvroDatum {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let bytes: serde_bytes_compat::ByteBuf = Deserialize::deserialize(deserializer)?;
        Ok(AvroDatum::new(bytes.0))
    }
}

/// Bytes deserialized from either a byte string or a sequence of numbers, without another
/// dependency.
mod serde_bytes_compat {
    pub(super) struct ByteBuf(pub(super) Vec<u8>);

    impl<'de> serde::Deserialize<'de> for ByteBuf {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct Visitor;
            impl<'de> serde::de::Visitor<'de> for Visitor {
                type Value = ByteBuf;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("bytes")
                }
                fn visit_bytes<E>(self, bytes: &[u8]) -> Result<ByteBuf, E> {
                    Ok(ByteBuf(bytes.to_vec()))
                }
                fn visit_byte_buf<E>(self, bytes: Vec<u8>) -> Result<ByteBuf, E> {
                    Ok(ByteBuf(bytes))
                }
                fn visit_seq<A: serde::de::SeqAccess<'de>>(
                    self,
                    mut seq: A,
                ) -> Result<ByteBuf, A::Error> {
                    let mut bytes = Vec::new();
                    while let Some(byte) = seq.next_element()? {
                        bytes.push(byte);
                    }
                    Ok(ByteBuf(bytes))
                }
            }
            deserializer.deserialize_bytes(Visitor)
        }
    }
}

//! The records a scorer reads and writes about models: [`ModelRecord`] (a model to serve)
//! and [`ModelEvent`] (what became of it).

use std::collections::HashMap;
use std::fmt;

use apache_avro::schema::derive::AvroSchemaComponent;
use apache_avro::schema::{Name, Namespace};
use apache_avro::{AvroSchema, Schema};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A model to serve, as it arrives on a scorer's `models` inlet.
///
/// In JSON (the topic tools, an HTTP ingress of models) the ONNX bytes are base64:
///
/// ```
/// use runnel_onnx::ModelRecord;
/// let record: ModelRecord = serde_json::from_str(r#"{
///     "name": "fraud", "version": "2", "onnx": "CAc=",
///     "input_shape": [-1, 7], "output_shape": [-1, 2]
/// }"#).unwrap();
/// assert_eq!(record.onnx.as_bytes(), [8, 7]);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, AvroSchema)]
pub struct ModelRecord {
    /// What the model is for (`fraud`); scored records carry it.
    pub name: String,
    /// Which version of it (`2`, `2024-06-01`); scored records carry it.
    pub version: String,
    /// The model, an ONNX protobuf.
    pub onnx: OnnxBytes,
    /// The shape of the model's input: `-1` for the batch dimension (or any dimension of
    /// any size), the number of features for the others: `[-1, 7]`.
    pub input_shape: Vec<i64>,
    /// The shape of the output to score with: `[-1, 2]` for two class probabilities per
    /// record. The scorer uses the first float output of the model with this shape.
    pub output_shape: Vec<i64>,
}

/// What became of a model that arrived: serving, or rejected and why. A scorer sends one
/// for every [`ModelRecord`] on its `model-events` outlet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, AvroSchema)]
pub struct ModelEvent {
    /// The model's name.
    pub name: String,
    /// The model's version.
    pub version: String,
    /// Whether it is now the one scoring.
    pub serving: bool,
    /// Why it was rejected (empty when serving).
    pub reason: String,
    /// How long loading and validating it took, in milliseconds.
    pub load_millis: f64,
    /// The model it replaced (`name@version`), or that goes on scoring when it was
    /// rejected; empty if none.
    pub previous: String,
}

/// The bytes of an ONNX model: base64 text in JSON and in Avro (an Avro `string`), so the
/// same record reads the same in the topic tools, over HTTP and on the log.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OnnxBytes(pub Vec<u8>);

impl OnnxBytes {
    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for OnnxBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OnnxBytes({} bytes)", self.0.len())
    }
}

impl From<Vec<u8>> for OnnxBytes {
    fn from(bytes: Vec<u8>) -> Self {
        OnnxBytes(bytes)
    }
}

impl Serialize for OnnxBytes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for OnnxBytes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        STANDARD
            .decode(text.trim())
            .map(OnnxBytes)
            .map_err(|error| serde::de::Error::custom(format!("the model is not base64: {error}")))
    }
}

impl AvroSchemaComponent for OnnxBytes {
    fn get_schema_in_ctxt(_: &mut HashMap<Name, Schema>, _: &Namespace) -> Schema {
        Schema::String
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn onnx_bytes_are_base64_text_in_json_and_avro() {
        let record = ModelRecord {
            name: "fraud".into(),
            version: "1".into(),
            onnx: OnnxBytes(vec![0, 1, 254, 255]),
            input_shape: vec![-1, 7],
            output_shape: vec![-1, 2],
        };
        let json = serde_json::to_value(&record).unwrap();
        assert_eq!(json["onnx"], "AAH+/w==");
        assert_eq!(serde_json::from_value::<ModelRecord>(json).unwrap(), record);

        let schema = ModelRecord::get_schema();
        let avro =
            apache_avro::to_avro_datum(&schema, apache_avro::to_value(&record).unwrap()).unwrap();
        let value = apache_avro::from_avro_datum(&schema, &mut &avro[..], None).unwrap();
        assert_eq!(
            apache_avro::from_value::<ModelRecord>(&value).unwrap(),
            record
        );

        let broken = r#"{"name": "f", "version": "1", "onnx": "not base64!",
                         "input_shape": [], "output_shape": []}"#;
        let error = serde_json::from_str::<ModelRecord>(broken).unwrap_err();
        assert!(
            error.to_string().starts_with("the model is not base64"),
            "{error}"
        );
    }
}

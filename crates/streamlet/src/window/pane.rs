//! [`Pane`]: one result of one window of one key, as a record an outlet can carry.

use std::collections::{BTreeMap, HashMap};

use apache_avro::AvroSchema;
use apache_avro::schema::derive::AvroSchemaComponent;
use apache_avro::schema::{Name, RecordField, RecordFieldOrder, RecordSchema, Schema};
use serde::{Deserialize, Serialize};

use super::Window;

/// Where a pane stands relative to the watermark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, AvroSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[avro(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Timing {
    /// Fired before the watermark passed the end of the window: speculative.
    Early,
    /// Fired when the watermark passed the end of the window: complete, as far as the
    /// watermark knows.
    OnTime,
    /// Fired for elements that arrived after the on-time pane: a correction.
    Late,
}

/// One result of a window for one key: the window, when it fired relative to the
/// watermark, its index among the window's panes, whether it retracts an earlier pane, and
/// the value.
///
/// A pane is a record like any other: send it to an outlet (`Outlet<Pane<String, i64>>`)
/// and the next streamlet reads the window bounds with it. Panes are deterministic: after
/// a restart a re-emitted pane has the same key, window, index and value, so
/// `(key, window_start, window_end, index, retraction)` identifies it.
///
/// ```
/// use runnel_streamlet::window::{Pane, Timing, Window};
/// let pane = Pane {
///     key: "TeamX".to_owned(),
///     window_start: 0,
///     window_end: 120_000,
///     timing: Timing::OnTime,
///     index: 0,
///     retraction: false,
///     value: 14_i64,
/// };
/// assert_eq!(pane.window(), Window::new(0, 120_000));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Pane<K, V> {
    /// The key.
    pub key: K,
    /// The window's first millisecond.
    pub window_start: i64,
    /// The first millisecond after the window.
    pub window_end: i64,
    /// Early, on time or late.
    pub timing: Timing,
    /// 0 for the window's first pane, then 1, 2, ...; a retraction repeats the index of
    /// the pane it retracts.
    pub index: u32,
    /// Whether this pane withdraws an earlier one (accumulating-and-retracting mode): its
    /// value is the earlier pane's, to be subtracted.
    pub retraction: bool,
    /// The aggregate.
    pub value: V,
}

impl<K, V> Pane<K, V> {
    /// The window.
    pub fn window(&self) -> Window {
        Window::new(self.window_start, self.window_end)
    }
}

type Names = HashMap<Name, Schema>;

fn field(name: &str, schema: Schema, position: usize) -> RecordField {
    RecordField {
        name: name.to_owned(),
        doc: None,
        aliases: None,
        default: None,
        schema,
        order: RecordFieldOrder::Ascending,
        position,
        custom_attributes: BTreeMap::new(),
    }
}

// By hand: the derive would need bounds on the struct itself.
impl<K: AvroSchemaComponent, V: AvroSchemaComponent> AvroSchemaComponent for Pane<K, V> {
    fn get_schema_in_ctxt(named: &mut Names, enclosing_namespace: &Option<String>) -> Schema {
        let name = Name::new("Pane")
            .expect("a valid name")
            .fully_qualified_name(enclosing_namespace);
        if named.contains_key(&name) {
            return Schema::Ref { name };
        }
        named.insert(name.clone(), Schema::Ref { name: name.clone() });
        let namespace = &name.namespace;
        let fields = vec![
            field("key", K::get_schema_in_ctxt(named, namespace), 0),
            field("window_start", Schema::Long, 1),
            field("window_end", Schema::Long, 2),
            field("timing", Timing::get_schema_in_ctxt(named, namespace), 3),
            field("index", Schema::Long, 4),
            field("retraction", Schema::Boolean, 5),
            field("value", V::get_schema_in_ctxt(named, namespace), 6),
        ];
        let lookup = fields
            .iter()
            .map(|field| (field.name.clone(), field.position))
            .collect();
        Schema::Record(RecordSchema {
            name,
            aliases: None,
            doc: Some("one result of one window of one key".to_owned()),
            fields,
            lookup,
            attributes: BTreeMap::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Codec;
    use runnel_blueprint::descriptor::Format;

    #[test]
    fn panes_round_trip_through_avro_and_json() {
        let pane = Pane {
            key: "TeamX".to_owned(),
            window_start: -120_000,
            window_end: 0,
            timing: Timing::Late,
            index: 3,
            retraction: true,
            value: 2.5_f64,
        };
        for format in [Format::Avro, Format::Json] {
            let codec = Codec::<Pane<String, f64>>::new(format);
            let bytes = codec.encode(&pane).unwrap();
            assert_eq!(codec.decode(&bytes, None).unwrap(), pane);
        }
        let json = serde_json::to_value(&pane).unwrap();
        assert_eq!(json["timing"], "LATE");
    }
}

//! [`Pane`]: one result of one window of one key, as a record an outlet can carry, and
//! [`PaneInfo`], what a pane says about itself (Beam's `PaneInfo`).

use std::collections::{BTreeMap, HashMap};

use apache_avro::AvroSchema;
use apache_avro::schema::derive::AvroSchemaComponent;
use apache_avro::schema::{Name, RecordField, RecordFieldOrder, RecordSchema, Schema};
use serde::{Deserialize, Serialize};

use super::Window;

/// Where a pane stands relative to the watermark, as Beam's `PaneInfo.Timing`.
///
/// A window's panes follow the pattern `EARLY* ON_TIME? LATE*`:
///
/// - **Early**: fired before the watermark passed the end of the window.
/// - **On time**: the first pane fired at or after the watermark passed the end of the
///   window that holds what arrived before: the pane a trigger's watermark part fires then
///   (empty or not, see [`OnTimeBehavior`](super::OnTimeBehavior)), or, for a trigger
///   without one, the first pane fired after the end with elements that arrived before it.
/// - **Late**: every other pane fired after the watermark passed the end of the window.
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

impl Timing {
    /// The name on the wire: `EARLY`, `ON_TIME` or `LATE`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Timing::Early => "EARLY",
            Timing::OnTime => "ON_TIME",
            Timing::Late => "LATE",
        }
    }

    /// The timing named `name` on the wire.
    pub fn from_name(name: &str) -> Option<Timing> {
        [Timing::Early, Timing::OnTime, Timing::Late]
            .into_iter()
            .find(|timing| timing.as_str() == name)
    }
}

/// One result of a window for one key: the window, what the pane is among the window's
/// panes (timing, index, first, last; Beam's `PaneInfo`), whether it retracts an earlier
/// pane, its event time, and the value.
///
/// A pane is a record like any other: send it to an outlet (`Outlet<Pane<String, i64>>`)
/// and the next streamlet reads the window bounds and the pane's metadata with it;
/// `WindowedAggregate` also writes the metadata in the record's headers (see
/// [`PaneInfo::HEADERS`]). Panes are deterministic: after a restart a re-emitted pane has
/// the same key, window, index and value, so `(key, window_start, window_end, index,
/// retraction)` identifies it.
///
/// ```
/// use runnel_event_time::window::{Pane, Timing, Window};
/// let pane = Pane {
///     key: "TeamX".to_owned(),
///     window_start: 0,
///     window_end: 120_000,
///     timing: Timing::OnTime,
///     index: 0,
///     on_time_index: Some(0),
///     is_first: true,
///     is_last: true,
///     retraction: false,
///     timestamp: 119_999,
///     value: 14_i64,
/// };
/// assert_eq!(pane.window(), Window::new(0, 120_000));
/// assert!(pane.info().is_first && pane.info().is_last);
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
    /// the pane it retracts. Panes that were skipped for being empty take no index.
    pub index: u32,
    /// Among the window's panes that are not early: 0 for the first (normally the on-time
    /// pane), then 1, 2, ...; `None` for early panes (Beam's `nonSpeculativeIndex`, -1
    /// there).
    #[serde(default)]
    pub on_time_index: Option<u32>,
    /// Whether this is the window's first pane (`index == 0`).
    #[serde(default)]
    pub is_first: bool,
    /// Whether this is the window's last pane: its trigger finished or the window expired
    /// with it. See [`ClosingBehavior`](super::ClosingBehavior) for when a window's last
    /// pane says so.
    #[serde(default)]
    pub is_last: bool,
    /// Whether this pane withdraws an earlier one (accumulating-and-retracting mode): its
    /// value is the earlier pane's, to be subtracted, and its metadata the earlier pane's.
    pub retraction: bool,
    /// The pane's event time, also its record's timestamp: the last millisecond of its
    /// window, or for the global window the latest event time among its elements.
    #[serde(default)]
    pub timestamp: i64,
    /// The aggregate.
    pub value: V,
}

impl<K, V> Pane<K, V> {
    /// The window.
    pub fn window(&self) -> Window {
        Window::new(self.window_start, self.window_end)
    }

    /// What the pane says about itself.
    pub fn info(&self) -> PaneInfo {
        PaneInfo {
            timing: self.timing,
            index: self.index,
            on_time_index: self.on_time_index,
            is_first: self.is_first,
            is_last: self.is_last,
            retraction: self.retraction,
        }
    }
}

/// What a pane is among its window's panes: Beam's `PaneInfo` (timing, index, on-time
/// index, first, last), and whether it is a retraction.
///
/// It travels in the [`Pane`] and, for consumers that do not decode values, in the
/// record's headers ([`PaneInfo::HEADERS`], documented in `docs/wire-format.md`):
///
/// ```
/// use runnel_event_time::window::{PaneInfo, Timing, Window};
/// let info = PaneInfo {
///     timing: Timing::Late,
///     index: 3,
///     on_time_index: Some(1),
///     is_first: false,
///     is_last: true,
///     retraction: false,
/// };
/// let headers = info.to_headers(Window::new(0, 60_000));
/// assert_eq!(headers.get_str("runnel.pane.timing"), Some("LATE"));
/// assert_eq!(headers.get_str("runnel.pane.on-time-index"), Some("1"));
/// assert_eq!(PaneInfo::from_headers(&headers), Ok(Some(info)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PaneInfo {
    /// Early, on time or late.
    pub timing: Timing,
    /// The pane's index among its window's panes.
    pub index: u32,
    /// The index among the window's panes that are not early; `None` for early panes.
    pub on_time_index: Option<u32>,
    /// Whether it is the window's first pane.
    pub is_first: bool,
    /// Whether it is the window's last pane.
    pub is_last: bool,
    /// Whether it retracts an earlier pane.
    pub retraction: bool,
}

/// A pane header that is present but does not say what it should.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("record header {header} is {value:?}, which is not {expected}")]
pub struct PaneHeaderError {
    /// The header.
    pub header: &'static str,
    /// Its value, as text.
    pub value: String,
    /// What it should be.
    pub expected: &'static str,
}

impl PaneInfo {
    /// The header with the timing: `EARLY`, `ON_TIME` or `LATE`.
    pub const TIMING_HEADER: &'static str = "runnel.pane.timing";
    /// The header with the index, in decimal.
    pub const INDEX_HEADER: &'static str = "runnel.pane.index";
    /// The header with the on-time index in decimal, `-1` for early panes (as Beam).
    pub const ON_TIME_INDEX_HEADER: &'static str = "runnel.pane.on-time-index";
    /// The header saying whether the pane is its window's first: `true` or `false`.
    pub const FIRST_HEADER: &'static str = "runnel.pane.first";
    /// The header saying whether the pane is its window's last: `true` or `false`.
    pub const LAST_HEADER: &'static str = "runnel.pane.last";
    /// The header saying whether the pane is a retraction: `true` or `false`.
    pub const RETRACTION_HEADER: &'static str = "runnel.pane.retraction";
    /// The header with the window's first millisecond, in decimal.
    pub const WINDOW_START_HEADER: &'static str = "runnel.window.start";
    /// The header with the first millisecond after the window, in decimal.
    pub const WINDOW_END_HEADER: &'static str = "runnel.window.end";
    /// Every header a pane record carries, in the order it carries them.
    pub const HEADERS: [&'static str; 8] = [
        Self::WINDOW_START_HEADER,
        Self::WINDOW_END_HEADER,
        Self::TIMING_HEADER,
        Self::INDEX_HEADER,
        Self::ON_TIME_INDEX_HEADER,
        Self::FIRST_HEADER,
        Self::LAST_HEADER,
        Self::RETRACTION_HEADER,
    ];

    /// The headers of a pane of `window` with this info, as [`HEADERS`](Self::HEADERS)
    /// lists them.
    pub fn to_headers(&self, window: Window) -> runnel_backend::Headers {
        let mut headers = runnel_backend::Headers::new();
        for (header, value) in self.header_values(window) {
            headers.push(header, value);
        }
        headers
    }

    /// The header names and values of a pane of `window` with this info.
    pub fn header_values(&self, window: Window) -> [(&'static str, String); 8] {
        let on_time_index = self
            .on_time_index
            .map_or_else(|| "-1".to_owned(), |index| index.to_string());
        [
            (Self::WINDOW_START_HEADER, window.start.to_string()),
            (Self::WINDOW_END_HEADER, window.end.to_string()),
            (Self::TIMING_HEADER, self.timing.as_str().to_owned()),
            (Self::INDEX_HEADER, self.index.to_string()),
            (Self::ON_TIME_INDEX_HEADER, on_time_index),
            (Self::FIRST_HEADER, self.is_first.to_string()),
            (Self::LAST_HEADER, self.is_last.to_string()),
            (Self::RETRACTION_HEADER, self.retraction.to_string()),
        ]
    }

    /// Reads the info from a record's headers: `Ok(None)` if the record has no timing
    /// header (it is not a pane).
    ///
    /// # Errors
    ///
    /// A header that is missing or malformed in a record that has a timing header.
    pub fn from_headers(
        headers: &runnel_backend::Headers,
    ) -> Result<Option<Self>, PaneHeaderError> {
        let Some(timing) = headers.get(Self::TIMING_HEADER) else {
            return Ok(None);
        };
        let text = |header: &'static str| -> String {
            headers
                .get(header)
                .map(|value| String::from_utf8_lossy(value).into_owned())
                .unwrap_or_default()
        };
        let error = |header: &'static str, expected: &'static str| PaneHeaderError {
            header,
            value: text(header),
            expected,
        };
        let timing = Timing::from_name(&String::from_utf8_lossy(timing))
            .ok_or_else(|| error(Self::TIMING_HEADER, "EARLY, ON_TIME or LATE"))?;
        let index = text(Self::INDEX_HEADER)
            .parse()
            .map_err(|_| error(Self::INDEX_HEADER, "an index"))?;
        let on_time_index = match text(Self::ON_TIME_INDEX_HEADER).parse::<i64>() {
            Ok(-1) => None,
            Ok(index) => Some(
                u32::try_from(index)
                    .map_err(|_| error(Self::ON_TIME_INDEX_HEADER, "an index or -1"))?,
            ),
            Err(_) => return Err(error(Self::ON_TIME_INDEX_HEADER, "an index or -1")),
        };
        let flag = |header: &'static str| -> Result<bool, PaneHeaderError> {
            text(header)
                .parse()
                .map_err(|_| error(header, "true or false"))
        };
        Ok(Some(PaneInfo {
            timing,
            index,
            on_time_index,
            is_first: flag(Self::FIRST_HEADER)?,
            is_last: flag(Self::LAST_HEADER)?,
            retraction: flag(Self::RETRACTION_HEADER)?,
        }))
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

/// A field that readers of panes written before it existed take as `default`.
fn added(name: &str, schema: Schema, position: usize, default: serde_json::Value) -> RecordField {
    RecordField {
        default: Some(default),
        ..field(name, schema, position)
    }
}

// By hand: the derive would need bounds on the struct itself. Fields in declaration order,
// which is the order serde writes them in.
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
        let optional_index =
            <Option<u32> as AvroSchemaComponent>::get_schema_in_ctxt(named, namespace);
        let fields = vec![
            field("key", K::get_schema_in_ctxt(named, namespace), 0),
            field("window_start", Schema::Long, 1),
            field("window_end", Schema::Long, 2),
            field("timing", Timing::get_schema_in_ctxt(named, namespace), 3),
            field("index", Schema::Long, 4),
            added("on_time_index", optional_index, 5, serde_json::Value::Null),
            added("is_first", Schema::Boolean, 6, false.into()),
            added("is_last", Schema::Boolean, 7, false.into()),
            field("retraction", Schema::Boolean, 8),
            added("timestamp", Schema::Long, 9, 0.into()),
            field("value", V::get_schema_in_ctxt(named, namespace), 10),
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
    use runnel_blueprint::descriptor::Format;
    use runnel_codec::Codec;

    fn pane(on_time_index: Option<u32>) -> Pane<String, f64> {
        Pane {
            key: "TeamX".to_owned(),
            window_start: -120_000,
            window_end: 0,
            timing: Timing::Late,
            index: 3,
            on_time_index,
            is_first: false,
            is_last: true,
            retraction: true,
            timestamp: -1,
            value: 2.5_f64,
        }
    }

    #[test]
    fn panes_round_trip_through_avro_and_json() {
        for pane in [pane(Some(2)), pane(None)] {
            for format in [Format::Avro, Format::Json] {
                let codec = Codec::<Pane<String, f64>>::new(format);
                let bytes = codec.encode(&pane).unwrap();
                assert_eq!(codec.decode(&bytes, None).unwrap(), pane);
            }
        }
        let json = serde_json::to_value(pane(None)).unwrap();
        assert_eq!(json["timing"], "LATE");
        assert_eq!(json["on_time_index"], serde_json::Value::Null);
    }

    #[test]
    fn json_panes_written_before_the_pane_metadata_still_decode() {
        let old = r#"{"key":"a","window_start":0,"window_end":10,"timing":"ON_TIME",
            "index":1,"retraction":false,"value":4}"#;
        let pane: Pane<String, i64> = serde_json::from_str(old).unwrap();
        assert_eq!(
            (pane.index, pane.on_time_index, pane.is_last),
            (1, None, false)
        );
    }

    #[test]
    fn malformed_pane_headers_say_which_header_and_why() {
        let info = pane(Some(0)).info();
        let mut headers = info.to_headers(Window::new(0, 10));
        headers.set(PaneInfo::INDEX_HEADER, "three");
        assert_eq!(
            PaneInfo::from_headers(&headers).unwrap_err().to_string(),
            "record header runnel.pane.index is \"three\", which is not an index"
        );
        assert_eq!(
            PaneInfo::from_headers(&runnel_backend::Headers::new()),
            Ok(None)
        );
    }
}

//! A direct Avro binary decoder: serde deserialization driven by the schema, with no
//! intermediate `apache_avro::types::Value` tree.
//!
//! It covers what derived schemas use on the hot path (records, primitives, strings, bytes,
//! arrays, maps, enums, `[null, T]` unions as `Option`, named references, date and time
//! logical types). Anything else, and any malformed input, reports [`Fallback`]; the codec
//! then decodes through `apache_avro` instead, which handles every schema and words the
//! error for the user. Tests check that both paths agree.
//!
//! [`decode_resolving`] reads a value written with another schema the reader can read
//! straight into the reader's type: the decoder walks the writer's schema, and serde matches
//! the writer's record fields to the reader's by name, skips those the reader lacks and
//! converts promoted numbers; fields the writer lacks are handed over with the reader
//! schema's defaults ([`Defaults`]), as Avro schema resolution says. A difference serde
//! cannot bridge (a type that became a union, a renamed field, a new enum symbol) falls back.

use std::collections::HashMap;
use std::fmt;

use apache_avro::Schema;
use apache_avro::schema::Name;
use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};

/// The fast path could not decode the bytes; use the general decoder.
#[derive(Debug)]
pub(crate) struct Fallback;

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not decodable on the fast path")
    }
}

impl std::error::Error for Fallback {}

impl de::Error for Fallback {
    fn custom<T: fmt::Display>(_message: T) -> Self {
        Fallback
    }
}

type Result<T> = std::result::Result<T, Fallback>;

/// The named types of a schema, for resolving references.
pub(crate) type Names = HashMap<Name, Schema>;

/// For each record of a writer schema, the fields the reader's record of the same name has
/// and the writer's lacks, with the reader's defaults (as Avro JSON).
pub(crate) type Defaults = HashMap<Name, Vec<(String, serde_json::Value)>>;

/// The reader's defaults for what records of `writer` lack (see [`Defaults`]); `None` when
/// a reader field the writer lacks has no default, so the writer cannot be resolved.
pub(crate) fn defaults(writer: &Names, reader: &Names) -> Option<Defaults> {
    let mut defaults = Defaults::new();
    for (name, schema) in writer {
        let (Schema::Record(written), Some(Schema::Record(read))) = (schema, reader.get(name))
        else {
            continue;
        };
        let mut missing = Vec::new();
        for field in &read.fields {
            if written.fields.iter().any(|w| w.name == field.name) {
                continue;
            }
            missing.push((field.name.clone(), field.default.clone()?));
        }
        if !missing.is_empty() {
            defaults.insert(name.clone(), missing);
        }
    }
    Some(defaults)
}

/// How Avro encodes a schema's values when it encodes them as a number: `int` and `long` and
/// the logical types built on them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Integer {
    /// Zig-zag varint of 32 bits: `int`, `date`, `time-millis`.
    Int,
    /// Zig-zag varint of 64 bits: `long` and the other time types.
    Long,
}

impl Integer {
    /// The integer encoding of `schema`, if it has one.
    pub(crate) fn of(schema: &Schema) -> Option<Integer> {
        match schema {
            Schema::Int | Schema::Date | Schema::TimeMillis => Some(Integer::Int),
            Schema::Long
            | Schema::TimeMicros
            | Schema::TimestampMillis
            | Schema::TimestampMicros
            | Schema::TimestampNanos
            | Schema::LocalTimestampMillis
            | Schema::LocalTimestampMicros
            | Schema::LocalTimestampNanos => Some(Integer::Long),
            _ => None,
        }
    }
}

/// Collects every named type in `schema`.
pub(crate) fn names(schema: &Schema) -> Names {
    fn walk(schema: &Schema, names: &mut Names) {
        match schema {
            Schema::Record(record) => {
                names.insert(record.name.clone(), schema.clone());
                for field in &record.fields {
                    walk(&field.schema, names);
                }
            }
            Schema::Enum(enumeration) => {
                names.insert(enumeration.name.clone(), schema.clone());
            }
            Schema::Fixed(fixed) => {
                names.insert(fixed.name.clone(), schema.clone());
            }
            Schema::Array(array) => walk(&array.items, names),
            Schema::Map(map) => walk(&map.types, names),
            Schema::Union(union) => union
                .variants()
                .iter()
                .for_each(|variant| walk(variant, names)),
            _ => {}
        }
    }
    let mut names = Names::new();
    walk(schema, &mut names);
    names
}

/// Decodes one value of `schema` that must take all of `bytes`.
pub(crate) fn decode<T: de::DeserializeOwned>(
    schema: &Schema,
    names: &Names,
    bytes: &[u8],
) -> Result<T> {
    decode_resolving(schema, names, None, bytes)
}

/// Decodes one value written with `writer` (whose named types are `names`) that must take
/// all of `bytes`, into the reader's type, adding the reader's `defaults` for fields the
/// writer's records lack.
pub(crate) fn decode_resolving<T: de::DeserializeOwned>(
    writer: &Schema,
    names: &Names,
    defaults: Option<&Defaults>,
    bytes: &[u8],
) -> Result<T> {
    let mut input = bytes;
    let value = T::deserialize(Decoder {
        input: &mut input,
        schema: writer,
        names,
        defaults,
    })?;
    if input.is_empty() {
        Ok(value)
    } else {
        Err(Fallback)
    }
}

struct Decoder<'i, 'b, 's> {
    input: &'i mut &'b [u8],
    schema: &'s Schema,
    names: &'s Names,
    defaults: Option<&'s Defaults>,
}

impl<'b, 's> Decoder<'_, 'b, 's> {
    fn with<'j>(
        input: &'j mut &'b [u8],
        schema: &'s Schema,
        names: &'s Names,
        defaults: Option<&'s Defaults>,
    ) -> Decoder<'j, 'b, 's> {
        Decoder {
            input,
            schema,
            names,
            defaults,
        }
    }

    fn resolved(&self) -> Result<&'s Schema> {
        match self.schema {
            Schema::Ref { name } => self.names.get(name).ok_or(Fallback),
            schema => Ok(schema),
        }
    }
}

fn take<'b>(input: &mut &'b [u8], count: usize) -> Result<&'b [u8]> {
    if input.len() < count {
        return Err(Fallback);
    }
    let (head, tail) = input.split_at(count);
    *input = tail;
    Ok(head)
}

/// A zig-zag varint, as Avro encodes `int` and `long`.
fn long(input: &mut &[u8]) -> Result<i64> {
    let mut value: u64 = 0;
    for shift in (0..70).step_by(7) {
        let byte = *take(input, 1)?.first().ok_or(Fallback)?;
        value |= u64::from(byte & 0x7f).checked_shl(shift).ok_or(Fallback)?;
        if byte & 0x80 == 0 {
            return Ok(((value >> 1) as i64) ^ -((value & 1) as i64));
        }
    }
    Err(Fallback)
}

fn length(input: &mut &[u8]) -> Result<usize> {
    usize::try_from(long(input)?).map_err(|_| Fallback)
}

fn text<'b>(input: &mut &'b [u8]) -> Result<&'b str> {
    let count = length(input)?;
    std::str::from_utf8(take(input, count)?).map_err(|_| Fallback)
}

/// The item count of the next array or map block; a negative count is followed by the
/// block's byte size, which this decoder does not need.
fn block(input: &mut &[u8]) -> Result<usize> {
    let count = long(input)?;
    if count < 0 {
        long(input)?;
    }
    usize::try_from(count.unsigned_abs()).map_err(|_| Fallback)
}

impl<'de> de::Deserializer<'de> for Decoder<'_, '_, '_> {
    type Error = Fallback;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let schema = self.resolved()?;
        match Integer::of(schema) {
            Some(Integer::Int) => {
                return visitor.visit_i32(i32::try_from(long(self.input)?).map_err(|_| Fallback)?);
            }
            Some(Integer::Long) => return visitor.visit_i64(long(self.input)?),
            None => {}
        }
        match schema {
            Schema::Null => visitor.visit_unit(),
            Schema::Boolean => match take(self.input, 1)? {
                [0] => visitor.visit_bool(false),
                [1] => visitor.visit_bool(true),
                _ => Err(Fallback),
            },
            Schema::Float => {
                let bytes = take(self.input, 4)?;
                visitor.visit_f32(f32::from_le_bytes(bytes.try_into().map_err(|_| Fallback)?))
            }
            Schema::Double => {
                let bytes = take(self.input, 8)?;
                visitor.visit_f64(f64::from_le_bytes(bytes.try_into().map_err(|_| Fallback)?))
            }
            Schema::Bytes => {
                let count = length(self.input)?;
                visitor.visit_bytes(take(self.input, count)?)
            }
            Schema::String => visitor.visit_str(text(self.input)?),
            Schema::Fixed(fixed) => visitor.visit_bytes(take(self.input, fixed.size)?),
            Schema::Array(array) => visitor.visit_seq(Blocks::new(
                self.input,
                &array.items,
                self.names,
                self.defaults,
            )),
            Schema::Map(map) => visitor.visit_map(Blocks::new(
                self.input,
                &map.types,
                self.names,
                self.defaults,
            )),
            Schema::Record(record) => visitor.visit_map(Fields {
                input: self.input,
                fields: &record.fields,
                names: self.names,
                defaults: self.defaults,
                added: self
                    .defaults
                    .and_then(|defaults| defaults.get(&record.name))
                    .map_or(&[], Vec::as_slice),
                next: 0,
            }),
            Schema::Enum(enumeration) => {
                let index = length(self.input)?;
                visitor.visit_str(enumeration.symbols.get(index).ok_or(Fallback)?)
            }
            Schema::Union(union) => {
                let index = length(self.input)?;
                let branch = union.variants().get(index).ok_or(Fallback)?;
                match branch {
                    Schema::Null => visitor.visit_none(),
                    _ => Err(Fallback),
                }
            }
            _ => Err(Fallback),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let Schema::Union(union) = self.resolved()? else {
            return Err(Fallback);
        };
        let index = length(self.input)?;
        match union.variants().get(index).ok_or(Fallback)? {
            Schema::Null => visitor.visit_none(),
            branch => {
                visitor.visit_some(Decoder::with(self.input, branch, self.names, self.defaults))
            }
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        let Schema::Enum(enumeration) = self.resolved()? else {
            return Err(Fallback);
        };
        let index = length(self.input)?;
        let symbol = enumeration.symbols.get(index).ok_or(Fallback)?;
        visitor.visit_enum(symbol.as_str().into_deserializer())
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

/// The items of an array or the entries of a map, block by block.
struct Blocks<'i, 'b, 's> {
    input: &'i mut &'b [u8],
    schema: &'s Schema,
    names: &'s Names,
    defaults: Option<&'s Defaults>,
    left: usize,
    done: bool,
}

impl<'i, 'b, 's> Blocks<'i, 'b, 's> {
    fn new(
        input: &'i mut &'b [u8],
        schema: &'s Schema,
        names: &'s Names,
        defaults: Option<&'s Defaults>,
    ) -> Self {
        Blocks {
            input,
            schema,
            names,
            defaults,
            left: 0,
            done: false,
        }
    }

    /// Whether another item follows, reading the next block's count when one ends.
    fn another(&mut self) -> Result<bool> {
        if self.left == 0 && !self.done {
            self.left = block(self.input)?;
            self.done = self.left == 0;
        }
        if self.done {
            return Ok(false);
        }
        self.left -= 1;
        Ok(true)
    }

    fn value<'de, T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value> {
        seed.deserialize(Decoder::with(
            self.input,
            self.schema,
            self.names,
            self.defaults,
        ))
    }
}

impl<'de> de::SeqAccess<'de> for Blocks<'_, '_, '_> {
    type Error = Fallback;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if !self.another()? {
            return Ok(None);
        }
        self.value(seed).map(Some)
    }
}

/// Map keys are strings, before each value.
impl<'de> de::MapAccess<'de> for Blocks<'_, '_, '_> {
    type Error = Fallback;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        if !self.another()? {
            return Ok(None);
        }
        let key = text(self.input)?;
        seed.deserialize(key.into_deserializer()).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        self.value(seed)
    }
}

/// The fields of a record, in schema order, as a map from field name to value; then, when
/// resolving, the reader's fields the writer lacks, with their defaults.
struct Fields<'i, 'b, 's> {
    input: &'i mut &'b [u8],
    fields: &'s [apache_avro::schema::RecordField],
    names: &'s Names,
    defaults: Option<&'s Defaults>,
    added: &'s [(String, serde_json::Value)],
    next: usize,
}

impl<'de> de::MapAccess<'de> for Fields<'_, '_, '_> {
    type Error = Fallback;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        let name = match self.fields.get(self.next) {
            Some(field) => &field.name,
            None => match self.added.get(self.next - self.fields.len()) {
                Some((name, _)) => name,
                None => return Ok(None),
            },
        };
        seed.deserialize(name.as_str().into_deserializer())
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        let index = self.next;
        self.next += 1;
        if let Some(field) = self.fields.get(index) {
            return seed.deserialize(Decoder::with(
                self.input,
                &field.schema,
                self.names,
                self.defaults,
            ));
        }
        let (_, default) = self.added.get(index - self.fields.len()).ok_or(Fallback)?;
        seed.deserialize(default.clone()).map_err(|_| Fallback)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use apache_avro::AvroSchema;
    use proptest::prelude::*;
    use serde::{Deserialize, Serialize};

    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
    enum Status {
        Ok,
        Degraded,
        Down,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
    struct Location {
        room: String,
        floor: i32,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
    struct Everything {
        name: String,
        count: i64,
        small: i32,
        ratio: f64,
        rough: f32,
        on: bool,
        note: Option<String>,
        samples: Vec<i64>,
        labels: HashMap<String, f64>,
        status: Status,
        location: Location,
        previous: Option<Location>,
        history: Vec<Location>,
    }

    fn everything() -> impl Strategy<Value = Everything> {
        let location =
            ("[a-z ]{0,8}", any::<i32>()).prop_map(|(room, floor)| Location { room, floor });
        let status = prop_oneof![Just(Status::Ok), Just(Status::Degraded), Just(Status::Down)];
        (
            (
                "\\PC{0,12}",
                any::<i64>(),
                any::<i32>(),
                any::<f64>(),
                any::<f32>(),
                any::<bool>(),
            ),
            (
                proptest::option::of("\\PC{0,6}"),
                proptest::collection::vec(any::<i64>(), 0..5),
            ),
            (
                proptest::collection::hash_map("[a-z]{1,4}", any::<f64>(), 0..4),
                status,
            ),
            (
                location.clone(),
                proptest::option::of(location.clone()),
                proptest::collection::vec(location, 0..3),
            ),
        )
            .prop_map(
                |(
                    (name, count, small, ratio, rough, on),
                    (note, samples),
                    (labels, status),
                    (location, previous, history),
                )| {
                    Everything {
                        name,
                        count,
                        small,
                        ratio,
                        rough,
                        on,
                        note,
                        samples,
                        labels,
                        status,
                        location,
                        previous,
                        history,
                    }
                },
            )
    }

    /// What apache-avro writes (through its `Value`, which resolves references).
    fn encoded(schema: &Schema, value: &Everything) -> Vec<u8> {
        apache_avro::to_avro_datum(schema, apache_avro::to_value(value).unwrap()).unwrap()
    }

    fn slow(schema: &Schema, bytes: &[u8]) -> Everything {
        let value = apache_avro::from_avro_datum(schema, &mut &bytes[..], None).unwrap();
        apache_avro::from_value(&value).unwrap()
    }

    fn same(a: &Everything, b: &Everything) -> bool {
        // NaN is not equal to itself; compare the bits of the floats.
        let bits = |e: &Everything| {
            let mut labels: Vec<(String, u64)> = e
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), v.to_bits()))
                .collect();
            labels.sort();
            (e.ratio.to_bits(), e.rough.to_bits(), labels)
        };
        let strip = |e: &Everything| Everything {
            ratio: 0.0,
            rough: 0.0,
            labels: HashMap::new(),
            ..e.clone()
        };
        bits(a) == bits(b) && strip(a) == strip(b)
    }

    proptest! {
        #[test]
        fn the_fast_path_decodes_derived_types_as_apache_avro_does(value in everything()) {
            let schema = Everything::get_schema();
            let bytes = encoded(&schema, &value);
            let fast: Everything = decode(&schema, &names(&schema), &bytes).expect("the fast path handles derived types");
            prop_assert!(same(&fast, &value), "fast {fast:?} != {value:?}");
            prop_assert!(same(&fast, &slow(&schema, &bytes)));
        }

        #[test]
        fn apache_avro_reads_what_the_direct_encoder_writes(value in everything()) {
            let schema = Everything::get_schema();
            let mut bytes = Vec::new();
            crate::avro_encode::encode(&schema, &names(&schema), &value, &mut bytes).expect("derived types encode directly");
            prop_assert!(same(&slow(&schema, &bytes), &value));
            if value.labels.len() < 2 {
                // Without a map's arbitrary order the bytes are exactly apache-avro's.
                prop_assert_eq!(bytes, encoded(&schema, &value));
            }
        }

        #[test]
        fn truncated_or_extended_input_falls_back(value in everything(), cut in 1usize..8) {
            let schema = Everything::get_schema();
            let mut bytes = encoded(&schema, &value);
            let short = &bytes[..bytes.len().saturating_sub(cut)];
            prop_assert!(decode::<Everything>(&schema, &names(&schema), short).is_err());
            bytes.push(0);
            prop_assert!(decode::<Everything>(&schema, &names(&schema), &bytes).is_err());
        }
    }

    /// A reading as an earlier version wrote it.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
    #[avro(name = "Reading")]
    #[serde(rename = "Reading")]
    struct OldReading {
        sensor: String,
        /// Gone from the reader.
        firmware: String,
        /// Widened to a long by the reader.
        small: i32,
        place: OldPlace,
        history: Vec<OldPlace>,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
    #[avro(name = "Place")]
    #[serde(rename = "Place")]
    struct OldPlace {
        room: String,
    }

    /// The reading as the reader has it now.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
    #[avro(name = "Reading")]
    #[serde(rename = "Reading")]
    struct NewReading {
        sensor: String,
        small: i64,
        /// Avro's default (5) wins over serde's (0), as schema resolution says.
        #[avro(default = "5")]
        #[serde(default)]
        count: i64,
        #[avro(default = "null")]
        #[serde(default)]
        note: Option<String>,
        place: NewPlace,
        history: Vec<NewPlace>,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
    #[avro(name = "Place")]
    #[serde(rename = "Place")]
    struct NewPlace {
        room: String,
        #[avro(default = "\"ground\"")]
        #[serde(default)]
        floor: String,
    }

    fn old_reading() -> impl Strategy<Value = OldReading> {
        let place = "[a-z]{0,6}".prop_map(|room| OldPlace { room });
        (
            "[a-z]{0,8}",
            ".{0,4}",
            any::<i32>(),
            place.clone(),
            proptest::collection::vec(place, 0..4),
        )
            .prop_map(|(sensor, firmware, small, place, history)| OldReading {
                sensor,
                firmware,
                small,
                place,
                history,
            })
    }

    proptest! {
        #[test]
        fn resolving_decodes_an_older_schema_as_apache_avro_resolves_it(value in old_reading()) {
            let writer = OldReading::get_schema();
            let reader = NewReading::get_schema();
            let bytes = apache_avro::to_avro_datum(&writer, apache_avro::to_value(&value).unwrap()).unwrap();
            let writer_names = names(&writer);
            let defaults = defaults(&writer_names, &names(&reader)).expect("every added field has a default");
            let fast: NewReading = decode_resolving(&writer, &writer_names, Some(&defaults), &bytes)
                .expect("the direct path resolves added, removed and widened fields");
            let mut input = &bytes[..];
            let resolved = apache_avro::from_avro_datum(&writer, &mut input, Some(&reader)).unwrap();
            let slow: NewReading = apache_avro::from_value(&resolved).unwrap();
            prop_assert_eq!(&fast, &slow);
            prop_assert_eq!(fast.count, 5);
            prop_assert_eq!(&fast.place.floor, "ground");
        }
    }

    #[test]
    fn a_reader_field_without_a_default_has_no_defaults() {
        #[derive(Debug, Serialize, Deserialize, AvroSchema)]
        #[avro(name = "Place")]
        struct Strict {
            room: String,
            floor: String,
        }
        let writer = OldPlace::get_schema();
        assert!(defaults(&names(&writer), &names(&Strict::get_schema())).is_none());
    }
}

//! A direct Avro binary encoder: serde serialization driven by the schema, writing bytes as
//! it goes, with named references resolved (`apache_avro::write_avro_datum_ref` fails on a
//! type used twice in one record, whose second use the derived schema writes as a
//! reference).
//!
//! It covers what derived schemas use (records, primitives, strings, bytes, arrays, maps,
//! unit enums, `[null, T]` unions as `Option`, named references, date and time logical
//! types). Anything else reports [`Fallback`], and the codec encodes through
//! `apache_avro::to_value` and `to_avro_datum` instead. Tests check that apache-avro reads
//! what this writes.

use apache_avro::Schema;
use serde::ser::{self, Serialize};

use crate::avro_decode::{Fallback, Integer, Names};

type Result<T = ()> = std::result::Result<T, Fallback>;

impl ser::Error for Fallback {
    fn custom<T: std::fmt::Display>(_message: T) -> Self {
        Fallback
    }
}

/// Appends the Avro encoding of `value` to `out`.
pub(crate) fn encode<T: Serialize + ?Sized>(
    schema: &Schema,
    names: &Names,
    value: &T,
    out: &mut Vec<u8>,
) -> Result {
    value.serialize(Encoder { out, schema, names })
}

struct Encoder<'o, 's> {
    out: &'o mut Vec<u8>,
    schema: &'s Schema,
    names: &'s Names,
}

fn long(out: &mut Vec<u8>, value: i64) {
    let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
    while zigzag >= 0x80 {
        out.push((zigzag as u8) | 0x80);
        zigzag >>= 7;
    }
    out.push(zigzag as u8);
}

fn bytes(out: &mut Vec<u8>, value: &[u8]) {
    long(out, value.len() as i64);
    out.extend_from_slice(value);
}

impl<'o, 's> Encoder<'o, 's> {
    fn resolved(&self) -> Result<&'s Schema> {
        match self.schema {
            Schema::Ref { name } => self.names.get(name).ok_or(Fallback),
            schema => Ok(schema),
        }
    }

    fn integer(self, value: i64) -> Result {
        match Integer::of(self.resolved()?).ok_or(Fallback)? {
            Integer::Int => long(self.out, i32::try_from(value).map_err(|_| Fallback)?.into()),
            Integer::Long => long(self.out, value),
        }
        Ok(())
    }

    /// The index and schema of the non-null branch of a `[null, T]` union.
    fn nullable(&self) -> Result<(usize, usize, &'s Schema)> {
        let Schema::Union(union) = self.resolved()? else {
            return Err(Fallback);
        };
        match union.variants() {
            [Schema::Null, other] => Ok((0, 1, other)),
            [other, Schema::Null] => Ok((1, 0, other)),
            _ => Err(Fallback),
        }
    }
}

impl<'o, 's> ser::Serializer for Encoder<'o, 's> {
    type Ok = ();
    type Error = Fallback;
    type SerializeSeq = Blocks<'o, 's>;
    type SerializeTuple = ser::Impossible<(), Fallback>;
    type SerializeTupleStruct = ser::Impossible<(), Fallback>;
    type SerializeTupleVariant = ser::Impossible<(), Fallback>;
    type SerializeMap = Blocks<'o, 's>;
    type SerializeStruct = Fields<'o, 's>;
    type SerializeStructVariant = ser::Impossible<(), Fallback>;

    fn serialize_bool(self, value: bool) -> Result {
        let Schema::Boolean = self.resolved()? else {
            return Err(Fallback);
        };
        self.out.push(u8::from(value));
        Ok(())
    }

    fn serialize_i8(self, value: i8) -> Result {
        self.integer(value.into())
    }

    fn serialize_i16(self, value: i16) -> Result {
        self.integer(value.into())
    }

    fn serialize_i32(self, value: i32) -> Result {
        self.integer(value.into())
    }

    fn serialize_i64(self, value: i64) -> Result {
        self.integer(value)
    }

    fn serialize_u8(self, value: u8) -> Result {
        self.integer(value.into())
    }

    fn serialize_u16(self, value: u16) -> Result {
        self.integer(value.into())
    }

    fn serialize_u32(self, value: u32) -> Result {
        self.integer(value.into())
    }

    fn serialize_u64(self, value: u64) -> Result {
        self.integer(i64::try_from(value).map_err(|_| Fallback)?)
    }

    fn serialize_f32(self, value: f32) -> Result {
        match self.resolved()? {
            Schema::Float => self.out.extend_from_slice(&value.to_le_bytes()),
            Schema::Double => self.out.extend_from_slice(&f64::from(value).to_le_bytes()),
            _ => return Err(Fallback),
        }
        Ok(())
    }

    fn serialize_f64(self, value: f64) -> Result {
        let Schema::Double = self.resolved()? else {
            return Err(Fallback);
        };
        self.out.extend_from_slice(&value.to_le_bytes());
        Ok(())
    }

    fn serialize_char(self, value: char) -> Result {
        self.serialize_str(value.encode_utf8(&mut [0; 4]))
    }

    fn serialize_str(self, value: &str) -> Result {
        match self.resolved()? {
            Schema::String | Schema::Uuid => bytes(self.out, value.as_bytes()),
            Schema::Enum(enumeration) => {
                let index = enumeration
                    .symbols
                    .iter()
                    .position(|s| s == value)
                    .ok_or(Fallback)?;
                long(self.out, index as i64);
            }
            _ => return Err(Fallback),
        }
        Ok(())
    }

    fn serialize_bytes(self, value: &[u8]) -> Result {
        match self.resolved()? {
            Schema::Bytes => bytes(self.out, value),
            Schema::Fixed(fixed) if fixed.size == value.len() => self.out.extend_from_slice(value),
            _ => return Err(Fallback),
        }
        Ok(())
    }

    fn serialize_none(self) -> Result {
        let (null, _, _) = self.nullable()?;
        long(self.out, null as i64);
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result {
        let (_, index, schema) = self.nullable()?;
        long(self.out, index as i64);
        value.serialize(Encoder {
            out: self.out,
            schema,
            names: self.names,
        })
    }

    fn serialize_unit(self) -> Result {
        let Schema::Null = self.resolved()? else {
            return Err(Fallback);
        };
        Ok(())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result {
        self.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result {
        let Schema::Enum(_) = self.resolved()? else {
            return Err(Fallback);
        };
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result {
        Err(Fallback)
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Blocks<'o, 's>> {
        let Schema::Array(array) = self.resolved()? else {
            return Err(Fallback);
        };
        Blocks::start(self.out, &array.items, self.names, len)
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple> {
        Err(Fallback)
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(Fallback)
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(Fallback)
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Blocks<'o, 's>> {
        let Schema::Map(map) = self.resolved()? else {
            return Err(Fallback);
        };
        Blocks::start(self.out, &map.types, self.names, len)
    }

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Fields<'o, 's>> {
        let Schema::Record(record) = self.resolved()? else {
            return Err(Fallback);
        };
        Ok(Fields {
            out: self.out,
            fields: &record.fields,
            names: self.names,
            next: 0,
        })
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(Fallback)
    }
}

/// The items of an array or the entries of a map: one block with the count up front, then
/// the empty block that ends it, as apache-avro writes them.
pub(crate) struct Blocks<'o, 's> {
    out: &'o mut Vec<u8>,
    schema: &'s Schema,
    names: &'s Names,
}

impl<'o, 's> Blocks<'o, 's> {
    fn start(
        out: &'o mut Vec<u8>,
        schema: &'s Schema,
        names: &'s Names,
        len: Option<usize>,
    ) -> Result<Self> {
        let len = len.ok_or(Fallback)?;
        if len > 0 {
            long(out, len as i64);
        }
        Ok(Blocks { out, schema, names })
    }
}

impl ser::SerializeSeq for Blocks<'_, '_> {
    type Ok = ();
    type Error = Fallback;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        value.serialize(Encoder {
            out: self.out,
            schema: self.schema,
            names: self.names,
        })
    }

    fn end(self) -> Result {
        self.out.push(0);
        Ok(())
    }
}

impl ser::SerializeMap for Blocks<'_, '_> {
    type Ok = ();
    type Error = Fallback;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result {
        key.serialize(Encoder {
            out: self.out,
            schema: &Schema::String,
            names: self.names,
        })
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        value.serialize(Encoder {
            out: self.out,
            schema: self.schema,
            names: self.names,
        })
    }

    fn end(self) -> Result {
        self.out.push(0);
        Ok(())
    }
}

/// The fields of a record; serde must give them in schema order, all of them.
pub(crate) struct Fields<'o, 's> {
    out: &'o mut Vec<u8>,
    fields: &'s [apache_avro::schema::RecordField],
    names: &'s Names,
    next: usize,
}

impl ser::SerializeStruct for Fields<'_, '_> {
    type Ok = ();
    type Error = Fallback;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result {
        let field = self
            .fields
            .get(self.next)
            .filter(|field| field.name == key)
            .ok_or(Fallback)?;
        self.next += 1;
        value.serialize(Encoder {
            out: self.out,
            schema: &field.schema,
            names: self.names,
        })
    }

    fn end(self) -> Result {
        if self.next == self.fields.len() {
            Ok(())
        } else {
            Err(Fallback)
        }
    }
}

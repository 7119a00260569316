//! Avro schema resolution: can a reader schema read data written with a writer schema?
//!
//! This follows the resolution rules of the Avro specification: promotions (`int` to `long`,
//! `float`, `double`; `long` to `float`, `double`; `float` to `double`; `string` and `bytes`
//! both ways), records matched by unqualified name or reader alias, writer fields the reader
//! lacks ignored, reader fields the writer lacks filled from their default, enum symbols
//! unknown to the reader mapped to the reader's default, fixed names and sizes, named-type
//! references, and unions on either side. Logical types resolve as their underlying types.
//!
//! `apache-avro`'s own `SchemaCompatibility::can_read` (0.21) compares references by name
//! without resolving them, ignores enum defaults, and reports a failure without the path of
//! the field concerned; this check fills those gaps, and its message names the field or
//! symbol that breaks compatibility.

use std::collections::{HashMap, HashSet};

use apache_avro::Schema;
use apache_avro::schema::{Alias, EnumSchema, Name, RecordSchema, UnionSchema};

/// Whether data written with `writer` can be read with `reader`.
///
/// # Errors
///
/// What breaks compatibility, naming the field (`at 'Reading.unit': ...`) or the symbols.
pub(crate) fn can_read(writer: &Schema, reader: &Schema) -> Result<(), String> {
    let mut resolution = Resolution {
        writer_names: named_types(writer),
        reader_names: named_types(reader),
        in_progress: HashSet::new(),
    };
    resolution.check(writer, reader, "")
}

struct Resolution<'s> {
    writer_names: HashMap<String, &'s Schema>,
    reader_names: HashMap<String, &'s Schema>,
    /// Record pairs being compared, so that recursive types terminate.
    in_progress: HashSet<(String, String)>,
}

/// A schema with logical types and references replaced by what they stand for.
enum Base<'s> {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
    Array(&'s Schema),
    Map(&'s Schema),
    Union(&'s UnionSchema),
    Record(&'s RecordSchema),
    Enum(&'s EnumSchema),
    Fixed {
        name: String,
        size: usize,
        aliases: &'s Option<Vec<Alias>>,
    },
    Unknown(String),
}

impl Base<'_> {
    fn describe(&self) -> String {
        match self {
            Base::Null => "null".into(),
            Base::Boolean => "boolean".into(),
            Base::Int => "int".into(),
            Base::Long => "long".into(),
            Base::Float => "float".into(),
            Base::Double => "double".into(),
            Base::Bytes => "bytes".into(),
            Base::String => "string".into(),
            Base::Array(_) => "array".into(),
            Base::Map(_) => "map".into(),
            Base::Union(_) => "union".into(),
            Base::Record(record) => format!("record '{}'", record.name.name),
            Base::Enum(enumeration) => format!("enum '{}'", enumeration.name.name),
            Base::Fixed { name, size, .. } => format!("fixed '{name}' of {size} bytes"),
            Base::Unknown(name) => format!("unknown type '{name}'"),
        }
    }
}

impl<'s> Resolution<'s> {
    fn check(&mut self, writer: &'s Schema, reader: &'s Schema, path: &str) -> Result<(), String> {
        let written = base(writer, &self.writer_names);
        let Base::Union(union) = written else {
            return self.check_base(&written, reader, path);
        };
        // Every branch the writer may have used must be readable.
        for branch in union.variants() {
            self.check(branch, reader, path).map_err(|reason| {
                let branch = base(branch, &self.writer_names).describe();
                format!("{reason} (in the writer's union branch {branch})")
            })?;
        }
        Ok(())
    }

    fn check_base(
        &mut self,
        writer: &Base<'s>,
        reader: &'s Schema,
        path: &str,
    ) -> Result<(), String> {
        let read = base(reader, &self.reader_names);
        let Base::Union(union) = read else {
            return self.resolve(writer, &read, path);
        };
        // The reader's union reads the value with the first branch that can.
        if union
            .variants()
            .iter()
            .any(|branch| self.check_base(writer, branch, path).is_ok())
        {
            return Ok(());
        }
        let branches: Vec<_> = union
            .variants()
            .iter()
            .map(|branch| base(branch, &self.reader_names).describe())
            .collect();
        Err(format!(
            "{}the reader's union [{}] has no branch that reads the writer's {}",
            at(path),
            branches.join(", "),
            writer.describe()
        ))
    }

    fn resolve(&mut self, writer: &Base<'s>, reader: &Base<'s>, path: &str) -> Result<(), String> {
        use Base as B;
        let at = at(path);
        match (writer, reader) {
            (B::Null, B::Null)
            | (B::Boolean, B::Boolean)
            | (B::Int, B::Int | B::Long | B::Float | B::Double)
            | (B::Long, B::Long | B::Float | B::Double)
            | (B::Float, B::Float | B::Double)
            | (B::Double, B::Double)
            | (B::Bytes | B::String, B::Bytes | B::String) => Ok(()),
            (B::Array(writer), B::Array(reader)) => {
                self.check(writer, reader, &format!("{path}[]"))
            }
            (B::Map(writer), B::Map(reader)) => self.check(writer, reader, &format!("{path}{{}}")),
            (B::Record(writer), B::Record(reader)) => self.records(writer, reader, path),
            (B::Enum(writer), B::Enum(reader)) => {
                if !names_match(&writer.name, &reader.name, &reader.aliases) {
                    return Err(format!(
                        "{at}enum '{}' cannot be read as enum '{}' (the names differ and no alias matches)",
                        writer.name.name, reader.name.name
                    ));
                }
                let unknown: Vec<_> = writer
                    .symbols
                    .iter()
                    .filter(|symbol| !reader.symbols.contains(symbol))
                    .map(|symbol| format!("'{symbol}'"))
                    .collect();
                if unknown.is_empty() || reader.default.is_some() {
                    Ok(())
                } else {
                    Err(format!(
                        "{at}the writer's enum '{}' has symbol{} {} that the reader's does not have (and the reader's enum has no default)",
                        writer.name.name,
                        if unknown.len() == 1 { "" } else { "s" },
                        unknown.join(", ")
                    ))
                }
            }
            (
                B::Fixed {
                    name: writer_name,
                    size: writer_size,
                    ..
                },
                B::Fixed {
                    name: reader_name,
                    size: reader_size,
                    aliases,
                },
            ) => {
                let alias_matches = aliases
                    .iter()
                    .flatten()
                    .any(|alias| alias.name() == *writer_name);
                if writer_name != reader_name && !alias_matches {
                    Err(format!(
                        "{at}fixed '{writer_name}' cannot be read as fixed '{reader_name}'"
                    ))
                } else if writer_size != reader_size {
                    Err(format!(
                        "{at}fixed '{writer_name}' has {writer_size} bytes in the writer's schema but {reader_size} in the reader's"
                    ))
                } else {
                    Ok(())
                }
            }
            _ => Err(format!(
                "{at}the writer's {} cannot be read as {}",
                writer.describe(),
                reader.describe()
            )),
        }
    }

    fn records(
        &mut self,
        writer: &'s RecordSchema,
        reader: &'s RecordSchema,
        path: &str,
    ) -> Result<(), String> {
        let at = at(path);
        if !names_match(&writer.name, &reader.name, &reader.aliases) {
            return Err(format!(
                "{at}record '{}' cannot be read as record '{}' (the names differ and no alias matches)",
                writer.name.name, reader.name.name
            ));
        }
        let pair = (writer.name.fullname(None), reader.name.fullname(None));
        if !self.in_progress.insert(pair.clone()) {
            return Ok(());
        }
        let prefix = if path.is_empty() {
            reader.name.name.clone()
        } else {
            path.to_owned()
        };
        let result = reader.fields.iter().try_for_each(|field| {
            let field_path = format!("{prefix}.{}", field.name);
            let written = writer.fields.iter().find(|candidate| {
                candidate.name == field.name
                    || field.aliases.iter().flatten().any(|alias| *alias == candidate.name)
            });
            match (written, &field.default) {
                (Some(written), _) => self.check(&written.schema, &field.schema, &field_path),
                (None, Some(_)) => Ok(()),
                (None, None) => Err(format!(
                    "field '{field_path}' is missing from the writer's record '{}' and has no default in the reader's",
                    writer.name.name
                )),
            }
        });
        self.in_progress.remove(&pair);
        result
    }
}

fn at(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!("at '{path}': ")
    }
}

/// Records, enums and fixed types match when their unqualified names are equal or the
/// reader has an alias for the writer's name.
fn names_match(writer: &Name, reader: &Name, reader_aliases: &Option<Vec<Alias>>) -> bool {
    writer.name == reader.name
        || reader_aliases.iter().flatten().any(|alias| {
            alias.name() == writer.name || alias.fullname(None) == writer.fullname(None)
        })
}

fn base<'s>(schema: &'s Schema, names: &HashMap<String, &'s Schema>) -> Base<'s> {
    match schema {
        Schema::Null => Base::Null,
        Schema::Boolean => Base::Boolean,
        Schema::Int | Schema::Date | Schema::TimeMillis => Base::Int,
        Schema::Long
        | Schema::TimeMicros
        | Schema::TimestampMillis
        | Schema::TimestampMicros
        | Schema::TimestampNanos
        | Schema::LocalTimestampMillis
        | Schema::LocalTimestampMicros
        | Schema::LocalTimestampNanos => Base::Long,
        Schema::Float => Base::Float,
        Schema::Double => Base::Double,
        Schema::Bytes | Schema::BigDecimal => Base::Bytes,
        Schema::String | Schema::Uuid => Base::String,
        Schema::Decimal(decimal) => base(&decimal.inner, names),
        Schema::Duration => Base::Fixed {
            name: "duration".into(),
            size: 12,
            aliases: &None,
        },
        Schema::Array(array) => Base::Array(&array.items),
        Schema::Map(map) => Base::Map(&map.types),
        Schema::Union(union) => Base::Union(union),
        Schema::Record(record) => Base::Record(record),
        Schema::Enum(enumeration) => Base::Enum(enumeration),
        Schema::Fixed(fixed) => Base::Fixed {
            name: fixed.name.name.clone(),
            size: fixed.size,
            aliases: &fixed.aliases,
        },
        Schema::Ref { name } => {
            let fullname = name.fullname(None);
            let named = names.get(&fullname).or_else(|| {
                names
                    .iter()
                    .find(|(candidate, _)| candidate.rsplit('.').next() == Some(name.name.as_str()))
                    .map(|(_, schema)| schema)
            });
            match named {
                Some(schema) if !matches!(schema, Schema::Ref { .. }) => base(schema, names),
                _ => Base::Unknown(fullname),
            }
        }
    }
}

/// Every named type defined in a schema, by full name.
fn named_types(schema: &Schema) -> HashMap<String, &Schema> {
    fn walk<'s>(schema: &'s Schema, names: &mut HashMap<String, &'s Schema>) {
        match schema {
            Schema::Record(record) => {
                names.insert(record.name.fullname(None), schema);
                for field in &record.fields {
                    walk(&field.schema, names);
                }
            }
            Schema::Enum(enumeration) => {
                names.insert(enumeration.name.fullname(None), schema);
            }
            Schema::Fixed(fixed) => {
                names.insert(fixed.name.fullname(None), schema);
            }
            Schema::Decimal(decimal) => walk(&decimal.inner, names),
            Schema::Array(array) => walk(&array.items, names),
            Schema::Map(map) => walk(&map.types, names),
            Schema::Union(union) => {
                for branch in union.variants() {
                    walk(branch, names);
                }
            }
            _ => {}
        }
    }
    let mut names = HashMap::new();
    walk(schema, &mut names);
    names
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(writer: serde_json::Value, reader: serde_json::Value) -> Result<(), String> {
        can_read(
            &Schema::parse(&writer).unwrap(),
            &Schema::parse(&reader).unwrap(),
        )
    }

    #[test]
    fn primitives_promote_only_upwards() {
        assert!(check(json!("int"), json!("long")).is_ok());
        assert!(check(json!("long"), json!("double")).is_ok());
        assert!(check(json!("bytes"), json!("string")).is_ok());
        assert_eq!(
            check(json!("double"), json!("float")),
            Err("the writer's double cannot be read as float".into())
        );
    }

    #[test]
    fn logical_types_resolve_as_their_underlying_type() {
        let date = json!({"type": "int", "logicalType": "date"});
        let millis = json!({"type": "long", "logicalType": "timestamp-millis"});
        assert!(check(date.clone(), json!("int")).is_ok());
        assert!(check(date, json!("long")).is_ok());
        assert!(check(millis, json!("int")).is_err());
    }

    #[test]
    fn nested_paths_name_the_field() {
        let outer = |inner_type: &str| {
            json!({"type": "record", "name": "Outer", "fields": [
                {"name": "inner", "type": {"type": "record", "name": "Inner", "fields": [
                    {"name": "items", "type": {"type": "array", "items": inner_type}}
                ]}}
            ]})
        };
        assert_eq!(
            check(outer("string"), outer("int")),
            Err("at 'Outer.inner.items[]': the writer's string cannot be read as int".into())
        );
    }
}

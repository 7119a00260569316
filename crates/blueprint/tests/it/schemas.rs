//! Avro schema resolution, seen through `IncompatibleSchema` on a one-topic blueprint.

use std::path::Path;

use runnel_blueprint::{BlueprintFiles, Code, verify, verify_with_queries};
use serde_json::{Value, json};

use crate::support::descriptor_json;

const BLUEPRINT: &str = r#"name = "evolution"
[streamlets]
writer = "writer"
reader = "reader"
[topics.records]
producers = ["writer.out"]
consumers = ["reader.in"]
"#;

/// The `IncompatibleSchema` messages of a writer and a reader on one topic.
fn problems_with_formats(writer: Value, reader: Value, formats: (&str, &str)) -> Vec<String> {
    let schema = |definition: &Value, format: &str| json!({"format": format, "name": "record", "definition": definition});
    let descriptor = descriptor_json(json!({
        "descriptor-version": 1, "app": "evolution",
        "streamlets": [
            {"type": "writer", "outlets": [{"name": "out", "schema": schema(&writer, formats.0)}]},
            {"type": "reader", "inlets": [{"name": "in", "schema": schema(&reader, formats.1)}]},
        ]
    }));
    let verification = verify(Path::new("blueprint.toml"), BLUEPRINT, &descriptor);
    let (schema_problems, others): (Vec<_>, Vec<_>) = verification
        .diagnostics
        .into_iter()
        .partition(|d| d.code == Code::IncompatibleSchema);
    assert!(others.is_empty(), "unexpected diagnostics: {others:?}");
    for problem in &schema_problems {
        let location = problem.location.as_ref().expect("located at the consumer");
        assert_eq!((location.line, location.column), (7, 14), "at 'reader.in'");
    }
    schema_problems.into_iter().map(|d| d.message).collect()
}

fn problems(writer: Value, reader: Value) -> Vec<String> {
    problems_with_formats(writer, reader, ("avro", "avro"))
}

fn reading(extra_fields: Value) -> Value {
    let mut fields = vec![
        json!({"name": "sensor", "type": "string"}),
        json!({"name": "value", "type": "int"}),
    ];
    fields.extend(extra_fields.as_array().cloned().unwrap_or_default());
    json!({"type": "record", "name": "Reading", "namespace": "sensors", "fields": fields})
}

fn assert_one_problem_containing(problems: &[String], expected: &str) {
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains(expected),
        "'{}' does not contain '{expected}'",
        problems[0]
    );
}

#[test]
fn identical_schemas_are_compatible() {
    assert!(problems(reading(json!([])), reading(json!([]))).is_empty());
}

#[test]
fn a_field_added_with_a_default_is_compatible() {
    let reader = reading(json!([{"name": "unit", "type": "string", "default": "celsius"}]));
    assert!(problems(reading(json!([])), reader).is_empty());
}

#[test]
fn a_field_added_without_a_default_cannot_read_old_data() {
    let reader = reading(json!([{"name": "unit", "type": "string"}]));
    assert_one_problem_containing(
        &problems(reading(json!([])), reader),
        "field 'Reading.unit' is missing from the writer's record 'Reading' and has no default",
    );
}

#[test]
fn a_field_the_reader_removed_is_ignored() {
    let writer = reading(json!([{"name": "unit", "type": "string"}]));
    assert!(problems(writer, reading(json!([]))).is_empty());
}

#[test]
fn int_is_promoted_to_long_but_long_is_not_narrowed_to_int() {
    let with_value = |kind: &str| json!({"type": "record", "name": "Reading", "fields": [{"name": "value", "type": kind}]});
    assert!(problems(with_value("int"), with_value("long")).is_empty());
    assert!(problems(with_value("int"), with_value("double")).is_empty());
    assert!(problems(with_value("float"), with_value("double")).is_empty());
    assert!(problems(with_value("string"), with_value("bytes")).is_empty());
    assert_one_problem_containing(
        &problems(with_value("long"), with_value("int")),
        "at 'Reading.value': the writer's long cannot be read as int",
    );
}

#[test]
fn a_renamed_record_is_incompatible_unless_the_reader_has_an_alias() {
    let renamed = json!({"type": "record", "name": "Measurement", "namespace": "sensors",
        "fields": [{"name": "sensor", "type": "string"}, {"name": "value", "type": "int"}]});
    assert_one_problem_containing(
        &problems(reading(json!([])), renamed.clone()),
        "record 'Reading' cannot be read as record 'Measurement'",
    );
    let mut aliased = renamed;
    aliased["aliases"] = json!(["sensors.Reading"]);
    assert!(problems(reading(json!([])), aliased).is_empty());
}

#[test]
fn a_renamed_field_is_compatible_through_an_alias() {
    let writer =
        json!({"type": "record", "name": "R", "fields": [{"name": "temp", "type": "int"}]});
    let reader = json!({"type": "record", "name": "R",
        "fields": [{"name": "temperature", "type": "int", "aliases": ["temp"]}]});
    assert!(problems(writer, reader).is_empty());
}

fn colour(symbols: &[&str], default: Option<&str>) -> Value {
    let mut enumeration = json!({"type": "enum", "name": "Colour", "symbols": symbols});
    if let Some(default) = default {
        enumeration["default"] = json!(default);
    }
    json!({"type": "record", "name": "Paint", "fields": [{"name": "colour", "type": enumeration}]})
}

#[test]
fn enum_symbols_added_by_the_reader_are_compatible() {
    assert!(
        problems(
            colour(&["RED", "GREEN"], None),
            colour(&["RED", "GREEN", "BLUE"], None)
        )
        .is_empty()
    );
}

#[test]
fn enum_symbols_removed_by_the_reader_are_named() {
    assert_one_problem_containing(
        &problems(
            colour(&["RED", "GREEN", "BLUE"], None),
            colour(&["RED"], None),
        ),
        "at 'Paint.colour': the writer's enum 'Colour' has symbols 'GREEN', 'BLUE' that the reader's does not have",
    );
}

#[test]
fn enum_symbols_removed_by_a_reader_with_a_default_are_compatible() {
    let reader = colour(&["RED", "UNKNOWN"], Some("UNKNOWN"));
    assert!(problems(colour(&["RED", "GREEN"], None), reader).is_empty());
}

#[test]
fn avro_and_json_do_not_mix() {
    let problems = problems_with_formats(reading(json!([])), reading(json!([])), ("avro", "json"));
    assert_one_problem_containing(
        &problems,
        "it reads json ('record') but the producer writes avro",
    );
}

#[test]
fn json_ports_are_checked_by_the_same_resolution() {
    let reader = reading(json!([{"name": "unit", "type": "string"}]));
    let problems = problems_with_formats(reading(json!([])), reader, ("json", "json"));
    assert_one_problem_containing(&problems, "field 'Reading.unit'");
}

#[test]
fn unions_resolve_branch_by_branch() {
    let field = |kind: Value| json!({"type": "record", "name": "R", "fields": [{"name": "note", "type": kind}]});
    assert!(problems(field(json!("string")), field(json!(["null", "string"]))).is_empty());
    assert!(
        problems(
            field(json!(["null", "int"])),
            field(json!(["null", "long"]))
        )
        .is_empty()
    );
    assert_one_problem_containing(
        &problems(field(json!(["null", "string"])), field(json!("string"))),
        "the writer's null cannot be read as string (in the writer's union branch null)",
    );
    assert_one_problem_containing(
        &problems(field(json!("boolean")), field(json!(["null", "string"]))),
        "the reader's union [null, string] has no branch that reads the writer's boolean",
    );
}

#[test]
fn named_types_are_resolved_through_references() {
    // `Point` is defined once and referred to by name; the reader's version gained a field
    // with a default.
    let shape = |point_fields: Value| {
        json!({"type": "record", "name": "Segment", "namespace": "geo", "fields": [
            {"name": "from", "type": {"type": "record", "name": "Point", "fields": point_fields}},
            {"name": "to", "type": "Point"},
        ]})
    };
    let old = shape(json!([{"name": "x", "type": "int"}]));
    let with_default =
        shape(json!([{"name": "x", "type": "int"}, {"name": "y", "type": "int", "default": 0}]));
    let without_default =
        shape(json!([{"name": "x", "type": "int"}, {"name": "y", "type": "int"}]));
    assert!(problems(old.clone(), with_default).is_empty());
    assert_one_problem_containing(&problems(old, without_default), "field 'Segment.from.y'");
}

#[test]
fn recursive_types_terminate() {
    let list = |value: &str| {
        json!({"type": "record", "name": "Node", "fields": [
            {"name": "value", "type": value},
            {"name": "next", "type": ["null", "Node"]},
        ]})
    };
    assert!(problems(list("int"), list("long")).is_empty());
    assert_one_problem_containing(&problems(list("long"), list("int")), "at 'Node.value'");
}

#[test]
fn arrays_maps_and_fixed_compare_their_contents() {
    let field = |kind: Value| json!({"type": "record", "name": "R", "fields": [{"name": "f", "type": kind}]});
    let array = |items: &str| json!({"type": "array", "items": items});
    let map = |values: &str| json!({"type": "map", "values": values});
    let fixed = |size: usize| json!({"type": "fixed", "name": "Hash", "size": size});
    assert!(problems(field(array("int")), field(array("long"))).is_empty());
    assert_one_problem_containing(
        &problems(field(map("string")), field(map("int"))),
        "at 'R.f{}'",
    );
    assert_one_problem_containing(
        &problems(field(fixed(16)), field(fixed(32))),
        "16 bytes in the writer's schema but 32",
    );
}

#[test]
fn producers_of_one_topic_must_share_a_format() {
    let descriptor = descriptor_json(json!({
        "descriptor-version": 1, "app": "mixed",
        "streamlets": [
            {"type": "avro-writer", "outlets": [{"name": "out", "schema": {"format": "avro", "name": "long", "definition": "long"}}]},
            {"type": "json-writer", "outlets": [{"name": "out", "schema": {"format": "json", "name": "long", "definition": "long"}}]},
        ]
    }));
    let text = "name = \"mixed\"\n[streamlets]\na = \"avro-writer\"\nj = \"json-writer\"\n\
                [topics.t]\nproducers = [\"a.out\", \"j.out\"]\n";
    let verification = verify(Path::new("b.toml"), text, &descriptor);
    let problem = verification
        .diagnostics
        .iter()
        .find(|d| d.code == Code::IncompatibleSchema)
        .expect("a format problem");
    assert_eq!(
        problem.message,
        "'j.out' writes json to topic 't' but 'a.out' writes avro; one topic carries one format"
    );
}

/// Why the crate has its own resolution: `apache-avro` 0.21 refuses a reader enum with a
/// default for the symbols it lacks, which the Avro specification allows.
#[test]
fn apache_avro_can_read_misses_enum_defaults() {
    use apache_avro::Schema;
    use apache_avro::schema_compatibility::SchemaCompatibility;
    let writer = Schema::parse(&colour(&["RED", "GREEN"], None)).unwrap();
    let reader = Schema::parse(&colour(&["RED", "UNKNOWN"], Some("UNKNOWN"))).unwrap();
    assert!(SchemaCompatibility::can_read(&writer, &reader).is_err());
    assert!(
        problems(
            colour(&["RED", "GREEN"], None),
            colour(&["RED", "UNKNOWN"], Some("UNKNOWN"))
        )
        .is_empty()
    );
}

/// The diagnostics of a topic only clients outside the blueprint write, declaring `schema`,
/// read by `reader.in` with `reader`'s schema.
fn declared_schema_diagnostics(schema: &str, reader: Value) -> Vec<(Code, String, usize)> {
    let descriptor = descriptor_json(json!({
        "descriptor-version": 1, "app": "outside",
        "streamlets": [
            {"type": "reader", "inlets": [{"name": "in", "schema": {"format": "avro", "name": "sensors.Reading", "definition": reader}}]},
        ]
    }));
    let text = format!(
        "name = \"outside\"\n[streamlets]\nreader = \"reader\"\n[topics.readings]\nschema = '''{schema}'''\nconsumers = [\"reader.in\"]\n"
    );
    verify(Path::new("b.toml"), &text, &descriptor)
        .diagnostics
        .into_iter()
        .map(|d| (d.code, d.message, d.location.map_or(0, |l| l.line)))
        .collect()
}

#[test]
fn a_declared_schema_is_a_writer_its_consumers_must_read() {
    let written = reading(json!([])).to_string();
    assert_eq!(
        declared_schema_diagnostics(&written, reading(json!([]))),
        [],
        "no warning that the topic has no producers either"
    );
    let reader = reading(json!([{"name": "unit", "type": "string"}]));
    assert_eq!(
        declared_schema_diagnostics(&written, reader),
        [(
            Code::IncompatibleSchema,
            "'reader.in' cannot read what topic 'readings' is written with by its declared 'schema': field 'Reading.unit' is missing from the writer's record 'Reading' and has no default in the reader's".to_owned(),
            6
        )]
    );
}

#[test]
fn a_declared_schema_that_is_not_avro_is_reported_at_its_text() {
    let errors = |schema: &str| -> Vec<(Code, String, usize)> {
        declared_schema_diagnostics(schema, reading(json!([])))
            .into_iter()
            .filter(|(code, ..)| *code != Code::TopicWithoutProducers)
            .collect()
    };
    assert_eq!(
        errors("{\"type\": \"record\","),
        [(
            Code::BlueprintFormatError,
            "'schema' of topic 'readings' is not JSON: EOF while parsing a value at line 1 column 18 of the schema".to_owned(),
            5
        )]
    );
    let problems = errors("{\"type\": \"recod\"}");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0]
            .1
            .starts_with("'schema' of topic 'readings' is not an Avro schema: "),
        "{problems:?}"
    );
}

#[test]
fn a_producer_of_another_format_than_a_declared_schema_is_reported_at_its_port() {
    let descriptor = descriptor_json(json!({
        "descriptor-version": 1, "app": "outside",
        "streamlets": [
            {"type": "json-writer", "outlets": [{"name": "out", "schema": {"format": "json", "name": "long", "definition": "long"}}]},
        ]
    }));
    let text = "name = \"outside\"\n[streamlets]\nj = \"json-writer\"\n[topics.t]\n\
                schema = '''\"long\"'''\nproducers = [\"j.out\"]\n";
    let problems: Vec<_> = verify(Path::new("b.toml"), text, &descriptor)
        .diagnostics
        .into_iter()
        .filter(|d| d.code == Code::IncompatibleSchema)
        .map(|d| (d.message, d.location.map_or(0, |l| l.line)))
        .collect();
    assert_eq!(
        problems,
        [(
            "'j.out' writes json to topic 't', whose declared 'schema' says its other writers write avro; one topic carries one format".to_owned(),
            6
        )]
    );
}

/// The diagnostics of a topic written from outside whose schema is in `bid.avsc`, holding
/// `file` (`None`: the file cannot be read), read by `reader.in` with `reader`'s schema;
/// `extra` adds lines to the topic.
fn schema_file_diagnostics(
    file: Option<&str>,
    reader: Value,
    extra: &str,
) -> Vec<(Code, String, usize)> {
    let descriptor = descriptor_json(json!({
        "descriptor-version": 1, "app": "outside",
        "streamlets": [
            {"type": "reader", "inlets": [{"name": "in", "schema": {"format": "avro", "name": "sensors.Reading", "definition": reader}}]},
        ]
    }));
    let text = format!(
        "name = \"outside\"\n[streamlets]\nreader = \"reader\"\n[topics.readings]\nschema-file = \"schemas/bid.avsc\"\nconsumers = [\"reader.in\"]\n{extra}"
    );
    let blueprint = Path::new("app/blueprint.toml");
    let files = BlueprintFiles::read(blueprint, &text, |path| {
        assert_eq!(path, Path::new("app/schemas/bid.avsc"));
        file.map(str::to_owned)
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
    });
    verify_with_queries(blueprint, &text, &descriptor, None, &[], &files)
        .diagnostics
        .into_iter()
        .map(|d| (d.code, d.message, d.location.map_or(0, |l| l.line)))
        .collect()
}

#[test]
fn a_schema_file_is_the_topics_declared_schema() {
    let written = reading(json!([])).to_string();
    assert_eq!(
        schema_file_diagnostics(Some(&written), reading(json!([])), ""),
        []
    );
    let reader = reading(json!([{"name": "unit", "type": "string"}]));
    assert_eq!(
        schema_file_diagnostics(Some(&written), reader, ""),
        [(
            Code::IncompatibleSchema,
            "'reader.in' cannot read what topic 'readings' is written with by its declared 'schema': field 'Reading.unit' is missing from the writer's record 'Reading' and has no default in the reader's".to_owned(),
            6
        )]
    );
}

#[test]
fn a_schema_file_that_cannot_be_read_or_is_not_a_schema_is_reported_at_its_key() {
    let errors = |file: Option<&str>, extra: &str| -> Vec<(Code, String, usize)> {
        schema_file_diagnostics(file, reading(json!([])), extra)
            .into_iter()
            .filter(|(code, ..)| *code != Code::TopicWithoutProducers)
            .collect()
    };
    let [(code, message, line)] = &errors(None, "")[..] else {
        panic!("{:?}", errors(None, ""));
    };
    assert_eq!((*code, *line), (Code::BlueprintFormatError, 5));
    assert!(
        message.starts_with(
            "topic 'readings': cannot read its schema file app/schemas/bid.avsc: entity not found"
        ),
        "{message}"
    );
    assert_eq!(
        errors(Some("{\"type\": \"record\",\n"), ""),
        [(
            Code::BlueprintFormatError,
            "the schema file app/schemas/bid.avsc is not JSON: EOF while parsing a value at line 2 column 0 of the schema".to_owned(),
            5
        )]
    );
    let written = reading(json!([])).to_string();
    assert_eq!(
        errors(Some(&written), "schema = '\"long\"'\n"),
        [(
            Code::BlueprintFormatError,
            "topic 'readings' has both 'schema' and 'schema-file': keep the schema in one of them"
                .to_owned(),
            7
        )]
    );
}

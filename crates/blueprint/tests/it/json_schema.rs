//! The JSON report is what `docs/diagnostics.schema.json` says: every fixture's report
//! validates against it, the schema itself is a valid JSON Schema (draft 2020-12), and it
//! refuses reports that break it, so the validation is not vacuous.

use std::collections::BTreeSet;
use std::path::Path;

use runnel_blueprint::{Code, render_json};
use serde_json::{Value, json};

use crate::support::{blueprints_in, docs, verify_fixture};

fn schema() -> Value {
    serde_json::from_str(&docs("diagnostics.schema.json")).expect("the schema is JSON")
}

fn validator() -> jsonschema::Validator {
    jsonschema::validator_for(&schema()).expect("the schema compiles")
}

/// Every way `report` breaks the schema, one line each.
fn violations(validator: &jsonschema::Validator, report: &Value) -> Vec<String> {
    validator
        .iter_errors(report)
        .map(|error| format!("{} at {}", error, error.instance_path()))
        .collect()
}

fn report_of(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    let verification = verify_fixture(path, &text);
    serde_json::from_str(&render_json(&verification.diagnostics)).unwrap()
}

#[test]
fn the_schema_is_a_valid_draft_2020_12_schema() {
    jsonschema::meta::validate(&schema()).expect("the schema validates against its meta-schema");
}

#[test]
fn the_schema_lists_every_code() {
    let schema = schema();
    let listed: Vec<&str> = schema["$defs"]["code"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|code| code.as_str().unwrap())
        .collect();
    let codes: Vec<&str> = Code::ALL.iter().map(|code| code.name()).collect();
    assert_eq!(listed, codes);
}

#[test]
fn every_fixture_report_validates() {
    let validator = validator();
    let mut failures = Vec::new();
    let mut codes = BTreeSet::new();
    for path in blueprints_in("invalid")
        .into_iter()
        .chain(blueprints_in("valid"))
    {
        let report = report_of(&path);
        codes.extend(
            report
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["code"].as_str().unwrap().to_owned()),
        );
        let problems = violations(&validator, &report);
        if !problems.is_empty() {
            failures.push(format!("{}:\n  {}", path.display(), problems.join("\n  ")));
        }
    }
    let unchecked: Vec<&str> = Code::ALL
        .iter()
        .map(|code| code.name())
        .filter(|code| !codes.contains(*code))
        .collect();
    assert!(
        unchecked.is_empty(),
        "codes no fixture report shows: {unchecked:?}"
    );
    assert!(
        failures.is_empty(),
        "reports that break the schema:\n{}",
        failures.join("\n")
    );
}

/// A change to one diagnostic of a report.
type Change = dyn Fn(&mut Value);

#[test]
fn the_schema_refuses_broken_reports() {
    let validator = validator();
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/invalid/misspelt-port-is-not-also-unconnected.toml");
    let good = report_of(&path);
    assert!(violations(&validator, &good).is_empty());
    assert_eq!(good[0]["facts"]["suggestions"], json!(["gen.out"]));

    let broken = |change: &Change| {
        let mut report = good.clone();
        change(&mut report[0]);
        violations(&validator, &report)
    };
    let cases: [(&str, &Change); 7] = [
        ("an unknown fact", &|d| d["facts"]["colour"] = json!("blue")),
        ("a required fact missing", &|d| {
            d["facts"].as_object_mut().unwrap().remove("port-path");
        }),
        ("a fact of the wrong type", &|d| {
            d["facts"]["suggestions"] = json!("gen.out")
        }),
        ("a warning for an error code", &|d| {
            d["severity"] = json!("warning")
        }),
        ("an unknown code", &|d| d["code"] = json!("NoSuchCode")),
        ("half a location", &|d| d["line"] = Value::Null),
        ("no facts", &|d| {
            d.as_object_mut().unwrap().remove("facts");
        }),
    ];
    for (what, change) in cases {
        assert!(!broken(change).is_empty(), "the schema accepts {what}");
    }
}

/// The facts the schema requires of diagnostics with `code`, by code.
fn required_facts(schema: &Value) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut required = std::collections::BTreeMap::new();
    let mut pending = vec![schema];
    while let Some(value) = pending.pop() {
        if let (Some(code), Some(facts)) = (
            value.pointer("/if/properties/code/const"),
            value.pointer("/then/properties/facts/required"),
        ) {
            required.insert(
                code.as_str().unwrap().to_owned(),
                facts
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|fact| fact.as_str().unwrap().to_owned())
                    .collect(),
            );
        }
        match value {
            Value::Object(map) => pending.extend(map.values()),
            Value::Array(items) => pending.extend(items),
            _ => {}
        }
    }
    required
}

#[test]
fn every_diagnostic_but_a_syntax_error_carries_the_facts_of_its_subject() {
    let required = required_facts(&schema());
    let bare: Vec<&str> = Code::ALL
        .iter()
        .map(|code| code.name())
        .filter(|code| required.get(*code).is_none_or(Vec::is_empty))
        .collect();
    assert_eq!(bare, ["BlueprintFormatError"]);
    assert_eq!(
        required["BacktrackingVolumeMountPath"],
        ["streamlet-type", "volume-mount", "path"],
        "the same subject as its siblings: {:?}",
        required["NonAbsoluteVolumeMountPath"]
    );
}

//! The documentation stays in step with the code: every code is in the table of
//! `docs/blueprint.md`, and the JSON Schema knows the keys the parser knows.

use runnel_blueprint::Code;

use crate::support::docs;

#[test]
fn every_code_is_documented_with_its_severity() {
    let text = docs("blueprint.md");
    for code in Code::ALL {
        let row = format!("| `{code}` | {} |", code.severity());
        assert!(
            text.contains(&row),
            "docs/blueprint.md lacks the row starting {row}"
        );
    }
}

#[test]
fn the_json_schema_knows_every_key() {
    let schema: serde_json::Value = serde_json::from_str(&docs("blueprint.schema.json")).unwrap();
    let keys = |value: &serde_json::Value| {
        let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    };
    assert_eq!(
        keys(&schema["properties"]),
        ["name", "streamlets", "topics"]
    );
    assert_eq!(
        keys(&schema["properties"]["streamlets"]["additionalProperties"]["oneOf"][1]["properties"]),
        [
            "allowed-lateness",
            "delivery",
            "idle-after",
            "max-drift",
            "out-of-orderness",
            "record-name",
            "sql",
            "sql-file"
        ]
    );
    assert_eq!(
        keys(&schema["properties"]["streamlets"]["additionalProperties"]["oneOf"][2]["properties"]),
        ["delivery", "interpreter", "python"]
    );
    assert_eq!(
        keys(&schema["definitions"]["topic"]["properties"]),
        [
            "bootstrap-servers",
            "cluster",
            "compatibility",
            "config",
            "consumer-config",
            "consumers",
            "managed",
            "name",
            "partitions",
            "producer-config",
            "producers",
            "replication",
            "schema",
            "schema-file",
        ]
    );
}

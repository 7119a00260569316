//! The human (rustc-style) and JSON reports.

use std::path::Path;

use runnel_blueprint::{render_human, render_json, verify};

use crate::support::descriptor;

const TEXT: &str = r#"name = "sensor-data"

[streamlets]
gen = "generator"
printer = "printer"

[topics.readings]
producers = ["gen.out"]
consumers = ["printer.in", "printer.inn"]
partitions = 0
"#;

#[test]
fn the_human_report_quotes_the_line_and_underlines_the_span() {
    let verification = verify(
        Path::new("blueprints/app.toml"),
        TEXT,
        &descriptor("app.json"),
    );
    let report = render_human(&verification.diagnostics, TEXT);
    let expected = r#"error[PortPathNotFound]: port path 'printer.inn' not found: streamlet 'printer' (type 'printer') has no inlet 'inn'; did you mean 'printer.in'?
  --> blueprints/app.toml:9:28
   |
 9 | consumers = ["printer.in", "printer.inn"]
   |                            ^^^^^^^^^^^^^

warning[SuspiciousPartitions]: topic 'readings' has 0 partitions; a topic needs at least one
  --> blueprints/app.toml:10:14
   |
10 | partitions = 0
   |              ^

verification failed: 1 error, 1 warning
"#;
    assert_eq!(report, expected);
}

#[test]
fn unlocated_problems_have_a_header_only_and_an_empty_report_says_so() {
    let report = render_human(&[], "");
    assert_eq!(report, "verification passed: no problems found\n");

    let descriptor = runnel_blueprint::descriptor::AppDescriptor::default();
    let text = "name = \"x\"\n[streamlets]\na = \"t\"\n";
    let verification = verify(Path::new("b.toml"), text, &descriptor);
    let report = render_human(&verification.diagnostics, text);
    assert!(report.starts_with("error[EmptyStreamletDescriptors]: the descriptor of app '' has no streamlet types\n --> b.toml:2:2\n"), "{report}");
}

#[test]
fn tabs_and_wide_characters_keep_the_underline_aligned() {
    let text = "name = \"x\"\n[streamlets]\n\t\"é\" = \"t\"\n";
    let verification = verify(Path::new("b.toml"), text, &descriptor("app.json"));
    let report = render_human(&verification.diagnostics, text);
    assert!(
        report.contains("3 |     \"é\" = \"t\"\n  |     ^^^\n"),
        "{report}"
    );
    assert!(
        report.contains("--> b.toml:3:2\n"),
        "columns count characters: {report}"
    );
}

#[test]
fn the_json_report_lists_code_severity_message_location_and_facts() {
    let verification = verify(Path::new("app.toml"), TEXT, &descriptor("app.json"));
    let json: serde_json::Value =
        serde_json::from_str(&render_json(&verification.diagnostics)).unwrap();
    assert_eq!(
        json,
        serde_json::json!([
            {
                "code": "PortPathNotFound",
                "severity": "error",
                "message": "port path 'printer.inn' not found: streamlet 'printer' (type 'printer') has no inlet 'inn'; did you mean 'printer.in'?",
                "file": "app.toml",
                "line": 9,
                "column": 28,
                "facts": {
                    "port-path": "printer.inn",
                    "topic": "readings",
                    "role": "consumer",
                    "streamlet": "printer",
                    "port": "inn",
                    "streamlet-type": "printer",
                    "suggestions": ["printer.in"]
                }
            },
            {
                "code": "SuspiciousPartitions",
                "severity": "warning",
                "message": "topic 'readings' has 0 partitions; a topic needs at least one",
                "file": "app.toml",
                "line": 10,
                "column": 14,
                "facts": {"topic": "readings", "partitions": 0}
            }
        ])
    );
}

#[test]
fn the_json_report_of_nothing_is_an_empty_array() {
    assert_eq!(render_json(&[]).trim(), "[]");
}

#[test]
fn carets_under_wide_characters_follow_the_display_width() {
    // A CJK topic name is two columns a character; an emoji before a path shifts the caret
    // of the path after it by two columns, not one: `consumers = [` is 13 columns,
    // `"😀.in"` 7 and `, ` 2.
    let text = "name = \"x\"\n[streamlets]\nprinter = \"printer\"\n\
                [topics.t]\nname = \"読み取り\"\nconsumers = [\"😀.in\", \"printer.inn\"]\n";
    let verification = verify(Path::new("b.toml"), text, &descriptor("app.json"));
    let report = render_human(&verification.diagnostics, text);
    assert!(
        report.contains("5 | name = \"読み取り\"\n  |        ^^^^^^^^^^\n"),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "6 | consumers = [\"😀.in\", \"printer.inn\"]\n  | {}{}\n",
            " ".repeat(22),
            "^".repeat(13)
        )),
        "{report}"
    );
}

#[test]
fn a_secret_setting_is_never_quoted_in_a_report() {
    let text = r#"name = "sensor-data"

[streamlets]
gen = "generator"
printer = "printer"

[topics.readings]
producers = ["gen.out"]
consumers = ["printer.in"]

[topics.readings.producer-config]
"sasl.password" = "canary-hunter2"
"sasl.password" = "canary-hunter3"
"#;
    let verification = verify(Path::new("app.toml"), text, &descriptor("app.json"));
    assert!(verification.has_errors(), "the duplicate key is an error");
    let human = render_human(&verification.diagnostics, text);
    assert!(!human.contains("canary"), "{human}");
    assert!(
        human.contains(r#""sasl.password" = "[redacted]""#),
        "{human}"
    );
    let json = render_json(&verification.diagnostics);
    assert!(!json.contains("canary"), "{json}");
}

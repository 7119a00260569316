//! `runnel verify`.

use crate::support::runnel;

const APP: &str = "descriptors/app.json";

#[test]
fn a_valid_blueprint_passes() {
    let run = runnel(&["verify", "--descriptor", APP, "valid/fan-out.toml"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "verification passed: no problems found\n");
    assert_eq!(run.stderr, "");
}

#[test]
fn errors_are_reported_with_the_source_line_and_exit_1() {
    let run = runnel(&[
        "verify",
        "--descriptor",
        APP,
        "invalid/port-path-not-found.toml",
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.stdout,
        "error[PortPathNotFound]: port path 'printer.inn' not found: streamlet 'printer' (type 'printer') has no inlet 'inn'; did you mean 'printer.in'?
  --> invalid/port-path-not-found.toml:10:28
   |
10 | consumers = [\"printer.in\", \"printer.inn\"]
   |                            ^^^^^^^^^^^^^

verification failed: 1 error
"
    );
}

#[test]
fn warnings_pass_unless_denied() {
    let args = [
        "verify",
        "--descriptor",
        APP,
        "invalid/topic-without-consumers.toml",
    ];
    let run = runnel(&args);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.starts_with("warning[TopicWithoutConsumers]: "),
        "{run:?}"
    );
    assert!(
        run.stdout.ends_with("verification passed with 1 warning\n"),
        "{run:?}"
    );

    let denied = runnel(&[&args[..], &["--deny-warnings"]].concat());
    assert_eq!(denied.code, 1, "{denied:?}");
    assert_eq!(denied.stdout, run.stdout);
}

#[test]
fn the_json_report_is_machine_readable() {
    let run = runnel(&[
        "verify",
        "--descriptor",
        APP,
        "--format",
        "json",
        "invalid/invalid-consumer-port-path.toml",
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    let expected = r#"[
  {
    "code": "InvalidConsumerPortPath",
    "severity": "error",
    "message": "'gen.out' is an outlet of streamlet 'gen' (type 'generator'), so it cannot be a consumer; consumers are inlets",
    "file": "invalid/invalid-consumer-port-path.toml",
    "line": 10,
    "column": 28,
    "facts": {
      "role": "consumer",
      "port-kind": "outlet",
      "streamlet": "gen",
      "streamlet-type": "generator",
      "port": "out",
      "port-path": "gen.out",
      "topic": "readings"
    }
  }
]
"#;
    assert_eq!(run.stdout, expected);
}

#[test]
fn a_descriptor_beside_the_fixture_is_used_as_given() {
    let run = runnel(&[
        "verify",
        "--descriptor",
        "invalid/unused-type-with-bad-parameter.json",
        "invalid/unused-type-with-bad-parameter.toml",
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout.starts_with("error[InvalidConfigParameterKeyName]: streamlet type 'widget' has an invalid parameter key '-x'"),
        "{run:?}"
    );
}

#[test]
fn unreadable_files_are_usage_errors() {
    let run = runnel(&["verify", "--descriptor", APP, "no/such/blueprint.toml"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr
            .starts_with("error: reading blueprint no/such/blueprint.toml: "),
        "{run:?}"
    );

    let run = runnel(&[
        "verify",
        "--descriptor",
        "valid/minimal.toml",
        "valid/minimal.toml",
    ]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.starts_with(
            "error: reading descriptor valid/minimal.toml: invalid app descriptor at line 1"
        ),
        "{run:?}"
    );
}

#[test]
fn bad_arguments_are_usage_errors() {
    assert_eq!(
        runnel(&["verify", "valid/minimal.toml"]).code,
        2,
        "the descriptor is required"
    );
    assert_eq!(
        runnel(&[
            "verify",
            "--descriptor",
            APP,
            "--format",
            "xml",
            "valid/minimal.toml"
        ])
        .code,
        2
    );
    assert_eq!(runnel(&["frobnicate"]).code, 2);
}

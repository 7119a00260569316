use std::time::Duration;

use crate::support::{BLUEPRINT, app, run_to_end, stderr_of};

#[test]
fn an_invalid_parameter_stops_the_run_before_anything_starts() {
    let data = tempfile::tempdir().unwrap();
    let store = data.path().join("log");
    let mut command = app(&["run", BLUEPRINT], &store);
    command.args([
        "--set",
        "generator.count=lots",
        "--set",
        "valid-logger.log-level=loud",
    ]);
    let output = run_to_end(command, Duration::from_secs(30));
    assert_eq!(output.status.code(), Some(1));
    let stderr = stderr_of(&output);
    assert!(
        stderr.contains("streamlet 'generator', parameter 'count': 'lots' is not an integer"),
        "{stderr}"
    );
    assert!(
        stderr.contains("streamlet 'valid-logger', parameter 'log-level': 'loud' does not match"),
        "{stderr}"
    );
    assert!(!store.exists(), "nothing was started, not even the log");
}

#[test]
fn an_invalid_blueprint_is_refused_with_the_report() {
    let data = tempfile::tempdir().unwrap();
    let blueprint = data.path().join("blueprint.toml");
    let text = std::fs::read_to_string(BLUEPRINT)
        .unwrap()
        .replace("\"to-metrics.in\"", "\"to-metrics.inn\"");
    std::fs::write(&blueprint, text).unwrap();
    let output = run_to_end(
        app(
            &["run", blueprint.to_str().unwrap()],
            &data.path().join("log"),
        ),
        Duration::from_secs(30),
    );
    assert_eq!(output.status.code(), Some(1));
    let stderr = stderr_of(&output);
    assert!(stderr.contains("error[PortPathNotFound]"), "{stderr}");
    let line = 1 + std::fs::read_to_string(BLUEPRINT)
        .unwrap()
        .lines()
        .position(|l| l.contains("\"to-metrics.in\""))
        .unwrap();
    assert!(
        stderr.contains(&format!("blueprint.toml:{line}:")),
        "the report points at line {line}: {stderr}"
    );
    assert!(
        stderr.contains("has errors; nothing was started"),
        "{stderr}"
    );
}

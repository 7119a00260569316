//! Walks `tests/fixtures/{valid,invalid}` and reports every mismatch at once.
//!
//! Each `invalid/<case>.toml` has a golden `<case>.expected`: one `Code line:column` per
//! diagnostic (`Code -` when it has no location), in report order. Run with
//! `BLESS=1` to rewrite the golden files from the current output, then review the diff.

use std::collections::BTreeSet;
use std::path::Path;

use runnel_blueprint::{Code, Diagnostic};

use crate::support::{blueprints_in, verify_fixture};

fn golden_lines(diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .map(|d| match &d.location {
            Some(location) => format!("{} {}:{}\n", d.code, location.line, location.column),
            None => format!("{} -\n", d.code),
        })
        .collect()
}

fn check(path: &Path) -> (String, Vec<Diagnostic>) {
    let text = std::fs::read_to_string(path).unwrap();
    let verification = verify_fixture(path, &text);
    assert_eq!(
        verification.blueprint.is_some(),
        !verification.has_errors(),
        "{}: blueprint is Some iff no error",
        path.display()
    );
    (text, verification.diagnostics)
}

#[test]
fn valid_blueprints_have_no_diagnostics() {
    let mut failures = Vec::new();
    let paths = blueprints_in("valid");
    assert!(paths.len() >= 5, "the valid fixtures are missing");
    for path in paths {
        let (_, diagnostics) = check(&path);
        if !diagnostics.is_empty() {
            failures.push(format!(
                "{}:\n{}",
                path.display(),
                golden_lines(&diagnostics)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "valid fixtures with diagnostics:\n{}",
        failures.join("\n")
    );
}

#[test]
fn invalid_blueprints_give_exactly_the_expected_diagnostics() {
    let bless = std::env::var_os("BLESS").is_some();
    let mut failures = Vec::new();
    for path in blueprints_in("invalid") {
        let (_, diagnostics) = check(&path);
        let actual = golden_lines(&diagnostics);
        let expected_path = path.with_extension("expected");
        if bless {
            std::fs::write(&expected_path, &actual).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if expected != actual {
            let messages: Vec<_> = diagnostics.iter().map(ToString::to_string).collect();
            failures.push(format!(
                "{}:\n  expected:\n{}  actual:\n{}  messages:\n    {}",
                path.display(),
                indent(&expected),
                indent(&actual),
                messages.join("\n    ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} fixture mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn indent(lines: &str) -> String {
    lines.lines().map(|line| format!("    {line}\n")).collect()
}

/// Every code has a fixture that produces that code and nothing else.
#[test]
fn every_code_has_a_fixture_of_its_own() {
    let mut covered = BTreeSet::new();
    for path in blueprints_in("invalid") {
        let (_, diagnostics) = check(&path);
        let codes: BTreeSet<Code> = diagnostics.iter().map(|d| d.code).collect();
        if codes.len() == 1 {
            covered.extend(codes);
        }
    }
    let missing: Vec<_> = Code::ALL
        .iter()
        .filter(|code| !covered.contains(code))
        .collect();
    assert!(
        missing.is_empty(),
        "codes without a fixture of their own: {missing:?}"
    );
}

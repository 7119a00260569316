use std::process::Command;

use crate::support::runnel;

/// The runnel crate of this checkout.
const RUNNEL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../runnel");

#[test]
fn a_new_app_builds_and_passes_its_test_as_generated() {
    let directory = tempfile::tempdir().unwrap();
    let project = directory.path().join("hello");
    let created = runnel(&[
        "new",
        "hello",
        "--directory",
        project.to_str().unwrap(),
        "--path",
        RUNNEL,
    ]);
    assert_eq!(created.code, 0, "{}", created.stderr);
    assert!(
        created.stdout.starts_with("created hello in "),
        "{}",
        created.stdout
    );
    let manifest = std::fs::read_to_string(project.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("runnel = { path = \""), "{manifest}");
    // An app depends on runnel alone, for its code and for its tests.
    let table: toml::Table = manifest.parse().unwrap();
    for section in ["dependencies", "dev-dependencies"] {
        let names: Vec<&String> = table[section].as_table().unwrap().keys().collect();
        assert_eq!(names, ["runnel"], "[{section}] of\n{manifest}");
    }

    // The workspace's lock file pins the same versions, so the dependencies built for the
    // workspace are reused and nothing needs the network.
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock"),
        project.join("Cargo.lock"),
    )
    .unwrap();
    let tested = Command::new(env!("CARGO"))
        .args(["test", "--offline", "--quiet"])
        .current_dir(&project)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&tested.stdout);
    assert!(
        tested.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&tested.stderr)
    );
    assert!(stdout.contains("1 passed"), "{stdout}");
    // Its documentation builds, with the runnel crate's.
    let documented = Command::new(env!("CARGO"))
        .args(["doc", "--offline", "--quiet"])
        .current_dir(&project)
        .output()
        .unwrap();
    assert!(
        documented.status.success(),
        "{}",
        String::from_utf8_lossy(&documented.stderr)
    );
    let verified = Command::new(env!("CARGO"))
        .args(["run", "--offline", "--quiet", "--", "verify"])
        .current_dir(&project)
        .output()
        .unwrap();
    assert!(
        verified.status.success(),
        "{}",
        String::from_utf8_lossy(&verified.stderr)
    );

    // The README's first step, before the app ever ran: feed it a name.
    let mut produce = Command::new(env!("CARGO"))
        .args(["run", "--offline", "--quiet", "--", "produce", "names"])
        .current_dir(&project)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut produce.stdin.take().unwrap(), b"{\"name\": \"Ada\"}\n")
        .unwrap();
    let produced = produce.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&produced.stdout);
    assert!(
        produced.status.success() && stdout.starts_with("1 records written to topic 'names'"),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&produced.stderr)
    );
}

#[test]
fn a_new_app_needs_a_valid_name_and_an_empty_directory() {
    let bad = runnel(&["new", "Hello_World"]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("'Hello_World' is not an app name"),
        "{}",
        bad.stderr
    );
    let directory = tempfile::tempdir().unwrap();
    std::fs::write(directory.path().join("taken"), "").unwrap();
    let taken = runnel(&[
        "new",
        "hello",
        "--directory",
        directory.path().to_str().unwrap(),
    ]);
    assert_eq!(taken.code, 2);
    assert!(
        taken.stderr.contains("exists and is not empty"),
        "{}",
        taken.stderr
    );
}

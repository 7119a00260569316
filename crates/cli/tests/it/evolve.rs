//! A generated app whose input type changes, as its author would change it: records written
//! before stay readable (by the streamlet and by `tail`), the reverted type reads the newer
//! ones, and a change that cannot read what is on the topic is refused before anything runs,
//! naming the field.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::runnel;

/// The runnel crate of this checkout.
const RUNNEL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../runnel");

/// `cargo ARGS` in the app's directory, with `input` on standard input.
fn cargo(project: &Path, args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO"))
        .args(args)
        .current_dir(project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// `cargo run -- ARGS`, which must succeed; its standard output.
fn app(project: &Path, args: &[&str], input: &str) -> String {
    let mut all = vec!["run", "--offline", "--quiet", "--"];
    all.extend_from_slice(args);
    let output = cargo(project, &all, input);
    assert!(
        output.status.success(),
        "{args:?}\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Runs the app until `greetings` holds `count` records, then stops it (SIGTERM); `cargo
/// run` replaces itself with the app, so the signal reaches it.
fn run_until_greeted(project: &Path, count: usize) {
    let mut child = Command::new(env!("CARGO"))
        .args([
            "run",
            "--offline",
            "--quiet",
            "--",
            "run",
            "--view",
            "plain",
        ])
        .current_dir(project)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let greeted = greetings(project).len();
        if greeted >= count {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            let output = child.wait_with_output().unwrap();
            panic!(
                "the app exited ({status}) after {greeted} greetings:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        assert!(Instant::now() < deadline, "only {greeted} greetings");
        std::thread::sleep(Duration::from_millis(200));
    }
    let pid = child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(child.wait().unwrap().success());
}

/// The texts in `greetings`, read with `tail` while the app may run.
fn greetings(project: &Path) -> Vec<String> {
    let output = cargo(
        project,
        &[
            "run",
            "--offline",
            "--quiet",
            "--",
            "tail",
            "greetings",
            "--values",
        ],
        "",
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .map(|value| value["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Writes the app's streamlet as generated (`source`) with the `Name` type's fields and the
/// greeting replaced.
fn write_streamlet(project: &Path, source: &str, name_fields: &str, greeting: &str) {
    let path = project.join("src/greet.rs");
    let start = source.find("pub struct Name {").unwrap();
    let end = start + source[start..].find('}').unwrap() + 1;
    let mut changed = format!(
        "{}pub struct Name {{{name_fields}}}{}",
        &source[..start],
        &source[end..]
    );
    let body = changed.find("text: format!(").unwrap();
    let body_end = body + changed[body..].find("),").unwrap() + 2;
    changed.replace_range(body..body_end, &format!("text: {greeting},"));
    std::fs::write(&path, changed).unwrap();
}

/// `verify --against .runnel`, which must fail; what it printed.
fn verify_against_log(project: &Path) -> String {
    let verified = cargo(
        project,
        &[
            "run",
            "--offline",
            "--quiet",
            "--",
            "verify",
            "--against",
            ".runnel",
        ],
        "",
    );
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&verified.stdout),
        String::from_utf8_lossy(&verified.stderr)
    );
    assert!(!verified.status.success(), "{printed}");
    printed
}

fn new_app(directory: &Path) -> PathBuf {
    let project = directory.join("hello");
    let created = runnel(&[
        "new",
        "hello",
        "--directory",
        project.to_str().unwrap(),
        "--path",
        RUNNEL,
    ]);
    assert_eq!(created.code, 0, "{}", created.stderr);
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock"),
        project.join("Cargo.lock"),
    )
    .unwrap();
    project
}

#[test]
fn an_input_type_evolves_and_every_record_stays_readable() {
    let directory = tempfile::tempdir().unwrap();
    let project = new_app(directory.path());
    const ORIGINAL: &str = "\n    pub name: String,\n";
    const ORIGINAL_GREETING: &str = "format!(\"Hello, {name}!\")";
    let generated = std::fs::read_to_string(project.join("src/greet.rs")).unwrap();

    // Version 1: Ada is greeted.
    app(&project, &["produce", "names"], "{\"name\": \"Ada\"}\n");
    run_until_greeted(&project, 1);

    // Version 2 adds a field with a default: the old record reads with it, the new one
    // names its schema.
    write_streamlet(
        &project,
        &generated,
        "\n    pub name: String,\n    #[serde(default)]\n    #[avro(default = \"\\\"\\\"\")]\n    pub title: String,\n",
        "format!(\"Hello, {name}{}!\", name_title)",
    );
    let source = std::fs::read_to_string(project.join("src/greet.rs")).unwrap();
    let source = source.replace(
        "let name = name.name.trim().to_owned();",
        "let name_title = if name.title.is_empty() { String::new() } else { format!(\" the {}\", name.title) };\n        let name = name.name.trim().to_owned();",
    );
    std::fs::write(project.join("src/greet.rs"), source).unwrap();
    app(
        &project,
        &["produce", "names"],
        "{\"name\": \"Grace\", \"title\": \"admiral\"}\n",
    );
    let names = app(&project, &["tail", "names", "--values"], "");
    assert_eq!(
        names.lines().collect::<Vec<_>>(),
        [r#"{"name":"Ada"}"#, r#"{"name":"Grace","title":"admiral"}"#],
        "every record of names, as its own schema wrote it"
    );
    run_until_greeted(&project, 2);
    assert_eq!(
        greetings(&project),
        ["Hello, Ada!", "Hello, Grace the admiral!"]
    );
    let dead = app(&project, &["dead-letters"], "");
    assert!(
        !dead.contains("names"),
        "nothing was dead-lettered:\n{dead}"
    );
    app(
        &project,
        &["produce", "names"],
        "{\"name\": \"Hopper\", \"title\": \"rear admiral\"}\n",
    );

    // Version 3 adds a field without a default: it cannot read either record, and the run
    // is refused before anything runs, naming the field.
    write_streamlet(
        &project,
        &generated,
        "\n    pub name: String,\n    pub age: i64,\n",
        ORIGINAL_GREETING,
    );
    let refused = cargo(&project, &["run", "--offline", "--quiet", "--", "run"], "");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(
        stderr.contains("streamlet 'greet' cannot read topic 'names' through inlet 'in'")
            && stderr.contains("field 'Name.age' is missing from the writer's record 'Name' and has no default in the reader's"),
        "{stderr}"
    );
    // `verify --against` says the same before anything is run, at the inlet's line.
    let report = verify_against_log(&project);
    assert!(
        report.contains("'greet.in' cannot read records on topic 'names' written with its schema version 1: field 'Name.age' is missing")
            && report.contains("blueprint.toml:"),
        "{report}"
    );

    // Version 4 reads names as version 1 did, but adds a field without a default to what it
    // writes: under the topic's rule (BACKWARD, the default) a reader of the new greeting
    // could not read the greetings written before, so the run is refused, naming the rule,
    // the version and the field.
    write_streamlet(
        &project,
        &generated,
        ORIGINAL,
        "format!(\"Hello, {name}!\"), language: \"en\".to_owned()",
    );
    let source = std::fs::read_to_string(project.join("src/greet.rs")).unwrap();
    let source = source.replace(
        "pub struct Greeting {\n    pub text: String,\n}",
        "pub struct Greeting {\n    pub text: String,\n    pub language: String,\n}",
    );
    std::fs::write(project.join("src/greet.rs"), source).unwrap();
    let refused = cargo(&project, &["run", "--offline", "--quiet", "--", "run"], "");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(
        stderr.contains("streamlet 'greet' cannot write topic 'greetings' through outlet 'out' with schema 'Greeting': it breaks BACKWARD compatibility with the topic's schema version 1: a reader of the new schema could not read records written with version 1, since field 'Greeting.language' is missing"),
        "{stderr}"
    );
    let report = verify_against_log(&project);
    assert!(
        report.contains("'greet.out' cannot write topic 'greetings' with schema 'Greeting': it breaks BACKWARD compatibility with the topic's schema version 1"),
        "{report}"
    );

    // Back to version 1: it reads the record version 2 wrote and left unread, without its
    // title.
    write_streamlet(&project, &generated, ORIGINAL, ORIGINAL_GREETING);
    run_until_greeted(&project, 3);
    assert_eq!(
        greetings(&project),
        ["Hello, Ada!", "Hello, Grace the admiral!", "Hello, Hopper!"]
    );
    let names = app(&project, &["tail", "names", "--values"], "");
    assert_eq!(names.lines().count(), 3, "{names}");
}

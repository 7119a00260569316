use std::path::Path;
use std::process::Command;

use runnel_application::{ApplicationDocument, Configuration};

use crate::support::{BLUEPRINT, run_to_end, stderr_of, stdout_of};

const REFERENCE: &str = "registry.example.com/runnel/sensor-data:0.1.0";

fn build(output: &Path, extra: &[&str]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sensor-data"));
    command
        .args(["build", BLUEPRINT, "--image", REFERENCE, "--output"])
        .arg(output)
        .args(extra);
    run_to_end(command, std::time::Duration::from_secs(300))
}

fn tool(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {program} failed: {e} (scripts/test installs it)"));
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `build` writes an image skopeo reads, whose root filesystem runs `describe` with nothing
/// from the host and prints what the binary prints on the host, and an Application whose
/// blueprint verifies and which carries the configuration given to `build`.
#[test]
fn build_writes_an_image_that_runs_describe_from_its_own_root_and_the_application() {
    let dir = tempfile::tempdir().unwrap();
    let output = build(
        dir.path(),
        &[
            "--set",
            "generator.records-per-second=20",
            "--kafka",
            "kafka:9092",
        ],
    );
    assert!(output.status.success(), "{}", stderr_of(&output));
    let printed = stdout_of(&output);
    assert!(printed.contains("skopeo copy oci:"), "{printed}");

    let layout = dir.path().join("image");
    let inspected: serde_json::Value = serde_json::from_str(&tool(
        "skopeo",
        &["inspect", &format!("oci:{}:0.1.0", layout.display())],
    ))
    .unwrap();
    assert_eq!(inspected["Architecture"], "amd64");
    assert_eq!(
        inspected["Labels"]["org.opencontainers.image.version"],
        "0.1.0"
    );
    let digest = inspected["Digest"].as_str().unwrap();
    assert!(
        printed.contains(digest),
        "the build names the digest skopeo sees: {printed}"
    );
    // Naming the reference finds the image only if the archive is tagged with it.
    let archive: serde_json::Value = serde_json::from_str(&tool(
        "skopeo",
        &[
            "inspect",
            &format!(
                "docker-archive:{}:{REFERENCE}",
                dir.path().join("sensor-data-0.1.0.docker.tar").display()
            ),
        ],
    ))
    .unwrap();
    assert_eq!(archive["Layers"].as_array().unwrap().len(), 2, "{archive}");

    let root = dir.path().join("rootfs");
    let config = runnel_image::unpack(&layout, Some("0.1.0"), &root).unwrap();
    assert_eq!(config.config.entrypoint, ["/app/sensor-data"]);
    assert!(
        run("id", &["-u"]).trim() == "0",
        "this test runs the image with chroot, which needs root"
    );
    let chroot = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("chroot"))
        .find(|p| p.is_file())
        .unwrap();
    let mut command = Command::new(&chroot);
    command
        .env_clear()
        .arg(format!("--userspec={}", config.config.user))
        .arg(&root)
        .args(["/app/sensor-data", "describe"]);
    for pair in &config.config.env {
        let (key, value) = pair.split_once('=').unwrap();
        command.env(key, value);
    }
    let inside = command.output().unwrap();
    assert!(
        inside.status.success(),
        "{}",
        String::from_utf8_lossy(&inside.stderr)
    );
    // The default command (entry point and cmd), as the image's user: it runs the app on the
    // embedded log in the one directory that user may write.
    assert_eq!(
        config.config.cmd,
        [
            "run",
            "/app/blueprint.toml",
            "--data-dir",
            runnel_image::DATA_DIRECTORY
        ]
    );
    let mut default = Command::new(&chroot);
    default
        .env_clear()
        .arg(format!("--userspec={}", config.config.user))
        .arg(&root)
        .args(&config.config.entrypoint)
        .args(&config.config.cmd)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    for pair in &config.config.env {
        let (key, value) = pair.split_once('=').unwrap();
        default.env(key, value);
    }
    let mut running = default.spawn().unwrap();
    let data = root.join("data");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let wrote = loop {
        let topics = std::fs::read_dir(data.join("topics"))
            .map(|entries| entries.count())
            .unwrap_or(0);
        if topics > 0 || std::time::Instant::now() > deadline {
            break topics > 0;
        }
        if running.try_wait().unwrap().is_some() {
            break false;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let exited = running.try_wait().unwrap();
    let _ = running.kill();
    let failure = running.wait_with_output().unwrap();
    assert!(
        wrote && exited.is_none(),
        "the default command did not run: {exited:?}\n{}",
        String::from_utf8_lossy(&failure.stderr)
    );
    use std::os::unix::fs::MetadataExt as _;
    let owner = std::fs::metadata(&data).unwrap().uid();
    assert_eq!(
        owner,
        runnel_image::USER_ID,
        "the data directory is the user's"
    );

    let outside = Command::new(env!("CARGO_BIN_EXE_sensor-data"))
        .arg("describe")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&inside.stdout),
        String::from_utf8_lossy(&outside.stdout)
    );

    let yaml = std::fs::read_to_string(dir.path().join("sensor-data.yaml")).unwrap();
    let document = ApplicationDocument::from_yaml(Path::new("sensor-data.yaml"), &yaml).unwrap();
    assert_eq!(document.metadata.name, "sensor-data");
    assert_eq!(document.spec.image, REFERENCE);
    assert_eq!(
        document.spec.kafka.bootstrap_servers.as_deref(),
        Some("kafka:9092")
    );
    let blueprint = document.spec.verify("sensor-data").unwrap();
    assert_eq!(blueprint.streamlets.len(), 5);
    let mut expected = Configuration::default();
    expected.assign("generator.records-per-second=20").unwrap();
    assert_eq!(document.spec.defaults, expected);
    let topics: Vec<(&str, i32)> = document
        .spec
        .topics
        .iter()
        .map(|t| (t.name.as_str(), t.partitions))
        .collect();
    assert_eq!(
        topics,
        [
            ("sensor-data", 2),
            ("metrics", 2),
            ("valid-metrics", 1),
            ("invalid-metrics", 1)
        ]
    );
}

/// A bad value or a secret is refused before anything is written, each named.
#[test]
fn build_refuses_bad_configuration_and_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let output = build(
        dir.path(),
        &[
            "--set",
            "generator.count=many",
            "--set",
            "kafka.sasl.password=hunter2",
        ],
    );
    assert!(!output.status.success());
    let errors = stderr_of(&output);
    assert!(
        errors.contains("streamlets.generator.count: 'many' is not an integer"),
        "{errors}"
    );
    assert!(
        errors.contains("kafka.sasl.password: secret values do not belong"),
        "{errors}"
    );
    assert!(!errors.contains("hunter2"), "{errors}");
    assert!(!dir.path().join("sensor-data.yaml").exists());
}

fn run(program: &str, args: &[&str]) -> String {
    tool(program, args)
}

/// A Python streamlet importing a package the host has but the image would not get
/// (numpy, which `scripts/test` installs for another example, missing from the
/// requirements) fails the build, naming the streamlet, the module and where to list it,
/// before any image is written.
#[test]
fn build_refuses_python_streamlets_that_need_packages_the_image_lacks() {
    let project = tempfile::tempdir().unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("python");
    for file in ["blueprint.toml", "sensor_streamlets.py"] {
        std::fs::copy(source.join(file), project.path().join(file)).unwrap();
    }
    let module = project.path().join("sensor_streamlets.py");
    let text = std::fs::read_to_string(&module).unwrap();
    std::fs::write(
        &module,
        text.replace("import runnel\n", "import numpy\nimport runnel\n"),
    )
    .unwrap();
    let output = project.path().join("build");
    let mut command = Command::new(env!("CARGO_BIN_EXE_sensor-data"));
    command
        .arg("build")
        .arg(project.path().join("blueprint.toml"))
        .arg("--output")
        .arg(&output);
    let built = run_to_end(command, std::time::Duration::from_secs(300));
    assert!(!built.status.success());
    let errors = stderr_of(&built);
    assert!(
        errors.contains(
            "Python streamlet 'py-metrics' does not load with only the packages the image gets"
        ) && errors.contains("No module named 'numpy'")
            && errors.contains("a requirements.txt beside the blueprint (there is none)"),
        "{errors}"
    );
    assert!(!output.join("image").exists());
}

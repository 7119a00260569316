use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use runnel_image::{ImageSpec, linked_libraries, unpack};

const REFERENCE: &str = "registry.example.com/runnel/image-test:1.0";

/// Runs `program` with `args`, failing the test with its output when it fails.
fn run(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|error| {
            panic!("running {program} failed: {error} (scripts/test installs it)")
        });
    assert!(
        output.status.success(),
        "{program} {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn canonical(paths: impl IntoIterator<Item = PathBuf>) -> BTreeSet<PathBuf> {
    paths
        .into_iter()
        .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
        .collect()
}

/// The libraries the ELF headers name, found as the loader finds them, are the ones `ldd`
/// (which asks the loader itself) lists.
#[test]
fn the_libraries_found_are_the_ones_the_loader_loads() {
    let executable = std::env::current_exe().unwrap();
    let linked = linked_libraries(&executable).unwrap();
    let ldd = run("ldd", &[executable.to_str().unwrap()]);
    let from_ldd: Vec<PathBuf> = ldd
        .lines()
        .filter_map(|line| line.split("=>").nth(1))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(PathBuf::from)
        .collect();
    assert!(!from_ldd.is_empty(), "{ldd}");
    assert_eq!(canonical(linked.libraries.clone()), canonical(from_ldd));
    let interpreter = linked.interpreter.unwrap();
    assert!(ldd.contains(interpreter.to_str().unwrap()), "{ldd}");
}

/// The image of this test binary: skopeo reads the layout and both archives, umoci and
/// `unpack` unpack it, and the binary runs from the unpacked root with nothing from the
/// host (chroot, empty environment, the image's user).
#[test]
fn the_image_is_valid_and_runs_from_its_own_root() {
    let executable = std::env::current_exe().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let spec = ImageSpec::new(REFERENCE, &executable);
    let image = spec.build().unwrap();
    let layout = dir.path().join("layout");
    image.write_layout(&layout).unwrap();
    image
        .write_docker_archive(&dir.path().join("docker.tar"))
        .unwrap();
    image
        .write_oci_archive(&dir.path().join("oci.tar"))
        .unwrap();

    // The same inputs give the same image.
    let again = spec.build().unwrap();
    assert_eq!(again.manifest_digest, image.manifest_digest);

    let inspected: serde_json::Value = serde_json::from_str(&run(
        "skopeo",
        &["inspect", &format!("oci:{}:1.0", layout.display())],
    ))
    .unwrap();
    assert_eq!(inspected["Digest"], image.manifest_digest.to_string());
    assert_eq!(inspected["Architecture"], "amd64");
    assert_eq!(inspected["Os"], "linux");
    assert_eq!(inspected["Layers"].as_array().unwrap().len(), 2);
    for source in [
        format!("docker-archive:{}", dir.path().join("docker.tar").display()),
        format!("oci-archive:{}", dir.path().join("oci.tar").display()),
    ] {
        let config: serde_json::Value =
            serde_json::from_str(&run("skopeo", &["inspect", "--config", &source])).unwrap();
        assert_eq!(config["config"]["User"], "10001:10001", "{source}");
        assert!(
            config["config"]["Entrypoint"][0]
                .as_str()
                .unwrap()
                .starts_with("/app/it-"),
            "{source}: {config}"
        );
    }

    let bundle = dir.path().join("bundle");
    run(
        "umoci",
        &[
            "unpack",
            "--image",
            &format!("{}:1.0", layout.display()),
            bundle.to_str().unwrap(),
        ],
    );
    let ours = dir.path().join("rootfs");
    let config = unpack(&layout, Some("1.0"), &ours).unwrap();
    for root in [bundle.join("rootfs"), ours] {
        for file in [
            "etc/passwd",
            "etc/group",
            "etc/ssl/certs/ca-certificates.crt",
        ] {
            assert!(root.join(file).is_file(), "{} lacks {file}", root.display());
        }
        let passwd = std::fs::read_to_string(root.join("etc/passwd")).unwrap();
        assert!(passwd.contains("runnel:x:10001:10001"), "{passwd}");
        let listed = run_in_root(&root, &config.config.env, &config.config.entrypoint[0]);
        assert!(
            listed.contains("image::the_image_is_valid_and_runs_from_its_own_root: test"),
            "{listed}"
        );
    }
}

/// Runs `entrypoint --list` in `root` as the image's user with only the image's
/// environment.
fn run_in_root(root: &Path, env: &[String], entrypoint: &str) -> String {
    assert!(
        run("id", &["-u"]).trim() == "0",
        "this test runs the image with chroot, which needs root"
    );
    // Found on this process's PATH: the command's own environment is empty.
    let chroot = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|directory| directory.join("chroot"))
        .find(|path| path.is_file())
        .expect("chroot is on the PATH");
    let mut command = Command::new(chroot);
    command
        .env_clear()
        .arg("--userspec=10001:10001")
        .arg(root)
        .args([entrypoint, "--list"]);
    for pair in env {
        let (key, value) = pair.split_once('=').unwrap();
        command.env(key, value);
    }
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "the binary did not run in {}:\n{}",
        root.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

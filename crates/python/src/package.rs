//! The `runnel` Python package (`python/runnel` in the repository), built into the host so
//! the worker always speaks the host's protocol version: written out once to a directory
//! named by its contents and put first on the worker's `PYTHONPATH`.

use std::path::{Path, PathBuf};

/// The package's modules, by file name.
const MODULES: &[(&str, &str)] = &[
    (
        "__init__.py",
        include_str!("../../../python/runnel/__init__.py"),
    ),
    (
        "__main__.py",
        include_str!("../../../python/runnel/__main__.py"),
    ),
    (
        "arrow_examples.py",
        include_str!("../../../python/runnel/arrow_examples.py"),
    ),
    (
        "definition.py",
        include_str!("../../../python/runnel/definition.py"),
    ),
    (
        "examples.py",
        include_str!("../../../python/runnel/examples.py"),
    ),
    (
        "protocol.py",
        include_str!("../../../python/runnel/protocol.py"),
    ),
    (
        "runner.py",
        include_str!("../../../python/runnel/runner.py"),
    ),
    (
        "schema.py",
        include_str!("../../../python/runnel/schema.py"),
    ),
    (
        "testkit.py",
        include_str!("../../../python/runnel/testkit.py"),
    ),
    (
        "worker.py",
        include_str!("../../../python/runnel/worker.py"),
    ),
];

/// The directory holding the package as `runnel/` (under `root`), written the first time.
///
/// # Errors
///
/// When the directory cannot be written.
pub(crate) fn materialize(root: &Path) -> std::io::Result<PathBuf> {
    let directory = root.join(format!("runnel-python-{:016x}", fingerprint()));
    if directory.join("runnel").join("worker.py").exists() {
        return Ok(directory);
    }
    // Written beside, then renamed into place: a concurrent start sees all of it or none.
    // Named by process and by call: instances starting together in one process stage
    // apart too.
    static STAGINGS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let staging = root.join(format!(
        "runnel-python-{:016x}.{}.{}",
        fingerprint(),
        std::process::id(),
        STAGINGS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let package = staging.join("runnel");
    std::fs::create_dir_all(&package)?;
    for (name, source) in MODULES {
        std::fs::write(package.join(name), source)?;
    }
    match std::fs::rename(&staging, &directory) {
        Ok(()) => Ok(directory),
        // Another process got there first: its copy is the same.
        Err(_) if directory.join("runnel").join("worker.py").exists() => {
            let _ = std::fs::remove_dir_all(&staging);
            Ok(directory)
        }
        Err(error) => Err(error),
    }
}

/// FNV-1a of every module's name and source.
fn fingerprint() -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (name, source) in MODULES {
        for byte in name.bytes().chain([0]).chain(source.bytes()) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_package_is_written_whole_when_many_start_at_once() {
        let root = std::env::temp_dir().join(format!("runnel-package-race-{}", std::process::id()));
        let written: Vec<PathBuf> = std::thread::scope(|scope| {
            let writers: Vec<_> = (0..8).map(|_| scope.spawn(|| materialize(&root))).collect();
            writers
                .into_iter()
                .map(|writer| writer.join().unwrap().unwrap())
                .collect()
        });
        for directory in &written {
            for (name, source) in MODULES {
                assert_eq!(
                    &std::fs::read_to_string(directory.join("runnel").join(name)).unwrap(),
                    source
                );
            }
        }
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn every_module_of_the_package_is_built_in() {
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/runnel");
        let mut on_disk: Vec<String> = std::fs::read_dir(source)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".py"))
            .collect();
        on_disk.sort();
        let mut built_in: Vec<String> =
            MODULES.iter().map(|(name, _)| (*name).to_owned()).collect();
        built_in.sort();
        assert_eq!(built_in, on_disk);
    }

    #[test]
    fn the_package_is_written_once_by_its_contents() {
        let root = std::env::temp_dir().join(format!("runnel-package-test-{}", std::process::id()));
        let first = materialize(&root).unwrap();
        let again = materialize(&root).unwrap();
        assert_eq!(first, again);
        let worker = std::fs::read_to_string(first.join("runnel/worker.py")).unwrap();
        assert!(worker.contains("def serve("));
        std::fs::remove_dir_all(root).unwrap();
    }
}

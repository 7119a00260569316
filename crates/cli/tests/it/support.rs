//! Runs the built `runnel` binary from the blueprint crate's fixture directory, so that paths
//! in reports are short and stable.

use std::path::PathBuf;
use std::process::Command;

/// What a run printed and how it exited.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// `crates/blueprint/tests/fixtures`.
pub(crate) fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../blueprint/tests/fixtures")
}

/// Runs `runnel` with `args`, in the fixtures directory.
pub(crate) fn runnel(args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_runnel"))
        .args(args)
        .current_dir(fixtures())
        .output()
        .expect("runnel runs");
    Run {
        code: output.status.code().expect("exited normally"),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

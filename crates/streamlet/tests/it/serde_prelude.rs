//! The prelude's `Serialize`/`Deserialize` derives in a crate that does not depend on
//! `serde` itself: they fail to compile as is, and compile with the attribute the prelude's
//! documentation gives. Checked by building a scratch crate with cargo, so ignored by
//! default; run with `cargo test -p runnel-streamlet --test it serde_prelude -- --ignored`.

use std::path::{Path, PathBuf};
use std::process::Command;

const WITHOUT: &str = r#"
use runnel_streamlet::prelude::*;

#[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)]
pub struct Reading {
    pub celsius: f64,
}
"#;

const WITH: &str = r#"
use runnel_streamlet::prelude::*;

#[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)]
#[serde(crate = "runnel_streamlet::prelude::serde")]
pub struct Reading {
    pub celsius: f64,
}

pub const IN: Inlet<Reading> = Inlet::new("in");
"#;

/// The target directory the tests were built in (`.../target/debug/deps/it-...`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    exe.ancestors()
        .nth(3)
        .expect("the test binary is in target/<profile>/deps")
        .to_path_buf()
}

/// `cargo check` of a crate with `lib` as its source and `runnel-streamlet` as its only
/// dependency; returns whether it compiled and what cargo said.
fn check(dir: &Path, lib: &str) -> (bool, String) {
    let streamlet = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::create_dir_all(dir.join("src")).expect("a scratch directory");
    let manifest = format!(
        "[package]\nname = \"serde-prelude-check\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
         publish = false\n\n[dependencies]\nrunnel-streamlet = {{ path = {:?} }}\n\n[workspace]\n",
        streamlet
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).expect("a manifest");
    std::fs::copy(streamlet.join("../../Cargo.lock"), dir.join("Cargo.lock"))
        .expect("the workspace lock file");
    std::fs::write(dir.join("src/lib.rs"), lib).expect("a source file");
    let output = Command::new(env!("CARGO"))
        .args(["check", "--offline", "--quiet", "--lib"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .output()
        .expect("cargo runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
#[ignore = "builds a scratch crate with cargo (a few minutes the first time)"]
fn the_prelude_derives_need_serde_or_the_crate_attribute() {
    let dir = target_dir().join("serde-prelude-check");
    let (compiled, said) = check(&dir, WITHOUT);
    assert!(!compiled, "compiled without serde");
    assert!(said.contains("can't find crate for `serde`"), "{said}");
    let (compiled, said) = check(&dir, WITH);
    assert!(compiled, "{said}");
}

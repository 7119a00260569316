use std::path::Path;
use std::process::Command;

pub(crate) use runnel_app_test::{
    Running, decode, open, read_topic, read_values, run_to_end, stderr_of, stdout_of,
};

pub(crate) const BLUEPRINT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/blueprint.toml");

/// The app binary with `args`, its data in `data_dir`, plain output and quiet loggers.
pub(crate) fn app(args: &[&str], data_dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sensor-data"));
    command
        .args(args)
        .arg("--data-dir")
        .arg(data_dir)
        .args([
            "--view",
            "plain",
            "--status-every",
            "1s",
            "--set",
            "valid-logger.log-every=1000",
        ])
        .args(["--set", "invalid-logger.log-every=1000"])
        .env("RUST_LOG", "info");
    command
}

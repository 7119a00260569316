use std::process::Command;
use std::time::Duration;

use crate::support::{BLUEPRINT, Running, app};

#[test]
fn sigterm_drains_commits_and_exits_zero() {
    let data = tempfile::tempdir().unwrap();
    let mut running = Running::start(app(&["run", BLUEPRINT], data.path()));
    running.wait_for("streamlet=valid-logger", Duration::from_secs(30));
    let pid = running.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = running.child.wait().unwrap();
    assert!(status.success(), "exit status {status}");
}

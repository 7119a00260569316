//! The Python worker processes of a running app (`python -m runnel.worker module:attribute`,
//! children of the app's process), found in `/proc` and killed with -9 as a crash would.

use std::time::Duration;

use crate::wait_until;

/// What a Python worker's command line contains.
const WORKER: &str = "runnel.worker";

/// The Python worker processes of the app whose process is `app` (its children), with their
/// command lines.
pub fn python_workers(app: u32) -> Vec<(u32, String)> {
    let mut workers = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return workers;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The parent is the second field after the command's closing parenthesis.
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|parent| parent.parse::<u32>().ok());
        let command = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " "))
            .unwrap_or_default();
        if parent == Some(app) && command.contains(WORKER) {
            workers.push((pid, command));
        }
    }
    workers
}

/// Kills (-9) the Python workers of the app `app` whose command line names `streamlet`
/// (its `module:attribute`, or part of it), waiting up to 30 seconds for one to run.
///
/// # Panics
///
/// When none runs within 30 seconds, or `kill` fails.
pub fn kill_python_worker(app: u32, streamlet: &str) {
    wait_until(Duration::from_secs(30), "the Python worker runs", || {
        kill_python_worker_if_running(app, streamlet) > 0
    });
}

/// Kills (-9) the Python workers of the app `app` whose command line names `streamlet`,
/// if any runs now (a streamlet whose input ended has none); returns how many.
///
/// # Panics
///
/// When `kill` fails.
pub fn kill_python_worker_if_running(app: u32, streamlet: &str) -> usize {
    let found: Vec<(u32, String)> = python_workers(app)
        .into_iter()
        .filter(|(_, command)| command.contains(streamlet))
        .collect();
    for (pid, _) in &found {
        let killed = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap();
        // A worker that exited between the look and the kill is gone all the same.
        assert!(
            killed.success() || !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "kill -9 {pid}"
        );
    }
    found.len()
}

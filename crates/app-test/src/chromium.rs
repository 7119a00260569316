//! Headless Chromium for tests of the web view: render a page after its scripts ran, and
//! read attributes out of the DOM.

use std::path::Path;
use std::process::Command;

/// Chromium as the machine's probe and `scripts/test` install it: headless, no sandbox
/// (tests run as root), no background networking (the network is closed), a profile of its
/// own in `profile`.
pub fn chromium(profile: &Path, args: &[&str]) -> Command {
    let mut command = Command::new("chromium");
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
        ])
        .args([
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args);
    command
}

/// The page's DOM after its scripts ran for a few (virtual) seconds.
///
/// # Panics
///
/// When Chromium cannot be started.
pub fn rendered(profile: &Path, url: &str) -> String {
    let output = chromium(profile, &["--virtual-time-budget=4000", "--dump-dom", url])
        .stderr(std::process::Stdio::null())
        .output()
        .expect("chromium runs; scripts/test installs it (apt-get install chromium)");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Every value of `attribute` in the DOM, in order.
pub fn attribute_values(dom: &str, attribute: &str) -> Vec<String> {
    let marker = format!("{attribute}=\"");
    dom.split(&marker)
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect()
}

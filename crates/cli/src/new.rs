//! `runnel new NAME`: a working app to start from: one streamlet with its test, the app's
//! `main`, a blueprint and a README, depending on Runnel by path or git.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use crate::Outcome;
use crate::args::NewArgs;

/// The files of a new app: path inside the project, template.
const FILES: [(&str, &str); 5] = [
    (
        "Cargo.toml",
        include_str!("../templates/Cargo.toml.template"),
    ),
    ("src/main.rs", include_str!("../templates/main.rs.template")),
    (
        "src/greet.rs",
        include_str!("../templates/greet.rs.template"),
    ),
    (
        "blueprint.toml",
        include_str!("../templates/blueprint.toml.template"),
    ),
    ("README.md", include_str!("../templates/README.md.template")),
];

/// The runnel crate of the checkout this binary was built from.
const BUILT_FROM: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../runnel");

/// Where Runnel is published; an app can depend on it by git until it is on crates.io.
const REPOSITORY: &str = "https://github.com/runnel-dev/runnel";

pub(crate) fn run(args: &NewArgs, out: &mut dyn std::io::Write) -> anyhow::Result<Outcome> {
    let name = &args.name;
    check_name(name)?;
    let directory = args
        .directory
        .clone()
        .unwrap_or_else(|| PathBuf::from(name));
    if directory.exists() && std::fs::read_dir(&directory)?.next().is_some() {
        bail!("{} exists and is not empty", directory.display());
    }
    let runnel = dependency(args)?;
    for (file, template) in FILES {
        let path = directory.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let text = template
            .replace("__APP__", name)
            .replace("__RUNNEL__", &runnel);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    writeln!(
        out,
        "created {name} in {}\n\n  cd {}\n  cargo test        # the streamlet's test\n  cargo run -- run  # the app, on the embedded log",
        directory.display(),
        directory.display()
    )?;
    Ok(Outcome::Passed)
}

/// Where the `runnel` dependency comes from: `path = "..."` or `git = "..."`, inside its braces.
fn dependency(args: &NewArgs) -> anyhow::Result<String> {
    if let Some(git) = &args.git {
        return Ok(format!("git = \"{git}\""));
    }
    let path = match &args.path {
        Some(path) => path.clone(),
        None if Path::new(BUILT_FROM).join("Cargo.toml").is_file() => PathBuf::from(BUILT_FROM),
        None => {
            return Ok(format!("git = \"{REPOSITORY}\""));
        }
    };
    let path = path
        .canonicalize()
        .with_context(|| format!("finding the runnel crate at {}", path.display()))?;
    if !path.join("Cargo.toml").is_file() {
        bail!(
            "{} holds no Cargo.toml; --path names the runnel crate's directory (crates/runnel of a checkout)",
            path.display()
        );
    }
    Ok(format!("path = \"{}\"", path.display()))
}

/// An app name: a cargo package name that is also a DNS label, as blueprint names are.
fn check_name(name: &str) -> anyhow::Result<()> {
    let valid = name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.ends_with('-')
        && name.len() <= 63;
    if !valid {
        bail!(
            "'{name}' is not an app name: use lowercase ASCII letters, digits and '-', starting with a letter (at most 63)"
        );
    }
    Ok(())
}

//! What `build` puts in an image for the app's Python streamlets, so that the image runs them
//! with nothing installed on the node: the interpreter the blueprint names, with its
//! standard library; the shared libraries the interpreter and every extension module link
//! (found by reading their ELF headers, as the app's own are); the packages of a
//! requirements file, installed for that interpreter with `pip install --target` (with the
//! `fastavro` the worker needs); and the files of the blueprint's directory, where the
//! streamlets' modules are imported from.
//!
//! In the image the interpreter is [`IMAGE_INTERPRETER`], its standard library in
//! `/usr/local/lib/pythonX.Y` where Python looks for it, the packages in the `site-packages`
//! directory that interpreter's `site` module adds there, and the blueprint directory's files
//! in `/app`. The image's environment names the interpreter (`RUNNEL_PYTHON`, which wins over
//! the blueprint's `interpreter`) and puts `/app` on `PYTHONPATH`, because a pod reads its
//! blueprint from a ConfigMap elsewhere.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use runnel_blueprint::Blueprint;

use crate::AppError;
use crate::declared::python_command;

/// The top-level entries of a standard library left out of images: tests, GUI and IDE
/// modules, the bundled pip, the build configuration, and installed packages.
const LEFT_OUT_OF_STDLIB: [&str; 8] = [
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "ensurepip",
    "site-packages",
    "dist-packages",
    "lib2to3",
];

/// The most a blueprint's directory may hold for the image (it is copied whole).
const MAX_BLUEPRINT_DIRECTORY: u64 = 256 << 20;

/// Visits each file of the tree at `from` that the image takes, in name order, with its
/// metadata and its path under `to`, passing by `__pycache__`, what `skip` (given a path
/// and whether it is a directory) leaves out, linked directories (which could loop) and
/// dangling links. `visit` says whether to go on; so does the result.
fn walk_tree(
    from: &Path,
    to: &str,
    skip: &dyn Fn(&Path, bool) -> bool,
    visit: &mut dyn FnMut(&Path, &std::fs::Metadata, String) -> Result<bool, AppError>,
) -> Result<bool, AppError> {
    let mut entries: Vec<_> = std::fs::read_dir(from)
        .map_err(|source| read_error(from, source))?
        .flatten()
        .map(|entry| entry.path())
        .collect();
    entries.sort();
    for path in entries {
        let name = file_name(&path);
        let Ok(metadata) = std::fs::metadata(&path) else {
            continue; // a dangling link
        };
        let is_directory = metadata.is_dir();
        if name == "__pycache__" || skip(&path, is_directory) {
            continue;
        }
        let target = format!("{to}/{name}");
        let go_on = if is_directory {
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
                continue; // a linked directory could loop
            }
            walk_tree(&path, &target, skip, visit)?
        } else if metadata.is_file() {
            visit(&path, &metadata, target)?
        } else {
            true
        };
        if !go_on {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The bytes of the files [`PythonFiles::add_tree`] would take from `from` (with `skip`),
/// read from their metadata, counting no further once past `limit`.
fn tree_bytes(from: &Path, skip: &dyn Fn(&Path, bool) -> bool, limit: u64) -> u64 {
    let mut total = 0;
    let _ = walk_tree(from, "", skip, &mut |_, metadata, _| {
        total += metadata.len();
        Ok(total <= limit)
    });
    total
}

/// Where the image's interpreter is.
pub(crate) const IMAGE_INTERPRETER: &str = "/usr/local/bin/python3";

/// The environment variable that names the interpreter of every Python streamlet, over the
/// blueprint's `interpreter`: set in images to [`IMAGE_INTERPRETER`].
pub(crate) const INTERPRETER_VARIABLE: &str = "RUNNEL_PYTHON";

/// The requirement of the `runnel` package the host brings (its `pyproject.toml`).
const WORKER_REQUIREMENT: &str = "fastavro>=1.9";

/// What the interpreter says of itself (`QUERY`).
struct Interpreter {
    executable: PathBuf,
    version: String,
    stdlib: PathBuf,
    dynload: Option<PathBuf>,
    site: String,
    /// The name byte code files carry (`cpython-311`).
    cache_tag: String,
}

/// Compiles the sources listed on stdin (JSON pairs of a source and its path in the image)
/// into `<sys.argv[1]>/<index>.pyc`.
const COMPILE: &str = r#"
import json, os, py_compile, sys
mode = py_compile.PycInvalidationMode.UNCHECKED_HASH
for index, (source, image) in enumerate(json.load(sys.stdin)):
    try:
        py_compile.compile(source, cfile=os.path.join(sys.argv[1], "%d.pyc" % index),
                           dfile=image, doraise=True, invalidation_mode=mode)
    except (py_compile.PyCompileError, UnicodeDecodeError, ValueError):
        pass
"#;

/// Asks an interpreter where it is and where its image copy's packages would go
/// (`sys.argv[1]` is the image prefix).
const QUERY: &str = r#"
import json, os, site, sys, sysconfig
dynload = [p for p in sys.path if os.path.basename(p) == "lib-dynload"]
print(json.dumps({
    "executable": os.path.realpath(sys.executable),
    "version": "%d.%d" % sys.version_info[:2],
    "stdlib": sysconfig.get_path("stdlib"),
    "dynload": dynload[0] if dynload else None,
    "site": site.getsitepackages([sys.argv[1]])[0],
    "cache_tag": sys.implementation.cache_tag,
}))
"#;

/// The Python part of an image: files for the app layer, libraries for the system layer,
/// and what to say about it.
#[derive(Debug, Default)]
pub(crate) struct PythonFiles {
    /// Image path, content, mode.
    pub(crate) files: Vec<(String, Vec<u8>, u32)>,
    /// Host paths of the shared libraries the interpreter and its extension modules link.
    pub(crate) libraries: Vec<PathBuf>,
    /// Lines for the build's summary.
    pub(crate) summary: Vec<String>,
    /// The Python sources among `files`: host path and image path.
    sources: Vec<(PathBuf, String)>,
}

impl PythonFiles {
    /// Adds the byte code of every Python source added so far, compiled by `interpreter`
    /// (through a scratch directory in `output`) as unchecked-hash `.pyc` files beside their
    /// sources' image paths: Python loads them without looking at the sources, and without
    /// them every process would compile what it imports, since the image's files are root's.
    /// A source that does not compile (a test of syntax errors, a template) gets none.
    fn add_bytecode(
        &mut self,
        host_interpreter: &Path,
        interpreter: &Interpreter,
        output: &Path,
    ) -> Result<u64, AppError> {
        let scratch = output.join("python-bytecode");
        let _ = std::fs::remove_dir_all(&scratch);
        std::fs::create_dir_all(&scratch).map_err(|source| AppError::Write {
            path: scratch.clone(),
            source,
        })?;
        let list: Vec<(String, &str)> = self
            .sources
            .iter()
            .map(|(host, image)| (host.display().to_string(), image.as_str()))
            .collect();
        let mut child = Command::new(host_interpreter)
            .args(["-S", "-c", COMPILE])
            .arg(&scratch)
            // Sets (of string constants) are ordered by the strings' hashes: one seed makes
            // every build write the same bytes.
            .env("PYTHONHASHSEED", "0")
            .stdin(std::process::Stdio::piped())
            .spawn()
            .map_err(|source| {
                problem(format!(
                    "compiling the Python sources with '{}' failed: {source}",
                    host_interpreter.display()
                ))
            })?;
        let written = child.stdin.take().map(|mut stdin| {
            use std::io::Write as _;
            stdin.write_all(&serde_json::to_vec(&list).expect("paths serialize"))
        });
        let status = child
            .wait()
            .map_err(|source| problem(format!("compiling the Python sources failed: {source}")))?;
        if !status.success() || !matches!(written, Some(Ok(()))) {
            return Err(problem(format!(
                "compiling the Python sources with '{}' failed ({status})",
                host_interpreter.display()
            )));
        }
        let mut total = 0;
        for (index, (_, image)) in self.sources.iter().enumerate() {
            let Ok(content) = std::fs::read(scratch.join(format!("{index}.pyc"))) else {
                continue;
            };
            let (directory, file) = image.rsplit_once('/').unwrap_or(("", image));
            let stem = file.strip_suffix(".py").unwrap_or(file);
            total += content.len() as u64;
            self.files.push((
                format!(
                    "{directory}/__pycache__/{stem}.{}.pyc",
                    interpreter.cache_tag
                ),
                content,
                0o644,
            ));
        }
        let _ = std::fs::remove_dir_all(&scratch);
        Ok(total)
    }

    fn add_tree(
        &mut self,
        from: &Path,
        to: &str,
        skip: &dyn Fn(&Path, bool) -> bool,
    ) -> Result<u64, AppError> {
        use std::os::unix::fs::PermissionsExt as _;
        let mut total = 0;
        walk_tree(from, to, skip, &mut |path, metadata, target| {
            let content = std::fs::read(path).map_err(|source| read_error(path, source))?;
            let mode = if metadata.permissions().mode() & 0o111 != 0 {
                0o755
            } else {
                0o644
            };
            total += content.len() as u64;
            if target.ends_with(".py") {
                self.sources.push((path.to_owned(), target.clone()));
            }
            self.files.push((target, content, mode));
            Ok(true)
        })?;
        Ok(total)
    }
}

/// The Python part of the image of `blueprint` (read from `blueprint_path`), or `None` when
/// it declares no Python streamlet. `requirements` is the requirements file to install
/// (default: `requirements.txt` beside the blueprint, if there is one); `output` is the
/// build's output directory, never copied.
pub(crate) fn python_files(
    blueprint: &Blueprint,
    blueprint_path: &Path,
    requirements: Option<&Path>,
    output: &Path,
) -> Result<Option<PythonFiles>, AppError> {
    let directory = blueprint_path.parent().unwrap_or(Path::new(""));
    let declared: Vec<_> = blueprint
        .streamlets
        .iter()
        .filter_map(|instance| Some((instance.name.as_str(), instance.python.as_ref()?)))
        .collect();
    let Some((first, first_source)) = declared.first() else {
        return Ok(None);
    };
    let written = |source: &runnel_blueprint::PythonSource| {
        source
            .interpreter
            .clone()
            .unwrap_or_else(|| "python3".to_owned())
    };
    if let Some((other, source)) = declared
        .iter()
        .find(|(_, source)| written(source) != written(first_source))
    {
        return Err(problem(format!(
            "Python streamlets '{first}' and '{other}' name different interpreters ('{}' and '{}'); an image holds one",
            written(first_source),
            written(source)
        )));
    }
    let image_interpreter = IMAGE_INTERPRETER.to_owned();
    let image_prefix = Path::new(IMAGE_INTERPRETER)
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("/"))
        .to_owned();
    let host_interpreter = python_command(directory, first_source)
        .interpreter_path()
        .to_owned();
    let interpreter = query(&host_interpreter, &image_prefix)?;

    let mut python = PythonFiles::default();
    let executable = std::fs::read(&interpreter.executable)
        .map_err(|source| read_error(&interpreter.executable, source))?;
    python
        .files
        .push((image_interpreter.clone(), executable, 0o755));
    let image_stdlib = format!(
        "{}/lib/python{}",
        image_prefix.display().to_string().trim_end_matches('/'),
        interpreter.version
    );
    let stdlib = interpreter.stdlib.clone();
    let stdlib_bytes = python.add_tree(&stdlib, &image_stdlib, &|path, is_directory| {
        let top_level = path.parent() == Some(stdlib.as_path());
        top_level
            && is_directory
            && (LEFT_OUT_OF_STDLIB.contains(&file_name(path).as_str())
                || file_name(path).starts_with("config-"))
    })?;
    let mut copied = vec![stdlib.clone()];
    if let Some(dynload) = interpreter
        .dynload
        .as_ref()
        .filter(|d| !d.starts_with(&stdlib))
    {
        python.add_tree(dynload, &format!("{image_stdlib}/lib-dynload"), &|_, _| {
            false
        })?;
        copied.push(dynload.clone());
    }

    // Installed afresh into the output directory, which is never copied as a module.
    let packages = output.join("python-packages");
    if packages.exists() {
        std::fs::remove_dir_all(&packages).map_err(|source| AppError::Write {
            path: packages.clone(),
            source,
        })?;
    }
    let requirements = match requirements {
        Some(file) => Some(file.to_owned()),
        None => Some(directory.join("requirements.txt")).filter(|file| file.is_file()),
    };
    pip_install(&host_interpreter, requirements.as_deref(), &packages)?;
    check_imports(
        &declared,
        directory,
        &host_interpreter,
        &packages,
        requirements.as_deref(),
    )?;
    let packages_bytes = python.add_tree(&packages, &interpreter.site, &|path, _| {
        path.parent() == Some(packages.as_path()) && file_name(path) == "bin"
    })?;
    copied.push(packages.clone());

    let output = output.canonicalize().unwrap_or_else(|_| output.to_owned());
    let blueprint_file = blueprint_path
        .canonicalize()
        .unwrap_or_else(|_| blueprint_path.to_owned());
    let source_directory = if directory.as_os_str().is_empty() {
        Path::new(".")
    } else {
        directory
    };
    let not_a_module = |path: &Path, is_directory: bool| {
        let canonical = path.canonicalize().unwrap_or_else(|_| path.to_owned());
        file_name(path).starts_with('.')
            || canonical == output
            || canonical == blueprint_file
            || (is_directory && path.join("pyvenv.cfg").exists())
    };
    // Measured before anything is read: a blueprint beside a build's target directory
    // would otherwise be read whole into memory.
    let modules_bytes = tree_bytes(source_directory, &not_a_module, MAX_BLUEPRINT_DIRECTORY);
    if modules_bytes > MAX_BLUEPRINT_DIRECTORY {
        return Err(problem(format!(
            "the blueprint's directory {} holds more than the {} MB an image takes of it: move the blueprint and its Python modules into a directory of their own",
            source_directory.display(),
            MAX_BLUEPRINT_DIRECTORY >> 20
        )));
    }
    python.add_tree(source_directory, runnel_image::APP_DIRECTORY, &not_a_module)?;
    copied.push(source_directory.to_owned());
    let bytecode_bytes = python.add_bytecode(&host_interpreter, &interpreter, output.as_path())?;

    python.libraries = linked_by(&interpreter.executable, &python_elf_files(&copied), &copied)?;
    python.summary = vec![
        format!(
            "python {} from {} at {image_interpreter}: standard library {:.1} MB, packages {:.1} MB ({}), modules {:.2} MB from {}, byte code {:.1} MB",
            interpreter.version,
            interpreter.executable.display(),
            stdlib_bytes as f64 / 1e6,
            packages_bytes as f64 / 1e6,
            requirements.map_or_else(
                || WORKER_REQUIREMENT.to_owned(),
                |file| format!("{} and {WORKER_REQUIREMENT}", file.display())
            ),
            modules_bytes as f64 / 1e6,
            source_directory.display(),
            bytecode_bytes as f64 / 1e6,
        ),
        format!("{} shared libraries for Python", python.libraries.len()),
    ];
    Ok(Some(python))
}

fn query(interpreter: &Path, image_prefix: &Path) -> Result<Interpreter, AppError> {
    let output = Command::new(interpreter)
        .args(["-c", QUERY])
        .arg(image_prefix)
        .output()
        .map_err(|source| {
            problem(format!(
                "running the interpreter '{}' failed: {source}",
                interpreter.display()
            ))
        })?;
    if !output.status.success() {
        return Err(problem(format!(
            "the interpreter '{}' could not say where its standard library is ({}): {}",
            interpreter.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let answer: Option<serde_json::Value> = serde_json::from_slice(&output.stdout).ok();
    let text = |key: &str| {
        answer
            .as_ref()
            .and_then(|answer| answer.get(key))
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    let described = (|| {
        Some(Interpreter {
            executable: text("executable")?.into(),
            version: text("version")?,
            stdlib: text("stdlib")?.into(),
            dynload: text("dynload").map(PathBuf::from),
            site: text("site")?,
            cache_tag: text("cache_tag")?,
        })
    })();
    described.ok_or_else(|| {
        problem(format!(
            "the interpreter '{}' answered what is not its description: {}",
            interpreter.display(),
            String::from_utf8_lossy(&output.stdout).trim()
        ))
    })
}

/// `pip install --target into` of the requirements and the worker's own requirement, for
/// `interpreter`; pip's messages go to stderr as they come.
fn pip_install(
    interpreter: &Path,
    requirements: Option<&Path>,
    into: &Path,
) -> Result<(), AppError> {
    let mut command = Command::new(interpreter);
    command
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args(["--no-compile", "--no-warn-script-location", "--target"])
        .arg(into)
        .env("PIP_USER", "0")
        // Building as root is expected here; pips before 22.1 know no such setting, and
        // an unknown environment variable, unlike an unknown flag, fails none of them.
        .env("PIP_ROOT_USER_ACTION", "ignore");
    if let Some(requirements) = requirements {
        command.arg("--requirement").arg(requirements);
    }
    command.arg(WORKER_REQUIREMENT);
    let status = command.status().map_err(|source| {
        problem(format!(
            "running pip of '{}' failed: {source}",
            interpreter.display()
        ))
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(problem(format!(
            "pip of '{}' could not install {} ({status}; its messages are above)",
            interpreter.display(),
            requirements.map_or_else(
                || WORKER_REQUIREMENT.to_owned(),
                |file| format!("{} and {WORKER_REQUIREMENT}", file.display())
            )
        )))
    }
}

/// Describes every Python streamlet with the interpreter's standard library and the
/// `packages` installed for the image alone (no site packages), as the image will run it:
/// a module the requirements miss fails the build here rather than the pods.
fn check_imports(
    declared: &[(&str, &runnel_blueprint::PythonSource)],
    directory: &Path,
    interpreter: &Path,
    packages: &Path,
    requirements: Option<&Path>,
) -> Result<(), AppError> {
    for (instance, source) in declared {
        let command = python_command(directory, source)
            .interpreter(interpreter)
            .module_path(packages)
            .without_site_packages();
        if let Err(error) = runnel_python::describe_blocking(&command) {
            let requirements = requirements.map_or_else(
                || "a requirements.txt beside the blueprint (there is none) or --python-requirements".to_owned(),
                |file| file.display().to_string(),
            );
            return Err(problem(format!(
                "Python streamlet '{instance}' does not load with only the packages the image gets ({error}); list what it imports in {requirements}"
            )));
        }
    }
    Ok(())
}

/// The shared objects under `roots`: extension modules and the libraries wheels bundle.
fn python_elf_files(roots: &[PathBuf]) -> Vec<PathBuf> {
    fn walk(directory: &Path, into: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(directory) else {
            return;
        };
        for path in entries.flatten().map(|entry| entry.path()) {
            let Ok(kind) = std::fs::symlink_metadata(&path).map(|m| m.file_type()) else {
                continue;
            };
            let name = file_name(&path);
            if kind.is_dir() {
                walk(&path, into);
            } else if kind.is_file() && (name.ends_with(".so") || name.contains(".so.")) {
                into.push(path);
            }
        }
    }
    let mut found = Vec::new();
    for root in roots {
        walk(root, &mut found);
    }
    found.sort();
    found
}

/// The host libraries `executable` and `objects` link, leaving out those under `copied`
/// (they go into the image with their trees, where `$ORIGIN` finds them). An extension
/// module linking a library this machine lacks cannot load here either, and is passed by.
fn linked_by(
    executable: &Path,
    objects: &[PathBuf],
    copied: &[PathBuf],
) -> Result<Vec<PathBuf>, AppError> {
    let mut libraries = BTreeSet::new();
    let interpreter = runnel_image::linked_libraries(executable)?;
    libraries.extend(interpreter.libraries);
    for object in objects {
        match runnel_image::linked_libraries(object) {
            Ok(linked) => libraries.extend(linked.libraries),
            Err(runnel_image::Error::LibraryNotFound { .. }) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(libraries
        .into_iter()
        .filter(|library| !copied.iter().any(|root| library.starts_with(root)))
        .collect())
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn read_error(path: &Path, source: std::io::Error) -> AppError {
    AppError::Read {
        path: path.to_owned(),
        source,
    }
}

fn problem(message: String) -> AppError {
    AppError::PythonImage(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blueprint_directory_is_measured_without_what_the_image_leaves_out() {
        let directory = tempfile::tempdir().unwrap();
        let write = |path: &str, bytes: usize| {
            let path = directory.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, vec![b'#'; bytes]).unwrap();
        };
        write("scoring.py", 100);
        write("model/gbt.joblib", 1_000);
        write(".git/objects/pack", 50_000);
        write("__pycache__/scoring.cpython-311.pyc", 70_000);
        write("venv/pyvenv.cfg", 10);
        write("venv/lib/big.so", 90_000);
        let skip = |path: &Path, is_directory: bool| {
            file_name(path).starts_with('.') || (is_directory && path.join("pyvenv.cfg").exists())
        };
        assert_eq!(tree_bytes(directory.path(), &skip, u64::MAX), 1_100);
        write("data/large.bin", 10_000);
        write("data/larger.bin", 20_000);
        // Counting stops soon after the limit is passed.
        let counted = tree_bytes(directory.path(), &skip, 1_500);
        assert!(counted > 1_500 && counted < 31_100, "{counted}");
    }
}

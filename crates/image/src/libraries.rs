//! Finding the shared libraries an executable links, the way the dynamic loader does, so
//! that the image holds exactly those.
//!
//! For each `DT_NEEDED` name, transitively: a name with a `/` is a path; otherwise the
//! object's `DT_RPATH` (when it has no `DT_RUNPATH`), its `DT_RUNPATH`, the directories of
//! `/etc/ld.so.conf` (with its `include`s), then `/lib64`, `/usr/lib64`, `/lib` and `/usr/lib`,
//! taking the first file that is an ELF object for the executable's machine. Unlike the
//! loader, `LD_LIBRARY_PATH` is ignored, so a build does not depend on the shell it runs in.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::Error;
use crate::elf::{expand_origin, is_elf_for, read_elf};

const DEFAULT_DIRECTORIES: [&str; 4] = ["/lib64", "/usr/lib64", "/lib", "/usr/lib"];

/// What an executable needs from the machine it was built on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Linked {
    /// The OCI architecture of the executable (`amd64`).
    pub architecture: String,
    /// The dynamic loader, as `PT_INTERP` names it (`/lib64/ld-linux-x86-64.so.2`).
    pub interpreter: Option<PathBuf>,
    /// Every library, at the path where the search found it, in the order found.
    pub libraries: Vec<PathBuf>,
}

/// Finds the loader and every library `executable` needs, transitively.
///
/// ```no_run
/// let linked = runnel_image::linked_libraries(std::path::Path::new("target/release/my-app"))?;
/// for library in &linked.libraries {
///     println!("{}", library.display());
/// }
/// # Ok::<(), runnel_image::Error>(())
/// ```
///
/// # Errors
///
/// When a file is not ELF, or a library is nowhere to be found (the error names it, who
/// needs it, and where it was looked for).
pub fn linked_libraries(executable: &Path) -> Result<Linked, Error> {
    let info = read_elf(executable)?;
    let configured = ld_so_conf(Path::new("/etc/ld.so.conf"));
    let mut found: Vec<PathBuf> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    // libc needs the loader by its soname; the loader, already there as the interpreter,
    // is what the dynamic linker gives it.
    if let Some(interpreter) = info.interpreter.as_deref().map(Path::new)
        && let Some(name) = interpreter.file_name()
    {
        seen.insert(name.to_string_lossy().into_owned());
    }
    let mut queue: Vec<(PathBuf, crate::elf::ElfInfo)> =
        vec![(executable.to_owned(), info.clone())];
    while !queue.is_empty() {
        let (object, object_info) = queue.remove(0);
        for name in &object_info.needed {
            if !seen.insert(name.clone()) {
                continue;
            }
            let path = locate(name, &object, &object_info, &info, &configured)?;
            let library_info = read_elf(&path)?;
            found.push(path.clone());
            queue.push((path, library_info));
        }
    }
    Ok(Linked {
        architecture: info.architecture().to_owned(),
        interpreter: info.interpreter.as_deref().map(PathBuf::from),
        libraries: found,
    })
}

fn locate(
    name: &str,
    object: &Path,
    object_info: &crate::elf::ElfInfo,
    executable: &crate::elf::ElfInfo,
    configured: &[PathBuf],
) -> Result<PathBuf, Error> {
    if name.contains('/') {
        return Ok(PathBuf::from(name));
    }
    let mut directories: Vec<PathBuf> = Vec::new();
    if object_info.runpath.is_empty() {
        directories.extend(object_info.rpath.iter().map(|d| expand_origin(d, object)));
    }
    directories.extend(object_info.runpath.iter().map(|d| expand_origin(d, object)));
    directories.extend(configured.iter().cloned());
    directories.extend(DEFAULT_DIRECTORIES.iter().map(PathBuf::from));
    for directory in &directories {
        let candidate = directory.join(name);
        if is_elf_for(&candidate, executable.machine) {
            return Ok(candidate);
        }
    }
    Err(Error::LibraryNotFound {
        library: name.to_owned(),
        needed_by: object.to_owned(),
        searched: directories,
    })
}

/// The directories of an `ld.so.conf`, following `include` lines (with `*` patterns in
/// the file name), in order; a missing file gives none.
fn ld_so_conf(path: &Path) -> Vec<PathBuf> {
    let mut directories = Vec::new();
    read_conf(path, &mut directories, 0);
    directories
}

fn read_conf(path: &Path, into: &mut Vec<PathBuf>, depth: usize) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    if depth > 8 {
        return;
    }
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        if let Some(pattern) = line.strip_prefix("include") {
            for file in glob(pattern.trim(), path) {
                read_conf(&file, into, depth + 1);
            }
        } else if line.starts_with('/') && !into.iter().any(|d| d == Path::new(line)) {
            into.push(PathBuf::from(line));
        }
    }
}

/// The files a `dir/prefix*suffix` pattern names, sorted; relative to the including file.
fn glob(pattern: &str, including: &Path) -> Vec<PathBuf> {
    let pattern = if pattern.starts_with('/') {
        PathBuf::from(pattern)
    } else {
        including.parent().unwrap_or(Path::new("/")).join(pattern)
    };
    let Some(file_pattern) = pattern.file_name().and_then(|n| n.to_str()) else {
        return Vec::new();
    };
    let directory = pattern.parent().unwrap_or(Path::new("/"));
    let Some((prefix, suffix)) = file_pattern.split_once('*') else {
        return vec![pattern.clone()];
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(directory)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| {
                    path.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(prefix) && n.ends_with(suffix))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_are_followed_in_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("conf.d")).unwrap();
        std::fs::write(dir.path().join("conf.d/b.conf"), "/opt/b\n").unwrap();
        std::fs::write(dir.path().join("conf.d/a.conf"), "# a\n/opt/a\n").unwrap();
        std::fs::write(dir.path().join("conf.d/skip.txt"), "/opt/skip\n").unwrap();
        std::fs::write(
            dir.path().join("ld.so.conf"),
            "/usr/local/lib\ninclude conf.d/*.conf\n",
        )
        .unwrap();
        assert_eq!(
            ld_so_conf(&dir.path().join("ld.so.conf")),
            [
                PathBuf::from("/usr/local/lib"),
                PathBuf::from("/opt/a"),
                PathBuf::from("/opt/b")
            ]
        );
    }
}

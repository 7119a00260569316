//! Reproducible layers: tar archives with sorted entries, one fixed modification time,
//! numeric owners (0:0 unless a directory is given to a user) and no user or group names,
//! gzipped with a fixed header.

use std::collections::BTreeMap;
use std::io::Write as _;

use flate2::Compression;
use flate2::write::GzEncoder;

use crate::digest::Digest;

#[derive(Clone, Debug)]
enum Entry {
    Directory { mode: u32, owner: u32 },
    File { content: Vec<u8>, mode: u32 },
}

/// The files of one layer, by absolute path in the image.
#[derive(Clone, Debug, Default)]
pub(crate) struct LayerBuilder {
    entries: BTreeMap<String, Entry>,
}

/// A finished layer: the tar, its compressed form and both digests.
#[derive(Clone, Debug)]
pub(crate) struct Layer {
    /// The uncompressed tar.
    pub(crate) tar: Vec<u8>,
    /// The digest of the uncompressed tar (the config's `diff_ids`).
    pub(crate) diff_id: Digest,
    /// The gzipped tar, as stored in the layout.
    pub(crate) gzip: Vec<u8>,
    /// The digest of the gzipped tar (the manifest's layer digest).
    pub(crate) digest: Digest,
}

impl LayerBuilder {
    /// A directory with `mode` (and its parents, 0755), owned by root.
    pub(crate) fn directory(&mut self, path: &str, mode: u32) {
        self.owned_directory(path, mode, 0);
    }

    /// A directory with `mode` owned by user and group `owner` (its parents, 0755, by root).
    pub(crate) fn owned_directory(&mut self, path: &str, mode: u32, owner: u32) {
        self.parents(path);
        self.entries
            .insert(relative(path), Entry::Directory { mode, owner });
    }

    /// A regular file.
    pub(crate) fn file(&mut self, path: &str, content: Vec<u8>, mode: u32) {
        self.parents(path);
        self.entries
            .insert(relative(path), Entry::File { content, mode });
    }

    fn parents(&mut self, path: &str) {
        let mut parent = std::path::Path::new(path).parent();
        while let Some(directory) = parent {
            let text = relative(&directory.display().to_string());
            if !text.is_empty() {
                self.entries.entry(text).or_insert(Entry::Directory {
                    mode: 0o755,
                    owner: 0,
                });
            }
            parent = directory.parent();
        }
    }

    /// The layer, every entry stamped with `mtime` (seconds since the epoch).
    pub(crate) fn finish(&self, mtime: u64) -> std::io::Result<Layer> {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, entry) in &self.entries {
            let mut header = tar::Header::new_gnu();
            header.set_mtime(mtime);
            header.set_uid(0);
            header.set_gid(0);
            match entry {
                Entry::Directory { mode, owner } => {
                    header.set_uid(u64::from(*owner));
                    header.set_gid(u64::from(*owner));
                    header.set_entry_type(tar::EntryType::Directory);
                    header.set_mode(*mode);
                    header.set_size(0);
                    builder.append_data(&mut header, format!("{path}/"), std::io::empty())?;
                }
                Entry::File { content, mode } => {
                    header.set_entry_type(tar::EntryType::Regular);
                    header.set_mode(*mode);
                    header.set_size(content.len() as u64);
                    builder.append_data(&mut header, path, content.as_slice())?;
                }
            }
        }
        let tar = builder.into_inner()?;
        let gzip = gzip(&tar)?;
        Ok(Layer {
            diff_id: Digest::of(&tar),
            digest: Digest::of(&gzip),
            tar,
            gzip,
        })
    }
}

/// Gzip with a header that carries no time, no name and a fixed OS byte.
pub(crate) fn gzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut encoder = flate2::GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(Vec::new(), Compression::default());
    encoder.write_all(bytes)?;
    GzEncoder::finish(encoder)
}

/// `/etc/passwd` as `etc/passwd`, the form layer tars use.
fn relative(path: &str) -> String {
    path.trim_start_matches('/')
        .trim_end_matches('/')
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_files_make_the_same_bytes_in_any_order() {
        let mut first = LayerBuilder::default();
        first.file("/etc/passwd", b"root\n".to_vec(), 0o644);
        first.file("/app/bin", b"\x7fELF".to_vec(), 0o755);
        let mut second = LayerBuilder::default();
        second.file("/app/bin", b"\x7fELF".to_vec(), 0o755);
        second.file("/etc/passwd", b"root\n".to_vec(), 0o644);
        let (a, b) = (first.finish(0).unwrap(), second.finish(0).unwrap());
        assert_eq!(a.digest, b.digest);
        assert_eq!(a.diff_id, b.diff_id);
        let mut archive = tar::Archive::new(a.tar.as_slice());
        let entries: Vec<(String, u64, u32)> = archive
            .entries()
            .unwrap()
            .map(|entry| {
                let entry = entry.unwrap();
                let header = entry.header();
                (
                    entry.path().unwrap().display().to_string(),
                    header.uid().unwrap(),
                    header.mode().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            entries,
            [
                ("app/".to_owned(), 0, 0o755),
                ("app/bin".to_owned(), 0, 0o755),
                ("etc/".to_owned(), 0, 0o755),
                ("etc/passwd".to_owned(), 0, 0o644),
            ]
        );
    }
}

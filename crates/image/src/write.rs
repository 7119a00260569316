//! Writing an [`Image`]: an OCI image layout directory, an `oci-archive` tarball (the same
//! layout in one tar) and a `docker-archive` tarball (what `docker save` writes and
//! `docker load` reads).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::layout::{
    Descriptor, INDEX_MEDIA_TYPE, Index, MANIFEST_MEDIA_TYPE, Platform, REF_NAME, blob_path,
};
use crate::{Digest, Error, Image};

impl Image {
    /// Writes the image as an OCI image layout in `directory` (created if missing; an
    /// existing `index.json` there is replaced), the image named by its tag:
    /// `skopeo copy oci:DIRECTORY:TAG docker://...` pushes it.
    ///
    /// # Errors
    ///
    /// When a file cannot be written.
    pub fn write_layout(&self, directory: &Path) -> Result<(), Error> {
        for (path, bytes) in self.layout_files() {
            let path = directory.join(path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|source| Error::Write {
                    path: parent.to_owned(),
                    source,
                })?;
            }
            if path.starts_with(directory.join("blobs")) && path.exists() {
                continue; // content-addressed: the same name is the same bytes
            }
            std::fs::write(&path, bytes).map_err(|source| Error::Write { path, source })?;
        }
        Ok(())
    }

    /// Writes the layout as one tar (`oci-archive:PATH`).
    ///
    /// # Errors
    ///
    /// When the file cannot be written.
    pub fn write_oci_archive(&self, path: &Path) -> Result<(), Error> {
        let mut files: Vec<(String, Vec<u8>)> = self.layout_files();
        files.sort_by(|a, b| a.0.cmp(&b.0));
        write_tar(path, &files)
    }

    /// Writes a `docker-archive` tar: `manifest.json`, the configuration and each layer
    /// uncompressed as `<diff id>/layer.tar`, tagged with the reference.
    ///
    /// # Errors
    ///
    /// When the file cannot be written.
    pub fn write_docker_archive(&self, path: &Path) -> Result<(), Error> {
        #[derive(Serialize)]
        #[serde(rename_all = "PascalCase")]
        struct Entry<'a> {
            config: String,
            repo_tags: Vec<&'a str>,
            layers: Vec<String>,
        }
        let config_name = format!("{}.json", self.config_digest.hex());
        let layer_names: Vec<String> = self
            .layers
            .iter()
            .map(|layer| format!("{}/layer.tar", layer.diff_id.hex()))
            .collect();
        let manifest = vec![Entry {
            config: config_name.clone(),
            repo_tags: vec![self.reference.as_str()],
            layers: layer_names.clone(),
        }];
        let (name, tag) = crate::split_reference(&self.reference)?;
        let top = self
            .layers
            .last()
            .map(|l| l.diff_id.hex().to_owned())
            .unwrap_or_default();
        let repositories = BTreeMap::from([(name, BTreeMap::from([(tag, top)]))]);
        let mut files = vec![
            (
                "manifest.json".to_owned(),
                serde_json::to_vec(&manifest).expect("the manifest serializes"),
            ),
            (
                "repositories".to_owned(),
                serde_json::to_vec(&repositories).expect("the repositories serialize"),
            ),
            (config_name, self.config.clone()),
        ];
        for (layer, name) in self.layers.iter().zip(layer_names) {
            files.push((name, layer.tar.clone()));
        }
        files.sort_by(|a, b| a.0.cmp(&b.0));
        write_tar(path, &files)
    }

    /// Every file of the layout, by relative path.
    fn layout_files(&self) -> Vec<(String, Vec<u8>)> {
        let blob = |digest: &Digest| format!("blobs/sha256/{}", digest.hex());
        let index = Index {
            schema_version: 2,
            media_type: INDEX_MEDIA_TYPE.to_owned(),
            manifests: vec![Descriptor {
                media_type: MANIFEST_MEDIA_TYPE.to_owned(),
                digest: self.manifest_digest.to_string(),
                size: self.manifest.len() as u64,
                annotations: BTreeMap::from([(REF_NAME.to_owned(), self.tag.clone())]),
                platform: Some(Platform {
                    architecture: self.architecture.clone(),
                    os: "linux".to_owned(),
                }),
            }],
        };
        let mut files = vec![
            (
                "oci-layout".to_owned(),
                br#"{"imageLayoutVersion":"1.0.0"}"#.to_vec(),
            ),
            (
                "index.json".to_owned(),
                serde_json::to_vec(&index).expect("the index serializes"),
            ),
            (blob(&self.manifest_digest), self.manifest.clone()),
            (blob(&self.config_digest), self.config.clone()),
        ];
        for layer in &self.layers {
            files.push((blob(&layer.digest), layer.gzip.clone()));
        }
        files
    }

    /// Where a blob of this image is in a layout at `directory`.
    pub fn blob_path(&self, directory: &Path, digest: &Digest) -> std::path::PathBuf {
        blob_path(directory, digest)
    }
}

/// A tar of `files` (directories implied), reproducible like the layers.
fn write_tar(path: &Path, files: &[(String, Vec<u8>)]) -> Result<(), Error> {
    let mut builder = crate::layer::LayerBuilder::default();
    for (name, bytes) in files {
        builder.file(name, bytes.clone(), 0o644);
    }
    let layer = builder.finish(0).map_err(|source| Error::Write {
        path: path.to_owned(),
        source,
    })?;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|source| Error::Write {
            path: parent.to_owned(),
            source,
        })?;
    }
    std::fs::write(path, layer.tar).map_err(|source| Error::Write {
        path: path.to_owned(),
        source,
    })
}

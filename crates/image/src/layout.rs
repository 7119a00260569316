//! The OCI image layout on disk (`oci-layout`, `index.json`, `blobs/sha256/...`) and the
//! JSON documents in it, as the OCI image spec defines them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{Digest, Error};

/// The media type of an image index.
pub const INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";
/// The media type of an image manifest.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The media type of an image configuration.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";
/// The media type of a gzipped layer.
pub const LAYER_MEDIA_TYPE: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
/// The annotation that names a manifest in an index (`skopeo` and `umoci` take the tag).
pub const REF_NAME: &str = "org.opencontainers.image.ref.name";

/// A pointer to a blob.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// What the blob is.
    pub media_type: String,
    /// `sha256:<hex>`.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
    /// Annotations, such as the ref name in an index.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// The platform, in an index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
}

/// An image's operating system and architecture.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Platform {
    /// `amd64`, `arm64`, ...
    pub architecture: String,
    /// `linux`.
    pub os: String,
}

/// `index.json` (and any image index).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Index {
    /// 2.
    pub schema_version: u32,
    /// [`INDEX_MEDIA_TYPE`].
    pub media_type: String,
    /// The images.
    pub manifests: Vec<Descriptor>,
}

/// An image manifest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// 2.
    pub schema_version: u32,
    /// [`MANIFEST_MEDIA_TYPE`].
    pub media_type: String,
    /// The configuration blob.
    pub config: Descriptor,
    /// The layers, bottom first.
    pub layers: Vec<Descriptor>,
}

/// An image configuration (the parts Runnel writes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageConfig {
    /// When the image was made, RFC 3339 (`SOURCE_DATE_EPOCH`, else the epoch).
    pub created: String,
    /// `amd64`, `arm64`, ...
    pub architecture: String,
    /// `linux`.
    pub os: String,
    /// How to run it.
    pub config: RunConfig,
    /// The layers' uncompressed digests.
    pub rootfs: RootFs,
    /// One entry per layer.
    #[serde(default)]
    pub history: Vec<History>,
}

/// The run settings of an image.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct RunConfig {
    /// `uid:gid`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub user: String,
    /// `KEY=value`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// The executable and its first arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entrypoint: Vec<String>,
    /// Default arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cmd: Vec<String>,
    /// The working directory.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub working_dir: String,
    /// Labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// The layers of an image as the configuration lists them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootFs {
    /// `layers`.
    #[serde(rename = "type")]
    pub type_: String,
    /// The digest of each uncompressed layer.
    pub diff_ids: Vec<String>,
}

/// How a layer was made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    /// When.
    pub created: String,
    /// By what.
    pub created_by: String,
}

/// Reads a blob of the layout at `layout`.
pub(crate) fn read_blob(layout: &Path, digest: &str) -> Result<Vec<u8>, Error> {
    let parsed = Digest::parse(digest).ok_or_else(|| Error::Layout {
        path: layout.to_owned(),
        reason: format!("'{digest}' is not a sha256 digest"),
    })?;
    let path = blob_path(layout, &parsed);
    let bytes = std::fs::read(&path).map_err(|source| Error::Read { path, source })?;
    if Digest::of(&bytes) != parsed {
        return Err(Error::Layout {
            path: layout.to_owned(),
            reason: format!("blob {digest} does not have that digest"),
        });
    }
    Ok(bytes)
}

/// Where a blob lives in a layout.
pub(crate) fn blob_path(layout: &Path, digest: &Digest) -> PathBuf {
    layout.join("blobs").join("sha256").join(digest.hex())
}

/// Reads a JSON document of the layout.
pub(crate) fn read_json<T: for<'de> Deserialize<'de>>(
    layout: &Path,
    bytes: &[u8],
    what: &str,
) -> Result<T, Error> {
    serde_json::from_slice(bytes).map_err(|error| Error::Layout {
        path: layout.to_owned(),
        reason: format!("{what} is not valid: {error}"),
    })
}

/// The manifest in `layout` whose ref name is `tag` (or the only one, without a tag).
pub(crate) fn find_manifest(layout: &Path, tag: Option<&str>) -> Result<Manifest, Error> {
    let index_path = layout.join("index.json");
    let bytes = std::fs::read(&index_path).map_err(|source| Error::Read {
        path: index_path,
        source,
    })?;
    let index: Index = read_json(layout, &bytes, "index.json")?;
    let chosen = match tag {
        Some(tag) => index
            .manifests
            .iter()
            .find(|m| m.annotations.get(REF_NAME).map(String::as_str) == Some(tag)),
        None if index.manifests.len() == 1 => index.manifests.first(),
        None => None,
    };
    let descriptor = chosen.ok_or_else(|| Error::Layout {
        path: layout.to_owned(),
        reason: match tag {
            Some(tag) => format!("no image is tagged '{tag}'"),
            None => format!("it holds {} images; name one by tag", index.manifests.len()),
        },
    })?;
    let bytes = read_blob(layout, &descriptor.digest)?;
    read_json(layout, &bytes, "the manifest")
}

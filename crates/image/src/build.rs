//! [`ImageSpec`] → [`Image`]: the layers, configuration and manifest of an image holding
//! one executable and what it needs to run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::layer::{Layer, LayerBuilder};
use crate::layout::{
    CONFIG_MEDIA_TYPE, Descriptor, History, ImageConfig, LAYER_MEDIA_TYPE, MANIFEST_MEDIA_TYPE,
    Manifest, RootFs, RunConfig,
};
use crate::{Digest, Error, linked_libraries};

/// The user images run as: uid and gid 10001, named `runnel`.
pub const USER_ID: u32 = 10001;
/// Where the CA certificates are, on the host and in the image.
pub const CA_CERTIFICATES: &str = "/etc/ssl/certs/ca-certificates.crt";
/// The directory of the executable in the image.
pub const APP_DIRECTORY: &str = "/app";
/// A directory the image's user owns (mode 0700), for what the app writes: the embedded
/// log of the default command. Everything else in the image belongs to root.
pub const DATA_DIRECTORY: &str = "/data";

/// What goes into an image.
///
/// ```no_run
/// use runnel_image::ImageSpec;
/// let spec = ImageSpec::new("registry.example.com/sensor-data:0.1.0", "target/release/sensor-data");
/// let image = spec.build()?;
/// image.write_layout(std::path::Path::new("build/image"))?;
/// println!("{}", image.manifest_digest);
/// # Ok::<(), runnel_image::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ImageSpec {
    /// `registry/name:tag`; the tag names the image in the layout.
    pub reference: String,
    /// The executable; it goes to `/app/<file name>` and is the entry point.
    pub executable: PathBuf,
    /// More files for the app layer: absolute path, content, mode.
    pub files: Vec<(String, Vec<u8>, u32)>,
    /// More shared libraries for the system layer, at their own paths, with their
    /// directories on `LD_LIBRARY_PATH`: what the ELF files among `files` link (an
    /// interpreter's, its extension modules'), found with [`linked_libraries`].
    pub libraries: Vec<PathBuf>,
    /// More environment variables of the image, `NAME=value`, after `PATH`,
    /// `SSL_CERT_FILE` and `LD_LIBRARY_PATH`.
    pub env: Vec<String>,
    /// Default arguments.
    pub cmd: Vec<String>,
    /// Image labels.
    pub labels: BTreeMap<String, String>,
    /// The time stamped on every file and on the image, seconds since the epoch: the same
    /// inputs with the same epoch give the same image, byte for byte.
    pub epoch: u64,
    /// Where the CA certificates are taken from.
    pub ca_certificates: PathBuf,
}

/// A built image, ready to be written as a layout or an archive.
#[derive(Clone, Debug)]
pub struct Image {
    /// The reference it was built for.
    pub reference: String,
    /// The tag part of the reference.
    pub tag: String,
    /// The digest of the manifest: the image's identity.
    pub manifest_digest: Digest,
    /// The architecture, from the executable.
    pub architecture: String,
    /// The layers' files, for a summary: path in the image and size.
    pub contents: Vec<(String, u64)>,
    pub(crate) config: Vec<u8>,
    pub(crate) config_digest: Digest,
    pub(crate) manifest: Vec<u8>,
    pub(crate) layers: Vec<Layer>,
}

impl ImageSpec {
    /// An image of `executable` for `reference`, with the host's CA certificates, stamped
    /// with `SOURCE_DATE_EPOCH` when set and the epoch otherwise.
    pub fn new(reference: &str, executable: impl Into<PathBuf>) -> ImageSpec {
        let epoch = std::env::var("SOURCE_DATE_EPOCH")
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(0);
        ImageSpec {
            reference: reference.to_owned(),
            executable: executable.into(),
            files: Vec::new(),
            libraries: Vec::new(),
            env: Vec::new(),
            cmd: Vec::new(),
            labels: BTreeMap::new(),
            epoch,
            ca_certificates: PathBuf::from(CA_CERTIFICATES),
        }
    }

    /// Builds the two layers (the system: loader, libraries, certificates, users; the app:
    /// the executable and the extra files), the configuration and the manifest.
    ///
    /// # Errors
    ///
    /// When the executable or a library cannot be read or found, or the CA certificates
    /// are missing.
    pub fn build(&self) -> Result<Image, Error> {
        let (_, tag) = split_reference(&self.reference)?;
        let linked = linked_libraries(&self.executable)?;
        let mut contents = Vec::new();
        let read = |path: &Path| {
            std::fs::read(path).map_err(|source| Error::Read {
                path: path.to_owned(),
                source,
            })
        };

        let mut system = LayerBuilder::default();
        let passwd = format!(
            "root:x:0:0:root:/root:/sbin/nologin\nrunnel:x:{USER_ID}:{USER_ID}:runnel:{APP_DIRECTORY}:/sbin/nologin\n"
        );
        let group = format!("root:x:0:\nrunnel:x:{USER_ID}:\n");
        system.file("/etc/passwd", passwd.into_bytes(), 0o644);
        system.file("/etc/group", group.into_bytes(), 0o644);
        system.file(
            "/etc/nsswitch.conf",
            b"passwd: files\ngroup: files\nhosts: files dns\n".to_vec(),
            0o644,
        );
        system.file(CA_CERTIFICATES, read(&self.ca_certificates)?, 0o644);
        system.directory("/tmp", 0o1777);
        let mut library_directories: Vec<String> = Vec::new();
        if let Some(interpreter) = &linked.interpreter {
            let content = read(interpreter)?;
            contents.push((interpreter.display().to_string(), content.len() as u64));
            system.file(&interpreter.display().to_string(), content, 0o755);
        }
        let mut libraries: Vec<&PathBuf> = linked.libraries.iter().collect();
        for library in &self.libraries {
            if !libraries.contains(&library) && linked.interpreter.as_ref() != Some(library) {
                libraries.push(library);
            }
        }
        for library in libraries {
            let content = read(library)?;
            contents.push((library.display().to_string(), content.len() as u64));
            system.file(&library.display().to_string(), content, 0o755);
            let directory = library
                .parent()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            if !library_directories.contains(&directory) {
                library_directories.push(directory);
            }
        }

        let mut app = LayerBuilder::default();
        let name = self
            .executable
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "app".to_owned());
        let entrypoint = format!("{APP_DIRECTORY}/{name}");
        let binary = read(&self.executable)?;
        contents.push((entrypoint.clone(), binary.len() as u64));
        app.file(&entrypoint, binary, 0o755);
        app.owned_directory(DATA_DIRECTORY, 0o700, USER_ID);
        for (path, content, mode) in &self.files {
            contents.push((path.clone(), content.len() as u64));
            app.file(path, content.clone(), *mode);
        }

        let layers = [system.finish(self.epoch), app.finish(self.epoch)]
            .into_iter()
            .collect::<Result<Vec<Layer>, _>>()
            .map_err(|source| Error::Write {
                path: PathBuf::from("(layer in memory)"),
                source,
            })?;
        let created = rfc3339(self.epoch);
        let mut env = vec![
            "PATH=/app:/usr/local/bin:/usr/bin:/bin".to_owned(),
            format!("SSL_CERT_FILE={CA_CERTIFICATES}"),
        ];
        if !library_directories.is_empty() {
            env.push(format!("LD_LIBRARY_PATH={}", library_directories.join(":")));
        }
        env.extend(self.env.iter().cloned());
        let config = ImageConfig {
            created: created.clone(),
            architecture: linked.architecture.clone(),
            os: "linux".to_owned(),
            config: RunConfig {
                user: format!("{USER_ID}:{USER_ID}"),
                env,
                entrypoint: vec![entrypoint],
                cmd: self.cmd.clone(),
                working_dir: APP_DIRECTORY.to_owned(),
                labels: self.labels.clone(),
            },
            rootfs: RootFs {
                type_: "layers".to_owned(),
                diff_ids: layers.iter().map(|l| l.diff_id.to_string()).collect(),
            },
            history: vec![
                History {
                    created: created.clone(),
                    created_by:
                        "runnel app build: loader, shared libraries, CA certificates, user runnel"
                            .to_owned(),
                },
                History {
                    created,
                    created_by: format!("runnel app build: {name}"),
                },
            ],
        };
        let config = serde_json::to_vec(&config).expect("the configuration serializes");
        let config_digest = Digest::of(&config);
        let manifest = Manifest {
            schema_version: 2,
            media_type: MANIFEST_MEDIA_TYPE.to_owned(),
            config: Descriptor {
                media_type: CONFIG_MEDIA_TYPE.to_owned(),
                digest: config_digest.to_string(),
                size: config.len() as u64,
                annotations: BTreeMap::new(),
                platform: None,
            },
            layers: layers
                .iter()
                .map(|layer| Descriptor {
                    media_type: LAYER_MEDIA_TYPE.to_owned(),
                    digest: layer.digest.to_string(),
                    size: layer.gzip.len() as u64,
                    annotations: BTreeMap::new(),
                    platform: None,
                })
                .collect(),
        };
        let manifest = serde_json::to_vec(&manifest).expect("the manifest serializes");
        Ok(Image {
            reference: self.reference.clone(),
            tag: tag.to_owned(),
            manifest_digest: Digest::of(&manifest),
            architecture: linked.architecture,
            contents,
            config,
            config_digest,
            manifest,
            layers,
        })
    }
}

/// Splits `registry/name:tag` into the name and the tag (`latest` when there is none).
///
/// ```
/// use runnel_image::split_reference;
/// assert_eq!(split_reference("localhost:5000/app:1.0")?, ("localhost:5000/app", "1.0"));
/// assert_eq!(split_reference("app")?, ("app", "latest"));
/// assert!(split_reference("App:1.0").is_err());
/// # Ok::<(), runnel_image::Error>(())
/// ```
///
/// # Errors
///
/// When the text is not a lowercase image name with an optional tag.
pub fn split_reference(reference: &str) -> Result<(&str, &str), Error> {
    let invalid = || Error::Reference(reference.to_owned());
    let last_slash = reference.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match reference[last_slash..].rfind(':') {
        Some(colon) => {
            let at = last_slash + colon;
            (&reference[..at], &reference[at + 1..])
        }
        None => (reference, "latest"),
    };
    let path = name.split_once('/').map_or(name, |(first, rest)| {
        // A first part with a dot, a colon or `localhost` is a registry host.
        if first.contains('.') || first.contains(':') || first == "localhost" {
            rest
        } else {
            name
        }
    });
    let name_ok = !path.is_empty()
        && path.split('/').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c))
        });
    let tag_ok = !tag.is_empty()
        && tag.len() <= 128
        && tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if name_ok && tag_ok {
        Ok((name, tag))
    } else {
        Err(invalid())
    }
}

/// Seconds since the epoch as RFC 3339 (UTC).
pub(crate) fn rfc3339(seconds: u64) -> String {
    let days = seconds / 86_400;
    let rest = seconds % 86_400;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs_print_as_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }
}

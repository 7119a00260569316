//! Unpacking an image of a layout into a root filesystem, the way a container runtime does:
//! layers in order, whiteouts applied.

use std::path::Path;

use flate2::read::GzDecoder;

use crate::Error;
use crate::layout::{ImageConfig, find_manifest, read_blob, read_json};

/// Unpacks the image tagged `tag` (or the only image) of the layout at `layout` into
/// `root`, and returns its configuration (entry point, environment, user).
///
/// ```no_run
/// let config = runnel_image::unpack(
///     std::path::Path::new("build/image"), Some("0.1.0"), std::path::Path::new("rootfs"))?;
/// println!("{:?}", config.config.entrypoint);
/// # Ok::<(), runnel_image::Error>(())
/// ```
///
/// # Errors
///
/// When the layout is not valid or a file cannot be written.
pub fn unpack(layout: &Path, tag: Option<&str>, root: &Path) -> Result<ImageConfig, Error> {
    let manifest = find_manifest(layout, tag)?;
    let config_bytes = read_blob(layout, &manifest.config.digest)?;
    let config: ImageConfig = read_json(layout, &config_bytes, "the image configuration")?;
    let write_error = |source: std::io::Error| Error::Write {
        path: root.to_owned(),
        source,
    };
    std::fs::create_dir_all(root).map_err(write_error)?;
    for descriptor in &manifest.layers {
        let blob = read_blob(layout, &descriptor.digest)?;
        let mut archive = tar::Archive::new(GzDecoder::new(blob.as_slice()));
        archive.set_preserve_permissions(true);
        archive.set_overwrite(true);
        for entry in archive.entries().map_err(write_error)? {
            let mut entry = entry.map_err(write_error)?;
            let path = entry.path().map_err(write_error)?.into_owned();
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if let Some(hidden) = name.strip_prefix(".wh.") {
                let parent = root.join(path.parent().unwrap_or(Path::new("")));
                if hidden == ".wh..opq" {
                    // An opaque directory: everything below from lower layers goes.
                    if let Ok(children) = std::fs::read_dir(&parent) {
                        for child in children.flatten() {
                            remove(&child.path());
                        }
                    }
                } else {
                    remove(&parent.join(hidden));
                }
                continue;
            }
            let owner = (
                entry.header().uid().unwrap_or(0),
                entry.header().gid().unwrap_or(0),
            );
            entry.unpack_in(root).map_err(write_error)?;
            if owner != (0, 0) {
                // Only root may give files away; unpacked by anyone else, they are theirs.
                match std::os::unix::fs::chown(
                    root.join(&path),
                    u32::try_from(owner.0).ok(),
                    u32::try_from(owner.1).ok(),
                ) {
                    Ok(()) => {}
                    Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => {}
                    Err(error) => return Err(write_error(error)),
                }
            }
        }
    }
    Ok(config)
}

fn remove(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => {
            let _ = std::fs::remove_dir_all(path);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(path);
        }
        Err(_) => {}
    }
}

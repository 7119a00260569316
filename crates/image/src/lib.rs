//! OCI images without Docker: one executable, the shared libraries it links, its dynamic
//! loader, the CA certificates and a non-root user, as reproducible layers.
//!
//! [`ImageSpec::build`] finds what the executable links by reading its ELF headers
//! ([`linked_libraries`]: `PT_INTERP`, `DT_NEEDED`, searched like the dynamic loader
//! searches), never by running it, and makes two layers: the system (loader, libraries,
//! `/etc/ssl/certs/ca-certificates.crt` from the host, `/etc/passwd` and `/etc/group` with
//! the user `runnel`, uid 10001, and `/tmp`) and the app (`/app/<executable>`, the entry
//! point). The [`Image`] is written as an OCI image layout ([`Image::write_layout`]), an
//! `oci-archive` or a `docker-archive` tarball; [`unpack`] turns a layout back into a root
//! filesystem.
//!
//! ```no_run
//! use std::path::Path;
//! let image = runnel_image::ImageSpec::new("registry.example.com/app:1.0", "target/release/app").build()?;
//! image.write_layout(Path::new("build/image"))?;
//! image.write_docker_archive(Path::new("build/app.docker.tar"))?;
//! # Ok::<(), runnel_image::Error>(())
//! ```
//!
//! Where to begin: `build.rs`; `libraries.rs` for the search; `layer.rs` for what makes
//! the bytes reproducible (sorted entries, one modification time, numeric owner 0:0,
//! a gzip header without time or name).
//!
//! `app build` (every app binary) uses this crate, so it stays light: tar, flate2, sha2,
//! serde_json.

mod build;
mod digest;
mod elf;
mod error;
mod layer;
pub mod layout;
mod libraries;
mod unpack;
mod write;

pub use build::{
    APP_DIRECTORY, CA_CERTIFICATES, DATA_DIRECTORY, Image, ImageSpec, USER_ID, split_reference,
};
pub use digest::Digest;
pub use elf::{ElfInfo, read_elf};
pub use error::Error;
pub use libraries::{Linked, linked_libraries};
pub use unpack::unpack;

//! [`Digest`]: `sha256:<hex>`, the content address of a blob.

use sha2::{Digest as _, Sha256};

/// A SHA-256 content digest, written `sha256:<64 hex digits>`.
///
/// ```
/// let digest = runnel_image::Digest::of(b"");
/// assert_eq!(digest.to_string(), "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
/// assert_eq!(digest.hex().len(), 64);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(String);

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Digest {
        let hash = Sha256::digest(bytes);
        Digest(format!(
            "sha256:{}",
            hash.iter().map(|b| format!("{b:02x}")).collect::<String>()
        ))
    }

    /// Reads `sha256:<hex>`; `None` for anything else.
    pub fn parse(text: &str) -> Option<Digest> {
        let hex = text.strip_prefix("sha256:")?;
        (hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()))
        .then(|| Digest(text.to_owned()))
    }

    /// The hex digits alone (a blob's file name).
    pub fn hex(&self) -> &str {
        &self.0["sha256:".len()..]
    }
}

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

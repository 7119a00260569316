//! [`StoredKey`]: a key as the store holds it, inline when it is short.
//!
//! The store holds each key in its map and, for changed, ordered and expiring entries, in
//! sets beside it. A short key (an id of up to [`INLINE_KEY_BYTES`] with the store's prefix)
//! is copied into each of them, which costs no allocation, so freeing a state of millions of
//! short keys frees no small blocks for the allocator to consolidate; a longer key is
//! allocated once and shared.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

use super::stored_value::inline;

/// The longest key held inline: as many bytes as fit beside the length and the tag in four
/// words.
pub(crate) const INLINE_KEY_BYTES: usize = 30;

/// A key: inline up to [`INLINE_KEY_BYTES`], shared beyond. It compares, orders and hashes
/// as its bytes do, so maps of it are looked up by `&[u8]`.
#[derive(Clone)]
pub(crate) enum StoredKey {
    /// `bytes[..len]` is the key.
    Inline {
        len: u8,
        bytes: [u8; INLINE_KEY_BYTES],
    },
    /// A key longer than [`INLINE_KEY_BYTES`].
    Shared(Arc<[u8]>),
}

impl From<&[u8]> for StoredKey {
    fn from(key: &[u8]) -> StoredKey {
        match inline(key) {
            Some((len, bytes)) => StoredKey::Inline { len, bytes },
            None => StoredKey::Shared(key.into()),
        }
    }
}

impl Deref for StoredKey {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            StoredKey::Inline { len, bytes } => &bytes[..usize::from(*len)],
            StoredKey::Shared(bytes) => bytes,
        }
    }
}

impl Borrow<[u8]> for StoredKey {
    fn borrow(&self) -> &[u8] {
        self
    }
}

impl PartialEq for StoredKey {
    fn eq(&self, other: &StoredKey) -> bool {
        **self == **other
    }
}

impl Eq for StoredKey {}

impl PartialOrd for StoredKey {
    fn partial_cmp(&self, other: &StoredKey) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for StoredKey {
    fn cmp(&self, other: &StoredKey) -> Ordering {
        (**self).cmp(&**other)
    }
}

impl Hash for StoredKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (**self).hash(state);
    }
}

impl fmt::Debug for StoredKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, formatter)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashSet};

    use super::*;

    fn key_of(len: usize) -> Vec<u8> {
        (0..len).map(|index| index as u8).collect()
    }

    #[test]
    fn short_keys_are_inline_and_longer_ones_shared() {
        for len in [0, 1, INLINE_KEY_BYTES, INLINE_KEY_BYTES + 1, 300] {
            let key = key_of(len);
            let stored = StoredKey::from(&key[..]);
            assert_eq!(&*stored, &key[..], "a key of {len} bytes");
            assert_eq!(
                matches!(stored, StoredKey::Inline { .. }),
                len <= INLINE_KEY_BYTES,
                "a key of {len} bytes"
            );
        }
        assert_eq!(std::mem::size_of::<StoredKey>(), 32);
    }

    #[test]
    fn keys_are_found_ordered_and_hashed_by_their_bytes_inline_or_not() {
        let keys: Vec<Vec<u8>> = [0, 5, INLINE_KEY_BYTES, INLINE_KEY_BYTES + 1, 64]
            .into_iter()
            .map(key_of)
            .chain([b"b".to_vec(), b"ab".to_vec()])
            .collect();
        let hashed: HashSet<StoredKey> = keys.iter().map(|key| key[..].into()).collect();
        let ordered: BTreeSet<StoredKey> = keys.iter().map(|key| key[..].into()).collect();
        for key in &keys {
            assert!(hashed.contains(&key[..]), "{key:?}");
            assert!(ordered.contains(&key[..]), "{key:?}");
        }
        let mut sorted = keys.clone();
        sorted.sort();
        let in_order: Vec<&[u8]> = ordered.iter().map(|key| &**key).collect();
        assert_eq!(
            in_order,
            sorted.iter().map(Vec::as_slice).collect::<Vec<_>>()
        );
    }
}

//! [`StoredValue`]: an entry's encoded value, kept inside the entry when it is small.
//!
//! Most state values are a few bytes (a count and a sum as varints are three), and a heap
//! allocation for each costs a 32-byte block and a pointer on top of its bytes, and the
//! allocator's time when millions of them are made on a restore or freed with a partition.
//! Values of up to [`INLINE_BYTES`] live in the entry itself; larger ones on the heap.

use std::fmt;
use std::ops::Deref;

/// The largest value kept inside its entry: as many bytes as fit beside the length in the
/// size of a boxed slice and its tag.
pub(crate) const INLINE_BYTES: usize = 22;

/// An encoded value: inline up to [`INLINE_BYTES`], boxed beyond.
#[derive(Clone)]
pub(crate) enum StoredValue {
    /// `bytes[..len]` is the value.
    Inline { len: u8, bytes: [u8; INLINE_BYTES] },
    /// A value longer than [`INLINE_BYTES`].
    Boxed(Box<[u8]>),
}

impl StoredValue {
    /// Holds `value`, copying it into the entry when it fits and boxing it otherwise.
    pub(crate) fn from_slice(value: &[u8]) -> StoredValue {
        match inline(value) {
            Some((len, bytes)) => StoredValue::Inline { len, bytes },
            None => StoredValue::Boxed(value.into()),
        }
    }

    /// Holds `value`, keeping its allocation when it does not fit inline.
    pub(crate) fn from_vec(value: Vec<u8>) -> StoredValue {
        if value.len() <= INLINE_BYTES {
            StoredValue::from_slice(&value)
        } else {
            StoredValue::Boxed(value.into_boxed_slice())
        }
    }
}

/// `bytes`' length and a copy of them padded with zeros, if they fit in `N` bytes: the
/// inline form of [`StoredValue`] and [`StoredKey`](super::stored_key::StoredKey).
pub(super) fn inline<const N: usize>(bytes: &[u8]) -> Option<(u8, [u8; N])> {
    let len = u8::try_from(bytes.len())
        .ok()
        .filter(|_| bytes.len() <= N)?;
    let mut inline = [0; N];
    inline[..bytes.len()].copy_from_slice(bytes);
    Some((len, inline))
}

impl Deref for StoredValue {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            StoredValue::Inline { len, bytes } => &bytes[..usize::from(*len)],
            StoredValue::Boxed(bytes) => bytes,
        }
    }
}

impl PartialEq for StoredValue {
    fn eq(&self, other: &StoredValue) -> bool {
        **self == **other
    }
}

impl Eq for StoredValue {}

impl fmt::Debug for StoredValue {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, formatter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_up_to_the_inline_size_stay_in_the_entry_and_longer_ones_are_boxed() {
        for len in [0, 1, INLINE_BYTES - 1, INLINE_BYTES, INLINE_BYTES + 1, 1000] {
            let value: Vec<u8> = (0..len).map(|index| index as u8).collect();
            for stored in [
                StoredValue::from_slice(&value),
                StoredValue::from_vec(value.clone()),
            ] {
                assert_eq!(&*stored, &value[..], "a value of {len} bytes");
                assert_eq!(
                    matches!(stored, StoredValue::Inline { .. }),
                    len <= INLINE_BYTES,
                    "a value of {len} bytes"
                );
            }
        }
    }

    #[test]
    fn an_inline_value_takes_no_more_room_than_a_boxed_slice_and_a_tag() {
        assert_eq!(
            std::mem::size_of::<StoredValue>(),
            std::mem::size_of::<Box<[u8]>>() + 8
        );
    }

    #[test]
    fn equal_values_compare_equal_however_they_were_made() {
        let value = b"count and sum";
        assert_eq!(
            StoredValue::from_slice(value),
            StoredValue::from_vec(value.to_vec())
        );
        assert_ne!(StoredValue::from_slice(b"a"), StoredValue::from_slice(b"b"));
    }
}

//! [`CopyBuffer`]: where the consumer's polling thread copies records out of librdkafka.
//!
//! A consumed message lives in librdkafka's memory only until the next poll, so its key,
//! value and header values are copied into owned [`Bytes`]. Copied one by one, that is an
//! allocation (and later a free) per field, the largest item of the polling thread's profile.
//! Here they are appended to one chunk of [`CHUNK`] bytes and handed out as slices of it:
//! one allocation per chunk (about a thousand small records), an atomic reference count per
//! field. A chunk is freed once every record copied into it is dropped, so a record held
//! (until its input is committed, say) keeps at most one chunk alive; a field larger than
//! [`ALONE`] gets an allocation of its own rather than pinning a chunk.

use bytes::{Bytes, BytesMut};

/// Bytes per chunk.
pub(crate) const CHUNK: usize = 64 * 1024;
/// Fields larger than this are copied into an allocation of their own.
pub(crate) const ALONE: usize = CHUNK / 8;

/// Copies byte slices into shared chunks.
#[derive(Debug, Default)]
pub(crate) struct CopyBuffer {
    /// The free rest of the current chunk (its copied part is split off and shared).
    rest: BytesMut,
}

impl CopyBuffer {
    /// An owned copy of `bytes`.
    pub(crate) fn copy(&mut self, bytes: &[u8]) -> Bytes {
        if bytes.is_empty() {
            return Bytes::new();
        }
        if bytes.len() > ALONE {
            return Bytes::copy_from_slice(bytes);
        }
        if self.rest.capacity() < bytes.len() {
            // The old chunk stays alive as long as the records copied into it.
            self.rest = BytesMut::with_capacity(CHUNK);
        }
        self.rest.extend_from_slice(bytes);
        self.rest.split().freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_keep_their_bytes_across_chunks() {
        let mut buffer = CopyBuffer::default();
        let fields: Vec<Vec<u8>> = (0..20_000u32)
            .map(|n| {
                let length = (n as usize * 7) % 300;
                (0..length).map(|i| (n as usize + i) as u8).collect()
            })
            .collect();
        let copies: Vec<Bytes> = fields.iter().map(|field| buffer.copy(field)).collect();
        for (field, copy) in fields.iter().zip(&copies) {
            assert_eq!(&copy[..], &field[..]);
        }
        // 20,000 fields of 0 to 299 bytes (about 3 MB) span many chunks.
        let total: usize = fields.iter().map(Vec::len).sum();
        assert!(total > 20 * CHUNK, "the test crosses chunk boundaries");
    }

    #[test]
    fn small_fields_share_a_chunk_and_large_ones_do_not() {
        let mut buffer = CopyBuffer::default();
        let first = buffer.copy(b"key");
        let second = buffer.copy(b"value");
        // Adjacent slices of one allocation.
        assert_eq!(first.as_ptr().wrapping_add(first.len()), second.as_ptr());
        let large = vec![7u8; ALONE + 1];
        let alone = buffer.copy(&large);
        assert_eq!(&alone[..], &large[..]);
        let third = buffer.copy(b"next");
        assert_eq!(second.as_ptr().wrapping_add(second.len()), third.as_ptr());
        assert!(buffer.copy(b"").is_empty());
    }

    #[test]
    fn a_copy_outlives_the_buffer_and_its_neighbours() {
        let mut buffer = CopyBuffer::default();
        let kept = buffer.copy(b"kept");
        let dropped = buffer.copy(b"dropped");
        drop(dropped);
        drop(buffer);
        assert_eq!(&kept[..], b"kept");
    }
}

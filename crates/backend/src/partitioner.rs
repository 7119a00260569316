//! Choosing a partition from a record key the way Kafka's default partitioner does, so that
//! Runnel and plain Kafka clients agree on where a key lives.

/// The partition Kafka's default partitioner picks for `key` among `partitions`:
/// `toPositive(murmur2(key)) % partitions`.
///
/// ```
/// assert_eq!(runnel_backend::partition_for_key(b"sensor-7", 1), 0);
/// let p = runnel_backend::partition_for_key(b"sensor-7", 12);
/// assert_eq!(p, runnel_backend::partition_for_key(b"sensor-7", 12));
/// ```
///
/// # Panics
///
/// If `partitions` is zero.
pub fn partition_for_key(key: &[u8], partitions: u32) -> u32 {
    assert!(partitions > 0, "a topic has at least one partition");
    (murmur2(key) & 0x7fff_ffff) as u32 % partitions
}

/// Kafka's 32-bit murmur2 hash (`org.apache.kafka.common.utils.Utils.murmur2`).
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;

    let mut hash = SEED ^ data.len() as u32;
    let mut chunks = data.chunks_exact(4);
    for chunk in &mut chunks {
        let mut k = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        hash = hash.wrapping_mul(M);
        hash ^= k;
    }
    let tail = chunks.remainder();
    if tail.len() >= 3 {
        hash ^= u32::from(tail[2]) << 16;
    }
    if tail.len() >= 2 {
        hash ^= u32::from(tail[1]) << 8;
    }
    if !tail.is_empty() {
        hash ^= u32::from(tail[0]);
        hash = hash.wrapping_mul(M);
    }
    hash ^= hash >> 13;
    hash = hash.wrapping_mul(M);
    hash ^= hash >> 15;
    hash as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vectors of Kafka's own `UtilsTest.testMurmur2`.
    #[test]
    fn matches_kafka_test_vectors() {
        let cases: [(&str, i32); 6] = [
            ("21", -973_932_308),
            ("foobar", -790_332_482),
            ("a-little-bit-long-string", -985_981_536),
            ("a-little-bit-longer-string", -1_486_304_829),
            (
                "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
                -58_897_971,
            ),
            ("abc", 479_470_107),
        ];
        for (input, expected) in cases {
            assert_eq!(murmur2(input.as_bytes()), expected, "murmur2({input:?})");
        }
    }
}

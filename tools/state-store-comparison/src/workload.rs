//! The keys, values and orders of the workload: deterministic, so every candidate and every
//! run sees the same data in the same order.

/// Entries per write transaction or write batch.
pub(crate) const BATCH_SIZE: usize = 10_000;

/// A key: 16 bytes, like a card id.
pub(crate) type Key = [u8; 16];

/// A value: 48 bytes of running statistics (see [`Statistics`]).
pub(crate) type Value = [u8; 48];

/// The statistics a value holds: six little-endian `u64`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Statistics {
    /// How many records were folded in.
    pub(crate) count: u64,
    /// The sum of their amounts.
    pub(crate) sum: u64,
    /// The smallest amount.
    pub(crate) minimum: u64,
    /// The largest amount.
    pub(crate) maximum: u64,
    /// The event time of the first record.
    pub(crate) first_time: u64,
    /// The event time of the last record.
    pub(crate) last_time: u64,
}

impl Statistics {
    /// Decodes a value.
    pub(crate) fn decode(value: &[u8]) -> Statistics {
        let field = |index: usize| {
            let mut bytes = [0_u8; 8];
            bytes.copy_from_slice(&value[index * 8..index * 8 + 8]);
            u64::from_le_bytes(bytes)
        };
        Statistics {
            count: field(0),
            sum: field(1),
            minimum: field(2),
            maximum: field(3),
            first_time: field(4),
            last_time: field(5),
        }
    }

    /// Encodes the statistics as a value.
    pub(crate) fn encode(&self) -> Value {
        let mut value = [0_u8; 48];
        let fields = [
            self.count,
            self.sum,
            self.minimum,
            self.maximum,
            self.first_time,
            self.last_time,
        ];
        for (index, field) in fields.iter().enumerate() {
            value[index * 8..index * 8 + 8].copy_from_slice(&field.to_le_bytes());
        }
        value
    }

    /// Folds in one more record: what a streamlet's update does to the value of its key.
    pub(crate) fn fold(&mut self, amount: u64, time: u64) {
        self.count += 1;
        self.sum += amount;
        self.minimum = self.minimum.min(amount);
        self.maximum = self.maximum.max(amount);
        self.last_time = time;
    }
}

/// SplitMix64: a bijective mix of a `u64`, so distinct indexes give distinct keys.
fn mix(mut state: u64) -> u64 {
    state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    state = (state ^ (state >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    state = (state ^ (state >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    state ^ (state >> 31)
}

/// The key of the `index`th entry: two mixed words, so key order is unrelated to index order.
pub(crate) fn key(index: u64) -> Key {
    let mut key = [0_u8; 16];
    key[..8].copy_from_slice(&mix(index).to_be_bytes());
    key[8..].copy_from_slice(&mix(index ^ 0x5555_5555_5555_5555).to_be_bytes());
    key
}

/// The value the load writes for the `index`th entry: one record folded in.
pub(crate) fn initial_value(index: u64) -> Value {
    let amount = mix(index.wrapping_add(1)) % 10_000;
    Statistics {
        count: 1,
        sum: amount,
        minimum: amount,
        maximum: amount,
        first_time: 1_700_000_000_000,
        last_time: 1_700_000_000_000,
    }
    .encode()
}

/// The amount the update folds into the value of `key`.
pub(crate) fn update_amount(key: &Key) -> u64 {
    u64::from(key[0]) * 37 + u64::from(key[15])
}

/// The multiplier of the read order.
pub(crate) const READ_MULTIPLIER: u64 = 611_953;

/// The multiplier of the update order.
pub(crate) const UPDATE_MULTIPLIER: u64 = 387_541;

/// Whether both orders are permutations of `0..key_count`: an affine map modulo `key_count`
/// is one exactly when its multiplier is coprime to `key_count`.
pub(crate) fn orders_are_permutations(key_count: u64) -> bool {
    fn greatest_common_divisor(a: u64, b: u64) -> u64 {
        if b == 0 {
            a
        } else {
            greatest_common_divisor(b, a % b)
        }
    }
    greatest_common_divisor(READ_MULTIPLIER, key_count) == 1
        && greatest_common_divisor(UPDATE_MULTIPLIER, key_count) == 1
}

/// The index read at `position` of the read phase: a permutation of `0..key_count` when
/// [`orders_are_permutations`] holds.
pub(crate) fn read_order(position: u64, key_count: u64) -> u64 {
    (position.wrapping_mul(READ_MULTIPLIER).wrapping_add(123_457)) % key_count
}

/// The index updated at `position` of the update phase: another permutation, unlike the read
/// order and the load order.
pub(crate) fn update_order(position: u64, key_count: u64) -> u64 {
    (position.wrapping_mul(UPDATE_MULTIPLIER).wrapping_add(777)) % key_count
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn the_orders_visit_every_index_once() {
        let key_count = 1_000_000;
        assert!(orders_are_permutations(key_count));
        for order in [read_order, update_order] {
            let visited: HashSet<u64> = (0..key_count)
                .map(|position| order(position, key_count))
                .collect();
            assert_eq!(visited.len() as u64, key_count);
            assert!(visited.iter().all(|index| *index < key_count));
        }
    }

    #[test]
    fn a_key_count_sharing_a_factor_with_a_multiplier_is_refused() {
        // 611,953 = 7 x 87,421 + 6 is not a multiple of 7, but 387,541 = 7 x 55,363.
        assert!(!orders_are_permutations(70_000));
    }

    #[test]
    fn distinct_indexes_give_distinct_keys() {
        let keys: HashSet<Key> = (0..1_000_000).map(key).collect();
        assert_eq!(keys.len(), 1_000_000);
    }

    #[test]
    fn a_fold_counts_and_keeps_the_extremes() {
        let mut statistics = Statistics::decode(&initial_value(3));
        let loaded = statistics;
        statistics.fold(20_000, 5);
        let decoded = Statistics::decode(&statistics.encode());
        assert_eq!(decoded, statistics);
        assert_eq!(decoded.count, 2);
        assert_eq!(decoded.sum, loaded.sum + 20_000);
        assert_eq!(decoded.minimum, loaded.minimum);
        assert_eq!(decoded.maximum, 20_000);
        assert_eq!(decoded.first_time, loaded.first_time);
        assert_eq!(decoded.last_time, 5);
    }
}

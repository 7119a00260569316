//! Timers per key: [`TimeDomain`], [`Timer`], and their place in the store (ordered by
//! time, so the next one due is the first).

use super::store::PartitionStore;

/// The clock a timer follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeDomain {
    /// Fires when the partition's watermark reaches the timer's time.
    EventTime,
    /// Fires when the wall clock (the streamlet's `Clock`) reaches it.
    ProcessingTime,
}

impl TimeDomain {
    fn tag(self) -> u8 {
        match self {
            TimeDomain::EventTime => b'e',
            TimeDomain::ProcessingTime => b'p',
        }
    }
}

/// A timer that fired, from `KeyedState::next`. It is deleted
/// from the state as it fires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timer {
    /// The input partition of the key's state.
    pub partition: u32,
    /// The key it was set for.
    pub key: Vec<u8>,
    /// Its clock.
    pub domain: TimeDomain,
    /// The time it was set for (milliseconds since the Unix epoch).
    pub time: i64,
}

/// The prefix of the timers of `domain` in the store.
fn prefix(domain: TimeDomain) -> [u8; 2] {
    [b't', domain.tag()]
}

/// The store key of a timer: the prefix, the time (big-endian with the sign flipped, so
/// byte order is time order), then the key.
pub fn timer_key(domain: TimeDomain, time: i64, key: &[u8]) -> Vec<u8> {
    let mut stored = Vec::with_capacity(10 + key.len());
    stored.extend_from_slice(&prefix(domain));
    stored.extend_from_slice(&((time as u64) ^ (1 << 63)).to_be_bytes());
    stored.extend_from_slice(key);
    stored
}

/// The time of the next timer of `domain` on the partition, if any.
pub fn next_time(store: &PartitionStore, domain: TimeDomain) -> Option<i64> {
    let first = store.first_key(&prefix(domain))?;
    let time: [u8; 8] = first.get(2..10)?.try_into().ok()?;
    Some((u64::from_be_bytes(time) ^ (1 << 63)) as i64)
}

/// The pending timers of `key` in the store: a scan of every timer of the partition, in
/// time order (for queries, not for each message).
pub fn pending(store: &PartitionStore, key: &[u8]) -> Vec<(TimeDomain, i64)> {
    let mut found = Vec::new();
    for domain in [TimeDomain::EventTime, TimeDomain::ProcessingTime] {
        for (stored, _) in store.scan(&prefix(domain), i64::MIN) {
            let Some((time, timer_key)) =
                stored.get(2..).map(|rest| rest.split_at(8.min(rest.len())))
            else {
                continue;
            };
            if timer_key == key
                && let Ok(time) = <[u8; 8]>::try_from(time)
            {
                found.push((domain, (u64::from_be_bytes(time) ^ (1 << 63)) as i64));
            }
        }
    }
    found
}

/// Takes the next timer of `domain` due at `now` (a watermark or a clock reading) out of
/// the store.
pub fn take_due(
    store: &mut PartitionStore,
    partition: u32,
    domain: TimeDomain,
    now: i64,
) -> Option<Timer> {
    let time = next_time(store, domain).filter(|time| *time <= now)?;
    let stored = store.first_key(&prefix(domain))?.to_vec();
    store.delete(&stored);
    Some(Timer {
        partition,
        key: stored[10..].to_vec(),
        domain,
        time,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timers_come_out_in_time_order_across_signs_and_keys() {
        let mut store = PartitionStore::default();
        for (time, key) in [(5, &b"b"[..]), (-3, b"a"), (5, b"a"), (i64::MAX, b"z")] {
            store.put(
                &timer_key(TimeDomain::EventTime, time, key),
                Vec::new(),
                None,
            );
        }
        store.put(
            &timer_key(TimeDomain::ProcessingTime, -10, b"p"),
            Vec::new(),
            None,
        );
        let mut fired = Vec::new();
        while let Some(timer) = take_due(&mut store, 3, TimeDomain::EventTime, 5) {
            fired.push((timer.time, timer.key));
        }
        assert_eq!(
            fired,
            vec![(-3, b"a".to_vec()), (5, b"a".to_vec()), (5, b"b".to_vec())]
        );
        assert_eq!(next_time(&store, TimeDomain::EventTime), Some(i64::MAX));
        assert_eq!(next_time(&store, TimeDomain::ProcessingTime), Some(-10));
    }
}

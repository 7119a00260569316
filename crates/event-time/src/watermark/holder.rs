//! [`WatermarkHolder`]: per-partition watermarks, idleness, and their minimum.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Watermarks;

/// The watermark of one input: one watermark per partition, generated from the event
/// timestamps the partition delivers, combined as the minimum over the partitions that are
/// not idle. The combined watermark never goes back; if every partition is idle it stays
/// at the most advanced one.
///
/// A partition known to exist but silent so far (added with
/// [`add_partition`](Self::add_partition)) holds the watermark at its start until it
/// delivers or goes idle, so a slow partition's first records are not late because a fast
/// one raced ahead.
///
/// ```
/// use std::time::Duration;
/// use runnel_event_time::watermark::{WatermarkHolder, Watermarks};
/// let mut holder = WatermarkHolder::new(Watermarks::bounded(Duration::from_secs(1)));
/// assert_eq!(holder.observe(0, 5_000, 0), Some(4_000));
/// assert_eq!(holder.observe(0, 4_500, 0), None); // out of order, within the bound
/// assert_eq!(holder.current(), 4_000);
/// ```
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WatermarkHolder {
    #[serde(skip)]
    strategy: Watermarks,
    partitions: BTreeMap<u32, Partition>,
    current: i64,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Partition {
    /// The largest event timestamp delivered; `i64::MIN` before the first.
    max_timestamp: i64,
    /// The processing time of the last delivery (or of joining).
    last_active: i64,
    idle: bool,
}

impl WatermarkHolder {
    /// A holder with no partitions and no watermark yet.
    pub fn new(strategy: Watermarks) -> Self {
        WatermarkHolder {
            strategy,
            partitions: BTreeMap::new(),
            current: i64::MIN,
        }
    }

    /// Uses `strategy` from now on, for a holder restored from a checkpoint.
    pub fn with_strategy(mut self, strategy: Watermarks) -> Self {
        self.strategy = strategy;
        self
    }

    /// The combined watermark: `i64::MIN` before there is one, `i64::MAX` after
    /// [`finish`](Self::finish).
    pub fn current(&self) -> i64 {
        self.current
    }

    /// Declares a partition that exists, at processing time `now`, before it delivers
    /// anything. Known partitions are left alone.
    pub fn add_partition(&mut self, partition: u32, now: i64) {
        self.partitions.entry(partition).or_insert(Partition {
            max_timestamp: i64::MIN,
            last_active: now,
            idle: false,
        });
    }

    /// Accounts for a record of `partition` with event time `timestamp`, delivered at
    /// processing time `now`; returns the new combined watermark if it advanced.
    pub fn observe(&mut self, partition: u32, timestamp: i64, now: i64) -> Option<i64> {
        let state = self.partitions.entry(partition).or_insert(Partition {
            max_timestamp: i64::MIN,
            last_active: now,
            idle: false,
        });
        let raised = timestamp > state.max_timestamp;
        let woke = state.idle;
        state.max_timestamp = state.max_timestamp.max(timestamp);
        state.last_active = now;
        state.idle = false;
        if raised || woke {
            self.recompute()
        } else {
            None
        }
    }

    /// Marks partitions silent for the idle timeout as idle at processing time `now`;
    /// returns the new combined watermark if that advanced it.
    pub fn check_idle(&mut self, now: i64) -> Option<i64> {
        let timeout = self.strategy.idle_after_millis()?;
        let mut changed = false;
        for state in self.partitions.values_mut() {
            if !state.idle && now.saturating_sub(state.last_active) >= timeout {
                state.idle = true;
                changed = true;
            }
        }
        if changed { self.recompute() } else { None }
    }

    /// When the next partition would go idle, if none delivers before.
    pub fn next_idle_deadline(&self) -> Option<i64> {
        let timeout = self.strategy.idle_after_millis()?;
        self.partitions
            .values()
            .filter(|state| !state.idle)
            .map(|state| state.last_active.saturating_add(timeout))
            .min()
    }

    /// Whether `partition` is idle.
    pub fn is_idle(&self, partition: u32) -> bool {
        self.partitions
            .get(&partition)
            .is_some_and(|state| state.idle)
    }

    /// The input ended: the watermark goes to `i64::MAX`, completing every window.
    pub fn finish(&mut self) -> i64 {
        self.current = i64::MAX;
        self.current
    }

    fn recompute(&mut self) -> Option<i64> {
        let bound = self.strategy.bound_millis()?;
        let of = |state: &Partition| state.max_timestamp.saturating_sub(bound);
        let active = self
            .partitions
            .values()
            .filter(|state| !state.idle)
            .map(of)
            .min();
        let candidate = active.or_else(|| self.partitions.values().map(of).max())?;
        (candidate > self.current).then(|| {
            self.current = candidate;
            candidate
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn holder(idle_after_ms: u64) -> WatermarkHolder {
        WatermarkHolder::new(
            Watermarks::bounded(Duration::from_millis(100))
                .idle_after(Duration::from_millis(idle_after_ms)),
        )
    }

    #[test]
    fn the_watermark_is_the_minimum_over_partitions_and_never_goes_back() {
        let mut holder = holder(1_000);
        holder.observe(0, 1_000, 0);
        assert_eq!(holder.current(), 900);
        assert_eq!(
            holder.observe(1, 500, 0),
            None,
            "a new partition behind cannot lower it"
        );
        assert_eq!(holder.current(), 900);
        assert_eq!(
            holder.observe(0, 2_000, 0),
            None,
            "partition 1 holds it at 400 < 900"
        );
        assert_eq!(holder.observe(1, 1_600, 0), Some(1_500));
    }

    #[test]
    fn an_idle_partition_stops_holding_the_watermark_until_it_delivers_again() {
        let mut holder = holder(1_000);
        holder.add_partition(0, 0);
        holder.add_partition(1, 0);
        holder.observe(0, 5_000, 10);
        assert_eq!(holder.current(), i64::MIN);
        assert_eq!(holder.next_idle_deadline(), Some(1_000));
        assert_eq!(holder.check_idle(999), None);
        assert_eq!(holder.check_idle(1_000), Some(4_900));
        assert!(holder.is_idle(1) && !holder.is_idle(0));
        // Partition 1 wakes up behind: its record is late, the watermark stays.
        assert_eq!(holder.observe(1, 3_000, 1_200), None);
        assert!(!holder.is_idle(1));
        assert_eq!(holder.current(), 4_900);
        // Then it overtakes and holds the watermark again.
        holder.observe(0, 9_000, 1_300);
        assert_eq!(holder.observe(1, 6_000, 1_300), Some(5_900));
    }

    #[test]
    fn every_partition_idle_keeps_the_most_advanced_watermark() {
        let mut holder = holder(100);
        holder.observe(0, 1_000, 0);
        holder.observe(1, 3_000, 0);
        assert_eq!(holder.current(), 900);
        assert_eq!(holder.check_idle(100), Some(2_900));
        assert_eq!(holder.next_idle_deadline(), None);
    }

    #[test]
    fn batch_watermarks_only_move_at_the_end() {
        let mut holder = WatermarkHolder::new(Watermarks::at_end_of_input());
        assert_eq!(holder.observe(0, 1_000, 0), None);
        assert_eq!(holder.check_idle(1_000_000), None);
        assert_eq!(holder.current(), i64::MIN);
        assert_eq!(holder.finish(), i64::MAX);
    }
}

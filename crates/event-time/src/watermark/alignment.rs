//! [`Alignment`]: keeps a streamlet's inputs near each other in event time while one of
//! them catches up.

use crate::watermark::Watermarks;

/// How far in event time one input of a streamlet may read ahead of another that is still
/// delivering: Flink's watermark alignment, for the inlets of one streamlet.
///
/// A join of two inputs started over a backlog reads both as fast as it can, so the input
/// with fewer records per second of event time (auctions beside bids) runs minutes or hours
/// ahead of the other, and everything it read ahead waits in the join's state for the
/// other to catch up: memory grows with the backlog. With an alignment, the streamlet asks
/// [`may_read`](Self::may_read) before it reads an input and leaves one that has run more
/// than `max_drift` ahead of another unread until that one catches up.
///
/// An input holds the others back only while it is busy, having delivered a record (or
/// started) within the last `busy_within` of processing time: one with nothing to deliver
/// (it caught up with its log, or its partitions are quiet) holds nobody, so holding never
/// stalls a streamlet for longer. An input that has delivered nothing yet holds every
/// input that has while it is busy, so the first to deliver does not race through its
/// backlog before the other's first record. Holding changes only the order records are
/// read in, not what they give: the input held back is ahead, so its records are not late
/// when it resumes.
///
/// ```
/// use runnel_event_time::watermark::Alignment;
///
/// let mut alignment = Alignment::new(2, 10_000, 200, 0);
/// alignment.observe(0, 60_000, 0); // auctions at 60 s of event time
/// assert!(!alignment.may_read(0, 0)); // bids have not delivered yet
/// alignment.observe(1, 5_000, 0); // bids at 5 s, delivering
/// assert!(!alignment.may_read(0, 10)); // auctions wait
/// assert!(alignment.may_read(1, 10));
/// assert_eq!(alignment.next_release(10), Some(200));
/// alignment.observe(1, 51_000, 100); // bids caught up to within 10 s
/// assert!(alignment.may_read(0, 100));
/// alignment.observe(1, 51_500, 150);
/// alignment.observe(0, 70_000, 150);
/// assert!(alignment.may_read(0, 400)); // bids delivered nothing for 250 ms
/// ```
#[derive(Clone, Debug)]
pub struct Alignment {
    max_drift: i64,
    busy_within: i64,
    inputs: Vec<Input>,
}

#[derive(Clone, Copy, Debug)]
struct Input {
    /// The largest event time delivered, if any.
    seen: Option<i64>,
    /// The processing time of the last delivery, or of the start.
    delivered_at: i64,
    ended: bool,
}

impl Alignment {
    /// The drift inputs are read within unless [`Watermarks::max_drift`] says otherwise:
    /// 10 s of event time, well beyond the out-of-orderness watermarks usually allow, so
    /// inputs in step are never held.
    pub const DEFAULT_MAX_DRIFT_MILLIS: i64 = 10_000;
    /// How long an input that delivered a record holds the others in Runnel's joins: 1 s,
    /// long enough to ride out a fetch that takes a while (once released, an input held
    /// back reads as fast as it can).
    pub const DEFAULT_BUSY_WITHIN_MILLIS: i64 = 1_000;

    /// An alignment of `inputs` inputs started at processing time `now`, within the drift
    /// `watermarks` allows ([`Watermarks::max_drift`]), an input counted busy for the
    /// default second; where they are [`unaligned`](Watermarks::unaligned), no input is
    /// ever held.
    ///
    /// ```
    /// use std::time::Duration;
    /// use runnel_event_time::watermark::{Alignment, Watermarks};
    ///
    /// let watermarks = Watermarks::bounded(Duration::from_secs(1));
    /// let mut aligned = Alignment::following(2, &watermarks.max_drift(Duration::from_secs(30)), 0);
    /// let mut unaligned = Alignment::following(2, &watermarks.unaligned(), 0);
    /// for alignment in [&mut aligned, &mut unaligned] {
    ///     alignment.observe(0, 60_000, 0);
    ///     alignment.observe(1, 20_000, 0);
    /// }
    /// assert!(!aligned.may_read(0, 10), "40 s ahead of a busy input");
    /// assert!(unaligned.may_read(0, 10));
    /// ```
    pub fn following(inputs: usize, watermarks: &Watermarks, now: i64) -> Self {
        let drift = watermarks.max_drift_millis();
        let mut alignment = Alignment::new(
            inputs,
            drift.unwrap_or(Self::DEFAULT_MAX_DRIFT_MILLIS),
            Self::DEFAULT_BUSY_WITHIN_MILLIS,
            now,
        );
        if drift.is_none() {
            for input in 0..inputs {
                alignment.end(input);
            }
        }
        alignment
    }

    /// An alignment of `inputs` inputs, numbered from 0, started at processing time `now`:
    /// none may read more than `max_drift_millis` of event time ahead of another that
    /// delivered a record (or started) within the last `busy_within_millis` of processing
    /// time.
    pub fn new(inputs: usize, max_drift_millis: i64, busy_within_millis: i64, now: i64) -> Self {
        let started = Input {
            seen: None,
            delivered_at: now,
            ended: false,
        };
        Alignment {
            max_drift: max_drift_millis.max(0),
            busy_within: busy_within_millis.max(1),
            inputs: vec![started; inputs],
        }
    }

    /// Accounts for a record of `input` with event time `time`, delivered at processing time
    /// `now`.
    pub fn observe(&mut self, input: usize, time: i64, now: i64) {
        let state = &mut self.inputs[input];
        state.seen = Some(state.seen.map_or(time, |seen| seen.max(time)));
        state.delivered_at = now;
    }

    /// `input` takes no more part: it ended (a bounded input was read to its end), or its
    /// records have no event time to align by. It holds nobody any more.
    pub fn end(&mut self, input: usize) {
        self.inputs[input].ended = true;
    }

    /// Whether `input` may be read at processing time `now`: no busy input is more than the
    /// drift behind it.
    pub fn may_read(&self, input: usize, now: i64) -> bool {
        self.holding(input, now).is_none()
    }

    /// The processing time at which an input held now would be released if the inputs
    /// holding it delivered nothing more: for the streamlet's timer. `None` when no input
    /// is held.
    pub fn next_release(&self, now: i64) -> Option<i64> {
        (0..self.inputs.len())
            .filter_map(|input| self.holding(input, now))
            .min()
    }

    /// When the inputs holding `input` back stop being busy (the latest of their last
    /// deliveries, plus `busy_within`), or `None` if none does.
    fn holding(&self, input: usize, now: i64) -> Option<i64> {
        let ahead = self.inputs[input].seen?;
        self.inputs
            .iter()
            .filter(|other| !other.ended)
            .filter_map(|other| {
                let busy_until = other.delivered_at.saturating_add(self.busy_within);
                let behind = other
                    .seen
                    .is_none_or(|seen| seen.saturating_add(self.max_drift) < ahead);
                (behind && now < busy_until).then_some(busy_until)
            })
            .max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_ahead_waits_for_a_busy_one_and_not_for_an_ended_one() {
        let mut alignment = Alignment::new(3, 1_000, 100, 0);
        alignment.observe(0, 10_000, 0);
        alignment.observe(1, 8_800, 0);
        alignment.observe(2, 9_500, 0);
        assert!(!alignment.may_read(0, 50));
        assert!(alignment.may_read(1, 50) && alignment.may_read(2, 50));
        alignment.end(1);
        assert!(alignment.may_read(0, 50), "input 2 is within the drift");
    }

    #[test]
    fn an_input_yet_to_deliver_holds_the_others_while_it_is_busy_starting() {
        let mut alignment = Alignment::new(2, 0, 100, 1_000);
        alignment.observe(0, 10_000, 1_000);
        assert!(!alignment.may_read(0, 1_050) && alignment.may_read(1, 1_050));
        assert_eq!(alignment.next_release(1_050), Some(1_100));
        assert!(
            alignment.may_read(0, 1_100),
            "input 1 never delivered: it is quiet"
        );
    }

    #[test]
    fn a_held_input_is_released_when_the_latest_busy_input_goes_quiet() {
        let mut alignment = Alignment::new(3, 0, 100, 0);
        alignment.observe(0, 10_000, 0);
        alignment.observe(1, 1_000, 0);
        alignment.observe(2, 1_000, 40);
        assert_eq!(alignment.next_release(50), Some(140));
        assert!(!alignment.may_read(0, 139));
        assert!(alignment.may_read(0, 140));
        assert_eq!(alignment.next_release(140), None);
    }
}

//! [`TwoInputs`]: a streamlet that joins two inlets in event time through a [`Join`]: the
//! Nexmark queries that combine persons, auctions and bids (q3, q8, q9) are each a `Join`.
//!
//! The streamlet owns what every such join needs: it reads both inlets as records arrive,
//! keeps one watermark over the partitions of both (one [`WatermarkHolder`]: the minimum
//! over the partitions that are not idle), hands each value and each watermark advance to
//! the join, sends what the join emits stamped with its event time, commits each input
//! after the outputs it caused, counts values the join refuses as late, and checkpoints
//! the join's state with the input offsets it reflects (every second while input arrives,
//! and when it stops), so a restart resumes with exactly the state of the committed input.
//! When both inputs end, the watermark goes to the end of time and the join emits the rest.
//!
//! Over a backlog the two inputs are read in step ([`Alignment`], with its defaults): an
//! input more than 10 s of event time ahead of the other waits while the other is
//! delivering, so the join does not hold the backlog of its sparser input (auctions beside
//! bids) in its state until the other catches up.
//!
//! The state is checkpointed by what changed ([`JoinState`]): the keys changed since the
//! last checkpoint go to the instance's changelog, and the checkpoint record holds only the
//! watermarks. A state that grows with its input (q3 keeps every person) thus never has to
//! fit one record of the log (Kafka refuses records over 1 MB by default), and a checkpoint
//! costs what changed, not the whole state.

use std::time::Duration;

use futures::FutureExt;
use runnel::checkpoint::{ChangelogEntriesBuilder, ReplayTarget, Snapshots};
use runnel::prelude::*;
use runnel::watermark::{Alignment, WatermarkHolder, Watermarks};
use runnel::{Checkpoints, OutletSender};
use tokio::time::Instant;

/// The inputs' numbers in the [`Alignment`].
const LEFT: usize = 0;
const RIGHT: usize = 1;

/// What became of a value given to a [`Join`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// In the join's state, matched, or not wanted by the query (filtered out).
    Accepted,
    /// Behind the watermark where the join can no longer use it: counted as late.
    Late,
}

/// What a [`Join`] keeps, checkpointed by what changed: it writes the entries of the keys
/// changed since it last did, and reads them back ([`ReplayTarget`]) after a restart.
pub trait JoinState: Default + Send + ReplayTarget {
    /// Appends an entry per key changed since the last call (every key, for a
    /// `snapshot`); returns how many.
    fn take_changes(&mut self, snapshot: bool, entries: &mut ChangelogEntriesBuilder) -> u64;
}

/// The logic of a two-input event-time join: what to keep of each input and what to emit
/// when the watermark advances. `State` is everything it keeps.
pub trait Join: Send + Sync + 'static {
    /// The left inlet's values.
    type Left: Data;
    /// The right inlet's values.
    type Right: Data;
    /// What the join emits.
    type Output: Data;
    /// What it keeps between values.
    type State: JoinState;

    /// The event time of a left value.
    fn left_time(&self, left: &Self::Left) -> i64;
    /// The event time of a right value.
    fn right_time(&self, right: &Self::Right) -> i64;
    /// The event time of an output (its record's timestamp).
    fn output_time(&self, output: &Self::Output) -> i64;

    /// Takes a left value, given the current watermark; pushes any outputs it completes.
    fn left(
        &self,
        state: &mut Self::State,
        left: &Self::Left,
        watermark: i64,
        outputs: &mut Vec<Self::Output>,
    ) -> Taken;

    /// Takes a right value, given the current watermark; pushes any outputs it completes.
    fn right(
        &self,
        state: &mut Self::State,
        right: &Self::Right,
        watermark: i64,
        outputs: &mut Vec<Self::Output>,
    ) -> Taken;

    /// The watermark advanced to `watermark` (`i64::MAX` when both inputs ended): pushes
    /// what it completes and drops what it can no longer use.
    fn advance(&self, state: &mut Self::State, watermark: i64, outputs: &mut Vec<Self::Output>);
}

/// A streamlet running a [`Join`] over two inlets, with one outlet.
pub struct TwoInputs<J: Join> {
    join: J,
    left: Inlet<J::Left>,
    right: Inlet<J::Right>,
    output: Outlet<J::Output>,
    watermarks: Watermarks,
    checkpoint_every: Duration,
    description: &'static str,
}

impl<J: Join> TwoInputs<J> {
    /// Runs `join` over `left` and `right`, sending its outputs to `output`, with
    /// watermarks generated per partition by `watermarks`.
    pub fn new(
        join: J,
        left: Inlet<J::Left>,
        right: Inlet<J::Right>,
        output: Outlet<J::Output>,
        watermarks: Watermarks,
    ) -> Self {
        TwoInputs {
            join,
            left,
            right,
            output,
            watermarks,
            checkpoint_every: Duration::from_secs(1),
            description: "",
        }
    }

    /// Says what the streamlet does (shown by `describe`).
    pub fn describe(mut self, description: &'static str) -> Self {
        self.description = description;
        self
    }
}

/// The left inlet's partition `p` is `2p` in the shared watermark holder, the right's
/// `2p + 1`.
fn left_partition(partition: u32) -> u32 {
    partition * 2
}

fn right_partition(partition: u32) -> u32 {
    partition * 2 + 1
}

/// What the checkpoint record holds beside the changelog. A record written when the join's
/// state was checkpointed whole has a `state` too, and is refused.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Saved {
    watermarks: WatermarkHolder,
}

/// Writes the join state's changes (every entry, when `snapshots` says a snapshot is due)
/// and saves them with the watermarks.
fn save<S: JoinState>(
    checkpoints: Option<&Checkpoints>,
    snapshots: &mut Snapshots,
    state: &mut S,
    watermarks: &WatermarkHolder,
) -> Result<()> {
    let Some(checkpoints) = checkpoints else {
        return Ok(());
    };
    let snapshot = snapshots.due(state.held_entries());
    let mut entries = ChangelogEntriesBuilder::default();
    snapshots.wrote(snapshot, state.take_changes(snapshot, &mut entries));
    let saved = serde_json::to_vec(&Saved {
        watermarks: watermarks.clone(),
    })
    .map_err(|error| Error::msg(format!("the join's watermarks do not serialize: {error}")))?;
    checkpoints.save_with_changes(saved, entries.finish(), snapshot);
    Ok(())
}

impl<J: Join> Streamlet for TwoInputs<J> {
    fn shape(&self) -> Shape {
        Shape::new()
            .describe(self.description)
            .inlet(self.left)
            .inlet(self.right)
            .outlet(self.output)
            .checkpointed_with_changelog()
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let join = self.join;
        let (mut left, mut right) = (ctx.inlet(self.left), ctx.inlet(self.right));
        let output = ctx.outlet(self.output);
        let clock = ctx.clock().clone();
        let checkpoints = ctx.checkpoints();
        let mut watermarks = match checkpoints.as_ref().and_then(Checkpoints::restored) {
            Some(saved) => {
                let saved: Saved = serde_json::from_slice(saved).map_err(|error| {
                    Error::msg(format!(
                        "the last checkpoint of join '{}' does not decode ({error}); a checkpoint written before its state had a changelog cannot be read: delete its checkpoint topic to start from empty state",
                        ctx.instance()
                    ))
                })?;
                saved.watermarks.with_strategy(self.watermarks)
            }
            None => WatermarkHolder::new(self.watermarks),
        };
        let mut state = J::State::default();
        let mut snapshots = Snapshots::default();
        if let Some(checkpoints) = &checkpoints {
            checkpoints.replay_changelog(&mut state).await?;
            if checkpoints.snapshot_due() {
                snapshots.ask();
            }
        }
        // Both inlets' partitions, once their groups assigned them, so the first records of
        // one inlet cannot move the watermark past those the other has still to deliver.
        let (left_assigned, right_assigned) = (
            left.assigned_partitions().await,
            right.assigned_partitions().await,
        );
        let start = clock.now_millis();
        for partition in left_assigned {
            watermarks.add_partition(left_partition(partition), start);
        }
        for partition in right_assigned {
            watermarks.add_partition(right_partition(partition), start);
        }
        let (mut left_open, mut right_open) = (true, true);
        let mut alignment = Alignment::following(2, &self.watermarks, start);
        let mut next_checkpoint: Option<Instant> = None;
        let mut outputs = Vec::new();
        while left_open || right_open {
            let now = clock.now_millis();
            let read_left = left_open && alignment.may_read(LEFT, now);
            let read_right = right_open && alignment.may_read(RIGHT, now);
            let deadline = [watermarks.next_idle_deadline(), alignment.next_release(now)]
                .into_iter()
                .flatten()
                .min();
            let wake = match deadline {
                Some(deadline) => clock.sleep_until(deadline),
                None => std::future::pending().boxed(),
            };
            let checkpoint_due = async {
                match next_checkpoint {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                () = checkpoint_due => {
                    save(checkpoints.as_ref(), &mut snapshots, &mut state, &watermarks)?;
                    next_checkpoint = None;
                    continue;
                }
                () = wake => {
                    if let Some(watermark) = watermarks.check_idle(clock.now_millis()) {
                        join.advance(&mut state, watermark, &mut outputs);
                        send(&join, &output, &mut outputs).await?;
                    }
                    continue;
                }
                message = left.next(), if read_left => match message? {
                    None => {
                        left_open = false;
                        alignment.end(LEFT);
                    }
                    Some(message) => {
                        let time = join.left_time(message.value());
                        let taken = join.left(&mut state, message.value(), watermarks.current(), &mut outputs);
                        if taken == Taken::Late {
                            ctx.count_late(1);
                        }
                        let now = clock.now_millis();
                        alignment.observe(LEFT, time, now);
                        if let Some(watermark) = watermarks.observe(left_partition(message.partition()), time, now) {
                            join.advance(&mut state, watermark, &mut outputs);
                        }
                        send(&join, &output, &mut outputs).await?;
                        message.commit();
                    }
                },
                message = right.next(), if read_right => match message? {
                    None => {
                        right_open = false;
                        alignment.end(RIGHT);
                    }
                    Some(message) => {
                        let time = join.right_time(message.value());
                        let taken = join.right(&mut state, message.value(), watermarks.current(), &mut outputs);
                        if taken == Taken::Late {
                            ctx.count_late(1);
                        }
                        let now = clock.now_millis();
                        alignment.observe(RIGHT, time, now);
                        if let Some(watermark) = watermarks.observe(right_partition(message.partition()), time, now) {
                            join.advance(&mut state, watermark, &mut outputs);
                        }
                        send(&join, &output, &mut outputs).await?;
                        message.commit();
                    }
                },
            }
            ctx.report_watermark(watermarks.current());
            next_checkpoint.get_or_insert_with(|| Instant::now() + self.checkpoint_every);
        }
        if !ctx.is_stopping() {
            // Both bounded inputs ended: everything the join holds is complete.
            join.advance(&mut state, watermarks.finish(), &mut outputs);
            send(&join, &output, &mut outputs).await?;
        }
        save(
            checkpoints.as_ref(),
            &mut snapshots,
            &mut state,
            &watermarks,
        )
    }
}

async fn send<J: Join>(
    join: &J,
    output: &OutletSender<J::Output>,
    outputs: &mut Vec<J::Output>,
) -> Result<()> {
    for value in outputs.drain(..) {
        output
            .send_record(Outgoing::new(&value).timestamp(join.output_time(&value)))
            .await?;
    }
    Ok(())
}

impl<J: Join> std::fmt::Debug for TwoInputs<J> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwoInputs")
            .field("left", &self.left)
            .field("right", &self.right)
            .field("output", &self.output)
            .field("watermarks", &self.watermarks)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runnel::testkit::TestRun;

    const LEFT_IN: Inlet<i64> = Inlet::new("left");
    const RIGHT_IN: Inlet<i64> = Inlet::new("right");
    const OUT: Outlet<i64> = Outlet::new("out");

    /// Emits, once both inputs end, the furthest the left input was read ahead of the
    /// right one in event time.
    struct Drift;

    #[derive(Default)]
    struct Seen {
        left: i64,
        right: i64,
        widest: i64,
    }

    impl ReplayTarget for Seen {
        fn apply(&mut self, _: &[u8], _: Option<&[u8]>) -> bool {
            true
        }
        fn mark_changed(&mut self, _: &[u8]) {}
        fn held_entries(&self) -> u64 {
            0
        }
    }

    impl JoinState for Seen {
        fn take_changes(&mut self, _: bool, _: &mut ChangelogEntriesBuilder) -> u64 {
            0
        }
    }

    impl Join for Drift {
        type Left = i64;
        type Right = i64;
        type Output = i64;
        type State = Seen;

        fn left_time(&self, left: &i64) -> i64 {
            *left
        }
        fn right_time(&self, right: &i64) -> i64 {
            *right
        }
        fn output_time(&self, _: &i64) -> i64 {
            0
        }
        fn left(&self, seen: &mut Seen, time: &i64, _: i64, _: &mut Vec<i64>) -> Taken {
            seen.left = seen.left.max(*time);
            seen.widest = seen.widest.max(seen.left - seen.right);
            Taken::Accepted
        }
        fn right(&self, seen: &mut Seen, time: &i64, _: i64, _: &mut Vec<i64>) -> Taken {
            seen.right = seen.right.max(*time);
            Taken::Accepted
        }
        fn advance(&self, seen: &mut Seen, watermark: i64, outputs: &mut Vec<i64>) {
            if watermark == i64::MAX {
                outputs.push(seen.widest);
            }
        }
    }

    /// How far ahead of the right input, in event time, the left was read at most, over a
    /// backlog of 100 s: a left value a second, a right value every 10 ms.
    async fn widest_drift(watermarks: Watermarks) -> anyhow::Result<i64> {
        let run = TestRun::new(TwoInputs::new(Drift, LEFT_IN, RIGHT_IN, OUT, watermarks))
            .input(LEFT_IN, (0..100).map(|second| second * 1_000))
            .input(RIGHT_IN, (0..10_000).map(|step| step * 10))
            .run()
            .await?;
        Ok(run.output(OUT)[0])
    }

    #[tokio::test]
    async fn over_a_backlog_the_sparse_input_is_read_in_step_with_the_dense_one()
    -> anyhow::Result<()> {
        let watermarks = Watermarks::bounded(Duration::from_secs(1));
        let widest = widest_drift(watermarks).await?;
        let drift = Alignment::DEFAULT_MAX_DRIFT_MILLIS;
        assert!(
            (0..=drift + 1_000).contains(&widest),
            "the left input was read {widest} ms ahead"
        );
        let widest = widest_drift(watermarks.max_drift(Duration::from_secs(2))).await?;
        assert!(
            (0..=3_000).contains(&widest),
            "with a drift of 2 s, the left input was read {widest} ms ahead"
        );
        let widest = widest_drift(watermarks.unaligned()).await?;
        assert!(
            widest > 3 * drift,
            "unaligned, the left input was read only {widest} ms ahead"
        );
        Ok(())
    }
}

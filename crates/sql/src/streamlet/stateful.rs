//! How a SQL streamlet runs a stateful query (group windows, joins): batches of each
//! inlet go through the query's [`Flow`], whose windows fire as watermarks pass their
//! ends; each result is sent as a record of its own, and the state of every window, join
//! and aggregate is checkpointed with the input offsets it reflects: what changed since the
//! last checkpoint goes to the changelog, as the `WindowedAggregate` helper's keys do.

use std::time::Duration;

use futures::FutureExt;
use futures::future::select_all;
use runnel_streamlet::watermark::{Alignment, Watermarks};
use runnel_streamlet::{
    AvroDatum, Checkpoints, Context, Error, InletStream, Message, Outgoing, OutletSender, Result,
    ThrottledWarning, WARNING_INTERVAL_MILLIS,
};
use tokio::time::Instant;

use super::{BATCH, OUTLET, Writers, by_writer, fill_batch};
use crate::flow::Flow;
use crate::{Query, RowKind};

/// How often the state is checkpointed while records arrive.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// An inlet of the query, by input index, until its input ends.
struct Input {
    table: String,
    stream: InletStream<AvroDatum>,
    writers: Writers,
    ended: bool,
}

/// What woke the loop.
enum Event {
    /// The state is due for a checkpoint.
    CheckpointDue,
    /// An input's next message, or its end.
    Message(usize, Option<Box<Message<AvroDatum>>>),
    /// The test kit moved the watermark.
    Watermark(i64),
    /// A processing-time trigger or an idle partition is due.
    Wake,
}

/// Runs `query`, which [is stateful](Query::is_stateful), its windows following `strategy`.
pub(super) async fn run(query: &Query, strategy: Watermarks, mut ctx: Context) -> Result<()> {
    let mut inputs: Vec<Input> = query
        .inputs()
        .iter()
        .map(|table| Input {
            table: table.name().to_owned(),
            stream: ctx.datum_inlet(table.name()),
            writers: Writers::default(),
            ended: false,
        })
        .collect();
    let out = ctx.datum_outlet(OUTLET);
    let clock = ctx.clock().clone();
    let mut scripted = ctx.scripted_watermarks();
    let mut flow = Flow::new(query, strategy);
    let checkpoints = ctx.checkpoints();
    if let Some(checkpoints) = &checkpoints {
        checkpoints.replay_changelog(&mut flow).await?;
        flow.restore(checkpoints.restored(), strategy)
            .map_err(|error| {
                Error::msg(format!(
                    "the last checkpoint of the query's state does not decode: {error}"
                ))
            })?;
        if checkpoints.snapshot_due() {
            flow.snapshot_next();
        }
    }
    // Every input's partitions, once its group assigned them, so the first records of one
    // cannot move the watermark past those another has still to deliver.
    let mut assigned = Vec::with_capacity(inputs.len());
    for input in &inputs {
        assigned.push(input.stream.assigned_partitions().await);
    }
    let start = clock.now_millis();
    for (index, partitions) in assigned.into_iter().enumerate() {
        for partition in partitions {
            flow.add_partition(index, partition, start);
        }
    }
    if let Some(scripted) = &mut scripted {
        flow.advance(start, Some(scripted.current()), false);
    }
    // Over a backlog, inputs are read in step: one far ahead in event time waits for the
    // others, so a join does not hold the read-ahead of its sparser input. Inputs without
    // event time take no part.
    let mut alignment = Alignment::following(inputs.len(), &strategy, start);
    for index in 0..inputs.len() {
        if !flow.has_event_time(index) {
            alignment.end(index);
        }
    }
    let mut late = ThrottledWarning::new(WARNING_INTERVAL_MILLIS);
    let mut batch: Vec<Message<AvroDatum>> = Vec::with_capacity(BATCH);
    let mut next_checkpoint: Option<Instant> = None;
    while inputs.iter().any(|input| !input.ended) {
        let now = clock.now_millis();
        let deadline = [
            flow.next_deadline(scripted.is_some()),
            alignment.next_release(now),
        ]
        .into_iter()
        .flatten()
        .min();
        let wake = match deadline {
            Some(deadline) => clock.sleep_until(deadline),
            None => std::future::pending().boxed(),
        };
        let scripted_change = async {
            match &mut scripted {
                Some(scripted) => scripted.changed().await,
                None => std::future::pending().await,
            }
        };
        let checkpoint_due = async {
            match next_checkpoint {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let readable: Vec<_> = inputs
            .iter_mut()
            .enumerate()
            .filter(|(index, input)| !input.ended && alignment.may_read(*index, now))
            .map(|(index, input)| async move { (index, input.stream.next().await) }.boxed())
            .collect();
        // The input furthest behind is never held, but `select_all` of none would panic.
        let next_message = async move {
            if readable.is_empty() {
                std::future::pending().await
            } else {
                select_all(readable).await.0
            }
        };
        let event = tokio::select! {
            biased;
            () = checkpoint_due => Event::CheckpointDue,
            (index, message) = next_message => Event::Message(index, message?.map(Box::new)),
            watermark = scripted_change => Event::Watermark(watermark),
            () = wake => Event::Wake,
        };
        match event {
            Event::CheckpointDue => {
                save(checkpoints.as_ref(), &mut flow);
                next_checkpoint = None;
            }
            Event::Message(index, None) => {
                inputs[index].ended = true;
                alignment.end(index);
            }
            Event::Message(index, Some(message)) => {
                let input = &mut inputs[index];
                batch.push(*message);
                fill_batch(&mut input.stream, &mut batch).await?;
                let now = clock.now_millis();
                let follows_script = scripted.is_some();
                let processed = by_writer(
                    &input.table,
                    &batch,
                    &input.stream,
                    &mut input.writers,
                    |writer, records, indices| {
                        let partitions: Vec<u32> =
                            indices.iter().map(|at| batch[*at].partition()).collect();
                        flow.add(index, writer, records, &partitions, now, follows_script)
                    },
                );
                if let Some(time) = flow.latest_time(index) {
                    alignment.observe(index, time, now);
                }
                report_late(&ctx, &mut flow, &mut late, now);
                send(&out, &mut flow).await?;
                let mut rejected = processed.rejected.into_iter().peekable();
                for (at, message) in batch.drain(..).enumerate() {
                    match rejected.next_if(|(index, _)| *index == at) {
                        Some((_, error)) => message.reject(error).await?,
                        None => message.commit(),
                    }
                }
                next_checkpoint.get_or_insert_with(|| Instant::now() + CHECKPOINT_EVERY);
            }
            Event::Watermark(watermark) => {
                flow.advance(clock.now_millis(), Some(watermark), false);
                if send(&out, &mut flow).await? {
                    next_checkpoint.get_or_insert_with(|| Instant::now() + CHECKPOINT_EVERY);
                }
            }
            Event::Wake => {
                let now = clock.now_millis();
                flow.advance(now, None, false);
                // Results without new input are checkpointed too: an exactly-once
                // instance's results become visible only with a checkpoint.
                if send(&out, &mut flow).await? {
                    next_checkpoint.get_or_insert_with(|| Instant::now() + CHECKPOINT_EVERY);
                }
            }
        }
        if let Some(watermark) = flow.watermark() {
            ctx.report_watermark(watermark);
        }
    }
    if !ctx.is_stopping() {
        // Every input ended (they were bounded): every window is complete.
        flow.advance(clock.now_millis(), None, true);
        send(&out, &mut flow).await?;
    }
    save(checkpoints.as_ref(), &mut flow);
    Ok(())
}

/// Counts the rows too late for their windows in the instance's `late` metric, and logs
/// them at most every few seconds.
fn report_late(ctx: &Context, flow: &mut Flow<'_>, warning: &mut ThrottledWarning, now: i64) {
    let late = flow.take_late();
    if late == 0 {
        return;
    }
    ctx.count_late(late);
    if let Some(suppressed) = warning.occurred(now) {
        tracing::warn!(
            late,
            watermark = flow.watermark(),
            "dropping records that are too late for their windows; {suppressed} more batches \
             with late records since the last such warning, which is logged at most every {} s \
             (the instance's `late` metric counts every record)",
            WARNING_INTERVAL_MILLIS / 1000
        );
    }
}

/// Sends the results the flow has, those of windows stamped with their pane's event time
/// (the last millisecond of its window) and its window and pane metadata in headers
/// (`docs/wire-format.md`). Says whether there were any.
async fn send(out: &OutletSender<AvroDatum>, flow: &mut Flow<'_>) -> Result<bool> {
    let results = flow.take_results();
    let any = !results.is_empty();
    for produced in results {
        let value = AvroDatum::new(produced.bytes);
        let mut record = Outgoing::new(&value);
        if let Some(stamp) = produced.stamp {
            record = record.timestamp(stamp.time);
            for (header, value) in stamp.headers() {
                record = record.header(header, value);
            }
        }
        if let Some(kind) = produced.kind {
            record = record.header(RowKind::HEADER, kind.as_str());
        }
        out.send_record(record).await?;
    }
    Ok(any)
}

/// Checkpoints the state, with the input offsets committed so far: what changed since the
/// last checkpoint to the changelog, and the watermarks to the checkpoint record.
fn save(checkpoints: Option<&Checkpoints>, flow: &mut Flow<'_>) {
    if let Some(checkpoints) = checkpoints {
        let (changes, state, snapshot) = flow.take_changes();
        checkpoints.save_with_changes(state, changes, snapshot);
    }
}

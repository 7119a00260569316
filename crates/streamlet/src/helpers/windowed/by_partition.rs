//! [`WindowedAggregate`] with its state kept by input partition: one window operator and
//! one watermark per partition this member is assigned, each restored when the partition is
//! first seen and dropped when it is taken away ([`Held`] keeps them).

use std::collections::BTreeSet;

use futures::FutureExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use super::held::Held;
use super::{LateRecords, Template, WindowedAggregate, Windows, send};
use crate::inlet::Next;
use crate::watermark::ScriptedWatermarks;
use crate::window::{Aggregate, Key, Pane};
use crate::{Context, Data, Error, Result};

pub(super) async fn run<In, K, A>(
    aggregate: WindowedAggregate<In, K, A>,
    make: Box<dyn Template<A>>,
    mut ctx: Context,
) -> Result<()>
where
    In: Data,
    K: Key + Default + Serialize + DeserializeOwned,
    A: Aggregate<Input = In>,
    Pane<K, A::Output>: Data,
{
    let mut input = ctx.inlet(aggregate.inlet);
    let output = ctx.outlet(aggregate.outlet);
    let mut late = LateRecords::new(aggregate.late.map(|late| ctx.outlet(late)));
    let clock = ctx.clock().clone();
    let mut scripted = ctx.scripted_watermarks();
    let checkpoints = ctx
        .checkpoints()
        .ok_or_else(|| Error::msg("a streamlet checkpointed by partition has checkpoints"))?;
    let queries = ctx.state_queries().clone();
    let mut asked = queries.connect();
    let mut held = Held::new(
        checkpoints,
        queries,
        aggregate.spec,
        aggregate.watermarks,
        aggregate.inlet.name(),
    );
    let mut next_checkpoint: Option<Instant> = None;
    let mut panes = Vec::new();
    loop {
        if aggregate.standby {
            held.keep_standbys(&*make, aggregate.checkpoint_every);
        }
        let idle = held
            .partitions
            .values()
            .filter_map(|windows| windows.watermarks.next_idle_deadline())
            .filter(|_| scripted.is_none());
        let deadline = held
            .partitions
            .values()
            .filter_map(|windows| windows.operator.next_processing_deadline())
            .chain(idle)
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
        tokio::select! {
            biased;
            () = checkpoint_due => {
                // Partitions taken away in a rebalance get a last checkpoint and are dropped:
                // their new owner restores them from their last checkpoint (this one, or an
                // earlier one if it restored first) and reads again what came after.
                let assigned: BTreeSet<u32> = input.partitions().into_iter().collect();
                let revoked: BTreeSet<u32> = held
                    .partitions
                    .keys()
                    .filter(|partition| !assigned.contains(partition))
                    .copied()
                    .collect();
                held.hand_over(&revoked)?;
                next_checkpoint = None;
            }
            Some(asked) = asked.recv() => {
                let total = held.queries.input_partitions();
                let partition = (total > 0).then(|| runnel_backend::partition_for_key(&asked.key, total));
                if let Some(partition) = partition
                    && !held.partitions.contains_key(&partition)
                    && input.partitions().contains(&partition)
                {
                    // Assigned, and no message of it came yet: restore it to answer.
                    let current = scripted.as_mut().map(ScriptedWatermarks::current);
                    let now = clock.now_millis();
                    let resume = held.take_over(partition, make.make(), current, now, &mut panes).await?;
                    send(&output, &mut panes).await?;
                    if let Some(offset) = resume
                        && let Err(error) = input.rewind(partition, offset).await
                    {
                        if input.partitions().contains(&partition) {
                            return Err(error);
                        }
                        // A rebalance took the partition away during the restore.
                        held.release(&BTreeSet::from([partition]));
                    }
                }
                let answer = held.answer(&asked.key, &input.partitions(), total);
                // The asker may have given up waiting; nothing to tell then.
                let _ = asked.reply.send(answer);
            }
            next = input.next_restored(|partition| held.restored.contains(&partition)) => {
                let message = match next? {
                    None => break,
                    Some(Next::Message(message)) => message,
                    Some(Next::Revoked) => {
                        // Partitions were taken away, perhaps only for a moment: one given
                        // back starts again at the committed offset, behind these windows.
                        // Every partition gets a last checkpoint and is dropped, and is
                        // restored (and read from its checkpoint's offset) when it comes back.
                        let held_partitions: BTreeSet<u32> = held.partitions.keys().copied().collect();
                        held.hand_over(&held_partitions)?;
                        next_checkpoint = None;
                        continue;
                    }
                    Some(Next::Unrestored(partition)) => {
                        let current = scripted.as_mut().map(ScriptedWatermarks::current);
                        let now = clock.now_millis();
                        let resume = held.take_over(partition, make.make(), current, now, &mut panes).await?;
                        send(&output, &mut panes).await?;
                        if let Some(offset) = resume {
                            // Read the partition from where its checkpoint stands: the records
                            // before that are never decoded again.
                            input.rewind(partition, offset).await?;
                        }
                        continue;
                    }
                };
                let partition = message.partition();
                let windows = held.partitions.get_mut(&partition).expect("restored above");
                windows.changed = true;
                let target = Windows {
                    operator: &mut windows.operator,
                    watermarks: &mut windows.watermarks,
                    follows_script: scripted.is_some(),
                    key: aggregate.key,
                    timestamp: aggregate.timestamp,
                };
                let now = clock.now_millis();
                target.add(&ctx, message, &mut late, &output, now, &mut panes).await?;
                next_checkpoint.get_or_insert_with(|| Instant::now() + aggregate.checkpoint_every);
            }
            watermark = scripted_change => {
                let now = clock.now_millis();
                for windows in held.partitions.values_mut() {
                    windows.operator.advance_watermark(watermark, now, &mut panes);
                    windows.changed |= !panes.is_empty();
                    if send(&output, &mut panes).await? {
                        next_checkpoint.get_or_insert_with(|| Instant::now() + aggregate.checkpoint_every);
                    }
                }
            }
            () = wake => {
                let now = clock.now_millis();
                for windows in held.partitions.values_mut() {
                    windows.operator.advance_processing_time(now, &mut panes);
                    if scripted.is_none() && let Some(watermark) = windows.watermarks.check_idle(now) {
                        windows.operator.advance_watermark(watermark, now, &mut panes);
                    }
                    windows.changed |= !panes.is_empty();
                    if send(&output, &mut panes).await? {
                        next_checkpoint.get_or_insert_with(|| Instant::now() + aggregate.checkpoint_every);
                    }
                }
            }
        }
        if let Some(watermark) = held
            .partitions
            .values()
            .map(|w| w.operator.watermark())
            .min()
        {
            ctx.report_watermark(watermark);
        }
    }
    if !ctx.is_stopping() {
        // A bounded input ended: every window of every partition is complete.
        let now = clock.now_millis();
        for windows in held.partitions.values_mut() {
            let end = windows.watermarks.finish();
            windows.operator.advance_watermark(end, now, &mut panes);
            send(&output, &mut panes).await?;
        }
    }
    held.save(true, &BTreeSet::new());
    held.publish_size();
    Ok(())
}

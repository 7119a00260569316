//! How a SQL streamlet runs a windowed query: each batch's rows go into the window
//! operator by key and event time, watermarks follow event time per input partition, and
//! each pane that fires becomes a result record; the windows are checkpointed with the
//! input offsets they reflect, as the `WindowedAggregate` helper's are.

use std::time::Duration;

use futures::FutureExt;
use runnel_streamlet::watermark::{WatermarkHolder, Watermarks};
use runnel_streamlet::window::{Added, State, WindowOperator};
use runnel_streamlet::{
    AvroDatum, Checkpoints, Context, Error, InletStream, Message, Outgoing, OutletSender, Result,
    ThrottledWarning, WARNING_INTERVAL_MILLIS,
};
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::{BATCH, OUTLET, Writers, by_writer, fill_batch};
use crate::Query;
use crate::accumulators::{Accumulator, Accumulators};
use crate::grouping::GroupPane;
use crate::value::Value;

/// How often the windows are checkpointed while records arrive.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// The window state of a query: its operator over group keys and accumulators.
type Operator = WindowOperator<Vec<Value>, Accumulators>;

/// What a windowed SQL streamlet checkpoints.
#[derive(Serialize, Deserialize)]
struct Saved {
    operator: State<Vec<Value>, Vec<Accumulator>, Vec<Value>>,
    watermarks: WatermarkHolder,
}

/// Runs `query`, which [is windowed](Query::is_windowed), over the inlet of `table`.
pub(super) async fn run(
    query: &Query,
    table: &str,
    strategy: Watermarks,
    mut ctx: Context,
) -> Result<()> {
    let grouping = query.grouping().expect("a windowed query");
    let mut inlet = ctx.datum_inlet(table);
    let out = ctx.datum_outlet(OUTLET);
    let clock = ctx.clock().clone();
    let mut scripted = ctx.scripted_watermarks();
    let mut operator = Operator::new(grouping.spec(), grouping.accumulators());
    let mut watermarks = WatermarkHolder::new(strategy);
    let checkpoints = ctx.checkpoints();
    if let Some(state) = checkpoints.as_ref().and_then(Checkpoints::restored) {
        let saved: Saved = serde_json::from_slice(state).map_err(|error| {
            Error::msg(format!(
                "the last checkpoint of the windows does not decode: {error}"
            ))
        })?;
        operator.set_state(saved.operator);
        watermarks = saved.watermarks.with_strategy(strategy);
    }
    let start = clock.now_millis();
    for partition in inlet.partitions() {
        watermarks.add_partition(partition, start);
    }
    if let Some(scripted) = &mut scripted {
        operator.advance_watermark(scripted.current(), start, &mut Vec::new());
    }
    let mut windows = Windows {
        query,
        table,
        out: &out,
        late: ThrottledWarning::new(WARNING_INTERVAL_MILLIS),
        writers: Writers::default(),
        panes: Vec::new(),
    };
    let mut batch: Vec<Message<AvroDatum>> = Vec::with_capacity(BATCH);
    let mut next_checkpoint: Option<Instant> = None;
    loop {
        let idle = watermarks
            .next_idle_deadline()
            .filter(|_| scripted.is_none());
        let deadline = operator
            .next_processing_deadline()
            .into_iter()
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
                save(checkpoints.as_ref(), &operator, &watermarks);
                next_checkpoint = None;
            }
            message = inlet.next() => {
                let Some(message) = message? else { break };
                batch.push(message);
                fill_batch(&mut inlet, &mut batch).await?;
                let follows_script = scripted.is_some();
                let now = clock.now_millis();
                windows
                    .add(&ctx, &inlet, &mut batch, &mut operator, &mut watermarks, follows_script, now)
                    .await?;
                next_checkpoint.get_or_insert_with(|| Instant::now() + CHECKPOINT_EVERY);
            }
            watermark = scripted_change => {
                operator.advance_watermark(watermark, clock.now_millis(), &mut windows.panes);
                if windows.send().await? {
                    next_checkpoint.get_or_insert_with(|| Instant::now() + CHECKPOINT_EVERY);
                }
            }
            () = wake => {
                let now = clock.now_millis();
                operator.advance_processing_time(now, &mut windows.panes);
                if scripted.is_none() && let Some(watermark) = watermarks.check_idle(now) {
                    operator.advance_watermark(watermark, now, &mut windows.panes);
                }
                // Panes fired without new input are checkpointed too: an exactly-once
                // instance's results become visible only with a checkpoint.
                if windows.send().await? {
                    next_checkpoint.get_or_insert_with(|| Instant::now() + CHECKPOINT_EVERY);
                }
            }
        }
        ctx.report_watermark(operator.watermark());
    }
    if !ctx.is_stopping() {
        // A bounded input ended: every window is complete.
        operator.advance_watermark(watermarks.finish(), clock.now_millis(), &mut windows.panes);
        windows.send().await?;
    }
    save(checkpoints.as_ref(), &operator, &watermarks);
    Ok(())
}

/// The query's side of the loop: rows into windows, fired panes out as results.
struct Windows<'a> {
    query: &'a Query,
    table: &'a str,
    out: &'a OutletSender<AvroDatum>,
    /// Records too late for all their windows, logged at most every few seconds.
    late: ThrottledWarning,
    writers: Writers,
    /// Panes fired and not sent yet.
    panes: Vec<GroupPane>,
}

impl Windows<'_> {
    /// Adds the rows of `batch` to the windows at processing time `now`, moving the
    /// watermark on by their event times (unless the test kit scripts it), sends the
    /// panes that fire, then commits each record (or sends it to the dead letters with
    /// why it cannot be read).
    #[allow(clippy::too_many_arguments)]
    async fn add(
        &mut self,
        ctx: &Context,
        inlet: &InletStream<AvroDatum>,
        batch: &mut Vec<Message<AvroDatum>>,
        operator: &mut Operator,
        watermarks: &mut WatermarkHolder,
        follows_script: bool,
        now: i64,
    ) -> Result<()> {
        let (query, table) = (self.query, self.table);
        let grouped = by_writer(table, batch, inlet, &mut self.writers, |writer, records| {
            query.group(table, writer, records)
        });
        let mut late = 0;
        for (index, row) in grouped.results {
            let message = &batch[index];
            if operator.add(row.key, row.time, &row.arguments, now, &mut self.panes) == Added::Late
            {
                late += 1;
                if let Some(suppressed) = self.late.occurred(now) {
                    tracing::warn!(
                        topic = message.topic(),
                        partition = message.partition(),
                        offset = message.offset(),
                        timestamp = row.time,
                        watermark = operator.watermark(),
                        "dropping a record that is too late for its windows; {suppressed} more \
                         dropped since the last such warning, which is logged at most every {} s \
                         (the instance's `late` metric counts them all)",
                        WARNING_INTERVAL_MILLIS / 1000
                    );
                }
            }
            if !follows_script
                && let Some(watermark) = watermarks.observe(message.partition(), row.time, now)
            {
                operator.advance_watermark(watermark, now, &mut self.panes);
            }
        }
        if late > 0 {
            ctx.count_late(late);
        }
        self.send().await?;
        let mut rejected = grouped.rejected.into_iter().peekable();
        for (index, message) in batch.drain(..).enumerate() {
            match rejected.next_if(|(at, _)| *at == index) {
                Some((_, error)) => message.reject(error).await?,
                None => message.commit(),
            }
        }
        Ok(())
    }

    /// Sends the result of each pane fired, stamped with the pane's event time (the last
    /// millisecond of its window) and its window and pane metadata in headers
    /// (`docs/wire-format.md`). Says whether there were any.
    async fn send(&mut self) -> Result<bool> {
        if self.panes.is_empty() {
            return Ok(false);
        }
        let fired = self.query.fire(&self.panes);
        for (index, error) in &fired.rejected {
            let pane = &self.panes[*index];
            tracing::error!(
                key = ?pane.key,
                window_start = pane.window_start,
                window_end = pane.window_end,
                "the query failed on a window's result, which is not sent: {error}"
            );
        }
        for (index, bytes) in fired.results {
            let pane = &self.panes[index];
            let value = AvroDatum::new(bytes);
            let mut record = Outgoing::new(&value).timestamp(pane.timestamp);
            for (header, value) in pane.info().header_values(pane.window()) {
                record = record.header(header, value);
            }
            self.out.send_record(record).await?;
        }
        self.panes.clear();
        Ok(true)
    }
}

/// [`Saved`], borrowed from the running streamlet.
#[derive(Serialize)]
struct SavedRef<'a> {
    operator: &'a State<Vec<Value>, Vec<Accumulator>, Vec<Value>>,
    watermarks: &'a WatermarkHolder,
}

/// Checkpoints the windows and watermarks, with the input offsets committed so far.
fn save(checkpoints: Option<&Checkpoints>, operator: &Operator, watermarks: &WatermarkHolder) {
    if let Some(checkpoints) = checkpoints {
        let saved = SavedRef {
            operator: operator.state(),
            watermarks,
        };
        checkpoints.save(serde_json::to_vec(&saved).expect("window state serializes"));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use runnel_streamlet::window::WindowSpec;

    use super::*;
    use crate::accumulators::Function;

    /// Windows of every function, with text, float and null keys and values.
    fn operator() -> Operator {
        let functions = vec![
            Function::Count,
            Function::CountDistinct,
            Function::Sum { float: true },
            Function::Min,
            Function::Average,
        ];
        let spec = WindowSpec::sliding(Duration::from_secs(10), Duration::from_secs(5));
        Operator::new(spec, Accumulators::new(functions))
    }

    #[test]
    fn restored_windows_fire_what_the_saved_ones_would() {
        let mut saved = operator();
        let mut panes = Vec::new();
        for n in 0..50_i64 {
            let key = vec![Value::Text(format!("k{}", n % 3)), Value::Null];
            let value = if n % 7 == 0 {
                Value::Null
            } else {
                Value::Float(n as f64 / 3.0)
            };
            saved.add(key, n * 400, &vec![value; 5], 0, &mut panes);
        }
        saved.advance_watermark(9_000, 0, &mut panes);
        let json = serde_json::to_vec(&SavedRef {
            operator: saved.state(),
            watermarks: &WatermarkHolder::new(Watermarks::default()),
        })
        .unwrap();
        let mut restored = operator();
        let checkpoint: Saved = serde_json::from_slice(&json).unwrap();
        restored.set_state(checkpoint.operator);

        let (mut before, mut after) = (Vec::new(), Vec::new());
        saved.advance_watermark(i64::MAX, 0, &mut before);
        restored.advance_watermark(i64::MAX, 0, &mut after);
        assert!(before.len() > 6, "{before:?}");
        assert_eq!(after, before);
    }
}

//! The live view of a run: a compact table per streamlet (state, records in and out per
//! second, lag, restarts) redrawn every second on a terminal, or plain log lines
//! periodically when output goes elsewhere.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::console::Console;
use runnel_status::{Snapshot, render_table};

use crate::status::StatusBoard;

/// How a run shows its progress.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ViewMode {
    /// A live table on a terminal, plain lines otherwise.
    #[default]
    Auto,
    /// Plain log lines.
    Plain,
    /// Nothing but the streamlets' own logs.
    Off,
}

/// Shows the board's snapshots until `stop` fires.
pub(crate) async fn show(
    board: Arc<StatusBoard>,
    console: Console,
    mode: ViewMode,
    plain_every: Duration,
    footer: String,
    stop: CancellationToken,
) {
    let mut latest = board.latest();
    let live = mode == ViewMode::Auto && console.is_interactive();
    let period = if live {
        Duration::from_secs(1)
    } else {
        plain_every
    };
    if mode == ViewMode::Off {
        return;
    }
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(period) => {}
        }
        let snapshot = latest.borrow_and_update().clone();
        if live {
            console.show(&render_table(&snapshot, &footer));
        } else {
            for line in render_lines(&snapshot) {
                tracing::info!(target: "runnel::status", "{line}");
            }
        }
    }
    if live {
        console.show(&render_table(&latest.borrow().clone(), &footer));
        console.release();
    }
}

/// One plain line per instance.
pub fn render_lines(snapshot: &Snapshot) -> Vec<String> {
    snapshot
        .streamlets
        .iter()
        .map(|i| {
            format!(
                "streamlet={} state={} in={}/s out={}/s lag={} restarts={} total_in={} total_out={}",
                i.name,
                i.state.label(),
                i.rate_in.round(),
                i.rate_out.round(),
                i.lag,
                i.restarts,
                i.records_in,
                i.records_out
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use runnel_status::{InstanceSnapshot, InstanceState};

    fn instance(name: &str, rate: f64, lag: u64) -> InstanceSnapshot {
        InstanceSnapshot {
            name: name.into(),
            type_name: "logger".into(),
            state: InstanceState::Running,
            restarts: 1,
            records_in: 10,
            records_out: 0,
            rate_in: rate,
            rate_out: 0.0,
            lag,
            dead_lettered: 0,
            skipped: 0,
            given_up: 0,
            problems: Vec::new(),
            watermark: None,
            last_error: None,
            details: Default::default(),
            keyed_state: None,
            inlets: Vec::new(),
            outlets: Vec::new(),
        }
    }

    #[test]
    fn plain_lines_carry_rates_and_totals() {
        let snapshot = Snapshot {
            app: "a".into(),
            ready: true,
            topics: Vec::new(),
            streamlets: vec![instance("log", 2.6, 4)],
        };
        assert_eq!(
            render_lines(&snapshot),
            ["streamlet=log state=running in=3/s out=0/s lag=4 restarts=1 total_in=10 total_out=0"]
        );
    }
}

//! Integration tests of the streamlet API, through its public interface.

mod acknowledgement; // outputs are durable before inputs are committed; bounded in-flight sends
mod bad_data; // dead-letter, skip and fail policies
mod checkpoint; // window state and input offsets checkpointed together; restarts are exact
mod event_time; // windowed helper with the test kit's time control: reference examples, idleness
mod exactly_once; // killed and restarted mid-stream, a copy commits every input once, in order
mod exactly_once_windows; // an exactly-once window count killed again and again: each pane once
mod helpers; // processor, splitter, merge, async map, egress
mod hosting; // wiring an instance and running it on a runtime a test can kill
mod keyed_state; // values, lists, maps and timers per key in the test kit
mod keyed_state_crashes; // keyed state equals a model after kills and rebalances, both deliveries
mod model; // the record types the tests use
mod old_checkpoints; // window state saved before pane metadata existed restores
mod pane_properties; // the accumulation modes agree, retractions cancel, windows end once
mod parameters; // typed parameters, defaults, validation
mod reference_panes; // Streaming Systems' trigger examples, every pane's metadata asserted
mod scores; // the book's running example, a harness for the window operator, pane rules
mod serde_prelude; // the prelude derives without a serde dependency (ignored: builds a crate)
mod state_by_partition; // a window count kept by partition scales out and survives a killed member
mod state_queries; // a running keyed state answers queries by key; the partition's owner answers
mod testkit; // what the test kit itself reports
mod triggers; // composed triggers, global windows, on-time and closing behaviours, checks
mod window_operator; // the window operator alone: watermarks, accumulation modes, sessions
mod window_properties; // streaming equals batch for random inputs; the accumulation modes agree

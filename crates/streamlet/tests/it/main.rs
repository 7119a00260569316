//! Integration tests of the streamlet API, through its public interface.

mod bad_data; // dead-letter, skip and fail policies
mod event_time; // windowed helper with the test kit's time control: reference examples, idleness
mod helpers; // processor, splitter, merge, async map, egress
mod keyed_state; // values, lists, maps and timers per key in the test kit
mod model; // the record types the tests use
mod old_checkpoints; // window state saved before pane metadata existed restores
mod pane_properties; // the accumulation modes agree, retractions cancel, windows end once
mod parameters; // typed parameters, defaults, validation
mod reference_panes; // Streaming Systems' trigger examples, every pane's metadata asserted
mod scores; // the book's running example, a harness for the window operator, pane rules
mod serde_prelude; // the prelude derives without a serde dependency (ignored: builds a crate)
mod triggers; // composed triggers, global windows, on-time and closing behaviours, checks
mod window_operator; // the window operator alone: watermarks, accumulation modes, sessions
mod window_properties; // streaming equals batch for random inputs; the accumulation modes agree

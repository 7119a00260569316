//! Integration tests of the host: wiring, acknowledgements, checkpoints, exactly-once
//! delivery and the test kit, through the crates' public interfaces.

mod acknowledgement; // outputs are durable before inputs are committed; bounded in-flight sends
mod checkpoint; // window state and input offsets checkpointed together; restarts are exact
mod exactly_once; // killed and restarted mid-stream, a copy commits every input once, in order
mod exactly_once_windows; // an exactly-once window count killed again and again: each pane once
mod hosting; // wiring an instance and running it on a runtime a test can kill
mod keyed_state_crashes; // keyed state equals a model after kills and rebalances, both deliveries
mod model; // the record types the tests use
mod reset_offsets; // offsets reset under keyed state: what the checkpoint covers is not read again
mod shared_receipts; // receipts shared by a batch: a failure in its middle stops the commits there
mod state_by_partition; // a window count kept by partition scales out and survives a killed member
mod state_queries; // a running keyed state answers queries by key; the partition's owner answers
mod testkit; // what the test kit itself reports
mod windows_changelog; // windows kept by partition write the keys that changed; old whole-state checkpoints restore

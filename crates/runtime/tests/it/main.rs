//! Integration tests of the runtime on the in-memory backplane, and exactly-once with
//! SIGKILL on the embedded log.

mod bounded; // bounded inputs drain the whole graph and the run returns
mod exactly_once; // an exactly-once copy killed with SIGKILL on the embedded log, read committed
mod exactly_once_soak; // 20 SIGKILLs over 200k records: an exactly-once copy and window count
mod health; // outages and missing topics are reported; managed topics are created again
mod metrics_docs; // docs/metrics.md lists every metric
mod provisioning; // topics are created or must exist; bad configuration stops the run early
mod schemas; // producers with different schema versions on one topic
mod single_instance; // run-streamlet: one instance, inputs never end
mod supervision; // failures are restarted with backoff and reported
mod support; // a small app and its blueprint

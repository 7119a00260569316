//! End-to-end tests of the `runnel` binary on the blueprint fixtures, as one test binary.

/// `runnel graph`: formats, and what happens to blueprints with problems.
mod graph;
/// Running the built binary.
mod support;
/// `runnel verify`: exit codes, human and JSON reports.
mod verify;

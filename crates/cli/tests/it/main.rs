//! End-to-end tests of the `runnel` binary on the blueprint fixtures, as one test binary.

/// `runnel deploy | list | status | scale | configure | configuration | version | undeploy`
/// against the fake API server with an operator, and kubectl running the plugin.
mod cluster;
/// A generated app whose input type changes: old records stay readable, breaking changes
/// are refused before anything runs.
mod evolve;
/// `runnel graph`: formats, and what happens to blueprints with problems.
mod graph;
/// `runnel new`: the generated app builds and passes its test.
mod new;
/// The CRD, install manifests, operator and CLI against a real kube-apiserver and
/// kube-controller-manager (`scripts/kube-dev`).
mod real_cluster;
/// `runnel state get`: the owner's answer among several endpoints, refusals, hex keys.
mod state;
/// `runnel status`: table, JSON and YAML from an admin endpoint.
mod status;
/// Running the built binary.
mod support;
/// `runnel verify`: exit codes, human and JSON reports.
mod verify;

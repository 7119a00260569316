//! Integration tests of the operator, compiled as one binary.

// The controller against the fake API server: first deploy, failures, watches, others.
mod controller;
// The CRD as YAML, against a golden file.
mod crd;
// When a replica sees its lease taken, from its log.
mod deposed;
// Every generated object: golden files, k8s-openapi types, kubernetes-validate.
mod objects;
// Leader election between two operators.
mod leader;
// Building blocks: the fake cluster with the CRD, a running operator, fixtures.
mod support;

//! Integration tests of the fake cluster through kube clients, compiled as one binary.

// The API server: CRUD, conflicts, apply, watches, garbage collection, faults.
mod api;

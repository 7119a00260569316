//! The backplane conformance suite against the in-memory backplane.
#![cfg(feature = "conformance")]

runnel_backend::conformance_tests!(async { runnel_backend::MemoryBackend::new() });
runnel_backend::transaction_conformance_tests!(async { runnel_backend::MemoryBackend::new() });

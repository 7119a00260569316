//! The backplane conformance suite against a fresh embedded log in a temporary directory.

use crate::support::TemporaryBackend;

runnel_backend::conformance_tests!(async { TemporaryBackend::new() });
runnel_backend::transaction_conformance_tests!(async { TemporaryBackend::new() });

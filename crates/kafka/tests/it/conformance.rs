//! The conformance suite every backplane passes, on tansu.

runnel_backend::conformance_tests!(crate::support::backend());

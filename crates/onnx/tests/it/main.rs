//! Integration tests of the scorer, run by the same host as production on an in-memory
//! backplane, with models built in code.

mod fixtures; // small ONNX models, valid and invalid
mod scorer; // scoring, swapping, rejecting, restarting, batching
mod support; // the scorer's topics, runs, and what it sent

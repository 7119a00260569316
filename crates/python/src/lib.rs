//! Python streamlets for Runnel: the host's side of running a streamlet written with the
//! `runnel` Python package (`python/` in the repository, docs/python.md).
//!
//! A [`PythonStreamlet`] is a [`Streamlet`](runnel_streamlet::Streamlet) like any other: the
//! host reads its inlets, keeps its offsets, acknowledgements, dead letters, checkpoints and
//! restarts. Its records go to a process of its own ([`Worker`]), started by a
//! [`PythonCommand`], over the framed protocol of [`frame`]; [`describe`] learns its ports,
//! parameters and state from the streamlet itself. Start at [`PythonStreamlet`].

#[cfg(feature = "arrow")]
pub mod arrow;
mod command;
mod describe;
mod error;
pub mod frame;
mod package;
mod streamlet;
mod worker;

pub use command::PythonCommand;
pub use describe::{describe, describe_blocking};
pub use error::PythonError;
pub use streamlet::PythonStreamlet;
pub use worker::Worker;

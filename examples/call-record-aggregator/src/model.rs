//! The records of the call-record-aggregator app.

use runnel::prelude::*;

/// One call, as a phone network's billing system records it.
#[record]
#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    /// The subscriber.
    pub user: String,
    /// The other party.
    pub other: String,
    /// `Incoming` or `Outgoing`.
    pub direction: String,
    /// How long the call lasted, in seconds.
    pub duration: i64,
    /// When it started, in milliseconds since the Unix epoch (event time).
    pub timestamp: i64,
}

/// A call record that failed validation, with the reason.
#[record]
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidRecord {
    /// The record, as JSON.
    pub record: String,
    /// Why it is invalid.
    pub error: String,
}

/// The calls of one window of event time.
#[record]
#[derive(Debug, Clone, PartialEq)]
pub struct CallStats {
    /// Calls in the window.
    pub calls: i64,
    /// Their total duration, in seconds.
    pub total_duration: i64,
    /// Their average duration, in seconds.
    pub average_duration: f64,
}

/// A call of five minutes or more, as the `long-calls` SQL streamlet writes it.
#[record]
#[derive(Debug, Clone, PartialEq)]
pub struct LongCall {
    /// The caller or callee the record is of.
    pub user: String,
    /// Incoming or Outgoing.
    pub direction: String,
    /// Whole minutes.
    pub minutes: i64,
}

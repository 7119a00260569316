//! `split`: valid call records go on to the aggregator, invalid ones aside with the reason.

use runnel::prelude::*;

use crate::model::{CallRecord, InvalidRecord};

/// Call records from every producer.
pub const IN: Inlet<CallRecord> = Inlet::new("in");
/// Records that failed validation.
pub const INVALID: Outlet<InvalidRecord> = Outlet::new("invalid");
/// Records that passed, keyed by user.
pub const VALID: Outlet<CallRecord> = Outlet::new("valid").keyed_by(|record| record.user.clone());

/// Why a record is invalid, if it is.
pub fn check(record: &CallRecord) -> Option<String> {
    if record.timestamp < 1 {
        Some("timestamp is out of range".to_owned())
    } else if record.duration < 0 {
        Some(format!(
            "duration must not be negative, got {}",
            record.duration
        ))
    } else if record.direction != "Incoming" && record.direction != "Outgoing" {
        Some(format!(
            "direction must be Incoming or Outgoing, got '{}'",
            record.direction
        ))
    } else if record.user.is_empty() {
        Some("user must not be empty".to_owned())
    } else {
        None
    }
}

/// The streamlet.
pub fn streamlet() -> impl Streamlet {
    Splitter::new(IN, INVALID, VALID, |record: CallRecord| {
        match check(&record) {
            None => Either::Right(record),
            Some(error) => Either::Left(InvalidRecord {
                record: serde_json::to_string(&record).unwrap_or_default(),
                error,
            }),
        }
    })
    .describe("splits call records into valid ones and invalid ones with the reason")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::streamlets::generator::record;
    use runnel::testkit::TestRun;

    #[runnel::test]
    async fn records_with_a_negative_duration_or_an_unknown_direction_go_aside()
    -> anyhow::Result<()> {
        let mut sideways = record(1, "u", 5, 0, 1_000);
        sideways.direction = "Sideways".into();
        let run = TestRun::new(streamlet())
            .input(
                IN,
                [
                    record(0, "u", 5, 0, 1_000),
                    record(1, "u", 5, 2, 1_000),
                    sideways,
                ],
            )
            .run()
            .await?;
        assert_eq!(run.output(VALID).len(), 1);
        let invalid = run.output(INVALID);
        let errors: Vec<&str> = invalid.iter().map(|i| i.error.as_str()).collect();
        assert_eq!(
            errors,
            [
                "duration must not be negative, got -1",
                "direction must be Incoming or Outgoing, got 'Sideways'"
            ]
        );
        Ok(())
    }
}

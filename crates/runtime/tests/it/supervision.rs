use std::sync::Arc;
use std::sync::atomic::AtomicU32;

use runnel_runtime::{LocalConfig, Outcome};
use runnel_streamlet::dead_letter::ERROR_HEADER;

use crate::support::{blueprint_text, planned, registry, run_to_end};

#[tokio::test]
async fn a_failing_streamlet_is_restarted_and_its_failures_are_reported() -> anyhow::Result<()> {
    let failures = Arc::new(AtomicU32::new(2));
    let registry = registry(failures);
    let mut config = LocalConfig::default();
    config.set("numbers.count=50")?;
    let plan = planned(&registry, &blueprint_text("flaky"), &config)?;
    let (memory, report) = run_to_end(plan).await?;
    let middle = report
        .status
        .streamlets
        .iter()
        .find(|i| i.name == "middle")
        .unwrap();
    assert_eq!(middle.restarts, 2);
    let error = middle.last_error.as_deref().unwrap();
    assert_eq!(error, "panicked: flaky fails (1 failures left)");
    assert!(
        report
            .outcomes
            .contains(&("middle".to_owned(), Outcome::Finished))
    );
    // At-least-once across restarts: every number arrived, the failed ones again.
    let mut values: Vec<u8> = memory
        .records("second")?
        .iter()
        .map(|r| r.record.value.as_deref().unwrap()[0])
        .collect();
    values.sort_unstable();
    values.dedup();
    assert_eq!(values.len(), 50);
    Ok(())
}

#[tokio::test]
async fn a_record_that_keeps_failing_the_streamlet_is_given_up_on() -> anyhow::Result<()> {
    let registry = registry(Arc::new(AtomicU32::new(0)));
    let mut config = LocalConfig::default();
    config.set("numbers.count=20")?;
    let plan = planned(&registry, &blueprint_text("poisoned"), &config)?;
    let (memory, report) = run_to_end(plan).await?;
    let middle = report
        .status
        .streamlets
        .iter()
        .find(|i| i.name == "middle")
        .unwrap();
    assert_eq!(
        middle.restarts, 3,
        "three attempts, then the record is given up on"
    );
    assert_eq!(middle.dead_lettered, 1);
    assert!(
        report
            .outcomes
            .contains(&("middle".to_owned(), Outcome::Finished))
    );
    let dead = memory.records("test.dead-letter")?;
    assert_eq!(dead.len(), 1);
    assert_eq!(
        dead[0].record.value.as_deref(),
        Some(&[14][..]),
        "7, zigzag-encoded"
    );
    assert_eq!(
        dead[0].record.headers.get_str(ERROR_HEADER),
        Some("failed the streamlet 3 times in a row; the last time: panicked: 7 is poison")
    );
    let mut values: Vec<u8> = memory
        .records("second")?
        .iter()
        .map(|r| r.record.value.as_deref().unwrap()[0])
        .collect();
    values.sort_unstable();
    values.dedup();
    assert_eq!(values.len(), 19, "every other number arrived");
    Ok(())
}

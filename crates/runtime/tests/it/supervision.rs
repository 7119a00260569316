use std::sync::Arc;
use std::sync::atomic::AtomicU32;

use runnel_runtime::{LocalConfig, Outcome};

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
        .map(|r| r.record.value[0])
        .collect();
    values.sort_unstable();
    values.dedup();
    assert_eq!(values.len(), 50);
    Ok(())
}

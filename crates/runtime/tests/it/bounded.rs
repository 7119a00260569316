use std::sync::Arc;

use runnel_backend::Backend;
use runnel_runtime::{LocalConfig, Outcome};

use crate::support::{blueprint_text, planned, registry, run_to_end};

#[tokio::test]
async fn a_finished_source_drains_the_graph_and_the_run_returns() -> anyhow::Result<()> {
    let registry = registry(Arc::default());
    let mut config = LocalConfig::default();
    config.set("numbers.count=500")?;
    let plan = planned(&registry, &blueprint_text("copy"), &config)?;
    let (memory, report) = run_to_end(plan).await?;
    assert!(
        report
            .outcomes
            .iter()
            .all(|(_, outcome)| *outcome == Outcome::Finished),
        "{report:?}"
    );
    assert_eq!(memory.records("second")?.len(), 500);
    assert_eq!(
        memory.committed("test.sink.in", "second").await?,
        [Some(500)]
    );
    let sink = report
        .status
        .streamlets
        .iter()
        .find(|i| i.name == "sink")
        .unwrap();
    assert_eq!((sink.records_in, sink.lag), (500, 0));
    Ok(())
}

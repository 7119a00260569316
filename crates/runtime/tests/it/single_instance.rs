use std::sync::Arc;
use std::time::Duration;

use runnel_runtime::{LocalConfig, Outcome, RunError, RunOptions, run};
use tokio_util::sync::CancellationToken;

use crate::support::{blueprint_text, console, memory, options, planned, registry};

#[tokio::test]
async fn one_instance_runs_alone_until_stopped() -> anyhow::Result<()> {
    let registry = registry(Arc::default());
    let plan = planned(&registry, &blueprint_text("copy"), &LocalConfig::default())?;
    let (memory, backend) = memory();
    let only = RunOptions {
        only: Some("middle".into()),
        ..options()
    };
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(run(plan, backend, only, console(), shutdown.clone()));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !running.is_finished(),
        "inputs of a single instance never end"
    );
    assert!(
        memory.records("second")?.is_empty(),
        "no other instance ran"
    );
    shutdown.cancel();
    let report = running.await??;
    assert_eq!(report.outcomes, [("middle".to_owned(), Outcome::Stopped)]);
    Ok(())
}

#[tokio::test]
async fn an_unknown_instance_names_the_known_ones() -> anyhow::Result<()> {
    let registry = registry(Arc::default());
    let plan = planned(&registry, &blueprint_text("copy"), &LocalConfig::default())?;
    let (_, backend) = memory();
    let only = RunOptions {
        only: Some("midle".into()),
        ..options()
    };
    let error = run(plan, backend, only, console(), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(error, RunError::UnknownInstance { .. }));
    assert_eq!(
        error.to_string(),
        "'midle' is not a streamlet of the blueprint; it has: numbers, middle, sink"
    );
    Ok(())
}

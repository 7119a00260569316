use std::sync::Arc;
use std::time::Duration;

use runnel_backend::{Backend, MemoryBackend, PausableBackend};
use runnel_runtime::{InstanceState, LocalConfig, Problem, Running, Snapshot};
use tokio_util::sync::CancellationToken;

use crate::support::{console, options, planned, registry};

/// ticker -> first -> middle (copy) -> second -> sink, running until stopped.
async fn start_endless(backend: Arc<dyn Backend>) -> anyhow::Result<(Running, CancellationToken)> {
    let registry = registry(Arc::default());
    let text = crate::support::blueprint_text("copy")
        .replace("numbers = \"numbers\"", "numbers = \"ticker\"");
    let plan = planned(&registry, &text, &LocalConfig::default())?;
    let shutdown = CancellationToken::new();
    let running =
        runnel_runtime::start(plan, backend, options(), console(), shutdown.clone()).await?;
    Ok((running, shutdown))
}

/// Waits (at most 20 s) until the board's latest snapshot satisfies `condition`.
async fn until(running: &Running, what: &str, condition: impl Fn(&Snapshot) -> bool) -> Snapshot {
    let mut latest = running.board().latest();
    let waited = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let snapshot = latest.borrow_and_update().clone();
            if condition(&snapshot) {
                return snapshot;
            }
            let _ = latest.changed().await;
        }
    })
    .await;
    waited.unwrap_or_else(|_| panic!("timed out waiting until {what}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_backplane_stalls_every_streamlet_until_it_answers_again()
-> anyhow::Result<()> {
    let pausable = PausableBackend::default();
    let (running, shutdown) = start_endless(Arc::new(pausable.clone())).await?;
    until(&running, "the run is ready", |s| s.ready).await;

    pausable.pause();
    let outage = until(&running, "the outage shows", |s| {
        !s.ready && !s.streamlets.is_empty()
    })
    .await;
    for streamlet in &outage.streamlets {
        assert!(
            matches!(
                streamlet.problems[..],
                [Problem::BackplaneUnreachable { .. }]
            ),
            "{streamlet:?}"
        );
        assert!(
            streamlet
                .last_error
                .as_deref()
                .is_some_and(|e| e.starts_with("backplane unreachable for ")),
            "{streamlet:?}"
        );
    }
    let middle = outage
        .streamlets
        .iter()
        .find(|s| s.name == "middle")
        .unwrap();
    assert_eq!(middle.state, InstanceState::Stalled);
    let reasons = running.board().readiness().unwrap_err();
    assert!(
        reasons[0].starts_with("numbers: backplane unreachable for "),
        "{reasons:?}"
    );

    pausable.resume();
    let recovered = until(&running, "the run is ready again", |s| s.ready).await;
    assert!(
        recovered
            .streamlets
            .iter()
            .all(|s| s.problems.is_empty() && s.last_error.is_none())
    );
    shutdown.cancel();
    running.wait().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_managed_topic_that_disappears_is_reported_and_created_again() -> anyhow::Result<()> {
    let memory = MemoryBackend::new();
    let (running, shutdown) = start_endless(Arc::new(memory.clone())).await?;
    until(&running, "the run is ready", |s| s.ready).await;

    assert!(memory.delete_topic("second"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let reported = running.board().history().points.iter().any(|point| {
            point
                .streamlets
                .iter()
                .any(|s| s.name == "sink" && s.stalled)
        });
        if reported && memory.topic("second").await?.is_some() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the topic was not reported and created again"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Records flow through the new topic.
    until(&running, "records reach the new topic", |s| {
        s.topics
            .iter()
            .any(|t| t.name == "second" && t.partitions.iter().any(|p| p.end > 0))
    })
    .await;
    shutdown.cancel();
    running.wait().await?;
    Ok(())
}

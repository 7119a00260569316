use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use runnel_backend::{Backend, MemoryBackend};
use runnel_blueprint::verify;
use runnel_runtime::{
    Console, LocalConfig, Plan, Registry, RestartPolicy, RunOptions, ViewMode, plan,
};
use runnel_streamlet::prelude::*;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
pub(crate) struct Number {
    pub(crate) value: i64,
}

pub(crate) const OUT: Outlet<Number> = Outlet::new("out");
pub(crate) const IN: Inlet<Number> = Inlet::new("in");
pub(crate) const COUNT: Parameter<i64> = Parameter::int("count").default("10");

/// Emits `count` numbers, then finishes.
pub(crate) struct Numbers;

impl Streamlet for Numbers {
    fn shape(&self) -> Shape {
        Shape::new().outlet(OUT).parameter(COUNT)
    }

    async fn run(self, ctx: Context) -> Result<()> {
        let out = ctx.outlet(OUT);
        for value in 0..ctx.parameter(COUNT) {
            out.send(&Number { value }).await?;
        }
        Ok(())
    }
}

/// Emits a number every 10 ms until stopped.
pub(crate) struct Ticker;

impl Streamlet for Ticker {
    fn shape(&self) -> Shape {
        Shape::new().outlet(OUT)
    }

    async fn run(self, ctx: Context) -> Result<()> {
        let out = ctx.outlet(OUT);
        let mut value = 0;
        while !ctx.is_stopping() {
            // A missing topic fails a send; the supervisor restarts the ticker.
            out.send(&Number { value }).await?;
            value += 1;
            tokio::select! {
                () = ctx.stopped() => break,
                () = tokio::time::sleep(Duration::from_millis(10)) => {}
            }
        }
        Ok(())
    }
}

/// The registry of the test app; `failures` makes `flaky` fail its first runs.
pub(crate) fn registry(failures: Arc<AtomicU32>) -> Registry {
    Registry::new()
        .register("numbers", || Numbers)
        .register("ticker", || Ticker)
        .register("copy", || Processor::new(IN, OUT, Some))
        .register("sink", || Egress::new(IN, |_: Number| async { Ok(()) }))
        .register("poisoned", || {
            Processor::new(IN, OUT, |number: Number| {
                assert!(number.value != 7, "7 is poison");
                Some(number)
            })
        })
        .register("flaky", move || {
            let failures = failures.clone();
            Processor::new(IN, OUT, move |number: Number| {
                let left = failures.load(Ordering::SeqCst);
                if left > 0 {
                    failures.store(left - 1, Ordering::SeqCst);
                    panic!("flaky fails ({left} failures left)");
                }
                Some(number)
            })
        })
}

/// numbers -> first -> (copy or flaky as `middle`) -> second -> sink
pub(crate) fn blueprint_text(middle: &str) -> String {
    format!(
        r#"
name = "test"
[streamlets]
numbers = "numbers"
middle = "{middle}"
sink = "sink"
[topics.first]
producers = ["numbers.out"]
consumers = ["middle.in"]
partitions = 2
[topics.second]
producers = ["middle.out"]
consumers = ["sink.in"]
"#
    )
}

pub(crate) fn planned(
    registry: &Registry,
    text: &str,
    config: &LocalConfig,
) -> Result<Plan, runnel_runtime::PlanError> {
    let descriptor = registry.descriptor("test");
    let verification = verify(Path::new("blueprint.toml"), text, &descriptor);
    let blueprint = verification.blueprint.unwrap_or_else(|| {
        panic!(
            "{}",
            runnel_blueprint::render_human(&verification.diagnostics, text)
        )
    });
    plan(&blueprint, &descriptor, registry, config)
}

pub(crate) fn options() -> RunOptions {
    RunOptions {
        view: ViewMode::Off,
        restart: RestartPolicy {
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(50),
            reset_after: Duration::from_secs(60),
            ..RestartPolicy::default()
        },
        ..RunOptions::default()
    }
}

pub(crate) fn console() -> Console {
    Console::stdout(false)
}

pub(crate) fn memory() -> (MemoryBackend, Arc<dyn Backend>) {
    let memory = MemoryBackend::new();
    let backend: Arc<dyn Backend> = Arc::new(memory.clone());
    (memory, backend)
}

/// Runs `plan` on a fresh in-memory backplane until it ends by itself (at most 20 s).
pub(crate) async fn run_to_end(
    plan: Plan,
) -> anyhow::Result<(MemoryBackend, runnel_runtime::RunReport)> {
    let (memory, backend) = memory();
    let running = runnel_runtime::run(
        plan,
        backend,
        options(),
        console(),
        tokio_util::sync::CancellationToken::new(),
    );
    let report = tokio::time::timeout(Duration::from_secs(20), running).await??;
    Ok((memory, report))
}

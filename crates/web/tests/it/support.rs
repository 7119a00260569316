use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use runnel_backend::MemoryBackend;
use runnel_runtime::{Console, LocalConfig, Registry, RunOptions, Running, ViewMode};
use runnel_streamlet::prelude::*;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)]
pub(crate) struct Tick {
    pub(crate) number: i64,
}

const OUT: Outlet<Tick> = Outlet::new("out");
const IN: Inlet<Tick> = Inlet::new("in");

/// Emits a tick every 5 ms until stopped.
struct Ticks;

impl Streamlet for Ticks {
    fn shape(&self) -> Shape {
        Shape::new().outlet(OUT)
    }

    async fn run(self, ctx: Context) -> Result<()> {
        let out = ctx.outlet(OUT);
        let mut number = 0;
        while !ctx.is_stopping() {
            out.send(&Tick { number }).await?;
            // An event-time source: its watermark trails the clock by a second.
            ctx.report_watermark(ctx.clock().now_millis() - 1000);
            number += 1;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    }
}

/// A run of `ticks -> ticks -> sink` with its admin endpoint on a free port.
pub(crate) struct Served {
    pub(crate) address: String,
    pub(crate) running: Running,
    pub(crate) shutdown: CancellationToken,
}

pub(crate) async fn serve() -> Served {
    serve_on(Arc::new(MemoryBackend::new())).await
}

/// [`serve`] on `backend`.
pub(crate) async fn serve_on(backend: Arc<dyn runnel_backend::Backend>) -> Served {
    let registry = Registry::new()
        .register("ticks", || Ticks)
        .register("sink", || Egress::new(IN, |_: Tick| async { Ok(()) }));
    let text = r#"
name = "clock"
[streamlets]
source = "ticks"
sink = "sink"
[topics.ticks]
producers = ["source.out"]
consumers = ["sink.in"]
partitions = 2
"#;
    serve_app(&registry, text, backend, None).await
}

/// Runs the app of `registry` wired by blueprint `text` on `backend` (only instance `only`
/// when given, as `run-streamlet` does), with its admin endpoint on a free port.
pub(crate) async fn serve_app(
    registry: &Registry,
    text: &str,
    backend: Arc<dyn runnel_backend::Backend>,
    only: Option<&str>,
) -> Served {
    let name = text
        .lines()
        .find_map(|line| line.strip_prefix("name = "))
        .map(|name| name.trim_matches('"').to_owned())
        .expect("the blueprint names its app");
    let descriptor = registry.descriptor(&name);
    let blueprint = runnel_blueprint::verify(Path::new("blueprint.toml"), text, &descriptor)
        .blueprint
        .unwrap();
    let plan =
        runnel_runtime::plan(&blueprint, &descriptor, registry, &LocalConfig::default()).unwrap();
    let shutdown = CancellationToken::new();
    let options = RunOptions {
        view: ViewMode::Off,
        only: only.map(str::to_owned),
        ..RunOptions::default()
    };
    let running = runnel_runtime::start(
        plan,
        backend,
        options,
        Console::stdout(false),
        shutdown.clone(),
    )
    .await
    .unwrap();
    let listener = runnel_web::bind("127.0.0.1:0".parse().unwrap(), false)
        .await
        .unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(runnel_web::serve(
        listener,
        running.board().clone(),
        shutdown.clone(),
    ));
    Served {
        address,
        running,
        shutdown,
    }
}

/// `GET path` (blocking, off the runtime's threads): status code and body.
pub(crate) async fn get(address: &str, path: &str) -> (u16, String) {
    let url = format!("http://{address}{path}");
    tokio::task::spawn_blocking(move || {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .new_agent();
        let mut response = agent.get(&url).call().unwrap();
        (
            response.status().as_u16(),
            response.body_mut().read_to_string().unwrap(),
        )
    })
    .await
    .unwrap()
}

/// Waits until `GET path` answers 200.
pub(crate) async fn until_ok(address: &str, path: &str) -> String {
    for _ in 0..100 {
        let (code, body) = get(address, path).await;
        if code == 200 {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{path} never answered 200");
}

/// Waits (at most 20 s) until `/api/status` answers a snapshot satisfying `condition`, and
/// returns it.
pub(crate) async fn status_until(
    address: &str,
    what: &str,
    condition: impl Fn(&runnel_runtime::Snapshot) -> bool,
) -> runnel_runtime::Snapshot {
    for _ in 0..400 {
        let (code, json) = get(address, "/api/status").await;
        if code == 200 {
            let snapshot: runnel_runtime::Snapshot = serde_json::from_str(&json).unwrap();
            if condition(&snapshot) {
                return snapshot;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the status never showed {what}");
}

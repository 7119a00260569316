//! The Nexmark app binary: `describe`, `verify`, `run`, `run-streamlet`, with one blueprint
//! per query (`crates/nexmark/blueprints/q5.toml` and so on).

fn main() -> std::process::ExitCode {
    runnel_nexmark::app::app().main()
}

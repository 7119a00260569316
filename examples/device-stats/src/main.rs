//! The device-stats app binary: `describe`, `verify`, `run`, `run-streamlet`.

fn main() -> std::process::ExitCode {
    device_stats::app().main()
}

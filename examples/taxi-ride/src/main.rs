//! The taxi-ride app binary: `describe`, `verify`, `run`, `run-streamlet`.

fn main() -> std::process::ExitCode {
    taxi_ride::app().main()
}

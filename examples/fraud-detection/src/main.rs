//! The fraud-detection app binary: `describe`, `verify`, `run`, `run-streamlet`.

fn main() -> std::process::ExitCode {
    fraud_detection::app().main()
}

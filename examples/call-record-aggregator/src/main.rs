//! The call-record-aggregator app binary: `describe`, `verify`, `run`, `run-streamlet`.

fn main() -> std::process::ExitCode {
    call_record_aggregator::app().main()
}

//! The sensor-data app binary: `describe`, `verify`, `run`, `run-streamlet`.

fn main() -> std::process::ExitCode {
    sensor_data::app().main()
}

//! End-to-end tests: the sensor-data binary driven through its command line, as a user runs
//! it, with the topics read back from the embedded log afterwards, or from a tansu Kafka
//! broker the tests start themselves.

mod bad_input; // undecodable records go to the dead-letter topic; the pipeline goes on
mod bounded_run; // a bounded run routes every metric and exits on its own
mod crash; // kill -9 mid-stream, run again: nothing acknowledged is lost
mod hardening; // on Kafka: poison records of every size, a paused broker
mod http_ingress; // the HTTP variant: a 200 survives kill -9 right after it
mod image; // `build`: the image (skopeo, chroot `describe`) and the Application YAML
mod interop; // a Python confluent-kafka client feeds the app on Kafka and reads its outputs
mod kafka; // `run --kafka`: the whole graph on a Kafka broker, outputs read by a plain consumer
mod kafka_support; // tansu-backed runs and a plain Kafka consumer
mod kubernetes; // build, deploy, scale, configure, kill, undeploy on a process-backed cluster
mod observability; // metrics, lag, status and the web view in headless Chromium
mod python; // Python streamlets, their processes and the app killed with -9: nothing lost
mod refusals; // bad blueprints and parameters stop the run before it starts
mod scaling; // two run-streamlet processes share partitions; kill -9 one; nothing lost
mod schema_registry; // Confluent Avro clients and the app read each other through Apicurio Registry
mod secrets; // canary secrets from every source show nowhere
mod shutdown; // SIGTERM drains, commits and exits 0
mod support; // running the binary and reading topics back
mod tools; // topics, tail, produce, dead-letters, groups, reset-offsets: embedded log and tansu

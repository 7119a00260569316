//! Integration tests of the Kafka backplane against real brokers the tests start
//! themselves.

mod apache_kafka; // real Apache Kafka: aborted transactions hidden, a three-node cluster
mod client_lag; // the lag from librdkafka statistics
mod conformance; // the backplane conformance suite on Apache Kafka and on tansu
mod copied_records; // consumed records copied in chunks, split batches, cached topic facts
mod exactly_once_soak; // exactly-once through 20 kill -9s, scaling 1 -> 3 -> 2 and a paused zombie
mod faults; // node faults on three Apache Kafka nodes under an exactly-once copy, with recovery times
mod keyed_state; // a member taking keyed state over restores every key
mod null_values; // null payloads <-> null values, seen by plain librdkafka clients
mod partition_reader; // partition readers past transaction markers
mod schema_registry; // a real Apicurio Registry: Avro schemas evolving under BACKWARD compatibility
mod support; // one Apache Kafka node and one tansu broker per test binary
mod transactions; // exactly-once: the mock cluster, and kill -9 and restart on Apache Kafka

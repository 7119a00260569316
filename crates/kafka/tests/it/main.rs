//! Integration tests of the Kafka backplane against real brokers the tests start
//! themselves.

mod apache_kafka; // real Apache Kafka: aborted transactions hidden, a three-node cluster
mod client_lag; // the lag from librdkafka statistics
mod conformance; // the backplane conformance suite on Apache Kafka and on tansu
mod copied_records; // consumed records copied in chunks, split batches, cached topic facts
mod keyed_state; // a member taking keyed state over restores every key
mod null_values; // null payloads <-> null values, seen by plain librdkafka clients
mod partition_reader; // partition readers past transaction markers
mod support; // one Apache Kafka node and one tansu broker per test binary
mod transactions; // exactly-once: the mock cluster, and kill -9 and restart on Apache Kafka

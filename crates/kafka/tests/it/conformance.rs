//! The conformance suite every backplane passes, on Apache Kafka (the reference) and on tansu
//! (a second implementation of the protocol, with the group timeouts it needs).

mod on_apache_kafka {
    runnel_backend::conformance_tests!(crate::support::backend());
}

mod on_tansu {
    runnel_backend::conformance_tests!(crate::support::tansu_backend());
}

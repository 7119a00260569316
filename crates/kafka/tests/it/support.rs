use std::sync::OnceLock;

use runnel_kafka::KafkaBackend;
use runnel_kafka::test_broker::Tansu;

/// The tansu broker shared by this test binary (every case uses names of its own).
pub(crate) fn tansu() -> &'static Tansu {
    static BROKER: OnceLock<Tansu> = OnceLock::new();
    BROKER.get_or_init(Tansu::start)
}

/// A fresh backend on the shared broker.
pub(crate) async fn backend() -> KafkaBackend {
    KafkaBackend::connect(tansu().config()).await.unwrap()
}

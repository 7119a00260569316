use std::time::Duration;

use runnel::dead_letter::{
    ERROR_HEADER, OFFSET_HEADER, PARTITION_HEADER, STREAMLET_HEADER, TOPIC_HEADER,
};
use runnel_backend::{Backend, ProducerConfig, Record, TopicSpec};
use sensor_data::model::Metric;

use crate::support::{BLUEPRINT, app, open, read_topic, read_values, run_to_end, stderr_of};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_input_goes_to_the_dead_letter_topic_and_the_pipeline_goes_on() {
    let data = tempfile::tempdir().unwrap();
    {
        // An external writer puts bytes that are not a SensorData on the input topic.
        let backend = open(data.path());
        backend
            .create_topic(&TopicSpec::new("sensor-data", 2))
            .await
            .unwrap();
        let producer = backend.producer(&ProducerConfig::default()).await.unwrap();
        let garbage = Record::new(vec![0xde, 0xad, 0xbe, 0xef]);
        producer
            .send("sensor-data", 1, garbage)
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let mut command = app(&["run", BLUEPRINT], data.path());
    command.args([
        "--set",
        "generator.count=50",
        "--set",
        "generator.records-per-second=0",
    ]);
    let output = run_to_end(command, Duration::from_secs(60));
    assert!(output.status.success(), "stderr:\n{}", stderr_of(&output));

    let backend = open(data.path());
    let dead = read_topic(&backend, "sensor-data.dead-letter").await;
    assert_eq!(dead.len(), 1);
    let record = &dead[0].record;
    assert_eq!(record.value.as_deref(), Some(&[0xde, 0xad, 0xbe, 0xef][..]));
    let header = |name| record.headers.get_str(name).unwrap_or_default().to_owned();
    assert!(
        header(ERROR_HEADER).starts_with("does not decode: invalid avro for SensorData"),
        "{}",
        header(ERROR_HEADER)
    );
    assert_eq!(header(TOPIC_HEADER), "sensor-data");
    assert_eq!(header(PARTITION_HEADER), "1");
    assert_eq!(header(OFFSET_HEADER), "0");
    assert_eq!(header(STREAMLET_HEADER), "to-metrics");
    let metrics: Vec<Metric> = read_values(&backend, "metrics").await;
    assert_eq!(metrics.len(), 150, "the 50 good readings went through");
}

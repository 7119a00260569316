//! Operating the app on Kafka when things go wrong: poison records of every size, a broker
//! that stops answering, and one of three Apache Kafka nodes cut off from the app.
//!
//! A topic deleted under the running app is tested on the in-memory backplane
//! (`crates/runtime/tests/it/health.rs`): on tansu, librdkafka 2.12.1 crashes (SIGSEGV in
//! `rd_kafka_metadata_update_op`, looking up a topic by a null name) once the topic is gone,
//! whatever the client settings.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use runnel::prelude::apache_avro::{self, AvroSchema};
use runnel_kafka::test_broker::{ApacheKafka, Tansu, TestBroker};
use sensor_data::model::{Metric, SensorData};
use sensor_data::streamlets::generator::reading;

use crate::kafka_support::{app_on, arrivals, at_least, distinct_metrics, read_topic};
use crate::support::{BLUEPRINT, Running, decode, run_to_end};

/// The sensor-data blueprint with the metrics topic limited to 100,000-byte records.
fn limited_blueprint(directory: &Path) -> PathBuf {
    let text = std::fs::read_to_string(BLUEPRINT).unwrap();
    let path = directory.join("blueprint.toml");
    std::fs::write(
        &path,
        format!("{text}\n[topics.metrics.config]\n\"max.message.bytes\" = 100000\n"),
    )
    .unwrap();
    path
}

/// Runs `command` with its admin endpoint on a free port; returns it with the address.
fn start_with_admin(mut command: std::process::Command) -> (Running, String) {
    command.args(["--admin", "127.0.0.1:0"]);
    let running = Running::start(command);
    let view = running.wait_for("view: http://", Duration::from_secs(60));
    let address = view
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap()
        .to_owned();
    running.wait_for("ready:", Duration::from_secs(60));
    (running, address)
}

/// `GET path` from `address`: the status code and the body.
fn get(address: &str, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    (code, body.to_owned())
}

/// The status as JSON.
fn status(address: &str) -> serde_json::Value {
    let (code, body) = get(address, "/api/status");
    assert_eq!(code, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// Polls the status until `condition` holds, failing after `limit`.
fn status_until(
    address: &str,
    limit: Duration,
    what: &str,
    condition: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = Instant::now() + limit;
    loop {
        let status = status(address);
        if condition(&status) {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within {limit:?}; status: {status:#}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// One streamlet of a status, or null before the first sample lists it.
fn streamlet<'a>(status: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    static NULL: serde_json::Value = serde_json::Value::Null;
    status["streamlets"]
        .as_array()
        .and_then(|streamlets| streamlets.iter().find(|s| s["name"] == name))
        .unwrap_or(&NULL)
}

fn avro<T: runnel::serde::Serialize + AvroSchema>(value: &T) -> Vec<u8> {
    let value = apache_avro::to_value(value).unwrap();
    apache_avro::to_avro_datum(&T::get_schema(), value).unwrap()
}

#[test]
fn poison_records_are_dead_lettered_once_and_every_good_record_arrives() {
    let broker = Tansu::start();
    let directory = tempfile::tempdir().unwrap();
    let blueprint = limited_blueprint(directory.path());
    let blueprint = blueprint.to_str().unwrap();
    let (running, admin) =
        start_with_admin(app_on(&broker, &["run-streamlet", "to-metrics", blueprint]));

    // Everything on partition 0, so a stalled partition would hold back every good record.
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", broker.bootstrap_servers())
        .set("message.max.bytes", "20000000")
        .create()
        .unwrap();
    let send = |value: Vec<u8>| {
        producer
            .send(
                BaseRecord::<(), _>::to("sensor-data")
                    .partition(0)
                    .payload(&value),
            )
            .unwrap();
    };
    let good = |sequence: i64| avro(&reading(sequence, 4, 0, 1_700_000_000_000 + sequence));
    let mut huge = reading(1_000, 4, 0, 1_700_000_000_000);
    huge.device_id = "d".repeat(150_000);
    send(good(0)); // offset 0
    send(vec![0xff; 999_800]); // 1: garbage just under the 1 MB default
    send(good(1)); // 2
    send(vec![0xfe; 10_000_000]); // 3: ten megabytes of garbage
    send(good(2)); // 4
    send(avro(&huge)); // 5: valid, but its metrics exceed the topic's 100,000 bytes
    for sequence in 3..50 {
        send(good(sequence));
    }
    producer.flush(Duration::from_secs(60)).unwrap();

    let metrics: Vec<Metric> =
        read_topic(&broker, "metrics", Duration::from_secs(90), at_least(150))
            .iter()
            .map(|seen| decode(&seen.value))
            .collect();
    let counts = arrivals(metrics.iter());
    assert_eq!(
        counts.len(),
        150,
        "three metrics of each of the 50 good readings"
    );
    assert!(metrics.iter().all(|m| m.sequence < 50));

    let dead = read_topic(
        &broker,
        "sensor-data.dead-letter",
        Duration::from_secs(30),
        at_least(3),
    );
    assert_eq!(dead.len(), 3, "each bad record once");
    let offsets: Vec<Option<String>> = dead
        .iter()
        .map(|d| d.header("runnel.dead-letter.offset"))
        .collect();
    assert_eq!(
        offsets,
        [Some("1".into()), Some("3".into()), Some("5".into())]
    );
    for (letter, size) in [(&dead[0], 999_800), (&dead[1], 10_000_000)] {
        assert_eq!(
            letter.header("runnel.dead-letter.truncated"),
            Some(size.to_string())
        );
        assert_eq!(letter.value.len(), 16 * 1024);
        let reason = letter.header("runnel.dead-letter.error").unwrap();
        assert!(
            reason.starts_with("does not decode: invalid avro for SensorData"),
            "{reason}"
        );
        assert_eq!(
            letter.header("runnel.dead-letter.topic").as_deref(),
            Some("sensor-data")
        );
        assert_eq!(
            letter.header("runnel.dead-letter.partition").as_deref(),
            Some("0")
        );
    }
    let oversized = &dead[2];
    assert_eq!(oversized.header("runnel.dead-letter.truncated"), None);
    assert_eq!(
        decode::<SensorData>(&oversized.value).device_id.len(),
        150_000
    );
    let reason = oversized.header("runnel.dead-letter.error").unwrap();
    assert!(
        reason.starts_with("could not be processed: record of ")
            && reason.contains("for topic 'metrics' partition ")
            && reason.ends_with("is larger than the limit of 100000 bytes"),
        "{reason}"
    );

    let to_metrics = status_until(
        &admin,
        Duration::from_secs(10),
        "the dead letters are counted",
        |s| streamlet(s, "to-metrics")["dead_lettered"] == 3,
    );
    let to_metrics = streamlet(&to_metrics, "to-metrics");
    assert_eq!(to_metrics["restarts"], 0, "no restart loop: {to_metrics:#}");
    assert_eq!(to_metrics["state"], "running");
    let (_, metrics_text) = get(&admin, "/metrics");
    assert!(
        metrics_text.contains("runnel_dead_letter_records_total{streamlet=\"to-metrics\"} 3"),
        "{metrics_text}"
    );
    drop(running);
}

#[test]
fn a_paused_broker_shows_as_an_outage_and_nothing_is_lost() {
    let broker = Tansu::start();
    an_outage_shows_and_nothing_is_lost(&broker, || {
        broker.pause();
        Box::new(|| broker.resume())
    });
}

/// A network partition between the app and one of three Apache Kafka nodes (the leader of
/// the topic the generator writes): the node stays in the cluster and keeps leading its
/// partitions, so nothing fails over; the app's requests to it go unanswered.
#[test]
fn a_node_cut_off_from_the_app_shows_as_an_outage_and_nothing_is_lost() {
    let kafka = ApacheKafka::start_cluster(3);
    an_outage_shows_and_nothing_is_lost(&kafka, || {
        let leader = kafka
            .leader("sensor-data", 0)
            .expect("the generator's topic has a leader");
        let cut_off = kafka.cut_off_clients(leader);
        Box::new(move || cut_off.heal())
    });
}

/// Runs the app on `broker` and, once records flow, starts an outage with `outage` (which
/// returns how to end it): the status must show it within 10 s (every streamlet stalled
/// with the backplane unreachable, `/health/ready` 503, `status` saying so), and once it
/// ends after 20 s the run recovers, ends by itself, and every valid metric arrives.
fn an_outage_shows_and_nothing_is_lost<'a>(
    broker: &impl TestBroker,
    outage: impl FnOnce() -> Box<dyn FnOnce() + 'a>,
) {
    const READINGS: i64 = 2_500;
    let mut command = app_on(broker, &["run", BLUEPRINT]);
    command.args([
        "--set",
        &format!("generator.count={READINGS}"),
        "--set",
        "generator.records-per-second=100",
    ]);
    let (running, admin) = start_with_admin(command);
    status_until(
        &admin,
        Duration::from_secs(30),
        "the run is ready and flowing",
        |s| s["ready"] == true && streamlet(s, "validation")["records_in"].as_u64() > Some(30),
    );

    let end_outage = outage();
    let started = Instant::now();
    let shown = status_until(&admin, Duration::from_secs(10), "the outage shows", |s| {
        s["ready"] == false
            && s["streamlets"]
                .as_array()
                .is_some_and(|all| !all.is_empty())
            && s["streamlets"].as_array().unwrap().iter().all(|s| {
                s["problems"][0]["kind"] == "backplane-unreachable"
                    && s["last_error"]
                        .as_str()
                        .is_some_and(|e| e.starts_with("backplane unreachable"))
            })
    });
    assert_eq!(streamlet(&shown, "to-metrics")["state"], "stalled");
    let (code, body) = get(&admin, "/health/ready");
    assert_eq!(code, 503, "{body}");
    assert!(
        body.contains("to-metrics: backplane unreachable for "),
        "{body}"
    );
    assert_eq!(get(&admin, "/health/live").0, 200, "liveness stays up");
    let table = run_to_end(
        {
            let mut status = std::process::Command::new(env!("CARGO_BIN_EXE_sensor-data"));
            status.args(["status", "--admin", &admin]);
            status
        },
        Duration::from_secs(20),
    );
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    assert!(
        table.contains("(not ready)") && table.contains("stalled"),
        "{table}"
    );
    assert!(
        table.contains("! to-metrics: backplane unreachable for "),
        "{table}"
    );
    eprintln!("status during the outage:\n{table}");

    // Twenty seconds of outage, then the broker answers again.
    std::thread::sleep(Duration::from_secs(20).saturating_sub(started.elapsed()));
    end_outage();
    let ended = Instant::now();
    status_until(&admin, Duration::from_secs(90), "the run recovers", |s| {
        s["streamlets"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["problems"].as_array().is_none_or(Vec::is_empty))
    });
    eprintln!(
        "the status showed no problem {} ms after the outage ended",
        ended.elapsed().as_millis()
    );

    let mut running = running;
    let exit = running.child.wait().unwrap();
    assert!(
        exit.success(),
        "the run ends by itself once every reading is through"
    );
    let faulty = (0..READINGS).filter(|sequence| sequence % 7 == 6).count();
    let expected = 3 * READINGS as usize - faulty;
    let valid: Vec<Metric> = read_topic(
        broker,
        "valid-metrics",
        Duration::from_secs(60),
        distinct_metrics(expected),
    )
    .iter()
    .map(|seen| decode(&seen.value))
    .collect();
    let counts = arrivals(valid.iter());
    let missing: Vec<i64> = (0..READINGS)
        .filter(|sequence| !counts.contains_key(&(*sequence, "power".to_owned())))
        .take(10)
        .collect();
    assert_eq!(
        counts.len(),
        expected,
        "every valid metric arrived, the outage notwithstanding ({} records read, \
         readings without a power metric begin {missing:?})",
        valid.len()
    );
}

//! Prometheus metrics of a run: one [`Metric`] enum names every metric (the single source
//! of `docs/metrics.md`), and [`render_prometheus`] writes them in the text exposition
//! format from the live counters and the latest sampled lag and offsets.

use std::fmt::Write;

use runnel_streamlet::{BUCKET_BOUNDS, Histogram};

use runnel_status::{InstanceSnapshot, InstanceState, Problem};

use crate::instance_status::InstanceStatus;
use crate::status::StatusBoard;

/// Every metric Runnel exports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Metric {
    /// Records read from an inlet, bad ones included.
    RecordsIn,
    /// Records sent on an outlet.
    RecordsOut,
    /// Value bytes read from an inlet.
    BytesIn,
    /// Value bytes sent on an outlet.
    BytesOut,
    /// Time from handing a message to the streamlet to its commit.
    ProcessingLatency,
    /// Time to write committed offsets to a consumer group.
    CommitLatency,
    /// Log end offset minus committed offset, per inlet partition.
    ConsumerLag,
    /// The lag an inlet's consumer client reports itself (Kafka: librdkafka's statistics).
    ClientConsumerLag,
    /// The oldest offset a partition keeps.
    LogStartOffset,
    /// The offset the next record of a partition will get.
    LogEndOffset,
    /// Records rejected and sent to the dead-letter topic.
    DeadLetterRecords,
    /// Records rejected and skipped.
    SkippedRecords,
    /// Records given up on after failing the streamlet repeatedly.
    GivenUpRecords,
    /// Records too late for their windows, sent to the late output.
    LateRecords,
    /// The event-time watermark of a streamlet that tracks event time.
    Watermark,
    /// How far the watermark is behind the wall clock.
    WatermarkLag,
    /// Entries of the keyed state this process holds for a streamlet.
    KeyedStateEntries,
    /// Bytes of keys and values of the keyed state this process holds for a streamlet.
    KeyedStateBytes,
    /// 1 for the model a model-serving streamlet scores with now.
    ModelServing,
    /// Models a model-serving streamlet rejected.
    ModelsRejected,
    /// Time a model-serving streamlet took to score one batch.
    ModelScoringTime,
    /// Restarts after a failure, by kind of failure.
    Restarts,
    /// 1 for the state a streamlet is in, 0 for the others.
    StreamletState,
    /// 1 for each problem a streamlet has now, 0 for the others.
    StreamletProblem,
    /// 1 while the process is ready: every streamlet connected and none has a problem.
    Ready,
}

impl Metric {
    /// Every metric, in the order they are rendered.
    pub const ALL: [Metric; 25] = [
        Metric::RecordsIn,
        Metric::RecordsOut,
        Metric::BytesIn,
        Metric::BytesOut,
        Metric::ProcessingLatency,
        Metric::CommitLatency,
        Metric::ConsumerLag,
        Metric::ClientConsumerLag,
        Metric::LogStartOffset,
        Metric::LogEndOffset,
        Metric::DeadLetterRecords,
        Metric::SkippedRecords,
        Metric::GivenUpRecords,
        Metric::LateRecords,
        Metric::Watermark,
        Metric::WatermarkLag,
        Metric::KeyedStateEntries,
        Metric::KeyedStateBytes,
        Metric::ModelServing,
        Metric::ModelsRejected,
        Metric::ModelScoringTime,
        Metric::Restarts,
        Metric::StreamletState,
        Metric::StreamletProblem,
        Metric::Ready,
    ];

    /// The metric name.
    pub fn name(self) -> &'static str {
        match self {
            Metric::RecordsIn => "runnel_records_in_total",
            Metric::RecordsOut => "runnel_records_out_total",
            Metric::BytesIn => "runnel_bytes_in_total",
            Metric::BytesOut => "runnel_bytes_out_total",
            Metric::ProcessingLatency => "runnel_processing_latency_seconds",
            Metric::CommitLatency => "runnel_commit_latency_seconds",
            Metric::ConsumerLag => "runnel_consumer_lag_records",
            Metric::ClientConsumerLag => "runnel_client_consumer_lag_records",
            Metric::LogStartOffset => "runnel_log_start_offset",
            Metric::LogEndOffset => "runnel_log_end_offset",
            Metric::DeadLetterRecords => "runnel_dead_letter_records_total",
            Metric::SkippedRecords => "runnel_skipped_records_total",
            Metric::GivenUpRecords => "runnel_given_up_records_total",
            Metric::LateRecords => "runnel_late_records_total",
            Metric::Watermark => "runnel_watermark_seconds",
            Metric::WatermarkLag => "runnel_watermark_lag_seconds",
            Metric::KeyedStateEntries => "runnel_keyed_state_entries",
            Metric::KeyedStateBytes => "runnel_keyed_state_bytes",
            Metric::ModelServing => "runnel_model_serving",
            Metric::ModelsRejected => "runnel_models_rejected_total",
            Metric::ModelScoringTime => "runnel_model_scoring_seconds",
            Metric::Restarts => "runnel_restarts_total",
            Metric::StreamletState => "runnel_streamlet_state",
            Metric::StreamletProblem => "runnel_streamlet_problem",
            Metric::Ready => "runnel_ready",
        }
    }

    /// `counter`, `gauge` or `histogram`.
    pub fn kind(self) -> &'static str {
        match self {
            Metric::ProcessingLatency | Metric::CommitLatency | Metric::ModelScoringTime => {
                "histogram"
            }
            Metric::ConsumerLag
            | Metric::ClientConsumerLag
            | Metric::LogStartOffset
            | Metric::LogEndOffset
            | Metric::Watermark
            | Metric::WatermarkLag
            | Metric::KeyedStateEntries
            | Metric::KeyedStateBytes
            | Metric::ModelServing
            | Metric::StreamletState
            | Metric::StreamletProblem
            | Metric::Ready => "gauge",
            _ => "counter",
        }
    }

    /// The label names.
    pub fn labels(self) -> &'static [&'static str] {
        match self {
            Metric::RecordsIn | Metric::BytesIn => &["streamlet", "inlet", "topic"],
            Metric::RecordsOut | Metric::BytesOut => &["streamlet", "outlet", "topic"],
            Metric::ConsumerLag | Metric::ClientConsumerLag => {
                &["streamlet", "inlet", "topic", "partition"]
            }
            Metric::LogStartOffset | Metric::LogEndOffset => &["topic", "partition"],
            Metric::Restarts => &["streamlet", "kind"],
            Metric::ModelServing => &["streamlet", "model", "version"],
            Metric::StreamletState => &["streamlet", "state"],
            Metric::StreamletProblem => &["streamlet", "problem"],
            Metric::Ready => &[],
            _ => &["streamlet"],
        }
    }

    /// What it measures (the `# HELP` line).
    pub fn help(self) -> &'static str {
        match self {
            Metric::RecordsIn => "Records read from an inlet, undecodable ones included.",
            Metric::RecordsOut => "Records sent on an outlet.",
            Metric::BytesIn => "Value bytes read from an inlet.",
            Metric::BytesOut => "Value bytes sent on an outlet.",
            Metric::ProcessingLatency => {
                "Time from handing a message to the streamlet to its commit, in seconds (one message in 16 is timed)."
            }
            Metric::CommitLatency => {
                "Time to write committed offsets to a consumer group, in seconds."
            }
            Metric::ConsumerLag => {
                "Log end offset minus the committed offset of an inlet's consumer group."
            }
            Metric::ClientConsumerLag => {
                "The lag of an inlet's partition as its consumer client reports it (Kafka: librdkafka statistics, refreshed every statistics.interval.ms)."
            }
            Metric::LogStartOffset => "The oldest offset a partition still keeps.",
            Metric::LogEndOffset => "The offset the next record appended to a partition will get.",
            Metric::DeadLetterRecords => {
                "Records rejected (undecodable, refused by the streamlet, or given up on) and sent to the dead-letter topic."
            }
            Metric::SkippedRecords => "Records rejected and skipped under the skip policy.",
            Metric::GivenUpRecords => {
                "Records given up on after they failed the streamlet several times in a row, and handed to the bad-data policy."
            }
            Metric::LateRecords => {
                "Records that arrived after their windows' allowed lateness (sent to the late output)."
            }
            Metric::Watermark => "The event-time watermark, in seconds since the Unix epoch.",
            Metric::WatermarkLag => "How far the watermark is behind the wall clock, in seconds.",
            Metric::KeyedStateEntries => {
                "Entries (values, lists, map entries, timers) of the keyed state this process holds, as of the last checkpoint."
            }
            Metric::KeyedStateBytes => {
                "Bytes of keys and values of the keyed state this process holds, as of the last checkpoint."
            }
            Metric::ModelServing => {
                "1 for the model (name and version) a model-serving streamlet scores with now."
            }
            Metric::ModelsRejected => {
                "Models a model-serving streamlet rejected: invalid, for another name, or older than the one serving."
            }
            Metric::ModelScoringTime => {
                "Time a model-serving streamlet took to score one batch, in seconds."
            }
            Metric::Restarts => "Restarts of a streamlet after a failure, by kind of failure.",
            Metric::StreamletState => {
                "1 for the state a streamlet is in (stalled while it has a problem), 0 for the others."
            }
            Metric::StreamletProblem => {
                "1 for each problem keeping a streamlet from making progress now, 0 for the others."
            }
            Metric::Ready => {
                "1 while every streamlet of this process is connected and none has a problem."
            }
        }
    }
}

/// The metrics of `board` in Prometheus' text exposition format (version 0.0.4).
///
/// Counters and histograms are read live; lag and offsets come from the latest sample.
pub fn render_prometheus(board: &StatusBoard) -> String {
    let snapshot = board.latest().borrow().clone();
    let mut out = Exposition(String::new());
    for metric in Metric::ALL {
        out.header(metric);
        match metric {
            Metric::Ready => out.sample(metric, &[], u8::from(board.readiness().is_ok())),
            Metric::StreamletState | Metric::StreamletProblem => {
                for streamlet in &snapshot.streamlets {
                    out.health(metric, streamlet);
                }
            }
            Metric::LogStartOffset | Metric::LogEndOffset => {
                for topic in &snapshot.topics {
                    for partition in &topic.partitions {
                        let value = match metric {
                            Metric::LogStartOffset => partition.start,
                            _ => partition.end,
                        };
                        let number = partition.partition.to_string();
                        out.sample(metric, &[&topic.name, &number], value);
                    }
                }
            }
            Metric::ConsumerLag => {
                for streamlet in &snapshot.streamlets {
                    for inlet in &streamlet.inlets {
                        for (partition, lag) in inlet.partition_lag.iter().enumerate() {
                            let number = partition.to_string();
                            let labels = [&*streamlet.name, &inlet.port, &inlet.topic, &number];
                            out.sample(metric, &labels, lag);
                        }
                    }
                }
            }
            _ => {
                for status in board.instances() {
                    out.instance(metric, status);
                }
            }
        }
    }
    out.0
}

/// The text being written.
struct Exposition(String);

impl Exposition {
    fn header(&mut self, metric: Metric) {
        let _ = writeln!(self.0, "# HELP {} {}", metric.name(), metric.help());
        let _ = writeln!(self.0, "# TYPE {} {}", metric.name(), metric.kind());
    }

    /// The samples of one instance for a per-instance metric.
    fn instance(&mut self, metric: Metric, status: &InstanceStatus) {
        let name = status.name.as_str();
        let metrics = &status.metrics;
        match metric {
            Metric::RecordsIn | Metric::BytesIn => {
                for inlet in &status.inlets {
                    let Some(port) = metrics.inlets().get(&inlet.port) else {
                        continue;
                    };
                    let value = if metric == Metric::RecordsIn {
                        port.records()
                    } else {
                        port.bytes()
                    };
                    self.sample(metric, &[name, &inlet.port, &inlet.topic], value);
                }
            }
            Metric::RecordsOut | Metric::BytesOut => {
                for outlet in &status.outlets {
                    let Some(port) = metrics.outlets().get(&outlet.port) else {
                        continue;
                    };
                    let value = if metric == Metric::RecordsOut {
                        port.records()
                    } else {
                        port.bytes()
                    };
                    self.sample(metric, &[name, &outlet.port, &outlet.topic], value);
                }
            }
            Metric::ClientConsumerLag => {
                for inlet in &status.inlets {
                    let Some(port) = metrics.inlets().get(&inlet.port) else {
                        continue;
                    };
                    for (partition, lag) in port.client_lag() {
                        let number = partition.to_string();
                        self.sample(metric, &[name, &inlet.port, &inlet.topic, &number], lag);
                    }
                }
            }
            Metric::ProcessingLatency => self.histogram(metric, name, metrics.processing_latency()),
            Metric::CommitLatency => self.histogram(metric, name, metrics.commit_latency()),
            Metric::DeadLetterRecords => self.sample(metric, &[name], metrics.dead_lettered()),
            Metric::SkippedRecords => self.sample(metric, &[name], metrics.skipped()),
            Metric::LateRecords => self.sample(metric, &[name], metrics.late()),
            Metric::Watermark | Metric::WatermarkLag => {
                let Some(watermark) = metrics.watermark() else {
                    return;
                };
                let value = if metric == Metric::Watermark {
                    watermark as f64 / 1000.0
                } else {
                    (wall_clock_millis() - watermark) as f64 / 1000.0
                };
                self.sample(metric, &[name], value);
            }
            Metric::Restarts => {
                for (kind, count) in status.restarts_by_kind() {
                    self.sample(metric, &[name, kind], count);
                }
            }
            Metric::GivenUpRecords => self.sample(metric, &[name], metrics.given_up()),
            Metric::ModelServing | Metric::ModelsRejected | Metric::ModelScoringTime => {
                let models = metrics.models();
                if !models.is_used() {
                    return;
                }
                match metric {
                    Metric::ModelServing => {
                        if let Some((model, version)) = models.serving_model() {
                            self.sample(metric, &[name, &model, &version], 1);
                        }
                    }
                    Metric::ModelsRejected => {
                        self.sample(metric, &[name], models.rejected_count());
                    }
                    _ => self.histogram(metric, name, models.scoring_time()),
                }
            }
            Metric::KeyedStateEntries | Metric::KeyedStateBytes => {
                let queries = metrics.state_queries();
                if !queries.is_keyed() {
                    return;
                }
                let size = queries.size().unwrap_or_default();
                let value = if metric == Metric::KeyedStateEntries {
                    size.entries
                } else {
                    size.bytes
                };
                self.sample(metric, &[name], value);
            }
            _ => {}
        }
    }

    /// The state and problem gauges of one instance, from the latest sample.
    fn health(&mut self, metric: Metric, streamlet: &InstanceSnapshot) {
        let name = streamlet.name.as_str();
        if metric == Metric::StreamletState {
            for state in InstanceState::ALL {
                let current = u8::from(state == streamlet.state);
                self.sample(metric, &[name, state.label()], current);
            }
            return;
        }
        for label in Problem::LABELS {
            let active = streamlet.problems.iter().any(|p| p.label() == label);
            self.sample(metric, &[name, label], u8::from(active));
        }
    }

    /// One line: `name{label="value",...} value`, labels named by the metric.
    fn sample(&mut self, metric: Metric, values: &[&str], value: impl std::fmt::Display) {
        self.line(
            metric.name(),
            metric.labels().iter().copied().zip(values.iter().copied()),
            value,
        );
    }

    fn line<'a>(
        &mut self,
        name: &str,
        labels: impl Iterator<Item = (&'a str, &'a str)>,
        value: impl std::fmt::Display,
    ) {
        self.0.push_str(name);
        let mut first = true;
        for (label, text) in labels {
            self.0.push(if first { '{' } else { ',' });
            first = false;
            let _ = write!(self.0, "{label}=\"{}\"", escape(text));
        }
        if !first {
            self.0.push('}');
        }
        let _ = writeln!(self.0, " {value}");
    }

    fn histogram(&mut self, metric: Metric, streamlet: &str, histogram: &Histogram) {
        let name = metric.name();
        let bounds = BUCKET_BOUNDS
            .iter()
            .map(ToString::to_string)
            .chain(["+Inf".to_owned()]);
        for (bound, count) in bounds.zip(histogram.cumulative()) {
            let labels = [("streamlet", streamlet), ("le", bound.as_str())];
            self.line(&format!("{name}_bucket"), labels.into_iter(), count);
        }
        let labels = [("streamlet", streamlet)];
        self.line(
            &format!("{name}_sum"),
            labels.into_iter(),
            histogram.sum_seconds(),
        );
        self.line(
            &format!("{name}_count"),
            labels.into_iter(),
            histogram.count(),
        );
    }
}

fn wall_clock_millis() -> i64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as i64)
}

/// Escapes a label value: backslash, double quote and newline.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn names_follow_prometheus_conventions() {
        for metric in Metric::ALL {
            let name = metric.name();
            assert!(name.starts_with("runnel_"), "{name}");
            assert!(
                name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{name}"
            );
            assert_eq!(
                metric.kind() == "counter",
                name.ends_with("_total"),
                "{name}"
            );
            assert!(metric.help().ends_with('.'), "{name}");
        }
    }
}

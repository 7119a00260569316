//! Topic settings: `InvalidTopicName`, `InvalidKafkaClusterName`, and the warnings
//! `TopicWithoutProducers`, `TopicWithoutConsumers`, `SuspiciousPartitions`,
//! `SuspiciousReplication`.

use std::collections::BTreeMap;

use crate::code::Code;
use crate::facts::Facts;
use crate::names::{dns_label_problem, topic_name_problem};
use crate::report::Report;
use crate::rules::Context;

/// More partitions than this for one topic is almost surely a typo.
const PARTITIONS_WARN_ABOVE: u32 = 10_000;

/// Checks every topic's own settings (not its ports).
pub(crate) fn check(cx: &Context<'_>, report: &mut Report<'_>) {
    let mut names: BTreeMap<&str, &str> = BTreeMap::new();
    for topic in &cx.file.topics {
        let id = &topic.id.value;
        let name = topic.effective_name();
        if let Some(problem) = topic_name_problem(&name.value) {
            report.at(
                Code::InvalidTopicName,
                name.span.clone(),
                format!("invalid topic name '{}': {problem}", name.value),
                problem.facts().topic(id).topic_name(&name.value),
            );
        } else if let Some(other) = names.insert(&name.value, id) {
            report.at(
                Code::InvalidTopicName,
                name.span.clone(),
                format!(
                    "topic '{id}' has the name '{}' of topic '{other}'; two topics would share one log",
                    name.value
                ),
                Facts::new()
                    .topic(id)
                    .topic_name(&name.value)
                    .other_topic(other),
            );
        }
        if let Some(cluster) = &topic.cluster
            && let Some(problem) = dns_label_problem(&cluster.value)
        {
            report.at(
                Code::InvalidKafkaClusterName,
                cluster.span.clone(),
                format!("invalid kafka cluster name '{}': {problem}", cluster.value),
                problem.facts().topic(id).cluster(&cluster.value),
            );
        }

        let unmanaged = topic.managed.as_ref().is_some_and(|managed| !managed.value);
        if let Some(partitions) = &topic.partitions {
            let problem = if unmanaged {
                Some(format!(
                    "partitions are ignored for topic '{id}': it is unmanaged (managed = false), so it must already exist"
                ))
            } else if partitions.value == 0 {
                Some(format!(
                    "topic '{id}' has 0 partitions; a topic needs at least one"
                ))
            } else if partitions.value > PARTITIONS_WARN_ABOVE {
                Some(format!(
                    "topic '{id}' has {} partitions, more than {PARTITIONS_WARN_ABOVE}; is that a typo?",
                    partitions.value
                ))
            } else {
                None
            };
            if let Some(problem) = problem {
                report.at(
                    Code::SuspiciousPartitions,
                    partitions.span.clone(),
                    problem,
                    Facts::new().topic(id).partitions(partitions.value),
                );
            }
        }
        if let Some(replication) = &topic.replication {
            let problem = if unmanaged {
                Some(format!(
                    "replication is ignored for topic '{id}': it is unmanaged (managed = false), so it must already exist"
                ))
            } else if replication.value == 0 {
                Some(format!(
                    "topic '{id}' has replication 0; it needs at least one replica"
                ))
            } else {
                None
            };
            if let Some(problem) = problem {
                report.at(
                    Code::SuspiciousReplication,
                    replication.span.clone(),
                    problem,
                    Facts::new().topic(id).replication(replication.value),
                );
            }
        }

        // A declared `schema` says clients outside the blueprint write the topic.
        if topic.producers.is_empty() && topic.schema.is_none() {
            report.at(
                Code::TopicWithoutProducers,
                topic.id.span.clone(),
                format!("topic '{id}' has no producers; only an external system can write it"),
                Facts::new().topic(id),
            );
        }
        if topic.consumers.is_empty() {
            report.at(
                Code::TopicWithoutConsumers,
                topic.id.span.clone(),
                format!("topic '{id}' has no consumers; only an external system can read it"),
                Facts::new().topic(id),
            );
        }
    }
}

//! State by input partition: `InletsNotCoPartitioned`.

use std::collections::BTreeMap;

use crate::code::Code;
use crate::facts::{Facts, Role};
use crate::report::Report;
use crate::rules::{Context, Port};

/// A streamlet that keeps its state by input partition needs every inlet's topic to have the
/// same partition count: partition `p` of each is one part of its state. Checked where the
/// blueprint declares the counts.
pub(crate) fn check(cx: &Context<'_>, report: &mut Report<'_>) {
    let mut inlet_topics: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for binding in &cx.bindings {
        if binding.role == Role::Consumer && matches!(binding.port, Some(Port::Inlet(_))) {
            inlet_topics
                .entry(binding.instance)
                .or_default()
                .push(binding.topic);
        }
    }
    for (instance, topics) in inlet_topics {
        let by_partition = cx.instances[instance]
            .streamlet
            .is_some_and(|streamlet| streamlet.state.is_by_partition());
        if !by_partition {
            continue;
        }
        let declared: Vec<(&str, u32)> = topics
            .iter()
            .filter_map(|&topic| {
                let topic = &cx.file.topics[topic];
                topic
                    .partitions
                    .as_ref()
                    .map(|count| (topic.id.value.as_str(), count.value))
            })
            .collect();
        let Some(&(_, first)) = declared.first() else {
            continue;
        };
        if declared.iter().all(|&(_, count)| count == first) {
            continue;
        }
        let entry = cx.instances[instance].entry;
        let counts: Vec<String> = declared
            .iter()
            .map(|(topic, count)| format!("'{topic}' has {count}"))
            .collect();
        report.at(
            Code::InletsNotCoPartitioned,
            entry.name.span.clone(),
            format!(
                "streamlet '{}' keeps its state by input partition, so the topics it reads need the same number of partitions, but {}",
                entry.name.value,
                counts.join(", ")
            ),
            Facts::new()
                .streamlet(&entry.name.value)
                .topics(declared.iter().map(|(topic, _)| *topic)),
        );
    }
}

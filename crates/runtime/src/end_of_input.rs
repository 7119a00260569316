//! Knowing when a topic's input is bounded: once every streamlet that writes a topic has
//! finished, nothing more will be appended, and its readers end after reading everything.
//! Topics that nothing in the blueprint writes (external inputs) never end.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::watch;

use crate::plan::{OutletPlan, Plan};

/// Per topic: how many producing ports are still running, and the flag readers watch.
#[derive(Debug)]
pub(crate) struct EndOfInput {
    topics: Mutex<HashMap<String, (usize, watch::Sender<bool>)>>,
}

impl EndOfInput {
    /// Tracks every topic of `plan`. With `tracking` off, no topic ever ends (a run of a
    /// single instance cannot know when the others finish).
    pub(crate) fn new(plan: &Plan, tracking: bool) -> Self {
        let topics = plan
            .topics
            .iter()
            .map(|topic| {
                let producers = if tracking {
                    topic.producers.len()
                } else {
                    usize::MAX
                };
                (
                    topic.spec.name.clone(),
                    (producers, watch::Sender::new(false)),
                )
            })
            .collect();
        EndOfInput {
            topics: Mutex::new(topics),
        }
    }

    /// The flag readers of `topic` watch.
    pub(crate) fn receiver(&self, topic: &str) -> watch::Receiver<bool> {
        let mut topics = self
            .topics
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        topics
            .entry(topic.to_owned())
            .or_insert_with(|| (usize::MAX, watch::Sender::new(false)))
            .1
            .subscribe()
    }

    /// Records that an instance finished: each topic it writes loses one producing port per
    /// outlet bound to it, and ends when none is left.
    pub(crate) fn finished(&self, outlets: &[OutletPlan]) {
        let mut topics = self
            .topics
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for outlet in outlets {
            if let Some((remaining, ended)) = topics.get_mut(&outlet.topic)
                && *remaining != usize::MAX
            {
                *remaining = remaining.saturating_sub(1);
                if *remaining == 0 {
                    ended.send_replace(true);
                }
            }
        }
    }
}

//! One POST and what its outcome means: delivered, refused for good, or failed for now;
//! and how long to wait before trying again.

use std::sync::Arc;
use std::time::Duration;

/// The longest wait between two attempts.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(30);
/// How much of a refusing answer goes into the rejection reason.
const EXCERPT: usize = 200;

/// The outcome of one attempt.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// Answered `2xx`.
    Delivered,
    /// Refused in a way that will not change: do not retry.
    Refused(String),
    /// Failed in a way that may pass; `retry_after` is what the answer asked for.
    Failed {
        reason: String,
        retry_after: Option<Duration>,
    },
}

/// Posts bodies to one URL over a pooled connection.
#[derive(Clone, Debug)]
pub(crate) struct Delivery {
    agent: ureq::Agent,
    url: Arc<str>,
}

impl Delivery {
    pub(crate) fn new(url: String, timeout: Duration) -> Self {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .max_redirects_will_error(false)
            .build()
            .into();
        Delivery {
            agent,
            url: Arc::from(url),
        }
    }

    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// POSTs `body` as JSON once (on a blocking thread: the client is synchronous).
    pub(crate) async fn post(&self, body: Vec<u8>) -> Attempt {
        let (agent, url) = (self.agent.clone(), self.url.clone());
        let posted = tokio::task::spawn_blocking(move || {
            let mut response = agent
                .post(&*url)
                .content_type("application/json")
                .send(&body[..])
                .map_err(|error| error.to_string())?;
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned);
            let text = response
                .body_mut()
                .with_config()
                .limit(64 * 1024)
                .read_to_string()
                .unwrap_or_default();
            Ok::<_, String>((status, text, retry_after))
        })
        .await;
        match posted {
            Ok(Ok((status, text, retry_after))) => classify(status, &text, retry_after.as_deref()),
            Ok(Err(reason)) => Attempt::Failed {
                reason,
                retry_after: None,
            },
            Err(join) => Attempt::Failed {
                reason: format!("the request was abandoned: {join}"),
                retry_after: None,
            },
        }
    }
}

/// What an answer with `status`, body `text` and `Retry-After` header means.
pub(crate) fn classify(status: u16, text: &str, retry_after: Option<&str>) -> Attempt {
    let answered = || {
        let excerpt: String = text.trim().chars().take(EXCERPT).collect();
        if excerpt.is_empty() {
            format!("the target answered {status}")
        } else {
            format!("the target answered {status}: {excerpt}")
        }
    };
    match status {
        200..=299 => Attempt::Delivered,
        408 | 429 | 500..=599 => Attempt::Failed {
            reason: answered(),
            retry_after: retry_after
                .and_then(|value| value.trim().parse::<u64>().ok())
                .map(Duration::from_secs),
        },
        _ => Attempt::Refused(answered()),
    }
}

/// How often and how long to wait between attempts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Backoff {
    /// The wait before the first retry.
    pub(crate) first: Duration,
    /// Retries after the first attempt.
    pub(crate) retries: u32,
}

impl Backoff {
    /// The wait after `attempts` failed attempts, or `None` when no retry is left.
    pub(crate) fn wait(&self, attempts: u32, retry_after: Option<Duration>) -> Option<Duration> {
        if attempts > self.retries {
            return None;
        }
        let doubled = self
            .first
            .saturating_mul(1 << attempts.saturating_sub(1).min(20));
        Some(retry_after.unwrap_or(doubled).min(MAX_WAIT))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_delivered_refused_or_failed() {
        assert_eq!(classify(204, "", None), Attempt::Delivered);
        assert_eq!(
            classify(400, " no such card \n", None),
            Attempt::Refused("the target answered 400: no such card".to_owned())
        );
        assert_eq!(
            classify(301, "", None),
            Attempt::Refused("the target answered 301".to_owned())
        );
        assert_eq!(
            classify(429, "slow down", Some("7")),
            Attempt::Failed {
                reason: "the target answered 429: slow down".to_owned(),
                retry_after: Some(Duration::from_secs(7))
            }
        );
        assert!(matches!(
            classify(503, "", Some("Wed, 21 Oct 2015 07:28:00 GMT")),
            Attempt::Failed {
                retry_after: None,
                ..
            }
        ));
    }

    #[test]
    fn waits_double_up_to_the_cap_and_end_after_the_retries() {
        let backoff = Backoff {
            first: Duration::from_millis(100),
            retries: 3,
        };
        let waits: Vec<_> = (1..=4).map(|attempt| backoff.wait(attempt, None)).collect();
        assert_eq!(
            waits,
            [
                Some(Duration::from_millis(100)),
                Some(Duration::from_millis(200)),
                Some(Duration::from_millis(400)),
                None
            ]
        );
        assert_eq!(
            backoff.wait(1, Some(Duration::from_secs(3600))),
            Some(MAX_WAIT)
        );
        let long = Backoff {
            first: Duration::from_secs(1),
            retries: 100,
        };
        assert_eq!(long.wait(60, None), Some(MAX_WAIT));
    }
}

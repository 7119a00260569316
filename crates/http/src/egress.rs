//! [`HttpEgress`]: a streamlet that POSTs each record of its inlet to a URL.

use std::time::Duration;

use runnel_streamlet::{Context, Data, Error, Inlet, Parameter, Result, Shape, Streamlet};

use crate::HttpError;
use crate::delivery::{Attempt, Backoff, Delivery};

/// Where to POST each record.
pub const URL: Parameter<String> =
    Parameter::string("url").describe("the http:// URL each record is POSTed to as JSON");
/// How long one request may take.
pub const TIMEOUT: Parameter<Duration> = Parameter::duration("timeout")
    .describe("how long one request may take, connecting included")
    .default("10s");
/// How often a failure that may pass is retried before the egress fails.
pub const MAX_RETRIES: Parameter<i64> = Parameter::int("max-retries")
    .describe("retries of a request that failed in a way that may pass (connection, timeout, 5xx, 408, 429)")
    .default("5");
/// The wait before the first retry; it doubles with each retry, up to 30 s.
pub const RETRY_BACKOFF: Parameter<Duration> = Parameter::duration("retry-backoff")
    .describe("the wait before the first retry, doubled with each retry up to 30s; a Retry-After answer overrides it")
    .default("200ms");

/// A streamlet that POSTs every record of an inlet, as JSON (`Content-Type:
/// application/json`), to the URL of its `url` parameter, and commits it once the target
/// answered `2xx`.
///
/// - An answer the target will give again (`3xx`, or `4xx` other than `408` and `429`) is
///   a permanent failure: the record is [rejected](runnel_streamlet::Message::reject) with
///   the status and the start of the answer, so under the inlet's default policy it goes
///   to the dead-letter topic, and the egress goes on.
/// - A failure that may pass (no connection, a timeout, `5xx`, `408`, `429`) is retried
///   `max-retries` times, waiting `retry-backoff`, doubled each time up to 30 s, or what a
///   `Retry-After` answer asks (up to 30 s). When every retry failed, the egress fails
///   with an external error: the supervisor restarts it with backoff and the record is
///   sent again, rather than every record going to the dead-letter topic while the target
///   is down.
///
/// Records go one at a time, in order. Delivery is at-least-once: a record whose answer
/// was lost is sent again after a restart.
///
/// ```
/// use runnel_http::HttpEgress;
/// use runnel_streamlet::prelude::*;
///
/// #[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)]
/// pub struct Alert { pub card: String, pub score: f64 }
///
/// pub const ALERTS: Inlet<Alert> = Inlet::new("in");
///
/// pub fn webhook() -> impl Streamlet {
///     HttpEgress::new(ALERTS).describe("posts alerts to the case-management service")
/// }
/// # let _ = webhook();
/// ```
pub struct HttpEgress<T> {
    inlet: Inlet<T>,
    description: &'static str,
}

impl<T: Data> HttpEgress<T> {
    /// An egress POSTing every record of `inlet`.
    pub fn new(inlet: Inlet<T>) -> Self {
        HttpEgress {
            inlet,
            description: "POSTs each record to a URL as JSON; permanent refusals go to the dead-letter topic",
        }
    }

    /// Says what the egress does (shown by `describe`).
    pub fn describe(mut self, description: &'static str) -> Self {
        self.description = description;
        self
    }
}

impl<T: Data> Streamlet for HttpEgress<T> {
    fn shape(&self) -> Shape {
        Shape::new()
            .describe(self.description)
            .inlet(self.inlet)
            .parameter(URL)
            .parameter(TIMEOUT)
            .parameter(MAX_RETRIES)
            .parameter(RETRY_BACKOFF)
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let url = ctx.parameter(URL);
        if !url.starts_with("http://") {
            return Err(Error::from(HttpError::InvalidUrl {
                instance: ctx.instance().to_owned(),
                url,
            }));
        }
        let delivery = Delivery::new(url, ctx.parameter(TIMEOUT));
        let backoff = Backoff {
            first: ctx.parameter(RETRY_BACKOFF),
            retries: ctx.parameter(MAX_RETRIES).max(0) as u32,
        };
        let mut input = ctx.inlet(self.inlet);
        while let Some(message) = input.next().await? {
            let body = serde_json::to_vec(message.value())?;
            let mut attempts = 0;
            loop {
                attempts += 1;
                match delivery.post(body.clone()).await {
                    Attempt::Delivered => {
                        message.commit();
                        break;
                    }
                    Attempt::Refused(reason) => {
                        message.reject(reason).await?;
                        break;
                    }
                    Attempt::Failed {
                        reason,
                        retry_after,
                    } => {
                        let Some(wait) = backoff.wait(attempts, retry_after) else {
                            return Err(Error::external(HttpError::Unavailable {
                                url: delivery.url().to_owned(),
                                attempts,
                                last: reason,
                            }));
                        };
                        tracing::warn!(
                            url = delivery.url(),
                            attempts,
                            "POST {} failed: {reason}; retrying in {wait:?}",
                            delivery.url()
                        );
                        tokio::select! {
                            // Not committed: read again after the restart.
                            () = ctx.stopped() => return Ok(()),
                            () = tokio::time::sleep(wait) => {}
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

impl<T> std::fmt::Debug for HttpEgress<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpEgress")
            .field("inlet", &self.inlet)
            .finish_non_exhaustive()
    }
}

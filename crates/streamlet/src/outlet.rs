//! [`OutletSender`]: encodes values and appends them to an outlet's topic.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use bytes::Bytes;
use runnel_backend::{Headers, Producer, Receipt, Record, TrySend, partition_for_key};
use runnel_codec::{Codec, SCHEMA_HEADER};
use tokio::sync::OwnedSemaphorePermit;

use crate::acknowledgement::Acknowledgements;
use crate::clock::Clock;
use crate::metrics::PortMetrics;
use crate::port::KeyFunction;
use crate::{CommitToken, Data, Error, Result};

/// Headers of Runnel's own (schema tags, dead-letter reasons, pane metadata), which stay
/// with the record they describe and are never forwarded to derived records.
const RUNNEL_HEADER_PREFIX: &str = "runnel.";

/// Everything an outlet needs except its value type; the host prepares it.
#[derive(Debug)]
pub(crate) struct OutletParts {
    pub(crate) port: &'static str,
    pub(crate) topic: Arc<str>,
    pub(crate) partitions: u32,
    pub(crate) producer: Arc<dyn Producer>,
    pub(crate) acknowledgements: Acknowledgements,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) metrics: Arc<PortMetrics>,
    pub(crate) tag_schema: bool,
    pub(crate) registry_id: Option<u32>,
}

/// Sends values to one outlet. Cheap to clone; clones share the topic and the partitioning.
pub struct OutletSender<T> {
    inner: Arc<Inner<T>>,
}

struct Inner<T> {
    parts: OutletParts,
    codec: Codec<T>,
    key: Option<KeyFunction<T>>,
    /// Whether headers of the input a value derives from go with it.
    forward_headers: bool,
    next_partition: AtomicU32,
}

/// A value to send with a key, headers or an event timestamp of its own.
///
/// ```
/// # use runnel_streamlet::Outgoing;
/// let reading = 21.5_f64;
/// let outgoing = Outgoing::new(&reading).key("sensor-1").timestamp(1_700_000_000_000).header("unit", "celsius");
/// # let _ = outgoing;
/// ```
#[derive(Debug)]
pub struct Outgoing<'a, T> {
    value: &'a T,
    key: Option<Bytes>,
    timestamp: Option<i64>,
    headers: Headers,
    /// The headers of the input the value derives from.
    input_headers: Option<&'a Headers>,
}

impl<'a, T> Outgoing<'a, T> {
    /// The value, with the outlet's key function (if any) and the current time.
    pub fn new(value: &'a T) -> Self {
        Outgoing {
            value,
            key: None,
            timestamp: None,
            headers: Headers::new(),
            input_headers: None,
        }
    }

    /// The value derives from an input with these headers: they go with it (before the ones
    /// set with [`header`](Outgoing::header)), except Runnel's own (`runnel.*`), unless the
    /// outlet is declared [`without_input_headers`](crate::Outlet::without_input_headers).
    ///
    /// ```
    /// # use runnel_streamlet::prelude::*;
    /// # #[derive(Serialize, Deserialize, AvroSchema)] struct Reading { celsius: f64 }
    /// # const IN: Inlet<Reading> = Inlet::new("in");
    /// # const OUT: Outlet<Reading> = Outlet::new("out");
    /// # async fn demo(mut ctx: Context) -> Result<()> {
    /// let (mut readings, out) = (ctx.inlet(IN), ctx.outlet(OUT));
    /// while let Some(message) = readings.next().await? {
    ///     out.send_record(Outgoing::new(message.value()).input_headers(message.headers())).await?;
    ///     message.commit();
    /// }
    /// # Ok(()) }
    /// ```
    pub fn input_headers(mut self, headers: &'a Headers) -> Self {
        self.input_headers = Some(headers);
        self
    }

    /// Sets the key, overriding the outlet's key function.
    pub fn key(mut self, key: impl Into<Bytes>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Sets the event timestamp, in milliseconds since the Unix epoch.
    pub fn timestamp(mut self, timestamp: i64) -> Self {
        self.timestamp = Some(timestamp);
        self
    }

    /// Adds a header.
    pub fn header(mut self, key: impl Into<String>, value: impl Into<Bytes>) -> Self {
        self.headers.push(key, value);
        self
    }
}

impl<T: Data> OutletSender<T> {
    pub(crate) fn new(
        parts: OutletParts,
        format: runnel_blueprint::descriptor::Format,
        key: Option<KeyFunction<T>>,
        forward_headers: bool,
        schema: Option<&serde_json::Value>,
    ) -> Self {
        let codec = crate::port::codec(format, schema);
        let codec = match parts.registry_id {
            Some(id) => codec.with_registry_id(id),
            None => codec,
        };
        OutletSender {
            inner: Arc::new(Inner {
                parts,
                codec,
                key,
                forward_headers,
                next_partition: AtomicU32::new(0),
            }),
        }
    }

    /// Sends a value, keyed by the outlet's key function and stamped with the current time.
    ///
    /// Returns once the record is handed to the log; it is acknowledged later, and input
    /// commits wait for that. Waits when too many sends are unacknowledged.
    ///
    /// # Errors
    ///
    /// An [`ErrorKind::BadData`](crate::ErrorKind::BadData) error when the record is larger
    /// than its topic accepts ([`CommitToken::settle`](crate::CommitToken::settle) then hands
    /// the input it came from to the inlet's bad-data policy); an internal error when the
    /// value cannot be encoded; an external one when the log refuses the record otherwise.
    pub async fn send(&self, value: &T) -> Result<()> {
        let (record, partition) = self.prepare(Outgoing::new(value))?;
        self.queue(record, partition).await
    }

    /// Sends a value derived from the message `from` commits: with the input's event
    /// timestamp and headers (see [`Outgoing::input_headers`]), keyed by the outlet's key
    /// function. This is how the helpers send.
    ///
    /// # Errors
    ///
    /// As for [`send`](OutletSender::send).
    pub async fn send_derived(&self, value: &T, from: &CommitToken) -> Result<()> {
        let outgoing = Outgoing::new(value)
            .timestamp(from.timestamp())
            .input_headers(from.headers());
        let (record, partition) = self.prepare(outgoing)?;
        self.queue(record, partition).await
    }

    /// Sends a value with its own key, timestamp or headers.
    ///
    /// # Errors
    ///
    /// As for [`send`](OutletSender::send).
    pub async fn send_record(&self, outgoing: Outgoing<'_, T>) -> Result<()> {
        let (record, partition) = self.prepare(outgoing)?;
        self.queue(record, partition).await
    }

    /// Hands a prepared record to the log and its receipt to the instance's commit queue.
    ///
    /// Every send goes through here, and [`prepare`](Self::prepare) does everything that
    /// does not wait, so what the sending future holds across its awaits (and what is
    /// moved each time it is nested in a caller's future) is just the record.
    async fn queue(&self, record: Record, partition: u32) -> Result<()> {
        let (receipt, permit) = self.hand_to_log(record, partition).await?;
        self.inner.parts.acknowledgements.sent(receipt, permit);
        Ok(())
    }

    /// Sends a value like [`send_record`](OutletSender::send_record), but hands its receipt
    /// back instead of leaving it to the instance's commit queue: the returned future
    /// completes with the record's partition and offset once the log acknowledged it
    /// (fsync'd locally, `acks=all` on Kafka). For sources that must answer someone only
    /// after a record is durable, such as an HTTP ingress.
    ///
    /// Records are handed to the log in the order of the calls; their receipts may be
    /// awaited later, several at a time. Until its receipt completes (or is dropped), a
    /// record counts against the instance's unacknowledged sends, as any send does. Input
    /// commits do not wait for it, so commit a message only after awaiting the receipts of
    /// what derives from it. In an exactly-once streamlet a receipt completes only when the
    /// transaction commits, which waits for handed-out messages to be committed: await it
    /// only while holding no uncommitted message.
    ///
    /// ```no_run
    /// # use runnel_streamlet::prelude::*;
    /// # #[derive(Serialize, Deserialize, AvroSchema)] struct Order { id: String }
    /// # const ORDERS: Outlet<Order> = Outlet::new("orders");
    /// # async fn demo(ctx: Context, order: Order) -> Result<()> {
    /// let orders = ctx.outlet(ORDERS);
    /// let receipt = orders.send_with_receipt(Outgoing::new(&order)).await?;
    /// let (partition, offset) = receipt.await?; // durable from here on
    /// # let _ = (partition, offset); Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As for [`send`](OutletSender::send), from this call or from the receipt.
    pub async fn send_with_receipt(
        &self,
        outgoing: Outgoing<'_, T>,
    ) -> Result<futures::future::BoxFuture<'static, Result<(u32, u64)>>> {
        let (record, partition) = self.prepare(outgoing)?;
        let (receipt, permit) = self.hand_to_log(record, partition).await?;
        Ok(Box::pin(async move {
            let offset = receipt.await.map_err(refused)?;
            drop(permit); // the send is acknowledged: it no longer counts
            Ok((partition, offset))
        }))
    }

    /// Encodes and partitions a record.
    fn prepare(&self, outgoing: Outgoing<'_, T>) -> Result<(Record, u32)> {
        let inner = &*self.inner;
        let parts = &inner.parts;
        let encoded = inner.codec.encode_bytes(outgoing.value)?;
        let key = outgoing.key.or_else(|| {
            inner
                .key
                .map(|key| Bytes::from(key(outgoing.value).into_bytes()))
        });
        let partition = match &key {
            Some(key) => partition_for_key(key, parts.partitions),
            None => inner.next_partition.fetch_add(1, Ordering::Relaxed) % parts.partitions,
        };
        let mut headers = match outgoing.input_headers {
            Some(input) if inner.forward_headers && !input.is_empty() => {
                let mut headers: Headers = input
                    .iter()
                    .filter(|header| !header.key.starts_with(RUNNEL_HEADER_PREFIX))
                    .cloned()
                    .collect();
                for header in &outgoing.headers {
                    headers.push(header.key.clone(), header.value.clone());
                }
                headers
            }
            _ => outgoing.headers,
        };
        if parts.tag_schema
            && let Some(fingerprint) = inner.codec.fingerprint()
        {
            headers.push(SCHEMA_HEADER, fingerprint.clone());
        }
        parts.metrics.record(encoded.len());
        let record = Record {
            key,
            value: Some(encoded),
            headers,
            timestamp: outgoing
                .timestamp
                .unwrap_or_else(|| parts.clock.now_millis()),
        };
        Ok((record, partition))
    }

    /// Appends a prepared record once there is room among the unacknowledged sends; returns
    /// its receipt and its permit.
    async fn hand_to_log(
        &self,
        record: Record,
        partition: u32,
    ) -> Result<(Receipt, OwnedSemaphorePermit)> {
        let parts = &self.inner.parts;
        let permit = parts.acknowledgements.send_permit().await;
        // Most records need no waiting, nor `send`'s boxed future.
        let receipt = match parts.producer.try_send(&parts.topic, partition, record) {
            TrySend::Sent(receipt) => receipt,
            TrySend::Wait(record) => parts.producer.send(&parts.topic, partition, record).await,
        };
        Ok((receipt.map_err(refused)?, permit))
    }

    /// The outlet's topic.
    pub fn topic(&self) -> &str {
        &self.inner.parts.topic
    }

    /// The wire format.
    pub fn format(&self) -> runnel_blueprint::descriptor::Format {
        self.inner.codec.format()
    }
}

/// The error of a record the log refused.
fn refused(error: runnel_backend::Error) -> Error {
    match error {
        // The record, not the log, is at fault: the message it came from is bad data.
        runnel_backend::Error::RecordTooLarge { .. } => Error::bad_data(error),
        other => Error::external(other),
    }
}

impl<T> Clone for OutletSender<T> {
    fn clone(&self) -> Self {
        OutletSender {
            inner: self.inner.clone(),
        }
    }
}

impl<T> std::fmt::Debug for OutletSender<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutletSender")
            .field("port", &self.inner.parts.port)
            .field("topic", &self.inner.parts.topic)
            .finish_non_exhaustive()
    }
}

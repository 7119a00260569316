//! The ingress's request handlers: admit, read, decode, validate, write, answer once
//! durable.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use axum::body::BodyDataStream;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use futures::future::BoxFuture;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use runnel_streamlet::{Data, Error, ErrorKind, Outgoing, OutletSender};
use serde::Serialize;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::Invalid;
use crate::decode::{Validation, decode};

/// What every request of one ingress shares.
pub(crate) struct Admission<T> {
    pub(crate) outlet: OutletSender<T>,
    pub(crate) validation: Option<Validation<T>>,
    pub(crate) max_body_size: usize,
    /// One permit per record written and not yet acknowledged.
    pub(crate) in_flight: Arc<Semaphore>,
    /// Seconds, for `Retry-After`.
    pub(crate) retry_after: u64,
}

/// The JSON body of every answer.
#[derive(Debug, Default, Serialize)]
struct Answer {
    accepted: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    partition: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    offset: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u64>,
}

/// Why a request (or a line of it) was not accepted.
#[derive(Debug)]
struct Refusal {
    status: StatusCode,
    message: String,
    field: Option<String>,
    retry_after: Option<u64>,
}

impl Refusal {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Refusal {
            status,
            message: message.into(),
            field: None,
            retry_after: None,
        }
    }

    fn invalid(invalid: Invalid) -> Self {
        Refusal {
            field: invalid.field_path().map(str::to_owned),
            ..Refusal::new(StatusCode::BAD_REQUEST, invalid.to_string())
        }
    }

    fn busy<T>(admission: &Admission<T>, message: impl Into<String>) -> Self {
        Refusal {
            retry_after: Some(admission.retry_after),
            ..Refusal::new(StatusCode::SERVICE_UNAVAILABLE, message)
        }
    }

    fn too_large<T>(admission: &Admission<T>, what: &str) -> Self {
        Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "{what} is larger than the limit of {} bytes (max-body-size)",
                admission.max_body_size
            ),
        )
    }

    /// The refusal of a record the outlet did not take.
    fn unsent<T>(admission: &Admission<T>, error: &Error) -> Self {
        match error.kind() {
            ErrorKind::BadData => Refusal::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the log refused the record: {error:#}"),
            ),
            ErrorKind::External => Refusal::busy(
                admission,
                format!("the log did not take the record: {error:#}"),
            ),
            _ => Refusal::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the record could not be written: {error:#}"),
            ),
        }
    }
}

fn respond(status: StatusCode, answer: &Answer, retry_after: Option<u64>) -> Response {
    let body = serde_json::to_vec(answer).expect("answers serialize");
    let mut response = (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response();
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

fn refuse(refusal: Refusal, accepted: u64, line: Option<u64>) -> Response {
    tracing::debug!(status = %refusal.status, line, "refused a request: {}", refusal.message);
    let answer = Answer {
        accepted,
        error: Some(refusal.message),
        field: refusal.field,
        line,
        ..Answer::default()
    };
    respond(refusal.status, &answer, refusal.retry_after)
}

/// The declared length of a request, if it gave one.
fn content_length(request: &Request) -> Option<u64> {
    request
        .headers()
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// `POST /` with one JSON value: written, and answered once durable.
pub(crate) async fn accept_one<T: Data>(
    State(admission): State<Arc<Admission<T>>>,
    request: Request,
) -> Response {
    match write_one(&admission, request).await {
        Ok((partition, offset)) => respond(
            StatusCode::OK,
            &Answer {
                accepted: 1,
                partition: Some(partition),
                offset: Some(offset),
                ..Answer::default()
            },
            None,
        ),
        Err(refusal) => refuse(refusal, 0, None),
    }
}

async fn write_one<T: Data>(
    admission: &Admission<T>,
    request: Request,
) -> Result<(u32, u64), Refusal> {
    if content_length(&request).is_some_and(|length| length > admission.max_body_size as u64) {
        return Err(Refusal::too_large(admission, "the body"));
    }
    // Admitted before the body is read, so at most `max-in-flight` bodies are in memory.
    let permit = admission.in_flight.clone().try_acquire_owned().map_err(|_| {
        Refusal::busy(
            admission,
            "the ingress has as many records waiting for the log as it holds (max-in-flight); retry later",
        )
    })?;
    let body = Limited::new(request.into_body(), admission.max_body_size)
        .collect()
        .await
        .map_err(|error| {
            if error.is::<LengthLimitError>() {
                Refusal::too_large(admission, "the body")
            } else {
                Refusal::new(
                    StatusCode::BAD_REQUEST,
                    format!("reading the body failed: {error}"),
                )
            }
        })?
        .to_bytes();
    let value = checked(admission, &body)?;
    let receipt = admission
        .outlet
        .send_with_receipt(Outgoing::new(&value))
        .await
        .map_err(|error| Refusal::unsent(admission, &error))?;
    let written = receipt
        .await
        .map_err(|error| Refusal::unsent(admission, &error));
    drop(permit);
    written
}

/// The value of `bytes`, decoded and validated.
fn checked<T: Data>(admission: &Admission<T>, bytes: &[u8]) -> Result<T, Refusal> {
    let value: T = decode(bytes).map_err(Refusal::invalid)?;
    if let Some(validation) = admission.validation {
        validation(&value).map_err(Refusal::invalid)?;
    }
    Ok(value)
}

/// How much of a refused streamed body is read (and dropped) before the answer, at most.
const DRAIN_BYTES: usize = 1 << 20;
/// How long a refused streamed body is read (and dropped) before the answer, at most.
const DRAIN_TIME: Duration = Duration::from_secs(2);

/// A record handed to the log whose acknowledgement has not been awaited yet.
type Pending = BoxFuture<'static, runnel_streamlet::Result<(u32, u64)>>;

/// The records one streamed request handed to the log, oldest first.
struct Receipts<'a, T> {
    admission: &'a Admission<T>,
    pending: VecDeque<Pending>,
    /// Records acknowledged so far, in order.
    accepted: u64,
    /// The first record the log did not acknowledge.
    failed: Option<Refusal>,
}

impl<'a, T: Data> Receipts<'a, T> {
    fn new(admission: &'a Admission<T>) -> Self {
        Receipts {
            admission,
            pending: VecDeque::new(),
            accepted: 0,
            failed: None,
        }
    }

    /// A permit for one more record: taken when free, else after the oldest record of this
    /// request is acknowledged; `None` when the request has nothing of its own to wait for
    /// and others hold every permit.
    async fn permit(&mut self) -> Option<OwnedSemaphorePermit> {
        loop {
            if let Ok(permit) = self.admission.in_flight.clone().try_acquire_owned() {
                return Some(permit);
            }
            let oldest = self.pending.pop_front()?;
            self.settle(oldest.await);
        }
    }

    fn push(&mut self, receipt: Pending, permit: OwnedSemaphorePermit) {
        self.pending.push_back(Box::pin(async move {
            let written = receipt.await;
            drop(permit);
            written
        }));
    }

    fn settle(&mut self, written: runnel_streamlet::Result<(u32, u64)>) {
        match written {
            Ok(_) if self.failed.is_none() => self.accepted += 1,
            Ok(_) => {}
            Err(error) => {
                if self.failed.is_none() {
                    self.failed = Some(Refusal::unsent(self.admission, &error));
                }
            }
        }
    }

    /// Waits for every record still pending.
    async fn finish(&mut self) {
        while let Some(oldest) = self.pending.pop_front() {
            self.settle(oldest.await);
        }
    }
}

/// `POST /` with newline-delimited JSON: one record per line, written in order while the
/// body streams in, answered with how many were accepted once they are all durable.
pub(crate) async fn accept_lines<T: Data>(
    State(admission): State<Arc<Admission<T>>>,
    request: Request,
) -> Response {
    let mut receipts = Receipts::new(&admission);
    let mut chunks = request.into_body().into_data_stream();
    let stopped = write_lines(&admission, &mut chunks, &mut receipts).await;
    if stopped.is_err() || receipts.failed.is_some() {
        drain(&mut chunks).await;
    }
    receipts.finish().await;
    let accepted = receipts.accepted;
    match (receipts.failed, stopped) {
        (Some(failed), _) => refuse(failed, accepted, None),
        (None, Err((refusal, line))) => refuse(refusal, accepted, line),
        (None, Ok(())) => respond(
            StatusCode::OK,
            &Answer {
                accepted,
                ..Answer::default()
            },
            None,
        ),
    }
}

/// Writes each line of `body`; stops at the first line refused (returned with its number).
async fn write_lines<T: Data>(
    admission: &Admission<T>,
    chunks: &mut BodyDataStream,
    receipts: &mut Receipts<'_, T>,
) -> Result<(), (Refusal, Option<u64>)> {
    let mut partial = BytesMut::new();
    let mut number = 0_u64;
    loop {
        let chunk = match chunks.next().await {
            Some(Ok(chunk)) => chunk,
            Some(Err(error)) => {
                let refusal = Refusal::new(
                    StatusCode::BAD_REQUEST,
                    format!("reading the body failed: {error}"),
                );
                return Err((refusal, None));
            }
            None => break,
        };
        partial.extend_from_slice(&chunk);
        while let Some(end) = partial.iter().position(|byte| *byte == b'\n') {
            let line = partial.split_to(end + 1).freeze();
            number += 1;
            write_line(admission, &line, number, receipts).await?;
        }
        if partial.len() > admission.max_body_size {
            let refusal = Refusal::too_large(admission, &format!("line {}", number + 1));
            return Err((refusal, Some(number + 1)));
        }
        if receipts.failed.is_some() {
            return Ok(());
        }
    }
    if !partial.is_empty() {
        write_line(admission, &partial.freeze(), number + 1, receipts).await?;
    }
    Ok(())
}

/// Reads and drops what is left of a refused body, within bounds, before answering: a
/// client that sends its whole body before reading the answer (many do) would otherwise
/// meet a closed connection instead of the answer.
async fn drain(chunks: &mut BodyDataStream) {
    let mut left = DRAIN_BYTES;
    let draining = async {
        while let Some(Ok(chunk)) = chunks.next().await {
            left = left.saturating_sub(chunk.len());
            if left == 0 {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIME, draining).await;
}

async fn write_line<T: Data>(
    admission: &Admission<T>,
    line: &Bytes,
    number: u64,
    receipts: &mut Receipts<'_, T>,
) -> Result<(), (Refusal, Option<u64>)> {
    let content = line.strip_suffix(b"\n").unwrap_or(line);
    let content = content.strip_suffix(b"\r").unwrap_or(content);
    if content.len() > admission.max_body_size {
        return Err((
            Refusal::too_large(admission, &format!("line {number}")),
            Some(number),
        ));
    }
    if content.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    let value = checked(admission, content).map_err(|refusal| {
        let refusal = Refusal {
            message: format!("line {number}: {}", refusal.message),
            ..refusal
        };
        (refusal, Some(number))
    })?;
    let Some(permit) = receipts.permit().await else {
        let refusal = Refusal::busy(
            admission,
            "the ingress has as many records waiting for the log as it holds (max-in-flight); retry later",
        );
        return Err((refusal, Some(number)));
    };
    match admission
        .outlet
        .send_with_receipt(Outgoing::new(&value))
        .await
    {
        Ok(receipt) => {
            receipts.push(receipt, permit);
            Ok(())
        }
        Err(error) => Err((Refusal::unsent(admission, &error), Some(number))),
    }
}

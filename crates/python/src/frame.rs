//! The frames of the protocol between the host and a Python streamlet's worker process
//! (version 2, docs/python.md): a u32 length of what follows, a u8 kind, the body; integers
//! big-endian. The Python side is `python/runnel/protocol.py`.

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// The protocol version the host speaks.
pub const VERSION: u32 = 2;

/// A record's writer id when it was written with the inlet's own schema.
pub const OWN_SCHEMA: u16 = 0xFFFF;

/// The kinds of frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Host to streamlet: JSON with the protocol version, instance and parameters.
    Hello = 1,
    /// Host to streamlet: a schema an inlet's producers wrote with.
    Schema = 2,
    /// Host to streamlet: the snapshot to resume from.
    Restore = 3,
    /// Host to streamlet: records of an inlet.
    Batch = 4,
    /// Host to streamlet: asks for the state.
    Checkpoint = 5,
    /// Host to streamlet: exit.
    Quit = 6,
    /// Host to streamlet of the arrow form: records of an inlet as an Arrow IPC stream.
    ArrowBatch = 7,
    /// Streamlet to host: started; its descriptor entry.
    Ready = 129,
    /// Streamlet to host: what became of each record of a batch.
    Outputs = 130,
    /// Streamlet to host: the state.
    Snapshot = 131,
    /// Streamlet to host: could not start; why.
    Failed = 132,
}

impl Kind {
    /// The kind of a frame's kind byte, if it is one.
    pub fn from_byte(byte: u8) -> Option<Kind> {
        Some(match byte {
            1 => Kind::Hello,
            2 => Kind::Schema,
            3 => Kind::Restore,
            4 => Kind::Batch,
            5 => Kind::Checkpoint,
            6 => Kind::Quit,
            7 => Kind::ArrowBatch,
            129 => Kind::Ready,
            130 => Kind::Outputs,
            131 => Kind::Snapshot,
            132 => Kind::Failed,
            _ => return None,
        })
    }
}

/// A record of a batch, as the streamlet gets it.
#[derive(Clone, Debug, PartialEq)]
pub struct InputRecord<'a> {
    /// Its partition of the inlet's topic.
    pub partition: u32,
    /// Its offset there.
    pub offset: u64,
    /// Its key.
    pub key: Option<&'a [u8]>,
    /// The id of the schema it was written with ([`OWN_SCHEMA`]: the inlet's).
    pub writer: u16,
    /// Its Avro datum.
    pub datum: &'a [u8],
}

/// Starts a frame of `kind` in `out`; [`finish`] writes its length once the body is in.
pub fn start(out: &mut BytesMut, kind: Kind) -> usize {
    let at = out.len();
    out.put_u32(0);
    out.put_u8(kind as u8);
    at
}

/// Writes the length of the frame started at `at`.
pub fn finish(out: &mut BytesMut, at: usize) {
    let length = u32::try_from(out.len() - at - 4).expect("a frame under 4 GiB");
    out[at..at + 4].copy_from_slice(&length.to_be_bytes());
}

/// Appends a whole frame of `kind` with `body`.
pub fn frame(out: &mut BytesMut, kind: Kind, body: &[u8]) {
    let at = start(out, kind);
    out.put_slice(body);
    finish(out, at);
}

/// Appends a `BATCH` frame: `records` of inlet `inlet`, handed over at `now` (milliseconds
/// since the epoch). After the inlet, time and count come each record's fixed part (u32
/// partition, u64 offset, u16 writer id, i32 key length or -1, u32 datum length), then each
/// record's key and datum, in order.
pub fn batch(out: &mut BytesMut, inlet: u16, now: i64, records: &[InputRecord<'_>]) {
    let at = start(out, Kind::Batch);
    out.put_u16(inlet);
    out.put_i64(now);
    out.put_u32(u32::try_from(records.len()).expect("a batch under 4G records"));
    for record in records {
        out.put_u32(record.partition);
        out.put_u64(record.offset);
        out.put_u16(record.writer);
        match record.key {
            None => out.put_i32(-1),
            Some(key) => out.put_i32(i32::try_from(key.len()).expect("a key under 2 GiB")),
        }
        out.put_u32(u32::try_from(record.datum.len()).expect("a record under 4 GiB"));
    }
    for record in records {
        if let Some(key) = record.key {
            out.put_slice(key);
        }
        out.put_slice(record.datum);
    }
    finish(out, at);
}

/// Appends an `ARROW_BATCH` frame: the records of inlet `inlet` handed over at `now`, as
/// the Arrow IPC `stream` holds them (a row each, in order). After the inlet, time and
/// count come each record's u32 partition, u64 offset and i32 key length (or -1), then the
/// keys, then the stream as `bytes`. `records`' writers and datums are not sent.
pub fn arrow_batch(
    out: &mut BytesMut,
    inlet: u16,
    now: i64,
    records: &[InputRecord<'_>],
    stream: &[u8],
) {
    let at = start(out, Kind::ArrowBatch);
    out.put_u16(inlet);
    out.put_i64(now);
    out.put_u32(u32::try_from(records.len()).expect("a batch under 4G records"));
    for record in records {
        out.put_u32(record.partition);
        out.put_u64(record.offset);
        match record.key {
            None => out.put_i32(-1),
            Some(key) => out.put_i32(i32::try_from(key.len()).expect("a key under 2 GiB")),
        }
    }
    for record in records {
        if let Some(key) = record.key {
            out.put_slice(key);
        }
    }
    out.put_u32(u32::try_from(stream.len()).expect("a batch under 4 GiB"));
    out.put_slice(stream);
    finish(out, at);
}

/// A table the streamlet emitted (the arrow form).
#[derive(Clone, Debug, PartialEq)]
pub struct TableOutput {
    /// The outlet's index (in the descriptor's order).
    pub outlet: u16,
    /// The column holding each row's key, if any.
    pub key_column: Option<String>,
    /// The rows, as an Arrow IPC stream.
    pub stream: Bytes,
}

/// An output the streamlet emitted.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    /// The outlet's index (in the descriptor's order).
    pub outlet: u16,
    /// Its key.
    pub key: Option<Bytes>,
    /// Its Avro datum, of the outlet's schema.
    pub datum: Bytes,
}

/// What became of one record of a batch.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// It was handled; these are its outputs.
    Done(Vec<Output>),
    /// It failed (the streamlet raised, or it did not decode); the error with its traceback.
    Failed(String),
    /// It was handled (the arrow form); these are the tables it emitted.
    Tables(Vec<TableOutput>),
}

/// A body that does not follow the protocol.
#[derive(Debug, thiserror::Error)]
#[error("the Python streamlet's {kind} frame is malformed: {what}")]
pub struct Malformed {
    kind: &'static str,
    what: &'static str,
}

/// The outcomes of an `OUTPUTS` body.
///
/// # Errors
///
/// When the body is cut short or says something else than the protocol allows.
pub fn outcomes(mut body: Bytes) -> Result<Vec<Outcome>, Malformed> {
    let malformed = |what| Malformed {
        kind: "OUTPUTS",
        what,
    };
    let count = take_u32(&mut body).ok_or(malformed("no count"))?;
    let mut outcomes = Vec::with_capacity(count as usize);
    for _ in 0..count {
        if body.is_empty() {
            return Err(malformed("fewer outcomes than its count"));
        }
        match body.get_u8() {
            0 => {
                let outputs = take_u32(&mut body).ok_or(malformed("no output count"))?;
                let mut done = Vec::with_capacity(outputs as usize);
                for _ in 0..outputs {
                    if body.remaining() < 2 {
                        return Err(malformed("an output cut short"));
                    }
                    let outlet = body.get_u16();
                    let key = take_key(&mut body).ok_or(malformed("an output's key cut short"))?;
                    let datum = take_bytes(&mut body).ok_or(malformed("an output cut short"))?;
                    done.push(Output { outlet, key, datum });
                }
                outcomes.push(Outcome::Done(done));
            }
            1 => {
                let error = take_bytes(&mut body).ok_or(malformed("an error cut short"))?;
                outcomes.push(Outcome::Failed(
                    String::from_utf8_lossy(&error).into_owned(),
                ));
            }
            2 => {
                let tables = take_u32(&mut body).ok_or(malformed("no table count"))?;
                let mut emitted = Vec::with_capacity(tables as usize);
                for _ in 0..tables {
                    if body.remaining() < 2 {
                        return Err(malformed("a table cut short"));
                    }
                    let outlet = body.get_u16();
                    let key_column = take_key(&mut body)
                        .ok_or(malformed("a table's key column cut short"))?
                        .map(|name| String::from_utf8_lossy(&name).into_owned());
                    let stream = take_bytes(&mut body).ok_or(malformed("a table cut short"))?;
                    emitted.push(TableOutput {
                        outlet,
                        key_column,
                        stream,
                    });
                }
                outcomes.push(Outcome::Tables(emitted));
            }
            _ => return Err(malformed("a status other than 0, 1 or 2")),
        }
    }
    if body.has_remaining() {
        return Err(malformed("bytes after the last outcome"));
    }
    Ok(outcomes)
}

fn take_u32(body: &mut Bytes) -> Option<u32> {
    (body.remaining() >= 4).then(|| body.get_u32())
}

fn take_bytes(body: &mut Bytes) -> Option<Bytes> {
    let length = take_u32(body)? as usize;
    (body.remaining() >= length).then(|| body.split_to(length))
}

fn take_key(body: &mut Bytes) -> Option<Option<Bytes>> {
    if body.remaining() < 4 {
        return None;
    }
    let length = body.get_i32();
    if length < 0 {
        return Some(None);
    }
    let length = length as usize;
    (body.remaining() >= length).then(|| Some(body.split_to(length)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put_bytes(out: &mut BytesMut, bytes: &[u8]) {
        out.put_u32(u32::try_from(bytes.len()).expect("a record under 4 GiB"));
        out.put_slice(bytes);
    }

    fn put_key(out: &mut BytesMut, key: Option<&[u8]>) {
        match key {
            None => out.put_i32(-1),
            Some(key) => {
                out.put_i32(i32::try_from(key.len()).expect("a key under 2 GiB"));
                out.put_slice(key);
            }
        }
    }

    #[test]
    fn outcomes_read_what_the_worker_writes() {
        let mut body = BytesMut::new();
        body.put_u32(2);
        body.put_u8(0);
        body.put_u32(1);
        body.put_u16(3);
        put_key(&mut body, Some(b"k"));
        put_bytes(&mut body, b"datum");
        body.put_u8(1);
        put_bytes(&mut body, b"ValueError: no");
        let read = outcomes(body.freeze()).unwrap();
        assert_eq!(
            read,
            vec![
                Outcome::Done(vec![Output {
                    outlet: 3,
                    key: Some(Bytes::from_static(b"k")),
                    datum: Bytes::from_static(b"datum"),
                }]),
                Outcome::Failed("ValueError: no".into()),
            ]
        );
    }

    #[test]
    fn a_cut_short_body_is_malformed_not_a_panic() {
        let mut body = BytesMut::new();
        body.put_u32(1);
        body.put_u8(0);
        body.put_u32(1);
        body.put_u16(0);
        let error = outcomes(body.freeze()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the Python streamlet's OUTPUTS frame is malformed: an output's key cut short"
        );
    }
}

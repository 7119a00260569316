//! The record batch: the unit the writer appends, syncs and checksums, and the reader
//! verifies. The layout is described in the crate documentation; all integers are
//! little-endian.

use bytes::Bytes;
use runnel_backend::{Header, Headers, Record};

/// The first four bytes of every batch the writer appends (format version 2: the value
/// length is signed and `-1` is a null value).
pub(crate) const MAGIC: [u8; 4] = *b"RNB2";
/// The first four bytes of a batch in format version 1 (the value length is unsigned and a
/// value is never null), still read so that segments written before version 2 stay readable.
pub(crate) const MAGIC_V1: [u8; 4] = *b"RNB1";
/// The size of the batch header.
pub(crate) const HEADER_LEN: usize = 32;
/// The first four bytes of a batch written by a transactional producer: the plain header,
/// then [`TRANSACTION_FIELDS_LEN`] bytes naming the producer, then the records (none in a
/// control batch). The last byte is the record encoding's version, as in [`MAGIC`]: the
/// writer writes version 2.
pub(crate) const TRANSACTIONAL_MAGIC: [u8; 4] = *b"RNT2";
/// A transactional batch whose records are in format version 1, still read.
pub(crate) const TRANSACTIONAL_MAGIC_V1: [u8; 4] = *b"RNT1";
/// The bytes between the plain header and the records of a transactional batch: producer
/// id `u64`, epoch `u32`, control `u32` (0 data, 1 commit marker, 2 abort marker).
pub(crate) const TRANSACTION_FIELDS_LEN: usize = 16;
/// The size of a transactional batch's header.
pub(crate) const TRANSACTIONAL_HEADER_LEN: usize = HEADER_LEN + TRANSACTION_FIELDS_LEN;
/// The bytes a record takes besides its key, value and headers.
const RECORD_OVERHEAD: usize = 8 + 4 + 4 + 4;
/// The bytes a header takes besides its name and value.
const HEADER_OVERHEAD: usize = 4 + 4;

/// The record encodings a batch can hold, named by its magic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// `RNB1`: the value length is a `u32`, so a value cannot be null.
    V1,
    /// `RNB2`: the value length is an `i32`, `-1` being a null value (as for the key).
    V2,
}

/// The fixed fields at the start of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BatchHeader {
    /// How its records are encoded.
    pub(crate) format: Format,
    /// The whole batch's length in bytes, header included.
    pub(crate) length: u32,
    /// The offset of the first record.
    pub(crate) base_offset: u64,
    /// How many records follow the header.
    pub(crate) record_count: u32,
    /// The largest record timestamp in the batch.
    pub(crate) max_timestamp: i64,
    /// The producer of a transactional batch; `None` for a plain one.
    pub(crate) transaction: Option<TransactionFields>,
}

impl BatchHeader {
    /// The offset after the batch's last record.
    pub(crate) fn next_offset(&self) -> u64 {
        self.base_offset + u64::from(self.record_count)
    }

    /// Where the records start: after the header and, in a transactional batch, the
    /// producer fields.
    pub(crate) fn records_start(&self) -> usize {
        match self.transaction {
            Some(_) => TRANSACTIONAL_HEADER_LEN,
            None => HEADER_LEN,
        }
    }

    /// Whether this is a transaction marker, which holds no records for readers.
    pub(crate) fn is_control(&self) -> bool {
        self.transaction
            .is_some_and(|fields| fields.control != Control::Data)
    }
}

/// What a transactional batch holds: records, or the marker that ends its producer's
/// transaction in the partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Control {
    /// Records of an open transaction.
    Data,
    /// The transaction committed: its records before this marker are visible.
    Commit,
    /// The transaction aborted: its records before this marker are never read committed.
    Abort,
}

impl Control {
    fn code(self) -> u32 {
        match self {
            Control::Data => 0,
            Control::Commit => 1,
            Control::Abort => 2,
        }
    }
}

/// The producer fields of a transactional batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct TransactionFields {
    /// The producer id the log gave the transactional id.
    pub(crate) producer_id: u64,
    /// The producer's epoch; bumped whenever a producer with the same id starts.
    pub(crate) epoch: u32,
    /// Records, or a marker.
    pub(crate) control: Control,
}

impl TransactionFields {
    /// The size of the header a batch with these fields (or none) starts with.
    pub(crate) fn header_len(fields: Option<TransactionFields>) -> usize {
        match fields {
            Some(_) => TRANSACTIONAL_HEADER_LEN,
            None => HEADER_LEN,
        }
    }
}

/// Why bytes at a position are not a good batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BatchProblem {
    /// The bytes end before the batch does (a torn write, or a read that was too short).
    Incomplete {
        /// The batch length its header claims, if the header itself was complete.
        claimed: Option<u32>,
    },
    /// The bytes are not a valid batch.
    Invalid(String),
}

/// The encoded size of a record.
pub(crate) fn encoded_len(record: &Record) -> usize {
    RECORD_OVERHEAD
        + record.key.as_ref().map_or(0, Bytes::len)
        + record.value_len()
        + record
            .headers
            .iter()
            .map(|header| HEADER_OVERHEAD + header.key.len() + header.value.len())
            .sum::<usize>()
}

/// Appends one encoded record to a batch being built.
pub(crate) fn encode_record(buffer: &mut Vec<u8>, record: &Record) {
    buffer.reserve(encoded_len(record));
    buffer.extend_from_slice(&record.timestamp.to_le_bytes());
    match &record.key {
        Some(key) => {
            buffer.extend_from_slice(&(key.len() as i32).to_le_bytes());
            buffer.extend_from_slice(key);
        }
        None => buffer.extend_from_slice(&(-1i32).to_le_bytes()),
    }
    match &record.value {
        Some(value) => {
            buffer.extend_from_slice(&(value.len() as i32).to_le_bytes());
            buffer.extend_from_slice(value);
        }
        None => buffer.extend_from_slice(&(-1i32).to_le_bytes()),
    }
    buffer.extend_from_slice(&(record.headers.len() as u32).to_le_bytes());
    for header in &record.headers {
        buffer.extend_from_slice(&(header.key.len() as u32).to_le_bytes());
        buffer.extend_from_slice(header.key.as_bytes());
        buffer.extend_from_slice(&(header.value.len() as u32).to_le_bytes());
        buffer.extend_from_slice(&header.value);
    }
}

/// Fills in the header of a batch whose records follow [`HEADER_LEN`] reserved bytes, and
/// its checksum.
///
/// # Panics
///
/// If `batch` is shorter than a header or longer than `u32::MAX` bytes (the writer bounds
/// batches far below that).
pub(crate) fn seal(batch: &mut [u8], base_offset: u64, record_count: u32, max_timestamp: i64) {
    seal_with(batch, MAGIC, base_offset, record_count, max_timestamp);
}

/// Fills in the header of a transactional batch: the plain header and, after it, the
/// producer fields; its records follow [`TRANSACTIONAL_HEADER_LEN`] reserved bytes.
///
/// # Panics
///
/// As [`seal`], and if `batch` is shorter than a transactional header.
pub(crate) fn seal_transactional(
    batch: &mut [u8],
    fields: TransactionFields,
    base_offset: u64,
    record_count: u32,
    max_timestamp: i64,
) {
    batch[32..40].copy_from_slice(&fields.producer_id.to_le_bytes());
    batch[40..44].copy_from_slice(&fields.epoch.to_le_bytes());
    batch[44..48].copy_from_slice(&fields.control.code().to_le_bytes());
    seal_with(
        batch,
        TRANSACTIONAL_MAGIC,
        base_offset,
        record_count,
        max_timestamp,
    );
}

/// Whether `bytes` start with the magic of a batch of any kind.
pub(crate) fn starts_with_magic(bytes: &[u8]) -> bool {
    [MAGIC, MAGIC_V1, TRANSACTIONAL_MAGIC, TRANSACTIONAL_MAGIC_V1]
        .iter()
        .any(|magic| bytes.starts_with(magic))
}

fn seal_with(
    batch: &mut [u8],
    magic: [u8; 4],
    base_offset: u64,
    record_count: u32,
    max_timestamp: i64,
) {
    let length = u32::try_from(batch.len()).expect("batches are bounded far below 4 GiB");
    batch[0..4].copy_from_slice(&magic);
    batch[4..8].copy_from_slice(&length.to_le_bytes());
    batch[12..20].copy_from_slice(&base_offset.to_le_bytes());
    batch[20..24].copy_from_slice(&record_count.to_le_bytes());
    batch[24..32].copy_from_slice(&max_timestamp.to_le_bytes());
    let crc = checksum(batch);
    batch[8..12].copy_from_slice(&crc.to_le_bytes());
}

/// CRC-32C over the whole batch except the checksum field itself.
fn checksum(batch: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&batch[0..8]), &batch[12..])
}

/// Reads the header at the start of `bytes` without checking the records.
pub(crate) fn read_header(bytes: &[u8]) -> Result<BatchHeader, BatchProblem> {
    if bytes.len() < HEADER_LEN {
        return Err(BatchProblem::Incomplete { claimed: None });
    }
    // The last byte of the marker is the record encoding's version; `RNT` marks a batch
    // of a transactional producer.
    let (format, transactional) = match bytes[0..4].try_into().unwrap_or_default() {
        MAGIC => (Format::V2, false),
        MAGIC_V1 => (Format::V1, false),
        TRANSACTIONAL_MAGIC => (Format::V2, true),
        TRANSACTIONAL_MAGIC_V1 => (Format::V1, true),
        other => {
            return Err(BatchProblem::Invalid(format!(
                "expected a batch marker ({MAGIC:?}, {MAGIC_V1:?}, {TRANSACTIONAL_MAGIC:?} or {TRANSACTIONAL_MAGIC_V1:?}), found {other:?}"
            )));
        }
    };
    let mut header = BatchHeader {
        format,
        length: u32_at(bytes, 4),
        base_offset: u64::from_le_bytes(bytes[12..20].try_into().unwrap_or_default()),
        record_count: u32_at(bytes, 20),
        max_timestamp: i64::from_le_bytes(bytes[24..32].try_into().unwrap_or_default()),
        transaction: None,
    };
    if transactional {
        header.transaction = Some(transaction_fields(bytes)?);
    }
    if (header.length as usize) < header.records_start() {
        return Err(BatchProblem::Invalid(format!(
            "batch length {} is shorter than its header",
            header.length
        )));
    }
    Ok(header)
}

/// Reads the producer fields after the plain header of a transactional batch.
fn transaction_fields(bytes: &[u8]) -> Result<TransactionFields, BatchProblem> {
    if bytes.len() < TRANSACTIONAL_HEADER_LEN {
        return Err(BatchProblem::Incomplete { claimed: None });
    }
    let control = match u32_at(bytes, 44) {
        0 => Control::Data,
        1 => Control::Commit,
        2 => Control::Abort,
        other => {
            return Err(BatchProblem::Invalid(format!(
                "unknown transaction control {other}"
            )));
        }
    };
    Ok(TransactionFields {
        producer_id: u64::from_le_bytes(bytes[32..40].try_into().unwrap_or_default()),
        epoch: u32_at(bytes, 40),
        control,
    })
}

/// Checks the batch at the start of `bytes`: header, length and checksum.
pub(crate) fn check(bytes: &[u8]) -> Result<BatchHeader, BatchProblem> {
    let header = read_header(bytes)?;
    let Some(batch) = bytes.get(..header.length as usize) else {
        return Err(BatchProblem::Incomplete {
            claimed: Some(header.length),
        });
    };
    let stored = u32_at(batch, 8);
    let computed = checksum(batch);
    if stored != computed {
        return Err(BatchProblem::Invalid(format!(
            "checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
        )));
    }
    Ok(header)
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or_default())
}

/// Decodes the records of one checked batch, sharing its bytes: keys and values are slices
/// of the batch, not copies.
#[derive(Debug)]
pub(crate) struct RecordCursor {
    batch: Bytes,
    format: Format,
    position: usize,
    next_offset: u64,
    remaining: u32,
}

impl RecordCursor {
    /// A cursor over a batch that [`check`] accepted.
    pub(crate) fn new(batch: Bytes, header: &BatchHeader) -> Self {
        RecordCursor {
            batch,
            format: header.format,
            position: header.records_start(),
            next_offset: header.base_offset,
            remaining: header.record_count,
        }
    }

    /// The next record and its offset, `Ok(None)` after the last one, or what is wrong with
    /// the encoding.
    pub(crate) fn next(&mut self) -> Result<Option<(u64, Record)>, String> {
        if self.remaining == 0 {
            if self.position != self.batch.len() {
                return Err(format!(
                    "{} bytes follow the last record",
                    self.batch.len() - self.position
                ));
            }
            return Ok(None);
        }
        let timestamp = i64::from_le_bytes(self.take_array()?);
        let key_length = i32::from_le_bytes(self.take_array()?);
        let key = match key_length {
            -1 => None,
            length if length >= 0 => Some(self.take_bytes(length as usize)?),
            length => return Err(format!("invalid key length {length}")),
        };
        let value = match self.format {
            Format::V1 => {
                let length = u32::from_le_bytes(self.take_array()?) as usize;
                Some(self.take_bytes(length)?)
            }
            Format::V2 => match i32::from_le_bytes(self.take_array()?) {
                -1 => None,
                length if length >= 0 => Some(self.take_bytes(length as usize)?),
                length => return Err(format!("invalid value length {length}")),
            },
        };
        let header_count = u32::from_le_bytes(self.take_array()?);
        let mut headers = Vec::with_capacity(header_count.min(64) as usize);
        for _ in 0..header_count {
            let name_length = u32::from_le_bytes(self.take_array()?) as usize;
            let name = self.advance(name_length)?;
            let name = std::str::from_utf8(&self.batch[name])
                .map_err(|_| "a header name is not UTF-8".to_owned())?
                .to_owned();
            let value_length = u32::from_le_bytes(self.take_array()?) as usize;
            headers.push(Header {
                key: name,
                value: self.take_bytes(value_length)?,
            });
        }
        let offset = self.next_offset;
        self.next_offset += 1;
        self.remaining -= 1;
        let record = Record {
            key,
            value,
            headers: Headers::from_iter(headers),
            timestamp,
        };
        Ok(Some((offset, record)))
    }

    /// The next `N` bytes, copied: integers are read without touching the shared buffer's
    /// reference count.
    fn take_array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let range = self.advance(N)?;
        let mut array = [0; N];
        array.copy_from_slice(&self.batch[range]);
        Ok(array)
    }

    /// The next `length` bytes as a slice of the batch (no copy).
    fn take_bytes(&mut self, length: usize) -> Result<Bytes, String> {
        let range = self.advance(length)?;
        Ok(self.batch.slice(range))
    }

    /// Moves past the next `length` bytes, returning where they are.
    fn advance(&mut self, length: usize) -> Result<std::ops::Range<usize>, String> {
        let start = self.position;
        let end = start
            .checked_add(length)
            .filter(|end| *end <= self.batch.len())
            .ok_or_else(|| {
                format!(
                    "record at offset {} runs past the end of the batch",
                    self.next_offset
                )
            })?;
        self.position = end;
        Ok(start..end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch_of(records: &[Record], base_offset: u64) -> Vec<u8> {
        let mut buffer = vec![0; HEADER_LEN];
        for record in records {
            encode_record(&mut buffer, record);
        }
        let max = records
            .iter()
            .map(|record| record.timestamp)
            .max()
            .unwrap_or(i64::MIN);
        seal(&mut buffer, base_offset, records.len() as u32, max);
        buffer
    }

    #[test]
    fn records_round_trip_through_a_batch() {
        let records = [
            Record::new("v")
                .with_key("k")
                .with_timestamp(-5)
                .with_header("h", "1")
                .with_header("h", "2"),
            Record::new(Bytes::new()).with_key(Bytes::new()),
            Record::null().with_key("deleted").with_header("h", ""),
            Record::null(),
            Record::new(vec![0u8; 300]).with_timestamp(i64::MAX),
        ];
        let bytes = batch_of(&records, 7);
        assert_eq!(&bytes[0..4], b"RNB2");
        assert_eq!(
            bytes.len(),
            HEADER_LEN + records.iter().map(encoded_len).sum::<usize>()
        );
        let header = check(&bytes).unwrap();
        assert_eq!(
            (
                header.base_offset,
                header.record_count,
                header.max_timestamp
            ),
            (7, 5, i64::MAX)
        );
        let mut cursor = RecordCursor::new(Bytes::from(bytes), &header);
        for (offset, want) in (7..).zip(&records) {
            assert_eq!(cursor.next().unwrap(), Some((offset, want.clone())));
        }
        assert_eq!(cursor.next().unwrap(), None);
    }

    #[test]
    fn a_null_value_is_encoded_apart_from_an_empty_one() {
        let null = batch_of(&[Record::null()], 0);
        let empty = batch_of(&[Record::new("")], 0);
        assert_eq!(null.len(), empty.len());
        // timestamp (8 bytes) and null key (4 bytes), then the value length.
        let value_length = HEADER_LEN + 8 + 4..HEADER_LEN + 8 + 4 + 4;
        assert_eq!(null[value_length.clone()], (-1i32).to_le_bytes());
        assert_eq!(empty[value_length], 0i32.to_le_bytes());
    }

    #[test]
    fn a_version_1_batch_decodes_with_unsigned_value_lengths() {
        // Format version 1, by hand: one record, timestamp 9, null key, 3-byte value "abc",
        // no headers.
        let mut bytes = vec![0; HEADER_LEN];
        bytes.extend_from_slice(&9i64.to_le_bytes());
        bytes.extend_from_slice(&(-1i32).to_le_bytes());
        bytes.extend_from_slice(&3u32.to_le_bytes());
        bytes.extend_from_slice(b"abc");
        bytes.extend_from_slice(&0u32.to_le_bytes());
        seal(&mut bytes, 4, 1, 9);
        bytes[0..4].copy_from_slice(&MAGIC_V1);
        let crc = checksum(&bytes);
        bytes[8..12].copy_from_slice(&crc.to_le_bytes());

        let header = check(&bytes).unwrap();
        assert_eq!(header.format, Format::V1);
        let mut cursor = RecordCursor::new(Bytes::from(bytes), &header);
        assert_eq!(
            cursor.next().unwrap(),
            Some((4, Record::new("abc").with_timestamp(9)))
        );
        assert_eq!(cursor.next().unwrap(), None);
    }

    #[test]
    fn an_unknown_batch_marker_is_invalid() {
        let mut bytes = batch_of(&[Record::new("hello")], 0);
        bytes[0..4].copy_from_slice(b"RNB9");
        assert!(
            matches!(read_header(&bytes), Err(BatchProblem::Invalid(message)) if message.contains("RNB9") || message.contains("82, 78, 66, 57"))
        );
    }

    #[test]
    fn transactional_batches_carry_their_producer_and_markers_hold_no_records() {
        let fields = TransactionFields {
            producer_id: 3,
            epoch: 9,
            control: Control::Data,
        };
        let records = [Record::new("a").with_key("k"), Record::new("b")];
        let mut bytes = vec![0; TRANSACTIONAL_HEADER_LEN];
        for record in &records {
            encode_record(&mut bytes, record);
        }
        seal_transactional(&mut bytes, fields, 40, 2, 0);
        assert_eq!(&bytes[0..4], b"RNT2");
        let header = check(&bytes).unwrap();
        assert_eq!(header.transaction, Some(fields));
        assert!(!header.is_control());
        let mut cursor = RecordCursor::new(Bytes::from(bytes), &header);
        for (offset, want) in (40..).zip(&records) {
            assert_eq!(cursor.next().unwrap(), Some((offset, want.clone())));
        }
        assert_eq!(cursor.next().unwrap(), None);

        let abort = TransactionFields {
            control: Control::Abort,
            ..fields
        };
        let mut marker = vec![0; TRANSACTIONAL_HEADER_LEN];
        seal_transactional(&mut marker, abort, 42, 1, i64::MIN);
        let header = check(&marker).unwrap();
        assert!(header.is_control());
        assert_eq!(
            (header.transaction, header.next_offset()),
            (Some(abort), 43)
        );
        for at in 0..marker.len() {
            let mut damaged = marker.clone();
            damaged[at] ^= 0x10;
            assert!(
                check(&damaged).is_err(),
                "flipping byte {at} went unnoticed"
            );
        }
    }

    #[test]
    fn any_flipped_byte_fails_the_check() {
        let bytes = batch_of(&[Record::new("hello").with_key("k")], 0);
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            assert!(
                check(&damaged).is_err(),
                "flipping byte {at} went unnoticed"
            );
        }
    }

    #[test]
    fn a_short_read_is_incomplete_not_invalid() {
        let bytes = batch_of(&[Record::new("hello")], 0);
        assert_eq!(
            check(&bytes[..bytes.len() - 1]),
            Err(BatchProblem::Incomplete {
                claimed: Some(bytes.len() as u32)
            })
        );
        assert_eq!(
            check(&bytes[..10]),
            Err(BatchProblem::Incomplete { claimed: None })
        );
    }
}

//! Records as the backplane stores them: key, value, headers and timestamp, all bytes.
//!
//! A key and a value may each be null (`None`), as in Kafka; a null value (a tombstone) is
//! not the same as an empty one, and every backplane keeps the difference.

use std::sync::Arc;

use bytes::Bytes;

/// One header of a record: a name and an opaque value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The header name.
    pub key: String,
    /// The header value.
    pub value: Bytes,
}

/// The headers of a record, in order; names may repeat, as in Kafka.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Headers(Vec<Header>);

impl Headers {
    /// No headers.
    pub const fn new() -> Self {
        Headers(Vec::new())
    }

    /// Appends a header.
    ///
    /// ```
    /// let mut headers = runnel_backend::Headers::new();
    /// headers.push("trace-id", "abc");
    /// assert_eq!(headers.get("trace-id").unwrap(), "abc");
    /// ```
    pub fn push(&mut self, key: impl Into<String>, value: impl Into<Bytes>) {
        self.0.push(Header {
            key: key.into(),
            value: value.into(),
        });
    }

    /// Replaces every header called `key` with one holding `value`.
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<Bytes>) {
        let key = key.into();
        self.0.retain(|header| header.key != key);
        self.0.push(Header {
            key,
            value: value.into(),
        });
    }

    /// The value of the last header called `key`.
    pub fn get(&self, key: &str) -> Option<&Bytes> {
        self.0
            .iter()
            .rev()
            .find(|header| header.key == key)
            .map(|header| &header.value)
    }

    /// The value of the last header called `key`, if it is UTF-8.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key)
            .and_then(|value| std::str::from_utf8(value).ok())
    }

    /// Every header in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Header> {
        self.0.iter()
    }

    /// How many headers there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'a> IntoIterator for &'a Headers {
    type Item = &'a Header;
    type IntoIter = std::slice::Iter<'a, Header>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl FromIterator<Header> for Headers {
    fn from_iter<I: IntoIterator<Item = Header>>(iter: I) -> Self {
        Headers(iter.into_iter().collect())
    }
}

/// A record to append: optional key, optional value, headers and an event timestamp.
///
/// ```
/// use runnel_backend::Record;
/// let record = Record::new("hello").with_key("greeting").with_timestamp(1_700_000_000_000);
/// assert_eq!(record.value.as_deref(), Some(&b"hello"[..]));
///
/// let tombstone = Record::null().with_key("greeting");
/// assert!(tombstone.is_null());
/// assert!(!Record::new("").is_null());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The key; it decides the partition when the producer picks one. `None` is a null key.
    pub key: Option<Bytes>,
    /// The encoded value. `None` is a null value (a tombstone, in Kafka's terms), which is
    /// not the same as an empty one.
    pub value: Option<Bytes>,
    /// Headers, in order.
    pub headers: Headers,
    /// Event time in milliseconds since the Unix epoch.
    pub timestamp: i64,
}

impl Record {
    /// A record with this (non-null) value, no key, no headers and timestamp 0.
    pub fn new(value: impl Into<Bytes>) -> Self {
        Record::from_value(Some(value.into()))
    }

    /// A record with a null value (a tombstone), no key, no headers and timestamp 0.
    pub fn null() -> Self {
        Record::from_value(None)
    }

    /// A record with this value, `None` being null; no key, no headers and timestamp 0.
    pub fn from_value(value: Option<Bytes>) -> Self {
        Record {
            key: None,
            value,
            headers: Headers::new(),
            timestamp: 0,
        }
    }

    /// Whether the value is null (as opposed to present, possibly empty).
    pub fn is_null(&self) -> bool {
        self.value.is_none()
    }

    /// The size of the value in bytes; a null value has none.
    pub fn value_len(&self) -> usize {
        self.value.as_ref().map_or(0, Bytes::len)
    }

    /// Sets the key.
    pub fn with_key(mut self, key: impl Into<Bytes>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Sets the event timestamp, in milliseconds since the Unix epoch.
    pub fn with_timestamp(mut self, timestamp: i64) -> Self {
        self.timestamp = timestamp;
        self
    }

    /// Adds a header.
    pub fn with_header(mut self, key: impl Into<String>, value: impl Into<Bytes>) -> Self {
        self.headers.push(key, value);
        self
    }
}

/// A topic name and one of its partitions.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    /// The topic name.
    pub topic: Arc<str>,
    /// The partition number, from 0.
    pub partition: u32,
}

impl TopicPartition {
    /// Names a partition of a topic.
    pub fn new(topic: impl Into<Arc<str>>, partition: u32) -> Self {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }
}

impl std::fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.topic, self.partition)
    }
}

/// A record read back from a topic, with where it was read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumedRecord {
    /// The topic it was read from.
    pub topic: Arc<str>,
    /// The partition it was read from.
    pub partition: u32,
    /// Its offset in that partition.
    pub offset: u64,
    /// The record itself.
    pub record: Record,
}

impl ConsumedRecord {
    /// The partition this record came from.
    pub fn topic_partition(&self) -> TopicPartition {
        TopicPartition {
            topic: self.topic.clone(),
            partition: self.partition,
        }
    }
}

/// An offset to commit for a consumer group: the offset of the *next* record to read,
/// as in Kafka (one past the last processed record).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitOffset {
    /// The topic name.
    pub topic: Arc<str>,
    /// The partition.
    pub partition: u32,
    /// The next offset to read.
    pub offset: u64,
}

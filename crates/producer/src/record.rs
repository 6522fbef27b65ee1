//! What the application hands to a producer ([`Record`]) and what it gets back for a record
//! that was delivered ([`RecordMetadata`]).

use bytes::Bytes;

use crate::topic::Topic;

/// A record to send: a value, an optional key, a topic, and optionally the partition.
///
/// The topic is a [`Topic`], a counted name: `Record::new("events", v)` makes one (without an
/// allocation when the thread's last one had the same name), and an application can make the
/// `Topic` once and pass clones of it.
///
/// ```
/// use gregor_producer::Record;
///
/// let r = Record::new("events", "hello").with_key("user-7");
/// assert_eq!(r.key, Some("user-7"));
/// let pinned = Record::<(), _>::new("events", "to p2").with_partition(2);
/// assert_eq!(pinned.partition, Some(2));
/// let stamped = Record::<(), _>::new("events", "v")
///     .with_timestamp(1_700_000_000_000)
///     .with_header("trace-id", "abc123");
/// assert_eq!(stamped.headers[0].key, "trace-id");
/// ```
///
/// Headers and timestamps travel in RecordBatch v2 (Kafka 0.11 and later, with
/// `api.version.request` on): a record without a timestamp is stamped when its batch is built.
/// A batch for a leader that only takes Message v0 (Kafka 0.8-0.10) drops the timestamps and
/// fails whole if any of its records has headers (they cannot be written there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record<K, V> {
    /// The topic.
    pub topic: Topic,
    /// The key: placed by the partitioner, stored with the message; `None` is the null key.
    pub key: Option<K>,
    /// The value.
    pub value: V,
    /// An explicit partition, overriding the partitioner.
    pub partition: Option<i32>,
    /// The record's CreateTime in milliseconds since the epoch; `None`: the time its batch is
    /// built.
    pub timestamp: Option<i64>,
    /// The record's headers, in order (keys may repeat).
    pub headers: Vec<Header>,
}

/// One record header: a string key and an optional value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The key.
    pub key: String,
    /// The value; `None` is a null value.
    pub value: Option<Bytes>,
}

/// What a record carries besides its key and value, on its way through the producer (boxed,
/// and only for a record that has any).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct RecordExtra {
    pub(crate) timestamp: Option<i64>,
    pub(crate) headers: Vec<Header>,
}

impl<K, V> Record<K, V> {
    /// A record without key or explicit partition.
    pub fn new(topic: impl Into<Topic>, value: V) -> Record<K, V> {
        Record { topic: topic.into(), key: None, value, partition: None, timestamp: None, headers: Vec::new() }
    }

    /// The same record with a key.
    pub fn with_key(mut self, key: K) -> Record<K, V> {
        self.key = Some(key);
        self
    }

    /// The same record sent to `partition`, whatever the partitioner says.
    pub fn with_partition(mut self, partition: i32) -> Record<K, V> {
        self.partition = Some(partition);
        self
    }

    /// The same record with its CreateTime, in milliseconds since the epoch.
    pub fn with_timestamp(mut self, timestamp_ms: i64) -> Record<K, V> {
        self.timestamp = Some(timestamp_ms);
        self
    }

    /// The same record with one more header.
    pub fn with_header(mut self, key: impl Into<String>, value: impl Into<Bytes>) -> Record<K, V> {
        self.headers.push(Header { key: key.into(), value: Some(value.into()) });
        self
    }
}

/// Where a delivered record went.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RecordMetadata {
    /// The topic.
    pub topic: Topic,
    /// The partition.
    pub partition: i32,
    /// The record's offset in the partition; -1 with `request.required.acks=0` (the broker
    /// does not answer, so the offset is unknown and "delivered" means written to the socket).
    pub offset: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_takes_its_topic_as_a_name_or_a_topic() {
        let r: Record<(), &str> = Record::new("record-test-r", "v");
        let t = Topic::new("record-test-r");
        assert_eq!(r.topic, t);
        assert_eq!(Record::<(), &str>::new(t, "v"), r);
    }
}

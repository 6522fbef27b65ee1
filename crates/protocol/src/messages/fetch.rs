//! API key 1 — Fetch. Versions: v0 (Kafka 0.8.2).
//!
//! ```text
//! FetchRequest v0  => replica_id int32, max_wait_time int32, min_bytes int32,
//!                     [topic string, [partition int32, fetch_offset int64, max_bytes int32]]
//! FetchResponse v0 => [topic string, [partition int32, error_code int16,
//!                      high_watermark int64, message_set_size int32, MessageSet]]
//! ```
//!
//! `max_bytes` is a hard limit: the set may end in a partial message, and when the next message
//! is larger than `max_bytes` only a fragment of it comes back, with no error code (see
//! [`crate::message::MessageSet::decode`]). A failed partition carries high watermark -1 and an
//! empty set.
//! Guide: <https://cwiki.apache.org/confluence/display/KAFKA/A+Guide+To+The+Kafka+Protocol#AGuideToTheKafkaProtocol-FetchAPI>

use bytes::{BufMut, Bytes, BytesMut};

use super::{decode_topics, encode_topics, topics_body, PartitionEntry, TopicPartitions};
use crate::error::Result;
use crate::error_code::ErrorCode;
use crate::frame::{check_version, ApiKey, Decode, Encode, Request, VersionRange};
use crate::message::{DecodeOptions, DecodedMessages, MessageSet};
use crate::wire;

/// Fetch request (v0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequest {
    /// v0+. -1 for a client ([`super::CONSUMER_REPLICA_ID`]); a broker id for a follower.
    pub replica_id: i32,
    /// v0+. Longest time the broker parks the request waiting for `min_bytes`, in ms.
    pub max_wait_time: i32,
    /// v0+. Fewest bytes worth answering for (0 answers at once).
    pub min_bytes: i32,
    /// v0+. What to fetch.
    pub topics: Vec<FetchTopic>,
}

/// The partitions to fetch of one topic.
pub type FetchTopic = TopicPartitions<FetchPartition>;

/// One partition to fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchPartition {
    /// v0+. Partition id.
    pub partition: i32,
    /// v0+. Offset of the first message wanted.
    pub fetch_offset: i64,
    /// v0+. Most bytes of messages to return for this partition.
    pub max_bytes: i32,
}

impl PartitionEntry for FetchPartition {
    const MIN_SIZE: usize = 4 + 8 + 4;

    fn encode_entry(&self, _version: i16, buf: &mut BytesMut) -> Result<()> {
        buf.put_i32(self.partition);
        buf.put_i64(self.fetch_offset);
        buf.put_i32(self.max_bytes);
        Ok(())
    }

    fn decode_entry(_version: i16, buf: &mut Bytes) -> Result<Self> {
        Ok(FetchPartition {
            partition: wire::get_i32(buf, "partition")?,
            fetch_offset: wire::get_i64(buf, "fetch_offset")?,
            max_bytes: wire::get_i32(buf, "max_bytes")?,
        })
    }
}

impl Request for FetchRequest {
    const KEY: ApiKey = ApiKey::Fetch;
    const VERSIONS: VersionRange = VersionRange { min: 0, max: 0 };
    type Response = FetchResponse;
}

impl Encode for FetchRequest {
    fn encode(&self, version: i16, buf: &mut BytesMut) -> Result<()> {
        check_version::<Self>(version)?;
        buf.put_i32(self.replica_id);
        buf.put_i32(self.max_wait_time);
        buf.put_i32(self.min_bytes);
        encode_topics(&self.topics, version, buf)
    }
}

impl Decode for FetchRequest {
    fn decode(version: i16, buf: &mut Bytes) -> Result<Self> {
        check_version::<Self>(version)?;
        Ok(FetchRequest {
            replica_id: wire::get_i32(buf, "replica_id")?,
            max_wait_time: wire::get_i32(buf, "max_wait_time")?,
            min_bytes: wire::get_i32(buf, "min_bytes")?,
            topics: decode_topics(version, buf)?,
        })
    }
}

/// Fetch response (v0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchResponse {
    /// v0+. Data per topic and partition, in the broker's order.
    pub topics: Vec<FetchResponseTopic>,
}

topics_body!(FetchResponse, FetchRequest);

/// The data of one topic.
pub type FetchResponseTopic = TopicPartitions<FetchResponsePartition>;

/// The data of one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchResponsePartition {
    /// v0+. Partition id.
    pub partition: i32,
    /// v0+. 0, or an [`ErrorCode`].
    pub error_code: i16,
    /// v0+. Offset one past the last committed message of the partition; -1 on error.
    pub high_watermark: i64,
    /// v0+. The messages (written with an `int32` byte-length prefix); may end in a partial one.
    pub message_set: MessageSet,
}

impl FetchResponsePartition {
    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }

    /// Decodes the messages fetched from `topic` at `fetch_offset`: wrappers expanded, messages
    /// below `fetch_offset` dropped, a partial trailing message dropped.
    ///
    /// # Errors
    ///
    /// As [`MessageSet::decode`], notably [`crate::Error::MessageLargerThanFetch`].
    pub fn messages(&self, topic: &str, fetch_offset: i64) -> Result<DecodedMessages> {
        self.message_set.decode(&DecodeOptions::fetched(topic, self.partition, fetch_offset))
    }
}

impl PartitionEntry for FetchResponsePartition {
    const MIN_SIZE: usize = 4 + 2 + 8 + 4;

    fn encode_entry(&self, _version: i16, buf: &mut BytesMut) -> Result<()> {
        buf.put_i32(self.partition);
        buf.put_i16(self.error_code);
        buf.put_i64(self.high_watermark);
        wire::put_nullable_bytes(buf, "message_set", Some(self.message_set.as_bytes()))
    }

    fn decode_entry(_version: i16, buf: &mut Bytes) -> Result<Self> {
        Ok(FetchResponsePartition {
            partition: wire::get_i32(buf, "partition")?,
            error_code: wire::get_i16(buf, "error_code")?,
            high_watermark: wire::get_i64(buf, "high_watermark")?,
            message_set: MessageSet::from_bytes(wire::get_bytes(buf, "message_set")?),
        })
    }
}

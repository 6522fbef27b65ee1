//! API key 0 — Produce. Versions: v0 (Kafka 0.8.2).
//!
//! ```text
//! ProduceRequest v0  => required_acks int16, timeout int32,
//!                       [topic string, [partition int32, message_set_size int32, MessageSet]]
//! ProduceResponse v0 => [topic string, [partition int32, error_code int16, offset int64]]
//! ```
//!
//! With `required_acks` 0 the broker sends no response at all, and closes the connection when
//! the append fails. A failed partition carries offset -1; otherwise the offset is the first
//! one assigned to the set.
//! Guide: <https://cwiki.apache.org/confluence/display/KAFKA/A+Guide+To+The+Kafka+Protocol#AGuideToTheKafkaProtocol-ProduceAPI>

use bytes::{BufMut, Bytes, BytesMut};

use super::{decode_topics, encode_topics, topics_body, PartitionEntry, TopicPartitions};
use crate::error::Result;
use crate::error_code::ErrorCode;
use crate::frame::{check_version, ApiKey, Decode, Encode, PartsWriter, Request, VersionRange};
use crate::message::MessageSet;
use crate::wire;

/// Produce request (v0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceRequest {
    /// v0+. `request.required.acks`: 0 = no response, 1 = the leader's append, -1 = all of the ISR.
    pub required_acks: i16,
    /// v0+. How long the broker waits for the acks, in ms (`request.timeout.ms`).
    pub timeout: i32,
    /// v0+. Message sets per topic and partition.
    pub topics: Vec<ProduceTopic>,
}

/// The message sets of one topic.
pub type ProduceTopic = TopicPartitions<ProducePartition>;

/// The message set for one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducePartition {
    /// v0+. Partition id.
    pub partition: i32,
    /// v0+. The messages (written with an `int32` byte-length prefix).
    pub message_set: MessageSet,
}

impl PartitionEntry for ProducePartition {
    const MIN_SIZE: usize = 4 + 4;

    fn encode_entry(&self, _version: i16, buf: &mut BytesMut) -> Result<()> {
        buf.put_i32(self.partition);
        wire::put_nullable_bytes(buf, "message_set", Some(self.message_set.as_bytes()))
    }

    fn decode_entry(_version: i16, buf: &mut Bytes) -> Result<Self> {
        let partition = wire::get_i32(buf, "partition")?;
        let set = wire::get_bytes(buf, "message_set")?;
        Ok(ProducePartition { partition, message_set: MessageSet::from_bytes(set) })
    }
}

impl Request for ProduceRequest {
    const KEY: ApiKey = ApiKey::Produce;
    const VERSIONS: VersionRange = VersionRange { min: 0, max: 0 };
    type Response = ProduceResponse;

    fn expects_response(&self) -> bool {
        self.required_acks != 0
    }
}

impl Encode for ProduceRequest {
    fn encode(&self, version: i16, buf: &mut BytesMut) -> Result<()> {
        check_version::<Self>(version)?;
        buf.put_i16(self.required_acks);
        buf.put_i32(self.timeout);
        encode_topics(&self.topics, version, buf)
    }

    fn size_hint(&self) -> usize {
        let entries: usize = self
            .topics
            .iter()
            .map(|t| 2 + t.topic.len() + 4 + t.partitions.iter().map(|p| 8 + p.message_set.len()).sum::<usize>())
            .sum();
        2 + 4 + 4 + entries
    }

    /// As `encode`, with each message set of [`PartsWriter::SHARE_MIN`] bytes or more shared
    /// with the request (not copied).
    fn encode_parts(&self, version: i16, out: &mut PartsWriter) -> Result<()> {
        check_version::<Self>(version)?;
        let buf = out.buf();
        buf.put_i16(self.required_acks);
        buf.put_i32(self.timeout);
        buf.put_i32(wire::len_i32("topics", self.topics.len())?);
        for topic in &self.topics {
            wire::put_string(out.buf(), "topic", &topic.topic)?;
            out.buf().put_i32(wire::len_i32("partitions", topic.partitions.len())?);
            for p in &topic.partitions {
                let set = p.message_set.as_bytes();
                out.buf().put_i32(p.partition);
                out.buf().put_i32(wire::len_i32("message_set", set.len())?);
                out.share(set);
            }
        }
        Ok(())
    }

    fn copied_size_hint(&self) -> usize {
        let entries: usize = self
            .topics
            .iter()
            .map(|t| {
                let sets = t.partitions.iter().map(|p| p.message_set.len()).filter(|n| *n < PartsWriter::SHARE_MIN);
                2 + t.topic.len() + 4 + 8 * t.partitions.len() + sets.sum::<usize>()
            })
            .sum();
        2 + 4 + 4 + entries
    }
}

impl Decode for ProduceRequest {
    fn decode(version: i16, buf: &mut Bytes) -> Result<Self> {
        check_version::<Self>(version)?;
        Ok(ProduceRequest {
            required_acks: wire::get_i16(buf, "required_acks")?,
            timeout: wire::get_i32(buf, "timeout")?,
            topics: decode_topics(version, buf)?,
        })
    }
}

/// Produce response (v0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceResponse {
    /// v0+. Results per topic and partition, in the broker's order.
    pub topics: Vec<ProduceResponseTopic>,
}

topics_body!(ProduceResponse, ProduceRequest);

/// The results for one topic.
pub type ProduceResponseTopic = TopicPartitions<ProduceResponsePartition>;

/// The result for one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProduceResponsePartition {
    /// v0+. Partition id.
    pub partition: i32,
    /// v0+. 0, or an [`ErrorCode`].
    pub error_code: i16,
    /// v0+. The first offset assigned to the set; -1 on error.
    pub offset: i64,
}

impl ProduceResponsePartition {
    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }
}

impl PartitionEntry for ProduceResponsePartition {
    const MIN_SIZE: usize = 4 + 2 + 8;

    fn encode_entry(&self, _version: i16, buf: &mut BytesMut) -> Result<()> {
        buf.put_i32(self.partition);
        buf.put_i16(self.error_code);
        buf.put_i64(self.offset);
        Ok(())
    }

    fn decode_entry(_version: i16, buf: &mut Bytes) -> Result<Self> {
        Ok(ProduceResponsePartition {
            partition: wire::get_i32(buf, "partition")?,
            error_code: wire::get_i16(buf, "error_code")?,
            offset: wire::get_i64(buf, "offset")?,
        })
    }
}

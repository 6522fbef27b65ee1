//! API key 0 — Produce. Versions: v0-v12 (v9+ flexible).
//!
//! ```text
//! ProduceRequest v0   => required_acks int16, timeout int32,
//!                        [topic string, [partition int32, message_set_size int32, MessageSet]]
//! ProduceRequest v3   => transactional_id nullable_string, ... as v0 (the records: RecordBatch v2)
//! ProduceRequest v9   => transactional_id compact_nullable_string, required_acks, timeout,
//!                        [topic compact_string, [partition, records compact_bytes, tags], tags], tags
//! ProduceResponse v0  => [topic string, [partition int32, error_code int16, offset int64]]
//! ProduceResponse v8  => [topic, [partition, error_code, offset, log_append_time_ms int64,
//!                         log_start_offset int64, [batch_index int32, batch_index_error_message],
//!                         error_message nullable_string]], throttle_time_ms int32
//! ProduceResponse v10 => as v8, flexible, with tagged current_leader (partition, tag 0) and
//!                        node_endpoints (top level, tag 0)
//! ```
//!
//! v0-v2 carry MessageSets (Message v0 from v0, v1 from v2); v3 and later one RecordBatch v2 per
//! partition. Either way the records are opaque bytes here ([`MessageSet`] only wraps them);
//! [`Encode::encode_parts`] shares large ones with the request frame instead of copying them.
//!
//! With `required_acks` 0 the broker sends no response at all, and closes the connection when
//! the append fails. A failed partition carries offset -1; otherwise the offset is the first
//! one assigned to the records.
//!
//! Observed on Kafka 3.7.0 (v9, v10): one RecordBatch v2 per partition; the answer has
//! log_append_time_ms -1 on CreateTime topics, the log start offset, an empty record error array
//! and a null error message, and the throttle time after the topics; an unknown topic or
//! partition answers 3 UNKNOWN_TOPIC_OR_PARTITION with offset -1 and log start offset -1
//! (Produce never creates a topic).
//! Guide: <https://cwiki.apache.org/confluence/display/KAFKA/A+Guide+To+The+Kafka+Protocol#AGuideToTheKafkaProtocol-ProduceAPI>

use bytes::{BufMut, Bytes, BytesMut};

use crate::api::{Decode, Encode, Request};
use crate::api_key::{ApiKey, VersionRange};
use crate::error::{Error, Result};
use crate::error_code::ErrorCode;
use crate::message;
use crate::message::MessageSet;
use crate::parts::PartsWriter;
use crate::schema::{ctx_of, varint, Ctx, Wire};
use crate::wire;

/// Records as a `bytes` field: a length (`int32`, or compact in flexible versions) and the
/// bytes, shared with the input when read.
impl Wire for MessageSet {
    const MIN_SIZE: usize = 1;

    fn min_size(ctx: Ctx) -> usize {
        if ctx.flexible {
            1
        } else {
            4
        }
    }

    fn put(&self, ctx: Ctx, field: &'static str, buf: &mut BytesMut) -> Result<()> {
        put_len(ctx, field, buf, self.len())?;
        for part in self.parts() {
            buf.extend_from_slice(part);
        }
        Ok(())
    }

    fn get(ctx: Ctx, field: &'static str, buf: &mut Bytes) -> Result<Self> {
        Bytes::get(ctx, field, buf).map(MessageSet::from_bytes)
    }
}

/// Writes an array count or a bytes length: `int32`, or compact (uvarint of n + 1).
fn put_len(ctx: Ctx, field: &'static str, buf: &mut BytesMut, n: usize) -> Result<()> {
    if ctx.flexible {
        let n = u32::try_from(n).ok().and_then(|n| n.checked_add(1)).ok_or(Error::TooLong {
            field,
            length: n,
            max: u32::MAX as usize - 1,
        })?;
        varint::put_u32(buf, n);
    } else {
        buf.put_i32(wire::len_i32(field, n)?);
    }
    Ok(())
}

message! {
    /// Produce request.
    pub struct ProduceRequest {
        /// v3+. The transactional id, null when the producer is not transactional.
        transactional_id: Option<String> [3] null [3],
        /// v0+. `acks`: 0 = no response, 1 = the leader's append, -1 = all of the ISR.
        required_acks: i16 [0],
        /// v0+. How long the broker waits for the acks, in ms (`timeout_ms`).
        timeout: i32 [0],
        /// v0+. Records per topic and partition.
        topics: Vec<ProduceTopic> [0],
    }
}

message! {
    /// The records of one topic.
    pub struct ProduceTopic {
        /// v0+. Topic name.
        topic: String [0],
        /// v0+. The partitions.
        partitions: Vec<ProducePartition> [0],
    }
}

impl ProduceTopic {
    /// A topic with its partitions.
    pub fn new(topic: impl Into<String>, partitions: Vec<ProducePartition>) -> Self {
        ProduceTopic { topic: topic.into(), partitions, ..Default::default() }
    }
}

message! {
    /// The records for one partition.
    pub struct ProducePartition {
        /// v0+. Partition id.
        partition: i32 [0],
        /// v0+. The records: a MessageSet (v0-v2) or a RecordBatch v2 (v3+), as bytes.
        message_set: MessageSet [0],
    }
}

impl ProducePartition {
    /// A partition's records.
    pub fn new(partition: i32, message_set: MessageSet) -> Self {
        ProducePartition { partition, message_set, ..Default::default() }
    }
}

impl Request for ProduceRequest {
    const KEY: ApiKey = ApiKey::Produce;
    const VERSIONS: VersionRange = VersionRange { min: 0, max: 12 };
    const FLEXIBLE_FROM: Option<i16> = Some(9);
    type Response = ProduceResponse;

    fn expects_response(&self) -> bool {
        self.required_acks != 0
    }
}

impl Encode for ProduceRequest {
    fn encode(&self, version: i16, buf: &mut BytesMut) -> Result<()> {
        self.put(ctx_of::<Self>(version)?, "ProduceRequest", buf)
    }

    /// Exact for v0-v2 (and for v3-v8 with a transactional id).
    fn size_hint(&self) -> usize {
        let entries: usize = self
            .topics
            .iter()
            .map(|t| 2 + t.topic.len() + 4 + t.partitions.iter().map(|p| 8 + p.message_set.len()).sum::<usize>())
            .sum();
        self.transactional_id.as_ref().map_or(0, |t| 2 + t.len()) + 2 + 4 + 4 + entries
    }

    /// As `encode`, with each record set of [`PartsWriter::SHARE_MIN`] bytes or more shared
    /// with the request (not copied).
    fn encode_parts(&self, version: i16, out: &mut PartsWriter) -> Result<()> {
        let ctx = ctx_of::<Self>(version)?;
        let tags = |fields: &crate::schema::TaggedFields, buf: &mut BytesMut| -> Result<()> {
            if ctx.flexible {
                fields.put_with(Vec::new(), buf)?;
            }
            Ok(())
        };
        if version >= 3 {
            self.transactional_id.put(ctx, "transactional_id", out.buf())?;
        } else if self.transactional_id.is_some() {
            return Err(Error::FieldNotInVersion {
                api: ApiKey::Produce,
                version,
                field: "transactional_id",
                value: format!("{:?}", self.transactional_id),
            });
        }
        out.buf().put_i16(self.required_acks);
        out.buf().put_i32(self.timeout);
        put_len(ctx, "topics", out.buf(), self.topics.len())?;
        for topic in &self.topics {
            topic.topic.put(ctx, "topic", out.buf())?;
            put_len(ctx, "partitions", out.buf(), topic.partitions.len())?;
            for p in &topic.partitions {
                out.buf().put_i32(p.partition);
                put_len(ctx, "message_set", out.buf(), p.message_set.len())?;
                for part in p.message_set.parts() {
                    out.share(part);
                }
                tags(&p.unknown_tagged_fields, out.buf())?;
            }
            tags(&topic.unknown_tagged_fields, out.buf())?;
        }
        tags(&self.unknown_tagged_fields, out.buf())
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
        self.transactional_id.as_ref().map_or(0, |t| 2 + t.len()) + 2 + 4 + 4 + entries
    }
}

impl Decode for ProduceRequest {
    fn decode(version: i16, buf: &mut Bytes) -> Result<Self> {
        ProduceRequest::get(ctx_of::<Self>(version)?, "ProduceRequest", buf)
    }
}

message! {
    /// Produce response.
    pub struct ProduceResponse {
        /// v0+. Results per topic and partition, in the broker's order.
        topics: Vec<ProduceResponseTopic> [0],
        /// v1+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [1],
    }
    tagged {
        /// v10+. The brokers named by the partitions' `current_leader` (so that a client can
        /// reach a new leader without a Metadata round trip).
        0 => node_endpoints: Vec<NodeEndpoint> [10],
    }
}

crate::top_level!(response ProduceResponse for ProduceRequest);

message! {
    /// The results for one topic.
    pub struct ProduceResponseTopic {
        /// v0+. Topic name.
        topic: String [0],
        /// v0+. The partitions.
        partitions: Vec<ProduceResponsePartition> [0],
    }
}

impl ProduceResponseTopic {
    /// A topic with its partitions.
    pub fn new(topic: impl Into<String>, partitions: Vec<ProduceResponsePartition>) -> Self {
        ProduceResponseTopic { topic: topic.into(), partitions, ..Default::default() }
    }
}

message! {
    /// The result for one partition.
    pub struct ProduceResponsePartition {
        /// v0+. Partition id.
        partition: i32 [0],
        /// v0+. 0, or an [`ErrorCode`].
        error_code: i16 [0],
        /// v0+. The first offset assigned to the records (`base_offset`); -1 on error.
        offset: i64 [0],
        /// v2+. The append time the broker gave the records on a LogAppendTime topic, -1 on a
        /// CreateTime topic.
        log_append_time_ms: i64 [2] = -1,
        /// v5+. The partition's log start offset, -1 on error.
        log_start_offset: i64 [5] = -1,
        /// v8+. The batches that made the append fail (KIP-467).
        record_errors: Vec<RecordError> [8],
        /// v8+. A message for the error, null when there is none.
        error_message: Option<String> [8] null [8],
    }
    tagged {
        /// v10+. The current leader when the error is NOT_LEADER_OR_FOLLOWER (KIP-951).
        0 => current_leader: LeaderIdAndEpoch [10],
    }
}

impl ProduceResponsePartition {
    /// A partition's result: its error code and base offset (other fields at their defaults).
    pub fn new(partition: i32, error_code: i16, offset: i64) -> Self {
        ProduceResponsePartition { partition, error_code, offset, ..Default::default() }
    }

    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }
}

message! {
    /// A batch that made a produce fail, by its index in the request's records.
    pub struct RecordError {
        /// v8+. The index of the batch.
        batch_index: i32 [8],
        /// v8+. Why, null when no message was given.
        batch_index_error_message: Option<String> [8] null [8],
    }
}

message! {
    /// A partition's leader and its epoch (Produce v10+, Fetch v12+).
    pub struct LeaderIdAndEpoch {
        /// The leader's broker id, -1 when unknown.
        leader_id: i32 [0] = -1,
        /// The leader's epoch, -1 when unknown.
        leader_epoch: i32 [0] = -1,
    }
}

message! {
    /// A broker's address, sent with a new leader (Produce v10+, Fetch v16+).
    pub struct NodeEndpoint {
        /// The broker id.
        node_id: i32 [0],
        /// Host name.
        host: String [0],
        /// Port.
        port: i32 [0],
        /// The broker's rack, null when it has none.
        rack: Option<String> [0],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{encode_request, encode_request_frame, RequestHeader};

    fn request(transactional_id: Option<&str>) -> ProduceRequest {
        let big = MessageSet::from_bytes(Bytes::from(vec![7u8; 3000]));
        let small = MessageSet::from_bytes(Bytes::from_static(b"small"));
        ProduceRequest {
            transactional_id: transactional_id.map(str::to_owned),
            required_acks: -1,
            timeout: 30_000,
            topics: vec![
                ProduceTopic::new("a", vec![ProducePartition::new(0, big.clone()), ProducePartition::new(1, small)]),
                ProduceTopic::new("b", vec![ProducePartition::new(3, big)]),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn parts_are_the_bytes_of_encode_in_every_version() {
        for version in 0..=12 {
            let r = request((version >= 3).then_some("tx"));
            let header = RequestHeader {
                api_key: ApiKey::Produce,
                api_version: version,
                correlation_id: 9,
                client_id: Some("c".into()),
                unknown_tagged_fields: Default::default(),
            };
            let mut whole = BytesMut::new();
            encode_request(&header, &r, &mut whole).unwrap();
            let frame = encode_request_frame(&header, &r, 0).unwrap();
            assert_eq!(frame.to_bytes(), whole, "v{version}");
            assert_eq!(frame.tail.iter().filter(|p| p.len() == 3000).count(), 2, "v{version}: large sets shared");
            let mut body = BytesMut::new();
            r.encode(version, &mut body).unwrap();
            let back = ProduceRequest::decode(version, &mut body.freeze()).unwrap();
            assert_eq!(back, r, "v{version}");
        }
    }

    /// A set in parts goes on the wire as the same bytes as the set joined, each large part
    /// shared with the frame rather than copied.
    #[test]
    fn a_set_in_parts_is_written_as_its_bytes_joined_in_every_version() {
        let parts = [Bytes::from(vec![1u8; 2000]), Bytes::from_static(b"short"), Bytes::from(vec![2u8; 1500])];
        let joined = MessageSet::from_bytes(parts.iter().flat_map(|p| p.iter().copied()).collect::<Vec<u8>>().into());
        let with = |set: MessageSet| ProduceRequest {
            required_acks: 1,
            timeout: 1000,
            topics: vec![ProduceTopic::new("t", vec![ProducePartition::new(2, set)])],
            ..Default::default()
        };
        for version in 0..=12 {
            let header = RequestHeader {
                api_key: ApiKey::Produce,
                api_version: version,
                correlation_id: 1,
                client_id: None,
                unknown_tagged_fields: Default::default(),
            };
            let (in_parts, whole) = (with(MessageSet::from_parts(parts.clone())), with(joined.clone()));
            let mut want = BytesMut::new();
            encode_request(&header, &whole, &mut want).unwrap();
            let mut got = BytesMut::new();
            encode_request(&header, &in_parts, &mut got).unwrap();
            assert_eq!(got, want, "v{version}");
            let frame = encode_request_frame(&header, &in_parts, 0).unwrap();
            assert_eq!(frame.to_bytes(), want, "v{version}");
            let shared: Vec<_> = frame.tail.iter().map(|p| p.as_ptr()).collect();
            assert!(shared.contains(&parts[0].as_ptr()) && shared.contains(&parts[2].as_ptr()), "v{version}");
        }
    }

    #[test]
    fn a_transactional_id_before_v3_is_an_error_both_ways() {
        let r = request(Some("tx"));
        let err = r.encode(2, &mut BytesMut::new()).unwrap_err();
        assert!(matches!(err, Error::FieldNotInVersion { field: "transactional_id", .. }), "{err}");
        let err = r.encode_parts(2, &mut PartsWriter::default()).unwrap_err();
        assert!(matches!(err, Error::FieldNotInVersion { field: "transactional_id", .. }), "{err}");
        assert!(matches!(request(None).encode(13, &mut BytesMut::new()), Err(Error::UnsupportedVersion { .. })));
    }
}

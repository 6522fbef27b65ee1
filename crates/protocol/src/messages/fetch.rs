//! API key 1 — Fetch. Versions: v0-v17 (v12+ flexible).
//!
//! ```text
//! FetchRequest v0   => replica_id int32, max_wait_time int32, min_bytes int32,
//!                      [topic string, [partition int32, fetch_offset int64, max_bytes int32]]
//! FetchRequest v12  => replica_id, max_wait_time, min_bytes, max_bytes int32, isolation_level int8,
//!                      session_id int32, session_epoch int32,
//!                      [topic, [partition, current_leader_epoch int32, fetch_offset,
//!                               last_fetched_epoch int32, log_start_offset int64, max_bytes, tags], tags],
//!                      [forgotten topic, [partition int32], tags], rack_id string,
//!                      tags (0: cluster_id)
//! FetchRequest v16  => as v12 with topic_id uuid for topic; v15 drops replica_id for the tagged
//!                      replica_state (tag 1); v17 tags each partition with replica_directory_id
//! FetchResponse v0  => [topic string, [partition int32, error_code int16,
//!                      high_watermark int64, message_set_size int32, MessageSet]]
//! FetchResponse v12 => throttle_time_ms int32, error_code int16, session_id int32,
//!                      [topic, [partition, error_code, high_watermark, last_stable_offset int64,
//!                               log_start_offset int64, [producer_id int64, first_offset int64],
//!                               preferred_read_replica int32, records compact_bytes,
//!                               tags (0: diverging_epoch, 1: current_leader, 2: snapshot_id)], tags],
//!                      tags (0: node_endpoints, v16+)
//! ```
//!
//! Records stay the bytes of the frame (no copy): a MessageSet (Message v0 up to v1, v1 from v2)
//! or RecordBatches v2 from v4. `max_bytes` is a hard limit up to v2: the set may end in a
//! partial message, and when the next message is larger than `max_bytes` only a fragment of it
//! comes back, with no error code (see [`crate::message::MessageSet::decode`]). A failed
//! partition carries high watermark -1 and empty records.
//!
//! Observed on Kafka 3.7.0: librdkafka (v16) names topics by id only and fetches without a
//! session (session id 0, epoch -1) in read_committed; kafka-python (v12) names them, and opens
//! a session (epoch 0; the answer carries its id). An empty partition or one read to its end
//! answers error 0, the log end as high watermark and last stable offset, an empty aborted
//! transaction array, preferred read replica -1 and zero-length (not null) records. An offset
//! out of range answers 1 with -1 for the high watermark, last stable and log start offsets and
//! a null aborted transaction array.
//! Guide: <https://cwiki.apache.org/confluence/display/KAFKA/A+Guide+To+The+Kafka+Protocol#AGuideToTheKafkaProtocol-FetchAPI>

use bytes::{Bytes, BytesMut};

use super::produce::{LeaderIdAndEpoch, NodeEndpoint};
use crate::api::{Decode, Encode};
use crate::api_key::ApiKey;
use crate::error::Result;
use crate::error_code::ErrorCode;
use crate::message;
use crate::message::{DecodeOptions, DecodedMessages, MessageSet};
use crate::schema::{ctx_of, Uuid, Wire};
use crate::wire;

/// `isolation_level` 0: every record, committed or not.
pub const READ_UNCOMMITTED: i8 = 0;
/// `isolation_level` 1: records up to the last stable offset, aborted transactions listed.
pub const READ_COMMITTED: i8 = 1;

message! {
    /// Fetch request.
    pub struct FetchRequest {
        /// v0-v14. -1 for a client ([`super::CONSUMER_REPLICA_ID`]); a broker id for a
        /// follower (which sends `replica_state` instead from v15 on).
        replica_id: i32 [0, 14] = -1,
        /// v0+. Longest time the broker parks the request waiting for `min_bytes`, in ms.
        max_wait_time: i32 [0],
        /// v0+. Fewest bytes worth answering for (0 answers at once).
        min_bytes: i32 [0],
        /// v3+. Most bytes to return over all partitions (KIP-74; the first batch is returned
        /// even when larger).
        max_bytes: i32 [3] = i32::MAX,
        /// v4+. [`READ_UNCOMMITTED`] or [`READ_COMMITTED`].
        isolation_level: i8 [4],
        /// v7+. The fetch session (KIP-227), 0 for none.
        session_id: i32 [7],
        /// v7+. The session's epoch: -1 for a full fetch without a session, 0 to open one.
        session_epoch: i32 [7] = -1,
        /// v0+. What to fetch (in an incremental fetch: what changed).
        topics: Vec<FetchTopic> [0],
        /// v7+. In an incremental fetch, the partitions to drop from the session.
        forgotten_topics_data: Vec<ForgottenTopic> [7],
        /// v11+. The consumer's rack (for fetching from a follower, KIP-392).
        rack_id: String [11],
    }
    tagged {
        /// v12+. The cluster id the sender expects, null for any.
        0 => cluster_id: Option<String> [12],
        /// v15+. The follower's id and broker epoch (clients leave it at -1).
        1 => replica_state: ReplicaState [15],
    }
}

message! {
    /// A follower's id and broker epoch (Fetch v15+).
    pub struct ReplicaState {
        /// v15+. The follower's broker id, -1 for a client.
        replica_id: i32 [15] = -1,
        /// v15+. The follower's broker epoch, -1 for a client.
        replica_epoch: i64 [15] = -1,
    }
}

message! {
    /// The partitions to fetch of one topic.
    pub struct FetchTopic {
        /// v0-v12. Topic name.
        topic: String [0, 12],
        /// v13+. Topic id (KIP-516).
        topic_id: Uuid [13],
        /// v0+. The partitions.
        partitions: Vec<FetchPartition> [0],
    }
}

impl FetchTopic {
    /// A topic named by name with its partitions.
    pub fn new(topic: impl Into<String>, partitions: Vec<FetchPartition>) -> Self {
        FetchTopic { topic: topic.into(), partitions, ..Default::default() }
    }
}

message! {
    /// One partition to fetch.
    pub struct FetchPartition {
        /// v0+. Partition id.
        partition: i32 [0],
        /// v9+. The leader epoch the client knows, -1 for none (fences a stale leader).
        current_leader_epoch: i32 [9] = -1,
        /// v0+. Offset of the first message wanted.
        fetch_offset: i64 [0],
        /// v12+. The epoch of the last record fetched, -1 for none (log truncation detection).
        last_fetched_epoch: i32 [12] = -1,
        /// v5+. A follower's log start offset; -1 from a client.
        log_start_offset: i64 [5] = -1,
        /// v0+. Most bytes of records to return for this partition.
        max_bytes: i32 [0],
    }
    tagged {
        /// v17+. The follower's log directory (KIP-853); the zero id from a client.
        0 => replica_directory_id: Uuid [17],
    }
}

impl FetchPartition {
    /// A partition from `fetch_offset`, at most `max_bytes` (other fields at their defaults).
    pub fn new(partition: i32, fetch_offset: i64, max_bytes: i32) -> Self {
        FetchPartition { partition, fetch_offset, max_bytes, ..Default::default() }
    }
}

message! {
    /// Partitions an incremental fetch drops from its session.
    pub struct ForgottenTopic {
        /// v7-v12. Topic name.
        topic: String [7, 12],
        /// v13+. Topic id.
        topic_id: Uuid [13],
        /// v7+. The partitions.
        partitions: Vec<i32> [7],
    }
}

crate::top_level!(request FetchRequest: ApiKey::Fetch, versions 0..=17, flexible Some(12), response FetchResponse);

impl Encode for FetchResponse {
    fn encode(&self, version: i16, buf: &mut BytesMut) -> Result<()> {
        self.put(ctx_of::<FetchRequest>(version)?, "FetchResponse", buf)
    }
}

impl Decode for FetchResponse {
    /// The classic versions (v0-v11, the hot path of a 0.8.2 consumer) are read here, each
    /// partition built in place; the flexible ones by the declaration.
    fn decode(version: i16, buf: &mut Bytes) -> Result<Self> {
        let ctx = ctx_of::<FetchRequest>(version)?;
        if ctx.flexible {
            return FetchResponse::get(ctx, "FetchResponse", buf);
        }
        let v = version;
        let throttle_time_ms = if v >= 1 { wire::get_i32(buf, "throttle_time_ms")? } else { 0 };
        let (error_code, session_id) =
            if v >= 7 { (wire::get_i16(buf, "error_code")?, wire::get_i32(buf, "session_id")?) } else { (0, 0) };
        let count = wire::get_array_len(buf, "topics", FetchResponseTopic::min_size(ctx))?;
        let mut topics = Vec::with_capacity(count);
        for _ in 0..count {
            let topic = wire::get_string(buf, "topic")?;
            let count = wire::get_array_len(buf, "partitions", FetchResponsePartition::min_size(ctx))?;
            let mut partitions = Vec::with_capacity(count);
            for _ in 0..count {
                let partition = wire::get_i32(buf, "partition")?;
                let error_code = wire::get_i16(buf, "error_code")?;
                let high_watermark = wire::get_i64(buf, "high_watermark")?;
                let last_stable_offset = if v >= 4 { wire::get_i64(buf, "last_stable_offset")? } else { -1 };
                let log_start_offset = if v >= 5 { wire::get_i64(buf, "log_start_offset")? } else { -1 };
                let aborted_transactions = if v >= 4 { Wire::get(ctx, "aborted_transactions", buf)? } else { None };
                let preferred_read_replica = if v >= 11 { wire::get_i32(buf, "preferred_read_replica")? } else { -1 };
                let message_set = MessageSet::from_bytes(wire::get_bytes(buf, "message_set")?);
                // filled in place: the entry is large, and a move of it costs a memcpy call
                partitions.push(FetchResponsePartition::default());
                if let Some(p) = partitions.last_mut() {
                    p.partition = partition;
                    p.error_code = error_code;
                    p.high_watermark = high_watermark;
                    p.last_stable_offset = last_stable_offset;
                    p.log_start_offset = log_start_offset;
                    p.aborted_transactions = aborted_transactions;
                    p.preferred_read_replica = preferred_read_replica;
                    p.message_set = message_set;
                }
            }
            topics.push(FetchResponseTopic { topic, partitions, ..Default::default() });
        }
        Ok(FetchResponse { throttle_time_ms, error_code, session_id, topics, ..Default::default() })
    }
}

message! {
    /// Fetch response.
    pub struct FetchResponse {
        /// v1+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [1],
        /// v7+. 0, or an [`ErrorCode`] for the whole request (a session error).
        error_code: i16 [7],
        /// v7+. The fetch session's id, 0 for none.
        session_id: i32 [7],
        /// v0+. Data per topic and partition, in the broker's order.
        topics: Vec<FetchResponseTopic> [0],
    }
    tagged {
        /// v16+. The brokers named by the partitions' `current_leader` (KIP-951).
        0 => node_endpoints: Vec<NodeEndpoint> [16],
    }
}

message! {
    /// The data of one topic.
    pub struct FetchResponseTopic {
        /// v0-v12. Topic name.
        topic: String [0, 12],
        /// v13+. Topic id.
        topic_id: Uuid [13],
        /// v0+. The partitions.
        partitions: Vec<FetchResponsePartition> [0],
    }
}

impl FetchResponseTopic {
    /// A topic named by name with its partitions.
    pub fn new(topic: impl Into<String>, partitions: Vec<FetchResponsePartition>) -> Self {
        FetchResponseTopic { topic: topic.into(), partitions, ..Default::default() }
    }
}

message! {
    /// The data of one partition.
    pub struct FetchResponsePartition {
        /// v0+. Partition id.
        partition: i32 [0],
        /// v0+. 0, or an [`ErrorCode`].
        error_code: i16 [0],
        /// v0+. Offset one past the last committed message of the partition; -1 on error.
        high_watermark: i64 [0],
        /// v4+. Offset one past the last stable (decided) transaction record; -1 when unknown.
        last_stable_offset: i64 [4] = -1,
        /// v5+. The partition's log start offset; -1 when unknown.
        log_start_offset: i64 [5] = -1,
        /// v4+. The aborted transactions of the records returned (read_committed); null when
        /// there is nothing to say.
        aborted_transactions: Option<Vec<AbortedTransaction>> [4] null [4],
        /// v11+. The replica to fetch from instead (KIP-392), -1 for none.
        preferred_read_replica: i32 [11] = -1,
        /// v0+. The records (a length-prefixed byte string, a slice of the frame): a MessageSet
        /// up to v3, RecordBatches from v4; may end in a partial one.
        message_set: MessageSet [0],
    }
    tagged {
        /// v12+. Where the follower's log diverges from the leader's (truncation detection).
        0 => diverging_epoch: EpochEndOffset [12],
        /// v12+. The current leader when the error is NOT_LEADER_OR_FOLLOWER or
        /// FENCED_LEADER_EPOCH.
        1 => current_leader: LeaderIdAndEpoch [12],
        /// v12+. The snapshot a follower must fetch instead (KRaft).
        2 => snapshot_id: SnapshotId [12],
    }
}

impl FetchResponsePartition {
    /// A partition's data: error code, high watermark and records (other fields at their
    /// defaults).
    pub fn new(partition: i32, error_code: i16, high_watermark: i64, message_set: MessageSet) -> Self {
        FetchResponsePartition { partition, error_code, high_watermark, message_set, ..Default::default() }
    }

    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }

    /// Decodes the messages (Message v0 MessageSet) fetched from `topic` at `fetch_offset`:
    /// wrappers expanded, messages below `fetch_offset` dropped, a partial trailing message
    /// dropped.
    ///
    /// # Errors
    ///
    /// As [`MessageSet::decode`], notably [`crate::Error::MessageLargerThanFetch`].
    pub fn messages(&self, topic: &str, fetch_offset: i64) -> Result<DecodedMessages> {
        self.message_set.decode(&DecodeOptions::fetched(topic, self.partition, fetch_offset))
    }
}

message! {
    /// A transaction aborted within the records returned.
    pub struct AbortedTransaction {
        /// v4+. The producer id of the transaction.
        producer_id: i64 [4],
        /// v4+. The transaction's first offset.
        first_offset: i64 [4],
    }
}

message! {
    /// The end offset of an epoch (Fetch v12+ `diverging_epoch`).
    pub struct EpochEndOffset {
        /// v12+. The epoch, -1 for none.
        epoch: i32 [12] = -1,
        /// v12+. Its end offset, -1 for none.
        end_offset: i64 [12] = -1,
    }
}

message! {
    /// A KRaft snapshot id (Fetch v12+ `snapshot_id`).
    pub struct SnapshotId {
        /// v12+. The snapshot's end offset, -1 for none.
        end_offset: i64 [12] = -1,
        /// v12+. The snapshot's epoch, -1 for none.
        epoch: i32 [12] = -1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    fn v0_request() -> FetchRequest {
        FetchRequest {
            max_wait_time: 100,
            min_bytes: 1,
            topics: vec![FetchTopic::new("t", vec![FetchPartition::new(0, 42, 1 << 20)])],
            ..Default::default()
        }
    }

    #[test]
    fn a_client_request_is_the_same_value_in_every_version_that_names_topics() {
        let request = v0_request();
        for version in 0..=12 {
            let mut buf = BytesMut::new();
            request.encode(version, &mut buf).unwrap();
            let back = FetchRequest::decode(version, &mut buf.freeze()).unwrap();
            assert_eq!(back, request, "v{version}");
        }
        // v13 names topics by id: a name is an error, not a silent drop
        let err = request.encode(13, &mut BytesMut::new()).unwrap_err();
        assert!(matches!(err, Error::FieldNotInVersion { field: "topic", version: 13, .. }), "{err}");
        // v15 has no replica_id: a follower's id must go in replica_state
        let follower = FetchRequest { replica_id: 3, topics: vec![], ..v0_request() };
        let err = follower.encode(15, &mut BytesMut::new()).unwrap_err();
        assert!(matches!(err, Error::FieldNotInVersion { field: "replica_id", .. }), "{err}");
    }

    #[test]
    fn records_are_slices_of_the_frame() {
        let response = FetchResponse {
            topics: vec![FetchResponseTopic::new(
                "t",
                vec![FetchResponsePartition::new(0, 0, 5, MessageSet::from_bytes(Bytes::from(vec![1u8; 64])))],
            )],
            ..Default::default()
        };
        let mut by_id = response.clone();
        by_id.topics[0].topic = String::new();
        by_id.topics[0].topic_id = Uuid([9; 16]);
        for version in [0, 4, 11, 12, 16] {
            let response = if version >= 13 { &by_id } else { &response };
            let mut buf = BytesMut::new();
            response.encode(version, &mut buf).unwrap();
            let frame = buf.freeze();
            let back = FetchResponse::decode(version, &mut frame.clone()).unwrap();
            let set = back.topics[0].partitions[0].message_set.as_bytes();
            let at = set.as_ptr() as usize - frame.as_ptr() as usize;
            assert!(at + set.len() <= frame.len(), "v{version}: the records are a slice of the frame");
            if version >= 4 {
                assert_eq!(back.topics[0].partitions[0].aborted_transactions, None);
            }
            assert_eq!(&back, response, "v{version}");
        }
    }
}

//! API key 3 — Metadata (TopicMetadata in Kafka 0.8). Versions: v0-v13 (v9+ flexible).
//!
//! ```text
//! MetadataRequest v0   => [topic string]                                   (empty = all topics)
//! MetadataRequest v12  => [topic_id uuid, topic compact_nullable_string, tags] (nullable: null = all),
//!                         allow_auto_topic_creation bool, include_topic_authorized_operations bool, tags
//! MetadataResponse v0  => [node_id int32, host string, port int32]
//!                         [error_code int16, topic string,
//!                          [error_code int16, partition int32, leader int32, [replicas int32], [isr int32]]]
//! MetadataResponse v12 => throttle_time_ms int32, [node_id, host, port, rack, tags], cluster_id,
//!                         controller_id int32,
//!                         [error_code, topic, topic_id uuid, is_internal bool,
//!                          [error_code, partition, leader, leader_epoch, [replicas], [isr],
//!                           [offline_replicas], tags], topic_authorized_operations int32, tags], tags
//! ```
//!
//! Which topics: v0 has no null array, so an empty one asks for every topic; from v1 on a null
//! array asks for every topic and an empty one for none (brokers and cluster id only). A request
//! built with [`MetadataRequest::all_topics`] writes the right one for the version.
//!
//! Observed on 0.8.2: a cluster with no topic answers with zero brokers; an unknown topic with
//! auto-creation on answers 5 with no partitions; partition error 9 comes with a valid leader
//! (dead replicas are filtered out of replicas and isr); leader -1 means none.
//!
//! Observed on Kafka 3.7.0 (KRaft, v12): librdkafka names topics by name with the zero topic id
//! and answers carry the real id; an unknown topic answers 3 UNKNOWN_TOPIC_OR_PARTITION with the
//! zero id, also while auto-creation is under way (not 5 as ZooKeeper-era brokers did); cluster
//! and topic authorized operations are `i32::MIN` when not asked for; librdkafka's "all topics"
//! request carries 3 stray bytes after its body, which the broker ignores.
//! Guide: <https://cwiki.apache.org/confluence/display/KAFKA/A+Guide+To+The+Kafka+Protocol#AGuideToTheKafkaProtocol-MetadataAPI>

use bytes::{Bytes, BytesMut};

use crate::api::{Decode, Encode, Request};
use crate::api_key::{ApiKey, VersionRange};
use crate::error::Result;
use crate::error_code::ErrorCode;
use crate::message;
use crate::schema::{ctx_of, Uuid, Wire};

use super::AUTHORIZED_OPERATIONS_OMITTED;

message! {
    /// Metadata request: brokers, and the leaders and replicas of topics.
    pub struct MetadataRequest {
        /// v0+. The topics to describe; null for every topic (v1+; v0 writes an empty array
        /// instead, which means every topic there), empty for none (v1+).
        topics: Option<Vec<MetadataRequestTopic>> [0] null [1],
        /// v4+. Whether the broker may create the topics that do not exist (when
        /// `auto.create.topics.enable` is on); before v4 it always may.
        allow_auto_topic_creation: bool [4] = true,
        /// v8-v10. Whether to return the cluster's authorized operations.
        include_cluster_authorized_operations: bool [8, 10],
        /// v8+. Whether to return each topic's authorized operations.
        include_topic_authorized_operations: bool [8],
    }
}

message! {
    /// A topic to describe, by name or (v10+) by id.
    pub struct MetadataRequestTopic {
        /// v10+. The topic id; the zero id when naming the topic by name.
        topic_id: Uuid [10],
        /// v0+. The topic name; null (v10+) when naming the topic by id.
        topic: Option<String> [0] null [10],
    }
}

impl MetadataRequestTopic {
    /// A topic named by name.
    pub fn named(topic: impl Into<String>) -> Self {
        MetadataRequestTopic { topic: Some(topic.into()), ..Default::default() }
    }
}

impl MetadataRequest {
    /// A request for every topic (a null array from v1 on, an empty one in v0).
    pub fn all_topics() -> Self {
        MetadataRequest::default()
    }

    /// A request for the topics named.
    pub fn for_topics<S: Into<String>>(topics: impl IntoIterator<Item = S>) -> Self {
        MetadataRequest {
            topics: Some(topics.into_iter().map(MetadataRequestTopic::named).collect()),
            ..Default::default()
        }
    }

    /// True when the request, read in `version`, asks for every topic: a null array, or an
    /// empty one in v0.
    pub fn wants_all_topics(&self, version: i16) -> bool {
        match &self.topics {
            None => true,
            Some(topics) => version == 0 && topics.is_empty(),
        }
    }

    /// The names of the topics asked for by name (none when every topic is asked for).
    pub fn topic_names(&self) -> impl Iterator<Item = &str> {
        self.topics.iter().flatten().filter_map(|t| t.topic.as_deref())
    }
}

impl Request for MetadataRequest {
    const KEY: ApiKey = ApiKey::Metadata;
    const VERSIONS: VersionRange = VersionRange { min: 0, max: 13 };
    const FLEXIBLE_FROM: Option<i16> = Some(9);
    type Response = MetadataResponse;
}

impl Encode for MetadataRequest {
    fn encode(&self, version: i16, buf: &mut BytesMut) -> Result<()> {
        let ctx = ctx_of::<Self>(version)?;
        if version == 0 && self.topics.is_none() {
            // v0 has no null array: every topic is asked for with an empty one
            let all = MetadataRequest { topics: Some(Vec::new()), ..self.clone() };
            return all.put(ctx, "MetadataRequest", buf);
        }
        self.put(ctx, "MetadataRequest", buf)
    }
}

impl Decode for MetadataRequest {
    fn decode(version: i16, buf: &mut Bytes) -> Result<Self> {
        MetadataRequest::get(ctx_of::<Self>(version)?, "MetadataRequest", buf)
    }
}

message! {
    /// Metadata response.
    pub struct MetadataResponse {
        /// v3+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [3],
        /// v0+. Live brokers, as the answering broker knows them.
        brokers: Vec<BrokerMetadata> [0],
        /// v2+. The cluster id, null when unknown.
        cluster_id: Option<String> [2] null [2],
        /// v1+. The controller's broker id, -1 when unknown.
        controller_id: i32 [1] = -1,
        /// v0+. The topics, in the broker's order.
        topics: Vec<TopicMetadata> [0],
        /// v8-v10. The cluster's authorized operations (a bit field), or
        /// [`AUTHORIZED_OPERATIONS_OMITTED`].
        cluster_authorized_operations: i32 [8, 10] = AUTHORIZED_OPERATIONS_OMITTED,
        /// v13+. 0, or an [`ErrorCode`] for the whole request (e.g. REBOOTSTRAP_REQUIRED).
        error_code: i16 [13],
    }
}

crate::top_level!(response MetadataResponse for MetadataRequest);

message! {
    /// A broker's address.
    pub struct BrokerMetadata {
        /// v0+. Broker id (`broker.id`, `node.id`).
        node_id: i32 [0],
        /// v0+. Host name clients connect to.
        host: String [0],
        /// v0+. Port.
        port: i32 [0],
        /// v1+. The broker's rack, null when it has none.
        rack: Option<String> [1] null [1],
    }
}

message! {
    /// One topic's partitions.
    pub struct TopicMetadata {
        /// v0+. 0, or an [`ErrorCode`] for the whole topic.
        error_code: i16 [0],
        /// v0+. Topic name; null (v12+) in an answer to a request that named the topic by id.
        topic: Option<String> [0] null [12],
        /// v10+. The topic id (the zero id for an unknown topic).
        topic_id: Uuid [10],
        /// v1+. True for an internal topic (`__consumer_offsets`, ...).
        is_internal: bool [1],
        /// v0+. Partitions, in the broker's order.
        partitions: Vec<PartitionMetadata> [0],
        /// v8+. The topic's authorized operations (a bit field), or
        /// [`AUTHORIZED_OPERATIONS_OMITTED`].
        topic_authorized_operations: i32 [8] = AUTHORIZED_OPERATIONS_OMITTED,
    }
}

impl TopicMetadata {
    /// A topic's entry: its name, error code and partitions (other fields at their defaults).
    pub fn new(topic: impl Into<String>, error_code: i16, partitions: Vec<PartitionMetadata>) -> Self {
        TopicMetadata { error_code, topic: Some(topic.into()), partitions, ..Default::default() }
    }

    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }

    /// The topic's name, "" when the broker sent none (v12+, topics asked for by id).
    pub fn name(&self) -> &str {
        self.topic.as_deref().unwrap_or_default()
    }
}

message! {
    /// One partition's leader and replicas.
    pub struct PartitionMetadata {
        /// v0+. 0, or an [`ErrorCode`] (9 ReplicaNotAvailable still has a valid leader).
        error_code: i16 [0],
        /// v0+. Partition id.
        partition: i32 [0],
        /// v0+. Leader's broker id, -1 for none.
        leader: i32 [0],
        /// v7+. The leader's epoch, -1 when unknown.
        leader_epoch: i32 [7] = -1,
        /// v0+. Brokers holding a replica (live ones only, in 0.8.2).
        replicas: Vec<i32> [0],
        /// v0+. In-sync replicas (live ones only, in 0.8.2).
        isr: Vec<i32> [0],
        /// v5+. Replicas that are offline.
        offline_replicas: Vec<i32> [5],
    }
}

impl PartitionMetadata {
    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }

    /// The leader, or `None` for -1.
    pub fn leader(&self) -> Option<i32> {
        (self.leader >= 0).then_some(self.leader)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_topics_is_an_empty_array_in_v0_and_null_later() {
        let all = MetadataRequest::all_topics();
        let mut v0 = BytesMut::new();
        all.encode(0, &mut v0).unwrap();
        assert_eq!(&v0[..], [0, 0, 0, 0]);
        let back = MetadataRequest::decode(0, &mut v0.freeze()).unwrap();
        assert!(back.wants_all_topics(0));
        let mut v1 = BytesMut::new();
        all.encode(1, &mut v1).unwrap();
        assert_eq!(&v1[..], [0xff, 0xff, 0xff, 0xff]);
        let mut v12 = BytesMut::new();
        all.encode(12, &mut v12).unwrap();
        // null compact array, allow auto-creation, no authorized operations, no tags
        assert_eq!(&v12[..], [0, 1, 0, 0]);
        let none = MetadataRequest { topics: Some(Vec::new()), ..Default::default() };
        assert!(!none.wants_all_topics(1));
        assert!(none.wants_all_topics(0));
    }

    #[test]
    fn a_topic_named_by_id_has_no_name_before_v10() {
        let by_id = MetadataRequest {
            topics: Some(vec![MetadataRequestTopic { topic_id: Uuid([7; 16]), topic: None, ..Default::default() }]),
            ..Default::default()
        };
        by_id.encode(10, &mut BytesMut::new()).unwrap();
        let err = by_id.encode(9, &mut BytesMut::new()).unwrap_err();
        assert!(matches!(err, crate::Error::FieldNotInVersion { field: "topic_id", .. }), "{err}");
        let mut named = MetadataRequest::for_topics(["t"]);
        named.allow_auto_topic_creation = false;
        assert!(matches!(named.encode(3, &mut BytesMut::new()), Err(crate::Error::FieldNotInVersion { .. })));
        assert_eq!(named.topic_names().collect::<Vec<_>>(), ["t"]);
    }
}

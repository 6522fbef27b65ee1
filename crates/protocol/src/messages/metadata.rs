//! API key 3 — Metadata (TopicMetadata). Versions: v0 (Kafka 0.8.2).
//!
//! ```text
//! MetadataRequest v0  => [topic string]                       (empty = all topics)
//! MetadataResponse v0 => [node_id int32, host string, port int32]
//!                        [topic_error_code int16, topic string,
//!                         [partition_error_code int16, partition_id int32, leader int32,
//!                          [replicas int32], [isr int32]]]
//! ```
//!
//! Observed on 0.8.2: a cluster with no topic answers with zero brokers; an unknown topic with
//! auto-creation on answers 5 with no partitions; partition error 9 comes with a valid leader
//! (dead replicas are filtered out of replicas and isr); leader -1 means none.
//! Guide: <https://cwiki.apache.org/confluence/display/KAFKA/A+Guide+To+The+Kafka+Protocol#AGuideToTheKafkaProtocol-MetadataAPI>

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::Result;
use crate::error_code::ErrorCode;
use crate::frame::{check_version, ApiKey, Decode, Encode, Request, VersionRange};
use crate::wire;

/// Metadata request (v0).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetadataRequest {
    /// v0+. Topics to describe; empty means every topic.
    pub topics: Vec<String>,
}

impl Request for MetadataRequest {
    const KEY: ApiKey = ApiKey::Metadata;
    const VERSIONS: VersionRange = VersionRange { min: 0, max: 0 };
    type Response = MetadataResponse;
}

impl Encode for MetadataRequest {
    fn encode(&self, version: i16, buf: &mut BytesMut) -> Result<()> {
        check_version::<Self>(version)?;
        wire::put_array(buf, "topics", &self.topics, |buf, t| wire::put_string(buf, "topic", t))
    }
}

impl Decode for MetadataRequest {
    fn decode(version: i16, buf: &mut Bytes) -> Result<Self> {
        check_version::<Self>(version)?;
        Ok(MetadataRequest { topics: wire::get_array(buf, "topics", 2, |buf| wire::get_string(buf, "topic"))? })
    }
}

/// Metadata response (v0).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetadataResponse {
    /// v0+. Live brokers, as the answering broker knows them.
    pub brokers: Vec<BrokerMetadata>,
    /// v0+. The topics, in the broker's order.
    pub topics: Vec<TopicMetadata>,
}

/// A broker's address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerMetadata {
    /// v0+. Broker id (`broker.id`).
    pub node_id: i32,
    /// v0+. Host name clients connect to.
    pub host: String,
    /// v0+. Port.
    pub port: i32,
}

/// One topic's partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMetadata {
    /// v0+. 0, or an [`ErrorCode`] for the whole topic.
    pub error_code: i16,
    /// v0+. Topic name.
    pub topic: String,
    /// v0+. Partitions, in the broker's order.
    pub partitions: Vec<PartitionMetadata>,
}

impl TopicMetadata {
    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }
}

/// One partition's leader and replicas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMetadata {
    /// v0+. 0, or an [`ErrorCode`] (9 ReplicaNotAvailable still has a valid leader).
    pub error_code: i16,
    /// v0+. Partition id.
    pub partition: i32,
    /// v0+. Leader's broker id, -1 for none.
    pub leader: i32,
    /// v0+. Brokers holding a replica (live ones only).
    pub replicas: Vec<i32>,
    /// v0+. In-sync replicas (live ones only).
    pub isr: Vec<i32>,
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

fn put_ids(buf: &mut BytesMut, field: &'static str, ids: &[i32]) -> Result<()> {
    wire::put_array(buf, field, ids, |buf, id| {
        buf.put_i32(*id);
        Ok(())
    })
}

fn get_ids(buf: &mut Bytes, field: &'static str) -> Result<Vec<i32>> {
    wire::get_array(buf, field, 4, |buf| wire::get_i32(buf, field))
}

impl Encode for MetadataResponse {
    fn encode(&self, version: i16, buf: &mut BytesMut) -> Result<()> {
        check_version::<MetadataRequest>(version)?;
        wire::put_array(buf, "brokers", &self.brokers, |buf, b| {
            buf.put_i32(b.node_id);
            wire::put_string(buf, "host", &b.host)?;
            buf.put_i32(b.port);
            Ok(())
        })?;
        wire::put_array(buf, "topics", &self.topics, |buf, t| {
            buf.put_i16(t.error_code);
            wire::put_string(buf, "topic", &t.topic)?;
            wire::put_array(buf, "partitions", &t.partitions, |buf, p| {
                buf.put_i16(p.error_code);
                buf.put_i32(p.partition);
                buf.put_i32(p.leader);
                put_ids(buf, "replicas", &p.replicas)?;
                put_ids(buf, "isr", &p.isr)
            })
        })
    }
}

impl Decode for MetadataResponse {
    fn decode(version: i16, buf: &mut Bytes) -> Result<Self> {
        check_version::<MetadataRequest>(version)?;
        let brokers = wire::get_array(buf, "brokers", 4 + 2 + 4, |buf| {
            Ok(BrokerMetadata {
                node_id: wire::get_i32(buf, "node_id")?,
                host: wire::get_string(buf, "host")?,
                port: wire::get_i32(buf, "port")?,
            })
        })?;
        let topics = wire::get_array(buf, "topics", 2 + 2 + 4, |buf| {
            Ok(TopicMetadata {
                error_code: wire::get_i16(buf, "topic_error_code")?,
                topic: wire::get_string(buf, "topic")?,
                partitions: wire::get_array(buf, "partitions", 2 + 4 + 4 + 4 + 4, |buf| {
                    Ok(PartitionMetadata {
                        error_code: wire::get_i16(buf, "partition_error_code")?,
                        partition: wire::get_i32(buf, "partition_id")?,
                        leader: wire::get_i32(buf, "leader")?,
                        replicas: get_ids(buf, "replicas")?,
                        isr: get_ids(buf, "isr")?,
                    })
                })?,
            })
        })?;
        Ok(MetadataResponse { brokers, topics })
    }
}

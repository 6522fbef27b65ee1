//! Request and response bodies, one file per API (the client APIs of Kafka 0.8.2).
//!
//! Every body implements [`Encode`] and [`Decode`](crate::Decode) with the version as an
//! argument; every request implements [`Request`]. Topic-keyed arrays keep the order they had
//! on the wire: brokers answer in neither request nor sorted order, so match results by topic
//! and partition.
//!
//! Protocol guide: <https://kafka.apache.org/protocol> (the "0.8" sections) and
//! <https://cwiki.apache.org/confluence/display/KAFKA/A+Guide+To+The+Kafka+Protocol>.

use bytes::{Bytes, BytesMut};

use crate::api::{Encode, Request};
use crate::api_key::{ApiKey, VersionRange};
use crate::error::{Error, Result};

mod alter_configs;
mod alter_partition_reassignments;
mod api_versions;
mod consumer_protocol;
mod create_partitions;
mod create_topics;
mod delete_groups;
mod delete_records;
mod delete_topics;
mod describe_cluster;
mod describe_configs;
mod describe_groups;
mod elect_leaders;
mod fetch;
mod find_coordinator;
mod heartbeat;
mod incremental_alter_configs;
mod init_producer_id;
mod join_group;
mod leave_group;
mod list_groups;
mod list_partition_reassignments;
mod metadata;
mod offset_commit;
mod offset_delete;
mod offset_fetch;
mod offsets;
mod produce;
mod sasl_authenticate;
mod sasl_handshake;
mod sync_group;

pub use alter_configs::{
    AlterConfigsRequest, AlterConfigsResource, AlterConfigsResourceResponse, AlterConfigsResponse, AlterableConfig,
};
pub use alter_partition_reassignments::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, ReassignablePartition,
    ReassignablePartitionResponse, ReassignableTopic, ReassignableTopicResponse,
};
pub use api_versions::{ApiVersion, ApiVersionsRequest, ApiVersionsResponse, FinalizedFeatureKey, SupportedFeatureKey};
pub use consumer_protocol::{
    ConsumerProtocolAssignment, ConsumerProtocolSubscription, ConsumerProtocolTopicPartitions,
    CONSUMER_PROTOCOL_MAX_VERSION, CONSUMER_PROTOCOL_TYPE,
};
pub use create_partitions::{
    CreatePartitionsAssignment, CreatePartitionsRequest, CreatePartitionsResponse, CreatePartitionsTopic,
    CreatePartitionsTopicResult,
};
pub use create_topics::{
    CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig, CreatableTopicConfigs, CreatableTopicResult,
    CreateTopicsRequest, CreateTopicsResponse,
};
pub use delete_groups::{DeletableGroupResult, DeleteGroupsRequest, DeleteGroupsResponse};
pub use delete_records::{
    DeleteRecordsPartition, DeleteRecordsPartitionResult, DeleteRecordsRequest, DeleteRecordsResponse,
    DeleteRecordsTopic, DeleteRecordsTopicResult,
};
pub use delete_topics::{DeletableTopicResult, DeleteTopicState, DeleteTopicsRequest, DeleteTopicsResponse};
pub use describe_cluster::{DescribeClusterBroker, DescribeClusterRequest, DescribeClusterResponse};
pub use describe_configs::{
    DescribeConfigsRequest, DescribeConfigsResource, DescribeConfigsResourceResult, DescribeConfigsResponse,
    DescribeConfigsResult, DescribeConfigsSynonym,
};
pub use describe_groups::{
    DescribeGroupsRequest, DescribeGroupsResponse, DescribedGroup, DescribedGroupMember, AUTHORIZED_OPERATIONS_OMITTED,
};
pub use elect_leaders::{
    ElectLeadersPartitionResult, ElectLeadersRequest, ElectLeadersResponse, ElectLeadersTopic, ReplicaElectionResult,
};
pub use fetch::{
    AbortedTransaction, EpochEndOffset, FetchPartition, FetchRequest, FetchResponse, FetchResponsePartition,
    FetchResponseTopic, FetchTopic, ForgottenTopic, ReplicaState, SnapshotId, READ_COMMITTED, READ_UNCOMMITTED,
};
pub use find_coordinator::{
    ConsumerMetadataRequest, ConsumerMetadataResponse, Coordinator, FindCoordinatorRequest, FindCoordinatorResponse,
    COORDINATOR_KEY_TYPE_GROUP, COORDINATOR_KEY_TYPE_TRANSACTION,
};
pub use heartbeat::{HeartbeatRequest, HeartbeatResponse};
pub use incremental_alter_configs::{
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResource, IncrementalAlterConfigsResourceResponse,
    IncrementalAlterConfigsResponse, IncrementalAlterableConfig,
};
pub use init_producer_id::{InitProducerIdRequest, InitProducerIdResponse};
pub use join_group::{JoinGroupRequest, JoinGroupRequestProtocol, JoinGroupResponse, JoinGroupResponseMember};
pub use leave_group::{LeaveGroupRequest, LeaveGroupResponse, MemberIdentity, MemberResponse};
pub use list_groups::{ListGroupsRequest, ListGroupsResponse, ListedGroup};
pub use list_partition_reassignments::{
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse, ListPartitionReassignmentsTopics,
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
pub use metadata::{
    BrokerMetadata, MetadataRequest, MetadataRequestTopic, MetadataResponse, PartitionMetadata, TopicMetadata,
};
pub use offset_commit::{
    OffsetCommitPartition, OffsetCommitRequest, OffsetCommitResponse, OffsetCommitResponsePartition,
    OffsetCommitResponseTopic, OffsetCommitTopic, DEFAULT_CONSUMER_ID, DEFAULT_GENERATION_ID, DEFAULT_TIMESTAMP,
};
pub use offset_delete::{
    OffsetDeleteRequest, OffsetDeleteRequestPartition, OffsetDeleteRequestTopic, OffsetDeleteResponse,
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
pub use offset_fetch::{
    OffsetFetchGroup, OffsetFetchRequest, OffsetFetchResponse, OffsetFetchResponseGroup, OffsetFetchResponsePartition,
    OffsetFetchResponseTopic, OffsetFetchTopic,
};
pub use offsets::{
    ListOffsetsRequest, ListOffsetsResponse, OffsetsPartition, OffsetsRequest, OffsetsResponse,
    OffsetsResponsePartition, OffsetsResponseTopic, OffsetsTopic, EARLIEST_TIME, LATEST_TIME, MAX_TIMESTAMP,
};
pub use produce::{
    LeaderIdAndEpoch, NodeEndpoint, ProducePartition, ProduceRequest, ProduceResponse, ProduceResponsePartition,
    ProduceResponseTopic, ProduceTopic, RecordError,
};
pub use sasl_authenticate::{SaslAuthenticateRequest, SaslAuthenticateResponse};
pub use sasl_handshake::{SaslHandshakeRequest, SaslHandshakeResponse};
pub use sync_group::{SyncGroupRequest, SyncGroupRequestAssignment, SyncGroupResponse};

/// Which versions of each API this crate implements: the table of this module's bodies.
impl ApiKey {
    /// The versions of this API that this crate encodes and decodes, or `None` for an API
    /// without a body here.
    pub fn versions(self) -> Option<VersionRange> {
        Some(match self {
            ApiKey::Produce => ProduceRequest::VERSIONS,
            ApiKey::Fetch => FetchRequest::VERSIONS,
            ApiKey::Offsets => OffsetsRequest::VERSIONS,
            ApiKey::Metadata => MetadataRequest::VERSIONS,
            ApiKey::OffsetCommit => OffsetCommitRequest::VERSIONS,
            ApiKey::OffsetFetch => OffsetFetchRequest::VERSIONS,
            ApiKey::ConsumerMetadata => FindCoordinatorRequest::VERSIONS,
            ApiKey::ApiVersions => ApiVersionsRequest::VERSIONS,
            ApiKey::CreateTopics => CreateTopicsRequest::VERSIONS,
            ApiKey::DeleteTopics => DeleteTopicsRequest::VERSIONS,
            ApiKey::DescribeConfigs => DescribeConfigsRequest::VERSIONS,
            ApiKey::AlterConfigs => AlterConfigsRequest::VERSIONS,
            ApiKey::IncrementalAlterConfigs => IncrementalAlterConfigsRequest::VERSIONS,
            ApiKey::CreatePartitions => CreatePartitionsRequest::VERSIONS,
            ApiKey::DeleteGroups => DeleteGroupsRequest::VERSIONS,
            ApiKey::ElectLeaders => ElectLeadersRequest::VERSIONS,
            ApiKey::AlterPartitionReassignments => AlterPartitionReassignmentsRequest::VERSIONS,
            ApiKey::ListPartitionReassignments => ListPartitionReassignmentsRequest::VERSIONS,
            ApiKey::DescribeCluster => DescribeClusterRequest::VERSIONS,
            ApiKey::DeleteRecords => DeleteRecordsRequest::VERSIONS,
            ApiKey::OffsetDelete => OffsetDeleteRequest::VERSIONS,
            ApiKey::JoinGroup => JoinGroupRequest::VERSIONS,
            ApiKey::Heartbeat => HeartbeatRequest::VERSIONS,
            ApiKey::LeaveGroup => LeaveGroupRequest::VERSIONS,
            ApiKey::SyncGroup => SyncGroupRequest::VERSIONS,
            ApiKey::DescribeGroups => DescribeGroupsRequest::VERSIONS,
            ApiKey::ListGroups => ListGroupsRequest::VERSIONS,
            ApiKey::SaslHandshake => SaslHandshakeRequest::VERSIONS,
            ApiKey::InitProducerId => InitProducerIdRequest::VERSIONS,
            ApiKey::SaslAuthenticate => SaslAuthenticateRequest::VERSIONS,
            _ => return None,
        })
    }

    /// The first flexible version of the API among those this crate implements (KIP-482), or
    /// `None`.
    pub fn flexible_from(self) -> Option<i16> {
        match self {
            ApiKey::ApiVersions => ApiVersionsRequest::FLEXIBLE_FROM,
            ApiKey::CreateTopics => CreateTopicsRequest::FLEXIBLE_FROM,
            ApiKey::DeleteTopics => DeleteTopicsRequest::FLEXIBLE_FROM,
            ApiKey::DescribeConfigs => DescribeConfigsRequest::FLEXIBLE_FROM,
            ApiKey::AlterConfigs => AlterConfigsRequest::FLEXIBLE_FROM,
            ApiKey::IncrementalAlterConfigs => IncrementalAlterConfigsRequest::FLEXIBLE_FROM,
            ApiKey::CreatePartitions => CreatePartitionsRequest::FLEXIBLE_FROM,
            ApiKey::DeleteGroups => DeleteGroupsRequest::FLEXIBLE_FROM,
            ApiKey::ElectLeaders => ElectLeadersRequest::FLEXIBLE_FROM,
            ApiKey::AlterPartitionReassignments => AlterPartitionReassignmentsRequest::FLEXIBLE_FROM,
            ApiKey::ListPartitionReassignments => ListPartitionReassignmentsRequest::FLEXIBLE_FROM,
            ApiKey::DescribeCluster => DescribeClusterRequest::FLEXIBLE_FROM,
            ApiKey::DeleteRecords => DeleteRecordsRequest::FLEXIBLE_FROM,
            ApiKey::OffsetDelete => OffsetDeleteRequest::FLEXIBLE_FROM,
            ApiKey::OffsetCommit => OffsetCommitRequest::FLEXIBLE_FROM,
            ApiKey::OffsetFetch => OffsetFetchRequest::FLEXIBLE_FROM,
            ApiKey::ConsumerMetadata => FindCoordinatorRequest::FLEXIBLE_FROM,
            ApiKey::JoinGroup => JoinGroupRequest::FLEXIBLE_FROM,
            ApiKey::Heartbeat => HeartbeatRequest::FLEXIBLE_FROM,
            ApiKey::LeaveGroup => LeaveGroupRequest::FLEXIBLE_FROM,
            ApiKey::SyncGroup => SyncGroupRequest::FLEXIBLE_FROM,
            ApiKey::DescribeGroups => DescribeGroupsRequest::FLEXIBLE_FROM,
            ApiKey::ListGroups => ListGroupsRequest::FLEXIBLE_FROM,
            ApiKey::SaslHandshake => SaslHandshakeRequest::FLEXIBLE_FROM,
            ApiKey::InitProducerId => InitProducerIdRequest::FLEXIBLE_FROM,
            ApiKey::SaslAuthenticate => SaslAuthenticateRequest::FLEXIBLE_FROM,
            ApiKey::Produce => ProduceRequest::FLEXIBLE_FROM,
            ApiKey::Fetch => FetchRequest::FLEXIBLE_FROM,
            ApiKey::Offsets => OffsetsRequest::FLEXIBLE_FROM,
            ApiKey::Metadata => MetadataRequest::FLEXIBLE_FROM,
            _ => None,
        }
    }

    /// True when `version` of the API is flexible: its request header is v2 and its response
    /// header v1 (ApiVersions excepted: its response header is always v0).
    pub fn is_flexible(self, version: i16) -> bool {
        self.flexible_from().is_some_and(|f| version >= f)
    }

    /// True when a response to `version` of the API starts with header v1 (correlation id and a
    /// tagged-field section) rather than v0.
    pub fn response_header_is_flexible(self, version: i16) -> bool {
        self != ApiKey::ApiVersions && self.is_flexible(version)
    }

    /// Fails unless `version` is one this crate implements for the API.
    ///
    /// # Errors
    ///
    /// [`Error::UnsupportedVersion`], or [`Error::UnsupportedApiKey`] for an API without a body.
    pub fn check_version(self, version: i16) -> Result<()> {
        let range = self.versions().ok_or(Error::UnsupportedApiKey(self.code()))?;
        if range.contains(version) {
            Ok(())
        } else {
            Err(Error::UnsupportedVersion { api: self, version, min: range.min, max: range.max })
        }
    }
}

/// The `replica_id` a client (not a follower broker) puts in Fetch and Offsets requests.
pub const CONSUMER_REPLICA_ID: i32 = -1;

/// A topic and its per-partition entries, the shape every topic-keyed array of the protocol has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicPartitions<P> {
    /// Topic name.
    pub topic: String,
    /// Per-partition entries, in wire order.
    pub partitions: Vec<P>,
}

impl<P> TopicPartitions<P> {
    /// A topic with its partitions.
    pub fn new(topic: impl Into<String>, partitions: Vec<P>) -> Self {
        TopicPartitions { topic: topic.into(), partitions }
    }
}

/// A client request of the APIs a fake broker serves (Kafka 0.8.2's seven, and the handshake,
/// producer-id, group and admin requests of later Kafka), for code that serves requests (a
/// broker, a proxy) and must dispatch on the header's API key.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AnyRequest {
    /// API key 0.
    Produce(ProduceRequest),
    /// API key 1.
    Fetch(FetchRequest),
    /// API key 2.
    Offsets(OffsetsRequest),
    /// API key 3.
    Metadata(MetadataRequest),
    /// API key 8.
    OffsetCommit(OffsetCommitRequest),
    /// API key 9.
    OffsetFetch(OffsetFetchRequest),
    /// API key 10.
    ConsumerMetadata(ConsumerMetadataRequest),
    /// API key 17.
    SaslHandshake(SaslHandshakeRequest),
    /// API key 18.
    ApiVersions(ApiVersionsRequest),
    /// API key 19.
    CreateTopics(CreateTopicsRequest),
    /// API key 22.
    InitProducerId(InitProducerIdRequest),
    /// API key 36.
    SaslAuthenticate(SaslAuthenticateRequest),
    /// API key 11.
    JoinGroup(JoinGroupRequest),
    /// API key 12.
    Heartbeat(HeartbeatRequest),
    /// API key 13.
    LeaveGroup(LeaveGroupRequest),
    /// API key 14.
    SyncGroup(SyncGroupRequest),
    /// API key 15.
    DescribeGroups(DescribeGroupsRequest),
    /// API key 16.
    ListGroups(ListGroupsRequest),
    /// API key 20.
    DeleteTopics(DeleteTopicsRequest),
    /// API key 32.
    DescribeConfigs(DescribeConfigsRequest),
    /// API key 33.
    AlterConfigs(AlterConfigsRequest),
    /// API key 37.
    CreatePartitions(CreatePartitionsRequest),
    /// API key 44.
    IncrementalAlterConfigs(IncrementalAlterConfigsRequest),
}

impl AnyRequest {
    /// Decodes the body that follows `header` in a request frame; the body must be used exactly.
    ///
    /// # Errors
    ///
    /// [`crate::Error::UnsupportedApiKey`] for an API without a variant here,
    /// [`crate::Error::UnsupportedVersion`], decoding errors,
    /// [`crate::Error::TrailingBytes`].
    pub fn decode(header: &crate::frame::RequestHeader, body: Bytes) -> Result<AnyRequest> {
        use crate::frame::decode_request_body as body_of;
        let v = header.api_version;
        Ok(match header.api_key {
            ApiKey::Produce => AnyRequest::Produce(body_of(v, body)?),
            ApiKey::Fetch => AnyRequest::Fetch(body_of(v, body)?),
            ApiKey::Offsets => AnyRequest::Offsets(body_of(v, body)?),
            ApiKey::Metadata => AnyRequest::Metadata(body_of(v, body)?),
            ApiKey::OffsetCommit => AnyRequest::OffsetCommit(body_of(v, body)?),
            ApiKey::OffsetFetch => AnyRequest::OffsetFetch(body_of(v, body)?),
            ApiKey::ConsumerMetadata => AnyRequest::ConsumerMetadata(body_of(v, body)?),
            ApiKey::SaslHandshake => AnyRequest::SaslHandshake(body_of(v, body)?),
            ApiKey::ApiVersions => AnyRequest::ApiVersions(body_of(v, body)?),
            ApiKey::CreateTopics => AnyRequest::CreateTopics(body_of(v, body)?),
            ApiKey::InitProducerId => AnyRequest::InitProducerId(body_of(v, body)?),
            ApiKey::SaslAuthenticate => AnyRequest::SaslAuthenticate(body_of(v, body)?),
            ApiKey::JoinGroup => AnyRequest::JoinGroup(body_of(v, body)?),
            ApiKey::Heartbeat => AnyRequest::Heartbeat(body_of(v, body)?),
            ApiKey::LeaveGroup => AnyRequest::LeaveGroup(body_of(v, body)?),
            ApiKey::SyncGroup => AnyRequest::SyncGroup(body_of(v, body)?),
            ApiKey::DescribeGroups => AnyRequest::DescribeGroups(body_of(v, body)?),
            ApiKey::ListGroups => AnyRequest::ListGroups(body_of(v, body)?),
            ApiKey::DeleteTopics => AnyRequest::DeleteTopics(body_of(v, body)?),
            ApiKey::DescribeConfigs => AnyRequest::DescribeConfigs(body_of(v, body)?),
            ApiKey::AlterConfigs => AnyRequest::AlterConfigs(body_of(v, body)?),
            ApiKey::CreatePartitions => AnyRequest::CreatePartitions(body_of(v, body)?),
            ApiKey::IncrementalAlterConfigs => AnyRequest::IncrementalAlterConfigs(body_of(v, body)?),
            other => return Err(crate::Error::UnsupportedApiKey(other.code())),
        })
    }

    /// The request's API key.
    pub fn api_key(&self) -> ApiKey {
        match self {
            AnyRequest::Produce(_) => ProduceRequest::KEY,
            AnyRequest::Fetch(_) => FetchRequest::KEY,
            AnyRequest::Offsets(_) => OffsetsRequest::KEY,
            AnyRequest::Metadata(_) => MetadataRequest::KEY,
            AnyRequest::OffsetCommit(_) => OffsetCommitRequest::KEY,
            AnyRequest::OffsetFetch(_) => OffsetFetchRequest::KEY,
            AnyRequest::ConsumerMetadata(_) => ConsumerMetadataRequest::KEY,
            AnyRequest::SaslHandshake(_) => SaslHandshakeRequest::KEY,
            AnyRequest::ApiVersions(_) => ApiVersionsRequest::KEY,
            AnyRequest::CreateTopics(_) => CreateTopicsRequest::KEY,
            AnyRequest::InitProducerId(_) => InitProducerIdRequest::KEY,
            AnyRequest::SaslAuthenticate(_) => SaslAuthenticateRequest::KEY,
            AnyRequest::JoinGroup(_) => JoinGroupRequest::KEY,
            AnyRequest::Heartbeat(_) => HeartbeatRequest::KEY,
            AnyRequest::LeaveGroup(_) => LeaveGroupRequest::KEY,
            AnyRequest::SyncGroup(_) => SyncGroupRequest::KEY,
            AnyRequest::DescribeGroups(_) => DescribeGroupsRequest::KEY,
            AnyRequest::ListGroups(_) => ListGroupsRequest::KEY,
            AnyRequest::DeleteTopics(_) => DeleteTopicsRequest::KEY,
            AnyRequest::DescribeConfigs(_) => DescribeConfigsRequest::KEY,
            AnyRequest::AlterConfigs(_) => AlterConfigsRequest::KEY,
            AnyRequest::CreatePartitions(_) => CreatePartitionsRequest::KEY,
            AnyRequest::IncrementalAlterConfigs(_) => IncrementalAlterConfigsRequest::KEY,
        }
    }
}

impl Encode for AnyRequest {
    fn encode(&self, version: i16, buf: &mut BytesMut) -> Result<()> {
        match self {
            AnyRequest::Produce(r) => r.encode(version, buf),
            AnyRequest::Fetch(r) => r.encode(version, buf),
            AnyRequest::Offsets(r) => r.encode(version, buf),
            AnyRequest::Metadata(r) => r.encode(version, buf),
            AnyRequest::OffsetCommit(r) => r.encode(version, buf),
            AnyRequest::OffsetFetch(r) => r.encode(version, buf),
            AnyRequest::ConsumerMetadata(r) => r.encode(version, buf),
            AnyRequest::SaslHandshake(r) => r.encode(version, buf),
            AnyRequest::ApiVersions(r) => r.encode(version, buf),
            AnyRequest::CreateTopics(r) => r.encode(version, buf),
            AnyRequest::InitProducerId(r) => r.encode(version, buf),
            AnyRequest::SaslAuthenticate(r) => r.encode(version, buf),
            AnyRequest::JoinGroup(r) => r.encode(version, buf),
            AnyRequest::Heartbeat(r) => r.encode(version, buf),
            AnyRequest::LeaveGroup(r) => r.encode(version, buf),
            AnyRequest::SyncGroup(r) => r.encode(version, buf),
            AnyRequest::DescribeGroups(r) => r.encode(version, buf),
            AnyRequest::ListGroups(r) => r.encode(version, buf),
            AnyRequest::DeleteTopics(r) => r.encode(version, buf),
            AnyRequest::DescribeConfigs(r) => r.encode(version, buf),
            AnyRequest::AlterConfigs(r) => r.encode(version, buf),
            AnyRequest::CreatePartitions(r) => r.encode(version, buf),
            AnyRequest::IncrementalAlterConfigs(r) => r.encode(version, buf),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_run_from_kafka_0_8_2s_to_todays() {
        let v = |k: ApiKey| k.versions().map(|r| (r.min, r.max));
        assert_eq!(v(ApiKey::Produce), Some((0, 12)));
        assert_eq!(v(ApiKey::Fetch), Some((0, 17)));
        assert_eq!(v(ApiKey::Offsets), Some((0, 10)));
        assert_eq!(v(ApiKey::Metadata), Some((0, 13)));
        // the group APIs: Kafka 0.8.2's versions (OffsetCommit/OffsetFetch v0-v1, ConsumerMetadata
        // v0) and the later ones
        assert_eq!(v(ApiKey::OffsetCommit), Some((0, 9)));
        assert_eq!(v(ApiKey::OffsetFetch), Some((0, 9)));
        assert_eq!(v(ApiKey::ConsumerMetadata), Some((0, 4)));
        assert_eq!(ApiKey::OffsetCommit.flexible_from(), Some(8));
        assert_eq!(ApiKey::JoinGroup.versions().map(|r| (r.min, r.max)), Some((0, 9)));
        assert_eq!(v(ApiKey::LeaderAndIsr), None);
        let err = ApiKey::Metadata.check_version(14).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Metadata v14 is not supported (supported: v0..=v13); pick a version both sides speak (gregor-net negotiates it with ApiVersions)"
        );
    }
}

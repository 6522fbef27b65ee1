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

use crate::error::Result;
use crate::frame::{Encode, Request};
use crate::wire;

mod api_versions;
mod consumer_metadata;
mod fetch;
mod metadata;
mod offset_commit;
mod offset_fetch;
mod offsets;
mod produce;

pub use api_versions::{ApiVersion, ApiVersionsRequest, ApiVersionsResponse, FinalizedFeatureKey, SupportedFeatureKey};
pub use consumer_metadata::{ConsumerMetadataRequest, ConsumerMetadataResponse};
pub use fetch::{
    AbortedTransaction, EpochEndOffset, FetchPartition, FetchRequest, FetchResponse, FetchResponsePartition,
    FetchResponseTopic, FetchTopic, ForgottenTopic, ReplicaState, SnapshotId, READ_COMMITTED, READ_UNCOMMITTED,
};
pub use metadata::{
    BrokerMetadata, MetadataRequest, MetadataRequestTopic, MetadataResponse, PartitionMetadata, TopicMetadata,
    AUTHORIZED_OPERATIONS_OMITTED,
};
pub use offset_commit::{
    OffsetCommitPartition, OffsetCommitRequest, OffsetCommitResponse, OffsetCommitResponsePartition,
    OffsetCommitResponseTopic, OffsetCommitTopic, DEFAULT_CONSUMER_ID, DEFAULT_GENERATION_ID, DEFAULT_TIMESTAMP,
};
pub use offset_fetch::{
    OffsetFetchRequest, OffsetFetchResponse, OffsetFetchResponsePartition, OffsetFetchResponseTopic, OffsetFetchTopic,
};
pub use offsets::{
    ListOffsetsRequest, ListOffsetsResponse, OffsetsPartition, OffsetsRequest, OffsetsResponse,
    OffsetsResponsePartition, OffsetsResponseTopic, OffsetsTopic, EARLIEST_TIME, LATEST_TIME, MAX_TIMESTAMP,
};
pub use produce::{
    LeaderIdAndEpoch, NodeEndpoint, ProducePartition, ProduceRequest, ProduceResponse, ProduceResponsePartition,
    ProduceResponseTopic, ProduceTopic, RecordError,
};

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

/// One per-partition entry of a topic-keyed array.
pub(crate) trait PartitionEntry: Sized {
    /// Fewest bytes an entry can take (bounds the array count against the input).
    const MIN_SIZE: usize;
    fn encode_entry(&self, version: i16, buf: &mut BytesMut) -> Result<()>;
    fn decode_entry(version: i16, buf: &mut Bytes) -> Result<Self>;
}

pub(crate) fn encode_topics<P: PartitionEntry>(
    topics: &[TopicPartitions<P>],
    version: i16,
    buf: &mut BytesMut,
) -> Result<()> {
    wire::put_array(buf, "topics", topics, |buf, t| {
        wire::put_string(buf, "topic", &t.topic)?;
        wire::put_array(buf, "partitions", &t.partitions, |buf, p| p.encode_entry(version, buf))
    })
}

pub(crate) fn decode_topics<P: PartitionEntry>(version: i16, buf: &mut Bytes) -> Result<Vec<TopicPartitions<P>>> {
    // a topic entry: string length (2) + partition count (4)
    wire::get_array(buf, "topics", 6, |buf| {
        let topic = wire::get_string(buf, "topic")?;
        let partitions = wire::get_array(buf, "partitions", P::MIN_SIZE, |buf| P::decode_entry(version, buf))?;
        Ok(TopicPartitions { topic, partitions })
    })
}

/// Implements `Encode`/`Decode` for a body that is just a topic-keyed array.
macro_rules! topics_body {
    ($ty:ident, $api:ty) => {
        impl $crate::frame::Encode for $ty {
            fn encode(&self, version: i16, buf: &mut bytes::BytesMut) -> $crate::error::Result<()> {
                $crate::frame::check_version::<$api>(version)?;
                $crate::messages::encode_topics(&self.topics, version, buf)
            }
        }

        impl $crate::frame::Decode for $ty {
            fn decode(version: i16, buf: &mut bytes::Bytes) -> $crate::error::Result<Self> {
                $crate::frame::check_version::<$api>(version)?;
                Ok($ty { topics: $crate::messages::decode_topics(version, buf)? })
            }
        }
    };
}
pub(crate) use topics_body;

/// Any client request of Kafka 0.8.2, for code that serves requests (a broker, a proxy) and
/// must dispatch on the header's API key.
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
}

impl AnyRequest {
    /// Decodes the body that follows `header` in a request frame; the body must be used exactly.
    ///
    /// # Errors
    ///
    /// [`crate::Error::UnsupportedApiKey`] for an API without a body here (a 0.8 broker closes the
    /// connection on those), [`crate::Error::UnsupportedVersion`], decoding errors,
    /// [`crate::Error::TrailingBytes`].
    pub fn decode(header: &crate::frame::RequestHeader, body: Bytes) -> Result<AnyRequest> {
        use crate::frame::{decode_request_body as body_of, ApiKey};
        let v = header.api_version;
        Ok(match header.api_key {
            ApiKey::Produce => AnyRequest::Produce(body_of(v, body)?),
            ApiKey::Fetch => AnyRequest::Fetch(body_of(v, body)?),
            ApiKey::Offsets => AnyRequest::Offsets(body_of(v, body)?),
            ApiKey::Metadata => AnyRequest::Metadata(body_of(v, body)?),
            ApiKey::OffsetCommit => AnyRequest::OffsetCommit(body_of(v, body)?),
            ApiKey::OffsetFetch => AnyRequest::OffsetFetch(body_of(v, body)?),
            ApiKey::ConsumerMetadata => AnyRequest::ConsumerMetadata(body_of(v, body)?),
            other => return Err(crate::Error::UnsupportedApiKey(other.code())),
        })
    }

    /// The request's API key.
    pub fn api_key(&self) -> crate::frame::ApiKey {
        match self {
            AnyRequest::Produce(_) => ProduceRequest::KEY,
            AnyRequest::Fetch(_) => FetchRequest::KEY,
            AnyRequest::Offsets(_) => OffsetsRequest::KEY,
            AnyRequest::Metadata(_) => MetadataRequest::KEY,
            AnyRequest::OffsetCommit(_) => OffsetCommitRequest::KEY,
            AnyRequest::OffsetFetch(_) => OffsetFetchRequest::KEY,
            AnyRequest::ConsumerMetadata(_) => ConsumerMetadataRequest::KEY,
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
        }
    }
}

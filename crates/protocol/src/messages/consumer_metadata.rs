//! API key 10 — ConsumerMetadata (GroupCoordinator in later Kafka). Versions: v0 (Kafka 0.8.2).
//!
//! ```text
//! ConsumerMetadataRequest v0  => group_id string
//! ConsumerMetadataResponse v0 => error_code int16, coordinator_id int32,
//!                                coordinator_host string, coordinator_port int32
//! ```
//!
//! The first request for a cluster makes the broker create `__consumer_offsets`; until it has
//! leaders the answer is 15 with coordinator -1, host "", port -1: retry with backoff.
//! Guide: <https://cwiki.apache.org/confluence/display/KAFKA/A+Guide+To+The+Kafka+Protocol#AGuideToTheKafkaProtocol-ConsumerMetadataRequest>

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::Result;
use crate::error_code::ErrorCode;
use crate::frame::{check_version, ApiKey, Decode, Encode, Request, VersionRange};
use crate::wire;

/// ConsumerMetadata request (v0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerMetadataRequest {
    /// v0+. Consumer group.
    pub group_id: String,
}

impl Request for ConsumerMetadataRequest {
    const KEY: ApiKey = ApiKey::ConsumerMetadata;
    const VERSIONS: VersionRange = VersionRange { min: 0, max: 0 };
    type Response = ConsumerMetadataResponse;
}

impl Encode for ConsumerMetadataRequest {
    fn encode(&self, version: i16, buf: &mut BytesMut) -> Result<()> {
        check_version::<Self>(version)?;
        wire::put_string(buf, "group_id", &self.group_id)
    }
}

impl Decode for ConsumerMetadataRequest {
    fn decode(version: i16, buf: &mut Bytes) -> Result<Self> {
        check_version::<Self>(version)?;
        Ok(ConsumerMetadataRequest { group_id: wire::get_string(buf, "group_id")? })
    }
}

/// ConsumerMetadata response (v0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerMetadataResponse {
    /// v0+. 0, or an [`ErrorCode`] (15 while the offsets topic is being created).
    pub error_code: i16,
    /// v0+. Coordinator's broker id, -1 on error.
    pub coordinator_id: i32,
    /// v0+. Coordinator's host, "" on error.
    pub coordinator_host: String,
    /// v0+. Coordinator's port, -1 on error.
    pub coordinator_port: i32,
}

impl ConsumerMetadataResponse {
    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }
}

impl Encode for ConsumerMetadataResponse {
    fn encode(&self, version: i16, buf: &mut BytesMut) -> Result<()> {
        check_version::<ConsumerMetadataRequest>(version)?;
        buf.put_i16(self.error_code);
        buf.put_i32(self.coordinator_id);
        wire::put_string(buf, "coordinator_host", &self.coordinator_host)?;
        buf.put_i32(self.coordinator_port);
        Ok(())
    }
}

impl Decode for ConsumerMetadataResponse {
    fn decode(version: i16, buf: &mut Bytes) -> Result<Self> {
        check_version::<ConsumerMetadataRequest>(version)?;
        Ok(ConsumerMetadataResponse {
            error_code: wire::get_i16(buf, "error_code")?,
            coordinator_id: wire::get_i32(buf, "coordinator_id")?,
            coordinator_host: wire::get_string(buf, "coordinator_host")?,
            coordinator_port: wire::get_i32(buf, "coordinator_port")?,
        })
    }
}

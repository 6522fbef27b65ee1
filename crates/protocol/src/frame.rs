//! API keys, the versioned [`Encode`]/[`Decode`]/[`Request`] traits, request and response
//! headers, and the 4-byte big-endian size framing.
//!
//! ```text
//! request frame:  int32 size | int16 api_key | int16 api_version | int32 correlation_id
//!                 | string client_id | body
//! response frame: int32 size | int32 correlation_id | body
//! ```
//!
//! The version is an argument of `encode`/`decode`, not a field of the message: Kafka 0.8
//! brokers cannot tell a client which versions they speak, so the client pins them.

use std::fmt;

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::error::{Error, Result};
use crate::wire;

macro_rules! api_keys {
    ($($(#[$doc:meta])* $name:ident = $code:literal,)*) => {
        /// The API key of a request (`int16`). Every API gregor speaks is named, and the
        /// inter-broker ones of Kafka 0.8.2 (4 to 7) so logs can say what a broker was sent; any
        /// other key is [`ApiKey::Other`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ApiKey {
            $($(#[$doc])* $name,)*
            /// Any other key.
            Other(i16),
        }

        impl ApiKey {
            /// The key for a number.
            pub fn from_i16(key: i16) -> ApiKey {
                match key {
                    $($code => ApiKey::$name,)*
                    other => ApiKey::Other(other),
                }
            }

            /// The number on the wire.
            pub fn code(self) -> i16 {
                match self {
                    $(ApiKey::$name => $code,)*
                    ApiKey::Other(k) => k,
                }
            }
        }
    };
}

api_keys! {
    /// 0 — Produce.
    Produce = 0,
    /// 1 — Fetch.
    Fetch = 1,
    /// 2 — Offsets (ListOffsets, `getOffsetsBefore`).
    Offsets = 2,
    /// 3 — Metadata (TopicMetadata).
    Metadata = 3,
    /// 4 — LeaderAndIsr (inter-broker).
    LeaderAndIsr = 4,
    /// 5 — StopReplica (inter-broker).
    StopReplica = 5,
    /// 6 — UpdateMetadata (inter-broker).
    UpdateMetadata = 6,
    /// 7 — ControlledShutdown (inter-broker).
    ControlledShutdown = 7,
    /// 8 — OffsetCommit.
    OffsetCommit = 8,
    /// 9 — OffsetFetch.
    OffsetFetch = 9,
    /// 10 — ConsumerMetadata (GroupCoordinator, then FindCoordinator, in later versions).
    ConsumerMetadata = 10,
    /// 11 — JoinGroup (Kafka 0.9+).
    JoinGroup = 11,
    /// 12 — Heartbeat (Kafka 0.9+).
    Heartbeat = 12,
    /// 13 — LeaveGroup (Kafka 0.9+).
    LeaveGroup = 13,
    /// 14 — SyncGroup (Kafka 0.9+).
    SyncGroup = 14,
    /// 15 — DescribeGroups (Kafka 0.9+).
    DescribeGroups = 15,
    /// 16 — ListGroups (Kafka 0.9+).
    ListGroups = 16,
    /// 17 — SaslHandshake (Kafka 0.10+).
    SaslHandshake = 17,
    /// 18 — ApiVersions (Kafka 0.10+, KIP-35; a 0.8 broker closes the connection on it).
    ApiVersions = 18,
    /// 19 — CreateTopics (Kafka 0.10.1+).
    CreateTopics = 19,
    /// 20 — DeleteTopics (Kafka 0.10.1+).
    DeleteTopics = 20,
    /// 21 — DeleteRecords (Kafka 0.11+).
    DeleteRecords = 21,
    /// 22 — InitProducerId (Kafka 0.11+; idempotent and transactional producers).
    InitProducerId = 22,
    /// 32 — DescribeConfigs (Kafka 0.11+).
    DescribeConfigs = 32,
    /// 33 — AlterConfigs (Kafka 0.11+).
    AlterConfigs = 33,
    /// 36 — SaslAuthenticate (Kafka 1.0+).
    SaslAuthenticate = 36,
    /// 37 — CreatePartitions (Kafka 1.0+).
    CreatePartitions = 37,
    /// 42 — DeleteGroups (Kafka 1.1+).
    DeleteGroups = 42,
    /// 43 — ElectLeaders (Kafka 2.2+; ElectPreferredLeaders before 2.4).
    ElectLeaders = 43,
    /// 44 — IncrementalAlterConfigs (Kafka 2.3+).
    IncrementalAlterConfigs = 44,
    /// 45 — AlterPartitionReassignments (Kafka 2.4+, KIP-455).
    AlterPartitionReassignments = 45,
    /// 46 — ListPartitionReassignments (Kafka 2.4+, KIP-455).
    ListPartitionReassignments = 46,
    /// 47 — OffsetDelete (Kafka 2.4+, KIP-496).
    OffsetDelete = 47,
    /// 60 — DescribeCluster (Kafka 2.8+, KIP-700).
    DescribeCluster = 60,
}

impl ApiKey {
    /// The versions of this API that this crate encodes and decodes, or `None` for an API
    /// without a body here.
    pub fn versions(self) -> Option<VersionRange> {
        use crate::messages::*;
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
        use crate::messages::*;
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

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiKey::Other(k) => write!(f, "ApiKey({k})"),
            known => fmt::Debug::fmt(known, f),
        }
    }
}

/// An inclusive range of API versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionRange {
    /// Lowest version.
    pub min: i16,
    /// Highest version.
    pub max: i16,
}

impl VersionRange {
    /// True when `version` is in the range.
    pub fn contains(self, version: i16) -> bool {
        (self.min..=self.max).contains(&version)
    }
}

/// A value that can be written in a given version of its API.
pub trait Encode {
    /// Appends the value's bytes for `version`.
    ///
    /// # Errors
    ///
    /// [`Error::UnsupportedVersion`] for a version the API lacks, [`Error::FieldNotInVersion`] when
    /// the value sets a field that `version` cannot carry, [`Error::TooLong`] for a field too long
    /// for its length prefix.
    fn encode(&self, version: i16, buf: &mut BytesMut) -> Result<()>;

    /// About how many bytes [`Encode::encode`] appends (a hint to size the buffer once, not a
    /// bound; 0 when unknown). Produce requests give it, as their message sets make them large.
    fn size_hint(&self) -> usize {
        0
    }

    /// Appends the value's bytes for `version` to `out`, byte strings of
    /// [`PartsWriter::SHARE_MIN`] bytes or more shared rather than copied where the type has
    /// them ([`ProduceRequest`](crate::messages::ProduceRequest)'s message sets). By default,
    /// [`Encode::encode`] into the writer's buffer.
    ///
    /// # Errors
    ///
    /// As [`Encode::encode`].
    fn encode_parts(&self, version: i16, out: &mut PartsWriter) -> Result<()> {
        self.encode(version, out.buf())
    }

    /// About how many bytes [`Encode::encode_parts`] copies into the writer's buffer (a hint,
    /// as [`Encode::size_hint`], which it is by default).
    fn copied_size_hint(&self) -> usize {
        self.size_hint()
    }

    /// The value's bytes for `version`, in a new buffer.
    ///
    /// # Errors
    ///
    /// As [`Encode::encode`].
    fn to_bytes(&self, version: i16) -> Result<Bytes> {
        let mut buf = BytesMut::with_capacity(self.size_hint());
        self.encode(version, &mut buf)?;
        Ok(buf.freeze())
    }
}

/// A value that can be read in a given version of its API.
pub trait Decode: Sized {
    /// Reads the value from the front of `buf`, leaving what follows it.
    ///
    /// # Errors
    ///
    /// [`Error::UnsupportedVersion`], and any decoding error for malformed input. Never panics and
    /// never allocates more than the input can justify.
    fn decode(version: i16, buf: &mut Bytes) -> Result<Self>;
}

/// A request body: its API key, the versions it has, and the type of its answer.
pub trait Request: Encode + Decode {
    /// The API key.
    const KEY: ApiKey;
    /// The versions this crate implements (those of Kafka 0.8.2).
    const VERSIONS: VersionRange;
    /// The first flexible version (KIP-482: compact lengths, tagged fields, request header v2
    /// and response header v1), `None` when every version is classic (all of Kafka 0.8.2's).
    const FLEXIBLE_FROM: Option<i16> = None;
    /// The response body.
    type Response: Encode + Decode;

    /// False when a broker sends no response to this request (Produce with acks=0).
    fn expects_response(&self) -> bool {
        true
    }
}

/// Fails unless `version` is in `R::VERSIONS`.
pub(crate) fn check_version<R: Request>(version: i16) -> Result<()> {
    if R::VERSIONS.contains(version) {
        Ok(())
    } else {
        Err(Error::UnsupportedVersion { api: R::KEY, version, min: R::VERSIONS.min, max: R::VERSIONS.max })
    }
}

/// The header every request starts with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHeader {
    /// The API.
    pub api_key: ApiKey,
    /// The API version the body is written in.
    pub api_version: i16,
    /// Echoed in the response so it can be matched to the request.
    pub correlation_id: i32,
    /// The client's name for logs and quotas (nullable on the wire).
    pub client_id: Option<String>,
}

impl RequestHeader {
    /// Appends the header: v1 (key, version, correlation id, client id), or v2 (v1 and an empty
    /// tagged-field section) for a flexible version of the API.
    ///
    /// # Errors
    ///
    /// [`Error::TooLong`] for a client id over 32767 bytes.
    pub fn encode(&self, buf: &mut BytesMut) -> Result<()> {
        buf.put_i16(self.api_key.code());
        buf.put_i16(self.api_version);
        buf.put_i32(self.correlation_id);
        wire::put_nullable_string(buf, "client_id", self.client_id.as_deref())?;
        if self.api_key.is_flexible(self.api_version) {
            // request header v2: an (empty) tagged-field section after the client id, which
            // stays a classic int16 string
            buf.put_u8(0);
        }
        Ok(())
    }

    /// Reads the header from the front of a request frame (size prefix already removed): v1, or
    /// v2 (with a tagged-field section) for a flexible version of an API this crate implements.
    ///
    /// # Errors
    ///
    /// Truncation and string errors.
    pub fn decode(buf: &mut Bytes) -> Result<RequestHeader> {
        let api_key = ApiKey::from_i16(wire::get_i16(buf, "api_key")?);
        let api_version = wire::get_i16(buf, "api_version")?;
        let correlation_id = wire::get_i32(buf, "correlation_id")?;
        let client_id = wire::get_nullable_string(buf, "client_id")?;
        if api_key.is_flexible(api_version) {
            // header tags (none are defined for clients) are read and dropped
            crate::schema::TaggedFields::read(buf)?;
        }
        Ok(RequestHeader { api_key, api_version, correlation_id, client_id })
    }
}

/// The header every response starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseHeader {
    /// The request's correlation id.
    pub correlation_id: i32,
}

/// Where [`Encode::encode_parts`] writes: a buffer, and byte strings appended without a copy
/// ([`PartsWriter::share`]).
#[derive(Debug, Default)]
pub struct PartsWriter {
    buf: BytesMut,
    /// What was written before the first shared part (kept writable: see [`RequestFrame`]).
    head: Option<BytesMut>,
    tail: Vec<Bytes>,
}

impl PartsWriter {
    /// Shorter byte strings are copied by [`PartsWriter::share`]: a part of its own would cost
    /// more to write than the copy.
    pub const SHARE_MIN: usize = 1024;

    /// A writer whose buffer has room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> PartsWriter {
        PartsWriter { buf: BytesMut::with_capacity(capacity), head: None, tail: Vec::new() }
    }

    /// The buffer, to append to.
    pub fn buf(&mut self) -> &mut BytesMut {
        &mut self.buf
    }

    /// Appends `bytes`: as a part of its own (no copy, a reference count) from
    /// [`PartsWriter::SHARE_MIN`] bytes on, else copied into the buffer.
    pub fn share(&mut self, bytes: &Bytes) {
        if bytes.len() < Self::SHARE_MIN {
            self.buf.extend_from_slice(bytes);
            return;
        }
        let written = self.buf.split();
        match self.head {
            None => self.head = Some(written),
            Some(_) if written.is_empty() => {}
            Some(_) => self.tail.push(written.freeze()),
        }
        self.tail.push(bytes.clone());
    }

    /// Everything written, in order.
    pub fn finish(self) -> RequestFrame {
        let PartsWriter { buf, head, mut tail } = self;
        match head {
            None => RequestFrame { head: buf, tail },
            Some(head) => {
                if !buf.is_empty() {
                    tail.push(buf.freeze());
                }
                RequestFrame { head, tail }
            }
        }
    }
}

/// A request frame as the byte strings to write one after the other: `head` (the size prefix,
/// the header and the body's first bytes; writable, so that a connection can set the
/// correlation id), then `tail`, which may share large byte strings with the request (a Produce
/// request's message sets are not copied).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestFrame {
    /// The first bytes: at least the size prefix and the header.
    pub head: BytesMut,
    /// The rest, in order.
    pub tail: Vec<Bytes>,
}

impl RequestFrame {
    /// The frame's length, size prefix included.
    pub fn len(&self) -> usize {
        self.head.len() + self.tail.iter().map(Bytes::len).sum::<usize>()
    }

    /// False: a frame has at least its size prefix and header.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The frame in one buffer (a copy).
    pub fn to_bytes(&self) -> Bytes {
        let mut all = BytesMut::with_capacity(self.len());
        all.extend_from_slice(&self.head);
        for part in &self.tail {
            all.extend_from_slice(part);
        }
        all.freeze()
    }
}

/// [`encode_request`] as a [`RequestFrame`]: the same bytes, with large byte strings of the
/// request (message sets) shared instead of copied. `extra` is room to reserve in the head
/// beyond the request's own hint (the client id's length, say).
///
/// # Errors
///
/// As [`encode_request`]; [`Error::TooLong`] for a frame over `i32::MAX` bytes.
pub fn encode_request_frame<R: Request>(header: &RequestHeader, request: &R, extra: usize) -> Result<RequestFrame> {
    if header.api_key != R::KEY {
        return Err(Error::UnsupportedApiKey(header.api_key.code()));
    }
    check_version::<R>(header.api_version)?;
    let mut out = PartsWriter::with_capacity(4 + 10 + extra + request.copied_size_hint());
    let at = wire::begin_size(out.buf());
    header.encode(out.buf())?;
    request.encode_parts(header.api_version, &mut out)?;
    let mut frame = out.finish();
    let len = wire::len_i32("request frame", frame.len() - 4)?;
    frame.head[at..at + 4].copy_from_slice(&len.to_be_bytes());
    Ok(frame)
}

/// Writes a whole request frame: size prefix, header, body in `header.api_version`.
///
/// # Errors
///
/// [`Error::UnsupportedVersion`] when the header's key is not `R::KEY` or its version is not
/// one `R` has, and whatever encoding the body returns.
pub fn encode_request<R: Request>(header: &RequestHeader, request: &R, buf: &mut BytesMut) -> Result<()> {
    if header.api_key != R::KEY {
        return Err(Error::UnsupportedApiKey(header.api_key.code()));
    }
    check_version::<R>(header.api_version)?;
    let at = wire::begin_size(buf);
    header.encode(buf)?;
    request.encode(header.api_version, buf)?;
    wire::finish_size(buf, at, "request frame")
}

/// Writes a whole response frame: size prefix, correlation id, body in `version`.
///
/// # Errors
///
/// Whatever encoding the body returns.
pub fn encode_response<B: Encode>(correlation_id: i32, version: i16, body: &B, buf: &mut BytesMut) -> Result<()> {
    let at = wire::begin_size(buf);
    buf.put_i32(correlation_id);
    body.encode(version, buf)?;
    wire::finish_size(buf, at, "response frame")
}

/// Writes a whole response frame to `R`'s request: size prefix, response header (v0, or v1 with
/// a tagged-field section for a flexible version), body in `version`.
///
/// # Errors
///
/// [`Error::UnsupportedVersion`], and whatever encoding the body returns.
pub fn encode_response_for<R: Request>(
    correlation_id: i32,
    version: i16,
    body: &R::Response,
    buf: &mut BytesMut,
) -> Result<()> {
    check_version::<R>(version)?;
    encode_response_of(R::KEY, correlation_id, version, body, buf)
}

/// Writes a whole response frame of `api`: size prefix, response header (v0, or v1 with a
/// tagged-field section for a flexible version of `api`), body in `version`. For code that
/// holds the API as a value (a broker answering any request); [`encode_response_for`] when the
/// request type is known.
///
/// # Errors
///
/// Whatever encoding the body returns.
pub fn encode_response_of<B: Encode>(
    api: ApiKey,
    correlation_id: i32,
    version: i16,
    body: &B,
    buf: &mut BytesMut,
) -> Result<()> {
    let at = wire::begin_size(buf);
    buf.put_i32(correlation_id);
    if api.response_header_is_flexible(version) {
        buf.put_u8(0);
    }
    body.encode(version, buf)?;
    wire::finish_size(buf, at, "response frame")
}

/// Decodes a request body of a known type from the rest of a frame, which it must use exactly.
///
/// # Errors
///
/// Decoding errors, and [`Error::TrailingBytes`] when bytes are left over.
pub fn decode_request_body<R: Request>(version: i16, mut body: Bytes) -> Result<R> {
    let value = R::decode(version, &mut body)?;
    ensure_consumed(R::KEY, version, "request", &body)?;
    Ok(value)
}

/// Decodes a response frame (size prefix removed) whose body is an `R::Response` in `version`;
/// the frame must be used exactly.
///
/// # Errors
///
/// Decoding errors, and [`Error::TrailingBytes`] when bytes are left over.
pub fn decode_response<R: Request>(version: i16, mut frame: Bytes) -> Result<(ResponseHeader, R::Response)> {
    let correlation_id = wire::get_i32(&mut frame, "correlation_id")?;
    if R::KEY.response_header_is_flexible(version) {
        crate::schema::TaggedFields::read(&mut frame)?;
    }
    let body = R::Response::decode(version, &mut frame)?;
    ensure_consumed(R::KEY, version, "response", &frame)?;
    Ok((ResponseHeader { correlation_id }, body))
}

fn ensure_consumed(api: ApiKey, version: i16, what: &'static str, rest: &Bytes) -> Result<()> {
    if rest.has_remaining() {
        return Err(Error::TrailingBytes { api, version, what, remaining: rest.remaining() });
    }
    Ok(())
}

/// Takes one whole frame (without its size prefix) off the front of `buf`, if one is there.
///
/// Returns `Ok(None)` while the frame is incomplete. Fails without consuming anything when the
/// size prefix is negative or above `max_frame_size`, so that a caller can decide to drop the
/// connection (the stream cannot be trusted past a bad size).
///
/// # Errors
///
/// [`Error::FrameTooLarge`].
pub fn split_frame(buf: &mut BytesMut, max_frame_size: usize) -> Result<Option<Bytes>> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let size = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if size < 0 || size as usize > max_frame_size {
        return Err(Error::FrameTooLarge { size: size.into(), max: max_frame_size });
    }
    let size = size as usize;
    if buf.len() < 4 + size {
        buf.reserve(4 + size - buf.len());
        return Ok(None);
    }
    buf.advance(4);
    Ok(Some(buf.split_to(size).freeze()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_keys_round_trip() {
        for k in -1..=20 {
            assert_eq!(ApiKey::from_i16(k).code(), k);
        }
        assert_eq!(ApiKey::from_i16(18), ApiKey::ApiVersions);
        assert_eq!(ApiKey::from_i16(1000), ApiKey::Other(1000));
        assert_eq!(ApiKey::Fetch.to_string(), "Fetch");
        assert_eq!(ApiKey::Other(1000).to_string(), "ApiKey(1000)");
    }

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

    #[test]
    fn split_frame_waits_for_whole_frames_fed_a_byte_at_a_time() {
        let frames: &[&[u8]] = &[b"\x00\x00\x00\x03abc", b"\x00\x00\x00\x00", b"\x00\x00\x00\x01z"];
        let stream: Vec<u8> = frames.concat();
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for byte in stream {
            buf.put_u8(byte);
            while let Some(frame) = split_frame(&mut buf, 16).unwrap() {
                got.push(frame);
            }
        }
        assert_eq!(got, vec![Bytes::from_static(b"abc"), Bytes::new(), Bytes::from_static(b"z")]);
        assert!(buf.is_empty());
    }

    #[test]
    fn a_frame_in_parts_has_the_bytes_of_the_one_buffer_frame_and_shares_large_sets() {
        use crate::messages::{MetadataRequest, ProducePartition, ProduceRequest, ProduceTopic};
        use crate::{Compression, Message, MessageSet};
        let set = |n: usize, len: usize| {
            let messages: Vec<Message> =
                (0..n).map(|i| Message::new(None, Some(Bytes::from(vec![b'a' + (i % 26) as u8; len])))).collect();
            MessageSet::from_messages(messages, Compression::None).unwrap()
        };
        // sets below, at and above the share threshold, two topics, one of them with one
        // partition, in the order the request has them
        let sets = [set(1, 10), set(40, 100), set(3, 400), set(1, PartsWriter::SHARE_MIN - 26)];
        assert!(sets[0].len() < PartsWriter::SHARE_MIN && sets[1].len() > PartsWriter::SHARE_MIN);
        assert_eq!(sets[3].len(), PartsWriter::SHARE_MIN, "a set of exactly the threshold is shared");
        let request = ProduceRequest {
            required_acks: -1,
            timeout: 1500,
            topics: vec![
                ProduceTopic::new(
                    "events",
                    vec![
                        ProducePartition::new(0, sets[0].clone()),
                        ProducePartition::new(1, sets[1].clone()),
                        ProducePartition::new(2, sets[2].clone()),
                    ],
                ),
                ProduceTopic::new("audit", vec![ProducePartition::new(7, sets[3].clone())]),
            ],
            ..Default::default()
        };
        let header = RequestHeader {
            api_key: ApiKey::Produce,
            api_version: 0,
            correlation_id: 42,
            client_id: Some("parts".into()),
        };
        let mut whole = BytesMut::new();
        encode_request(&header, &request, &mut whole).unwrap();
        let frame = encode_request_frame(&header, &request, 5).unwrap();
        assert_eq!(frame.to_bytes(), whole.freeze());
        assert_eq!(frame.len(), frame.to_bytes().len());
        // the three large sets are the request's own bytes; the small one was copied
        let shared: Vec<*const u8> = frame.tail.iter().map(|p| p.as_ptr()).collect();
        for s in &sets[1..] {
            assert!(shared.contains(&s.as_bytes().as_ptr()), "a large set is shared");
        }
        assert!(!shared.contains(&sets[0].as_bytes().as_ptr()));
        // the head holds the header, writable in place
        assert_eq!(&frame.head[8..12], &42i32.to_be_bytes());
        // a request with nothing to share is one buffer
        let metadata = MetadataRequest::for_topics(["events"]);
        let header = RequestHeader { api_key: ApiKey::Metadata, ..header };
        let mut whole = BytesMut::new();
        encode_request(&header, &metadata, &mut whole).unwrap();
        let frame = encode_request_frame(&header, &metadata, 0).unwrap();
        assert!(frame.tail.is_empty());
        assert_eq!(frame.head.freeze(), whole.freeze());
        // the checks of `encode_request`
        let header = RequestHeader { api_version: 14, ..header };
        assert!(matches!(encode_request_frame(&header, &metadata, 0), Err(Error::UnsupportedVersion { .. })));
        let header = RequestHeader { api_key: ApiKey::Fetch, api_version: 0, ..header };
        assert!(matches!(encode_request_frame(&header, &metadata, 0), Err(Error::UnsupportedApiKey(1))));
    }

    #[test]
    fn split_frame_rejects_oversized_and_negative_sizes() {
        let mut buf = BytesMut::from(&b"\x00\x98\x96\x7b"[..]);
        let err = split_frame(&mut buf, 1_048_576).unwrap_err();
        assert_eq!(err.to_string(), "frame of 9999995 bytes exceeds max 1048576");
        let mut buf = BytesMut::from(&b"\xff\xff\xff\xff"[..]);
        assert!(split_frame(&mut buf, 100).is_err());
    }
}

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

/// The API key of a request (`int16`). Only the client APIs of Kafka 0.8.2 have bodies in this
/// crate; the inter-broker ones (4 to 7) are named so logs can say what a broker was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ApiKey {
    /// 0 — Produce.
    Produce,
    /// 1 — Fetch.
    Fetch,
    /// 2 — Offsets (ListOffsets, `getOffsetsBefore`).
    Offsets,
    /// 3 — Metadata (TopicMetadata).
    Metadata,
    /// 4 — LeaderAndIsr (inter-broker).
    LeaderAndIsr,
    /// 5 — StopReplica (inter-broker).
    StopReplica,
    /// 6 — UpdateMetadata (inter-broker).
    UpdateMetadata,
    /// 7 — ControlledShutdown (inter-broker).
    ControlledShutdown,
    /// 8 — OffsetCommit.
    OffsetCommit,
    /// 9 — OffsetFetch.
    OffsetFetch,
    /// 10 — ConsumerMetadata (GroupCoordinator in later versions).
    ConsumerMetadata,
    /// Any other key (e.g. 18 ApiVersions, which a 0.8 broker answers by closing the connection).
    Other(i16),
}

impl ApiKey {
    /// The key for a number.
    pub fn from_i16(key: i16) -> ApiKey {
        match key {
            0 => ApiKey::Produce,
            1 => ApiKey::Fetch,
            2 => ApiKey::Offsets,
            3 => ApiKey::Metadata,
            4 => ApiKey::LeaderAndIsr,
            5 => ApiKey::StopReplica,
            6 => ApiKey::UpdateMetadata,
            7 => ApiKey::ControlledShutdown,
            8 => ApiKey::OffsetCommit,
            9 => ApiKey::OffsetFetch,
            10 => ApiKey::ConsumerMetadata,
            other => ApiKey::Other(other),
        }
    }

    /// The number on the wire.
    pub fn code(self) -> i16 {
        match self {
            ApiKey::Produce => 0,
            ApiKey::Fetch => 1,
            ApiKey::Offsets => 2,
            ApiKey::Metadata => 3,
            ApiKey::LeaderAndIsr => 4,
            ApiKey::StopReplica => 5,
            ApiKey::UpdateMetadata => 6,
            ApiKey::ControlledShutdown => 7,
            ApiKey::OffsetCommit => 8,
            ApiKey::OffsetFetch => 9,
            ApiKey::ConsumerMetadata => 10,
            ApiKey::Other(k) => k,
        }
    }

    /// The versions of this API that this crate encodes and decodes (those of Kafka 0.8.2), or
    /// `None` for an API without a body here.
    pub fn versions(self) -> Option<VersionRange> {
        use crate::messages::*;
        Some(match self {
            ApiKey::Produce => ProduceRequest::VERSIONS,
            ApiKey::Fetch => FetchRequest::VERSIONS,
            ApiKey::Offsets => OffsetsRequest::VERSIONS,
            ApiKey::Metadata => MetadataRequest::VERSIONS,
            ApiKey::OffsetCommit => OffsetCommitRequest::VERSIONS,
            ApiKey::OffsetFetch => OffsetFetchRequest::VERSIONS,
            ApiKey::ConsumerMetadata => ConsumerMetadataRequest::VERSIONS,
            _ => return None,
        })
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
    /// Appends the header.
    ///
    /// # Errors
    ///
    /// [`Error::TooLong`] for a client id over 32767 bytes.
    pub fn encode(&self, buf: &mut BytesMut) -> Result<()> {
        buf.put_i16(self.api_key.code());
        buf.put_i16(self.api_version);
        buf.put_i32(self.correlation_id);
        wire::put_nullable_string(buf, "client_id", self.client_id.as_deref())
    }

    /// Reads the header from the front of a request frame (size prefix already removed).
    ///
    /// # Errors
    ///
    /// Truncation and string errors.
    pub fn decode(buf: &mut Bytes) -> Result<RequestHeader> {
        let api_key = ApiKey::from_i16(wire::get_i16(buf, "api_key")?);
        let api_version = wire::get_i16(buf, "api_version")?;
        let correlation_id = wire::get_i32(buf, "correlation_id")?;
        let client_id = wire::get_nullable_string(buf, "client_id")?;
        Ok(RequestHeader { api_key, api_version, correlation_id, client_id })
    }
}

/// The header every response starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseHeader {
    /// The request's correlation id.
    pub correlation_id: i32,
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
        assert_eq!(ApiKey::from_i16(18), ApiKey::Other(18));
        assert_eq!(ApiKey::Fetch.to_string(), "Fetch");
        assert_eq!(ApiKey::Other(18).to_string(), "ApiKey(18)");
    }

    #[test]
    fn versions_are_those_of_kafka_0_8_2() {
        let v = |k: ApiKey| k.versions().map(|r| (r.min, r.max));
        assert_eq!(v(ApiKey::Produce), Some((0, 0)));
        assert_eq!(v(ApiKey::Fetch), Some((0, 0)));
        assert_eq!(v(ApiKey::Offsets), Some((0, 0)));
        assert_eq!(v(ApiKey::Metadata), Some((0, 0)));
        assert_eq!(v(ApiKey::OffsetCommit), Some((0, 1)));
        assert_eq!(v(ApiKey::OffsetFetch), Some((0, 1)));
        assert_eq!(v(ApiKey::ConsumerMetadata), Some((0, 0)));
        assert_eq!(v(ApiKey::LeaderAndIsr), None);
        let err = ApiKey::Fetch.check_version(1).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Fetch v1 is not supported (supported: v0..=v0); 0.8 brokers cannot negotiate versions, so pin them"
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
    fn split_frame_rejects_oversized_and_negative_sizes() {
        let mut buf = BytesMut::from(&b"\x00\x98\x96\x7b"[..]);
        let err = split_frame(&mut buf, 1_048_576).unwrap_err();
        assert_eq!(err.to_string(), "frame of 9999995 bytes exceeds max 1048576");
        let mut buf = BytesMut::from(&b"\xff\xff\xff\xff"[..]);
        assert!(split_frame(&mut buf, 100).is_err());
    }
}

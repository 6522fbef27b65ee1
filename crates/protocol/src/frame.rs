//! Request and response headers, and the 4-byte big-endian size framing. The API keys, the
//! versioned [`Encode`]/[`Decode`]/[`Request`] traits and [`RequestFrame`] are defined in
//! modules of their own and re-exported here, where they have always been named.
//!
//! ```text
//! request frame:  int32 size | int16 api_key | int16 api_version | int32 correlation_id
//!                 | string client_id | body
//! response frame: int32 size | int32 correlation_id | body
//! ```

use bytes::{Buf, BufMut, Bytes, BytesMut};

pub(crate) use crate::api::check_version;
pub use crate::api::{Decode, Encode, Request};
pub use crate::api_key::{ApiKey, VersionRange};
use crate::error::{Error, Result};
pub use crate::parts::{PartsWriter, RequestFrame};
use crate::schema::TaggedFields;
use crate::wire;

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
    /// Header v2 (a flexible version): its tagged fields, none of which Kafka defines for a
    /// request, kept as they came so that the header is written back as it was read.
    pub unknown_tagged_fields: TaggedFields,
}

impl RequestHeader {
    /// Appends the header: v1 (key, version, correlation id, client id), or v2 (v1 and a
    /// tagged-field section, usually empty) for a flexible version of the API.
    ///
    /// # Errors
    ///
    /// [`Error::TooLong`] for a client id over 32767 bytes; [`Error::FieldNotInVersion`] for
    /// tagged fields in a header v1.
    pub fn encode(&self, buf: &mut BytesMut) -> Result<()> {
        buf.put_i16(self.api_key.code());
        buf.put_i16(self.api_version);
        buf.put_i32(self.correlation_id);
        wire::put_nullable_string(buf, "client_id", self.client_id.as_deref())?;
        if self.api_key.is_flexible(self.api_version) {
            // request header v2: a tagged-field section after the client id, which stays a
            // classic int16 string
            self.unknown_tagged_fields.put_with(Vec::new(), buf)?;
        } else if !self.unknown_tagged_fields.is_empty() {
            return Err(Error::FieldNotInVersion {
                api: self.api_key,
                version: self.api_version,
                field: "request header tagged fields",
                value: format!("{:?}", self.unknown_tagged_fields),
            });
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
        let mut unknown_tagged_fields = TaggedFields::default();
        if api_key.is_flexible(api_version) {
            for (tag, value) in TaggedFields::read(buf)? {
                unknown_tagged_fields.push(tag, value);
            }
        }
        Ok(RequestHeader { api_key, api_version, correlation_id, client_id, unknown_tagged_fields })
    }
}

/// The header every response starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseHeader {
    /// The request's correlation id.
    pub correlation_id: i32,
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
        TaggedFields::read(&mut frame)?;
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
            unknown_tagged_fields: Default::default(),
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
    fn a_header_v2_keeps_its_tagged_fields() {
        // Produce v9 (flexible): client id "c", then one tagged field (tag 5, 2 bytes)
        let wire: &[u8] = &[0, 0, 0, 9, 0, 0, 0, 7, 0, 1, b'c', 1, 5, 2, 0xab, 0xcd];
        let mut buf = Bytes::copy_from_slice(wire);
        let header = RequestHeader::decode(&mut buf).unwrap();
        assert!(buf.is_empty());
        assert_eq!(header.unknown_tagged_fields.fields().len(), 1);
        assert_eq!(header.unknown_tagged_fields.fields()[0].tag, 5);
        assert_eq!(&header.unknown_tagged_fields.fields()[0].value[..], &[0xab, 0xcd]);
        let mut out = BytesMut::new();
        header.encode(&mut out).unwrap();
        assert_eq!(&out[..], wire);
        // a header v1 has no place for them
        let v1 = RequestHeader { api_version: 8, ..header };
        let err = v1.encode(&mut BytesMut::new()).unwrap_err();
        assert!(matches!(err, Error::FieldNotInVersion { version: 8, .. }), "{err}");
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

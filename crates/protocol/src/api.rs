//! The versioned [`Encode`]/[`Decode`]/[`Request`] traits every body implements.
//!
//! The version is an argument of `encode`/`decode`, not a field of the message: Kafka 0.8
//! brokers cannot tell a client which versions they speak, so the client pins them.

use bytes::{Bytes, BytesMut};

use crate::api_key::{ApiKey, VersionRange};
use crate::error::{Error, Result};
use crate::parts::PartsWriter;

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
    /// The versions this crate implements (from Kafka 0.8.2's to today's, as the API has them).
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

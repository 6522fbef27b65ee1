//! The crate's one error type.

use std::fmt;

use crate::api_key::ApiKey;
use crate::compression::{Compression, CompressionError};

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where a message sits: what is known of its topic, partition and offset.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MessageLocation {
    /// The topic, when the caller named it.
    pub topic: Option<String>,
    /// The partition, when the caller named it.
    pub partition: Option<i32>,
    /// The offset of the message (for an inner message of a compressed wrapper, its inner offset).
    pub offset: i64,
}

impl fmt::Display for MessageLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.topic, self.partition) {
            (Some(t), Some(p)) => write!(f, "{t}/{p} offset {}", self.offset),
            (Some(t), None) => write!(f, "{t} offset {}", self.offset),
            (None, Some(p)) => write!(f, "partition {p} offset {}", self.offset),
            (None, None) => write!(f, "offset {}", self.offset),
        }
    }
}

/// Everything that can go wrong encoding or decoding Kafka 0.8.2 frames.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Returned when the input ends before a field is complete.
    #[error("truncated input: {field} needs {needed} bytes, {remaining} remain")]
    Truncated {
        /// The field being read.
        field: &'static str,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left in the input.
        remaining: usize,
    },
    /// Returned when a length or count prefix is negative (and not the null marker where null is
    /// allowed) or larger than the bytes that remain, so it cannot be honest.
    #[error("invalid length {length} for {field}: {remaining} bytes remain")]
    InvalidLength {
        /// The field whose length prefix is wrong.
        field: &'static str,
        /// The length as read.
        length: i64,
        /// Bytes left in the input.
        remaining: usize,
    },
    /// Returned when a field that cannot be null carries the null length (-1).
    #[error("{field} is null, which Kafka does not allow there")]
    UnexpectedNull {
        /// The field.
        field: &'static str,
    },
    /// Returned when a string field is not UTF-8.
    #[error("{field} is not valid UTF-8")]
    InvalidUtf8 {
        /// The field.
        field: &'static str,
    },
    /// Returned when a frame was decoded but bytes are left after its last field.
    #[error("{remaining} unexpected bytes after the end of a {api} v{version} {what}")]
    TrailingBytes {
        /// The API of the frame.
        api: ApiKey,
        /// The version it was decoded as.
        version: i16,
        /// `"request"` or `"response"`.
        what: &'static str,
        /// How many bytes were left.
        remaining: usize,
    },
    /// Returned when a version of an API is asked for that this crate does not implement.
    #[error("{api} v{version} is not supported (supported: v{min}..=v{max}); pick a version both sides speak (gregor-net negotiates it with ApiVersions)")]
    UnsupportedVersion {
        /// The API.
        api: ApiKey,
        /// The version asked for.
        version: i16,
        /// Lowest supported version.
        min: i16,
        /// Highest supported version.
        max: i16,
    },
    /// Returned when a request header names an API key this crate does not implement.
    #[error("api key {0} is not a client API of Kafka 0.8.2")]
    UnsupportedApiKey(i16),
    /// Returned when encoding a value that sets a field the chosen version does not have
    /// (it would otherwise be dropped silently).
    #[error(
        "{api} v{version} has no field {field} (set to {value}); use a version that has it or leave it at its default"
    )]
    FieldNotInVersion {
        /// The API.
        api: ApiKey,
        /// The version being encoded.
        version: i16,
        /// The field.
        field: &'static str,
        /// The value that would be lost.
        value: String,
    },
    /// Returned when a string, byte array or array is too long for its length prefix.
    #[error("{field} of {length} elements or bytes does not fit its length prefix (max {max})")]
    TooLong {
        /// The field.
        field: &'static str,
        /// Its length.
        length: usize,
        /// The largest length the prefix can carry.
        max: usize,
    },
    /// Returned when a variable-length integer is malformed (more bytes or bits than its width)
    /// or tags of a tagged-field section are not ascending.
    #[error("malformed {field}: {reason}")]
    InvalidVarint {
        /// The field being read.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// Returned when a frame's size prefix is negative or larger than the configured maximum.
    #[error("frame of {size} bytes exceeds max {max}")]
    FrameTooLarge {
        /// The size prefix as read.
        size: i64,
        /// The configured maximum.
        max: usize,
    },
    /// Returned when a message's stored CRC does not match its bytes.
    #[error("crc mismatch in message at {location}: stored {stored:#010x}, computed {computed:#010x}")]
    Crc {
        /// Where the message is.
        location: MessageLocation,
        /// The CRC in the message.
        stored: u32,
        /// The CRC of its bytes.
        computed: u32,
    },
    /// Returned when a message's or batch's magic byte is one its reader does not take: not 0
    /// for the Kafka 0.8.2 readers (`Message`, `MessageSet`), not 1 for `MessageV1`, above 2
    /// for `record::Batches`, which reads every format Kafka has.
    #[error("message at {location} has magic byte {magic}, which this reader does not take")]
    UnsupportedMagic {
        /// Where the message is.
        location: MessageLocation,
        /// The magic byte.
        magic: i8,
    },
    /// Returned when a message entry is malformed (a size too small for a message, fields that
    /// do not fill the declared size).
    #[error("malformed message at {location}: {reason}")]
    MalformedMessage {
        /// Where the message is.
        location: MessageLocation,
        /// What is wrong.
        reason: String,
    },
    /// Returned when a compressed wrapper's value cannot be decompressed or compressed.
    #[error("{codec} wrapper message at {location} cannot be processed")]
    Compression {
        /// Where the wrapper is.
        location: MessageLocation,
        /// Its codec.
        codec: Compression,
        /// What the codec said.
        #[source]
        source: CompressionError,
    },
    /// Returned when a message's attributes name a compression codec that does not exist.
    #[error("message at {location} has unknown compression codec bits {bits}")]
    UnknownCodec {
        /// Where the message is.
        location: MessageLocation,
        /// `attributes & 0x07`.
        bits: i8,
    },
    /// Returned when a compressed wrapper contains another compressed wrapper (Kafka never writes
    /// that; following it would allow unbounded nesting).
    #[error("compressed wrapper at {location} contains another compressed message")]
    NestedCompression {
        /// Where the inner wrapper is.
        location: MessageLocation,
    },
    /// Returned when a fetched message set holds bytes but not one whole message: the next message
    /// is larger than the fetch size. Raise the fetch size (`fetch.message.max.bytes`) to at least
    /// `message_size` bytes, or the partition cannot make progress.
    #[error("message at {location} is larger than the fetch size: {fetched_bytes} bytes fetched, the entry needs {}", entry_size.map_or("more (size field cut)".to_string(), |s| format!("{s} bytes")))]
    MessageLargerThanFetch {
        /// Where the message is (its offset, or the requested offset when its header was cut).
        location: MessageLocation,
        /// The whole entry's size (12-byte offset/size header + message), when the size field
        /// itself was fetched.
        entry_size: Option<usize>,
        /// How many bytes of it came back.
        fetched_bytes: usize,
    },
}

impl Error {
    pub(crate) fn truncated(field: &'static str, needed: usize, remaining: usize) -> Self {
        Error::Truncated { field, needed, remaining }
    }
}

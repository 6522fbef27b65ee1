//! The crate's one error type.

use std::fmt;

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong turning values into message bytes and back.
///
/// Avro variants name the schema (its full name for a record, enum or fixed, else its type) and,
/// when the bytes carried one, the schema id of the 5-byte framing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Returned when a [`StringEncoder`](crate::StringEncoder) or
    /// [`StringDecoder`](crate::StringDecoder) is configured with a `serializer.encoding` other
    /// than UTF-8.
    #[error("unsupported serializer.encoding {encoding:?}: only UTF8 (also spelled UTF-8) is supported")]
    UnsupportedEncoding {
        /// The encoding as configured.
        encoding: String,
    },

    /// Returned when a [`StringDecoder`](crate::StringDecoder) is given bytes that are not valid
    /// UTF-8.
    #[error("message of {len} bytes is not valid UTF-8 (valid up to byte {valid_up_to})")]
    InvalidUtf8 {
        /// Length of the message.
        len: usize,
        /// How many leading bytes are valid UTF-8.
        valid_up_to: usize,
        /// What the standard library found.
        #[source]
        source: std::str::Utf8Error,
    },

    /// Returned when a schema cannot be used: apache-avro cannot resolve the names it refers to.
    #[error("cannot use schema {schema}{}", IdSuffix(.schema_id))]
    InvalidSchema {
        /// The schema's name or type.
        schema: String,
        /// The schema id, when the schema came from a registry.
        schema_id: Option<i32>,
        /// What apache-avro reported (boxed: it is large, and errors travel with every result).
        #[source]
        source: Box<apache_avro::Error>,
    },

    /// Returned when a value to encode does not match the encoder's schema.
    #[error("value does not match schema {schema}{}: {}{reason}", IdSuffix(.schema_id), AtPath(.path))]
    SchemaMismatch {
        /// The schema's name or type.
        schema: String,
        /// The schema id of a framed encoder.
        schema_id: Option<i32>,
        /// Where in the value, e.g. `.tags[2]`; empty for the value itself.
        path: String,
        /// What is wrong there.
        reason: String,
    },

    /// Returned when apache-avro fails to encode a value that passed validation (a decimal that
    /// does not fit its schema, for one).
    #[error("cannot encode value with schema {schema}{}: at {path}", IdSuffix(.schema_id))]
    AvroEncode {
        /// The schema's name or type.
        schema: String,
        /// The schema id of a framed encoder.
        schema_id: Option<i32>,
        /// Where in the value, e.g. `.price`.
        path: String,
        /// What apache-avro reported (boxed: it is large, and errors travel with every result).
        #[source]
        source: Box<apache_avro::Error>,
    },

    /// Returned when bytes are not a well-formed Avro datum of the writer schema: truncated,
    /// followed by extra bytes, a varint longer than 10 bytes, a negative length, a union branch
    /// or enum index out of range, a string that is not UTF-8, nesting deeper than
    /// [`MAX_NESTING_DEPTH`](crate::MAX_NESTING_DEPTH).
    #[error("malformed Avro datum for schema {schema}{} at byte {offset}: {reason}", IdSuffix(.schema_id))]
    MalformedAvro {
        /// The writer schema's name or type.
        schema: String,
        /// The schema id read from the frame.
        schema_id: Option<i32>,
        /// Byte offset in the Avro datum (after the 5-byte header, if any).
        offset: usize,
        /// What is wrong there.
        reason: String,
    },

    /// Returned when apache-avro rejects a `big-decimal` in a datum (the one leaf type it
    /// decodes here).
    #[error("cannot decode Avro datum with schema {schema}{}", IdSuffix(.schema_id))]
    AvroDecode {
        /// The writer schema's name or type.
        schema: String,
        /// The schema id read from the frame.
        schema_id: Option<i32>,
        /// What apache-avro reported (boxed: it is large, and errors travel with every result).
        #[source]
        source: Box<apache_avro::Error>,
    },

    /// Returned when a decoded value cannot be resolved from the writer schema to the reader
    /// schema: a field the reader needs has no default, types that do not promote, an enum
    /// symbol the reader lacks with no default, records or enums or fixeds whose names differ.
    #[error("cannot resolve writer schema {writer}{} to reader schema {reader}: {}{reason}", IdSuffix(.schema_id), AtPath(.path))]
    SchemaResolution {
        /// The writer schema's name or type.
        writer: String,
        /// The reader schema's name or type.
        reader: String,
        /// The schema id read from the frame.
        schema_id: Option<i32>,
        /// Where in the reader's value, e.g. `.customer.address`; empty for the value itself.
        path: String,
        /// What does not resolve.
        reason: String,
    },

    /// Returned when a schema-id frame is shorter than its 5-byte header.
    #[error("frame of {len} bytes is shorter than the 5-byte schema-id header (magic byte 0, int32 schema id)")]
    FrameTooShort {
        /// Length of the frame.
        len: usize,
    },

    /// Returned when a schema-id frame does not start with the magic byte 0.
    #[error("expected magic byte 0x00 at the start of a schema-id frame, found {found:#04x}: was the message written without schema-id framing?")]
    BadMagic {
        /// The first byte of the frame.
        found: u8,
    },

    /// Returned when the schema id of a frame is not in the registry.
    #[error("unknown schema id {schema_id}: register it in the schema registry first")]
    UnknownSchemaId {
        /// The schema id read from the frame.
        schema_id: i32,
    },

    /// Returned when [`InMemoryRegistry::register`](crate::InMemoryRegistry::register) is given
    /// an id that already holds a different schema (ids are immutable, as in a schema registry).
    #[error("schema id {schema_id} already holds schema {existing}, cannot register {new}")]
    SchemaIdTaken {
        /// The schema id.
        schema_id: i32,
        /// The name or type of the schema registered first.
        existing: String,
        /// The name or type of the schema refused.
        new: String,
    },

    /// Returned by encoders and decoders written outside this crate, through [`Error::custom`].
    #[error(transparent)]
    Custom(Box<dyn std::error::Error + Send + Sync + 'static>),
}

impl Error {
    /// Wraps an error of a user-defined [`Encoder`](crate::Encoder) or
    /// [`Decoder`](crate::Decoder) (or a message: `Error::custom("bad key")`).
    pub fn custom(error: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Self {
        Error::Custom(error.into())
    }
}

/// Displays ` (schema id N)` when there is an id.
struct IdSuffix<'a>(&'a Option<i32>);

impl fmt::Display for IdSuffix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(id) => write!(f, " (schema id {id})"),
            None => Ok(()),
        }
    }
}

/// Displays `at PATH: ` when the path is not empty.
struct AtPath<'a>(&'a String);

impl fmt::Display for AtPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            Ok(())
        } else {
            write!(f, "at {}: ", self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_carries_the_values() {
        let e = Error::SchemaMismatch {
            schema: "com.example.Order".into(),
            schema_id: Some(42),
            path: ".tags[1]".into(),
            reason: "expected string, found long".into(),
        };
        assert_eq!(
            e.to_string(),
            "value does not match schema com.example.Order (schema id 42): at .tags[1]: expected string, found long"
        );
        let e = Error::SchemaMismatch {
            schema: "string".into(),
            schema_id: None,
            path: String::new(),
            reason: "expected string, found long".into(),
        };
        assert_eq!(e.to_string(), "value does not match schema string: expected string, found long");
        assert_eq!(
            Error::BadMagic { found: 0x7b }.to_string(),
            "expected magic byte 0x00 at the start of a schema-id frame, found 0x7b: \
             was the message written without schema-id framing?"
        );
    }

    #[test]
    fn custom_is_transparent() {
        let e = Error::custom("bad key");
        assert_eq!(e.to_string(), "bad key");
        assert!(std::error::Error::source(&e).is_none());
    }

    #[test]
    fn error_is_send_sync() {
        fn check<T: Send + Sync + 'static>() {}
        check::<Error>();
    }
}

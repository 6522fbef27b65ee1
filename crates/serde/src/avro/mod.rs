//! Avro binary datums (no container file, no framing) with apache-avro's schemas and values.
//!
//! apache-avro parses schemas and defines [`Value`]; writing ([`write`](mod@write)), reading ([`read`](mod@read)) and
//! resolving ([`resolve`]) datums is done here, each module saying why.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::sync::Arc;

use apache_avro::schema::{Name, ResolvedSchema, Schema};
use apache_avro::types::Value;
use bytes::Bytes;

use crate::{Decoder, Encoder, Error, Result};

pub(crate) mod read;
mod resolve;
mod write;

/// One step into a value, for error paths.
#[derive(Debug)]
pub(crate) enum Seg {
    Field(String),
    Index(usize),
    Key(String),
}

/// Formats a path collected innermost first while unwinding: `.tags[2]`, `.attrs["k"]`; empty
/// for the root.
pub(crate) fn format_path(innermost_first: &[Seg]) -> String {
    let mut out = String::new();
    for seg in innermost_first.iter().rev() {
        match seg {
            Seg::Field(name) => {
                out.push('.');
                out.push_str(name);
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
            Seg::Key(k) => out.push_str(&format!("[{k:?}]")),
        }
    }
    out
}

/// Named types of a schema, owned, for resolving `Ref`s.
pub(crate) type Names = HashMap<Name, Schema>;

/// A schema as errors name it: the full name of a record, enum or fixed, else its type.
pub(crate) fn label(schema: &Schema) -> String {
    match schema.name() {
        Some(name) => name.fullname(None),
        None => write::describe(schema),
    }
}

/// Resolves the names a schema defines and refers to, so that encoding and decoding cannot meet
/// a dangling reference.
pub(crate) fn owned_names(schema: &Schema, schema_id: Option<i32>) -> Result<Names> {
    let resolved = resolve_names(schema, schema_id)?;
    Ok(resolved.get_names().iter().map(|(name, schema)| (name.clone(), (*schema).clone())).collect())
}

pub(crate) fn resolve_names(schema: &Schema, schema_id: Option<i32>) -> Result<ResolvedSchema<'_>> {
    ResolvedSchema::try_from(schema).map_err(|source| Error::InvalidSchema {
        schema: label(schema),
        schema_id,
        source: Box::new(source),
    })
}

/// Validates `value` against `schema` and appends its encoding to `buf`; on error `buf` is left
/// as it was.
pub(crate) fn encode_datum<S: Borrow<Schema>>(
    value: &Value,
    schema: &Schema,
    names: &HashMap<Name, S>,
    buf: &mut Vec<u8>,
    schema_id: Option<i32>,
) -> Result<()> {
    let start = buf.len();
    write::write_datum(value, schema, names, buf).map_err(|e| {
        buf.truncate(start);
        let path = e.path();
        match e.problem {
            write::Problem::Mismatch(reason) => {
                Error::SchemaMismatch { schema: label(schema), schema_id, path, reason }
            }
            write::Problem::Avro(source) => Error::AvroEncode { schema: label(schema), schema_id, path, source },
        }
    })
}

/// A reader schema with its named types, for resolution.
#[derive(Debug, Clone)]
pub(crate) struct ReaderSchema {
    schema: Arc<Schema>,
    names: Arc<Names>,
}

impl ReaderSchema {
    pub(crate) fn new(schema: Schema) -> Result<Self> {
        let names = owned_names(&schema, None)?;
        Ok(ReaderSchema { schema: Arc::new(schema), names: Arc::new(names) })
    }

    pub(crate) fn schema(&self) -> &Schema {
        &self.schema
    }
}

/// Decodes exactly one datum of `writer` from `bytes`, then resolves it to `reader`.
pub(crate) fn decode_datum<S: Borrow<Schema>>(
    writer: &Schema,
    names: &HashMap<Name, S>,
    reader: Option<&ReaderSchema>,
    bytes: &[u8],
    schema_id: Option<i32>,
) -> Result<Value> {
    let value = read::read_datum(writer, names, bytes).map_err(|e| match e {
        read::ReadError::Malformed { offset, reason } => {
            Error::MalformedAvro { schema: label(writer), schema_id, offset, reason }
        }
        read::ReadError::Avro(source) => Error::AvroDecode { schema: label(writer), schema_id, source },
    })?;
    match reader {
        None => Ok(value),
        Some(reader) => resolve::resolve_datum(value, writer, names, &reader.schema, &reader.names).map_err(|e| {
            Error::SchemaResolution {
                writer: label(writer),
                reader: label(&reader.schema),
                schema_id,
                path: e.path(),
                reason: e.reason,
            }
        }),
    }
}

/// Encodes [`Value`]s as Avro binary datums of one schema: the bare datum, no container file,
/// no header.
///
/// Every value is checked against the schema as it is written; one that does not match is an
/// [`Error::SchemaMismatch`] naming the schema, where in the value (`.tags[2]`) and what is
/// wrong. A union value must say its branch (`Value::Union(1, ..)`; `Value::Null` alone is
/// accepted for the null branch), as `apache_avro::to_value` produces for an `Option`.
///
/// For a type that implements `serde::Serialize`, convert it with `apache_avro::to_value`
/// first, or wrap that in a closure, which is an [`Encoder`] of that type:
///
/// ```
/// use apache_avro::{types::Value, Schema};
/// use bytes::Bytes;
/// use gregor_serde::{AvroEncoder, Encoder, Error};
///
/// let schema = Schema::parse_str(r#"{"type":"record","name":"Ping","fields":[{"name":"n","type":"long"}]}"#)
///     .map_err(Error::custom)?;
/// let avro = AvroEncoder::new(schema)?;
/// let bytes = avro.encode(&Value::Record(vec![("n".into(), Value::Long(300))]))?;
/// assert_eq!(bytes, &[0xd8, 0x04][..]); // zigzag(300) = 600 as a varint
///
/// // an Encoder<u64> built on it
/// let ping = move |n: &u64| -> Result<Bytes, Error> {
///     avro.encode(&Value::Record(vec![("n".into(), Value::Long(*n as i64))]))
/// };
/// assert_eq!(ping.encode(&300)?, bytes);
/// # Ok::<(), Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct AvroEncoder {
    schema: Arc<Schema>,
    names: Arc<Names>,
}

impl AvroEncoder {
    /// An encoder for `schema`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSchema`] when the schema refers to a name it does not define (possible
    /// for a schema built in code; `Schema::parse_str` already rejects those).
    pub fn new(schema: Schema) -> Result<Self> {
        let names = owned_names(&schema, None)?;
        Ok(AvroEncoder { schema: Arc::new(schema), names: Arc::new(names) })
    }

    /// The schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Appends the encoding of `value` to `buf` (which is left as it was on error).
    ///
    /// # Errors
    ///
    /// [`Error::SchemaMismatch`] when the value does not match the schema;
    /// [`Error::AvroEncode`] when apache-avro cannot encode a decimal.
    pub fn encode_into(&self, value: &Value, buf: &mut Vec<u8>) -> Result<()> {
        self.encode_with_id(value, buf, None)
    }

    pub(crate) fn encode_with_id(&self, value: &Value, buf: &mut Vec<u8>, schema_id: Option<i32>) -> Result<()> {
        encode_datum(value, &self.schema, &self.names, buf, schema_id)
    }
}

impl Encoder<Value> for AvroEncoder {
    fn encode(&self, value: &Value) -> Result<Bytes> {
        let mut buf = Vec::new();
        self.encode_into(value, &mut buf)?;
        Ok(Bytes::from(buf))
    }
}

/// Decodes Avro binary datums written with a known writer schema into [`Value`]s, resolving
/// them to a reader schema when one is given (Avro's schema resolution: fields the writer lacks
/// take the reader's defaults, fields the reader lacks are dropped, types promote).
///
/// Bytes are treated as hostile: every length is checked against the bytes that remain,
/// nesting against [`MAX_NESTING_DEPTH`](crate::MAX_NESTING_DEPTH), and the datum must end
/// exactly at the end of the input ([`Error::MalformedAvro`] otherwise). Arbitrary bytes give an
/// error, never a panic, a stack overflow or an allocation the input does not pay for; decoding
/// and resolution take time linear in the input.
///
/// For a type that implements `serde::Deserialize`, convert the value with
/// `apache_avro::from_value`, or wrap that in a closure, which is a [`Decoder`] of that type.
///
/// ```
/// use apache_avro::{types::Value, Schema};
/// use gregor_serde::{AvroDecoder, Decoder, Error};
///
/// let v1 = Schema::parse_str(r#"{"type":"record","name":"Ping","fields":[{"name":"n","type":"long"}]}"#)
///     .map_err(Error::custom)?;
/// let v2 = Schema::parse_str(r#"{"type":"record","name":"Ping","fields":[{"name":"n","type":"long"},
///     {"name":"from","type":"string","default":"unknown"}]}"#).map_err(Error::custom)?;
/// let avro = AvroDecoder::new(v1, Some(v2))?;
/// let value = avro.decode(&[0xd8, 0x04])?;
/// assert_eq!(
///     value,
///     Value::Record(vec![("n".into(), Value::Long(300)), ("from".into(), Value::String("unknown".into()))])
/// );
/// # Ok::<(), Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct AvroDecoder {
    writer: Arc<Schema>,
    names: Arc<Names>,
    reader: Option<ReaderSchema>,
}

impl AvroDecoder {
    /// A decoder of datums written with `writer_schema`, resolved to `reader_schema` if given
    /// (else returned as written).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSchema`] when a schema refers to a name it does not define.
    pub fn new(writer_schema: Schema, reader_schema: Option<Schema>) -> Result<Self> {
        let names = owned_names(&writer_schema, None)?;
        let reader = reader_schema.map(ReaderSchema::new).transpose()?;
        Ok(AvroDecoder { writer: Arc::new(writer_schema), names: Arc::new(names), reader })
    }

    /// The schema the datums were written with.
    pub fn writer_schema(&self) -> &Schema {
        &self.writer
    }

    /// The schema values are resolved to, if any.
    pub fn reader_schema(&self) -> Option<&Schema> {
        self.reader.as_ref().map(ReaderSchema::schema)
    }
}

impl Decoder<Value> for AvroDecoder {
    fn decode(&self, bytes: &[u8]) -> Result<Value> {
        decode_datum(&self.writer, &self.names, self.reader.as_ref(), bytes, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        let record =
            Schema::parse_str(r#"{"type":"record","name":"Order","namespace":"com.example","fields":[]}"#).unwrap();
        assert_eq!(label(&record), "com.example.Order");
        assert_eq!(label(&Schema::String), "string");
        assert_eq!(label(&Schema::array(Schema::Long)), "array");
        assert_eq!(label(&Schema::parse_str(r#"["null","string"]"#).unwrap()), "union [null, string]");
    }

    #[test]
    fn dangling_reference_is_an_error_at_construction() {
        let schema = Schema::Ref { name: Name::new("com.example.Missing").unwrap() };
        let err = AvroEncoder::new(schema.clone()).unwrap_err();
        assert!(matches!(&err, Error::InvalidSchema { schema, .. } if schema == "com.example.Missing"), "{err:?}");
        assert!(AvroDecoder::new(Schema::Long, Some(schema)).is_err());
    }

    #[test]
    fn encode_into_appends_and_restores_on_error() {
        let avro = AvroEncoder::new(Schema::Long).unwrap();
        let mut buf = vec![0xaa];
        avro.encode_into(&Value::Long(-1), &mut buf).unwrap();
        assert_eq!(buf, [0xaa, 0x01]);
        let err = avro.encode_into(&Value::String("x".into()), &mut buf).unwrap_err();
        assert_eq!(buf, [0xaa, 0x01]);
        assert_eq!(err.to_string(), "value does not match schema long: expected long, found string");
    }

    #[test]
    fn decoder_rejects_what_apache_avro_would_turn_into_null() {
        let schema = Schema::parse_str(
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"b","type":["null","string"]}]}"#,
        )
        .unwrap();
        // a = 1, then the input ends where b's branch index belongs
        let truncated = [0x02];
        let mut rest: &[u8] = &truncated;
        // apache-avro alone makes b null
        let lenient = apache_avro::from_avro_datum(&schema, &mut rest, None).unwrap();
        assert_eq!(
            lenient,
            Value::Record(vec![("a".into(), Value::Long(1)), ("b".into(), Value::Union(0, Box::new(Value::Null)))])
        );
        let err = AvroDecoder::new(schema, None).unwrap().decode(&truncated).unwrap_err();
        assert_eq!(
            err.to_string(),
            "malformed Avro datum for schema R at byte 1: truncated: input ends inside the varint of union branch"
        );
    }

    #[test]
    fn invalid_utf8_in_a_string_is_malformed() {
        let err = AvroDecoder::new(Schema::String, None).unwrap().decode(&[0x02, 0xff]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "malformed Avro datum for schema string at byte 0: string is not valid UTF-8 (valid up to byte 0)"
        );
    }
}

//! The 5-byte schema-id framing and the schema registry the decoder looks ids up in.
//!
//! ```text
//! byte 0      magic byte, always 0x00
//! bytes 1..5  schema id, int32 big-endian
//! bytes 5..   the payload: an Avro binary datum written with that schema
//! ```
//!
//! This is the framing of Confluent's Avro serializers and of the tools built around them, so
//! messages written here can be read there and back, given the same ids.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};

use apache_avro::schema::Schema;
use apache_avro::types::Value;
use bytes::Bytes;

use crate::avro::{self, label, AvroEncoder, ReaderSchema};
use crate::{Decoder, Encoder, Error, Result};

/// The first byte of every schema-id frame.
pub const MAGIC_BYTE: u8 = 0;

/// Length of the schema-id header: the magic byte and the int32 schema id.
pub const HEADER_LEN: usize = 5;

/// The 5-byte header of a frame: [`MAGIC_BYTE`], then `schema_id` big-endian.
///
/// ```
/// assert_eq!(gregor_serde::header(42), [0x00, 0x00, 0x00, 0x00, 0x2a]);
/// ```
pub fn header(schema_id: i32) -> [u8; HEADER_LEN] {
    let id = schema_id.to_be_bytes();
    [MAGIC_BYTE, id[0], id[1], id[2], id[3]]
}

/// Splits a frame into its schema id and payload.
///
/// ```
/// let (id, payload) = gregor_serde::split_header(&[0, 0, 0, 1, 0, 0xd8, 0x04])?;
/// assert_eq!((id, payload), (256, &[0xd8, 0x04][..]));
/// # Ok::<(), gregor_serde::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::BadMagic`] when `frame` does not start with [`MAGIC_BYTE`] (checked first);
/// [`Error::FrameTooShort`] when it is shorter than [`HEADER_LEN`].
pub fn split_header(frame: &[u8]) -> Result<(i32, &[u8])> {
    // the magic byte first: a short message that is not framed at all is reported as such
    if let Some(&found) = frame.first().filter(|&&b| b != MAGIC_BYTE) {
        return Err(Error::BadMagic { found });
    }
    let Some((head, payload)) = frame.split_first_chunk::<HEADER_LEN>() else {
        return Err(Error::FrameTooShort { len: frame.len() });
    };
    Ok((i32::from_be_bytes([head[1], head[2], head[3], head[4]]), payload))
}

/// Where a schema-id framed decoder finds the writer schema of an id.
///
/// Implement it over a remote schema registry with a local cache; [`InMemoryRegistry`] is the
/// in-process one. Lookups happen once per message, so they should be cheap.
pub trait SchemaRegistry: Send + Sync {
    /// The schema registered under `id`, if any.
    fn schema(&self, id: i32) -> Option<Arc<Schema>>;
}

impl<R: SchemaRegistry + ?Sized> SchemaRegistry for Arc<R> {
    fn schema(&self, id: i32) -> Option<Arc<Schema>> {
        (**self).schema(id)
    }
}

impl<R: SchemaRegistry + ?Sized> SchemaRegistry for Box<R> {
    fn schema(&self, id: i32) -> Option<Arc<Schema>> {
        (**self).schema(id)
    }
}

impl<R: SchemaRegistry + ?Sized> SchemaRegistry for &R {
    fn schema(&self, id: i32) -> Option<Arc<Schema>> {
        (**self).schema(id)
    }
}

/// A [`SchemaRegistry`] in memory: ids registered by the application.
///
/// Registration takes `&self`, so a registry shared through an `Arc` can learn new ids while
/// decoders use it. An id, once registered, keeps its schema (as in a schema registry).
///
/// ```
/// use apache_avro::Schema;
/// use gregor_serde::{InMemoryRegistry, SchemaRegistry};
///
/// let registry = InMemoryRegistry::new();
/// registry.register(42, Schema::String)?;
/// registry.register(42, Schema::String)?; // the same schema again: fine
/// assert!(registry.register(42, Schema::Long).is_err());
/// assert_eq!(registry.schema(42).as_deref(), Some(&Schema::String));
/// assert!(registry.schema(7).is_none());
/// # Ok::<(), gregor_serde::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct InMemoryRegistry {
    schemas: RwLock<HashMap<i32, Arc<Schema>>>,
}

impl InMemoryRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `schema` under `id`. Registering the schema an id already holds again does
    /// nothing.
    ///
    /// # Errors
    ///
    /// [`Error::SchemaIdTaken`] when `id` holds a different schema; [`Error::InvalidSchema`]
    /// when the schema refers to a name it does not define.
    pub fn register(&self, id: i32, schema: impl Into<Arc<Schema>>) -> Result<()> {
        let schema = schema.into();
        avro::resolve_names(&schema, Some(id))?;
        let mut schemas = self.schemas.write().unwrap_or_else(PoisonError::into_inner);
        match schemas.get(&id) {
            Some(existing) if **existing == *schema => Ok(()),
            Some(existing) => {
                Err(Error::SchemaIdTaken { schema_id: id, existing: label(existing), new: label(&schema) })
            }
            None => {
                schemas.insert(id, schema);
                Ok(())
            }
        }
    }

    /// How many ids are registered.
    pub fn len(&self) -> usize {
        self.schemas.read().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Whether no id is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl SchemaRegistry for InMemoryRegistry {
    fn schema(&self, id: i32) -> Option<Arc<Schema>> {
        self.schemas.read().unwrap_or_else(PoisonError::into_inner).get(&id).cloned()
    }
}

/// Frames the output of any encoder with the schema-id header.
///
/// It copies the inner encoder's bytes once, behind the header; for Avro,
/// [`FramedAvroEncoder`] writes header and datum into one buffer.
///
/// ```
/// use gregor_serde::{Encoder, SchemaIdFramed, StringEncoder};
///
/// let enc = SchemaIdFramed::new(7, StringEncoder::new());
/// assert_eq!(enc.encode("hi")?, &[0, 0, 0, 0, 7, b'h', b'i'][..]);
/// # Ok::<(), gregor_serde::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct SchemaIdFramed<E> {
    schema_id: i32,
    inner: E,
}

impl<E> SchemaIdFramed<E> {
    /// Frames `inner`'s output with `schema_id`.
    pub fn new(schema_id: i32, inner: E) -> Self {
        SchemaIdFramed { schema_id, inner }
    }

    /// The schema id written in every header.
    pub fn schema_id(&self) -> i32 {
        self.schema_id
    }

    /// The inner encoder.
    pub fn inner(&self) -> &E {
        &self.inner
    }
}

impl<T: ?Sized, E: Encoder<T>> Encoder<T> for SchemaIdFramed<E> {
    fn encode(&self, value: &T) -> Result<Bytes> {
        let payload = self.inner.encode(value)?;
        let mut buf = Vec::with_capacity(HEADER_LEN + payload.len());
        buf.extend_from_slice(&header(self.schema_id));
        buf.extend_from_slice(&payload);
        Ok(Bytes::from(buf))
    }
}

/// Encodes [`Value`]s as schema-id frames: the 5-byte header with the schema's registered id,
/// then the Avro binary datum (see [`AvroEncoder`] for what is checked).
///
/// ```
/// use apache_avro::{types::Value, Schema};
/// use gregor_serde::{Encoder, FramedAvroEncoder};
///
/// let enc = FramedAvroEncoder::new(42, Schema::Long)?;
/// // header: magic 00, id 42 = 00 00 00 2a; datum: zigzag(-1) = 01
/// assert_eq!(enc.encode(&Value::Long(-1))?, &[0x00, 0x00, 0x00, 0x00, 0x2a, 0x01][..]);
/// # Ok::<(), gregor_serde::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct FramedAvroEncoder {
    schema_id: i32,
    avro: AvroEncoder,
}

impl FramedAvroEncoder {
    /// An encoder of datums of `schema`, framed with `schema_id`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSchema`] when the schema refers to a name it does not define.
    pub fn new(schema_id: i32, schema: Schema) -> Result<Self> {
        let avro = AvroEncoder::new(schema).map_err(|e| match e {
            Error::InvalidSchema { schema, source, .. } => {
                Error::InvalidSchema { schema, schema_id: Some(schema_id), source }
            }
            other => other,
        })?;
        Ok(FramedAvroEncoder { schema_id, avro })
    }

    /// The schema id written in every header.
    pub fn schema_id(&self) -> i32 {
        self.schema_id
    }

    /// The schema.
    pub fn schema(&self) -> &Schema {
        self.avro.schema()
    }

    /// Appends the frame of `value` to `buf` (which is left as it was on error).
    ///
    /// # Errors
    ///
    /// [`Error::SchemaMismatch`] when the value does not match the schema;
    /// [`Error::AvroEncode`] when apache-avro cannot encode a decimal.
    pub fn encode_into(&self, value: &Value, buf: &mut Vec<u8>) -> Result<()> {
        let start = buf.len();
        buf.extend_from_slice(&header(self.schema_id));
        self.avro.encode_with_id(value, buf, Some(self.schema_id)).inspect_err(|_| buf.truncate(start))
    }
}

impl Encoder<Value> for FramedAvroEncoder {
    fn encode(&self, value: &Value) -> Result<Bytes> {
        let mut buf = Vec::new();
        self.encode_into(value, &mut buf)?;
        Ok(Bytes::from(buf))
    }
}

/// Decodes schema-id frames: reads the magic byte and the schema id, looks the writer schema up
/// in a [`SchemaRegistry`], decodes the Avro datum with it and, when a reader schema is given,
/// resolves the value to it (so one consumer reads every version of a schema as the one it
/// knows).
///
/// Arbitrary bytes give an error, never a panic (see [`AvroDecoder`](crate::AvroDecoder) for
/// what is checked).
///
/// ```
/// use std::sync::Arc;
/// use apache_avro::{types::Value, Schema};
/// use gregor_serde::{Decoder, FramedAvroDecoder, InMemoryRegistry};
///
/// let registry = Arc::new(InMemoryRegistry::new());
/// registry.register(42, Schema::Long)?;
/// let dec = FramedAvroDecoder::new(registry.clone(), None)?;
/// assert_eq!(dec.decode(&[0x00, 0x00, 0x00, 0x00, 0x2a, 0x01])?, Value::Long(-1));
/// assert_eq!(
///     dec.decode(&[0x00, 0x00, 0x00, 0x00, 0x07, 0x01]).unwrap_err().to_string(),
///     "unknown schema id 7: register it in the schema registry first"
/// );
/// # Ok::<(), gregor_serde::Error>(())
/// ```
pub struct FramedAvroDecoder<R> {
    registry: R,
    reader: Option<ReaderSchema>,
    /// Writer schemas seen, with their named types resolved once; an entry is used while the
    /// registry returns the same `Arc` for its id.
    writers: RwLock<HashMap<i32, Arc<WriterSchema>>>,
}

/// A writer schema and its named types.
struct WriterSchema {
    schema: Arc<Schema>,
    names: avro::Names,
}

impl<R: SchemaRegistry> FramedAvroDecoder<R> {
    /// A decoder that finds writer schemas in `registry` and resolves values to
    /// `reader_schema` if given (else returns them as written).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSchema`] when the reader schema refers to a name it does not define.
    pub fn new(registry: R, reader_schema: Option<Schema>) -> Result<Self> {
        let reader = reader_schema.map(ReaderSchema::new).transpose()?;
        Ok(FramedAvroDecoder { registry, reader, writers: RwLock::default() })
    }

    /// The registry.
    pub fn registry(&self) -> &R {
        &self.registry
    }

    /// The schema values are resolved to, if any.
    pub fn reader_schema(&self) -> Option<&Schema> {
        self.reader.as_ref().map(ReaderSchema::schema)
    }

    /// Decodes a frame and also returns the schema id it carried.
    ///
    /// # Errors
    ///
    /// [`Error::BadMagic`], [`Error::FrameTooShort`], [`Error::UnknownSchemaId`]; then, with the
    /// schema id: [`Error::InvalidSchema`] for a registered schema with dangling references,
    /// [`Error::MalformedAvro`] (and [`Error::AvroDecode`], for a big-decimal) for a payload
    /// that is not a datum of the writer schema, [`Error::SchemaResolution`] when it cannot be
    /// resolved to the reader schema.
    pub fn decode_framed(&self, frame: &[u8]) -> Result<(i32, Value)> {
        let (schema_id, payload) = split_header(frame)?;
        let schema = self.registry.schema(schema_id).ok_or(Error::UnknownSchemaId { schema_id })?;
        let writer = self.writer(schema_id, schema)?;
        let value = avro::decode_datum(&writer.schema, &writer.names, self.reader.as_ref(), payload, Some(schema_id))?;
        Ok((schema_id, value))
    }

    fn writer(&self, schema_id: i32, schema: Arc<Schema>) -> Result<Arc<WriterSchema>> {
        if let Some(cached) = self.writers.read().unwrap_or_else(PoisonError::into_inner).get(&schema_id) {
            if Arc::ptr_eq(&cached.schema, &schema) {
                return Ok(cached.clone());
            }
        }
        let names = avro::owned_names(&schema, Some(schema_id))?;
        let writer = Arc::new(WriterSchema { schema, names });
        self.writers.write().unwrap_or_else(PoisonError::into_inner).insert(schema_id, writer.clone());
        Ok(writer)
    }
}

impl<R: SchemaRegistry> Decoder<Value> for FramedAvroDecoder<R> {
    fn decode(&self, bytes: &[u8]) -> Result<Value> {
        self.decode_framed(bytes).map(|(_, value)| value)
    }
}

impl<R> fmt::Debug for FramedAvroDecoder<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FramedAvroDecoder")
            .field("reader_schema", &self.reader.as_ref().map(|r| label(r.schema())))
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_bytes() {
        assert_eq!(header(42), [0x00, 0x00, 0x00, 0x00, 0x2a]);
        assert_eq!(header(0x0102_0304), [0x00, 0x01, 0x02, 0x03, 0x04]);
        assert_eq!(header(-1), [0x00, 0xff, 0xff, 0xff, 0xff]);
        for id in [0, 1, 42, -1, i32::MIN, i32::MAX] {
            let frame = header(id);
            assert_eq!(split_header(&frame).unwrap(), (id, &[][..]));
        }
    }

    #[test]
    fn short_frames_and_bad_magic() {
        let frame = [0x00, 0x00, 0x00, 0x00, 0x2a, 0x01];
        for len in 0..HEADER_LEN {
            let err = split_header(&frame[..len]).unwrap_err();
            assert!(matches!(err, Error::FrameTooShort { len: l } if l == len), "{err:?}");
        }
        let err = split_header(&[0x01, 0, 0, 0, 0x2a]).unwrap_err();
        assert!(matches!(err, Error::BadMagic { found: 0x01 }));
        // the magic byte is checked first: a short JSON message is reported as unframed, not short
        assert!(matches!(split_header(b"{}").unwrap_err(), Error::BadMagic { found: b'{' }));
    }

    #[test]
    fn framed_closure_encoder() {
        let enc = SchemaIdFramed::new(1, |v: &u8| -> Result<Bytes> { Ok(Bytes::copy_from_slice(&[*v])) });
        assert_eq!(enc.encode(&9).unwrap(), &[0, 0, 0, 0, 1, 9][..]);
        assert_eq!(enc.schema_id(), 1);
    }

    #[test]
    fn registry_through_arc_box_and_ref() {
        let registry = Arc::new(InMemoryRegistry::new());
        registry.register(1, Schema::Long).unwrap();
        assert_eq!(registry.len(), 1);
        assert!(!registry.is_empty());
        let boxed: Box<dyn SchemaRegistry> = Box::new(registry.clone());
        assert!(boxed.schema(1).is_some());
        let dec = FramedAvroDecoder::new(&*registry, None).unwrap();
        assert_eq!(dec.decode(&[0, 0, 0, 0, 1, 0x02]).unwrap(), Value::Long(1));
        assert_eq!(dec.decode_framed(&[0, 0, 0, 0, 1, 0x02]).unwrap(), (1, Value::Long(1)));
        let dec = FramedAvroDecoder::new(boxed, None).unwrap();
        assert_eq!(dec.decode(&[0, 0, 0, 0, 1, 0x03]).unwrap(), Value::Long(-2));
        assert_eq!(format!("{dec:?}"), "FramedAvroDecoder { reader_schema: None, .. }");
    }

    #[test]
    fn errors_name_the_schema_id() {
        let registry = InMemoryRegistry::new();
        registry.register(5, Schema::Long).unwrap();
        let dec = FramedAvroDecoder::new(registry, None).unwrap();
        let err = dec.decode(&[0, 0, 0, 0, 5]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "malformed Avro datum for schema long (schema id 5) at byte 0: truncated: input ends inside the varint of long"
        );
        let err = FramedAvroEncoder::new(5, Schema::Long).unwrap().encode(&Value::Null).unwrap_err();
        assert_eq!(err.to_string(), "value does not match schema long (schema id 5): expected long, found null");
    }
}

//! # gregor-serde
//!
//! Encoders and decoders between application values and the bytes of Kafka message keys and
//! values, for gregor's producers and consumers: Kafka 0.8's `kafka.serializer.Encoder` and
//! `Decoder`, with errors instead of exceptions.
//!
//! * [`Encoder`] / [`Decoder`]: the traits; closures implement them.
//! * [`StringEncoder`] / [`StringDecoder`]: UTF-8 (Kafka's `StringEncoder`, `serializer.encoding`).
//! * [`BytesEncoder`] / [`BytesDecoder`]: bytes unchanged, zero-copy for [`bytes::Bytes`]
//!   (Kafka's `DefaultEncoder`).
//! * [`AvroEncoder`] / [`AvroDecoder`]: Avro binary datums of one schema (apache-avro's
//!   [`Schema`](apache_avro::Schema) and [`Value`](apache_avro::types::Value)), checked against the
//!   schema; decoding resolves to a reader schema when given one. apache-avro parses the schemas
//!   and defines the values; the datums are written, read and resolved here, because its own
//!   reader trusts its input and its resolver takes exponential time on recursive schemas.
//! * [`FramedAvroEncoder`] / [`FramedAvroDecoder`]: the common 5-byte schema-id framing, the
//!   decoder looking writer schemas up in a [`SchemaRegistry`] such as [`InMemoryRegistry`];
//!   [`SchemaIdFramed`] frames any encoder's output.
//!
//! ```text
//!  FramedAvroEncoder::new(42, schema)
//!    Value ── checked against the schema, written ──► 00 | 00 00 00 2a | Avro binary datum
//!                                                     magic  schema id
//!  FramedAvroDecoder::new(registry, Some(reader_schema))
//!    frame ── magic 0? ── id 42 ── registry.schema(42) ── datum read with the writer schema
//!          (every length checked, nesting bounded, must end at the end) ── resolved to the
//!          reader schema ──► Value
//! ```
//!
//! Null keys: Kafka 0.8 has a `NullEncoder` that turns every key into null. Here an encoder
//! always produces bytes, and the producer takes the key as an `Option`: `None` is written as
//! the null key (length -1) without calling the key encoder, and the consumer hands a null key
//! or value out as `None` without calling the decoder. An empty key is not a null key.
//!
//! Decoders treat bytes as hostile: arbitrary input gives an [`Error`], never a panic or an
//! allocation larger than the input warrants.
//!
//! ```
//! use std::sync::Arc;
//!
//! use apache_avro::{types::Value, Schema};
//! use gregor_serde::{Decoder, Encoder, FramedAvroDecoder, FramedAvroEncoder, InMemoryRegistry};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let v1 = Schema::parse_str(
//!     r#"{"type":"record","name":"Click","namespace":"com.example","fields":[
//!         {"name":"page","type":"string"}]}"#,
//! )?;
//! let registry = Arc::new(InMemoryRegistry::new());
//! registry.register(42, v1.clone())?;
//!
//! // the producer's side
//! let encoder = FramedAvroEncoder::new(42, v1)?;
//! let frame = encoder.encode(&Value::Record(vec![("page".into(), Value::String("/".into()))]))?;
//! assert_eq!(&frame[..], [0x00, 0x00, 0x00, 0x00, 0x2a, 0x02, b'/']);
//!
//! // a consumer that knows a later version of the schema
//! let v2 = Schema::parse_str(
//!     r#"{"type":"record","name":"Click","namespace":"com.example","fields":[
//!         {"name":"page","type":"string"},
//!         {"name":"referrer","type":["null","string"],"default":null}]}"#,
//! )?;
//! let decoder = FramedAvroDecoder::new(registry, Some(v2))?;
//! assert_eq!(
//!     decoder.decode(&frame)?,
//!     Value::Record(vec![
//!         ("page".into(), Value::String("/".into())),
//!         ("referrer".into(), Value::Union(0, Box::new(Value::Null))),
//!     ])
//! );
//! # Ok(())
//! # }
//! ```

mod avro;
mod binary;
mod error;
mod framing;
mod string;
mod traits;

pub use avro::read::{MAX_NESTING_DEPTH, MAX_ZERO_WIDTH_ITEMS};
pub use avro::{AvroDecoder, AvroEncoder};
pub use binary::{BytesDecoder, BytesEncoder};
pub use error::{Error, Result};
pub use framing::{
    header, split_header, FramedAvroDecoder, FramedAvroEncoder, InMemoryRegistry, SchemaIdFramed, SchemaRegistry,
    HEADER_LEN, MAGIC_BYTE,
};
pub use string::{StringDecoder, StringEncoder, DEFAULT_SERIALIZER_ENCODING, SERIALIZER_ENCODING};
pub use traits::{Decoder, Encoder};

/// The apache-avro crate this one is built on, so applications name the same `Schema` and
/// `Value` types without depending on a matching version themselves.
pub use apache_avro;

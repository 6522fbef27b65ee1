//! Avro with the 5-byte schema-id framing: a producer writes `Order` v1 under schema id 42, a
//! consumer that knows v2 reads it, and three broken messages show the errors.
//!
//! ```text
//! cargo run --example serde_avro
//! ```

use std::sync::Arc;

use gregor::serde::apache_avro::types::Value;
use gregor::serde::apache_avro::Schema;
use gregor::serde::{Decoder, Encoder, FramedAvroDecoder, FramedAvroEncoder, InMemoryRegistry};

const ORDER_V1: &str = r#"{
  "type": "record", "name": "Order", "namespace": "com.example",
  "fields": [
    {"name": "id",     "type": "string"},
    {"name": "amount", "type": "long"},
    {"name": "note",   "type": ["null", "string"]},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}}
  ]
}"#;

/// v1 plus a field with a default: readers of v2 can read v1 messages.
const ORDER_V2: &str = r#"{
  "type": "record", "name": "Order", "namespace": "com.example",
  "fields": [
    {"name": "id",       "type": "string"},
    {"name": "amount",   "type": "long"},
    {"name": "note",     "type": ["null", "string"]},
    {"name": "status",   "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
    {"name": "currency", "type": "string", "default": "EUR"}
  ]
}"#;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let v1 = Schema::parse_str(ORDER_V1)?;
    let v2 = Schema::parse_str(ORDER_V2)?;

    // the registry both sides agree on (in production: a schema registry client with a cache)
    let registry = Arc::new(InMemoryRegistry::new());
    registry.register(42, v1.clone())?;

    // producer side: values of v1, framed with id 42
    let encoder = FramedAvroEncoder::new(42, v1)?;
    let order = Value::Record(vec![
        ("id".into(), Value::String("A1".into())),
        ("amount".into(), Value::Long(300)),
        ("note".into(), Value::Union(1, Box::new(Value::String("gift wrap".into())))),
        ("status".into(), Value::Enum(1, "PAID".into())),
    ]);
    let frame = encoder.encode(&order)?;
    println!("frame ({} bytes): {}", frame.len(), hex(&frame));
    println!("  header: {}  (magic 0, schema id 42)", hex(&frame[..5]));
    println!("  datum:  {}", hex(&frame[5..]));

    // consumer side, reading as v2: the new field takes its default
    let decoder = FramedAvroDecoder::new(registry.clone(), Some(v2))?;
    let (schema_id, value) = decoder.decode_framed(&frame)?;
    println!("decoded with writer schema {schema_id}, as v2: {value:?}");

    // what goes wrong, and how it is reported
    let bad_value = Value::Record(vec![("id".into(), Value::Long(1))]);
    println!("encode a bad value: {}", encoder.encode(&bad_value).unwrap_err());
    println!("decode unframed:   {}", decoder.decode(b"{\"id\":\"A1\"}").unwrap_err());
    let mut unknown = frame.to_vec();
    unknown[4] = 43;
    println!("decode unknown id: {}", decoder.decode(&unknown).unwrap_err());
    println!("decode truncated:  {}", decoder.decode(&frame[..frame.len() - 3]).unwrap_err());
    Ok(())
}

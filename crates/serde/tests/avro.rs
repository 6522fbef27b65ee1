//! Avro encoding and decoding, plain and schema-id framed, through the public API.

use std::collections::HashMap;
use std::sync::Arc;

use apache_avro::types::Value;
use apache_avro::Schema;
use gregor_serde::{
    AvroDecoder, AvroEncoder, Decoder, Encoder, Error, FramedAvroDecoder, FramedAvroEncoder, InMemoryRegistry,
    MAX_NESTING_DEPTH,
};

const ORDER_V1: &str = r#"{
  "type": "record", "name": "Order", "namespace": "com.example",
  "fields": [
    {"name": "id",     "type": "string"},
    {"name": "amount", "type": "long"},
    {"name": "note",   "type": ["null", "string"]},
    {"name": "tags",   "type": {"type": "array", "items": "string"}},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}}
  ]
}"#;

/// v1 without `tags`, plus `currency` with a default.
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

const NODE: &str = r#"{"type": "record", "name": "Node", "fields": [
    {"name": "value", "type": "int"},
    {"name": "next",  "type": ["null", "Node"]}
]}"#;

fn schema(json: &str) -> Schema {
    Schema::parse_str(json).expect("test schema parses")
}

fn s(v: &str) -> Value {
    Value::String(v.to_owned())
}

/// `{id: "A1", amount: 300, note: "hi", tags: ["x", "yz"], status: PAID}`
fn order() -> Value {
    Value::Record(vec![
        ("id".into(), s("A1")),
        ("amount".into(), Value::Long(300)),
        ("note".into(), Value::Union(1, Box::new(s("hi")))),
        ("tags".into(), Value::Array(vec![s("x"), s("yz")])),
        ("status".into(), Value::Enum(1, "PAID".into())),
    ])
}

/// The Avro binary encoding of [`order`], by hand from the spec.
#[rustfmt::skip]
const ORDER_BYTES: [u8; 17] = [
    0x04, b'A', b'1',   // id: string length 2 = zigzag 4, then "A1"
    0xd8, 0x04,         // amount: 300, zigzag 600 = 0b100_1011000: 0x58 | 0x80 (more), then 0x04
    0x02,               // note: union branch 1 (string) = zigzag 2
    0x04, b'h', b'i',   // note: string length 2, "hi"
    0x04,               // tags: a block of 2 items = zigzag 4
    0x02, b'x',         // tags[0]: length 1, "x"
    0x04, b'y', b'z',   // tags[1]: length 2, "yz"
    0x00,               // tags: end of blocks
    0x02,               // status: enum index 1 (PAID) = zigzag 2
    // (no trailer: a bare datum)
];

/// `{id: "", amount: -1, note: null, tags: [], status: NEW}`
fn empty_order() -> Value {
    Value::Record(vec![
        ("id".into(), s("")),
        ("amount".into(), Value::Long(-1)),
        ("note".into(), Value::Union(0, Box::new(Value::Null))),
        ("tags".into(), Value::Array(vec![])),
        ("status".into(), Value::Enum(0, "NEW".into())),
    ])
}

#[rustfmt::skip]
const EMPTY_ORDER_BYTES: [u8; 5] = [
    0x00, // id: length 0
    0x01, // amount: -1 = zigzag 1
    0x00, // note: union branch 0 (null), nothing follows
    0x00, // tags: no blocks, the end marker alone
    0x00, // status: enum index 0 (NEW)
];

#[test]
fn record_round_trip_with_exact_bytes() {
    let enc = AvroEncoder::new(schema(ORDER_V1)).unwrap();
    let dec = AvroDecoder::new(schema(ORDER_V1), None).unwrap();
    for (value, bytes) in [(order(), &ORDER_BYTES[..]), (empty_order(), &EMPTY_ORDER_BYTES[..])] {
        let encoded = enc.encode(&value).unwrap();
        assert_eq!(&encoded[..], bytes);
        // apache-avro's own writer agrees byte for byte
        assert_eq!(apache_avro::to_avro_datum(&schema(ORDER_V1), value.clone()).unwrap(), bytes);
        assert_eq!(dec.decode(bytes).unwrap(), value);
        assert_eq!(dec.decode_bytes(encoded).unwrap(), value);
    }
}

#[test]
fn values_from_serde_encode() {
    // apache_avro::to_value turns an Option into the union branch it belongs to (null first)
    let note = apache_avro::to_value(Some("hi")).unwrap();
    let tags = apache_avro::to_value(vec!["x", "yz"]).unwrap();
    let value = Value::Record(vec![
        ("id".into(), s("A1")),
        ("amount".into(), Value::Long(300)),
        ("note".into(), note),
        ("tags".into(), tags),
        // an enum may be given by its symbol
        ("status".into(), s("PAID")),
    ]);
    assert_eq!(AvroEncoder::new(schema(ORDER_V1)).unwrap().encode(&value).unwrap(), &ORDER_BYTES[..]);
}

fn mismatch(value: Value) -> (String, String, String) {
    let err = AvroEncoder::new(schema(ORDER_V1)).unwrap().encode(&value).unwrap_err();
    let text = err.to_string();
    match err {
        Error::SchemaMismatch { schema, schema_id: None, path, reason } => {
            assert_eq!(schema, "com.example.Order");
            assert_eq!(text, format!("value does not match schema com.example.Order: at {path}: {reason}"));
            (path, reason, text)
        }
        other => panic!("expected SchemaMismatch, got {other:?}"),
    }
}

fn with_field(name: &str, field: Value) -> Value {
    let Value::Record(mut fields) = order() else { unreachable!() };
    for (n, v) in &mut fields {
        if n == name {
            *v = field.clone();
        }
    }
    Value::Record(fields)
}

#[test]
fn schema_mismatch_names_schema_path_and_reason() {
    let (path, reason, text) = mismatch(with_field("amount", s("300")));
    assert_eq!((path.as_str(), reason.as_str()), (".amount", "expected long, found string"));
    assert_eq!(text, "value does not match schema com.example.Order: at .amount: expected long, found string");

    let (path, reason, _) = mismatch(with_field("tags", Value::Array(vec![s("x"), Value::Long(1)])));
    assert_eq!((path.as_str(), reason.as_str()), (".tags[1]", "expected string, found long"));

    let (path, reason, _) = mismatch(with_field("note", s("hi")));
    assert_eq!(path, ".note");
    assert_eq!(
        reason,
        "expected union [null, string], found string: a union value is Value::Union(branch, value) \
         (or Value::Null for the null branch)"
    );

    let (path, reason, _) = mismatch(with_field("status", s("LOST")));
    assert_eq!(path, ".status");
    assert_eq!(reason, "\"LOST\" is not a symbol of enum com.example.Status (symbols: NEW, PAID, SHIPPED)");

    // the value itself: no path
    let err = AvroEncoder::new(schema(ORDER_V1)).unwrap().encode(&Value::Long(1)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "value does not match schema com.example.Order: expected record com.example.Order, found long"
    );

    let Value::Record(mut fields) = order() else { unreachable!() };
    fields.retain(|(n, _)| n != "tags");
    let err = AvroEncoder::new(schema(ORDER_V1)).unwrap().encode(&Value::Record(fields.clone())).unwrap_err();
    assert_eq!(
        err.to_string(),
        "value does not match schema com.example.Order: missing field \"tags\" of record com.example.Order"
    );

    fields.push(("tags".into(), Value::Array(vec![])));
    fields.push(("extra".into(), Value::Null));
    let err = AvroEncoder::new(schema(ORDER_V1)).unwrap().encode(&Value::Record(fields)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "value does not match schema com.example.Order: record com.example.Order has no field \"extra\""
    );
}

#[test]
fn reader_schema_resolution() {
    let dec = AvroDecoder::new(schema(ORDER_V1), Some(schema(ORDER_V2))).unwrap();
    assert!(dec.reader_schema().is_some());
    let expected = Value::Record(vec![
        ("id".into(), s("A1")),
        ("amount".into(), Value::Long(300)),
        ("note".into(), Value::Union(1, Box::new(s("hi")))),
        ("status".into(), Value::Enum(1, "PAID".into())),
        ("currency".into(), s("EUR")), // the reader's default; `tags` is dropped
    ]);
    assert_eq!(dec.decode(&ORDER_BYTES).unwrap(), expected);

    // a reader field without a default cannot be resolved
    let strict = ORDER_V2.replace(r#""type": "string", "default": "EUR""#, r#""type": "string""#);
    let dec = AvroDecoder::new(schema(ORDER_V1), Some(schema(&strict))).unwrap();
    let err = dec.decode(&ORDER_BYTES).unwrap_err();
    assert!(matches!(&err, Error::SchemaResolution { path, .. } if path.is_empty()), "{err:?}");
    assert_eq!(
        err.to_string(),
        "cannot resolve writer schema com.example.Order to reader schema com.example.Order: \
         the writer's record com.example.Order has no field \"currency\" and the reader's has no default for it"
    );

    // a type that does not promote, deep in the value: the path says where
    let narrower = ORDER_V2.replace(r#"{"name": "amount",   "type": "long"}"#, r#"{"name": "amount", "type": "int"}"#);
    let dec = AvroDecoder::new(schema(ORDER_V1), Some(schema(&narrower))).unwrap();
    assert_eq!(
        dec.decode(&ORDER_BYTES).unwrap_err().to_string(),
        "cannot resolve writer schema com.example.Order to reader schema com.example.Order: \
         at .amount: the writer's long cannot be read as int"
    );
}

fn registry() -> Arc<InMemoryRegistry> {
    let registry = Arc::new(InMemoryRegistry::new());
    registry.register(42, schema(ORDER_V1)).unwrap();
    registry
}

#[test]
fn framed_round_trip_and_exact_header() {
    let enc = FramedAvroEncoder::new(42, schema(ORDER_V1)).unwrap();
    let frame = enc.encode(&order()).unwrap();
    assert_eq!(frame[..5], [0x00, 0x00, 0x00, 0x00, 0x2a]); // magic 0, schema id 42 big-endian
    assert_eq!(frame[5..], ORDER_BYTES);

    let dec = FramedAvroDecoder::new(registry(), None).unwrap();
    assert_eq!(dec.decode(&frame).unwrap(), order());
    assert_eq!(dec.decode_framed(&frame).unwrap(), (42, order()));

    let dec = FramedAvroDecoder::new(registry(), Some(schema(ORDER_V2))).unwrap();
    let Value::Record(fields) = dec.decode(&frame).unwrap() else { panic!("a record") };
    assert_eq!(fields.last(), Some(&("currency".to_owned(), s("EUR"))));

    // the encoder's errors carry the id too
    let err = enc.encode(&with_field("amount", Value::Null)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "value does not match schema com.example.Order (schema id 42): at .amount: expected long, found null"
    );
}

#[test]
fn framing_errors() {
    let dec = FramedAvroDecoder::new(registry(), None).unwrap();
    let mut frame = FramedAvroEncoder::new(42, schema(ORDER_V1)).unwrap().encode(&order()).unwrap().to_vec();

    // every frame shorter than the header
    for len in 0..5 {
        let err = dec.decode(&frame[..len]).unwrap_err();
        assert!(matches!(err, Error::FrameTooShort { len: l } if l == len), "{len}: {err:?}");
        assert_eq!(
            err.to_string(),
            format!("frame of {len} bytes is shorter than the 5-byte schema-id header (magic byte 0, int32 schema id)")
        );
    }
    // a header and a cut datum: every length up to the whole frame
    for len in 5..frame.len() {
        let err = dec.decode(&frame[..len]).unwrap_err();
        assert!(matches!(err, Error::MalformedAvro { schema_id: Some(42), .. }), "{len}: {err:?}");
    }
    // bytes after the datum
    let mut long = frame.clone();
    long.push(0);
    let err = dec.decode(&long).unwrap_err();
    assert_eq!(
        err.to_string(),
        "malformed Avro datum for schema com.example.Order (schema id 42) at byte 17: 1 bytes left after the end of the datum"
    );

    // unknown id
    frame[4] = 43;
    let err = dec.decode(&frame).unwrap_err();
    assert!(matches!(err, Error::UnknownSchemaId { schema_id: 43 }));
    assert_eq!(err.to_string(), "unknown schema id 43: register it in the schema registry first");

    // bad magic
    frame[0] = 0x7b;
    let err = dec.decode(&frame).unwrap_err();
    assert!(matches!(err, Error::BadMagic { found: 0x7b }));
    assert_eq!(
        err.to_string(),
        "expected magic byte 0x00 at the start of a schema-id frame, found 0x7b: was the message written without schema-id framing?"
    );
}

#[test]
fn registry_ids_are_immutable() {
    let registry = registry();
    registry.register(42, schema(ORDER_V1)).unwrap();
    let err = registry.register(42, schema(ORDER_V2)).unwrap_err();
    // same name, different fields: still a different schema
    assert_eq!(
        err.to_string(),
        "schema id 42 already holds schema com.example.Order, cannot register com.example.Order"
    );
    let err = registry.register(42, Schema::Long).unwrap_err();
    assert!(matches!(err, Error::SchemaIdTaken { schema_id: 42, .. }));
    assert_eq!(registry.len(), 1);
}

#[test]
fn hostile_payloads_are_errors() {
    let dec = AvroDecoder::new(schema(NODE), None).unwrap();
    // 100 000 nested nodes in 200 KB: apache-avro alone would overflow the stack
    let mut deep = [0x00, 0x02].repeat(100_000);
    deep.extend_from_slice(&[0x00, 0x00]);
    let err = dec.decode(&deep).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("malformed Avro datum for schema Node at byte 128: values nest deeper than {MAX_NESTING_DEPTH} levels")
    );

    // a string claiming 2^62 bytes; an array claiming 2^62 items
    let dec = AvroDecoder::new(schema(ORDER_V1), None).unwrap();
    let huge = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01];
    let err = dec.decode(&huge).unwrap_err();
    assert_eq!(
        err.to_string(),
        "malformed Avro datum for schema com.example.Order at byte 0: truncated: string of 4611686018427387904 bytes, 0 remain"
    );
    let mut bytes = vec![0x00, 0x00, 0x00];
    bytes.extend_from_slice(&huge);
    assert!(matches!(dec.decode(&bytes).unwrap_err(), Error::MalformedAvro { offset: 13, .. }));
}

#[test]
fn deepest_accepted_value_decodes_on_a_small_stack() {
    // the nesting bound leaves the recursive reader, resolver and writer room on a quarter of the
    // default 2 MiB thread stack, in a debug build (they need under 384 KiB there, under 100 KiB
    // in a release build); and resolution is linear (apache-avro's Value::resolve doubles its
    // work at every level of this list: 20 nodes take seconds, these 63 would take years)
    let nodes = MAX_NESTING_DEPTH / 2 - 1;
    let mut bytes = [0x00, 0x02].repeat(nodes);
    bytes.extend_from_slice(&[0x00, 0x00]);
    let handle = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(move || {
            let dec = AvroDecoder::new(schema(NODE), Some(schema(NODE))).unwrap();
            let value = dec.decode(&bytes).unwrap();
            let reencoded = AvroEncoder::new(schema(NODE)).unwrap().encode(&value).unwrap();
            assert_eq!(reencoded, bytes);
        })
        .unwrap();
    handle.join().unwrap();
}

/// Every Avro type, for the random-input test.
const KITCHEN_SINK: &str = r#"{
  "type": "record", "name": "Sink", "namespace": "t",
  "fields": [
    {"name": "b",    "type": "boolean"},
    {"name": "i",    "type": "int"},
    {"name": "l",    "type": "long"},
    {"name": "f",    "type": "float"},
    {"name": "d",    "type": "double"},
    {"name": "by",   "type": "bytes"},
    {"name": "s",    "type": "string"},
    {"name": "fx",   "type": {"type": "fixed", "name": "F3", "size": 3}},
    {"name": "e",    "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
    {"name": "u",    "type": ["null", "long", "string", "F3"]},
    {"name": "a",    "type": {"type": "array", "items": ["null", "int"]}},
    {"name": "m",    "type": {"type": "map", "values": "E"}},
    {"name": "n",    "type": {"type": "array", "items": "null"}},
    {"name": "date", "type": {"type": "int", "logicalType": "date"}},
    {"name": "ts",   "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "dec",  "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
    {"name": "uuid", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "list", "type": ["null", {"type": "record", "name": "L", "fields": [
        {"name": "v", "type": "int"}, {"name": "next", "type": ["null", "L"]}]}]}
  ]
}"#;

/// A value of [`KITCHEN_SINK`].
fn kitchen_sink() -> Value {
    let node = |v: i32, next: Value| Value::Record(vec![("v".into(), Value::Int(v)), ("next".into(), next)]);
    let null = || Value::Union(0, Box::new(Value::Null));
    Value::Record(vec![
        ("b".into(), Value::Boolean(true)),
        ("i".into(), Value::Int(-7)),
        ("l".into(), Value::Long(1 << 40)),
        ("f".into(), Value::Float(1.5)),
        ("d".into(), Value::Double(-0.25)),
        ("by".into(), Value::Bytes(vec![0, 0xff])),
        ("s".into(), s("héllo")),
        ("fx".into(), Value::Fixed(3, vec![1, 2, 3])),
        ("e".into(), Value::Enum(1, "B".into())),
        ("u".into(), Value::Union(3, Box::new(Value::Fixed(3, vec![4, 5, 6])))),
        ("a".into(), Value::Array(vec![null(), Value::Union(1, Box::new(Value::Int(3)))])),
        ("m".into(), Value::Map([("k".to_owned(), Value::Enum(0, "A".into()))].into())),
        ("n".into(), Value::Array(vec![Value::Null, Value::Null])),
        ("date".into(), Value::Date(19_000)),
        ("ts".into(), Value::TimestampMillis(1_700_000_000_000)),
        ("dec".into(), Value::Decimal(apache_avro::Decimal::from(vec![0x01, 0x00]))),
        ("uuid".into(), Value::Uuid(apache_avro::Uuid::parse_str("67e55044-10b1-426f-9247-bb680e5fe0c8").unwrap())),
        ("list".into(), Value::Union(1, Box::new(node(1, Value::Union(1, Box::new(node(2, null()))))))),
    ])
}

/// Equality with floats compared bit for bit (random bytes decode to NaNs).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        (Value::Double(x), Value::Double(y)) => x.to_bits() == y.to_bits(),
        (Value::Union(i, x), Value::Union(j, y)) => i == j && same(x, y),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        (Value::Record(x), Value::Record(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((n, v), (m, w))| n == m && same(v, w))
        }
        _ => a == b,
    }
}

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

#[test]
fn never_panics_on_arbitrary_bytes() {
    let registry = Arc::new(InMemoryRegistry::new());
    let schemas = [schema(ORDER_V1), schema(NODE), schema(KITCHEN_SINK), Schema::String, schema(r#"["null","long"]"#)];
    for (id, s) in schemas.iter().enumerate() {
        registry.register(id as i32, s.clone()).unwrap();
    }
    let framed = FramedAvroDecoder::new(registry.clone(), None).unwrap();
    let resolving = FramedAvroDecoder::new(registry.clone(), Some(schema(ORDER_V2))).unwrap();
    let plain: Vec<AvroDecoder> = schemas.iter().map(|s| AvroDecoder::new(s.clone(), None).unwrap()).collect();
    // resolution to the writer schema itself must change nothing
    let identity: Vec<AvroDecoder> =
        schemas.iter().map(|s| AvroDecoder::new(s.clone(), Some(s.clone())).unwrap()).collect();
    let encoders: Vec<AvroEncoder> = schemas.iter().map(|s| AvroEncoder::new(s.clone()).unwrap()).collect();

    // valid seeds to mutate
    let sink = encoders[2].encode(&kitchen_sink()).unwrap().to_vec();
    assert_eq!(plain[2].decode(&sink).unwrap(), kitchen_sink());
    let seeds: Vec<(usize, Vec<u8>)> = vec![
        (0, ORDER_BYTES.to_vec()),
        (0, EMPTY_ORDER_BYTES.to_vec()),
        (1, vec![0x02, 0x02, 0x04, 0x00, 0x00]),
        (2, sink),
    ];

    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut decoded = [0usize; 5];
    for round in 0..30_000 {
        let (id, payload) = match round % 3 {
            // random bytes
            0 => (rng.below(schemas.len()), {
                let len = rng.below(48);
                rng.bytes(len)
            }),
            // a valid datum with a few bytes changed, cut or added
            1 => {
                let (id, mut bytes) = seeds[rng.below(seeds.len())].clone();
                for _ in 0..=rng.below(3) {
                    match rng.below(3) {
                        0 if !bytes.is_empty() => {
                            let at = rng.below(bytes.len());
                            bytes[at] = rng.next() as u8;
                        }
                        1 if !bytes.is_empty() => bytes.truncate(rng.below(bytes.len())),
                        _ => {
                            let at = rng.below(bytes.len() + 1);
                            bytes.insert(at, rng.next() as u8);
                        }
                    }
                }
                (id, bytes)
            }
            // mostly small varints, which decode further into the schema
            _ => (rng.below(schemas.len()), (0..rng.below(64)).map(|_| (rng.next() % 8) as u8).collect()),
        };

        let plain_result = plain[id].decode(&payload);
        let mut frame = gregor_serde::header(id as i32).to_vec();
        frame.extend_from_slice(&payload);
        let framed_result = framed.decode(&frame);
        assert_eq!(plain_result.is_ok(), framed_result.is_ok());
        let _ = resolving.decode(&frame);
        // random frames: random magic, random ids
        let _ = framed.decode(&payload);

        let identity_result = identity[id].decode(&payload);
        assert_eq!(plain_result.is_ok(), identity_result.is_ok());
        if let (Ok(a), Ok(b)) = (&plain_result, &identity_result) {
            assert!(same(a, b), "{a:?} resolved to {b:?}");
        }

        if let Ok(value) = plain_result {
            decoded[id] += 1;
            // what decodes re-encodes, and then round-trips to the same bytes
            let bytes = encoders[id].encode(&value).unwrap_or_else(|e| panic!("{e}: {value:?}"));
            let again = plain[id].decode(&bytes).unwrap();
            assert_eq!(encoders[id].encode(&again).unwrap(), bytes);
        }
    }
    // the loop reached the decoder, not only the error paths
    assert!(decoded.iter().all(|&n| n > 0), "decoded per schema: {decoded:?}");
}

#[test]
fn trait_objects() {
    let enc: Box<dyn Encoder<Value>> = Box::new(FramedAvroEncoder::new(42, schema(ORDER_V1)).unwrap());
    let dec: Box<dyn Decoder<Value>> = Box::new(FramedAvroDecoder::new(registry(), None).unwrap());
    assert_eq!(dec.decode(&enc.encode(&order()).unwrap()).unwrap(), order());
    let _ = HashMap::<i32, Box<dyn Decoder<Value>>>::new();
}

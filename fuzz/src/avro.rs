//! Schemas and invariants of the `gregor-serde` targets (`avro_datum`, `avro_schema`,
//! `avro_framed`).
//!
//! For any bytes and any schema the Avro decoder must return a value or an error, never panic,
//! overflow the stack or allocate what the input does not pay for; and what it returns must
//! hold up:
//!
//! * resolving to the writer schema itself changes nothing (same value, same error or not);
//! * a decoded value re-encodes with the writer schema and decodes back to itself, and encoding
//!   it again gives bytes of the same length (the same bytes but for the order of map entries,
//!   a hash order) that decode to it too;
//! * a value resolved to a reader schema is a valid value of the reader schema (it encodes).

use std::sync::{Arc, OnceLock};

use gregor_serde::apache_avro::types::Value;
use gregor_serde::apache_avro::Schema;
use gregor_serde::{AvroDecoder, AvroEncoder, Decoder, Encoder};

/// Writer schemas of the fixed-schema targets: every Avro type and logical type, recursion,
/// unions at the top, items that take no bytes.
pub const WRITERS: &[&str] = &[
    // 0: every type and logical type in one record
    r#"{"type":"record","name":"All","namespace":"fuzz","fields":[
        {"name":"n","type":"null"},
        {"name":"b","type":"boolean"},
        {"name":"i","type":"int"},
        {"name":"l","type":"long"},
        {"name":"f","type":"float"},
        {"name":"d","type":"double"},
        {"name":"by","type":"bytes"},
        {"name":"s","type":"string"},
        {"name":"e","type":{"type":"enum","name":"Color","symbols":["RED","GREEN","BLUE"]}},
        {"name":"fx","type":{"type":"fixed","name":"Four","size":4}},
        {"name":"a","type":{"type":"array","items":"long"}},
        {"name":"m","type":{"type":"map","values":"string"}},
        {"name":"u","type":["null","string","long","Color"]},
        {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
        {"name":"decf","type":{"type":"fixed","name":"DecF","size":8,"logicalType":"decimal","precision":18,"scale":3}},
        {"name":"uuid","type":{"type":"string","logicalType":"uuid"}},
        {"name":"date","type":{"type":"int","logicalType":"date"}},
        {"name":"tms","type":{"type":"int","logicalType":"time-millis"}},
        {"name":"tus","type":{"type":"long","logicalType":"time-micros"}},
        {"name":"tsm","type":{"type":"long","logicalType":"timestamp-millis"}},
        {"name":"tsu","type":{"type":"long","logicalType":"timestamp-micros"}},
        {"name":"ltsm","type":{"type":"long","logicalType":"local-timestamp-millis"}},
        {"name":"ltsu","type":{"type":"long","logicalType":"local-timestamp-micros"}},
        {"name":"dur","type":{"type":"fixed","name":"Dur","size":12,"logicalType":"duration"}},
        {"name":"nested","type":{"type":"array","items":{"type":"map","values":["null",
            {"type":"record","name":"Inner","fields":[{"name":"x","type":"int"},{"name":"c","type":"Color"}]}]}}}
    ]}"#,
    // 1: a linked list (recursion through a union)
    r#"{"type":"record","name":"Node","fields":[
        {"name":"value","type":"long"},
        {"name":"next","type":["null","Node"]}
    ]}"#,
    // 2: a tree (recursion through an array)
    r#"{"type":"record","name":"Tree","fields":[
        {"name":"label","type":"string"},
        {"name":"kids","type":{"type":"array","items":"Tree"}}
    ]}"#,
    // 3: a union at the top
    r#"["null","int","string",{"type":"array","items":"bytes"},{"type":"map","values":"double"},"float","boolean"]"#,
    // 4: items that take no bytes
    r#"{"type":"array","items":{"type":"array","items":"null"}}"#,
    // 5: a map of empty records and zero-size fixeds
    r#"{"type":"map","values":["null",{"type":"record","name":"Empty","fields":[]},{"type":"fixed","name":"Zero","size":0}]}"#,
    // 6: a big decimal and bytes
    r#"{"type":"record","name":"Big","fields":[
        {"name":"bd","type":{"type":"bytes","logicalType":"big-decimal"}},
        {"name":"raw","type":"bytes"}
    ]}"#,
];

/// Reader schemas, one per writer: schema evolution each way Avro allows (fields dropped,
/// added with defaults, reordered; int/long/float promoted; string and bytes swapped; enum
/// symbols added, with a default; union branches reordered, a branch resolved from a non-union).
pub const READERS: &[&str] = &[
    r#"{"type":"record","name":"All","namespace":"fuzz","fields":[
        {"name":"s","type":"bytes"},
        {"name":"by","type":"string"},
        {"name":"i","type":"double"},
        {"name":"l","type":"float"},
        {"name":"f","type":"double"},
        {"name":"e","type":{"type":"enum","name":"Color","symbols":["BLUE","GREEN","YELLOW","RED"],"default":"YELLOW"}},
        {"name":"a","type":{"type":"array","items":"double"}},
        {"name":"m","type":{"type":"map","values":["null","bytes"]}},
        {"name":"u","type":["long","Color","string","null"]},
        {"name":"added","type":"string","default":"x"},
        {"name":"added_rec","type":{"type":"record","name":"Added","fields":[{"name":"q","type":"int","default":7}]},"default":{"q":1}},
        {"name":"fx","type":{"type":"fixed","name":"Four","size":4}},
        {"name":"nested","type":{"type":"array","items":{"type":"map","values":["null",
            {"type":"record","name":"Inner","fields":[{"name":"c","type":"Color"},{"name":"y","type":"long","default":-1}]}]}}}
    ]}"#,
    r#"{"type":"record","name":"Node","fields":[
        {"name":"value","type":"double"},
        {"name":"next","type":["null","Node"]},
        {"name":"seen","type":"boolean","default":false}
    ]}"#,
    r#"{"type":"record","name":"Tree","fields":[
        {"name":"kids","type":{"type":"array","items":"Tree"}},
        {"name":"label","type":"bytes"}
    ]}"#,
    r#"["string","null",{"type":"map","values":"double"},"double","long",{"type":"array","items":"string"},"boolean"]"#,
    r#"{"type":"array","items":["null",{"type":"array","items":"null"}]}"#,
    r#"{"type":"map","values":[{"type":"fixed","name":"Zero","size":0},{"type":"record","name":"Empty","fields":[{"name":"z","type":"int","default":0}]},"null"]}"#,
    r#"{"type":"record","name":"Big","fields":[
        {"name":"raw","type":"string"},
        {"name":"bd","type":{"type":"bytes","logicalType":"big-decimal"}}
    ]}"#,
];

/// Parses one of the schemas above.
pub fn schema(json: &str) -> Schema {
    Schema::parse_str(json).unwrap_or_else(|e| panic!("fuzz schema does not parse: {e}\n{json}"))
}

/// Equality of values, with floats compared bit for bit (a NaN is not equal to itself) and maps
/// as maps (their `Debug` order is a hash order).
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        (Value::Double(x), Value::Double(y)) => x.to_bits() == y.to_bits(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        (Value::Record(x), Value::Record(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((m, x), (n, y))| m == n && same(x, y))
        }
        (Value::Union(i, x), Value::Union(j, y)) => i == j && same(x, y),
        _ => a == b,
    }
}

/// The decoders and encoders [`check_datum`] uses for one writer schema (and reader schema):
/// built once per schema, as an application builds them.
pub struct Codecs {
    plain: AvroDecoder,
    itself: AvroDecoder,
    encoder: AvroEncoder,
    /// The decoder resolving to the reader schema, and an encoder of the reader schema.
    evolved: Option<(AvroDecoder, AvroEncoder)>,
}

impl Codecs {
    /// The codecs of `writer` (and `reader`); `None` when gregor cannot use the writer schema
    /// (a dangling reference), after checking it refuses it as a reader schema too.
    pub fn new(writer: &Schema, reader: Option<&Schema>) -> Option<Codecs> {
        let Ok(plain) = AvroDecoder::new(writer.clone(), None) else {
            assert!(AvroDecoder::new(writer.clone(), Some(writer.clone())).is_err());
            return None;
        };
        let itself =
            AvroDecoder::new(writer.clone(), Some(writer.clone())).expect("a usable schema resolves to itself");
        let encoder = AvroEncoder::new(writer.clone()).expect("a schema that decodes encodes");
        let evolved = reader.and_then(|reader| {
            let resolver = AvroDecoder::new(writer.clone(), Some(reader.clone())).ok()?;
            Some((resolver, AvroEncoder::new(reader.clone()).expect("a usable reader schema encodes")))
        });
        Some(Codecs { plain, itself, encoder, evolved })
    }
}

/// Checks a decode of `datum` with `writer` (and `reader`, if any) against the invariants in
/// the module docs; returns the value as written, if it decoded.
pub fn check_datum(writer: &Schema, reader: Option<&Schema>, datum: &[u8]) -> Option<Value> {
    check_with(&Codecs::new(writer, reader)?, datum)
}

/// [`check_datum`] with codecs built beforehand.
pub fn check_with(codecs: &Codecs, datum: &[u8]) -> Option<Value> {
    let decoded = codecs.plain.decode(datum);
    match (&decoded, codecs.itself.decode(datum)) {
        (Ok(a), Ok(b)) => assert!(same(a, &b), "resolving to the writer schema changed {a:?} into {b:?}"),
        (Err(_), Err(_)) => {}
        (a, b) => panic!("decoding as written gave {a:?}, resolved to itself {b:?}"),
    }
    if let (Some((resolver, reader_encoder)), Ok(_)) = (&codecs.evolved, &decoded) {
        if let Ok(resolved) = resolver.decode(datum) {
            if let Err(e) = reader_encoder.encode(&resolved) {
                panic!("a value resolved to the reader schema does not encode with it: {e}\n{resolved:?}");
            }
        }
    }
    let value = decoded.ok()?;
    let enc = &codecs.encoder;
    let bytes = enc.encode(&value).unwrap_or_else(|e| panic!("a decoded value does not re-encode: {e}\n{value:?}"));
    let again =
        codecs.plain.decode(&bytes).unwrap_or_else(|e| panic!("the re-encoding does not decode: {e}\n{value:?}"));
    assert!(same(&value, &again), "decode(encode(v)) != v: {value:?} vs {again:?}");
    // the same value encodes to the same bytes, but for the order of map entries (a hash order)
    let bytes2 = enc.encode(&again).expect("encodes");
    assert_eq!(bytes2.len(), bytes.len(), "two encodings of one value differ in length");
    assert!(same(&codecs.plain.decode(&bytes2).expect("decodes"), &value), "the second round trip changed the value");
    Some(value)
}

/// The codecs of [`WRITERS`] as written (`.0`) and with their [`READERS`] (`.1`), built once per
/// process.
pub fn fixed_codecs() -> &'static [(Codecs, Codecs)] {
    static CODECS: OnceLock<Vec<(Codecs, Codecs)>> = OnceLock::new();
    CODECS.get_or_init(|| {
        writers()
            .iter()
            .map(|(w, r)| (Codecs::new(w, None).expect("usable"), Codecs::new(w, Some(r)).expect("usable")))
            .collect()
    })
}

/// Whether apache-avro 0.17 can parse `json` without panicking: every name, namespace, alias
/// and type reference must be a valid Avro name. `Schema::parse_str` of 0.17.0 to 0.21.0
/// `unwrap`s the validation of those (apache/avro-rs issues #496 and #547) instead of returning
/// its error, so schema text with an invalid name aborts the process. gregor-serde never parses
/// schema text (applications do, then hand it a `Schema`); the `avro_schema` target skips such
/// text to reach gregor's own code.
pub fn parses_without_panic(json: &str) -> bool {
    fn name_ok(s: &str) -> bool {
        s.split('.').all(|part| {
            let mut chars = part.chars();
            chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    }
    fn walk(v: &serde_json::Value) -> bool {
        match v {
            serde_json::Value::String(s) => s.is_empty() || name_ok(s),
            serde_json::Value::Array(items) => items.iter().all(walk),
            serde_json::Value::Object(map) => {
                map.iter().all(|(k, v)| matches!(k.as_str(), "default" | "doc" | "logicalType" | "symbols") || walk(v))
            }
            _ => true,
        }
    }
    serde_json::from_str::<serde_json::Value>(json).is_ok_and(|v| walk(&v))
}

/// The schemas of [`WRITERS`], parsed once per process.
pub fn writers() -> &'static [(Arc<Schema>, Arc<Schema>)] {
    static SCHEMAS: OnceLock<Vec<(Arc<Schema>, Arc<Schema>)>> = OnceLock::new();
    SCHEMAS
        .get_or_init(|| WRITERS.iter().zip(READERS).map(|(w, r)| (Arc::new(schema(w)), Arc::new(schema(r)))).collect())
}

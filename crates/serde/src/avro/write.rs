//! Validates a [`Value`] against a schema and writes its Avro binary encoding, in one pass.
//!
//! apache-avro's own writer (0.17) is not used for the datum: its validation accepts values its
//! encoder then writes wrongly (`to_avro_datum` writes a bare `Value::Long(1)` for a
//! `["null","long"]` union as `02`, without the branch index; a `Value::Float` for a `double` as
//! 4 bytes; `Value::Enum(5, "Z")` for a one-symbol enum with a default as `0a`), and it logs the
//! whole value at error level when validation fails. This writer checks every value against its
//! schema as it writes it and reports where in the value a mismatch is.

use std::borrow::{Borrow, Cow};
use std::collections::HashMap;

use apache_avro::schema::{Name, Namespace, RecordSchema, Schema};
use apache_avro::types::Value;

use super::{format_path, Seg};

/// What went wrong.
#[derive(Debug)]
pub(crate) enum Problem {
    Mismatch(String),
    /// Boxed: the error is 256 bytes, and every result in the recursive writer would carry it.
    Avro(Box<apache_avro::Error>),
}

/// A failure with the path to it.
#[derive(Debug)]
pub(crate) struct WriteError {
    /// Innermost segment first.
    path: Vec<Seg>,
    pub(crate) problem: Problem,
}

impl WriteError {
    fn mismatch(reason: impl Into<String>) -> Self {
        WriteError { path: Vec::new(), problem: Problem::Mismatch(reason.into()) }
    }

    fn at(mut self, seg: Seg) -> Self {
        self.path.push(seg);
        self
    }

    /// The path in the value, outermost first: `.tags[2]`, `.attrs["k"]`; empty for the root.
    pub(crate) fn path(&self) -> String {
        format_path(&self.path)
    }
}

type WResult = Result<(), WriteError>;

/// Appends the Avro binary encoding of `value` to `buf`. On error `buf` may hold a partial
/// encoding: the caller truncates it.
pub(crate) fn write_datum<S: Borrow<Schema>>(
    value: &Value,
    schema: &Schema,
    names: &HashMap<Name, S>,
    buf: &mut Vec<u8>,
) -> WResult {
    Writer { names }.value(value, schema, &None, buf)
}

struct Writer<'n, S> {
    names: &'n HashMap<Name, S>,
}

/// Zigzag varint, as Avro writes `int` and `long`.
pub(crate) fn put_long(buf: &mut Vec<u8>, n: i64) {
    let mut z = ((n << 1) ^ (n >> 63)) as u64;
    while z > 0x7f {
        buf.push((z as u8 & 0x7f) | 0x80);
        z >>= 7;
    }
    buf.push(z as u8);
}

fn put_len(buf: &mut Vec<u8>, len: usize) {
    // a length always fits in an i64 on the platforms Rust supports
    put_long(buf, i64::try_from(len).unwrap_or(i64::MAX));
}

fn put_bytes(buf: &mut Vec<u8>, bytes: &[u8]) {
    put_len(buf, bytes.len());
    buf.extend_from_slice(bytes);
}

impl<S: Borrow<Schema>> Writer<'_, S> {
    /// Writes one value. References and union branches are followed in a loop here rather than
    /// by recursion, and the types that nest have their own functions, kept out of line: a
    /// level of nesting costs two small stack frames.
    fn value(&self, value: &Value, schema: &Schema, ns: &Namespace, buf: &mut Vec<u8>) -> WResult {
        let (mut value, mut schema, mut ns) = (value, schema, Cow::Borrowed(ns));
        loop {
            match (value, schema) {
                (_, Schema::Ref { name }) => {
                    let fq = name.fully_qualified_name(&ns);
                    let Some(resolved) = self.names.get(&fq) else {
                        return Err(WriteError::mismatch(format!("unresolved schema reference {}", fq.fullname(None))));
                    };
                    (schema, ns) = (resolved.borrow(), Cow::Owned(fq.namespace));
                }
                (Value::Union(branch, inner), Schema::Union(union)) => {
                    let variants = union.variants();
                    let Some(variant) = variants.get(*branch as usize) else {
                        return Err(WriteError::mismatch(format!(
                            "union branch {branch} out of range: {} has {} branches",
                            describe(schema),
                            variants.len()
                        )));
                    };
                    put_long(buf, i64::from(*branch));
                    (value, schema) = (inner, variant);
                }
                _ => break,
            }
        }
        match (value, schema) {
            (Value::Record(fields), Schema::Record(record)) => self.record(fields, record, &ns, buf),
            (Value::Array(items), Schema::Array(array)) => self.array(items, &array.items, &ns, buf),
            (Value::Map(entries), Schema::Map(map)) => self.map(entries, &map.types, &ns, buf),
            _ => leaf(value, schema, buf),
        }
    }

    #[inline(never)]
    fn record(&self, fields: &[(String, Value)], record: &RecordSchema, ns: &Namespace, buf: &mut Vec<u8>) -> WResult {
        let record_ns = record.name.fully_qualified_name(ns).namespace;
        for (name, _) in fields {
            let known = record
                .fields
                .iter()
                .any(|f| &f.name == name || f.aliases.as_ref().is_some_and(|a| a.iter().any(|a| a == name)));
            if !known {
                return Err(WriteError::mismatch(format!(
                    "record {} has no field {name:?}",
                    record.name.fullname(None)
                )));
            }
        }
        for field in &record.fields {
            let found = fields.iter().find(|(n, _)| n == &field.name).or_else(|| {
                let aliases = field.aliases.as_ref()?;
                fields.iter().find(|(n, _)| aliases.iter().any(|a| a == n))
            });
            let Some((_, field_value)) = found else {
                return Err(WriteError::mismatch(format!(
                    "missing field {:?} of record {}",
                    field.name,
                    record.name.fullname(None)
                )));
            };
            self.value(field_value, &field.schema, &record_ns, buf)
                .map_err(|e| e.at(Seg::Field(field.name.clone())))?;
        }
        Ok(())
    }

    #[inline(never)]
    fn array(&self, items: &[Value], item_schema: &Schema, ns: &Namespace, buf: &mut Vec<u8>) -> WResult {
        if !items.is_empty() {
            put_len(buf, items.len());
            for (i, item) in items.iter().enumerate() {
                self.value(item, item_schema, ns, buf).map_err(|e| e.at(Seg::Index(i)))?;
            }
        }
        buf.push(0);
        Ok(())
    }

    #[inline(never)]
    fn map(
        &self,
        entries: &HashMap<String, Value>,
        value_schema: &Schema,
        ns: &Namespace,
        buf: &mut Vec<u8>,
    ) -> WResult {
        if !entries.is_empty() {
            put_len(buf, entries.len());
            for (key, item) in entries {
                put_bytes(buf, key.as_bytes());
                self.value(item, value_schema, ns, buf).map_err(|e| e.at(Seg::Key(key.clone())))?;
            }
        }
        buf.push(0);
        Ok(())
    }
}

/// Everything that does not nest: primitives, named leaves, logical types, and the mismatches.
#[inline(never)]
fn leaf(value: &Value, schema: &Schema, buf: &mut Vec<u8>) -> WResult {
    use Schema as S;
    use Value as V;

    match (value, schema) {
        (V::Null, S::Union(union)) => match union.variants().iter().position(|s| matches!(s, S::Null)) {
            Some(branch) => {
                put_len(buf, branch);
                Ok(())
            }
            None => Err(WriteError::mismatch(format!("expected {}, found null", describe(schema)))),
        },
        (_, S::Union(_)) => Err(WriteError::mismatch(format!(
            "expected {}, found {}: a union value is Value::Union(branch, value) (or Value::Null for \
                 the null branch)",
            describe(schema),
            kind(value)
        ))),

        // primitives
        (V::Null, S::Null) => Ok(()),
        (V::Boolean(b), S::Boolean) => {
            buf.push(u8::from(*b));
            Ok(())
        }
        (V::Int(n), S::Int | S::Long | S::Date | S::TimeMillis)
        | (V::Date(n), S::Date | S::Int)
        | (V::TimeMillis(n), S::TimeMillis | S::Int) => {
            put_long(buf, i64::from(*n));
            Ok(())
        }
        (
            V::Long(n),
            S::Long
            | S::TimeMicros
            | S::TimestampMillis
            | S::TimestampMicros
            | S::TimestampNanos
            | S::LocalTimestampMillis
            | S::LocalTimestampMicros
            | S::LocalTimestampNanos,
        )
        | (V::TimeMicros(n), S::TimeMicros | S::Long)
        | (V::TimestampMillis(n), S::TimestampMillis | S::Long)
        | (V::TimestampMicros(n), S::TimestampMicros | S::Long)
        | (V::TimestampNanos(n), S::TimestampNanos | S::Long)
        | (V::LocalTimestampMillis(n), S::LocalTimestampMillis | S::Long)
        | (V::LocalTimestampMicros(n), S::LocalTimestampMicros | S::Long)
        | (V::LocalTimestampNanos(n), S::LocalTimestampNanos | S::Long) => {
            put_long(buf, *n);
            Ok(())
        }
        (V::Float(x), S::Float) => {
            buf.extend_from_slice(&x.to_le_bytes());
            Ok(())
        }
        // Avro promotes float to double
        (V::Float(x), S::Double) => {
            buf.extend_from_slice(&f64::from(*x).to_le_bytes());
            Ok(())
        }
        (V::Double(x), S::Double) => {
            buf.extend_from_slice(&x.to_le_bytes());
            Ok(())
        }
        (V::Bytes(b), S::Bytes) => {
            put_bytes(buf, b);
            Ok(())
        }
        (V::String(s), S::String) => {
            put_bytes(buf, s.as_bytes());
            Ok(())
        }

        // named types
        (V::Bytes(b), S::Fixed(f)) | (V::Fixed(_, b), S::Fixed(f)) => {
            let declared = match value {
                V::Fixed(n, _) => *n,
                _ => b.len(),
            };
            if declared != f.size || b.len() != f.size {
                return Err(WriteError::mismatch(format!(
                    "fixed {} holds {} bytes, the value has {}",
                    f.name.fullname(None),
                    f.size,
                    if declared != f.size { declared } else { b.len() }
                )));
            }
            buf.extend_from_slice(b);
            Ok(())
        }
        (V::Enum(index, symbol), S::Enum(e)) => match e.symbols.get(*index as usize) {
            Some(s) if s == symbol => {
                put_long(buf, i64::from(*index));
                Ok(())
            }
            _ => Err(WriteError::mismatch(format!(
                "enum {} has no symbol {symbol:?} at index {index} (symbols: {})",
                e.name.fullname(None),
                e.symbols.join(", ")
            ))),
        },
        (V::String(symbol), S::Enum(e)) => match e.symbols.iter().position(|s| s == symbol) {
            Some(index) => {
                put_len(buf, index);
                Ok(())
            }
            None => Err(WriteError::mismatch(format!(
                "{symbol:?} is not a symbol of enum {} (symbols: {})",
                e.name.fullname(None),
                e.symbols.join(", ")
            ))),
        },
        // logical types
        (V::String(s), S::Uuid) => match apache_avro::Uuid::parse_str(s) {
            Ok(_) => {
                put_bytes(buf, s.as_bytes());
                Ok(())
            }
            Err(_) => Err(WriteError::mismatch(format!("expected a uuid, found the string {s:?}"))),
        },
        (V::Uuid(u), S::Uuid | S::String) => {
            put_bytes(buf, u.hyphenated().to_string().as_bytes());
            Ok(())
        }
        (V::Duration(d), S::Duration) => {
            buf.extend_from_slice(&<[u8; 12]>::from(*d));
            Ok(())
        }
        (V::Fixed(n, b), S::Duration) => {
            if *n != 12 || b.len() != 12 {
                return Err(WriteError::mismatch(format!("a duration is fixed 12 bytes, the value has {}", b.len())));
            }
            buf.extend_from_slice(b);
            Ok(())
        }
        (V::Decimal(d), S::Decimal(ds)) => {
            let raw = Vec::<u8>::try_from(d)
                .map_err(|e| WriteError { path: Vec::new(), problem: Problem::Avro(Box::new(e)) })?;
            match &*ds.inner {
                S::Bytes => {
                    put_bytes(buf, &raw);
                    Ok(())
                }
                S::Fixed(f) => {
                    let minimal = minimal_twos_complement(&raw);
                    if minimal.len() > f.size {
                        return Err(WriteError::mismatch(format!(
                            "decimal needs {} bytes, fixed {} holds {}",
                            minimal.len(),
                            f.name.fullname(None),
                            f.size
                        )));
                    }
                    let sign = if minimal.first().is_some_and(|b| b & 0x80 != 0) { 0xff } else { 0 };
                    buf.resize(buf.len() + (f.size - minimal.len()), sign);
                    buf.extend_from_slice(minimal);
                    Ok(())
                }
                other => Err(WriteError::mismatch(format!(
                    "a decimal's schema must be bytes or fixed, this one is {}",
                    describe(other)
                ))),
            }
        }
        (V::BigDecimal(b), S::BigDecimal) => {
            // a leaf: apache-avro's own encoding, from a clone of the one number
            let bytes = apache_avro::to_avro_datum(&S::BigDecimal, V::BigDecimal(b.clone()))
                .map_err(|e| WriteError { path: Vec::new(), problem: Problem::Avro(Box::new(e)) })?;
            buf.extend_from_slice(&bytes);
            Ok(())
        }

        _ => Err(WriteError::mismatch(format!("expected {}, found {}", describe(schema), kind(value)))),
    }
}

/// Drops redundant leading sign bytes of a big-endian two's complement number.
fn minimal_twos_complement(raw: &[u8]) -> &[u8] {
    let mut start = 0;
    while start + 1 < raw.len()
        && ((raw[start] == 0x00 && raw[start + 1] & 0x80 == 0) || (raw[start] == 0xff && raw[start + 1] & 0x80 != 0))
    {
        start += 1;
    }
    &raw[start..]
}

/// A schema as error messages name it: `record com.example.Order`, `array`, `string`, ...
pub(crate) fn describe(schema: &Schema) -> String {
    match schema {
        Schema::Record(r) => format!("record {}", r.name.fullname(None)),
        Schema::Enum(e) => format!("enum {}", e.name.fullname(None)),
        Schema::Fixed(f) => format!("fixed {}", f.name.fullname(None)),
        Schema::Ref { name } => name.fullname(None),
        Schema::Union(u) => {
            let variants: Vec<String> = u.variants().iter().map(describe).collect();
            format!("union [{}]", variants.join(", "))
        }
        other => kind_name(other).to_owned(),
    }
}

/// The Avro type (or logical type) name of an unnamed schema.
pub(crate) fn kind_name(schema: &Schema) -> &'static str {
    match schema {
        Schema::Null => "null",
        Schema::Boolean => "boolean",
        Schema::Int => "int",
        Schema::Long => "long",
        Schema::Float => "float",
        Schema::Double => "double",
        Schema::Bytes => "bytes",
        Schema::String => "string",
        Schema::Array(_) => "array",
        Schema::Map(_) => "map",
        Schema::Union(_) => "union",
        Schema::Record(_) => "record",
        Schema::Enum(_) => "enum",
        Schema::Fixed(_) => "fixed",
        Schema::Decimal(_) => "decimal",
        Schema::BigDecimal => "big-decimal",
        Schema::Uuid => "uuid",
        Schema::Date => "date",
        Schema::TimeMillis => "time-millis",
        Schema::TimeMicros => "time-micros",
        Schema::TimestampMillis => "timestamp-millis",
        Schema::TimestampMicros => "timestamp-micros",
        Schema::TimestampNanos => "timestamp-nanos",
        Schema::LocalTimestampMillis => "local-timestamp-millis",
        Schema::LocalTimestampMicros => "local-timestamp-micros",
        Schema::LocalTimestampNanos => "local-timestamp-nanos",
        Schema::Duration => "duration",
        Schema::Ref { .. } => "reference",
    }
}

/// The kind of a value, as error messages name it (never the value itself: it may be large or
/// private).
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Boolean(_) => "boolean",
        Value::Int(_) => "int",
        Value::Long(_) => "long",
        Value::Float(_) => "float",
        Value::Double(_) => "double",
        Value::Bytes(_) => "bytes",
        Value::String(_) => "string",
        Value::Fixed(..) => "fixed",
        Value::Enum(..) => "enum",
        Value::Union(..) => "union",
        Value::Array(_) => "array",
        Value::Map(_) => "map",
        Value::Record(_) => "record",
        Value::Date(_) => "date",
        Value::Decimal(_) => "decimal",
        Value::BigDecimal(_) => "big-decimal",
        Value::TimeMillis(_) => "time-millis",
        Value::TimeMicros(_) => "time-micros",
        Value::TimestampMillis(_) => "timestamp-millis",
        Value::TimestampMicros(_) => "timestamp-micros",
        Value::TimestampNanos(_) => "timestamp-nanos",
        Value::LocalTimestampMillis(_) => "local-timestamp-millis",
        Value::LocalTimestampMicros(_) => "local-timestamp-micros",
        Value::LocalTimestampNanos(_) => "local-timestamp-nanos",
        Value::Duration(_) => "duration",
        Value::Uuid(_) => "uuid",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(value: &Value, schema: &Schema) -> Result<Vec<u8>, String> {
        let names: HashMap<Name, Schema> = HashMap::new();
        let mut buf = Vec::new();
        write_datum(value, schema, &names, &mut buf).map(|()| buf).map_err(|e| match e.problem {
            Problem::Mismatch(ref r) => format!("{}: {r}", e.path()),
            Problem::Avro(a) => a.to_string(),
        })
    }

    #[test]
    fn zigzag_varints() {
        // the Avro spec's table: 0 -> 00, -1 -> 01, 1 -> 02, -2 -> 03, 2 -> 04, -64 -> 7f, 64 -> 80 01
        let cases: [(i64, &[u8]); 9] = [
            (0, &[0x00]),
            (-1, &[0x01]),
            (1, &[0x02]),
            (-2, &[0x03]),
            (2, &[0x04]),
            (-64, &[0x7f]),
            (64, &[0x80, 0x01]),
            (i64::MAX, &[0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
            (i64::MIN, &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
        ];
        for (n, bytes) in cases {
            let mut buf = Vec::new();
            put_long(&mut buf, n);
            assert_eq!(buf, bytes, "{n}");
            // and apache-avro agrees
            assert_eq!(apache_avro::to_avro_datum(&Schema::Long, Value::Long(n)).unwrap(), bytes);
        }
    }

    #[test]
    fn matches_apache_avro_on_valid_values() {
        let cases = [
            (Value::Null, Schema::Null),
            (Value::Boolean(true), Schema::Boolean),
            (Value::Int(-300), Schema::Int),
            (Value::Int(7), Schema::Long),
            (Value::Double(1.5), Schema::Double),
            (Value::Float(-0.25), Schema::Float),
            (Value::Bytes(vec![0, 1, 255]), Schema::Bytes),
            (Value::String("héllo".into()), Schema::String),
            (Value::Date(19000), Schema::Date),
            (Value::TimestampMillis(1_700_000_000_000), Schema::TimestampMillis),
            (Value::Array(vec![Value::Long(1), Value::Long(-1)]), Schema::array(Schema::Long)),
            (Value::Array(vec![]), Schema::array(Schema::Long)),
            (Value::Map([("k".to_owned(), Value::Int(1))].into()), Schema::map(Schema::Int)),
            (Value::Uuid(apache_avro::Uuid::parse_str("67e55044-10b1-426f-9247-bb680e5fe0c8").unwrap()), Schema::Uuid),
        ];
        for (value, schema) in cases {
            let ours = enc(&value, &schema).unwrap();
            let theirs = apache_avro::to_avro_datum(&schema, value.clone()).unwrap();
            assert_eq!(ours, theirs, "{value:?} as {schema:?}");
        }
    }

    #[test]
    fn float_promotes_to_double() {
        assert_eq!(enc(&Value::Float(1.5), &Schema::Double).unwrap(), 1.5f64.to_le_bytes());
    }

    #[test]
    fn unions_need_a_branch() {
        let schema = Schema::parse_str(r#"["null", "long"]"#).unwrap();
        assert_eq!(enc(&Value::Union(1, Box::new(Value::Long(1))), &schema).unwrap(), [0x02, 0x02]);
        assert_eq!(enc(&Value::Null, &schema).unwrap(), [0x00]);
        // apache-avro would write 02 alone: a long with no branch index
        let err = enc(&Value::Long(1), &schema).unwrap_err();
        assert!(err.contains("expected union [null, long], found long"), "{err}");
        let err = enc(&Value::Union(2, Box::new(Value::Null)), &schema).unwrap_err();
        assert!(err.contains("union branch 2 out of range: union [null, long] has 2 branches"), "{err}");
        let err = enc(&Value::Union(1, Box::new(Value::String("x".into()))), &schema).unwrap_err();
        assert!(err.contains("expected long, found string"), "{err}");
    }

    #[test]
    fn paths_point_at_the_mismatch() {
        let schema = Schema::parse_str(
            r#"{"type":"record","name":"R","fields":[
                {"name":"tags","type":{"type":"array","items":"string"}},
                {"name":"attrs","type":{"type":"map","values":"int"}}]}"#,
        )
        .unwrap();
        let v = Value::Record(vec![
            ("tags".into(), Value::Array(vec![Value::String("a".into()), Value::Int(3)])),
            ("attrs".into(), Value::Map(HashMap::new())),
        ]);
        assert_eq!(enc(&v, &schema).unwrap_err(), ".tags[1]: expected string, found int");
        let v = Value::Record(vec![
            ("tags".into(), Value::Array(vec![])),
            ("attrs".into(), Value::Map([("k".to_owned(), Value::Null)].into())),
        ]);
        assert_eq!(enc(&v, &schema).unwrap_err(), ".attrs[\"k\"]: expected int, found null");
        let v = Value::Record(vec![("tags".into(), Value::Array(vec![]))]);
        assert_eq!(enc(&v, &schema).unwrap_err(), ": missing field \"attrs\" of record R");
    }

    #[test]
    fn fixed_enum_and_decimal() {
        let fixed = Schema::parse_str(r#"{"type":"fixed","name":"F","size":2}"#).unwrap();
        assert_eq!(enc(&Value::Fixed(2, vec![1, 2]), &fixed).unwrap(), [1, 2]);
        assert!(enc(&Value::Fixed(3, vec![1, 2, 3]), &fixed).unwrap_err().contains("fixed F holds 2 bytes"));
        assert!(enc(&Value::Fixed(2, vec![1]), &fixed).is_err());

        let en = Schema::parse_str(r#"{"type":"enum","name":"E","symbols":["A","B"],"default":"A"}"#).unwrap();
        assert_eq!(enc(&Value::Enum(1, "B".into()), &en).unwrap(), [0x02]);
        assert_eq!(enc(&Value::String("B".into()), &en).unwrap(), [0x02]);
        assert!(enc(&Value::Enum(5, "Z".into()), &en).unwrap_err().contains("enum E has no symbol \"Z\" at index 5"));
        assert!(enc(&Value::String("C".into()), &en).unwrap_err().contains("\"C\" is not a symbol of enum E"));

        let dec = Schema::parse_str(
            r#"{"type":"fixed","name":"D","size":4,"logicalType":"decimal","precision":8,"scale":2}"#,
        )
        .unwrap();
        // -2 as a 1-byte decimal, sign-extended to 4 bytes
        assert_eq!(
            enc(&Value::Decimal(apache_avro::Decimal::from(vec![0xfe])), &dec).unwrap(),
            [0xff, 0xff, 0xff, 0xfe]
        );
        assert_eq!(
            enc(&Value::Decimal(apache_avro::Decimal::from(vec![0x00, 0x00, 0x7f])), &dec).unwrap(),
            [0, 0, 0, 0x7f]
        );
        let err = enc(&Value::Decimal(apache_avro::Decimal::from(vec![0x01, 0, 0, 0, 0])), &dec).unwrap_err();
        assert!(err.contains("decimal needs 5 bytes, fixed D holds 4"), "{err}");
    }

    #[test]
    fn minimal_twos_complement_strips_sign_bytes() {
        assert_eq!(minimal_twos_complement(&[0, 0, 0x7f]), [0x7f]);
        assert_eq!(minimal_twos_complement(&[0, 0x80]), [0, 0x80]);
        assert_eq!(minimal_twos_complement(&[0xff, 0xff, 0x80]), [0x80]);
        assert_eq!(minimal_twos_complement(&[0xff, 0x7f]), [0xff, 0x7f]);
        assert_eq!(minimal_twos_complement(&[0]), [0]);
    }
}

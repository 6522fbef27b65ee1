//! Decodes one Avro binary datum into a [`Value`], treating the bytes as hostile.
//!
//! apache-avro's decoder is built for trusted input, so it is not used for the datum: it
//! allocates what a length or block count claims (up to 512 MiB, or that many array items)
//! before reading, it turns an input that ends inside a string, boolean or union index into
//! `null` instead of an error (it reads container files, where end of input is normal), and it
//! recurses without a bound with frames of tens of KiB in a debug build, so a recursive schema
//! and a few bytes per level overflow the stack. Here every length is checked against the bytes
//! that remain, nesting is bounded, items that take no bytes are counted, and the datum must end
//! exactly at the end of the input. The values built are the ones apache-avro builds.

use std::borrow::{Borrow, Cow};
use std::collections::HashMap;

use apache_avro::schema::{Name, Namespace, RecordSchema, Schema};
use apache_avro::types::Value;
use apache_avro::{Decimal, Duration, Uuid};

/// How deeply records, arrays, maps and unions may nest in a datum being decoded.
///
/// A recursive schema (a linked list, a tree) lets a few bytes describe a value nested
/// arbitrarily deep; deeper data is rejected as
/// [`Error::MalformedAvro`](crate::Error::MalformedAvro) rather than risk the stack. Each level
/// of a linked list `{"type":"record","name":"Node","fields":[..., {"name":"next","type":["null","Node"]}]}`
/// counts twice (the record and the union), so it may be 63 nodes long.
pub const MAX_NESTING_DEPTH: usize = 128;

/// How many array or map items that take no bytes at all (`null`, a record of nulls, a zero-size
/// `fixed`) one datum may hold.
///
/// Such items cost nothing on the wire, so a block count of 2^62 of them fits in ten bytes;
/// decoding it would allocate and loop without end. More are rejected as
/// [`Error::MalformedAvro`](crate::Error::MalformedAvro).
pub const MAX_ZERO_WIDTH_ITEMS: usize = 1 << 16;

/// Why the bytes are not a datum of the schema.
#[derive(Debug)]
pub(crate) enum ReadError {
    Malformed {
        /// Byte offset in the datum.
        offset: usize,
        reason: String,
    },
    /// apache-avro, decoding a big-decimal leaf (boxed: the error is 256 bytes, and every
    /// result in the recursive reader would carry that much stack).
    Avro(Box<apache_avro::Error>),
}

type RResult<T> = Result<T, ReadError>;

/// Decodes `bytes`, which must be exactly one datum of `schema`.
pub(crate) fn read_datum<S: Borrow<Schema>>(schema: &Schema, names: &HashMap<Name, S>, bytes: &[u8]) -> RResult<Value> {
    let mut reader = Reader { bytes, pos: 0, names, zero_width_left: MAX_ZERO_WIDTH_ITEMS };
    let value = reader.datum(schema, &None, 0)?;
    if reader.pos != bytes.len() {
        return reader.fail(reader.pos, format!("{} bytes left after the end of the datum", bytes.len() - reader.pos));
    }
    Ok(value)
}

struct Reader<'a, 'n, S> {
    bytes: &'a [u8],
    pos: usize,
    names: &'n HashMap<Name, S>,
    zero_width_left: usize,
}

impl<'a, S: Borrow<Schema>> Reader<'a, '_, S> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn fail<T>(&self, offset: usize, reason: String) -> RResult<T> {
        Err(ReadError::Malformed { offset, reason })
    }

    fn take(&mut self, n: usize, what: &str) -> RResult<&'a [u8]> {
        if n > self.remaining() {
            return self.fail(self.pos, format!("truncated: {what} needs {n} bytes, {} remain", self.remaining()));
        }
        let bytes = self.bytes;
        let out = &bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &str) -> RResult<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    /// A zigzag varint of at most 10 bytes, as apache-avro reads it.
    fn long(&mut self, what: &str) -> RResult<i64> {
        let start = self.pos;
        let mut z: u64 = 0;
        for shift in (0..70).step_by(7) {
            let Some(&b) = self.bytes.get(self.pos) else {
                return self.fail(start, format!("truncated: input ends inside the varint of {what}"));
            };
            self.pos += 1;
            z |= u64::from(b & 0x7f).checked_shl(shift).unwrap_or(0);
            if b & 0x80 == 0 {
                return Ok(((z >> 1) as i64) ^ -((z & 1) as i64));
            }
        }
        self.fail(start, format!("the varint of {what} is longer than 10 bytes"))
    }

    fn int(&mut self, what: &str) -> RResult<i32> {
        let start = self.pos;
        let n = self.long(what)?;
        i32::try_from(n).or_else(|_| self.fail(start, format!("{what} {n} does not fit in an int")))
    }

    /// The bytes of a length-prefixed `bytes` or `string`.
    fn sized(&mut self, what: &str) -> RResult<&'a [u8]> {
        let start = self.pos;
        let len = self.long(what)?;
        match usize::try_from(len) {
            Ok(len) if len <= self.remaining() => self.take(len, what),
            Ok(_) => self.fail(start, format!("truncated: {what} of {len} bytes, {} remain", self.remaining())),
            Err(_) => self.fail(start, format!("negative length {len} for {what}")),
        }
    }

    fn string(&mut self, what: &str) -> RResult<String> {
        let start = self.pos;
        let bytes = self.sized(what)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_owned()),
            Err(e) => self.fail(start, format!("{what} is not valid UTF-8 (valid up to byte {})", e.valid_up_to())),
        }
    }

    fn enter(&self, depth: usize) -> RResult<()> {
        if depth >= MAX_NESTING_DEPTH {
            return self.fail(self.pos, format!("values nest deeper than {MAX_NESTING_DEPTH} levels"));
        }
        Ok(())
    }

    /// Array or map blocks: `count items` repeated, a zero count ends them; a negative count is
    /// followed by the block's size in bytes.
    fn blocks(&mut self, what: &str, mut item: impl FnMut(&mut Self) -> RResult<()>) -> RResult<()> {
        loop {
            let start = self.pos;
            let count = self.long(what)?;
            if count == 0 {
                return Ok(());
            }
            let count = if count < 0 {
                let Some(count) = count.checked_neg() else {
                    return self.fail(start, format!("{what} block count {count} overflows"));
                };
                let _size_in_bytes = self.long(what)?;
                count
            } else {
                count
            };
            for _ in 0..count {
                let before = self.pos;
                item(self)?;
                if self.pos == before {
                    if self.zero_width_left == 0 {
                        return self
                            .fail(start, format!("more than {MAX_ZERO_WIDTH_ITEMS} {what} items that take no bytes"));
                    }
                    self.zero_width_left -= 1;
                }
            }
        }
    }

    /// Reads one value. References and union branches are followed in a loop here rather than
    /// by recursion, and the types that nest have their own functions, kept out of line: a
    /// level of nesting costs two small stack frames.
    fn datum(&mut self, schema: &Schema, ns: &Namespace, depth: usize) -> RResult<Value> {
        let (mut schema, mut ns, mut depth) = (schema, Cow::Borrowed(ns), depth);
        let mut branch_taken = None;
        loop {
            match schema {
                Schema::Ref { name } => {
                    let fq = name.fully_qualified_name(&ns);
                    let names = self.names;
                    let Some(resolved) = names.get(&fq) else {
                        return self.fail(self.pos, format!("unresolved schema reference {}", fq.fullname(None)));
                    };
                    (schema, ns) = (resolved.borrow(), Cow::Owned(fq.namespace));
                }
                Schema::Union(union) => {
                    self.enter(depth)?;
                    let start = self.pos;
                    let branch = self.long("union branch")?;
                    let variants = union.variants();
                    let Some(variant) = usize::try_from(branch).ok().and_then(|b| variants.get(b)) else {
                        return self.fail(
                            start,
                            format!("union branch {branch} out of range: the union has {} branches", variants.len()),
                        );
                    };
                    // a branch index is below the number of variants, so it fits in a u32
                    branch_taken = Some(branch as u32);
                    (schema, depth) = (variant, depth + 1);
                }
                _ => break,
            }
        }
        let value = match schema {
            Schema::Array(a) => self.array_items(&a.items, &ns, depth)?,
            Schema::Map(m) => self.map_values(&m.types, &ns, depth)?,
            Schema::Record(r) => self.record(r, &ns, depth)?,
            leaf => self.leaf(leaf)?,
        };
        Ok(match branch_taken {
            Some(branch) => Value::Union(branch, Box::new(value)),
            None => value,
        })
    }

    #[inline(never)]
    fn array_items(&mut self, items_schema: &Schema, ns: &Namespace, depth: usize) -> RResult<Value> {
        self.enter(depth)?;
        let mut items = Vec::new();
        self.blocks("array", |r| {
            items.push(r.datum(items_schema, ns, depth + 1)?);
            Ok(())
        })?;
        Ok(Value::Array(items))
    }

    #[inline(never)]
    fn map_values(&mut self, values_schema: &Schema, ns: &Namespace, depth: usize) -> RResult<Value> {
        self.enter(depth)?;
        let mut entries = HashMap::new();
        self.blocks("map", |r| {
            let key = r.string("map key")?;
            let value = r.datum(values_schema, ns, depth + 1)?;
            entries.insert(key, value);
            Ok(())
        })?;
        Ok(Value::Map(entries))
    }

    #[inline(never)]
    fn record(&mut self, record: &RecordSchema, ns: &Namespace, depth: usize) -> RResult<Value> {
        self.enter(depth)?;
        let record_ns = record.name.fully_qualified_name(ns).namespace;
        let mut fields = Vec::with_capacity(record.fields.len());
        for field in &record.fields {
            fields.push((field.name.clone(), self.datum(&field.schema, &record_ns, depth + 1)?));
        }
        Ok(Value::Record(fields))
    }

    #[inline(never)]
    fn leaf(&mut self, schema: &Schema) -> RResult<Value> {
        let start = self.pos;
        Ok(match schema {
            Schema::Null => Value::Null,
            Schema::Boolean => match self.take(1, "boolean")?[0] {
                0 => Value::Boolean(false),
                1 => Value::Boolean(true),
                b => return self.fail(start, format!("boolean byte {b:#04x}, expected 0x00 or 0x01")),
            },
            Schema::Int => Value::Int(self.int("int")?),
            Schema::Date => Value::Date(self.int("date")?),
            Schema::TimeMillis => Value::TimeMillis(self.int("time-millis")?),
            Schema::Long => Value::Long(self.long("long")?),
            Schema::TimeMicros => Value::TimeMicros(self.long("time-micros")?),
            Schema::TimestampMillis => Value::TimestampMillis(self.long("timestamp-millis")?),
            Schema::TimestampMicros => Value::TimestampMicros(self.long("timestamp-micros")?),
            Schema::TimestampNanos => Value::TimestampNanos(self.long("timestamp-nanos")?),
            Schema::LocalTimestampMillis => Value::LocalTimestampMillis(self.long("local-timestamp-millis")?),
            Schema::LocalTimestampMicros => Value::LocalTimestampMicros(self.long("local-timestamp-micros")?),
            Schema::LocalTimestampNanos => Value::LocalTimestampNanos(self.long("local-timestamp-nanos")?),
            Schema::Float => Value::Float(f32::from_le_bytes(self.array("float")?)),
            Schema::Double => Value::Double(f64::from_le_bytes(self.array("double")?)),
            Schema::Duration => Value::Duration(Duration::from(self.array::<12>("duration")?)),
            Schema::Bytes => Value::Bytes(self.sized("bytes")?.to_vec()),
            Schema::String => Value::String(self.string("string")?),
            Schema::Fixed(f) => Value::Fixed(f.size, self.take(f.size, "fixed")?.to_vec()),
            Schema::Enum(e) => {
                let index = self.int("enum index")?;
                match usize::try_from(index).ok().and_then(|i| e.symbols.get(i)) {
                    // a non-negative i32 fits in a u32
                    Some(symbol) => Value::Enum(index as u32, symbol.clone()),
                    None => {
                        return self.fail(
                            start,
                            format!(
                                "enum index {index} out of range: {} has {} symbols",
                                e.name.fullname(None),
                                e.symbols.len()
                            ),
                        )
                    }
                }
            }
            Schema::Decimal(d) => match &*d.inner {
                Schema::Fixed(f) => Value::Decimal(Decimal::from(self.take(f.size, "decimal")?)),
                Schema::Bytes => match self.sized("decimal")? {
                    // no number (Java's reader refuses it too: a zero-length BigInteger), and a
                    // value apache-avro cannot write back
                    [] => {
                        return self
                            .fail(start, "a decimal of 0 bytes: a two's-complement number needs 1 or more".into())
                    }
                    digits => Value::Decimal(Decimal::from(digits)),
                },
                other => {
                    return self.fail(
                        start,
                        format!("a decimal must be bytes or fixed, the schema says {}", super::label(other)),
                    )
                }
            },
            Schema::Uuid => {
                let bytes = self.sized("uuid")?;
                // as apache-avro reads it: 16 bytes are the raw uuid, anything else its text
                let uuid = if bytes.len() == 16 {
                    Uuid::from_slice(bytes).ok()
                } else {
                    std::str::from_utf8(bytes).ok().and_then(|s| Uuid::parse_str(s).ok())
                };
                match uuid {
                    Some(uuid) => Value::Uuid(uuid),
                    None => return self.fail(start, format!("{} bytes that are not a uuid", bytes.len())),
                }
            }
            Schema::BigDecimal => {
                let inner = self.sized("big-decimal")?;
                let end = self.pos;
                // its digits' length and scale checked here: apache-avro allocates what that
                // length says before reading the digits
                let mut digits =
                    Reader { bytes: &self.bytes[..end], pos: end - inner.len(), names: self.names, zero_width_left: 0 };
                digits.sized("big-decimal digits")?;
                digits.long("big-decimal scale")?;
                if digits.pos != end {
                    return self.fail(digits.pos, format!("{} bytes left inside the big-decimal", end - digits.pos));
                }
                // a leaf: apache-avro's own decoding, of exactly these bytes
                let mut leaf = &self.bytes[start..end];
                apache_avro::from_avro_datum(&Schema::BigDecimal, &mut leaf, None)
                    .map_err(|e| ReadError::Avro(Box::new(e)))?
            }
            // datum() reads these; reported rather than panicking, should that ever change
            Schema::Union(_) | Schema::Array(_) | Schema::Map(_) | Schema::Record(_) | Schema::Ref { .. } => {
                return self.fail(start, format!("internal error: {} read as a leaf", super::label(schema)))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use apache_avro::schema::ResolvedSchema;

    use super::*;

    fn read(schema: &str, bytes: &[u8]) -> RResult<Value> {
        let schema = Schema::parse_str(schema).unwrap();
        let rs = ResolvedSchema::try_from(&schema).unwrap();
        read_datum(&schema, rs.get_names(), bytes)
    }

    fn reason(schema: &str, bytes: &[u8]) -> (usize, String) {
        match read(schema, bytes) {
            Err(ReadError::Malformed { offset, reason }) => (offset, reason),
            other => panic!("expected Malformed, got {other:?}"),
        }
    }

    #[test]
    fn reads_what_apache_avro_reads() {
        let cases: [(&str, &[u8]); 16] = [
            (r#""long""#, &[0xd8, 0x04]),
            (r#""int""#, &[0x01]),
            (r#""string""#, &[0x04, b'h', b'i']),
            (r#""bytes""#, &[0x02, 0xff]),
            (r#""boolean""#, &[0x01]),
            (r#""float""#, &[0, 0, 0xc0, 0x3f]),
            (r#""double""#, &[0, 0, 0, 0, 0, 0, 0xf8, 0x3f]),
            (r#"{"type":"array","items":"int"}"#, &[0x04, 0x02, 0x04, 0x00]),
            // a negative block count is followed by the block's size in bytes
            (r#"{"type":"array","items":"int"}"#, &[0x03, 0x04, 0x02, 0x04, 0x00]),
            (r#"{"type":"map","values":"null"}"#, &[0x02, 0x02, b'k', 0x00]),
            (r#"["null","string"]"#, &[0x00]),
            (r#"{"type":"enum","name":"E","symbols":["A","B"]}"#, &[0x02]),
            (r#"{"type":"fixed","name":"F","size":2}"#, &[1, 2]),
            (r#"{"type":"int","logicalType":"date"}"#, &[0x04]),
            (r#"{"type":"bytes","logicalType":"decimal","precision":4,"scale":1}"#, &[0x02, 0xfe]),
            (r#"{"type":"string","logicalType":"uuid"}"#, b"\x4867e55044-10b1-426f-9247-bb680e5fe0c8"),
        ];
        for (schema, bytes) in cases {
            let ours = read(schema, bytes).unwrap();
            let mut rest = bytes;
            let theirs = apache_avro::from_avro_datum(&Schema::parse_str(schema).unwrap(), &mut rest, None).unwrap();
            assert_eq!(ours, theirs, "{schema}");
        }
    }

    #[test]
    fn rejects_truncation_and_trailing_bytes() {
        assert_eq!(reason(r#""long""#, &[]), (0, "truncated: input ends inside the varint of long".into()));
        assert_eq!(reason(r#""long""#, &[0x80]), (0, "truncated: input ends inside the varint of long".into()));
        assert_eq!(reason(r#""string""#, &[0x06, b'h', b'i']), (0, "truncated: string of 3 bytes, 2 remain".into()));
        assert_eq!(reason(r#""double""#, &[0; 7]), (0, "truncated: double needs 8 bytes, 7 remain".into()));
        assert_eq!(reason(r#""long""#, &[0x02, 0x00]), (1, "1 bytes left after the end of the datum".into()));
        // apache-avro would read an input that ends where a union branch belongs as null
        assert_eq!(reason(r#"["null","string"]"#, &[]).1, "truncated: input ends inside the varint of union branch");
        assert_eq!(reason(r#""boolean""#, &[]).1, "truncated: boolean needs 1 bytes, 0 remain");
    }

    #[test]
    fn a_big_decimal_is_checked_before_apache_avro_reads_it() {
        let schema = r#"{"type":"bytes","logicalType":"big-decimal"}"#;
        let value = Value::BigDecimal("-710.5".parse().unwrap());
        let bytes = apache_avro::to_avro_datum(&Schema::parse_str(schema).unwrap(), value.clone()).unwrap();
        assert_eq!(read(schema, &bytes).unwrap(), value);
        // 4 bytes holding only a digits' length of 100,000,000, which apache-avro would allocate
        assert_eq!(
            reason(schema, &[0x08, 0x80, 0x84, 0xaf, 0x5f]),
            (1, "truncated: big-decimal digits of 100000000 bytes, 0 remain".into())
        );
        // no scale after the digits; a byte after the scale
        assert_eq!(
            reason(schema, &[0x04, 0x02, 0x07]).1,
            "truncated: input ends inside the varint of big-decimal scale"
        );
        assert_eq!(reason(schema, &[0x08, 0x02, 0x07, 0x00, 0x00]), (4, "1 bytes left inside the big-decimal".into()));
    }

    #[test]
    fn rejects_bad_values() {
        assert_eq!(reason(r#""string""#, &[0x01]), (0, "negative length -1 for string".into()));
        assert_eq!(
            reason(r#""string""#, &[0x04, b'a', 0xff]),
            (0, "string is not valid UTF-8 (valid up to byte 1)".into())
        );
        assert_eq!(reason(r#""boolean""#, &[0x02]), (0, "boolean byte 0x02, expected 0x00 or 0x01".into()));
        assert_eq!(
            reason(r#"{"type":"bytes","logicalType":"decimal","precision":4,"scale":1}"#, &[0x00]),
            (0, "a decimal of 0 bytes: a two's-complement number needs 1 or more".into())
        );
        assert_eq!(reason(r#""int""#, &[0x80, 0x80, 0x80, 0x80, 0x20]).1, "int 4294967296 does not fit in an int");
        assert_eq!(reason(r#""long""#, &[0xff; 11]), (0, "the varint of long is longer than 10 bytes".into()));
        assert_eq!(
            reason(r#"["null","string"]"#, &[0x04]),
            (0, "union branch 2 out of range: the union has 2 branches".into())
        );
        assert_eq!(reason(r#"["null","string"]"#, &[0x01]).1, "union branch -1 out of range: the union has 2 branches");
        assert_eq!(
            reason(r#"{"type":"enum","name":"E","symbols":["A"]}"#, &[0x02]),
            (0, "enum index 1 out of range: E has 1 symbols".into())
        );
        assert_eq!(reason(r#"{"type":"string","logicalType":"uuid"}"#, &[0x02, b'x']).1, "1 bytes that are not a uuid");
    }

    #[test]
    fn block_counts_cannot_claim_more_than_the_input() {
        // a block of 2^62 longs in 10 bytes: apache-avro would reserve the items up front
        let mut huge = vec![0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01];
        huge.extend_from_slice(&[0x02, 0x02]);
        assert_eq!(
            reason(r#"{"type":"array","items":"long"}"#, &huge).1,
            "truncated: input ends inside the varint of long"
        );
        let (_, r) = reason(r#"{"type":"array","items":"null"}"#, &huge);
        assert_eq!(r, format!("more than {MAX_ZERO_WIDTH_ITEMS} array items that take no bytes"));
        // i64::MIN as a block count
        let min = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(
            reason(r#"{"type":"array","items":"long"}"#, &min).1,
            "array block count -9223372036854775808 overflows"
        );
        // a string claiming 512 MiB
        assert_eq!(
            reason(r#""string""#, &[0x80, 0x80, 0x80, 0x80, 0x04]).1,
            "truncated: string of 536870912 bytes, 0 remain"
        );
    }

    #[test]
    fn nesting_is_bounded() {
        let list = r#"{"type":"record","name":"Node","fields":[
            {"name":"value","type":"int"},{"name":"next","type":["null","Node"]}]}"#;
        // each node: value 0 (00), branch 1 (02); the last: value 0, branch 0 (null)
        let nodes = |n: usize| {
            let mut b = [0x00, 0x02].repeat(n);
            b.extend_from_slice(&[0x00, 0x00]);
            b
        };
        let max_nodes = MAX_NESTING_DEPTH / 2 - 1;
        read(list, &nodes(max_nodes)).unwrap();
        assert_eq!(
            reason(list, &nodes(max_nodes + 1)),
            (MAX_NESTING_DEPTH, format!("values nest deeper than {MAX_NESTING_DEPTH} levels"))
        );
        assert!(read(list, &nodes(100_000)).is_err());
    }
}

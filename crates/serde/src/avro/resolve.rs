//! Avro schema resolution: a value decoded with the writer schema, rewritten as if it had been
//! decoded with the reader schema (fields matched by name or alias, the reader's defaults for
//! fields the writer lacks, the writer's extra fields dropped, enum symbols by name, union
//! branches by type, `int -> long -> float -> double` and `string <-> bytes` promotions).
//!
//! Guided by the two schemas, in one pass over the value. apache-avro's `Value::resolve` is not
//! used: it picks a reader union's branch by trying to resolve the value against each branch
//! first, which doubles the work at every nested union, so a recursive schema and a few dozen
//! bytes of input keep it busy for hours.

use std::borrow::{Borrow, Cow};
use std::collections::HashMap;

use apache_avro::schema::{Alias, Name, Namespace, RecordSchema, Schema, SchemaKind, UnionSchema};
use apache_avro::types::Value;
use apache_avro::{Decimal, Duration, Uuid};

use super::write::describe;
use super::{format_path, Seg};

/// Why a value cannot be resolved, and where.
#[derive(Debug)]
pub(crate) struct ResolveError {
    /// Innermost segment first.
    path: Vec<Seg>,
    pub(crate) reason: String,
}

impl ResolveError {
    fn new(reason: impl Into<String>) -> Self {
        ResolveError { path: Vec::new(), reason: reason.into() }
    }

    fn at(mut self, seg: Seg) -> Self {
        self.path.push(seg);
        self
    }

    /// Where in the reader's value, outermost first; empty for the value itself.
    pub(crate) fn path(&self) -> String {
        format_path(&self.path)
    }
}

type RResult = Result<Value, ResolveError>;

/// Resolves `value`, decoded with `writer`, to `reader`.
pub(crate) fn resolve_datum<W: Borrow<Schema>, R: Borrow<Schema>>(
    value: Value,
    writer: &Schema,
    writer_names: &HashMap<Name, W>,
    reader: &Schema,
    reader_names: &HashMap<Name, R>,
) -> RResult {
    Resolver { writer_names, reader_names }.value(value, writer, &None, reader, &None)
}

struct Resolver<'n, W, R> {
    writer_names: &'n HashMap<Name, W>,
    reader_names: &'n HashMap<Name, R>,
}

/// A value that does not have the shape of its writer schema: cannot happen for values this
/// crate decoded, reported rather than panicking.
fn internal(expected: &str) -> ResolveError {
    ResolveError::new(format!("internal error: the decoded value is not the writer's {expected}"))
}

fn lookup<'n, S: Borrow<Schema>>(
    names: &'n HashMap<Name, S>,
    name: &Name,
    ns: &Namespace,
) -> Result<(&'n Schema, Name), ResolveError> {
    let fq = name.fully_qualified_name(ns);
    match names.get(&fq) {
        Some(schema) => Ok((schema.borrow(), fq)),
        None => Err(ResolveError::new(format!("unresolved schema reference {}", fq.fullname(None)))),
    }
}

/// Named types match by unqualified name, or by one of the reader's aliases.
fn names_match(writer: &Name, reader: &Name, reader_aliases: &Option<Vec<Alias>>) -> bool {
    writer.name == reader.name || reader_aliases.iter().flatten().any(|alias| alias.name() == writer.name)
}

/// The primitive a type is encoded as, for promotions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Base {
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
}

fn base(schema: &Schema) -> Option<Base> {
    Some(match schema {
        Schema::Int | Schema::Date | Schema::TimeMillis => Base::Int,
        Schema::Long
        | Schema::TimeMicros
        | Schema::TimestampMillis
        | Schema::TimestampMicros
        | Schema::TimestampNanos
        | Schema::LocalTimestampMillis
        | Schema::LocalTimestampMicros
        | Schema::LocalTimestampNanos => Base::Long,
        Schema::Float => Base::Float,
        Schema::Double => Base::Double,
        Schema::Bytes => Base::Bytes,
        Schema::String | Schema::Uuid => Base::String,
        _ => return None,
    })
}

/// Avro's promotions: int to long, float, double; long to float, double; float to double;
/// string to bytes and back.
fn promotes(writer: Base, reader: Base) -> bool {
    use Base::*;
    writer == reader
        || matches!(
            (writer, reader),
            (Int, Long | Float | Double) | (Long, Float | Double) | (Float, Double) | (String, Bytes) | (Bytes, String)
        )
}

/// A long as the reader's long-based type.
fn long_as(reader: &Schema, n: i64) -> Option<Value> {
    Some(match reader {
        Schema::Long => Value::Long(n),
        Schema::TimeMicros => Value::TimeMicros(n),
        Schema::TimestampMillis => Value::TimestampMillis(n),
        Schema::TimestampMicros => Value::TimestampMicros(n),
        Schema::TimestampNanos => Value::TimestampNanos(n),
        Schema::LocalTimestampMillis => Value::LocalTimestampMillis(n),
        Schema::LocalTimestampMicros => Value::LocalTimestampMicros(n),
        Schema::LocalTimestampNanos => Value::LocalTimestampNanos(n),
        _ => return None,
    })
}

/// An int as the reader's int-based type.
fn int_as(reader: &Schema, n: i32) -> Option<Value> {
    Some(match reader {
        Schema::Int => Value::Int(n),
        Schema::Date => Value::Date(n),
        Schema::TimeMillis => Value::TimeMillis(n),
        _ => return None,
    })
}

/// Resolves a value of a primitive or logical writer type.
fn primitive(value: Value, writer: &Schema, reader: &Schema) -> RResult {
    let cannot =
        || ResolveError::new(format!("the writer's {} cannot be read as {}", describe(writer), describe(reader)));
    if SchemaKind::from(writer) == SchemaKind::from(reader) {
        return Ok(value);
    }
    let (Some(wb), Some(rb)) = (base(writer), base(reader)) else { return Err(cannot()) };
    if !promotes(wb, rb) {
        return Err(cannot());
    }
    let resolved = match value {
        Value::Int(n) | Value::Date(n) | Value::TimeMillis(n) => match rb {
            Base::Int => int_as(reader, n),
            Base::Long => long_as(reader, i64::from(n)),
            Base::Float => Some(Value::Float(n as f32)),
            Base::Double => Some(Value::Double(f64::from(n))),
            _ => None,
        },
        Value::Long(n)
        | Value::TimeMicros(n)
        | Value::TimestampMillis(n)
        | Value::TimestampMicros(n)
        | Value::TimestampNanos(n)
        | Value::LocalTimestampMillis(n)
        | Value::LocalTimestampMicros(n)
        | Value::LocalTimestampNanos(n) => match rb {
            Base::Long => long_as(reader, n),
            Base::Float => Some(Value::Float(n as f32)),
            Base::Double => Some(Value::Double(n as f64)),
            _ => None,
        },
        Value::Float(x) if rb == Base::Double => Some(Value::Double(f64::from(x))),
        Value::Bytes(b) => match reader {
            Schema::Bytes => Some(Value::Bytes(b)),
            Schema::String => match String::from_utf8(b) {
                Ok(s) => Some(Value::String(s)),
                Err(_) => {
                    return Err(ResolveError::new(
                        "the writer's bytes are not valid UTF-8: cannot read them as a string",
                    ))
                }
            },
            Schema::Uuid => std::str::from_utf8(&b).ok().and_then(|s| Uuid::parse_str(s).ok()).map(Value::Uuid),
            _ => None,
        },
        Value::String(s) => match reader {
            Schema::String => Some(Value::String(s)),
            Schema::Bytes => Some(Value::Bytes(s.into_bytes())),
            Schema::Uuid => match Uuid::parse_str(&s) {
                Ok(u) => Some(Value::Uuid(u)),
                Err(_) => return Err(ResolveError::new(format!("the writer's string {s:?} is not a uuid"))),
            },
            _ => None,
        },
        Value::Uuid(u) => match reader {
            Schema::String => Some(Value::String(u.hyphenated().to_string())),
            Schema::Bytes => Some(Value::Bytes(u.hyphenated().to_string().into_bytes())),
            _ => None,
        },
        _ => None,
    };
    resolved.ok_or_else(cannot)
}

/// Resolves what does not nest: enums, fixeds, primitives and logical types.
#[inline(never)]
fn leaf(value: Value, writer: &Schema, reader: &Schema) -> RResult {
    let names_differ =
        || ResolveError::new(format!("the writer's {} cannot be read as {}", describe(writer), describe(reader)));
    match (writer, reader) {
        (Schema::Enum(we), Schema::Enum(re)) => {
            if !names_match(&we.name, &re.name, &re.aliases) {
                return Err(names_differ());
            }
            let Value::Enum(_, symbol) = value else { return Err(internal("enum")) };
            let symbol = if re.symbols.contains(&symbol) {
                symbol
            } else if let Some(default) = &re.default {
                default.clone()
            } else {
                return Err(ResolveError::new(format!(
                    "symbol {symbol:?} is not in the reader's enum {}, which has no default",
                    re.name.fullname(None)
                )));
            };
            match re.symbols.iter().position(|s| *s == symbol) {
                Some(index) => Ok(Value::Enum(index as u32, symbol)),
                None => Err(ResolveError::new(format!(
                    "the default {symbol:?} of the reader's enum {} is not one of its symbols",
                    re.name.fullname(None)
                ))),
            }
        }
        (Schema::Fixed(wf), Schema::Fixed(rf)) => {
            if !names_match(&wf.name, &rf.name, &rf.aliases) {
                return Err(names_differ());
            }
            if wf.size != rf.size {
                return Err(ResolveError::new(format!(
                    "the writer's fixed {} holds {} bytes, the reader's {}",
                    wf.name.fullname(None),
                    wf.size,
                    rf.size
                )));
            }
            Ok(value)
        }
        _ => primitive(value, writer, reader),
    }
}

/// Bytes from a JSON default string: each character is one byte (U+0000 to U+00FF), as the Avro
/// specification writes `bytes` and `fixed` defaults.
fn latin1(s: &str) -> Option<Vec<u8>> {
    s.chars().map(|c| u8::try_from(u32::from(c)).ok()).collect()
}

impl<W: Borrow<Schema>, R: Borrow<Schema>> Resolver<'_, W, R> {
    /// Resolves one value. References, the writer's union branch and the reader's union branch
    /// are followed in a loop here rather than by recursion, and the types that nest have their
    /// own functions, kept out of line: a level of nesting costs two small stack frames.
    fn value(&self, value: Value, writer: &Schema, wns: &Namespace, reader: &Schema, rns: &Namespace) -> RResult {
        let (mut value, mut writer, mut wns, mut reader, mut rns) =
            (value, writer, Cow::Borrowed(wns), reader, Cow::Borrowed(rns));
        let mut reader_branch = None;
        loop {
            match (writer, reader) {
                (Schema::Ref { name }, _) => {
                    let (resolved, fq) = lookup(self.writer_names, name, &wns)?;
                    (writer, wns) = (resolved, Cow::Owned(fq.namespace));
                }
                (_, Schema::Ref { name }) => {
                    let (resolved, fq) = lookup(self.reader_names, name, &rns)?;
                    (reader, rns) = (resolved, Cow::Owned(fq.namespace));
                }
                (Schema::Union(wu), _) => {
                    let Value::Union(branch, inner) = value else { return Err(internal("union")) };
                    let Some(variant) = wu.variants().get(branch as usize) else {
                        return Err(internal("union branch"));
                    };
                    (value, writer) = (*inner, variant);
                }
                (_, Schema::Union(ru)) => {
                    let Some(branch) = self.branch_for(writer, ru, &rns)? else {
                        return Err(ResolveError::new(format!(
                            "no branch of the reader's {} can read the writer's {}",
                            describe(reader),
                            describe(writer)
                        )));
                    };
                    // a branch index is below the number of variants, so it fits in a u32
                    reader_branch = Some(branch as u32);
                    reader = &ru.variants()[branch];
                }
                _ => break,
            }
        }
        let resolved = match (writer, reader) {
            (Schema::Record(wr), Schema::Record(rr)) => self.record(value, wr, &wns, rr, &rns),
            (Schema::Array(wa), Schema::Array(ra)) => self.array(value, &wa.items, &wns, &ra.items, &rns),
            (Schema::Map(wm), Schema::Map(rm)) => self.map(value, &wm.types, &wns, &rm.types, &rns),
            _ => leaf(value, writer, reader),
        }?;
        Ok(match reader_branch {
            Some(branch) => Value::Union(branch, Box::new(resolved)),
            None => resolved,
        })
    }

    #[inline(never)]
    fn array(&self, value: Value, w_items: &Schema, wns: &Namespace, r_items: &Schema, rns: &Namespace) -> RResult {
        let Value::Array(items) = value else { return Err(internal("array")) };
        let items = items
            .into_iter()
            .enumerate()
            .map(|(i, item)| self.value(item, w_items, wns, r_items, rns).map_err(|e| e.at(Seg::Index(i))))
            .collect::<Result<_, _>>()?;
        Ok(Value::Array(items))
    }

    #[inline(never)]
    fn map(&self, value: Value, w_values: &Schema, wns: &Namespace, r_values: &Schema, rns: &Namespace) -> RResult {
        let Value::Map(entries) = value else { return Err(internal("map")) };
        let mut out = HashMap::with_capacity(entries.len());
        for (key, item) in entries {
            let item = self.value(item, w_values, wns, r_values, rns).map_err(|e| e.at(Seg::Key(key.clone())))?;
            out.insert(key, item);
        }
        Ok(Value::Map(out))
    }

    #[inline(never)]
    fn record(&self, value: Value, wr: &RecordSchema, wns: &Namespace, rr: &RecordSchema, rns: &Namespace) -> RResult {
        if !names_match(&wr.name, &rr.name, &rr.aliases) {
            return Err(ResolveError::new(format!(
                "the writer's record {} cannot be read as record {}",
                wr.name.fullname(None),
                rr.name.fullname(None)
            )));
        }
        let Value::Record(fields) = value else { return Err(internal("record")) };
        if fields.len() != wr.fields.len() {
            return Err(internal("record"));
        }
        let writer_ns = wr.name.fully_qualified_name(wns).namespace;
        let reader_ns = rr.name.fully_qualified_name(rns).namespace;
        let mut slots: Vec<Option<Value>> = fields.into_iter().map(|(_, v)| Some(v)).collect();
        let mut out = Vec::with_capacity(rr.fields.len());
        for rf in &rr.fields {
            let position = wr.fields.iter().position(|wf| wf.name == rf.name).or_else(|| {
                let aliases = rf.aliases.as_ref()?;
                wr.fields.iter().position(|wf| aliases.contains(&wf.name))
            });
            let resolved = match position.and_then(|p| Some((p, slots[p].take()?))) {
                Some((p, v)) => self.value(v, &wr.fields[p].schema, &writer_ns, &rf.schema, &reader_ns),
                None => match &rf.default {
                    Some(json) => self.default(Value::from(json.clone()), &rf.schema, &reader_ns),
                    None => {
                        return Err(ResolveError::new(format!(
                            "the writer's record {} has no field {:?} and the reader's has no default for it",
                            wr.name.fullname(None),
                            rf.name
                        )))
                    }
                },
            }
            .map_err(|e| e.at(Seg::Field(rf.name.clone())))?;
            out.push((rf.name.clone(), resolved));
        }
        Ok(Value::Record(out))
    }

    /// The reader union's branch for a writer type: the first of the same type (and name), else
    /// the first the writer's type promotes to.
    fn branch_for(
        &self,
        writer: &Schema,
        reader: &UnionSchema,
        rns: &Namespace,
    ) -> Result<Option<usize>, ResolveError> {
        let mut variants = Vec::with_capacity(reader.variants().len());
        for variant in reader.variants() {
            variants.push(match variant {
                Schema::Ref { name } => lookup(self.reader_names, name, rns)?.0,
                other => other,
            });
        }
        let same = |r: &Schema| match (writer, r) {
            (Schema::Record(w), Schema::Record(r)) => names_match(&w.name, &r.name, &r.aliases),
            (Schema::Enum(w), Schema::Enum(r)) => names_match(&w.name, &r.name, &r.aliases),
            (Schema::Fixed(w), Schema::Fixed(r)) => names_match(&w.name, &r.name, &r.aliases),
            _ => SchemaKind::from(writer) == SchemaKind::from(r),
        };
        if let Some(i) = variants.iter().position(|r| same(r)) {
            return Ok(Some(i));
        }
        Ok(variants.iter().position(|r| match (base(writer), base(r)) {
            (Some(w), Some(r)) => promotes(w, r),
            _ => false,
        }))
    }

    /// A reader field's default, given as apache-avro turns its JSON into a value (numbers as
    /// `Int`, `Long` or `Double`, strings as `String`, objects as `Map`), typed by the field's
    /// schema.
    fn default(&self, json: Value, schema: &Schema, ns: &Namespace) -> RResult {
        let doesnt_fit = |json: &Value| {
            ResolveError::new(format!("the default {json:?} does not fit the reader's {}", describe(schema)))
        };
        let value = match (schema, json) {
            (Schema::Ref { name }, json) => {
                let (resolved, fq) = lookup(self.reader_names, name, ns)?;
                return self.default(json, resolved, &fq.namespace);
            }
            // the first branch the default fits (the Avro specification says the first branch)
            (Schema::Union(u), json) => {
                for (i, variant) in u.variants().iter().enumerate() {
                    if let Ok(v) = self.default(json.clone(), variant, ns) {
                        return Ok(Value::Union(i as u32, Box::new(v)));
                    }
                }
                return Err(doesnt_fit(&json));
            }
            (Schema::Null, Value::Null) => Some(Value::Null),
            (Schema::Boolean, Value::Boolean(b)) => Some(Value::Boolean(b)),
            (Schema::Int | Schema::Date | Schema::TimeMillis, Value::Int(n)) => int_as(schema, n),
            (Schema::Int | Schema::Date | Schema::TimeMillis, Value::Long(n)) => {
                i32::try_from(n).ok().and_then(|n| int_as(schema, n))
            }
            (_, Value::Int(n)) if base(schema) == Some(Base::Long) => long_as(schema, i64::from(n)),
            (_, Value::Long(n)) if base(schema) == Some(Base::Long) => long_as(schema, n),
            (Schema::Float, Value::Int(n)) => Some(Value::Float(n as f32)),
            (Schema::Float, Value::Long(n)) => Some(Value::Float(n as f32)),
            (Schema::Float, Value::Double(x)) => Some(Value::Float(x as f32)),
            (Schema::Double, Value::Int(n)) => Some(Value::Double(f64::from(n))),
            (Schema::Double, Value::Long(n)) => Some(Value::Double(n as f64)),
            (Schema::Double, Value::Double(x)) => Some(Value::Double(x)),
            (Schema::String, Value::String(s)) => Some(Value::String(s)),
            (Schema::Uuid, Value::String(s)) => Uuid::parse_str(&s).ok().map(Value::Uuid),
            (Schema::Bytes, Value::String(s)) => latin1(&s).map(Value::Bytes),
            (Schema::Fixed(f), Value::String(s)) => {
                latin1(&s).filter(|b| b.len() == f.size).map(|b| Value::Fixed(f.size, b))
            }
            (Schema::Duration, Value::String(s)) => {
                latin1(&s).and_then(|b| <[u8; 12]>::try_from(b).ok()).map(|b| Value::Duration(Duration::from(b)))
            }
            (Schema::Decimal(d), Value::String(s)) => latin1(&s)
                .filter(|b| !matches!(&*d.inner, Schema::Fixed(f) if f.size != b.len()))
                .map(|b| Value::Decimal(Decimal::from(b))),
            (Schema::Enum(e), Value::String(s)) => {
                e.symbols.iter().position(|sym| *sym == s).map(|i| Value::Enum(i as u32, s))
            }
            (Schema::Array(a), Value::Array(items)) => Some(Value::Array(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| self.default(item, &a.items, ns).map_err(|e| e.at(Seg::Index(i))))
                    .collect::<Result<_, _>>()?,
            )),
            (Schema::Map(m), Value::Map(entries)) => {
                let mut out = HashMap::with_capacity(entries.len());
                for (key, item) in entries {
                    let item = self.default(item, &m.types, ns).map_err(|e| e.at(Seg::Key(key.clone())))?;
                    out.insert(key, item);
                }
                Some(Value::Map(out))
            }
            (Schema::Record(r), Value::Map(mut entries)) => {
                let record_ns = r.name.fully_qualified_name(ns).namespace;
                let mut fields = Vec::with_capacity(r.fields.len());
                for field in &r.fields {
                    let json = match entries.remove(&field.name) {
                        Some(json) => json,
                        None => match &field.default {
                            Some(default) => Value::from(default.clone()),
                            None => {
                                return Err(ResolveError::new(format!(
                                    "the default of record {} lacks field {:?}, which has no default",
                                    r.name.fullname(None),
                                    field.name
                                )))
                            }
                        },
                    };
                    let v = self
                        .default(json, &field.schema, &record_ns)
                        .map_err(|e| e.at(Seg::Field(field.name.clone())))?;
                    fields.push((field.name.clone(), v));
                }
                Some(Value::Record(fields))
            }
            (_, json) => return Err(doesnt_fit(&json)),
        };
        value.ok_or_else(|| ResolveError::new(format!("the default does not fit the reader's {}", describe(schema))))
    }
}

#[cfg(test)]
mod tests {
    use apache_avro::schema::ResolvedSchema;

    use super::*;

    fn resolve(writer: &str, reader: &str, value: Value) -> Result<Value, String> {
        let writer = Schema::parse_str(writer).unwrap();
        let reader = Schema::parse_str(reader).unwrap();
        let wn = ResolvedSchema::try_from(&writer).unwrap();
        let rn = ResolvedSchema::try_from(&reader).unwrap();
        resolve_datum(value, &writer, wn.get_names(), &reader, rn.get_names())
            .map_err(|e| format!("{}: {}", e.path(), e.reason))
    }

    #[test]
    fn promotions() {
        assert_eq!(resolve(r#""int""#, r#""long""#, Value::Int(-3)).unwrap(), Value::Long(-3));
        assert_eq!(resolve(r#""int""#, r#""double""#, Value::Int(2)).unwrap(), Value::Double(2.0));
        assert_eq!(resolve(r#""long""#, r#""float""#, Value::Long(2)).unwrap(), Value::Float(2.0));
        assert_eq!(resolve(r#""float""#, r#""double""#, Value::Float(0.5)).unwrap(), Value::Double(0.5));
        assert_eq!(resolve(r#""string""#, r#""bytes""#, Value::String("a".into())).unwrap(), Value::Bytes(vec![b'a']));
        assert_eq!(resolve(r#""bytes""#, r#""string""#, Value::Bytes(vec![b'a'])).unwrap(), Value::String("a".into()));
        assert_eq!(
            resolve(r#""int""#, r#"{"type":"int","logicalType":"date"}"#, Value::Int(3)).unwrap(),
            Value::Date(3)
        );
        assert_eq!(
            resolve(r#""long""#, r#""int""#, Value::Long(1)).unwrap_err(),
            ": the writer's long cannot be read as int"
        );
        assert!(resolve(r#""bytes""#, r#""string""#, Value::Bytes(vec![0xff])).is_err());
    }

    #[test]
    fn unions_pick_branches_by_type() {
        // writer not a union, reader one: the same type first, then a promotion
        assert_eq!(
            resolve(r#""long""#, r#"["null","double","long"]"#, Value::Long(1)).unwrap(),
            Value::Union(2, Box::new(Value::Long(1)))
        );
        assert_eq!(
            resolve(r#""int""#, r#"["null","double"]"#, Value::Int(1)).unwrap(),
            Value::Union(1, Box::new(Value::Double(1.0)))
        );
        // writer a union, reader not
        assert_eq!(
            resolve(r#"["null","string"]"#, r#""string""#, Value::Union(1, Box::new(Value::String("x".into()))))
                .unwrap(),
            Value::String("x".into())
        );
        assert_eq!(
            resolve(r#"["null","string"]"#, r#""string""#, Value::Union(0, Box::new(Value::Null))).unwrap_err(),
            ": the writer's null cannot be read as string"
        );
        // both unions, branches reordered
        assert_eq!(
            resolve(r#"["null","string"]"#, r#"["string","null"]"#, Value::Union(0, Box::new(Value::Null))).unwrap(),
            Value::Union(1, Box::new(Value::Null))
        );
        assert_eq!(
            resolve(r#""boolean""#, r#"["null","string"]"#, Value::Boolean(true)).unwrap_err(),
            ": no branch of the reader's union [null, string] can read the writer's boolean"
        );
    }

    #[test]
    fn records_and_enums() {
        let writer = r#"{"type":"record","name":"R","fields":[
            {"name":"a","type":"int"},
            {"name":"gone","type":"string"},
            {"name":"e","type":{"type":"enum","name":"E","symbols":["X","Y","Z"]}}]}"#;
        let reader = r#"{"type":"record","name":"R","fields":[
            {"name":"e","type":{"type":"enum","name":"E","symbols":["Y","X","OTHER"],"default":"OTHER"}},
            {"name":"b","type":"long","aliases":["a"]},
            {"name":"new","type":{"type":"array","items":"long"},"default":[1,2]},
            {"name":"opt","type":["null","string"],"default":null},
            {"name":"sub","type":{"type":"record","name":"S","fields":[{"name":"x","type":"int","default":7}]},"default":{}}]}"#;
        let value = |sym: &str, idx: u32| {
            Value::Record(vec![
                ("a".into(), Value::Int(5)),
                ("gone".into(), Value::String("dropped".into())),
                ("e".into(), Value::Enum(idx, sym.into())),
            ])
        };
        let expected = |sym: &str, idx: u32| {
            Value::Record(vec![
                ("e".into(), Value::Enum(idx, sym.into())),
                ("b".into(), Value::Long(5)),
                ("new".into(), Value::Array(vec![Value::Long(1), Value::Long(2)])),
                ("opt".into(), Value::Union(0, Box::new(Value::Null))),
                ("sub".into(), Value::Record(vec![("x".into(), Value::Int(7))])),
            ])
        };
        assert_eq!(resolve(writer, reader, value("X", 0)).unwrap(), expected("X", 1));
        // an unknown symbol takes the reader's enum default
        assert_eq!(resolve(writer, reader, value("Z", 2)).unwrap(), expected("OTHER", 2));

        let strict = reader.replace(r#","default":"OTHER""#, "");
        assert_eq!(
            resolve(writer, &strict, value("Z", 2)).unwrap_err(),
            ".e: symbol \"Z\" is not in the reader's enum E, which has no default"
        );
        let no_default = r#"{"type":"record","name":"R","fields":[{"name":"c","type":"int"}]}"#;
        assert_eq!(
            resolve(writer, no_default, value("X", 0)).unwrap_err(),
            ": the writer's record R has no field \"c\" and the reader's has no default for it"
        );
        let renamed = r#"{"type":"record","name":"Other","fields":[]}"#;
        assert_eq!(
            resolve(writer, renamed, value("X", 0)).unwrap_err(),
            ": the writer's record R cannot be read as record Other"
        );
        let aliased = r#"{"type":"record","name":"Other","aliases":["R"],"fields":[]}"#;
        assert_eq!(resolve(writer, aliased, value("X", 0)).unwrap(), Value::Record(vec![]));
    }

    #[test]
    fn defaults_of_every_kind() {
        let writer = r#"{"type":"record","name":"R","fields":[]}"#;
        let reader = r#"{"type":"record","name":"R","fields":[
            {"name":"b","type":"boolean","default":true},
            {"name":"f","type":"float","default":1},
            {"name":"d","type":"double","default":0.5},
            {"name":"by","type":"bytes","default":"\u00ff\u0000"},
            {"name":"fx","type":{"type":"fixed","name":"F","size":2},"default":"ab"},
            {"name":"m","type":{"type":"map","values":"int"},"default":{"k":1}},
            {"name":"u","type":["long","null"],"default":3},
            {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"},"default":5}]}"#;
        let Value::Record(fields) = resolve(writer, reader, Value::Record(vec![])).unwrap() else { panic!() };
        let fields: HashMap<_, _> = fields.into_iter().collect();
        assert_eq!(fields["b"], Value::Boolean(true));
        assert_eq!(fields["f"], Value::Float(1.0));
        assert_eq!(fields["d"], Value::Double(0.5));
        assert_eq!(fields["by"], Value::Bytes(vec![0xff, 0x00]));
        assert_eq!(fields["fx"], Value::Fixed(2, b"ab".to_vec()));
        assert_eq!(fields["m"], Value::Map([("k".to_owned(), Value::Int(1))].into()));
        assert_eq!(fields["u"], Value::Union(0, Box::new(Value::Long(3))));
        assert_eq!(fields["ts"], Value::TimestampMillis(5));
    }
}

//! The audit record's wire format (version 1): what the bytes of an audit message are. The
//! one definition: producers with audit on write it ([`AuditRecord::to_json`]), the checker
//! (`gregor_admin::audit`, the `gregor audit` command) reads it ([`AuditRecord::parse`]).
//!
//! An audit message is a Kafka message of the audit topic ([`DEFAULT_AUDIT_TOPIC`] unless
//! configured otherwise) whose key is the producer name (UTF-8) and whose value is one JSON
//! object, UTF-8:
//!
//! ```json
//! {"version":1,"producer":"billing@host-7:4242","session":"8c1e0f3a5b7d9e21","seq":12,
//!  "topic":"events","window_start_ms":1700000040000,"window_ms":60000,"acks":-1,
//!  "partitions":{"0":{"count":1000,"ranges":[[4000,4999,2147836412301]]},
//!                "1":{"count":2,"ranges":[[17,17,3110241024],[19,19,1904722102]]}},
//!  "failed":3}
//! ```
//!
//! * `version` — [`AUDIT_FORMAT_VERSION`]; a checker refuses versions it does not know
//!   ([`AUDIT_FORMAT_VERSIONS`] lists those it reads).
//! * `producer` — the producer's name (`client.id@host:pid` by default); `session` — 16
//!   random hex digits drawn when the producer starts; `seq` — the record's number in the
//!   session, from 0. (`producer`, `session`, `seq`) identifies a record: a record stored
//!   twice (a retried request the broker had kept) counts once.
//! * `topic`, `window_start_ms`, `window_ms` — the audited topic and window (ms since the
//!   epoch; windows are aligned to it: `window_start_ms` is a multiple of `window_ms`, which is
//!   at least 1).
//! * `acks` — the producer's `request.required.acks`.
//! * `partitions` — per partition (a decimal string, ≥ 0): `count`, the records acknowledged in
//!   the window, and `ranges`, `[first, last, fingerprint]` with inclusive offsets (`0 ≤ first
//!   ≤ last`). `count` minus the lengths of the ranges is the number acknowledged without an
//!   offset (acks=0); the ranges never span more than `count`.
//! * `failed` — records of the topic whose delivery failed in the window (their partition may
//!   be unknown).
//!
//! The writer puts the fields in this order, partitions by number, and escapes strings as
//! JSON requires; a reader takes any order and ignores fields it does not know.
//!
//! **Fingerprints.** The fingerprint of a message is the CRC-32 (IEEE) that Kafka stores in
//! an uncompressed message v0: over magic 0, attributes 0, the key and the value as the wire
//! writes them (int32 length, -1 for null, then the bytes); see [`fingerprint`]. A range's
//! fingerprint is the sum of its messages' fingerprints modulo 2^64 (so ranges merge by
//! adding). It lets the checker tell the producer's messages from others stored at the same
//! offsets: Kafka 0.8 loses acknowledged messages by truncating a log's tail and then gives
//! the offsets to new messages.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use gregor_protocol::EncodedMessage;

use crate::error::{Error, Result};

/// The audit topic unless configured otherwise.
pub const DEFAULT_AUDIT_TOPIC: &str = "__gregor_audit";

/// The version of the audit record format written (see the [module docs](self)).
pub const AUDIT_FORMAT_VERSION: u32 = 1;

/// The audit record format versions [`AuditRecord::parse`] reads.
pub const AUDIT_FORMAT_VERSIONS: &[u64] = &[AUDIT_FORMAT_VERSION as u64];

/// What one range adds to a record, at most: `[` 20 digits `,` 20 digits `,` 20 digits `],`.
pub(crate) const MAX_RANGE_JSON_BYTES: usize = 64;

/// What one partition's header adds to a record, at most.
pub(crate) const MAX_PARTITION_JSON_BYTES: usize = 64;

/// What a record's fields other than its partitions take, at most, for a producer named
/// `producer` and a topic `topic` (a character escapes to at most 6 bytes).
pub(crate) fn max_header_json_bytes(producer: &str, topic: &str) -> usize {
    256 + producer.len() * 6 + topic.len() * 6
}

/// The fingerprint of a message with `key` and `value`: the CRC-32 (IEEE) an uncompressed
/// Kafka message v0 carries, over magic 0, attributes 0, then key and value each as an int32
/// length (-1 for null) and the bytes.
///
/// ```
/// // Kafka's CRC of a message with a null key and a null value
/// assert_eq!(gregor_producer::audit::fingerprint(None, None), 0xA7EC_6803);
/// ```
pub fn fingerprint(key: Option<&[u8]>, value: Option<&[u8]>) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&[0, 0]);
    for field in [key, value] {
        match field {
            None => h.update(&(-1i32).to_be_bytes()),
            Some(bytes) => {
                h.update(&(bytes.len() as i32).to_be_bytes());
                h.update(bytes);
            }
        }
    }
    h.finalize()
}

/// The fingerprint of an application's record: its encoded message's CRC (records are
/// uncompressed messages with attributes 0, so this is [`fingerprint`] of its key and value),
/// computed here when `send` left it out (0: `crate::crc`).
pub(crate) fn message_fingerprint(m: &EncodedMessage) -> u32 {
    match m.crc() {
        // its key and value read in place (no handle on the shared bytes made per record)
        0 => EncodedMessage::view_of(m.as_bytes()).map_or(0, |view| fingerprint(view.key, view.value)),
        crc => crc,
    }
}

/// Offsets `first..=last` a producer had acknowledged, and the sum of their fingerprints
/// (modulo 2^64).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AuditRange {
    /// The first offset.
    pub first: i64,
    /// The last offset (inclusive).
    pub last: i64,
    /// The sum of the messages' [`fingerprint`]s, modulo 2^64.
    pub fingerprint: u64,
}

impl AuditRange {
    /// How many offsets it spans.
    pub fn len(&self) -> u64 {
        (self.last - self.first + 1) as u64
    }

    /// Never true: a range spans one offset at least.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// One partition of an [`AuditRecord`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AuditPartition {
    /// Records acknowledged in the window.
    pub count: u64,
    /// Their offset ranges; `count` minus their lengths were acknowledged without an offset
    /// (acks=0).
    pub ranges: Vec<AuditRange>,
}

/// An audit record: the value of an audit message (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord {
    /// The format version.
    pub version: u64,
    /// The producer's name (also the message's key).
    pub producer: String,
    /// The producer's session (random, drawn at its start).
    pub session: String,
    /// The record's number in the session.
    pub seq: u64,
    /// The audited topic.
    pub topic: String,
    /// The window's start, ms since the epoch.
    pub window_start_ms: u64,
    /// The window's length in ms.
    pub window_ms: u64,
    /// The producer's `request.required.acks`.
    pub acks: i64,
    /// Per partition.
    pub partitions: BTreeMap<i32, AuditPartition>,
    /// Records of the topic whose delivery failed in the window.
    pub failed: u64,
}

impl AuditRecord {
    /// The record as its message's value: JSON, the fields in the documented order, the
    /// partitions by number.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use gregor_producer::audit::{AuditPartition, AuditRange, AuditRecord};
    ///
    /// let record = AuditRecord {
    ///     version: 1,
    ///     producer: "billing-1".into(),
    ///     session: "8c1e0f3a5b7d9e21".into(),
    ///     seq: 0,
    ///     topic: "events".into(),
    ///     window_start_ms: 60_000,
    ///     window_ms: 60_000,
    ///     acks: -1,
    ///     partitions: BTreeMap::from([(
    ///         0,
    ///         AuditPartition { count: 2, ranges: vec![AuditRange { first: 7, last: 8, fingerprint: 99 }] },
    ///     )]),
    ///     failed: 0,
    /// };
    /// let json = record.to_json();
    /// assert!(json.starts_with(r#"{"version":1,"producer":"billing-1","session":"8c1e0f3a5b7d9e21","seq":0,"#));
    /// assert_eq!(AuditRecord::parse(json.as_bytes())?, record);
    /// # Ok::<(), gregor_producer::Error>(())
    /// ```
    pub fn to_json(&self) -> String {
        let mut s = String::with_capacity(256 + self.partitions.len() * MAX_PARTITION_JSON_BYTES);
        let _ = write!(s, "{{\"version\":{}", self.version);
        s.push_str(",\"producer\":");
        push_json_string(&mut s, &self.producer);
        s.push_str(",\"session\":");
        push_json_string(&mut s, &self.session);
        let _ = write!(s, ",\"seq\":{},\"topic\":", self.seq);
        push_json_string(&mut s, &self.topic);
        let _ = write!(
            s,
            ",\"window_start_ms\":{},\"window_ms\":{},\"acks\":{},\"partitions\":{{",
            self.window_start_ms, self.window_ms, self.acks
        );
        for (i, (partition, p)) in self.partitions.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            let _ = write!(s, "\"{partition}\":{{\"count\":{},\"ranges\":[", p.count);
            for (j, r) in p.ranges.iter().enumerate() {
                if j > 0 {
                    s.push(',');
                }
                let _ = write!(s, "[{},{},{}]", r.first, r.last, r.fingerprint);
            }
            s.push_str("]}");
        }
        let _ = write!(s, "}},\"failed\":{}}}", self.failed);
        s
    }

    /// Reads an audit record (a message value of the audit topic).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidAuditRecord`] for anything but a well-formed record of a version in
    /// [`AUDIT_FORMAT_VERSIONS`]: not JSON, a field missing or of the wrong type, a window of
    /// 0 ms, a partition that is not a number ≥ 0, a range with `last < first` or a negative
    /// offset, ranges spanning more offsets than the count.
    pub fn parse(bytes: &[u8]) -> Result<AuditRecord> {
        let bad = |reason: String| Error::InvalidAuditRecord { reason };
        let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| bad(format!("not JSON: {e}")))?;
        let o = v.as_object().ok_or_else(|| bad("not a JSON object".to_owned()))?;
        let uint = |k: &str| o.get(k).and_then(|x| x.as_u64()).ok_or_else(|| bad(format!("{k} is not a number ≥ 0")));
        let string = |k: &str| {
            o.get(k).and_then(|x| x.as_str()).map(str::to_owned).ok_or_else(|| bad(format!("{k} is not a string")))
        };
        let version = uint("version")?;
        if !AUDIT_FORMAT_VERSIONS.contains(&version) {
            return Err(bad(format!("version {version} is not one this checker reads ({AUDIT_FORMAT_VERSIONS:?})")));
        }
        let window_ms = uint("window_ms")?;
        if window_ms == 0 {
            return Err(bad("window_ms is 0".to_owned()));
        }
        let mut partitions = BTreeMap::new();
        let parts = o.get("partitions").and_then(|x| x.as_object()).ok_or_else(|| bad("no partitions".to_owned()))?;
        for (name, p) in parts {
            let id: i32 = name.parse().ok().filter(|p| *p >= 0).ok_or_else(|| bad(format!("partition {name:?}")))?;
            let count = p.get("count").and_then(|x| x.as_u64()).ok_or_else(|| bad(format!("partition {id}: count")))?;
            let list =
                p.get("ranges").and_then(|x| x.as_array()).ok_or_else(|| bad(format!("partition {id}: ranges")))?;
            // the list is parsed already: its length is bounded by the input's
            let mut ranges = Vec::with_capacity(list.len());
            let mut spanned: u64 = 0;
            for r in list {
                let r = r.as_array().filter(|r| r.len() == 3).ok_or_else(|| bad(format!("partition {id}: a range")))?;
                let (first, last, fp) = (r[0].as_i64(), r[1].as_i64(), r[2].as_u64());
                let (Some(first), Some(last), Some(fingerprint)) = (first, last, fp) else {
                    return Err(bad(format!("partition {id}: a range is not [first, last, fingerprint]")));
                };
                if first < 0 || last < first {
                    return Err(bad(format!("partition {id}: range [{first}, {last}]")));
                }
                let range = AuditRange { first, last, fingerprint };
                spanned = spanned.saturating_add(range.len());
                ranges.push(range);
            }
            if spanned > count {
                return Err(bad(format!("partition {id}: ranges span {spanned} offsets, more than count {count}")));
            }
            partitions.insert(id, AuditPartition { count, ranges });
        }
        Ok(AuditRecord {
            version,
            producer: string("producer")?,
            session: string("session")?,
            seq: uint("seq")?,
            topic: string("topic")?,
            window_start_ms: uint("window_start_ms")?,
            window_ms,
            acks: o.get("acks").and_then(|x| x.as_i64()).ok_or_else(|| bad("acks is not a number".to_owned()))?,
            partitions,
            failed: uint("failed")?,
        })
    }
}

/// Appends `value` as a JSON string.
fn push_json_string(s: &mut String, value: &str) {
    s.push('"');
    for c in value.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use gregor_protocol::Message;
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn the_fingerprint_is_kafkas_crc_of_an_uncompressed_message() {
        assert_eq!(fingerprint(None, None), 0xA7EC_6803);
        for (key, value) in [(None, Some(&b"v"[..])), (Some(&b"k"[..]), Some(&b"value"[..])), (Some(&b""[..]), None)] {
            let m = Message::new(key.map(Bytes::copy_from_slice), value.map(Bytes::copy_from_slice));
            let mut buf = bytes::BytesMut::new();
            m.encode(&mut buf).unwrap();
            assert_eq!(fingerprint(key, value).to_be_bytes(), buf[..4], "{key:?} {value:?}");
            assert_eq!(message_fingerprint(&EncodedMessage::encode(&m).unwrap()), fingerprint(key, value));
            // a message `send` left without its CRC (crate::crc): computed here
            let mut open = bytes::BytesMut::new();
            m.encode_without_crc(&mut open).unwrap();
            let open = EncodedMessage::from_bytes(open.freeze()).unwrap();
            assert_eq!((open.crc(), message_fingerprint(&open)), (0, fingerprint(key, value)));
        }
    }

    fn record_json(partitions: &str) -> String {
        format!(
            "{{\"version\":1,\"producer\":\"p\",\"session\":\"s\",\"seq\":7,\"topic\":\"t\",\"window_start_ms\":60000,\
             \"window_ms\":60000,\"acks\":-1,\"partitions\":{{{partitions}}},\"failed\":2}}"
        )
    }

    #[test]
    fn records_are_read_and_checked() {
        let r = AuditRecord::parse(record_json("\"3\":{\"count\":5,\"ranges\":[[10,12,99]]}").as_bytes()).unwrap();
        assert_eq!((r.seq, r.acks, r.failed, r.window_start_ms), (7, -1, 2, 60_000));
        assert_eq!(
            r.partitions[&3],
            AuditPartition { count: 5, ranges: vec![AuditRange { first: 10, last: 12, fingerprint: 99 }] }
        );
        // any field order, unknown fields ignored
        let reordered = "{\"failed\":0,\"partitions\":{},\"acks\":1,\"window_ms\":5,\"window_start_ms\":5,\
                         \"topic\":\"t\",\"seq\":0,\"session\":\"s\",\"producer\":\"p\",\"version\":1,\"new\":[1]}";
        assert_eq!(AuditRecord::parse(reordered.as_bytes()).unwrap().window_ms, 5);
        for (bad, why) in [
            (record_json("\"x\":{\"count\":1,\"ranges\":[]}"), "partition \"x\""),
            (record_json("\"-1\":{\"count\":1,\"ranges\":[]}"), "partition \"-1\""),
            (record_json("\"0\":{\"count\":1,\"ranges\":[[5,4,0]]}"), "range [5, 4]"),
            (record_json("\"0\":{\"count\":1,\"ranges\":[[-1,0,0]]}"), "range [-1, 0]"),
            (record_json("\"0\":{\"count\":1,\"ranges\":[[0,4,0]]}"), "more than count 1"),
            (record_json("\"0\":{\"count\":1,\"ranges\":[[0,0]]}"), "a range"),
            (record_json("").replace("\"version\":1", "\"version\":2"), "version 2"),
            (record_json("").replace("\"window_ms\":60000", "\"window_ms\":0"), "window_ms is 0"),
            (record_json("").replace("\"seq\":7", "\"seq\":-7"), "seq is not a number"),
            (record_json("").replace("\"topic\":\"t\"", "\"topic\":1"), "topic is not a string"),
            ("[1,2]".to_owned(), "not a JSON object"),
            ("{".to_owned(), "not JSON"),
        ] {
            let e = AuditRecord::parse(bad.as_bytes()).unwrap_err();
            assert!(matches!(e, Error::InvalidAuditRecord { .. }), "{e:?}");
            let e = e.to_string();
            assert!(e.starts_with("invalid audit record: ") && e.contains(why), "{e} lacks {why}");
        }
    }

    #[test]
    fn the_writer_escapes_strings_and_orders_partitions() {
        let record = AuditRecord {
            version: 1,
            producer: "p\"1\\\n\u{1}é".into(),
            session: "00000000000000ab".into(),
            seq: 3,
            topic: "t".into(),
            window_start_ms: 1000,
            window_ms: 1000,
            acks: 0,
            partitions: BTreeMap::from([
                (10, AuditPartition { count: 1, ranges: vec![] }),
                (2, AuditPartition { count: 2, ranges: vec![AuditRange { first: 0, last: 1, fingerprint: 5 }] }),
            ]),
            failed: 4,
        };
        assert_eq!(
            record.to_json(),
            "{\"version\":1,\"producer\":\"p\\\"1\\\\\\n\\u0001é\",\"session\":\"00000000000000ab\",\"seq\":3,\
             \"topic\":\"t\",\"window_start_ms\":1000,\"window_ms\":1000,\"acks\":0,\"partitions\":{\"2\":{\"count\":2,\
             \"ranges\":[[0,1,5]]},\"10\":{\"count\":1,\"ranges\":[]}},\"failed\":4}"
        );
        assert_eq!(AuditRecord::parse(record.to_json().as_bytes()).unwrap(), record);
    }

    fn arb_record() -> impl Strategy<Value = AuditRecord> {
        let range = (0..i64::MAX / 4, 0..1000i64, any::<u64>()).prop_map(|(first, n, fingerprint)| AuditRange {
            first,
            last: first + n,
            fingerprint,
        });
        let partition = (prop::collection::vec(range, 0..4), 0..10u64).prop_map(|(ranges, extra)| AuditPartition {
            count: ranges.iter().map(AuditRange::len).sum::<u64>() + extra,
            ranges,
        });
        (
            ".{0,12}",
            "[0-9a-f]{16}",
            any::<u64>(),
            ".{1,12}",
            any::<u64>(),
            1..u64::MAX,
            -1..=1i64,
            prop::collection::btree_map(0..i32::MAX, partition, 0..4),
            any::<u64>(),
        )
            .prop_map(
                |(producer, session, seq, topic, window_start_ms, window_ms, acks, partitions, failed)| AuditRecord {
                    version: 1,
                    producer,
                    session,
                    seq,
                    topic,
                    window_start_ms,
                    window_ms,
                    acks,
                    partitions,
                    failed,
                },
            )
    }

    proptest! {
        #[test]
        fn what_is_written_reads_back_the_same(record in arb_record()) {
            let json = record.to_json();
            prop_assert_eq!(AuditRecord::parse(json.as_bytes()).unwrap(), record);
            // and it is JSON a generic reader takes too
            prop_assert!(serde_json::from_str::<serde_json::Value>(&json).is_ok());
        }

        #[test]
        fn any_bytes_parse_or_fail_without_a_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
            let _ = AuditRecord::parse(&bytes);
        }
    }
}

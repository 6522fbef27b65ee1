//! What one partition of a Fetch response means for its reader: the one classification shared
//! by the high-level consumer's fetcher and the simple consumer (pure: no IO, no clock).
//!
//! | the partition's answer                                  | [`FetchClass`]       |
//! |---------------------------------------------------------|----------------------|
//! | no error, the records decode (possibly to nothing)      | `Data`               |
//! | no error, a message larger than the fetch size          | `MessageTooLarge`    |
//! | no error, records that cannot be decoded (CRC, codec, ...) | `Corrupt`         |
//! | `OffsetOutOfRange`                                      | `OffsetOutOfRange`   |
//! | a code after which a leader lookup may help             | `Retry`              |
//! | any other code                                          | `Fail`               |
//!
//! "May help": [`ErrorCode::is_retriable`] or [`ErrorCode::needs_metadata_refresh`]
//! (NotLeaderForPartition, UnknownTopicOrPartition, LeaderNotAvailable, ...). What each reader
//! then does is its own business: the simple consumer grows its fetch size for a message too
//! large when allowed and retries a bounded number of times; the high-level consumer (as
//! Java's) hands every code but OffsetOutOfRange to its leader finder, and keeps a partition
//! stuck on a message it cannot read.
//!
//! Decoding drops the records below the fetch offset (a compressed wrapper or a batch starts
//! earlier) and a partial trailing entry (the broker cuts the data at the fetch size): both
//! normal.
//!
//! Which decoder depends on the Fetch version the answer came in ([`FetchRead`]): v0 and v1
//! carry message sets of Message v0 (Kafka 0.8/0.9: read exactly as 0.8.2's consumer reads
//! them); from v2 the data may hold Message v1 (timestamps) and from v4 RecordBatch v2
//! (headers, transactions), read with [`gregor_protocol::record::Batches`], which takes
//! every magic. Control batches (transaction markers) are never handed out, but the offset to
//! fetch next moves past them. With [`IsolationLevel::ReadCommitted`] the batches of the
//! transactions the answer lists as aborted are dropped as Kafka's consumers drop them: a
//! producer's batches from the aborted transaction's first offset up to its abort marker.

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;

use gregor_protocol::message::DecodeOptions;
use gregor_protocol::messages::{FetchResponsePartition, READ_COMMITTED, READ_UNCOMMITTED};
use gregor_protocol::record::{
    Batch, BatchHeader, Batches, ControlRecord, ControlRecordType, LazyBatch, LazyBatches, LazyRecords, Record,
};
use gregor_protocol::{ErrorCode, MessageLocation};

/// Which records a reader gets of a partition with transactions (`isolation.level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum IsolationLevel {
    /// Every record, whether its transaction was committed, aborted or is still open (the
    /// default, and all there is before Kafka 0.11).
    #[default]
    ReadUncommitted,
    /// Records up to the last stable offset, without those of aborted transactions.
    ReadCommitted,
}

impl IsolationLevel {
    /// The `isolation_level` byte of Fetch and ListOffsets (v2+/v4+).
    pub const fn code(self) -> i8 {
        match self {
            IsolationLevel::ReadUncommitted => READ_UNCOMMITTED,
            IsolationLevel::ReadCommitted => READ_COMMITTED,
        }
    }

    /// Kafka's name: `read_uncommitted` or `read_committed`.
    pub const fn name(self) -> &'static str {
        match self {
            IsolationLevel::ReadUncommitted => "read_uncommitted",
            IsolationLevel::ReadCommitted => "read_committed",
        }
    }
}

impl fmt::Display for IsolationLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for IsolationLevel {
    type Err = String;

    /// `read_uncommitted` or `read_committed` (Kafka's values, any case).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "read_uncommitted" => Ok(IsolationLevel::ReadUncommitted),
            "read_committed" => Ok(IsolationLevel::ReadCommitted),
            _ => Err(format!("{s:?} is not an isolation level (read_uncommitted or read_committed)")),
        }
    }
}

/// How a Fetch answer is read: the version it came in and the isolation level asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FetchRead {
    /// The Fetch version of the request (and so of the answer).
    pub version: i16,
    /// The isolation level the request asked for (meaningful from v4).
    pub isolation: IsolationLevel,
}

impl FetchRead {
    /// Kafka 0.8.2's reading: Fetch v0, every record.
    pub const V0: FetchRead = FetchRead { version: 0, isolation: IsolationLevel::ReadUncommitted };
}

/// What one partition of a Fetch response means (see the module doc). `M`: the records, read
/// ([`classify_fetch_at`]) or still to be read ([`classify_fetch_lazy`]).
///
/// Exhaustive on purpose: a new class must be handled by every reader.
#[derive(Debug)]
pub enum FetchClass<M = Vec<Record>> {
    /// The records at the fetch offset and after, in offset order (possibly none).
    Data {
        /// The records (Message v0 ones with timestamp -1 and no headers).
        messages: M,
        /// The offset to fetch next: one past the last record or batch (a transaction marker,
        /// or a batch of an aborted transaction, counts), `None` when there was none.
        next_offset: Option<i64>,
        /// The partition's high watermark.
        high_watermark: i64,
    },
    /// The first message does not fit the fetch size: it can be read only with a fetch of at
    /// least `needed` bytes.
    MessageTooLarge {
        /// The message's offset (the fetch offset when its header was cut).
        offset: i64,
        /// The fetch size the message needs.
        needed: usize,
        /// The codec's error ([`gregor_protocol::Error::MessageLargerThanFetch`]).
        source: gregor_protocol::Error,
    },
    /// The set cannot be decoded (bad CRC, unknown codec, a message too large whose size was
    /// cut off, ...).
    Corrupt(gregor_protocol::Error),
    /// The broker answered `OffsetOutOfRange`: the fetch offset is not in the log.
    OffsetOutOfRange,
    /// A code after which the leader should be looked up again and the fetch retried.
    Retry(ErrorCode),
    /// A code that retrying will not cure.
    Fail(ErrorCode),
}

/// Classifies `partition` of a Fetch v0 response for `topic` sent at `fetch_offset` (Kafka
/// 0.8.2's reading; [`classify_fetch_at`] for any version).
pub fn classify_fetch(topic: &str, partition: &FetchResponsePartition, fetch_offset: i64) -> FetchClass {
    classify_fetch_at(topic, partition, fetch_offset, FetchRead::V0)
}

/// Classifies `partition` of a Fetch response for `topic` sent at `fetch_offset`, read as
/// `read` says.
pub fn classify_fetch_at(
    topic: &str,
    partition: &FetchResponsePartition,
    fetch_offset: i64,
    read: FetchRead,
) -> FetchClass {
    if let Some(class) = error_class(partition) {
        return class;
    }
    if read.version >= 2 {
        let options = DecodeOptions::fetched(topic, partition.partition, fetch_offset);
        let blob = partition.message_set.as_bytes().clone();
        // one allocation for the answer's records instead of a doubling Vec's copies (and the
        // fresh pages each copy faults in): 6% of a one-partition snappy reader's CPU
        let mut messages = Vec::with_capacity(BatchHeader::claimed_record_count(&blob));
        let walked = walk_batches(topic, partition, fetch_offset, read.isolation, Batches::new(blob, &options), |b| {
            for record in b.records() {
                messages.push(record?);
            }
            Ok(())
        });
        return match walked {
            Ok(next_offset) => FetchClass::Data { messages, next_offset, high_watermark: partition.high_watermark },
            Err(class) => class.into_class(),
        };
    }
    let options = DecodeOptions::fetched(topic, partition.partition, fetch_offset);
    match partition.message_set.decode_records(&options) {
        Ok(decoded) => FetchClass::Data {
            next_offset: decoded.next_offset(),
            messages: decoded.messages,
            high_watermark: partition.high_watermark,
        },
        Err(source) => too_large(source),
    }
}

/// Classifies `partition` as [`classify_fetch_at`] does, but keeps the records as they came:
/// each entry checked (sizes, magic, CRC, codec: what needs no decompression), control
/// batches and aborted transactions left out, and the rest kept compressed, to be decoded as
/// the records are iterated ([`LazyRecords`], a window of each expanded batch at a time: the
/// high-level consumer's chunks). The classes, the next offset and the records are the same;
/// an error inside a compressed body (a bad inner message, a corrupt deflate stream) comes
/// from the iterator, after the records before it, instead of as [`FetchClass::Corrupt`].
pub fn classify_fetch_lazy(
    topic: &str,
    partition: &FetchResponsePartition,
    fetch_offset: i64,
    read: FetchRead,
) -> FetchClass<LazyRecords> {
    if let Some(class) = error_class(partition) {
        return class;
    }
    let options = DecodeOptions::fetched(topic, partition.partition, fetch_offset);
    let blob = partition.message_set.as_bytes().clone();
    let mut kept = Vec::new();
    let high_watermark = partition.high_watermark;
    let data = |kept, next_offset| FetchClass::Data {
        messages: LazyRecords::new(kept, options.max_decompressed_bytes),
        next_offset,
        high_watermark,
    };
    if read.version >= 2 {
        let batches = LazyBatches::new(blob, &options);
        return match walk_batches(topic, partition, fetch_offset, read.isolation, batches, |b| {
            kept.push(b);
            Ok(())
        }) {
            Ok(next_offset) => data(kept, next_offset),
            Err(class) => class.into_class(),
        };
    }
    // Kafka 0.8.2's reading, as MessageSet::decode: every entry's CRC checked, "too large"
    // only when not one entry is whole
    let mut batches = LazyBatches::message_v0(blob.clone(), &options);
    let mut next_offset = None;
    for batch in batches.by_ref() {
        match batch {
            Ok(batch) => {
                // a wrapper below the fetch offset (only from a broker that wrote it below its
                // inner messages) does not move the next offset back
                if batch.header().last_offset() >= fetch_offset {
                    next_offset = Some(batch.next_offset());
                }
                kept.push(batch);
            }
            Err(source) => return FetchClass::Corrupt(source),
        }
    }
    if batches.whole_batches() == 0 && !blob.is_empty() {
        let (offset, entry_size) = match blob.get(..12) {
            Some(head) => {
                let size = i32::from_be_bytes(head[8..].try_into().expect("4 bytes"));
                (i64::from_be_bytes(head[..8].try_into().expect("8 bytes")), Some(12 + size.max(0) as usize))
            }
            None => (fetch_offset, None),
        };
        let source = gregor_protocol::Error::MessageLargerThanFetch {
            location: MessageLocation { topic: Some(topic.to_owned()), partition: Some(partition.partition), offset },
            entry_size,
            fetched_bytes: blob.len(),
        };
        return too_large(source);
    }
    data(kept, next_offset)
}

/// The class of a partition answered with an error code, `None` without one.
fn error_class<M>(partition: &FetchResponsePartition) -> Option<FetchClass<M>> {
    match partition.error() {
        None => None,
        Some(ErrorCode::OffsetOutOfRange) => Some(FetchClass::OffsetOutOfRange),
        Some(code) if code.is_retriable() || code.needs_metadata_refresh() => Some(FetchClass::Retry(code)),
        Some(code) => Some(FetchClass::Fail(code)),
    }
}

/// A [`gregor_protocol::Error::MessageLargerThanFetch`] as its class: too large when the
/// entry's size is known, corrupt otherwise.
fn too_large<M>(source: gregor_protocol::Error) -> FetchClass<M> {
    match source {
        gregor_protocol::Error::MessageLargerThanFetch { location, entry_size: Some(needed), fetched_bytes } => {
            FetchClass::MessageTooLarge {
                offset: location.offset,
                needed,
                source: gregor_protocol::Error::MessageLargerThanFetch {
                    location,
                    entry_size: Some(needed),
                    fetched_bytes,
                },
            }
        }
        source => FetchClass::Corrupt(source),
    }
}

/// Why a walk over batches stopped short of data.
enum Stop {
    Corrupt(gregor_protocol::Error),
    TooLarge(gregor_protocol::Error),
}

impl Stop {
    fn into_class<M>(self) -> FetchClass<M> {
        match self {
            Stop::Corrupt(source) => FetchClass::Corrupt(source),
            Stop::TooLarge(source) => too_large(source),
        }
    }
}

/// What [`walk_batches`] needs of a batch, read ([`Batch`]) or not yet ([`LazyBatch`]).
trait BatchView {
    fn header(&self) -> &BatchHeader;
    fn next_offset(&self) -> i64;
    fn is_control(&self) -> bool;
    fn is_transactional(&self) -> bool;
    /// The first record (a control batch's marker).
    fn first_record(&self) -> Option<Record>;
}

impl BatchView for Batch {
    fn header(&self) -> &BatchHeader {
        Batch::header(self)
    }
    fn next_offset(&self) -> i64 {
        Batch::next_offset(self)
    }
    fn is_control(&self) -> bool {
        Batch::is_control(self)
    }
    fn is_transactional(&self) -> bool {
        Batch::is_transactional(self)
    }
    fn first_record(&self) -> Option<Record> {
        self.records().next().and_then(Result::ok)
    }
}

impl BatchView for LazyBatch {
    fn header(&self) -> &BatchHeader {
        LazyBatch::header(self)
    }
    fn next_offset(&self) -> i64 {
        LazyBatch::next_offset(self)
    }
    fn is_control(&self) -> bool {
        LazyBatch::is_control(self)
    }
    fn is_transactional(&self) -> bool {
        LazyBatch::is_transactional(self)
    }
    fn first_record(&self) -> Option<Record> {
        // a marker batch holds one small record
        let budget = gregor_protocol::message::DEFAULT_MAX_DECOMPRESSED_BYTES;
        self.clone().into_records(budget).next().and_then(Result::ok)
    }
}

/// The walk over the batches of any magic, read or not: how many bytes of a partial entry
/// ended the blob.
trait BatchWalk: Iterator<Item = Result<Self::Batch, gregor_protocol::Error>> {
    type Batch: BatchView;
    fn partial_trailing_bytes(&self) -> usize;
}

impl BatchWalk for Batches {
    type Batch = Batch;
    fn partial_trailing_bytes(&self) -> usize {
        Batches::partial_trailing_bytes(self)
    }
}

impl BatchWalk for LazyBatches {
    type Batch = LazyBatch;
    fn partial_trailing_bytes(&self) -> usize {
        LazyBatches::partial_trailing_bytes(self)
    }
}

/// Walks batches of any magic (Fetch v2+), handing each one to deliver to `keep`: control
/// batches skipped, aborted transactions dropped under read_committed. Returns the next offset
/// (past every whole batch; `None` when there was none).
fn walk_batches<W: BatchWalk>(
    topic: &str,
    partition: &FetchResponsePartition,
    fetch_offset: i64,
    isolation: IsolationLevel,
    mut batches: W,
    mut keep: impl FnMut(W::Batch) -> Result<(), gregor_protocol::Error>,
) -> Result<Option<i64>, Stop> {
    let blob = partition.message_set.as_bytes();
    // the aborted transactions, by first offset: each marks its producer aborted from there on
    let mut aborted: Vec<(i64, i64)> = match (isolation, &partition.aborted_transactions) {
        (IsolationLevel::ReadCommitted, Some(list)) => list.iter().map(|a| (a.first_offset, a.producer_id)).collect(),
        _ => Vec::new(),
    };
    aborted.sort_unstable_by(|a, b| b.cmp(a)); // popped from the end: lowest first offset first
    let mut aborting: HashSet<i64> = HashSet::new();
    let mut next_offset = None;
    for batch in batches.by_ref() {
        let batch = match batch {
            Ok(batch) => batch,
            Err(source) => return Err(Stop::Corrupt(source)),
        };
        let header = *batch.header();
        while aborted.last().is_some_and(|&(first, _)| first <= header.last_offset()) {
            let (_, producer) = aborted.pop().expect("checked");
            aborting.insert(producer);
        }
        next_offset = Some(batch.next_offset());
        if batch.is_control() {
            // an abort marker closes its producer's aborted transaction
            if batch.is_transactional() && aborting.contains(&header.producer_id) {
                let marker = batch.first_record();
                if marker.is_some_and(|r| {
                    ControlRecord::parse(r.key.as_deref()).is_ok_and(|c| c.kind == ControlRecordType::Abort)
                }) {
                    aborting.remove(&header.producer_id);
                }
            }
            continue;
        }
        if batch.is_transactional() && aborting.contains(&header.producer_id) {
            continue;
        }
        keep(batch).map_err(Stop::Corrupt)?;
    }
    if next_offset.is_none() && batches.partial_trailing_bytes() > 0 {
        // not one whole entry: the first is larger than the fetch size (before Fetch v3, or
        // KIP-74's exception not applied)
        let offset = blob.get(..8).map_or(fetch_offset, |b| i64::from_be_bytes(b.try_into().expect("8 bytes")));
        let entry_size = blob
            .get(8..12)
            .and_then(|b| usize::try_from(i32::from_be_bytes(b.try_into().expect("4 bytes"))).ok())
            .map(|size| 12 + size);
        let source = gregor_protocol::Error::MessageLargerThanFetch {
            location: MessageLocation { topic: Some(topic.to_owned()), partition: Some(partition.partition), offset },
            entry_size,
            fetched_bytes: blob.len(),
        };
        return Err(Stop::TooLarge(source));
    }
    Ok(next_offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use gregor_protocol::{Compression, Message, MessageAndOffset, MessageSet};

    fn set(first: i64, values: &[&str], codec: Compression) -> MessageSet {
        let inner: Vec<MessageAndOffset> = values
            .iter()
            .enumerate()
            .map(|(i, v)| MessageAndOffset::new(first + i as i64, Message::new(None, Some(Bytes::from(v.to_string())))))
            .collect();
        if codec == Compression::None {
            MessageSet::encode(&inner).unwrap()
        } else {
            MessageSet::encode(&[MessageSet::wrap(&inner, codec).unwrap()]).unwrap()
        }
    }

    fn part(error_code: i16, high_watermark: i64, message_set: MessageSet) -> FetchResponsePartition {
        FetchResponsePartition::new(2, error_code, high_watermark, message_set)
    }

    fn offsets(class: &FetchClass) -> (Vec<i64>, Option<i64>, i64) {
        match class {
            FetchClass::Data { messages, next_offset, high_watermark } => {
                (messages.iter().map(|m| m.offset).collect(), *next_offset, *high_watermark)
            }
            other => panic!("expected data, got {other:?}"),
        }
    }

    #[test]
    fn data_starts_at_the_fetch_offset_and_drops_a_cut_tail() {
        let gz = set(5, &["a", "b", "c", "d"], Compression::Gzip);
        assert_eq!(offsets(&classify_fetch("t", &part(0, 12, gz), 7)), (vec![7, 8], Some(9), 12));
        assert_eq!(offsets(&classify_fetch("t", &part(0, 3, MessageSet::new()), 3)), (vec![], None, 3));
        let two = set(0, &["one", "two"], Compression::None);
        let cut = MessageSet::from_bytes(two.as_bytes().slice(..two.len() - 3));
        assert_eq!(offsets(&classify_fetch("t", &part(0, 2, cut), 0)), (vec![0], Some(1), 2));
    }

    #[test]
    fn a_message_larger_than_the_fetch_says_what_it_needs() {
        let full = set(4, &[&"x".repeat(300)], Compression::None);
        let cut = MessageSet::from_bytes(full.as_bytes().slice(..100));
        match classify_fetch("t", &part(0, 5, cut), 4) {
            FetchClass::MessageTooLarge { offset: 4, needed, source } => {
                assert_eq!(needed, full.len());
                assert!(matches!(source, gregor_protocol::Error::MessageLargerThanFetch { .. }));
            }
            other => panic!("{other:?}"),
        }
        // the size field itself cut off: the need is unknown, the set undecodable
        let header = MessageSet::from_bytes(full.as_bytes().slice(..10));
        assert!(matches!(
            classify_fetch("t", &part(0, 5, header), 4),
            FetchClass::Corrupt(gregor_protocol::Error::MessageLargerThanFetch { entry_size: None, .. })
        ));
    }

    #[test]
    fn a_bad_crc_is_corrupt() {
        let mut bad = set(0, &["a"], Compression::None).as_bytes().to_vec();
        bad[12] ^= 0xff;
        assert!(matches!(
            classify_fetch("t", &part(0, 1, MessageSet::from_bytes(bad.into())), 0),
            FetchClass::Corrupt(_)
        ));
    }

    #[test]
    fn codes_are_out_of_range_retried_or_failed() {
        let table: &[(i16, &str)] = &[
            (1, "out of range"),
            (3, "retry"),   // UnknownTopicOrPartition
            (5, "retry"),   // LeaderNotAvailable
            (6, "retry"),   // NotLeaderForPartition
            (7, "retry"),   // RequestTimedOut
            (8, "retry"),   // BrokerNotAvailable
            (9, "retry"),   // ReplicaNotAvailable
            (2, "fail"),    // InvalidMessage
            (4, "fail"),    // InvalidFetchSize
            (10, "fail"),   // MessageSizeTooLarge
            (-1, "fail"),   // Unknown
            (56, "retry"),  // KafkaStorageError: another replica takes over
            (74, "retry"),  // FencedLeaderEpoch: the client's metadata is older than the broker's
            (75, "retry"),  // UnknownLeaderEpoch: the broker's is older than the client's
            (100, "retry"), // UnknownTopicId
            (103, "retry"), // OffsetNotAvailable: the new leader's high watermark catches up
            (87, "fail"),   // InvalidRecord
            (999, "fail"),  // a code this client does not know
        ];
        for &(code, want) in table {
            // the code wins over whatever set came with it
            let got = match classify_fetch("t", &part(code, -1, set(0, &["a"], Compression::None)), 0) {
                FetchClass::OffsetOutOfRange => "out of range",
                FetchClass::Retry(c) if c == ErrorCode::from_i16(code).unwrap() => "retry",
                FetchClass::Fail(c) if c == ErrorCode::from_i16(code).unwrap() => "fail",
                other => panic!("code {code}: {other:?}"),
            };
            assert_eq!(got, want, "code {code}");
        }
    }

    mod batches {
        use super::*;
        use gregor_protocol::messages::AbortedTransaction;
        use gregor_protocol::record::{
            ControlRecord, ControlRecordType, RecordBatchBuilder, TimestampType, BATCH_HEADER_SIZE,
        };

        const V4: FetchRead = FetchRead { version: 4, isolation: IsolationLevel::ReadUncommitted };
        const COMMITTED: FetchRead = FetchRead { version: 4, isolation: IsolationLevel::ReadCommitted };

        /// A batch at `base` of `values` (timestamps 1000 + i, header `h` = i).
        fn batch(base: i64, values: &[&str], codec: Compression) -> Vec<u8> {
            let mut b = RecordBatchBuilder::new(codec).base_offset(base);
            for (i, v) in values.iter().enumerate() {
                let n = i.to_string();
                b.append_with_headers(1000 + i as i64, Some(b"k"), Some(v.as_bytes()), &[("h", Some(n.as_bytes()))])
                    .unwrap();
            }
            b.finish().unwrap().to_vec()
        }

        fn txn(base: i64, producer: i64, values: &[&str]) -> Vec<u8> {
            let mut b = RecordBatchBuilder::new(Compression::None)
                .base_offset(base)
                .producer(producer, 0, 0)
                .transactional(true);
            for v in values {
                b.append(5, None, Some(v.as_bytes())).unwrap();
            }
            b.finish().unwrap().to_vec()
        }

        fn marker(offset: i64, producer: i64, kind: ControlRecordType) -> Vec<u8> {
            let mut b = RecordBatchBuilder::new(Compression::None)
                .base_offset(offset)
                .producer(producer, 0, 0)
                .transactional(true)
                .control(true);
            b.append(5, Some(&ControlRecord::key(kind)), Some(&ControlRecord::end_txn_marker_value(0))).unwrap();
            b.finish().unwrap().to_vec()
        }

        fn records(parts: &[Vec<u8>]) -> MessageSet {
            MessageSet::from_bytes(Bytes::from(parts.concat()))
        }

        fn values(class: &FetchClass) -> (Vec<(i64, String)>, Option<i64>) {
            match class {
                FetchClass::Data { messages, next_offset, .. } => (
                    messages
                        .iter()
                        .map(|m| (m.offset, String::from_utf8_lossy(m.value.as_deref().unwrap_or(b"-")).into_owned()))
                        .collect(),
                    *next_offset,
                ),
                other => panic!("expected data, got {other:?}"),
            }
        }

        #[test]
        fn records_carry_timestamps_and_headers_from_the_fetch_offset_on() {
            for codec in
                [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd]
            {
                let data = records(&[batch(10, &["a", "b", "c"], codec), batch(13, &["d"], codec)]);
                let class = classify_fetch_at("t", &part(0, 14, data), 11, V4);
                let FetchClass::Data { messages, next_offset, high_watermark } = class else {
                    panic!("{codec}: {class:?}")
                };
                assert_eq!((next_offset, high_watermark), (Some(14), 14), "{codec}");
                assert_eq!(messages.iter().map(|m| m.offset).collect::<Vec<_>>(), [11, 12, 13], "{codec}");
                let b = &messages[0];
                assert_eq!((b.timestamp, b.timestamp_type), (1001, TimestampType::CreateTime));
                let headers: Vec<_> = b.headers.iter().map(|h| (h.key_str().unwrap().to_owned(), h.value)).collect();
                assert_eq!(headers, [("h".to_owned(), Some(Bytes::from_static(b"1")))]);
                assert_eq!(b.key.as_deref(), Some(&b"k"[..]));
            }
        }

        #[test]
        fn the_list_is_sized_from_whole_v2_batches_counts_held_to_a_quarter_of_the_bytes() {
            let (three, two) =
                (batch(0, &["a", "b", "c"], Compression::Snappy), batch(3, &["d", "e"], Compression::None));
            let whole = [three.clone(), two.clone()].concat();
            assert_eq!(BatchHeader::claimed_record_count(&whole), 5);
            // a partial trailing batch, and a Message v0 set, count nothing
            assert_eq!(BatchHeader::claimed_record_count(&whole[..whole.len() - 1]), 3);
            let v0 = set(0, &["x", "y"], Compression::None);
            assert_eq!(BatchHeader::claimed_record_count(v0.as_bytes()), 0);
            // a count the broker made up is held to a quarter of the bytes fetched
            let mut lying = two.clone();
            lying[BATCH_HEADER_SIZE - 4..BATCH_HEADER_SIZE].copy_from_slice(&i32::MAX.to_be_bytes());
            assert_eq!(BatchHeader::claimed_record_count(&lying), lying.len() / 4);
            lying[BATCH_HEADER_SIZE - 4..BATCH_HEADER_SIZE].copy_from_slice(&(-7i32).to_be_bytes());
            assert_eq!(BatchHeader::claimed_record_count(&lying), 0);
            // a negative or overflowing batch length stops the count
            let mut bad = whole.clone();
            bad[8..12].copy_from_slice(&(-1i32).to_be_bytes());
            assert_eq!(BatchHeader::claimed_record_count(&bad), 0);
            // and the records are read whatever the list was sized for
            let class = classify_fetch_at("t", &part(0, 5, records(&[three, two])), 0, V4);
            assert_eq!(values(&class).0.len(), 5);
        }

        #[test]
        fn message_v0_sets_read_the_same_through_either_decoder() {
            let gz = set(5, &["a", "b", "c", "d"], Compression::Gzip);
            let v0 = values(&classify_fetch("t", &part(0, 9, gz.clone()), 7));
            let v4 = values(&classify_fetch_at("t", &part(0, 9, gz), 7, V4));
            assert_eq!(v0, v4);
            assert_eq!(v4, (vec![(7, "c".to_owned()), (8, "d".to_owned())], Some(9)));
        }

        #[test]
        fn control_batches_are_skipped_but_passed() {
            // only a commit marker: no record, yet the next fetch must start after it
            let data = records(&[marker(7, 42, ControlRecordType::Commit)]);
            assert_eq!(values(&classify_fetch_at("t", &part(0, 8, data), 7, V4)), (vec![], Some(8)));
        }

        #[test]
        fn read_committed_drops_aborted_transactions_and_read_uncommitted_keeps_them() {
            // producer 1 aborts offsets 0-1, producer 2 commits 2-3, producer 1 then writes 6 in a
            // new transaction that commits
            let data = records(&[
                txn(0, 1, &["a0", "a1"]),
                txn(2, 2, &["c0", "c1"]),
                marker(4, 1, ControlRecordType::Abort),
                marker(5, 2, ControlRecordType::Commit),
                txn(6, 1, &["n0"]),
                marker(7, 1, ControlRecordType::Commit),
            ]);
            let mut p = part(0, 8, data);
            p.aborted_transactions =
                Some(vec![AbortedTransaction { producer_id: 1, first_offset: 0, ..Default::default() }]);
            let read = |r| values(&classify_fetch_at("t", &p, 0, r)).0.into_iter().map(|(_, v)| v).collect::<Vec<_>>();
            assert_eq!(read(COMMITTED), ["c0", "c1", "n0"]);
            assert_eq!(read(V4), ["a0", "a1", "c0", "c1", "n0"]);
            assert_eq!(values(&classify_fetch_at("t", &p, 0, COMMITTED)).1, Some(8));
        }

        #[test]
        fn a_batch_cut_before_its_end_says_what_it_needs() {
            let full = batch(3, &[&"x".repeat(500)], Compression::None);
            let cut = MessageSet::from_bytes(Bytes::from(full[..100].to_vec()));
            match classify_fetch_at("t", &part(0, 4, cut), 3, V4) {
                FetchClass::MessageTooLarge { offset: 3, needed, .. } => assert_eq!(needed, full.len()),
                other => panic!("{other:?}"),
            }
            let stub = MessageSet::from_bytes(Bytes::from(full[..10].to_vec()));
            assert!(matches!(classify_fetch_at("t", &part(0, 4, stub), 3, V4), FetchClass::Corrupt(_)));
            // a whole batch then a cut one: the whole one is data
            let two = [batch(0, &["a"], Compression::None), full[..100].to_vec()].concat();
            let data = MessageSet::from_bytes(Bytes::from(two));
            assert_eq!(values(&classify_fetch_at("t", &part(0, 4, data), 0, V4)), (vec![(0, "a".to_owned())], Some(1)));
        }

        #[test]
        fn a_bad_batch_crc_is_corrupt() {
            let mut bad = batch(0, &["a"], Compression::None);
            let last = bad.len() - 1;
            bad[last] ^= 0xff;
            assert!(matches!(
                classify_fetch_at("t", &part(0, 1, MessageSet::from_bytes(bad.into())), 0, V4),
                FetchClass::Corrupt(gregor_protocol::Error::Crc { .. })
            ));
        }

        #[test]
        fn isolation_levels_parse_as_kafka_names_them() {
            assert_eq!("read_committed".parse(), Ok(IsolationLevel::ReadCommitted));
            assert_eq!("READ_UNCOMMITTED".parse(), Ok(IsolationLevel::ReadUncommitted));
            assert!("committed".parse::<IsolationLevel>().is_err());
            assert_eq!(IsolationLevel::ReadCommitted.code(), 1);
            assert_eq!(IsolationLevel::default().to_string(), "read_uncommitted");
        }
    }
}

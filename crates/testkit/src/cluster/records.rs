//! The modern mode's append path for RecordBatch v2 — pure code.
//!
//! What a Kafka 3.x leader does with a Produce v3+ partition (`ProduceRequest.validateRecords`,
//! `LogValidator`, `ProducerStateManager`): exactly one RecordBatch v2, else 87 INVALID_RECORD;
//! its CRC-32C and records intact, else 2 CORRUPT_MESSAGE; no larger than `max.message.bytes`,
//! else 10 MESSAGE_TOO_LARGE. An idempotent batch (producer id >= 0) must continue its
//! producer's sequence on the partition: a retry of one of the last five batches is answered
//! with that batch's offset and not appended again, an older epoch is 47
//! INVALID_PRODUCER_EPOCH, a gap is 45 OUT_OF_ORDER_SEQUENCE_NUMBER. The broker writes the
//! base offset and its leader epoch into the batch header (neither is under the CRC) and
//! stores the producer's bytes otherwise unchanged, so a Fetch returns them byte for byte
//! (compression.type=producer). Transactions are not served: a transactional batch is 48
//! INVALID_TXN_STATE, as for a producer that began no transaction.

use std::collections::{HashMap, VecDeque};

use bytes::{Bytes, BytesMut};
use gregor_protocol::message::DecodeOptions;
use gregor_protocol::record::{Batches, MAGIC_V2};

use super::codes as code;
use super::log::ValidatedSet;
use super::state::ProducerBatches;

/// How many batches per producer a partition remembers for duplicate detection (Kafka's
/// `ProducerStateEntry.NUM_BATCHES_TO_RETAIN`).
const BATCHES_TO_RETAIN: usize = 5;

/// What appending a Produce v3+ partition comes to.
#[derive(Debug)]
pub(crate) enum Appended {
    /// Append this; the producer state to keep once appended is in `producer`.
    New(ValidatedSet, Option<(i64, ProducerBatches)>),
    /// A retry of a batch already in the log at this base offset: answer it, append nothing.
    Duplicate(i64),
}

/// Validates the records of one Produce v3+ partition for a log ending at `next_offset` led in
/// `leader_epoch`, against the partition's idempotent producers.
pub(crate) fn validate_batch(
    records: &Bytes,
    next_offset: i64,
    leader_epoch: i32,
    max_message_bytes: usize,
    producers: &HashMap<i64, ProducerBatches>,
) -> Result<Appended, i16> {
    let mut batches = Batches::new(records.clone(), &DecodeOptions::default());
    let batch = match batches.next() {
        Some(Ok(b)) if b.magic() == MAGIC_V2 => b,
        Some(Ok(_)) | None => return Err(code::INVALID_RECORD),
        Some(Err(_)) => return Err(code::CORRUPT_MESSAGE),
    };
    if batches.next().is_some() || batches.partial_trailing_bytes() > 0 {
        return Err(code::INVALID_RECORD);
    }
    if batch.raw().len() > max_message_bytes {
        return Err(code::MESSAGE_TOO_LARGE);
    }
    let header = *batch.header();
    let mut count = 0i64;
    for record in batch.records() {
        match record {
            Ok(r) if r.offset == header.base_offset + count => count += 1,
            _ => return Err(code::CORRUPT_MESSAGE),
        }
    }
    if count == 0 || count != i64::from(header.last_offset_delta) + 1 {
        return Err(code::INVALID_RECORD);
    }
    if header.is_transactional() {
        return Err(code::INVALID_TXN_STATE);
    }
    let producer = if header.producer_id >= 0 {
        let last_sequence = header.base_sequence.wrapping_add(header.last_offset_delta);
        let known = producers.get(&header.producer_id);
        match check_sequence(known, header.producer_epoch, header.base_sequence, last_sequence)? {
            Sequence::Duplicate(at) => return Ok(Appended::Duplicate(at)),
            Sequence::Next => {
                let mut kept = match known {
                    Some(k) if k.epoch == header.producer_epoch => k.clone(),
                    _ => ProducerBatches { epoch: header.producer_epoch, batches: VecDeque::new() },
                };
                if kept.batches.len() == BATCHES_TO_RETAIN {
                    kept.batches.pop_front();
                }
                kept.batches.push_back((header.base_sequence, last_sequence, next_offset));
                Some((header.producer_id, kept))
            }
        }
    } else {
        None
    };
    let mut bytes = BytesMut::from(&batch.raw()[..]);
    bytes[..8].copy_from_slice(&next_offset.to_be_bytes());
    bytes[12..16].copy_from_slice(&leader_epoch.to_be_bytes());
    let last = next_offset + count - 1;
    Ok(Appended::New(ValidatedSet::new(bytes.freeze(), vec![(next_offset, last, 0)], count), producer))
}

/// Where a batch's sequence numbers stand against its producer's state.
#[derive(Debug, PartialEq, Eq)]
enum Sequence {
    /// The next batch: append it.
    Next,
    /// A batch already appended at this base offset.
    Duplicate(i64),
}

fn check_sequence(known: Option<&ProducerBatches>, epoch: i16, first: i32, last: i32) -> Result<Sequence, i16> {
    let Some(known) = known else {
        // a producer this partition has not seen must start at 0
        return if first == 0 { Ok(Sequence::Next) } else { Err(code::OUT_OF_ORDER_SEQUENCE_NUMBER) };
    };
    if epoch < known.epoch {
        return Err(code::INVALID_PRODUCER_EPOCH);
    }
    if epoch > known.epoch {
        // a bumped epoch starts its sequences again
        return if first == 0 { Ok(Sequence::Next) } else { Err(code::OUT_OF_ORDER_SEQUENCE_NUMBER) };
    }
    if let Some(&(_, _, at)) = known.batches.iter().find(|(f, l, _)| *f == first && *l == last) {
        return Ok(Sequence::Duplicate(at));
    }
    let expected = known.batches.back().map_or(0, |(_, l, _)| l.wrapping_add(1) & i32::MAX);
    if first == expected {
        Ok(Sequence::Next)
    } else {
        Err(code::OUT_OF_ORDER_SEQUENCE_NUMBER)
    }
}

/// The first record at or after `timestamp` in `records` (a log's batches): its offset and
/// timestamp, as ListOffsets v1+ answers a time; `None` past the last record.
pub(crate) fn offset_for_time(records: Bytes, timestamp: i64) -> Option<(i64, i64)> {
    for batch in Batches::new(records, &DecodeOptions::default()) {
        let batch = batch.ok()?;
        if batch.header().max_timestamp < timestamp || batch.is_control() {
            continue;
        }
        for record in batch.records() {
            let record = record.ok()?;
            if record.timestamp >= timestamp {
                return Some((record.offset, record.timestamp));
            }
        }
    }
    None
}

/// The offset and timestamp of the record with the largest timestamp (the first of equals), as
/// ListOffsets v7+ answers -3 (MAX_TIMESTAMP); `None` for an empty log.
pub(crate) fn max_timestamp(records: Bytes) -> Option<(i64, i64)> {
    let mut best: Option<(i64, i64)> = None;
    for batch in Batches::new(records, &DecodeOptions::default()) {
        let batch = batch.ok()?;
        if batch.is_control() {
            continue;
        }
        for record in batch.records() {
            let record = record.ok()?;
            if best.is_none_or(|(_, t)| record.timestamp > t) {
                best = Some((record.offset, record.timestamp));
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use gregor_protocol::record::RecordBatchBuilder;
    use gregor_protocol::Compression;

    fn batch(codec: Compression, n: usize, producer: Option<(i64, i16, i32)>) -> Bytes {
        let mut b = RecordBatchBuilder::new(codec);
        if let Some((id, epoch, seq)) = producer {
            b = b.producer(id, epoch, seq);
        }
        for i in 0..n {
            b.append(1_700_000_000_000 + i as i64, Some(b"k"), Some(format!("v{i}").as_bytes())).unwrap();
        }
        b.finish().unwrap()
    }

    fn append(records: &Bytes, next: i64, producers: &HashMap<i64, ProducerBatches>) -> Result<Appended, i16> {
        validate_batch(records, next, 7, 1_000_000, producers)
    }

    #[test]
    fn a_batch_gets_its_base_offset_and_leader_epoch_and_keeps_its_bytes() {
        for codec in [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
            let records = batch(codec, 3, None);
            let Ok(Appended::New(set, None)) = append(&records, 40, &HashMap::new()) else { panic!("{codec:?}") };
            assert_eq!(set.count, 3);
            let stored = set.bytes().clone();
            assert_eq!(&stored[..8], &40i64.to_be_bytes());
            assert_eq!(&stored[12..16], &7i32.to_be_bytes());
            assert_eq!(&stored[16..], &records[16..], "the rest is the producer's bytes");
            let read: Vec<i64> = Batches::new(stored, &DecodeOptions::default())
                .flat_map(|b| b.unwrap().records().map(|r| r.unwrap().offset).collect::<Vec<_>>())
                .collect();
            assert_eq!(read, vec![40, 41, 42], "{codec:?}");
        }
    }

    #[test]
    fn broken_batches_get_kafkas_codes() {
        let good = batch(Compression::None, 2, None);
        let mut bad_crc = BytesMut::from(&good[..]);
        let last = bad_crc.len() - 1;
        bad_crc[last] ^= 1;
        assert_eq!(append(&bad_crc.freeze(), 0, &HashMap::new()).unwrap_err(), code::CORRUPT_MESSAGE);
        let mut two = BytesMut::from(&good[..]);
        two.extend_from_slice(&good);
        assert_eq!(append(&two.freeze(), 0, &HashMap::new()).unwrap_err(), code::INVALID_RECORD);
        assert_eq!(append(&good.slice(..good.len() - 3), 0, &HashMap::new()).unwrap_err(), code::INVALID_RECORD);
        assert_eq!(append(&Bytes::new(), 0, &HashMap::new()).unwrap_err(), code::INVALID_RECORD);
        assert_eq!(validate_batch(&good, 0, 0, good.len() - 1, &HashMap::new()).unwrap_err(), code::MESSAGE_TOO_LARGE);
        // a Message v0 set is not a RecordBatch v2
        let v0 = gregor_protocol::MessageSet::from_messages(
            [gregor_protocol::Message::new(None, Some(Bytes::from_static(b"x")))],
            Compression::None,
        )
        .unwrap();
        assert_eq!(append(v0.as_bytes(), 0, &HashMap::new()).unwrap_err(), code::INVALID_RECORD);
        let txn = {
            let mut b = RecordBatchBuilder::new(Compression::None).producer(1, 0, 0).transactional(true);
            b.append(1, None, Some(b"v")).unwrap();
            b.finish().unwrap()
        };
        assert_eq!(append(&txn, 0, &HashMap::new()).unwrap_err(), code::INVALID_TXN_STATE);
    }

    #[test]
    fn idempotent_batches_continue_their_sequence_and_retries_are_not_appended_twice() {
        let mut producers = HashMap::new();
        let mut next = 0;
        let keep = |records: &Bytes, producers: &mut HashMap<i64, ProducerBatches>, next: &mut i64| match append(
            records, *next, producers,
        )
        .unwrap()
        {
            Appended::New(set, Some((id, state))) => {
                producers.insert(id, state);
                let at = *next;
                *next += set.count;
                at
            }
            other => panic!("{other:?}"),
        };
        let first = batch(Compression::None, 3, Some((5, 0, 0)));
        assert_eq!(keep(&first, &mut producers, &mut next), 0);
        let second = batch(Compression::Gzip, 2, Some((5, 0, 3)));
        assert_eq!(keep(&second, &mut producers, &mut next), 3);
        // retries of either batch are answered with their offsets
        assert!(matches!(append(&first, next, &producers), Ok(Appended::Duplicate(0))));
        assert!(matches!(append(&second, next, &producers), Ok(Appended::Duplicate(3))));
        // a gap, a stale epoch, a stranger not starting at 0
        let gap = batch(Compression::None, 1, Some((5, 0, 6)));
        assert_eq!(append(&gap, next, &producers).unwrap_err(), code::OUT_OF_ORDER_SEQUENCE_NUMBER);
        let stranger = batch(Compression::None, 1, Some((6, 0, 4)));
        assert_eq!(append(&stranger, next, &producers).unwrap_err(), code::OUT_OF_ORDER_SEQUENCE_NUMBER);
        // a new epoch starts at 0; then the old epoch is fenced
        let bumped = batch(Compression::None, 1, Some((5, 1, 0)));
        assert_eq!(keep(&bumped, &mut producers, &mut next), 5);
        let stale = batch(Compression::None, 1, Some((5, 0, 5)));
        assert_eq!(append(&stale, next, &producers).unwrap_err(), code::INVALID_PRODUCER_EPOCH);
        // only the last five batches are remembered
        for seq in 1..=5 {
            keep(&batch(Compression::None, 1, Some((5, 1, seq))), &mut producers, &mut next);
        }
        assert_eq!(producers[&5].batches.len(), BATCHES_TO_RETAIN);
        assert_eq!(append(&bumped, next, &producers).unwrap_err(), code::OUT_OF_ORDER_SEQUENCE_NUMBER);
    }

    #[test]
    fn times_find_the_first_record_at_or_after_them() {
        let mut log = BytesMut::new();
        for (base, n) in [(0i64, 3usize), (3, 2)] {
            let mut b = RecordBatchBuilder::new(Compression::None).base_offset(base);
            for i in 0..n {
                b.append(1000 + (base + i as i64) * 10, None, Some(b"v")).unwrap();
            }
            log.extend_from_slice(&b.finish().unwrap());
        }
        let log = log.freeze();
        assert_eq!(offset_for_time(log.clone(), 0), Some((0, 1000)));
        assert_eq!(offset_for_time(log.clone(), 1015), Some((2, 1020)));
        assert_eq!(offset_for_time(log.clone(), 1040), Some((4, 1040)));
        assert_eq!(offset_for_time(log.clone(), 1041), None);
        assert_eq!(max_timestamp(log), Some((4, 1040)));
        assert_eq!(max_timestamp(Bytes::new()), None);
    }
}

//! Eager compression: a partition of a compressed topic gets its records compressed in chunks
//! as they arrive, off the engine's task, while it waits for its linger; its batch then goes
//! as the wrappers of its chunks and of its last records.

use std::collections::{HashMap, VecDeque};

use gregor_protocol::{Compression, MessageSet};

use super::blocking::offload;
use super::Engine;
use crate::accumulator::PartitionKey;
use crate::blocks::Blocks;
use crate::delivery::Pending;

/// Eager compression: a partition of a compressed topic gets its records compressed in chunks
/// of about this many bytes as they arrive, off the engine's task, rather than all at once
/// when its batch is sent. A batch is then sent as the wrappers of its chunks and of its last
/// records (a message set may hold several wrappers; a 0.8.2 broker writes them as one), and
/// the compression left when the linger ends is that of the last few records: records of a
/// partition that sends a batch every linger wait that much less, where all the round's
/// compression was done after the linger (a gzip round of 420 records: about 0.8 ms), on a
/// multi-thread runtime on the workers that also read the responses.
pub(super) const CHUNK_BYTES: usize = 16 * 1024;

/// A chunk's wrapper: compressed, or being compressed.
pub(super) enum ChunkSet {
    Done(Result<MessageSet, gregor_protocol::Error>),
    Running(tokio::task::JoinHandle<Result<MessageSet, gregor_protocol::Error>>),
}

/// Records of a partition's queue compressed ahead of their batch: the records with sequence
/// numbers `first` to `last`, `records` of them in a row.
pub(super) struct Chunk {
    pub(super) first: u64,
    pub(super) last: u64,
    pub(super) records: usize,
    pub(super) set: ChunkSet,
}

/// The chunks the engine made and the partitions due one.
#[derive(Default)]
pub(super) struct Chunks {
    /// The chunks compressed ahead of their batches, oldest first, per partition.
    pub(super) made: HashMap<PartitionKey, VecDeque<Chunk>>,
    /// Partitions due a chunk that waited for their batch in flight (their loose records
    /// kept, so the chunk still begins where the next batch will).
    pub(super) waiting: Vec<PartitionKey>,
}

impl Engine {
    /// Starts compressing the records of every partition that took in [`CHUNK_BYTES`] since
    /// its last chunk, while it waits for its linger: on a multi-thread runtime on a task of
    /// its own; on a current-thread one gzip on the blocking pool (a 16 KiB chunk takes about
    /// 0.2 ms), snappy and lz4 in place (about 10 us).
    pub(super) fn start_chunks(&mut self) {
        let mut due = self.acc.take_due_chunks();
        if !self.chunks.waiting.is_empty() {
            due.append(&mut self.chunks.waiting);
            due.sort_unstable();
            due.dedup();
        }
        for tp in due {
            let codec = self.config.compression_for(&tp.topic);
            // only while the partition waits for its linger: one whose broker's last round was
            // a whole batch, or with a batch's worth queued (or records still coming in faster
            // than the task takes them) is sending as fast as it may, its batches compressed
            // whole on the rounds' tasks (chunks there only cost: a chunk cut by a batch's end
            // is compressed twice, they hold memory, and on a current-thread runtime they
            // are compressed on its thread, where a round's go to the blocking pool; gzip, 6
            // partitions, current-thread: 523k -> 474k msg/s, 40 -> 75 MiB; lz4, with chunks
            // made after whole batches: 2.82-3.03 M against 3.14-3.48 M msg/s); those records
            // are let go for chunking
            let busy = !self.input.incoming.is_empty()
                || self.acc.leader(&tp).is_some_and(|b| self.rounds.full.contains(&b))
                || self.acc.queued_len(&tp) >= self.config.batch_num_messages()
                // a leader that takes RecordBatch v2 gets one batch compressed whole: chunks
                // are message v0 wrappers
                || self.acc.leader(&tp).is_some_and(|b| self.leader_takes_record_batches(b));
            if !busy && codec != Compression::None && self.acc.batches_in_flight(&tp) > 0 {
                // its next batch waits for this one: the chunk waits too, its records kept
                // (letting them go would leave the partition's later chunks out of line with
                // its next batch, compressed for nothing: at 464k msg/s with snappy, 6.2 of
                // 10.1 thousand chunks were on a multi-thread runtime, 9.2 of 11.7 thousand on
                // a current-thread one)
                self.chunks.waiting.push(tp);
                continue;
            }
            // their bytes copied only for a chunk that is made
            let make = codec != Compression::None && !busy;
            let Some((records, plain)) = self.acc.take_loose(&tp, make) else { continue };
            if !make {
                continue;
            }
            let (Some(first), Some(last)) = (records.first(), records.last()) else { continue };
            let (first, last, count) = (first.seq(), last.seq(), records.len());
            let plain = match plain {
                Some(plain) => Ok(plain),
                // records that kept their own bytes (appended without the log: tests)
                None => MessageSet::from_encoded(records.iter().map(|p| p.message()), Compression::None),
            };
            // a chunk is a Message v0 wrapper: its messages' CRCs are read (`crate::crc`)
            let fill = self.rounds.crcs.may_be_missing();
            let plain = plain.map(|plain| if fill { crate::crc::with_crcs(&plain) } else { plain });
            let set = match plain {
                Ok(plain) => match (&self.rounds.compressing, tokio::runtime::Handle::try_current()) {
                    // current-thread: gzip on the blocking pool, within the rounds' budget of
                    // threads (more threads there cost: the pool then hands each job to a cold
                    // one, and each keeps an allocator arena of its own)
                    (Some(compressing), Ok(_)) if codec == Compression::Gzip => {
                        let compressing = compressing.clone();
                        ChunkSet::Running(tokio::spawn(offload(compressing, move || plain.compress(codec))))
                    }
                    // multi-thread: on the workers, as the rounds' sets are built
                    (None, Ok(_)) => ChunkSet::Running(tokio::spawn(async move { plain.compress(codec) })),
                    _ => ChunkSet::Done(plain.compress(codec)),
                },
                Err(e) => ChunkSet::Done(Err(e)),
            };
            self.chunks.made.entry(tp).or_default().push_back(Chunk { first, last, records: count, set });
        }
    }

    /// True when the connection to `broker` is open and speaks Produce v3 or later (RecordBatch
    /// v2, see `format`).
    fn leader_takes_record_batches(&self, broker: i32) -> bool {
        self.leader_format(broker) == Some(true)
    }

    /// Whether `broker` takes RecordBatch v2 (speaks Produce v3 or later), when its connection
    /// is open and its versions known; `None` otherwise.
    pub(super) fn leader_format(&self, broker: i32) -> Option<bool> {
        let pool = self.meta.cache.pool();
        let conn = pool.broker_addr(broker).and_then(|addr| pool.cached(&addr))?;
        let version = conn.client_version::<gregor_protocol::messages::ProduceRequest>().ok()?;
        Some(version >= super::format::FIRST_RECORD_BATCH_VERSION)
    }

    /// The chunks that begin `records` (a fresh batch of `tp`), in order, and how many records
    /// they cover. Chunks of later records stay; the others are stale (their records went
    /// another way, or only some of them are in this batch) and are dropped.
    pub(super) fn take_chunks(&mut self, tp: &PartitionKey, records: &Blocks<Pending>) -> (Vec<ChunkSet>, usize) {
        let Some(chunks) = self.chunks.made.get_mut(tp) else { return (Vec::new(), 0) };
        let mut sets = Vec::new();
        let mut covered = 0;
        let seq = |i: usize| records.get(i).map(|p| p.seq());
        while let Some(c) = chunks.front() {
            let fits = covered + c.records <= records.len()
                && seq(covered) == Some(c.first)
                && seq(covered + c.records - 1) == Some(c.last);
            if fits {
                covered += c.records;
                sets.push(chunks.pop_front().expect("looked at").set);
                continue;
            }
            // a chunk whose first record is still queued begins after this batch; one whose
            // first record is in it was cut by its end; one whose first record is neither is of
            // records that went another way (a record held for metadata can come back with an
            // older number, so the tests are membership, not order)
            let in_batch = records.iter().skip(covered).any(|p| p.seq() == c.first);
            if !in_batch && self.acc.queued(tp).is_some_and(|mut q| q.any(|p| p.seq() == c.first)) {
                break;
            }
            if let ChunkSet::Running(task) = chunks.pop_front().expect("looked at").set {
                task.abort();
            }
        }
        if chunks.is_empty() {
            self.chunks.made.remove(tp);
        }
        (sets, covered)
    }
}

/// One message set of a batch's chunks' wrappers and, after them, the wrapper of its other
/// records (`rest`, compressed here with `codec`).
pub(super) fn join_chunks(
    chunks: Vec<ChunkSet>,
    rest: Option<MessageSet>,
    codec: Compression,
) -> Result<MessageSet, gregor_protocol::Error> {
    let mut sets = Vec::with_capacity(chunks.len() + 1);
    for chunk in chunks {
        match chunk {
            ChunkSet::Done(set) => sets.push(set?),
            ChunkSet::Running(_) => unreachable!("the round's task waited for every chunk"),
        }
    }
    if let Some(rest) = rest {
        sets.push(rest.compress(codec)?);
    }
    let mut joined = bytes::BytesMut::with_capacity(sets.iter().map(MessageSet::len).sum());
    for set in &sets {
        joined.extend_from_slice(set.as_bytes());
    }
    Ok(MessageSet::from_bytes(joined.freeze()))
}

#[cfg(test)]
mod tests {
    use tokio::time::Instant;

    use super::*;
    use crate::engine::testing::{engine_with, pending};

    fn engine() -> Engine {
        engine_with(Compression::None)
    }

    fn chunk(first: u64, last: u64, tag: u8) -> Chunk {
        let set = ChunkSet::Done(Ok(MessageSet::from_bytes(bytes::Bytes::from(vec![tag]))));
        Chunk { first, last, records: (last - first + 1) as usize, set }
    }

    fn tags(sets: &[ChunkSet]) -> Vec<u8> {
        sets.iter()
            .map(|s| match s {
                ChunkSet::Done(Ok(set)) => set.as_bytes()[0],
                _ => panic!("a done chunk"),
            })
            .collect()
    }

    /// A chunk stands for exactly the records it was made of, in a row at the start of the
    /// batch: one of records that went another way, or cut by the batch's end, is dropped;
    /// one of records still queued waits for their batch.
    #[tokio::test]
    async fn chunks_go_only_with_the_records_they_were_made_of() {
        let mut e = engine();
        let tp = PartitionKey::new("t", 0);
        // queued after the first batch: records 5 to 9
        for seq in 5..10 {
            e.acc.append(&tp, pending(seq, "v"), Instant::now());
        }
        let chunks = [chunk(100, 101, 9), chunk(0, 2, 1), chunk(3, 5, 2), chunk(6, 8, 3)];
        e.chunks.made.insert(tp.clone(), chunks.into_iter().collect());
        // a batch of records 0 to 4: the chunk of records gone another way is dropped, 0-2
        // goes, 3-5 is cut by the batch's end (dropped), 6-8 is of queued records (kept)
        let batch: Blocks<Pending> = (0..5).map(|seq| pending(seq, "v")).collect();
        let (sets, covered) = e.take_chunks(&tp, &batch);
        assert_eq!((tags(&sets), covered), (vec![1], 3));
        assert_eq!(e.chunks.made[&tp].iter().map(|c| c.first).collect::<Vec<_>>(), [6]);
        // a batch of records 5 to 9: 6-8 does not begin it, so it goes with none
        let batch: Blocks<Pending> = (5..10).map(|seq| pending(seq, "v")).collect();
        let (sets, covered) = e.take_chunks(&tp, &batch);
        assert_eq!((sets.len(), covered), (0, 0));
        assert!(!e.chunks.made.contains_key(&tp), "nothing left for the partition");
    }

    /// A partition due a chunk while its batch is in flight keeps its loose records until the
    /// batch is done, so the chunk still begins its next batch (before, those records were let
    /// go and the partition's later chunks, out of line with the batch, were dropped).
    #[tokio::test]
    async fn a_chunk_due_while_its_batch_is_in_flight_waits_and_begins_the_next_batch() {
        let mut e = engine_with(Compression::Snappy);
        let tp = PartitionKey::new("t", 0);
        let now = Instant::now();
        e.acc.set_leader(&tp, Some(1));
        let drain = |e: &mut Engine| {
            e.acc.set_flushing(true);
            let mut rounds = e.acc.drain(now);
            e.acc.set_flushing(false);
            assert_eq!(rounds.len(), 1);
            rounds.pop().unwrap()
        };
        e.acc.append(&tp, pending(0, "in flight"), now);
        let in_flight = drain(&mut e);
        // records not in the arena count as large: two make a chunk's worth
        for seq in 1..3 {
            e.acc.append(&tp, pending(seq, "v"), now);
        }
        e.start_chunks();
        assert!(!e.chunks.made.contains_key(&tp), "no chunk while the batch is in flight");
        assert_eq!(e.chunks.waiting, std::slice::from_ref(&tp));
        e.acc.append(&tp, pending(3, "v"), now);
        e.start_chunks();
        assert!(!e.chunks.made.contains_key(&tp), "still in flight");
        e.acc.round_done(1);
        for batch in in_flight.batches {
            e.acc.done(batch);
        }
        e.start_chunks();
        assert!(e.chunks.waiting.is_empty());
        let made: Vec<_> = e.chunks.made[&tp].iter().map(|c| (c.first, c.last, c.records)).collect();
        assert_eq!(made, [(1, 3, 3)], "one chunk of every record since the batch");
        let mut next = drain(&mut e);
        let (sets, covered) = e.take_chunks(&tp, &next.batches.pop().unwrap().records);
        assert_eq!((sets.len(), covered), (1, 3), "the chunk is the next batch's");
        // a broker whose last round was a whole batch is sent to as fast as batches fill: its
        // partitions make no chunks, in flight or not, and their loose records are let go
        e.rounds.full.insert(1);
        for seq in 4..6 {
            e.acc.append(&tp, pending(seq, "v"), now);
        }
        e.start_chunks();
        assert!(!e.chunks.made.contains_key(&tp) && e.chunks.waiting.is_empty());
        assert!(e.acc.take_loose(&tp, true).is_none(), "let go");
    }

    /// A chunk is a Message v0 wrapper: once `send` may have left CRCs out (the producer's
    /// rounds went out as RecordBatch v2 for a while), its messages get theirs computed.
    #[tokio::test]
    async fn a_chunk_of_messages_sent_without_their_crc_has_them_computed() {
        let mut e = engine_with(Compression::Snappy);
        let tp = PartitionKey::new("t", 0);
        e.acc.set_leader(&tp, Some(1));
        e.rounds.crcs.round_in(true);
        e.rounds.crcs.round_in(false);
        let open = |seq: u64, value: &str| {
            let mut bytes = bytes::BytesMut::new();
            gregor_protocol::Message::new(None, Some(bytes::Bytes::copy_from_slice(value.as_bytes())))
                .encode_without_crc(&mut bytes)
                .unwrap();
            let message = gregor_protocol::EncodedMessage::from_bytes(bytes.freeze()).unwrap();
            let mut p = Pending::new(crate::topic::TopicId::UNREGISTERED, Some(0), message, None, None);
            p.seq = seq;
            p
        };
        // records not in the arena count as large: two make a chunk's worth
        for seq in 0..2 {
            e.acc.append(&tp, open(seq, &format!("value {seq}")), Instant::now());
        }
        e.start_chunks();
        let chunk = e.chunks.made.get_mut(&tp).and_then(VecDeque::pop_front).expect("a chunk made");
        let ChunkSet::Done(set) = chunk.set else { panic!("compressed in place on a current-thread runtime") };
        let decoded = set.unwrap().decode(&gregor_protocol::message::DecodeOptions::default()).unwrap();
        let values: Vec<_> = decoded.messages.iter().map(|m| m.message.value.clone().unwrap()).collect();
        assert_eq!(values, [bytes::Bytes::from("value 0"), bytes::Bytes::from("value 1")]);
    }

    /// The chunks' wrappers and the other records' one make one set whose messages are the
    /// batch's, in order.
    #[test]
    fn a_chunked_batch_is_one_set_of_its_messages_in_order() {
        for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
            let records: Vec<Pending> = (0..7).map(|i| pending(i, &format!("value {i}"))).collect();
            let wrap = |r: &[Pending]| {
                MessageSet::from_encoded(r.iter().map(Pending::message), Compression::None).unwrap().compress(codec)
            };
            let chunks = vec![ChunkSet::Done(wrap(&records[..3])), ChunkSet::Done(wrap(&records[3..5]))];
            let rest = MessageSet::from_encoded(records[5..].iter().map(Pending::message), Compression::None).unwrap();
            let set = join_chunks(chunks, Some(rest), codec).unwrap();
            let top: Vec<_> = set.entries().map(|e| e.unwrap().message).collect();
            assert_eq!(top.len(), 3, "{codec:?}: three wrappers");
            assert!(top.iter().all(|m| m.compression().unwrap() == codec));
            let decoded = set.decode(&gregor_protocol::message::DecodeOptions::default()).unwrap();
            let values: Vec<_> = decoded.messages.iter().map(|m| m.message.value.clone().unwrap()).collect();
            let expected: Vec<_> = (0..7).map(|i| bytes::Bytes::from(format!("value {i}"))).collect();
            assert_eq!(values, expected, "{codec:?}");
        }
        // a chunk that failed fails the batch
        let failed = ChunkSet::Done(Err(gregor_protocol::Error::UnexpectedNull { field: "test" }));
        assert!(join_chunks(vec![failed], None, Compression::Gzip).is_err());
    }
}

//! Records in: each record's topic (the engine's own allocation of its name), its partition
//! (explicit, the partitioner's choice, or held until the topic's metadata comes) and its
//! queue in the accumulator, its message copied once to the end of its partition's log.

use std::collections::HashMap;
use std::sync::Arc;

use gregor_protocol::EncodedMessage;
use tokio::time::Instant;

use super::metadata::TopicParts;
use super::Engine;
use crate::accumulator::{Accumulator, PartitionKey};
use crate::delivery::Pending;
use crate::error::Error;
use crate::inbox::{InboxReceiver, Incoming, PackedRecord};
use crate::log::Appender;
use crate::message::{detach, own_copy, SHARED_MAX};
use crate::partitioner::{Choice, PartitionerState};
use crate::refresh::RefreshSchedule;
use crate::topic::{Topic, TopicId};

/// The engine's side of the inbox.
pub(super) struct Inbound {
    pub(super) inbox: InboxReceiver,
    /// Commands taken from the inbox, not yet handled.
    pub(super) incoming: Incoming,
    /// False once every producer handle is dropped or the producer closed: nothing more comes.
    pub(super) open: bool,
    /// The number of the next record taken (records are numbered in order of arrival).
    pub(super) next_seq: u64,
    /// The last record's topic, and a key of the engine's own allocation of it (an element of
    /// the known topics) whose partition [`Engine::on_packed`] sets: a record of the last
    /// topic is queued without a reference count raised and lowered.
    pub(super) last_topic: Option<(TopicId, PartitionKey)>,
    /// The engine's own allocation of each topic its records came with (the known topics'),
    /// by the producer's number for it.
    pub(super) names: HashMap<TopicId, Arc<str>>,
    /// The engine waits (or waited, and has not taken everything since) for more than the
    /// first record since this time: the arrival stamp of what it takes meanwhile.
    pub(super) waited_since: Option<Instant>,
    /// The wall clock, for the records written as RecordBatch v2 as they come.
    pub(super) wall: Wall,
}

/// Wall-clock milliseconds since the epoch (a RecordBatch v2 record's CreateTime, when the
/// application gave none) for a reading of the engine's clock: the wall clock read at most
/// once a second, the time since then from the engine's readings (a clock reading per record
/// would cost more than the rest of its routing).
pub(super) struct Wall {
    at: Instant,
    ms: i64,
    /// The last reading asked for and its time (the records the engine takes in one go share
    /// their arrival).
    last: (Instant, i64),
}

impl Wall {
    fn read(at: Instant) -> Wall {
        let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
        let ms = i64::try_from(ms).unwrap_or(i64::MAX);
        Wall { at, ms, last: (at, ms) }
    }

    /// The wall-clock time of `at`.
    pub(super) fn ms(&mut self, at: Instant) -> i64 {
        if at == self.last.0 {
            return self.last.1;
        }
        let ms = if at < self.at {
            // an earlier arrival (a record that waited for its topic's metadata)
            self.ms - i64::try_from(self.at.duration_since(at).as_millis()).unwrap_or(0)
        } else {
            if at.duration_since(self.at) >= std::time::Duration::from_secs(1) {
                *self = Wall::read(at);
            }
            self.ms + i64::try_from(at.duration_since(self.at).as_millis()).unwrap_or(0)
        };
        self.last = (at, ms);
        ms
    }
}

impl Inbound {
    pub(super) fn new(inbox: InboxReceiver) -> Inbound {
        Inbound {
            inbox,
            incoming: Incoming::default(),
            open: true,
            next_seq: 0,
            last_topic: None,
            names: HashMap::new(),
            waited_since: None,
            wall: Wall::read(Instant::now()),
        }
    }
}

impl Engine {
    /// The engine's own allocation of the topic numbered `id` (learning the topic, and asking
    /// for its metadata, the first time): the queues' keys, whose counts only this task
    /// changes; the last topic seen is checked first.
    pub(super) fn own_topic(&mut self, id: TopicId, now: Instant) -> Arc<str> {
        if let Some((last, tp)) = &self.input.last_topic {
            if *last == id {
                return tp.topic.clone();
            }
        }
        let own = match self.input.names.get(&id) {
            Some(own) => own.clone(),
            None => {
                // a number the engine has not seen: its name from the producer's names (which
                // outlive the engine's records), then the engine's copy of it
                let name = id.name().unwrap_or_else(|| Arc::from(""));
                let own = match self.meta.topics.get_key_value(&*name) {
                    Some((known, _)) => known.clone(),
                    None => {
                        let own: Arc<str> = Arc::from(&*name);
                        self.meta.topics.insert(own.clone(), Topic::from(Arc::<str>::from(&*name)));
                        self.meta.schedule.want(now);
                        own
                    }
                };
                self.input.names.insert(id, own.clone());
                own
            }
        };
        self.input.last_topic = Some((id, PartitionKey { topic: own.clone(), partition: 0 }));
        own
    }

    /// The name of the topic numbered `id`, for a record's result.
    pub(super) fn topic_of(&self, id: TopicId) -> Topic {
        match self.input.names.get(&id) {
            Some(own) => self.result_topic(own),
            None => id.name().map_or_else(Topic::unknown, Topic::from),
        }
    }

    /// The engine's allocation of the name `key` for results (see the known topics).
    pub(super) fn result_topic(&self, key: &Arc<str>) -> Topic {
        self.meta.topics.get(key).cloned().unwrap_or_else(|| Topic::from(key.clone()))
    }

    /// A small record from the inbox, its message's bytes still in the inbox's block: placed
    /// as [`Engine::route`] places a record, its message copied once, from the block to its
    /// partition's log (or to its topic's held blocks while it waits for its topic's metadata,
    /// or into an allocation of its own when it fails).
    pub(super) fn on_packed(&mut self, record: PackedRecord, message: &[u8], now: Instant) {
        let PackedRecord { topic: id, partition, slot } = record;
        let mut pending = Pending::bare(self.input.next_seq, Some(slot));
        self.input.next_seq += 1;
        if !matches!(&self.input.last_topic, Some((last, _)) if *last == id) {
            // learns the topic (a new one: its metadata asked for) and makes it the last one
            self.own_topic(id, now);
        }
        // the last topic's name, borrowed (no count changed per record)
        let Some((_, last)) = &self.input.last_topic else { unreachable!("own_topic sets the last topic") };
        let placement = place(
            &self.acc,
            &self.meta.parts,
            &mut self.partitioner,
            &mut self.meta.schedule,
            &last.topic,
            partition,
            || EncodedMessage::key_of(message),
            now,
        );
        if let (Placement::Partition(p), Some((_, tp))) = (placement, &mut self.input.last_topic) {
            // the common case: the partition has a queue (see `put`); the key is the last
            // topic's, its partition set. Its linger starts when the task takes it.
            tp.partition = p;
            let wall = &mut self.input.wall;
            let into_log = |r: &mut Pending, log: &mut Appender<'_>| into_log(r, log, Some(message), wall, now);
            match self.acc.try_append_with(tp, pending, now, into_log) {
                Ok(()) => return,
                Err(back) => pending = back,
            }
        }
        let topic = self.own_topic(id, now);
        if !matches!(placement, Placement::Hold) {
            // should it fail, it names its topic itself (a held record's is its holder's)
            pending.set_topic(id);
        }
        self.put(topic, pending, placement, Some(message), now);
    }

    /// A record held for `topic`'s metadata, taken back: placed as [`Engine::route`] places a
    /// record, with its message's bytes from the topic's held blocks (`raw`) when they were
    /// held for it, else its own.
    pub(super) fn route_held(
        &mut self,
        topic: &Arc<str>,
        pending: Pending,
        raw: Option<&[u8]>,
        enqueued_at: Instant,
        now: Instant,
    ) {
        let placement = place(
            &self.acc,
            &self.meta.parts,
            &mut self.partitioner,
            &mut self.meta.schedule,
            topic,
            pending.partition(),
            || match raw {
                Some(raw) => EncodedMessage::key_of(raw),
                None => pending.message().key(),
            },
            now,
        );
        self.put(topic.clone(), pending, placement, raw, enqueued_at);
    }

    /// Puts a record in its partition's queue, or holds it until its topic's metadata comes.
    pub(super) fn route(&mut self, pending: Pending, enqueued_at: Instant, now: Instant) {
        // a record that comes whole names its topic
        let topic = self.own_topic(pending.topic().unwrap_or(TopicId::UNREGISTERED), now);
        let placement = place(
            &self.acc,
            &self.meta.parts,
            &mut self.partitioner,
            &mut self.meta.schedule,
            &topic,
            pending.partition(),
            || pending.message().key(),
            now,
        );
        self.put(topic, pending, placement, None, enqueued_at);
    }

    /// Puts a placed record where it goes. `raw`: its message's bytes while they are still in
    /// the inbox's block (its `message` is then a placeholder, replaced here).
    pub(super) fn put(
        &mut self,
        topic: Arc<str>,
        mut pending: Pending,
        placement: Placement,
        raw: Option<&[u8]>,
        enqueued_at: Instant,
    ) {
        let partition = match placement {
            Placement::Partition(p) => p,
            Placement::Hold => {
                match raw {
                    // its bytes kept with the topic's held records, and it keeps its slot
                    Some(raw) if raw.len() <= SHARED_MAX => self.acc.hold_bytes(&topic, pending, enqueued_at, raw),
                    Some(raw) => {
                        pending.set_message(own_copy(raw));
                        self.acc.hold(&topic, pending, enqueued_at);
                    }
                    None => {
                        pending.set_message(detach(pending.message()));
                        self.acc.hold(&topic, pending, enqueued_at);
                    }
                }
                return;
            }
            Placement::Invalid(p) => {
                if let Some(raw) = raw {
                    pending.set_message(own_copy(raw));
                }
                let partitions = self.meta.parts.get(&*topic).map_or(0, |parts| parts.all.len());
                let error = Error::InvalidPartition { topic: topic.to_string(), partition: p, partitions };
                self.fail(pending, self.result_topic(&topic), Some(p), 0, error);
                return;
            }
        };
        let tp = PartitionKey { topic, partition };
        // the common case: the partition has a queue, so it was checked when the queue was made
        // (and a refresh that finds it gone removes the queue)
        let wall = &mut self.input.wall;
        let first_try = |p: &mut Pending, log: &mut Appender<'_>| into_log(p, log, raw, wall, enqueued_at);
        let Err(mut pending) = self.acc.try_append_with(&tp, pending, enqueued_at, first_try) else { return };
        if let Some(parts) = self.meta.parts.get(&*tp.topic) {
            if parts.error.is_none() && !parts.all.is_empty() && !parts.all.contains(&partition) {
                if let Some(raw) = raw {
                    pending.set_message(own_copy(raw));
                }
                let error =
                    Error::InvalidPartition { topic: tp.topic.to_string(), partition, partitions: parts.all.len() };
                let topic = self.result_topic(&tp.topic);
                self.fail(pending, topic, Some(partition), 0, error);
                return;
            }
        }
        self.acc.set_leader(&tp, self.meta.snapshot.leader(&tp.topic, partition));
        let wall = &mut self.input.wall;
        self.acc.append_with(&tp, pending, enqueued_at, |p, log| into_log(p, log, raw, wall, enqueued_at));
    }
}

/// Where a record of `topic` goes: its own partition, the partitioner's choice (given the
/// key `key` reads), or nowhere yet (then a refresh is asked for). The parts of the engine it
/// reads are passed one by one, so the topic's name can be borrowed from the engine too.
#[allow(clippy::too_many_arguments)]
fn place<'k>(
    acc: &Accumulator<Pending>,
    parts: &HashMap<String, TopicParts>,
    partitioner: &mut PartitionerState,
    schedule: &mut RefreshSchedule,
    topic: &str,
    partition: Option<i32>,
    key: impl FnOnce() -> Option<&'k [u8]>,
    now: Instant,
) -> Placement {
    if let Some(p) = partition {
        return Placement::Partition(p);
    }
    if acc.has_held(topic) {
        // behind the records already waiting, or it could overtake them
        return Placement::Hold;
    }
    let parts = parts.get(topic);
    let (all, available) = parts.map_or((&[][..], &[][..]), |p| (&p.all[..], &p.available[..]));
    match partitioner.choose(topic, key(), all, available, &mut || rand::random::<u32>() as usize) {
        Choice::Partition(p) => Placement::Partition(p),
        Choice::Wait => {
            schedule.want_for_waiting(now);
            Placement::Hold
        }
        Choice::Invalid(p) => Placement::Invalid(p),
    }
}

/// Appends a record's message to its partition's log: from `raw`, its bytes in the inbox's
/// block, when given; else from its own message, which it then lets go (the placeholder:
/// the record's bytes are the log's from now on). While the partition's leader takes
/// RecordBatch v2, the record is written as such, in its batch (its own timestamp and
/// headers, else stamped with the wall-clock time of `at`, its arrival): the one layout of its
/// bytes it is sent in, and the record keeps only its delivery slot (a record with headers
/// kept them, boxed, beside the log's copy: 500 bytes of heap per queued 100-byte record with
/// one 24-byte header, now 152, against 123 without; `benchmarks/timing/session-47.md`).
fn into_log(pending: &mut Pending, log: &mut Appender<'_>, raw: Option<&[u8]>, wall: &mut Wall, at: Instant) {
    let message = match raw {
        Some(raw) => raw,
        None => pending.message().as_bytes(),
    };
    let Some(records) = log.v2.as_mut() else {
        log.push(message);
        pending.shed();
        return;
    };
    let spent = &mut *log.spent;
    let now_ms = wall.ms(at);
    // the message as `send` encoded it (its CRC maybe left out: `crate::crc`)
    let (key, value) = EncodedMessage::view_of(message).map_or((None, None), |m| (m.key, m.value));
    // the record's timestamp and headers are in the log as given (else it keeps them: what it
    // weighs in `queue.buffering.max.bytes` is read from them)
    let mut as_given = true;
    let written = match pending.extra() {
        None => records.push(spent, now_ms, key, value, &[]),
        Some(extra) => {
            let headers: Vec<_> = extra.headers.iter().map(|h| (h.key.as_str(), h.value.as_deref())).collect();
            let timestamp = extra.timestamp.unwrap_or(now_ms);
            records.push(spent, timestamp, key, value, &headers).or_else(|e| {
                // only a header over i32::MAX bytes: the record goes without its headers
                tracing::error!(error = %e, "a record's headers could not be written; sent without them");
                as_given = false;
                records.push(spent, timestamp, key, value, &[])
            })
        }
    };
    if let Err(e) = written {
        // a key and value that fit a Message v0 fit a record: not seen. Something is written
        // all the same, or the batch's records and bytes would no longer match
        tracing::error!(error = %e, "a record could not be written; sent without key and value");
        as_given = false;
        let _ = records.push(spent, now_ms, None, None, &[]);
    }
    if as_given {
        pending.shed_all();
    } else {
        pending.shed();
    }
}

/// Where [`place`] puts a record.
#[derive(Clone, Copy)]
pub(super) enum Placement {
    Partition(i32),
    /// Its topic's partitions are not known yet, or records of the topic wait for them.
    Hold,
    /// The partitioner chose a partition the topic does not have.
    Invalid(i32),
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// The wall-clock time of an arrival follows the engine's clock from the last reading of
    /// the wall clock, earlier arrivals included, and the wall clock is read again after a
    /// second.
    #[test]
    fn an_arrivals_wall_clock_time_follows_the_engines_clock() {
        let t0 = Instant::now();
        let mut wall = Wall::read(t0);
        let base = wall.ms;
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
        assert!((now - base).abs() < 1000, "read from the wall clock: {base} against {now}");
        assert_eq!(wall.ms(t0), base);
        assert_eq!(wall.ms(t0 + Duration::from_millis(250)), base + 250);
        assert_eq!(wall.ms(t0 + Duration::from_millis(250)), base + 250, "the same arrival: the same time");
        assert_eq!(wall.ms(t0 + Duration::from_millis(999)), base + 999);
        // an earlier arrival (a record that waited for its topic's metadata)
        let later = t0 + Duration::from_secs(1);
        let _ = wall.ms(later);
        assert!(wall.at >= later, "read again a second after");
        let read_again = wall.ms;
        assert_eq!(wall.ms(later - Duration::from_millis(400)), read_again - 400);
    }
}

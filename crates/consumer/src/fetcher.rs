//! Fetchers: one task per leader broker, all concurrent, fed by a supervisor that finds
//! leaders (Kafka's `ConsumerFetcherManager` with its `LeaderFinderThread`).
//!
//! ```text
//!  supervisor ── /brokers/ids, metadata, auto.offset.reset, group by leader ──► broker task (one per leader)
//!      ▲                                                                    │ Fetch (long poll)
//!      └──── partitions handed back (leader moved, broker gone, 1 OffsetOutOfRange) ◄─┘
//! ```
//!
//! A broker task owns its partitions and sends one Fetch for all of them per round. A leader
//! error (or a dead connection) hands the partition, with its next offset and anything fetched
//! but not yet queued, back to the supervisor, which re-reads the registered brokers (a broker
//! may be back on another port), refreshes the metadata after `refresh.leader.backoff.ms` and
//! gives it to the new leader's task: no offset is skipped and no other partition waits.
//!
//! **Prefetch bound.** Each stream has room for `queued.max.message.chunks` chunks (one
//! partition's messages from one fetch, at most `fetch.message.max.bytes` on the wire), as each
//! stream of Java's connector has a queue of that many. A chunk that finds its stream full
//! waits in the broker task, and its partition is not fetched again until the chunk is queued;
//! the other partitions of the broker keep flowing (Java's fetcher thread would block on the
//! full queue and stall them all). So a connector holds at most
//! `(streams x queued.max.message.chunks + owned partitions) x fetch.message.max.bytes` of
//! message sets — the same as Java, whose blocked fetcher holds its whole last response —
//! and that is their memory whatever the compression ratio: a chunk keeps its set as it came
//! ([`classify_fetch_lazy`] checks it without decompressing), and the stream decompresses it
//! as the app iterates, a window at a time. On top of it, each broker task holds the answer
//! to its one request in flight (at most its partitions x `fetch.message.max.bytes`) while it
//! copies each partition's set out of it.
//! While a partition waits, the fetch requests still name it with `max_bytes` 0, so its high
//! watermark (and the connector's `lag()`) stays current; when nothing can be fetched at all,
//! such a probe goes out every `fetch.wait.max.ms`.
//!
//! **A message larger than `fetch.message.max.bytes`** (or a set that cannot be decoded) leaves
//! its partition stuck at that offset, as in Java 0.8.2: the error is put on the partition's
//! stream, and the partition is fetched again — and the error delivered again —
//! `refresh.leader.backoff.ms` after the app has taken the previous one, until the message can
//! be read (a connector with a larger `fetch.message.max.bytes`) or is gone (retention: offset
//! out of range, `auto.offset.reset`). Nothing is skipped and the other partitions keep flowing.
//! (Java's fetcher enqueues the oversized chunk on every round, its iterator throws
//! `MessageSizeTooLargeException` for each, and then stays in a failed state.) A set whose
//! compressed body turns out unreadable only when the stream decodes it (its CRC holds, its
//! deflate stream or inner messages do not) ends the same way: the stream hands out the
//! messages before it, then the error, and moves the partition's epoch on; the broker task
//! drops what it fetched since and fetches again from the next offset the app gets, after
//! `refresh.leader.backoff.ms`.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use gregor_net::{classify_fetch_lazy, FetchClass, FetchRead, MetadataCache};
use gregor_protocol::messages::{
    FetchPartition, FetchRequest, FetchResponsePartition, FetchTopic, OffsetsPartition, OffsetsRequest, OffsetsTopic,
    CONSUMER_REPLICA_ID, EARLIEST_TIME, LATEST_TIME,
};
use gregor_protocol::record::LazyRecords;
use gregor_protocol::{ErrorCode, MessageSet};
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::brokers::Brokers;
use crate::config::{AutoOffsetReset, ConsumerConfig};
use crate::error::Error;
use crate::stream::{Charge, Chunk, PartitionState, Prefetch, StreamQueue};

/// One partition handed to a fetcher, with what its fetcher keeps about it.
#[derive(Debug)]
pub(crate) struct FetchTarget {
    pub(crate) part: Arc<PartitionState>,
    /// -1: no committed offset, reset with auto.offset.reset.
    pub(crate) offset: i64,
    queue: StreamQueue,
    /// Fetched and decoded, waiting for room in the stream's queue (meanwhile the partition is
    /// only probed for its high watermark).
    pending: Option<Chunk>,
    /// Stuck on a set that cannot be decoded; fetched again once the app has taken the error.
    stuck: Option<Stuck>,
    /// The stream is gone (the app dropped it): not fetched any more.
    closed: bool,
    /// The partition's epoch this fetcher fetches for (see [`PartitionState::epoch`]).
    epoch: u64,
}

/// What becomes of a partition after its answer (see [`FetchTarget::absorb`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    /// Stays with its broker task.
    Keep,
    /// Back to the supervisor, to reset its offset with `auto.offset.reset`.
    Reset,
    /// Back to the supervisor, to find its leader again (as Java's fetcher does with every code
    /// but OffsetOutOfRange).
    FindLeader(ErrorCode),
}

/// A stuck partition's last error: its token is dropped when the app takes the error.
#[derive(Debug)]
struct Stuck {
    token: Arc<()>,
    /// When the fetcher first saw the error taken.
    taken: Option<Instant>,
}

impl FetchTarget {
    pub(crate) fn new(part: Arc<PartitionState>, offset: i64, queue: StreamQueue) -> FetchTarget {
        let epoch = part.epoch.load(Ordering::Acquire);
        FetchTarget { part, offset, queue, pending: None, stuck: None, closed: false, epoch }
    }

    /// Follows the stream when it found a chunk of the partition unreadable as it decoded it
    /// (the epoch moved on): drops the pending chunk, fetches again from the next offset the
    /// app gets, as a stuck partition whose error was taken now. True if so (an answer to a
    /// request sent before is then stale).
    fn catch_up(&mut self, now: Instant) -> bool {
        let epoch = self.part.epoch.load(Ordering::Acquire);
        if epoch == self.epoch {
            return false;
        }
        self.epoch = epoch;
        self.pending = None;
        self.offset = self.part.consumed.load(Ordering::Acquire);
        self.stuck = Some(Stuck { token: Arc::new(()), taken: Some(now) });
        true
    }

    /// Whether the last answer said the partition has nothing beyond the offset to fetch.
    fn caught_up(&self) -> bool {
        let high_watermark = self.part.high_watermark.load(Ordering::Acquire);
        high_watermark >= 0 && self.offset >= high_watermark
    }

    /// When the partition may be fetched for data: now, later (a stuck partition whose error
    /// was taken), or not until something changes (`None`).
    fn fetchable_at(&mut self, now: Instant, backoff: Duration) -> Option<Instant> {
        self.catch_up(now);
        if self.closed || self.pending.is_some() {
            return None;
        }
        match &mut self.stuck {
            None => Some(now),
            // taken: again after the backoff
            Some(s) if Arc::strong_count(&s.token) == 1 => Some(*s.taken.get_or_insert(now) + backoff),
            Some(_) => None, // the error is still in the queue
        }
    }

    /// Takes the partition's answer to a data fetch (not a probe), classified by
    /// [`classify_fetch_lazy`]: records the high watermark, makes the pending chunk (the
    /// messages, or the error of a partition stuck on a set it cannot read) and moves the
    /// offset on. `set_bytes` is the wire size of the set (what the chunk is charged, and what
    /// it holds).
    fn absorb(
        &mut self,
        class: FetchClass<LazyRecords>,
        high_watermark: i64,
        set_bytes: usize,
        generation: u64,
        prefetch: &Arc<Prefetch>,
    ) -> After {
        if self.catch_up(Instant::now()) {
            return After::Keep; // asked at an offset the stream has since taken back
        }
        let (topic, partition) = (&self.part.topic, self.part.partition);
        let source = match class {
            FetchClass::OffsetOutOfRange => {
                tracing::warn!(%topic, partition, offset = self.offset, "offset out of range: auto.offset.reset");
                self.offset = -1;
                self.stuck = None;
                return After::Reset;
            }
            FetchClass::Retry(code) | FetchClass::Fail(code) => return After::FindLeader(code),
            FetchClass::Data { messages, next_offset, .. } => {
                self.part.high_watermark.store(high_watermark, Ordering::Release);
                if set_bytes == 0 {
                    return After::Keep; // nothing new (a stuck partition stays stuck)
                }
                if self.stuck.take().is_some() {
                    tracing::info!(%topic, partition, offset = self.offset, "partition readable again");
                }
                let Some(next) = next_offset else { return After::Keep };
                self.pending = Some(Chunk::Messages {
                    generation,
                    epoch: self.epoch,
                    part: Arc::clone(&self.part),
                    messages,
                    charge: Charge::held(prefetch, set_bytes, None),
                });
                self.offset = next;
                return After::Keep;
            }
            FetchClass::MessageTooLarge { source, .. } | FetchClass::Corrupt(source) => source,
        };
        self.part.high_watermark.store(high_watermark, Ordering::Release);
        let e = Error::Fetch { topic: topic.clone(), partition, offset: self.offset, source };
        if self.stuck.is_none() {
            tracing::error!(error = %e, "this partition is stuck at this offset (the others go on): the error is repeated on its stream until the message can be read");
        }
        let token = Arc::new(());
        self.pending = Some(Chunk::Error {
            error: e,
            generation: Some(generation),
            charge: Some(Charge::held(prefetch, 0, Some(Arc::clone(&token)))),
        });
        self.stuck = Some(Stuck { token, taken: None });
        After::Keep
    }

    /// Queues the pending chunk if its stream has room.
    fn flush(&mut self) {
        self.catch_up(Instant::now());
        let Some(mut chunk) = self.pending.take() else { return };
        if let Some(charge) = chunk.charge_mut() {
            if !charge.is_queued() {
                match Arc::clone(&self.queue.room).try_acquire_owned() {
                    Ok(permit) => charge.queue(permit),
                    Err(_) => {
                        self.pending = Some(chunk);
                        return;
                    }
                }
            }
        }
        match self.queue.tx.try_send(chunk) {
            Ok(()) => {}
            // only unread connector errors can fill the channel beyond the room: try later
            Err(TrySendError::Full(chunk)) => self.pending = Some(chunk),
            Err(TrySendError::Closed(_)) => {
                tracing::debug!(topic = %self.part.topic, partition = self.part.partition, "stream dropped: partition no longer fetched");
                self.closed = true;
            }
        }
    }
}

/// Everything the fetch tasks of one generation share.
#[derive(Clone)]
struct Ctx {
    config: ConsumerConfig,
    brokers: Brokers,
    prefetch: Arc<Prefetch>,
    generation: u64,
}

/// The supervisor: runs until aborted (its broker tasks live in its `JoinSet` and are aborted
/// with it).
pub(crate) async fn run_fetchers(
    config: ConsumerConfig,
    brokers: Brokers,
    prefetch: Arc<Prefetch>,
    generation: u64,
    targets: Vec<FetchTarget>,
) {
    let ctx = Ctx { config, brokers, prefetch, generation };
    let (back_tx, mut back_rx) = mpsc::unbounded_channel::<FetchTarget>();
    let mut workers: BTreeMap<i32, mpsc::UnboundedSender<FetchTarget>> = BTreeMap::new();
    let mut tasks = JoinSet::new();
    let mut pending = targets;
    let mut first = true;
    loop {
        if pending.is_empty() {
            match back_rx.recv().await {
                Some(t) => pending.push(t),
                None => return,
            }
        }
        if !first {
            tokio::time::sleep(ctx.config.refresh_leader_backoff).await;
        }
        first = false;
        while let Ok(t) = back_rx.try_recv() {
            pending.push(t);
        }
        let mut topics: Vec<String> = pending.iter().map(|t| t.part.topic.clone()).collect();
        topics.sort();
        topics.dedup();
        // as Java's leader finder: the brokers registered now, not those of the start
        let metadata = ctx.brokers.refresh().await;
        if let Err(e) = metadata.refresh(&topics).await {
            tracing::warn!(error = %e, "metadata refresh failed: retrying after refresh.leader.backoff.ms");
            continue;
        }
        // every offset first, then every partition to its broker's task at once: a partition
        // handed over while its broker's task has a long poll out waits for that poll
        // (fetch.wait.max.ms) before it is fetched
        let mut still = Vec::new();
        let mut ready = Vec::new();
        for mut t in pending.drain(..) {
            if t.offset < 0 {
                match reset_offset(&ctx.config, &metadata, &t.part.topic, t.part.partition).await {
                    Ok(o) => {
                        t.offset = o;
                        t.part.consumed.fetch_max(o, Ordering::AcqRel);
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "offset reset failed");
                        still.push(t);
                        continue;
                    }
                }
            }
            ready.push(t);
        }
        // a new broker's task starts once it has all of its partitions
        let mut started = Vec::new();
        for t in ready {
            let Some(leader) = metadata.leader(&t.part.topic, t.part.partition) else {
                still.push(t);
                continue;
            };
            let tx = workers.entry(leader).or_insert_with(|| {
                let (tx, rx) = mpsc::unbounded_channel();
                started.push((leader, rx));
                tx
            });
            if let Err(mpsc::error::SendError(t)) = tx.send(t) {
                still.push(t); // cannot happen: broker tasks run until the supervisor ends
            }
        }
        for (leader, rx) in started {
            tasks.spawn(broker_fetcher(ctx.clone(), leader, rx, back_tx.clone()));
        }
        pending = still;
    }
}

/// Fetches the partitions led by `broker`, all in one request per round.
async fn broker_fetcher(
    ctx: Ctx,
    broker: i32,
    mut add: mpsc::UnboundedReceiver<FetchTarget>,
    back: mpsc::UnboundedSender<FetchTarget>,
) {
    let config = &ctx.config;
    let backoff = config.refresh_leader_backoff;
    let mut targets: Vec<FetchTarget> = Vec::new();
    let mut last_request: Option<Instant> = None;
    loop {
        // armed before looking, so that room freed meanwhile is not missed
        let room = ctx.prefetch.room.notified();
        tokio::pin!(room);
        room.as_mut().enable();
        if targets.is_empty() {
            match add.recv().await {
                Some(t) => targets.push(t),
                None => return,
            }
        }
        while let Ok(t) = add.try_recv() {
            targets.push(t);
        }
        for t in &mut targets {
            t.flush();
        }
        targets.retain(|t| !t.closed);
        if targets.is_empty() {
            continue;
        }
        let now = Instant::now();
        let ready: Vec<Option<Instant>> = targets.iter_mut().map(|t| t.fetchable_at(now, backoff)).collect();
        let full: Vec<bool> = ready.iter().map(|r| r.is_some_and(|at| at <= now)).collect();
        // A long poll only when it can bring data at once, or when nothing waits for room. A
        // broker holds a long poll for fetch.wait.max.ms when every partition asked for data is
        // at its end; a partition whose chunk then finds room would wait that long to be
        // fetched again (one chunk per fetch.wait.max.ms while the others are caught up). So
        // while a chunk waits for room and every fetchable partition is at its high watermark,
        // this waits for room as when nothing is fetchable, and probes (max_wait 0, the caught-up
        // partitions asked for data) every fetch.wait.max.ms. Java 0.8.2's fetcher sends
        // nothing at all while a chunk waits (its thread blocks on the full queue).
        let waits_for_room = targets.iter().any(|t| t.pending.is_some());
        let any_full = full.iter().zip(&targets).any(|(&f, t)| f && !(waits_for_room && t.caught_up()));
        if !any_full {
            // nothing to fetch for data: wait for room, a new partition, a stuck partition's
            // retry, or the next high-watermark probe
            let probe_at = last_request.map_or(now, |at| at + config.fetch_wait_max);
            if probe_at > now {
                let wake = ready.iter().flatten().copied().fold(probe_at, Instant::min);
                tokio::select! {
                    _ = &mut room => {}
                    t = add.recv() => match t {
                        Some(t) => targets.push(t),
                        None => return,
                    },
                    _ = tokio::time::sleep_until(wake) => {}
                }
                continue;
            }
        }
        let mut topics: BTreeMap<&str, Vec<FetchPartition>> = BTreeMap::new();
        for (t, &full) in targets.iter().zip(&full) {
            topics.entry(&t.part.topic).or_default().push(FetchPartition {
                partition: t.part.partition,
                fetch_offset: t.offset,
                // 0: a probe for the high watermark only (0.8.2 answers an empty set)
                max_bytes: if full { config.fetch_message_max_bytes } else { 0 },
                ..Default::default()
            });
        }
        let mut request = FetchRequest {
            replica_id: CONSUMER_REPLICA_ID,
            max_wait_time: if any_full { config.fetch_wait_max.as_millis() as i32 } else { 0 },
            min_bytes: config.fetch_min_bytes,
            topics: topics.into_iter().map(|(t, p)| FetchTopic::new(t, p)).collect(),
            ..Default::default()
        };
        last_request = Some(now);
        // the version the broker and gregor both speak (0.8.2's v0 without api.version.request)
        let mut read = FetchRead::V0;
        let conn = ctx.brokers.pool().get(broker).await.map_err(|e| e.to_string());
        let conn_version = conn.and_then(|conn| {
            let version = conn.client_version::<FetchRequest>().map_err(|e| e.to_string())?;
            Ok((conn, version))
        });
        let response = match conn_version {
            Ok((conn, version)) => {
                read = FetchRead { version, isolation: config.isolation_level };
                // a field a version lacks keeps its default (the codec refuses to drop it)
                if version >= 4 {
                    request.isolation_level = config.isolation_level.code();
                }
                let call = tokio::time::timeout(config.socket_timeout, conn.request(version, &request));
                tokio::pin!(call);
                // while the long poll is out, queue what finds room
                let answer = loop {
                    let room = ctx.prefetch.room.notified();
                    tokio::pin!(room);
                    room.as_mut().enable();
                    for t in &mut targets {
                        t.flush();
                    }
                    tokio::select! {
                        r = &mut call => break r,
                        _ = &mut room => {}
                    }
                };
                match answer {
                    Ok(r) => r.map_err(|e| e.to_string()),
                    Err(_) => Err(format!("no answer within socket.timeout.ms ({:?})", config.socket_timeout)),
                }
            }
            Err(e) => Err(e),
        };
        let response = match response {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(broker, error = %e, "fetch failed: handing the partitions back to find their leaders");
                let metadata = ctx.brokers.metadata();
                for t in targets.drain(..) {
                    metadata.invalidate(&t.part.topic);
                    let _ = back.send(t);
                }
                continue;
            }
        };
        let mut keep: Vec<bool> = vec![true; targets.len()];
        for rt in &response.topics {
            for rp in &rt.partitions {
                let Some(i) = targets.iter().position(|t| t.part.topic == rt.topic && t.part.partition == rp.partition)
                else {
                    continue;
                };
                let t = &mut targets[i];
                if !full[i] {
                    // a probe: only the high watermark counts (errors show on the next fetch)
                    if rp.error().is_none() && rp.high_watermark >= 0 {
                        t.part.high_watermark.store(rp.high_watermark, Ordering::Release);
                    }
                    continue;
                }
                // a copy of its own: the set is a slice of the connection's read buffer, which
                // holds the whole response (and more), and a chunk may wait a long time
                let owned = FetchResponsePartition {
                    message_set: MessageSet::from_bytes(Bytes::copy_from_slice(rp.message_set.as_bytes())),
                    ..rp.clone()
                };
                let class = classify_fetch_lazy(&rt.topic, &owned, t.offset, read);
                match t.absorb(class, owned.high_watermark, owned.message_set.len(), ctx.generation, &ctx.prefetch) {
                    After::Keep => {}
                    After::Reset => keep[i] = false,
                    After::FindLeader(code) => {
                        tracing::warn!(broker, topic = %rt.topic, partition = rp.partition, %code, "fetch error: finding the leader again");
                        ctx.brokers.metadata().invalidate(&rt.topic);
                        keep[i] = false;
                    }
                }
            }
        }
        drop(response);
        let mut kept = Vec::with_capacity(targets.len());
        for (mut t, k) in targets.drain(..).zip(keep) {
            if k {
                t.flush();
                kept.push(t);
            } else {
                let _ = back.send(t);
            }
        }
        targets = kept;
    }
}

async fn reset_offset(
    config: &ConsumerConfig,
    metadata: &MetadataCache,
    topic: &str,
    partition: i32,
) -> Result<i64, Error> {
    let time = match config.auto_offset_reset {
        AutoOffsetReset::Smallest => EARLIEST_TIME,
        AutoOffsetReset::Largest => LATEST_TIME,
    };
    let conn = metadata
        .leader_connection(topic, partition)
        .await
        .map_err(crate::error::net(format!("leader of {topic}/{partition}")))?;
    // v0 (0.8.2) answers a list of offsets, v1+ one offset; v10 adds a timeout for tiered storage
    let version = conn.client_version::<OffsetsRequest>().map_err(crate::error::net("Offsets"))?;
    let request = OffsetsRequest {
        replica_id: CONSUMER_REPLICA_ID,
        isolation_level: if version >= 2 { config.isolation_level.code() } else { 0 },
        topics: vec![OffsetsTopic::new(
            topic,
            vec![OffsetsPartition { partition, time, max_number_of_offsets: 1, ..Default::default() }],
        )],
        ..Default::default()
    };
    let r = conn.request(version, &request).await.map_err(crate::error::net("Offsets"))?;
    for t in &r.topics {
        for p in &t.partitions {
            if p.partition == partition {
                if let Some(code) = p.error() {
                    return Err(Error::Broker { context: format!("Offsets {topic}/{partition}"), code });
                }
                if let Some(&o) = p.offsets.first() {
                    return Ok(o);
                }
                if version >= 1 && p.offset >= 0 {
                    return Ok(p.offset);
                }
            }
        }
    }
    Err(Error::Broker {
        context: format!("Offsets {topic}/{partition}: no offset"),
        code: ErrorCode::UnknownServerError,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gregor_protocol::{Message, MessageAndOffset};

    const BACKOFF: Duration = Duration::from_millis(200);

    fn target(offset: i64, room: usize) -> (FetchTarget, mpsc::Receiver<Chunk>) {
        let (tx, rx) = mpsc::channel(room + 16);
        let part = Arc::new(PartitionState::new("t", 3, offset));
        (FetchTarget::new(part, offset, StreamQueue::new(tx, room)), rx)
    }

    fn set(first: i64, values: &[&str]) -> MessageSet {
        let inner: Vec<MessageAndOffset> = values
            .iter()
            .enumerate()
            .map(|(i, v)| MessageAndOffset::new(first + i as i64, Message::new(None, Some(Bytes::from(v.to_string())))))
            .collect();
        MessageSet::encode(&inner).unwrap()
    }

    fn answer(t: &mut FetchTarget, error_code: i16, hw: i64, set: MessageSet, prefetch: &Arc<Prefetch>) -> After {
        let p = FetchResponsePartition {
            partition: 3,
            error_code,
            high_watermark: hw,
            message_set: set,
            ..Default::default()
        };
        let class = gregor_net::classify_fetch_lazy("t", &p, t.offset, FetchRead::V0);
        t.absorb(class, hw, p.message_set.len(), 7, prefetch)
    }

    #[test]
    fn messages_become_a_pending_chunk_and_move_the_offset() {
        let prefetch = Arc::new(Prefetch::default());
        let (mut t, mut rx) = target(5, 1);
        let s = set(5, &["a", "b"]);
        let bytes = s.len() as u64;
        assert_eq!(answer(&mut t, 0, 9, s, &prefetch), After::Keep);
        assert_eq!((t.offset, t.part.high_watermark.load(Ordering::Acquire)), (7, 9));
        assert_eq!(prefetch.held_bytes.load(Ordering::Acquire), bytes);
        let now = Instant::now();
        assert_eq!(t.fetchable_at(now, BACKOFF), None, "not fetched again while its chunk waits");
        t.flush();
        assert!(t.pending.is_none());
        assert_eq!(prefetch.queued_bytes.load(Ordering::Acquire), bytes);
        match rx.try_recv() {
            Ok(Chunk::Messages { generation: 7, messages, .. }) => {
                assert_eq!(messages.map(|m| m.unwrap().offset).collect::<Vec<_>>(), [5, 6])
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(t.fetchable_at(now, BACKOFF), Some(now));
    }

    #[test]
    fn a_full_stream_keeps_the_chunk_pending() {
        let prefetch = Arc::new(Prefetch::default());
        let (mut t, mut rx) = target(0, 1);
        answer(&mut t, 0, 9, set(0, &["a"]), &prefetch);
        t.flush();
        answer(&mut t, 0, 9, set(1, &["b"]), &prefetch);
        t.flush();
        assert!(t.pending.is_some(), "one chunk of room, taken");
        assert_eq!(
            (prefetch.held_chunks.load(Ordering::Acquire), prefetch.queued_chunks.load(Ordering::Acquire)),
            (1, 1)
        );
        drop(rx.try_recv().unwrap()); // the stream hands the first chunk out
        t.flush();
        assert!(t.pending.is_none());
        // a dropped stream closes the partition: it is not fetched any more
        let (mut u, rx) = target(0, 4);
        drop(rx);
        answer(&mut u, 0, 1, set(0, &["a"]), &prefetch);
        u.flush();
        assert!(u.closed);
        assert_eq!(u.fetchable_at(Instant::now(), BACKOFF), None);
    }

    #[test]
    fn an_unreadable_set_sticks_until_the_error_is_taken_then_after_the_backoff() {
        let prefetch = Arc::new(Prefetch::default());
        let (mut t, mut rx) = target(4, 2);
        let full = set(4, &[&"x".repeat(300)]);
        let cut = MessageSet::from_bytes(full.as_bytes().slice(..100));
        assert_eq!(answer(&mut t, 0, 5, cut.clone(), &prefetch), After::Keep);
        assert_eq!((t.offset, t.part.high_watermark.load(Ordering::Acquire)), (4, 5));
        t.flush();
        let now = Instant::now();
        assert_eq!(t.fetchable_at(now, BACKOFF), None, "the error is still in the queue");
        match rx.try_recv() {
            Ok(Chunk::Error { error: Error::Fetch { offset: 4, partition: 3, .. }, generation: Some(7), charge }) => {
                drop(charge) // taken by the app
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(t.fetchable_at(now, BACKOFF), Some(now + BACKOFF));
        assert_eq!(t.fetchable_at(now + BACKOFF, BACKOFF), Some(now + BACKOFF), "the first sight counts");
        // an empty answer leaves it stuck; readable data frees it
        answer(&mut t, 0, 5, MessageSet::new(), &prefetch);
        assert!(t.stuck.is_some());
        answer(&mut t, 0, 5, full, &prefetch);
        assert!(t.stuck.is_none());
        assert_eq!(t.offset, 5);
    }

    #[test]
    fn a_chunk_the_stream_found_unreadable_is_fetched_again_from_what_the_app_got() {
        let prefetch = Arc::new(Prefetch::default());
        let (mut t, _rx) = target(0, 4);
        answer(&mut t, 0, 9, set(0, &["a", "b", "c"]), &prefetch);
        assert_eq!(t.offset, 3);
        // the stream handed out 0 and found 1 unreadable
        t.part.consumed.store(1, Ordering::Release);
        t.part.epoch.fetch_add(1, Ordering::AcqRel);
        let now = Instant::now();
        assert_eq!(t.fetchable_at(now, BACKOFF), Some(now + BACKOFF), "again after the backoff");
        assert!(t.pending.is_none(), "the chunk fetched before is dropped");
        assert_eq!(t.offset, 1);
        // an answer to a request sent before the error is dropped too
        t.part.epoch.fetch_add(1, Ordering::AcqRel);
        assert_eq!(answer(&mut t, 0, 9, set(1, &["b", "c"]), &prefetch), After::Keep);
        assert!(t.pending.is_none());
        assert_eq!(t.offset, 1);
        // readable data frees it
        answer(&mut t, 0, 9, set(1, &["b", "c"]), &prefetch);
        assert!(t.stuck.is_none() && t.pending.is_some());
        assert_eq!(t.offset, 3);
    }

    #[test]
    fn codes_hand_the_partition_back() {
        let prefetch = Arc::new(Prefetch::default());
        let (mut t, _rx) = target(9, 1);
        t.stuck = Some(Stuck { token: Arc::new(()), taken: None });
        assert_eq!(answer(&mut t, 1, -1, MessageSet::new(), &prefetch), After::Reset);
        assert_eq!(t.offset, -1, "auto.offset.reset decides");
        assert!(t.stuck.is_none());
        let (mut t, _rx) = target(9, 1);
        for (code, want) in [
            (6, ErrorCode::NotLeaderForPartition),
            (3, ErrorCode::UnknownTopicOrPartition),
            (2, ErrorCode::InvalidMessage),
        ] {
            assert_eq!(answer(&mut t, code, -1, MessageSet::new(), &prefetch), After::FindLeader(want));
            assert_eq!(t.offset, 9);
        }
        assert_eq!(t.part.high_watermark.load(Ordering::Acquire), -1, "an error's high watermark is not recorded");
    }
}

//! Fetchers: one task per leader broker, all concurrent, fed by a supervisor that finds
//! leaders (Kafka's `ConsumerFetcherManager` with its `LeaderFinderThread`).
//!
//! ```text
//!  supervisor ── refresh metadata, auto.offset.reset, group by leader ──► broker task (one per leader)
//!      ▲                                                                    │ Fetch (long poll)
//!      └──── partitions handed back (leader moved, broker gone, 1 OffsetOutOfRange) ◄─┘
//! ```
//!
//! A broker task owns its partitions and sends one Fetch for all of them per round. A leader
//! error (or a dead connection) hands the partition, with its next offset, back to the
//! supervisor, which refreshes the metadata after `refresh.leader.backoff.ms` and gives it to
//! the new leader's task: no offset is skipped and no other partition waits. A message larger
//! than `fetch.message.max.bytes` is an error item on the partition's stream and that
//! partition alone is parked until the next rebalance (the others keep flowing).

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use gregor_net::MetadataCache;
use gregor_protocol::messages::{
    FetchPartition, FetchRequest, OffsetsPartition, OffsetsRequest, TopicPartitions, CONSUMER_REPLICA_ID,
    EARLIEST_TIME, LATEST_TIME,
};
use gregor_protocol::ErrorCode;
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;

use crate::config::{AutoOffsetReset, ConsumerConfig};
use crate::error::Error;
use crate::stream::{Chunk, PartitionState};

/// One partition handed to a fetcher.
#[derive(Debug, Clone)]
pub(crate) struct FetchTarget {
    pub(crate) part: Arc<PartitionState>,
    /// -1: no committed offset, reset with auto.offset.reset.
    pub(crate) offset: i64,
    pub(crate) queue: mpsc::Sender<Chunk>,
}

/// Everything the fetch tasks of one generation share.
#[derive(Clone)]
struct Ctx {
    config: ConsumerConfig,
    metadata: MetadataCache,
    semaphore: Arc<Semaphore>,
    generation: u64,
}

/// The supervisor: runs until aborted (its broker tasks live in its `JoinSet` and are aborted
/// with it).
pub(crate) async fn run_fetchers(
    config: ConsumerConfig,
    metadata: MetadataCache,
    semaphore: Arc<Semaphore>,
    generation: u64,
    targets: Vec<FetchTarget>,
) {
    let ctx = Ctx { config, metadata, semaphore, generation };
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
        if let Err(e) = ctx.metadata.refresh(&topics).await {
            tracing::warn!(error = %e, "metadata refresh failed: retrying after refresh.leader.backoff.ms");
            continue;
        }
        let mut still = Vec::new();
        for mut t in pending.drain(..) {
            if t.offset < 0 {
                match reset_offset(&ctx.config, &ctx.metadata, &t.part.topic, t.part.partition).await {
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
            let Some(leader) = ctx.metadata.leader(&t.part.topic, t.part.partition) else {
                still.push(t);
                continue;
            };
            let tx = workers.entry(leader).or_insert_with(|| {
                let (tx, rx) = mpsc::unbounded_channel();
                tasks.spawn(broker_fetcher(ctx.clone(), leader, rx, back_tx.clone()));
                tx
            });
            if let Err(mpsc::error::SendError(t)) = tx.send(t) {
                still.push(t); // cannot happen: broker tasks run until the supervisor ends
            }
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
    let mut targets: Vec<FetchTarget> = Vec::new();
    loop {
        if targets.is_empty() {
            match add.recv().await {
                Some(t) => targets.push(t),
                None => return,
            }
        }
        while let Ok(t) = add.try_recv() {
            targets.push(t);
        }
        let mut topics: BTreeMap<&str, Vec<FetchPartition>> = BTreeMap::new();
        for t in &targets {
            topics.entry(&t.part.topic).or_default().push(FetchPartition {
                partition: t.part.partition,
                fetch_offset: t.offset,
                max_bytes: config.fetch_message_max_bytes,
            });
        }
        let request = FetchRequest {
            replica_id: CONSUMER_REPLICA_ID,
            max_wait_time: config.fetch_wait_max.as_millis() as i32,
            min_bytes: config.fetch_min_bytes,
            topics: topics.into_iter().map(|(t, p)| TopicPartitions::new(t, p)).collect(),
        };
        let response = match ctx.metadata.pool().get(broker).await {
            Ok(conn) => match tokio::time::timeout(config.socket_timeout, conn.request(0, &request)).await {
                Ok(r) => r.map_err(|e| e.to_string()),
                Err(_) => Err(format!("no answer within socket.timeout.ms ({:?})", config.socket_timeout)),
            },
            Err(e) => Err(e.to_string()),
        };
        let response = match response {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(broker, error = %e, "fetch failed: handing the partitions back to find their leaders");
                for t in targets.drain(..) {
                    ctx.metadata.invalidate(&t.part.topic);
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
                match rp.error() {
                    None => {}
                    Some(ErrorCode::OffsetOutOfRange) => {
                        tracing::warn!(topic = %rt.topic, partition = rp.partition, offset = t.offset, "offset out of range: auto.offset.reset");
                        t.offset = -1;
                        keep[i] = false;
                        continue;
                    }
                    Some(code) => {
                        tracing::warn!(broker, topic = %rt.topic, partition = rp.partition, %code, "fetch error: finding the leader again");
                        ctx.metadata.invalidate(&rt.topic);
                        keep[i] = false;
                        continue;
                    }
                }
                t.part.high_watermark.store(rp.high_watermark, Ordering::Release);
                match rp.messages(&rt.topic, t.offset) {
                    Ok(decoded) => {
                        let Some(next) = decoded.next_offset() else { continue };
                        let Ok(permit) = ctx.semaphore.clone().acquire_owned().await else { return };
                        let chunk = Chunk::Messages {
                            generation: ctx.generation,
                            part: t.part.clone(),
                            messages: decoded.messages,
                            permit,
                        };
                        if t.queue.send(chunk).await.is_err() {
                            return;
                        }
                        t.offset = next;
                    }
                    Err(source) => {
                        let e =
                            Error::Fetch { topic: rt.topic.clone(), partition: rp.partition, offset: t.offset, source };
                        tracing::error!(error = %e, "this partition is parked until the next rebalance; the others go on");
                        let _ = t.queue.send(Chunk::Error(e)).await;
                        t.offset = i64::MIN; // parked
                        keep[i] = false;
                    }
                }
            }
        }
        let mut i = 0;
        targets.retain(|t| {
            let k = keep[i];
            i += 1;
            if !k && t.offset != i64::MIN {
                let _ = back.send(t.clone());
            }
            k
        });
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
    let request = OffsetsRequest {
        replica_id: CONSUMER_REPLICA_ID,
        topics: vec![TopicPartitions::new(topic, vec![OffsetsPartition { partition, time, max_number_of_offsets: 1 }])],
    };
    let r = conn.request(0, &request).await.map_err(crate::error::net("Offsets"))?;
    for t in &r.topics {
        for p in &t.partitions {
            if p.partition == partition {
                if let Some(code) = p.error() {
                    return Err(Error::Broker { context: format!("Offsets {topic}/{partition}"), code });
                }
                if let Some(&o) = p.offsets.first() {
                    return Ok(o);
                }
            }
        }
    }
    Err(Error::Broker {
        context: format!("Offsets {topic}/{partition}: no offset"),
        code: ErrorCode::UnknownServerError,
    })
}

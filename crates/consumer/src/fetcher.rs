//! Fetcher tasks: long-poll the leaders of their partitions and feed the streams' queues.
//!
//! Each of the `num.consumer.fetchers` tasks owns the partitions whose
//! `abs(31 * hashCode(topic) + partition) % num.consumer.fetchers` is its index (Kafka's
//! spread), and sends one Fetch per leader broker per round. Leader errors refresh the
//! metadata and retry after `refresh.leader.backoff.ms`; a missing or out-of-range offset is
//! reset with `auto.offset.reset`; a message larger than `fetch.message.max.bytes` is an error
//! item on the stream and that partition stops (until the next rebalance) instead of spinning.

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

pub(crate) async fn run_fetcher(
    config: ConsumerConfig,
    metadata: MetadataCache,
    semaphore: Arc<Semaphore>,
    generation: u64,
    mut targets: Vec<FetchTarget>,
) {
    let topics: Vec<String> = {
        let mut t: Vec<String> = targets.iter().map(|t| t.part.topic.clone()).collect();
        t.sort();
        t.dedup();
        t
    };
    let mut need_refresh = true;
    loop {
        if targets.is_empty() {
            return;
        }
        if need_refresh {
            if let Err(e) = metadata.refresh(&topics).await {
                tracing::warn!(error = %e, "metadata refresh failed");
            }
            need_refresh = false;
        }
        // offsets to reset
        for i in 0..targets.len() {
            if targets[i].offset < 0 {
                match reset_offset(&config, &metadata, &targets[i].part.topic, targets[i].part.partition).await {
                    Ok(o) => {
                        targets[i].offset = o;
                        targets[i].part.consumed.store(o, Ordering::Release);
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "offset reset failed");
                        need_refresh = true;
                    }
                }
            }
        }
        if need_refresh {
            tokio::time::sleep(config.refresh_leader_backoff).await;
            continue;
        }
        let mut by_leader: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
        for (i, t) in targets.iter().enumerate() {
            match metadata.leader(&t.part.topic, t.part.partition) {
                Some(l) => by_leader.entry(l).or_default().push(i),
                None => need_refresh = true,
            }
        }
        let mut stopped: Vec<usize> = Vec::new();
        for (leader, idx) in by_leader {
            let mut topics: BTreeMap<&str, Vec<FetchPartition>> = BTreeMap::new();
            for &i in &idx {
                let t = &targets[i];
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
            let response = match metadata.pool().get(leader).await {
                Ok(conn) => tokio::time::timeout(config.socket_timeout, conn.request(0, &request)).await,
                Err(e) => Ok(Err(e)),
            };
            let response = match response {
                Ok(Ok(r)) => r,
                Ok(Err(e)) => {
                    tracing::warn!(broker = leader, error = %e, "fetch failed: refreshing leaders");
                    need_refresh = true;
                    continue;
                }
                Err(_) => {
                    need_refresh = true;
                    continue;
                }
            };
            for rt in &response.topics {
                for rp in &rt.partitions {
                    let Some(&i) = idx
                        .iter()
                        .find(|&&i| targets[i].part.topic == rt.topic && targets[i].part.partition == rp.partition)
                    else {
                        continue;
                    };
                    let t = &mut targets[i];
                    match rp.error() {
                        None => {}
                        Some(ErrorCode::OffsetOutOfRange) => {
                            tracing::warn!(topic = %rt.topic, partition = rp.partition, offset = t.offset, "offset out of range: auto.offset.reset");
                            t.offset = -1;
                            continue;
                        }
                        Some(code) => {
                            tracing::warn!(topic = %rt.topic, partition = rp.partition, %code, "fetch error: refreshing leaders");
                            metadata.invalidate(&rt.topic);
                            need_refresh = true;
                            continue;
                        }
                    }
                    t.part.high_watermark.store(rp.high_watermark, Ordering::Release);
                    match rp.messages(&rt.topic, t.offset) {
                        Ok(decoded) => {
                            let Some(next) = decoded.next_offset() else { continue };
                            let Ok(permit) = semaphore.clone().acquire_owned().await else { return };
                            let chunk = Chunk::Messages {
                                generation,
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
                            let e = Error::Fetch {
                                topic: rt.topic.clone(),
                                partition: rp.partition,
                                offset: t.offset,
                                source,
                            };
                            tracing::error!(error = %e, "partition stops fetching until the next rebalance");
                            let _ = t.queue.send(Chunk::Error(e)).await;
                            stopped.push(i);
                        }
                    }
                }
            }
        }
        stopped.sort_unstable();
        for i in stopped.into_iter().rev() {
            targets.remove(i);
        }
        if need_refresh {
            tokio::time::sleep(config.refresh_leader_backoff).await;
        }
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

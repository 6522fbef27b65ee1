//! The retry loop shared by every partition-addressed call: route partitions to their leaders,
//! send one request per leader (all leaders at once), retry leader errors after a backoff and
//! a metadata refresh, up to `refresh.leader.max.retries` times.
//!
//! ```text
//!  targets ─► route (metadata) ─┬─ leader b0 ─► op.call(b0, [t..]) ─┐
//!                               ├─ leader b1 ─► op.call(b1, [t..]) ─┼─► outcomes per target:
//!                               └─ no leader ─► retry               │   Done / Fail / Retry / Again
//!        ▲                                                           │
//!        └──── backoff, invalidate + refresh the retried topics ◄───┘
//! ```

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use gregor_net::{Backoff, BrokerId, MetadataCache, MetadataSnapshot, Pool};
use gregor_protocol::ErrorCode;
use tokio::task::JoinSet;

use crate::config::SimpleConsumerConfig;
use crate::error::{Error, Result};

/// One partition of a call, with the operation's state for it.
#[derive(Debug, Clone)]
pub(crate) struct Target<S> {
    pub(crate) topic: String,
    pub(crate) partition: i32,
    pub(crate) state: S,
}

/// Why a partition is retried (or failed), turned into an [`Error`] with the attempt count
/// when it is given up.
#[derive(Debug, Clone)]
pub(crate) enum Cause {
    /// The leader answered with a code.
    Code { broker: BrokerId, code: ErrorCode },
    /// The topic's metadata carries a code.
    Topic(ErrorCode),
    /// The leader could not be reached, or its response not read.
    Net { broker: BrokerId, source: Arc<gregor_net::Error> },
    /// The metadata names no leader.
    NoLeader,
    /// The leader's response left the partition out.
    Missing { broker: BrokerId },
}

impl Cause {
    pub(crate) fn into_error(self, topic: &str, partition: i32, attempts: u32) -> Error {
        let topic = topic.to_owned();
        match self {
            Cause::Code { broker, code } => Error::Broker { topic, partition, broker, code, attempts },
            Cause::Topic(code) => Error::TopicMetadata { topic, code, attempts },
            Cause::Net { broker, source } => Error::Connection { topic, partition, broker, attempts, source },
            Cause::NoLeader => Error::NoLeader { topic, partition, attempts },
            Cause::Missing { broker } => Error::MissingFromResponse { topic, partition, broker },
        }
    }
}

/// What became of one target in one round.
#[derive(Debug)]
pub(crate) enum Outcome<S, T> {
    /// Finished: data, or an error complete in itself.
    Done(Result<T>),
    /// Give up at once.
    Fail(Cause),
    /// Retry after a backoff and a metadata refresh (counts against the retry budget).
    Retry(Cause),
    /// Send again at once with a new state (a grown fetch size); not a retry.
    Again(S),
}

/// An operation sent to partition leaders: one request per leader per round.
pub(crate) trait LeaderOp: Clone + Send + Sync + 'static {
    /// Per-partition state.
    type State: Clone + Send + Sync + 'static;
    /// Per-partition result.
    type Out: Send + 'static;

    /// Sends one request for `targets` (all led by `broker`) and says what became of each, in
    /// the same order. An `Err` applies to every target.
    fn call(
        &self,
        pool: Pool,
        broker: BrokerId,
        targets: Vec<Target<Self::State>>,
    ) -> impl Future<Output = gregor_net::Result<Vec<Outcome<Self::State, Self::Out>>>> + Send;
}

/// Groups targets by topic, in order of first appearance, mapping each to a request entry.
pub(crate) fn group_by_topic<S, P>(targets: &[Target<S>], entry: impl Fn(&Target<S>) -> P) -> Vec<(String, Vec<P>)> {
    let mut out: Vec<(String, Vec<P>)> = Vec::new();
    for t in targets {
        match out.iter_mut().find(|(name, _)| *name == t.topic) {
            Some((_, parts)) => parts.push(entry(t)),
            None => out.push((t.topic.clone(), vec![entry(t)])),
        }
    }
    out
}

/// Where the metadata sends a partition.
#[derive(Debug)]
pub(crate) enum Route {
    Leader(BrokerId),
    Fail(Error),
    Retry(Cause),
}

/// Where `topic`/`partition` goes, as `snapshot` knows it (pure).
pub(crate) fn route(snapshot: &MetadataSnapshot, topic: &str, partition: i32) -> Route {
    let Some(info) = snapshot.topic(topic) else {
        // the refresh failed or did not list it: try again
        return Route::Retry(Cause::NoLeader);
    };
    match info.error {
        Some(ErrorCode::UnknownTopicOrPartition) => {
            return Route::Fail(Error::UnknownTopic { topic: topic.to_owned() })
        }
        // an auto-created topic gets its leaders in a moment
        Some(ErrorCode::LeaderNotAvailable) if info.partitions.is_empty() => return Route::Retry(Cause::NoLeader),
        Some(code) if info.partitions.is_empty() => {
            return if code.is_retriable() {
                Route::Retry(Cause::Topic(code))
            } else {
                Route::Fail(Error::TopicMetadata { topic: topic.to_owned(), code, attempts: 1 })
            };
        }
        _ => {}
    }
    match info.partitions.get(&partition) {
        Some(p) => match p.leader {
            Some(leader) => Route::Leader(leader),
            None => Route::Retry(Cause::NoLeader),
        },
        None if info.partitions.is_empty() => Route::Retry(Cause::NoLeader),
        None => Route::Fail(Error::UnknownPartition {
            topic: topic.to_owned(),
            partition,
            partition_count: info.partitions.len(),
        }),
    }
}

#[derive(Debug)]
struct Pending<S> {
    idx: usize,
    target: Target<S>,
    /// Rounds the target took part in (requests or leader lookups).
    attempts: u32,
    /// Retries used.
    retries: u32,
    last: Option<Cause>,
}

fn unique_topics<'a>(topics: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in topics {
        if !out.iter().any(|o| o == t) {
            out.push(t.to_owned());
        }
    }
    out
}

/// Brings the metadata of the targets' topics up to date when it is missing, stale, carries an
/// error, or lacks a requested partition.
///
/// # Errors
///
/// [`Error::Metadata`] when no broker answered and some topic is not known at all.
pub(crate) async fn ensure_metadata(cache: &MetadataCache, targets: &[(&str, i32)]) -> Result<()> {
    let snapshot = cache.snapshot();
    let stale = unique_topics(
        targets
            .iter()
            .filter(|(t, p)| cache.topic_needs_refresh(t) || snapshot.partition(t, *p).is_none())
            .map(|(t, _)| *t),
    );
    if stale.is_empty() {
        return Ok(());
    }
    match cache.refresh(&stale).await {
        Ok(()) => Ok(()),
        Err(source) => {
            let snapshot = cache.snapshot();
            if stale.iter().all(|t| snapshot.topic(t).is_some()) {
                tracing::warn!(error = %source, topics = ?stale, "metadata refresh failed; using what is known");
                Ok(())
            } else {
                Err(Error::Metadata { topics: stale, source: Box::new(source) })
            }
        }
    }
}

/// Runs `op` for `targets` until each has a result, retrying each at most `max_retries` times.
/// Results come back in the targets' order.
///
/// # Errors
///
/// [`Error::Metadata`] when the first metadata lookup fails; every other error is per target.
pub(crate) async fn drive<O: LeaderOp>(
    cache: &MetadataCache,
    config: &SimpleConsumerConfig,
    op: &O,
    targets: Vec<Target<O::State>>,
    max_retries: u32,
) -> Result<Vec<Result<O::Out>>> {
    let wanted: Vec<(&str, i32)> = targets.iter().map(|t| (t.topic.as_str(), t.partition)).collect();
    ensure_metadata(cache, &wanted).await?;
    let mut results: Vec<Option<Result<O::Out>>> = (0..targets.len()).map(|_| None).collect();
    let mut pending: Vec<Pending<O::State>> = targets
        .into_iter()
        .enumerate()
        .map(|(idx, target)| Pending { idx, target, attempts: 0, retries: 0, last: None })
        .collect();
    let backoff = Backoff::new(config.refresh_leader_backoff(), config.refresh_leader_backoff_max());
    let mut backoffs = 0u32;
    while !pending.is_empty() {
        let snapshot = cache.snapshot();
        let mut by_leader: BTreeMap<BrokerId, Vec<Pending<O::State>>> = BTreeMap::new();
        let mut retry: Vec<Pending<O::State>> = Vec::new();
        let mut again: Vec<Pending<O::State>> = Vec::new();
        for mut p in pending.drain(..) {
            p.attempts += 1;
            match route(&snapshot, &p.target.topic, p.target.partition) {
                Route::Leader(b) => by_leader.entry(b).or_default().push(p),
                Route::Fail(Error::TopicMetadata { topic, code, .. }) => {
                    results[p.idx] = Some(Err(Error::TopicMetadata { topic, code, attempts: p.attempts }))
                }
                Route::Fail(e) => results[p.idx] = Some(Err(e)),
                Route::Retry(cause) => {
                    p.last = Some(cause);
                    retry.push(p);
                }
            }
        }
        let mut calls = JoinSet::new();
        for (broker, group) in by_leader {
            let (pool, op) = (cache.pool().clone(), op.clone());
            calls.spawn(async move {
                let targets = group.iter().map(|p| p.target.clone()).collect();
                let outcome = op.call(pool, broker, targets).await;
                (broker, group, outcome)
            });
        }
        while let Some(joined) = calls.join_next().await {
            let (broker, group, outcome) = match joined {
                Ok(done) => done,
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(e) => unreachable!("a leader call was cancelled while awaited: {e}"),
            };
            match outcome {
                Ok(outcomes) => {
                    for (mut p, outcome) in group.into_iter().zip(outcomes) {
                        match outcome {
                            Outcome::Done(r) => results[p.idx] = Some(r),
                            Outcome::Fail(cause) => {
                                results[p.idx] =
                                    Some(Err(cause.into_error(&p.target.topic, p.target.partition, p.attempts)))
                            }
                            Outcome::Retry(cause) => {
                                p.last = Some(cause);
                                retry.push(p);
                            }
                            Outcome::Again(state) => {
                                p.target.state = state;
                                again.push(p);
                            }
                        }
                    }
                }
                Err(e) => {
                    let retriable = e.is_retriable();
                    tracing::warn!(broker, error = %e, retriable, partitions = group.len(), "request to a leader failed");
                    let source = Arc::new(e);
                    for mut p in group {
                        let cause = Cause::Net { broker, source: source.clone() };
                        if retriable {
                            p.last = Some(cause);
                            retry.push(p);
                        } else {
                            results[p.idx] =
                                Some(Err(cause.into_error(&p.target.topic, p.target.partition, p.attempts)));
                        }
                    }
                }
            }
        }
        let mut retrying = Vec::new();
        for mut p in retry {
            let cause = p.last.take().unwrap_or(Cause::NoLeader);
            if p.retries >= max_retries {
                results[p.idx] = Some(Err(cause.into_error(&p.target.topic, p.target.partition, p.attempts)));
            } else {
                p.retries += 1;
                p.last = Some(cause);
                retrying.push(p);
            }
        }
        if !retrying.is_empty() {
            let topics = unique_topics(retrying.iter().map(|p| p.target.topic.as_str()));
            for t in &topics {
                cache.invalidate(t);
            }
            let delay = backoff.next_delay(backoffs);
            backoffs += 1;
            tracing::warn!(
                ?topics,
                partitions = retrying.len(),
                ?delay,
                cause = ?retrying[0].last,
                "leader error; refreshing metadata after a backoff"
            );
            tokio::time::sleep(delay).await;
            if let Err(e) = cache.refresh(&topics).await {
                tracing::warn!(error = %e, ?topics, "metadata refresh failed; retrying with what is known");
            }
        }
        pending = again;
        pending.extend(retrying);
    }
    Ok(results.into_iter().map(|r| r.expect("every target gets a result before the loop ends")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gregor_protocol::messages::{BrokerMetadata, MetadataResponse, PartitionMetadata, TopicMetadata};
    use tokio::time::Instant;

    fn snapshot(topics: Vec<TopicMetadata>) -> MetadataSnapshot {
        let brokers = vec![BrokerMetadata { node_id: 0, host: "h".into(), port: 1, ..Default::default() }];
        MetadataSnapshot::from_response(&MetadataResponse { brokers, topics, ..Default::default() }, Instant::now())
    }

    fn topic(name: &str, error_code: i16, leaders: &[i32]) -> TopicMetadata {
        TopicMetadata {
            error_code,
            topic: Some(name.into()),
            partitions: leaders
                .iter()
                .enumerate()
                .map(|(p, &leader)| PartitionMetadata {
                    error_code: if leader < 0 { 5 } else { 0 },
                    partition: p as i32,
                    leader,
                    replicas: vec![],
                    isr: vec![],
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn routes_follow_the_metadata() {
        let s = snapshot(vec![
            topic("t", 0, &[0, -1]),
            topic("gone", 3, &[]),
            topic("auto", 5, &[]),
            topic("bad", 17, &[]),
        ]);
        assert!(matches!(route(&s, "t", 0), Route::Leader(0)));
        assert!(matches!(route(&s, "t", 1), Route::Retry(Cause::NoLeader)));
        assert!(matches!(
            route(&s, "t", 7),
            Route::Fail(Error::UnknownPartition { partition: 7, partition_count: 2, .. })
        ));
        assert!(matches!(route(&s, "gone", 0), Route::Fail(Error::UnknownTopic { .. })));
        assert!(matches!(route(&s, "auto", 0), Route::Retry(Cause::NoLeader)));
        assert!(matches!(route(&s, "bad", 0), Route::Fail(Error::TopicMetadata { code: ErrorCode::InvalidTopic, .. })));
        assert!(matches!(route(&s, "unlisted", 0), Route::Retry(Cause::NoLeader)));
    }

    #[test]
    fn targets_group_by_topic_in_first_seen_order() {
        let t = |topic: &str, partition| Target { topic: topic.into(), partition, state: () };
        let groups = group_by_topic(&[t("b", 0), t("a", 1), t("b", 2)], |t| t.partition);
        assert_eq!(groups, [("b".to_owned(), vec![0, 2]), ("a".to_owned(), vec![1])]);
    }
}

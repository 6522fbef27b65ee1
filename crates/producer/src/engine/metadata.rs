//! What the engine knows of the cluster: the metadata snapshot (leaders, partitions, topic
//! errors), the topics it sends to, and the refreshes: when they run is
//! `crate::refresh::RefreshSchedule`'s decision; here they are started, and their outcome
//! is applied (leaders set, held records placed, records out of metadata rounds failed).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use gregor_net::{MetadataCache, MetadataSnapshot};
use gregor_protocol::ErrorCode;
use tokio::time::Instant;

use super::{Completion, Engine, TaskKind};
use crate::config::ProducerConfig;
use crate::error::Error;
use crate::refresh::RefreshSchedule;
use crate::topic::Topic;

/// A topic's partitions as the last refresh told them.
#[derive(Default)]
pub(super) struct TopicParts {
    pub(super) all: Vec<i32>,
    pub(super) available: Vec<i32>,
    pub(super) error: Option<ErrorCode>,
}

/// The engine's view of the cluster.
pub(super) struct Metadata {
    pub(super) cache: MetadataCache,
    pub(super) snapshot: Arc<MetadataSnapshot>,
    pub(super) parts: HashMap<String, TopicParts>,
    /// Every topic a record was sent to, the topics of every refresh: the engine's own
    /// allocation of each name (the queues' keys, whose counts only the engine changes), and
    /// another for results (whose counts the delivery task changes, one clone per result: on
    /// a line of its own, not the keys').
    pub(super) topics: BTreeMap<Arc<str>, Topic>,
    /// When refreshes run.
    pub(super) schedule: RefreshSchedule,
    /// The topics of the refresh running now.
    pub(super) refreshing: Option<Vec<Arc<str>>>,
    /// The last refresh's failure.
    pub(super) last_error: Option<Arc<gregor_net::Error>>,
}

impl Metadata {
    pub(super) fn new(cache: MetadataCache, config: &ProducerConfig) -> Metadata {
        Metadata {
            snapshot: cache.snapshot(),
            cache,
            parts: HashMap::new(),
            topics: BTreeMap::new(),
            schedule: RefreshSchedule::new(config.topic_metadata_refresh_interval(), config.retry_backoff()),
            refreshing: None,
            last_error: None,
        }
    }
}

impl Engine {
    /// The refresh schedule's turn (see `crate::refresh`): starts a refresh of every known
    /// topic when it says so.
    pub(super) fn poll_refresh(&mut self, now: Instant) {
        let acc = &self.acc;
        let poll = self.meta.schedule.poll(now, || acc.waiting_for_metadata(), !self.meta.topics.is_empty());
        if poll.for_waiting {
            tracing::debug!(
                backoff = ?self.config.retry_backoff(),
                "records wait for metadata and no refresh is coming; asking for one"
            );
        }
        if !poll.start {
            return;
        }
        let topics: Vec<Arc<str>> = self.meta.topics.keys().cloned().collect();
        let names: Vec<String> = topics.iter().map(|t| t.to_string()).collect();
        self.meta.refreshing = Some(topics);
        let cache = self.meta.cache.clone();
        tracing::debug!(topics = names.len(), "refreshing metadata");
        let handle = self.tasks.spawn(async move { Completion::Metadata { result: cache.refresh(&names).await } });
        self.task_kinds.insert(handle.id(), TaskKind::Metadata);
    }

    /// The running refresh ended at `now` with `result`.
    pub(super) fn on_metadata(&mut self, result: Result<(), gregor_net::Error>, now: Instant) {
        // still running while its outcome is applied: records routed again below and held
        // once more then ask for no refresh of their own; the end of this function decides
        let topics = self.meta.refreshing.clone().unwrap_or_default();
        let ok = result.is_ok();
        match result {
            Ok(()) => {
                self.meta.last_error = None;
                self.meta.snapshot = self.meta.cache.snapshot();
                self.meta.parts = self
                    .meta
                    .snapshot
                    .topics()
                    .map(|t| {
                        let parts = TopicParts {
                            all: self.meta.snapshot.partitions(t),
                            available: self.meta.snapshot.available_partitions(t),
                            error: self.meta.snapshot.topic_error(t),
                        };
                        (t.to_owned(), parts)
                    })
                    .collect();
                // as 0.8 clears sendPartitionPerTopicCache on every refresh
                self.partitioner.reset_sticky();
                for tp in self.acc.partitions() {
                    if !topics.contains(&tp.topic) {
                        continue;
                    }
                    let missing = self
                        .meta
                        .parts
                        .get(&*tp.topic)
                        .filter(|p| p.error.is_none() && !p.all.is_empty() && !p.all.contains(&tp.partition))
                        .map(|p| p.all.len());
                    match missing {
                        Some(partitions) => {
                            self.chunks.made.remove(&tp);
                            for r in self.acc.remove_partition(&tp) {
                                let error = Error::InvalidPartition {
                                    topic: tp.topic.to_string(),
                                    partition: tp.partition,
                                    partitions,
                                };
                                let topic = self.result_topic(&tp.topic);
                                self.fail(r.record, topic, r.partition, r.attempts, error);
                            }
                        }
                        None => {
                            let leader = self.meta.snapshot.leader(&tp.topic, tp.partition);
                            if leader != self.acc.leader(&tp) {
                                tracing::debug!(%tp, ?leader, "leader");
                            }
                            self.acc.set_leader(&tp, leader);
                        }
                    }
                }
                for topic in self.acc.held_topics() {
                    if topics.contains(&topic) {
                        for (pending, enqueued_at, raw) in self.acc.take_held(&topic) {
                            self.route_held(&topic, pending, raw.as_deref(), enqueued_at, now);
                        }
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "metadata refresh failed; records wait for the next one");
                self.meta.last_error = Some(Arc::new(e));
            }
        }
        let refused = self.meta.last_error.clone().filter(|e| !ok && e.is_security_refusal());
        if let Some(source) = refused {
            // a TLS or SASL refusal would be the same next round: the records
            // waiting for metadata fail now
            for r in self.acc.give_up_metadata(&topics) {
                self.fail_released(r, Error::Refused { source: source.clone() });
            }
        }
        let rounds = self.config.message_send_max_retries() + 1;
        for r in self.acc.end_metadata_round(&topics) {
            let topic_known = self.meta.parts.get(&*r.topic).is_some_and(|p| !p.all.is_empty());
            let error = match r.partition {
                Some(partition) if topic_known => Error::NoLeader { topic: r.topic.to_string(), partition, rounds },
                _ => Error::TopicUnavailable {
                    topic: r.topic.to_string(),
                    code: self.meta.parts.get(&*r.topic).and_then(|p| p.error),
                    rounds,
                    source: self.meta.last_error.clone(),
                },
            };
            self.fail_released(r, error);
        }
        self.meta.refreshing = None;
        self.meta.schedule.finished(now, ok, self.acc.waiting_for_metadata());
    }
}

#[cfg(test)]
mod tests {
    //! The engine's metadata scheduling, driven by hand: no broker, no IO (a refresh task is
    //! spawned but never polled; its outcome is fed to `on_metadata` directly), so the
    //! decisions are checked deterministically.

    use gregor_protocol::{Compression, EncodedMessage, Message};
    use tokio::sync::oneshot;

    use super::*;
    use crate::delivery::{DeliveryResult, Pending, Slot};
    use crate::engine::testing::engine_with;
    use crate::inbox::Command;

    fn engine() -> Engine {
        engine_with(Compression::None)
    }

    fn send(e: &mut Engine, partition: Option<i32>) -> oneshot::Receiver<DeliveryResult> {
        let (tx, rx) = oneshot::channel();
        let message = EncodedMessage::encode(&Message::new(None, Some(bytes::Bytes::from_static(b"v")))).unwrap();
        let pending = Pending::new(e.names.register("t").0, partition, message, Some(Slot::Future(tx)), None);
        e.on_command(Command::Record(pending), Instant::now());
        rx
    }

    fn refresh_coming(e: &Engine) -> bool {
        e.meta.schedule.is_coming()
    }

    /// How the refreshes end in [`run_refreshes`].
    #[derive(Clone, Copy)]
    enum Outcome {
        /// The cluster answers (and knows nothing of the topic).
        Answered,
        /// No broker answers.
        NoBroker,
    }
    use Outcome::{Answered, NoBroker};

    /// Runs the engine's steps, ending every refresh it starts as `outcome` says, until no
    /// refresh is coming (at most 10); returns how many ran.
    fn run_refreshes(e: &mut Engine, outcome: Outcome) -> usize {
        let mut refreshes = 0;
        let mut now = Instant::now();
        e.step(now);
        while refreshes < 10 {
            if e.meta.schedule.is_running() {
                refreshes += 1;
                let result = match outcome {
                    Answered => Ok(()),
                    NoBroker => Err(gregor_net::Error::NoBrokerAvailable { tried: Vec::new(), last: None }),
                };
                e.on_metadata(result, now);
            } else if let Some(at) = e.meta.schedule.wanted() {
                now = now.max(at);
            } else {
                break;
            }
            e.step(now);
        }
        refreshes
    }

    fn failed(rx: &mut oneshot::Receiver<DeliveryResult>) -> Error {
        rx.try_recv().expect("the record has its result").expect_err("it failed").error
    }

    /// Regression (the CI hang of `a_topic_that_does_not_exist_fails_after_the_metadata_rounds`):
    /// a record of a topic the engine already knew, queued for a partition without a leader,
    /// asked for no refresh, so it waited for the periodic one (10 minutes).
    #[tokio::test]
    async fn a_record_for_a_known_topic_without_a_leader_gets_its_rounds() {
        let mut e = engine();
        let mut first = send(&mut e, Some(0));
        assert_eq!(run_refreshes(&mut e, NoBroker), 3);
        assert!(matches!(failed(&mut first), Error::TopicUnavailable { rounds: 3, .. }));
        assert!(!refresh_coming(&e), "nothing waits: no refresh");

        let mut second = send(&mut e, Some(0));
        e.step(Instant::now());
        assert!(refresh_coming(&e), "a record waits for a leader: a refresh must be coming");
        assert_eq!(run_refreshes(&mut e, NoBroker), 3);
        assert!(matches!(failed(&mut second), Error::TopicUnavailable { rounds: 3, .. }));
        assert!(e.acc.is_empty());
    }

    /// The same for a record held for its topic's partitions, after successful refreshes that
    /// do not know the topic; and the last of them leaves no spare refresh behind (the spare
    /// one hid the bug above whenever the next record came before it ran).
    #[tokio::test]
    async fn held_records_get_their_rounds_and_leave_no_spare_refresh() {
        let mut e = engine();
        let mut first = send(&mut e, None);
        assert_eq!(run_refreshes(&mut e, Answered), 3);
        assert!(matches!(failed(&mut first), Error::TopicUnavailable { rounds: 3, .. }));
        assert!(!refresh_coming(&e), "a spare refresh after the records failed");

        let mut second = send(&mut e, None);
        e.step(Instant::now());
        assert!(refresh_coming(&e));
        assert_eq!(run_refreshes(&mut e, Answered), 3);
        assert!(matches!(failed(&mut second), Error::TopicUnavailable { rounds: 3, .. }));
        let mut third = send(&mut e, Some(0));
        assert_eq!(run_refreshes(&mut e, NoBroker), 3);
        assert!(matches!(failed(&mut third), Error::TopicUnavailable { rounds: 3, .. }));
    }

    /// A flush waiting for such a record is answered once the record fails.
    #[tokio::test]
    async fn a_flush_behind_a_record_without_a_leader_ends() {
        let mut e = engine();
        let mut first = send(&mut e, Some(0));
        run_refreshes(&mut e, NoBroker);
        failed(&mut first);
        let mut second = send(&mut e, Some(0));
        let (reply, mut flushed) = oneshot::channel();
        e.on_command(Command::Flush { reply }, Instant::now());
        assert_eq!(run_refreshes(&mut e, NoBroker), 3);
        assert!(matches!(failed(&mut second), Error::TopicUnavailable { .. }));
        assert_eq!(flushed.try_recv().expect("the flush is answered").failed.len(), 1);
    }
}

//! The cluster's shared state: brokers, topics, partitions with their replicas' logs, group
//! offsets kept by the coordinator. Plain data guarded by one mutex; the tasks around it
//! (servers, controller, replicator) never hold the lock across an await.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use gregor_protocol::schema::Uuid;
use tokio::sync::Notify;

use super::config::BrokerConfig;
use super::hooks::Hooks;
use super::log::PartitionLog;
use crate::tls::ServerTls;

/// What the cluster knows of one broker.
#[derive(Debug)]
pub(crate) struct BrokerSlot {
    pub(crate) port: u16,
    /// Serving requests (not killed).
    pub(crate) running: bool,
    /// Registered in ZooKeeper, as the controller last saw `/brokers/ids`.
    pub(crate) registered: bool,
    /// Paused: connections stay open but nothing is answered or replicated.
    pub(crate) paused: bool,
}

/// One replica of a partition.
#[derive(Debug)]
pub(crate) struct Replica {
    pub(crate) log: PartitionLog,
    /// Last time this replica's log end reached the leader's.
    pub(crate) caught_up_at: Instant,
}

impl Replica {
    pub(crate) fn new() -> Replica {
        Replica { log: PartitionLog::new(), caught_up_at: Instant::now() }
    }
}

/// One partition: its assignment, leadership and replicas.
#[derive(Debug)]
pub(crate) struct Partition {
    pub(crate) replicas: Vec<i32>,
    pub(crate) leader: i32,
    pub(crate) leader_epoch: i32,
    pub(crate) isr: Vec<i32>,
    pub(crate) hw: i64,
    pub(crate) logs: BTreeMap<i32, Replica>,
    /// Idempotent producers' last batches (modern mode), by producer id.
    pub(crate) producers: HashMap<i64, ProducerBatches>,
}

/// What a partition leader remembers of an idempotent producer: its epoch and its last (up to
/// five) batches as (first sequence, last sequence, base offset), oldest first, as Kafka's
/// `ProducerStateManager` keeps them to recognise a retried batch.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProducerBatches {
    pub(crate) epoch: i16,
    pub(crate) batches: std::collections::VecDeque<(i32, i32, i64)>,
}

impl Partition {
    /// A new, empty partition on `replicas`, led by the first of them that is in `live`.
    pub(crate) fn new(replicas: Vec<i32>, live: &[i32]) -> Partition {
        let isr: Vec<i32> = replicas.iter().copied().filter(|r| live.contains(r)).collect();
        let leader = isr.first().copied().unwrap_or(-1);
        let logs = replicas.iter().map(|r| (*r, Replica::new())).collect();
        Partition { replicas, leader, leader_epoch: 0, isr, hw: 0, logs, producers: HashMap::new() }
    }

    pub(crate) fn leader_log(&self) -> Option<&PartitionLog> {
        self.logs.get(&self.leader).map(|r| &r.log)
    }
}

/// One topic.
#[derive(Debug, Default)]
pub(crate) struct Topic {
    /// The topic's id (KIP-516), as Metadata v10+ and Fetch v13+ name it; random per topic.
    pub(crate) id: Uuid,
    pub(crate) partitions: BTreeMap<i32, Partition>,
    pub(crate) config: BTreeMap<String, String>,
}

/// Everything the brokers share.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// Leaders elected from outside the ISR since the start.
    pub(crate) unclean_elections: u64,
    pub(crate) brokers: BTreeMap<i32, BrokerSlot>,
    pub(crate) topics: BTreeMap<String, Topic>,
    pub(crate) controller: Option<i32>,
    pub(crate) controller_epoch: i32,
    /// Kafka-stored (v1) offsets: (group, topic, partition) -> (offset, metadata).
    pub(crate) group_offsets: HashMap<(String, String, i32), (i64, String)>,
    /// When `__consumer_offsets` was first asked for (ConsumerMetadata).
    pub(crate) offsets_topic_requested: Option<Instant>,
    /// The producer id InitProducerId hands out next (modern mode); the first is 0, as on a
    /// fresh Kafka 3.7 broker.
    pub(crate) next_producer_id: i64,
    /// The modern mode's consumer groups (their coordinators' state).
    pub(crate) groups: super::groups::Groups,
}

/// A random topic id (never the zero id, which means "none" on the wire).
pub(crate) fn new_topic_id() -> Uuid {
    let mut id = [0u8; 16];
    rand::Rng::fill(&mut rand::rng(), &mut id[..]);
    id[0] |= 1;
    Uuid(id)
}

impl State {
    pub(crate) fn partition(&self, topic: &str, partition: i32) -> Option<&Partition> {
        self.topics.get(topic)?.partitions.get(&partition)
    }

    /// The name of the topic with id `id`.
    pub(crate) fn topic_named_by(&self, id: Uuid) -> Option<&str> {
        self.topics.iter().find(|(_, t)| t.id == id).map(|(n, _)| n.as_str())
    }

    pub(crate) fn partition_mut(&mut self, topic: &str, partition: i32) -> Option<&mut Partition> {
        self.topics.get_mut(topic)?.partitions.get_mut(&partition)
    }

    /// Live as the cluster sees it: registered in ZooKeeper (a crashed broker stays "live"
    /// until its session expires, as in Kafka).
    pub(crate) fn is_live(&self, broker: i32) -> bool {
        self.brokers.get(&broker).is_some_and(|b| b.registered)
    }

    /// The largest entry a topic's partitions accept.
    pub(crate) fn max_message_bytes(&self, config: &BrokerConfig, topic: &str) -> usize {
        self.topic_config(topic, "max.message.bytes").unwrap_or(config.message_max_bytes)
    }

    /// `min.insync.replicas` of a topic.
    pub(crate) fn min_insync_replicas(&self, config: &BrokerConfig, topic: &str) -> usize {
        self.topic_config(topic, "min.insync.replicas").unwrap_or(config.min_insync_replicas)
    }

    fn topic_config(&self, topic: &str, key: &str) -> Option<usize> {
        self.topics.get(topic)?.config.get(key)?.parse().ok()
    }
}

/// What every task of the cluster holds.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: BrokerConfig,
    state: Mutex<State>,
    /// Woken on every append, high-watermark or leadership change.
    pub(crate) changed: Notify,
    pub(crate) hooks: Hooks,
    /// TLS for every listener, or plaintext.
    pub(crate) tls: Option<ServerTls>,
    /// The modern mode's settings; `None` for a Kafka 0.8.2 cluster.
    pub(crate) modern: Option<super::modern::Modern>,
    /// Where each broker's and partition's queue of work ends ([`super::config::Timing`]).
    pub(crate) clocks: Mutex<Clocks>,
}

/// When the brokers' and the partitions' resources are next free (a virtual queue each): a
/// request that needs one starts when it is free and holds it for its bytes' time.
#[derive(Debug, Default)]
pub(crate) struct Clocks {
    brokers: HashMap<i32, tokio::time::Instant>,
    partitions: HashMap<(String, i32), tokio::time::Instant>,
}

/// Holds a resource running at `rate` bytes/s, whose queue ends at `free`, for `bytes`: the
/// moment they are through.
fn reserve(
    free: &mut tokio::time::Instant,
    now: tokio::time::Instant,
    bytes: usize,
    rate: u64,
) -> tokio::time::Instant {
    let start = (*free).max(now);
    let end = if rate == 0 { start } else { start + std::time::Duration::from_secs_f64(bytes as f64 / rate as f64) };
    *free = end;
    end
}

impl Clocks {
    /// `bytes` through broker `id` (rate `rate`), from `now`.
    pub(crate) fn broker(
        &mut self,
        id: i32,
        now: tokio::time::Instant,
        bytes: usize,
        rate: u64,
    ) -> tokio::time::Instant {
        reserve(self.brokers.entry(id).or_insert(now), now, bytes, rate)
    }

    /// `bytes` appended to a partition's log (rate `rate`), from `now`.
    pub(crate) fn append(
        &mut self,
        topic: &str,
        partition: i32,
        now: tokio::time::Instant,
        bytes: usize,
        rate: u64,
    ) -> tokio::time::Instant {
        let free = self.partitions.entry((topic.to_owned(), partition)).or_insert(now);
        reserve(free, now, bytes, rate)
    }
}

impl Shared {
    pub(crate) fn new(
        config: BrokerConfig,
        request_log_capacity: usize,
        tls: Option<ServerTls>,
        modern: Option<super::modern::Modern>,
    ) -> Arc<Shared> {
        Arc::new(Shared {
            config,
            state: Mutex::new(State::default()),
            changed: Notify::new(),
            hooks: Hooks::new(request_log_capacity),
            tls,
            modern,
            clocks: Mutex::new(Clocks::default()),
        })
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Waits until `ready` holds or `deadline` passes; `ready` is checked under the lock after
    /// every change. Returns whether it held.
    pub(crate) async fn wait_until(
        &self,
        deadline: tokio::time::Instant,
        mut ready: impl FnMut(&State) -> bool,
    ) -> bool {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if ready(&self.state()) {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return ready(&self.state());
            }
        }
    }

    pub(crate) fn clocks(&self) -> MutexGuard<'_, Clocks> {
        self.clocks.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn notify(&self) {
        self.changed.notify_waiters();
    }
}

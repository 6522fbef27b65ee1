//! # gregor-admin
//!
//! Kafka 0.8.2 administration through ZooKeeper, the way Kafka 0.8.2's own tools do it
//! (`kafka-topics.sh`, `kafka-reassign-partitions.sh`, `kafka-preferred-replica-election.sh`,
//! `ConsumerOffsetChecker`): the [`Admin`] handle writes the znodes a Kafka controller acts on
//! and reads the ones the brokers and consumers keep, byte for byte as Kafka does; it asks
//! brokers only what ZooKeeper cannot tell (log end offsets, Kafka-stored consumer offsets).
//!
//! ```text
//!   Admin ──ZkClient──► /brokers/topics/T, /config/topics/T, /config/changes/config_change_N
//!     │                 /admin/reassign_partitions, /admin/preferred_replica_election,
//!     │                 /admin/delete_topics/T            ──► the controller acts on them
//!     │             ◄── /brokers/ids/N, /controller, /brokers/topics/T/partitions/P/state,
//!     │                 /consumers/G/{ids,owners,offsets}
//!     └──Pool──► partition leaders: Offsets (log size), group coordinator: ConsumerMetadata,
//!                OffsetFetch v1, OffsetCommit v1 (Kafka-stored offsets)
//! ```
//!
//! | task | methods |
//! |---|---|
//! | topics | [`create_topic`](Admin::create_topic), [`create_topic_with_assignment`](Admin::create_topic_with_assignment), [`list_topics`](Admin::list_topics), [`describe_topics`](Admin::describe_topics), [`add_partitions`](Admin::add_partitions), [`alter_topic_config`](Admin::alter_topic_config), [`describe_topic_config`](Admin::describe_topic_config), [`delete_topic`](Admin::delete_topic) |
//! | replicas | [`generate_reassignment`](Admin::generate_reassignment), [`execute_reassignment`](Admin::execute_reassignment), [`verify_reassignment`](Admin::verify_reassignment), [`preferred_replica_election`](Admin::preferred_replica_election) |
//! | brokers | [`list_brokers`](Admin::list_brokers), [`controller`](Admin::controller) |
//! | consumer groups | [`list_groups`](Admin::list_groups), [`describe_group`](Admin::describe_group), [`group_offsets`](Admin::group_offsets), [`reset_offsets`](Admin::reset_offsets) |
//! | health | [`health`](Admin::health) |
//! | audit (producers with audit on: produced against seen per topic and window) | [`audit`](Admin::audit), see [`audit`](mod@audit) |
//!
//! Replica placement ([`placement`]) and topic config rules ([`config`]) are pure functions,
//! usable without a cluster.
//!
//! ```no_run
//! use std::time::Duration;
//! use gregor_admin::{Admin, OffsetStorage, TopicSelection};
//!
//! # async fn demo() -> gregor_admin::Result<()> {
//! let admin = Admin::connect("127.0.0.1:2181", Duration::from_secs(6)).await?;
//! admin.create_topic("events", 6, 2, [("retention.ms", "86400000")]).await?;
//! for topic in admin.describe_topics(&TopicSelection::All).await? {
//!     for p in topic.under_replicated() {
//!         println!("{} {} leader {:?} replicas {:?} isr {:?}", p.topic, p.partition, p.leader, p.replicas, p.isr);
//!     }
//! }
//! for row in admin.group_offsets("billing", OffsetStorage::Zookeeper).await? {
//!     println!("{} {} {:?} {:?} {:?}", row.topic, row.partition, row.offset, row.log_size, row.lag);
//! }
//! admin.close().await?;
//! # Ok(()) }
//! ```
//!
//! Tracing: `debug` for every znode written and broker request, `warn` for retries. No
//! subscriber is installed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use gregor_net::{Backoff, BrokerConnection, BrokerId, ConnectionConfig, MetadataCache, Pool, Security};
use gregor_protocol::messages::{OffsetsPartition, OffsetsRequest, OffsetsTopic, CONSUMER_REPLICA_ID};
use gregor_protocol::ErrorCode;
use gregor_zk::payloads::{BrokerRegistration, PartitionState, TopicAssignment};
use gregor_zk::{paths, ZkClient};

pub mod audit;
pub mod config;
mod error;
pub mod placement;

mod brokers;
mod groups;
mod health;
mod reassign;
mod topics;

pub use audit::{AuditOptions, AuditReport};
pub use brokers::{BrokerInfo, BrokerList};
pub use error::{Error, Result};
pub use groups::{
    GroupDescription, GroupMember, OffsetReset, OffsetResetResult, OffsetStorage, PartitionOffset, PartitionOwner,
};
pub use health::{BrokerLoad, ClusterHealth};
pub use reassign::{
    parse_reassignment_json, parse_topics_to_move_json, topics_to_move_json, ExecutedReassignment, PartitionStatus,
    ProposedReassignment, ReassignmentPlan, ReassignmentStatus,
};
pub use topics::{DeleteTopicOutcome, PartitionDescription, TopicDescription, TopicListing, TopicSelection};

/// A topic and partition (Kafka's `TopicAndPartition`): how the admin names a partition in
/// elections (`/admin/preferred_replica_election`), reassignment plans and outcomes, and errors.
pub use gregor_protocol::TopicPartition;
/// A partition of a reassignment plan and its target replicas (`topic`, `partition`,
/// `replicas`), as in `/admin/reassign_partitions`.
pub use gregor_zk::payloads::PartitionReassignment;

/// `client.id` of the admin's broker requests unless another [`ConnectionConfig`] is given.
pub const DEFAULT_CLIENT_ID: &str = "gregor-admin";

/// How many times the offset coordinator of a group is looked up and asked before giving up
/// (ConsumerMetadata answers 15 for about a second while `__consumer_offsets` is created).
pub const DEFAULT_COORDINATOR_ATTEMPTS: u32 = 15;

/// How often a log offset lookup is tried when a leader moves under it.
const LEADER_ATTEMPTS: u32 = 3;

/// An administration handle over a ZooKeeper session (and a broker connection pool for the
/// few operations that need brokers).
///
/// Every write goes where Kafka 0.8.2's tools write it, with the same bytes, so a real Kafka
/// controller (or the testkit's FakeCluster) acts on it. Broker addresses are read from their
/// registrations at `/brokers/ids/N`, as the tools do: no `metadata.broker.list` is needed. To
/// share connections with other clients, or to set timeouts and the client id, hand in a
/// [`Pool`] ([`Admin::with_pool`]) or a [`MetadataCache`] ([`Admin::with_metadata_cache`]).
///
/// Cheap to clone (the session and the pool are shared). Operations are not atomic across
/// znodes, as in Kafka: a topic's config and assignment are two writes.
#[derive(Debug, Clone)]
pub struct Admin {
    zk: ZkClient,
    pool: Pool,
    coordinator_attempts: u32,
    backoff: Backoff,
}

impl Admin {
    /// Connects to ZooKeeper (`host:port[,host:port...][/chroot]`, Kafka's `zookeeper.connect`)
    /// with `session_timeout` (Kafka's tools use 30 s; at least 1.5 s).
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when the connect string is malformed or no session could be
    /// established within the timeout.
    pub async fn connect(zookeeper_connect: &str, session_timeout: Duration) -> Result<Admin> {
        Ok(Admin::new(ZkClient::connect(zookeeper_connect, session_timeout).await?))
    }

    /// An admin handle over an existing ZooKeeper session.
    pub fn new(zk: ZkClient) -> Admin {
        let config = ConnectionConfig::builder().client_id(DEFAULT_CLIENT_ID).build().unwrap_or_default();
        Admin {
            zk,
            pool: Pool::new(config),
            coordinator_attempts: DEFAULT_COORDINATOR_ATTEMPTS,
            backoff: Backoff::default(),
        }
    }

    /// Uses `pool` for broker requests (its connection settings and client id, its open
    /// connections). The admin records broker addresses in it from `/brokers/ids`.
    pub fn with_pool(mut self, pool: Pool) -> Admin {
        self.pool = pool;
        self
    }

    /// Secures the broker connections (the log size lookups, the offset coordinators, the
    /// audit's reads) with `security`: `security.protocol` and its TLS and SASL settings, as
    /// [`Security::from_properties`] reads them from Kafka's properties (a tool's
    /// `--command-config` file). Replaces the pool with a new one with these settings and the
    /// old one's others. ZooKeeper connections stay as they are.
    pub fn with_security(self, security: &Security) -> Admin {
        let config = self.pool.config().with_security(security);
        self.with_pool(Pool::new(config))
    }

    /// Uses the pool of `cache` for broker requests, sharing its connections (and settings)
    /// with the producers and consumers built on it. Broker addresses still come from
    /// `/brokers/ids`, as Kafka's tools find them.
    pub fn with_metadata_cache(self, cache: &MetadataCache) -> Admin {
        self.with_pool(cache.pool().clone())
    }

    /// Looks up and asks a group's offset coordinator at most `attempts` times (default
    /// [`DEFAULT_COORDINATOR_ATTEMPTS`]), waiting `backoff` between attempts (default 100 ms
    /// doubling to 1 s, Kafka's `retry.backoff.ms`).
    pub fn with_coordinator_retries(mut self, attempts: u32, backoff: Backoff) -> Admin {
        self.coordinator_attempts = attempts.max(1);
        self.backoff = backoff;
        self
    }

    /// The ZooKeeper session.
    pub fn zk(&self) -> &ZkClient {
        &self.zk
    }

    /// The broker connection pool.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Closes the broker connections and the ZooKeeper session.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when the session could not be closed in time (ZooKeeper then expires
    /// it).
    pub async fn close(&self) -> Result<()> {
        self.pool.close().await;
        self.zk.close().await?;
        Ok(())
    }

    // -----------------------------------------------------------------------------------------
    // ZooKeeper reads shared by the modules
    // -----------------------------------------------------------------------------------------

    /// The registered broker ids, sorted numerically (Kafka's `getSortedBrokerList`).
    pub(crate) async fn live_brokers(&self) -> Result<Vec<BrokerId>> {
        let mut ids: Vec<BrokerId> = self
            .zk
            .children(paths::BROKER_IDS)
            .await?
            .unwrap_or_default()
            .iter()
            .filter_map(|s| s.parse().ok())
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    pub(crate) async fn broker_registration(&self, id: BrokerId) -> Result<Option<BrokerRegistration>> {
        match self.zk.get(&paths::broker(id)).await? {
            Some((data, _)) => Ok(Some(BrokerRegistration::from_json(&data)?)),
            None => Ok(None),
        }
    }

    /// Every topic (`/brokers/topics` children), sorted.
    pub(crate) async fn topic_names(&self) -> Result<Vec<String>> {
        Ok(self.zk.children(paths::BROKER_TOPICS).await?.unwrap_or_default())
    }

    /// A topic's replica assignment, `None` when the topic does not exist.
    pub(crate) async fn assignment(&self, topic: &str) -> Result<Option<TopicAssignment>> {
        match self.zk.get(&paths::topic(topic)).await? {
            Some((data, _)) => Ok(Some(TopicAssignment::from_json(&data)?)),
            None => Ok(None),
        }
    }

    /// A topic's replica assignment, [`Error::UnknownTopic`] when it does not exist.
    pub(crate) async fn existing_assignment(&self, topic: &str) -> Result<TopicAssignment> {
        self.assignment(topic).await?.ok_or_else(|| Error::UnknownTopic { topic: topic.to_owned() })
    }

    /// A partition's state znode, `None` when the controller has not written it.
    pub(crate) async fn partition_state(&self, topic: &str, partition: i32) -> Result<Option<PartitionState>> {
        match self.zk.get(&paths::partition_state(topic, partition)).await? {
            Some((data, _)) => Ok(Some(PartitionState::from_json(&data)?)),
            None => Ok(None),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Brokers over the wire
    // -----------------------------------------------------------------------------------------

    /// The connection to broker `id`, its address read from `/brokers/ids/id`.
    pub(crate) async fn broker_connection(&self, id: BrokerId) -> Result<BrokerConnection> {
        let reg = self.broker_registration(id).await?.ok_or(Error::BrokerNotRegistered { broker: id })?;
        let addr = format!("{}:{}", reg.host, reg.port);
        self.pool.set_broker(id, addr.clone());
        self.pool.get(id).await.map_err(|e| Error::net(format!("could not connect to broker {id} at {addr}"), e))
    }

    /// The offsets of `partitions` at `time` (-1 log end, -2 earliest), asked of each
    /// partition's leader as ConsumerOffsetChecker does (Offsets v0, one offset). Partitions
    /// whose leader moved are retried after re-reading their state. The outer error is
    /// ZooKeeper's; the inner ones are per partition.
    pub(crate) async fn log_offsets(
        &self,
        partitions: &[TopicPartition],
        time: i64,
    ) -> Result<BTreeMap<TopicPartition, Result<i64>>> {
        let mut results: BTreeMap<TopicPartition, Result<i64>> = BTreeMap::new();
        let mut pending: Vec<TopicPartition> = partitions.to_vec();
        for attempt in 0..LEADER_ATTEMPTS {
            if attempt > 0 {
                tracing::warn!(partitions = pending.len(), attempt, "offset lookup failed on moving leaders; retrying");
                tokio::time::sleep(self.backoff.next_delay(attempt - 1)).await;
            }
            let live: BTreeSet<BrokerId> = self.live_brokers().await?.into_iter().collect();
            let mut by_leader: BTreeMap<BrokerId, Vec<TopicPartition>> = BTreeMap::new();
            for tp in pending.drain(..) {
                match self.partition_state(&tp.topic, tp.partition).await? {
                    Some(s) if s.leader >= 0 && live.contains(&s.leader) => {
                        by_leader.entry(s.leader).or_default().push(tp);
                    }
                    _ => {
                        let e = Error::NoLeader { topic: tp.topic.clone(), partition: tp.partition };
                        results.insert(tp, Err(e));
                    }
                }
            }
            for (leader, tps) in by_leader {
                results.extend(self.offsets_from(leader, &tps, time).await?);
            }
            pending = results
                .iter()
                .filter(|(_, r)| r.as_ref().is_err_and(Error::is_retriable))
                .map(|(k, _)| k.clone())
                .collect();
            if pending.is_empty() {
                break;
            }
        }
        Ok(results)
    }

    async fn offsets_from(
        &self,
        leader: BrokerId,
        tps: &[TopicPartition],
        time: i64,
    ) -> Result<Vec<(TopicPartition, Result<i64>)>> {
        let mut topics: BTreeMap<&str, Vec<OffsetsPartition>> = BTreeMap::new();
        for tp in tps {
            topics.entry(tp.topic.as_str()).or_default().push(OffsetsPartition {
                partition: tp.partition,
                time,
                max_number_of_offsets: 1,
                ..Default::default()
            });
        }
        let request = OffsetsRequest {
            replica_id: CONSUMER_REPLICA_ID,
            topics: topics.into_iter().map(|(t, ps)| OffsetsTopic::new(t, ps)).collect(),
            ..Default::default()
        };
        let fail_all = |f: &dyn Fn(&TopicPartition) -> Error| tps.iter().map(|tp| (tp.clone(), Err(f(tp)))).collect();
        let conn = match self.broker_connection(leader).await {
            Ok(conn) => conn,
            Err(Error::BrokerNotRegistered { .. }) => {
                return Ok(fail_all(&|tp| Error::NoLeader { topic: tp.topic.clone(), partition: tp.partition }));
            }
            Err(Error::Net { context, source }) => {
                return Ok(fail_all(&|_| Error::Net { context: context.clone(), source: Arc::clone(&source) }));
            }
            Err(e) => return Err(e),
        };
        // v0 (0.8.2) lists offsets; v1 and later answer one (the request's fields are the same
        // at max_number_of_offsets 1)
        let version = conn.client_version::<OffsetsRequest>().unwrap_or(0);
        tracing::debug!(broker = leader, partitions = tps.len(), time, version, "offsets request");
        let response = match conn.request(version, &request).await {
            Ok(r) => r,
            Err(e) => {
                let source = Arc::new(e);
                let context = format!("offsets request to broker {leader} at {} failed", conn.addr());
                return Ok(fail_all(&|_| Error::Net { context: context.clone(), source: Arc::clone(&source) }));
            }
        };
        Ok(tps
            .iter()
            .map(|tp| {
                let found = response
                    .topics
                    .iter()
                    .filter(|rt| rt.topic == tp.topic)
                    .flat_map(|rt| rt.partitions.iter())
                    .find(|rp| rp.partition == tp.partition);
                let context = |what: &str| format!("offsets of {tp} from broker {leader}{what}");
                let r = match found {
                    None => Err(Error::Broker {
                        code: ErrorCode::UnknownServerError,
                        context: context(": the partition is missing from the response"),
                    }),
                    Some(rp) => match rp.error() {
                        Some(code) => Err(Error::Broker { code, context: context("") }),
                        None if version >= 1 && rp.offset >= 0 => Ok(rp.offset),
                        None => rp.offsets.first().copied().ok_or_else(|| Error::Broker {
                            code: ErrorCode::UnknownServerError,
                            context: context(": the response holds no offset"),
                        }),
                    },
                };
                (tp.clone(), r)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_types_are_send_and_sync() {
        fn check<T: Send + Sync + 'static>() {}
        check::<Admin>();
        check::<TopicDescription>();
        check::<ReassignmentPlan>();
        check::<ClusterHealth>();
        check::<GroupDescription>();
        check::<PartitionOffset>();
    }

    /// Compile-time check: the public futures are `Send` (never run).
    #[allow(dead_code)]
    fn public_futures_are_send(admin: &Admin, plan: &ReassignmentPlan) {
        fn send<T: Send>(_: T) {}
        send(Admin::connect("127.0.0.1:2181", Duration::from_secs(6)));
        send(admin.create_topic("t", 1, 1, [("retention.ms", "1")]));
        send(admin.create_topic_with_assignment("t", &[vec![0]], Vec::<(String, String)>::new()));
        send(admin.list_topics());
        send(admin.describe_topics(&TopicSelection::All));
        send(admin.add_partitions("t", 2, None));
        send(admin.alter_topic_config("t", [("a", "b")], &["c"]));
        send(admin.describe_topic_config("t"));
        send(admin.delete_topic("t"));
        send(admin.generate_reassignment(&["t"], &[0, 1]));
        send(admin.execute_reassignment(plan));
        send(admin.verify_reassignment(plan));
        send(admin.preferred_replica_election(None));
        send(admin.list_brokers());
        send(admin.list_groups());
        send(admin.describe_group("g"));
        send(admin.group_offsets("g", OffsetStorage::Kafka));
        send(admin.reset_offsets("g", "t", OffsetReset::Earliest, OffsetStorage::Kafka));
        send(admin.health());
        send(admin.close());
    }
}

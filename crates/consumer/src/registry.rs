//! The group registry: the znodes a rebalance reads and writes, behind [`Registry`], so that
//! the rebalance attempt (`rebalance.rs`) runs against ZooKeeper ([`ZkRegistry`]) in the
//! connector and against an in-memory registry in unit tests.
//!
//! | method                                  | ZooKeeper (Kafka 0.8.2's layout)                      |
//! |-----------------------------------------|-------------------------------------------------------|
//! | `members`                               | children of `/consumers/G/ids`                        |
//! | `registration`                          | data of `/consumers/G/ids/C` (JSON)                   |
//! | `register` / `deregister`               | ephemeral `/consumers/G/ids/C`                        |
//! | `topics`                                | children of `/brokers/topics`                         |
//! | `partitions`                            | partition ids in `/brokers/topics/T` (JSON)           |
//! | `create_owner` / `owner` / `delete_owner` | ephemeral `/consumers/G/owners/T/P`, data = thread id |
//!
//! The registry only reads and writes; every decision (what a member subscribes to, who gets
//! what, when a claim counts as ours) is made by its callers. Two reading rules live here
//! because they are about the bytes: a registration or a topic whose JSON cannot be read counts
//! as absent (Java's connector skips them too), and a missing parent reads as empty.
//!
//! Watches are not part of the registry: they only tell the coordinator *when* to rebalance,
//! and stay on [`ZkClient`].

use std::future::Future;

use gregor_zk::payloads::{ConsumerRegistration, TopicAssignment};
use gregor_zk::{paths, CreateMode, ZkClient};

use crate::assignment::ThreadId;
use crate::error::{self, Result};

/// An owner znode as read: who holds the partition, and what a conditional delete needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OwnerNode {
    /// The znode's data: the owning thread id, as bytes (another client may write anything).
    pub(crate) data: Vec<u8>,
    /// The znode's version, for a delete that must not remove a newer node.
    pub(crate) version: i32,
    /// True for an ephemeral znode (one that dies with the session that made it).
    pub(crate) ephemeral: bool,
}

impl OwnerNode {
    /// The holder, for messages (lossy UTF-8).
    pub(crate) fn holder(&self) -> String {
        String::from_utf8_lossy(&self.data).into_owned()
    }
}

/// What a rebalance needs from the group's registry (ZooKeeper in production).
///
/// Every method reports a failure of the registry itself as an error; "not there" is `None`,
/// an empty list, or `false`.
pub(crate) trait Registry: Send + Sync {
    /// The consumer ids registered in the group, in any order.
    fn members(&self) -> impl Future<Output = Result<Vec<String>>> + Send;

    /// A member's registration; `None` when it is gone or unreadable.
    fn registration(&self, consumer_id: &str) -> impl Future<Output = Result<Option<ConsumerRegistration>>> + Send;

    /// Creates this member's (ephemeral) registration; `false` when one already exists.
    fn register(
        &self,
        consumer_id: &str,
        registration: &ConsumerRegistration,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Deletes a member's registration, if there.
    fn deregister(&self, consumer_id: &str) -> impl Future<Output = Result<()>> + Send;

    /// Every topic of the cluster, in any order.
    fn topics(&self) -> impl Future<Output = Result<Vec<String>>> + Send;

    /// A topic's partition ids; `None` when the topic is gone or unreadable.
    fn partitions(&self, topic: &str) -> impl Future<Output = Result<Option<Vec<i32>>>> + Send;

    /// Creates the (ephemeral) owner node of a partition, holding `thread`; `false` when the
    /// partition already has one.
    fn create_owner(&self, topic: &str, partition: i32, thread: &ThreadId)
        -> impl Future<Output = Result<bool>> + Send;

    /// The owner node of a partition, if any.
    fn owner(&self, topic: &str, partition: i32) -> impl Future<Output = Result<Option<OwnerNode>>> + Send;

    /// Deletes the owner node of a partition: any version (`None`) or only `Some(version)`.
    /// `false` when there was none (or, with a version, another one).
    fn delete_owner(
        &self,
        topic: &str,
        partition: i32,
        version: Option<i32>,
    ) -> impl Future<Output = Result<bool>> + Send;
}

/// The registry of one group in ZooKeeper.
#[derive(Clone, Debug)]
pub(crate) struct ZkRegistry {
    zk: ZkClient,
    group: String,
}

impl ZkRegistry {
    pub(crate) fn new(zk: ZkClient, group: impl Into<String>) -> ZkRegistry {
        ZkRegistry { zk, group: group.into() }
    }
}

impl Registry for ZkRegistry {
    async fn members(&self) -> Result<Vec<String>> {
        let path = paths::consumer_ids(&self.group);
        Ok(self.zk.children(&path).await.map_err(error::zk(format!("listing members ({path})")))?.unwrap_or_default())
    }

    async fn registration(&self, consumer_id: &str) -> Result<Option<ConsumerRegistration>> {
        let path = paths::consumer_id(&self.group, consumer_id);
        let Some((data, _)) = self.zk.get(&path).await.map_err(error::zk(format!("reading member {path}")))? else {
            return Ok(None);
        };
        match ConsumerRegistration::from_json(&data) {
            Ok(r) => Ok(Some(r)),
            Err(e) => {
                tracing::warn!(member = %consumer_id, error = %e, "unreadable registration: ignored");
                Ok(None)
            }
        }
    }

    async fn register(&self, consumer_id: &str, registration: &ConsumerRegistration) -> Result<bool> {
        let path = paths::consumer_id(&self.group, consumer_id);
        match self.zk.create_all(&path, &registration.to_json(), CreateMode::Ephemeral).await {
            Ok(_) => Ok(true),
            Err(gregor_zk::Error::NodeExists { .. }) => Ok(false),
            Err(e) => Err(error::zk(format!("registering {path}"))(e)),
        }
    }

    async fn deregister(&self, consumer_id: &str) -> Result<()> {
        let path = paths::consumer_id(&self.group, consumer_id);
        self.zk.delete(&path, None).await.map_err(error::zk(format!("deleting {path}")))?;
        Ok(())
    }

    async fn topics(&self) -> Result<Vec<String>> {
        Ok(self
            .zk
            .children(paths::BROKER_TOPICS)
            .await
            .map_err(error::zk(format!("listing topics ({})", paths::BROKER_TOPICS)))?
            .unwrap_or_default())
    }

    async fn partitions(&self, topic: &str) -> Result<Option<Vec<i32>>> {
        let path = paths::topic(topic);
        let Some((data, _)) = self.zk.get(&path).await.map_err(error::zk(format!("reading topic {path}")))? else {
            return Ok(None);
        };
        Ok(TopicAssignment::from_json(&data).ok().map(|a| a.partitions.keys().copied().collect()))
    }

    async fn create_owner(&self, topic: &str, partition: i32, thread: &ThreadId) -> Result<bool> {
        let path = paths::owner(&self.group, topic, partition);
        match self.zk.create_all(&path, thread.as_str().as_bytes(), CreateMode::Ephemeral).await {
            Ok(_) => Ok(true),
            Err(gregor_zk::Error::NodeExists { .. }) => Ok(false),
            Err(e) => Err(error::zk(format!("claiming {path}"))(e)),
        }
    }

    async fn owner(&self, topic: &str, partition: i32) -> Result<Option<OwnerNode>> {
        let path = paths::owner(&self.group, topic, partition);
        let node = self.zk.get(&path).await.map_err(error::zk(format!("reading owner {path}")))?;
        Ok(node.map(|(data, stat)| OwnerNode { data, version: stat.version, ephemeral: stat.is_ephemeral() }))
    }

    async fn delete_owner(&self, topic: &str, partition: i32, version: Option<i32>) -> Result<bool> {
        let path = paths::owner(&self.group, topic, partition);
        match self.zk.delete(&path, version).await {
            Ok(deleted) => Ok(deleted),
            // a versioned delete of a node replaced meanwhile
            Err(gregor_zk::Error::BadVersion { .. } | gregor_zk::Error::NoNode { .. }) => Ok(false),
            Err(e) => Err(error::zk(format!("releasing {path}"))(e)),
        }
    }
}

/// An in-memory registry for unit tests: ZooKeeper's semantics for the nodes a rebalance
/// touches (versions, ephemeral flags), a log of the writes, and failures on demand.
#[cfg(test)]
pub(crate) mod memory {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use super::*;
    use crate::error::Error;

    /// A write, as logged.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub(crate) enum Write {
        Register(String),
        Deregister(String),
        CreateOwner(String, i32, String),
        DeleteOwner(String, i32),
    }

    #[derive(Debug, Default)]
    struct State {
        members: BTreeMap<String, Option<ConsumerRegistration>>,
        topics: BTreeMap<String, Vec<i32>>,
        owners: BTreeMap<(String, i32), OwnerNode>,
        writes: Vec<Write>,
        /// Owner nodes whose creation fails with a registry error.
        failing_owners: Vec<(String, i32)>,
        /// When set, every read fails with a registry error.
        unreachable: bool,
    }

    /// See the module doc.
    #[derive(Debug, Default)]
    pub(crate) struct MemoryRegistry {
        state: Mutex<State>,
    }

    fn down(what: &str) -> Error {
        Error::Zk { context: what.to_owned(), source: gregor_zk::Error::ConnectionLoss }
    }

    impl MemoryRegistry {
        fn state(&self) -> std::sync::MutexGuard<'_, State> {
            self.state.lock().unwrap_or_else(|p| p.into_inner())
        }

        /// Registers a member with a static subscription (topic -> streams).
        pub(crate) fn add_static(&self, id: &str, subscription: &[(&str, i32)]) {
            let reg = ConsumerRegistration::new(
                subscription.iter().map(|(t, n)| (t.to_string(), *n)).collect(),
                gregor_zk::payloads::PATTERN_STATIC,
                0,
            );
            self.state().members.insert(id.to_owned(), Some(reg));
        }

        /// Registers a member with any registration (`None`: unreadable).
        pub(crate) fn add_member(&self, id: &str, registration: Option<ConsumerRegistration>) {
            self.state().members.insert(id.to_owned(), registration);
        }

        /// Adds a topic with partitions `0..n`.
        pub(crate) fn add_topic(&self, topic: &str, n: i32) {
            self.state().topics.insert(topic.to_owned(), (0..n).collect());
        }

        /// Puts an owner node there, as another client would.
        pub(crate) fn put_owner(&self, topic: &str, partition: i32, data: &str, ephemeral: bool) {
            self.state()
                .owners
                .insert((topic.to_owned(), partition), OwnerNode { data: data.into(), version: 0, ephemeral });
        }

        /// Makes the creation of this owner node fail with a registry error.
        pub(crate) fn fail_owner(&self, topic: &str, partition: i32) {
            self.state().failing_owners.push((topic.to_owned(), partition));
        }

        /// Makes every read fail (ZooKeeper unreachable).
        pub(crate) fn set_unreachable(&self, unreachable: bool) {
            self.state().unreachable = unreachable;
        }

        /// partition -> holder of every owner node of `topic`.
        pub(crate) fn owners(&self, topic: &str) -> BTreeMap<i32, String> {
            self.state().owners.iter().filter(|((t, _), _)| t == topic).map(|((_, p), n)| (*p, n.holder())).collect()
        }

        /// The writes so far, and forgets them.
        pub(crate) fn take_writes(&self) -> Vec<Write> {
            std::mem::take(&mut self.state().writes)
        }

        #[allow(clippy::result_large_err)] // the crate's one Error type, as everywhere else
        fn read(&self) -> Result<std::sync::MutexGuard<'_, State>> {
            let s = self.state();
            if s.unreachable {
                return Err(down("reading the in-memory registry"));
            }
            Ok(s)
        }
    }

    impl Registry for MemoryRegistry {
        async fn members(&self) -> Result<Vec<String>> {
            Ok(self.read()?.members.keys().cloned().collect())
        }

        async fn registration(&self, consumer_id: &str) -> Result<Option<ConsumerRegistration>> {
            Ok(self.read()?.members.get(consumer_id).cloned().flatten())
        }

        async fn register(&self, consumer_id: &str, registration: &ConsumerRegistration) -> Result<bool> {
            let mut s = self.read()?;
            if s.members.contains_key(consumer_id) {
                return Ok(false);
            }
            s.members.insert(consumer_id.to_owned(), Some(registration.clone()));
            s.writes.push(Write::Register(consumer_id.to_owned()));
            Ok(true)
        }

        async fn deregister(&self, consumer_id: &str) -> Result<()> {
            let mut s = self.read()?;
            s.members.remove(consumer_id);
            s.writes.push(Write::Deregister(consumer_id.to_owned()));
            Ok(())
        }

        async fn topics(&self) -> Result<Vec<String>> {
            Ok(self.read()?.topics.keys().cloned().collect())
        }

        async fn partitions(&self, topic: &str) -> Result<Option<Vec<i32>>> {
            Ok(self.read()?.topics.get(topic).cloned())
        }

        async fn create_owner(&self, topic: &str, partition: i32, thread: &ThreadId) -> Result<bool> {
            let mut s = self.read()?;
            let key = (topic.to_owned(), partition);
            if s.failing_owners.contains(&key) {
                return Err(down(&format!("claiming {topic}/{partition}")));
            }
            if s.owners.contains_key(&key) {
                return Ok(false);
            }
            let version = 0;
            s.owners.insert(key, OwnerNode { data: thread.as_str().into(), version, ephemeral: true });
            s.writes.push(Write::CreateOwner(topic.to_owned(), partition, thread.to_string()));
            Ok(true)
        }

        async fn owner(&self, topic: &str, partition: i32) -> Result<Option<OwnerNode>> {
            Ok(self.read()?.owners.get(&(topic.to_owned(), partition)).cloned())
        }

        async fn delete_owner(&self, topic: &str, partition: i32, version: Option<i32>) -> Result<bool> {
            let mut s = self.read()?;
            let key = (topic.to_owned(), partition);
            match s.owners.get(&key) {
                Some(n) if version.is_none_or(|v| v == n.version) => {
                    s.owners.remove(&key);
                    s.writes.push(Write::DeleteOwner(topic.to_owned(), partition));
                    Ok(true)
                }
                _ => Ok(false),
            }
        }
    }
}

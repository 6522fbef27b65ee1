//! Topics: create, list, describe, add partitions, configs, delete — `kafka-topics.sh` of
//! Kafka 0.8.2 (`TopicCommand`, `AdminUtils`).

use std::collections::{BTreeMap, BTreeSet};

use gregor_net::BrokerId;
use gregor_zk::payloads::{self, TopicAssignment, TopicConfig};
use gregor_zk::{paths, CreateMode};

use crate::config::{collect, validate_config_name, validate_topic_config};
use crate::error::{Error, Result};
use crate::placement::{assign_replicas_from, assign_replicas_random, check_assignment_from, to_map};
use crate::Admin;

/// Which topics an admin operation looks at: all of them or the ones named. (Not a
/// subscription: the high-level consumer's regex whitelist/blacklist is
/// `gregor_consumer::TopicFilter`.)
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TopicSelection {
    /// Every topic of the cluster.
    #[default]
    All,
    /// Only these topics (each must exist).
    Only(Vec<String>),
}

impl TopicSelection {
    /// A filter for the named topics.
    pub fn only<I, S>(topics: I) -> TopicSelection
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        TopicSelection::Only(topics.into_iter().map(Into::into).collect())
    }
}

/// A topic as [`Admin::list_topics`] lists it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicListing {
    /// The topic.
    pub name: String,
    /// Whether `/admin/delete_topics/T` marks it for deletion (it stays until a controller
    /// with `delete.topic.enable=true` deletes it).
    pub marked_for_deletion: bool,
}

/// One partition as `kafka-topics.sh --describe` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PartitionDescription {
    /// The topic.
    pub topic: String,
    /// The partition id.
    pub partition: i32,
    /// The leader from the partition's state znode; `None` when there is none (leader -1, or
    /// no state znode yet: the controller has not brought the partition online).
    pub leader: Option<BrokerId>,
    /// The assigned replicas (`/brokers/topics/T`), preferred leader first.
    pub replicas: Vec<BrokerId>,
    /// The in-sync replicas from the state znode (empty when there is none).
    pub isr: Vec<BrokerId>,
    /// Whether the leader is registered at `/brokers/ids` right now.
    pub leader_live: bool,
}

impl PartitionDescription {
    /// Fewer in-sync replicas than assigned replicas (`--under-replicated-partitions`).
    pub fn is_under_replicated(&self) -> bool {
        self.isr.len() < self.replicas.len()
    }

    /// No leader, or a leader that is not a live broker (`--unavailable-partitions`): the
    /// partition can be neither written nor read.
    pub fn is_unavailable(&self) -> bool {
        !self.leader_live
    }

    /// The preferred leader: the first assigned replica.
    pub fn preferred_leader(&self) -> Option<BrokerId> {
        self.replicas.first().copied()
    }

    /// Whether the preferred replica leads.
    pub fn is_led_by_preferred_replica(&self) -> bool {
        self.leader.is_some() && self.leader == self.preferred_leader()
    }
}

/// A topic as `kafka-topics.sh --describe` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicDescription {
    /// The topic.
    pub name: String,
    /// Its configuration overrides (`/config/topics/T`).
    pub config: BTreeMap<String, String>,
    /// Its partitions, by id.
    pub partitions: Vec<PartitionDescription>,
    /// Whether it is marked for deletion.
    pub marked_for_deletion: bool,
}

impl TopicDescription {
    /// The number of partitions.
    pub fn partition_count(&self) -> usize {
        self.partitions.len()
    }

    /// The replication factor (the replica count of the first partition, as Kafka prints it).
    pub fn replication_factor(&self) -> usize {
        self.partitions.first().map_or(0, |p| p.replicas.len())
    }

    /// The under-replicated partitions (see [`PartitionDescription::is_under_replicated`]).
    pub fn under_replicated(&self) -> impl Iterator<Item = &PartitionDescription> {
        self.partitions.iter().filter(|p| p.is_under_replicated())
    }

    /// The unavailable partitions (see [`PartitionDescription::is_unavailable`]).
    pub fn unavailable(&self) -> impl Iterator<Item = &PartitionDescription> {
        self.partitions.iter().filter(|p| p.is_unavailable())
    }
}

/// What [`Admin::delete_topic`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeleteTopicOutcome {
    /// `/admin/delete_topics/T` was created: the controller deletes the topic if the brokers run
    /// with `delete.topic.enable=true`.
    MarkedForDeletion,
    /// The topic was already marked for deletion.
    AlreadyMarked,
}

fn check_name(topic: &str) -> Result<()> {
    paths::validate_topic_name(topic).map_err(|e| match e {
        gregor_zk::Error::InvalidTopic { topic, reason } => Error::InvalidTopicName { topic, reason },
        other => Error::ZooKeeper(other),
    })
}

impl Admin {
    /// Creates a topic as `kafka-topics.sh --create` does (`AdminUtils.createTopic`): replicas
    /// placed over the live brokers, sorted, by Kafka's algorithm with a random start
    /// ([`placement::assign_replicas_random`](crate::placement::assign_replicas_random)); then
    /// `/config/topics/T` is written first (`{"version":1,"config":{..}}`, even when empty) and
    /// `/brokers/topics/T` second. The controller brings the partitions online. Returns the
    /// assignment written (partition -> replicas).
    ///
    /// Cancel safety: the config may be written without the assignment if the future is
    /// dropped; creating the topic again then succeeds.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTopicName`], [`Error::InvalidPartitionCount`] (below 1),
    /// [`Error::InvalidReplicationFactor`] (below 1), [`Error::ReplicationFactorTooLarge`]
    /// (more than the live brokers), [`Error::InvalidConfig`], [`Error::TopicExists`],
    /// [`Error::ZooKeeper`].
    pub async fn create_topic<I, K, V>(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: i32,
        configs: I,
    ) -> Result<BTreeMap<i32, Vec<BrokerId>>>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        check_name(name)?;
        let config = collect(configs);
        validate_topic_config(&config)?;
        let brokers = self.live_brokers().await?;
        let assignment = to_map(assign_replicas_random(&brokers, partitions, replication_factor)?, 0);
        self.write_new_topic(name, &assignment, config).await?;
        Ok(assignment)
    }

    /// Creates a topic with an explicit replica assignment (element `i` = partition `i`'s
    /// replicas, preferred leader first), as `kafka-topics.sh --create --replica-assignment`
    /// does: every partition must have the same number of replicas, no broker twice in one
    /// list, and (beyond Kafka 0.8.2, which lets the controller fail later) every broker must
    /// be registered. Writes `/config/topics/T`, then `/brokers/topics/T`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTopicName`], [`Error::InvalidAssignment`], [`Error::UnknownBrokers`],
    /// [`Error::InvalidConfig`], [`Error::TopicExists`], [`Error::ZooKeeper`].
    pub async fn create_topic_with_assignment<I, K, V>(
        &self,
        name: &str,
        assignment: &[Vec<BrokerId>],
        configs: I,
    ) -> Result<()>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        check_name(name)?;
        check_assignment_from(assignment, 0)?;
        self.check_registered(assignment).await?;
        let config = collect(configs);
        validate_topic_config(&config)?;
        self.write_new_topic(name, &to_map(assignment.to_vec(), 0), config).await
    }

    async fn check_registered(&self, assignment: &[Vec<BrokerId>]) -> Result<()> {
        let live = self.live_brokers().await?;
        let unknown: BTreeSet<BrokerId> = assignment.iter().flatten().copied().filter(|b| !live.contains(b)).collect();
        if unknown.is_empty() {
            Ok(())
        } else {
            Err(Error::UnknownBrokers { unknown: unknown.into_iter().collect(), live })
        }
    }

    async fn write_new_topic(
        &self,
        name: &str,
        assignment: &BTreeMap<i32, Vec<BrokerId>>,
        config: BTreeMap<String, String>,
    ) -> Result<()> {
        let topic_path = paths::topic(name);
        if self.zk.exists(&topic_path).await?.is_some() {
            return Err(Error::TopicExists { topic: name.to_owned() });
        }
        let config_path = paths::topic_config(name);
        tracing::debug!(topic = name, path = %config_path, "writing topic config");
        self.zk.set_or_create(&config_path, &TopicConfig::new(config).to_json()).await?;
        tracing::debug!(topic = name, path = %topic_path, partitions = assignment.len(), "writing topic assignment");
        let data = TopicAssignment::new(assignment.clone()).to_json();
        match self.zk.create_all(&topic_path, &data, CreateMode::Persistent).await {
            Ok(_) => Ok(()),
            Err(gregor_zk::Error::NodeExists { .. }) => Err(Error::TopicExists { topic: name.to_owned() }),
            Err(e) => Err(e.into()),
        }
    }

    /// Every topic, sorted by name, with whether it is marked for deletion.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`].
    pub async fn list_topics(&self) -> Result<Vec<TopicListing>> {
        let marked: BTreeSet<String> =
            self.zk.children(paths::DELETE_TOPICS).await?.unwrap_or_default().into_iter().collect();
        Ok(self
            .topic_names()
            .await?
            .into_iter()
            .map(|name| TopicListing { marked_for_deletion: marked.contains(&name), name })
            .collect())
    }

    async fn filtered_topics(&self, filter: &TopicSelection) -> Result<Vec<String>> {
        match filter {
            TopicSelection::All => self.topic_names().await,
            TopicSelection::Only(names) => {
                let mut out = BTreeSet::new();
                for name in names {
                    if self.zk.exists(&paths::topic(name)).await?.is_none() {
                        return Err(Error::UnknownTopic { topic: name.clone() });
                    }
                    out.insert(name.clone());
                }
                Ok(out.into_iter().collect())
            }
        }
    }

    /// Describes topics as `kafka-topics.sh --describe` does: per partition the assigned
    /// replicas (`/brokers/topics/T`), the leader and ISR (the state znodes), and whether the
    /// leader is a live broker; per topic its config overrides. Topics sorted by name,
    /// partitions by id. Filter the result with [`TopicDescription::under_replicated`] and
    /// [`TopicDescription::unavailable`].
    ///
    /// # Errors
    ///
    /// [`Error::UnknownTopic`] for a named topic that does not exist, [`Error::ZooKeeper`].
    pub async fn describe_topics(&self, filter: &TopicSelection) -> Result<Vec<TopicDescription>> {
        let names = self.filtered_topics(filter).await?;
        let live: BTreeSet<BrokerId> = self.live_brokers().await?.into_iter().collect();
        let marked: BTreeSet<String> =
            self.zk.children(paths::DELETE_TOPICS).await?.unwrap_or_default().into_iter().collect();
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            // deleted between the listing and now: skip, as Kafka prints "doesn't exist"
            let Some(assignment) = self.assignment(&name).await? else { continue };
            let mut partitions = Vec::with_capacity(assignment.partitions.len());
            for (partition, replicas) in assignment.partitions {
                let state = self.partition_state(&name, partition).await?;
                let leader = state.as_ref().map(|s| s.leader).filter(|l| *l >= 0);
                partitions.push(PartitionDescription {
                    topic: name.clone(),
                    partition,
                    leader,
                    replicas,
                    isr: state.map(|s| s.isr).unwrap_or_default(),
                    leader_live: leader.is_some_and(|l| live.contains(&l)),
                });
            }
            let config = self.read_config(&name).await?;
            out.push(TopicDescription { marked_for_deletion: marked.contains(&name), name, config, partitions });
        }
        Ok(out)
    }

    /// The under-replicated partitions of the filtered topics (`--under-replicated-partitions`).
    ///
    /// # Errors
    ///
    /// As [`Admin::describe_topics`].
    pub async fn under_replicated_partitions(&self, filter: &TopicSelection) -> Result<Vec<PartitionDescription>> {
        let topics = self.describe_topics(filter).await?;
        Ok(topics.iter().flat_map(|t| t.under_replicated().cloned()).collect())
    }

    /// The unavailable partitions of the filtered topics (`--unavailable-partitions`).
    ///
    /// # Errors
    ///
    /// As [`Admin::describe_topics`].
    pub async fn unavailable_partitions(&self, filter: &TopicSelection) -> Result<Vec<PartitionDescription>> {
        let topics = self.describe_topics(filter).await?;
        Ok(topics.iter().flat_map(|t| t.unavailable().cloned()).collect())
    }

    /// Raises a topic's partition count to `total`, as `kafka-topics.sh --alter --partitions`
    /// does (`AdminUtils.addPartitions`): `/brokers/topics/T` is rewritten with the existing
    /// partitions unchanged plus the new ones, and the controller brings those online. The
    /// topic's config is left alone. Returns the new partitions' replicas.
    ///
    /// Without `assignment`, the new partitions are placed over the live brokers (sorted) by
    /// Kafka's algorithm, continuing after the existing partitions
    /// ([`placement::assign_replicas_from`](crate::placement::assign_replicas_from) with
    /// `first_partition` = the current count) with start index and replica shift both set to
    /// the first replica of partition 0 — a broker id used as an index, as Kafka 0.8.2 does.
    ///
    /// With `assignment`, it lists either the new partitions only, or every partition (the
    /// first entries, for the existing partitions, are then ignored, as Kafka 0.8.2 does); each
    /// list must have the topic's replication factor and registered brokers only.
    ///
    /// The rewrite is conditional on the assignment not having changed since it was read.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownTopic`], [`Error::PartitionCountNotIncreased`],
    /// [`Error::ReplicationFactorTooLarge`] (fewer live brokers than the replication factor),
    /// [`Error::InvalidAssignment`], [`Error::ReplicationFactorMismatch`],
    /// [`Error::UnknownBrokers`], [`Error::ZooKeeper`] (`BadVersion` when the assignment changed
    /// meanwhile, e.g. a reassignment completed: try again).
    pub async fn add_partitions(
        &self,
        topic: &str,
        total: i32,
        assignment: Option<&[Vec<BrokerId>]>,
    ) -> Result<BTreeMap<i32, Vec<BrokerId>>> {
        let path = paths::topic(topic);
        let Some((data, stat)) = self.zk.get(&path).await? else {
            return Err(Error::UnknownTopic { topic: topic.to_owned() });
        };
        let existing = TopicAssignment::from_json(&data)?;
        let current = existing.partitions.len();
        if total < 0 || total as usize <= current {
            return Err(Error::PartitionCountNotIncreased { topic: topic.to_owned(), current, requested: total });
        }
        let to_add = total as usize - current;
        let first = existing.partitions.values().next().cloned().unwrap_or_default();
        let rf = first.len();
        let new: Vec<Vec<BrokerId>> = match assignment {
            None => {
                let brokers = self.live_brokers().await?;
                let start = first.first().copied().unwrap_or(0).max(0) as usize;
                assign_replicas_from(&brokers, to_add as i32, rf as i32, start, start, current as i32)?
            }
            Some(given) => {
                let new = if given.len() == to_add {
                    given.to_vec()
                } else if given.len() == total as usize {
                    given[current..].to_vec()
                } else {
                    return Err(Error::assignment(format!(
                        "{} replica lists given for {to_add} new partitions of {topic:?} ({current} -> {total}): \
                         list the new partitions only, or all {total}",
                        given.len()
                    )));
                };
                let given_rf = check_assignment_from(&new, current)?;
                if given_rf != rf {
                    return Err(Error::ReplicationFactorMismatch {
                        topic: topic.to_owned(),
                        expected: rf,
                        given: given_rf,
                    });
                }
                self.check_registered(&new).await?;
                new
            }
        };
        let new = to_map(new, current as i32);
        let mut all = existing.partitions;
        all.extend(new.clone());
        tracing::debug!(topic, from = current, to = total, "rewriting topic assignment with new partitions");
        self.zk.set(&path, &TopicAssignment::new(all).to_json(), Some(stat.version)).await?;
        Ok(new)
    }

    async fn read_config(&self, topic: &str) -> Result<BTreeMap<String, String>> {
        match self.zk.get(&paths::topic_config(topic)).await? {
            Some((data, _)) if !data.is_empty() => Ok(TopicConfig::from_json(&data)?.config),
            _ => Ok(BTreeMap::new()),
        }
    }

    /// A topic's configuration overrides (`/config/topics/T`; empty when it has none).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownTopic`], [`Error::ZooKeeper`].
    pub async fn describe_topic_config(&self, topic: &str) -> Result<BTreeMap<String, String>> {
        if self.zk.exists(&paths::topic(topic)).await?.is_none() {
            return Err(Error::UnknownTopic { topic: topic.to_owned() });
        }
        self.read_config(topic).await
    }

    /// Changes a topic's configuration overrides as `kafka-topics.sh --alter --config k=v
    /// --deleteConfig k` does (`AdminUtils.changeTopicConfig`): the current overrides, with
    /// `set` added and `delete` removed, are checked, written to `/config/topics/T`, and
    /// announced with a persistent sequential `/config/changes/config_change_N` holding the
    /// topic name as a JSON string; the brokers then apply them. Returns the new overrides.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownTopic`], [`Error::InvalidConfig`] (an unknown property, in `set` or
    /// `delete`, or a value of the wrong type), [`Error::ZooKeeper`].
    pub async fn alter_topic_config<I, K, V>(
        &self,
        topic: &str,
        set: I,
        delete: &[&str],
    ) -> Result<BTreeMap<String, String>>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let set = collect(set);
        for name in delete {
            validate_config_name(name)?;
        }
        let mut config = self.describe_topic_config(topic).await?;
        config.extend(set);
        for name in delete {
            config.remove(*name);
        }
        validate_topic_config(&config)?;
        tracing::debug!(topic, ?config, "writing topic config and a change notice");
        self.zk.set_or_create(&paths::topic_config(topic), &TopicConfig::new(config.clone()).to_json()).await?;
        self.zk
            .create_all(
                &paths::config_change_prefix_path(),
                &payloads::encode_config_change(topic),
                CreateMode::PersistentSequential,
            )
            .await?;
        Ok(config)
    }

    /// Marks a topic for deletion as `kafka-topics.sh --delete` does: creates the empty znode
    /// `/admin/delete_topics/T`.
    ///
    /// **Whether the topic is then deleted cannot be known from ZooKeeper**: a Kafka 0.8.2
    /// controller acts on the mark only when the brokers run with `delete.topic.enable=true`
    /// (default false), and that setting lives in their `server.properties`, not in ZooKeeper.
    /// Without it the mark stays, the topic is kept and keeps working. Check with
    /// [`Admin::list_topics`] (or `/brokers/topics/T`) whether it went.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownTopic`], [`Error::ZooKeeper`].
    pub async fn delete_topic(&self, topic: &str) -> Result<DeleteTopicOutcome> {
        if self.zk.exists(&paths::topic(topic)).await?.is_none() {
            return Err(Error::UnknownTopic { topic: topic.to_owned() });
        }
        tracing::debug!(topic, "marking topic for deletion");
        match self.zk.create_all(&paths::delete_topic(topic), b"", CreateMode::Persistent).await {
            Ok(_) => Ok(DeleteTopicOutcome::MarkedForDeletion),
            Err(gregor_zk::Error::NodeExists { .. }) => Ok(DeleteTopicOutcome::AlreadyMarked),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(leader: Option<i32>, replicas: &[i32], isr: &[i32], live: bool) -> PartitionDescription {
        PartitionDescription {
            topic: "t".into(),
            partition: 0,
            leader,
            replicas: replicas.to_vec(),
            isr: isr.to_vec(),
            leader_live: live,
        }
    }

    #[test]
    fn partition_filters() {
        let healthy = part(Some(1), &[1, 2], &[1, 2], true);
        assert!(!healthy.is_under_replicated() && !healthy.is_unavailable());
        assert!(healthy.is_led_by_preferred_replica());
        let under = part(Some(2), &[1, 2], &[2], true);
        assert!(under.is_under_replicated() && !under.is_unavailable());
        assert!(!under.is_led_by_preferred_replica());
        assert!(part(None, &[1], &[], false).is_unavailable());
        assert!(part(Some(3), &[3], &[3], false).is_unavailable(), "a leader that is not registered");
        let topic = TopicDescription {
            name: "t".into(),
            config: BTreeMap::new(),
            partitions: vec![healthy, under],
            marked_for_deletion: false,
        };
        assert_eq!((topic.partition_count(), topic.replication_factor()), (2, 2));
        assert_eq!(topic.under_replicated().count(), 1);
        assert_eq!(topic.unavailable().count(), 0);
    }

    #[test]
    fn topic_names_are_checked_as_kafka_does() {
        check_name("events.v2_eu-1").unwrap();
        let err = check_name("a b").unwrap_err();
        assert!(matches!(err, Error::InvalidTopicName { .. }));
        assert!(err.to_string().starts_with("invalid topic name \"a b\": contains a character"), "{err}");
    }

    #[test]
    fn topic_filter() {
        assert_eq!(TopicSelection::default(), TopicSelection::All);
        assert_eq!(TopicSelection::only(["a", "b"]), TopicSelection::Only(vec!["a".into(), "b".into()]));
    }
}

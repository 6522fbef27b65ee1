//! Cluster health: the numbers the Kafka 0.8 operations guide says to watch — under-replicated
//! and offline partitions, and how leaders and replicas spread over the brokers.

use std::collections::{BTreeMap, BTreeSet};

use gregor_net::BrokerId;

use crate::error::Result;
use crate::topics::{PartitionDescription, TopicSelection};
use crate::Admin;

/// One broker's share of the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BrokerLoad {
    /// The broker id.
    pub id: BrokerId,
    /// Whether it is registered (`/brokers/ids/N`).
    pub live: bool,
    /// How many partitions it leads.
    pub leader_count: usize,
    /// How many partitions it holds a replica of (leader or follower).
    pub partition_count: usize,
    /// How many partitions it is the preferred (first) replica of: its leader count once every
    /// preferred replica leads.
    pub preferred_leader_count: usize,
}

/// The state of the whole cluster from ZooKeeper.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClusterHealth {
    /// The controller, `None` during an election.
    pub controller: Option<BrokerId>,
    /// The registered brokers.
    pub live_brokers: Vec<BrokerId>,
    /// Every broker that is registered or holds a replica, by id.
    pub brokers: Vec<BrokerLoad>,
    /// Number of topics.
    pub topic_count: usize,
    /// Number of partitions over all topics.
    pub partition_count: usize,
    /// Partitions with fewer in-sync replicas than replicas.
    pub under_replicated: Vec<PartitionDescription>,
    /// Partitions without a live leader (Kafka's `OfflinePartitionsCount`).
    pub offline: Vec<PartitionDescription>,
    /// Partitions led by a replica other than their preferred one (a preferred replica
    /// election would move them).
    pub not_on_preferred_leader: Vec<PartitionDescription>,
}

impl ClusterHealth {
    /// True when a controller runs and no partition is under-replicated or offline.
    pub fn is_healthy(&self) -> bool {
        self.controller.is_some() && self.under_replicated.is_empty() && self.offline.is_empty()
    }

    /// The load of one broker.
    pub fn broker(&self, id: BrokerId) -> Option<&BrokerLoad> {
        self.brokers.iter().find(|b| b.id == id)
    }
}

impl Admin {
    /// The cluster's health from ZooKeeper: controller, live brokers, under-replicated and
    /// offline partitions, partitions off their preferred leader, and per broker its leader,
    /// replica and preferred-leader counts.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`](crate::Error::ZooKeeper).
    pub async fn health(&self) -> Result<ClusterHealth> {
        let controller = self.controller().await?;
        let live_brokers = self.live_brokers().await?;
        let topics = self.describe_topics(&TopicSelection::All).await?;
        let live: BTreeSet<BrokerId> = live_brokers.iter().copied().collect();
        let mut health = ClusterHealth { controller, topic_count: topics.len(), ..ClusterHealth::default() };
        let mut counts: BTreeMap<BrokerId, (usize, usize, usize)> = BTreeMap::new();
        for p in topics.iter().flat_map(|t| t.partitions.iter()) {
            health.partition_count += 1;
            for r in &p.replicas {
                counts.entry(*r).or_default().1 += 1;
            }
            if let Some(pref) = p.preferred_leader() {
                counts.entry(pref).or_default().2 += 1;
            }
            if let Some(l) = p.leader.filter(|_| p.leader_live) {
                counts.entry(l).or_default().0 += 1;
            }
            if p.is_under_replicated() {
                health.under_replicated.push(p.clone());
            }
            if p.is_unavailable() {
                health.offline.push(p.clone());
            } else if !p.is_led_by_preferred_replica() {
                health.not_on_preferred_leader.push(p.clone());
            }
        }
        for id in &live_brokers {
            counts.entry(*id).or_default();
        }
        health.brokers = counts
            .into_iter()
            .map(|(id, (leader_count, partition_count, preferred_leader_count))| BrokerLoad {
                id,
                live: live.contains(&id),
                leader_count,
                partition_count,
                preferred_leader_count,
            })
            .collect();
        health.live_brokers = live_brokers;
        Ok(health)
    }
}

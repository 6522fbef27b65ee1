//! Consumer groups of the ZooKeeper-coordinated consumer: list, describe, offsets and lag
//! (Kafka 0.8.2's `ConsumerOffsetChecker`), reset offsets.

use gregor_net::BrokerConnection;
use gregor_protocol::messages::{
    ConsumerMetadataRequest, OffsetCommitPartition, OffsetCommitRequest, OffsetCommitResponse, OffsetCommitTopic,
    OffsetFetchRequest, OffsetFetchResponse, OffsetFetchTopic, DEFAULT_CONSUMER_ID, DEFAULT_GENERATION_ID,
    DEFAULT_TIMESTAMP, EARLIEST_TIME, LATEST_TIME,
};
use gregor_protocol::{ErrorCode, Request, TopicPartition};
use gregor_zk::paths;
use gregor_zk::payloads::{self, ConsumerRegistration, PATTERN_STATIC};
use std::collections::{BTreeMap, BTreeSet};

use crate::error::{Error, Result};
use crate::Admin;

/// Where a group keeps its committed offsets (the consumer's `offsets.storage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OffsetStorage {
    /// `/consumers/G/offsets/T/P` in ZooKeeper (`offsets.storage=zookeeper`, 0.8.2's default).
    Zookeeper,
    /// Kafka's `__consumer_offsets`, through the group's offset coordinator
    /// (`offsets.storage=kafka`): ConsumerMetadata, then OffsetFetch / OffsetCommit v1.
    Kafka,
}

/// Where [`Admin::reset_offsets`] moves a group's offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OffsetReset {
    /// The earliest offset each partition still holds (Offsets with time -2).
    Earliest,
    /// Each partition's log end offset (Offsets with time -1): skip everything there is.
    Latest,
    /// This offset in every partition; it must lie between the earliest and the log end.
    Offset(i64),
}

/// A registered member of a group (`/consumers/G/ids/C`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMember {
    /// The consumer id (`<group>_<host>-<ms>-<8 hex>` or `<group>_<consumer.id>`).
    pub consumer_id: String,
    /// Topic (or, for a filter, the regex) -> number of streams.
    pub subscription: BTreeMap<String, i32>,
    /// `static`, `white_list` or `black_list`.
    pub pattern: String,
    /// When the member registered, ms since the epoch.
    pub timestamp_ms: Option<i64>,
}

/// Who owns one partition (`/consumers/G/owners/T/P`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PartitionOwner {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The owning consumer thread id (`<consumer id>-<thread>`), `None` when unowned.
    pub owner: Option<String>,
}

/// A group's members and partition owners.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    /// The group.
    pub group: String,
    /// Its registered members, by consumer id.
    pub members: Vec<GroupMember>,
    /// Every partition of the topics it owns or statically subscribes to, by topic and
    /// partition, with its owner.
    pub owners: Vec<PartitionOwner>,
}

impl GroupDescription {
    /// Whether any member is registered.
    pub fn is_active(&self) -> bool {
        !self.members.is_empty()
    }
}

/// One line of `ConsumerOffsetChecker`: group, topic, partition, committed offset, log size,
/// lag, owner.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PartitionOffset {
    /// The group.
    pub group: String,
    /// The topic.
    pub topic: String,
    /// The partition ("pid").
    pub partition: i32,
    /// The committed offset (the next message the group reads), `None` when there is none
    /// ("unknown").
    pub offset: Option<i64>,
    /// Where the offset was found: for [`OffsetStorage::Kafka`], a partition without a
    /// Kafka-stored offset falls back to ZooKeeper, as ConsumerOffsetChecker does for groups
    /// migrating off ZooKeeper.
    pub committed_in: Option<OffsetStorage>,
    /// The log end offset from the partition's leader ("logSize"), `None` when it could not be
    /// asked (see `problem`).
    pub log_size: Option<i64>,
    /// `log_size - offset`, `None` when either is unknown.
    pub lag: Option<i64>,
    /// The owning consumer thread, `None` ("none") when unowned.
    pub owner: Option<String>,
    /// Why the offset or the log size is unknown, when it is for an error (no leader, a broker
    /// error).
    pub problem: Option<String>,
}

/// What [`Admin::reset_offsets`] did to one partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OffsetResetResult {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The committed offset before, if any.
    pub previous: Option<i64>,
    /// The offset written.
    pub offset: i64,
}

/// Committed offsets read from one store, with the reason for each partition that failed.
type Committed = BTreeMap<TopicPartition, (Option<i64>, Option<OffsetStorage>, Option<String>)>;

/// Codes of a coordinator that is not ready or moved: look it up again after a backoff.
fn coordinator_retriable(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::OffsetsLoadInProgress
            | ErrorCode::ConsumerCoordinatorNotAvailable
            | ErrorCode::NotCoordinatorForConsumer
    )
}

fn fetch_retriable(r: &OffsetFetchResponse) -> Option<ErrorCode> {
    // v2+: the group-level code (the coordinator moved or is loading) comes first
    let group = ErrorCode::from_i16(r.error_code).filter(|c| coordinator_retriable(*c));
    group.or_else(|| {
        r.topics.iter().flat_map(|t| t.partitions.iter()).filter_map(|p| p.error()).find(|c| coordinator_retriable(*c))
    })
}

fn commit_retriable(r: &OffsetCommitResponse) -> Option<ErrorCode> {
    r.topics.iter().flat_map(|t| t.partitions.iter()).filter_map(|p| p.error()).find(|c| coordinator_retriable(*c))
}

impl Admin {
    /// The consumer groups with a znode under `/consumers`, sorted. Groups that only ever
    /// stored offsets in Kafka and registered nowhere in ZooKeeper are not listed (Kafka 0.8.2
    /// keeps no list of them).
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`].
    pub async fn list_groups(&self) -> Result<Vec<String>> {
        Ok(self.zk.children(paths::CONSUMERS).await?.unwrap_or_default())
    }

    async fn members(&self, group: &str) -> Result<Vec<String>> {
        Ok(self.zk.children(&paths::consumer_ids(group)).await?.unwrap_or_default())
    }

    async fn owner_of(&self, group: &str, topic: &str, partition: i32) -> Result<Option<String>> {
        Ok(self
            .zk
            .get(&paths::owner(group, topic, partition))
            .await?
            .map(|(data, _)| String::from_utf8_lossy(&data).into_owned()))
    }

    /// Describes a group: its registered members with their subscriptions
    /// (`/consumers/G/ids`), and the owner of every partition of the topics it owns
    /// (`/consumers/G/owners`) or statically subscribes to.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownGroup`] when `/consumers/G` does not exist, [`Error::ZooKeeper`] (also
    /// for a registration that is not Kafka's JSON).
    pub async fn describe_group(&self, group: &str) -> Result<GroupDescription> {
        if self.zk.exists(&paths::consumer_group(group)).await?.is_none() {
            return Err(Error::UnknownGroup { group: group.to_owned() });
        }
        let mut members = Vec::new();
        for id in self.members(group).await? {
            let Some((data, _)) = self.zk.get(&paths::consumer_id(group, &id)).await? else { continue };
            let reg = ConsumerRegistration::from_json(&data)?;
            members.push(GroupMember {
                consumer_id: id,
                timestamp_ms: reg.timestamp_ms(),
                subscription: reg.subscription,
                pattern: reg.pattern,
            });
        }
        let mut topics: BTreeSet<String> =
            self.zk.children(&paths::consumer_owners(group)).await?.unwrap_or_default().into_iter().collect();
        for m in &members {
            if m.pattern == PATTERN_STATIC {
                topics.extend(m.subscription.keys().cloned());
            }
        }
        let mut owners = Vec::new();
        for topic in topics {
            let mut partitions: BTreeSet<i32> = match self.assignment(&topic).await? {
                Some(a) => a.partitions.keys().copied().collect(),
                None => BTreeSet::new(),
            };
            let owned = self.zk.children(&paths::owners(group, &topic)).await?.unwrap_or_default();
            partitions.extend(owned.iter().filter_map(|p| p.parse::<i32>().ok()));
            for partition in partitions {
                let owner = self.owner_of(group, &topic, partition).await?;
                owners.push(PartitionOwner { topic: topic.clone(), partition, owner });
            }
        }
        Ok(GroupDescription { group: group.to_owned(), members, owners })
    }

    /// The topics a group has anything about in ZooKeeper: owned partitions, ZooKeeper-stored
    /// offsets, static subscriptions.
    async fn group_topics(&self, group: &str) -> Result<Vec<String>> {
        let mut topics: BTreeSet<String> = BTreeSet::new();
        topics.extend(self.zk.children(&paths::consumer_owners(group)).await?.unwrap_or_default());
        topics.extend(self.zk.children(&paths::consumer_offsets(group)).await?.unwrap_or_default());
        for id in self.members(group).await? {
            if let Some((data, _)) = self.zk.get(&paths::consumer_id(group, &id)).await? {
                if let Ok(reg) = ConsumerRegistration::from_json(&data) {
                    if reg.pattern == PATTERN_STATIC {
                        topics.extend(reg.subscription.into_keys());
                    }
                }
            }
        }
        Ok(topics.into_iter().collect())
    }

    /// Committed offsets, log sizes and lag of every partition of the topics the group has
    /// anything about in ZooKeeper (owners, ZooKeeper offsets, static subscriptions), as
    /// `ConsumerOffsetChecker` prints them: group, topic, pid, offset, logSize, lag, owner.
    /// The log size is the log end offset from each partition's leader (Offsets, time -1).
    ///
    /// With [`OffsetStorage::Kafka`] the offsets come from the group's coordinator
    /// (ConsumerMetadata, retried while it answers 15, then OffsetFetch v1); a partition
    /// without a Kafka-stored offset falls back to ZooKeeper, as ConsumerOffsetChecker does. A
    /// group that only ever stored offsets in Kafka leaves no trace in ZooKeeper: name its
    /// topics with [`Admin::group_offsets_for_topics`].
    ///
    /// Sorted by topic and partition. A partition whose leader cannot be asked gets no log size
    /// and a [`problem`](PartitionOffset::problem) rather than failing the call.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownGroup`] (ZooKeeper storage, no `/consumers/G`),
    /// [`Error::CoordinatorNotAvailable`] and [`Error::Broker`] (Kafka storage),
    /// [`Error::ZooKeeper`].
    pub async fn group_offsets(&self, group: &str, storage: OffsetStorage) -> Result<Vec<PartitionOffset>> {
        let exists = self.zk.exists(&paths::consumer_group(group)).await?.is_some();
        if !exists && storage == OffsetStorage::Zookeeper {
            return Err(Error::UnknownGroup { group: group.to_owned() });
        }
        let topics = if exists { self.group_topics(group).await? } else { Vec::new() };
        self.offsets_of(group, storage, &topics, false).await
    }

    /// As [`Admin::group_offsets`], for the partitions of the named topics.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownTopic`], and as [`Admin::group_offsets`] (without `UnknownGroup`).
    pub async fn group_offsets_for_topics<S: AsRef<str>>(
        &self,
        group: &str,
        storage: OffsetStorage,
        topics: &[S],
    ) -> Result<Vec<PartitionOffset>> {
        let topics: Vec<String> = topics.iter().map(|t| t.as_ref().to_owned()).collect();
        self.offsets_of(group, storage, &topics, true).await
    }

    async fn topic_partitions(&self, topics: &[String], strict: bool) -> Result<Vec<TopicPartition>> {
        let mut out = Vec::new();
        for topic in topics {
            match self.assignment(topic).await? {
                Some(a) => out.extend(a.partitions.keys().map(|p| TopicPartition::new(topic.clone(), *p))),
                None if strict => return Err(Error::UnknownTopic { topic: topic.clone() }),
                None => {}
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    async fn offsets_of(
        &self,
        group: &str,
        storage: OffsetStorage,
        topics: &[String],
        strict: bool,
    ) -> Result<Vec<PartitionOffset>> {
        let tps = self.topic_partitions(topics, strict).await?;
        if tps.is_empty() {
            return Ok(Vec::new());
        }
        let mut committed = self.committed_offsets(group, storage, &tps).await?;
        let mut sizes = self.log_offsets(&tps, LATEST_TIME).await?;
        let mut out = Vec::with_capacity(tps.len());
        for tp in tps {
            let (offset, committed_in, mut problem) = committed.remove(&tp).unwrap_or((None, None, None));
            let log_size = match sizes.remove(&tp) {
                Some(Ok(size)) => Some(size),
                Some(Err(e)) => {
                    problem.get_or_insert_with(|| format!("log size unknown: {e}"));
                    None
                }
                None => None,
            };
            let lag = match (offset, log_size) {
                (Some(o), Some(s)) if o >= 0 => Some(s - o),
                _ => None,
            };
            let owner = self.owner_of(group, &tp.topic, tp.partition).await?;
            out.push(PartitionOffset {
                group: group.to_owned(),
                topic: tp.topic,
                partition: tp.partition,
                offset,
                committed_in,
                log_size,
                lag,
                owner,
                problem,
            });
        }
        Ok(out)
    }

    async fn zk_offset(&self, group: &str, topic: &str, partition: i32) -> Result<Option<i64>> {
        match self.zk.get(&paths::offset(group, topic, partition)).await? {
            Some((data, _)) => Ok(Some(payloads::decode_offset(&data)?)),
            None => Ok(None),
        }
    }

    async fn committed_offsets(
        &self,
        group: &str,
        storage: OffsetStorage,
        tps: &[TopicPartition],
    ) -> Result<Committed> {
        let mut out = Committed::new();
        match storage {
            OffsetStorage::Zookeeper => {
                for tp in tps {
                    let o = self.zk_offset(group, &tp.topic, tp.partition).await?;
                    out.insert(tp.clone(), (o, o.map(|_| OffsetStorage::Zookeeper), None));
                }
            }
            OffsetStorage::Kafka => {
                let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
                for tp in tps {
                    by_topic.entry(tp.topic.as_str()).or_default().push(tp.partition);
                }
                let request = OffsetFetchRequest::new(
                    group,
                    by_topic.into_iter().map(|(t, ps)| OffsetFetchTopic::new(t, ps)).collect(),
                );
                let response = self.coordinator_request(group, 1..=7, &request, fetch_retriable).await?;
                for tp in tps {
                    let found = response
                        .topics
                        .iter()
                        .filter(|rt| rt.topic == tp.topic)
                        .flat_map(|rt| rt.partitions.iter())
                        .find(|rp| rp.partition == tp.partition);
                    let entry = match found {
                        Some(rp) => match rp.error() {
                            None if rp.offset >= 0 => (Some(rp.offset), Some(OffsetStorage::Kafka), None),
                            // no offset in Kafka: the group may not have migrated off ZooKeeper
                            None | Some(ErrorCode::UnknownTopicOrPartition) => {
                                let o = self.zk_offset(group, &tp.topic, tp.partition).await?;
                                (o, o.map(|_| OffsetStorage::Zookeeper), None)
                            }
                            Some(code) => (None, None, Some(format!("could not fetch the offset of {tp}: {code}"))),
                        },
                        None => (None, None, Some(format!("the coordinator did not answer for {tp}"))),
                    };
                    out.insert(tp.clone(), entry);
                }
            }
        }
        Ok(out)
    }

    /// Looks up the group's offset coordinator once: ConsumerMetadata to each live broker in
    /// turn until one answers.
    async fn coordinator(&self, group: &str) -> Result<BrokerConnection> {
        let brokers = self.live_brokers().await?;
        if brokers.is_empty() {
            return Err(Error::NoBrokers);
        }
        let request = ConsumerMetadataRequest::group(group);
        let mut last = None;
        for id in brokers {
            let conn = match self.broker_connection(id).await {
                Ok(c) => c,
                Err(e) => {
                    last = Some(e);
                    continue;
                }
            };
            // v4 asks for several keys at once, a shape this lookup does not need
            let version = conn.version_for::<ConsumerMetadataRequest>(0..=3).unwrap_or(0);
            tracing::debug!(group, broker = id, version, "consumer metadata request");
            match conn.request(version, &request).await {
                Ok(r) => match r.error() {
                    None => {
                        let addr = format!("{}:{}", r.host, r.port);
                        self.pool.set_broker(r.node_id, addr.clone());
                        return self.pool.get(r.node_id).await.map_err(|e| {
                            Error::net(
                                format!(
                                    "could not connect to the coordinator of group {group:?}, broker {} at {addr}",
                                    r.node_id
                                ),
                                e,
                            )
                        });
                    }
                    Some(code) => {
                        // the answer is the same from every broker: no need to ask the others
                        return Err(Error::Broker {
                            code,
                            context: format!("the offset coordinator of group {group:?} (asked broker {id})"),
                        });
                    }
                },
                Err(e) => last = Some(Error::net(format!("consumer metadata request to broker {id} failed"), e)),
            }
        }
        Err(last.unwrap_or(Error::NoBrokers))
    }

    /// Sends `request` to the group's coordinator, looking it up again and retrying (with
    /// backoff, at most `coordinator_attempts` times) while it is not available, not ready or
    /// not the coordinator any more (codes 14, 15, 16) or unreachable.
    async fn coordinator_request<R>(
        &self,
        group: &str,
        versions: std::ops::RangeInclusive<i16>,
        request: &R,
        retriable: fn(&R::Response) -> Option<ErrorCode>,
    ) -> Result<R::Response>
    where
        R: Request + Sync,
        R::Response: Send,
    {
        let mut last: Option<Error> = None;
        for attempt in 0..self.coordinator_attempts {
            if attempt > 0 {
                let delay = self.backoff.next_delay(attempt - 1);
                tracing::warn!(group, attempt, ?delay, error = ?last.as_ref().map(ToString::to_string), "offset coordinator not available; retrying");
                tokio::time::sleep(delay).await;
            }
            let conn = match self.coordinator(group).await {
                Ok(c) => c,
                Err(e) if e.is_retriable() => {
                    last = Some(e);
                    continue;
                }
                Err(e) => return Err(e),
            };
            // the highest version of `versions` the coordinator speaks (the lowest when none)
            let version = conn.version_for::<R>(versions.clone()).unwrap_or(*versions.start());
            tracing::debug!(group, api = %R::KEY, version, addr = conn.addr(), "request to the offset coordinator");
            match conn.request(version, request).await {
                Ok(response) => match retriable(&response) {
                    Some(code) => {
                        last = Some(Error::Broker {
                            code,
                            context: format!("{} v{version} of group {group:?} at {}", R::KEY, conn.addr()),
                        });
                    }
                    None => return Ok(response),
                },
                Err(e) => {
                    let e = Error::net(format!("{} v{version} request to {} failed", R::KEY, conn.addr()), e);
                    if !e.is_retriable() {
                        return Err(e);
                    }
                    last = Some(e);
                }
            }
        }
        Err(Error::CoordinatorNotAvailable {
            group: group.to_owned(),
            attempts: self.coordinator_attempts,
            last: last.map(Box::new),
        })
    }

    /// Moves the committed offsets of every partition of `topic` for an inactive group, as
    /// Kafka's `UpdateOffsetsInZK` (earliest, latest) and `ImportZkOffsets` (an offset) do:
    /// with [`OffsetStorage::Zookeeper`] `/consumers/G/offsets/T/P` is written (created if
    /// missing); with [`OffsetStorage::Kafka`] an OffsetCommit v1 goes to the group's
    /// coordinator (generation -1, no consumer id, the broker's time).
    ///
    /// The group must have no member registered at `/consumers/G/ids`: running consumers would
    /// overwrite the new offsets with their own at their next commit. The targets come from
    /// each partition's leader (Offsets, time -2 and -1); [`OffsetReset::Offset`] must lie
    /// between them. Nothing is written unless every partition's target is known.
    ///
    /// # Errors
    ///
    /// [`Error::GroupActive`] naming the members, [`Error::UnknownTopic`],
    /// [`Error::NoLeader`] / [`Error::Net`] / [`Error::Broker`] when a partition's offsets
    /// cannot be read, [`Error::OffsetOutOfRange`], [`Error::CoordinatorNotAvailable`],
    /// [`Error::ZooKeeper`].
    pub async fn reset_offsets(
        &self,
        group: &str,
        topic: &str,
        to: OffsetReset,
        storage: OffsetStorage,
    ) -> Result<Vec<OffsetResetResult>> {
        let members = self.members(group).await?;
        if !members.is_empty() {
            return Err(Error::GroupActive { group: group.to_owned(), members });
        }
        let tps = self.topic_partitions(&[topic.to_owned()], true).await?;
        let mut earliest = BTreeMap::new();
        if matches!(to, OffsetReset::Earliest | OffsetReset::Offset(_)) {
            earliest = self.log_offsets(&tps, EARLIEST_TIME).await?;
        }
        let mut latest = BTreeMap::new();
        if matches!(to, OffsetReset::Latest | OffsetReset::Offset(_)) {
            latest = self.log_offsets(&tps, LATEST_TIME).await?;
        }
        let mut targets = BTreeMap::new();
        for tp in &tps {
            let lo = earliest.remove(tp).transpose()?;
            let hi = latest.remove(tp).transpose()?;
            let target = match to {
                OffsetReset::Earliest => lo,
                OffsetReset::Latest => hi,
                OffsetReset::Offset(n) => {
                    let (lo, hi) = (lo.unwrap_or(0), hi.unwrap_or(0));
                    if n < lo || n > hi {
                        return Err(Error::OffsetOutOfRange {
                            topic: tp.topic.clone(),
                            partition: tp.partition,
                            offset: n,
                            earliest: lo,
                            latest: hi,
                        });
                    }
                    Some(n)
                }
            };
            let target = target.ok_or_else(|| Error::NoLeader { topic: tp.topic.clone(), partition: tp.partition })?;
            targets.insert(tp.clone(), target);
        }
        let previous = self.committed_offsets(group, storage, &tps).await?;
        match storage {
            OffsetStorage::Zookeeper => {
                for (tp, offset) in &targets {
                    tracing::debug!(group, topic = %tp.topic, partition = tp.partition, offset, "writing consumer offset");
                    let path = paths::offset(group, &tp.topic, tp.partition);
                    self.zk.set_or_create(&path, &payloads::encode_offset(*offset)).await?;
                }
            }
            OffsetStorage::Kafka => {
                let request = OffsetCommitRequest {
                    group_id: group.to_owned(),
                    group_generation_id: DEFAULT_GENERATION_ID,
                    consumer_id: DEFAULT_CONSUMER_ID.to_owned(),
                    topics: vec![OffsetCommitTopic::new(
                        topic,
                        targets
                            .iter()
                            .map(|(tp, offset)| OffsetCommitPartition {
                                timestamp: DEFAULT_TIMESTAMP,
                                ..OffsetCommitPartition::new(tp.partition, *offset, "")
                            })
                            .collect(),
                    )],
                    ..Default::default()
                };
                let response = self.coordinator_request(group, 1..=7, &request, commit_retriable).await?;
                for rp in response.topics.iter().flat_map(|t| t.partitions.iter()) {
                    if let Some(code) = rp.error() {
                        return Err(Error::Broker {
                            code,
                            context: format!("the offset commit of group {group:?} for {topic}/{}", rp.partition),
                        });
                    }
                }
            }
        }
        Ok(targets
            .into_iter()
            .map(|(tp, offset)| OffsetResetResult {
                previous: previous.get(&tp).and_then(|(o, _, _)| *o),
                topic: tp.topic,
                partition: tp.partition,
                offset,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gregor_protocol::messages::{OffsetFetchResponsePartition, OffsetFetchResponseTopic};

    #[test]
    fn coordinator_codes_are_retried() {
        let r = OffsetFetchResponse {
            topics: vec![OffsetFetchResponseTopic::new(
                "t",
                vec![OffsetFetchResponsePartition::new(0, 5, "", 0), OffsetFetchResponsePartition::new(1, -1, "", 16)],
            )],
            ..Default::default()
        };
        assert_eq!(fetch_retriable(&r), Some(ErrorCode::NotCoordinatorForConsumer));
        let ok = OffsetFetchResponse {
            topics: vec![OffsetFetchResponseTopic::new("t", vec![OffsetFetchResponsePartition::new(0, -1, "", 3)])],
            ..Default::default()
        };
        assert_eq!(fetch_retriable(&ok), None);
        assert!(coordinator_retriable(ErrorCode::ConsumerCoordinatorNotAvailable));
        assert!(coordinator_retriable(ErrorCode::OffsetsLoadInProgress));
        assert!(!coordinator_retriable(ErrorCode::OffsetMetadataTooLarge));
    }

    #[test]
    fn group_description_activity() {
        let g = GroupDescription { group: "g".into(), members: vec![], owners: vec![] };
        assert!(!g.is_active());
    }
}

//! Partition reassignment (`kafka-reassign-partitions.sh`: generate, execute, verify) and
//! preferred replica election (`kafka-preferred-replica-election.sh`), as Kafka 0.8.2 does
//! them.

use std::collections::{BTreeMap, BTreeSet};

use gregor_net::BrokerId;
use gregor_protocol::TopicPartition;
use gregor_zk::payloads::{PartitionReassignment, PreferredReplicaElection, ReassignPartitions};
use gregor_zk::{paths, CreateMode};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::placement::{assign_replicas_random, check_broker_list, duplicates};
use crate::Admin;

const REASSIGNMENT_JSON: &str = "reassignment JSON";
const TOPICS_TO_MOVE_JSON: &str = "topics-to-move JSON";
const ELECTION: &str = "preferred replica election";

/// A set of partition moves: each partition and the replicas it should end up on, preferred
/// leader first. Its JSON is exactly what `kafka-reassign-partitions.sh` reads and writes, and
/// what `/admin/reassign_partitions` holds:
/// `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReassignmentPlan {
    /// The moves, in order (sorted by topic and partition when generated).
    pub partitions: Vec<PartitionReassignment>,
}

impl ReassignmentPlan {
    /// A plan of these moves.
    pub fn new(partitions: Vec<PartitionReassignment>) -> ReassignmentPlan {
        ReassignmentPlan { partitions }
    }

    /// A plan from partition -> replicas, sorted by topic and partition.
    pub fn from_map(map: BTreeMap<TopicPartition, Vec<BrokerId>>) -> ReassignmentPlan {
        ReassignmentPlan {
            partitions: map
                .into_iter()
                .map(|(TopicPartition { topic, partition }, replicas)| PartitionReassignment {
                    topic,
                    partition,
                    replicas,
                })
                .collect(),
        }
    }

    /// The plan as partition -> replicas (a partition listed twice keeps its last replicas;
    /// [`validate`](Self::validate) refuses such a plan).
    pub fn to_map(&self) -> BTreeMap<TopicPartition, Vec<BrokerId>> {
        self.partitions.iter().map(|p| (p.topic_partition(), p.replicas.clone())).collect()
    }

    /// The topics the plan touches, sorted.
    pub fn topics(&self) -> Vec<String> {
        self.partitions.iter().map(|p| p.topic.clone()).collect::<BTreeSet<_>>().into_iter().collect()
    }

    /// Whether the plan moves nothing.
    pub fn is_empty(&self) -> bool {
        self.partitions.is_empty()
    }

    /// The JSON Kafka writes (`ZkUtils.getPartitionReassignmentZkData`).
    pub fn to_json(&self) -> String {
        let bytes = ReassignPartitions::new(self.partitions.clone()).to_json();
        String::from_utf8(bytes).unwrap_or_default()
    }

    /// Parses a plan; see [`parse_reassignment_json`].
    ///
    /// # Errors
    ///
    /// As [`parse_reassignment_json`].
    pub fn from_json(text: &str) -> Result<ReassignmentPlan> {
        parse_reassignment_json(text)
    }

    /// Checks the plan as `kafka-reassign-partitions.sh --execute` does: not empty, no
    /// partition twice, no replica list empty or naming a broker twice.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPlan`] naming the problem.
    pub fn validate(&self) -> Result<()> {
        if self.partitions.is_empty() {
            return Err(Error::plan(REASSIGNMENT_JSON, "it lists no partition"));
        }
        let tps: Vec<TopicPartition> = self.partitions.iter().map(PartitionReassignment::topic_partition).collect();
        let dups = duplicates(&tps);
        if !dups.is_empty() {
            return Err(Error::plan(
                REASSIGNMENT_JSON,
                format!("it contains duplicate topic partitions: {}", crate::error::join_partitions(&dups)),
            ));
        }
        for p in &self.partitions {
            if p.replicas.is_empty() {
                return Err(Error::plan(REASSIGNMENT_JSON, format!("[{},{}] has no replica", p.topic, p.partition)));
            }
            let dups = duplicates(&p.replicas);
            if !dups.is_empty() {
                return Err(Error::plan(
                    REASSIGNMENT_JSON,
                    format!(
                        "partition replica lists may not contain duplicate entries: [{},{}] contains multiple \
                         entries for {}",
                        p.topic,
                        p.partition,
                        crate::error::join(&dups)
                    ),
                ));
            }
        }
        Ok(())
    }
}

fn parse_json(what: &'static str, text: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| Error::plan(what, format!("not JSON: {e}")))
}

fn field<'a>(what: &'static str, v: &'a Value, name: &str, at: &str) -> Result<&'a Value> {
    v.get(name).ok_or_else(|| Error::plan(what, format!("{at} has no \"{name}\"")))
}

fn as_i32(what: &'static str, v: &Value, at: &str) -> Result<i32> {
    v.as_i64()
        .and_then(|n| i32::try_from(n).ok())
        .ok_or_else(|| Error::plan(what, format!("{at} is {v}, not a 32-bit integer")))
}

fn as_str<'a>(what: &'static str, v: &'a Value, at: &str) -> Result<&'a str> {
    v.as_str().ok_or_else(|| Error::plan(what, format!("{at} is {v}, not a string")))
}

/// Parses a reassignment plan as `kafka-reassign-partitions.sh --reassignment-json-file` reads
/// it: `{"version":1,"partitions":[{"topic":t,"partition":p,"replicas":[..]},..]}` (any field
/// order, `version` optional, unknown fields ignored), then [`ReassignmentPlan::validate`]s it.
///
/// # Errors
///
/// [`Error::InvalidPlan`] for malformed JSON, a missing or mistyped field, and what
/// [`ReassignmentPlan::validate`] refuses.
pub fn parse_reassignment_json(text: &str) -> Result<ReassignmentPlan> {
    let what = REASSIGNMENT_JSON;
    let doc = parse_json(what, text)?;
    if !doc.is_object() {
        return Err(Error::plan(what, "expected a JSON object with \"partitions\""));
    }
    let parts = field(what, &doc, "partitions", "the document")?
        .as_array()
        .ok_or_else(|| Error::plan(what, "\"partitions\" is not an array"))?;
    let mut out = Vec::with_capacity(parts.len());
    for (i, p) in parts.iter().enumerate() {
        let at = format!("partitions[{i}]");
        let topic = as_str(what, field(what, p, "topic", &at)?, &format!("{at}.topic"))?.to_owned();
        let partition = as_i32(what, field(what, p, "partition", &at)?, &format!("{at}.partition"))?;
        let replicas = field(what, p, "replicas", &at)?
            .as_array()
            .ok_or_else(|| Error::plan(what, format!("{at}.replicas is not an array")))?
            .iter()
            .enumerate()
            .map(|(j, r)| as_i32(what, r, &format!("{at}.replicas[{j}]")))
            .collect::<Result<Vec<_>>>()?;
        out.push(PartitionReassignment { topic, partition, replicas });
    }
    let plan = ReassignmentPlan::new(out);
    plan.validate()?;
    Ok(plan)
}

/// Parses the topics-to-move document of `kafka-reassign-partitions.sh --generate`:
/// `{"topics":[{"topic":"foo"},{"topic":"bar"}],"version":1}`.
///
/// # Errors
///
/// [`Error::InvalidPlan`] for malformed JSON, a missing field, no topic, or a topic listed twice.
pub fn parse_topics_to_move_json(text: &str) -> Result<Vec<String>> {
    let what = TOPICS_TO_MOVE_JSON;
    let doc = parse_json(what, text)?;
    let topics = field(what, &doc, "topics", "the document")?
        .as_array()
        .ok_or_else(|| Error::plan(what, "\"topics\" is not an array"))?;
    let names = topics
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let at = format!("topics[{i}]");
            Ok(as_str(what, field(what, t, "topic", &at)?, &format!("{at}.topic"))?.to_owned())
        })
        .collect::<Result<Vec<_>>>()?;
    check_topics(&names)?;
    Ok(names)
}

/// The topics-to-move document for `topics` (`{"topics":[{"topic":"foo"}],"version":1}`).
pub fn topics_to_move_json<S: AsRef<str>>(topics: &[S]) -> String {
    let topics: Vec<Value> = topics.iter().map(|t| serde_json::json!({ "topic": t.as_ref() })).collect();
    format!("{{\"topics\":{},\"version\":1}}", Value::Array(topics))
}

fn check_topics(topics: &[String]) -> Result<()> {
    if topics.is_empty() {
        return Err(Error::plan(TOPICS_TO_MOVE_JSON, "it lists no topic"));
    }
    let dups = duplicates(topics);
    if !dups.is_empty() {
        return Err(Error::plan(
            TOPICS_TO_MOVE_JSON,
            format!("the list of topics to reassign contains duplicate entries: {}", dups.join(", ")),
        ));
    }
    Ok(())
}

/// What `kafka-reassign-partitions.sh --generate` prints: the current assignment of the topics
/// (save it to roll back) and the proposed one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProposedReassignment {
    /// The topics' partitions on their current replicas.
    pub current: ReassignmentPlan,
    /// The same partitions placed over the broker list.
    pub proposed: ReassignmentPlan,
}

/// What [`Admin::execute_reassignment`] started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutedReassignment {
    /// The moves written to `/admin/reassign_partitions`.
    pub started: ReassignmentPlan,
    /// The current assignment of those partitions before the moves: execute it to roll back.
    pub previous: ReassignmentPlan,
    /// Partitions of the plan that do not exist and were left out (Kafka skips them too).
    pub skipped: Vec<TopicPartition>,
}

/// Where one partition's move stands, as `kafka-reassign-partitions.sh --verify` decides it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ReassignmentStatus {
    /// No longer in `/admin/reassign_partitions`, and the assignment equals the target.
    Completed,
    /// Still listed in `/admin/reassign_partitions`: the controller is moving it.
    InProgress,
    /// No longer listed, but the assignment differs from the target: the controller gave up
    /// (e.g. a target broker was not alive) or another change overrode it.
    Failed {
        /// The partition's replicas now (empty when the topic or partition is gone).
        assigned: Vec<BrokerId>,
    },
}

/// One partition of [`Admin::verify_reassignment`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PartitionStatus {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The target replicas of the plan.
    pub target: Vec<BrokerId>,
    /// Where it stands.
    pub status: ReassignmentStatus,
}

fn in_progress_list(data: &[u8]) -> Vec<TopicPartition> {
    ReassignPartitions::from_json(data)
        .map(|r| r.partitions.iter().map(PartitionReassignment::topic_partition).collect())
        .unwrap_or_default()
}

impl Admin {
    /// Proposes moving every partition of `topics` onto `brokers`, as
    /// `kafka-reassign-partitions.sh --generate` does: per topic, Kafka's placement with a
    /// random start over the broker list in the order given, with the topic's partition count
    /// and replication factor. Nothing is written. The brokers need not be registered yet.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidBrokerList`] (empty, duplicates), [`Error::InvalidPlan`] (no topic, a
    /// topic twice), [`Error::UnknownTopic`], [`Error::ReplicationFactorTooLarge`] (a topic
    /// has more replicas than the broker list has brokers), [`Error::ZooKeeper`].
    pub async fn generate_reassignment<S: AsRef<str>>(
        &self,
        topics: &[S],
        brokers: &[BrokerId],
    ) -> Result<ProposedReassignment> {
        check_broker_list(brokers)?;
        let names: Vec<String> = topics.iter().map(|t| t.as_ref().to_owned()).collect();
        check_topics(&names)?;
        let mut current = BTreeMap::new();
        let mut proposed = BTreeMap::new();
        for topic in &names {
            let assignment = self.existing_assignment(topic).await?;
            let rf = assignment.partitions.values().next().map_or(0, Vec::len) as i32;
            let placed = assign_replicas_random(brokers, assignment.partitions.len() as i32, rf)?;
            for ((partition, replicas), new) in assignment.partitions.into_iter().zip(placed) {
                current.insert(TopicPartition::new(topic.clone(), partition), replicas);
                proposed.insert(TopicPartition::new(topic.clone(), partition), new);
            }
        }
        Ok(ProposedReassignment {
            current: ReassignmentPlan::from_map(current),
            proposed: ReassignmentPlan::from_map(proposed),
        })
    }

    /// The reassignment in progress (`/admin/reassign_partitions`), if any: the moves the
    /// controller has not completed yet.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] (also when the znode holds malformed JSON).
    pub async fn reassignment_in_progress(&self) -> Result<Option<ReassignmentPlan>> {
        match self.zk.get(paths::REASSIGN_PARTITIONS).await? {
            Some((data, _)) => Ok(Some(ReassignmentPlan::new(ReassignPartitions::from_json(&data)?.partitions))),
            None => Ok(None),
        }
    }

    /// Starts a reassignment as `kafka-reassign-partitions.sh --execute` does: the plan is
    /// checked ([`ReassignmentPlan::validate`]), partitions that do not exist are left out
    /// (reported in [`ExecutedReassignment::skipped`]), and the rest is written to
    /// `/admin/reassign_partitions` in Kafka's JSON; the controller then copies the replicas,
    /// waits for them to join the ISR, moves leadership if needed, rewrites
    /// `/brokers/topics/T`, and deletes the znode when done.
    ///
    /// Beyond the 0.8.2 tool, every target broker must be registered: a 0.8.2 controller
    /// drops a move to a dead broker ("Only x replicas out of the new set of replicas are
    /// alive") and the plan would only show as failed later.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPlan`] (also when no partition of the plan exists),
    /// [`Error::UnknownBrokers`], [`Error::ReassignmentInProgress`] naming the partitions still
    /// moving, [`Error::ZooKeeper`].
    pub async fn execute_reassignment(&self, plan: &ReassignmentPlan) -> Result<ExecutedReassignment> {
        plan.validate()?;
        if let Some((data, _)) = self.zk.get(paths::REASSIGN_PARTITIONS).await? {
            return Err(Error::ReassignmentInProgress { partitions: in_progress_list(&data) });
        }
        let mut valid = Vec::new();
        let mut previous = Vec::new();
        let mut skipped = Vec::new();
        let mut assignments = BTreeMap::new();
        for p in &plan.partitions {
            if !assignments.contains_key(&p.topic) {
                assignments.insert(p.topic.clone(), self.assignment(&p.topic).await?);
            }
            match assignments[&p.topic].as_ref().and_then(|a| a.partitions.get(&p.partition)) {
                Some(current) => {
                    previous.push(PartitionReassignment {
                        topic: p.topic.clone(),
                        partition: p.partition,
                        replicas: current.clone(),
                    });
                    valid.push(p.clone());
                }
                None => {
                    tracing::warn!(topic = %p.topic, partition = p.partition, "skipping the reassignment of a partition that does not exist");
                    skipped.push(p.topic_partition());
                }
            }
        }
        if valid.is_empty() {
            return Err(Error::plan(
                REASSIGNMENT_JSON,
                format!("none of its partitions exists ({})", crate::error::join_partitions(&skipped)),
            ));
        }
        let targets: Vec<Vec<BrokerId>> = valid.iter().map(|p| p.replicas.clone()).collect();
        self.check_registered_brokers(&targets).await?;
        let started = ReassignmentPlan::new(valid);
        tracing::debug!(partitions = started.partitions.len(), "writing /admin/reassign_partitions");
        match self.zk.create_all(paths::REASSIGN_PARTITIONS, started.to_json().as_bytes(), CreateMode::Persistent).await
        {
            Ok(_) => {}
            Err(gregor_zk::Error::NodeExists { .. }) => {
                let data = self.zk.get(paths::REASSIGN_PARTITIONS).await?.map(|(d, _)| d).unwrap_or_default();
                return Err(Error::ReassignmentInProgress { partitions: in_progress_list(&data) });
            }
            Err(e) => return Err(e.into()),
        }
        Ok(ExecutedReassignment { started, previous: ReassignmentPlan::new(previous), skipped })
    }

    async fn check_registered_brokers(&self, lists: &[Vec<BrokerId>]) -> Result<()> {
        let live = self.live_brokers().await?;
        let unknown: BTreeSet<BrokerId> = lists.iter().flatten().copied().filter(|b| !live.contains(b)).collect();
        if unknown.is_empty() {
            Ok(())
        } else {
            Err(Error::UnknownBrokers { unknown: unknown.into_iter().collect(), live })
        }
    }

    /// Checks each move of `plan` as `kafka-reassign-partitions.sh --verify` does: still listed
    /// in `/admin/reassign_partitions` is [`InProgress`](ReassignmentStatus::InProgress); else
    /// [`Completed`](ReassignmentStatus::Completed) when `/brokers/topics/T` assigns the
    /// partition exactly the target replicas (same order), [`Failed`](ReassignmentStatus::Failed)
    /// otherwise.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`].
    pub async fn verify_reassignment(&self, plan: &ReassignmentPlan) -> Result<Vec<PartitionStatus>> {
        let moving: BTreeSet<TopicPartition> = match self.zk.get(paths::REASSIGN_PARTITIONS).await? {
            Some((data, _)) => in_progress_list(&data).into_iter().collect(),
            None => BTreeSet::new(),
        };
        let mut assignments = BTreeMap::new();
        let mut out = Vec::with_capacity(plan.partitions.len());
        for p in &plan.partitions {
            let status = if moving.contains(&p.topic_partition()) {
                ReassignmentStatus::InProgress
            } else {
                if !assignments.contains_key(&p.topic) {
                    assignments.insert(p.topic.clone(), self.assignment(&p.topic).await?);
                }
                let assigned = assignments[&p.topic]
                    .as_ref()
                    .and_then(|a| a.partitions.get(&p.partition))
                    .cloned()
                    .unwrap_or_default();
                if assigned == p.replicas {
                    ReassignmentStatus::Completed
                } else {
                    ReassignmentStatus::Failed { assigned }
                }
            };
            out.push(PartitionStatus {
                topic: p.topic.clone(),
                partition: p.partition,
                target: p.replicas.clone(),
                status,
            });
        }
        Ok(out)
    }

    /// Asks the controller to move leadership back to each partition's preferred (first)
    /// replica, as `kafka-preferred-replica-election.sh` does: writes
    /// `/admin/preferred_replica_election` with `partitions`, or with every partition of every
    /// topic for `None`. The controller moves the leaders whose preferred replica is alive and
    /// in the ISR, then deletes the znode. Returns the partitions written, sorted.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPlan`] (an empty list, a partition twice),
    /// [`Error::UnknownPartition`] / [`Error::UnknownTopic`],
    /// [`Error::PreferredReplicaElectionInProgress`] naming the partitions of the running one,
    /// [`Error::ZooKeeper`].
    pub async fn preferred_replica_election(
        &self,
        partitions: Option<&[TopicPartition]>,
    ) -> Result<Vec<TopicPartition>> {
        let list: Vec<TopicPartition> = match partitions {
            None => {
                let mut all = Vec::new();
                for topic in self.topic_names().await? {
                    if let Some(a) = self.assignment(&topic).await? {
                        all.extend(a.partitions.keys().map(|p| TopicPartition::new(topic.clone(), *p)));
                    }
                }
                all
            }
            Some(given) => {
                if given.is_empty() {
                    return Err(Error::plan(ELECTION, "it lists no partition"));
                }
                let dups = duplicates(given);
                if !dups.is_empty() {
                    return Err(Error::plan(
                        ELECTION,
                        format!("it contains duplicate partitions: {}", crate::error::join_partitions(&dups)),
                    ));
                }
                let mut assignments = BTreeMap::new();
                for tp in given {
                    if !assignments.contains_key(&tp.topic) {
                        assignments.insert(tp.topic.clone(), self.existing_assignment(&tp.topic).await?);
                    }
                    if !assignments[&tp.topic].partitions.contains_key(&tp.partition) {
                        return Err(Error::UnknownPartition { topic: tp.topic.clone(), partition: tp.partition });
                    }
                }
                let mut sorted = given.to_vec();
                sorted.sort();
                sorted
            }
        };
        if list.is_empty() {
            return Err(Error::plan(ELECTION, "the cluster has no partition"));
        }
        let busy = |data: &[u8]| {
            let partitions = PreferredReplicaElection::from_json(data).map(|e| e.partitions).unwrap_or_default();
            Error::PreferredReplicaElectionInProgress { partitions }
        };
        if let Some((data, _)) = self.zk.get(paths::PREFERRED_REPLICA_ELECTION).await? {
            return Err(busy(&data));
        }
        let data = PreferredReplicaElection::new(list.clone()).to_json();
        tracing::debug!(partitions = list.len(), "writing /admin/preferred_replica_election");
        match self.zk.create_all(paths::PREFERRED_REPLICA_ELECTION, &data, CreateMode::Persistent).await {
            Ok(_) => Ok(list),
            Err(gregor_zk::Error::NodeExists { .. }) => {
                let data = self.zk.get(paths::PREFERRED_REPLICA_ELECTION).await?.map(|(d, _)| d).unwrap_or_default();
                Err(busy(&data))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The preferred replica election in progress (`/admin/preferred_replica_election`), if any.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] (also when the znode holds malformed JSON).
    pub async fn preferred_replica_election_in_progress(&self) -> Result<Option<Vec<TopicPartition>>> {
        match self.zk.get(paths::PREFERRED_REPLICA_ELECTION).await? {
            Some((data, _)) => Ok(Some(PreferredReplicaElection::from_json(&data)?.partitions)),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mv(topic: &str, partition: i32, replicas: &[i32]) -> PartitionReassignment {
        PartitionReassignment { topic: topic.into(), partition, replicas: replicas.to_vec() }
    }

    #[test]
    fn plan_json_is_kafkas() {
        let plan = ReassignmentPlan::new(vec![mv("events", 0, &[1, 2]), mv("logs", 3, &[0])]);
        let json = plan.to_json();
        assert_eq!(
            json,
            r#"{"version":1,"partitions":[{"topic":"events","partition":0,"replicas":[1,2]},{"topic":"logs","partition":3,"replicas":[0]}]}"#
        );
        assert_eq!(parse_reassignment_json(&json).unwrap(), plan);
        // Kafka's own files: any field order, no version, whitespace.
        let file = r#"{"partitions":
            [{"replicas": [3, 1], "partition": 1, "topic": "foo"}]}"#;
        assert_eq!(parse_reassignment_json(file).unwrap().partitions, vec![mv("foo", 1, &[3, 1])]);
        assert_eq!(plan.topics(), ["events", "logs"]);
        assert_eq!(ReassignmentPlan::from_map(plan.to_map()), plan);
    }

    #[test]
    fn plans_from_maps_are_sorted_by_topic_then_partition() {
        let map = BTreeMap::from([
            (TopicPartition::new("b", 0), vec![1]),
            (TopicPartition::new("a", 10), vec![2]),
            (TopicPartition::new("a", 9), vec![3]),
        ]);
        let plan = ReassignmentPlan::from_map(map.clone());
        assert_eq!(plan.partitions, [mv("a", 9, &[3]), mv("a", 10, &[2]), mv("b", 0, &[1])]);
        assert_eq!(plan.to_map(), map);
        assert_eq!(plan.partitions[1].topic_partition(), TopicPartition::new("a", 10));
    }

    #[test]
    fn malformed_plans_name_the_problem() {
        let err = |text: &str| parse_reassignment_json(text).unwrap_err().to_string();
        assert!(err("{").starts_with("invalid reassignment JSON: not JSON: "), "{}", err("{"));
        assert_eq!(err("[]"), "invalid reassignment JSON: expected a JSON object with \"partitions\"");
        assert_eq!(err(r#"{"version":1}"#), "invalid reassignment JSON: the document has no \"partitions\"");
        assert_eq!(err(r#"{"partitions":[]}"#), "invalid reassignment JSON: it lists no partition");
        assert_eq!(
            err(r#"{"partitions":[{"topic":"t","partition":"0","replicas":[1]}]}"#),
            "invalid reassignment JSON: partitions[0].partition is \"0\", not a 32-bit integer"
        );
        assert_eq!(
            err(r#"{"partitions":[{"topic":"t","replicas":[1]}]}"#),
            "invalid reassignment JSON: partitions[0] has no \"partition\""
        );
        assert_eq!(
            err(
                r#"{"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}"#
            ),
            "invalid reassignment JSON: it contains duplicate topic partitions: [t,0]"
        );
        assert_eq!(
            err(r#"{"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}"#),
            "invalid reassignment JSON: partition replica lists may not contain duplicate entries: [t,0] \
             contains multiple entries for 1"
        );
        assert_eq!(
            err(r#"{"partitions":[{"topic":"t","partition":0,"replicas":[]}]}"#),
            "invalid reassignment JSON: [t,0] has no replica"
        );
    }

    #[test]
    fn topics_to_move() {
        let json = topics_to_move_json(&["foo", "bar"]);
        assert_eq!(json, r#"{"topics":[{"topic":"foo"},{"topic":"bar"}],"version":1}"#);
        assert_eq!(parse_topics_to_move_json(&json).unwrap(), ["foo", "bar"]);
        assert!(parse_topics_to_move_json(r#"{"topics":[]}"#).is_err());
        let err = parse_topics_to_move_json(r#"{"topics":[{"topic":"a"},{"topic":"a"}]}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid topics-to-move JSON: the list of topics to reassign contains duplicate entries: a"
        );
        assert!(parse_topics_to_move_json(r#"{"topics":[{"name":"a"}]}"#).is_err());
    }
}

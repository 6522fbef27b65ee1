//! Topic creation as Kafka 0.8.2's `AdminUtils.createTopic` does it: `/config/topics/T` first,
//! then the assignment at `/brokers/topics/T`; the controller does the rest.

use std::collections::BTreeMap;

use gregor_zk::payloads::{TopicAssignment, TopicConfig};
use gregor_zk::{paths, CreateMode, ZkClient};
use rand::Rng;

use super::placement::assign_replicas;
use super::state::Shared;
use super::Error;

/// Writes a new topic to ZooKeeper. With no explicit `assignment`, replicas are placed over the
/// live brokers as Kafka places them. An existing topic is left alone (`Ok`).
pub(crate) async fn create_topic(
    shared: &Shared,
    zk: &ZkClient,
    name: &str,
    partitions: i32,
    replication_factor: i32,
    assignment: Option<BTreeMap<i32, Vec<i32>>>,
) -> Result<(), Error> {
    create_topic_with_config(shared, zk, name, partitions, replication_factor, assignment, BTreeMap::new()).await
}

/// As [`create_topic`], with per-topic configs (e.g. `max.message.bytes`).
pub(crate) async fn create_topic_with_config(
    shared: &Shared,
    zk: &ZkClient,
    name: &str,
    partitions: i32,
    replication_factor: i32,
    assignment: Option<BTreeMap<i32, Vec<i32>>>,
    config: BTreeMap<String, String>,
) -> Result<(), Error> {
    paths::validate_topic_name(name)?;
    let assignment = match assignment {
        Some(a) => a,
        None => place_replicas(shared, name, partitions, replication_factor)?,
    };
    let topic_config = TopicConfig { version: 1, config };
    zk.set_or_create(&paths::topic_config(name), &topic_config.to_json()).await?;
    let assignment = TopicAssignment { version: 1, partitions: assignment };
    match zk.create_all(&paths::topic(name), &assignment.to_json(), CreateMode::Persistent).await {
        Ok(_) | Err(gregor_zk::Error::NodeExists { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Replicas for a new topic, placed over the live brokers as Kafka places them (a random start
/// and shift).
pub(crate) fn place_replicas(
    shared: &Shared,
    name: &str,
    partitions: i32,
    replication_factor: i32,
) -> Result<BTreeMap<i32, Vec<i32>>, Error> {
    let live: Vec<i32> = {
        let st = shared.state();
        st.brokers.keys().copied().filter(|b| st.is_live(*b)).collect()
    };
    if partitions < 1 {
        return Err(Error::Invalid(format!("topic {name} needs at least one partition, not {partitions}")));
    }
    if replication_factor < 1 || replication_factor as usize > live.len() {
        return Err(Error::Invalid(format!(
            "replication factor {replication_factor} for topic {name} is larger than the {} live brokers",
            live.len()
        )));
    }
    let mut rng = rand::rng();
    let start = rng.random_range(0..live.len());
    let shift = rng.random_range(0..live.len());
    Ok(assign_replicas(&live, partitions, replication_factor, start, shift)
        .into_iter()
        .zip(0..)
        .map(|(r, p)| (p, r))
        .collect())
}

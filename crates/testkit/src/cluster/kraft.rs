//! The modern mode's controller: KRaft-style, without ZooKeeper. The cluster's state is the
//! metadata log; a broker is registered while it runs (a KRaft broker's heartbeats), the
//! controller is the lowest running broker id (a one-voter quorum colocated with it), and topic
//! creation, leader election and leadership moves are applied to the state at once: what a
//! KRaft controller commits and every broker's metadata cache then shows.

use std::collections::{BTreeMap, BTreeSet};

use super::controller::{apply_live, move_leader_in};
use super::state::{new_topic_id, Partition, Shared};
use super::topics::place_replicas;
use super::Error;

/// Why a topic was not created.
#[derive(Debug)]
pub(crate) enum NotCreated {
    /// It exists already.
    Exists,
    /// The name, partition count, replication factor or assignment is not acceptable.
    Invalid(String),
}

/// Creates a topic in the metadata at once: replicas placed over the running brokers as Kafka
/// places them (or as `assignment` says), leaders the first live replica.
pub(crate) fn create_topic(
    shared: &Shared,
    name: &str,
    partitions: i32,
    replication_factor: i32,
    assignment: Option<BTreeMap<i32, Vec<i32>>>,
    config: BTreeMap<String, String>,
) -> Result<(), NotCreated> {
    gregor_zk::paths::validate_topic_name(name).map_err(|e| NotCreated::Invalid(e.to_string()))?;
    if shared.state().topics.contains_key(name) {
        return Err(NotCreated::Exists);
    }
    let assignment = match assignment {
        Some(a) => a,
        None => place_replicas(shared, name, partitions, replication_factor).map_err(|e| match e {
            Error::Invalid(m) => NotCreated::Invalid(m),
            other => NotCreated::Invalid(other.to_string()),
        })?,
    };
    let mut st = shared.state();
    if st.topics.contains_key(name) {
        return Err(NotCreated::Exists);
    }
    let live: Vec<i32> = st.brokers.keys().copied().filter(|b| st.is_live(*b)).collect();
    if let Some((p, bad)) =
        assignment.iter().find_map(|(p, rs)| rs.iter().find(|r| !st.brokers.contains_key(r)).map(|r| (p, *r)))
    {
        return Err(NotCreated::Invalid(format!("partition {p} of {name} names broker {bad}, which does not exist")));
    }
    let topic = st.topics.entry(name.to_owned()).or_default();
    topic.id = new_topic_id();
    topic.config = config;
    for (pid, replicas) in assignment {
        topic.partitions.insert(pid, Partition::new(replicas, &live));
    }
    drop(st);
    shared.notify();
    Ok(())
}

/// The running brokers changed: the lowest running id is the controller; leadership moves off
/// brokers that stopped and returning brokers catch up, as [`apply_live`] does it for the
/// ZooKeeper controller.
pub(crate) fn brokers_changed(shared: &Shared) {
    let mut st = shared.state();
    let running: BTreeSet<i32> = st.brokers.iter().filter(|(_, b)| b.running).map(|(id, _)| *id).collect();
    st.controller = running.first().copied();
    apply_live(&mut st, &shared.config, &running);
    drop(st);
    shared.notify();
}

/// Moves a partition's leadership to `to`, a live in-sync replica.
pub(crate) fn move_leader(shared: &Shared, topic: &str, partition: i32, to: i32) -> Result<(), String> {
    move_leader_in(&mut shared.state(), topic, partition, to)?;
    shared.notify();
    Ok(())
}

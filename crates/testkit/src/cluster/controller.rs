//! The controller: elected through `/controller`, it turns ZooKeeper's topic assignments into
//! partitions with leaders and ISRs, moves leadership off dead brokers, and honours
//! `/admin/reassign_partitions`, `/admin/preferred_replica_election`, `/admin/delete_topics`
//! and `/config/changes`, writing partition state znodes as Kafka 0.8.2 does.

use std::collections::BTreeSet;
use std::time::{Instant, SystemTime};

use gregor_zk::payloads::{
    ControllerRegistration, PartitionState, PreferredReplicaElection, ReassignPartitions, TopicAssignment, TopicConfig,
};
use gregor_zk::{paths, CreateMode, ZkClient};
use tokio::sync::{mpsc, watch};

use super::handlers::BrokerCtx;
use super::state::{Partition, Replica, Shared, State};

pub(crate) fn now_ms() -> i64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Runs for one broker incarnation: competes for `/controller` and acts as controller while it
/// holds it. `admin` is the cluster's own session, used for persistent writes.
pub(crate) async fn run_election(ctx: BrokerCtx, admin: ZkClient, mut shutdown: watch::Receiver<bool>) {
    let Some(own) = ctx.zk.clone() else { return };
    loop {
        let reg = ControllerRegistration { version: 1, brokerid: ctx.id, timestamp: now_ms().to_string() };
        match own.create(paths::CONTROLLER, &reg.to_json(), CreateMode::Ephemeral).await {
            Ok(_) => {
                act_as_controller(&ctx, &admin, &mut shutdown).await;
                return;
            }
            Err(gregor_zk::Error::NodeExists { .. }) => {
                let mut w = own.watch_data(paths::CONTROLLER);
                loop {
                    tokio::select! {
                        item = w.next() => match item {
                            Some(Ok(None)) => break,
                            Some(Ok(Some(_))) => continue,
                            _ => return,
                        },
                        _ = shutdown.changed() => return,
                    }
                }
            }
            Err(e) => {
                tracing::warn!(broker = ctx.id, error = %e, "fake broker could not compete for /controller");
                tokio::select! {
                    _ = tokio::time::sleep(std::time::Duration::from_millis(200)) => {}
                    _ = shutdown.changed() => return,
                }
            }
        }
    }
}

async fn act_as_controller(ctx: &BrokerCtx, zk: &ZkClient, shutdown: &mut watch::Receiver<bool>) {
    let shared = &ctx.shared;
    let epoch = match zk.get(paths::CONTROLLER_EPOCH).await {
        Ok(Some((data, _))) => String::from_utf8_lossy(&data).trim().parse::<i32>().unwrap_or(0) + 1,
        _ => 1,
    };
    if let Err(e) = zk.set_or_create(paths::CONTROLLER_EPOCH, epoch.to_string().as_bytes()).await {
        tracing::warn!(error = %e, "fake controller could not write /controller_epoch");
    }
    {
        let mut st = shared.state();
        st.controller = Some(ctx.id);
        st.controller_epoch = epoch;
    }
    tracing::debug!(broker = ctx.id, epoch, "fake broker is the controller");
    let mut ids = zk.watch_children(paths::BROKER_IDS);
    let mut topics = zk.watch_children(paths::BROKER_TOPICS);
    let mut reassign = zk.watch_data(paths::REASSIGN_PARTITIONS);
    let mut preferred = zk.watch_data(paths::PREFERRED_REPLICA_ELECTION);
    let mut deletes = zk.watch_children(paths::DELETE_TOPICS);
    let mut changes = zk.watch_children(paths::CONFIG_CHANGES);
    let (topic_tx, mut topic_rx) = mpsc::unbounded_channel::<String>();
    let mut watched: BTreeSet<String> = BTreeSet::new();
    let mut topic_watches = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            Some(Ok(list)) = ids.next() => on_brokers(shared, zk, list.unwrap_or_default()).await,
            Some(Ok(list)) = topics.next() => {
                let list = list.unwrap_or_default();
                for t in &list {
                    if watched.insert(t.clone()) {
                        let mut w = zk.watch_data(&paths::topic(t));
                        let tx = topic_tx.clone();
                        let name = t.clone();
                        topic_watches.spawn(async move {
                            while let Some(Ok(_)) = w.next().await {
                                if tx.send(name.clone()).is_err() {
                                    return;
                                }
                            }
                        });
                    }
                }
                on_topics(shared, zk, list).await;
            }
            Some(name) = topic_rx.recv() => on_topics(shared, zk, vec![name]).await,
            Some(Ok(data)) = reassign.next() => if let Some(data) = data { on_reassign(shared, zk, &data).await },
            Some(Ok(data)) = preferred.next() => if let Some(data) = data { on_preferred(shared, zk, &data).await },
            Some(Ok(list)) = deletes.next() => on_delete(shared, zk, list.unwrap_or_default()).await,
            Some(Ok(_)) = changes.next() => on_config_changes(shared, zk).await,
            _ = shutdown.changed() => break,
            else => break,
        }
    }
    let mut st = shared.state();
    if st.controller == Some(ctx.id) {
        st.controller = None;
    }
}

/// Writes a partition's state znode from memory.
pub(crate) async fn write_state(shared: &Shared, zk: &ZkClient, topic: &str, partition: i32) {
    let json = {
        let st = shared.state();
        let Some(p) = st.partition(topic, partition) else { return };
        PartitionState {
            version: 1,
            leader: p.leader,
            leader_epoch: p.leader_epoch,
            controller_epoch: st.controller_epoch,
            isr: p.isr.clone(),
        }
        .to_json()
    };
    if let Err(e) = zk.set_or_create(&paths::partition_state(topic, partition), &json).await {
        tracing::warn!(topic, partition, error = %e, "fake controller could not write partition state");
    }
}

async fn write_states(shared: &Shared, zk: &ZkClient, changed: Vec<(String, i32)>) {
    for (t, p) in changed {
        write_state(shared, zk, &t, p).await;
    }
    shared.notify();
}

/// `/brokers/ids` changed: record who is registered, move leadership off dead brokers, shrink
/// ISRs, elect leaders for partitions that had none, and truncate returning followers.
async fn on_brokers(shared: &Shared, zk: &ZkClient, ids: Vec<String>) {
    let live: BTreeSet<i32> = ids.iter().filter_map(|s| s.parse().ok()).collect();
    let changed = apply_live(&mut shared.state(), &shared.config, &live);
    write_states(shared, zk, changed).await;
}

/// Records `live` as the registered brokers and does what a controller does about it: moves
/// leadership off dead brokers, shrinks ISRs, elects leaders for partitions that had none,
/// truncates returning followers to the high watermark. Returns the partitions that changed.
/// Shared by the ZooKeeper controller and the KRaft-style one of the modern mode.
pub(crate) fn apply_live(
    st: &mut State,
    config: &super::config::BrokerConfig,
    live: &BTreeSet<i32>,
) -> Vec<(String, i32)> {
    let mut returning = Vec::new();
    for (id, slot) in st.brokers.iter_mut() {
        let now_live = live.contains(id);
        if now_live && !slot.registered {
            returning.push(*id);
        }
        slot.registered = now_live;
    }
    let unclean = config.unclean_leader_election_enable;
    let mut changed = Vec::new();
    let State { topics, brokers, unclean_elections, .. } = st;
    let is_live = |b: &i32| brokers.get(b).is_some_and(|s| s.registered);
    for (name, topic) in topics.iter_mut() {
        for (&pid, p) in topic.partitions.iter_mut() {
            for r in &returning {
                if p.leader != *r {
                    if let Some(rep) = p.logs.get_mut(r) {
                        rep.log.truncate_to(p.hw);
                    }
                }
            }
            let before = p.leader;
            let live_isr = p.isr.iter().any(&is_live);
            if elect(p, &is_live, unclean) {
                if p.leader != before && !live_isr {
                    *unclean_elections += 1;
                }
                changed.push((name.clone(), pid));
            }
        }
    }
    changed
}

/// After a leader change: every other replica, live or not, drops what its log holds beyond the
/// high watermark (beyond the new leader's log end, after an unclean election, which also
/// lowers the high watermark to it), and fetches the rest from the new leader. As a 0.8.2
/// broker made follower truncates to its high-watermark checkpoint: without it, a follower
/// (or the old leader, once back) kept records the old leader had appended but not committed,
/// at offsets where the new leader then appended others; at the same log end it counted as
/// caught up, and an acks=-1 write was acknowledged while a replica held other records there.
pub(crate) fn follow_new_leader(p: &mut Partition) {
    let Some(leader_leo) = p.logs.get(&p.leader).map(|r| r.log.leo()) else { return };
    let cut = p.hw.min(leader_leo);
    p.hw = cut;
    let leader = p.leader;
    for (id, rep) in p.logs.iter_mut() {
        if *id != leader && rep.log.leo() > cut {
            rep.log.truncate_to(cut);
        }
    }
}

/// Elects a leader if the current one is not live, and drops dead replicas from the ISR.
/// Returns whether the partition changed.
fn elect(p: &mut Partition, is_live: &impl Fn(&i32) -> bool, unclean: bool) -> bool {
    let live_isr: Vec<i32> = p.isr.iter().copied().filter(|r| is_live(r)).collect();
    if !is_live(&p.leader) {
        let leader = live_isr
            .first()
            .copied()
            .or_else(|| unclean.then(|| p.replicas.iter().copied().find(|r| is_live(r))).flatten());
        let Some(leader) = leader else { return false };
        p.leader = leader;
        p.isr = if live_isr.is_empty() { vec![leader] } else { live_isr };
        p.leader_epoch += 1;
        follow_new_leader(p);
        return true;
    }
    if live_isr.len() != p.isr.len() {
        p.isr = live_isr;
        p.leader_epoch += 1;
        return true;
    }
    false
}

/// `/brokers/topics` (or one topic's assignment) changed: create new topics and partitions,
/// forget deleted topics.
async fn on_topics(shared: &Shared, zk: &ZkClient, names: Vec<String>) {
    let mut full_list = false;
    let mut present = BTreeSet::new();
    for name in &names {
        present.insert(name.clone());
    }
    if let Ok(Some(all)) = zk.children(paths::BROKER_TOPICS).await {
        full_list = true;
        present = all.into_iter().collect();
    }
    let mut created = Vec::new();
    for name in &names {
        let Ok(Some((data, _))) = zk.get(&paths::topic(name)).await else { continue };
        let Ok(assignment) = TopicAssignment::from_json(&data) else {
            tracing::warn!(topic = %name, "fake controller ignores a topic with a malformed assignment");
            continue;
        };
        let config = match zk.get(&paths::topic_config(name)).await {
            Ok(Some((data, _))) => TopicConfig::from_json(&data).map(|c| c.config).unwrap_or_default(),
            _ => Default::default(),
        };
        let mut st = shared.state();
        let live: Vec<i32> = st.brokers.keys().copied().filter(|b| st.is_live(*b)).collect();
        let topic = st.topics.entry(name.clone()).or_default();
        if topic.id.is_zero() {
            topic.id = super::state::new_topic_id();
        }
        topic.config = config;
        for (pid, replicas) in assignment.partitions {
            if topic.partitions.contains_key(&pid) {
                continue;
            }
            topic.partitions.insert(pid, Partition::new(replicas, &live));
            created.push((name.clone(), pid));
        }
    }
    if full_list {
        let mut st = shared.state();
        st.topics.retain(|name, _| present.contains(name));
    }
    write_states(shared, zk, created).await;
}

async fn on_reassign(shared: &Shared, zk: &ZkClient, data: &[u8]) {
    let Ok(plan) = ReassignPartitions::from_json(data) else {
        tracing::warn!("fake controller ignores a malformed /admin/reassign_partitions");
        return;
    };
    let mut changed = Vec::new();
    let mut touched_topics = BTreeSet::new();
    {
        let mut st = shared.state();
        let live: Vec<i32> = st.brokers.keys().copied().filter(|b| st.is_live(*b)).collect();
        for item in &plan.partitions {
            let Some(p) = st.partition_mut(&item.topic, item.partition) else { continue };
            let leader_copy = p.logs.get(&p.leader).and_then(|r| r.log.entries_from(0));
            for r in &item.replicas {
                if !p.logs.contains_key(r) {
                    let mut rep = Replica::new();
                    if let Some((bytes, entries, leo)) = &leader_copy {
                        rep.log.append_replicated(bytes, entries, *leo);
                    }
                    rep.caught_up_at = Instant::now();
                    p.logs.insert(*r, rep);
                }
            }
            p.logs.retain(|r, _| item.replicas.contains(r));
            p.replicas = item.replicas.clone();
            p.isr = item.replicas.iter().copied().filter(|r| live.contains(r)).collect();
            if !p.replicas.contains(&p.leader) || !live.contains(&p.leader) {
                p.leader = p.isr.first().copied().unwrap_or(-1);
                follow_new_leader(p);
            }
            p.leader_epoch += 1;
            changed.push((item.topic.clone(), item.partition));
            touched_topics.insert(item.topic.clone());
        }
    }
    for t in touched_topics {
        let json = {
            let st = shared.state();
            let Some(topic) = st.topics.get(&t) else { continue };
            TopicAssignment {
                version: 1,
                partitions: topic.partitions.iter().map(|(id, p)| (*id, p.replicas.clone())).collect(),
            }
            .to_json()
        };
        if let Err(e) = zk.set(&paths::topic(&t), &json, None).await {
            tracing::warn!(topic = %t, error = %e, "fake controller could not rewrite an assignment");
        }
    }
    write_states(shared, zk, changed).await;
    let _ = zk.delete(paths::REASSIGN_PARTITIONS, None).await;
}

async fn on_preferred(shared: &Shared, zk: &ZkClient, data: &[u8]) {
    let Ok(plan) = PreferredReplicaElection::from_json(data) else {
        tracing::warn!("fake controller ignores a malformed /admin/preferred_replica_election");
        return;
    };
    let mut changed = Vec::new();
    {
        let mut st = shared.state();
        let live: Vec<i32> = st.brokers.keys().copied().filter(|b| st.is_live(*b)).collect();
        for item in &plan.partitions {
            let Some(p) = st.partition_mut(&item.topic, item.partition) else { continue };
            let Some(&preferred) = p.replicas.first() else { continue };
            if p.leader != preferred && live.contains(&preferred) && p.isr.contains(&preferred) {
                p.leader = preferred;
                p.leader_epoch += 1;
                follow_new_leader(p);
                changed.push((item.topic.clone(), item.partition));
            }
        }
    }
    write_states(shared, zk, changed).await;
    let _ = zk.delete(paths::PREFERRED_REPLICA_ELECTION, None).await;
}

async fn on_delete(shared: &Shared, zk: &ZkClient, topics: Vec<String>) {
    if !shared.config.delete_topic_enable {
        return;
    }
    for t in topics {
        // its logs are freed after the lock is let go (a topic of a few million messages is a
        // gigabyte or more to free, and every produce and fetch of the cluster takes the lock)
        let removed = shared.state().topics.remove(&t);
        drop(removed);
        for path in [paths::topic(&t), paths::topic_config(&t), paths::delete_topic(&t)] {
            if let Err(e) = zk.delete_all(&path).await {
                tracing::warn!(topic = %t, error = %e, "fake controller could not delete a topic's znodes");
            }
        }
    }
    shared.notify();
}

async fn on_config_changes(shared: &Shared, zk: &ZkClient) {
    let names: Vec<String> = shared.state().topics.keys().cloned().collect();
    for name in names {
        if let Ok(Some((data, _))) = zk.get(&paths::topic_config(&name)).await {
            if let Ok(c) = TopicConfig::from_json(&data) {
                if let Some(t) = shared.state().topics.get_mut(&name) {
                    t.config = c.config;
                }
            }
        }
    }
}

/// Moves a partition's leadership to `to` (a replica in the ISR), as a preferred-replica
/// election would.
pub(crate) async fn move_leader(
    shared: &Shared,
    zk: &ZkClient,
    topic: &str,
    partition: i32,
    to: i32,
) -> Result<(), String> {
    if move_leader_in(&mut shared.state(), topic, partition, to)? {
        write_states(shared, zk, vec![(topic.to_owned(), partition)]).await;
    }
    Ok(())
}

/// The state change of [`move_leader`]; returns whether the leader moved.
pub(crate) fn move_leader_in(st: &mut State, topic: &str, partition: i32, to: i32) -> Result<bool, String> {
    let live = st.is_live(to);
    let p = st.partition_mut(topic, partition).ok_or_else(|| format!("no partition {topic}/{partition}"))?;
    if !p.isr.contains(&to) || !live {
        return Err(format!("broker {to} is not a live in-sync replica of {topic}/{partition} (isr {:?})", p.isr));
    }
    if p.leader == to {
        return Ok(false);
    }
    p.leader = to;
    p.leader_epoch += 1;
    follow_new_leader(p);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use gregor_protocol::{Compression, Message, MessageSet};

    use super::*;
    use crate::cluster::log::validate_and_assign;
    use crate::cluster::replicator;

    fn append(p: &mut Partition, on: i32, values: &[&str]) {
        let messages = values.iter().map(|v| Message::new(None, Some(v.as_bytes().to_vec().into())));
        let set = MessageSet::from_messages(messages, Compression::None).unwrap();
        let log = &mut p.logs.get_mut(&on).unwrap().log;
        let set = validate_and_assign(&set, log.leo(), 1 << 20).unwrap();
        log.append(&set);
    }

    fn values(p: &Partition, of: i32) -> Vec<String> {
        let log = &p.logs[&of].log;
        let set = MessageSet::from_bytes(log.read(0, 1 << 20, log.leo()));
        let read = set.decode(&Default::default()).unwrap().messages;
        read.iter().map(|m| String::from_utf8(m.message.value.clone().unwrap().to_vec()).unwrap()).collect()
    }

    /// Records the old leader appended but did not commit are dropped by every other replica
    /// when a new leader takes over, so the new leader's records at those offsets reach them.
    #[test]
    fn a_new_leaders_followers_drop_what_was_not_committed() {
        let mut p = Partition::new(vec![1, 2, 3], &[1, 2, 3]);
        let now = Instant::now();
        append(&mut p, 1, &["a", "b"]);
        for f in [2, 3] {
            replicator::fetch(&mut p, f, 2, now);
        }
        p.hw = 2;
        // 3 copies the old leader's next two, 2 does not: not committed
        append(&mut p, 1, &["x", "y"]);
        replicator::fetch(&mut p, 3, 4, now);
        p.leader = 2;
        follow_new_leader(&mut p);
        assert_eq!((p.logs[&1].log.leo(), p.logs[&3].log.leo(), p.hw), (2, 2, 2));
        append(&mut p, 2, &["p", "q"]);
        for f in [1, 3] {
            replicator::fetch(&mut p, f, 4, now);
        }
        for r in [1, 2, 3] {
            assert_eq!(values(&p, r), ["a", "b", "p", "q"], "replica {r}");
        }
        // an unclean leader (a replica behind the high watermark) lowers it to its log end
        p.logs.get_mut(&1).unwrap().log.truncate_to(1);
        p.leader = 1;
        follow_new_leader(&mut p);
        assert_eq!((p.hw, p.logs[&2].log.leo(), p.logs[&3].log.leo()), (1, 1, 1));
    }
}

//! Followers fetching from leaders, the ISR and the high watermark.
//!
//! Every few milliseconds (and on every append) each live, unpaused follower copies what its
//! leader has beyond its own log end; a follower that has not caught up for
//! `replica.lag.time.max.ms` leaves the ISR, one that has caught up rejoins it; the high
//! watermark is the smallest log end in the ISR. ISR changes are written to the partition's
//! state znode, as a 0.8.2 leader does.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};

use super::state::{Partition, Shared, State};

/// How often followers fetch when nothing is appended.
const TICK: Duration = Duration::from_millis(5);

pub(crate) async fn run(
    shared: Arc<Shared>,
    isr_changes: mpsc::UnboundedSender<(String, i32)>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let notified = shared.changed.notified();
        tokio::select! {
            _ = tokio::time::sleep(TICK) => {}
            _ = notified => {}
            _ = shutdown.changed() => return,
        }
        let (progress, changed) = step(&mut shared.state(), shared.config.replica_lag_time_max);
        if progress {
            shared.notify();
        }
        for tp in changed {
            let _ = isr_changes.send(tp);
        }
    }
}

/// What the in-sync followers of `topic`/`partition` would fetch at once after an append to
/// it, done now: each serving follower in the ISR copies what its leader has beyond its own
/// log end, and the high watermark moves. ISR membership is left to [`step`] (a follower
/// that is not serving copies nothing here and keeps the high watermark where it is until
/// it leaves the ISR). True when the high watermark moved.
///
/// The produce handler calls it for acks=-1 writes, so that one waits for the followers'
/// copy without two task hand-offs (to the replicator task and back), which on a busy
/// machine dominated its response time. A 0.8.2 follower's fetch, parked at the leader's
/// log end, returns at once on an append too.
pub(crate) fn replicate_now(st: &mut State, topic: &str, partition: i32) -> bool {
    let now = Instant::now();
    let serving: Vec<i32> = st.brokers.iter().filter(|(_, b)| b.running && !b.paused).map(|(id, _)| *id).collect();
    let Some(p) = st.partition_mut(topic, partition) else { return false };
    if !serving.contains(&p.leader) {
        return false;
    }
    let leader = p.leader;
    let Some(leader_leo) = p.logs.get(&leader).map(|r| r.log.leo()) else { return false };
    for f in p.isr.clone() {
        if f != leader && serving.contains(&f) {
            fetch(p, f, leader_leo, now);
        }
    }
    raise_hw(p)
}

/// Follower `f` of `p` fetches from its leader (whose log ends at `leader_leo`): copies what
/// the leader has beyond its own log end, or truncates to the leader's; and is caught up
/// when level with it.
pub(crate) fn fetch(p: &mut Partition, f: i32, leader_leo: i64, now: Instant) {
    let follower_leo = p.logs.get(&f).map_or(0, |r| r.log.leo());
    if follower_leo < leader_leo {
        let copied = p.logs.get(&p.leader).and_then(|r| r.log.entries_from(follower_leo));
        if let (Some((bytes, entries, leo)), Some(fr)) = (copied, p.logs.get_mut(&f)) {
            fr.log.append_replicated(&bytes, &entries, leo);
        }
    } else if follower_leo > leader_leo {
        if let Some(fr) = p.logs.get_mut(&f) {
            fr.log.truncate_to(leader_leo);
        }
    }
    if let Some(fr) = p.logs.get_mut(&f) {
        if fr.log.leo() == leader_leo {
            fr.caught_up_at = now;
        }
    }
}

/// The high watermark becomes the smallest log end in the ISR, if that is higher; true when
/// it moved.
fn raise_hw(p: &mut Partition) -> bool {
    let hw = p.isr.iter().filter_map(|r| p.logs.get(r)).map(|r| r.log.leo()).min().unwrap_or(p.hw);
    if hw > p.hw {
        p.hw = hw;
        return true;
    }
    false
}

/// One round of replication. Returns whether any high watermark moved and the partitions
/// whose ISR changed.
pub(crate) fn step(st: &mut State, lag_max: Duration) -> (bool, Vec<(String, i32)>) {
    let now = Instant::now();
    let mut progress = false;
    let mut isr_changed = Vec::new();
    let serving: Vec<i32> = st.brokers.iter().filter(|(_, b)| b.running && !b.paused).map(|(id, _)| *id).collect();
    let live: Vec<i32> = st.brokers.keys().copied().filter(|b| st.is_live(*b)).collect();
    for (name, topic) in st.topics.iter_mut() {
        for (&pid, p) in topic.partitions.iter_mut() {
            let leader = p.leader;
            if !serving.contains(&leader) {
                continue;
            }
            let Some(leader_leo) = p.logs.get(&leader).map(|r| r.log.leo()) else { continue };
            for f in p.replicas.clone() {
                if f != leader && serving.contains(&f) {
                    fetch(p, f, leader_leo, now);
                }
            }
            let before = p.isr.clone();
            let logs = &p.logs;
            p.isr
                .retain(|r| *r == leader || logs.get(r).is_some_and(|x| now.duration_since(x.caught_up_at) <= lag_max));
            for r in p.replicas.clone() {
                // back in only a follower that fetches (serving: running and not paused) and is
                // registered, once caught up: a paused follower stays out, as one that stopped
                // fetching for replica.lag.time.max.ms does in 0.8.2
                let fetching = serving.contains(&r) && live.contains(&r);
                if !p.isr.contains(&r) && fetching && p.logs.get(&r).is_some_and(|x| x.log.leo() == leader_leo) {
                    p.isr.push(r);
                }
            }
            if p.isr != before {
                isr_changed.push((name.clone(), pid));
            }
            if raise_hw(p) {
                progress = true;
            }
        }
    }
    (progress, isr_changed)
}

//! The FakeCluster against the real ZooKeeper, through the wire protocol only.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::*;
use gregor_protocol::frame::ApiKey;
use gregor_protocol::messages::*;
use gregor_protocol::{Compression, ErrorCode};
use gregor_testkit::fault::{Fault, Rule};
use gregor_testkit::FakeCluster;
use gregor_zk::paths;
use gregor_zk::payloads::{BrokerRegistration, ControllerRegistration, PartitionState, TopicAssignment, TopicConfig};

/// The data of a znode the controller writes just after its in-memory change.
async fn wait_for_znode(zk: &gregor_zk::ZkClient, path: &str) -> Vec<u8> {
    eventually(format!("{path} to appear"), Duration::from_secs(10), async || {
        zk.get(path).await.unwrap().map(|(data, _)| data)
    })
    .await
}

/// The partition's state znode once it satisfies `ready`.
async fn wait_for_state(
    zk: &gregor_zk::ZkClient,
    topic: &str,
    partition: i32,
    ready: impl Fn(&PartitionState) -> bool,
) -> PartitionState {
    eventually(format!("the state of {topic}/{partition}"), Duration::from_secs(10), async || {
        match zk.get(&paths::partition_state(topic, partition)).await.unwrap() {
            None => Err("no state znode".to_owned()),
            Some((data, _)) => {
                let state = PartitionState::from_json(&data).unwrap();
                if ready(&state) {
                    Ok(state)
                } else {
                    Err(format!("{state:?}"))
                }
            }
        }
    })
    .await
}

macro_rules! cluster_or_skip {
    ($name:expr, $n:expr) => {
        match cluster($name, $n).await {
            Some(c) => c,
            None => return,
        }
    };
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brokers_register_and_elect_a_controller_as_kafka_writes_it() {
    let c = cluster_or_skip!("registration", 3);
    let zk = c.zk();
    let mut ids = zk.children(paths::BROKER_IDS).await.unwrap().unwrap();
    ids.sort();
    assert_eq!(ids, ["0", "1", "2"]);
    for (id, addr) in c.broker_addrs() {
        let (data, stat) = zk.get(&paths::broker(id)).await.unwrap().unwrap();
        assert!(stat.ephemeral_owner != 0, "/brokers/ids/{id} is ephemeral");
        let reg = BrokerRegistration::from_json(&data).unwrap();
        assert_eq!(
            (reg.version, reg.host.as_str(), reg.port, reg.jmx_port),
            (1, "127.0.0.1", i32::from(addr.port()), -1)
        );
        let text = String::from_utf8(data).unwrap();
        assert!(text.starts_with(r#"{"version":1,"host":"127.0.0.1","port":"#), "{text}");
        assert!(reg.timestamp.parse::<i64>().unwrap() > 1_600_000_000_000, "timestamp is a decimal ms string: {text}");
    }
    let (data, stat) = zk.get(paths::CONTROLLER).await.unwrap().unwrap();
    assert!(stat.ephemeral_owner != 0);
    let ctl = ControllerRegistration::from_json(&data).unwrap();
    assert_eq!(Some(ctl.brokerid), c.controller());
    let (epoch, _) = zk.get(paths::CONTROLLER_EPOCH).await.unwrap().unwrap();
    assert_eq!(String::from_utf8(epoch).unwrap(), "1");
    for path in
        [paths::CONSUMERS, paths::BROKER_TOPICS, paths::CONFIG_CHANGES, paths::CONFIG_TOPICS, paths::DELETE_TOPICS]
    {
        assert!(zk.exists(path).await.unwrap().is_some(), "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_written_to_zookeeper_gets_leaders_isr_and_state_znodes() {
    let c = cluster_or_skip!("topic-from-zk", 3);
    let zk = c.zk();
    // as Kafka's kafka-topics.sh --replica-assignment 0:1,1:2,2:0 writes it
    zk.set_or_create(&paths::topic_config("t"), &TopicConfig { version: 1, config: BTreeMap::new() }.to_json())
        .await
        .unwrap();
    let assignment =
        TopicAssignment { version: 1, partitions: BTreeMap::from([(0, vec![0, 1]), (1, vec![1, 2]), (2, vec![2, 0])]) };
    zk.create_all(&paths::topic("t"), &assignment.to_json(), gregor_zk::CreateMode::Persistent).await.unwrap();
    c.wait_for_leaders("t", Duration::from_secs(10)).await.unwrap();
    for (p, replicas) in &assignment.partitions {
        let data = wait_for_znode(zk, &paths::partition_state("t", *p)).await;
        let state = PartitionState::from_json(&data).unwrap();
        assert_eq!(state.leader, replicas[0], "preferred replica leads t/{p}");
        assert_eq!(state.isr, *replicas);
        assert_eq!(state.version, 1);
        assert_eq!(state.leader_epoch, 0);
        assert!(state.controller_epoch >= 1);
    }
    let mut conn = Conn::open(c.broker_addr(2).unwrap()).await;
    let md = conn.call(0, &metadata(&["t"])).await;
    assert_eq!(md.brokers.iter().map(|b| b.node_id).collect::<Vec<_>>(), [0, 1, 2]);
    let t = &md.topics[0];
    assert_eq!((t.error_code, t.name(), t.partitions.len()), (0, "t", 3));
    for p in &t.partitions {
        assert_eq!(p.replicas, assignment.partitions[&p.partition]);
        assert_eq!(p.leader, p.replicas[0]);
        assert_eq!(p.isr, p.replicas);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produce_and_fetch_with_every_codec_get_absolute_offsets() {
    let c = cluster_or_skip!("produce-fetch", 3);
    c.create_topic("p", 1, 2).await.unwrap();
    let leader = c.leader("p", 0).unwrap();
    let mut conn = Conn::open(c.broker_addr(leader).unwrap()).await;
    let mut next = 0;
    for codec in [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4] {
        let msgs = (0..3).map(|i| msg(Some(&format!("k{i}")), &format!("{codec}-{i}"))).collect();
        let r = conn.call(0, &produce("p", 0, -1, msgs, codec)).await;
        let part = &r.topics[0].partitions[0];
        assert_eq!((part.error_code, part.offset), (0, next), "{codec}");
        next += 3;
    }
    let values = read_values(&c, "p", 0, 4).await;
    assert_eq!(values.iter().map(|v| v.0).collect::<Vec<_>>(), (4..12).collect::<Vec<_>>());
    assert_eq!(values[0].1, "gzip-1");
    assert_eq!(values[7].1, "lz4-2");
    // a fetch in the middle of a wrapper returns the whole wrapper; the codec drops below 4
    let r = conn.call(0, &fetch("p", 0, 4, 0)).await;
    let top: Vec<_> = r.topics[0].partitions[0].message_set.entries().map(|e| e.unwrap().offset).collect();
    assert_eq!(top, [5, 8, 11], "wrappers carry their last inner offset");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_answers_match_kafka_0_8_2() {
    let c = cluster_or_skip!("errors", 3);
    let mut a = BTreeMap::new();
    a.insert(0, vec![0, 1]);
    c.create_topic_with("plain", a, BTreeMap::from([("max.message.bytes".to_owned(), "1024".to_owned())]))
        .await
        .unwrap();
    let mut b0 = Conn::open(c.broker_addr(0).unwrap()).await;
    let mut b1 = Conn::open(c.broker_addr(1).unwrap()).await;
    let mut b2 = Conn::open(c.broker_addr(2).unwrap()).await;
    let code = |r: &ProduceResponse| (r.topics[0].partitions[0].error_code, r.topics[0].partitions[0].offset);
    assert_eq!(
        code(&b1.call(0, &produce("plain", 0, 1, vec![msg(None, "x")], Compression::None)).await),
        (6, -1),
        "follower"
    );
    assert_eq!(
        code(&b2.call(0, &produce("plain", 0, 1, vec![msg(None, "x")], Compression::None)).await),
        (3, -1),
        "no replica"
    );
    assert_eq!(
        code(&b0.call(0, &produce("plain", 7, 1, vec![msg(None, "x")], Compression::None)).await),
        (3, -1),
        "no partition"
    );
    assert_eq!(
        code(&b0.call(0, &produce("nope", 0, 1, vec![msg(None, "x")], Compression::None)).await),
        (3, -1),
        "no topic"
    );
    let big = "x".repeat(2000);
    assert_eq!(
        code(&b0.call(0, &produce("plain", 0, 1, vec![msg(None, &big)], Compression::None)).await),
        (10, -1),
        "too large"
    );
    let f = b0.call(0, &fetch("plain", 0, 100, 0)).await;
    let p = &f.topics[0].partitions[0];
    assert_eq!((p.error_code, p.high_watermark, p.message_set.len()), (1, -1, 0), "out of range");
    let f = b1.call(0, &fetch("plain", 0, 0, 0)).await;
    assert_eq!(f.topics[0].partitions[0].error_code, 6);
    let o = b1
        .call(
            0,
            &OffsetsRequest {
                replica_id: -1,
                topics: vec![OffsetsTopic::new(
                    "plain",
                    vec![OffsetsPartition { partition: 0, time: -1, max_number_of_offsets: 1, ..Default::default() }],
                )],
                ..Default::default()
            },
        )
        .await;
    assert_eq!((o.topics[0].partitions[0].error_code, o.topics[0].partitions[0].offsets.len()), (6, 0));
    // acks=0 to a follower: no answer, the connection is closed
    b1.send(0, &produce("plain", 0, 0, vec![msg(None, "to-follower")], Compression::None)).await;
    assert!(b1.recv_frame(Duration::from_secs(5)).await.is_none(), "the broker closes the connection");
    // acks=0 success: nothing comes back, the next request is answered
    b0.send(0, &produce("plain", 0, 0, vec![msg(None, "fire")], Compression::None)).await;
    let md = b0.call(0, &metadata(&["plain"])).await;
    assert_eq!(md.topics[0].name(), "plain");
    // a bad CRC is 2
    let mut set = gregor_protocol::MessageSet::from_messages(vec![msg(Some("k"), "bad-crc")], Compression::None)
        .unwrap()
        .into_bytes()
        .to_vec();
    set[12] ^= 0xff;
    let bad = ProduceRequest {
        required_acks: 1,
        timeout: 1000,
        topics: vec![ProduceTopic::new(
            "plain",
            vec![ProducePartition {
                partition: 0,
                message_set: gregor_protocol::MessageSet::from_bytes(set.into()),
                ..Default::default()
            }],
        )],
        ..Default::default()
    };
    assert_eq!(code(&b0.call(0, &bad).await), (2, -1));
    // producing to the offsets topic is 17
    assert_eq!(
        code(&b0.call(0, &produce("__consumer_offsets", 0, 1, vec![msg(None, "x")], Compression::None)).await),
        (17, -1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_creation_answers_leader_not_available_first() {
    let c = cluster_or_skip!("auto-create", 3);
    let mut conn = Conn::open(c.broker_addr(0).unwrap()).await;
    let first = conn.call(0, &metadata(&["auto"])).await;
    assert_eq!((first.topics[0].error_code, first.topics[0].partitions.len()), (5, 0));
    c.wait_for_leaders("auto", Duration::from_secs(10)).await.unwrap();
    let ready = conn.call(0, &metadata(&["auto"])).await;
    assert_eq!(ready.topics[0].error_code, 0);
    assert_eq!(ready.topics[0].partitions.len(), 1);
    assert_eq!(ready.topics[0].partitions[0].replicas.len(), 1);
    let bad = conn.call(0, &metadata(&["bad name!"])).await;
    assert_eq!(bad.topics[0].error_code, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_answers_latest_earliest_and_times() {
    let c = cluster_or_skip!("offsets", 1);
    c.create_topic("o", 1, 1).await.unwrap();
    let mut conn = Conn::open(c.broker_addr(0).unwrap()).await;
    let ask = |time, max| OffsetsRequest {
        topics: vec![OffsetsTopic::new(
            "o",
            vec![OffsetsPartition { partition: 0, time, max_number_of_offsets: max, ..Default::default() }],
        )],
        ..Default::default()
    };
    assert_eq!(conn.call(0, &ask(-1, 10)).await.topics[0].partitions[0].offsets, [0]);
    conn.call(0, &produce("o", 0, 1, (0..6).map(|i| msg(None, &i.to_string())).collect(), Compression::None)).await;
    assert_eq!(conn.call(0, &ask(-1, 1)).await.topics[0].partitions[0].offsets, [6]);
    assert_eq!(conn.call(0, &ask(-1, 10)).await.topics[0].partitions[0].offsets, [6, 0]);
    assert_eq!(conn.call(0, &ask(-2, 1)).await.topics[0].partitions[0].offsets, [0]);
    assert!(conn.call(0, &ask(1000, 10)).await.topics[0].partitions[0].offsets.is_empty());
    assert_eq!(conn.call(0, &ask(4_102_444_800_000, 10)).await.topics[0].partitions[0].offsets, [6, 0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_long_polls_until_max_wait_or_data() {
    let c = cluster_or_skip!("long-poll", 1);
    c.create_topic("lp", 1, 1).await.unwrap();
    let addr = c.broker_addr(0).unwrap();
    let mut conn = Conn::open(addr).await;
    // held for max_wait (2 s) without data; max_wait 0 is answered without holding (well under
    // the 2 s, with room for a loaded machine)
    let t = Instant::now();
    let r = conn.call(0, &fetch("lp", 0, 0, 2000)).await;
    let waited = t.elapsed();
    assert!(waited >= Duration::from_millis(1980) && waited < Duration::from_secs(10), "{waited:?}");
    assert_eq!((r.topics[0].partitions[0].error_code, r.topics[0].partitions[0].message_set.len()), (0, 0));
    let t = Instant::now();
    conn.call(0, &fetch("lp", 0, 0, 0)).await;
    assert!(t.elapsed() < Duration::from_secs(1), "max_wait 0 was held {:?}", t.elapsed());
    // a parked fetch (10 s) is answered as soon as data arrives: the data is produced once the
    // broker holds the fetch
    let waiter = tokio::spawn(async move {
        let mut c2 = Conn::open(addr).await;
        let t = Instant::now();
        let r = c2.call(0, &fetch("lp", 0, 0, 10_000)).await;
        (t.elapsed(), r.topics[0].partitions[0].message_set.len())
    });
    eventually("the broker to hold the 10 s fetch", Duration::from_secs(10), async || {
        c.requests().iter().any(|r| matches!(&r.request, AnyRequest::Fetch(f) if f.max_wait_time == 10_000))
    })
    .await;
    conn.call(0, &produce("lp", 0, 1, vec![msg(None, "wake")], Compression::None)).await;
    let (waited, len) = waiter.await.unwrap();
    assert!(len > 0);
    assert!(waited < Duration::from_secs(5), "answered after {waited:?}, not when the data came");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_all_waits_for_the_isr_and_a_killed_leader_moves_without_losing_acked_messages() {
    // a session timeout far beyond the time a clean kill takes to move leadership
    let Some(c) = gregor_testkit::support::cluster("acks-all-failover")
        .quick()
        .configure(|b| b.zookeeper_session_timeout = Duration::from_secs(20))
        .start()
        .await
    else {
        return;
    };
    c.create_topic("f", 1, 3).await.unwrap();
    let (leader, replicas, isr) = c.partition_info("f", 0).unwrap();
    assert_eq!(isr.len(), 3);
    let mut conn = Conn::open(c.broker_addr(leader).unwrap()).await;
    for i in 0..20 {
        let r = conn.call(0, &produce("f", 0, -1, vec![msg(None, &format!("m{i}"))], Compression::None)).await;
        assert_eq!((r.topics[0].partitions[0].error_code, r.topics[0].partitions[0].offset), (0, i));
    }
    assert_eq!(c.offsets("f", 0).unwrap(), (20, 20), "acks=-1 answered only once the high watermark covered it");
    let killed_at = Instant::now();
    c.kill_broker(leader).await.unwrap();
    let new_leader =
        eventually("a new leader of f/0", Duration::from_secs(15), async || c.leader("f", 0).filter(|l| *l != leader))
            .await;
    assert!(replicas.contains(&new_leader));
    // a clean kill deregisters at once: no waiting for the 20 s session timeout
    assert!(killed_at.elapsed() < Duration::from_secs(15), "leadership moved after {:?}", killed_at.elapsed());
    let (_, _, isr) = c.partition_info("f", 0).unwrap();
    assert!(!isr.contains(&leader), "the dead broker left the ISR: {isr:?}");
    let state = wait_for_state(c.zk(), "f", 0, |s| s.leader == new_leader).await;
    assert_eq!((state.leader, state.leader_epoch), (new_leader, 1));
    assert!(!state.isr.contains(&leader));
    let values = read_values(&c, "f", 0, 0).await;
    assert_eq!(values.len(), 20, "every acknowledged message survived");
    // metadata from a live broker: the dead one is gone from the broker list and the replicas
    let mut conn = Conn::open(c.broker_addr(new_leader).unwrap()).await;
    let md = conn.call(0, &metadata(&["f"])).await;
    assert!(!md.brokers.iter().any(|b| b.node_id == leader));
    let p = &md.topics[0].partitions[0];
    assert_eq!(p.error_code, 9, "a replica is down: ReplicaNotAvailable with a valid leader");
    assert_eq!(p.leader, new_leader);
    // the broker comes back, catches up and rejoins the ISR
    c.restart_broker(leader).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !c.partition_info("f", 0).unwrap().2.contains(&leader) {
        assert!(Instant::now() < deadline, "the restarted broker never rejoined the ISR");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_follower_leaves_the_isr_and_acks_all_times_out_while_it_is_in() {
    // the acks=-1 produce must come while the paused follower is still in the ISR: a replica lag
    // of 5 s leaves a loaded machine room for it
    let Some(c) = gregor_testkit::support::cluster("isr-shrink")
        .brokers(2)
        .quick()
        .configure(|b| b.replica_lag_time_max = Duration::from_secs(5))
        .start()
        .await
    else {
        return;
    };
    c.create_topic("s", 1, 2).await.unwrap();
    let (leader, replicas, _) = c.partition_info("s", 0).unwrap();
    let follower = *replicas.iter().find(|r| **r != leader).unwrap();
    c.pause_broker(follower);
    let mut conn = Conn::open(c.broker_addr(leader).unwrap()).await;
    let mut req = produce("s", 0, -1, vec![msg(None, "while-paused")], Compression::None);
    req.timeout = 300;
    let r = conn.call(0, &req).await;
    assert_eq!(
        (r.topics[0].partitions[0].error_code, r.topics[0].partitions[0].offset),
        (7, 0),
        "timed out, offset filled in"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while c.partition_info("s", 0).unwrap().2.contains(&follower) {
        assert!(Instant::now() < deadline, "the follower never left the ISR");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let state = wait_for_state(c.zk(), "s", 0, |s| s.isr.len() == 1).await;
    assert_eq!(state.isr, vec![leader], "the leader wrote the shrunk ISR");
    let r = conn.call(0, &produce("s", 0, -1, vec![msg(None, "after-shrink")], Compression::None)).await;
    assert_eq!((r.topics[0].partitions[0].error_code, r.topics[0].partitions[0].offset), (0, 1));
    c.resume_broker(follower);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !c.partition_info("s", 0).unwrap().2.contains(&follower) {
        assert!(Instant::now() < deadline, "the follower never rejoined");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Regression: a paused follower of an idle partition (its log end equal to the leader's) was
/// put back in the ISR on every replication round, so the ISR never shrank. It must leave after
/// replica.lag.time.max.ms and stay out while paused, as a follower that stops fetching does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_follower_of_an_idle_partition_leaves_the_isr_and_stays_out() {
    let c = cluster_or_skip!("isr-idle", 2);
    c.create_topic("idle", 1, 2).await.unwrap();
    let (leader, replicas, _) = c.partition_info("idle", 0).unwrap();
    let follower = *replicas.iter().find(|r| **r != leader).unwrap();
    c.pause_broker(follower);
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.partition_info("idle", 0).unwrap().2.contains(&follower) {
        assert!(Instant::now() < deadline, "the paused follower never left the ISR");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(c.partition_info("idle", 0).unwrap().2, vec![leader], "back in the ISR while paused");
    }
    c.resume_broker(follower);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !c.partition_info("idle", 0).unwrap().2.contains(&follower) {
        assert!(Instant::now() < deadline, "the follower never rejoined");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_offsets_v0_in_zookeeper_and_v1_at_the_coordinator() {
    let c = cluster_or_skip!("group-offsets", 3);
    c.create_topic("g", 1, 1).await.unwrap();
    let mut conn = Conn::open(c.broker_addr(0).unwrap()).await;
    let commit = |_version: i16, offset: i64, meta: &str| OffsetCommitRequest {
        group_id: "grp".into(),
        group_generation_id: -1,
        consumer_id: String::new(),
        topics: vec![OffsetCommitTopic::new(
            "g",
            vec![OffsetCommitPartition { timestamp: -1, ..OffsetCommitPartition::new(0, offset, meta) }],
        )],
        ..Default::default()
    };
    let fetch_req = OffsetFetchRequest::new("grp", vec![OffsetFetchTopic::new("g", vec![0])]);
    let never = conn.call(0, &fetch_req).await;
    assert_eq!((never.topics[0].partitions[0].offset, never.topics[0].partitions[0].error_code), (-1, 3));
    let r = conn.call(0, &commit(0, 3, "meta-v0")).await;
    assert_eq!(r.topics[0].partitions[0].error_code, 0);
    let (data, _) = c.zk().get(&paths::offset("grp", "g", 0)).await.unwrap().expect("/consumers/grp/offsets/g/0");
    assert_eq!(data, b"3");
    let got = conn.call(0, &fetch_req).await;
    assert_eq!((got.topics[0].partitions[0].offset, got.topics[0].partitions[0].metadata.as_deref()), (3, Some("")));
    // v1: ConsumerMetadata answers 15 until __consumer_offsets has leaders, then the coordinator
    let cm = ConsumerMetadataRequest::group("grp");
    let first = conn.call(0, &cm).await;
    assert_eq!((first.error_code, first.node_id, first.host.as_str(), first.port), (15, -1, "", -1));
    let deadline = Instant::now() + Duration::from_secs(10);
    let coordinator = loop {
        let r = conn.call(0, &cm).await;
        if r.error_code == 0 {
            break r;
        }
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let other = (0..3).find(|b| *b != coordinator.node_id).unwrap();
    let mut not_coord = Conn::open(c.broker_addr(other).unwrap()).await;
    assert_eq!(not_coord.call(1, &commit(1, 5, "meta-v1")).await.topics[0].partitions[0].error_code, 16);
    let mut coord = Conn::open(c.broker_addr(coordinator.node_id).unwrap()).await;
    assert_eq!(coordinator.port, i32::from(c.broker_addr(coordinator.node_id).unwrap().port()));
    assert_eq!(coord.call(1, &commit(1, 5, "meta-v1")).await.topics[0].partitions[0].error_code, 0);
    let v1 = coord.call(1, &fetch_req).await;
    assert_eq!(
        (
            v1.topics[0].partitions[0].offset,
            v1.topics[0].partitions[0].metadata.as_deref(),
            v1.topics[0].partitions[0].error_code
        ),
        (5, Some("meta-v1"), 0)
    );
    let v0 = coord.call(0, &fetch_req).await;
    assert_eq!(v0.topics[0].partitions[0].offset, 3, "two independent stores");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_hooks_and_the_request_log() {
    let c = cluster_or_skip!("hooks", 1);
    c.create_topic("h", 1, 1).await.unwrap();
    let mut conn = Conn::open(c.broker_addr(0).unwrap()).await;
    c.intercept(Rule::on(ApiKey::Produce, Fault::Error(ErrorCode::NotLeaderForPartition)).once());
    let r = conn.call(0, &produce("h", 0, 1, vec![msg(None, "a")], Compression::None)).await;
    assert_eq!(r.topics[0].partitions[0].error_code, 6);
    let r = conn.call(0, &produce("h", 0, 1, vec![msg(None, "b")], Compression::None)).await;
    assert_eq!(r.topics[0].partitions[0].error_code, 0, "once means once");
    c.intercept(Rule::on(ApiKey::Metadata, Fault::Delay(Duration::from_millis(400))).once());
    let t = Instant::now();
    conn.call(0, &metadata(&["h"])).await;
    assert!(t.elapsed() >= Duration::from_millis(380));
    c.intercept(Rule::on(ApiKey::Fetch, Fault::Close).on_broker(0).once());
    conn.send(0, &fetch("h", 0, 0, 0)).await;
    assert!(conn.recv_frame(Duration::from_secs(5)).await.is_none());
    let log = c.requests();
    let produces = log.iter().filter(|r| r.header.api_key == ApiKey::Produce).count();
    assert_eq!(produces, 2);
    assert!(log.iter().all(|r| r.broker == 0 && r.header.client_id.as_deref() == Some("testkit-test")));
    assert!(matches!(log.last().unwrap().request, AnyRequest::Fetch(_)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_paths_reassign_elect_and_delete() {
    let Some(zkc) = chroot("admin-paths") else { return };
    let c = gregor_testkit::FakeCluster::builder(zkc)
        .brokers(3)
        .configure(|cfg| cfg.delete_topic_enable = true)
        .start()
        .await
        .unwrap();
    c.create_topic_with("r", BTreeMap::from([(0, vec![0, 1])]), BTreeMap::new()).await.unwrap();
    let zk = c.zk();
    // reassign r/0 from [0, 1] to [2, 0]
    zk.set_or_create(
        paths::REASSIGN_PARTITIONS,
        br#"{"version":1,"partitions":[{"topic":"r","partition":0,"replicas":[2,0]}]}"#,
    )
    .await
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while zk.exists(paths::REASSIGN_PARTITIONS).await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "reassignment never completed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (data, _) = zk.get(&paths::topic("r")).await.unwrap().unwrap();
    assert_eq!(TopicAssignment::from_json(&data).unwrap().partitions[&0], vec![2, 0]);
    let (leader, replicas, _) = c.partition_info("r", 0).unwrap();
    assert_eq!(replicas, [2, 0]);
    assert_eq!(leader, 0, "the leader stays while it is still a replica");
    // preferred replica election makes 2 the leader
    zk.set_or_create(paths::PREFERRED_REPLICA_ELECTION, br#"{"version":1,"partitions":[{"topic":"r","partition":0}]}"#)
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.leader("r", 0) != Some(2) {
        assert!(Instant::now() < deadline, "preferred replica never elected");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // delete
    zk.create_all(&paths::delete_topic("r"), b"", gregor_zk::CreateMode::Persistent).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while zk.exists(&paths::topic("r")).await.unwrap().is_some() || !c.partitions("r").is_empty() {
        assert!(Instant::now() < deadline, "topic never deleted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_controller_is_replaced() {
    let c = cluster_or_skip!("controller-failover", 3);
    let old = c.controller().unwrap();
    c.kill_broker(old).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let new = loop {
        if let Some(n) = c.controller().filter(|n| *n != old) {
            break n;
        }
        assert!(Instant::now() < deadline, "no new controller");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let (epoch, _) = c.zk().get(paths::CONTROLLER_EPOCH).await.unwrap().unwrap();
    assert_eq!(String::from_utf8(epoch).unwrap(), "2");
    c.create_topic("after", 2, 2).await.unwrap();
    assert!(c.partition_info("after", 0).unwrap().1.iter().all(|b| *b != old));
    assert_ne!(new, old);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_znode_the_cluster_writes_has_kafkas_exact_json() {
    let c = cluster_or_skip!("znode-json", 2);
    c.create_topic_with(
        "j",
        BTreeMap::from([(0, vec![1, 0]), (1, vec![0, 1])]),
        BTreeMap::from([("max.message.bytes".to_owned(), "2048".to_owned())]),
    )
    .await
    .unwrap();
    let zk = c.zk();
    let text = |d: Vec<u8>| String::from_utf8(d).unwrap();
    // topic creation writes the config first, then the assignment, as AdminUtils does
    let (config, config_stat) = zk.get(&paths::topic_config("j")).await.unwrap().unwrap();
    assert_eq!(text(config), r#"{"version":1,"config":{"max.message.bytes":"2048"}}"#);
    let (assignment, assignment_stat) = zk.get(&paths::topic("j")).await.unwrap().unwrap();
    assert_eq!(text(assignment), r#"{"version":1,"partitions":{"0":[1,0],"1":[0,1]}}"#);
    assert!(config_stat.czxid < assignment_stat.czxid, "config written before the assignment");
    let state = text(wait_for_znode(zk, &paths::partition_state("j", 0)).await);
    let epoch = c.zk().get(paths::CONTROLLER_EPOCH).await.unwrap().unwrap().0;
    assert_eq!(
        state,
        format!(r#"{{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":{},"isr":[1,0]}}"#, text(epoch))
    );
    let (ctl, _) = zk.get(paths::CONTROLLER).await.unwrap().unwrap();
    let ctl = text(ctl);
    let prefix = format!(r#"{{"version":1,"brokerid":{},"timestamp":""#, c.controller().unwrap());
    assert!(ctl.starts_with(&prefix) && ctl.ends_with("\"}"), "{ctl}");
    let (reg, _) = zk.get(&paths::broker(1)).await.unwrap().unwrap();
    let reg = text(reg);
    let prefix = format!(
        r#"{{"version":1,"host":"127.0.0.1","port":{},"jmx_port":-1,"timestamp":""#,
        c.broker_addr(1).unwrap().port()
    );
    assert!(reg.starts_with(&prefix) && reg.ends_with("\"}"), "{reg}");
    // the topic config is honoured: 2048 bytes max
    let mut conn = Conn::open(c.broker_addr(1).unwrap()).await;
    let r = conn.call(0, &produce("j", 0, 1, vec![msg(None, &"y".repeat(2100))], Compression::None)).await;
    assert_eq!(r.topics[0].partitions[0].error_code, 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_broker_keeps_its_registration_until_its_session_expires() {
    let Some(zkc) = chroot("crash") else { return };
    let c = gregor_testkit::FakeCluster::builder(zkc)
        .brokers(3)
        .configure(|cfg| {
            cfg.zookeeper_session_timeout = Duration::from_secs(2);
            cfg.replica_lag_time_max = Duration::from_secs(30);
        })
        .start()
        .await
        .unwrap();
    c.create_topic_with("k", BTreeMap::from([(0, vec![2, 0]), (1, vec![1, 2])]), BTreeMap::new()).await.unwrap();
    let crashed_at = Instant::now();
    c.crash_broker(2).await.unwrap();
    // like kill -9 within the session timeout: still registered, still the leader of k/0,
    // and an acks=-1 produce to k/1 (ISR [1, 2]) times out with the message kept
    assert!(c.zk().exists(&paths::broker(2)).await.unwrap().is_some());
    let mut conn = Conn::open(c.broker_addr(1).unwrap()).await;
    let md = conn.call(0, &metadata(&["k"])).await;
    assert_eq!(md.brokers.len(), 3, "the crashed broker is still listed");
    let mut req = produce("k", 1, -1, vec![msg(None, "while-crashed")], Compression::None);
    req.timeout = 500;
    let r = conn.call(0, &req).await;
    assert_eq!((r.topics[0].partitions[0].error_code, r.topics[0].partitions[0].offset), (7, 0));
    // once the session expires, the controller moves k/0 and shrinks k/1's ISR
    let state = wait_for_state(c.zk(), "k", 0, |s| s.leader == 0).await;
    assert!(crashed_at.elapsed() >= Duration::from_millis(1500), "moved after {:?}", crashed_at.elapsed());
    assert_eq!(state.isr, [0]);
    assert_eq!(wait_for_state(c.zk(), "k", 1, |s| s.isr == [1]).await.leader, 1);
    assert!(c.zk().exists(&paths::broker(2)).await.unwrap().is_none());
    // it comes back
    c.restart_broker(2).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !c.partition_info("k", 1).unwrap().2.contains(&2) {
        assert!(Instant::now() < deadline, "the restarted broker never rejoined k/1's ISR");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_log_keeps_at_most_its_capacity() {
    let Some(zkc) = chroot("request-log") else { return };
    let c = gregor_testkit::FakeCluster::builder(zkc).brokers(1).request_log_capacity(3).start().await.unwrap();
    let mut conn = Conn::open(c.broker_addr(0).unwrap()).await;
    for _ in 0..5 {
        conn.call(0, &metadata(&["x"])).await;
    }
    let log = c.requests();
    assert_eq!(log.len(), 3, "the oldest went first");
    assert!(log.iter().all(|r| r.header.api_key == ApiKey::Metadata));
    assert_eq!(log.last().unwrap().header.correlation_id, 5);
    let off = gregor_testkit::FakeCluster::builder(chroot("request-log-off").unwrap())
        .brokers(1)
        .request_log_capacity(0)
        .start()
        .await
        .unwrap();
    let mut conn = Conn::open(off.broker_addr(0).unwrap()).await;
    conn.call(0, &metadata(&[])).await;
    assert!(off.requests().is_empty());
}

/// Kills a partition's follower, then its leader (the ISR had only the leader left), then
/// restarts the follower: who leads depends on `unclean.leader.election.enable`.
async fn leader_after_losing_the_whole_isr(unclean: bool) {
    let Some(zk) = chroot(if unclean { "unclean-on" } else { "unclean-off" }) else { return };
    let c = FakeCluster::builder(zk)
        .brokers(3)
        .configure(|cfg| {
            cfg.replica_lag_time_max = Duration::from_millis(1500);
            cfg.unclean_leader_election_enable = unclean;
        })
        .start()
        .await
        .expect("the fake cluster starts");
    c.create_topic("u", 1, 2).await.unwrap();
    let (leader, replicas, _) = c.partition_info("u", 0).unwrap();
    let follower = *replicas.iter().find(|r| **r != leader).unwrap();
    c.kill_broker(follower).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.partition_info("u", 0).unwrap().2 != [leader] {
        assert!(Instant::now() < deadline, "the killed follower never left the ISR");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    c.kill_broker(leader).await.unwrap();
    c.restart_broker(follower).await.unwrap();
    if unclean {
        let deadline = Instant::now() + Duration::from_secs(10);
        while c.leader("u", 0) != Some(follower) {
            assert!(Instant::now() < deadline, "the out-of-sync replica was never elected");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(c.unclean_elections(), 1);
    } else {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_ne!(c.leader("u", 0), Some(follower), "no leader from outside the ISR");
        assert_eq!(c.partition_info("u", 0).unwrap().0, leader, "the dead leader stays recorded");
        c.restart_broker(leader).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !c.partition_info("u", 0).unwrap().2.contains(&follower) {
            assert!(Instant::now() < deadline, "the follower never rejoined the returned leader's ISR");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(c.leader("u", 0), Some(leader));
        assert_eq!(c.unclean_elections(), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_whole_isr_dead_an_unclean_election_picks_a_live_replica() {
    leader_after_losing_the_whole_isr(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_unclean_election_disabled_the_partition_waits_for_its_isr() {
    leader_after_losing_the_whole_isr(false).await;
}

//! The high-level consumer against the FakeCluster and a real ZooKeeper.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use gregor_consumer::{ConsumerConfig, ConsumerConnector, KafkaStream, OffsetsStorage, TopicFilter};
use gregor_protocol::Compression;
use gregor_serde::StringDecoder;
use gregor_testkit::FakeCluster;

fn config(cluster: &FakeCluster, group: &str) -> gregor_consumer::ConsumerConfigBuilder {
    ConsumerConfig::builder()
        .group_id(group)
        .zookeeper_connect(cluster.zookeeper())
        .rebalance_backoff(Duration::from_millis(300))
        .rebalance_max_retries(10)
        .auto_offset_reset(gregor_consumer::AutoOffsetReset::Smallest)
}

async fn produce_n(cluster: &FakeCluster, topic: &str, partitions: i32, per_partition: usize, tag: &str) {
    for p in 0..partitions {
        let leader = cluster.leader(topic, p).expect("leader");
        let mut c = Conn::open(cluster.broker_addr(leader).unwrap()).await;
        let msgs = (0..per_partition).map(|i| msg(None, &format!("{tag}-{p}-{i}"))).collect();
        let r = c.call(0, &produce(topic, p, 1, msgs, Compression::None)).await;
        assert_eq!(r.topics[0].partitions[0].error_code, 0);
    }
}

/// Waits (15 s at most) until the owner znodes of `group` on `topic` are `expect`.
async fn owners_become(cluster: &FakeCluster, group: &str, topic: &str, expect: BTreeMap<i32, String>) {
    eventually(format!("the owners of {topic} in {group} to be {expect:?}"), Duration::from_secs(15), async || {
        let o = owners(cluster, group, topic).await;
        if o == expect {
            Ok(())
        } else {
            Err(o)
        }
    })
    .await
}

/// `n` DISTINCT values (a rebalance may redeliver the uncommitted window: at least once).
async fn drain(stream: &mut KafkaStream<String>, n: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    while out.len() < n {
        match tokio::time::timeout(Duration::from_secs(15), stream.next()).await {
            Ok(Some(Ok(m))) => {
                let v = m.value.unwrap();
                if !out.contains(&v) {
                    out.push(v)
                }
            }
            Ok(Some(Err(gregor_consumer::Error::Fetch { topic, .. }))) if topic == "w1" => {}
            // consumer.timeout.ms passed with nothing to hand out (a loaded machine can take
            // longer than that to rebalance or fetch): the stream goes on, and so does the wait
            Ok(Some(Err(gregor_consumer::Error::ConsumerTimeout { .. }))) => {}
            Ok(Some(Err(e))) => panic!("stream error: {e}"),
            Ok(None) => break,
            Err(_) => panic!("timed out after {} of {n}", out.len()),
        }
    }
    out
}

/// Offsets of `group` stored in Kafka (OffsetFetch v1 at the coordinator).
async fn kafka_offsets(cluster: &FakeCluster, group: &str, topic: &str, partitions: i32) -> Vec<i64> {
    let mut c = coordinator(cluster, group).await;
    let r = c
        .call(
            1,
            &gregor_protocol::messages::OffsetFetchRequest::new(
                group,
                vec![gregor_protocol::messages::OffsetFetchTopic::new(topic, (0..partitions).collect())],
            ),
        )
        .await;
    let mut out: Vec<(i32, i64)> = r.topics[0].partitions.iter().map(|p| (p.partition, p.offset)).collect();
    out.sort();
    out.into_iter().map(|(_, o)| o).collect()
}

async fn coordinator(cluster: &FakeCluster, group: &str) -> Conn {
    for _ in 0..50 {
        let (_, addr) = cluster.broker_addrs()[0];
        let mut c = Conn::open(addr).await;
        let r = c.call(0, &gregor_protocol::messages::ConsumerMetadataRequest::group(group)).await;
        if r.error_code == 0 {
            return Conn::open(format!("{}:{}", r.host, r.port).parse().unwrap()).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("no coordinator for {group}");
}

/// Commits one offset to Kafka (OffsetCommit v1).
async fn commit_kafka(cluster: &FakeCluster, group: &str, topic: &str, partition: i32, offset: i64) {
    use gregor_protocol::messages::*;
    let mut c = coordinator(cluster, group).await;
    let r = c
        .call(
            1,
            &OffsetCommitRequest {
                group_id: group.into(),
                group_generation_id: DEFAULT_GENERATION_ID,
                consumer_id: DEFAULT_CONSUMER_ID.into(),
                topics: vec![OffsetCommitTopic::new(
                    topic,
                    vec![OffsetCommitPartition {
                        timestamp: DEFAULT_TIMESTAMP,
                        ..OffsetCommitPartition::new(partition, offset, "")
                    }],
                )],
                ..Default::default()
            },
        )
        .await;
    assert_eq!(r.topics[0].partitions[0].error_code, 0);
}

fn dec() -> Arc<dyn gregor_serde::Decoder<String>> {
    Arc::new(StringDecoder::new())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn registration_range_split_rejoin_delivery_and_zk_offsets() {
    let Some(cluster) = cluster("consumer_range", 2).await else { return };
    cluster.create_topic("t", 6, 1).await.unwrap();
    produce_n(&cluster, "t", 6, 5, "m").await;

    let a = ConsumerConnector::new(config(&cluster, "g").consumer_id("a").auto_commit_enable(false).build().unwrap())
        .await
        .unwrap();
    let mut sa = a.create_message_streams(HashMap::from([("t".to_string(), 1)]), dec()).await.unwrap();
    // registration znode exactly as DESIGN §3
    let (data, stat) = cluster.zk().get("/consumers/g/ids/g_a").await.unwrap().unwrap();
    assert!(stat.is_ephemeral());
    let text = String::from_utf8(data).unwrap();
    assert!(text.starts_with(r#"{"version":1,"subscription":{"t":1},"pattern":"static","timestamp":""#), "{text}");
    let got = drain(sa.get_mut("t").unwrap().first_mut().unwrap(), 30).await;
    assert_eq!(got.len(), 30);
    a.commit_offsets().await.unwrap();
    for p in 0..6 {
        let (d, _) = cluster.zk().get(&format!("/consumers/g/offsets/t/{p}")).await.unwrap().unwrap();
        assert_eq!(d, b"5");
    }

    let b = ConsumerConnector::new(config(&cluster, "g").consumer_id("b").build().unwrap()).await.unwrap();
    let _sb = b.create_message_streams(HashMap::from([("t".to_string(), 1)]), dec()).await.unwrap();
    let expect = (0..6).map(|p| (p, if p < 3 { "g_a-0" } else { "g_b-0" }.to_string())).collect();
    owners_become(&cluster, "g", "t", expect).await;
    let owner_stat = cluster.zk().get("/consumers/g/owners/t/0").await.unwrap().unwrap().1;
    assert!(owner_stat.is_ephemeral());

    // a third member: every partition owned by exactly one stream (range: 2 each)
    let c = ConsumerConnector::new(config(&cluster, "g").consumer_id("c").build().unwrap()).await.unwrap();
    let _sc = c.create_message_streams(HashMap::from([("t".to_string(), 1)]), dec()).await.unwrap();
    let expect = (0..6).map(|p| (p, ["g_a-0", "g_b-0", "g_c-0"][p as usize / 2].to_string())).collect();
    owners_become(&cluster, "g", "t", expect).await;
    // new messages reach the members
    produce_n(&cluster, "t", 6, 1, "n").await;
    let got = drain(sa.get_mut("t").unwrap().first_mut().unwrap(), 2).await;
    assert!(got.iter().all(|v| v.starts_with("n-0") || v.starts_with("n-1")), "{got:?}");
    assert!(a.lag().iter().all(|l| l.lag == 0 || l.high_watermark >= 0));
    c.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
    a.shutdown().await.unwrap();
    assert!(cluster.zk().get("/consumers/g/ids/g_a").await.unwrap().is_none());
    assert!(owners(&cluster, "g", "t").await.is_empty());
    cluster.shutdown().await;
}

/// Kafka-stored and dual-committed offsets. (The old `#[ignore]`d version of this test shared
/// one topic between the two groups: the second group found 8 messages, drained only 6 and
/// rightly committed 4 and 2, so its successor rightly started partition 1 at 2. Each group now
/// has a topic of its own and the committed offsets are checked exactly.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn offsets_in_kafka_and_dual_and_reset_largest() {
    let Some(cluster) = cluster("consumer_kafka_offsets", 1).await else { return };
    cluster.create_topic("k", 2, 1).await.unwrap();
    for (group, dual) in [("gk", false), ("gd", true)] {
        let topic = format!("k-{group}");
        cluster.create_topic(&topic, 2, 1).await.unwrap();
        produce_n(&cluster, &topic, 2, 3, "m").await;
        let cfg = config(&cluster, group)
            .offsets_storage(OffsetsStorage::Kafka)
            .dual_commit_enabled(dual)
            .auto_commit_enable(false)
            .build()
            .unwrap();
        let a = ConsumerConnector::new(cfg).await.unwrap();
        let mut s = a.create_message_streams(HashMap::from([(topic.clone(), 1)]), dec()).await.unwrap();
        assert_eq!(drain(&mut s.get_mut(&topic).unwrap()[0], 6).await.len(), 6);
        a.commit_offsets().await.unwrap();
        // the next offset to read: last consumed + 1
        assert_eq!(kafka_offsets(&cluster, group, &topic, 2).await, [3, 3], "group {group}");
        for p in 0..2 {
            let zk = cluster.zk().get(&format!("/consumers/{group}/offsets/{topic}/{p}")).await.unwrap();
            assert_eq!(zk.map(|d| d.0), dual.then(|| b"3".to_vec()), "group {group}");
        }
        a.shutdown().await.unwrap();
        // a new member resumes from the committed offsets: only new messages
        produce_n(&cluster, &topic, 2, 1, group).await;
        let b = ConsumerConnector::new(
            config(&cluster, group).offsets_storage(OffsetsStorage::Kafka).dual_commit_enabled(dual).build().unwrap(),
        )
        .await
        .unwrap();
        let mut s = b.create_message_streams(HashMap::from([(topic.clone(), 1)]), dec()).await.unwrap();
        let got = drain(&mut s.get_mut(&topic).unwrap()[0], 2).await;
        assert!(got.iter().all(|v| v.starts_with(group)), "group {group}: {got:?}");
        b.shutdown().await.unwrap(); // auto commit on: commits 4
        assert_eq!(kafka_offsets(&cluster, group, &topic, 2).await, [4, 4], "group {group}");
    }
    // dual reads the max of both stores: ZooKeeper ahead of Kafka on partition 0
    cluster.zk().set_or_create("/consumers/gd/offsets/k-gd/0", b"2").await.unwrap();
    cluster.zk().set_or_create("/consumers/gd/offsets/k-gd/1", b"4").await.unwrap();
    commit_kafka(&cluster, "gd", "k-gd", 0, 1).await;
    let d = ConsumerConnector::new(
        config(&cluster, "gd")
            .offsets_storage(OffsetsStorage::Kafka)
            .dual_commit_enabled(true)
            .consumer_timeout(Some(Duration::from_millis(1500)))
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let mut s = d.create_message_streams(HashMap::from([("k-gd".to_string(), 1)]), dec()).await.unwrap();
    let got = drain(&mut s.get_mut("k-gd").unwrap()[0], 2).await;
    assert_eq!(got, ["m-0-2", "gd-0-0"]);
    d.shutdown().await.unwrap();
    // largest: nothing old. Two old messages per partition; the late ones are produced only
    // once the member owns both partitions and has taken its position at their log end (2),
    // so they must be exactly what it reads
    produce_n(&cluster, "k", 2, 2, "old").await;
    let l = ConsumerConnector::new(
        config(&cluster, "gl")
            .auto_offset_reset(gregor_consumer::AutoOffsetReset::Largest)
            .consumer_timeout(Some(Duration::from_millis(1500)))
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let mut s = l.create_message_streams(HashMap::from([("k".to_string(), 1)]), dec()).await.unwrap();
    eventually("the largest-reset member to own k/0 and k/1 at their log end", Duration::from_secs(15), async || {
        let at: BTreeMap<i32, i64> =
            l.lag().iter().filter(|p| p.topic == "k").map(|p| (p.partition, p.consumed)).collect();
        if at == BTreeMap::from([(0, 2), (1, 2)]) {
            Ok(())
        } else {
            Err(at)
        }
    })
    .await;
    produce_n(&cluster, "k", 2, 1, "late").await;
    let got = drain(&mut s.get_mut("k").unwrap()[0], 2).await;
    assert!(got.iter().all(|v| v.starts_with("late")), "{got:?}");
    assert!(matches!(
        s.get_mut("k").unwrap()[0].next().await,
        Some(Err(gregor_consumer::Error::ConsumerTimeout { .. }))
    ));
    l.shutdown().await.unwrap();
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn oversized_message_is_an_error_and_whitelist_picks_up_new_topic() {
    let Some(cluster) = cluster("consumer_big_and_filter", 1).await else { return };
    cluster.create_topic("w1", 1, 1).await.unwrap();
    let leader = cluster.leader("w1", 0).unwrap();
    let mut c = Conn::open(cluster.broker_addr(leader).unwrap()).await;
    c.call(0, &produce("w1", 0, 1, vec![msg(None, &"x".repeat(5000))], Compression::None)).await;
    let a =
        ConsumerConnector::new(config(&cluster, "gb").fetch_message_max_bytes(1000).build().unwrap()).await.unwrap();
    let mut s = a.create_message_streams_by_filter(TopicFilter::Whitelist("w.*".into()), 1, dec()).await.unwrap();
    let (data, _) = cluster.zk().get(&format!("/consumers/gb/ids/{}", a.consumer_id())).await.unwrap().unwrap();
    let text = String::from_utf8(data).unwrap();
    assert!(
        text.starts_with(r#"{"version":1,"subscription":{"w.*":1},"pattern":"white_list","timestamp":""#),
        "{text}"
    );
    match tokio::time::timeout(Duration::from_secs(10), s[0].next()).await.unwrap() {
        Some(Err(gregor_consumer::Error::Fetch { topic, .. })) => assert_eq!(topic, "w1"),
        other => panic!("expected a fetch error, got {other:?}"),
    }
    cluster.create_topic("w2", 1, 1).await.unwrap();
    produce_n(&cluster, "w2", 1, 2, "new").await;
    let got = drain(&mut s[0], 2).await;
    assert_eq!(got, ["new-0-0", "new-0-1"]);
    a.shutdown().await.unwrap();
    cluster.shutdown().await;
}

/// Reads `stream` in the background into a shared list of values (with duplicates).
fn collect(mut stream: KafkaStream<String>) -> (Arc<std::sync::Mutex<Vec<String>>>, tokio::task::JoinHandle<()>) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s2 = Arc::clone(&seen);
    let h = tokio::spawn(async move {
        while let Some(m) = stream.next().await {
            match m {
                Ok(m) => s2.lock().unwrap().push(m.value.unwrap()),
                Err(gregor_consumer::Error::RebalanceFailed { .. }) => {}
                Err(e) => panic!("stream error: {e}"),
            }
        }
    });
    (seen, h)
}

fn distinct(v: &[String]) -> std::collections::BTreeSet<String> {
    v.iter().cloned().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn session_expiry_stops_reregisters_reowns_and_loses_nothing() {
    let Some(cluster) = cluster("consumer_expiry", 1).await else { return };
    let server = gregor_testkit::zookeeper::ZooKeeperServer::shared_or_skip().unwrap();
    let proxy = gregor_testkit::proxy::TcpProxy::start(server.addr()).await.unwrap();
    let chroot = &cluster.zookeeper()[cluster.zookeeper().find('/').unwrap()..];
    cluster.create_topic("e", 4, 1).await.unwrap();
    produce_n(&cluster, "e", 4, 5, "before").await;

    let session_timeout = gregor_zk::MIN_SESSION_TIMEOUT;
    let a = ConsumerConnector::new(
        config(&cluster, "gx")
            .consumer_id("a")
            .zookeeper_connect(format!("{}{chroot}", proxy.addr()))
            .zookeeper_session_timeout(session_timeout)
            .auto_commit_interval(Duration::from_millis(200))
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let mut streams = a.create_message_streams(HashMap::from([("e".to_string(), 1)]), dec()).await.unwrap();
    let (seen, reader) = collect(streams.get_mut("e").unwrap().pop().unwrap());
    let all_owned = |o: BTreeMap<i32, String>| o.len() == 4 && o.values().all(|v| v == "gx_a-0");
    eventually("first delivery", Duration::from_secs(10), || async { distinct(&seen.lock().unwrap()).len() == 20 })
        .await;
    assert!(all_owned(owners(&cluster, "gx", "e").await));
    let before = a.stats();

    // partition the consumer from ZooKeeper until the server expires its session
    proxy.stall();
    let zk = cluster.zk();
    eventually("the server to expire the session", session_timeout * 4, || async {
        zk.get("/consumers/gx/ids/gx_a").await.unwrap().is_none()
    })
    .await;
    assert!(owners(&cluster, "gx", "e").await.is_empty(), "the owner znodes die with the session");
    produce_n(&cluster, "e", 4, 5, "during").await;
    // a foreign session holds e/3 for a while, so the rebalance after the expiry must wait:
    // that window shows the member is not fetching meanwhile
    let foreign = gregor_zk::ZkClient::connect(cluster.zookeeper(), Duration::from_secs(6)).await.unwrap();
    foreign.create_all("/consumers/gx/owners/e/3", b"gx_java-0", gregor_zk::CreateMode::Ephemeral).await.unwrap();
    proxy.resume();

    eventually("the expiry to be seen", Duration::from_secs(10), || async { a.stats().session_expirations == 1 }).await;
    eventually("re-registration", Duration::from_secs(10), || async {
        zk.get("/consumers/gx/ids/gx_a").await.unwrap().is_some()
    })
    .await;
    let fetches = |cluster: &FakeCluster| {
        cluster
            .requests()
            .iter()
            .filter(|r| {
                r.header.client_id.as_deref() == Some("gx")
                    && matches!(r.request, gregor_protocol::messages::AnyRequest::Fetch(_))
            })
            .count()
    };
    // the fetchers were stopped before the re-registration; a Fetch already on its way may
    // still reach the broker: wait until none has arrived for 500 ms
    let mut last = (fetches(&cluster), tokio::time::Instant::now());
    eventually("the member's fetches to stop arriving", Duration::from_secs(15), async || {
        let now = fetches(&cluster);
        if now != last.0 {
            last = (now, tokio::time::Instant::now());
        }
        last.1.elapsed() >= Duration::from_millis(500)
    })
    .await;
    let (fetches_before, delivered_before) = (fetches(&cluster), seen.lock().unwrap().len());
    produce_n(&cluster, "e", 4, 5, "blocked").await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(fetches(&cluster), fetches_before, "no Fetch after the expiry until the partitions are owned again");
    assert_eq!(seen.lock().unwrap().len(), delivered_before, "nothing delivered without ownership");
    assert!(a.owned_partitions().is_empty());
    // each attempt claims e/0..2 for a moment before it meets e/3 and releases them (all or
    // nothing), so a snapshot may catch those claims: wait for one taken between attempts
    let foreign_only = BTreeMap::from([(3, "gx_java-0".to_string())]);
    eventually("only the foreign owner between attempts", Duration::from_secs(10), || async {
        owners(&cluster, "gx", "e").await == foreign_only
    })
    .await;
    assert!(a.owned_partitions().is_empty());
    foreign.delete("/consumers/gx/owners/e/3", None).await.unwrap();

    // it rebalances and owns its partitions again (the owner znodes appear a moment before the
    // rebalance is counted as done)
    eventually("re-ownership", Duration::from_secs(15), || async {
        a.stats().session_expirations == 1
            && a.stats().rebalances > before.rebalances
            && zk.get("/consumers/gx/ids/gx_a").await.unwrap().is_some()
            && all_owned(owners(&cluster, "gx", "e").await)
    })
    .await;
    let (reg, stat) = zk.get("/consumers/gx/ids/gx_a").await.unwrap().unwrap();
    assert!(stat.is_ephemeral());
    assert!(String::from_utf8(reg).unwrap().contains(r#""subscription":{"e":1}"#));
    produce_n(&cluster, "e", 4, 5, "after").await;
    eventually("every message", Duration::from_secs(15), || async { distinct(&seen.lock().unwrap()).len() == 80 })
        .await;
    let got = seen.lock().unwrap().clone();
    for tag in ["before", "during", "blocked", "after"] {
        for p in 0..4 {
            for i in 0..5 {
                assert!(got.contains(&format!("{tag}-{p}-{i}")), "{tag}-{p}-{i} lost");
            }
        }
    }
    eprintln!("session expiry: {} deliveries of 80 messages ({} duplicates)", got.len(), got.len() - 80);
    a.shutdown().await.unwrap();
    foreign.close().await.unwrap();
    reader.await.unwrap();
    cluster.shutdown().await;
}

/// A cluster (`name`) with `topic` of 2 partitions, 3 messages each, and an owner znode of
/// `topic`/1 in `group`, held as `{group}_java-0` by a ZooKeeper session of its own (as another
/// member's would be). The cluster and that session.
async fn foreign_owner_of_one(name: &str, topic: &str, group: &str) -> Option<(FakeCluster, gregor_zk::ZkClient)> {
    let cluster = cluster(name, 1).await?;
    cluster.create_topic(topic, 2, 1).await.unwrap();
    produce_n(&cluster, topic, 2, 3, "m").await;
    let foreign = gregor_zk::ZkClient::connect(cluster.zookeeper(), Duration::from_secs(6)).await.unwrap();
    let (path, owner) = (format!("/consumers/{group}/owners/{topic}/1"), format!("{group}_java-0"));
    foreign.create_all(&path, owner.as_bytes(), gregor_zk::CreateMode::Ephemeral).await.unwrap();
    Some((cluster, foreign))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rebalance_gives_up_on_a_foreign_owner_then_recovers_when_it_goes() {
    let Some((cluster, foreign)) = foreign_owner_of_one("consumer_give_up", "f", "gf").await else { return };

    let a = ConsumerConnector::new(
        config(&cluster, "gf")
            .consumer_id("a")
            .rebalance_max_retries(3)
            .rebalance_backoff(Duration::from_millis(100))
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let mut s = a.create_message_streams(HashMap::from([("f".to_string(), 1)]), dec()).await.unwrap();
    let stream = &mut s.get_mut("f").unwrap()[0];
    match tokio::time::timeout(Duration::from_secs(10), stream.next()).await.unwrap() {
        Some(Err(gregor_consumer::Error::RebalanceFailed { group, attempts, reason })) => {
            assert_eq!((group.as_str(), attempts), ("gf", 3));
            assert!(reason.contains("/consumers/gf/owners/f/1") && reason.contains("gf_java-0"), "{reason}");
        }
        other => panic!("expected RebalanceFailed, got {other:?}"),
    }
    assert_eq!(a.stats().failed_rebalances, 1);
    // all or nothing: the partial claim of f/0 was released
    assert_eq!(owners(&cluster, "gf", "f").await, BTreeMap::from([(1, "gf_java-0".to_string())]));
    assert!(a.owned_partitions().is_empty());

    // the foreign owner goes: the armed watch rebalances, this time successfully
    foreign.delete("/consumers/gf/owners/f/1", None).await.unwrap();
    let got = drain(stream, 6).await;
    assert_eq!(got.len(), 6);
    assert_eq!(
        owners(&cluster, "gf", "f").await,
        BTreeMap::from([(0, "gf_a-0".to_string()), (1, "gf_a-0".to_string())])
    );
    assert_eq!(a.stats().rebalances, 1);
    a.shutdown().await.unwrap();
    foreign.close().await.unwrap();
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_conflicting_owner_releasing_its_partition_ends_the_backoff_at_once() {
    // another member's owner znode (as a Java member's, which releases in its own rebalance)
    let Some((cluster, foreign)) = foreign_owner_of_one("consumer_quick_retry", "q", "gq").await else { return };
    // a backoff long enough to tell apart: its jitter makes it 4-12 s
    let backoff = Duration::from_secs(8);
    let a = ConsumerConnector::new(
        config(&cluster, "gq").consumer_id("a").rebalance_max_retries(2).rebalance_backoff(backoff).build().unwrap(),
    )
    .await
    .unwrap();
    // the first attempt (inside create_message_streams) fails on q/1 and backs off; the owner
    // releases it meanwhile
    let release = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        foreign.delete("/consumers/gq/owners/q/1", None).await.unwrap();
        (tokio::time::Instant::now(), foreign)
    });
    let mut s = a.create_message_streams(HashMap::from([("q".to_string(), 1)]), dec()).await.unwrap();
    let owned = tokio::time::Instant::now();
    let (released, foreign) = release.await.unwrap();
    let took = owned.saturating_duration_since(released);
    let got = drain(&mut s.get_mut("q").unwrap()[0], 6).await;
    assert_eq!(got.len(), 6);
    assert_eq!(
        owners(&cluster, "gq", "q").await,
        BTreeMap::from([(0, "gq_a-0".to_string()), (1, "gq_a-0".to_string())])
    );
    // the retry followed the release, not the backoff (at least 4 s from the first attempt)
    assert!(took < Duration::from_secs(3), "the rebalance ended {took:?} after the release");
    let stats = a.stats();
    assert_eq!((stats.rebalances, stats.failed_rebalances), (1, 0), "{stats:?}");
    a.shutdown().await.unwrap();
    foreign.close().await.unwrap();
    cluster.shutdown().await;
}

struct Member {
    connector: ConsumerConnector,
    seen: Vec<Arc<std::sync::Mutex<Vec<String>>>>,
    readers: Vec<tokio::task::JoinHandle<()>>,
}

async fn join(cluster: &FakeCluster, group: &str, id: &str, streams: usize) -> Member {
    let connector = ConsumerConnector::new(config(cluster, group).consumer_id(id).build().unwrap()).await.unwrap();
    let mut s = connector.create_message_streams(HashMap::from([("churn".to_string(), streams)]), dec()).await.unwrap();
    let (mut seen, mut readers) = (Vec::new(), Vec::new());
    for stream in s.remove("churn").unwrap() {
        let (v, h) = collect(stream);
        seen.push(v);
        readers.push(h);
    }
    Member { connector, seen, readers }
}

/// Settled: every partition owned in ZooKeeper by exactly one stream of a live member, and
/// each member's own view equals ZooKeeper's.
async fn settled(cluster: &FakeCluster, members: &BTreeMap<String, Member>, partitions: i32) -> bool {
    let o = owners(cluster, "gc", "churn").await;
    // Java's range for one topic: thread ids sorted as strings, n = P / T, extra = P % T
    let mut threads: Vec<String> =
        members.iter().flat_map(|(id, m)| (0..m.seen.len()).map(move |n| format!("gc_{id}-{n}"))).collect();
    threads.sort();
    let (n, extra) = (partitions as usize / threads.len(), partitions as usize % threads.len());
    let mut expect = BTreeMap::new();
    for (i, t) in threads.iter().enumerate() {
        let start = n * i + i.min(extra);
        for p in start..start + n + usize::from(i < extra) {
            expect.insert(p as i32, t.clone());
        }
    }
    if o != expect {
        return false;
    }
    let mut from_members: BTreeMap<i32, String> = BTreeMap::new();
    for m in members.values() {
        for (tp, thread) in m.connector.owned_partitions() {
            if from_members.insert(tp.partition, thread).is_some() {
                return false;
            }
        }
    }
    o == from_members
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn churn_twelve_partitions_100k_messages_members_join_and_leave() {
    const PARTITIONS: i32 = 12;
    const BATCHES: usize = 200;
    const BATCH: usize = 500;
    let Some(cluster) = cluster("consumer_churn", 2).await else { return };
    cluster.create_topic("churn", PARTITIONS, 1).await.unwrap();
    let started = std::time::Instant::now();
    let mut members: BTreeMap<String, Member> = BTreeMap::new();
    members.insert("m0".into(), join(&cluster, "gc", "m0", 1).await);
    members.insert("m1".into(), join(&cluster, "gc", "m1", 2).await);

    // produce 100,000 messages in the background with the raw codec, across the churn
    let addrs: BTreeMap<i32, std::net::SocketAddr> =
        (0..PARTITIONS).map(|p| (p, cluster.broker_addr(cluster.leader("churn", p).unwrap()).unwrap())).collect();
    let producer = tokio::spawn(async move {
        let mut conns: BTreeMap<std::net::SocketAddr, Conn> = BTreeMap::new();
        for b in 0..BATCHES {
            let p = (b % PARTITIONS as usize) as i32;
            let addr = addrs[&p];
            if let std::collections::btree_map::Entry::Vacant(e) = conns.entry(addr) {
                e.insert(Conn::open(addr).await);
            }
            let msgs = (0..BATCH).map(|i| msg(None, &format!("b{b}-{i}"))).collect();
            let r = conns.get_mut(&addr).unwrap().call(0, &produce("churn", p, 1, msgs, Compression::None)).await;
            assert_eq!(r.topics[0].partitions[0].error_code, 0);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });

    let changes: [(&str, Option<usize>); 4] = [("m2", Some(1)), ("m0", None), ("m3", Some(3)), ("m1", None)];
    let mut gone: Vec<Member> = Vec::new();
    for (id, join_streams) in changes {
        tokio::time::sleep(Duration::from_millis(1200)).await;
        match join_streams {
            Some(n) => {
                members.insert(id.into(), join(&cluster, "gc", id, n).await);
            }
            None => {
                let m = members.remove(id).unwrap();
                m.connector.shutdown().await.unwrap();
                gone.push(m);
            }
        }
        let t = std::time::Instant::now();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        while !settled(&cluster, &members, PARTITIONS).await {
            assert!(
                tokio::time::Instant::now() < deadline,
                "not settled after {id}: {:?}",
                owners(&cluster, "gc", "churn").await
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        eprintln!("churn: {id} settled in {:?}", t.elapsed());
    }
    producer.await.unwrap();
    eprintln!("churn: produced in {:?}", started.elapsed());
    let total = BATCHES * BATCH;
    let all = |members: &BTreeMap<String, Member>, gone: &[Member]| -> Vec<String> {
        let mut v = Vec::new();
        for m in members.values().chain(gone.iter()) {
            for s in &m.seen {
                v.extend(s.lock().unwrap().iter().cloned());
            }
        }
        v
    };
    let deliveries = |members: &BTreeMap<String, Member>, gone: &[Member]| -> usize {
        members.values().chain(gone.iter()).flat_map(|m| m.seen.iter()).map(|s| s.lock().unwrap().len()).sum()
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while deliveries(&members, &gone) < total {
        assert!(tokio::time::Instant::now() < deadline, "only {} deliveries of {total}", deliveries(&members, &gone));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!("churn: {} deliveries after {:?}", deliveries(&members, &gone), started.elapsed());
    while distinct(&all(&members, &gone)).len() < total {
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {} of {total} delivered",
            distinct(&all(&members, &gone)).len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let got = all(&members, &gone);
    let set = distinct(&got);
    assert_eq!(set.len(), total, "every message delivered at least once");
    for b in 0..BATCHES {
        assert!(set.contains(&format!("b{b}-0")) && set.contains(&format!("b{b}-{}", BATCH - 1)));
    }
    let duplicates = got.len() - total;
    eprintln!("churn: {total} messages, {} deliveries, {duplicates} duplicates, {:?}", got.len(), started.elapsed());
    for m in members.values() {
        m.connector.shutdown().await.unwrap();
    }
    for m in members.into_values().chain(gone) {
        for r in m.readers {
            r.await.unwrap();
        }
    }
    cluster.shutdown().await;
}

/// Produces `n` keyed messages (`<tag>-<p>-<i>`, key `k<i>`) to each partition at its
/// current leader, acks=-1, retrying while leadership moves.
async fn produce_keyed(cluster: &FakeCluster, topic: &str, partitions: i32, n: usize, tag: &str) {
    for p in 0..partitions {
        let msgs: Vec<gregor_protocol::Message> =
            (0..n).map(|i| msg(Some(&format!("k{i}")), &format!("{tag}-{p}-{i}"))).collect();
        let mut ok = false;
        for _ in 0..50 {
            if let Some(addr) = cluster.leader(topic, p).and_then(|l| cluster.broker_addr(l)) {
                let mut c = Conn::open(addr).await;
                let r = c.call(0, &produce(topic, p, -1, msgs.clone(), Compression::None)).await;
                if r.topics[0].partitions[0].error_code == 0 {
                    ok = true;
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(ok, "could not produce to {topic}/{p}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn leader_move_and_broker_kill_during_consumption_no_gap_no_stall_keys_decoded() {
    let Some(cluster) = cluster("consumer_leaders", 3).await else { return };
    cluster.create_topic("lm", 4, 3).await.unwrap();
    let a = ConsumerConnector::new(config(&cluster, "gm").consumer_id("a").build().unwrap()).await.unwrap();
    let mut s = a
        .create_message_streams_with_key_decoder(
            HashMap::from([("lm".to_string(), 1)]),
            Arc::new(StringDecoder::new()),
            dec(),
        )
        .await
        .unwrap();
    let mut stream = s.remove("lm").unwrap().pop().unwrap();
    // per partition: offsets in delivery order (duplicates allowed, gaps not)
    let seen: Arc<std::sync::Mutex<BTreeMap<i32, Vec<i64>>>> = Arc::default();
    let seen2 = Arc::clone(&seen);
    let reader = tokio::spawn(async move {
        while let Some(m) = stream.next().await {
            let m = m.expect("no stream error");
            let v = m.value.unwrap();
            let i = v.rsplit('-').next().unwrap();
            assert_eq!(m.key.as_deref(), Some(format!("k{i}").as_str()), "key decoded by the key decoder");
            seen2.lock().unwrap().entry(m.partition).or_default().push(m.offset);
        }
    });
    let count = |seen: &Arc<std::sync::Mutex<BTreeMap<i32, Vec<i64>>>>| -> usize {
        seen.lock()
            .unwrap()
            .values()
            .map(|v| distinct(&v.iter().map(|o| o.to_string()).collect::<Vec<_>>()).len())
            .sum()
    };
    let phase = std::time::Instant::now();
    produce_keyed(&cluster, "lm", 4, 20, "one").await;
    eventually("phase one", Duration::from_secs(10), || async { count(&seen) == 80 }).await;

    // move the leaders of partitions 0 and 1 while messages flow
    for p in 0..2 {
        let (leader, replicas, _) = cluster.partition_info("lm", p).unwrap();
        let to = *replicas.iter().find(|&&r| r != leader).unwrap();
        cluster.move_leader("lm", p, to).await.unwrap();
    }
    produce_keyed(&cluster, "lm", 4, 20, "two").await;
    eventually("phase two (after leader moves)", Duration::from_secs(10), || async { count(&seen) == 160 }).await;

    // kill a broker that leads something (not the controller)
    let controller = cluster.controller();
    let victim = (0..4).filter_map(|p| cluster.leader("lm", p)).find(|&l| Some(l) != controller).unwrap();
    cluster.kill_broker(victim).await.unwrap();
    eventually("new leaders", Duration::from_secs(10), || async {
        (0..4).all(|p| cluster.leader("lm", p).is_some_and(|l| l != victim))
    })
    .await;
    produce_keyed(&cluster, "lm", 4, 20, "three").await;
    eventually("phase three (after a broker kill)", Duration::from_secs(10), || async { count(&seen) == 240 }).await;
    eprintln!("leaders: 240 messages across a leader move and a broker kill in {:?}", phase.elapsed());
    for (p, offsets) in seen.lock().unwrap().iter() {
        // no gap: every offset 0..60 delivered, in order (a re-read may repeat a suffix)
        let mut expect = 0;
        for &o in offsets {
            assert!(o <= expect, "partition {p}: gap before offset {o}");
            expect = expect.max(o + 1);
        }
        assert_eq!(expect, 60, "partition {p}");
    }
    a.shutdown().await.unwrap();
    reader.await.unwrap();
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn oversized_message_does_not_block_other_partitions() {
    let Some(cluster) = cluster("consumer_oversized", 1).await else { return };
    cluster.create_topic("ob", 2, 1).await.unwrap();
    let leader = cluster.broker_addr(cluster.leader("ob", 0).unwrap()).unwrap();
    let mut c = Conn::open(leader).await;
    c.call(0, &produce("ob", 0, 1, vec![msg(None, &"x".repeat(5000)), msg(None, "small")], Compression::None)).await;
    produce_n(&cluster, "ob", 2, 3, "m").await; // p0 gets 3 more behind the big one
    let a =
        ConsumerConnector::new(config(&cluster, "go").fetch_message_max_bytes(1000).build().unwrap()).await.unwrap();
    let mut s = a.create_message_streams(HashMap::from([("ob".to_string(), 1)]), dec()).await.unwrap();
    let stream = &mut s.get_mut("ob").unwrap()[0];
    let mut errors = Vec::new();
    let mut values = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while values.len() < 6 {
        match tokio::time::timeout_at(deadline, stream.next()).await.expect("p1 flows despite p0's big message") {
            Some(Ok(m)) => values.push((m.partition, m.value.unwrap())),
            Some(Err(e @ gregor_consumer::Error::Fetch { .. })) => {
                assert!(e.to_string().contains("raise fetch.message.max.bytes"), "{e}");
                let gregor_consumer::Error::Fetch { topic, partition, offset, .. } = e else { unreachable!() };
                errors.push((topic, partition, offset))
            }
            other => panic!("{other:?}"),
        }
        if values.len() == 3 {
            produce_n(&cluster, "ob", 2, 3, "n").await; // p1 keeps flowing after the error
        }
    }
    // the error names the partition and offset; it comes again (after refresh.leader.backoff.ms)
    // while the partition stays stuck, as Java's iterator throws on every oversized chunk
    assert!(!errors.is_empty(), "at least one error");
    assert!(errors.iter().all(|e| *e == ("ob".to_string(), 0, 0)), "{errors:?}");
    assert!(values.iter().all(|(p, _)| *p == 1), "{values:?}");
    assert_eq!(
        values.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>(),
        ["m-1-0", "m-1-1", "m-1-2", "n-1-0", "n-1-1", "n-1-2"]
    );
    a.shutdown().await.unwrap();
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn blocking_iterator_with_consumer_timeout_from_a_std_thread() {
    let Some(cluster) = cluster("consumer_blocking", 1).await else { return };
    cluster.create_topic("bi", 1, 1).await.unwrap();
    produce_n(&cluster, "bi", 1, 5, "m").await;
    let a = ConsumerConnector::new(
        config(&cluster, "gbi").consumer_timeout(Some(Duration::from_millis(500))).build().unwrap(),
    )
    .await
    .unwrap();
    let mut s = a.create_message_streams(HashMap::from([("bi".to_string(), 1)]), dec()).await.unwrap();
    let stream = s.remove("bi").unwrap().pop().unwrap();
    let thread = std::thread::spawn(move || {
        let mut it = stream.into_iter();
        let values: Vec<String> = it.by_ref().take(5).map(|m| m.unwrap().value.unwrap()).collect();
        let t = std::time::Instant::now();
        let timeout = it.next();
        let timeout = match timeout {
            Some(Err(gregor_consumer::Error::ConsumerTimeout { timeout_ms })) => Some(timeout_ms),
            other => panic!("expected ConsumerTimeout, got {other:?}"),
        };
        (values, t.elapsed(), timeout)
    });
    let (values, waited, timeout) = tokio::task::spawn_blocking(move || thread.join().unwrap()).await.unwrap();
    assert_eq!(values, ["m-0-0", "m-0-1", "m-0-2", "m-0-3", "m-0-4"]);
    assert_eq!(timeout, Some(500));
    // at least consumer.timeout.ms; the upper bound only tells a timeout from a hang
    assert!(waited >= Duration::from_millis(450) && waited < Duration::from_secs(15), "{waited:?}");
    a.shutdown().await.unwrap();
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn auto_commit_on_a_timer_commits_only_delivered_offsets() {
    let Some(cluster) = cluster("consumer_auto_commit", 1).await else { return };
    cluster.create_topic("ac", 2, 1).await.unwrap();
    produce_n(&cluster, "ac", 1, 3, "m").await; // partition 0 only; 1 stays empty
    let a = ConsumerConnector::new(
        config(&cluster, "gac").auto_commit_interval(Duration::from_millis(300)).build().unwrap(),
    )
    .await
    .unwrap();
    let mut s = a.create_message_streams(HashMap::from([("ac".to_string(), 1)]), dec()).await.unwrap();
    let stream = &mut s.get_mut("ac").unwrap()[0];
    assert_eq!(drain(stream, 2).await, ["m-0-0", "m-0-1"]);
    let zk = cluster.zk();
    // no commit_offsets(), no shutdown: the timer commits the next offset to read
    eventually("auto commit of 2", Duration::from_secs(5), || async {
        zk.get("/consumers/gac/offsets/ac/0").await.unwrap().is_some_and(|d| d.0 == b"2")
    })
    .await;
    assert_eq!(drain(stream, 1).await, ["m-0-2"]);
    eventually("auto commit of 3", Duration::from_secs(5), || async {
        zk.get("/consumers/gac/offsets/ac/0").await.unwrap().is_some_and(|d| d.0 == b"3")
    })
    .await;
    // partition 1 was reset (auto.offset.reset) but nothing was handed out: nothing committed
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(zk.get("/consumers/gac/offsets/ac/1").await.unwrap(), None);
    a.shutdown().await.unwrap();
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn blacklist_regex_and_exclude_internal_topics() {
    let Some(cluster) = cluster("consumer_blacklist", 1).await else { return };
    for t in ["a1", "b1", "b22"] {
        cluster.create_topic(t, 1, 1).await.unwrap();
    }
    // make the broker create __consumer_offsets (ConsumerMetadata does)
    let _ = coordinator(&cluster, "gbl").await;
    cluster.wait_for_leaders("__consumer_offsets", Duration::from_secs(10)).await.unwrap();
    for (group, exclude) in [("gbl", true), ("gbl2", false)] {
        let a = ConsumerConnector::new(config(&cluster, group).exclude_internal_topics(exclude).build().unwrap())
            .await
            .unwrap();
        let _s =
            a.create_message_streams_by_filter(TopicFilter::Blacklist("b[0-9], c.*".into()), 1, dec()).await.unwrap();
        let (data, _) =
            cluster.zk().get(&format!("/consumers/{group}/ids/{}", a.consumer_id())).await.unwrap().unwrap();
        assert!(String::from_utf8(data).unwrap().contains(r#""subscription":{"b[0-9]|c.*":1},"pattern":"black_list""#));
        let topics: std::collections::BTreeSet<String> = a.owned_partitions().into_keys().map(|tp| tp.topic).collect();
        let mut expect = vec!["a1".to_string(), "b22".to_string()];
        if !exclude {
            expect.insert(0, "__consumer_offsets".into());
        }
        assert_eq!(topics.into_iter().collect::<Vec<_>>(), expect, "group {group}");
        a.shutdown().await.unwrap();
    }
    // an invalid regex is refused up front
    let a = ConsumerConnector::new(config(&cluster, "gbl3").build().unwrap()).await.unwrap();
    assert!(matches!(
        a.create_message_streams_by_filter(TopicFilter::Whitelist("a(".into()), 1, dec()).await,
        Err(gregor_consumer::Error::InvalidSubscription(_))
    ));
    a.shutdown().await.unwrap();
    cluster.shutdown().await;
}

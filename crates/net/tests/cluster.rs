//! gregor-net against a FakeCluster of three brokers coordinated by a real ZooKeeper.
//!
//! Needs java and ZooKeeper (`apt-get install default-jre-headless zookeeper`): without them the
//! tests fail, or skip when `GREGOR_ALLOW_SKIP=1` is set outside CI.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use gregor_net::{ConnectionConfig, Error, MetadataCache, PoisonReason, Pool};
use gregor_protocol::frame::ApiKey;
use gregor_protocol::messages::{FetchPartition, FetchRequest, FetchTopic, MetadataRequest};
use gregor_protocol::ErrorCode;
use gregor_testkit::fault::{Fault, Rule};
use gregor_testkit::support::cluster_or_skip;

fn pool() -> Pool {
    Pool::new(ConnectionConfig::builder().client_id("gregor-net-test").build().unwrap())
}

/// An address nothing listens on (connections are refused).
fn dead_addr() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    addr.to_string()
}

fn fetch(topic: &str, partition: i32, offset: i64, max_wait_ms: i32) -> FetchRequest {
    FetchRequest {
        max_wait_time: max_wait_ms,
        min_bytes: 1,
        topics: vec![FetchTopic::new(topic, vec![FetchPartition::new(partition, offset, 1 << 20)])],
        ..Default::default()
    }
}

fn topics(names: &[&str]) -> Vec<String> {
    names.iter().map(|t| (*t).to_owned()).collect()
}

/// Refreshes until `ready` holds (leader moves take a moment), or panics after 10 s.
async fn refresh_until(cache: &MetadataCache, topic: &str, ready: impl Fn(&MetadataCache) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        cache.refresh(&topics(&[topic])).await.expect("a broker answers");
        if ready(cache) {
            return;
        }
        assert!(Instant::now() < deadline, "metadata of {topic} never got there: {:?}", cache.snapshot());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_refresh_skips_a_dead_bootstrap_address_and_finds_the_leaders() {
    let c = cluster_or_skip!("net-bootstrap");
    c.create_topic("t", 3, 2).await.unwrap();
    let list = format!("{},{}", dead_addr(), c.bootstrap());
    let cache = MetadataCache::new(&list, pool()).unwrap();
    assert!(cache.needs_refresh(Duration::from_secs(600)), "nothing fetched yet");
    cache.refresh(&topics(&["t"])).await.unwrap();
    assert!(!cache.needs_refresh(Duration::from_secs(600)));
    assert_eq!(cache.brokers().iter().map(|b| b.id).collect::<Vec<_>>(), [0, 1, 2]);
    assert_eq!(cache.partitions("t"), [0, 1, 2]);
    assert_eq!(cache.available_partitions("t"), [0, 1, 2]);
    assert_eq!(cache.topic_error("t"), None);
    for p in 0..3 {
        let leader = cache.leader("t", p).unwrap();
        assert_eq!(Some(leader), c.leader("t", p));
        assert_eq!(cache.leader_addr("t", p), c.broker_addr(leader).map(|a| a.to_string()));
        let conn = cache.leader_connection("t", p).await.unwrap();
        assert_eq!(conn.broker_id(), Some(leader));
        let r = conn.request(0, &fetch("t", p, 0, 0)).await.unwrap();
        assert_eq!(r.topics[0].partitions[0].error_code, 0, "the leader serves t/{p}");
    }
    // the pool learnt the broker ids from the refresh
    for (id, addr) in c.broker_addrs() {
        assert_eq!(cache.pool().broker_addr(id), Some(addr.to_string()));
    }
    // an all-topics refresh lists every topic
    cache.refresh(&[]).await.unwrap();
    assert!(cache.snapshot().topics().any(|t| t == "t"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_reachable_broker_is_a_typed_error_after_the_rounds() {
    let (a, b) = (dead_addr(), dead_addr());
    let config = gregor_net::MetadataConfig::builder()
        .retry_backoff(Duration::from_millis(10))
        .retry_backoff_max(Duration::from_millis(20))
        .refresh_rounds(2)
        .build()
        .unwrap();
    let cache = MetadataCache::with_config(&format!("{a},{b}"), pool(), config).unwrap();
    let err = cache.refresh(&topics(&["t"])).await.unwrap_err();
    match &err {
        Error::NoBrokerAvailable { tried, last } => {
            assert_eq!(tried, &[a.clone(), b.clone()]);
            assert!(matches!(last.as_deref(), Some(Error::Connect { .. })), "{last:?}");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.is_retriable());
    assert!(err.to_string().starts_with("no broker answered metadata (tried "), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_to_different_brokers_run_concurrently() {
    let c = cluster_or_skip!("net-concurrent");
    c.create_topic_with("slow", BTreeMap::from([(0, vec![0]), (1, vec![1])]), BTreeMap::new()).await.unwrap();
    let cache = MetadataCache::new(&c.bootstrap(), pool()).unwrap();
    cache.refresh(&topics(&["slow"])).await.unwrap();
    let (l0, l1) = (cache.leader("slow", 0).unwrap(), cache.leader("slow", 1).unwrap());
    assert_ne!(l0, l1);
    let (c0, c1) = (cache.pool().get(l0).await.unwrap(), cache.pool().get(l1).await.unwrap());
    // two long polls on empty partitions: each broker holds its fetch for max_wait (1 s)
    c.clear_requests();
    let started = Instant::now();
    let (f0, f1) = (fetch("slow", 0, 0, 1000), fetch("slow", 1, 0, 1000));
    let (r0, r1) = tokio::join!(c0.request(0, &f0), c1.request(0, &f1));
    let took = started.elapsed();
    for r in [r0.unwrap(), r1.unwrap()] {
        let p = &r.topics[0].partitions[0];
        assert_eq!((p.error_code, p.message_set.len()), (0, 0));
    }
    assert!(took >= Duration::from_millis(900), "the brokers held the fetches: {took:?}");
    // both fetches reached their brokers within the hold: one after the other, the second
    // would have arrived only after the first was answered, a second later
    let arrived: Vec<std::time::SystemTime> =
        c.requests().iter().filter(|r| r.header.api_key == ApiKey::Fetch).map(|r| r.at).collect();
    assert_eq!(arrived.len(), 2);
    let spread = arrived[0].max(arrived[1]).duration_since(arrived[0].min(arrived[1])).unwrap();
    assert!(spread < Duration::from_secs(1), "the two fetches ran one after the other: {spread:?} apart");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_requests_pipeline_on_one_connection() {
    let c = cluster_or_skip!("net-pipeline");
    c.create_topic("p", 1, 1).await.unwrap();
    let p = pool();
    let conn = p.get_addr(&c.broker_addr(0).unwrap().to_string()).await.unwrap();
    let requests: Vec<MetadataRequest> = (0..100).map(|_| MetadataRequest::for_topics(topics(&["p"]))).collect();
    let answers = futures_join_all(&conn, &requests).await;
    assert_eq!(answers, 100);
    assert_eq!(conn.in_flight(), 0);
    assert!(!conn.is_poisoned());
    let ids: Vec<i32> = c.requests().iter().map(|r| r.header.correlation_id).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 100, "every request had its own correlation id");
    assert!(c.requests().iter().all(|r| r.header.client_id.as_deref() == Some("gregor-net-test")));
}

/// Runs the requests concurrently on one connection and counts the good answers.
async fn futures_join_all(conn: &gregor_net::BrokerConnection, requests: &[MetadataRequest]) -> usize {
    let mut set = tokio::task::JoinSet::new();
    for r in requests {
        let (conn, r) = (conn.clone(), r.clone());
        set.spawn(async move { conn.request(0, &r).await });
    }
    let mut ok = 0;
    while let Some(r) = set.join_next().await {
        let md = r.unwrap().unwrap();
        assert_eq!(md.topics[0].name(), "p");
        ok += 1;
    }
    ok
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leader_fails_its_connection_and_a_refresh_finds_the_new_one() {
    let c = cluster_or_skip!("net-killed-leader");
    c.create_topic("k", 1, 2).await.unwrap();
    let cache = MetadataCache::new(&c.bootstrap(), pool()).unwrap();
    cache.refresh(&topics(&["k"])).await.unwrap();
    let old = cache.leader("k", 0).unwrap();
    let conn = cache.leader_connection("k", 0).await.unwrap();
    conn.request(0, &fetch("k", 0, 0, 0)).await.unwrap();

    c.kill_broker(old).await.unwrap();
    let err = conn.request(0, &fetch("k", 0, 0, 0)).await.unwrap_err();
    assert!(err.is_retriable() && err.needs_metadata_refresh(), "{err:?}");
    // EOF, or a reset when the request was written into the closing socket
    assert!(
        matches!(err.poison_reason(), Some(PoisonReason::BrokerClosed { .. } | PoisonReason::Io { .. })),
        "{err:?}"
    );
    assert!(conn.is_poisoned());

    cache.invalidate("k");
    assert!(cache.needs_refresh(Duration::from_secs(600)));
    assert!(cache.topic_needs_refresh("k"));
    refresh_until(&cache, "k", |m| m.leader("k", 0).is_some_and(|l| l != old)).await;
    let new = cache.leader("k", 0).unwrap();
    assert_eq!(Some(new), c.leader("k", 0));
    assert!(!cache.brokers().iter().any(|b| b.id == old), "the dead broker is gone from the metadata");
    // a replica is down: ReplicaNotAvailable, with a leader that serves
    let info = cache.snapshot().partition("k", 0).cloned().unwrap();
    assert_eq!(info.error, Some(ErrorCode::ReplicaNotAvailable));
    assert_eq!(cache.available_partitions("k"), [0]);
    let conn = cache.leader_connection("k", 0).await.unwrap();
    let r = conn.request(0, &fetch("k", 0, 0, 0)).await.unwrap();
    assert_eq!(r.topics[0].partitions[0].error_code, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_reconnects_after_a_broker_restart() {
    let c = cluster_or_skip!("net-restart");
    let pool = pool();
    pool.set_brokers(c.broker_addrs().into_iter().map(|(id, a)| (id, a.to_string())));
    let md = MetadataRequest::all_topics();
    let first = pool.get(1).await.unwrap();
    first.request(0, &md).await.unwrap();
    assert!(pool.get(1).await.unwrap().same_connection(&first), "the connection is shared");

    c.kill_broker(1).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !first.is_poisoned() {
        assert!(Instant::now() < deadline, "the dead broker's connection was never noticed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let err = pool.get(1).await.unwrap_err();
    assert!(matches!(err, Error::Connect { .. }) && err.is_retriable(), "{err:?}");

    c.restart_broker(1).await.unwrap();
    let second = pool.get(1).await.unwrap();
    assert!(!second.same_connection(&first));
    second.request(0, &md).await.unwrap();
    assert!(first.request(0, &md).await.is_err(), "the old connection stays dead");
    assert!(matches!(pool.get(7).await.unwrap_err(), Error::UnknownBroker { broker_id: 7 }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_poisons_and_a_retry_through_the_pool_succeeds() {
    let c = cluster_or_skip!("net-drop");
    let pool = pool();
    pool.set_brokers(c.broker_addrs().into_iter().map(|(id, a)| (id, a.to_string())));
    let md = MetadataRequest::all_topics();
    let conn = pool.get(2).await.unwrap();
    c.intercept(Rule::on(ApiKey::Metadata, Fault::Close).once().on_broker(2));
    let err = conn.request(0, &md).await.unwrap_err();
    let reason = err.poison_reason().unwrap_or_else(|| panic!("{err:?}"));
    assert!(matches!(reason, PoisonReason::BrokerClosed { in_flight: 1, .. }), "{reason:?}");
    assert!(reason.has_hint(), "{err}");
    assert!(err.is_retriable());
    assert!(conn.is_poisoned());
    let retry = pool.get(2).await.unwrap();
    assert!(!retry.same_connection(&conn));
    let answer = retry.request(0, &md).await.unwrap();
    assert_eq!(answer.brokers.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn intercepted_errors_and_delays_reach_the_caller() {
    let c = cluster_or_skip!("net-intercepts");
    c.create_topic("e", 1, 1).await.unwrap();
    let cache = MetadataCache::new(&c.bootstrap(), pool()).unwrap();
    cache.refresh(&topics(&["e"])).await.unwrap();
    let leader = cache.leader("e", 0).unwrap();
    c.intercept(Rule::on(ApiKey::Fetch, Fault::Error(ErrorCode::NotLeaderForPartition)).once());
    let conn = cache.leader_connection("e", 0).await.unwrap();
    let r = conn.request(0, &fetch("e", 0, 0, 0)).await.unwrap();
    assert_eq!(r.topics[0].partitions[0].error(), Some(ErrorCode::NotLeaderForPartition));
    // a delayed response is still matched; other requests wait behind it on the broker
    c.intercept(Rule::on(ApiKey::Fetch, Fault::Delay(Duration::from_millis(200))).once().on_broker(leader));
    let started = Instant::now();
    let r = conn.request(0, &fetch("e", 0, 0, 0)).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(r.topics[0].partitions[0].error_code, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_response_times_out_and_poisons() {
    let c = cluster_or_skip!("net-no-response");
    let config = ConnectionConfig::builder().request_timeout(Duration::from_millis(300)).build().unwrap();
    let pool = Pool::new(config);
    pool.set_brokers(c.broker_addrs().into_iter().map(|(id, a)| (id, a.to_string())));
    c.intercept(Rule::on(ApiKey::Metadata, Fault::NoResponse).once().on_broker(0));
    let conn = pool.get(0).await.unwrap();
    let err = conn.request(0, &MetadataRequest::all_topics()).await.unwrap_err();
    assert!(matches!(err, Error::Timeout { api: ApiKey::Metadata, .. }), "{err:?}");
    assert!(conn.is_poisoned());
    pool.get(0).await.unwrap().request(0, &MetadataRequest::all_topics()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_brokers_and_leader_not_available_are_not_fatal() {
    // KAFKA-1867: a 0.8.2.2 cluster without topics answers Metadata with zero brokers
    let c = cluster_or_skip!("net-kafka-1867", |cfg| cfg.empty_cluster_lists_no_brokers = true);
    let cache = MetadataCache::new(&c.bootstrap(), pool()).unwrap();
    cache.refresh(&[]).await.unwrap();
    assert!(cache.brokers().is_empty(), "nothing known, and that is not an error");
    assert!(cache.refreshed_at().is_some());
    // auto-creation: the first answer is LeaderNotAvailable, later ones have leaders
    cache.refresh(&topics(&["auto"])).await.unwrap();
    assert_eq!(cache.topic_error("auto"), Some(ErrorCode::LeaderNotAvailable));
    assert!(cache.available_partitions("auto").is_empty());
    assert!(cache.topic_needs_refresh("auto"));
    assert!(matches!(cache.leader_connection("auto", 0).await.unwrap_err(), Error::NoLeader { .. }));
    refresh_until(&cache, "auto", |m| m.topic_error("auto").is_none() && m.leader("auto", 0).is_some()).await;
    assert_eq!(cache.brokers().len(), 3);
    let conn = cache.leader_connection("auto", 0).await.unwrap();
    conn.request(0, &fetch("auto", 0, 0, 0)).await.unwrap();
}

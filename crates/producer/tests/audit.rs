//! Audit on a 3-broker FakeCluster: what producers with audit on publish to the audit topic
//! (counts, offset ranges and fingerprints per topic, partition and window; failures; acks=0
//! counts), when (window ends, close, the last handle's drop), and that audit records take no
//! place in the application's queue.
//!
//! Needs java and ZooKeeper (`apt-get install default-jre-headless zookeeper`): without them the
//! tests fail, or skip when `GREGOR_ALLOW_SKIP=1` is set outside CI.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::*;
use gregor_producer::audit::{fingerprint, AuditConfig, DEFAULT_AUDIT_TOPIC};
use gregor_producer::{AsyncProducer, EnqueueTimeout, Error, Record, SendError, SyncProducer};
use gregor_serde::StringEncoder;
use gregor_testkit::support::cluster_or_skip;
use serde_json::Value;

const AUDIT: &str = DEFAULT_AUDIT_TOPIC;

fn audited(config: gregor_producer::ProducerConfigBuilder, audit: AuditConfig) -> AsyncProducer<String, String> {
    AsyncProducer::with_audit(config.build().unwrap(), audit, StringEncoder::new(), StringEncoder::new()).unwrap()
}

/// The audit records in the audit topic (its other messages left out).
async fn audit_records(c: &gregor_testkit::FakeCluster) -> Vec<Value> {
    read_log(c, AUDIT, 0)
        .await
        .into_iter()
        .filter_map(|(_, _, v)| serde_json::from_str::<Value>(&v).ok())
        .filter(|v| v.get("version").is_some())
        .collect()
}

/// Polls the audit topic until `ready` holds for its records (or panics after 10 s).
async fn audit_records_when(c: &gregor_testkit::FakeCluster, ready: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let records = audit_records(c).await;
        if ready(&records) {
            return records;
        }
        assert!(std::time::Instant::now() < deadline, "the audit records did not come: {records:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"))
}

/// Per (topic, partition): the count, the offsets of the ranges and their fingerprints summed.
type Claimed = BTreeMap<(String, i32), (u64, Vec<i64>, u64)>;

fn claimed(records: &[Value]) -> Claimed {
    let mut out = Claimed::new();
    for r in records {
        let topic = r["topic"].as_str().unwrap().to_owned();
        for (p, body) in r["partitions"].as_object().unwrap() {
            let e = out.entry((topic.clone(), p.parse().unwrap())).or_default();
            e.0 += u(body, "count");
            for range in body["ranges"].as_array().unwrap() {
                let (first, last) = (range[0].as_i64().unwrap(), range[1].as_i64().unwrap());
                e.1.extend(first..=last);
                e.2 = e.2.wrapping_add(range[2].as_u64().unwrap());
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_records_are_published_per_topic_and_window_with_their_offsets() {
    let c = cluster_or_skip!("audit-windows");
    c.create_topic("t", 2, 1).await.unwrap();
    c.create_topic("u", 1, 1).await.unwrap();
    c.create_topic(AUDIT, 1, 1).await.unwrap();
    let window = Duration::from_millis(200);
    let p = audited(config(&c), AuditConfig::new().window(window).producer_name("audit-test"));
    // what the application saw: (topic, partition) -> offset -> value
    let mut acked: BTreeMap<(String, i32), BTreeMap<i64, String>> = BTreeMap::new();
    for round in 0..3 {
        let mut deliveries = Vec::new();
        for i in 0..10 {
            let value = format!("t-{round}-{i}");
            deliveries.push((value.clone(), p.send(Record::new("t", value).with_partition(i % 2)).await.unwrap()));
        }
        for i in 0..5 {
            let value = format!("u-{round}-{i}");
            deliveries.push((value.clone(), p.send(Record::new("u", value)).await.unwrap()));
        }
        for (value, d) in deliveries {
            let m = d.bounded().await.unwrap();
            acked.entry((m.topic.to_string(), m.partition)).or_default().insert(m.offset, value);
        }
        // the next round acknowledges in another window
        tokio::time::sleep(window + Duration::from_millis(50)).await;
    }
    // failures are counted as failed, per topic
    for _ in 0..2 {
        let failed = p.send(Record::new("t", "nowhere".to_owned()).with_partition(9)).await.unwrap().bounded().await;
        assert!(matches!(failed.unwrap_err().error, Error::InvalidPartition { .. }));
    }
    // the application's own record to the audit topic is not audited
    p.send(Record::new(AUDIT, "not an audit record".to_owned())).await.unwrap().bounded().await.unwrap();
    assert!(p.close(Duration::from_secs(10)).bounded().await.is_ok());

    let records = audit_records(&c).await;
    assert!(records.iter().all(|r| r["topic"] != AUDIT), "the audit topic is not audited");
    let session = records[0]["session"].as_str().unwrap().to_owned();
    assert_eq!(session.len(), 16);
    let mut seqs = BTreeSet::new();
    let mut windows: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    for r in &records {
        assert_eq!((u(r, "version"), r["producer"].as_str(), u(r, "window_ms")), (1, Some("audit-test"), 200));
        assert_eq!(r["session"], session.as_str());
        assert_eq!(r["acks"], 1);
        assert_eq!(u(r, "window_start_ms") % 200, 0, "windows are aligned to the epoch");
        assert!(seqs.insert(u(r, "seq")), "a seq each");
        windows.entry(r["topic"].as_str().unwrap().to_owned()).or_default().insert(u(r, "window_start_ms"));
    }
    assert_eq!(seqs, (0..records.len() as u64).collect(), "numbered from 0 without gaps");
    assert!(windows["t"].len() >= 3, "three rounds, three windows at least: {windows:?}");
    let failed: u64 = records.iter().filter(|r| r["topic"] == "t").map(|r| u(r, "failed")).sum();
    assert_eq!(failed, 2);

    let claimed = claimed(&records);
    assert_eq!(claimed.keys().cloned().collect::<Vec<_>>(), acked.keys().cloned().collect::<Vec<_>>());
    for (tp, by_offset) in &acked {
        let (count, offsets, fp) = &claimed[tp];
        assert_eq!(*count, by_offset.len() as u64, "{tp:?}");
        let mut offsets = offsets.clone();
        offsets.sort_unstable();
        assert_eq!(offsets, by_offset.keys().copied().collect::<Vec<_>>(), "{tp:?}: the acknowledged offsets");
        let want =
            by_offset.values().fold(0u64, |s, v| s.wrapping_add(u64::from(fingerprint(None, Some(v.as_bytes())))));
        assert_eq!(*fp, want, "{tp:?}: the fingerprints of the acknowledged values");
    }
    // and the log agrees with the fingerprints
    for ((topic, partition), by_offset) in &acked {
        let log: BTreeMap<i64, String> =
            read_log(&c, topic, *partition).await.into_iter().map(|(o, _, v)| (o, v)).collect();
        assert_eq!(&log, by_offset);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_producer_with_acks_0_publishes_counts_without_offsets_at_close() {
    let c = cluster_or_skip!("audit-sync-acks0");
    c.create_topic("t", 1, 1).await.unwrap();
    c.create_topic(AUDIT, 1, 1).await.unwrap();
    let config = config(&c).request_required_acks(0).build().unwrap();
    let thread = std::thread::spawn(move || {
        let p: SyncProducer<String, String> = SyncProducer::with_audit(
            config,
            AuditConfig::new().window(Duration::from_secs(3600)),
            StringEncoder::new(),
            StringEncoder::new(),
        )
        .unwrap();
        for i in 0..7 {
            assert_eq!(p.send(Record::new("t", i.to_string())).unwrap().offset, -1, "acks=0: no offset");
        }
        p.close(Duration::from_secs(5))
    });
    eventually("the sync producer's sends and close", LIVENESS, async || thread.is_finished()).await;
    assert!(thread.join().unwrap().is_ok());
    let records = audit_records_when(&c, |r| !r.is_empty()).await;
    assert_eq!(records.len(), 1, "{records:?}");
    let r = &records[0];
    assert_eq!(r["acks"], 0);
    assert_eq!(r["partitions"]["0"]["count"], 7);
    assert_eq!(r["partitions"]["0"]["ranges"], serde_json::json!([]), "no offsets with acks=0");
    let producer = r["producer"].as_str().unwrap();
    assert!(producer.starts_with("gregor-producer-test@"), "client.id@host:pid: {producer}");
    assert!(producer.ends_with(&format!(":{}", std::process::id())), "{producer}");
    assert_eq!(log_values(&c, "t", 0).await.len(), 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_last_handle_publishes_the_last_window() {
    let c = cluster_or_skip!("audit-drop");
    c.create_topic("t", 1, 1).await.unwrap();
    c.create_topic(AUDIT, 1, 1).await.unwrap();
    let p = audited(config(&c), AuditConfig::new());
    for i in 0..3 {
        p.send(Record::new("t", i.to_string())).await.unwrap().bounded().await.unwrap();
    }
    drop(p);
    let records = audit_records_when(&c, |r| !r.is_empty()).await;
    assert_eq!(claimed(&records)[&("t".to_owned(), 0)].1, [0, 1, 2]);
    assert_eq!(u(&records[0], "window_ms"), 60_000, "the default window");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_records_take_no_place_in_the_queue() {
    let c = cluster_or_skip!("audit-queue");
    c.create_topic("t", 1, 1).await.unwrap();
    c.create_topic(AUDIT, 1, 1).await.unwrap();
    let p = audited(
        config(&c)
            .queue_buffering_max_messages(10)
            .batch_num_messages(10)
            .queue_enqueue_timeout(EnqueueTimeout::FailFast),
        AuditConfig::new().window(Duration::from_millis(100)),
    );
    // several windows' audit records published (and their results handled)
    for round in 0..4 {
        p.send(Record::new("t", round.to_string())).await.unwrap().bounded().await.unwrap();
        tokio::time::sleep(Duration::from_millis(120)).await;
    }
    let records = audit_records_when(&c, |r| r.len() >= 3).await;
    assert!(records.len() >= 3);
    assert_eq!(p.queued(), 0);
    // the queue still holds exactly queue.buffering.max.messages: no place was given back twice
    pause_all(&c);
    let mut held = Vec::new();
    for i in 0..10 {
        held.push(p.send(Record::new("t", format!("held-{i}"))).await.expect("room for 10"));
    }
    let refused = p.send(Record::new("t", "11th".to_owned())).await;
    assert!(matches!(refused, Err(SendError::QueueFull { capacity: 10, .. })), "{refused:?}");
    resume_all(&c);
    for d in held {
        d.bounded().await.unwrap();
    }
    assert!(p.close(Duration::from_secs(10)).bounded().await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_audit_settings_are_config_errors() {
    let config = gregor_producer::ProducerConfig::builder().metadata_broker_list("127.0.0.1:9").build().unwrap();
    let bad = AsyncProducer::<String, String>::with_audit(
        config,
        AuditConfig::new().topic("no spaces"),
        StringEncoder::new(),
        StringEncoder::new(),
    );
    match bad {
        Err(Error::Config(e)) => assert!(e.to_string().contains("audit.topic"), "{e}"),
        other => panic!("{other:?}"),
    }
}

//! The AsyncProducer against a 3-broker FakeCluster coordinated by a real ZooKeeper: queue
//! policies, acks levels, batching triggers, compression, partitioners, flush, close, drop.
//!
//! Needs java and ZooKeeper (`apt-get install default-jre-headless zookeeper`): without them the
//! tests fail, or skip when `GREGOR_ALLOW_SKIP=1` is set outside CI.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use gregor_producer::{
    murmur2_partition, AsyncProducer, DeliveryHandler, DeliveryResult, EnqueueTimeout, Error, PartitionerKind, Record,
    RecordMetadata, SendError,
};
use gregor_protocol::frame::ApiKey;
use gregor_protocol::messages::AnyRequest;
use gregor_protocol::{Compression, ErrorCode};
use gregor_testkit::support::{self, cluster_or_skip};
use gregor_testkit::FakeCluster;

fn rec(topic: &str, value: impl ToString) -> Record<String, String> {
    Record::new(topic, value.to_string())
}

/// Sends one record and waits for it (without waiting for the linger): metadata and
/// connections are then in place.
async fn warm(p: &AsyncProducer<String, String>, topic: &str) -> RecordMetadata {
    let delivery = p.send(rec(topic, "warm")).await.unwrap();
    assert!(p.flush().bounded().await.is_ok());
    delivery.bounded().await.expect("the warm-up record is delivered")
}

fn strings(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| i.to_string()).collect()
}

// ---------------------------------------------------------------------------------------
// queue policies

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_block_waits_while_the_cluster_is_paused_and_proceeds_after_resume() {
    let c = cluster_or_skip!("queue-block");
    c.create_topic("t", 1, 1).await.unwrap();
    let p = producer(config(&c).queue_buffering_max_messages(10).batch_num_messages(10));
    assert_eq!(p.config().queue_enqueue_timeout(), EnqueueTimeout::Block, "the default");
    warm(&p, "t").await;
    pause_all(&c);
    let mut deliveries = Vec::new();
    for i in 0..10 {
        deliveries.push(p.send(rec("t", i)).await.unwrap());
    }
    assert_eq!(p.queued(), 10);
    let blocked = {
        let p = p.clone();
        tokio::spawn(async move { p.send(rec("t", "11th")).await.map_err(|e| e.to_string()) })
    };
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!blocked.is_finished(), "the 11th send waits for room while the cluster is paused");
    resume_all(&c);
    let eleventh = tokio::time::timeout(Duration::from_secs(10), blocked).await.unwrap().unwrap().unwrap();
    for d in deliveries {
        d.bounded().await.unwrap();
    }
    assert_eq!(eleventh.bounded().await.unwrap().offset, 11);
    let mut want = vec!["warm".to_owned()];
    want.extend(strings(0..10));
    want.push("11th".into());
    assert_eq!(log_values(&c, "t", 0).await, want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_fail_fast_is_queue_full_at_once_with_the_record_back() {
    let c = cluster_or_skip!("queue-fail-fast");
    c.create_topic("t", 1, 1).await.unwrap();
    let p = producer(
        config(&c)
            .queue_buffering_max_messages(10)
            .batch_num_messages(10)
            .queue_enqueue_timeout(EnqueueTimeout::FailFast),
    );
    warm(&p, "t").await;
    pause_all(&c);
    let mut deliveries = Vec::new();
    for i in 0..10 {
        deliveries.push(p.send(rec("t", i)).await.unwrap());
    }
    let started = Instant::now();
    let e = p.send(rec("t", "11th")).await.unwrap_err();
    // "at once" is the error's `waited` of zero; the clock only tells it from blocking until
    // the brokers come back (never, here)
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    match &e {
        SendError::QueueFull { capacity, waited, .. } => assert_eq!((*capacity, *waited), (10, Duration::ZERO)),
        other => panic!("{other:?}"),
    }
    assert_eq!(e.into_record().value, "11th");
    resume_all(&c);
    for d in deliveries {
        d.bounded().await.unwrap();
    }
    assert_eq!(log_values(&c, "t", 0).await.len(), 11);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_timeout_waits_the_configured_time_then_queue_full() {
    let c = cluster_or_skip!("queue-timeout");
    c.create_topic("t", 1, 1).await.unwrap();
    let wait = Duration::from_millis(400);
    let p = producer(
        config(&c)
            .queue_buffering_max_messages(10)
            .batch_num_messages(10)
            .queue_enqueue_timeout(EnqueueTimeout::Wait(wait)),
    );
    warm(&p, "t").await;
    pause_all(&c);
    let mut deliveries = Vec::new();
    for i in 0..10 {
        deliveries.push(p.send(rec("t", i)).await.unwrap());
    }
    let started = Instant::now();
    let e = p.send(rec("t", "11th")).await.unwrap_err();
    let elapsed = started.elapsed();
    // at least the configured wait; the upper bound only tells it from blocking until the
    // brokers come back (never, here)
    assert!(elapsed >= wait && elapsed < wait + Duration::from_secs(5), "{elapsed:?}");
    match e {
        SendError::QueueFull { waited, record, .. } => {
            assert!(waited >= wait, "{waited:?}");
            assert_eq!(record.value, "11th");
        }
        other => panic!("{other:?}"),
    }
    resume_all(&c);
    for d in deliveries {
        d.bounded().await.unwrap();
    }
}

// ---------------------------------------------------------------------------------------
// acks levels

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_0_offsets_are_unknown_and_the_messages_land() {
    let c = cluster_or_skip!("acks-0");
    c.create_topic("t", 3, 1).await.unwrap();
    let p = producer(config(&c).request_required_acks(0).partitioner(PartitionerKind::RoundRobin));
    let mut deliveries = Vec::new();
    for i in 0..30 {
        deliveries.push(p.send(rec("t", i)).await.unwrap());
    }
    for d in deliveries {
        assert_eq!(d.bounded().await.unwrap().offset, -1, "acks=0: no response, no offset");
    }
    eventually("30 messages in the logs", Duration::from_secs(5), async || {
        (0..3).map(|p| c.offsets("t", p).unwrap().0).sum::<i64>() == 30
    })
    .await;
    let mut all: Vec<String> = Vec::new();
    for part in 0..3 {
        all.extend(log_values(&c, "t", part).await);
    }
    all.sort_by_key(|v| v.parse::<u32>().unwrap());
    assert_eq!(all, strings(0..30));
    assert!(produce_requests(&c, "t").iter().all(|r| r.required_acks == 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_1_gives_each_record_its_offset() {
    let c = cluster_or_skip!("acks-1");
    c.create_topic("t", 3, 2).await.unwrap();
    let p = producer(config(&c).request_required_acks(1));
    let mut deliveries = Vec::new();
    for i in 0..60 {
        deliveries.push((i, p.send(rec("t", i).with_key(format!("k{}", i % 7))).await.unwrap()));
    }
    let mut by_partition: BTreeMap<i32, Vec<(i64, String)>> = BTreeMap::new();
    for (i, d) in deliveries {
        let m = d.bounded().await.unwrap();
        by_partition.entry(m.partition).or_default().push((m.offset, i.to_string()));
    }
    for (part, records) in by_partition {
        let offsets: Vec<i64> = records.iter().map(|(o, _)| *o).collect();
        assert_eq!(offsets, (0..records.len() as i64).collect::<Vec<_>>(), "offsets in send order on {part}");
        // acks=1 answers before the follower has the records: consumers see them once the
        // high watermark moves
        let n = records.len() as i64;
        eventually("the follower catches up", Duration::from_secs(5), async || c.offsets("t", part).unwrap().0 == n)
            .await;
        let log = read_log(&c, "t", part).await;
        let log: Vec<(i64, String)> = log.into_iter().map(|(o, _, v)| (o, v)).collect();
        assert_eq!(log, records);
    }
    assert!(produce_requests(&c, "t").iter().all(|r| r.required_acks == 1));
}

/// max.in.flight.requests.per.connection 4: batches of one partition are pipelined (the
/// accumulator's unit tests show the rounds); without failures every record lands, in send
/// order, with ascending offsets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_deliver_everything_in_order_without_failures() {
    let c = cluster_or_skip!("in-flight");
    c.create_topic("t", 1, 2).await.unwrap();
    let p = producer(config(&c).request_required_acks(1).batch_num_messages(20).max_in_flight(4));
    let mut deliveries = Vec::new();
    for i in 0..2000 {
        deliveries.push(p.send(rec("t", i).with_partition(0)).await.unwrap());
    }
    let mut offsets = Vec::new();
    for d in deliveries {
        offsets.push(d.bounded().await.unwrap().offset);
    }
    assert_eq!(offsets, (0..2000).collect::<Vec<i64>>());
    eventually("the follower catches up", Duration::from_secs(5), async || c.offsets("t", 0).unwrap().0 == 2000).await;
    assert_eq!(log_values(&c, "t", 0).await, strings(0..2000));
    assert!(produce_requests(&c, "t").len() >= 100, "batches of 20");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_all_with_replication_factor_3() {
    let c = cluster_or_skip!("acks-all");
    c.create_topic("t", 3, 3).await.unwrap();
    let p = producer(config(&c).request_required_acks(-1).partitioner(PartitionerKind::RoundRobin));
    let mut deliveries = Vec::new();
    for i in 0..30 {
        deliveries.push(p.send(rec("t", i)).await.unwrap());
    }
    let mut counts = BTreeMap::new();
    for d in deliveries {
        let m = d.bounded().await.unwrap();
        assert!(m.offset >= 0);
        *counts.entry(m.partition).or_insert(0i64) += 1;
    }
    for (part, n) in counts {
        let (hw, leo) = c.offsets("t", part).unwrap();
        assert_eq!((hw, leo), (n, n), "acks=-1: acknowledged means replicated to the ISR (hw) on {part}");
        let (_, _, isr) = c.partition_info("t", part).unwrap();
        assert_eq!(isr.len(), 3);
    }
    assert!(produce_requests(&c, "t").iter().all(|r| r.required_acks == -1 && r.timeout == 10_000));
}

// ---------------------------------------------------------------------------------------
// batching triggers

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_num_messages_sends_one_request_well_before_the_linger() {
    let c = cluster_or_skip!("batch-count");
    c.create_topic("t", 1, 1).await.unwrap();
    let p = producer(
        config(&c)
            .batch_num_messages(50)
            .queue_buffering_max_messages(1000)
            .queue_buffering_max(Duration::from_secs(20)),
    );
    let started = Instant::now();
    let mut deliveries = Vec::new();
    for i in 0..50 {
        deliveries.push(p.send(rec("t", i)).await.unwrap());
    }
    for d in deliveries {
        d.bounded().await.unwrap();
    }
    assert!(started.elapsed() < Duration::from_secs(10), "sent at 50 records, not after the 20 s linger");
    let requests = produced_entries(&c, "t");
    assert_eq!(requests.len(), 1, "one Produce request");
    assert_eq!(requests[0].len(), 50);
}

/// A Message v0 entry of an 8-byte value ("value-00") and no key.
const ENTRY_OF_8_BYTES: usize = 26 + 8;

/// A producer whose batches hold five such entries (`batch.size`), lingering 60 s.
fn five_entry_batches(c: &FakeCluster) -> AsyncProducer<String, String> {
    producer(
        config(c)
            .batch_num_messages(1000)
            .queue_buffering_max_messages(1000)
            .batch_size(Some(5 * ENTRY_OF_8_BYTES))
            .queue_buffering_max(Duration::from_secs(60)),
    )
}

/// `batch.size` bounds each partition's batch in bytes (Message v0 entries: 26 bytes + the
/// value here): a full batch goes well before the linger, the record that did not fit begins
/// the next, and what is left waits for the linger (here a flush).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_size_sends_full_batches_before_the_linger_each_within_its_bytes() {
    let c = cluster_or_skip!("batch-size");
    c.create_topic("t", 1, 1).await.unwrap();
    let p = five_entry_batches(&c);
    let entry = ENTRY_OF_8_BYTES;
    let started = Instant::now();
    let mut deliveries = Vec::new();
    for i in 0..12 {
        deliveries.push(p.send(rec("t", format!("value-{i:02}"))).await.unwrap());
    }
    let left = deliveries.split_off(10);
    for d in deliveries {
        d.bounded().await.unwrap();
    }
    assert!(started.elapsed() < Duration::from_secs(20), "two full batches sent, not after the 60 s linger");
    assert!(p.flush().bounded().await.is_ok());
    for d in left {
        d.bounded().await.unwrap();
    }
    let mut batches = Vec::new();
    for request in produce_requests(&c, "t") {
        for partition in request.topics.iter().flat_map(|t| &t.partitions) {
            assert!(partition.message_set.len() <= 5 * entry, "a batch of {} bytes", partition.message_set.len());
            let values: Vec<String> = partition
                .message_set
                .entries()
                .map(|e| String::from_utf8(e.unwrap().message.value.unwrap().to_vec()).unwrap())
                .collect();
            batches.push(values);
        }
    }
    let expected: Vec<Vec<String>> =
        [0..5, 5..10, 10..12].into_iter().map(|r| r.map(|i| format!("value-{i:02}")).collect()).collect();
    assert_eq!(batches, expected);
    assert_eq!(log_values(&c, "t", 0).await, expected.concat());
}

/// `delivery.timeout.ms` against a paused broker: the record in flight fails when its request
/// gives up (past the deadline, instead of a retry, with the network failure as `last`), the
/// records queued behind it fail after it (results in order) without ever being sent, each
/// within about the timeout plus a request; a record sent after the broker is back goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivery_timeout_fails_records_that_waited_too_long_in_order() {
    let c = cluster_or_skip!("delivery-timeout");
    c.create_topic("t", 1, 1).await.unwrap();
    let timeout = Duration::from_millis(1500);
    let p = producer(
        config(&c)
            .request_timeout(Duration::from_millis(1000))
            .delivery_timeout(Some(timeout))
            .message_send_max_retries(1000),
    );
    warm(&p, "t").await;
    pause_all(&c);
    let results = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = |i: usize| {
        let results = results.clone();
        move |r: DeliveryResult| {
            // the value comes back with the error: nothing is lost
            let r = r.map(|_| ()).map_err(|e| (e.error, e.value.map(|v| String::from_utf8(v.to_vec()).unwrap())));
            results.lock().unwrap().push((i, Instant::now(), r))
        }
    };
    let started = Instant::now();
    p.send_with_callback(rec("t", "in-flight"), record(0)).await.unwrap();
    // the first on its way before the others come
    tokio::time::sleep(Duration::from_millis(100)).await;
    for i in 1..=2 {
        p.send_with_callback(rec("t", format!("queued-{i}")), record(i)).await.unwrap();
    }
    assert!(p.flush().bounded().await.failed.len() == 3);
    let results = std::mem::take(&mut *results.lock().unwrap());
    assert_eq!(results.iter().map(|(i, _, _)| *i).collect::<Vec<_>>(), [0, 1, 2], "results in send order");
    for (i, at, result) in &results {
        let waited = at.duration_since(started);
        // request.timeout.ms and the 1 s margin bound the request in flight; the rest then
        assert!(waited >= timeout && waited < timeout + Duration::from_secs(5), "record {i} after {waited:?}");
        match result {
            Err((Error::DeliveryTimeout { timeout: t, last }, value)) => {
                assert_eq!(*t, timeout);
                let sent = if *i == 0 { "in-flight".to_owned() } else { format!("queued-{i}") };
                assert_eq!(value.as_deref(), Some(sent.as_str()));
                if *i == 0 {
                    assert!(matches!(last.as_deref(), Some(Error::Network { .. })), "{last:?}");
                } else {
                    assert!(last.is_none(), "never sent: {last:?}");
                }
            }
            other => panic!("record {i}: {other:?}"),
        }
    }
    resume_all(&c);
    let after = p.send(rec("t", "after")).await.unwrap();
    after.bounded().await.expect("a record sent once the broker is back is delivered");
    // the queued ones were never sent (the paused broker may still have written the first)
    let values = log_values(&c, "t", 0).await;
    assert!(values.ends_with(&["after".to_owned()]) && !values.iter().any(|v| v.starts_with("queued")), "{values:?}");
}

/// The producer's task is woken by the record that closes a `batch.size` batch, though it
/// waits for a linger: six records after a flush, the sixth closing the first five's batch,
/// and nothing after them; the five go well before the 60 s linger. (The inbox counts each
/// record's message, 12 bytes less than its entry in the batch: counted as entries, the task
/// slept until the linger.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_record_that_closes_a_batch_size_batch_wakes_the_producer() {
    let c = cluster_or_skip!("batch-size-wake");
    c.create_topic("t", 1, 1).await.unwrap();
    let p = five_entry_batches(&c);
    let warm = p.send(rec("t", "warm-000")).await.unwrap();
    assert!(p.flush().bounded().await.is_ok());
    warm.bounded().await.unwrap();
    let started = Instant::now();
    let mut deliveries = Vec::new();
    for i in 0..6 {
        deliveries.push(p.send(rec("t", format!("value-{i:02}"))).await.unwrap());
        // one at a time: the task takes the first alone and waits for what closes its batch
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let last = deliveries.pop().unwrap();
    for d in deliveries {
        d.bounded().await.unwrap();
    }
    assert!(started.elapsed() < Duration::from_secs(20), "sent when the sixth came, not after the 60 s linger");
    assert!(p.flush().bounded().await.is_ok());
    last.bounded().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_linger_sends_one_request_after_queue_buffering_max_ms() {
    let c = cluster_or_skip!("batch-linger");
    c.create_topic("t", 1, 1).await.unwrap();
    let linger = Duration::from_millis(300);
    let p = producer(config(&c).queue_buffering_max(linger));
    let started = Instant::now();
    let mut deliveries = Vec::new();
    for i in 0..10 {
        deliveries.push(p.send(rec("t", i)).await.unwrap());
    }
    for d in deliveries {
        d.bounded().await.unwrap();
    }
    let elapsed = started.elapsed();
    // the batch may go up to 1 ms before its linger ends (the engine's timer slack: tokio's
    // timers fire on whole milliseconds, late)
    let earliest = linger - Duration::from_millis(1);
    // the upper bound tells the linger from no send at all, with room for a loaded machine
    assert!(elapsed >= earliest && elapsed < linger + Duration::from_secs(5), "{elapsed:?}");
    let requests = produced_entries(&c, "t");
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].len(), 10);
}

/// While records wait for their linger, the producer's task is not woken for every record
/// that comes (it wakes at the linger's end anyway): one that came meanwhile, for another
/// broker, is taken then, and still goes within its own linger (stamped as having come when
/// the task began to wait: its linger may end early, not late).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_taken_at_another_records_linger_end_still_goes_within_its_own() {
    let c = cluster_or_skip!("batch-lazy");
    c.create_topic("t", 3, 1).await.unwrap();
    let linger = Duration::from_secs(1);
    let p = producer(config(&c).queue_buffering_max(linger));
    let leader = |partition| c.leader("t", partition).expect("a leader");
    let other = (1..3).find(|q| leader(*q) != leader(0)).expect("a partition led by another broker");
    let warmed = p.send(rec("t", "warm").with_partition(other)).await.unwrap();
    assert!(p.flush().bounded().await.is_ok());
    warmed.bounded().await.unwrap();
    let first_sent = Instant::now();
    let first = p.send(rec("t", "first").with_partition(0)).await.unwrap();
    tokio::time::sleep(linger * 6 / 10).await;
    let second_sent = Instant::now();
    let second = p.send(rec("t", "second").with_partition(other)).await.unwrap();
    let (first, second) = tokio::join!(
        async {
            first.bounded().await.unwrap();
            first_sent.elapsed()
        },
        async {
            second.bounded().await.unwrap();
            second_sent.elapsed()
        }
    );
    // the first waited its linger (less the 1 ms of the engine's timer slack)
    assert!(first >= linger - Duration::from_millis(1), "{first:?}");
    // the second at most its own (stamped at its arrival, or before it), with room for a
    // loaded machine; stamped when the task took it, it would have waited 1.4 s
    assert!(second <= linger + Duration::from_millis(250), "{second:?}");
}

/// At a linger of 0 with requests pipelined (5 in flight), records that come while their
/// broker has a request in flight wait for its answer and then go together in one request,
/// rather than one small request each queued behind the first on the broker's connection
/// (which it serves one request at a time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_linger_0_records_sent_during_a_request_go_together_after_it() {
    let c = cluster_or_skip!("linger0-behind", |b| b.timing.request_service = Duration::from_secs(1));
    c.create_topic("t", 1, 1).await.unwrap();
    let p = producer(config(&c).queue_buffering_max(Duration::ZERO).max_in_flight(5));
    let first = p.send(rec("t", "r0")).await.unwrap();
    eventually("the first request reaches the broker", Duration::from_secs(5), async || {
        produce_requests(&c, "t").len() == 1
    })
    .await;
    let mut rest = Vec::new();
    for i in 1..=20 {
        rest.push(p.send(rec("t", format!("r{i}"))).await.unwrap());
    }
    first.bounded().await.unwrap();
    for d in rest {
        d.bounded().await.unwrap();
    }
    let requests = produced_entries(&c, "t");
    let sizes: Vec<usize> = requests.iter().map(|r| r.len()).collect();
    assert_eq!(sizes, [1, 20], "the first record, then the twenty that came while it was served");
    let expected: Vec<String> = (0..=20).map(|i| format!("r{i}")).collect();
    assert_eq!(log_values(&c, "t", 0).await, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_is_sent_at_once() {
    let c = cluster_or_skip!("batch-full");
    c.create_topic("t", 1, 1).await.unwrap();
    let p = producer(
        config(&c).queue_buffering_max_messages(20).batch_num_messages(20).queue_buffering_max(Duration::from_secs(20)),
    );
    let started = Instant::now();
    let mut deliveries = Vec::new();
    for i in 0..20 {
        deliveries.push(p.send(rec("t", i)).await.unwrap());
    }
    for d in deliveries {
        d.bounded().await.unwrap();
    }
    assert!(started.elapsed() < Duration::from_secs(10), "a full queue does not wait for the 20 s linger");
    let requests = produced_entries(&c, "t");
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].len(), 20);
}

/// A handler that counts the records delivered.
fn counting_handler() -> (Arc<dyn DeliveryHandler>, Arc<AtomicUsize>) {
    let delivered = Arc::new(AtomicUsize::new(0));
    let d = delivered.clone();
    let handler: Arc<dyn DeliveryHandler> = Arc::new(move |_: u64, result: DeliveryResult| {
        if result.is_ok() {
            d.fetch_add(1, Ordering::Relaxed);
        }
    });
    (handler, delivered)
}

/// On a current-thread runtime the sending loop and the producer's task share one thread. A
/// send that finds room does not wait for anything, so it must still give the thread up now
/// and then (tokio's coop budget): otherwise the producer's task, the connections and here the
/// fake brokers would not run until the queue is full.
#[tokio::test(flavor = "current_thread")]
async fn a_sending_loop_on_one_thread_lets_the_producer_deliver_before_the_queue_fills() {
    const N: usize = 20_000;
    let c = cluster_or_skip!("one-thread-loop");
    c.create_topic("t", 1, 1).await.unwrap();
    let p = producer(config(&c).queue_buffering_max_messages(N).batch_num_messages(500));
    warm(&p, "t").await;
    let (handler, delivered) = counting_handler();
    let mut peak = 0;
    for i in 0..N {
        p.send_with_handler(rec("t", i), &handler, i as u64).await.unwrap();
        peak = peak.max(p.queued());
    }
    let during = delivered.load(Ordering::Relaxed);
    assert!(during > 0, "no record was delivered while the loop ran (the queue peaked at {peak} of {N})");
    assert!(peak < N, "the queue filled up: the producer did not run during the loop");
    assert!(p.flush().bounded().await.is_ok());
    assert_eq!(delivered.load(Ordering::Relaxed), N);
    eprintln!("one thread: {during} of {N} delivered during the loop, queue peak {peak}");
}

/// A sending loop that never gives its thread up (tokio's coop budget switched off) still
/// lets the producer's task run: once the inbox holds 8,192 records the task has not taken, a
/// send waits for the take. Without that the loop would queue all its records before the task
/// ran once. A fail-fast producer does not wait for the take.
#[tokio::test(flavor = "current_thread")]
async fn a_sending_loop_waits_for_the_producer_to_take_what_it_queued() {
    const N: usize = 5 * 8192;
    let c = cluster_or_skip!("inbox-full");
    c.create_topic("t", 1, 1).await.unwrap();
    for timeout in [EnqueueTimeout::Block, EnqueueTimeout::FailFast] {
        let p = producer(
            config(&c).queue_buffering_max_messages(2 * N).batch_num_messages(500).queue_enqueue_timeout(timeout),
        );
        warm(&p, "t").await;
        let (handler, delivered) = counting_handler();
        let during = tokio::task::unconstrained(async {
            for i in 0..N {
                p.send_with_handler(rec("t", i), &handler, i as u64).await.unwrap();
            }
            delivered.load(Ordering::Relaxed)
        })
        .await;
        match timeout {
            EnqueueTimeout::Block => assert!(during > 0, "the producer's task did not run during the loop"),
            _ => assert_eq!(during, 0, "a fail-fast send waited"),
        }
        assert!(p.flush().bounded().await.is_ok());
        assert_eq!(delivered.load(Ordering::Relaxed), N);
        eprintln!("{timeout:?}: {during} of {N} delivered during the loop");
    }
}

// ---------------------------------------------------------------------------------------
// compression

/// Records of a compressed topic that wait for their linger are compressed in chunks of about
/// 16 KiB as they come: their batch travels as several wrappers (the broker keeps them as
/// one), every record gets its offset, and the log reads back whole and in order. Both
/// runtimes: gzip chunks compress on the blocking pool, snappy and lz4 ones on a task of
/// their own (multi-thread) or in place (current-thread).
async fn chunked_batches_read_back_intact(name: &str) {
    let c = cluster_or_skip!(name);
    for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
        let topic = format!("{name}-{codec}");
        c.create_topic(&topic, 1, 1).await.unwrap();
        let p = producer(
            config(&c)
                .compression_codec(codec)
                .queue_buffering_max(Duration::from_millis(300))
                .batch_num_messages(10_000),
        );
        // the topic's metadata first (records waiting for it would come to their partition
        // all at once, as one chunk)
        let first = warm(&p, &topic).await;
        c.clear_requests();
        // 600 records of about 125 bytes, in 4 bursts of about 19 KB within the linger: a
        // chunk each
        let values: Vec<String> =
            (0..600).map(|i| format!("{codec} value {i:04} {}", "y".repeat(90 + i % 7))).collect();
        let mut deliveries = Vec::new();
        for burst in values.chunks(150) {
            for v in burst {
                deliveries.push(p.send(Record::new(topic.as_str(), v.clone())).await.unwrap());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for (i, d) in deliveries.into_iter().enumerate() {
            assert_eq!(d.bounded().await.unwrap().offset, first.offset + 1 + i as i64, "{codec}: record {i}");
        }
        let requests = produced_entries(&c, &topic);
        assert_eq!(requests.len(), 1, "{codec}: one batch after the linger");
        let wrappers = &requests[0];
        assert!(wrappers.len() >= 3, "{codec}: {} wrappers", wrappers.len());
        assert!(wrappers.iter().all(|m| m.compression().unwrap() == codec), "{codec} on the wire");
        let log = read_log(&c, &topic, 0).await;
        let log = &log[1..];
        assert_eq!(log.iter().map(|(o, _, _)| *o).collect::<Vec<_>>(), (1..601).collect::<Vec<i64>>());
        assert_eq!(log.iter().map(|(_, _, v)| v.clone()).collect::<Vec<_>>(), values, "{codec}");
        p.close(Duration::from_secs(1)).bounded().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_waiting_for_their_linger_are_compressed_in_chunks() {
    chunked_batches_read_back_intact("chunks-mt").await;
}

#[tokio::test(flavor = "current_thread")]
async fn records_waiting_for_their_linger_are_compressed_in_chunks_on_one_thread() {
    chunked_batches_read_back_intact("chunks-ct").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_codec_travels_as_one_wrapper_and_reads_back_intact() {
    let c = cluster_or_skip!("compression");
    for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
        let topic = format!("c-{codec}");
        c.create_topic(&topic, 1, 1).await.unwrap();
        let p = producer(config(&c).compression_codec(codec).queue_buffering_max(Duration::from_millis(100)));
        let values: Vec<String> = (0..20).map(|i| format!("{codec} value {i} {}", "x".repeat(i * 10))).collect();
        let mut deliveries = Vec::new();
        for v in &values {
            deliveries.push(p.send(Record::new(topic.as_str(), v.clone()).with_key("k".to_owned())).await.unwrap());
        }
        for (i, d) in deliveries.into_iter().enumerate() {
            assert_eq!(d.bounded().await.unwrap().offset, i as i64);
        }
        let requests = produced_entries(&c, &topic);
        assert!(!requests.is_empty());
        for entries in &requests {
            assert_eq!(entries.len(), 1, "{codec}: one wrapper per batch");
            assert_eq!(entries[0].compression().unwrap(), codec, "{codec} on the wire");
        }
        let log = read_log(&c, &topic, 0).await;
        assert_eq!(log.iter().map(|(_, _, v)| v.clone()).collect::<Vec<_>>(), values, "{codec}");
        assert!(log.iter().all(|(_, k, _)| k.as_deref() == Some("k")));
        p.close(Duration::from_secs(1)).bounded().await;
    }
    // compressed.topics limits the codec to the topics it names
    c.create_topic("only", 1, 1).await.unwrap();
    c.create_topic("plain", 1, 1).await.unwrap();
    let p = producer(config(&c).compression_codec(Compression::Gzip).compressed_topics(["only"]));
    p.send(rec("only", "a")).await.unwrap().bounded().await.unwrap();
    p.send(rec("plain", "b")).await.unwrap().bounded().await.unwrap();
    assert_eq!(produced_entries(&c, "only")[0][0].compression().unwrap(), Compression::Gzip);
    assert_eq!(produced_entries(&c, "plain")[0][0].compression().unwrap(), Compression::None);
    assert_eq!(log_values(&c, "plain", 0).await, ["b"]);
}

/// `n` letters of base64's alphabet from an xorshift generator at `seed` (moved on): text no
/// codec shrinks much.
fn hard_to_compress(seed: &mut u64, n: usize) -> String {
    (0..n)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            char::from(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[(*seed % 64) as usize])
        })
        .collect()
}

/// A round's compression, and the read-back of its records' keys and values when it fails,
/// run off the runtime's threads: on a current-thread runtime, while a large gzip round is
/// built (8 MB of hard-to-compress text, far longer than a tick) and while its records are read
/// back from the set the broker refused, a task ticking every millisecond never waits for as
/// long as half of what reading them back takes on this machine (itself a fifth to a half of
/// the compression: built or read back in place, the round would hold the only thread for all
/// of it). A record sent after the round and acknowledged while its records are read back gets
/// its result after theirs, in the order they were decided. The FakeCluster runs on this same
/// thread, so the broker refuses the set by its size (message.max.bytes, 1 MB), before
/// decompressing it.
#[tokio::test(flavor = "current_thread")]
async fn a_large_compressed_round_does_not_stall_a_current_thread_runtime() {
    let c = cluster_or_skip!("offload-compression");
    c.create_topic("t", 1, 1).await.unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let values: Vec<String> = (0..10).map(|_| hard_to_compress(&mut seed, 800_000)).collect();
    // what compressing this round and reading its messages back take here, on this thread
    let messages: Vec<gregor_protocol::Message> = values
        .iter()
        .map(|v| gregor_protocol::Message::new(None, Some(bytes::Bytes::copy_from_slice(v.as_bytes()))))
        .collect();
    let started = Instant::now();
    let set = gregor_protocol::MessageSet::from_messages(messages, Compression::Gzip).unwrap();
    let compression = started.elapsed();
    let started = Instant::now();
    let decoded = set.decode(&gregor_protocol::message::DecodeOptions::default()).unwrap();
    assert_eq!(decoded.messages.len(), 10);
    let read_back = started.elapsed();

    let p = producer(
        config(&c)
            .compression_codec(Compression::Gzip)
            .batch_num_messages(10)
            .queue_buffering_max(Duration::from_secs(10))
            .request_timeout(Duration::from_secs(30)),
    );
    warm(&p, "t").await;
    let done = std::cell::Cell::new(false);
    let ticking = async {
        let (mut last, mut longest) = (Instant::now(), Duration::ZERO);
        while !done.get() {
            tokio::time::sleep(Duration::from_millis(1)).await;
            longest = longest.max(last.elapsed());
            last = Instant::now();
        }
        longest
    };
    let results = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sending = async {
        let record = |i: usize| {
            let results = results.clone();
            move |r: DeliveryResult| results.lock().unwrap().push((i, r.map(|_| ()).map_err(|e| e.error)))
        };
        // the 10th record fills the batch: one round of all ten
        for (i, v) in values.iter().enumerate() {
            p.send_with_callback(rec("t", v), record(i)).await.unwrap();
        }
        // then one more, acknowledged while the ten are read back
        p.send_with_callback(rec("t", "after"), record(10)).await.unwrap();
        p.flush().await;
        done.set(true);
    };
    let (longest, ()) = tokio::join!(ticking, sending);
    eprintln!(
        "compressing the round takes {compression:?} here, reading it back {read_back:?}; the longest tick {longest:?}"
    );
    assert!(
        longest < read_back / 2,
        "the runtime's only thread was held for {longest:?} (compression {compression:?}, read-back {read_back:?})"
    );
    let results = std::mem::take(&mut *results.lock().unwrap());
    assert_eq!(results.iter().map(|(i, _)| *i).collect::<Vec<_>>(), (0..=10).collect::<Vec<_>>(), "decided order");
    for (_, r) in &results[..10] {
        assert!(matches!(r, Err(Error::Broker { code: ErrorCode::MessageSizeTooLarge, .. })), "{r:?}");
    }
    assert!(results[10].1.is_ok(), "{:?}", results[10]);
    let sets = produced_entries(&c, "t");
    assert_eq!(sets.len(), 3, "the warm-up record, one round of all ten, then the one after");
    assert_eq!(sets[1][0].compression().unwrap(), Compression::Gzip);
}

/// Records are encoded by `send` (small ones into a buffer they share, large ones on their
/// own) and copied into their partition's blocks by the background task: every size, key or
/// none, plain or compressed, lands byte for byte in its partition in send order, and a record
/// that fails hands back exactly its key and value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_of_every_size_land_byte_exact_and_failures_give_them_back() {
    let c = cluster_or_skip!("record-sizes");
    // around the shared-buffer limit (8 KiB with the message header), past a whole shared
    // buffer (64 KiB), and large
    let sizes = [0usize, 1, 100, 8 * 1024 - 15, 8 * 1024 - 14, 8 * 1024 - 13, 8 * 1024, 70_000, 300_000];
    let value = |i: usize, n: usize| -> String {
        let fill = char::from(b'a' + (i % 26) as u8);
        let mut v = format!("{i:04}");
        v.extend(std::iter::repeat_n(fill, n.saturating_sub(4)));
        v.truncate(n.max(4));
        v
    };
    for codec in [Compression::None, Compression::Snappy] {
        let topic = format!("sizes-{codec}");
        c.create_topic(&topic, 3, 1).await.unwrap();
        let p = producer(config(&c).compression_codec(codec).queue_buffering_max(Duration::from_millis(50)));
        let mut sent: BTreeMap<i32, Vec<(Option<String>, String)>> = BTreeMap::new();
        let mut deliveries = Vec::new();
        for round in 0..3 {
            for (j, n) in sizes.iter().enumerate() {
                let i = round * sizes.len() + j;
                let partition = (i % 3) as i32;
                let key = (i % 2 == 0).then(|| format!("key-{i}"));
                let v = value(i, *n);
                let mut record = Record::new(topic.as_str(), v.clone()).with_partition(partition);
                if let Some(k) = &key {
                    record = record.with_key(k.clone());
                }
                sent.entry(partition).or_default().push((key, v));
                deliveries.push(p.send(record).await.unwrap());
            }
        }
        for d in deliveries {
            d.bounded().await.unwrap();
        }
        for (partition, want) in &sent {
            let log = read_log(&c, &topic, *partition).await;
            let got: Vec<(Option<String>, String)> = log.into_iter().map(|(_, k, v)| (k, v)).collect();
            assert_eq!(got.len(), want.len(), "{codec} partition {partition}");
            assert!(got == *want, "{codec} partition {partition}: the log differs from what was sent");
        }
        p.close(Duration::from_secs(1)).bounded().await;
    }
    // failures carry the record's own bytes back, also from a compressed batch in flight
    // (which keeps only the set it sent: they are read back from it)
    let values: Vec<String> = sizes.iter().enumerate().map(|(i, n)| value(i, *n)).collect();
    close_gives_back_the_records_in_flight(&c, "sizes-failed", &values).await;
}

/// For each codec: records in flight to a paused cluster fail with Closed when the close
/// bound runs out, and the close report gives back each one's key and value.
async fn close_gives_back_the_records_in_flight(c: &FakeCluster, prefix: &str, values: &[String]) {
    for codec in [Compression::None, Compression::Snappy, Compression::Gzip] {
        let topic = format!("{prefix}-{codec}");
        c.create_topic(&topic, 1, 1).await.unwrap();
        let p = producer(config(c).compression_codec(codec).queue_buffering_max(Duration::from_secs(10)));
        warm(&p, &topic).await;
        pause_all(c);
        let mut want = Vec::new();
        let mut deliveries = Vec::new();
        for (i, v) in values.iter().enumerate() {
            want.push((format!("k{i}"), v.clone()));
            deliveries.push(p.send(Record::new(topic.as_str(), v.clone()).with_key(format!("k{i}"))).await.unwrap());
        }
        let report = p.close(Duration::from_millis(300)).bounded().await;
        resume_all(c);
        let mut in_flight = 0;
        for d in deliveries {
            let e = d.bounded().await.unwrap_err();
            assert!(matches!(e.error, Error::Closed { .. }), "{e:?}");
            in_flight += usize::from(matches!(e.error, Error::Closed { in_flight: true }));
        }
        assert_eq!(in_flight, values.len(), "{codec}: the close sent them; they were in flight");
        let got: Vec<(String, String)> = report
            .undelivered
            .iter()
            .map(|e| {
                let text =
                    |b: &Option<bytes::Bytes>| String::from_utf8(b.as_ref().expect("not null").to_vec()).unwrap();
                (text(&e.key), text(&e.value))
            })
            .collect();
        assert_eq!(got.len(), want.len());
        assert!(got == want, "{codec}: the undelivered records' keys and values differ from what was sent");
    }
}

/// As the failures of `records_of_every_size_land_byte_exact_and_failures_give_them_back`, on
/// a current-thread runtime with sets large enough to be read back on the blocking pool
/// (hard-to-compress text, 380 KB a batch).
#[tokio::test(flavor = "current_thread")]
async fn on_one_thread_records_read_back_off_the_thread_come_back_whole() {
    let c = cluster_or_skip!("read-back-one-thread");
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let values: Vec<String> = [100, 8 * 1024, 70_000, 300_000].map(|n| hard_to_compress(&mut seed, n)).to_vec();
    close_gives_back_the_records_in_flight(&c, "read-back", &values).await;
}

// ---------------------------------------------------------------------------------------
// partitioners

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn murmur2_places_keys_where_java_and_librdkafka_do() {
    let c = cluster_or_skip!("partitioner-murmur2");
    c.create_topic("k", 5, 1).await.unwrap();
    let keys = [
        "21",
        "foobar",
        "a-little-bit-long-string",
        "a-little-bit-longer-string",
        "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
        "abc",
        "kafka",
        "giberish123456789",
        "",
    ];
    for kind in [PartitionerKind::Murmur2, PartitionerKind::Default08] {
        let p = producer(config(&c).partitioner(kind.clone()));
        for key in keys {
            let m = p.send(rec("k", key).with_key(key.to_owned())).await.unwrap().bounded().await.unwrap();
            assert_eq!(m.partition as usize, murmur2_partition(key.as_bytes(), 5), "{kind:?} {key:?}");
        }
    }
    for part in 0..5 {
        for (_, key, value) in read_log(&c, "k", part).await {
            let key = key.unwrap();
            assert_eq!(value, key);
            assert_eq!(murmur2_partition(key.as_bytes(), 5), part as usize, "{key:?} is in the partition Java picks");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn null_keys_stick_to_one_partition_until_the_next_metadata_refresh() {
    let c = cluster_or_skip!("partitioner-sticky");
    c.create_topic("s", 3, 1).await.unwrap();
    let interval = Duration::from_millis(500);
    let p =
        producer(config(&c).partitioner(PartitionerKind::Default08).topic_metadata_refresh_interval(Some(interval)));
    warm(&p, "s").await;
    let metadata_requests = || c.requests().iter().filter(|r| r.header.api_key == ApiKey::Metadata).count();
    let mut bursts: Vec<BTreeSet<i32>> = Vec::new();
    for burst in 0..8 {
        // each burst starts right after a periodic refresh, so it has the interval to itself
        // however slowly the machine sends it
        let seen = metadata_requests();
        eventually("a periodic metadata refresh", Duration::from_secs(10), async || metadata_requests() > seen).await;
        let mut deliveries = Vec::new();
        for i in 0..10 {
            deliveries.push(p.send(rec("s", format!("{burst}-{i}"))).await.unwrap());
        }
        let mut partitions = BTreeSet::new();
        for d in deliveries {
            partitions.insert(d.bounded().await.unwrap().partition);
        }
        bursts.push(partitions);
    }
    // a refresh can land in the middle of a burst; otherwise a burst sticks to one partition
    assert!(bursts.iter().all(|b| b.len() <= 2), "{bursts:?}");
    assert!(bursts.iter().filter(|b| b.len() == 1).count() >= 6, "{bursts:?}");
    let used: BTreeSet<i32> = bursts.iter().flatten().copied().collect();
    assert!(used.len() >= 2, "each refresh picks again: {bursts:?}");
    let refreshes = c.requests().iter().filter(|r| r.header.api_key == ApiKey::Metadata).count();
    assert!(refreshes >= 6, "topic.metadata.refresh.interval.ms refreshes: {refreshes}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_robin_spreads_evenly_and_custom_partitioners_decide() {
    let c = cluster_or_skip!("partitioner-rr-custom");
    c.create_topic("rr", 3, 1).await.unwrap();
    let p = producer(config(&c).partitioner(PartitionerKind::RoundRobin));
    let mut deliveries = Vec::new();
    for i in 0..30 {
        // keys do not matter to round robin
        deliveries.push(p.send(rec("rr", i).with_key("same".to_owned())).await.unwrap());
    }
    let mut counts = BTreeMap::new();
    for d in deliveries {
        *counts.entry(d.bounded().await.unwrap().partition).or_insert(0) += 1;
    }
    assert_eq!(counts, BTreeMap::from([(0, 10), (1, 10), (2, 10)]));

    c.create_topic("custom", 3, 1).await.unwrap();
    let last = |_: &str, _: Option<&[u8]>, all: &[i32], _: &[i32]| *all.last().unwrap();
    let p = producer(config(&c).partitioner(PartitionerKind::custom(last)));
    for i in 0..10 {
        assert_eq!(p.send(rec("custom", i)).await.unwrap().bounded().await.unwrap().partition, 2);
    }
    assert_eq!(log_values(&c, "custom", 2).await, strings(0..10));
    // a partition the topic does not have fails the record, not the producer
    let p =
        producer(config(&c).partitioner(PartitionerKind::custom(|_: &str, _: Option<&[u8]>, _: &[i32], _: &[i32]| 7)));
    let e = p.send(rec("custom", "x")).await.unwrap().bounded().await.unwrap_err();
    assert!(matches!(e.error, Error::InvalidPartition { partition: 7, partitions: 3, .. }), "{e:?}");
    // an explicit partition overrides the partitioner, and is checked too
    let m = p.send(rec("custom", "y").with_partition(1)).await.unwrap().bounded().await.unwrap();
    assert_eq!(m.partition, 1);
    let e = p.send(rec("custom", "z").with_partition(9)).await.unwrap().bounded().await.unwrap_err();
    assert!(matches!(e.error, Error::InvalidPartition { partition: 9, .. }), "{e:?}");
    assert_eq!((e.partition, e.value.as_deref()), (Some(9), Some(&b"z"[..])));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auto_created_topic_is_waited_for() {
    // 0.8.2 answers 5 LeaderNotAvailable to the first Metadata of an auto-created topic
    let c = cluster_or_skip!("auto-create");
    let p = producer(config(&c));
    let m = p.send(rec("auto", "first")).await.unwrap().bounded().await.unwrap();
    assert_eq!((m.partition, m.offset), (0, 0));
    assert_eq!(log_values(&c, "auto", 0).await, ["first"]);
}

/// The records sent before their topic's metadata has come (here the brokers are paused) are
/// held, their bytes kept together for the topic rather than each in an allocation of its own:
/// each arrives whole (key and value) and in order once the metadata comes, a large one (which
/// keeps its own bytes while held) among them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_held_for_their_topics_metadata_arrive_whole_and_in_order() {
    let c = cluster_or_skip!("held-many");
    c.create_topic("held", 1, 1).await.unwrap();
    let p = producer(config(&c).queue_buffering_max_messages(10_000));
    let value = |i: usize| if i == 1_000 { "L".repeat(20_000) } else { format!("value-{i}") };
    let n = 3_000;
    pause_all(&c);
    let mut deliveries = Vec::new();
    for i in 0..n {
        deliveries.push(p.send(rec("held", value(i)).with_key(format!("k{i}"))).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(p.queued(), n, "all held");
    resume_all(&c);
    for (i, d) in deliveries.into_iter().enumerate() {
        let m = d.bounded().await.unwrap();
        assert_eq!((m.partition, m.offset), (0, i as i64), "record {i}");
    }
    let log = read_log(&c, "held", 0).await;
    assert_eq!(log.len(), n);
    for (i, (offset, key, v)) in log.into_iter().enumerate() {
        assert_eq!((offset, key.as_deref(), v), (i as i64, Some(&*format!("k{i}")), value(i)));
    }
}

// ---------------------------------------------------------------------------------------
// flush, close, drop

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flush_sends_without_the_linger_and_reports_nothing_when_all_is_delivered() {
    let c = cluster_or_skip!("flush-ok");
    c.create_topic("t", 3, 1).await.unwrap();
    let p = producer(config(&c).queue_buffering_max(Duration::from_secs(20)));
    let mut deliveries = Vec::new();
    for i in 0..25 {
        deliveries.push(p.send(rec("t", i).with_key(i.to_string())).await.unwrap());
    }
    let started = Instant::now();
    let report = p.flush().bounded().await;
    assert!(report.is_ok(), "{report:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "the flush did not wait for the 20 s linger");
    assert_eq!(p.queued(), 0);
    for d in deliveries {
        d.bounded().await.unwrap();
    }
    assert!(p.flush().bounded().await.is_ok(), "a flush with nothing queued returns at once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flush_while_the_cluster_is_paused_reports_every_undelivered_record() {
    let c = cluster_or_skip!("flush-paused");
    c.create_topic("t", 3, 1).await.unwrap();
    let p = producer(
        config(&c)
            .request_timeout(Duration::from_millis(300))
            .message_send_max_retries(1)
            .partitioner(PartitionerKind::RoundRobin),
    );
    for _ in 0..3 {
        warm(&p, "t").await;
    }
    pause_all(&c);
    let mut deliveries = Vec::new();
    for i in 0..10 {
        deliveries.push(p.send(rec("t", i)).await.unwrap());
    }
    let started = Instant::now();
    let report = p.flush().bounded().await;
    let elapsed = started.elapsed();
    resume_all(&c);
    assert!(elapsed < Duration::from_secs(15), "bounded by the retries: {elapsed:?}");
    let mut failed: Vec<String> =
        report.failed.iter().map(|e| String::from_utf8(e.value.clone().unwrap().to_vec()).unwrap()).collect();
    failed.sort_by_key(|v| v.parse::<u32>().unwrap());
    assert_eq!(failed, strings(0..10), "every record queued before the flush is reported");
    for e in &report.failed {
        assert_eq!(e.attempts, 2, "{e:?}");
        assert!(matches!(e.error, Error::Network { .. }), "{e:?}");
    }
    for d in deliveries {
        assert!(d.bounded().await.is_err());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_while_the_cluster_is_paused_reports_every_undelivered_record() {
    let c = cluster_or_skip!("close-paused");
    c.create_topic("t", 3, 1).await.unwrap();
    let p = producer(config(&c).partitioner(PartitionerKind::RoundRobin).queue_buffering_max(Duration::from_secs(10)));
    for _ in 0..3 {
        warm(&p, "t").await;
    }
    pause_all(&c);
    let mut deliveries = Vec::new();
    for i in 0..10 {
        deliveries.push(p.send(rec("t", i)).await.unwrap());
    }
    let callback_results = Arc::new(AtomicUsize::new(0));
    {
        let n = callback_results.clone();
        p.send_with_callback(rec("t", "cb"), move |r| {
            assert!(r.is_err());
            n.fetch_add(1, Ordering::SeqCst);
        })
        .await
        .unwrap();
    }
    let started = Instant::now();
    let report = p.close(Duration::from_millis(500)).bounded().await;
    let elapsed = started.elapsed();
    resume_all(&c);
    // the close timeout (500 ms), with room for a loaded machine
    assert!(elapsed >= Duration::from_millis(450) && elapsed < Duration::from_millis(500) * 10, "{elapsed:?}");
    assert_eq!(report.undelivered.len(), 11, "{report:?}");
    for e in &report.undelivered {
        assert!(matches!(e.error, Error::Closed { .. }), "{e:?}");
    }
    for d in deliveries {
        assert!(matches!(d.bounded().await.unwrap_err().error, Error::Closed { .. }));
    }
    assert_eq!(callback_results.load(Ordering::SeqCst), 1, "the callback got its one result");
    assert!(p.is_closed());
    assert!(matches!(p.send(rec("t", "late")).await, Err(SendError::Closed { .. })));
    assert!(p.close(Duration::from_secs(1)).bounded().await.is_ok(), "closing twice is harmless");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_shut_down_with_records_queued_gives_each_its_record_back() {
    let c = cluster_or_skip!("runtime-shutdown");
    c.create_topic("t", 2, 1).await.unwrap();
    let cfg = config(&c).queue_buffering_max(Duration::from_secs(10));
    // the producer on a runtime of its own, shut down while its records wait for their linger
    // (their bytes in their partitions' logs)
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let (p, deliveries) = rt.block_on(async move {
            let p = producer(cfg);
            warm(&p, "t").await;
            let mut deliveries = Vec::new();
            for i in 0..10 {
                deliveries.push(p.send(rec("t", i).with_key(format!("k{i}"))).await.unwrap());
            }
            // taken by the producer's task, which queues them
            tokio::time::sleep(Duration::from_millis(200)).await;
            (p, deliveries)
        });
        rt.shutdown_background();
        drop(p);
        deliveries
    });
    let deliveries = tokio::task::spawn_blocking(move || thread.join().unwrap()).await.unwrap();
    let text = |b: &Option<bytes::Bytes>| String::from_utf8(b.as_ref().expect("not null").to_vec()).unwrap();
    for (i, d) in deliveries.into_iter().enumerate() {
        let e = d.bounded().await.unwrap_err();
        assert!(matches!(e.error, Error::Closed { in_flight: false }), "{e:?}");
        assert_eq!(&*e.topic, "t");
        assert_eq!((text(&e.key), text(&e.value)), (format!("k{i}"), i.to_string()), "the record comes back");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_delivers_what_is_queued_and_dropping_the_producer_loses_nothing() {
    let c = cluster_or_skip!("close-drop");
    c.create_topic("t", 3, 1).await.unwrap();
    let p = producer(config(&c).queue_buffering_max(Duration::from_secs(10)));
    let mut deliveries = Vec::new();
    for i in 0..20 {
        deliveries.push(p.send(rec("t", i).with_key(i.to_string())).await.unwrap());
    }
    let report = p.close(Duration::from_secs(5)).bounded().await;
    assert!(report.is_ok(), "{report:?}");
    for d in deliveries {
        d.bounded().await.unwrap();
    }

    // dropping every handle: the background task still sends what is queued, and every
    // callback gets its result
    let p = producer(config(&c).queue_buffering_max(Duration::from_secs(10)));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for i in 0..50 {
        let tx = tx.clone();
        p.send_with_callback(rec("t", i).with_key(i.to_string()), move |r| {
            let _ = tx.send(r.is_ok());
        })
        .await
        .unwrap();
    }
    drop(tx);
    // the brokers are paused while the last handle goes: a drop that waited for the records
    // would wait until they come back
    pause_all(&c);
    let started = Instant::now();
    drop(p);
    assert!(started.elapsed() < Duration::from_secs(5), "drop blocked for {:?}", started.elapsed());
    resume_all(&c);
    let mut ok = 0;
    while let Some(result) = tokio::time::timeout(LIVENESS, rx.recv()).await.unwrap() {
        assert!(result);
        ok += 1;
    }
    assert_eq!(ok, 50);
    let total: i64 = (0..3).map(|part| c.offsets("t", part).unwrap().0).sum();
    assert_eq!(total, 70);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_handler_gets_every_result_once_with_its_opaque() {
    let c = cluster_or_skip!("handler");
    c.create_topic("h", 3, 1).await.unwrap();
    let p = producer(config(&c).queue_buffering_max(Duration::from_millis(20)));
    warm(&p, "h").await;
    type Seen = Arc<std::sync::Mutex<Vec<(u64, Result<RecordMetadata, String>)>>>;
    let seen: Seen = Arc::default();
    let s = seen.clone();
    let handler: Arc<dyn DeliveryHandler> = Arc::new(move |opaque: u64, result: DeliveryResult| {
        let result = result.map_err(|e| format!("{:?}", e.error));
        s.lock().unwrap().push((opaque, result));
    });
    let before: Vec<i64> = (0..3).map(|part| c.offsets("h", part).unwrap().0).collect();
    for i in 0..300u64 {
        let record = rec("h", i).with_partition((i % 3) as i32);
        p.send_with_handler(record, &handler, i * 7 + 1).await.unwrap();
    }
    assert!(p.flush().bounded().await.is_ok());
    let mut got = std::mem::take(&mut *seen.lock().unwrap());
    assert_eq!(got.len(), 300, "one result per record");
    got.sort_by_key(|(opaque, _)| *opaque);
    for (i, (opaque, result)) in got.iter().enumerate() {
        let i = i as u64;
        assert_eq!(*opaque, i * 7 + 1);
        let m = result.as_ref().unwrap_or_else(|e| panic!("record {i}: {e}"));
        assert_eq!((&*m.topic, m.partition), ("h", (i % 3) as i32));
        // the partition's records in send order take its next offsets
        assert_eq!(m.offset, before[(i % 3) as usize] + (i / 3) as i64, "record {i}");
    }
    // records that cannot be delivered reach the handler too, with their opaque
    pause_all(&c);
    for i in 0..5u64 {
        p.send_with_handler(rec("h", "late"), &handler, 1000 + i).await.unwrap();
    }
    let report = p.close(Duration::from_millis(300)).bounded().await;
    resume_all(&c);
    assert_eq!(report.undelivered.len(), 5, "{report:?}");
    let mut got = std::mem::take(&mut *seen.lock().unwrap());
    got.sort_by_key(|(opaque, _)| *opaque);
    let opaques: Vec<u64> = got.iter().map(|(o, _)| *o).collect();
    assert_eq!(opaques, (1000..1005).collect::<Vec<_>>());
    for (opaque, result) in got {
        let e = result.unwrap_err();
        assert!(e.starts_with("Closed"), "{opaque}: {e}");
    }
    // and nothing after close
    let e = p.send_with_handler(rec("h", "x"), &handler, 9).await.unwrap_err();
    assert!(matches!(e, SendError::Closed { .. }), "{e:?}");
    assert!(seen.lock().unwrap().is_empty(), "a refused record never reaches the handler");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_delivery_handler_gets_every_result_once_with_its_opaque() {
    let c = cluster_or_skip!("static-handler");
    c.create_topic("sh", 2, 1).await.unwrap();
    let p = producer(config(&c).queue_buffering_max(Duration::from_millis(20)));
    warm(&p, "sh").await;
    type Seen = std::sync::Mutex<Vec<(u64, Result<RecordMetadata, String>)>>;
    // made once and kept for the life of the process
    let seen: &'static Seen = Box::leak(Box::default());
    let handler: &'static dyn DeliveryHandler = Box::leak(Box::new(|opaque: u64, result: DeliveryResult| {
        let result = result.map_err(|e| format!("{:?}", e.error));
        seen.lock().unwrap().push((opaque, result));
    }));
    let topic = gregor_producer::Topic::new("sh");
    let before: Vec<i64> = (0..2).map(|part| c.offsets("sh", part).unwrap().0).collect();
    for i in 0..200u64 {
        let record = Record::new(topic.clone(), i.to_string()).with_partition((i % 2) as i32);
        p.send_with_static_handler(record, handler, i + 5).await.unwrap();
    }
    assert!(p.flush().bounded().await.is_ok());
    let mut got = std::mem::take(&mut *seen.lock().unwrap());
    assert_eq!(got.len(), 200, "one result per record");
    got.sort_by_key(|(opaque, _)| *opaque);
    for (i, (opaque, result)) in got.iter().enumerate() {
        let i = i as u64;
        assert_eq!(*opaque, i + 5);
        let m = result.as_ref().unwrap_or_else(|e| panic!("record {i}: {e}"));
        assert_eq!((&m.topic, m.partition), (&topic, (i % 2) as i32));
        assert_eq!(m.offset, before[(i % 2) as usize] + (i / 2) as i64, "record {i}");
    }
    // undeliverable records reach it too
    pause_all(&c);
    for i in 0..3u64 {
        p.send_with_static_handler(Record::new(topic.clone(), "late".to_owned()), handler, 1000 + i).await.unwrap();
    }
    let report = p.close(Duration::from_millis(300)).bounded().await;
    resume_all(&c);
    assert_eq!(report.undelivered.len(), 3, "{report:?}");
    let mut got = std::mem::take(&mut *seen.lock().unwrap());
    got.sort_by_key(|(opaque, _)| *opaque);
    assert_eq!(got.iter().map(|(o, _)| *o).collect::<Vec<_>>(), [1000, 1001, 1002]);
    for (opaque, result) in got {
        let e = result.unwrap_err();
        assert!(e.starts_with("Closed"), "{opaque}: {e}");
    }
}

/// Callbacks run on a task of their own: one that blocks holds up the results after it (they
/// keep their order), not the sending. Here the first record's callback blocks until released
/// (inside `block_in_place`, as a blocking call on a tokio worker must be, or it can starve
/// the worker's other tasks: here the fake brokers' ZooKeeper sessions); meanwhile the next
/// record is sent and acknowledged by the broker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_callback_delays_later_results_but_not_the_sending() {
    let c = cluster_or_skip!("slow-callback");
    c.create_topic("t", 1, 1).await.unwrap();
    let p = producer(config(&c));
    warm(&p, "t").await;
    let base = c.offsets("t", 0).unwrap().0;
    let (release, released) = std::sync::mpsc::channel::<()>();
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let o = order.clone();
    p.send_with_callback(rec("t", "first"), move |r| {
        // long enough that a producer which ran callbacks on its own task would fail below
        let waited = tokio::task::block_in_place(|| released.recv_timeout(Duration::from_secs(20)));
        o.lock().unwrap().push(("first", r.map(|m| m.offset).ok(), waited.is_ok()));
    })
    .await
    .unwrap();
    eventually("the first record lands", Duration::from_secs(5), async || c.offsets("t", 0).unwrap().0 == base + 1)
        .await;
    let second = p.send(rec("t", "second")).await.unwrap();
    eventually("the second record lands while the first callback blocks", Duration::from_secs(5), async || {
        c.offsets("t", 0).unwrap().0 == base + 2
    })
    .await;
    assert!(order.lock().unwrap().is_empty(), "the first callback is still blocked");
    release.send(()).unwrap();
    let m = second.bounded().await.expect("the second record is delivered");
    assert_eq!(m.offset, base + 1);
    // results in order: the first callback returned before the second future resolved
    assert_eq!(*order.lock().unwrap(), vec![("first", Some(base), true)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_records_are_refused_with_the_record_back() {
    let c = cluster_or_skip!("refused");
    let p = producer(config(&c));
    let e = p.send(rec("", "v")).await.unwrap_err();
    assert!(matches!(e, SendError::InvalidRecord { .. }), "{e:?}");
    let e = p.send(rec("t", "v").with_partition(-1)).await.unwrap_err();
    assert_eq!(e.into_record().partition, Some(-1));
    // an encoder failure
    let failing = |_: &String| -> gregor_serde::Result<bytes::Bytes> { Err(gregor_serde::Error::custom("nope")) };
    let p: AsyncProducer<String, String> =
        AsyncProducer::new(config(&c).build().unwrap(), gregor_serde::StringEncoder::new(), failing).unwrap();
    match p.send(rec("t", "v")).await.unwrap_err() {
        SendError::Encode { what, record, .. } => assert_eq!((what, record.value.as_str()), ("value", "v")),
        other => panic!("{other:?}"),
    }
    // a value over i32::MAX bytes cannot be framed: the record's one result is that error,
    // with its value handed back (its pages zeroed by the kernel on first touch: this allocates
    // 2 GiB of address space, and encoding it must fail before it reads or copies any of it)
    let p: AsyncProducer<String, bytes::Bytes> =
        AsyncProducer::new(config(&c).build().unwrap(), gregor_serde::StringEncoder::new(), gregor_serde::BytesEncoder)
            .unwrap();
    let huge = bytes::Bytes::from(vec![0u8; i32::MAX as usize + 1]);
    let delivery = p.send(Record::new("t", huge.clone()).with_key("k".to_string())).await.unwrap();
    let failed = delivery.bounded().await.expect_err("a value over i32::MAX bytes fails");
    assert!(matches!(failed.error, Error::Encode { .. }), "{:?}", failed.error);
    assert_eq!(failed.attempts, 0);
    assert_eq!(failed.key.as_deref(), Some(&b"k"[..]));
    let value = failed.value.expect("the value comes back");
    assert_eq!((value.len(), value.as_ptr()), (huge.len(), huge.as_ptr()), "handed back, not copied");
    assert_eq!(p.queued(), 0, "its place in the queue is free again");
    assert!(!c.requests().iter().any(|r| matches!(r.request, AnyRequest::Produce(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_wakes_senders_waiting_for_room_with_their_record() {
    let c = cluster_or_skip!("close-wakes");
    c.create_topic("t", 1, 1).await.unwrap();
    let p = producer(config(&c).queue_buffering_max_messages(2).batch_num_messages(2));
    warm(&p, "t").await;
    pause_all(&c);
    let first = p.send(rec("t", 1)).await.unwrap();
    let second = p.send(rec("t", 2)).await.unwrap();
    let blocked = {
        let p = p.clone();
        tokio::spawn(async move { p.send(rec("t", "waiting")).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!blocked.is_finished());
    let report = p.close(Duration::from_millis(300)).bounded().await;
    resume_all(&c);
    match blocked.bounded().await.unwrap() {
        Err(SendError::Closed { record }) => assert_eq!(record.value, "waiting"),
        other => panic!("{other:?}"),
    }
    assert_eq!(report.undelivered.len(), 2);
    assert!(matches!(first.bounded().await.unwrap_err().error, Error::Closed { in_flight: true }));
    assert!(second.bounded().await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_that_does_not_exist_fails_after_the_metadata_rounds() {
    let c = cluster_or_skip!("no-such-topic", |b| b.auto_create_topics_enable = false);
    let p = producer(config(&c).message_send_max_retries(2).retry_backoff(Duration::from_millis(30)));
    let started = Instant::now();
    let e = p.send(rec("missing", "v").with_key("k".to_owned())).await.unwrap().bounded().await.unwrap_err();
    assert!(started.elapsed() < ROUNDS_BOUND, "{:?}", started.elapsed());
    assert_eq!((&*e.topic, e.partition, e.attempts), ("missing", None, 0));
    match &e.error {
        Error::TopicUnavailable { code, rounds, .. } => {
            assert_eq!((*code, *rounds), (Some(gregor_protocol::ErrorCode::UnknownTopicOrPartition), 3));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(e.key.as_deref(), Some(&b"k"[..]));
    let e = p.send(rec("missing", "v").with_partition(0)).await.unwrap().bounded().await.unwrap_err();
    assert_eq!(e.partition, Some(0));
    assert!(matches!(e.error, Error::TopicUnavailable { .. }), "{e:?}");
}

/// How long the regression tests below give a record that must fail after its metadata
/// rounds (about 100 ms of them); a producer that stops refreshing would wait for the
/// periodic refresh, 10 minutes away.
const ROUNDS_BOUND: Duration = Duration::from_secs(5);

#[track_caller]
fn within_rounds<F: std::future::IntoFuture>(what: &str, f: F) -> impl std::future::Future<Output = F::Output> {
    support::bounded(format!("{what} (has the producer stopped refreshing metadata?)"), ROUNDS_BOUND, f)
}

/// Regression: a record for a topic the producer already knows (here: known not to exist),
/// appended to a partition without a leader, asked for no metadata refresh, so it waited for
/// the periodic one (`topic.metadata.refresh.interval.ms`, 10 minutes). The first record of
/// a topic asks for one (and the rounds of a held record left a spare one behind, which hid
/// the bug unless the machine was slow enough for it to run before the next record came).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_record_for_a_missing_topic_gets_its_metadata_rounds() {
    let c = cluster_or_skip!("no-such-topic-again", |b| b.auto_create_topics_enable = false);
    let p = producer(config(&c).message_send_max_retries(2).retry_backoff(Duration::from_millis(30)));
    for i in 0..3 {
        let d = p.send(rec("missing", i).with_partition(0)).await.unwrap();
        let e = within_rounds(&format!("record {i}"), d).await.unwrap_err();
        assert!(matches!(e.error, Error::TopicUnavailable { rounds: 3, .. }), "{e:?}");
    }
    // a keyed record of the known topic, held for partitions, and one after a pause
    let e = within_rounds("keyed", p.send(rec("missing", "k").with_key("k".to_owned())).await.unwrap()).await;
    assert!(matches!(e.unwrap_err().error, Error::TopicUnavailable { rounds: 3, .. }));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let e = within_rounds("after a pause", p.send(rec("missing", "x").with_partition(0)).await.unwrap()).await;
    assert!(matches!(e.unwrap_err().error, Error::TopicUnavailable { rounds: 3, .. }));
    // a flush waiting for such a record ends too, and reports it
    let d = p.send(rec("missing", "flushed").with_partition(0)).await.unwrap();
    let report = within_rounds("flush", p.flush()).await;
    assert_eq!(report.failed.len(), 1, "{report:?}");
    assert!(within_rounds("the flushed record", d).await.is_err());
    assert!(within_rounds("close", p.close(Duration::from_secs(1))).bounded().await.is_ok());
}

/// Regression, the leader side of the same bug: records for a partition whose leader is gone
/// (and known to be gone) asked for no refresh either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_record_for_a_partition_without_a_leader_gets_its_metadata_rounds() {
    let c = cluster_or_skip!("leaderless");
    c.create_topic("orphan", 1, 1).await.unwrap();
    let victim = c.leader("orphan", 0).unwrap();
    c.kill_broker(victim).await.unwrap();
    eventually("partition 0 loses its leader", Duration::from_secs(10), async || c.leader("orphan", 0).is_none()).await;
    let p = producer(config(&c).message_send_max_retries(2).retry_backoff(Duration::from_millis(30)));
    for i in 0..3 {
        let d = p.send(rec("orphan", i).with_partition(0)).await.unwrap();
        let e = within_rounds(&format!("record {i}"), d).await.unwrap_err();
        assert_eq!(e.partition, Some(0));
        assert!(matches!(e.error, Error::NoLeader { partition: 0, rounds: 3, .. }), "{e:?}");
    }
    // the default partitioner puts a keyed record in a partition with or without a leader
    let d = p.send(rec("orphan", "keyed").with_key("k".to_owned())).await.unwrap();
    let e = within_rounds("keyed", d).await.unwrap_err();
    assert!(matches!(e.error, Error::NoLeader { partition: 0, rounds: 3, .. }), "{e:?}");
    // a null key waits for an available partition, and fails after the rounds
    let d = p.send(rec("orphan", "null key")).await.unwrap();
    assert!(within_rounds("null key", d).await.is_err());
    let d = p.send(rec("orphan", "flushed").with_partition(0)).await.unwrap();
    let report = within_rounds("flush", p.flush()).await;
    assert_eq!(report.failed.len(), 1, "{report:?}");
    assert!(within_rounds("the flushed record", d).await.is_err());
    assert!(within_rounds("close", p.close(Duration::from_secs(1))).bounded().await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_brokers_fail_records_after_the_metadata_rounds() {
    // needs no cluster: nothing listens there
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let config = gregor_producer::ProducerConfig::builder()
        .metadata_broker_list(dead.to_string())
        .message_send_max_retries(1)
        .retry_backoff(Duration::from_millis(20));
    let p = producer(config);
    let e = p.send(rec("t", "v")).await.unwrap().bounded().await.unwrap_err();
    match &e.error {
        Error::TopicUnavailable { source: Some(source), rounds: 2, .. } => {
            assert!(matches!(**source, gregor_net::Error::NoBrokerAvailable { .. }), "{source:?}");
        }
        other => panic!("{other:?}"),
    }
    let report = p.close(Duration::from_millis(100)).bounded().await;
    assert!(report.is_ok(), "nothing was left to report: {report:?}");
}

/// Public futures are `Send` (checked at compile time; never run).
#[allow(dead_code)]
fn public_futures_are_send(p: &AsyncProducer<String, String>) {
    fn send<T: Send>(_: T) {}
    send(p.send(rec("t", "v")));
    send(p.send_with_callback(rec("t", "v"), |_| {}));
    let handler: Arc<dyn DeliveryHandler> = Arc::new(|_: u64, _: DeliveryResult| {});
    send(p.send_with_handler(rec("t", "v"), &handler, 0));
    send(p.flush());
    send(p.close(Duration::ZERO));
    send(async { p.send(rec("t", "v")).await.unwrap().await });
}

// ---------------------------------------------------------------------------------------
// memory

/// A `/proc/self/status` field (`VmHWM` = peak RSS, `VmRSS` = current), in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn peak_rss_kib() -> u64 {
    status_kib("VmHWM")
}

/// The "Memory" proof: an AsyncProducer with queue.buffering.max.messages=10,000
/// fed as fast as possible for 5 s while the cluster is paused stays bounded. Run with
/// `cargo test --release -p gregor-producer --test async_producer -- --ignored --nocapture memory`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run it in release and read the numbers"]
async fn memory_stays_bounded_while_the_cluster_is_paused() {
    let c = cluster_or_skip!("memory");
    c.create_topic("m", 3, 1).await.unwrap();
    let p = producer(
        config(&c)
            .queue_buffering_max_messages(10_000)
            .queue_enqueue_timeout(EnqueueTimeout::FailFast)
            .partitioner(PartitionerKind::RoundRobin)
            .request_timeout(Duration::from_secs(30)),
    );
    for _ in 0..3 {
        warm(&p, "m").await;
    }
    let value = "v".repeat(1000);
    let before = peak_rss_kib();
    pause_all(&c);
    let started = Instant::now();
    let (mut accepted, mut refused) = (0u64, 0u64);
    let mut deliveries = Vec::new();
    let mut samples = Vec::new();
    while started.elapsed() < Duration::from_secs(5) {
        if started.elapsed() >= Duration::from_secs(samples.len() as u64) {
            samples.push(status_kib("VmRSS"));
        }
        for _ in 0..1000 {
            match p.send(rec("m", &value)).await {
                Ok(d) => {
                    accepted += 1;
                    deliveries.push(d);
                }
                Err(e) => {
                    assert!(e.is_queue_full());
                    refused += 1;
                }
            }
        }
        tokio::task::yield_now().await;
    }
    let during = peak_rss_kib();
    assert!(p.queued() <= 10_000);
    resume_all(&c);
    let report = p.flush().bounded().await;
    let after = peak_rss_kib();
    eprintln!(
        "memory: peak RSS (VmHWM) before the pause {before} KiB, after 5 s paused with a full queue {during} KiB, \
         after resume + flush {after} KiB (the in-process FakeCluster then holds the 10 MB of records); \
         RSS each second of the pause: {samples:?} KiB; {accepted} records accepted, {refused} refused with \
         QueueFull (1000-byte values, capacity 10000); {} failed",
        report.failed.len()
    );
    assert!(accepted <= 10_000, "the queue is a hard bound: {accepted}");
    for d in deliveries {
        d.bounded().await.unwrap();
    }
}

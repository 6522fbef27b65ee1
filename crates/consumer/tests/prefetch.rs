//! Bounded prefetch under load: 12 partitions holding about 9 MB, a consumer whose app does
//! not read. What the connector buffers (its own gauges, and the process heap in blocks under
//! 1 MiB, measured by a counting allocator) stays within the bound its configuration implies —
//! `(streams x queued.max.message.chunks + owned partitions) x fetch.message.max.bytes`, as in
//! Java 0.8.2 — while its fetchers stay alive (the high watermarks still move); then the app
//! reads and gets every message, in order, the bound holding all along.
//!
//! One test in this binary: the heap is the process's, so nothing else may run beside it.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use gregor_consumer::{AutoOffsetReset, ConsumerConfig, ConsumerConnector, KafkaStream};
use gregor_serde::StringDecoder;
use gregor_testkit::FakeCluster;

// ---------------------------------------------------------------------------------------------
// Live heap bytes of the whole process.

gregor_testkit::counting_allocator!(ALLOCATOR);

// ---------------------------------------------------------------------------------------------

const TOPIC: &str = "pf";
const PARTITIONS: i32 = 12;
/// Values of 1,000 bytes: 1,026 bytes each on the wire.
const VALUE: usize = 1000;
const PER_PARTITION: usize = 768;
const STREAMS: usize = 2;
const CHUNKS: usize = 2;
const FETCH: usize = 32 * 1024;

fn value(p: i32, i: usize) -> String {
    let head = format!("{p}-{i}-");
    format!("{head}{}", "v".repeat(VALUE - head.len()))
}

/// The live heap in blocks under 1 MiB (`gregor_testkit::support::LARGE_ALLOCATION`): what
/// the connector's buffers are made of (chunks of at most `FETCH` bytes, read buffers of one
/// response). The blocks left out are the ZooKeeper clients' (the connector's, the fake
/// brokers'): each reads into a 2 MiB buffer that grows to 4 MiB, once and for good, the first
/// time a read ends inside a frame, which a loaded machine can make happen in the middle of the
/// measurement (it did: +2 MB in every sample of one CI rehearsal).
fn small_blocks() -> usize {
    ALLOCATOR.live().saturating_sub(ALLOCATOR.live_large())
}

/// Reads `stream` to the end in the background: (partition, offset) in delivery order.
fn reader(mut stream: KafkaStream<String>) -> tokio::task::JoinHandle<Vec<(i32, i64)>> {
    tokio::spawn(async move {
        let mut got = Vec::new();
        while let Some(m) = stream.next().await {
            let m = m.expect("no stream error");
            assert_eq!(m.value.as_deref(), Some(value(m.partition, m.offset as usize).as_str()));
            got.push((m.partition, m.offset));
        }
        got
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn prefetch_stays_bounded_while_the_app_does_not_read_then_everything_arrives() {
    let Some(zk) = chroot("consumer_prefetch") else { return };
    gregor_testkit::init_tracing();
    // no request log: it would hold the Produce requests' data and blur the heap measurement
    let cluster: FakeCluster =
        FakeCluster::builder(zk).brokers(2).request_log_capacity(0).start().await.expect("the fake cluster starts");
    cluster.create_topic(TOPIC, PARTITIONS, 1).await.unwrap();
    for p in 0..PARTITIONS {
        for batch in (0..PER_PARTITION).collect::<Vec<_>>().chunks(64) {
            let values: Vec<String> = batch.iter().map(|&i| value(p, i)).collect();
            produce_values(&cluster, TOPIC, p, &values).await;
        }
    }
    let data = PARTITIONS as usize * PER_PARTITION * (VALUE + 26);

    // the bound the configuration implies (wire bytes of message sets)
    let queued_bound = (STREAMS * CHUNKS * FETCH) as u64;
    let held_bound = (PARTITIONS as usize * FETCH) as u64;
    // in memory: each message also has its decoded entry (MessageAndOffset, in a Vec that may
    // have doubled), so up to 2 x 80 bytes more per 1,026 wire bytes; the two connections keep
    // read buffers of the largest response (6 partitions x 32 KB), and so do the fake brokers'
    // write buffers, in this same process; plus a little for tasks and bookkeeping
    let per_entry = 2 * std::mem::size_of::<gregor_protocol::MessageAndOffset>() as u64;
    let wire_bound = queued_bound + held_bound;
    let response = (PARTITIONS as usize / 2 * FETCH) as u64;
    let heap_bound = wire_bound + wire_bound / (VALUE as u64 + 26) * per_entry + 4 * response + 256 * 1024;
    eprintln!(
        "prefetch: {data} bytes in the topic; bound {wire_bound} wire bytes (queued {queued_bound} + held {held_bound}), \
         heap bound {heap_bound}"
    );
    assert!(data as u64 > 4 * heap_bound, "the topic must dwarf the bound for the test to mean anything");

    tokio::time::sleep(Duration::from_millis(300)).await; // let the cluster settle
    let start = small_blocks();
    let a = ConsumerConnector::new(
        ConsumerConfig::builder()
            .group_id("gpf")
            .zookeeper_connect(cluster.zookeeper())
            .auto_offset_reset(AutoOffsetReset::Smallest)
            .auto_commit_enable(false)
            .fetch_message_max_bytes(FETCH as i32)
            .queued_max_message_chunks(CHUNKS)
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    // the connector's fixed cost (its ZooKeeper session, its pool) does not depend on the data
    let before = small_blocks();
    eprintln!("prefetch: a connected connector takes {} bytes", before as i64 - start as i64);
    let mut s = a
        .create_message_streams(HashMap::from([(TOPIC.to_string(), STREAMS)]), Arc::new(StringDecoder::new()))
        .await
        .unwrap();
    let streams = s.remove(TOPIC).unwrap();

    // the app does not read: every stream fills its room, every partition then holds one chunk
    // in its fetcher, and nothing more is fetched
    eventually("the streams and fetchers to fill up", Duration::from_secs(15), || async {
        let st = a.stats();
        st.queued_chunks == (STREAMS * CHUNKS) as u64 && st.held_chunks == PARTITIONS as u64
    })
    .await;
    // The heap is sampled over a second of the stall; the steady state is the smallest sample,
    // the largest is reported.
    let (mut low, mut high) = (usize::MAX, 0);
    for _ in 0..20 {
        let st = a.stats();
        assert!(st.queued_chunks <= (STREAMS * CHUNKS) as u64 && st.queued_bytes <= queued_bound, "{st:?}");
        assert!(st.held_chunks <= PARTITIONS as u64 && st.held_bytes <= held_bound, "{st:?}");
        assert_eq!(a.buffered_bytes(), st.queued_bytes + st.held_bytes);
        let grown = small_blocks().saturating_sub(before);
        (low, high) = (low.min(grown), high.max(grown));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stalled = a.stats();
    eprintln!(
        "prefetch: stalled with {} queued chunks ({} bytes), {} held ({} bytes); heap +{low} bytes (samples up to +{high}) \
         in blocks under 1 MiB; {} bytes live in larger blocks",
        stalled.queued_chunks,
        stalled.queued_bytes,
        stalled.held_chunks,
        stalled.held_bytes,
        ALLOCATOR.live_large()
    );
    assert!(low as u64 <= heap_bound, "heap grew by {low} bytes, bound {heap_bound}");
    assert!(stalled.queued_bytes > queued_bound / 2, "the queues are really full: {stalled:?}");

    // the fetchers are alive: new messages move the high watermarks lag() reports
    for p in [0, PARTITIONS - 1] {
        produce_values(&cluster, TOPIC, p, &[value(p, PER_PARTITION)]).await;
    }
    let expected_hw = |p: i32| PER_PARTITION as i64 + i64::from(p == 0 || p == PARTITIONS - 1);
    eventually("lag() to see the new messages", Duration::from_secs(5), || async {
        a.lag().iter().all(|l| l.high_watermark == expected_hw(l.partition))
    })
    .await;

    // the app reads: everything arrives, in order, and the bound holds meanwhile
    let readers: Vec<_> = streams.into_iter().map(reader).collect();
    let total: i64 = (0..PARTITIONS).map(expected_hw).sum();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let st = a.stats();
        assert!(st.queued_bytes <= queued_bound && st.held_bytes <= held_bound, "{st:?}");
        let consumed: i64 = a.lag().iter().map(|l| l.consumed).sum();
        if consumed == total {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "only {consumed} of {total} consumed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eventually("the queues to empty", Duration::from_secs(5), || async { a.buffered_bytes() == 0 }).await;
    a.shutdown().await.unwrap();
    let mut per_partition: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    for r in readers {
        for (p, o) in r.await.unwrap() {
            per_partition.entry(p).or_default().push(o);
        }
    }
    for p in 0..PARTITIONS {
        let offsets = &per_partition[&p];
        assert!(offsets.iter().copied().eq(0..expected_hw(p)), "partition {p}: every offset once, in order");
    }
    assert!(a.lag().is_empty(), "nothing owned after shutdown");
    cluster.shutdown().await;
}

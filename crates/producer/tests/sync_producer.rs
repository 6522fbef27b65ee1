//! The SyncProducer: blocking sends from plain threads against a 3-broker FakeCluster, and
//! its refusal to block a runtime thread.

mod common;

use std::time::Duration;

use common::*;
use gregor_producer::{ProducerConfig, Record, SyncProducer, SyncSendError};
use gregor_serde::StringEncoder;
use gregor_testkit::support::cluster_or_skip;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_sends_block_until_acknowledged() {
    let c = cluster_or_skip!("sync-producer");
    c.create_topic("s", 2, 3).await.unwrap();
    // a long linger in the config does not delay a sync producer
    let config = config(&c).request_required_acks(-1).queue_buffering_max(Duration::from_secs(20)).build().unwrap();
    let thread = std::thread::spawn(move || {
        let p: SyncProducer<String, String> =
            SyncProducer::new(config, StringEncoder::new(), StringEncoder::new()).unwrap();
        assert_eq!(p.config().queue_buffering_max(), Duration::ZERO);
        let started = std::time::Instant::now();
        let one = p.send(Record::new("s", "one".to_owned()).with_partition(0)).unwrap();
        assert!(started.elapsed() < Duration::from_secs(10), "the sync send waited for the 20 s linger");
        let batch = p.send_batch((0..20).map(|i| Record::new("s", i.to_string()).with_partition(1)));
        let offsets: Vec<i64> = batch.into_iter().map(|r| r.unwrap().offset).collect();
        let refused = p.send(Record::new("s", "bad".to_owned()).with_partition(-3));
        assert!(matches!(refused, Err(SyncSendError::Send(_))), "{refused:?}");
        let missing = p.send(Record::new("s", "nowhere".to_owned()).with_partition(5));
        assert!(matches!(missing, Err(SyncSendError::Delivery(_))), "{missing:?}");
        assert!(p.flush().is_ok());
        assert!(p.close(Duration::from_secs(2)).is_ok());
        (one, offsets)
    });
    // polled rather than joined on a blocking task: a stuck producer fails the test after
    // LIVENESS instead of hanging it (and the runtime's shutdown, which waits for blocking tasks)
    eventually("the sync producer's sends, flush and close", LIVENESS, async || thread.is_finished()).await;
    let (one, offsets) = thread.join().unwrap();
    assert_eq!((one.partition, one.offset), (0, 0));
    assert_eq!(offsets, (0..20).collect::<Vec<i64>>());
    assert_eq!(log_values(&c, "s", 0).await, ["one"]);
    assert_eq!(log_values(&c, "s", 1).await, (0..20).map(|i| i.to_string()).collect::<Vec<_>>());
    assert_eq!(c.offsets("s", 1), Some((20, 20)), "acks=-1: replicated before the send returned");
}

#[test]
fn sync_producer_refuses_to_block_a_runtime_thread() {
    let config = ProducerConfig::builder().metadata_broker_list("127.0.0.1:9").build().unwrap();
    let p: SyncProducer<String, String> =
        SyncProducer::new(config, StringEncoder::new(), StringEncoder::new()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(async { p.send(Record::new("t", "v".to_owned())).map(|_| ()).map_err(|e| e.to_string()) })
    }));
    let panic = result.expect_err("it panics rather than block the runtime");
    let message = panic.downcast_ref::<&str>().map(|s| s.to_string()).unwrap_or_default();
    assert!(message.contains("use AsyncProducer"), "{message}");
    drop(p); // dropping never blocks, even with nothing reachable
}

//! The AsyncProducer and the SyncProducer against a hostile broker (gregor-testkit's
//! `HostileBroker`): whatever the broker does to a Produce or a Metadata request — a wrong
//! correlation id, a truncated frame, a huge or negative size prefix, a corrupt body, silence,
//! a closed connection, a byte at a time — every record gets a typed failed delivery result
//! within `message.send.max.retries + 1` tries of (`request.timeout.ms` + 1 s margin +
//! `retry.backoff.ms`), and `close()` returns.
//!
//! No ZooKeeper needed: the hostile broker answers Metadata itself (broker 0, leader of
//! everything). The scenarios of a test run side by side, each with its own broker and
//! producer, so the file takes about as long as its slowest scenario (~3 s).

mod common;

use std::time::{Duration, Instant};

use common::{eventually, Bounded, LIVENESS};
use gregor_net::PoisonReason;
use gregor_producer::{
    AsyncProducer, DeliveryError, Error, ProducerConfig, ProducerConfigBuilder, Record, SyncProducer, SyncSendError,
    RESPONSE_TIMEOUT_MARGIN,
};
use gregor_protocol::frame::ApiKey;
use gregor_serde::StringEncoder;
use gregor_testkit::fault::{Accept, Fault, Rule};
use gregor_testkit::hostile::HostileBroker;
use gregor_testkit::support::{check, side_by_side};

/// `request.timeout.ms` of these tests; the connection waits this plus
/// [`RESPONSE_TIMEOUT_MARGIN`] for a response.
const REQUEST_TIMEOUT: Duration = Duration::from_millis(200);
const RETRIES: u32 = 1;
const BACKOFF: Duration = Duration::from_millis(50);
const LINGER: Duration = Duration::from_millis(30);
/// How late past its bound a result may come on a loaded machine (the scenarios of a test run
/// side by side, on two cores shared with everything else).
const SLACK: Duration = Duration::from_secs(3);
const RECORDS: usize = 4;

/// The longest a record may take to fail: every try waits at most the response timeout, then
/// the backoff.
fn bound() -> Duration {
    (REQUEST_TIMEOUT + RESPONSE_TIMEOUT_MARGIN + BACKOFF) * (RETRIES + 1) + LINGER + SLACK
}

fn config(b: &HostileBroker) -> ProducerConfigBuilder {
    ProducerConfig::builder()
        .metadata_broker_list(b.bootstrap())
        .client_id("hostile-test")
        .request_required_acks(1)
        .request_timeout(REQUEST_TIMEOUT)
        .message_send_max_retries(RETRIES)
        .retry_backoff(BACKOFF)
        .queue_buffering_max(LINGER)
}

fn producer(b: &HostileBroker) -> AsyncProducer<String, String> {
    AsyncProducer::new(config(b).build().unwrap(), StringEncoder::new(), StringEncoder::new()).unwrap()
}

async fn broker(rules: Vec<Rule>) -> HostileBroker {
    let mut b = HostileBroker::builder().topic("t", 2);
    for rule in rules {
        b = b.intercept(rule);
    }
    b.start().await.unwrap()
}

/// Sends [`RECORDS`] records over both partitions (all in one batch per partition), then waits
/// for every result; returns them with how long the slowest took.
async fn send_all(p: &AsyncProducer<String, String>) -> (Vec<Result<i64, Box<DeliveryError>>>, Duration) {
    let started = Instant::now();
    let mut deliveries = Vec::new();
    for i in 0..RECORDS {
        let record = Record::new("t", format!("v{i}")).with_partition((i % 2) as i32);
        deliveries.push(p.send(record).bounded().await.unwrap());
    }
    let mut results = Vec::new();
    for d in deliveries {
        results.push(d.bounded().await.map(|m| m.offset));
    }
    (results, started.elapsed())
}

/// What the network layer must have said about the last try.
#[derive(Debug, Clone, Copy)]
enum Expect {
    Timeout,
    UnexpectedCorrelation,
    Closed,
    FrameTooLarge(i64),
    /// The response did not decode: not retried.
    Decode,
}

impl Expect {
    fn attempts(self) -> u32 {
        match self {
            Expect::Decode => 1,
            _ => RETRIES + 1,
        }
    }

    fn matches(self, e: &gregor_net::Error) -> bool {
        match self {
            Expect::Timeout => matches!(e, gregor_net::Error::Timeout { api: ApiKey::Produce, .. }),
            Expect::UnexpectedCorrelation => {
                matches!(e.poison_reason(), Some(PoisonReason::UnexpectedCorrelation { .. }))
            }
            Expect::Closed => {
                matches!(e.poison_reason(), Some(PoisonReason::BrokerClosed { .. } | PoisonReason::Io { .. }))
            }
            Expect::FrameTooLarge(size) => {
                matches!(e.poison_reason(), Some(PoisonReason::FrameTooLarge { size: s, .. }) if *s == size)
            }
            Expect::Decode => matches!(e, gregor_net::Error::Decode { api: ApiKey::Produce, .. }),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_record_fails_typed_and_in_time_whatever_the_broker_does_to_produce() {
    let cases = vec![
        (Fault::WrongCorrelationId, Expect::UnexpectedCorrelation),
        (Fault::TruncateThenClose, Expect::Closed),
        (Fault::TruncateThenSilence, Expect::Timeout),
        (Fault::SizePrefix(i32::MAX), Expect::FrameTooLarge(i64::from(i32::MAX))),
        (Fault::SizePrefix(-1), Expect::FrameTooLarge(-1)),
        (Fault::HugeArrayCount, Expect::Decode),
        (Fault::TrailingBytes, Expect::Decode),
        (Fault::Silent, Expect::Timeout),
        (Fault::Close, Expect::Closed),
        (Fault::Slowloris(Duration::from_millis(100)), Expect::Timeout),
    ];
    side_by_side(LIVENESS * 2, cases, |(behaviour, expect)| async move {
        let b = broker(vec![Rule::on(ApiKey::Produce, behaviour.clone())]).await;
        let p = producer(&b);
        let (results, took) = send_all(&p).await;
        for (i, r) in results.into_iter().enumerate() {
            let Err(e) = r else { return Err(format!("{behaviour:?}: record {i} was delivered")) };
            check!(&*e.topic == "t" && e.partition == Some((i % 2) as i32), "{behaviour:?}: {e:?}");
            check!(e.value.as_deref() == Some(format!("v{i}").as_bytes()), "{behaviour:?}: value {:?}", e.value);
            check!(
                e.attempts == expect.attempts(),
                "{behaviour:?}: {} attempts, not {}",
                e.attempts,
                expect.attempts()
            );
            match &e.error {
                Error::Network { broker: 0, source } => {
                    check!(expect.matches(source), "{behaviour:?}: expected {expect:?}, got {source:?}")
                }
                other => return Err(format!("{behaviour:?}: {other:?}")),
            }
        }
        check!(took < bound(), "{behaviour:?}: the results took {took:?}, more than {:?}", bound());
        let sends = b.count(ApiKey::Produce);
        check!(sends == expect.attempts() as usize, "{behaviour:?}: {sends} Produce requests");
        let started = Instant::now();
        let report = p.close(Duration::from_secs(1)).bounded().await;
        check!(report.is_ok(), "{behaviour:?}: nothing was left to report: {:?}", report.undelivered);
        check!(started.elapsed() < Duration::from_secs(1) + SLACK, "{behaviour:?}: close took {:?}", started.elapsed());
        Ok(())
    })
    .await;
}

/// A response the client can read, however it comes, is a delivery.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_readable_response_is_a_delivery_however_it_comes() {
    let cases = vec![
        // garbage after the response: delivered, the connection then given up and replaced
        (ApiKey::Produce, Fault::GarbageAfter),
        (ApiKey::Metadata, Fault::GarbageAfter),
        // a byte every millisecond: slow, but in time
        (ApiKey::Produce, Fault::Slowloris(Duration::from_millis(1))),
        (ApiKey::Metadata, Fault::Slowloris(Duration::from_millis(1))),
        // nothing to corrupt in a Produce response: answered correctly
        (ApiKey::Produce, Fault::BadCrc),
    ];
    side_by_side(LIVENESS * 2, cases, |(api, behaviour)| async move {
        let b = broker(vec![Rule::on(api, behaviour.clone())]).await;
        let p = producer(&b);
        for round in 0..2 {
            let (results, _) = send_all(&p).await;
            for r in results {
                check!(r.is_ok(), "{behaviour:?} on {api}, round {round}: {r:?}");
            }
        }
        check!(b.log("t", 0).len() == RECORDS, "{behaviour:?} on {api}: {} stored", b.log("t", 0).len());
        let report = p.close(Duration::from_secs(1)).bounded().await;
        check!(report.is_ok(), "{behaviour:?} on {api}: {:?}", report.undelivered);
        Ok(())
    })
    .await;
}

/// Metadata is where the producer starts: a hostile answer there fails the records with
/// TopicUnavailable, carrying the network error, after `message.send.max.retries + 1` refresh
/// rounds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_record_fails_typed_and_in_time_whatever_the_broker_does_to_metadata() {
    let cases = vec![
        Fault::WrongCorrelationId,
        Fault::TruncateThenClose,
        Fault::SizePrefix(i32::MAX),
        Fault::HugeArrayCount,
        Fault::Silent,
        Fault::Close,
    ];
    side_by_side(LIVENESS * 2, cases, |behaviour| async move {
        let b = broker(vec![Rule::on(ApiKey::Metadata, behaviour.clone())]).await;
        let p = producer(&b);
        let (results, took) = send_all(&p).await;
        for r in results {
            let Err(e) = r else { return Err(format!("{behaviour:?}: delivered without metadata")) };
            match &e.error {
                Error::TopicUnavailable { topic, rounds, source: Some(source), .. } => {
                    check!(topic == "t" && *rounds == RETRIES + 1, "{behaviour:?}: {e:?}");
                    check!(
                        matches!(**source, gregor_net::Error::NoBrokerAvailable { .. }),
                        "{behaviour:?}: {source:?}"
                    );
                }
                other => return Err(format!("{behaviour:?}: {other:?}")),
            }
            check!(e.attempts == 0, "{behaviour:?}: never sent, yet {} attempts", e.attempts);
        }
        check!(b.count(ApiKey::Produce) == 0, "{behaviour:?}: a Produce went out");
        check!(took < bound(), "{behaviour:?}: the results took {took:?}, more than {:?}", bound());
        let report = p.close(Duration::from_secs(1)).bounded().await;
        check!(report.is_ok(), "{behaviour:?}: {:?}", report.undelivered);
        Ok(())
    })
    .await;
}

/// close() while every record is in flight to a broker that never answers: it returns within
/// its timeout and reports each record as closed in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_returns_in_time_with_records_in_flight_to_a_silent_broker() {
    for accept in [Accept::Serve, Accept::Stall] {
        let b = broker(vec![Rule::on(ApiKey::Produce, Fault::Silent)]).await;
        // a request timeout far beyond the close timeout: a close that waited for the records
        // in flight would take 10 s and more
        let config = config(&b).request_timeout(Duration::from_secs(10)).build().unwrap();
        let p: AsyncProducer<String, String> =
            AsyncProducer::new(config, StringEncoder::new(), StringEncoder::new()).unwrap();
        let mut deliveries = Vec::new();
        for i in 0..RECORDS {
            deliveries.push(p.send(Record::new("t", format!("v{i}")).with_partition(0)).bounded().await.unwrap());
        }
        eventually("the Produce request is out", LIVENESS, async || b.count(ApiKey::Produce) == 1).await;
        // new connections are not even read from now on (the retry's)
        b.set_accept(accept);
        let started = Instant::now();
        let report = p.close(Duration::from_millis(300)).bounded().await;
        let took = started.elapsed();
        assert!(took < Duration::from_millis(300) + SLACK, "{accept:?}: close took {took:?}");
        assert_eq!(report.undelivered.len(), RECORDS, "{accept:?}");
        for e in &report.undelivered {
            assert!(matches!(e.error, Error::Closed { in_flight: true }), "{accept:?}: {e:?}");
        }
        for d in deliveries {
            let e = d.bounded().await.unwrap_err();
            assert!(matches!(e.error, Error::Closed { in_flight: true }), "{accept:?}: {e:?}");
        }
        assert!(p.send(Record::new("t", "late".to_owned())).bounded().await.is_err(), "closed");
    }
}

/// The SyncProducer on a plain thread: each send returns a typed delivery error in time.
#[test]
fn sync_sends_fail_typed_and_in_time() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    for (behaviour, expect) in [
        (Fault::WrongCorrelationId, Expect::UnexpectedCorrelation),
        (Fault::SizePrefix(i32::MAX), Expect::FrameTooLarge(i64::from(i32::MAX))),
        (Fault::HugeArrayCount, Expect::Decode),
        (Fault::Silent, Expect::Timeout),
    ] {
        let b = rt.block_on(broker(vec![Rule::on(ApiKey::Produce, behaviour.clone())]));
        let config = config(&b).build().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let p: SyncProducer<String, String> =
                SyncProducer::new(config, StringEncoder::new(), StringEncoder::new()).unwrap();
            let started = Instant::now();
            let result = p.send(Record::new("t", "v0".to_owned()).with_partition(0)).map(|m| m.offset);
            let took = started.elapsed();
            let report = p.close(Duration::from_secs(1));
            let _ = tx.send((result, took, report.is_ok()));
        });
        let (result, took, closed_clean) =
            rx.recv_timeout(LIVENESS).unwrap_or_else(|_| panic!("{behaviour:?}: the sync producer hung"));
        thread.join().unwrap();
        match result {
            Err(SyncSendError::Delivery(e)) => {
                assert_eq!(e.attempts, expect.attempts(), "{behaviour:?}: {e:?}");
                match &e.error {
                    Error::Network { source, .. } => assert!(expect.matches(source), "{behaviour:?}: {source:?}"),
                    other => panic!("{behaviour:?}: {other:?}"),
                }
            }
            other => panic!("{behaviour:?}: {other:?}"),
        }
        assert!(took < bound(), "{behaviour:?}: {took:?}");
        assert!(closed_clean, "{behaviour:?}");
    }
}

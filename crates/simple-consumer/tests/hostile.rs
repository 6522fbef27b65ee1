//! The simple consumer against a hostile broker (gregor-testkit's `HostileBroker`): fetches,
//! offset lookups and metadata lookups meet wrong correlation ids, truncated frames, huge and
//! negative size prefixes, corrupt bodies, silence, closed connections and a byte at a time.
//! Each gives the typed error the docs promise, within `refresh.leader.max.retries + 1` tries of
//! `socket.timeout.ms` (+ the backoff), without a hang; a bad CRC names its topic, partition
//! and offset.
//!
//! No ZooKeeper needed: the hostile broker answers Metadata itself (broker 0, leader of
//! everything). The cases of a test run side by side (~2 s for the file).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gregor_net::PoisonReason;
use gregor_protocol::frame::ApiKey;
use gregor_protocol::TopicPartition;
use gregor_simple_consumer::{Error, SimpleConsumer, SimpleConsumerConfig, EARLIEST_TIME, LATEST_TIME};
use gregor_testkit::fault::{Fault, Rule};
use gregor_testkit::hostile::HostileBroker;
use gregor_testkit::support::{self, check, side_by_side};
use gregor_testkit::wire;

/// `socket.timeout.ms` of these tests.
const SOCKET_TIMEOUT: Duration = Duration::from_millis(400);
const RETRIES: u32 = 1;
const BACKOFF: Duration = Duration::from_millis(20);
/// How late past its bound an error may come on a loaded machine (the cases of a test run side
/// by side, on two cores shared with everything else).
const SLACK: Duration = Duration::from_secs(3);
/// How long any single await may take before the test calls it a hang.
const LIVENESS: Duration = Duration::from_secs(20);

/// The longest a leader call (fetch, offsets) may take to fail: every try waits at most the
/// socket timeout, then the backoff.
fn bound() -> Duration {
    (SOCKET_TIMEOUT + BACKOFF) * (RETRIES + 1) + SLACK
}

/// The longest a failed metadata lookup may take: gregor-net's default three rounds, each
/// waiting at most the socket timeout, with backoffs of 100 ms and 200 ms (+ jitter) between.
fn metadata_bound() -> Duration {
    SOCKET_TIMEOUT * 3 + Duration::from_millis(400) + SLACK
}

#[track_caller]
fn bounded<F: Future>(what: &str, f: F) -> impl Future<Output = F::Output> + use<'_, F> {
    support::bounded(what, LIVENESS, f)
}

async fn broker(rules: Vec<Rule>) -> HostileBroker {
    let messages = (0..3).map(|i| wire::msg(None, &format!("m{i}"))).collect();
    let mut b = HostileBroker::builder().topic("t", 2).messages("t", 0, messages);
    for rule in rules {
        b = b.intercept(rule);
    }
    b.start().await.unwrap()
}

fn consumer(b: &HostileBroker) -> SimpleConsumer {
    let config = SimpleConsumerConfig::builder()
        .metadata_broker_list(b.bootstrap())
        .client_id("hostile-test")
        .socket_timeout(SOCKET_TIMEOUT)
        .fetch_wait_max(Duration::from_millis(10))
        .refresh_leader_backoff(BACKOFF)
        .refresh_leader_backoff_max(BACKOFF)
        .refresh_leader_max_retries(RETRIES)
        .build()
        .unwrap();
    SimpleConsumer::new(config).unwrap()
}

/// What the network layer must have said about the last try of a leader call.
#[derive(Debug, Clone, Copy)]
enum Expect {
    Timeout,
    UnexpectedCorrelation,
    Closed,
    FrameTooLarge,
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

    fn matches(self, e: &gregor_net::Error, api: ApiKey) -> bool {
        match self {
            // the request that timed out, or one that shared its connection
            Expect::Timeout => {
                matches!(e, gregor_net::Error::Timeout { api: a, .. } if *a == api)
                    || matches!(e.poison_reason(), Some(PoisonReason::Timeout { api: a, .. }) if *a == api)
            }
            Expect::UnexpectedCorrelation => {
                matches!(e.poison_reason(), Some(PoisonReason::UnexpectedCorrelation { .. }))
            }
            Expect::Closed => {
                matches!(e.poison_reason(), Some(PoisonReason::BrokerClosed { .. } | PoisonReason::Io { .. }))
            }
            Expect::FrameTooLarge => matches!(e.poison_reason(), Some(PoisonReason::FrameTooLarge { .. })),
            Expect::Decode => matches!(e, gregor_net::Error::Decode { api: a, .. } if *a == api),
        }
    }
}

fn leader_cases() -> Vec<(Fault, Expect)> {
    vec![
        (Fault::WrongCorrelationId, Expect::UnexpectedCorrelation),
        (Fault::TruncateThenClose, Expect::Closed),
        (Fault::TruncateThenSilence, Expect::Timeout),
        (Fault::SizePrefix(i32::MAX), Expect::FrameTooLarge),
        (Fault::SizePrefix(i32::MIN), Expect::FrameTooLarge),
        (Fault::MessageSetOverrun, Expect::Decode),
        (Fault::HugeArrayCount, Expect::Decode),
        (Fault::TrailingBytes, Expect::Decode),
        (Fault::Silent, Expect::Timeout),
        (Fault::Close, Expect::Closed),
        (Fault::Slowloris(Duration::from_millis(50)), Expect::Timeout),
    ]
}

/// Checks a leader call's error: Connection from broker 0 for t/`partition`, with the expected
/// attempts and cause.
fn check_connection_error(
    behaviour: &Fault,
    expect: Expect,
    api: ApiKey,
    partition: i32,
    e: &Error,
) -> Result<(), String> {
    match e {
        Error::Connection { topic, partition: p, broker: 0, attempts, source } => {
            check!(topic == "t" && *p == partition, "{behaviour:?}: {e:?}");
            check!(*attempts == expect.attempts(), "{behaviour:?}: {attempts} attempts, not {}", expect.attempts());
            check!(expect.matches(source, api), "{behaviour:?}: expected {expect:?}, got {source:?}");
            check!(e.topic_partition() == Some(TopicPartition::new("t", partition)), "{behaviour:?}");
        }
        other => return Err(format!("{behaviour:?}: {other:?}")),
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_crc_names_topic_partition_and_offset_and_is_not_skipped() {
    let b = broker(vec![Rule::on(ApiKey::Fetch, Fault::BadCrc)]).await;
    let c = consumer(&b);
    let started = Instant::now();
    let e = bounded("fetch", c.fetch_partition("t", 0, 1)).await.unwrap_err();
    assert!(started.elapsed() < bound());
    match &e {
        Error::Protocol { topic, partition: 0, offset: 1, source } if topic == "t" => match &**source {
            gregor_protocol::Error::Crc { location, stored, computed } => {
                assert_eq!((location.topic.as_deref(), location.partition, location.offset), (Some("t"), Some(0), 1));
                assert_ne!(stored, computed);
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    assert_eq!(e.to_string(), "could not decode the messages fetched from t/0 at offset 1");
    let source = std::error::Error::source(&e).unwrap().to_string();
    assert!(source.starts_with("crc mismatch in message at t/0 offset 1: stored 0x"), "{source}");
    assert!(!e.is_retriable(), "a corrupt message does not heal");
    assert_eq!(b.count(ApiKey::Fetch), 1, "not retried");

    // in a batch, only the corrupt partition fails (an empty partition gets a made-up message)
    let batch = bounded("fetch", c.fetch(&[("t", 1, 5)])).await.unwrap();
    let e = batch.get("t", 1).unwrap().as_ref().unwrap_err();
    assert!(matches!(e, Error::Protocol { partition: 1, offset: 5, .. }), "{e:?}");

    // a stream stops at the bad message every time it is asked, never skipping it
    let mut stream = c.stream("t", 0, 2);
    for _ in 0..2 {
        let e = bounded("stream", stream.next()).await.unwrap().unwrap_err();
        assert!(matches!(e, Error::Protocol { offset: 2, .. }), "{e:?}");
        assert_eq!(stream.position(), 2);
    }
    // once the broker behaves, the stream goes on from there
    b.clear_intercepts();
    let m = bounded("stream", stream.next()).await.unwrap().unwrap();
    assert_eq!((m.offset, m.value.as_deref()), (2, Some(&b"m2"[..])));
    bounded("close", c.close()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_fails_typed_and_in_time_whatever_the_leader_does() {
    side_by_side(LIVENESS, leader_cases(), |(behaviour, expect)| async move {
        let b = broker(vec![Rule::on(ApiKey::Fetch, behaviour.clone())]).await;
        let c = consumer(&b);
        let started = Instant::now();
        let batch = bounded("fetch", c.fetch(&[("t", 0, 0), ("t", 1, 0)])).await.unwrap();
        let took = started.elapsed();
        check!(took < bound(), "{behaviour:?}: {took:?}, more than {:?}", bound());
        for partition in [0, 1] {
            let r = batch.get("t", partition).unwrap();
            let Err(e) = r else { return Err(format!("{behaviour:?}: t/{partition} fetched: {r:?}")) };
            check_connection_error(&behaviour, expect, ApiKey::Fetch, partition, e)?;
        }
        let sends = b.count(ApiKey::Fetch);
        check!(sends == expect.attempts() as usize, "{behaviour:?}: {sends} Fetch requests (one per try)");
        bounded("close", c.close()).await;
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_fail_typed_and_in_time_whatever_the_leader_does() {
    side_by_side(LIVENESS, leader_cases(), |(behaviour, expect)| async move {
        let b = broker(vec![Rule::on(ApiKey::Offsets, behaviour.clone())]).await;
        let c = consumer(&b);
        let started = Instant::now();
        let (latest, earliest) = bounded("offsets", async {
            tokio::join!(c.offsets_before("t", 0, LATEST_TIME, 5), c.earliest_offset("t", 1))
        })
        .await;
        let took = started.elapsed();
        check!(took < bound(), "{behaviour:?}: {took:?}, more than {:?}", bound());
        let Err(e) = latest else { return Err(format!("{behaviour:?}: latest: {latest:?}")) };
        check_connection_error(&behaviour, expect, ApiKey::Offsets, 0, &e)?;
        let Err(e) = earliest else { return Err(format!("{behaviour:?}: earliest: {earliest:?}")) };
        // both lookups share the leader's connection: a poisoned stream fails either way
        check!(matches!(e, Error::Connection { partition: 1, .. }), "{behaviour:?}: {e:?}");
        bounded("close", c.close()).await;
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_lookups_fail_typed_and_in_time_whatever_the_broker_does() {
    let cases = vec![
        Fault::WrongCorrelationId,
        Fault::TruncateThenClose,
        Fault::TruncateThenSilence,
        Fault::SizePrefix(i32::MAX),
        Fault::HugeArrayCount,
        Fault::TrailingBytes,
        Fault::Silent,
        Fault::Close,
    ];
    side_by_side(LIVENESS, cases, |behaviour| async move {
        let b = broker(vec![Rule::on(ApiKey::Metadata, behaviour.clone())]).await;
        let c = consumer(&b);
        let started = Instant::now();
        let (fetched, leader) =
            bounded("metadata", async { tokio::join!(c.fetch(&[("t", 0, 0)]), c.leader("t", 0)) }).await;
        let took = started.elapsed();
        check!(took < metadata_bound(), "{behaviour:?}: {took:?}, more than {:?}", metadata_bound());
        for r in [fetched.map(drop), leader.map(drop)] {
            match r {
                Err(Error::Metadata { topics, source }) => {
                    check!(topics == ["t"], "{behaviour:?}: {topics:?}");
                    check!(
                        matches!(*source, gregor_net::Error::NoBrokerAvailable { last: Some(_), .. }),
                        "{behaviour:?}: {source:?}"
                    );
                }
                other => return Err(format!("{behaviour:?}: {other:?}")),
            }
        }
        check!(b.count(ApiKey::Fetch) == 0, "{behaviour:?}: fetched without metadata");
        bounded("close", c.close()).await;
        Ok(())
    })
    .await;
}

/// A readable response is used however it comes: garbage after it, or a byte at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_readable_response_is_used_however_it_comes() {
    let cases = vec![Fault::GarbageAfter, Fault::Slowloris(Duration::from_millis(1))];
    side_by_side(LIVENESS, cases, |behaviour| async move {
        let b = broker(vec![Rule::any(behaviour.clone())]).await;
        let c = Arc::new(consumer(&b));
        for round in 0..2 {
            let data = bounded("fetch", c.fetch_partition("t", 0, 1)).await;
            let Ok(data) = data else { return Err(format!("{behaviour:?}, round {round}: {data:?}")) };
            let offsets: Vec<i64> = data.messages.iter().map(|m| m.offset).collect();
            check!(offsets == [1, 2] && data.high_watermark == 3, "{behaviour:?}: {data:?}");
            let earliest = bounded("offsets", c.offsets_before("t", 0, EARLIEST_TIME, 1)).await;
            check!(matches!(&earliest, Ok(o) if o == &[0]), "{behaviour:?}: {earliest:?}");
        }
        bounded("close", c.close()).await;
        Ok(())
    })
    .await;
}

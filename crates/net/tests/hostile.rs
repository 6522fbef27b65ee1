//! gregor-net against a hostile broker (gregor-testkit's `HostileBroker`): wrong correlation
//! ids, truncated frames, huge and negative size prefixes, corrupt bodies, garbage after a
//! response, silence, closed connections, a byte at a time. Each must give the typed error
//! the docs promise, within the request timeout (plus a little slack), poison the connection
//! exactly when the stream can no longer be trusted, never panic, and never allocate from a
//! size prefix.
//!
//! No ZooKeeper needed: the hostile broker answers Metadata itself. Every test takes well under
//! a second but the timeout ones (one request timeout, 1 s, each).

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;
use std::time::Duration;

use gregor_net::{BrokerConnection, ConnectionConfig, Error, MetadataCache, MetadataConfig, PoisonReason, Pool};
use gregor_protocol::frame::ApiKey;
use gregor_protocol::messages::{FetchPartition, FetchRequest, FetchTopic, MetadataRequest};
use gregor_testkit::fault::{self, Accept, Fault, Rule};
use gregor_testkit::hostile::HostileBroker;
use gregor_testkit::{support, wire};
use tokio::time::Instant;

// ---------------------------------------------------------------------------------------------
// The largest single allocation made by this thread while watched. The tests that measure run
// on a current-thread runtime, so the connection's reader task allocates on the test's thread.

gregor_testkit::counting_allocator!(ALLOCATOR);

/// What a connection may allocate at once for the small frames of these tests: its 16 KiB read
/// buffer, doubled, and change.
const SMALL: usize = 64 * 1024;

// ---------------------------------------------------------------------------------------------
// Panics anywhere in the process (a reader task's would be swallowed by tokio and show only as
// a hang) are counted.

static PANICS: AtomicUsize = AtomicUsize::new(0);

fn count_panics() -> usize {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            previous(info);
        }));
    });
    PANICS.load(Ordering::SeqCst)
}

// ---------------------------------------------------------------------------------------------

/// The request timeout of these tests. What must fail "at once" is bounded by it, what must
/// time out takes at least it: long enough that a loaded machine cannot blur the two.
const TIMEOUT: Duration = Duration::from_secs(1);
/// How late past its bound an error may come on a loaded machine.
const SLACK: Duration = Duration::from_secs(2);
/// How long any single await may take before the test calls it a hang.
const LIVENESS: Duration = Duration::from_secs(10);
/// The max frame size of these tests.
const MAX_FRAME: usize = 1 << 20;

#[track_caller]
fn bounded<F: Future>(what: &str, f: F) -> impl Future<Output = F::Output> + use<'_, F> {
    support::bounded(what, LIVENESS, f)
}

fn config() -> ConnectionConfig {
    // the hostile brokers answer no ApiVersions: 0.8.2's versions, nothing asked
    ConnectionConfig::builder()
        .client_id("hostile-test")
        .api_version_request(false)
        .request_timeout(TIMEOUT)
        .max_frame_size(MAX_FRAME)
        .build()
        .unwrap()
}

async fn broker(rules: Vec<Rule>) -> HostileBroker {
    let mut b = HostileBroker::builder().topic("t", 2).messages(
        "t",
        0,
        vec![wire::msg(Some("k"), "v0"), wire::msg(None, "v1")],
    );
    for rule in rules {
        b = b.intercept(rule);
    }
    b.start().await.unwrap()
}

async fn connect(b: &HostileBroker) -> BrokerConnection {
    bounded("connect", BrokerConnection::connect(b.addr(), &config())).await.unwrap()
}

fn md() -> MetadataRequest {
    MetadataRequest::for_topics(["t"])
}

fn fetch(partition: i32, offset: i64) -> FetchRequest {
    FetchRequest {
        max_wait_time: 0,
        min_bytes: 0,
        topics: vec![FetchTopic::new("t", vec![FetchPartition::new(partition, offset, 64 * 1024)])],
        ..Default::default()
    }
}

fn poison_of(e: &Error) -> &PoisonReason {
    e.poison_reason().unwrap_or_else(|| panic!("not a poisoned-connection error: {e:?}"))
}

/// Sends a Metadata request; returns its result and how long it took.
async fn timed_md(conn: &BrokerConnection) -> (Result<gregor_protocol::messages::MetadataResponse, Error>, Duration) {
    let started = Instant::now();
    let r = bounded("metadata request", conn.request(0, &md())).await;
    (r, started.elapsed())
}

/// The connection is unusable, and says so to a later request without waiting.
async fn assert_poisoned(conn: &BrokerConnection) {
    assert!(conn.is_poisoned());
    let (later, took) = timed_md(conn).await;
    let later = later.unwrap_err();
    assert!(matches!(later, Error::Poisoned { .. }), "{later:?}");
    assert!(took < TIMEOUT, "a poisoned connection answered after {took:?}");
}

/// The connection still works.
async fn assert_usable(conn: &BrokerConnection) {
    assert!(!conn.is_poisoned(), "{:?}", conn.poison_reason());
    let (ok, _) = timed_md(conn).await;
    assert_eq!(ok.unwrap().topics[0].partitions.len(), 2);
}

#[tokio::test]
async fn a_correct_broker_is_a_correct_broker() {
    let panics = count_panics();
    let b = broker(vec![]).await;
    let conn = connect(&b).await;
    let (r, took) = timed_md(&conn).await;
    let r = r.unwrap();
    assert_eq!(r.brokers[0].port, i32::from(b.addr().port()));
    assert!(took < TIMEOUT);
    let f = bounded("fetch", conn.request(0, &fetch(0, 0))).await.unwrap();
    let got = f.topics[0].partitions[0].messages("t", 0).unwrap().messages;
    assert_eq!(got.iter().map(|m| m.offset).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(count_panics(), panics);
}

#[tokio::test]
async fn a_wrong_correlation_id_poisons_at_once() {
    let panics = count_panics();
    let b = broker(vec![Rule::on(ApiKey::Metadata, Fault::WrongCorrelationId)]).await;
    let conn = connect(&b).await;
    let (err, took) = timed_md(&conn).await;
    let err = err.unwrap_err();
    let id = b.served()[0].header.correlation_id;
    match poison_of(&err) {
        PoisonReason::UnexpectedCorrelation { expected, got } => {
            assert_eq!((*expected, *got), (Some(id), id + fault::WRONG_CORRELATION_OFFSET))
        }
        other => panic!("{other:?}"),
    }
    assert!(err.is_retriable());
    assert!(took < TIMEOUT, "{took:?}");
    assert_poisoned(&conn).await;
    assert_eq!(count_panics(), panics);
}

#[tokio::test]
async fn pipelined_requests_fail_together() {
    let panics = count_panics();
    // the second of three pipelined requests is answered with a wrong id: all three fail
    let b = broker(vec![
        Rule::on(ApiKey::Metadata, Fault::Delay(Duration::from_millis(50))).once(),
        Rule::on(ApiKey::Metadata, Fault::WrongCorrelationId).once(),
        Rule::on(ApiKey::Metadata, Fault::Silent),
    ])
    .await;
    let conn = connect(&b).await;
    let started = Instant::now();
    let (r1, r2, r3) = bounded("three requests", async {
        let (a, b, c) = (md(), md(), md());
        tokio::join!(conn.request(0, &a), conn.request(0, &b), conn.request(0, &c))
    })
    .await;
    let took = started.elapsed();
    assert!(r1.is_ok(), "the first was answered before the bad frame: {r1:?}");
    for r in [r2, r3] {
        let e = r.unwrap_err();
        assert!(matches!(poison_of(&e), PoisonReason::UnexpectedCorrelation { .. }), "{e:?}");
    }
    assert!(took < TIMEOUT, "{took:?}");

    // silence: the oldest request times out, the others in flight fail with the same reason
    let b = broker(vec![Rule::on(ApiKey::Metadata, Fault::Silent)]).await;
    let conn = connect(&b).await;
    let started = Instant::now();
    let (r1, r2) = bounded("two requests", async {
        let (a, b) = (md(), md());
        tokio::join!(conn.request(0, &a), conn.request(0, &b))
    })
    .await;
    let took = started.elapsed();
    assert!(matches!(r1, Err(Error::Timeout { api: ApiKey::Metadata, after: TIMEOUT, .. })), "{r1:?}");
    let e = r2.unwrap_err();
    assert!(matches!(poison_of(&e), PoisonReason::Timeout { after: TIMEOUT, .. }), "{e:?}");
    assert!(took >= TIMEOUT && took < TIMEOUT + SLACK, "{took:?}");
    assert_eq!(count_panics(), panics);
}

#[tokio::test]
async fn a_truncated_frame_then_close_poisons_at_once() {
    let panics = count_panics();
    let b = broker(vec![Rule::on(ApiKey::Metadata, Fault::TruncateThenClose)]).await;
    let conn = connect(&b).await;
    let (err, took) = timed_md(&conn).await;
    let err = err.unwrap_err();
    assert!(matches!(poison_of(&err), PoisonReason::BrokerClosed { in_flight: 1, unanswered_sends: 0 }), "{err:?}");
    assert!(took < TIMEOUT, "{took:?}");
    assert_poisoned(&conn).await;
    assert_eq!(count_panics(), panics);
}

#[tokio::test]
async fn silence_times_out_within_the_request_timeout() {
    let panics = count_panics();
    for (what, broker) in [
        ("truncated then silent", broker(vec![Rule::on(ApiKey::Metadata, Fault::TruncateThenSilence)]).await),
        ("silent", broker(vec![Rule::on(ApiKey::Metadata, Fault::Silent)]).await),
        ("accepts, never answers", HostileBroker::builder().accept(Accept::Silent).start().await.unwrap()),
        ("accepts, never reads", HostileBroker::builder().accept(Accept::Stall).start().await.unwrap()),
        (
            "a size prefix within the max, no frame",
            broker(vec![Rule::on(ApiKey::Metadata, Fault::SizePrefix(1000))]).await,
        ),
    ] {
        let conn = connect(&broker).await;
        let (err, took) = timed_md(&conn).await;
        let err = err.unwrap_err();
        match &err {
            Error::Timeout { api, after, correlation_id, .. } => {
                assert_eq!((*api, *after), (ApiKey::Metadata, TIMEOUT), "{what}");
                assert_eq!(*correlation_id, 0, "{what}");
            }
            other => panic!("{what}: {other:?}"),
        }
        assert!(err.is_retriable() && err.needs_metadata_refresh(), "{what}");
        assert!(took >= TIMEOUT && took < TIMEOUT + SLACK, "{what}: {took:?}");
        assert!(matches!(conn.poison_reason(), Some(PoisonReason::Timeout { .. })), "{what}");
        assert_poisoned(&conn).await;
    }
    assert_eq!(count_panics(), panics);
}

#[tokio::test]
async fn huge_and_negative_size_prefixes_poison_at_once_without_allocating() {
    let panics = count_panics();
    for size in [i32::MAX, MAX_FRAME as i32 + 1, -1, i32::MIN] {
        let b = broker(vec![Rule::on(ApiKey::Metadata, Fault::SizePrefix(size))]).await;
        let conn = connect(&b).await;
        let watch = ALLOCATOR.watch_largest();
        let (err, took) = timed_md(&conn).await;
        let largest = watch.stop();
        let err = err.unwrap_err();
        match poison_of(&err) {
            PoisonReason::FrameTooLarge { size: got, max } => {
                assert_eq!((*got, *max), (i64::from(size), MAX_FRAME), "{err}")
            }
            other => panic!("size {size}: {other:?}"),
        }
        assert_eq!(
            err.to_string(),
            format!(
                "connection to {} is unusable: response frame of {size} bytes exceeds max frame size {MAX_FRAME}",
                b.addr()
            )
        );
        assert!(took < TIMEOUT, "size {size}: {took:?}");
        assert!(largest < SMALL, "size {size}: allocated {largest} bytes at once");
        assert_poisoned(&conn).await;
    }
    assert_eq!(count_panics(), panics);
}

/// A size prefix within the max frame size (Kafka's default, 100 MiB) followed by nothing: the
/// client must wait for the frame, not allocate 100 MiB for it.
#[tokio::test]
async fn a_size_prefix_within_the_max_is_not_allocated_up_front() {
    let panics = count_panics();
    let max = gregor_net::config::DEFAULT_MAX_FRAME_SIZE;
    let b = broker(vec![Rule::on(ApiKey::Metadata, Fault::SizePrefix(max as i32))]).await;
    let config = config().to_builder().max_frame_size(max).build().unwrap();
    let conn = bounded("connect", BrokerConnection::connect(b.addr(), &config)).await.unwrap();
    let watch = ALLOCATOR.watch_largest();
    let (err, took) = timed_md(&conn).await;
    let largest = watch.stop();
    assert!(matches!(err, Err(Error::Timeout { .. })), "{err:?}");
    assert!(took >= TIMEOUT && took < TIMEOUT + SLACK, "{took:?}");
    assert!(largest < SMALL, "a 4-byte size prefix made the client allocate {largest} bytes at once");

    // and a frame that does arrive whole, slowly, in pieces, is still read (the buffer grows
    // with the bytes)
    let b = broker(vec![]).await;
    let big: Vec<_> = (0..200).map(|i| wire::msg(None, &format!("{i:0>2000}"))).collect();
    let b2 = HostileBroker::builder().messages("t", 0, big).start().await.unwrap();
    drop(b);
    let conn = bounded("connect", BrokerConnection::connect(b2.addr(), &config)).await.unwrap();
    let request = FetchRequest {
        topics: vec![FetchTopic::new(
            "t",
            vec![FetchPartition { partition: 0, fetch_offset: 0, max_bytes: 1 << 20, ..Default::default() }],
        )],
        ..fetch(0, 0)
    };
    let f = bounded("a 400 KB fetch", conn.request(0, &request)).await.unwrap();
    assert_eq!(f.topics[0].partitions[0].messages("t", 0).unwrap().messages.len(), 200);
    assert_eq!(count_panics(), panics);
}

#[tokio::test]
async fn a_bad_crc_reaches_the_reader_as_a_crc_error_and_the_connection_stays_usable() {
    let panics = count_panics();
    let b = broker(vec![Rule::on(ApiKey::Fetch, Fault::BadCrc).once()]).await;
    let conn = connect(&b).await;
    // the connection moves bytes; the CRC is checked where the messages are decoded
    let f = bounded("fetch", conn.request(0, &fetch(0, 1))).await.unwrap();
    let err = f.topics[0].partitions[0].messages("t", 1).unwrap_err();
    match &err {
        gregor_protocol::Error::Crc { location, stored, computed } => {
            assert_eq!((location.topic.as_deref(), location.partition, location.offset), (Some("t"), Some(0), 1));
            assert_ne!(stored, computed);
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().starts_with("crc mismatch in message at t/0 offset 1: stored "), "{err}");
    assert_usable(&conn).await;
    assert_eq!(count_panics(), panics);
}

#[tokio::test]
async fn corrupt_bodies_fail_only_their_request_without_allocating() {
    let panics = count_panics();
    // (behaviour, API, what the codec must say)
    type Check = fn(&gregor_protocol::Error) -> bool;
    let cases: [(Fault, ApiKey, Check); 4] = [
        (Fault::MessageSetOverrun, ApiKey::Fetch, |e| {
            matches!(e, gregor_protocol::Error::InvalidLength { field: "message_set", .. })
        }),
        (Fault::HugeArrayCount, ApiKey::Fetch, |e| {
            matches!(e, gregor_protocol::Error::InvalidLength { length: 2147483647, .. })
        }),
        (Fault::HugeArrayCount, ApiKey::Metadata, |e| {
            matches!(e, gregor_protocol::Error::InvalidLength { field: "brokers", length: 2147483647, .. })
        }),
        (Fault::TrailingBytes, ApiKey::Metadata, |e| {
            matches!(e, gregor_protocol::Error::TrailingBytes { remaining: 4, .. })
        }),
    ];
    for (behaviour, api, check) in cases {
        let b = broker(vec![Rule::on(api, behaviour.clone()).once()]).await;
        let conn = connect(&b).await;
        let started = Instant::now();
        let watch = ALLOCATOR.watch_largest();
        let err = if api == ApiKey::Fetch {
            bounded("fetch", conn.request(0, &fetch(0, 0))).await.map(drop)
        } else {
            bounded("metadata", conn.request(0, &md())).await.map(drop)
        };
        let largest = watch.stop();
        let took = started.elapsed();
        let err = err.unwrap_err();
        match &err {
            Error::Decode { api: got_api, version: 0, correlation_id: 0, source, .. } => {
                assert_eq!(*got_api, api);
                assert!(check(source), "{behaviour:?} on {api}: {source:?}");
            }
            other => panic!("{behaviour:?} on {api}: {other:?}"),
        }
        assert!(!err.is_retriable(), "{behaviour:?}: a body that does not decode will not decode next time");
        assert!(took < TIMEOUT, "{behaviour:?}: {took:?}");
        assert!(largest < SMALL, "{behaviour:?} on {api}: allocated {largest} bytes at once");
        // the frame was whole: the stream is in step, the connection stays
        assert_usable(&conn).await;
    }
    assert_eq!(count_panics(), panics);
}

#[tokio::test]
async fn garbage_after_a_valid_response_delivers_it_then_poisons() {
    let panics = count_panics();
    let b = broker(vec![Rule::on(ApiKey::Metadata, Fault::GarbageAfter).once()]).await;
    let conn = connect(&b).await;
    let (ok, took) = timed_md(&conn).await;
    assert_eq!(ok.unwrap().topics[0].partitions.len(), 2, "the valid response is delivered");
    assert!(took < TIMEOUT);
    // the garbage reads as a negative size prefix: the connection is given up as it arrives,
    // with no request waiting
    let deadline = Instant::now() + LIVENESS;
    while !conn.is_poisoned() {
        assert!(Instant::now() < deadline, "the garbage went unnoticed");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let garbage_size = i64::from(i32::from_be_bytes(fault::GARBAGE[..4].try_into().unwrap()));
    let reason = conn.poison_reason();
    assert!(matches!(reason, Some(PoisonReason::FrameTooLarge { size, .. }) if size == garbage_size), "{reason:?}");
    assert_poisoned(&conn).await;

    // garbage that looks like a frame (a small size, an id nobody waits for): the same
    let mut fake = 8i32.to_be_bytes().to_vec();
    fake.extend_from_slice(&[0x7f, 0, 0, 1, 0, 0, 0, 0]);
    let b = broker(vec![Rule::on(ApiKey::Metadata, Fault::Raw(fake.into()))]).await;
    let conn = connect(&b).await;
    let (err, took) = timed_md(&conn).await;
    let err = err.unwrap_err();
    assert!(
        matches!(poison_of(&err), PoisonReason::UnexpectedCorrelation { expected: Some(0), got: 0x7f00_0001 }),
        "{err:?}"
    );
    assert!(took < TIMEOUT);

    // a frame too short to hold a correlation id
    let b = broker(vec![Rule::on(ApiKey::Metadata, Fault::Raw(vec![0, 0, 0, 2, 0, 0].into()))]).await;
    let conn = connect(&b).await;
    let (err, _) = timed_md(&conn).await;
    let err = err.unwrap_err();
    assert!(matches!(poison_of(&err), PoisonReason::ShortFrame { size: 2 }), "{err:?}");
    assert_eq!(count_panics(), panics);
}

#[tokio::test]
async fn a_broker_that_closes_poisons_at_once() {
    let panics = count_panics();
    // after reading the request
    let b = broker(vec![Rule::on(ApiKey::Metadata, Fault::Close)]).await;
    let conn = connect(&b).await;
    let (err, took) = timed_md(&conn).await;
    let err = err.unwrap_err();
    assert!(matches!(poison_of(&err), PoisonReason::BrokerClosed { in_flight: 1, .. }), "{err:?}");
    assert!(err.to_string().contains(gregor_net::BROKER_CLOSED_HINT), "{err}");
    assert!(took < TIMEOUT, "{took:?}");

    // right after accepting: the request may meet the close (EOF) or a reset
    let b = HostileBroker::builder().accept(Accept::Close).start().await.unwrap();
    for _ in 0..3 {
        let conn = connect(&b).await;
        let (err, took) = timed_md(&conn).await;
        let err = err.unwrap_err();
        assert!(matches!(poison_of(&err), PoisonReason::BrokerClosed { .. } | PoisonReason::Io { .. }), "{err:?}");
        assert!(err.is_retriable());
        assert!(took < TIMEOUT, "{took:?}");
        assert_poisoned(&conn).await;
    }
    assert_eq!(count_panics(), panics);
}

#[tokio::test]
async fn slowloris_is_read_when_in_time_and_cut_off_at_the_request_timeout() {
    let panics = count_panics();
    // a byte every millisecond: a Metadata response of ~60 bytes comes whole in time
    let b = broker(vec![Rule::on(ApiKey::Metadata, Fault::Slowloris(Duration::from_millis(1)))]).await;
    let conn = connect(&b).await;
    let (ok, took) = timed_md(&conn).await;
    assert_eq!(ok.unwrap().topics[0].partitions.len(), 2);
    assert!(took < TIMEOUT, "{took:?}");

    // a byte every 50 ms: each byte is progress, but the request's deadline does not move
    let b = broker(vec![Rule::on(ApiKey::Metadata, Fault::Slowloris(Duration::from_millis(50)))]).await;
    let conn = connect(&b).await;
    let (err, took) = timed_md(&conn).await;
    assert!(matches!(err, Err(Error::Timeout { after: TIMEOUT, .. })), "{err:?}");
    assert!(took >= TIMEOUT && took < TIMEOUT + SLACK, "{took:?}");
    assert_poisoned(&conn).await;
    assert_eq!(count_panics(), panics);
}

#[tokio::test]
async fn the_pool_replaces_a_poisoned_connection() {
    let panics = count_panics();
    let b = broker(vec![Rule::on(ApiKey::Metadata, Fault::WrongCorrelationId).once()]).await;
    let pool = Pool::new(config());
    let first = bounded("pool", pool.get_addr(&b.bootstrap())).await.unwrap();
    assert!(bounded("md", first.request(0, &md())).await.is_err());
    let second = bounded("pool", pool.get_addr(&b.bootstrap())).await.unwrap();
    assert!(!second.same_connection(&first));
    bounded("md", second.request(0, &md())).await.unwrap();
    assert_eq!(b.connections_accepted(), 2);
    bounded("close", pool.close()).await;
    assert_eq!(count_panics(), panics);
}

fn cache(bootstrap: &str, rounds: u32) -> MetadataCache {
    let metadata = MetadataConfig::builder()
        .refresh_rounds(rounds)
        .retry_backoff(Duration::from_millis(20))
        .retry_backoff_max(Duration::from_millis(20))
        .build()
        .unwrap();
    MetadataCache::with_config(bootstrap, Pool::new(config()), metadata).unwrap()
}

/// Every behaviour on Metadata: a refresh fails with NoBrokerAvailable carrying the last
/// error, after `rounds` tries, within rounds x (request timeout + backoff).
#[tokio::test]
async fn metadata_refresh_fails_typed_and_bounded_against_every_behaviour() {
    let panics = count_panics();
    const ROUNDS: u32 = 2;
    type Check = fn(&Error) -> bool;
    let timeout: Check = |e| matches!(e, Error::Timeout { api: ApiKey::Metadata, .. });
    let cases: Vec<(Fault, Check)> = vec![
        (Fault::WrongCorrelationId, |e| matches!(e.poison_reason(), Some(PoisonReason::UnexpectedCorrelation { .. }))),
        (Fault::TruncateThenClose, |e| matches!(e.poison_reason(), Some(PoisonReason::BrokerClosed { .. }))),
        (Fault::TruncateThenSilence, timeout),
        (Fault::SizePrefix(i32::MAX), |e| matches!(e.poison_reason(), Some(PoisonReason::FrameTooLarge { .. }))),
        (Fault::SizePrefix(-7), |e| matches!(e.poison_reason(), Some(PoisonReason::FrameTooLarge { size: -7, .. }))),
        (Fault::HugeArrayCount, |e| matches!(e, Error::Decode { api: ApiKey::Metadata, .. })),
        (Fault::TrailingBytes, |e| matches!(e, Error::Decode { api: ApiKey::Metadata, .. })),
        (Fault::Silent, timeout),
        (Fault::Close, |e| {
            matches!(e.poison_reason(), Some(PoisonReason::BrokerClosed { .. } | PoisonReason::Io { .. }))
        }),
        (Fault::Slowloris(Duration::from_millis(50)), timeout),
    ];
    for (behaviour, check) in cases {
        let b = broker(vec![Rule::on(ApiKey::Metadata, behaviour.clone())]).await;
        let cache = cache(&b.bootstrap(), ROUNDS);
        let started = Instant::now();
        let err = bounded("refresh", cache.refresh(&["t".to_owned()])).await.unwrap_err();
        let took = started.elapsed();
        match &err {
            Error::NoBrokerAvailable { tried, last: Some(last) } => {
                assert_eq!(tried, &[b.bootstrap()], "{behaviour:?}");
                assert!(check(last), "{behaviour:?}: {last:?}");
            }
            other => panic!("{behaviour:?}: {other:?}"),
        }
        let bound = (TIMEOUT + Duration::from_millis(20)) * ROUNDS + SLACK;
        assert!(took < bound, "{behaviour:?}: {took:?} > {bound:?}");
        assert_eq!(b.count(ApiKey::Metadata), ROUNDS as usize, "{behaviour:?}: one request per round");
        assert!(cache.snapshot().refreshed_at().is_none(), "{behaviour:?}: nothing was applied");
        assert!(cache.leader("t", 0).is_none());
    }
    assert_eq!(count_panics(), panics);
}

/// A hostile bootstrap broker is skipped for the next one; a good answer is used.
#[tokio::test]
async fn metadata_falls_through_a_hostile_broker_to_a_good_one() {
    let panics = count_panics();
    let bad = broker(vec![Rule::any(Fault::WrongCorrelationId)]).await;
    let good = broker(vec![]).await;
    let cache = cache(&format!("{},{}", bad.bootstrap(), good.bootstrap()), 1);
    let started = Instant::now();
    bounded("refresh", cache.refresh(&["t".to_owned()])).await.unwrap();
    assert!(started.elapsed() < TIMEOUT);
    assert_eq!(cache.leader_addr("t", 1), Some(good.bootstrap()));
    assert_eq!(bad.count(ApiKey::Metadata), 1);
    let leader = bounded("leader", cache.leader_connection("t", 0)).await.unwrap();
    bounded("fetch", leader.request(0, &fetch(0, 0))).await.unwrap();
    assert_eq!(count_panics(), panics);
}

//! Every fault of the testkit's one vocabulary ([`gregor_testkit::fault`]) on FakeCluster
//! brokers, seen through a raw socket and the testkit's wire client: the corrupt frames that
//! only the HostileBroker used to send, delays, and how connections are greeted.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use common::*;
use gregor_protocol::frame::{decode_response, encode_request, ApiKey, RequestHeader};
use gregor_protocol::messages::MetadataRequest;
use gregor_protocol::{Compression, ErrorCode};
use gregor_testkit::fault::{Accept, Fault, Rule, GARBAGE, MESSAGE_SET_OVERRUN, TRAILING, WRONG_CORRELATION_OFFSET};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

macro_rules! cluster_or_skip {
    ($name:expr, $n:expr) => {
        match cluster($name, $n).await {
            Some(c) => c,
            None => return,
        }
    };
}

/// How long a connection must stay quiet to count as silent (open, nothing more to read).
const QUIET: Duration = Duration::from_millis(1000);

/// The correlation id of every raw request.
const ID: i32 = 9;

/// Sends one Metadata request for `topics` on a new connection and reads until the broker
/// closes it (`true`) or stays [`QUIET`] (`false`).
async fn exchange(addr: SocketAddr, topics: &[&str]) -> (Vec<u8>, bool) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    send_metadata(&mut s, topics).await;
    read_until_quiet_or_closed(&mut s).await
}

async fn send_metadata(s: &mut TcpStream, topics: &[&str]) {
    let header = RequestHeader {
        api_key: ApiKey::Metadata,
        api_version: 0,
        correlation_id: ID,
        client_id: Some("faults".into()),
        unknown_tagged_fields: Default::default(),
    };
    let mut out = BytesMut::new();
    encode_request(&header, &metadata(topics), &mut out).unwrap();
    s.write_all(&out).await.unwrap();
}

async fn read_until_quiet_or_closed(s: &mut TcpStream) -> (Vec<u8>, bool) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(QUIET, s.read(&mut buf)).await {
            Err(_) => return (got, false),
            Ok(Ok(0) | Err(_)) => return (got, true),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

fn be(n: i32) -> [u8; 4] {
    n.to_be_bytes()
}

/// Every fault on a FakeCluster broker's Metadata response writes what the vocabulary says,
/// byte for byte against the correct response, and leaves the connection open or closed as
/// it says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_writes_what_it_says_on_a_fake_cluster_broker() {
    let c = cluster_or_skip!("faults-every", 1);
    c.create_topic("f", 1, 1).await.unwrap();
    let addr = c.broker_addr(0).unwrap();
    let (good, closed) = exchange(addr, &["f"]).await;
    assert!(!closed && good.len() > 8, "the correct response: {good:?}");
    assert_eq!(&good[..4], &be(good.len() as i32 - 4));
    assert_eq!(&good[4..8], &be(ID));
    let body = &good[8..];

    type Check = fn(&[u8], &[u8], bool) -> Result<(), String>;
    let cases: Vec<(Fault, Check)> = vec![
        (Fault::Answer, |got, good, closed| ok(got == good && !closed)),
        (Fault::Slowloris(Duration::from_millis(1)), |got, good, closed| ok(got == good && !closed)),
        (Fault::WrongCorrelationId, |got, good, closed| {
            ok(got.len() == good.len()
                && got[..4] == good[..4]
                && got[4..8] == be(ID + WRONG_CORRELATION_OFFSET)
                && got[8..] == good[8..]
                && !closed)
        }),
        (Fault::TruncateThenClose, |got, good, closed| {
            ok(got.len() > 4 && got.len() < good.len() && got[..] == good[..got.len()] && closed)
        }),
        (Fault::TruncateThenSilence, |got, good, closed| {
            ok(got.len() > 4 && got.len() < good.len() && got[..] == good[..got.len()] && !closed)
        }),
        (Fault::SizePrefix(-1), |got, _, closed| ok(got == be(-1) && !closed)),
        (Fault::HugeArrayCount, |got, _, closed| {
            ok(got.len() == 20 && got[4..8] == be(ID) && got[8..12] == be(i32::MAX) && !closed)
        }),
        // outside Fetch, as HugeArrayCount
        (Fault::MessageSetOverrun, |got, _, closed| ok(got.len() == 20 && got[8..12] == be(i32::MAX) && !closed)),
        (Fault::TrailingBytes, |got, good, closed| {
            ok(got.len() == good.len() + TRAILING.len()
                && got[..4] == be(good.len() as i32 - 4 + TRAILING.len() as i32)
                && got[4..good.len()] == good[4..]
                && got.ends_with(TRAILING)
                && !closed)
        }),
        (Fault::GarbageAfter, |got, good, closed| {
            ok(got.len() == good.len() + GARBAGE.len() && got.starts_with(good) && got.ends_with(GARBAGE) && !closed)
        }),
        (Fault::Silent, |got, _, closed| ok(got.is_empty() && !closed)),
        (Fault::NoResponse, |got, _, closed| ok(got.is_empty() && !closed)),
        (Fault::Close, |got, _, closed| ok(got.is_empty() && closed)),
        (Fault::Raw(bytes::Bytes::from_static(b"\0\0\0\x01x")), |got, _, closed| ok(got == b"\0\0\0\x01x" && !closed)),
        (Fault::Error(ErrorCode::LeaderNotAvailable), |got, _, closed| {
            if got.len() < 8 {
                return Err("no frame".into());
            }
            let (h, r) = decode_response::<MetadataRequest>(0, got[4..].to_vec().into()).map_err(|e| e.to_string())?;
            ok(h.correlation_id == ID
                && r.brokers.is_empty()
                && r.topics.len() == 1
                && r.topics[0].error() == Some(ErrorCode::LeaderNotAvailable)
                && !closed)
        }),
    ];
    let mut failures = Vec::new();
    for (fault, check) in cases {
        c.intercept(Rule::on(ApiKey::Metadata, fault.clone()).once());
        let (got, closed) = exchange(addr, &["f"]).await;
        if let Err(why) = check(&got, &good, closed) {
            failures.push(format!(
                "{fault:?}: {why}; got {} bytes {:?}, closed {closed}",
                got.len(),
                &got[..got.len().min(24)]
            ));
        }
        let logged = c.requests().last().map(|r| r.fault.clone());
        if logged != Some(fault.clone()) {
            failures.push(format!("{fault:?}: logged as {logged:?}"));
        }
    }
    assert!(failures.is_empty(), "the correct response body is {body:?}\n{}", failures.join("\n"));
}

fn ok(pass: bool) -> Result<(), String> {
    if pass {
        Ok(())
    } else {
        Err("not what the fault says".into())
    }
}

/// TruncateThenSilence, then another request on the same connection: never answered, not
/// carried out, logged as Silent, and no rule is spent on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_frame_then_a_silent_connection() {
    let c = cluster_or_skip!("faults-truncated", 1);
    c.create_topic("t", 1, 1).await.unwrap();
    let mut conn = Conn::open(c.broker_addr(0).unwrap()).await;
    conn.call(0, &produce("t", 0, 1, vec![msg(None, "a")], Compression::None)).await;
    c.intercept(Rule::on(ApiKey::Fetch, Fault::TruncateThenSilence).once());
    c.intercept(Rule::on(ApiKey::Produce, Fault::Close).once());
    let mut s = TcpStream::connect(c.broker_addr(0).unwrap()).await.unwrap();
    let header = RequestHeader {
        api_key: ApiKey::Fetch,
        api_version: 0,
        correlation_id: ID,
        client_id: None,
        unknown_tagged_fields: Default::default(),
    };
    let mut out = BytesMut::new();
    encode_request(&header, &fetch("t", 0, 0, 0), &mut out).unwrap();
    s.write_all(&out).await.unwrap();
    let (got, closed) = read_until_quiet_or_closed(&mut s).await;
    assert!(!closed);
    let size = i32::from_be_bytes(got[..4].try_into().unwrap()) as usize;
    assert!(got.len() > 4 && got.len() < 4 + size, "{} bytes of a {}-byte frame", got.len(), 4 + size);
    // a Produce on the silenced connection: not stored, not answered, the Close rule unspent
    let mut out = BytesMut::new();
    let header = RequestHeader { api_key: ApiKey::Produce, correlation_id: ID + 1, ..header };
    encode_request(&header, &produce("t", 0, 1, vec![msg(None, "b")], Compression::None), &mut out).unwrap();
    s.write_all(&out).await.unwrap();
    let (more, closed) = read_until_quiet_or_closed(&mut s).await;
    assert!(more.is_empty() && !closed);
    assert_eq!(c.offsets("t", 0), Some((1, 1)), "not carried out");
    let last = c.requests().pop().unwrap();
    assert_eq!((last.header.api_key, last.fault), (ApiKey::Produce, Fault::Silent));
    // the Close rule is still there for the next Produce, on any connection
    conn.send(0, &produce("t", 0, 1, vec![msg(None, "c")], Compression::None)).await;
    assert!(conn.recv_frame(Duration::from_secs(5)).await.is_none());
    assert_eq!(c.offsets("t", 0), Some((1, 1)));
}

/// A bad CRC, formerly the HostileBroker's alone: the FakeCluster's own Fetch response with the
/// first message's CRC flipped, on the broker the rule names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_crc_from_a_fake_cluster_broker() {
    let c = cluster_or_skip!("faults-crc", 2);
    c.create_topic("t", 1, 1).await.unwrap();
    let leader = c.leader("t", 0).unwrap();
    let other = c.broker_addrs().into_iter().map(|(id, _)| id).find(|id| *id != leader).unwrap();
    let mut conn = Conn::open(c.broker_addr(leader).unwrap()).await;
    let r = conn
        .call(0, &produce("t", 0, 1, vec![msg(None, "a"), msg(None, "b"), msg(None, "c")], Compression::None))
        .await;
    assert_eq!(r.topics[0].partitions[0].error_code, 0);
    // a rule for the other broker does not touch the leader's Fetch
    c.intercept(Rule::on(ApiKey::Fetch, Fault::BadCrc).on_broker(other).once());
    assert_eq!(read_values(&c, "t", 0, 1).await, [(1, "b".to_owned()), (2, "c".to_owned())]);

    c.clear_intercepts();
    c.intercept(Rule::on(ApiKey::Fetch, Fault::BadCrc).on_broker(leader).once());
    let f = conn.call(0, &fetch("t", 0, 1, 0)).await;
    let p = &f.topics[0].partitions[0];
    assert_eq!((p.error_code, p.high_watermark), (0, 3));
    let err = p.messages("t", 1).unwrap_err();
    assert!(
        matches!(&err, gregor_protocol::Error::Crc { location, stored, computed }
            if location.offset == 1 && location.partition == Some(0) && location.topic.as_deref() == Some("t") && stored != computed),
        "{err:?}"
    );
    let logged = c.requests().into_iter().rfind(|r| r.header.api_key == ApiKey::Fetch).unwrap();
    assert_eq!((logged.broker, logged.fault), (leader, Fault::BadCrc));
    // once: the next Fetch is whole, the log itself never was corrupt
    assert_eq!(read_values(&c, "t", 0, 1).await, [(1, "b".to_owned()), (2, "c".to_owned())]);

    // an empty fetch gets a made-up message at the offset asked for; a message-set overrun
    // runs past the frame
    c.intercept(Rule::on(ApiKey::Fetch, Fault::BadCrc).once());
    let f = conn.call(0, &fetch("t", 0, 3, 0)).await;
    let err = f.topics[0].partitions[0].messages("t", 3).unwrap_err();
    assert!(matches!(&err, gregor_protocol::Error::Crc { location, .. } if location.offset == 3), "{err:?}");
    c.intercept(Rule::on(ApiKey::Fetch, Fault::MessageSetOverrun).once());
    conn.send(0, &fetch("t", 0, 0, 0)).await;
    let frame = conn.recv_frame(Duration::from_secs(5)).await.unwrap();
    let err = decode_response::<gregor_protocol::messages::FetchRequest>(0, frame.clone()).unwrap_err();
    assert!(matches!(err, gregor_protocol::Error::InvalidLength { .. }), "{err:?}");
    // correlation id, 1 topic, "t", 1 partition, partition, error code, high watermark, set size
    let size_at = 4 + 4 + (2 + 1) + 4 + 4 + 2 + 8;
    let size = i32::from_be_bytes(frame[size_at..size_at + 4].try_into().unwrap());
    assert_eq!(size, (frame.len() - size_at - 4) as i32 + MESSAGE_SET_OVERRUN);
}

/// A delay on one FakeCluster broker: the request is carried out only once the delay is over
/// (a Produce is not in the log meanwhile), and other brokers are not delayed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delay_on_one_fake_cluster_broker() {
    let c = cluster_or_skip!("faults-delay", 2);
    c.create_topic("t", 1, 1).await.unwrap();
    let leader = c.leader("t", 0).unwrap();
    let other = c.broker_addrs().into_iter().map(|(id, _)| id).find(|id| *id != leader).unwrap();
    let delay = Duration::from_secs(2);
    c.intercept(Rule::on(ApiKey::Produce, Fault::Delay(delay)).on_broker(leader).once());
    c.intercept(Rule::on(ApiKey::Metadata, Fault::Delay(delay)).on_broker(leader).once());

    let mut conn = Conn::open(c.broker_addr(leader).unwrap()).await;
    let started = Instant::now();
    let id = conn.send(0, &produce("t", 0, 1, vec![msg(None, "late")], Compression::None)).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(c.offsets("t", 0), Some((0, 0)), "not appended during the delay");
    let frame = conn.recv_frame(Duration::from_secs(20)).await.unwrap();
    assert!(started.elapsed() >= delay, "answered after {:?}", started.elapsed());
    let (h, r) = decode_response::<gregor_protocol::messages::ProduceRequest>(0, frame).unwrap();
    assert_eq!((h.correlation_id, r.topics[0].partitions[0].error_code, r.topics[0].partitions[0].offset), (id, 0, 0));
    assert_eq!(c.offsets("t", 0), Some((1, 1)));

    // the other broker's Metadata is not delayed: the leader's rule is still there afterwards
    let mut elsewhere = Conn::open(c.broker_addr(other).unwrap()).await;
    elsewhere.call(0, &metadata(&["t"])).await;
    let logged = c.requests().pop().unwrap();
    assert_eq!((logged.broker, logged.fault), (other, Fault::Answer));
    let started = Instant::now();
    conn.call(0, &metadata(&["t"])).await;
    assert!(started.elapsed() >= delay, "the leader's Metadata waited only {:?}", started.elapsed());
}

/// How a FakeCluster broker greets connections, per broker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_close_and_silent_on_one_fake_cluster_broker() {
    let c = cluster_or_skip!("faults-accept", 2);
    c.create_topic("t", 1, 1).await.unwrap();
    let (a, b) = (c.broker_addr(0).unwrap(), c.broker_addr(1).unwrap());
    let mut kept = Conn::open(a).await;
    // answered once, so the broker has accepted it under Serve (a connection still in the
    // listen backlog would meet the Close below)
    kept.call(0, &metadata(&["t"])).await;

    c.set_accept(0, Accept::Close);
    assert_eq!(exchange(a, &["t"]).await, (vec![], true));
    let (got, closed) = exchange(b, &["t"]).await;
    assert!(!got.is_empty() && !closed, "broker 1 still serves");
    kept.call(0, &metadata(&["t"])).await;

    c.set_accept(0, Accept::Silent);
    let (got, closed) = exchange(a, &["t"]).await;
    assert!(got.is_empty() && !closed);
    let logged = c.requests().pop().unwrap();
    assert_eq!((logged.broker, logged.fault), (0, Fault::Silent));

    c.set_accept(0, Accept::Stall);
    let logged = c.requests().len();
    let mut s = TcpStream::connect(a).await.unwrap();
    send_metadata(&mut s, &["t"]).await;
    let (got, closed) = read_until_quiet_or_closed(&mut s).await;
    assert!(got.is_empty() && !closed);
    assert_eq!(c.requests().len(), logged, "a stalled connection is never read");

    c.set_accept(0, Accept::Serve);
    let (got, closed) = exchange(a, &["t"]).await;
    assert!(!got.is_empty() && !closed);
}

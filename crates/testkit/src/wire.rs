//! A tiny raw wire client for tests, made only of `gregor-protocol`: no client crate, no
//! metadata cache, no retries — one TCP connection to one broker that sends exactly the request
//! it is given and decodes exactly the response that comes back.
//!
//! Every call panics on failure (connect, encode, write, decode, a wrong correlation id or a
//! timeout), which is what a test wants.
//!
//! ```no_run
//! # async fn demo(cluster: &gregor_testkit::FakeCluster) {
//! use gregor_protocol::Compression;
//! use gregor_testkit::wire::{self, Conn};
//!
//! let leader = cluster.leader("events", 0).unwrap();
//! let mut conn = Conn::open(cluster.broker_addr(leader).unwrap()).await;
//! let request = wire::produce("events", 0, 1, vec![wire::msg(Some("k"), "v")], Compression::None);
//! let response = conn.call(0, &request).await;
//! assert_eq!(response.topics[0].partitions[0].error_code, 0);
//! assert_eq!(wire::read_values(cluster, "events", 0, 0).await, [(0, "v".to_owned())]);
//! # }
//! ```

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use gregor_protocol::frame::{decode_response, encode_request, split_frame, RequestHeader};
use gregor_protocol::messages::{
    FetchPartition, FetchRequest, FetchTopic, MetadataRequest, ProducePartition, ProduceRequest, ProduceTopic,
};
use gregor_protocol::{Compression, Message, MessageSet, Request};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::FakeCluster;

/// The client id every request of a [`Conn`] carries.
pub const CLIENT_ID: &str = "testkit-test";

/// How long [`Conn::call`] waits for its response.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(20);

/// One connection to one broker, speaking the codec directly. Correlation ids count up from 1.
#[derive(Debug)]
pub struct Conn {
    stream: TcpStream,
    buf: BytesMut,
    next_id: i32,
}

impl Conn {
    /// Connects to `addr`; panics when it cannot.
    pub async fn open(addr: SocketAddr) -> Conn {
        Conn { stream: TcpStream::connect(addr).await.expect("connect"), buf: BytesMut::new(), next_id: 1 }
    }

    /// Encodes `request` as version `version` of its API, with the next correlation id and
    /// [`CLIENT_ID`], writes it, and returns the correlation id. Does not wait for a response
    /// (use [`Conn::recv_frame`], or [`Conn::call`] for both).
    pub async fn send<R: Request>(&mut self, version: i16, request: &R) -> i32 {
        let id = self.next_id;
        self.next_id += 1;
        let header = RequestHeader {
            api_key: R::KEY,
            api_version: version,
            correlation_id: id,
            client_id: Some(CLIENT_ID.into()),
            unknown_tagged_fields: Default::default(),
        };
        let mut out = BytesMut::new();
        encode_request(&header, request, &mut out).expect("encode");
        self.stream.write_all(&out).await.expect("write");
        id
    }

    /// The next frame (without its size prefix), or `None` when the broker closed the
    /// connection (or the read failed). Panics when neither happens `within`.
    pub async fn recv_frame(&mut self, within: Duration) -> Option<Bytes> {
        tokio::time::timeout(within, async {
            loop {
                if let Some(f) = split_frame(&mut self.buf, 1 << 30).expect("frame") {
                    return Some(f);
                }
                if self.stream.read_buf(&mut self.buf).await.ok()? == 0 {
                    return None;
                }
            }
        })
        .await
        .expect("a response or a close in time")
    }

    /// Sends `request` as version `version` and returns its decoded response, checking the
    /// correlation id. Panics when no response arrives within [`CALL_TIMEOUT`].
    pub async fn call<R: Request>(&mut self, version: i16, request: &R) -> R::Response {
        let id = self.send(version, request).await;
        let frame = self.recv_frame(CALL_TIMEOUT).await.expect("a response");
        let (header, body) = decode_response::<R>(version, frame).expect("decode");
        assert_eq!(header.correlation_id, id);
        body
    }
}

/// A message with the UTF-8 `key` (or a null key) and the UTF-8 `value`.
pub fn msg(key: Option<&str>, value: &str) -> Message {
    Message::new(key.map(|k| k.to_owned().into()), Some(value.to_owned().into()))
}

/// A Produce request of `messages` (compressed with `codec`) to `topic/partition`, with
/// `required_acks = acks` and a 5 s timeout.
pub fn produce(topic: &str, partition: i32, acks: i16, messages: Vec<Message>, codec: Compression) -> ProduceRequest {
    ProduceRequest {
        required_acks: acks,
        timeout: 5000,
        topics: vec![ProduceTopic::new(
            topic,
            vec![ProducePartition::new(partition, MessageSet::from_messages(messages, codec).unwrap())],
        )],
        ..Default::default()
    }
}

/// A consumer's Fetch request (replica id -1, min bytes 1, max bytes 1 MiB) of `topic/partition`
/// from `offset`, waiting at most `max_wait` ms.
pub fn fetch(topic: &str, partition: i32, offset: i64, max_wait: i32) -> FetchRequest {
    FetchRequest {
        max_wait_time: max_wait,
        min_bytes: 1,
        topics: vec![FetchTopic::new(topic, vec![FetchPartition::new(partition, offset, 1 << 20)])],
        ..Default::default()
    }
}

/// A Metadata request for `topics` (none: every topic).
pub fn metadata(topics: &[&str]) -> MetadataRequest {
    if topics.is_empty() {
        MetadataRequest::all_topics()
    } else {
        MetadataRequest::for_topics(topics.iter().copied())
    }
}

/// Offsets and values (as strings) of the messages fetched (Fetch v0) from `topic/partition` at
/// `offset`, via its current leader. Panics on an error code or a value that is null or not
/// UTF-8.
pub async fn read_values(cluster: &FakeCluster, topic: &str, partition: i32, offset: i64) -> Vec<(i64, String)> {
    let leader = cluster.leader(topic, partition).expect("a leader");
    let mut c = Conn::open(cluster.broker_addr(leader).unwrap()).await;
    let r = c.call(0, &fetch(topic, partition, offset, 0)).await;
    let p = &r.topics[0].partitions[0];
    assert_eq!(p.error_code, 0, "fetch {topic}/{partition}: {:?}", p.error());
    p.messages(topic, offset)
        .unwrap()
        .messages
        .into_iter()
        .map(|m| (m.offset, String::from_utf8(m.message.value.unwrap().to_vec()).unwrap()))
        .collect()
}

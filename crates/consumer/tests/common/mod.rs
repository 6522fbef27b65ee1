//! Helpers copied from crates/testkit/tests/common/mod.rs: a chroot per test, a tiny raw-codec client.

#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::time::Duration;

use bytes::BytesMut;
use gregor_protocol::frame::{decode_response, encode_request, split_frame, RequestHeader};
use gregor_protocol::messages::*;
use gregor_protocol::{Compression, Message, MessageSet, Request};
use gregor_testkit::zookeeper::ZooKeeperServer;
use gregor_testkit::FakeCluster;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A connect string with a chroot of its own, or `None` to skip (never under CI).
pub fn chroot(test: &str) -> Option<String> {
    ZooKeeperServer::shared_or_skip().map(|zk| zk.unique_chroot(test))
}

/// A cluster of `n` brokers in a chroot of its own (with a short replica lag for ISR tests).
pub async fn cluster(test: &str, n: usize) -> Option<FakeCluster> {
    let zk = chroot(test)?;
    gregor_testkit::init_tracing();
    Some(
        FakeCluster::builder(zk)
            .brokers(n)
            .configure(|c| {
                c.replica_lag_time_max = Duration::from_millis(1500);
                c.offsets_topic_num_partitions = 4;
            })
            .start()
            .await
            .expect("the fake cluster starts"),
    )
}

/// One connection to one broker, speaking the codec directly.
pub struct Conn {
    stream: TcpStream,
    buf: BytesMut,
    next_id: i32,
}

impl Conn {
    pub async fn open(addr: SocketAddr) -> Conn {
        Conn { stream: TcpStream::connect(addr).await.expect("connect"), buf: BytesMut::new(), next_id: 1 }
    }

    pub async fn send<R: Request>(&mut self, version: i16, request: &R) -> i32 {
        let id = self.next_id;
        self.next_id += 1;
        let header = RequestHeader {
            api_key: R::KEY,
            api_version: version,
            correlation_id: id,
            client_id: Some("testkit-test".into()),
        };
        let mut out = BytesMut::new();
        encode_request(&header, request, &mut out).expect("encode");
        self.stream.write_all(&out).await.expect("write");
        id
    }

    /// The next frame, or `None` when the broker closed the connection.
    pub async fn recv_frame(&mut self, within: Duration) -> Option<bytes::Bytes> {
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

    pub async fn call<R: Request>(&mut self, version: i16, request: &R) -> R::Response {
        let id = self.send(version, request).await;
        let frame = self.recv_frame(Duration::from_secs(20)).await.expect("a response");
        let (header, body) = decode_response::<R>(version, frame).expect("decode");
        assert_eq!(header.correlation_id, id);
        body
    }
}

pub fn msg(key: Option<&str>, value: &str) -> Message {
    Message::new(key.map(|k| k.to_owned().into()), Some(value.to_owned().into()))
}

pub fn produce(topic: &str, partition: i32, acks: i16, messages: Vec<Message>, codec: Compression) -> ProduceRequest {
    ProduceRequest {
        required_acks: acks,
        timeout: 5000,
        topics: vec![TopicPartitions::new(
            topic,
            vec![ProducePartition { partition, message_set: MessageSet::from_messages(messages, codec).unwrap() }],
        )],
    }
}

pub fn fetch(topic: &str, partition: i32, offset: i64, max_wait: i32) -> FetchRequest {
    FetchRequest {
        replica_id: -1,
        max_wait_time: max_wait,
        min_bytes: 1,
        topics: vec![TopicPartitions::new(
            topic,
            vec![FetchPartition { partition, fetch_offset: offset, max_bytes: 1 << 20 }],
        )],
    }
}

pub fn metadata(topics: &[&str]) -> MetadataRequest {
    MetadataRequest { topics: topics.iter().map(|t| (*t).to_owned()).collect() }
}

//! The FakeCluster's modern mode answering requests captured from independent clients talking to
//! a genuine Kafka 3.7.0 broker (gregor-protocol's `tests/data/kafka-3.7.0`).

use std::path::PathBuf;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use gregor_protocol::frame::{self, ApiKey, RequestHeader};
use gregor_protocol::messages::*;
use gregor_testkit::FakeCluster;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn fixture(name: &str) -> Bytes {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../protocol/tests/data/kafka-3.7.0"));
    Bytes::from(std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}")))
}

/// Sends a captured request frame as it is and returns the answer's frame (without its size),
/// or `None` when the broker closed the connection.
async fn ask(socket: &mut TcpStream, request: &[u8]) -> Option<Bytes> {
    socket.write_all(request).await.unwrap();
    let mut size = [0u8; 4];
    tokio::time::timeout(Duration::from_secs(10), socket.read_exact(&mut size)).await.unwrap().ok()?;
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    socket.read_exact(&mut body).await.ok()?;
    Some(Bytes::from(body))
}

/// The header of a captured request.
fn header_of(request: &Bytes) -> RequestHeader {
    let mut buf = BytesMut::from(&request[..]);
    let mut body = frame::split_frame(&mut buf, 1 << 24).unwrap().unwrap();
    RequestHeader::decode(&mut body).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_topics_is_answered_as_the_genuine_broker_did() {
    let cluster = FakeCluster::modern().brokers(1).first_broker_id(1).start().await.unwrap();
    let mut socket = TcpStream::connect(cluster.broker_addr(1).unwrap()).await.unwrap();
    let request = fixture("create_topics_v4_admin_1.req.bin");
    let header = header_of(&request);
    assert_eq!((header.api_key, header.api_version), (ApiKey::CreateTopics, 4));
    let answer = ask(&mut socket, &request).await.expect("an answer");
    let (_, ours) = frame::decode_response::<CreateTopicsRequest>(4, answer).unwrap();
    let mut genuine_frame = fixture("create_topics_v4_admin_1.resp.bin");
    let _ = genuine_frame.split_to(4);
    let (_, genuine) = frame::decode_response::<CreateTopicsRequest>(4, genuine_frame).unwrap();
    assert_eq!(format!("{ours:?}"), format!("{genuine:?}"));
}

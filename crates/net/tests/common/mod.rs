//! What the scripted-broker tests of this crate share: reading a request frame, the genuine
//! Kafka 3.7.0 answers of gregor-protocol's captures, an empty Metadata v0 answer.

#![allow(dead_code)] // each test binary uses its part

use std::path::PathBuf;

use bytes::{BufMut, Bytes, BytesMut};
use gregor_protocol::frame::RequestHeader;
use tokio::io::{AsyncRead, AsyncReadExt};

/// A frame captured from the genuine Kafka 3.7.0 broker (`crates/protocol/tests/data/kafka-3.7.0/`).
pub(crate) fn fixture(name: &str) -> Bytes {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../protocol/tests/data/kafka-3.7.0"));
    Bytes::from(std::fs::read(dir.join(name)).unwrap())
}

/// Reads one request frame: its header and body; `None` once the client is gone.
pub(crate) async fn read_request(socket: &mut (impl AsyncRead + Unpin)) -> Option<(RequestHeader, Bytes)> {
    let mut size = [0u8; 4];
    socket.read_exact(&mut size).await.ok()?;
    let mut frame = vec![0u8; i32::from_be_bytes(size) as usize];
    socket.read_exact(&mut frame).await.ok()?;
    let mut frame = Bytes::from(frame);
    let header = RequestHeader::decode(&mut frame).unwrap();
    Some((header, frame))
}

/// A Metadata v0 answer with no brokers and no topics.
pub(crate) fn empty_metadata_v0(correlation_id: i32) -> BytesMut {
    let mut out = BytesMut::new();
    out.put_i32(12);
    out.put_i32(correlation_id);
    out.put_i32(0);
    out.put_i32(0);
    out
}

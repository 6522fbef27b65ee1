//! Version negotiation (`api.version.request`): a broker that answers ApiVersions, one that
//! answers an unknown ApiVersions version with error 35 in a v0 body (as the Kafka 3.7.0
//! captures show), and a Kafka 0.8.2 broker that closes the connection on it (the FakeCluster,
//! whose 0.8.2 behaviour is checked against captures of a genuine 0.8.2.2 cluster).
//!
//! The modern answers are the genuine broker's bytes from gregor-protocol's fixtures
//! (`crates/protocol/tests/data/kafka-3.7.0/`), with the correlation id set to ours.

mod common;

use bytes::{Bytes, BytesMut};
use common::{empty_metadata_v0, fixture, read_request};
use gregor_net::{BrokerConnection, BrokerVersionFallback, ConnectionConfig, VersionSource};
use gregor_protocol::frame::ApiKey;
use gregor_protocol::messages::{ApiVersionsRequest, MetadataRequest, ProduceRequest};
use gregor_protocol::Decode;
use gregor_testkit::support::cluster_or_skip;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Sends a captured response frame with `correlation_id` written over the captured one.
async fn answer(socket: &mut TcpStream, captured: &Bytes, correlation_id: i32) {
    let mut out = BytesMut::from(&captured[..]);
    out[4..8].copy_from_slice(&correlation_id.to_be_bytes());
    socket.write_all(&out).await.unwrap();
}

fn config() -> ConnectionConfig {
    ConnectionConfig::builder().client_id("versions-test").api_version_request(true).build().unwrap()
}

#[tokio::test]
async fn a_modern_broker_is_asked_once_and_each_api_gets_the_highest_common_version() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let (header, mut body) = read_request(&mut socket).await.unwrap();
        assert_eq!((header.api_key, header.api_version), (ApiKey::ApiVersions, 3));
        let request = ApiVersionsRequest::decode(3, &mut body).unwrap();
        assert_eq!(request.client_software_name, "gregor");
        assert_eq!(request.client_software_version, env!("CARGO_PKG_VERSION"));
        answer(&mut socket, &fixture("api_versions_v3_connect_1.resp.bin"), header.correlation_id).await;
        // nothing else is sent at connect
        assert!(read_request(&mut socket).await.is_none(), "a second request at connect");
    });
    let conn = BrokerConnection::connect(&addr, &config()).await.unwrap();
    let versions = conn.versions().expect("negotiated at connect");
    assert_eq!(versions.source(), VersionSource::Negotiated);
    assert_eq!(versions.range(ApiKey::Produce), Some((0, 10)));
    assert_eq!(versions.range(ApiKey::Other(74)), Some((0, 0)));
    assert_eq!(versions.apis().count(), 57);
    // what gregor implements decides the rest: ApiVersions itself up to v3
    assert_eq!(versions.pick_for::<ApiVersionsRequest>(), Ok(3));
    let produce = versions.pick_for::<ProduceRequest>().unwrap();
    assert!(produce <= 10, "{produce}");
    conn.close().await;
    server.await.unwrap();
}

#[tokio::test]
async fn an_unknown_api_versions_version_is_retried_in_the_brokers_highest() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let (first, _) = read_request(&mut socket).await.unwrap();
        assert_eq!(first.api_version, 3);
        // the genuine broker's answer to a version it did not know: v0 body, error 35, "ApiVersions
        // 0-3" (here it pretends v3 is unknown by answering the same bytes)
        answer(&mut socket, &fixture("api_versions_v4_kp_produce.resp.bin"), first.correlation_id).await;
        let (second, _) = read_request(&mut socket).await.unwrap();
        assert_eq!((second.api_key, second.api_version), (ApiKey::ApiVersions, 3));
        answer(&mut socket, &fixture("api_versions_v3_kp_produce.resp.bin"), second.correlation_id).await;
        let _ = read_request(&mut socket).await;
    });
    let conn = BrokerConnection::connect(&addr, &config()).await.unwrap();
    assert_eq!(conn.versions().unwrap().range(ApiKey::Fetch), Some((0, 16)));
    conn.close().await;
    server.await.unwrap();
}

#[tokio::test]
async fn a_broker_that_closes_on_api_versions_gets_the_fallback_release_on_a_new_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let server = tokio::spawn(async move {
        // first connection: ApiVersions, which a 0.8 broker answers by closing
        let (mut socket, _) = listener.accept().await.unwrap();
        let (header, _) = read_request(&mut socket).await.unwrap();
        assert_eq!(header.api_key, ApiKey::ApiVersions);
        drop(socket);
        // second connection: no ApiVersions, straight to work
        let (mut socket, _) = listener.accept().await.unwrap();
        let (header, _) = read_request(&mut socket).await.unwrap();
        assert_eq!((header.api_key, header.api_version), (ApiKey::Metadata, 0));
        socket.write_all(&empty_metadata_v0(header.correlation_id)).await.unwrap();
        let _ = read_request(&mut socket).await;
    });
    let config = config().to_builder().broker_version_fallback(BrokerVersionFallback::V0_8_2).build().unwrap();
    let conn = BrokerConnection::connect(&addr, &config).await.unwrap();
    let versions = conn.versions().unwrap();
    assert_eq!(versions.source(), VersionSource::Fallback(BrokerVersionFallback::V0_8_2));
    assert_eq!(versions.pick_for::<MetadataRequest>(), Ok(0));
    let metadata = conn.request(0, &MetadataRequest::default()).await.unwrap();
    assert!(metadata.brokers.is_empty());
    conn.close().await;
    server.await.unwrap();
}

#[tokio::test]
async fn without_api_version_request_nothing_is_asked_and_the_fallback_applies() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut first = [0u8; 1];
        // the client sends nothing at connect: the read only ends when it closes
        assert_eq!(socket.read(&mut first).await.unwrap(), 0);
    });
    let config = ConnectionConfig::builder()
        .api_version_request(false)
        .broker_version_fallback(BrokerVersionFallback::V0_9_0)
        .build()
        .unwrap();
    let conn = BrokerConnection::connect(&addr, &config).await.unwrap();
    assert_eq!(conn.versions().unwrap().source(), VersionSource::Fallback(BrokerVersionFallback::V0_9_0));
    assert_eq!(conn.versions().unwrap().range(ApiKey::JoinGroup), Some((0, 0)));
    conn.close().await;
    server.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fake_0_8_2_cluster_closes_on_api_versions_like_a_genuine_one() {
    let c = cluster_or_skip!("net-versions");
    let addr = c.broker_addrs()[0].1.to_string();
    let conn = BrokerConnection::connect(&addr, &config()).await.unwrap();
    assert_eq!(conn.versions().unwrap().source(), VersionSource::Fallback(BrokerVersionFallback::V0_8_2));
    let metadata = conn.request(0, &MetadataRequest::default()).await.unwrap();
    assert_eq!(metadata.brokers.len(), 3);
    conn.close().await;
}

//! The `gregor-testkit` binary: one ready line, a working cluster, exit when stdin closes; in the
//! 0.8.2 mode (a real ZooKeeper underneath: without it the test fails, or skips when
//! `GREGOR_ALLOW_SKIP=1` is set outside CI) and with `--modern` (no ZooKeeper: always runs),
//! where the flags reach the brokers (auto-created topics get `--num-partitions` and
//! `--default-replication-factor`; `--sasl-user` and `--sasl-mechanisms` make every connection
//! authenticate) and a record batch goes in and comes back out.

mod common;

use std::process::Stdio;
use std::time::Duration;

use bytes::Bytes;
use common::{metadata, Conn};
use gregor_protocol::frame::ApiKey;
use gregor_protocol::message::DecodeOptions;
use gregor_protocol::messages::{
    ApiVersionsRequest, ProducePartition, ProduceRequest, ProduceTopic, SaslAuthenticateRequest, SaslHandshakeRequest,
};
use gregor_protocol::record::{Batches, RecordBatchBuilder};
use gregor_protocol::{Compression, MessageSet};
use gregor_testkit::zookeeper::ZooKeeperServer;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{ChildStdout, Command};

/// The ready line of a just-started `gregor-testkit`, within 30 s.
async fn ready_line(lines: &mut Lines<BufReader<ChildStdout>>) -> String {
    tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("ready in time")
        .unwrap()
        .expect("a line")
}

/// Runs `gregor-testkit args` and returns its exit code and stderr.
async fn refused(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gregor-testkit")).args(args).output().await.unwrap();
    assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prints_one_ready_line_serves_and_exits_when_stdin_closes() {
    let Some(zk) = ZooKeeperServer::shared_or_skip() else { return };
    let chroot = zk.unique_chroot("binary");
    let mut child = Command::new(env!("CARGO_BIN_EXE_gregor-testkit"))
        .args(["--brokers", "2", "--zookeeper", &chroot])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = ready_line(&mut lines).await;
    let (brokers, zookeeper) = line.split_once(' ').expect("two fields");
    assert_eq!(zookeeper, format!("zookeeper={chroot}"));
    let brokers = brokers.strip_prefix("brokers=").expect("brokers= first");
    let addrs: Vec<std::net::SocketAddr> = brokers.split(',').map(|a| a.parse().expect("host:port")).collect();
    assert_eq!(addrs.len(), 2);
    assert!(addrs.iter().all(|a| a.ip().is_loopback()));
    let mut conn = Conn::open(addrs[1]).await;
    let md = conn.call(0, &metadata(&[])).await;
    assert_eq!(md.brokers.len(), 2);
    drop(child.stdin.take());
    let status =
        tokio::time::timeout(Duration::from_secs(15), child.wait()).await.expect("exits once stdin closes").unwrap();
    assert!(status.success(), "{status}");
    assert!(lines.next_line().await.unwrap().is_none(), "exactly one line on stdout");
}

#[tokio::test]
async fn bad_arguments_are_refused_with_usage() {
    let out = Command::new(env!("CARGO_BIN_EXE_gregor-testkit")).args(["--brokers", "many"]).output().await.unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--brokers: \"many\" is not a valid number"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_gregor-testkit")).arg("--bogus").output().await.unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage: gregor-testkit"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_mode_serves_todays_versions_without_zookeeper() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gregor-testkit"))
        .args(["--modern", "--brokers", "2", "--num-partitions", "2", "--default-replication-factor", "2"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = ready_line(&mut lines).await;
    let fields: Vec<&str> = line.split(' ').collect();
    let [brokers, mode, cluster_id] = fields[..] else { panic!("three fields: {line}") };
    assert_eq!(mode, "mode=modern", "{line}");
    let cluster_id = cluster_id.strip_prefix("cluster_id=").expect("cluster_id= last");
    assert_eq!(cluster_id.len(), 22, "a KRaft cluster id (16 bytes in base64): {line}");
    let brokers = brokers.strip_prefix("brokers=").expect("brokers= first");
    let addrs: Vec<std::net::SocketAddr> = brokers.split(',').map(|a| a.parse().expect("host:port")).collect();
    assert_eq!(addrs.len(), 2);
    assert!(addrs.iter().all(|a| a.ip().is_loopback()));

    // ApiVersions v3 (flexible): today's versions, and no SASL without --sasl-user
    let mut conn = Conn::open(addrs[0]).await;
    let hello = ApiVersionsRequest {
        client_software_name: "gregor-testkit-test".into(),
        client_software_version: "0".into(),
        ..Default::default()
    };
    let versions = conn.call(3, &hello).await;
    assert_eq!(versions.error_code, 0);
    let range = |api: ApiKey| {
        versions.api_keys.iter().find(|v| v.api_key == api.code()).map(|v| (v.min_version, v.max_version))
    };
    assert_eq!(range(ApiKey::Produce), Some((3, 10)));
    assert_eq!(range(ApiKey::Metadata), Some((0, 12)));
    assert_eq!(range(ApiKey::Fetch).map(|(min, _)| min), Some(4));
    assert_eq!(range(ApiKey::SaslHandshake), None);

    // Metadata v12: both brokers, a controller among them, the cluster id printed
    let md = conn.call(12, &metadata(&[])).await;
    let mut ids: Vec<i32> = md.brokers.iter().map(|b| b.node_id).collect();
    ids.sort_unstable();
    assert_eq!(ids, [0, 1]);
    assert!(ids.contains(&md.controller_id), "controller {}", md.controller_id);
    assert_eq!(md.cluster_id.as_deref(), Some(cluster_id));

    // auto-creation (error 3 first, as KRaft answers) with --num-partitions and
    // --default-replication-factor
    let topic = "binary-modern";
    let first = conn.call(12, &metadata(&[topic])).await;
    assert_eq!(first.topics[0].error_code, 3, "{first:?}");
    let md = conn.call(12, &metadata(&[topic])).await;
    let t = &md.topics[0];
    assert_eq!(t.error_code, 0, "{md:?}");
    assert_eq!(t.partitions.len(), 2, "{md:?}");
    assert!(t.partitions.iter().all(|p| p.replicas.len() == 2), "{md:?}");

    // one RecordBatch v2 in by Produce v9, out by Fetch v12, from partition 0's leader
    let leader = t.partitions.iter().find(|p| p.partition == 0).expect("partition 0").leader;
    let addr = md.brokers.iter().find(|b| b.node_id == leader).expect("the leader is listed");
    let mut conn = Conn::open(format!("{}:{}", addr.host, addr.port).parse().unwrap()).await;
    let mut batch = RecordBatchBuilder::new(Compression::Zstd);
    batch.append(1_700_000_000_000, Some(b"k1"), Some(b"v1")).unwrap();
    batch.append(1_700_000_000_001, None, Some(b"v2")).unwrap();
    let produce = ProduceRequest {
        required_acks: -1,
        timeout: 5000,
        topics: vec![ProduceTopic::new(
            topic,
            vec![ProducePartition::new(0, MessageSet::from_bytes(batch.finish().unwrap()))],
        )],
        ..Default::default()
    };
    let answer = conn.call(9, &produce).await;
    let p = &answer.topics[0].partitions[0];
    assert_eq!((p.error_code, p.offset), (0, 0), "{answer:?}");
    let fetched = conn.call(12, &common::fetch(topic, 0, 0, 100)).await;
    let p = &fetched.topics[0].partitions[0];
    assert_eq!((p.error_code, p.high_watermark), (0, 2), "{fetched:?}");
    let got: Vec<(i64, i64, Option<Bytes>, Option<Bytes>)> =
        Batches::new(p.message_set.as_bytes().clone(), &DecodeOptions::default())
            .flat_map(|b| b.expect("a batch").records().map(|r| r.expect("a record")).collect::<Vec<_>>())
            .map(|r| (r.offset, r.timestamp, r.key, r.value))
            .collect();
    assert_eq!(
        got,
        [
            (0, 1_700_000_000_000, Some(Bytes::from_static(b"k1")), Some(Bytes::from_static(b"v1"))),
            (1, 1_700_000_000_001, None, Some(Bytes::from_static(b"v2"))),
        ]
    );

    drop(child.stdin.take());
    let status =
        tokio::time::timeout(Duration::from_secs(15), child.wait()).await.expect("exits once stdin closes").unwrap();
    assert!(status.success(), "{status}");
    assert!(lines.next_line().await.unwrap().is_none(), "exactly one line on stdout");
}

#[tokio::test]
async fn flags_that_make_no_sense_in_a_mode_are_refused_with_the_reason() {
    for (args, needle) in [
        (
            &["--modern", "--zookeeper", "127.0.0.1:2181"][..],
            "--zookeeper does not go with --modern: the modern mode (KRaft) runs without ZooKeeper",
        ),
        (&["--modern", "--timing", "slow"], "--timing slow: instant or kafka-0.8.2"),
        (&["--sasl-user", "alice:secret"], "--sasl-user and --sasl-mechanisms need --modern: Kafka 0.8.2 has no SASL"),
        (&["--modern", "--sasl-mechanisms", "PLAIN"], "--sasl-mechanisms needs at least one --sasl-user"),
        (&["--modern", "--sasl-user", "alice"], "--sasl-user: no colon between NAME and PASSWORD"),
        (&["--modern", "--sasl-user", ":secret"], "--sasl-user: the NAME before the first colon is empty"),
        (
            &["--modern", "--sasl-user", "a:b", "--sasl-mechanisms", "PLAIN,GSSAPI"],
            "--sasl-mechanisms: \"GSSAPI\" is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512",
        ),
        (&["--modern", "--port", "65535", "--brokers", "2"], "--port 65535 with --brokers 2 runs past port 65535"),
        (&["--port", "65000", "--brokers", "1000"], "--port 65000 with --brokers 1000 runs past port 65535"),
    ] {
        let (code, err) = refused(args).await;
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("secret"), "{args:?}: a password on stderr: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_mode_requires_sasl_with_the_mechanisms_given() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gregor-testkit"))
        .args(["--modern", "--brokers", "1", "--sasl-user", "alice:pass:with:colons"])
        .args(["--sasl-user", "bob:x", "--sasl-mechanisms", "SCRAM-SHA-512,PLAIN"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = ready_line(&mut lines).await;
    let brokers = line.split(' ').next().and_then(|b| b.strip_prefix("brokers=")).expect("brokers= first");
    let mut conn = Conn::open(brokers.parse().expect("one host:port")).await;
    let versions = conn.call(0, &ApiVersionsRequest::default()).await;
    let handshake = versions.api_keys.iter().find(|v| v.api_key == ApiKey::SaslHandshake.code());
    assert_eq!(handshake.map(|v| (v.min_version, v.max_version)), Some((1, 1)), "{versions:?}");
    // a mechanism not offered: error 33 UNSUPPORTED_SASL_MECHANISM and the ones that are
    let answer = conn.call(1, &SaslHandshakeRequest { mechanism: "SCRAM-SHA-256".into(), ..Default::default() }).await;
    assert_eq!(answer.error_code, 33, "{answer:?}");
    assert_eq!(answer.mechanisms, ["SCRAM-SHA-512", "PLAIN"]);
    // PLAIN with the password after the first colon: accepted, and Metadata is served
    let mut conn = Conn::open(brokers.parse().unwrap()).await;
    conn.call(0, &ApiVersionsRequest::default()).await;
    let answer = conn.call(1, &SaslHandshakeRequest { mechanism: "PLAIN".into(), ..Default::default() }).await;
    assert_eq!(answer.error_code, 0, "{answer:?}");
    let token = b"\0alice\0pass:with:colons".to_vec();
    let answer = conn.call(1, &SaslAuthenticateRequest { auth_bytes: token.into(), ..Default::default() }).await;
    assert_eq!((answer.error_code, answer.error_message.as_deref()), (0, None));
    assert_eq!(conn.call(12, &metadata(&[])).await.brokers.len(), 1);
    drop(child.stdin.take());
    let status =
        tokio::time::timeout(Duration::from_secs(15), child.wait()).await.expect("exits once stdin closes").unwrap();
    assert!(status.success(), "{status}");
}

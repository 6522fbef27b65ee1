//! The `gregor-testkit` binary: one ready line, a working cluster, exit when stdin closes.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::{metadata, Conn};
use gregor_testkit::zookeeper::ZooKeeperServer;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

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
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("ready in time")
        .unwrap()
        .expect("a line");
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

//! The real-ZooKeeper launcher and the fault-injecting TCP proxy.
//!
//! The ZooKeeper tests need Debian's `zookeeper` package and a JVM. Without them they fail with
//! the install command, unless `GREGOR_ALLOW_SKIP=1` is set outside CI: then they print why and
//! skip.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use gregor_testkit::proxy::TcpProxy;
use gregor_testkit::zookeeper::{ZooKeeperServer, CHROOT_PARENT};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Sends a four-letter word over a plain socket, independently of the launcher's helper.
fn raw_four_letter_word(addr: SocketAddr, word: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.write_all(word.as_bytes())?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer)
}

#[test]
fn server_starts_and_answers_ruok() {
    let Some(zk) = ZooKeeperServer::start_or_skip() else { return };
    assert_eq!(raw_four_letter_word(zk.addr(), "ruok").unwrap(), "imok");
    let srvr = zk.four_letter_word("srvr").unwrap();
    assert!(srvr.contains("Mode: standalone"), "{srvr}");
    assert_eq!(zk.connect_string(), format!("127.0.0.1:{}", zk.port()));
    assert_eq!(zk.addr().port(), zk.port());
    assert!(zk.addr().ip().is_loopback());
    let conf = zk.four_letter_word("conf").unwrap();
    assert!(conf.contains(&format!("dataDir={}", zk.data_dir().display())), "{conf}");
}

#[test]
fn two_servers_run_at_once_on_different_ports() {
    let Some(a) = ZooKeeperServer::start_or_skip() else { return };
    let b = ZooKeeperServer::start().expect("a second server");
    assert_ne!(a.port(), b.port());
    assert_ne!(a.data_dir(), b.data_dir());
    assert_eq!(raw_four_letter_word(a.addr(), "ruok").unwrap(), "imok");
    assert_eq!(raw_four_letter_word(b.addr(), "ruok").unwrap(), "imok");
}

#[test]
fn dropping_a_server_kills_it_and_removes_its_directory() {
    let Some(zk) = ZooKeeperServer::start_or_skip() else { return };
    let addr = zk.addr();
    let dir = zk.data_dir().parent().unwrap().to_owned();
    assert!(dir.is_dir());
    drop(zk);
    assert!(!dir.exists(), "{} still exists", dir.display());
    assert!(TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err());
}

#[test]
fn shared_server_is_one_server() {
    let Some(a) = ZooKeeperServer::shared_or_skip() else { return };
    let b = ZooKeeperServer::shared();
    assert!(std::ptr::eq(a, b));
    assert_eq!(raw_four_letter_word(a.addr(), "ruok").unwrap(), "imok");
}

#[test]
fn unique_chroots_differ() {
    let Some(zk) = ZooKeeperServer::shared_or_skip() else { return };
    let a = zk.unique_chroot("offsets");
    let b = zk.unique_chroot("offsets");
    let c = zk.unique_chroot("my::module/test name");
    assert_ne!(a, b);
    let prefix = format!("{}{CHROOT_PARENT}/", zk.connect_string());
    for chroot in [&a, &b, &c] {
        assert!(chroot.starts_with(&prefix), "{chroot}");
        let leaf = &chroot[prefix.len()..];
        assert!(!leaf.contains('/'), "{chroot}");
        assert!(leaf.contains(&std::process::id().to_string()), "{chroot}");
    }
    assert!(a[prefix.len()..].starts_with("offsets-"), "{a}");
    assert!(c[prefix.len()..].starts_with("my__module_test_name-"), "{c}");
}

#[test]
fn stop_then_restart_on_the_same_port_and_data() {
    let Some(mut zk) = ZooKeeperServer::start_or_skip() else { return };
    let port = zk.port();
    let data_dir = zk.data_dir();
    assert!(zk.is_running());

    zk.stop();
    assert!(!zk.is_running());
    assert!(
        TcpStream::connect_timeout(&zk.addr(), Duration::from_secs(1)).is_err(),
        "a stopped server still accepts connections"
    );
    assert!(data_dir.join("version-2").is_dir(), "data kept while stopped");
    zk.stop(); // stopping twice is fine

    zk.restart().expect("restart");
    assert!(zk.is_running());
    assert_eq!(zk.port(), port);
    assert_eq!(zk.data_dir(), data_dir);
    assert_eq!(raw_four_letter_word(zk.addr(), "ruok").unwrap(), "imok");

    // Restarting a running server works too.
    zk.restart().expect("second restart");
    assert_eq!(raw_four_letter_word(zk.addr(), "ruok").unwrap(), "imok");
}

#[test]
fn missing_java_is_reported_with_the_install_command() {
    let e = ZooKeeperServer::builder().java("/nonexistent/bin/java").start().unwrap_err();
    assert!(e.is_not_installed());
    let text = e.to_string();
    assert!(text.contains("apt-get install"), "{text}");
    assert!(text.contains("default-jre-headless"), "{text}");
    assert!(text.contains("zookeeper"), "{text}");
}

/// An echo server counting its accepted connections.
async fn echo_server() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                loop {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if socket.write_all(&buf[..n]).await.is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    (addr, accepted)
}

async fn read_some(stream: &mut tokio::net::TcpStream, within: Duration) -> Option<Vec<u8>> {
    let mut buf = [0u8; 1024];
    match tokio::time::timeout(within, stream.read(&mut buf)).await {
        Ok(Ok(n)) => Some(buf[..n].to_vec()),
        Ok(Err(_)) => Some(Vec::new()),
        Err(_) => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_forwards_four_letter_words_to_zookeeper() {
    let Some(zk) = ZooKeeperServer::shared_or_skip() else { return };
    let proxy = TcpProxy::start(zk.addr()).await.unwrap();
    assert_eq!(proxy.target(), zk.addr());
    assert!(proxy.addr().ip().is_loopback());
    assert_ne!(proxy.addr(), zk.addr());
    let addr = proxy.addr();
    let answer = tokio::task::spawn_blocking(move || raw_four_letter_word(addr, "ruok")).await.unwrap().unwrap();
    assert_eq!(answer, "imok");
    assert_eq!(proxy.accepted_count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_stall_holds_zookeeper_answers_until_resume() {
    let Some(zk) = ZooKeeperServer::shared_or_skip() else { return };
    let proxy = TcpProxy::start(zk.addr()).await.unwrap();
    let mut stream = tokio::net::TcpStream::connect(proxy.addr()).await.unwrap();
    proxy.stall();
    assert!(proxy.is_stalled());
    stream.write_all(b"ruok").await.unwrap();
    assert_eq!(read_some(&mut stream, Duration::from_millis(500)).await, None);
    proxy.resume();
    assert!(!proxy.is_stalled());
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut answer))
        .await
        .expect("an answer after resume")
        .unwrap();
    assert_eq!(answer, "imok");
}

#[tokio::test]
async fn proxy_stall_blocks_both_directions_and_resume_restores_them() {
    let (target, accepted) = echo_server().await;
    let proxy = TcpProxy::start(target).await.unwrap();
    let mut stream = tokio::net::TcpStream::connect(proxy.addr()).await.unwrap();
    stream.write_all(b"one").await.unwrap();
    assert_eq!(read_some(&mut stream, Duration::from_secs(5)).await.unwrap(), b"one");
    assert_eq!(proxy.connection_count(), 1);

    proxy.stall();
    stream.write_all(b"two").await.unwrap();
    assert_eq!(read_some(&mut stream, Duration::from_millis(300)).await, None);

    // A connection made while stalled is accepted but not connected upstream.
    let mut late = tokio::net::TcpStream::connect(proxy.addr()).await.unwrap();
    late.write_all(b"late").await.unwrap();
    assert_eq!(read_some(&mut late, Duration::from_millis(300)).await, None);
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "nothing reached the target");
    assert_eq!(proxy.accepted_count(), 2);

    proxy.resume();
    assert_eq!(read_some(&mut stream, Duration::from_secs(5)).await.unwrap(), b"two");
    assert_eq!(read_some(&mut late, Duration::from_secs(5)).await.unwrap(), b"late");
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
    stream.write_all(b"three").await.unwrap();
    assert_eq!(read_some(&mut stream, Duration::from_secs(5)).await.unwrap(), b"three");
}

#[tokio::test]
async fn proxy_drop_connections_closes_them_and_keeps_accepting() {
    let (target, _) = echo_server().await;
    let proxy = TcpProxy::start(target).await.unwrap();
    let mut a = tokio::net::TcpStream::connect(proxy.addr()).await.unwrap();
    let mut b = tokio::net::TcpStream::connect(proxy.addr()).await.unwrap();
    for s in [&mut a, &mut b] {
        s.write_all(b"hi").await.unwrap();
        assert_eq!(read_some(s, Duration::from_secs(5)).await.unwrap(), b"hi");
    }

    assert_eq!(proxy.drop_connections(), 2);
    for s in [&mut a, &mut b] {
        // End-of-file (or a reset): the connection is gone.
        assert_eq!(read_some(s, Duration::from_secs(5)).await.unwrap(), b"");
    }
    assert_eq!(proxy.connection_count(), 0);

    let mut c = tokio::net::TcpStream::connect(proxy.addr()).await.unwrap();
    c.write_all(b"again").await.unwrap();
    assert_eq!(read_some(&mut c, Duration::from_secs(5)).await.unwrap(), b"again");
}

#[tokio::test]
async fn proxy_closes_a_connection_the_target_refuses() {
    // A port nobody listens on: bind, read it, close.
    let target = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let proxy = TcpProxy::start(target).await.unwrap();
    let mut s = tokio::net::TcpStream::connect(proxy.addr()).await.unwrap();
    assert_eq!(read_some(&mut s, Duration::from_secs(5)).await.unwrap(), b"");
}

#[tokio::test]
async fn dropping_the_proxy_stops_it() {
    let (target, _) = echo_server().await;
    let proxy = TcpProxy::start(target).await.unwrap();
    let addr = proxy.addr();
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"x").await.unwrap();
    assert_eq!(read_some(&mut s, Duration::from_secs(5)).await.unwrap(), b"x");
    drop(proxy);
    assert_eq!(read_some(&mut s, Duration::from_secs(5)).await.unwrap(), b"");
    tokio::time::sleep(Duration::from_millis(50)).await; // let the runtime drop the listener
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

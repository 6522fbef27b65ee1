//! gregor-zk's `ZkClient` against a real ZooKeeper (Debian's 3.8, launched by the testkit).
//!
//! One server for the whole binary, one chroot per test. Without java or ZooKeeper the tests
//! fail naming `apt-get install zookeeper`, unless `GREGOR_ALLOW_SKIP=1` is set outside CI: then
//! they print why and skip.

use std::fmt::Debug;
use std::time::Duration;

use gregor_testkit::proxy::TcpProxy;
use gregor_testkit::support::chroot;
use gregor_testkit::zookeeper::ZooKeeperServer;
use gregor_zk::payloads::BrokerRegistration;
use gregor_zk::{paths, CreateMode, Error, SessionEvent, Watch, ZkClient, ZkError};
use tokio::sync::broadcast;
use tokio::time::timeout;

/// The session timeout of the tests' clients: what ZooKeeper must do "at once" (a closed
/// session's ephemerals going, a watch firing) is told from a session expiring by this much.
const SESSION_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a test waits for something ZooKeeper does at once (a watch, a reconnection).
const PROMPTLY: Duration = Duration::from_secs(10);

/// The shared server's address without a chroot.
fn root() -> String {
    ZooKeeperServer::shared().connect_string()
}

async fn connect(connect: &str) -> ZkClient {
    ZkClient::connect(connect, SESSION_TIMEOUT).await.unwrap_or_else(|e| panic!("connecting to {connect}: {e} ({e:?})"))
}

/// The chroot path of a connect string (`/gregor-test/x-1-2`).
fn chroot_path(connect: &str) -> &str {
    &connect[connect.find('/').unwrap()..]
}

/// The next item of a watch, failing the test after [`PROMPTLY`].
async fn next<T: Debug>(watch: &mut Watch<T>) -> Option<gregor_zk::Result<T>> {
    timeout(PROMPTLY, watch.next())
        .await
        .unwrap_or_else(|_| panic!("no item from the watch on {} within {PROMPTLY:?}", watch.path()))
}

/// Reads a watch until it yields `want`, checking every value on the way with `allowed`.
async fn wait_for<T: Debug + PartialEq>(watch: &mut Watch<T>, want: T, allowed: impl Fn(&T) -> bool) {
    loop {
        match next(watch).await {
            Some(Ok(value)) if value == want => return,
            Some(Ok(value)) => assert!(allowed(&value), "unexpected value {value:?} while waiting for {want:?}"),
            other => panic!("watch on {} ended or failed while waiting for {want:?}: {other:?}", watch.path()),
        }
    }
}

async fn next_event(events: &mut broadcast::Receiver<SessionEvent>, within: Duration) -> SessionEvent {
    timeout(within, events.recv())
        .await
        .unwrap_or_else(|_| panic!("no session event within {within:?}"))
        .expect("session events channel")
}

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_get_set_delete() {
    let Some(connect_string) = chroot("create_get_set_delete") else { return };
    let zk = connect(&connect_string).await;
    assert!(zk.is_connected());
    assert_eq!(zk.chroot(), Some(chroot_path(&connect_string)));

    assert_eq!(zk.get("/node").await.unwrap(), None);
    assert_eq!(zk.exists("/node").await.unwrap(), None);
    assert_eq!(zk.create("/node", b"one", CreateMode::Persistent).await.unwrap(), "/node");

    let (data, stat) = zk.get("/node").await.unwrap().expect("node exists");
    assert_eq!(data, b"one");
    assert_eq!(stat.version, 0);
    assert_eq!(stat.data_length, 3);
    assert_eq!(stat.ephemeral_owner, 0);
    assert!(stat.ctime > 0 && stat.mtime >= stat.ctime);
    assert_eq!(zk.exists("/node").await.unwrap(), Some(stat));

    // Unconditional and conditional set.
    let stat = zk.set("/node", b"two", None).await.unwrap();
    assert_eq!(stat.version, 1);
    let stat = zk.set("/node", b"three", Some(1)).await.unwrap();
    assert_eq!(stat.version, 2);
    assert_eq!(zk.get("/node").await.unwrap().unwrap().0, b"three");
    // Empty data.
    zk.set("/node", b"", None).await.unwrap();
    assert_eq!(zk.get("/node").await.unwrap().unwrap().0, b"");

    // Payloads round-trip byte for byte.
    let broker = BrokerRegistration::new("127.0.0.1", 9092, 1234);
    zk.create_all(&paths::broker(1), &broker.to_json(), CreateMode::Ephemeral).await.unwrap();
    let (data, stat) = zk.get(&paths::broker(1)).await.unwrap().unwrap();
    assert_eq!(data, br#"{"version":1,"host":"127.0.0.1","port":9092,"jmx_port":-1,"timestamp":"1234"}"#);
    assert_eq!(BrokerRegistration::from_json(&data).unwrap(), broker);
    assert!(stat.is_ephemeral());
    assert_eq!(zk.children(paths::BROKER_IDS).await.unwrap(), Some(strings(&["1"])));

    // Delete: conditional, then gone, then "did not exist".
    assert!(zk.delete("/node", Some(3)).await.unwrap());
    assert!(!zk.delete("/node", None).await.unwrap());
    assert_eq!(zk.get("/node").await.unwrap(), None);

    zk.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_mapped() {
    let Some(connect_string) = chroot("errors_are_mapped") else { return };
    let zk = connect(&connect_string).await;
    zk.create("/a", b"x", CreateMode::Persistent).await.unwrap();

    match zk.create("/a", b"y", CreateMode::Persistent).await {
        Err(Error::NodeExists { path }) => assert_eq!(path, "/a"),
        other => panic!("expected NodeExists, got {other:?}"),
    }
    match zk.create("/missing/child", b"", CreateMode::Persistent).await {
        Err(Error::NoNode { path }) => assert_eq!(path, "/missing/child"),
        other => panic!("expected NoNode, got {other:?}"),
    }
    match zk.set("/missing", b"", None).await {
        Err(Error::NoNode { path }) => assert_eq!(path, "/missing"),
        other => panic!("expected NoNode, got {other:?}"),
    }
    match zk.set("/a", b"y", Some(7)).await {
        Err(e @ Error::BadVersion { .. }) => {
            assert_eq!(e.to_string(), "znode /a is not at the expected version: it changed since it was read")
        }
        other => panic!("expected BadVersion, got {other:?}"),
    }
    match zk.delete("/a", Some(7)).await {
        Err(Error::BadVersion { path }) => assert_eq!(path, "/a"),
        other => panic!("expected BadVersion, got {other:?}"),
    }
    // The failed writes changed nothing.
    assert_eq!(zk.get("/a").await.unwrap().unwrap().0, b"x");

    zk.create("/a/b", b"", CreateMode::Persistent).await.unwrap();
    match zk.delete("/a", None).await {
        Err(Error::NotEmpty { path }) => assert_eq!(path, "/a"),
        other => panic!("expected NotEmpty, got {other:?}"),
    }

    zk.create("/eph", b"", CreateMode::Ephemeral).await.unwrap();
    match zk.create("/eph/child", b"", CreateMode::Persistent).await {
        Err(Error::Zk { path, code: ZkError::NoChildrenForEphemerals }) => assert_eq!(path, "/eph/child"),
        other => panic!("expected Zk(NoChildrenForEphemerals), got {other:?}"),
    }

    // Malformed paths never reach the server (under a chroot "a" would become "/chrootA").
    for bad in ["a", "/a/", "//a", "/a/../b", ""] {
        match zk.get(bad).await {
            Err(Error::InvalidPath { path, .. }) => assert_eq!(path, bad),
            other => panic!("{bad:?}: expected InvalidPath, got {other:?}"),
        }
    }
    let mut watch = zk.watch_children("no-slash");
    assert!(matches!(next(&mut watch).await, Some(Err(Error::InvalidPath { .. }))));
    assert!(next(&mut watch).await.is_none());

    zk.close().await.unwrap();
    assert!(matches!(zk.get("/a").await, Err(Error::Closed)));
    assert!(matches!(zk.create("/z", b"", CreateMode::Persistent).await, Err(Error::Closed)));
    zk.close().await.unwrap(); // twice is fine
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_all_set_or_create_delete_all_children() {
    let Some(connect_string) = chroot("recursive") else { return };
    let zk = connect(&connect_string).await;

    assert_eq!(zk.children("/brokers").await.unwrap(), None);
    let state = paths::partition_state("events", 0);
    assert_eq!(zk.create_all(&state, b"s", CreateMode::Persistent).await.unwrap(), state);
    assert_eq!(zk.get(&paths::partition("events", 0)).await.unwrap().unwrap().0, b"");
    // Parents exist now: fine; the node itself exists: NodeExists.
    zk.create_all(&paths::partition_state("events", 1), b"", CreateMode::Persistent).await.unwrap();
    assert!(matches!(zk.create_all(&state, b"", CreateMode::Persistent).await, Err(Error::NodeExists { .. })));

    // Children come back sorted (ZooKeeper returns them in hash order).
    for p in [10, 2, 7, 3] {
        zk.create_all(&paths::partition_state("events", p), b"", CreateMode::Persistent).await.unwrap();
    }
    assert_eq!(
        zk.children(&paths::topic_partitions("events")).await.unwrap(),
        Some(strings(&["0", "1", "10", "2", "3", "7"]))
    );
    assert_eq!(zk.children(&state).await.unwrap(), Some(vec![]));

    // set_or_create: creates with parents, then overwrites.
    let offset = paths::offset("group", "events", 0);
    zk.set_or_create(&offset, &gregor_zk::payloads::encode_offset(42)).await.unwrap();
    zk.set_or_create(&offset, &gregor_zk::payloads::encode_offset(43)).await.unwrap();
    let (data, stat) = zk.get(&offset).await.unwrap().unwrap();
    assert_eq!(gregor_zk::payloads::decode_offset(&data).unwrap(), 43);
    assert_eq!(stat.version, 1);

    // delete_all: a whole tree, then a missing one.
    zk.delete_all(&paths::topic("events")).await.unwrap();
    assert_eq!(zk.exists(&paths::topic("events")).await.unwrap(), None);
    assert_eq!(zk.children(paths::BROKER_TOPICS).await.unwrap(), Some(vec![]));
    zk.delete_all("/does/not/exist").await.unwrap();

    // delete_all("/") empties the chroot but keeps it.
    zk.delete_all("/").await.unwrap();
    assert_eq!(zk.children("/").await.unwrap(), Some(vec![]));
    let outside = connect(&root()).await;
    assert!(outside.exists(chroot_path(&connect_string)).await.unwrap().is_some());

    outside.close().await.unwrap();
    zk.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ephemeral_node_is_gone_after_close() {
    let Some(connect_string) = chroot("ephemeral") else { return };
    let owner = connect(&connect_string).await;
    let observer = connect(&connect_string).await;
    let mut events = owner.session_events();

    owner.create_all(&paths::broker(3), b"me", CreateMode::Ephemeral).await.unwrap();
    let stat = observer.exists(&paths::broker(3)).await.unwrap().expect("registered");
    assert!(stat.is_ephemeral());
    let mut ids = observer.watch_children(paths::BROKER_IDS);
    assert_eq!(next(&mut ids).await.unwrap().unwrap(), Some(strings(&["3"])));

    owner.close().await.unwrap();
    assert_eq!(next_event(&mut events, PROMPTLY).await, SessionEvent::Closed);
    assert!(!owner.is_connected());

    // Gone at once (not after the session timeout), and the other client's watch sees it.
    let started = std::time::Instant::now();
    assert_eq!(next(&mut ids).await.unwrap().unwrap(), Some(vec![]));
    assert_eq!(observer.exists(&paths::broker(3)).await.unwrap(), None);
    assert!(started.elapsed() < SESSION_TIMEOUT, "took {:?}", started.elapsed());

    observer.close().await.unwrap();
    // The watch ends with its client.
    assert!(next(&mut ids).await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_last_clone_closes_the_session() {
    let Some(connect_string) = chroot("drop") else { return };
    let observer = connect(&connect_string).await;
    {
        let owner = connect(&connect_string).await;
        let clone = owner.clone();
        clone.create("/eph", b"", CreateMode::Ephemeral).await.unwrap();
        drop(owner);
        // A clone keeps the session.
        assert!(clone.exists("/eph").await.unwrap().is_some());
    }
    let mut eph = observer.watch_data("/eph");
    let deadline = tokio::time::Instant::now() + PROMPTLY;
    loop {
        match timeout(deadline - tokio::time::Instant::now(), eph.next()).await {
            Ok(Some(Ok(None))) => break,
            Ok(Some(Ok(Some(_)))) => continue,
            other => panic!("ephemeral znode not deleted after the last clone was dropped: {other:?}"),
        }
    }
    observer.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_nodes() {
    let Some(connect_string) = chroot("sequential") else { return };
    let zk = connect(&connect_string).await;
    let prefix = paths::config_change_prefix_path();

    let mut created = Vec::new();
    for topic in ["a", "b", "c"] {
        let path = zk
            .create_all(&prefix, &gregor_zk::payloads::encode_config_change(topic), CreateMode::PersistentSequential)
            .await
            .unwrap();
        created.push(path);
    }
    assert_eq!(
        created,
        vec![
            "/config/changes/config_change_0000000000",
            "/config/changes/config_change_0000000001",
            "/config/changes/config_change_0000000002"
        ]
    );
    let (data, _) = zk.get(&created[1]).await.unwrap().unwrap();
    assert_eq!(data, br#""b""#);
    assert_eq!(gregor_zk::payloads::decode_config_change(&data).unwrap(), "b");
    assert_eq!(
        zk.children(paths::CONFIG_CHANGES).await.unwrap().unwrap(),
        strings(&["config_change_0000000000", "config_change_0000000001", "config_change_0000000002"])
    );

    // Ephemeral sequential: the counter is per parent, the node goes with the session.
    zk.create("/locks", b"", CreateMode::Persistent).await.unwrap();
    let first = zk.create("/locks/lock-", b"", CreateMode::EphemeralSequential).await.unwrap();
    let second = zk.create("/locks/lock-", b"", CreateMode::EphemeralSequential).await.unwrap();
    assert_eq!(first, "/locks/lock-0000000000");
    assert_eq!(second, "/locks/lock-0000000001");
    assert!(zk.exists(&second).await.unwrap().unwrap().is_ephemeral());

    zk.close().await.unwrap();
    let again = connect(&connect_string).await;
    assert_eq!(again.children("/locks").await.unwrap(), Some(vec![]));
    again.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chroot_is_created_and_isolated() {
    let Some(base) = chroot("chroot") else { return };
    let base_path = chroot_path(&base).to_owned();
    let outside = connect(&root()).await;
    assert_eq!(outside.exists(&base_path).await.unwrap(), None);

    // Two levels that do not exist yet: created (as empty persistent znodes) by connect.
    let inner_connect = format!("{base}/a/b");
    let inner = connect(&inner_connect).await;
    assert_eq!(inner.chroot(), Some(format!("{base_path}/a/b").as_str()));
    assert_eq!(outside.get(&format!("{base_path}/a/b")).await.unwrap().unwrap().0, b"");
    assert_eq!(inner.children("/").await.unwrap(), Some(vec![]));

    // Writes through the chroot land under it...
    inner.create_all("/brokers/ids/0", b"x", CreateMode::Persistent).await.unwrap();
    assert_eq!(outside.get(&format!("{base_path}/a/b/brokers/ids/0")).await.unwrap().unwrap().0, b"x");
    // ...and the chrooted client sees only its subtree.
    outside.create(&format!("{base_path}/a/sibling"), b"", CreateMode::Persistent).await.unwrap();
    outside.create_all(&format!("{base_path}/a/b/outside-made"), b"", CreateMode::Persistent).await.unwrap();
    assert_eq!(inner.children("/").await.unwrap(), Some(strings(&["brokers", "outside-made"])));
    assert_eq!(inner.exists("/sibling").await.unwrap(), None);
    assert_eq!(inner.exists(&format!("{base_path}/a/sibling")).await.unwrap(), None);
    assert!(outside.exists("/brokers").await.unwrap().is_none(), "the root has no /brokers");

    // Sequential paths come back relative to the chroot.
    let seq = inner.create("/brokers/seq-", b"", CreateMode::PersistentSequential).await.unwrap();
    assert_eq!(seq, "/brokers/seq-0000000001");

    // Watches under a chroot see chroot-relative paths.
    let mut ids = inner.watch_children("/brokers/ids");
    assert_eq!(next(&mut ids).await.unwrap().unwrap(), Some(strings(&["0"])));
    outside.create(&format!("{base_path}/a/b/brokers/ids/1"), b"", CreateMode::Ephemeral).await.unwrap();
    wait_for(&mut ids, Some(strings(&["0", "1"])), |v| v == &Some(strings(&["0"]))).await;

    // Connecting to an existing chroot is fine.
    let again = connect(&inner_connect).await;
    assert_eq!(again.children("/brokers/ids").await.unwrap(), Some(strings(&["0", "1"])));

    again.close().await.unwrap();
    inner.close().await.unwrap();
    outside.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_children_yields_initial_and_every_change() {
    let Some(connect_string) = chroot("watch_children") else { return };
    let zk = connect(&connect_string).await;
    let other = connect(&connect_string).await;
    zk.create_all(paths::BROKER_IDS, b"", CreateMode::Persistent).await.unwrap();

    let mut ids = zk.watch_children(paths::BROKER_IDS);
    assert_eq!(ids.path(), "/brokers/ids");
    assert_eq!(next(&mut ids).await.unwrap().unwrap(), Some(vec![]));

    // One by one, from another session: the list grows, never skipping back.
    let mut expected: Vec<String> = Vec::new();
    for id in [2, 0, 1] {
        other.create(&paths::broker(id), b"", CreateMode::Ephemeral).await.unwrap();
        let before = expected.clone();
        expected.push(id.to_string());
        expected.sort();
        wait_for(&mut ids, Some(expected.clone()), |v| v == &Some(before.clone())).await;
    }

    // Many quick changes: nothing lost, the last value arrives.
    for id in 10..20 {
        other.create(&paths::broker(id), b"", CreateMode::Ephemeral).await.unwrap();
    }
    let mut all: Vec<String> = (0..3).chain(10..20).map(|i| i.to_string()).collect();
    all.sort();
    wait_for(&mut ids, Some(all.clone()), |v| v.as_ref().is_some_and(|v| v.len() >= 3)).await;

    // A session ending removes its ephemerals: seen as one more change.
    other.close().await.unwrap();
    wait_for(&mut ids, Some(vec![]), |v| v.is_some()).await;

    // The parent itself goes away and comes back.
    zk.delete(paths::BROKER_IDS, None).await.unwrap();
    wait_for(&mut ids, None, |_| false).await;
    zk.create(paths::BROKER_IDS, b"", CreateMode::Persistent).await.unwrap();
    wait_for(&mut ids, Some(vec![]), |_| false).await;
    zk.create(&paths::broker(5), b"", CreateMode::Ephemeral).await.unwrap();
    wait_for(&mut ids, Some(strings(&["5"])), |v| v == &Some(vec![])).await;

    // Dropping one watch does not disturb another on the same path.
    let mut second = zk.watch_children(paths::BROKER_IDS);
    assert_eq!(next(&mut second).await.unwrap().unwrap(), Some(strings(&["5"])));
    drop(ids);
    zk.create(&paths::broker(6), b"", CreateMode::Ephemeral).await.unwrap();
    wait_for(&mut second, Some(strings(&["5", "6"])), |v| v == &Some(strings(&["5"]))).await;

    zk.close().await.unwrap();
    assert!(next(&mut second).await.is_none(), "the watch ends when the client closes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_children_of_a_missing_node() {
    let Some(connect_string) = chroot("watch_missing") else { return };
    let zk = connect(&connect_string).await;

    let mut topics = zk.watch_children(paths::BROKER_TOPICS);
    assert_eq!(next(&mut topics).await.unwrap().unwrap(), None);
    // Created with a child in one go (parents first): we may or may not see the empty list.
    zk.create_all(&paths::topic("events"), b"{}", CreateMode::Persistent).await.unwrap();
    wait_for(&mut topics, Some(strings(&["events"])), |v| v == &Some(vec![])).await;
    zk.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_data_on_a_node_created_later() {
    let Some(connect_string) = chroot("watch_data") else { return };
    let zk = connect(&connect_string).await;
    let other = connect(&connect_string).await;

    let mut controller = zk.watch_data(paths::CONTROLLER);
    assert_eq!(next(&mut controller).await.unwrap().unwrap(), None);

    other.create(paths::CONTROLLER, b"v1", CreateMode::Ephemeral).await.unwrap();
    wait_for(&mut controller, Some(b"v1".to_vec()), |_| false).await;
    other.set(paths::CONTROLLER, b"v2", None).await.unwrap();
    wait_for(&mut controller, Some(b"v2".to_vec()), |v| v == &Some(b"v1".to_vec())).await;
    // Same data written again: a change all the same (may be yielded).
    other.set(paths::CONTROLLER, b"v2", None).await.unwrap();
    other.set(paths::CONTROLLER, b"v3", None).await.unwrap();
    wait_for(&mut controller, Some(b"v3".to_vec()), |v| v == &Some(b"v2".to_vec())).await;
    // Deleted when the owner's session ends, recreated by someone else.
    other.close().await.unwrap();
    wait_for(&mut controller, None, |v| v == &Some(b"v3".to_vec())).await;
    zk.create(paths::CONTROLLER, b"v4", CreateMode::Ephemeral).await.unwrap();
    wait_for(&mut controller, Some(b"v4".to_vec()), |_| false).await;

    zk.close().await.unwrap();
    assert!(next(&mut controller).await.is_none());
    // A watch made on a closed client says so.
    let mut late = zk.watch_data(paths::CONTROLLER);
    assert!(matches!(next(&mut late).await, Some(Err(Error::Closed))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnection_keeps_the_session_and_rearms_watches() {
    let Some(zk_server) = ZooKeeperServer::shared_or_skip() else { return };
    let proxy = TcpProxy::start(zk_server.addr()).await.unwrap();
    let name = zk_server.unique_chroot("reconnect");
    let chroot = chroot_path(&name).to_owned();
    let zk = connect(&format!("{}{chroot}", proxy.addr())).await;
    let direct = connect(&name).await;
    let mut events = zk.session_events();

    zk.create("/eph", b"", CreateMode::Ephemeral).await.unwrap();
    zk.create("/dir", b"", CreateMode::Persistent).await.unwrap();
    let mut dir = zk.watch_children("/dir");
    assert_eq!(next(&mut dir).await.unwrap().unwrap(), Some(vec![]));

    // Cut the connection: the client reconnects at once, same session.
    assert!(proxy.drop_connections() >= 1);
    assert_eq!(next_event(&mut events, PROMPTLY).await, SessionEvent::Disconnected);
    assert_eq!(next_event(&mut events, PROMPTLY).await, SessionEvent::Connected);
    assert!(direct.exists("/eph").await.unwrap().is_some(), "session survived");

    // The server dropped the watch with the old connection and zookeeper-async does not
    // re-register it: the stream must have re-armed it by itself.
    direct.create("/dir/after", b"", CreateMode::Persistent).await.unwrap();
    wait_for(&mut dir, Some(strings(&["after"])), |v| v == &Some(vec![])).await;
    zk.create("/dir/mine", b"", CreateMode::Persistent).await.unwrap();
    wait_for(&mut dir, Some(strings(&["after", "mine"])), |v| v == &Some(strings(&["after"]))).await;

    zk.close().await.unwrap();
    direct.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_expiry_is_reported_and_a_new_session_follows() {
    let Some(zk_server) = ZooKeeperServer::shared_or_skip() else { return };
    let proxy = TcpProxy::start(zk_server.addr()).await.unwrap();
    let name = zk_server.unique_chroot("expiry");
    let chroot = chroot_path(&name).to_owned();
    let session_timeout = gregor_zk::MIN_SESSION_TIMEOUT;
    let zk = ZkClient::connect(&format!("{}{chroot}", proxy.addr()), session_timeout).await.unwrap();
    let direct = connect(&name).await;
    let mut events = zk.session_events();

    zk.create("/eph", b"", CreateMode::Ephemeral).await.unwrap();
    let mut eph = zk.watch_data("/eph");
    assert_eq!(next(&mut eph).await.unwrap().unwrap(), Some(vec![]));

    // Partition the client until the server has expired the session (its ephemeral goes).
    proxy.stall();
    let deadline = tokio::time::Instant::now() + session_timeout * 4;
    while direct.exists("/eph").await.unwrap().is_some() {
        assert!(tokio::time::Instant::now() < deadline, "session not expired by the server");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    proxy.resume();

    // The client learns it when it gets through: Expired, then a fresh session.
    let mut seen = Vec::new();
    loop {
        let event = next_event(&mut events, PROMPTLY).await;
        seen.push(event);
        if event == SessionEvent::Connected && seen.contains(&SessionEvent::Expired) {
            break;
        }
    }
    assert_eq!(seen.iter().filter(|e| **e == SessionEvent::Expired).count(), 1, "{seen:?}");
    assert!(
        seen == [SessionEvent::Disconnected, SessionEvent::Expired, SessionEvent::Connected]
            || seen == [SessionEvent::Expired, SessionEvent::Connected],
        "{seen:?}"
    );

    // The watch of the dead session ends with SessionExpired.
    loop {
        match next(&mut eph).await {
            Some(Ok(_)) => continue,
            Some(Err(Error::SessionExpired)) => break,
            other => panic!("expected Err(SessionExpired), got {other:?}"),
        }
    }
    assert!(next(&mut eph).await.is_none());

    // The client works on its new session: re-register, as Kafka does.
    assert!(zk.is_connected());
    assert_eq!(zk.exists("/eph").await.unwrap(), None);
    zk.create("/eph", b"again", CreateMode::Ephemeral).await.unwrap();
    assert_eq!(direct.get("/eph").await.unwrap().unwrap().0, b"again");
    let mut eph = zk.watch_data("/eph");
    assert_eq!(next(&mut eph).await.unwrap().unwrap(), Some(b"again".to_vec()));

    zk.close().await.unwrap();
    direct.close().await.unwrap();
}

/// Counts the ERROR events zookeeper-async logs (on the thread it is the default for).
struct ZkErrors(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ZkErrors {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let meta = event.metadata();
        if *meta.level() == tracing::Level::ERROR && meta.target().starts_with("zookeeper_async") {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// A caller that stops waiting for an answer (its future dropped: a timeout, a `select!`, an
/// aborted task) leaves no answer without a taker. zookeeper-async logs an ERROR ("Error
/// sending listener event") for each answer to a dropped request, which an application would
/// see whenever it shut down with a request in flight.
///
/// On a current-thread runtime, so that zookeeper-async's connection task logs on the thread
/// the counting subscriber is the default for.
#[tokio::test]
async fn a_request_whose_caller_stopped_waiting_logs_no_error() {
    use tracing_subscriber::layer::SubscriberExt;

    let Some(connect_string) = chroot("a_request_whose_caller_stopped_waiting_logs_no_error") else { return };
    let errors = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let _log = tracing::subscriber::set_default(tracing_subscriber::registry().with(ZkErrors(errors.clone())));
    let zk = connect(&connect_string).await;
    zk.create("/abandoned", b"", CreateMode::Persistent).await.unwrap();

    const REQUESTS: usize = 20;
    for i in 0..REQUESTS {
        // polled once (the request goes out), then dropped: a zero timeout polls its future
        // once before it looks at the clock
        let path = format!("/abandoned/{i}");
        let request = zk.create(&path, b"x", CreateMode::Persistent);
        assert!(timeout(Duration::ZERO, request).await.is_err(), "request {i} answered at once");
    }
    // a session's requests are answered in order: once this one is, every answer above has come
    assert_eq!(zk.children("/abandoned").await.unwrap().map(|c| c.len()), Some(REQUESTS), "every request went out");
    assert_eq!(errors.load(std::sync::atomic::Ordering::Relaxed), 0, "zookeeper-async logged errors");
    zk.close().await.unwrap();
}

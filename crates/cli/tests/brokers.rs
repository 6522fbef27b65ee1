//! `gregor brokers --bootstrap-server`: the brokers from a Metadata request, and how gregor
//! speaks to each, run as a child process against
//!
//! * the FakeCluster's modern mode (KRaft-style, no ZooKeeper): every broker's id and port, the
//!   controller, `negotiated` and the versions gregor sends (Produce 10, the fake's newest;
//!   Fetch 12, gregor's cap; Metadata 12), as a table and as JSON; `--property
//!   api.version.request=false` is passed on (every broker then gets the 0.8.2 fallback);
//!   SASL settings through `--command-config`;
//! * the 0.8.2 FakeCluster (a real ZooKeeper underneath): `fallback 0.8.2` and v0 of each,
//!   the same brokers `--zookeeper` lists, and KAFKA-1867's answer without brokers as a clear
//!   error;
//! * usage: neither or both of `--zookeeper` and `--bootstrap-server` (exit 2), no broker
//!   answering (exit 1, naming what was tried).
//!
//! The 0.8.2 test needs ZooKeeper (`apt-get install default-jre-headless zookeeper`): without it
//! it fails, or skips when `GREGOR_ALLOW_SKIP=1` is set outside CI.

mod common;

use common::{cluster_with, run_program, Run};
use gregor_testkit::sasl::Mechanism;
use gregor_testkit::FakeCluster;
use serde_json::Value;

async fn gregor(args: &[&str]) -> Run {
    run_program(env!("CARGO_BIN_EXE_gregor"), args, b"").await
}

/// The rows of a table, each split at runs of two or more spaces, without the header (which is
/// checked to be `header`).
fn rows(text: &str, header: &[&str]) -> Vec<Vec<String>> {
    let split = |line: &str| -> Vec<String> {
        line.split("  ").map(str::trim).filter(|c| !c.is_empty()).map(str::to_owned).collect()
    };
    let mut lines = text.lines();
    assert_eq!(split(lines.next().unwrap_or_default()), header, "{text}");
    lines.take_while(|l| !l.is_empty()).map(split).collect()
}

const HEADER: [&str; 9] = ["ID", "HOST", "PORT", "RACK", "CONTROLLER", "VERSIONS", "PRODUCE", "FETCH", "METADATA"];

/// Checks a JSON listing against the cluster: every broker once with its port, the controller,
/// and the versions gregor sends each.
fn check_json(j: &Value, c: &FakeCluster, controller: Option<i32>, source: &str, versions: [i64; 3]) {
    assert_eq!(j["controller"].as_i64(), controller.map(i64::from), "{j}");
    let brokers = j["brokers"].as_array().expect("a brokers array");
    let ids: Vec<i64> = brokers.iter().map(|b| b["id"].as_i64().expect("an id")).collect();
    let expected: Vec<i64> = c.broker_addrs().iter().map(|(id, _)| i64::from(*id)).collect();
    assert_eq!(ids, expected, "{j}");
    for b in brokers {
        let id = b["id"].as_i64().unwrap() as i32;
        let addr = c.broker_addr(id).unwrap();
        assert_eq!(b["host"], "127.0.0.1", "{b}");
        assert_eq!(b["port"].as_i64(), Some(i64::from(addr.port())), "{b}");
        assert_eq!(b["rack"], Value::Null, "{b}");
        assert_eq!(b["controller"], Value::Bool(controller == Some(id)), "{b}");
        assert_eq!(b["error"], Value::Null, "{b}");
        let v = &b["versions"];
        assert_eq!(v["source"], source, "{b}");
        assert_eq!([&v["produce"], &v["fetch"], &v["metadata"]].map(|n| n.as_i64().unwrap_or(-1)), versions, "{b}");
    }
}

/// Checks a table listing as [`check_json`] does.
fn check_table(text: &str, c: &FakeCluster, controller: Option<i32>, source: &str, versions: [i64; 3]) {
    let rows = rows(text, &HEADER);
    let addrs = c.broker_addrs();
    assert_eq!(rows.len(), addrs.len(), "{text}");
    for (row, (id, addr)) in rows.iter().zip(addrs) {
        let mut expected = vec![id.to_string(), "127.0.0.1".to_owned(), addr.port().to_string(), "-".to_owned()];
        if controller == Some(id) {
            expected.push("yes".to_owned());
        }
        expected.push(source.to_owned());
        expected.extend(versions.iter().map(i64::to_string));
        assert_eq!(row, &expected, "{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_brokers_are_listed_with_the_negotiated_versions() {
    let c = FakeCluster::modern().brokers(3).start().await.expect("the modern fake starts");
    let controller = c.controller();
    assert!(controller.is_some(), "the modern fake has a controller");
    let b = c.bootstrap();

    // Produce 10: the fake's newest (gregor sends up to 12); Fetch 12: gregor's cap (the fake
    // speaks 16); Metadata 12
    let table = gregor(&["brokers", "--bootstrap-server", &b]).await;
    check_table(table.ok(), &c, controller, "negotiated", [10, 12, 12]);
    assert!(!table.stdout.contains("controller unknown"), "{}", table.stdout);

    let j = gregor(&["brokers", "--broker-list", &b, "--output", "json"]).await.json();
    check_json(&j, &c, controller, "negotiated", [10, 12, 12]);
    assert_eq!(j["cluster_id"].as_str(), c.cluster_id(), "{j}");
    assert_eq!(j["metadata_from"]["version"], 12, "{j}");

    // one bootstrap broker is enough to list them all
    let (_, first) = c.broker_addrs()[0];
    let j = gregor(&["brokers", "--bootstrap-server", &first.to_string(), "--output", "json"]).await.json();
    check_json(&j, &c, controller, "negotiated", [10, 12, 12]);

    // --property reaches the connections: without ApiVersions each broker gets 0.8.2's
    // versions, and Metadata v0 names no controller
    let run = gregor(&["brokers", "--bootstrap-server", &b, "--property", "api.version.request=false"]).await;
    check_table(run.ok(), &c, None, "fallback 0.8.2", [0, 0, 0]);
    assert!(run.stdout.contains("\ncontroller unknown: "), "{}", run.stdout);
    assert!(run.stdout.contains(" answered Metadata v0, which names none\n"), "{}", run.stdout);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sasl_settings_come_from_command_config() {
    let c = FakeCluster::modern()
        .brokers(2)
        .sasl(&[Mechanism::ScramSha256], [("alice", "alice-secret")])
        .start()
        .await
        .expect("the modern fake starts");
    let dir = std::env::temp_dir().join(format!("gregor-cli-brokers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("sasl.properties");
    std::fs::write(
        &config,
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\nsasl.username=alice\nsasl.password=alice-secret\n",
    )
    .unwrap();
    let b = c.bootstrap();
    let config = config.to_str().unwrap();
    let j = gregor(&["brokers", "--bootstrap-server", &b, "--command-config", config, "--output", "json"]).await.json();
    check_json(&j, &c, c.controller(), "negotiated", [10, 12, 12]);

    // without the settings the brokers refuse the Metadata request: exit 1, nothing listed
    let run = gregor(&["brokers", "--bootstrap-server", &b]).await;
    run.fails_with_error_line(1, "could not read the brokers");
    assert_eq!(run.stdout, "");
    let _ = std::fs::remove_dir_all(&dir);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_0_8_2_brokers_are_listed_with_the_fallback_versions() {
    let Some(c) = cluster_with("cli-brokers-0-8-2", |b| b.empty_cluster_lists_no_brokers = true).await else {
        return;
    };
    let b = c.bootstrap();

    // KAFKA-1867: a 0.8.2 cluster without topics answers Metadata with no broker
    let run = gregor(&["brokers", "--bootstrap-server", &b]).await;
    run.fails_with_error_line(1, "with no broker");
    assert!(run.stderr.contains("KAFKA-1867"), "{}", run.stderr);
    assert!(run.stderr.contains("--zookeeper"), "{}", run.stderr);

    c.create_topic("t", 1, 1).await.unwrap();
    // every broker closes the connection on ApiVersions: 0.8.2's versions, v0 of each; Metadata
    // v0 names no controller
    let run = gregor(&["brokers", "--bootstrap-server", &b]).await;
    check_table(run.ok(), &c, None, "fallback 0.8.2", [0, 0, 0]);
    assert!(run.stdout.contains(" answered Metadata v0, which names none\n"), "{}", run.stdout);
    let j = gregor(&["brokers", "--broker-list", &b, "--output", "json"]).await.json();
    check_json(&j, &c, None, "fallback 0.8.2", [0, 0, 0]);
    assert_eq!(j["cluster_id"], Value::Null, "{j}");
    assert_eq!(j["metadata_from"]["version"], 0, "{j}");

    // the ZooKeeper path lists the same brokers, and knows the controller
    let zk = gregor(&["brokers", "--zookeeper", c.zookeeper(), "--output", "json"]).await.json();
    let ids = |j: &Value| j["brokers"].as_array().unwrap().iter().map(|b| b["id"].as_i64()).collect::<Vec<_>>();
    assert_eq!(ids(&zk), ids(&j));
    assert_eq!(zk["controller"].as_i64(), c.controller().map(i64::from));
}

#[tokio::test]
async fn exactly_one_source_and_no_answer_is_an_error() {
    // neither source, both, and a flag of the other source: usage errors naming the flags
    let run = gregor(&["brokers"]).await;
    run.fails(2, "--zookeeper");
    assert!(run.stderr.contains("--broker-list"), "{}", run.stderr);
    let run = gregor(&["brokers", "--zookeeper", "127.0.0.1:1", "--bootstrap-server", "127.0.0.1:1"]).await;
    run.fails(2, "cannot be used with");
    let run = gregor(&["brokers", "--zookeeper", "127.0.0.1:1", "--property", "client.id=x"]).await;
    run.fails(2, "cannot be used with");
    assert!(run.stderr.contains("'--property <KEY=VALUE>'"), "{}", run.stderr);
    let run = gregor(&["brokers", "--bootstrap-server", "127.0.0.1:1", "--zookeeper-timeout-ms", "2000"]).await;
    run.fails(2, "cannot be used with");
    assert!(run.stderr.contains("'--zookeeper-timeout-ms <MS>'"), "{}", run.stderr);
    gregor(&["brokers", "--bootstrap-server", "127.0.0.1:1", "--property", "no.such.property=1"])
        .await
        .fails(2, "no.such.property");

    // nobody listening: exit 1, naming every address tried
    let run = gregor(&["brokers", "--bootstrap-server", "127.0.0.1:1,127.0.0.1:2"]).await;
    run.fails_with_error_line(1, "could not read the brokers");
    assert!(run.stderr.contains("tried 127.0.0.1:1, 127.0.0.1:2"), "{}", run.stderr);
}

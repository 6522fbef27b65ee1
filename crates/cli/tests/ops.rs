//! `gregor consume`, `topics`, `brokers`, `groups`, `health`, `reassign` and `elect-leaders`
//! against a 3-broker FakeCluster (a real ZooKeeper underneath, a chroot per test), each run
//! as a child process bounded by a timeout:
//!
//! * consume with a group reads what `gregor produce` wrote, commits (the znodes under
//!   /consumers/G/offsets), resumes from the commit; whitelist; Ctrl-C and a closed stdout end
//!   it cleanly;
//! * groups describe (offsets, log size, lag), reset-offsets, list;
//! * topics create/list/describe/alter/delete with the controller acting on them;
//! * brokers, health, reassign generate/execute/verify, elect-leaders;
//! * bad input: unknown topic, replication factor above the broker count, malformed JSON,
//!   unreachable ZooKeeper (exit 1, one error naming the problem); usage errors (exit 2).
//!
//! Needs java and ZooKeeper (`apt-get install default-jre-headless zookeeper`): without them the
//! tests fail, or skip when `GREGOR_ALLOW_SKIP=1` is set outside CI.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

mod common;

use common::{cluster_with, run_program, spawn, Run, LIMIT};
use gregor_testkit::support::eventually;
use gregor_testkit::FakeCluster;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

async fn cluster_with_delete(test: &str, delete_enable: bool) -> Option<FakeCluster> {
    cluster_with(test, |c| c.delete_topic_enable = delete_enable).await
}

async fn cluster(test: &str) -> Option<FakeCluster> {
    cluster_with_delete(test, false).await
}

async fn gregor_in(args: &[&str], input: &[u8]) -> Run {
    run_program(env!("CARGO_BIN_EXE_gregor"), args, input).await
}

async fn gregor(args: &[&str]) -> Run {
    gregor_in(args, b"").await
}

/// `gregor <command> --zookeeper Z args...`.
async fn zk_cmd(c: &FakeCluster, command: &str, args: &[&str]) -> Run {
    let mut all = vec![command, "--zookeeper", c.zookeeper()];
    all.extend_from_slice(args);
    gregor(&all).await
}

async fn produce(c: &FakeCluster, topic: &str, lines: &[String]) {
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let b = c.bootstrap();
    gregor_in(
        &["produce", "--broker-list", &b, "--topic", topic, "--property", "queue.buffering.max.ms=10"],
        input.as_bytes(),
    )
    .await
    .ok();
}

fn sorted(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text.lines().map(str::to_owned).collect();
    v.sort();
    v
}

/// The committed offsets of a group for a topic, from its znodes.
async fn committed(c: &FakeCluster, group: &str, topic: &str) -> BTreeMap<i32, i64> {
    let mut out = BTreeMap::new();
    for p in c.partitions(topic) {
        if let Some((data, _)) = c.zk().get(&format!("/consumers/{group}/offsets/{topic}/{p}")).await.unwrap() {
            out.insert(p, String::from_utf8(data).unwrap().trim().parse().unwrap());
        }
    }
    out
}

/// Total lag of `groups --describe --output json` (a partition without a committed offset
/// lags by its whole log: null keys put every line of a produce on one partition).
fn total_lag(v: &Value) -> i64 {
    v["offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| match o["offset"].as_i64() {
            Some(_) => o["lag"].as_i64().expect("a lag"),
            None => o["log_size"].as_i64().expect("a log size"),
        })
        .sum()
}

// ---------------------------------------------------------------------------------------------
// consume and groups
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consume_reads_what_produce_wrote_commits_and_groups_show_the_lag() {
    let Some(c) = cluster("ops-consume").await else { return };
    c.create_topic("c", 3, 2).await.unwrap();
    let first: Vec<String> = (0..30).map(|i| format!("first {i}")).collect();
    produce(&c, "c", &first).await;

    let consume = |extra: &'static [&'static str]| {
        let zk = c.zookeeper().to_owned();
        async move {
            let mut args = vec!["consume", "--zookeeper", zk.as_str(), "--group", "g1", "--topic", "c"];
            args.extend_from_slice(extra);
            gregor(&args).await
        }
    };
    let run = consume(&["--from-beginning", "--max-messages", "30"]).await;
    let mut expected = first.clone();
    expected.sort();
    assert_eq!(sorted(run.ok()), expected);
    assert_eq!(run.stderr, "");
    // committed on exit: 30 in all over the 3 partitions
    let offsets = committed(&c, "g1", "c").await;
    assert_eq!(offsets.values().sum::<i64>(), 30, "{offsets:?}");
    // left the group
    assert_eq!(c.zk().children("/consumers/g1/ids").await.unwrap().unwrap_or_default(), Vec::<String>::new());

    // lag: produced minus committed
    let describe = zk_cmd(&c, "groups", &["--describe", "--group", "g1", "--output", "json"]).await.json();
    assert_eq!(describe["offsets"].as_array().unwrap().len(), 3);
    assert_eq!(total_lag(&describe), 0);
    let second: Vec<String> = (0..7).map(|i| format!("second {i}")).collect();
    produce(&c, "c", &second).await;
    let describe = zk_cmd(&c, "groups", &["--describe", "--group", "g1", "--output", "json"]).await.json();
    assert_eq!(total_lag(&describe), 7);
    let table = zk_cmd(&c, "groups", &["--describe", "--group", "g1"]).await;
    let text = table.ok();
    assert!(text.contains("Consumer group g1 has no active member."), "{text}");
    let words = |l: &str| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    assert!(text.lines().any(|l| words(l) == ["GROUP", "TOPIC", "PID", "OFFSET", "LOGSIZE", "LAG", "OWNER"]), "{text}");
    // null keys: the 30 went to one partition; its row reads offset 30, lag = log size - 30
    let row = words(text.lines().find(|l| l.starts_with("g1 ") && words(l)[3] == "30").expect("a row at 30"));
    let log_size: i64 = row[4].parse().unwrap();
    assert_eq!(row[5], (log_size - 30).to_string(), "{text}");
    assert_eq!(row[6], "none", "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("g1 ")).count(), 3, "{text}");

    // the group resumes from its commit: only the new messages
    // (partitions without a commit start at the beginning with --from-beginning)
    let run = consume(&["--from-beginning", "--timeout-ms", "1500"]).await;
    let mut expected = second.clone();
    expected.sort();
    assert_eq!(sorted(run.ok()), expected);
    assert_eq!(committed(&c, "g1", "c").await.values().sum::<i64>(), 37);

    // reset to earliest: everything again
    let run = zk_cmd(&c, "groups", &["--reset-offsets", "--group", "g1", "--topic", "c", "--to", "earliest"]).await;
    assert!(run.ok().starts_with("TOPIC  PARTITION  PREVIOUS  NEW\n"), "{}", run.stdout);
    assert_eq!(committed(&c, "g1", "c").await.values().sum::<i64>(), 0);
    let describe = zk_cmd(&c, "groups", &["--describe", "--group", "g1", "--output", "json"]).await.json();
    assert_eq!(total_lag(&describe), 37);
    let run = consume(&["--max-messages", "37"]).await;
    assert_eq!(run.ok().lines().count(), 37);
    // latest: nothing left; an offset beyond the log end is refused
    let run = zk_cmd(
        &c,
        "groups",
        &["--reset-offsets", "--group", "g1", "--topic", "c", "--to", "latest", "--output", "json"],
    )
    .await
    .json();
    assert_eq!(run["partitions"].as_array().unwrap().len(), 3);
    let describe = zk_cmd(&c, "groups", &["--describe", "--group", "g1", "--output", "json"]).await.json();
    assert_eq!(total_lag(&describe), 0);
    zk_cmd(&c, "groups", &["--reset-offsets", "--group", "g1", "--topic", "c", "--to", "9999"])
        .await
        .fails_with_error_line(1, "could not reset the offsets of consumer group \"g1\" on \"c\"");
    zk_cmd(&c, "groups", &["--reset-offsets", "--group", "g1", "--topic", "nope", "--to", "earliest"])
        .await
        .fails_with_error_line(1, "topic \"nope\" does not exist");

    // groups --list knows it; an unknown group is named
    assert!(zk_cmd(&c, "groups", &["--list"]).await.ok().lines().any(|l| l == "g1"));
    zk_cmd(&c, "groups", &["--describe", "--group", "nobody"])
        .await
        .fails_with_error_line(1, "consumer group \"nobody\" does not exist");

    // an unknown topic is named at once
    let run = zk_cmd(&c, "consume", &["--group", "g2", "--topic", "nope", "--timeout-ms", "500"]).await;
    run.fails_with_error_line(1, "cannot consume topic \"nope\"");
    assert!(run.stderr.contains("topic \"nope\" does not exist"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consume_by_whitelist_and_blacklist_and_stops_cleanly() {
    let Some(c) = cluster("ops-whitelist").await else { return };
    for t in ["wl-a", "wl-b", "other"] {
        c.create_topic(t, 2, 1).await.unwrap();
        produce(&c, t, &[format!("in {t}")]).await;
    }
    let run = zk_cmd(
        &c,
        "consume",
        &["--whitelist", "wl-.*", "--from-beginning", "--max-messages", "2", "--timeout-ms", "5000"],
    )
    .await;
    assert_eq!(sorted(run.ok()), ["in wl-a", "in wl-b"]);
    let run = zk_cmd(&c, "consume", &["--blacklist", "wl-.*", "--from-beginning", "--timeout-ms", "2000"]).await;
    assert_eq!(sorted(run.ok()), ["in other"]);

    // without --from-beginning a new group reads only what comes after it joined; Ctrl-C
    // ends it with exit 0 and the commit
    let mut child = spawn(
        env!("CARGO_BIN_EXE_gregor"),
        &["consume", "--zookeeper", c.zookeeper(), "--group", "live", "--topic", "other"],
    );
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    eventually("the live consumer owns its partitions", Duration::from_secs(10), async || {
        let owned = c.zk().children("/consumers/live/owners/other").await.unwrap().unwrap_or_default();
        owned.len() == 2
    })
    .await;
    // owning its partitions comes before the consumer looks up where it starts (the log end,
    // as a new group without --from-beginning does): a message produced in between lands
    // below its start and is never printed, so produce again until one is printed
    let deadline = Instant::now() + LIMIT;
    let line = loop {
        produce(&c, "other", &["after join".to_owned()]).await;
        match tokio::time::timeout(Duration::from_secs(2), lines.next_line()).await {
            Ok(line) => break line.unwrap(),
            Err(_) => assert!(Instant::now() < deadline, "the live consumer printed nothing"),
        }
    };
    assert_eq!(line.as_deref(), Some("after join"));
    let pid = child.id().unwrap().to_string();
    assert!(Command::new("kill").args(["-INT", &pid]).status().await.unwrap().success());
    let status = tokio::time::timeout(LIMIT, child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{status}");
    // the commit is each partition's log end: every message read, "in other" never printed
    let offsets = committed(&c, "live", "other").await;
    assert!(!offsets.is_empty());
    for (p, o) in &offsets {
        assert_eq!(Some(*o), c.offsets("other", *p).map(|(hw, _)| hw), "live/other/{p}: {offsets:?}");
    }
    let after = offsets.iter().find(|(p, _)| c.offsets("other", **p).unwrap().0 > 0);
    assert!(after.is_some(), "{offsets:?}");

    // a reader that closes stdout: exit 0, quietly
    let many: Vec<String> = (0..3000).map(|i| format!("many {i} {}", "x".repeat(100))).collect();
    produce(&c, "wl-a", &many).await;
    let mut child = spawn(
        env!("CARGO_BIN_EXE_gregor"),
        &["consume", "--zookeeper", c.zookeeper(), "--topic", "wl-a", "--from-beginning", "--timeout-ms", "20000"],
    );
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).await.unwrap();
    assert!(!first.is_empty());
    drop(stdout);
    let out = tokio::time::timeout(LIMIT, child.wait_with_output()).await.unwrap().unwrap();
    assert!(out.status.success(), "{}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

// ---------------------------------------------------------------------------------------------
// topics
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_create_list_describe_alter_delete_and_the_controller_acts() {
    let Some(c) = cluster_with_delete("ops-topics", true).await else { return };
    let topics = |args: &'static [&'static str]| zk_cmd(&c, "topics", args);

    let run = topics(&[
        "--create",
        "--topic",
        "t1",
        "--partitions",
        "3",
        "--replication-factor",
        "2",
        "--config",
        "retention.ms=1000",
    ])
    .await;
    assert_eq!(run.ok(), "Created topic \"t1\".\n");
    c.wait_for_leaders("t1", Duration::from_secs(10)).await.unwrap();
    let run = topics(&["--create", "--topic", "t2", "--replica-assignment", "0:1,1:2", "--output", "json"]).await;
    assert_eq!(run.json()["replicas"], serde_json::json!([[0, 1], [1, 2]]));
    c.wait_for_leaders("t2", Duration::from_secs(10)).await.unwrap();
    assert_eq!(c.partition_info("t2", 1).unwrap().1, [1, 2]);

    assert_eq!(topics(&["--list"]).await.ok(), "t1\nt2\n");
    assert_eq!(topics(&["--list", "--output", "json"]).await.json()[0]["topic"], "t1");

    let d = topics(&["--describe", "--topic", "t1", "--output", "json"]).await.json();
    let t = &d[0];
    assert_eq!((t["partition_count"].as_i64(), t["replication_factor"].as_i64()), (Some(3), Some(2)));
    assert_eq!(t["config"]["retention.ms"], "1000");
    for p in t["partitions"].as_array().unwrap() {
        assert!(p["leader"].is_i64() && p["leader_live"] == true, "{p}");
        assert_eq!(p["isr"].as_array().unwrap().len(), 2, "{p}");
    }
    let text = topics(&["--describe"]).await;
    let text = text.ok();
    assert!(
        text.starts_with(
            "TOPIC  PARTITIONS  REPLICATION  CONFIGS\nt1     3           2            retention.ms=1000\n"
        ),
        "{text}"
    );
    assert!(text.contains("TOPIC  PARTITION  LEADER  REPLICAS  ISR\n"), "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("t1 ") || l.starts_with("t2 ")).count(), 2 + 5, "{text}");
    // healthy: the filters print nothing
    assert_eq!(topics(&["--describe", "--under-replicated-partitions"]).await.ok(), "");
    assert_eq!(
        topics(&["--describe", "--unavailable-partitions", "--output", "json"]).await.json(),
        serde_json::json!([])
    );

    // alter: partitions come online and are served; config changes
    assert_eq!(
        topics(&["--alter", "--topic", "t1", "--partitions", "5"]).await.ok(),
        "Added 2 partitions to topic \"t1\" (now 5).\n"
    );
    eventually("partitions 3 and 4 of t1 have leaders", Duration::from_secs(10), async || {
        c.leader("t1", 3).is_some() && c.leader("t1", 4).is_some()
    })
    .await;
    let b = c.bootstrap();
    gregor_in(&["produce", "--broker-list", &b, "--topic", "t1", "--partition", "4"], b"to the new partition\n")
        .await
        .ok();
    assert_eq!(c.offsets("t1", 4).unwrap().0, 1);
    let run =
        topics(&["--alter", "--topic", "t1", "--config", "cleanup.policy=compact", "--delete-config", "retention.ms"])
            .await;
    assert_eq!(run.ok(), "Updated config for topic \"t1\": cleanup.policy=compact\n");
    let d = topics(&["--describe", "--topic", "t1", "--output", "json"]).await.json();
    assert_eq!(d[0]["config"], serde_json::json!({ "cleanup.policy": "compact" }));
    assert_eq!(d[0]["partition_count"], 5);
    let changes = c.zk().children("/config/changes").await.unwrap().unwrap_or_default();
    assert!(!changes.is_empty(), "a config change notification");

    // delete (delete.topic.enable=true): the controller removes it
    let run = topics(&["--delete", "--topic", "t2"]).await;
    assert!(run.ok().starts_with("Topic t2 is marked for deletion.\n"), "{}", run.stdout);
    eventually("t2 is deleted", Duration::from_secs(15), async || topics(&["--list"]).await.ok() == "t1\n").await;
    assert!(c.partitions("t2").is_empty());

    // bad input: exit 1 naming the problem
    topics(&["--create", "--topic", "big", "--partitions", "1", "--replication-factor", "4"])
        .await
        .fails_with_error_line(1, "replication factor 4 larger than the 3 available brokers");
    topics(&["--create", "--topic", "t1", "--partitions", "1", "--replication-factor", "1"])
        .await
        .fails_with_error_line(1, "topic \"t1\" already exists");
    topics(&["--describe", "--topic", "nope"]).await.fails_with_error_line(1, "topic \"nope\" does not exist");
    topics(&["--alter", "--topic", "nope", "--partitions", "9"])
        .await
        .fails_with_error_line(1, "topic \"nope\" does not exist");
    topics(&["--delete", "--topic", "nope"]).await.fails_with_error_line(1, "topic \"nope\" does not exist");
    topics(&["--alter", "--topic", "t1", "--partitions", "2"])
        .await
        .fails_with_error_line(1, "could not add partitions to topic \"t1\"");
    topics(&["--alter", "--topic", "t1", "--config", "no.such=1"]).await.fails_with_error_line(1, "no.such");
    topics(&["--create", "--topic", "bad", "--replica-assignment", "0:7"]).await.fails_with_error_line(1, "7");
    topics(&["--create", "--topic", "bad", "--replica-assignment", "0:x"])
        .await
        .fails_with_error_line(1, "invalid --replica-assignment");
}

// ---------------------------------------------------------------------------------------------
// brokers, health, reassign, elect-leaders
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brokers_health_reassign_and_elect_leaders() {
    let Some(c) = cluster("ops-replicas").await else { return };
    let brokers = zk_cmd(&c, "brokers", &[]).await;
    let text = brokers.ok();
    assert!(text.starts_with("ID  HOST       PORT"), "{text}");
    assert_eq!(text.lines().count(), 4, "{text}");
    let j = zk_cmd(&c, "brokers", &["--output", "json"]).await.json();
    assert_eq!(j["controller"].as_i64(), c.controller().map(i64::from));
    assert_eq!(j["brokers"].as_array().unwrap().len(), 3);
    for b in j["brokers"].as_array().unwrap() {
        let addr = c.broker_addr(b["id"].as_i64().unwrap() as i32).unwrap();
        assert_eq!(b["port"].as_i64(), Some(i64::from(addr.port())));
    }

    c.create_topic_with("r", BTreeMap::from([(0, vec![0]), (1, vec![1])]), BTreeMap::new()).await.unwrap();
    let h = zk_cmd(&c, "health", &["--output", "json"]).await.json();
    assert_eq!(h["healthy"], true);
    assert_eq!(h["live_brokers"], serde_json::json!([0, 1, 2]));
    assert_eq!(h["partition_count"], 2);
    let text = zk_cmd(&c, "health", &[]).await;
    assert!(text.ok().starts_with("status: healthy\n"), "{}", text.stdout);

    // generate: a proposal over brokers 1,2, nothing written
    let dir = tempfile_dir("ops-replicas");
    let topics_file = dir.join("topics.json");
    std::fs::write(&topics_file, r#"{"topics":[{"topic":"r"}],"version":1}"#).unwrap();
    let tf = topics_file.to_str().unwrap();
    let run = zk_cmd(&c, "reassign", &["--generate", "--topics-to-move-json-file", tf, "--broker-list", "1,2"]).await;
    assert!(run.ok().contains("Proposed partition reassignment configuration"), "{}", run.stdout);
    let j = zk_cmd(
        &c,
        "reassign",
        &["--generate", "--topics-to-move-json-file", tf, "--broker-list", "1,2", "--output", "json"],
    )
    .await
    .json();
    for p in j["proposed"]["partitions"].as_array().unwrap() {
        let r = p["replicas"].as_array().unwrap();
        assert!(r.iter().all(|b| b == 1 || b == 2), "{p}");
    }

    // execute + verify: the controller moves the replicas
    let plan = dir.join("plan.json");
    std::fs::write(
        &plan,
        r#"{"version":1,"partitions":[{"topic":"r","partition":0,"replicas":[2,1]},{"topic":"r","partition":1,"replicas":[0]}]}"#,
    )
    .unwrap();
    let pf = plan.to_str().unwrap();
    let run = zk_cmd(&c, "reassign", &["--execute", "--reassignment-json-file", pf]).await;
    let text = run.ok();
    assert!(text.starts_with("Current partition replica assignment\n\n"), "{text}");
    assert!(text.contains("Successfully started reassignment of partitions"), "{text}");
    eventually("the reassignment completes", Duration::from_secs(15), async || {
        let v = zk_cmd(&c, "reassign", &["--verify", "--reassignment-json-file", pf]).await;
        v.ok().matches("completed successfully").count() == 2
    })
    .await;
    let (leader, replicas, isr) = c.partition_info("r", 0).unwrap();
    assert_eq!(replicas, [2, 1]);
    assert!(isr.contains(&2) && isr.contains(&1), "{isr:?}");
    assert!(replicas.contains(&leader));
    assert_eq!(c.partition_info("r", 1).unwrap().1, [0]);

    // elect-leaders: leadership back to the preferred replica
    c.wait_for_leaders("r", Duration::from_secs(10)).await.unwrap();
    if c.leader("r", 0) == Some(2) {
        c.move_leader("r", 0, 1).await.unwrap();
    }
    assert_eq!(c.leader("r", 0), Some(1));
    let election = dir.join("election.json");
    std::fs::write(&election, r#"{"partitions":[{"topic":"r","partition":0}]}"#).unwrap();
    let ef = election.to_str().unwrap();
    let run = zk_cmd(&c, "elect-leaders", &["--path-to-json-file", ef]).await;
    assert_eq!(run.ok(), "Successfully started preferred replica election for partitions [r,0]\n");
    eventually("the preferred replica leads", Duration::from_secs(10), async || c.leader("r", 0) == Some(2)).await;
    eventually("the election znode is gone", Duration::from_secs(10), async || {
        c.zk().get("/admin/preferred_replica_election").await.unwrap().is_none()
    })
    .await;
    let j = zk_cmd(&c, "elect-leaders", &["--output", "json"]).await.json();
    assert_eq!(j["partitions"].as_array().unwrap().len(), 2);

    // bad input
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"version\":1,\"partitions\":[{\"topic\":\"r\"").unwrap();
    let bf = bad.to_str().unwrap();
    zk_cmd(&c, "reassign", &["--execute", "--reassignment-json-file", bf])
        .await
        .fails_with_error_line(1, "invalid reassignment file");
    zk_cmd(&c, "reassign", &["--verify", "--reassignment-json-file", bf])
        .await
        .fails_with_error_line(1, "invalid reassignment file");
    zk_cmd(&c, "reassign", &["--generate", "--topics-to-move-json-file", bf, "--broker-list", "0"])
        .await
        .fails_with_error_line(1, "invalid topics-to-move file");
    zk_cmd(&c, "elect-leaders", &["--path-to-json-file", bf])
        .await
        .fails_with_error_line(1, "invalid preferred replica election file");
    zk_cmd(&c, "reassign", &["--execute", "--reassignment-json-file", "/no/such/file.json"])
        .await
        .fails_with_error_line(1, "could not read /no/such/file.json");
    let unknown_broker = dir.join("unknown.json");
    std::fs::write(&unknown_broker, r#"{"version":1,"partitions":[{"topic":"r","partition":0,"replicas":[7]}]}"#)
        .unwrap();
    zk_cmd(&c, "reassign", &["--execute", "--reassignment-json-file", unknown_broker.to_str().unwrap()])
        .await
        .fails_with_error_line(1, "7");
    zk_cmd(&c, "reassign", &["--generate", "--topics-to-move-json-file", tf, "--broker-list", "9"])
        .await
        .fails_with_error_line(1, "could not generate a reassignment");
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("gregor-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ---------------------------------------------------------------------------------------------
// perf
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn perf_produce_and_consume_summarize_throughput_and_latency() {
    let Some(c) = cluster("ops-perf").await else { return };
    c.create_topic("p", 3, 1).await.unwrap();
    let b = c.bootstrap();
    let run =
        gregor(&["perf", "produce", "--broker-list", &b, "--topic", "p", "--messages", "2000", "--message-size", "50"])
            .await;
    let text = run.ok();
    assert!(text.starts_with("produced 2000 messages (0.10 MB) in "), "{text}");
    assert!(
        text.contains(" messages/s, ") && text.contains(" MB/s, latency p50 ") && text.contains(" ms, p99 "),
        "{text}"
    );
    // null keys spread over every partition (0.8's default partitioner would pick one); round
    // robin starts at a random partition
    let mut hws: Vec<i64> = c.partitions("p").iter().map(|p| c.offsets("p", *p).unwrap().0).collect();
    let line = format!("\npartitioner round_robin: 3 partitions, p0 {}, p1 {}, p2 {}\n", hws[0], hws[1], hws[2]);
    assert!(text.contains(&line), "{text}");
    hws.sort_unstable();
    assert_eq!(hws, [666, 667, 667]);
    // the partitioner can still be chosen, and the summary says which ran
    let produce_p = ["perf", "produce", "--broker-list", &b, "--topic", "p"];
    let partitioner = ["--messages", "300", "--property", "partitioner.class=kafka.producer.DefaultPartitioner"];
    let j = gregor(&[&produce_p[..], &partitioner, &["--output", "json"]].concat()).await.json();
    assert_eq!(j["partitioner"], "kafka.producer.DefaultPartitioner", "{j}");
    let per = j["messages_per_partition"].as_object().expect("a per-partition object");
    assert_eq!(per.len(), 1, "0.8's sticky rule sends a run's null keys to one partition: {j}");
    assert_eq!(per.values().map(|n| n.as_u64().unwrap()).sum::<u64>(), 300);
    let hw: i64 = c.partitions("p").iter().map(|p| c.offsets("p", *p).unwrap().0).sum();
    assert_eq!(hw, 2300);
    let j = gregor(&[
        "perf",
        "consume",
        "--zookeeper",
        c.zookeeper(),
        "--topic",
        "p",
        "--messages",
        "2300",
        "--output",
        "json",
    ])
    .await
    .json();
    assert_eq!(j["messages"], 2300);
    assert_eq!(j["bytes"], 100_000 + 300 * 100);
    assert!(j["messages_per_second"].as_f64().unwrap() > 0.0, "{j}");
    assert!(j["latency_p99_ms"].as_f64().unwrap() >= j["latency_p50_ms"].as_f64().unwrap(), "{j}");
    gregor(&["perf", "consume", "--zookeeper", c.zookeeper(), "--topic", "nope", "--messages", "1"])
        .await
        .fails_with_error_line(1, "topic \"nope\" does not exist");
    // a run that fails says why (here the broker's message.max.bytes, 1,000,012 in 0.8.2)
    let run = gregor(&[&produce_p[..], &["--messages", "2", "--message-size", "1100000"]].concat()).await;
    run.fails_with_error_line(1, "2 of 2 messages were not delivered; the first: record for p/");
    assert!(run.stderr.contains("MESSAGE_SIZE_TOO_LARGE (10)"), "{}", run.stderr);
}

// ---------------------------------------------------------------------------------------------
// without a cluster
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn unreachable_zookeeper_fails_with_exit_1_and_usage_errors_exit_2() {
    let started = Instant::now();
    for command in [
        &["topics", "--list"][..],
        &["brokers"],
        &["health"],
        &["groups", "--list"],
        &["consume", "--topic", "t", "--group", "g"],
    ] {
        let mut args = command.to_vec();
        args.extend(["--zookeeper", "127.0.0.1:1"]);
        if command[0] != "consume" {
            args.extend(["--zookeeper-timeout-ms", "1500"]);
        } else {
            args.extend(["--property", "zookeeper.session.timeout.ms=1500"]);
        }
        gregor(&args).await.fails_with_error_line(1, "could not connect to zookeeper at 127.0.0.1:1");
    }
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
    // perf produce with no broker to reach: the cause, in the error and in the JSON summary
    let perf = ["perf", "produce", "--broker-list", "127.0.0.1:1", "--topic", "t", "--messages", "2"];
    let run = gregor(&perf).await;
    run.fails_with_error_line(1, "2 of 2 messages were not delivered; the first: record for t ");
    assert!(run.stderr.contains("could not connect to broker at 127.0.0.1:1"), "{}", run.stderr);
    let run = gregor(&[&perf[..], &["--output", "json"]].concat()).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let j: serde_json::Value = serde_json::from_str(&run.stdout).expect("a JSON summary");
    assert_eq!(j["failed"], 2, "{j}");
    assert!(j["first_error"].as_str().is_some_and(|e| e.contains("could not connect to broker")), "{j}");

    let z = ["--zookeeper", "127.0.0.1:1"];
    let usage: &[(&[&str], &str)] = &[
        (&["topics"], "--zookeeper"),
        (&["topics", "--zookeeper", "z"], "<--create|--list|--describe|--alter|--delete>"),
        (&["topics", "--list", "--describe"], "cannot be used with"),
        (&["topics", "--create", "--topic", "t"], "--create needs --partitions and --replication-factor"),
        (&["topics", "--create", "--partitions", "1", "--replication-factor", "1"], "--topic is required"),
        (&["topics", "--create", "--topic", "t", "--partitions", "0", "--replication-factor", "1"], "--partitions"),
        (&["topics", "--alter", "--topic", "t"], "--alter needs --partitions, --config or --delete-config"),
        (&["topics", "--list", "--under-replicated-partitions"], "go with --describe"),
        (&["topics", "--list", "--output", "yaml"], "invalid value 'yaml'"),
        (
            &["topics", "--create", "--topic", "t", "--partitions", "1", "--replication-factor", "1", "--config", "x"],
            "expected KEY=VALUE",
        ),
        (&["groups", "--describe"], "--group"),
        (&["groups", "--reset-offsets", "--group", "g", "--topic", "t"], "--to"),
        (
            &["groups", "--reset-offsets", "--group", "g", "--topic", "t", "--to", "soon"],
            "expected earliest, latest or an offset",
        ),
        (&["groups", "--list", "--offsets-storage", "mysql"], "invalid value 'mysql'"),
        (&["reassign", "--execute"], "--reassignment-json-file"),
        (&["reassign", "--generate", "--topics-to-move-json-file", "f"], "--broker-list"),
        (&["reassign", "--generate", "--verify", "--reassignment-json-file", "f"], "cannot be used with"),
        (&["elect-leaders", "--topic", "t", "--path-to-json-file", "f"], "cannot be used with"),
        (&["consume", "--group", "g"], "<--topic <TOPIC>|--whitelist <REGEX>|--blacklist <REGEX>>"),
        (&["consume", "--topic", "t", "--whitelist", "x"], "cannot be used with"),
        (&["consume", "--topic", "t", "--max-messages", "0"], "--max-messages must be at least 1"),
        (&["consume", "--topic", "t", "--property", "no.such=1"], "error: invalid consumer settings"),
        (&["consume", "--whitelist", "(", "--group", "g"], "error: invalid topic filter"),
    ];
    for (args, needle) in usage {
        let mut all = args.to_vec();
        if !args.contains(&"--zookeeper") && args.len() != 1 {
            all.extend(z);
        }
        let run = gregor(&all).await;
        assert_eq!(run.status.code(), Some(2), "{}: {}", run.what, run.stderr);
        assert!(run.stderr.contains(needle), "{}: stderr lacks {needle:?}: {}", run.what, run.stderr);
    }

    let help = gregor(&["--help"]).await;
    for command in ["consume", "topics", "brokers", "groups", "health", "reassign", "elect-leaders", "perf"] {
        assert!(help.ok().contains(&format!("  {command} ")), "{command} in --help");
    }
    let flags: [(&str, &[&str]); 4] = [
        (
            "consume",
            &[
                "--zookeeper",
                "--group",
                "--topic",
                "--whitelist",
                "--blacklist",
                "--from-beginning",
                "--max-messages",
                "--timeout-ms",
                "--property",
            ],
        ),
        (
            "topics",
            &[
                "--create",
                "--list",
                "--describe",
                "--alter",
                "--delete",
                "--partitions",
                "--replication-factor",
                "--config",
                "--delete-config",
                "--replica-assignment",
                "--under-replicated-partitions",
                "--unavailable-partitions",
                "--output",
            ],
        ),
        (
            "groups",
            &[
                "--list",
                "--describe",
                "--reset-offsets",
                "--group",
                "--topic",
                "--to",
                "--offsets-storage",
                "--broker-list",
            ],
        ),
        (
            "reassign",
            &[
                "--generate",
                "--execute",
                "--verify",
                "--topics-to-move-json-file",
                "--broker-list",
                "--reassignment-json-file",
            ],
        ),
    ];
    for (command, flags) in flags {
        let help = gregor(&[command, "--help"]).await;
        let out = help.ok();
        for flag in flags {
            let documented = [" ", "\n"].iter().any(|end| out.contains(&format!("      {flag}{end}")));
            assert!(documented, "gregor {command} --help documents {flag}");
        }
    }
}

//! The `gregor` binary against a 3-broker FakeCluster (a real ZooKeeper underneath), run as a
//! child process (tokio::process, bounded by a timeout after which it is killed and the test
//! fails):
//!
//! * produce 1,000 lines with each codec and keys, fetch every partition back and compare
//!   exactly (every line once, in input order per partition, keyed lines on their murmur2
//!   partition, contiguous offsets), and check what went over the wire (codec, acks);
//! * offsets -1/-2/a time/--max in GetOffsetShell's format; fetch from a middle offset (inside
//!   a compressed wrapper), --max-messages, latest, --timeout-ms picking up new messages;
//! * streaming: messages reach the broker while stdin is still open, a large input through a
//!   small queue, empty input, a reader that closes stdout early;
//! * errors: unknown topic/partition, offset out of range, undeliverable messages: exit 1 and
//!   the reason; bad flags and properties: exit 2; `--help` documents every flag;
//! * interop with kcat (librdkafka in 0.8.2 mode), both directions. Without kcat that test
//!   fails naming `apt-get install kcat`, unless `GREGOR_ALLOW_SKIP=1` is set outside CI: then
//!   it prints why and skips.
//!
//! Without ZooKeeper (Debian's `zookeeper` package) the cluster tests fail or skip the same way.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

mod common;

use common::{cluster_with, run_program, spawn, Run, LIMIT};
use gregor_producer::murmur2_partition;
use gregor_protocol::messages::AnyRequest;
use gregor_protocol::Compression;
use gregor_testkit::support::eventually;
use gregor_testkit::tools::{kcat_or_skip, KCAT_0_8_2};
use gregor_testkit::FakeCluster;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

// ---------------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------------

/// A 3-broker cluster in a chroot of its own, topics created explicitly (auto-creation off, so
/// an unknown topic stays unknown), or `None` to skip (only with `GREGOR_ALLOW_SKIP=1`, never
/// under CI).
async fn cluster(test: &str) -> Option<FakeCluster> {
    cluster_with(test, |_| {}).await
}

/// Runs `gregor args` with `input` on stdin.
async fn gregor(args: &[&str], input: &[u8]) -> Run {
    run_program(env!("CARGO_BIN_EXE_gregor"), args, input).await
}

/// `gregor fetch` of a whole partition with offsets and keys: `(offset, key, value)` lines.
async fn fetch_all(brokers: &str, topic: &str, partition: i32) -> Vec<(i64, String, String)> {
    let p = partition.to_string();
    let run = gregor(
        &[
            "fetch",
            "--broker-list",
            brokers,
            "--topic",
            topic,
            "--partition",
            &p,
            "--offset",
            "earliest",
            "--print-offset",
            "--print-key",
        ],
        b"",
    )
    .await;
    run.ok()
        .lines()
        .map(|l| {
            let mut f = l.splitn(3, '\t');
            let (o, k, v) = (f.next().unwrap(), f.next().expect("a key"), f.next().expect("a value"));
            (o.parse().expect("an offset"), k.to_owned(), v.to_owned())
        })
        .collect()
}

/// One input line: its index, key (`None` = null) and value.
#[derive(Debug, Clone)]
struct Line {
    key: Option<String>,
    value: String,
}

impl Line {
    fn text(&self) -> String {
        match &self.key {
            Some(k) => format!("{k}:{}", self.value),
            None => self.value.clone(),
        }
    }
}

/// `n` varied lines for `--key-separator :`: null keys (no colon), empty values, empty keys,
/// colons in values, non-ASCII, keys repeated so each partition holds many.
fn lines(n: usize, tag: &str) -> Vec<Line> {
    (0..n)
        .map(|i| {
            let (key, value) = match i % 10 {
                0 => (None, format!("line {i} of {tag} has no key")),
                1 => (Some(format!("solo-{i}")), String::new()),
                2 => (Some(String::new()), format!("empty key {i}")),
                3 => (Some(format!("k{}", i % 13)), format!("colons:in:the:value {i}")),
                4 => (Some(format!("k{}", i % 13)), format!("ünïcødé ✓ {i} — {tag}")),
                _ => (Some(format!("k{}", i % 13)), format!("value {i} of {tag} {}", "x".repeat(i % 50))),
            };
            Line { key, value }
        })
        .collect()
}

fn input(lines: &[Line]) -> Vec<u8> {
    lines.iter().map(|l| l.text() + "\n").collect::<String>().into_bytes()
}

/// Checks what `partitions` returned against `sent`: every line exactly once, in input order
/// within each partition, keyed lines on their murmur2 partition, offsets 0, 1, 2, ...
/// Returns the count per partition.
fn check_partitions(
    what: &str,
    sent: &[Line],
    partitions: &BTreeMap<i32, Vec<(i64, String, String)>>,
    null_key: &str,
) -> BTreeMap<i32, usize> {
    let index: HashMap<(Option<&str>, &str), usize> =
        sent.iter().enumerate().map(|(i, l)| ((l.key.as_deref(), l.value.as_str()), i)).collect();
    assert_eq!(index.len(), sent.len(), "test lines are unique");
    let mut seen = vec![false; sent.len()];
    let mut counts = BTreeMap::new();
    for (&p, messages) in partitions {
        let mut last = None;
        for (n, (offset, key, value)) in messages.iter().enumerate() {
            assert_eq!(*offset, n as i64, "{what}: offsets of partition {p} are contiguous from 0");
            let key = (key != null_key).then_some(key.as_str());
            let i = *index
                .get(&(key, value.as_str()))
                .unwrap_or_else(|| panic!("{what}: partition {p} offset {offset} holds {key:?} {value:?}, never sent"));
            assert!(!seen[i], "{what}: line {i} fetched twice");
            seen[i] = true;
            assert!(last < Some(i), "{what}: partition {p} has line {i} after line {last:?}");
            last = Some(i);
            if let Some(k) = key {
                assert_eq!(murmur2_partition(k.as_bytes(), partitions.len()) as i32, p, "{what}: key {k:?}");
            }
        }
        counts.insert(p, messages.len());
    }
    let missing: Vec<usize> = (0..sent.len()).filter(|i| !seen[*i]).collect();
    assert!(missing.is_empty(), "{what}: lines never fetched: {missing:?}");
    counts
}

/// The codecs and `required_acks` of the Produce requests of `topic` the cluster received.
fn wire(cluster: &FakeCluster, topic: &str) -> (Vec<Compression>, Vec<i16>) {
    let (mut codecs, mut acks) = (Vec::new(), Vec::new());
    for r in cluster.requests() {
        let AnyRequest::Produce(p) = &r.request else { continue };
        for t in p.topics.iter().filter(|t| t.topic == topic) {
            acks.push(p.required_acks);
            for part in &t.partitions {
                for e in part.message_set.entries() {
                    codecs.push(e.expect("a whole entry").message.compression().expect("a known codec"));
                }
            }
        }
    }
    codecs.sort_by_key(|c| *c as u8);
    codecs.dedup();
    acks.sort_unstable();
    acks.dedup();
    (codecs, acks)
}

// ---------------------------------------------------------------------------------------------
// produce and fetch
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produce_with_every_codec_and_keys_then_fetch_every_partition_back() {
    let Some(c) = cluster("cli-codecs").await else { return };
    let brokers = c.bootstrap();
    let cases = [
        (Compression::None, "none", "1"),
        (Compression::Gzip, "gzip", "-1"),
        (Compression::Snappy, "snappy", "1"),
        (Compression::Lz4, "lz4", "-1"),
    ];
    for (_, name, _) in cases {
        c.create_topic(&format!("codec-{name}"), 3, 2).await.unwrap();
    }
    let produced = cases.iter().map(|(_, name, acks)| {
        let brokers = brokers.clone();
        async move {
            let topic = format!("codec-{name}");
            let sent = lines(1000, name);
            let run = gregor(
                &[
                    "produce",
                    "--broker-list",
                    &brokers,
                    "--topic",
                    &topic,
                    "--compression",
                    name,
                    "--acks",
                    acks,
                    "--key-separator",
                    ":",
                ],
                &input(&sent),
            )
            .await;
            run.ok();
            (topic, sent, run.stderr)
        }
    });
    for (topic, sent, summary) in futures_join(produced).await {
        let mut partitions = BTreeMap::new();
        for p in 0..3 {
            partitions.insert(p, fetch_all(&brokers, &topic, p).await);
        }
        let counts = check_partitions(&topic, &sent, &partitions, "null");
        let per_partition: Vec<String> = counts.iter().map(|(p, n)| format!("partition {p}: {n}")).collect();
        assert_eq!(summary, format!("1000 messages sent to {topic} ({})\n", per_partition.join(", ")), "{topic}");
        assert!(counts.values().all(|n| *n > 0), "{topic}: every partition got lines: {counts:?}");
    }
    for (codec, name, acks) in cases {
        let (codecs, wire_acks) = wire(&c, &format!("codec-{name}"));
        assert_eq!(codecs, [codec], "{name}: the codec on the wire");
        assert_eq!(wire_acks, [acks.parse::<i16>().unwrap()], "{name}: required_acks on the wire");
    }
}

/// Runs the futures concurrently (on this task), results in order.
async fn futures_join<F: std::future::Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut set = Vec::new();
    for f in futures {
        set.push(Box::pin(f));
    }
    let mut out: Vec<Option<F::Output>> = set.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, o) in set.iter_mut().zip(out.iter_mut()) {
            if o.is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *o = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().map(|o| o.expect("ready")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_and_fetch_from_the_middle_latest_and_with_a_timeout() {
    let Some(c) = cluster("cli-offsets").await else { return };
    let b = c.bootstrap();
    let brokers = b.as_str();
    c.create_topic("o", 3, 2).await.unwrap();
    // 100 lines to partition 1, in gzip wrappers of 10: offset 45 is inside one
    let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
    let produce = [
        "produce",
        "--broker-list",
        brokers,
        "--topic",
        "o",
        "--partition",
        "1",
        "--compression",
        "gzip",
        "--property",
        "batch.num.messages=10",
        "--property",
        "queue.buffering.max.ms=0",
    ];
    let run = gregor(&produce, text.as_bytes()).await;
    assert_eq!(run.ok(), "");
    assert_eq!(run.stderr, "100 messages sent to o (partition 1: 100)\n");

    let offsets = |extra: &'static [&'static str]| {
        let mut args = vec!["offsets", "--broker-list", brokers, "--topic", "o"];
        args.extend_from_slice(extra);
        async move { gregor(&args, b"").await }
    };
    assert_eq!(offsets(&["--time", "-1"]).await.ok(), "o:0:0\no:1:100\no:2:0\n");
    assert_eq!(offsets(&["--time", "-2"]).await.ok(), "o:0:0\no:1:0\no:2:0\n");
    assert_eq!(offsets(&["--time", "latest", "--partition", "1"]).await.ok(), "o:1:100\n");
    assert_eq!(offsets(&["--time", "-1", "--partition", "1", "--max", "5"]).await.ok(), "o:1:100,0\n");
    assert_eq!(offsets(&["--time", "-1", "--partition", "2,1"]).await.ok(), "o:1:100\no:2:0\n");
    // a time before anything was written: no segment qualifies
    assert_eq!(offsets(&["--time", "1000", "--partition", "1"]).await.ok(), "o:1:\n");
    assert_eq!(offsets(&["--time", "4102444800000", "--partition", "1", "--max", "9"]).await.ok(), "o:1:100,0\n");

    let fetch = |extra: &'static [&'static str]| {
        let mut args = vec!["fetch", "--broker-list", brokers, "--topic", "o"];
        args.extend_from_slice(extra);
        async move { gregor(&args, b"").await }
    };
    let expect = |range: std::ops::Range<i32>, with_offsets: bool| -> String {
        range.map(|i| if with_offsets { format!("{i}\tline {i}\n") } else { format!("line {i}\n") }).collect()
    };
    let middle = fetch(&["--partition", "1", "--offset", "45", "--max-messages", "10", "--print-offset"]).await;
    assert_eq!(middle.ok(), expect(45..55, true));
    assert_eq!(middle.stderr, "");
    assert_eq!(fetch(&["--partition", "1", "--offset", "95"]).await.ok(), expect(95..100, false));
    assert_eq!(fetch(&["--partition", "1", "--offset", "earliest"]).await.ok(), expect(0..100, false));
    assert_eq!(fetch(&["--partition", "1", "--offset", "-2", "--max-messages", "3"]).await.ok(), expect(0..3, false));
    assert_eq!(fetch(&["--partition", "1", "--offset", "earliest", "--max-messages", "0"]).await.ok(), "");
    assert_eq!(fetch(&["--partition", "1", "--offset", "latest"]).await.ok(), "");
    assert_eq!(fetch(&["--partition", "1", "--offset", "100"]).await.ok(), "");
    assert_eq!(fetch(&["--partition", "0", "--offset", "earliest"]).await.ok(), "");
    // null keys print as null
    assert_eq!(
        fetch(&["--partition", "1", "--offset", "7", "--max-messages", "1", "--print-key"]).await.ok(),
        "null\tline 7\n"
    );

    // --timeout-ms: waits for new messages, stops after that long without one (partition 2 is
    // empty: offset 0 is its log end, and stays the start however late this fetch starts). 5 s:
    // room for the producing process to start and send on a loaded machine
    let started = Instant::now();
    let args: Vec<String> = ["fetch", "--broker-list", brokers, "--topic", "o", "--partition", "2", "--offset", "0"]
        .into_iter()
        .chain(["--timeout-ms", "5000"])
        .map(str::to_owned)
        .collect();
    let waiting = tokio::spawn(async move {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        gregor(&args, b"").await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut late = produce.to_vec();
    late[6] = "2";
    gregor(&late, b"late 1\nlate 2\n").await.ok();
    let waited = waiting.await.unwrap();
    assert_eq!(waited.ok(), "late 1\nlate 2\n");
    assert!(started.elapsed() >= Duration::from_millis(5000), "waited {:?}", started.elapsed());
    // nothing new at all: stops after the timeout
    let started = Instant::now();
    let idle = fetch(&["--partition", "0", "--offset", "latest", "--timeout-ms", "300"]).await;
    assert_eq!(idle.ok(), "");
    assert!(
        (Duration::from_millis(300)..Duration::from_secs(10)).contains(&started.elapsed()),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_streams_through_a_bounded_queue_and_output_stops_quietly_at_a_closed_pipe() {
    let Some(c) = cluster("cli-stream").await else { return };
    let brokers = c.bootstrap();
    c.create_topic("s", 1, 1).await.unwrap();
    let produce = ["produce", "--broker-list", &brokers, "--topic", "s", "--property", "queue.buffering.max.ms=50"];

    // lines reach the broker while stdin is still open
    let mut child = spawn(env!("CARGO_BIN_EXE_gregor"), &produce);
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"one\ntwo\nthree\n").await.unwrap();
    stdin.flush().await.unwrap();
    eventually("3 messages at the broker before EOF", Duration::from_secs(10), async || {
        c.offsets("s", 0).is_some_and(|(hw, _)| hw >= 3)
    })
    .await;
    stdin.write_all(b"four\nfive (no newline)").await.unwrap();
    drop(stdin);
    let out = tokio::time::timeout(LIMIT, child.wait_with_output()).await.unwrap().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "5 messages sent to s (partition 0: 5)\n");

    // Ctrl-C: reading stops, what was read is delivered and reported, exit 0
    let mut child = spawn(env!("CARGO_BIN_EXE_gregor"), &produce);
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"six\nseven\n").await.unwrap();
    stdin.flush().await.unwrap();
    eventually("7 messages at the broker", Duration::from_secs(10), async || {
        c.offsets("s", 0).is_some_and(|(hw, _)| hw >= 7)
    })
    .await;
    interrupt(&child).await;
    let out = tokio::time::timeout(LIMIT, child.wait_with_output()).await.unwrap().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "interrupted: stopped reading stdin after line 2\n2 messages sent to s (partition 0: 2)\n"
    );
    drop(stdin);

    // acks=0: nothing confirmed, and the summary says so
    let mut args = produce.to_vec();
    args.extend(["--acks", "0"]);
    let run = gregor(&args, b"eight\n").await;
    run.ok();
    assert_eq!(
        run.stderr,
        "1 message sent to s (partition 0: 1)\n  (acks=0: sent means written to the socket; the broker confirms nothing)\n"
    );
    assert_eq!(wire(&c, "s").1, [0, 1], "required_acks on the wire");
    eventually("the acks=0 message at the broker", Duration::from_secs(10), async || {
        c.offsets("s", 0).is_some_and(|(hw, _)| hw >= 8)
    })
    .await;

    // empty input: nothing to send, success
    let run = gregor(&produce, b"").await;
    assert_eq!(run.ok(), "");
    assert_eq!(run.stderr, "0 messages sent to s\n");

    // 30,000 lines through a queue of 500: reading waits for room, nothing is lost
    const N: usize = 30_000;
    let big: String = (0..N).map(|i| format!("bulk {i:06}\n")).collect();
    let mut args = produce.to_vec();
    args.extend(["--property", "queue.buffering.max.messages=500", "--property", "batch.num.messages=200"]);
    let run = gregor(&args, big.as_bytes()).await;
    run.ok();
    assert_eq!(run.stderr, format!("{N} messages sent to s (partition 0: {N})\n"));
    assert_eq!(c.offsets("s", 0).unwrap().0, (N + 8) as i64);

    // a reader that stops after one line: fetch ends quietly, exit 0
    let mut child = spawn(
        env!("CARGO_BIN_EXE_gregor"),
        &["fetch", "--broker-list", &brokers, "--topic", "s", "--partition", "0", "--offset", "earliest"],
    );
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).await.unwrap();
    assert_eq!(first, "one\n");
    drop(stdout);
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).await.unwrap();
    let status = tokio::time::timeout(LIMIT, child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{status}: {stderr}");
    assert_eq!(stderr, "");

    // Ctrl-C ends a fetch waiting for more (--timeout-ms) at once, output flushed, exit 0
    // (stdout is not read past two lines: the fetch also waits on a full pipe)
    let mut child = spawn(
        env!("CARGO_BIN_EXE_gregor"),
        &[
            "fetch",
            "--broker-list",
            &brokers,
            "--topic",
            "s",
            "--partition",
            "0",
            "--offset",
            "6",
            "--timeout-ms",
            "60000",
        ],
    );
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(stdout.next_line().await.unwrap().as_deref(), Some("seven"));
    assert_eq!(stdout.next_line().await.unwrap().as_deref(), Some("eight"));
    let started = Instant::now();
    interrupt(&child).await;
    let status = tokio::time::timeout(LIMIT, child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{status}");
    assert!(started.elapsed() < Duration::from_secs(10), "stopped after {:?}", started.elapsed());
}

/// Sends SIGINT (Ctrl-C) to `child`.
async fn interrupt(child: &Child) {
    let pid = child.id().expect("still running").to_string();
    let status = Command::new("kill").args(["-INT", &pid]).status().await.expect("kill runs");
    assert!(status.success(), "kill -INT {pid}");
}

// ---------------------------------------------------------------------------------------------
// errors
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_topics_partitions_and_offsets_fail_with_the_reason() {
    let Some(c) = cluster("cli-errors").await else { return };
    let b = c.bootstrap();
    let brokers = b.as_str();
    c.create_topic("e", 3, 1).await.unwrap();
    gregor(&["produce", "--broker-list", brokers, "--topic", "e", "--partition", "0"], b"a\nb\n").await.ok();

    let fetch = |topic: &'static str, partition: &'static str, offset: &'static str| async move {
        gregor(
            &["fetch", "--broker-list", brokers, "--topic", topic, "--partition", partition, "--offset", offset],
            b"",
        )
        .await
    };
    let run = fetch("nope", "0", "0").await;
    run.fails(1, "error: could not fetch nope/0 at offset 0\n  caused by: topic nope does not exist\n");
    assert_eq!(run.stdout, "");
    fetch("nope", "0", "earliest").await.fails(1, "topic nope does not exist");
    fetch("e", "7", "0").await.fails(1, "topic e has no partition 7 (it has 3)");
    fetch("e", "0", "5000").await.fails(1, "offset 5000 is out of range for e/0");

    let offsets = |topic: &'static str, extra: &'static [&'static str]| async move {
        let mut args = vec!["offsets", "--broker-list", brokers, "--topic", topic, "--time", "-1"];
        args.extend_from_slice(extra);
        gregor(&args, b"").await
    };
    offsets("nope", &[]).await.fails(1, "topic nope does not exist");
    let run = offsets("e", &["--partition", "0,5"]).await;
    run.fails(1, "could not look up the offsets of e/5\n  caused by: topic e has no partition 5 (it has 3)");
    assert_eq!(run.stdout, "e:0:2\n", "the partitions that answered are printed");

    // undeliverable messages: each reported with its line, exit 1
    let run = gregor(&["produce", "--broker-list", brokers, "--topic", "e", "--partition", "9"], b"x\ny\nz\n").await;
    run.fails(1, "0 of 3 messages sent to e\n3 failed:\n  3 (lines 1, 2, 3): ");
    assert!(run.stderr.contains("topic e has no partition 9 (it has 3)"), "{}", run.stderr);
    assert!(run.stderr.ends_with("error: 3 of 3 messages were not delivered\n"), "{}", run.stderr);
    let run = gregor(&["produce", "--broker-list", brokers, "--topic", "nope"], b"x\n").await;
    run.fails(1, "no partition of topic nope is available");
    assert!(run.stderr.starts_with("0 of 1 message sent to nope\n1 failed:\n  1 (line 1): "), "{}", run.stderr);
    assert!(run.stderr.ends_with("error: 1 of 1 message was not delivered\n"), "{}", run.stderr);

    // bytes that are not UTF-8 go out unchanged and print lossily
    gregor(&["produce", "--broker-list", brokers, "--topic", "e", "--partition", "2"], b"bad \xff byte\r\n\n")
        .await
        .ok();
    let run =
        gregor(&["fetch", "--broker-list", brokers, "--topic", "e", "--partition", "2", "--offset", "0"], b"").await;
    assert_eq!(run.ok(), "bad \u{fffd} byte\r\n\n");

    // no broker there at all
    let started = Instant::now();
    let run = gregor(&["offsets", "--broker-list", "127.0.0.1:1", "--topic", "e", "--time", "-1"], b"").await;
    run.fails(1, "error: could not list the partitions of e\n  caused by: ");
    assert!(started.elapsed() < Duration::from_secs(20), "gave up in {:?}", started.elapsed());
}

#[tokio::test]
async fn bad_flags_exit_2_and_help_documents_every_flag() {
    let usage = [
        (&["produce", "--topic", "t"][..], "--broker-list <HOST:PORT,...>"),
        (&["produce", "--broker-list", "b:1", "--topic", "t", "--acks", "2"], "2 is not in -1..=1"),
        (&["produce", "--broker-list", "b:1", "--topic", "t", "--compression", "brotli"], "invalid value 'brotli'"),
        (&["produce", "--broker-list", "b:1", "--topic", "t", "--bogus"], "unexpected argument '--bogus'"),
        (&["produce", "--broker-list", "b:1", "--topic", "t", "--property", "nothing"], "expected KEY=VALUE"),
        (&["produce", "--broker-list", "b:1", "--topic", "t", "--key-separator", ""], "--key-separator"),
        (&["produce", "--broker-list", "b:1", "--topic", ""], "--topic"),
        (&["produce", "--broker-list", "b:1", "--topic", "t", "--partition", "-1"], "--partition"),
        (&["fetch", "--broker-list", "b:1", "--topic", "t", "--partition", "0"], "--offset"),
        (&["fetch", "--broker-list", "b:1", "--topic", "t", "--partition", "0", "--offset", "soon"], "earliest (-2)"),
        (&["fetch", "--broker-list", "b:1", "--topic", "t", "--partition", "x", "--offset", "0"], "--partition"),
        (&["offsets", "--broker-list", "b:1", "--topic", "t", "--time", "yesterday"], "milliseconds since the epoch"),
        (&["offsets", "--broker-list", "b:1", "--topic", "t", "--time", "-1", "--max", "0"], "--max"),
        (&["bogus"], "unrecognized subcommand 'bogus'"),
        (&[], "Usage: gregor <COMMAND>"),
    ];
    for (args, needle) in usage {
        gregor(args, b"").await.fails(2, needle);
    }
    // invalid producer and consumer properties are usage errors too
    gregor(&["produce", "--broker-list", "b:1", "--topic", "t", "--property", "no.such.thing=1"], b"")
        .await
        .fails(2, "error: invalid producer settings\n  caused by: unknown producer property \"no.such.thing\"");
    gregor(&["produce", "--broker-list", "b:1", "--topic", "t", "--property", "batch.num.messages=many"], b"")
        .await
        .fails(2, "batch.num.messages");
    gregor(&["produce", "--broker-list", "nocolon", "--topic", "t"], b"").await.fails(2, "metadata.broker.list");
    gregor(
        &["fetch", "--broker-list", "b:1", "--topic", "t", "--partition", "0", "--offset", "0", "--property", "x=1"],
        b"",
    )
    .await
    .fails(2, "error: invalid consumer settings");

    let help = gregor(&["--help"], b"").await;
    for command in ["produce", "fetch", "offsets"] {
        assert!(help.ok().contains(command), "{command} in --help");
    }
    let flags: [(&str, &[&str]); 3] = [
        (
            "produce",
            &["--broker-list", "--topic", "--acks", "--compression", "--key-separator", "--partition", "--property"],
        ),
        (
            "fetch",
            &[
                "--broker-list",
                "--topic",
                "--partition",
                "--offset",
                "--max-messages",
                "--print-offset",
                "--print-key",
                "--timeout-ms",
                "--property",
            ],
        ),
        ("offsets", &["--broker-list", "--topic", "--partition", "--time", "--max", "--property"]),
    ];
    for (command, flags) in flags {
        let help = gregor(&[command, "--help"], b"").await;
        for flag in flags {
            let out = help.ok();
            let documented = [" ", "\n"].iter().any(|end| out.contains(&format!("      {flag}{end}")));
            assert!(documented, "gregor {command} --help documents {flag}: {out}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// kcat
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcat_reads_what_gregor_produces_and_gregor_fetches_what_kcat_produces() {
    let Some(kcat) = kcat_or_skip() else { return };
    let Some(c) = cluster("cli-kcat").await else { return };
    let brokers = c.bootstrap();
    c.create_topic("to-kcat", 3, 2).await.unwrap();
    c.create_topic("from-kcat", 3, 2).await.unwrap();
    let kcat_args = |args: &[&str]| -> Vec<String> {
        ["-b", brokers.as_str()].iter().chain(&KCAT_0_8_2).chain(args).map(|s| s.to_string()).collect()
    };

    // gregor -> kcat: snappy, keyed (kcat prints a null key as an empty one: every line keyed)
    let sent: Vec<Line> =
        lines(600, "gregor").into_iter().filter(|l| l.key.as_deref().is_some_and(|k| !k.is_empty())).collect();
    let run = gregor(
        &[
            "produce",
            "--broker-list",
            &brokers,
            "--topic",
            "to-kcat",
            "--compression",
            "snappy",
            "--key-separator",
            ":",
        ],
        &input(&sent),
    )
    .await;
    run.ok();
    assert_eq!(wire(&c, "to-kcat").0, [Compression::Snappy]);
    let args = kcat_args(&["-C", "-t", "to-kcat", "-e", "-o", "beginning", "-f", "%p\t%o\t%k\t%s\n"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let read = run_program(&kcat, &args, b"").await;
    let mut partitions: BTreeMap<i32, Vec<(i64, String, String)>> = (0..3).map(|p| (p, Vec::new())).collect();
    for line in read.ok().lines() {
        let f: Vec<&str> = line.splitn(4, '\t').collect();
        assert_eq!(f.len(), 4, "kcat line {line:?}");
        partitions.get_mut(&f[0].parse().unwrap()).unwrap().push((f[1].parse().unwrap(), f[2].into(), f[3].into()));
    }
    check_partitions("kcat reading gregor's snappy", &sent, &partitions, "\u{0}no null keys");

    // kcat -> gregor: snappy, keyed, kcat's own partitioner
    let sent: Vec<Line> =
        (0..500).map(|i| Line { key: Some(format!("kk{}", i % 11)), value: format!("from kcat {i} ✓") }).collect();
    let args = kcat_args(&["-P", "-t", "from-kcat", "-K:", "-z", "snappy", "-X", "topic.request.required.acks=-1"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run_program(&kcat, &args, &input(&sent)).await.ok();
    assert_eq!(wire(&c, "from-kcat").0, [Compression::Snappy]);
    let mut fetched = Vec::new();
    for p in 0..3 {
        let messages = fetch_all(&brokers, "from-kcat", p).await;
        let mut last = None;
        for (n, (offset, key, value)) in messages.iter().enumerate() {
            assert_eq!(*offset, n as i64, "from-kcat/{p}: contiguous offsets");
            let i = sent
                .iter()
                .position(|l| l.key.as_deref() == Some(key.as_str()) && l.value == *value)
                .unwrap_or_else(|| panic!("from-kcat/{p}: {key:?} {value:?} never sent"));
            assert!(last < Some(i), "from-kcat/{p}: line {i} after {last:?}");
            last = Some(i);
            fetched.push(i);
        }
    }
    fetched.sort_unstable();
    assert_eq!(fetched, (0..sent.len()).collect::<Vec<_>>(), "every kcat line fetched once");
}

/// `gregor api-versions` against the 0.8.2 fake: every broker closes the connection on
/// ApiVersions, so each is listed with the fallback release's versions, as the clients use them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_versions_lists_each_broker_and_what_gregor_sends_it() {
    let Some(c) = cluster("cli-api-versions").await else { return };
    let b = c.bootstrap();
    let run = gregor(&["api-versions", "--bootstrap-server", &b], b"").await;
    let out = run.ok();
    let blocks: Vec<&str> = out.split_inclusive(")\n").collect();
    let mut brokers = c.broker_addrs();
    brokers.sort_unstable();
    assert_eq!(blocks.len(), brokers.len(), "{out}");
    for (block, (id, addr)) in blocks.iter().zip(brokers) {
        let head = format!("{addr} (id: {id}) -> fallback 0.8.2 (no ApiVersions) (\n");
        assert!(block.starts_with(&head), "{block}");
        assert!(block.contains("\tProduce(0): 0 to 0 [usable: 0],\n"), "{block}");
        assert!(block.contains("\tOffsetCommit(8): 0 to 1 [usable: 1],\n"), "{block}");
        assert!(block.contains("\tFindCoordinator(10): 0 to 0 [usable: 0],\n"), "{block}");
    }
}

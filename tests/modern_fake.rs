//! The FakeCluster's modern mode (KRaft-style, no ZooKeeper) against clients gregor did not
//! write — confluent-kafka (PyPI; librdkafka 2.16) and the latest kafka-python (PyPI) — and
//! against gregor, over SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) on plaintext and on TLS:
//! what one client writes the others read, and a wrong password is refused at once with
//! Kafka's error. Both peers come from the peers' virtualenv (`gregor_testkit::peers`);
//! missing, they fail the test.

use std::time::Duration;

use gregor::producer::{AsyncProducer, ProducerConfig, Record};
use gregor::serde::StringEncoder;
use gregor::simple_consumer::{SimpleConsumer, SimpleConsumerConfig};
use gregor_testkit::peers;
use gregor_testkit::sasl::Mechanism;
use gregor_testkit::tls::TestPki;
use gregor_testkit::FakeCluster;

const USER: &str = "alice";
const PASSWORD: &str = "wonderland";

/// argv: bootstrap, topic, security protocol, mechanism, user, password, CA file ('-' none).
/// confluent-kafka creates the topic (2 partitions) and writes 10 records with keys, headers and
/// timestamps, idempotently, two in each codec (none, gzip, snappy, lz4, zstd).
const CK_PRODUCE: &str = r#"
import sys
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
bootstrap, topic, protocol, mechanism, user, password, ca = sys.argv[1:8]
conf = {'bootstrap.servers': bootstrap, 'security.protocol': protocol, 'sasl.mechanism': mechanism,
        'sasl.username': user, 'sasl.password': password}
if ca != '-':
    conf['ssl.ca.location'] = ca
admin = AdminClient(conf)
admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
for n, codec in enumerate(['none', 'gzip', 'snappy', 'lz4', 'zstd']):
    p = Producer(dict(conf, **{'enable.idempotence': True, 'compression.type': codec, 'linger.ms': 5}))
    for i in (2 * n, 2 * n + 1):
        p.produce(topic, key=b'k%d' % i, value=b'ck-%d' % i, partition=i % 2, headers=[('from', b'confluent')],
                  timestamp=1700000000000 + i)
    assert p.flush(30) == 0
"#;

/// argv: bootstrap, topic, security protocol, mechanism, user, password, CA file ('-' none),
/// count. kafka-python reads both partitions from the start and prints `partition offset value
/// headers timestamp` lines, sorted.
const KP_CONSUME: &str = r#"
import sys
from kafka import KafkaConsumer, TopicPartition
bootstrap, topic, protocol, mechanism, user, password, ca, want = sys.argv[1:9]
conf = dict(bootstrap_servers=bootstrap, security_protocol=protocol, sasl_mechanism=mechanism,
            sasl_plain_username=user, sasl_plain_password=password, enable_auto_commit=False,
            consumer_timeout_ms=20000)
if ca != '-':
    conf['ssl_cafile'] = ca
c = KafkaConsumer(**conf)
parts = [TopicPartition(topic, p) for p in (0, 1)]
c.assign(parts)
c.seek_to_beginning(*parts)
out = []
for m in c:
    out.append('%d %d %s %s %d' % (m.partition, m.offset, m.value.decode(), ','.join(k for k, v in m.headers),
                                   m.timestamp))
    if len(out) == int(want):
        break
c.close()
print('\n'.join(sorted(out)))
"#;

/// argv: bootstrap, protocol, mechanism, user, password, CA file. confluent-kafka asks for
/// metadata with these credentials and prints the error it gets.
const CK_METADATA: &str = r#"
import sys
from confluent_kafka.admin import AdminClient
bootstrap, protocol, mechanism, user, password, ca = sys.argv[1:7]
conf = {'bootstrap.servers': bootstrap, 'security.protocol': protocol, 'sasl.mechanism': mechanism,
        'sasl.username': user, 'sasl.password': password}
if ca != '-':
    conf['ssl.ca.location'] = ca
try:
    admin = AdminClient(conf)
    admin.list_topics(timeout=10)
    print('ok')
except Exception as e:
    print('failed: %s' % e)
"#;

/// gregor's properties for this security setup.
fn security<'a>(
    protocol: &'a str,
    mechanism: &'a str,
    password: &'a str,
    ca_pem: Option<&'a str>,
) -> Vec<(&'a str, &'a str)> {
    let mut props = vec![
        ("security.protocol", protocol),
        ("sasl.mechanism", mechanism),
        ("sasl.username", USER),
        ("sasl.password", password),
    ];
    if let Some(ca) = ca_pem {
        props.push(("ssl.ca.pem", ca));
    }
    props
}

/// Every record of `topic` (both partitions) read by gregor's simple consumer with `props`, as
/// `partition offset value headers timestamp` lines, sorted.
async fn gregor_reads(bootstrap: &str, topic: &str, props: &[(&str, &str)]) -> Vec<String> {
    let mut all = vec![("metadata.broker.list", bootstrap)];
    all.extend_from_slice(props);
    let simple = SimpleConsumer::new(SimpleConsumerConfig::from_properties(all).expect("consumer properties")).unwrap();
    let mut read = Vec::new();
    for p in [0, 1] {
        let mut offset = 0;
        loop {
            let data = simple.fetch_partition(topic, p, offset).await.expect("fetch");
            for m in &data.messages {
                let headers: Vec<String> = m.headers.iter().map(|h| h.key_str().unwrap().to_owned()).collect();
                let value = String::from_utf8_lossy(m.value.as_deref().unwrap()).into_owned();
                read.push(format!("{p} {} {value} {} {}", m.offset, headers.join(","), m.timestamp));
            }
            offset = data.next_offset;
            if offset >= data.high_watermark {
                break;
            }
        }
    }
    simple.close().await;
    read.sort();
    read
}

/// gregor's producer writes `n` records with a header to `topic` with `props`.
async fn gregor_writes(bootstrap: &str, topic: &str, n: usize, props: &[(&str, &str)]) {
    let mut all =
        vec![("bootstrap.servers", bootstrap), ("acks", "all"), ("linger.ms", "5"), ("enable.idempotence", "true")];
    all.extend_from_slice(props);
    let config = ProducerConfig::from_properties(all).expect("producer properties");
    let producer: AsyncProducer<String, String> =
        AsyncProducer::new(config, StringEncoder::new(), StringEncoder::new()).unwrap();
    let mut pending = Vec::new();
    for i in 0..n {
        let record = Record::new(topic.to_owned(), format!("gregor-{i}"))
            .with_key(format!("g{i}"))
            .with_header("from", "gregor");
        pending.push(producer.send(record).await.unwrap());
    }
    for delivery in pending {
        tokio::time::timeout(Duration::from_secs(30), delivery).await.expect("a result").expect("delivered");
    }
    assert!(producer.close(Duration::from_secs(10)).await.is_ok());
}

/// One round for a cluster and a security setup: confluent-kafka writes, kafka-python and gregor
/// read it; gregor writes, kafka-python reads; a wrong password fails at once in both.
async fn round(
    cluster: &FakeCluster,
    python: &std::path::Path,
    protocol: &str,
    mechanism: Mechanism,
    ca: Option<(&str, &str)>,
) {
    let bootstrap = cluster.bootstrap();
    let mech = mechanism.name();
    let topic = format!("sec-{}-{}", protocol.to_lowercase(), mech.to_lowercase());
    let ca_file = ca.map_or("-", |(file, _)| file);
    let ca_pem = ca.map(|(_, pem)| pem);
    let what = format!("{protocol} {mech}");
    peers::python_ok(
        python,
        &format!("{what}: confluent-kafka produce"),
        CK_PRODUCE,
        &[&bootstrap, &topic, protocol, mech, USER, PASSWORD, ca_file],
        Duration::from_secs(90),
    )
    .await;
    let want: Vec<String> = {
        let mut w: Vec<String> =
            (0..10).map(|i| format!("{} {} ck-{i} from {}", i % 2, i / 2, 1_700_000_000_000i64 + i)).collect();
        w.sort();
        w
    };
    let kp = peers::python_ok(
        python,
        &format!("{what}: kafka-python consume"),
        KP_CONSUME,
        &[&bootstrap, &topic, protocol, mech, USER, PASSWORD, ca_file, "10"],
        Duration::from_secs(90),
    )
    .await;
    assert_eq!(kp.lines().collect::<Vec<_>>(), want, "{what}: kafka-python reads what confluent-kafka wrote");
    let props = security(protocol, mech, PASSWORD, ca_pem);
    assert_eq!(gregor_reads(&bootstrap, &topic, &props).await, want, "{what}: gregor reads what confluent-kafka wrote");

    gregor_writes(&bootstrap, &topic, 10, &props).await;
    let kp = peers::python_ok(
        python,
        &format!("{what}: kafka-python consume"),
        KP_CONSUME,
        &[&bootstrap, &topic, protocol, mech, USER, PASSWORD, ca_file, "20"],
        Duration::from_secs(90),
    )
    .await;
    let ours: Vec<&str> = kp.lines().filter(|l| l.contains(" gregor-")).collect();
    assert_eq!(ours.len(), 10, "{what}: kafka-python reads what gregor wrote: {kp}");
    assert!(ours.iter().all(|l| l.contains(" from ")), "{what}: with its header: {kp}");

    // a wrong password: Kafka's error, at once, in both clients
    let out = peers::python_ok(
        python,
        &format!("{what}: confluent-kafka wrong password"),
        CK_METADATA,
        &[&bootstrap, protocol, mech, USER, "not-the-password", ca_file],
        Duration::from_secs(60),
    )
    .await;
    assert!(out.starts_with("failed"), "{what}: {out}");
    let accepted_before = cluster.connections_accepted();
    let started = std::time::Instant::now();
    let bad = security(protocol, mech, "not-the-password", ca_pem);
    let mut all = vec![("metadata.broker.list", bootstrap.as_str())];
    all.extend_from_slice(&bad);
    let simple = SimpleConsumer::new(SimpleConsumerConfig::from_properties(all).unwrap()).unwrap();
    let err = simple.partitions(&topic).await.expect_err("a wrong password is refused");
    // the error and its causes, as an application's log shows them
    let mut err_chain = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(cause) = source {
        err_chain.push_str(": ");
        err_chain.push_str(&cause.to_string());
        source = cause.source();
    }
    let err = err_chain;
    simple.close().await;
    assert!(err.contains("Authentication failed") || err.contains("authentication"), "{what}: {err}");
    assert!(!err.contains("not-the-password"), "{what}: the password is not shown: {err}");
    assert!(started.elapsed() < Duration::from_secs(20), "{what}: refused at once, not after retries");
    let attempts = cluster.connections_accepted() - accepted_before;
    assert!(attempts <= 4, "{what}: no reconnect storm ({attempts} connections)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_and_gregor_talk_sasl_plaintext_to_the_modern_fake() {
    let Some(python) = peers::python_or_skip() else { return };
    let mechanisms = [Mechanism::Plain, Mechanism::ScramSha256, Mechanism::ScramSha512];
    let cluster = FakeCluster::modern().brokers(2).sasl(&mechanisms, [(USER, PASSWORD)]).start().await.unwrap();
    for mechanism in mechanisms {
        round(&cluster, &python, "SASL_PLAINTEXT", mechanism, None).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_and_gregor_talk_sasl_over_tls_to_the_modern_fake() {
    let Some(python) = peers::python_or_skip() else { return };
    let pki = TestPki::new("modern");
    let dir = std::env::temp_dir().join(format!("gregor-modern-fake-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = pki.write(&dir).unwrap();
    let ca_file = files.ca.to_str().unwrap().to_owned();
    let ca_pem = pki.ca_pem();
    let cluster = FakeCluster::modern()
        .brokers(2)
        .tls(pki.server_tls().unwrap())
        .sasl(&[Mechanism::ScramSha512], [(USER, PASSWORD)])
        .start()
        .await
        .unwrap();
    round(&cluster, &python, "SASL_SSL", Mechanism::ScramSha512, Some((&ca_file, &ca_pem))).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// argv: bootstrap, topic, group, count, seconds. A confluent-kafka consumer of `group`
/// subscribed to `topic` reads until `count` records or the time is up (committing as it goes),
/// and prints
/// `partition offset value` lines, then `assigned p,p,...` for each assignment it was given.
const CK_GROUP: &str = r#"
import sys, time
from confluent_kafka import Consumer
bootstrap, topic, group, want, seconds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
assigned = []
def on_assign(c, parts):
    assigned.append(','.join(str(p) for p in sorted(p.partition for p in parts)))
c = Consumer({'bootstrap.servers': bootstrap, 'group.id': group, 'auto.offset.reset': 'earliest',
              'enable.auto.commit': True, 'auto.commit.interval.ms': 200,
              'session.timeout.ms': 6000, 'heartbeat.interval.ms': 500})
c.subscribe([topic], on_assign=on_assign)
got, deadline = 0, time.time() + seconds
while got < want and time.time() < deadline:
    m = c.poll(0.2)
    if m is None or m.error():
        continue
    print('%d %d %s' % (m.partition(), m.offset(), m.value().decode()), flush=True)
    got += 1
# auto-commit commits what was read every 200 ms and once more on close (a commit caught by a
# rebalance as the other member leaves is simply made again by the next one)
c.close()
for a in assigned:
    print('assigned ' + a)
"#;

/// argv: bootstrap, topic, group, count. A kafka-python consumer of `group` reads `count`
/// records from its committed offsets on and prints `partition offset value` lines.
const KP_GROUP: &str = r#"
import sys
from kafka import KafkaConsumer
bootstrap, topic, group, want = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset='earliest',
                  enable_auto_commit=False, consumer_timeout_ms=20000)
got = 0
for m in c:
    print('%d %d %s' % (m.partition, m.offset, m.value.decode()))
    got += 1
    if got == want:
        break
c.commit()
c.close()
"#;

/// Consumer groups coordinated by the modern fake: two librdkafka consumers of one group split
/// the topic's partitions between them (a rebalance when the second joins) and read every
/// record once; their committed offsets carry over to a kafka-python member of the same group,
/// which reads only what was written after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_share_a_group_coordinated_by_the_modern_fake() {
    let Some(python) = peers::python_or_skip() else { return };
    let cluster = FakeCluster::modern().brokers(3).start().await.unwrap();
    let bootstrap = cluster.bootstrap();
    cluster.create_topic("grouped", 4, 2).await.unwrap();

    // two members at once: each ends with two partitions, and between them every record, written
    // once both are in the group (librdkafka rejoins within a heartbeat of the second's join)
    let args = [bootstrap.as_str(), "grouped", "g1", "40", "15"];
    let write = async {
        tokio::time::sleep(Duration::from_secs(5)).await;
        gregor_writes(&bootstrap, "grouped", 40, &[]).await;
    };
    let (a, b, ()) = tokio::join!(
        peers::run_python(&python, CK_GROUP, &args, Duration::from_secs(60)),
        peers::run_python(&python, CK_GROUP, &args, Duration::from_secs(60)),
        write,
    );
    let mut read = Vec::new();
    let mut assignments = Vec::new();
    for run in [a, b] {
        let out = String::from_utf8_lossy(&run.stdout).into_owned();
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
        let mut mine = Vec::new();
        for line in out.lines() {
            match line.strip_prefix("assigned ") {
                Some(parts) => mine.push(parts.to_owned()),
                None => read.push(line.to_owned()),
            }
        }
        assignments.push(mine);
    }
    read.sort();
    read.dedup();
    assert_eq!(read.len(), 40, "every record between the two members: {read:?}");
    // at some point each member held half the partitions, the other half the other's (the
    // first alone had all four; the last to leave ends with all four again)
    let halves = |a: &str, b: &str| {
        let mut both: Vec<&str> = a.split(',').chain(b.split(',')).collect();
        both.sort_unstable();
        a.split(',').count() == 2 && both == ["0", "1", "2", "3"]
    };
    let split = assignments[0].iter().any(|a| assignments[1].iter().any(|b| halves(a, b)));
    assert!(split, "the partitions split between the members: {assignments:?}");

    // their commits carry over to a member written by someone else
    gregor_writes(&bootstrap, "grouped", 8, &[]).await;
    let out = peers::python_ok(
        &python,
        "kafka-python group member",
        KP_GROUP,
        &[&bootstrap, "grouped", "g1", "8"],
        Duration::from_secs(60),
    )
    .await;
    let mut later: Vec<&str> = out.lines().collect();
    later.sort_unstable();
    assert_eq!(later.len(), 8, "{out}");
    let earlier: std::collections::HashSet<(String, String)> = read
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f[0].to_owned(), f[1].to_owned())
        })
        .collect();
    for line in &later {
        let f: Vec<&str> = line.split(' ').collect();
        assert!(!earlier.contains(&(f[0].to_owned(), f[1].to_owned())), "only what came after the commits: {line}");
    }
}

//! gregor and the latest kafka-python (3.0.12, PyPI) through tansu, a broker neither of them
//! wrote: what kafka-python writes (every codec, headers, timestamps) gregor's simple consumer
//! reads, and what gregor's producer writes kafka-python reads. Both peers come from the peers'
//! virtualenv (`gregor_testkit::peers`); missing, they fail the test.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use gregor::producer::{AsyncProducer, PartitionerKind, ProducerConfig, Record};
use gregor::protocol::frame::ApiKey;
use gregor::protocol::record::TimestampType;
use gregor::protocol::Compression;
use gregor::serde::BytesEncoder;
use gregor::simple_consumer::{SimpleConsumer, SimpleConsumerConfig};
use gregor_testkit::peers::{self, RequestTap, Tansu};

/// argv: bootstrap, then codec names. Per codec: topic `kp-<codec>` (1 partition), 4 records in
/// one flush: keys `k<i>`, values `<codec>/<i>`, headers `n=<i>` and `from=kafka-python`,
/// timestamps 1600000000000 + i; then one more record alone (tansu's log end is its last
/// batch's base offset + 1). Prints nothing.
const KP_PRODUCE: &str = r#"
import sys
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
bootstrap, codecs = sys.argv[1], sys.argv[2:]
admin = KafkaAdminClient(bootstrap_servers=bootstrap)
admin.create_topics([NewTopic('kp-' + c, 1, 1) for c in codecs])
admin.close()
for c in codecs:
    p = KafkaProducer(bootstrap_servers=bootstrap, compression_type=None if c == 'none' else c, linger_ms=20)
    for i in range(5):
        p.send('kp-' + c, key=b'k%d' % i, value=('%s/%d' % (c, i)).encode(),
               headers=[('n', str(i).encode()), ('from', b'kafka-python')], timestamp_ms=1600000000000 + i)
        if i >= 3:
            p.flush()
    p.close()
"#;

/// argv: bootstrap, topic, count. Reads the topic's partitions 0 and 1 from the beginning and
/// prints `partition offset key value timestamp_type timestamp` lines.
const KP_CONSUME: &str = r#"
import sys
from kafka import KafkaConsumer, TopicPartition
bootstrap, topic, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=20000)
parts = [TopicPartition(topic, p) for p in (0, 1)]
c.assign(parts)
c.seek_to_beginning(*parts)
got = 0
for m in c:
    key = m.key.decode() if m.key is not None else '-'
    print('%d\t%d\t%s\t%s\t%d\t%d' % (m.partition, m.offset, key, m.value.decode(), m.timestamp_type, m.timestamp))
    got += 1
    if got == want:
        break
c.close()
if got < want:
    raise SystemExit('read %d of %d records' % (got, want))
"#;

/// argv: bootstrap, partitions, topics. Creates the topics with that many partitions each.
const CREATE: &str = r"
import sys
from kafka.admin import KafkaAdminClient, NewTopic
a = KafkaAdminClient(bootstrap_servers=sys.argv[1])
a.create_topics([NewTopic(t, int(sys.argv[2]), 1) for t in sys.argv[3:]])
a.close()
";

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_python_and_gregor_read_each_other_through_tansu() {
    let (Some(tansu), Some(python)) = (peers::tansu_or_skip(), peers::python_or_skip()) else { return };
    let broker = Tansu::start(&tansu).await;
    read_each_other(broker.bootstrap(), &python).await;
}

/// The same through the FakeCluster's modern mode (3 brokers, no ZooKeeper).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_python_and_gregor_read_each_other_through_the_modern_fake() {
    let Some(python) = peers::python_or_skip() else { return };
    let cluster = gregor_testkit::FakeCluster::modern().brokers(3).start().await.unwrap();
    read_each_other(cluster.bootstrap(), &python).await;
}

/// kafka-python writes every codec (keys, headers, timestamps) and gregor's simple consumer
/// reads it exactly; gregor's producer writes every codec kafka-python reads, where the
/// delivery results said.
async fn read_each_other(bootstrap: String, python: &std::path::Path) {
    let python = python.to_owned();

    // kafka-python writes, gregor reads
    let codecs = ["none", "gzip", "snappy", "lz4", "zstd"];
    let mut args = vec![bootstrap.as_str()];
    args.extend(codecs);
    peers::python_ok(&python, "kafka-python produce", KP_PRODUCE, &args, Duration::from_secs(120)).await;
    let consumer =
        SimpleConsumer::new(SimpleConsumerConfig::builder().metadata_broker_list(bootstrap.clone()).build().unwrap())
            .unwrap();
    for codec in codecs {
        let topic = format!("kp-{codec}");
        let data = consumer.fetch_partition(&topic, 0, 0).await.unwrap();
        let mut got = data.messages.clone();
        if got.len() < 5 {
            // the last record is a batch of its own: a second fetch if the first stopped short
            got.extend(consumer.fetch_partition(&topic, 0, data.next_offset).await.unwrap().messages);
        }
        assert_eq!(got.len(), 5, "{topic}: {got:?}");
        for (i, m) in got.iter().enumerate() {
            assert_eq!(m.offset, i as i64, "{topic}");
            assert_eq!(m.key.as_deref(), Some(format!("k{i}").as_bytes()), "{topic}");
            assert_eq!(m.value.as_deref(), Some(format!("{codec}/{i}").as_bytes()), "{topic}");
            assert_eq!((m.timestamp, m.timestamp_type), (1_600_000_000_000 + i as i64, TimestampType::CreateTime));
            let headers: Vec<(String, Vec<u8>)> = m
                .headers
                .iter()
                .map(|h| (h.key_str().unwrap().to_owned(), h.value.as_deref().unwrap_or_default().to_vec()))
                .collect();
            let want =
                vec![("n".to_owned(), i.to_string().into_bytes()), ("from".to_owned(), b"kafka-python".to_vec())];
            assert_eq!(headers, want, "{topic}");
        }
    }
    consumer.close().await;

    // gregor writes, kafka-python reads
    let topics = [bootstrap.as_str(), "2", "gk-none", "gk-gzip", "gk-snappy", "gk-lz4"];
    peers::python_ok(&python, "kafka-python create", CREATE, &topics, Duration::from_secs(60)).await;
    for (name, codec) in [
        ("none", Compression::None),
        ("gzip", Compression::Gzip),
        ("snappy", Compression::Snappy),
        ("lz4", Compression::Lz4),
    ] {
        let topic = format!("gk-{name}");
        let config = ProducerConfig::builder()
            .metadata_broker_list(bootstrap.clone())
            .request_required_acks(1)
            .compression_codec(codec)
            .batch_num_messages(25)
            .queue_buffering_max(Duration::from_millis(5))
            .partitioner(PartitionerKind::RoundRobin)
            .build()
            .unwrap();
        let producer: AsyncProducer<Vec<u8>, Vec<u8>> = AsyncProducer::new(config, BytesEncoder, BytesEncoder).unwrap();
        let started = now_ms();
        let mut pending = Vec::new();
        for i in 0..60 {
            let value = format!("{name}:{i}");
            let record = Record::new(topic.clone(), value.clone().into_bytes()).with_key(format!("g{i}").into_bytes());
            pending.push((format!("g{i}"), value, producer.send(record).await.unwrap()));
        }
        let mut sent = BTreeMap::new();
        for (key, value, delivery) in pending {
            let md = tokio::time::timeout(Duration::from_secs(30), delivery).await.unwrap().unwrap();
            sent.insert((md.partition, md.offset), (key, value));
        }
        let report = producer.close(Duration::from_secs(5)).await;
        assert!(report.is_ok(), "{topic}: {report:?}");
        let finished = now_ms();
        let want = sent.len().to_string();
        let out = peers::python_ok(
            &python,
            &format!("{topic}: kafka-python consume"),
            KP_CONSUME,
            &[&bootstrap, &topic, &want],
            Duration::from_secs(90),
        )
        .await;
        let mut read = BTreeMap::new();
        for r in peers::printed_records(&out) {
            assert_eq!(r.timestamp_type, 0, "{topic}: {r:?}: kafka-python's CreateTime is 0");
            assert!((started - 1..=finished + 1).contains(&r.timestamp), "{topic}: {r:?}");
            read.insert((r.partition, r.offset), (r.key, r.value));
        }
        assert_eq!(read, sent, "{topic}: kafka-python reads what gregor wrote, where the results said");
    }
}

/// Sends `n` records `v0..` to `topic` through `bootstrap` and waits for every result (each
/// must be delivered).
async fn send_all(bootstrap: &str, topic: &str, n: usize, idempotent: bool) {
    let config = ProducerConfig::builder()
        .metadata_broker_list(bootstrap.to_owned())
        .client_id("idempotence-test")
        .request_required_acks(-1)
        .message_send_max_retries(3)
        .retry_backoff(Duration::from_millis(50))
        .batch_num_messages(10)
        .queue_buffering_max(Duration::from_millis(5))
        .enable_idempotence(idempotent)
        .build()
        .unwrap();
    let producer: AsyncProducer<Vec<u8>, Vec<u8>> = AsyncProducer::new(config, BytesEncoder, BytesEncoder).unwrap();
    let mut pending = Vec::new();
    for i in 0..n {
        pending.push(producer.send(Record::new(topic.to_owned(), format!("v{i}").into_bytes())).await.unwrap());
    }
    for (i, delivery) in pending.into_iter().enumerate() {
        let result = tokio::time::timeout(Duration::from_secs(30), delivery).await.expect("a result within 30 s");
        assert!(result.is_ok(), "{topic}: record {i}: {result:?}");
    }
    let report = producer.close(Duration::from_secs(5)).await;
    assert!(report.is_ok(), "{topic}: {report:?}");
}

/// The values in partition 0 of `topic`, in offset order.
async fn values(bootstrap: &str, topic: &str) -> Vec<String> {
    read_all(bootstrap, topic).await.0.into_iter().map(|(_, value)| value).collect()
}

/// Every record of partition 0 of `topic` as (offset, value), and the offset to read next:
/// fetched until the next offset stops moving (a fetch of transaction markers alone hands out
/// nothing yet moves it).
async fn read_all(bootstrap: &str, topic: &str) -> (Vec<(i64, String)>, i64) {
    let consumer = SimpleConsumer::new(
        SimpleConsumerConfig::builder().metadata_broker_list(bootstrap.to_owned()).build().unwrap(),
    )
    .unwrap();
    let (mut got, mut offset) = (Vec::new(), 0);
    for _ in 0..100 {
        let data = consumer.fetch_partition(topic, 0, offset).await.unwrap();
        got.extend(
            data.messages.iter().map(|m| (m.offset, String::from_utf8_lossy(m.value.as_deref().unwrap()).into_owned())),
        );
        if data.next_offset == offset {
            break;
        }
        offset = data.next_offset;
    }
    consumer.close().await;
    (got, offset)
}

/// A Produce answer lost after the broker wrote the batch: the retry writes it again, unless
/// the producer is idempotent — then the broker (tansu, which checks sequences) answers
/// DUPLICATE_SEQUENCE_NUMBER and the log holds every record once, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotent_producer_writes_a_batch_once_when_its_answer_is_lost() {
    let (Some(tansu), Some(python)) = (peers::tansu_or_skip(), peers::python_or_skip()) else { return };
    let tap_port = peers::free_port();
    let broker = Tansu::start_advertising(&tansu, Some(tap_port)).await;
    let tap = RequestTap::start(tap_port, broker.bootstrap()).await;
    let bootstrap = tap.bootstrap();

    peers::python_ok(&python, "creating topics", CREATE, &[&bootstrap, "1", "plain", "idem"], Duration::from_secs(60))
        .await;
    let produce = ApiKey::Produce.code();
    let produced = |tap: &RequestTap| tap.requests().iter().filter(|(k, _)| *k == produce).count();
    let want: Vec<String> = (0..30).map(|i| format!("v{i}")).collect();

    // without idempotence the lost answer costs a duplicate: the test can tell
    tap.cut_answer(produce, produced(&tap) + 1);
    send_all(&bootstrap, "plain", 30, false).await;
    assert!(!tap.cutting(), "an answer was lost");
    let plain = values(&bootstrap, "plain").await;
    assert!(plain.len() > 30, "the retry wrote the first batch again: {plain:?}");
    let twice = plain.len() - 30;
    assert_eq!(plain[..twice], want[..twice], "the first batch, written before its answer was lost");
    assert_eq!(plain[twice..], want[..], "then the retry of it, then the rest");

    tap.cut_answer(produce, produced(&tap) + 1);
    let before = produced(&tap);
    send_all(&bootstrap, "idem", 30, true).await;
    assert!(!tap.cutting(), "an answer was lost: every record was delivered all the same, so one batch was sent again");
    assert_eq!(values(&bootstrap, "idem").await, want, "every record once, in order");
    assert!(produced(&tap) - before > 3, "the first batch was sent again");
    assert!(tap.requests().iter().any(|(k, _)| *k == ApiKey::InitProducerId.code()), "a producer id was asked for");
}

/// argv: bootstrap, topic, count. Reads partition 0 from the beginning and prints one JSON
/// object per record: offset, value, timestamp, timestamp_type, headers.
const KP_CONSUME_HEADERS: &str = r#"
import sys, json
from kafka import KafkaConsumer, TopicPartition
bootstrap, topic, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=20000)
tp = TopicPartition(topic, 0)
c.assign([tp])
c.seek_to_beginning(tp)
got = 0
for m in c:
    headers = [[k, v.decode() if v is not None else None] for k, v in m.headers]
    print(json.dumps({'offset': m.offset, 'value': m.value.decode(), 'timestamp': m.timestamp,
                      'type': m.timestamp_type, 'headers': headers}))
    got += 1
    if got == want:
        break
c.close()
if got < want:
    raise SystemExit('read %d of %d records' % (got, want))
"#;

/// Headers and timestamps given to gregor's producer arrive as given: kafka-python reads them
/// back through tansu (records without a timestamp carry their batch's time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_and_timestamps_given_to_the_producer_reach_kafka_python() {
    let (Some(tansu), Some(python)) = (peers::tansu_or_skip(), peers::python_or_skip()) else { return };
    let broker = Tansu::start(&tansu).await;
    let bootstrap = broker.bootstrap();
    peers::python_ok(&python, "creating topics", CREATE, &[&bootstrap, "1", "hdr"], Duration::from_secs(60)).await;
    let config = ProducerConfig::builder()
        .metadata_broker_list(bootstrap.clone())
        .request_required_acks(1)
        .compression_codec(Compression::Snappy)
        .batch_num_messages(8)
        .queue_buffering_max(Duration::from_millis(5))
        .build()
        .unwrap();
    let producer: AsyncProducer<Vec<u8>, Vec<u8>> = AsyncProducer::new(config, BytesEncoder, BytesEncoder).unwrap();
    let started = now_ms();
    let mut pending = Vec::new();
    for i in 0..20i64 {
        let mut record = Record::new("hdr", format!("h{i}").into_bytes());
        if i % 2 == 1 {
            record =
                record.with_timestamp(1_500_000_000_000 + i).with_header("i", i.to_string()).with_header("odd", "yes");
        }
        pending.push(producer.send(record).await.unwrap());
    }
    for delivery in pending {
        tokio::time::timeout(Duration::from_secs(30), delivery).await.unwrap().unwrap();
    }
    let report = producer.close(Duration::from_secs(5)).await;
    assert!(report.is_ok(), "{report:?}");
    let finished = now_ms();
    let out = peers::python_ok(
        &python,
        "kafka-python consume",
        KP_CONSUME_HEADERS,
        &[&bootstrap, "hdr", "20"],
        Duration::from_secs(90),
    )
    .await;
    let lines: Vec<String> = out.lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 20);
    for (i, line) in lines.iter().enumerate() {
        let i = i as i64;
        assert!(line.starts_with(&format!("{{\"offset\": {i}, \"value\": \"h{i}\", ")), "{line}");
        if i % 2 == 1 {
            let tail = format!(
                "\"timestamp\": {}, \"type\": 0, \"headers\": [[\"i\", \"{i}\"], [\"odd\", \"yes\"]]}}",
                1_500_000_000_000 + i
            );
            assert!(line.ends_with(&tail), "{line}");
        } else {
            let ts: i64 = line.split("\"timestamp\": ").nth(1).unwrap().split(',').next().unwrap().parse().unwrap();
            assert!((started - 1..=finished + 1).contains(&ts), "{line}");
            assert!(line.ends_with("\"type\": 0, \"headers\": []}"), "{line}");
        }
    }
}

/// argv: bootstrap. A transactional confluent-kafka producer writes two records to `txn` and
/// aborts, then one and commits: the log holds aborted-1, aborted-2, an abort marker,
/// committed-1 and a commit marker (offsets 0-4).
const TXN_PRODUCE: &str = r#"
import sys
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
b = sys.argv[1]
admin = AdminClient({'bootstrap.servers': b})
admin.create_topics([NewTopic('txn', 1, 1)])['txn'].result(30)
p = Producer({'bootstrap.servers': b, 'transactional.id': 'gregor-test-tx'})
p.init_transactions(30)
p.begin_transaction(); p.produce('txn', value=b'aborted-1'); p.produce('txn', value=b'aborted-2'); p.flush(); p.abort_transaction(30)
p.begin_transaction(); p.produce('txn', value=b'committed-1'); p.flush(); p.commit_transaction(30)
"#;

/// Transaction markers, as a broker gregor did not write stores them after librdkafka's
/// transactions: the simple consumer hands out the data records only and moves past the
/// markers (the next offset follows the last one). tansu 0.6.0 lists no aborted transactions
/// in its Fetch answers (librdkafka's read_committed consumer sees the aborted records there
/// too), so dropping them is checked by the classifier's unit tests, not here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_markers_written_by_librdkafka_are_skipped_and_passed() {
    let (Some(tansu), Some(python)) = (peers::tansu_or_skip(), peers::python_or_skip()) else { return };
    let broker = Tansu::start(&tansu).await;
    let bootstrap = broker.bootstrap();
    peers::python_ok(&python, "confluent-kafka transactions", TXN_PRODUCE, &[&bootstrap], Duration::from_secs(90))
        .await;
    let (got, offset) = read_all(&bootstrap, "txn").await;
    let want = [(0, "aborted-1"), (1, "aborted-2"), (3, "committed-1")].map(|(o, v)| (o, v.to_owned()));
    assert_eq!(got, want);
    assert_eq!(offset, 5, "past the commit marker");
}

/// The ZooKeeper-coordinated group consumer reading from a modern broker: tansu, registered in
/// a real ZooKeeper as a Kafka 0.8 broker would register itself (broker id, topic assignment,
/// partition state), so that the consumer finds it there. Its fetchers negotiate (Fetch v12,
/// ListOffsets v9 for auto.offset.reset) and hand out what kafka-python wrote, with the
/// records' headers and timestamps; its offsets go to Kafka (FindCoordinator v3, OffsetCommit
/// and OffsetFetch v7) and a new member resumes from them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_group_consumer_reads_a_modern_broker_registered_in_zookeeper() {
    use gregor::consumer::{AutoOffsetReset, ConsumerConfig, ConsumerConnector};
    use gregor::zk::payloads::{BrokerRegistration, PartitionState, TopicAssignment};
    use gregor::zk::{paths, CreateMode, ZkClient};

    let (Some(tansu), Some(python)) = (peers::tansu_or_skip(), peers::python_or_skip()) else { return };
    let Some(zk) = gregor_testkit::zookeeper::ZooKeeperServer::shared_or_skip() else { return };
    let broker = Tansu::start(&tansu).await;
    let bootstrap = broker.bootstrap();
    let mut args = vec![bootstrap.as_str()];
    args.push("zstd");
    // kp-zstd: 5 records with keys, headers and timestamps, written by kafka-python
    peers::python_ok(&python, "kafka-python produce", KP_PRODUCE, &args, Duration::from_secs(120)).await;

    // tansu's broker id, as its metadata names it
    let net = gregor::net::ConnectionConfig::default();
    let cache = gregor::net::MetadataCache::new(&bootstrap, gregor::net::Pool::new(net)).unwrap();
    cache.refresh(&["kp-zstd".to_owned()]).await.unwrap();
    let id = cache.leader("kp-zstd", 0).expect("a leader");

    let connect = zk.unique_chroot("modern_group");
    let admin = ZkClient::connect(&connect, Duration::from_secs(10)).await.unwrap();
    let registration = BrokerRegistration::new("127.0.0.1", i32::from(broker.port()), now_ms());
    admin.create_all(&paths::broker(id), &registration.to_json(), CreateMode::Persistent).await.unwrap();
    let assignment = TopicAssignment::new([(0, vec![id])].into_iter().collect());
    admin.create_all(&paths::topic("kp-zstd"), &assignment.to_json(), CreateMode::Persistent).await.unwrap();
    let state = PartitionState::new(id, 0, 1, vec![id]);
    admin.create_all(&paths::partition_state("kp-zstd", 0), &state.to_json(), CreateMode::Persistent).await.unwrap();
    admin.create_all(paths::CONSUMERS, b"", CreateMode::Persistent).await.unwrap();

    // offsets kept in Kafka (OffsetCommit/OffsetFetch at the coordinator, as negotiated)
    let config = ConsumerConfig::builder()
        .group_id("modern-group")
        .zookeeper_connect(connect)
        .auto_offset_reset(AutoOffsetReset::Smallest)
        .auto_commit_enable(false)
        .offsets_storage(gregor::consumer::OffsetsStorage::Kafka)
        .dual_commit_enabled(false)
        .build()
        .unwrap();
    let connector = ConsumerConnector::new(config.clone()).await.unwrap();
    let mut streams = connector.subscribe(["kp-zstd"]).streams(1).start().await.unwrap();
    let mut stream = streams.remove(0);
    // the first two, committed; a new member of the group goes on from the third
    for i in 0..2i64 {
        assert_eq!(next_of(&mut stream).await.offset, i);
    }
    connector.commit_offsets().await.unwrap();
    connector.shutdown().await.unwrap();
    let connector = ConsumerConnector::new(config).await.unwrap();
    let mut streams = connector.subscribe(["kp-zstd"]).streams(1).start().await.unwrap();
    let mut stream = streams.remove(0);
    for i in 2..5i64 {
        let m = next_of(&mut stream).await;
        assert_eq!((m.offset, m.value.as_deref()), (i, Some(format!("zstd/{i}").as_bytes())));
        assert_eq!((m.timestamp, m.timestamp_type), (1_600_000_000_000 + i, TimestampType::CreateTime));
        let headers: Vec<String> = m.headers.iter().map(|h| h.key_str().unwrap().to_owned()).collect();
        assert_eq!(headers, ["n", "from"]);
    }
    connector.shutdown().await.unwrap();
}

/// The next message of a group stream, within 30 s.
async fn next_of(
    stream: &mut gregor::consumer::KafkaStream<bytes::Bytes>,
) -> gregor::consumer::MessageAndMetadata<bytes::Bytes> {
    tokio::time::timeout(Duration::from_secs(30), stream.next())
        .await
        .expect("a message within 30 s")
        .expect("the stream goes on")
        .expect("no error")
}

/// The same lost answer against the FakeCluster's modern mode, which checks idempotent
/// producers' sequences as Kafka does: the broker writes the batch, the answer is cut off
/// half-way and the connection closed; without idempotence the retry writes it again, with it
/// the fake recognises the retry (same producer id, epoch and sequences) and answers with the
/// first write's offset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotent_producer_writes_a_batch_once_through_the_modern_fake_when_its_answer_is_lost() {
    use gregor_testkit::fault::{Fault, Rule};
    let cluster = gregor_testkit::FakeCluster::modern().brokers(1).start().await.unwrap();
    let bootstrap = cluster.bootstrap();
    for topic in ["plain", "idem"] {
        cluster.create_topic(topic, 1, 1).await.unwrap();
    }
    let want: Vec<String> = (0..30).map(|i| format!("v{i}")).collect();

    cluster.intercept(Rule::on(ApiKey::Produce, Fault::TruncateThenClose).once());
    send_all(&bootstrap, "plain", 30, false).await;
    let plain = values(&bootstrap, "plain").await;
    assert!(plain.len() > 30, "the retry wrote the first batch again: {plain:?}");

    cluster.intercept(Rule::on(ApiKey::Produce, Fault::TruncateThenClose).once());
    send_all(&bootstrap, "idem", 30, true).await;
    assert_eq!(values(&bootstrap, "idem").await, want, "every record once, in order");
    let cut = cluster.requests().iter().filter(|r| r.fault == Fault::TruncateThenClose).count();
    assert_eq!(cut, 2, "both answers were cut");
}

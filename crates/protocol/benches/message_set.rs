//! MessageSet encode and decode throughput: 1,000 messages with 8-byte keys and 100-byte
//! text-like values (log/JSON-ish lines, varied, not zeros), uncompressed and with each codec.
//!
//! * encode = `MessageSet::from_messages(messages, codec)` (CRCs, and the compressed wrapper);
//! * decode = `MessageSet::decode(&DecodeOptions::default())` (CRC checks, decompression,
//!   expansion of the wrapper).
//!
//! Throughput is reported per message and per byte of uncompressed payload (keys + values,
//! 108,000 bytes per set).
//!
//! Also the Produce v0 request and the Fetch v0 response around such sets (4 topics of 4
//! partitions, one uncompressed set of 100 messages each):
//!
//! * produce_v0/encode_parts, produce_v9/encode_parts = `frame::encode_request_frame` (the sets
//!   shared, not copied);
//! * fetch_v0/decode, fetch_v12/decode = `frame::decode_response::<FetchRequest>` (the sets
//!   sliced, not decoded).
//!
//! ```text
//! cargo bench -p gregor-protocol --bench message_set
//! ```

use std::hint::black_box;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use criterion::{BenchmarkId, Criterion, Throughput};
use gregor_protocol::frame::{self, ApiKey, RequestHeader};
use gregor_protocol::message::DecodeOptions;
use gregor_protocol::messages::*;
use gregor_protocol::{Compression, Message, MessageSet};

const MESSAGES: usize = 1_000;
const KEY_LEN: usize = 8;
const VALUE_LEN: usize = 100;
const CODECS: [Compression; 4] = [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4];

/// xorshift32, so the data is the same on every run.
struct Rng(u32);

impl Rng {
    fn next(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 17;
        self.0 ^= self.0 << 5;
        self.0
    }

    fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        words[self.next() as usize % words.len()]
    }
}

/// `MESSAGES` messages: key `k0000042`, value a 100-byte event line such as
/// `{"ts":1700000123456,"user":"u48213","event":"add_to_cart","path":"/products/shoes/9917",...`
fn messages() -> Vec<Message> {
    const EVENTS: [&str; 6] = ["page_view", "add_to_cart", "checkout", "search", "login", "logout"];
    const SECTIONS: [&str; 5] = ["products", "cart", "account", "search", "help"];
    const ITEMS: [&str; 6] = ["shoes", "shirts", "bags", "hats", "socks", "coats"];
    const AGENTS: [&str; 4] = ["Mozilla/5.0", "curl/8.5", "okhttp/4.12", "Safari/17"];
    let mut rng = Rng(0x2545_f491);
    (0..MESSAGES)
        .map(|i| {
            let key = format!("k{i:07}");
            let mut value = format!(
                "{{\"ts\":{},\"user\":\"u{:05}\",\"event\":\"{}\",\"path\":\"/{}/{}/{}\",\"ua\":\"{}\",\"ms\":{}}}",
                1_700_000_000_000u64 + i as u64 * 37 + u64::from(rng.next() % 37),
                rng.next() % 100_000,
                rng.pick(&EVENTS),
                rng.pick(&SECTIONS),
                rng.pick(&ITEMS),
                rng.next() % 10_000,
                rng.pick(&AGENTS),
                rng.next() % 2_000,
            );
            while value.len() < VALUE_LEN {
                value.push(' ');
            }
            value.truncate(VALUE_LEN);
            assert_eq!(key.len(), KEY_LEN);
            Message::new(Some(Bytes::from(key)), Some(Bytes::from(value)))
        })
        .collect()
}

fn message_set(c: &mut Criterion) {
    let messages = messages();
    let payload = (MESSAGES * (KEY_LEN + VALUE_LEN)) as u64;
    let throughput = Throughput::ElementsAndBytes { elements: MESSAGES as u64, bytes: payload };

    let sets: Vec<(Compression, MessageSet)> = CODECS
        .iter()
        .map(|&codec| (codec, MessageSet::from_messages(messages.iter().cloned(), codec).expect("encode")))
        .collect();
    for (codec, set) in &sets {
        let decoded = set.decode(&DecodeOptions::default()).expect("decode");
        assert_eq!(decoded.messages.len(), MESSAGES);
        assert!(decoded.messages.iter().map(|m| &m.message).eq(messages.iter()), "{codec}: round trip");
        println!(
            "{codec:>6}: {} messages, {payload} payload bytes -> set of {} bytes ({:.1}% of the payload)",
            MESSAGES,
            set.len(),
            set.len() as f64 * 100.0 / payload as f64
        );
    }

    let mut group = c.benchmark_group("message_set/encode");
    group.throughput(throughput.clone());
    for codec in CODECS {
        group.bench_with_input(BenchmarkId::from_parameter(codec), &codec, |b, &codec| {
            b.iter(|| MessageSet::from_messages(black_box(&messages).iter().cloned(), codec).expect("encode"))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("message_set/decode");
    group.throughput(throughput);
    let options = DecodeOptions::default();
    for (codec, set) in &sets {
        group.bench_with_input(BenchmarkId::from_parameter(codec), set, |b, set| {
            b.iter(|| black_box(set).decode(&options).expect("decode"))
        });
    }
    group.finish();
}

/// 4 topics of 4 partitions, each with its own set of 100 messages.
fn partition_sets(messages: &[Message]) -> Vec<(String, Vec<(i32, MessageSet)>)> {
    (0..4)
        .map(|t| {
            let partitions = (0..4)
                .map(|p| {
                    let from = (t * 4 + p) * 50 % (MESSAGES - 100);
                    let set = MessageSet::from_messages(messages[from..from + 100].iter().cloned(), Compression::None);
                    (p as i32, set.expect("encode"))
                })
                .collect();
            (format!("topic-{t}"), partitions)
        })
        .collect()
}

fn frames(c: &mut Criterion) {
    let messages = messages();
    let sets = partition_sets(&messages);
    let bytes: usize = sets.iter().flat_map(|(_, ps)| ps.iter().map(|(_, s)| s.len())).sum();
    let throughput = Throughput::ElementsAndBytes { elements: 16, bytes: bytes as u64 };

    let request = produce_request(&sets);
    for version in [0, 9] {
        let header = RequestHeader {
            api_key: ApiKey::Produce,
            api_version: version,
            correlation_id: 1,
            client_id: Some("bench".into()),
            unknown_tagged_fields: Default::default(),
        };
        let mut group = c.benchmark_group(format!("produce_v{version}"));
        group.throughput(throughput.clone());
        group.bench_function("encode_parts", |b| {
            b.iter(|| frame::encode_request_frame(&header, black_box(&request), 5).expect("encode"))
        });
        group.finish();
    }

    let response = fetch_response(&sets);
    for version in [0, 12] {
        let mut buf = BytesMut::new();
        frame::encode_response_for::<FetchRequest>(1, version, &response, &mut buf).expect("encode");
        let whole = buf.freeze().slice(4..);
        let mut group = c.benchmark_group(format!("fetch_v{version}"));
        group.throughput(throughput.clone());
        group.bench_function("decode", |b| {
            b.iter(|| frame::decode_response::<FetchRequest>(version, black_box(&whole).clone()).expect("decode"))
        });
        group.finish();
    }
}

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    message_set(&mut c);
    frames(&mut c);
    c.final_summary();
}

fn produce_request(sets: &[(String, Vec<(i32, MessageSet)>)]) -> ProduceRequest {
    let topics = sets
        .iter()
        .map(|(t, ps)| {
            let partitions = ps.iter().map(|(p, set)| ProducePartition::new(*p, set.clone())).collect();
            ProduceTopic::new(t.clone(), partitions)
        })
        .collect();
    ProduceRequest { required_acks: 1, timeout: 1500, topics, ..Default::default() }
}

fn fetch_response(sets: &[(String, Vec<(i32, MessageSet)>)]) -> FetchResponse {
    let topics = sets
        .iter()
        .map(|(t, ps)| {
            let partitions =
                ps.iter().map(|(p, set)| FetchResponsePartition::new(*p, 0, 100_000, set.clone())).collect();
            FetchResponseTopic::new(t.clone(), partitions)
        })
        .collect();
    FetchResponse { topics, ..Default::default() }
}

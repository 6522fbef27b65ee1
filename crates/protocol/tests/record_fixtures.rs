//! RecordBatch v2 against the batches a genuine Kafka 3.7.0 broker and its clients put on the
//! wire (`tests/data/kafka-3.7.0`): every batch of the Produce requests (librdkafka's Produce
//! v10 with each codec, idempotent, and kafka-python's v9) and of the Fetch responses that
//! carry records (librdkafka's v16, kafka-python's v12).
//!
//! The record bytes are located through `decoded/NAME.json` (each `Records` field's hex, with
//! the batches Python decoded from it in `Records__batches`), and each blob is checked to be
//! part of the captured frame, so the bytes under test are the broker's and the clients', not
//! the decoder's.
//!
//! 1. [`Batches`] reads every blob into the batches and records `decoded/` lists: header
//!    fields, offsets, timestamps, keys, values, headers; zstd batches (which the Python side
//!    could not decompress) hold what the scenario produced.
//! 2. [`RecordBatchBuilder`] writes every uncompressed batch again byte for byte from its
//!    records and header fields; every compressed one it writes with the same codec reads
//!    back to the same records.

use std::path::PathBuf;

use bytes::Bytes;
use gregor_protocol::message::DecodeOptions;
use gregor_protocol::record::{Batch, Batches, Record, RecordBatchBuilder, TimestampType};
use gregor_protocol::Compression;
use serde_json::Value;

fn data_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/kafka-3.7.0"))
}

/// The fixtures whose frames carry record batches.
const FIXTURES: [&str; 18] = [
    "produce_v10_produce_none",
    "produce_v10_produce_gzip",
    "produce_v10_produce_snappy",
    "produce_v10_produce_lz4",
    "produce_v10_produce_zstd",
    "produce_v10_produce_idempotent_1",
    "produce_v10_produce_idempotent_2",
    "produce_v10_err_produce_unknown_topic",
    "produce_v10_err_produce_unknown_partition",
    "produce_v9_kp_produce",
    "fetch_v16_group_1",
    "fetch_v16_group_2",
    "fetch_v16_group_3",
    "fetch_v16_group_4",
    "fetch_v16_group_5",
    "fetch_v16_err_out_of_range_1",
    "fetch_v16_err_out_of_range_2",
    "fetch_v12_kp_group",
];

/// One `Records` field: its bytes and the batches `decoded/` lists for it.
struct Blob {
    fixture: String,
    bytes: Bytes,
    batches: Vec<Value>,
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn collect(value: &Value, fixture: &str, out: &mut Vec<Blob>) {
    match value {
        Value::Object(map) => {
            if let (Some(Value::String(records)), Some(batches)) = (map.get("Records"), map.get("Records__batches")) {
                out.push(Blob {
                    fixture: fixture.to_owned(),
                    bytes: hex(records).into(),
                    batches: batches.as_array().unwrap().clone(),
                });
            }
            map.values().for_each(|v| collect(v, fixture, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect(v, fixture, out)),
        _ => {}
    }
}

/// Every records blob of the fixtures, each checked to be inside its captured frames.
fn blobs() -> Vec<Blob> {
    let mut all = Vec::new();
    for name in FIXTURES {
        let json: Value =
            serde_json::from_str(&std::fs::read_to_string(data_dir().join(format!("decoded/{name}.json"))).unwrap())
                .unwrap();
        let frames = [
            std::fs::read(data_dir().join(format!("{name}.req.bin"))).unwrap(),
            std::fs::read(data_dir().join(format!("{name}.resp.bin"))).unwrap(),
        ];
        let before = all.len();
        collect(&json, name, &mut all);
        for blob in &all[before..] {
            assert!(
                blob.bytes.is_empty()
                    || frames.iter().any(|f| f.windows(blob.bytes.len()).any(|w| w == &blob.bytes[..])),
                "{name}: a records blob of decoded/ is not in the captured frames"
            );
        }
    }
    all
}

fn text(v: &Value) -> Option<Vec<u8>> {
    v.as_str().map(|s| s.as_bytes().to_vec())
}

fn read_all(bytes: Bytes) -> (Vec<Batch>, Batches) {
    let mut reader = Batches::new(bytes, &DecodeOptions::default());
    let batches = reader.by_ref().collect::<Result<Vec<_>, _>>().unwrap();
    (batches, reader)
}

fn records_of(batch: &Batch) -> Vec<Record> {
    batch.records().collect::<Result<Vec<_>, _>>().unwrap()
}

/// The records the `produce_zstd` scenario sent (INDEX.md), which `decoded/` could not read.
fn zstd_scenario_records() -> Vec<Value> {
    (0..3)
        .map(|i| {
            serde_json::json!({
                "attributes": 0, "timestamp_delta": i, "offset_delta": i,
                "key": format!("k{i}"), "value": format!("zstd value {i}"),
                "headers": [["h1", format!("v{i}")], ["codec", "zstd"]],
            })
        })
        .collect()
}

fn expected_records(json: &Value) -> Vec<Value> {
    match json["records"].as_array() {
        Some(records) if !records.is_empty() => records.clone(),
        _ => {
            assert_eq!(json["codec"], "zstd", "only zstd batches come without records");
            zstd_scenario_records()
        }
    }
}

fn check_records(what: &str, json: &Value, records: &[Record]) {
    let expected = expected_records(json);
    assert_eq!(records.len(), expected.len(), "{what}");
    let base_offset = json["base_offset"].as_i64().unwrap();
    let base_timestamp = json["base_timestamp"].as_i64().unwrap();
    for (r, e) in records.iter().zip(&expected) {
        assert_eq!(r.offset, base_offset + e["offset_delta"].as_i64().unwrap(), "{what}");
        assert_eq!(r.timestamp, base_timestamp + e["timestamp_delta"].as_i64().unwrap(), "{what}");
        assert_eq!(r.timestamp_type, TimestampType::CreateTime, "{what}");
        assert_eq!(r.key.as_deref().map(<[u8]>::to_vec), text(&e["key"]), "{what}");
        assert_eq!(r.value.as_deref().map(<[u8]>::to_vec), text(&e["value"]), "{what}");
        let headers: Vec<(Vec<u8>, Option<Vec<u8>>)> =
            r.headers.iter().map(|h| (h.key.to_vec(), h.value.map(|v| v.to_vec()))).collect();
        let want: Vec<(Vec<u8>, Option<Vec<u8>>)> =
            e["headers"].as_array().unwrap().iter().map(|h| (text(&h[0]).unwrap(), text(&h[1]))).collect();
        assert_eq!(headers, want, "{what}");
    }
}

fn codec(name: &str) -> Compression {
    Compression::from_name(name).unwrap()
}

/// A builder set up with a captured batch's header fields.
fn builder_like(json: &Value, codec: Compression) -> RecordBatchBuilder {
    RecordBatchBuilder::with_capacity(codec, 1024)
        .base_offset(json["base_offset"].as_i64().unwrap())
        .partition_leader_epoch(json["partition_leader_epoch"].as_i64().unwrap() as i32)
        .producer(
            json["producer_id"].as_i64().unwrap(),
            json["producer_epoch"].as_i64().unwrap() as i16,
            json["base_sequence"].as_i64().unwrap() as i32,
        )
}

/// Appends the records as `decoded/` lists them.
fn append_all(builder: &mut RecordBatchBuilder, json: &Value) {
    let base_timestamp = json["base_timestamp"].as_i64().unwrap();
    for e in expected_records(json) {
        let key = text(&e["key"]);
        let value = text(&e["value"]);
        let header_values: Vec<(String, Option<Vec<u8>>)> =
            e["headers"].as_array().unwrap().iter().map(|h| (h[0].as_str().unwrap().to_owned(), text(&h[1]))).collect();
        let headers: Vec<(&str, Option<&[u8]>)> =
            header_values.iter().map(|(k, v)| (k.as_str(), v.as_deref())).collect();
        let ts = base_timestamp + e["timestamp_delta"].as_i64().unwrap();
        let delta = builder.append_with_headers(ts, key.as_deref(), value.as_deref(), &headers).unwrap();
        assert_eq!(i64::from(delta), e["offset_delta"].as_i64().unwrap());
    }
}

#[test]
fn every_captured_batch_reads_as_decoded_lists_it() {
    let blobs = blobs();
    let mut seen_codecs = std::collections::BTreeSet::new();
    let (mut batches_read, mut records_read) = (0, 0);
    for blob in &blobs {
        let (batches, reader) = read_all(blob.bytes.clone());
        assert_eq!(batches.len(), blob.batches.len(), "{}", blob.fixture);
        assert_eq!(reader.partial_trailing_bytes(), 0, "{}", blob.fixture);
        let mut at = 0;
        for (batch, json) in batches.iter().zip(&blob.batches) {
            let what = format!("{} batch at {}", blob.fixture, json["base_offset"]);
            let h = batch.header();
            assert_eq!(batch.raw()[..], blob.bytes[at..at + batch.raw().len()], "{what}");
            at += batch.raw().len();
            assert!(json["crc_ok"].as_bool().unwrap());
            assert_eq!(h.base_offset, json["base_offset"].as_i64().unwrap(), "{what}");
            assert_eq!(i64::from(h.batch_length), json["batch_length"].as_i64().unwrap(), "{what}");
            assert_eq!(i64::from(h.partition_leader_epoch), json["partition_leader_epoch"].as_i64().unwrap());
            assert_eq!(i64::from(h.magic), json["magic"].as_i64().unwrap(), "{what}");
            assert_eq!(format!("{:08x}", h.crc), json["crc"].as_str().unwrap(), "{what}");
            assert_eq!(format!("0x{:04x}", h.attributes), json["attributes"].as_str().unwrap(), "{what}");
            assert_eq!(batch.compression(), codec(json["codec"].as_str().unwrap()), "{what}");
            assert_eq!(h.timestamp_type().name(), json["timestamp_type"].as_str().unwrap(), "{what}");
            assert_eq!(h.is_transactional(), json["transactional"].as_bool().unwrap(), "{what}");
            assert_eq!(h.is_control(), json["control"].as_bool().unwrap(), "{what}");
            assert_eq!(h.delete_horizon_ms().is_some(), json["has_delete_horizon"].as_bool().unwrap(), "{what}");
            assert_eq!(i64::from(h.last_offset_delta), json["last_offset_delta"].as_i64().unwrap(), "{what}");
            assert_eq!(h.base_timestamp, json["base_timestamp"].as_i64().unwrap(), "{what}");
            assert_eq!(h.max_timestamp, json["max_timestamp"].as_i64().unwrap(), "{what}");
            assert_eq!(h.producer_id, json["producer_id"].as_i64().unwrap(), "{what}");
            assert_eq!(i64::from(h.producer_epoch), json["producer_epoch"].as_i64().unwrap(), "{what}");
            assert_eq!(i64::from(h.base_sequence), json["base_sequence"].as_i64().unwrap(), "{what}");
            assert_eq!(i64::from(h.record_count), json["record_count"].as_i64().unwrap(), "{what}");
            let records = records_of(batch);
            check_records(&what, json, &records);
            // uncompressed: the keys and values are the blob's own bytes, not copies
            if batch.compression() == Compression::None {
                let blob_range = blob.bytes.as_ptr_range();
                for r in &records {
                    let key = r.key.as_ref().unwrap().as_ptr();
                    assert!(blob_range.contains(&key), "{what}: the key was copied");
                }
            }
            seen_codecs.insert(batch.compression().name());
            batches_read += 1;
            records_read += records.len();
        }
        assert_eq!(at, blob.bytes.len(), "{}", blob.fixture);
    }
    assert_eq!(seen_codecs.into_iter().collect::<Vec<_>>(), ["gzip", "lz4", "none", "snappy", "zstd"]);
    // 42 Records fields (24 of them empty: partitions fetched at their end), 19 batches of 3
    // records: 10 in Produce requests, 9 in Fetch responses (fetch_v16_group_1 two of topic
    // idem, fetch_v16_group_2 one per codec of five topics, fetch_v16_err_out_of_range_2 one,
    // fetch_v12_kp_group one)
    let empty = blobs.iter().filter(|b| b.bytes.is_empty()).count();
    assert_eq!((blobs.len(), empty, batches_read, records_read), (42, 24, 19, 57));
}

#[test]
fn the_builder_writes_every_uncompressed_batch_byte_for_byte_and_the_rest_round_trip() {
    let (mut identical, mut round_trips) = (0, 0);
    for blob in blobs() {
        let (batches, _) = read_all(blob.bytes.clone());
        for (batch, json) in batches.iter().zip(&blob.batches) {
            let what = format!("{} batch at {}", blob.fixture, json["base_offset"]);
            let codec = batch.compression();
            let mut builder = builder_like(json, codec);
            append_all(&mut builder, json);
            let ours = builder.finish().unwrap();
            if codec == Compression::None {
                assert_eq!(ours, batch.raw(), "{what}");
                identical += 1;
                continue;
            }
            // a compressed batch: ours reads back to the same records and header fields
            // (the compressed bytes differ: other compressors, other framing)
            let (mine, reader) = read_all(ours);
            assert_eq!((mine.len(), reader.partial_trailing_bytes()), (1, 0), "{what}");
            let (m, t) = (mine[0].header(), batch.header());
            assert_eq!(
                (m.base_offset, m.attributes, m.last_offset_delta, m.base_timestamp, m.max_timestamp),
                (t.base_offset, t.attributes, t.last_offset_delta, t.base_timestamp, t.max_timestamp),
                "{what}"
            );
            assert_eq!(
                (m.producer_id, m.producer_epoch, m.base_sequence),
                (t.producer_id, t.producer_epoch, t.base_sequence)
            );
            assert_eq!(records_of(&mine[0]), records_of(batch), "{what}");
            round_trips += 1;
        }
    }
    // uncompressed: 5 in Produce requests (none, idempotent 1 and 2, both error scenarios), 4 in
    // Fetch responses; compressed: gzip, snappy, lz4, zstd and kafka-python's gzip, each
    // produced and fetched
    assert_eq!((identical, round_trips), (9, 10));
}

#[test]
fn a_fetch_cut_inside_a_batch_drops_the_partial_batch() {
    let blob = blobs().into_iter().find(|b| b.fixture == "fetch_v16_group_1").unwrap();
    assert_eq!(blob.batches.len(), 2);
    let first = 12 + blob.batches[0]["batch_length"].as_u64().unwrap() as usize;
    for cut in [first, first + 1, first + 16, first + 17, blob.bytes.len() - 1] {
        let (batches, reader) = read_all(blob.bytes.slice(..cut));
        assert_eq!(batches.len(), 1, "cut {cut}");
        assert_eq!(reader.partial_trailing_bytes(), cut - first, "cut {cut}");
    }
    // a fetch from offset 4 skips the first batch without reading it, and offset 3 of the second
    let opts = DecodeOptions { min_offset: 4, ..DecodeOptions::default() };
    let mut reader = Batches::new(blob.bytes.clone(), &opts);
    let batches: Vec<Batch> = reader.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!((batches.len(), reader.skipped_batches(), reader.whole_batches()), (1, 1, 2));
    let offsets: Vec<i64> = records_of(&batches[0]).iter().map(|r| r.offset).collect();
    assert_eq!(offsets, [4, 5]);
}

//! The lazy reader (`LazyBatches` + `LazyRecords`, decompressing as it is iterated) against
//! the whole-set readers (`Batches`, and `MessageSet::decode` for a Fetch v0/v1 answer), for
//! every codec of every era: the same records on valid input; on malformed input (bytes
//! flipped, cut short, or a compressed body broken under a valid CRC) an error from both or
//! the same records from both, and never a panic.

use bytes::Bytes;
use gregor_protocol::message::DecodeOptions;
use gregor_protocol::record::{crc32c, Batches, LazyBatches, LazyRecords, Record, RecordBatchBuilder};
use gregor_protocol::{Compression, Message, MessageAndOffset, MessageSet, MessageV1};
use proptest::prelude::*;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Era {
    /// Message v0 (Kafka 0.8), read as a Fetch v0 answer (`message_v0`) and as any magic.
    V0,
    /// Message v1 (Kafka 0.10): relative inner offsets.
    V1,
    /// RecordBatch v2.
    V2,
}

type Kv = (Option<Vec<u8>>, Option<Vec<u8>>);

fn codecs(era: Era) -> Vec<Compression> {
    let mut all = vec![Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4];
    if era == Era::V2 {
        all.push(Compression::Zstd);
    }
    all
}

/// Adds `by` to the offset of every top-level entry of `set` (outside the CRC).
fn shift_offsets(set: &mut [u8], by: i64) {
    let mut at = 0;
    while at + 12 <= set.len() {
        let offset = i64::from_be_bytes(set[at..at + 8].try_into().unwrap()) + by;
        set[at..at + 8].copy_from_slice(&offset.to_be_bytes());
        at += 12 + i32::from_be_bytes(set[at + 8..at + 12].try_into().unwrap()) as usize;
    }
}

/// One batch (a wrapper, a v2 batch, or plain messages) of `records` from `base` on.
fn batch(era: Era, codec: Compression, base: i64, records: &[Kv]) -> Vec<u8> {
    let bytes = |b: &Option<Vec<u8>>| b.clone().map(Bytes::from);
    match era {
        Era::V0 => {
            let messages: Vec<MessageAndOffset> = (base..)
                .zip(records)
                .map(|(o, (k, v))| MessageAndOffset::new(o, Message::new(bytes(k), bytes(v))))
                .collect();
            let set = match codec {
                Compression::None => MessageSet::encode(&messages),
                codec => MessageSet::encode(&[MessageSet::wrap(&messages, codec).unwrap()]),
            };
            set.unwrap().as_bytes().to_vec()
        }
        Era::V1 => {
            let messages: Vec<MessageV1> =
                (1000..).zip(records).map(|(ts, (k, v))| MessageV1::new(ts, bytes(k), bytes(v))).collect();
            let mut set = MessageSet::from_messages_v1(&messages, codec).unwrap().as_bytes().to_vec();
            shift_offsets(&mut set, base);
            set
        }
        Era::V2 => {
            let mut b = RecordBatchBuilder::new(codec).base_offset(base);
            for (i, (k, v)) in records.iter().enumerate() {
                let n = i.to_string();
                b.append_with_headers(2000 + i as i64, k.as_deref(), v.as_deref(), &[("h", Some(n.as_bytes()))])
                    .unwrap();
            }
            b.finish().unwrap().to_vec()
        }
    }
}

fn blob(era: Era, codec: Compression, batches: &[Vec<Kv>]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut base = 0;
    for records in batches {
        out.extend(batch(era, codec, base, records));
        base += records.len() as i64;
    }
    out
}

fn options(min_offset: i64, max: usize) -> DecodeOptions {
    DecodeOptions { min_offset, max_decompressed_bytes: max, ..DecodeOptions::default() }
}

/// The whole-set reader of any magic.
fn whole(blob: &Bytes, options: &DecodeOptions) -> Result<Vec<Record>, String> {
    let mut out = Vec::new();
    for b in Batches::new(blob.clone(), options) {
        for r in b.map_err(|e| e.to_string())?.records() {
            out.push(r.map_err(|e| e.to_string())?);
        }
    }
    Ok(out)
}

/// 0.8.2's reader of a Fetch v0 answer.
fn whole_v0(blob: &Bytes, options: &DecodeOptions) -> Result<Vec<Record>, String> {
    let decoded = MessageSet::from_bytes(blob.clone()).decode(options).map_err(|e| e.to_string())?;
    Ok(decoded.messages.into_iter().map(Record::from).collect())
}

/// The lazy reader: the walk, then the records as they are iterated.
fn lazy(blob: &Bytes, options: &DecodeOptions, v0: bool) -> Result<Vec<Record>, String> {
    let mut walk =
        if v0 { LazyBatches::message_v0(blob.clone(), options) } else { LazyBatches::new(blob.clone(), options) };
    let batches = walk.by_ref().collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())?;
    if v0 && walk.whole_batches() == 0 && !blob.is_empty() {
        return Err("message larger than the fetch".to_owned()); // as MessageSet::decode
    }
    LazyRecords::new(batches, options.max_decompressed_bytes).collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())
}

/// Both readers of `era` agree on `blob`: both fail, or both give the same records.
fn agree(era: Era, blob: &[u8], options: &DecodeOptions) -> Result<(), TestCaseError> {
    let blob = Bytes::copy_from_slice(blob);
    let mut pairs = vec![(whole(&blob, options), lazy(&blob, options, false))];
    if era == Era::V0 {
        pairs.push((whole_v0(&blob, options), lazy(&blob, options, true)));
    }
    for (i, (w, l)) in pairs.into_iter().enumerate() {
        match (&w, &l) {
            (Ok(w), Ok(l)) => prop_assert_eq!(w, l, "reader {}", i),
            (Err(_), Err(_)) => {}
            _ => prop_assert!(false, "reader {}: whole {:?} lazy {:?}", i, w, l),
        }
    }
    Ok(())
}

/// The first entry of `blob` with its compressed body broken (a byte flipped at `at`, or cut
/// to `at` bytes) under a CRC that holds.
fn break_body(era: Era, blob: &[u8], at: usize, cut: bool) -> Vec<u8> {
    let size = i32::from_be_bytes(blob[8..12].try_into().unwrap()) as usize;
    let (entry, rest) = blob.split_at(12 + size);
    let offset = i64::from_be_bytes(entry[..8].try_into().unwrap());
    let spoil = |body: &[u8]| -> Vec<u8> {
        let mut body = body.to_vec();
        if body.is_empty() {
            return body;
        }
        if cut {
            body.truncate(at % body.len());
        } else {
            let i = at % body.len();
            body[i] ^= 0x5a;
        }
        body
    };
    let mut out = match era {
        Era::V2 => {
            let mut batch = entry[..61].to_vec();
            batch.extend(spoil(&entry[61..]));
            let length = (batch.len() - 12) as i32;
            batch[8..12].copy_from_slice(&length.to_be_bytes());
            let crc = crc32c(&batch[21..]);
            batch[17..21].copy_from_slice(&crc.to_be_bytes());
            batch
        }
        Era::V0 => {
            let m = Message::decode(Bytes::copy_from_slice(&entry[12..]), Default::default).unwrap();
            let value = m.value.as_deref().map(|v| Bytes::from(spoil(v)));
            let m = Message { value, ..m };
            MessageSet::encode(&[MessageAndOffset::new(offset, m)]).unwrap().as_bytes().to_vec()
        }
        Era::V1 => {
            let m = MessageV1::decode(Bytes::copy_from_slice(&entry[12..]), Default::default).unwrap();
            let value = m.value.as_deref().map(|v| Bytes::from(spoil(v)));
            MessageSet::encode_v1(&[(offset, MessageV1 { value, ..m })]).unwrap().as_bytes().to_vec()
        }
    };
    out.extend_from_slice(rest);
    out
}

fn kv() -> impl Strategy<Value = Kv> {
    let field = prop_oneof![
        1 => Just(None),
        6 => prop::collection::vec(prop_oneof![Just(b'a'), any::<u8>()], 0..120).prop_map(Some),
    ];
    (field.clone(), field)
}

fn input() -> impl Strategy<Value = (Era, Compression, Vec<Vec<Kv>>)> {
    prop_oneof![Just(Era::V0), Just(Era::V1), Just(Era::V2)].prop_flat_map(|era| {
        (Just(era), prop::sample::select(codecs(era)), prop::collection::vec(prop::collection::vec(kv(), 1..16), 1..4))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn valid_sets_read_the_same((era, codec, batches) in input(), min in 0i64..50) {
        let data = blob(era, codec, &batches);
        agree(era, &data, &options(min, 1 << 24))?;
        // and the records are all there from the fetch offset on
        let all: usize = batches.iter().map(Vec::len).sum();
        let got = lazy(&Bytes::from(data), &options(min, 1 << 24), false).unwrap();
        prop_assert_eq!(got.len(), all.saturating_sub(min as usize));
    }

    #[test]
    fn flipped_or_cut_sets_fail_alike_and_never_panic(
        (era, codec, batches) in input(),
        at in any::<usize>(),
        bits in 1u8..=255,
        cut in any::<bool>(),
    ) {
        let mut data = blob(era, codec, &batches);
        if cut {
            data.truncate(at % (data.len() + 1));
        } else {
            let i = at % data.len();
            data[i] ^= bits;
        }
        agree(era, &data, &options(0, 1 << 24))?;
    }

    #[test]
    fn bodies_broken_under_a_valid_crc_fail_alike((era, codec, batches) in input(), at in any::<usize>(), cut in any::<bool>()) {
        let data = break_body(era, &blob(era, codec, &batches), at, cut);
        agree(era, &data, &options(0, 1 << 24))?;
    }

    #[test]
    fn sets_mixing_codecs_with_offset_gaps_read_the_same(
        era in prop_oneof![Just(Era::V0), Just(Era::V1), Just(Era::V2)],
        parts in prop::collection::vec((any::<prop::sample::Index>(), prop::collection::vec(kv(), 1..12), 0i64..3), 1..6),
        min in 0i64..40,
    ) {
        // plain runs broken by wrappers (or batches) and by gaps in the offsets (a compacted log)
        let (mut data, mut base) = (Vec::new(), 0);
        for (codec, records, gap) in &parts {
            let codec = *codec.get(&codecs(era));
            data.extend(batch(era, codec, base + gap, records));
            base += gap + records.len() as i64;
        }
        agree(era, &data, &options(min, 1 << 24))?;
        let mut cut = data.clone();
        cut.truncate(data.len() - 1); // the last entry partial
        agree(era, &cut, &options(min, 1 << 24))?;
    }

    #[test]
    fn the_decompression_bound_holds_alike((era, codec, batches) in input(), max in 0usize..20_000) {
        agree(era, &blob(era, codec, &batches), &options(0, max))?;
    }
}

#[test]
fn a_raw_snappy_v2_batch_reads_the_same() {
    // librdkafka's v2 batches: one raw snappy block without xerial framing
    let records: Vec<Vec<u8>> = (0..50).map(|i| format!("value {i}").repeat(20).into_bytes()).collect();
    let mut section = Vec::new();
    for (i, r) in records.iter().enumerate() {
        let mut body = vec![0u8]; // attributes
        body.push(0); // timestamp delta 0
        body.push((i as u8) << 1); // offset delta
        body.push(1); // key length -1
        let mut v = (r.len() as u32) << 1;
        while v >= 0x80 {
            body.push((v as u8) | 0x80);
            v >>= 7;
        }
        body.push(v as u8);
        body.extend_from_slice(r);
        body.push(0); // no headers
        let mut len = (body.len() as u32) << 1;
        while len >= 0x80 {
            section.push((len as u8) | 0x80);
            len >>= 7;
        }
        section.push(len as u8);
        section.extend(body);
    }
    let mut compressed = Vec::new();
    gregor_protocol::compression::snappy::compress_raw(&section, &mut compressed).unwrap();
    let mut batch = RecordBatchBuilder::new(Compression::None).base_offset(7);
    batch.append(5, None, Some(b"x")).unwrap();
    let mut batch = batch.finish().unwrap().to_vec();
    batch.truncate(61);
    batch[21..23].copy_from_slice(&(Compression::Snappy.attribute_bits() as i16).to_be_bytes());
    batch[23..27].copy_from_slice(&49i32.to_be_bytes()); // last offset delta
    batch[57..61].copy_from_slice(&50i32.to_be_bytes()); // record count
    batch.extend(compressed);
    let length = (batch.len() - 12) as i32;
    batch[8..12].copy_from_slice(&length.to_be_bytes());
    let crc = crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    let blob = Bytes::from(batch);
    let got = lazy(&blob, &options(0, 1 << 20), false).unwrap();
    assert_eq!(got, whole(&blob, &options(0, 1 << 20)).unwrap());
    assert_eq!(got.len(), 50);
    assert_eq!(got[3].value.as_deref(), Some(records[3].as_slice()));
    assert_eq!(got[3].offset, 10);
}

#[test]
fn plain_messages_in_a_row_are_one_batch_read_again_as_iterated() {
    let kvs = |n: usize, tag: &str| -> Vec<Kv> {
        (0..n).map(|i| (Some(format!("k{i}").into_bytes()), Some(format!("{tag} {i}").into_bytes()))).collect()
    };
    // 100 plain messages, a gzip wrapper of 5, 10 plain, then a gap of 3 offsets and 4 plain
    let mut data = batch(Era::V0, Compression::None, 0, &kvs(100, "a"));
    data.extend(batch(Era::V0, Compression::Gzip, 100, &kvs(5, "b")));
    data.extend(batch(Era::V0, Compression::None, 105, &kvs(10, "c")));
    data.extend(batch(Era::V0, Compression::None, 118, &kvs(4, "d")));
    let blob = Bytes::from(data);
    let batches: Vec<_> =
        LazyBatches::message_v0(blob.clone(), &options(0, 1 << 20)).collect::<Result<_, _>>().unwrap();
    let spans: Vec<(i64, i64, i32)> =
        batches.iter().map(|b| (b.header().base_offset, b.header().last_offset(), b.header().record_count)).collect();
    // a gap in the offsets does not end a run: the records carry their own offsets
    assert_eq!(spans, vec![(0, 99, 100), (104, 104, 1), (105, 121, 14)]);
    assert_eq!(batches[2].next_offset(), 122);
    // the run's bytes are its entries as they came
    assert_eq!(batches[0].raw().len() + batches[1].raw().len() + batches[2].raw().len(), blob.len());
    let records: Vec<Record> = LazyRecords::new(batches, 1 << 20).collect::<Result<_, _>>().unwrap();
    assert_eq!(records, whole_v0(&blob, &options(0, 1 << 20)).unwrap());
    let offsets: Vec<i64> = records.iter().map(|r| r.offset).collect();
    assert_eq!(&offsets[113..], &[113, 114, 118, 119, 120, 121]);

    // from offset 50: the run begins there; a v0 message then a v1 one: two runs
    let batches: Vec<_> =
        LazyBatches::message_v0(blob.clone(), &options(50, 1 << 20)).collect::<Result<_, _>>().unwrap();
    assert_eq!((batches[0].header().base_offset, batches[0].header().record_count), (50, 50));
    let mut mixed = batch(Era::V0, Compression::None, 0, &kvs(3, "v0"));
    mixed.extend(batch(Era::V1, Compression::None, 3, &kvs(3, "v1")));
    let mixed = Bytes::from(mixed);
    let batches: Vec<_> = LazyBatches::new(mixed.clone(), &options(0, 1 << 20)).collect::<Result<_, _>>().unwrap();
    let magics: Vec<(i8, i32)> = batches.iter().map(|b| (b.header().magic, b.header().record_count)).collect();
    assert_eq!(magics, vec![(0, 3), (1, 3)]);
    let records: Vec<Record> = LazyRecords::new(batches, 1 << 20).collect::<Result<_, _>>().unwrap();
    assert_eq!(records, whole(&mixed, &options(0, 1 << 20)).unwrap());
    assert_eq!(records[4].timestamp, 1001);
}

#[test]
fn a_bad_message_after_a_run_ends_the_walk_after_the_run() {
    let kvs: Vec<Kv> = (0..20).map(|i| (None, Some(vec![b'x'; i]))).collect();
    let mut data = batch(Era::V0, Compression::None, 0, &kvs);
    // the CRC of the 11th message (offset 10) broken
    let mut at = 0;
    for _ in 0..10 {
        at += 12 + i32::from_be_bytes(data[at + 8..at + 12].try_into().unwrap()) as usize;
    }
    data[at + 12] ^= 0xff;
    let mut walk = LazyBatches::message_v0(Bytes::from(data), &options(0, 1 << 20));
    let first = walk.next().unwrap().unwrap();
    assert_eq!((first.header().base_offset, first.header().record_count), (0, 10));
    let err = walk.next().unwrap().unwrap_err();
    assert!(err.to_string().contains("CRC") || err.to_string().contains("crc"), "{err}");
    assert!(walk.next().is_none());
}

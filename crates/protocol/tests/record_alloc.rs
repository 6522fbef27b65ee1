//! The producer's memory goal (issue 25/26): appending a record to a batch costs its wire size
//! and nothing else. Once the builder's buffer has room, [`RecordBatchBuilder::append`] and
//! `append_with_headers` allocate nothing; reading an uncompressed batch back allocates
//! nothing per record either (keys, values and headers are slices of the fetched bytes).
//!
//! Allocations are counted on the test's own thread (the harness's threads allocate too).

use gregor_protocol::message::DecodeOptions;
use gregor_protocol::record::{Batches, RecordBatchBuilder};
use gregor_protocol::Compression;

gregor_testkit::counting_allocator!(ALLOCATOR);

#[test]
fn appending_and_reading_records_allocates_nothing_per_record() {
    let value = [b'v'; 100];
    let keys: Vec<String> = (0..2000).map(|i| format!("key-{i:06}")).collect();
    for codec in [Compression::None, Compression::Lz4, Compression::Zstd] {
        let mut builder = RecordBatchBuilder::with_capacity(codec, 1 << 20);
        // warm-up: the first records (nothing should be lazily allocated, but measure after)
        for (i, key) in keys[..100].iter().enumerate() {
            builder.append(1_700_000_000_000 + i as i64, Some(key.as_bytes()), Some(&value)).unwrap();
        }
        let before = ALLOCATOR.thread_allocations();
        for (i, key) in keys[100..].iter().enumerate() {
            let ts = 1_700_000_000_100 + i as i64;
            let headers = [("trace", Some(key.as_bytes())), ("codec", None)];
            let size = builder.size_of_next(ts, Some(key.as_bytes()), Some(&value), &headers);
            assert!(builder.len() + size <= builder.capacity());
            builder.append_with_headers(ts, Some(key.as_bytes()), Some(&value), &headers).unwrap();
        }
        let per_record = ALLOCATOR.thread_allocations() - before;
        assert_eq!(per_record, 0, "{codec}: {per_record} allocations for 1,900 appends");
        let bytes = builder.finish().unwrap();

        let batch = Batches::new(bytes, &DecodeOptions::default()).next().unwrap().unwrap();
        let mut records = batch.records();
        records.next().unwrap().unwrap(); // the first slice of a Vec-backed Bytes promotes it once
        let before = ALLOCATOR.thread_allocations();
        let mut n = 1;
        for r in records {
            let r = r.unwrap();
            n += 1;
            assert_eq!(r.value.as_deref(), Some(&value[..]));
            assert!(r.headers.iter().all(|h| h.key_str().is_some()));
        }
        assert_eq!(n, 2000);
        assert_eq!(ALLOCATOR.thread_allocations() - before, 0, "{codec}: reading allocates per record");
    }
}

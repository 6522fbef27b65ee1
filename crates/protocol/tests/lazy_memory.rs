//! What the lazy reader holds while it iterates a compressed set that expands to 16 or 64 MiB
//! (15 to 270 times its size): the peak of the process's live heap, counted by the testkit's
//! allocator, stays near one window of the expansion, where the whole-set reader holds all of
//! it. One test in this binary: it measures the process's heap. (libzstd allocates its window
//! with its own malloc, which this allocator does not see.)

use bytes::Bytes;
use gregor_protocol::message::DecodeOptions;
use gregor_protocol::record::{Batches, LazyBatches, LazyRecords, RecordBatchBuilder};
use gregor_protocol::{Compression, Message, MessageAndOffset, MessageSet};

gregor_testkit::counting_allocator!(ALLOCATOR);

/// Inner messages: 1 KiB values, alike but for their offset (1024 of them per MiB).
const VALUE: usize = 1024;

fn value(i: usize) -> Vec<u8> {
    let mut v = vec![b'x'; VALUE];
    v[..8].copy_from_slice(&(i as u64).to_be_bytes());
    v
}

/// One compressed entry holding every message: a Message v0 wrapper or a RecordBatch v2.
fn entry(codec: Compression, v2: bool, messages: usize) -> Bytes {
    if v2 {
        let mut b = RecordBatchBuilder::new(codec);
        for i in 0..messages {
            b.append(0, None, Some(&value(i))).unwrap();
        }
        return b.finish().unwrap();
    }
    let inner: Vec<MessageAndOffset> = (0..messages)
        .map(|i| MessageAndOffset::new(i as i64, Message::new(None, Some(Bytes::from(value(i))))))
        .collect();
    MessageSet::encode(&[MessageSet::wrap(&inner, codec).unwrap()]).unwrap().into_bytes()
}

/// The peak of live heap above what was live before, while `f` runs.
fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = ALLOCATOR.live();
    ALLOCATOR.reset_peak();
    let out = f();
    (out, ALLOCATOR.peak().saturating_sub(before))
}

#[test]
fn a_set_expanding_to_tens_of_mib_is_read_in_a_window() {
    let options = DecodeOptions::default();
    // codec, RecordBatch v2 or a Message v0 wrapper, MiB expanded, bound on the peak
    let cases = [
        (Compression::Gzip, false, 64, 256 << 10),
        (Compression::Snappy, false, 64, 256 << 10),
        (Compression::Lz4, false, 16, 512 << 10),
        (Compression::Gzip, true, 16, 256 << 10),
        (Compression::Snappy, true, 16, 256 << 10),
        (Compression::Lz4, true, 16, 512 << 10),
        (Compression::Zstd, true, 16, 256 << 10),
    ];
    for (codec, v2, mib, bound) in cases {
        let messages = mib * 1024;
        let blob = entry(codec, v2, messages);
        let era = if v2 { "RecordBatch v2" } else { "Message v0 wrapper" };
        let ((count, sum), lazy_peak) = peak_during(|| {
            let batches = LazyBatches::new(blob.clone(), &options).collect::<Result<Vec<_>, _>>().unwrap();
            let mut records = LazyRecords::new(batches, options.max_decompressed_bytes);
            let (mut count, mut sum) = (0usize, 0u64);
            for r in records.by_ref() {
                let r = r.unwrap();
                let v = r.value.unwrap();
                assert_eq!(v.len(), VALUE);
                assert_eq!(r.offset as usize, count, "{codec} {era}");
                sum += u64::from_be_bytes(v[..8].try_into().unwrap());
                count += 1;
            }
            (count, sum)
        });
        assert_eq!(count, messages, "{codec} {era}");
        assert_eq!(sum, (messages as u64 * (messages as u64 - 1)) / 2);
        let (_, whole_peak) = peak_during(|| {
            let batch = Batches::new(blob.clone(), &options).next().unwrap().unwrap();
            batch.records().count()
        });
        println!(
            "{codec} {era}: {} KiB compressed, {mib} MiB expanded; peak held while iterating: lazy {} KiB, whole-set {} KiB",
            blob.len() >> 10,
            lazy_peak >> 10,
            whole_peak >> 10
        );
        assert!(lazy_peak < bound, "{codec} {era}: the lazy reader peaked at {lazy_peak} bytes (bound {bound})");
        assert!(whole_peak > mib << 20, "{codec} {era}: the whole-set reader holds the expansion ({whole_peak})");
    }
}

//! What the lazy reader holds for a chunk of small uncompressed messages (a Fetch answer of
//! Kafka 0.8.2 without compression): about nothing beyond the chunk itself, as the messages in a
//! row are one batch, read again as they are iterated. Before, it made a batch and a record of
//! every message up front: twice the chunk's size for 100-byte messages. One test in this
//! binary: it measures the process's heap.

use bytes::Bytes;
use gregor_protocol::message::DecodeOptions;
use gregor_protocol::record::{LazyBatches, LazyRecords};
use gregor_protocol::{Message, MessageAndOffset, MessageSet};

gregor_testkit::counting_allocator!(ALLOCATOR);

#[test]
fn a_chunk_of_small_plain_messages_costs_a_few_hundred_bytes_beyond_its_own() {
    // 8,000 messages of 100 bytes from offset 5,000: a 1 MiB chunk
    let messages: Vec<MessageAndOffset> = (0..8_000)
        .map(|i| {
            let value = format!("{i:>100}").into_bytes();
            MessageAndOffset::new(5_000 + i, Message::new(None, Some(Bytes::from(value))))
        })
        .collect();
    let blob = MessageSet::encode(&messages).unwrap().into_bytes();
    assert_eq!(blob.len(), 8_000 * 126);
    let options = DecodeOptions { min_offset: 5_000, ..DecodeOptions::default() };
    for v0 in [true, false] {
        let before = ALLOCATOR.live();
        ALLOCATOR.reset_peak();
        let walk =
            if v0 { LazyBatches::message_v0(blob.clone(), &options) } else { LazyBatches::new(blob.clone(), &options) };
        let batches = walk.collect::<Result<Vec<_>, _>>().unwrap();
        assert_eq!(batches.len(), 1, "one run");
        let mut records = LazyRecords::new(batches, options.max_decompressed_bytes);
        let held = ALLOCATOR.peak().saturating_sub(before);
        // the chunk's bookkeeping: one batch, its options, the list of one
        assert!(held < 1024, "v0 {v0}: {held} bytes held for a chunk of 8,000 messages");
        let mut count = 0;
        for r in records.by_ref() {
            let r = r.unwrap();
            assert_eq!(r.offset, 5_000 + count);
            assert_eq!(r.value.unwrap(), format!("{count:>100}").as_bytes());
            count += 1;
        }
        assert_eq!(count, 8_000);
        // reading them (one record at a time) adds its reader, not a copy of any message
        let peak = ALLOCATOR.peak().saturating_sub(before);
        assert!(peak < 2048, "v0 {v0}: a peak of {peak} bytes while reading");
    }
}

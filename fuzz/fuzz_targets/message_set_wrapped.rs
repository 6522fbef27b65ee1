//! A compressed wrapper around fuzzed inner messages, so that MessageSet::decode gets past the
//! CRC checks into decompression and wrapper expansion (the plain message_set target rarely
//! does: libFuzzer cannot fix a CRC). The first byte picks the codec (gzip, snappy, lz4), the
//! rest is the inner message set: its entries' CRCs are fixed up, it is compressed with the
//! crate's own compressor and wrapped in one valid wrapper message, then decoded and walked
//! with the invariants of gregor_protocol_fuzz::walk_set.
#![no_main]

use gregor_protocol::compression::{self, Compression};
use gregor_protocol::{Message, MessageAndOffset, MessageSet};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, inner)) = data.split_first() else { return };
    // big inputs only slow the search down (they are compressed and decoded twice)
    if inner.len() > 16 * 1024 {
        return;
    }
    let codec = [Compression::Gzip, Compression::Snappy, Compression::Lz4][usize::from(selector % 3)];
    let mut inner = inner.to_vec();
    gregor_protocol_fuzz::fix_crcs(&mut inner);
    let mut compressed = Vec::new();
    compression::compress(codec, &inner, &mut compressed).expect("compress");
    // the wrapper's offset: the selector's high bits, as a small offset
    let offset = i64::from(selector >> 2);
    let wrapper = Message { attributes: codec.attribute_bits(), key: None, value: Some(compressed.into()) };
    let set = MessageSet::encode(&[MessageAndOffset::new(offset, wrapper)]).expect("encode");
    gregor_protocol_fuzz::walk_set(&set);
});

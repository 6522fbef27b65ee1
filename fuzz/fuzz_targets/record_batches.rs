//! A fetched `records` blob of any magic (RecordBatch v2, message v0/v1 entries) walked with
//! `record::Batches` and every batch's records (see gregor_protocol_fuzz::walk_records); and,
//! with the first byte as codec selector (% 5), the rest cut into records, built with
//! `RecordBatchBuilder` and read back (gregor_protocol_fuzz::build_and_read).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    gregor_protocol_fuzz::walk_records(&gregor_protocol_fuzz::bytes(data));
    if let Some((&selector, rest)) = data.split_first() {
        if rest.len() <= 16 * 1024 {
            gregor_protocol_fuzz::build_and_read(gregor_protocol_fuzz::codec_any(selector), rest);
        }
    }
});

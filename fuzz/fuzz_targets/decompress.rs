//! First byte picks the codec (% 5: none, gzip, snappy, lz4, zstd), the rest is decompressed with
//! compression::decompress and max_output 1 MiB (see gregor_protocol_fuzz::decompress for the
//! invariants checked).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, input)) = data.split_first() else { return };
    gregor_protocol_fuzz::decompress(gregor_protocol_fuzz::codec_any(selector), input);
});

//! Raw MessageSet bytes: MessageSet::from_bytes(data).decode(max_decompressed_bytes 1 MiB) and a
//! walk of entries(), with the invariants of gregor_protocol_fuzz::walk_set.
#![no_main]

use gregor_protocol::MessageSet;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    gregor_protocol_fuzz::walk_set(&MessageSet::from_bytes(gregor_protocol_fuzz::bytes(data)));
});

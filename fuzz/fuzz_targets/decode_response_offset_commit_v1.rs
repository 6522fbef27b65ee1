//! Bytes after a correlation id, decoded as the response to a OffsetCommitRequest (v1); a decode that succeeds must
//! re-encode to the identical bytes.
#![no_main]

use gregor_protocol::messages::OffsetCommitRequest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    gregor_protocol_fuzz::response::<OffsetCommitRequest>(1, data);
});

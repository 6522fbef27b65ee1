//! Bytes after a correlation id, decoded as the response to a OffsetFetchRequest (v0 and v1, same layout); a decode that succeeds must
//! re-encode to the identical bytes.
#![no_main]

use gregor_protocol::messages::OffsetFetchRequest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let v0 = gregor_protocol_fuzz::response::<OffsetFetchRequest>(0, data);
    let v1 = gregor_protocol_fuzz::response::<OffsetFetchRequest>(1, data);
    assert_eq!(v0, v1, "v0 and v1 have the same layout");
});

//! Bytes after a correlation id, decoded as the response to a ConsumerMetadataRequest (v0); a decode that succeeds must
//! re-encode to the identical bytes.
#![no_main]

use gregor_protocol::messages::ConsumerMetadataRequest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    gregor_protocol_fuzz::response::<ConsumerMetadataRequest>(0, data);
});

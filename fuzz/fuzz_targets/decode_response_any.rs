//! Bytes after a correlation id, decoded as the response to one of the modern APIs in one of
//! its versions, flexible ones included: the first byte picks the API, the second the version
//! (modulo its range). A decode that succeeds must re-encode and decode again to an equal value
//! (gregor_protocol_fuzz::response_stable).
#![no_main]

use gregor_protocol::messages::*;
use gregor_protocol_fuzz::response_stable;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [api, version, body @ ..] = data else { return };
    gregor_protocol_fuzz::any_modern_api!(response_stable, *api, *version, body);
});

//! Bytes after a request header, decoded as the request of one of the modern APIs in one of its
//! versions, flexible ones included, as a broker (the FakeCluster's modern mode) reads them: the
//! first byte picks the API, the second the version (modulo its range). A decode that succeeds
//! must re-encode and decode again to an equal value (gregor_protocol_fuzz::request_stable).
#![no_main]

use gregor_protocol::messages::*;
use gregor_protocol_fuzz::request_stable;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [api, version, body @ ..] = data else { return };
    gregor_protocol_fuzz::any_modern_api!(request_stable, *api, *version, body);
});

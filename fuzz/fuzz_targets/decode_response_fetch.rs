//! Bytes after a correlation id, decoded as the response to a FetchRequest (v0); a decode that succeeds must
//! re-encode to the identical bytes.
#![no_main]

use gregor_protocol::messages::FetchRequest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(resp) = gregor_protocol_fuzz::response::<FetchRequest>(0, data) else { return };
    for topic in &resp.topics {
        for p in &topic.partitions {
            gregor_protocol_fuzz::walk_set(&p.message_set);
            let _ = p.messages(&topic.topic, 0);
        }
    }
});

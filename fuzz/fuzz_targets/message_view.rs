//! One message's bytes (after a selector byte: bit 0 set = its CRC fixed up, so the checks
//! past the CRC are reached): `MessageView::parse` and `Message::decode`, which keep separate
//! copies of the checks, give the same fields or the same error.
#![no_main]

use gregor_protocol::{Message, MessageLocation, MessageView};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    let mut bytes = rest.to_vec();
    if selector & 1 == 1 && bytes.len() >= 4 {
        let crc = crc32fast::hash(&bytes[4..]);
        bytes[..4].copy_from_slice(&crc.to_be_bytes());
    }
    let parsed = MessageView::parse(&bytes, MessageLocation::default);
    let decoded = Message::decode(gregor_protocol_fuzz::bytes(&bytes), MessageLocation::default);
    match (decoded, parsed) {
        (Ok(d), Ok(p)) => {
            assert_eq!((d.attributes, d.key.as_deref(), d.value.as_deref()), (p.attributes, p.key, p.value));
        }
        (Err(d), Err(p)) => assert_eq!(d.to_string(), p.to_string()),
        (d, p) => panic!("decode {d:?}, parse {p:?}"),
    }
});

//! Bytes read as a schema-id framed Avro message (`0x00`, int32 schema id, datum) by a
//! `gregor_serde::FramedAvroDecoder` whose registry holds the fixed schemas under ids 0 to 6;
//! the same bytes through `split_header`, `StringDecoder` and `BytesDecoder`. A decode that
//! succeeds agrees with the plain `AvroDecoder` of the id's schema, and re-encodes with
//! `FramedAvroEncoder` to a frame that decodes to the same id and value.
#![no_main]

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use gregor_protocol_fuzz::avro::{same, writers};
use gregor_serde::{
    split_header, AvroDecoder, BytesDecoder, Decoder, Encoder, Error, FramedAvroDecoder, FramedAvroEncoder,
    InMemoryRegistry, StringDecoder, HEADER_LEN, MAGIC_BYTE,
};
use libfuzzer_sys::fuzz_target;

fn registry() -> &'static Arc<InMemoryRegistry> {
    static REGISTRY: OnceLock<Arc<InMemoryRegistry>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let registry = Arc::new(InMemoryRegistry::new());
        for (id, (writer, _)) in writers().iter().enumerate() {
            registry.register(id as i32, writer.clone()).unwrap();
        }
        registry
    })
}

fuzz_target!(|data: &[u8]| {
    // the framing alone
    match split_header(data) {
        Ok((id, payload)) => {
            assert!(data.len() >= HEADER_LEN && data[0] == MAGIC_BYTE);
            assert_eq!(id, i32::from_be_bytes(data[1..5].try_into().unwrap()));
            assert_eq!(payload, &data[HEADER_LEN..]);
        }
        Err(Error::BadMagic { found }) => assert_eq!(Some(&found), data.first().filter(|b| **b != MAGIC_BYTE)),
        Err(Error::FrameTooShort { len }) => {
            assert!(len == data.len() && len < HEADER_LEN && data.first().is_none_or(|b| *b == MAGIC_BYTE))
        }
        Err(e) => panic!("split_header: {e}"),
    }
    // the plain decoders
    let text = StringDecoder::new().decode(data);
    assert_eq!(text.as_deref().ok(), std::str::from_utf8(data).ok());
    let text2 = StringDecoder::new().decode_bytes(Bytes::copy_from_slice(data));
    assert_eq!(text.ok(), text2.ok());
    let raw: Bytes = BytesDecoder.decode(data).unwrap();
    assert_eq!(&raw[..], data);

    // the framed Avro decoder
    let decoder = FramedAvroDecoder::new(registry().clone(), None).unwrap();
    let Ok((id, value)) = decoder.decode_framed(data) else { return };
    let schema = writers()[id as usize].0.clone();
    let plain = AvroDecoder::new((*schema).clone(), None).unwrap().decode(&data[HEADER_LEN..]).unwrap();
    assert!(same(&plain, &value), "framed and plain decodes differ");
    let frame = FramedAvroEncoder::new(id, (*schema).clone()).unwrap().encode(&value).unwrap();
    let (id2, again) = decoder.decode_framed(&frame).unwrap();
    assert_eq!(id2, id);
    assert!(same(&again, &value), "decode(encode(v)) != v");
});

//! A selector byte (writer schema `n % 7` of `gregor_protocol_fuzz::avro::WRITERS`; bit 7: also
//! resolve to its evolved reader schema) and an Avro binary datum, decoded by
//! `gregor_serde::AvroDecoder`: no panic, self-resolution changes nothing, decoded values
//! re-encode to a fixed point, resolved values are values of the reader schema.
#![no_main]

use gregor_protocol_fuzz::avro::{check_with, fixed_codecs};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, datum)) = data.split_first() else { return };
    let codecs = fixed_codecs();
    let (as_written, with_reader) = &codecs[usize::from(selector) % codecs.len()];
    check_with(if selector & 0x80 != 0 { with_reader } else { as_written }, datum);
});

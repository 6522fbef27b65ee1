//! Any writer schema, any reader schema and any datum: `[u16 BE length][writer schema JSON]
//! [u16 BE length][reader schema JSON, empty for none][datum]`. Schemas apache-avro refuses to
//! parse are skipped (and those it would panic on: see
//! `gregor_protocol_fuzz::avro::parses_without_panic`); the rest go through `gregor_serde`'s name
//! resolution, datum reader and schema resolution with the invariants of `avro_datum`.
#![no_main]

use gregor_protocol_fuzz::avro::{check_datum, parses_without_panic};
use gregor_serde::apache_avro::Schema;
use libfuzzer_sys::fuzz_target;

fn parse(text: &[u8]) -> Option<Schema> {
    let text = std::str::from_utf8(text).ok()?;
    parses_without_panic(text).then(|| Schema::parse_str(text).ok()).flatten()
}

fn field(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = data.split_first_chunk::<2>()?;
    let len = usize::from(u16::from_be_bytes(*len));
    (rest.len() >= len).then(|| rest.split_at(len))
}

fuzz_target!(|data: &[u8]| {
    let Some((writer, rest)) = field(data) else { return };
    let Some((reader, datum)) = field(rest) else { return };
    let Some(writer) = parse(writer) else { return };
    let reader = match reader {
        [] => None,
        text => match parse(text) {
            Some(schema) => Some(schema),
            None => return,
        },
    };
    check_datum(&writer, reader.as_ref(), datum);
});

//! Snappy (codec 2) as Kafka writes it: xerial (`snappy-java`) framing.
//!
//! Layout: [`XERIAL_MAGIC`], int32 BE version 1, int32 BE compatible version
//! 1, then blocks of `[int32 BE compressed length][raw snappy block]`, each
//! block holding up to [`XERIAL_BLOCK_SIZE`] bytes of input. Input that does
//! not start with the magic is read as one plain raw snappy block, as
//! `snappy-java` does.

use snap::raw::{decompress_len, max_compress_len, Decoder, Encoder};

use super::{rollback_on_error, CompressionError, Input, Limit};

/// The 8 bytes that start an xerial snappy stream: `0x82` `"SNAPPY"` `0x00`.
pub const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0x00];

/// Uncompressed bytes per xerial block, as `snappy-java` writes them (32 KiB).
pub const XERIAL_BLOCK_SIZE: usize = 32 * 1024;

/// Length of the xerial header: magic, version and compatible version.
pub(super) const XERIAL_HEADER_LEN: usize = 16;

/// Version and compatible version written after the magic.
const XERIAL_VERSION: i32 = 1;

/// Compress `input` in xerial framing appended to `out`: the 16-byte header
/// (version 1, compatible version 1), then one raw snappy block per 32 KiB
/// of input. Empty input gives the header alone.
pub fn compress(input: &[u8], out: &mut Vec<u8>) -> Result<(), CompressionError> {
    compress_parts(&[input], out)
}

/// As [`compress`], of `parts` one after the other (see [`super::for_each_block`]).
pub(super) fn compress_parts(parts: &[&[u8]], out: &mut Vec<u8>) -> Result<(), CompressionError> {
    out.extend_from_slice(&XERIAL_MAGIC);
    out.extend_from_slice(&XERIAL_VERSION.to_be_bytes());
    out.extend_from_slice(&XERIAL_VERSION.to_be_bytes());
    // room for every block at its worst at once, not grown block by block (doubling)
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let blocks = len.div_ceil(XERIAL_BLOCK_SIZE);
    out.reserve(
        blocks * 4
            + max_compress_len(XERIAL_BLOCK_SIZE).saturating_mul(len / XERIAL_BLOCK_SIZE)
            + max_compress_len(len % XERIAL_BLOCK_SIZE),
    );
    let mut encoder = Encoder::new();
    super::for_each_block(parts, XERIAL_BLOCK_SIZE, |chunk| {
        let start = out.len();
        out.resize(start + 4 + max_compress_len(chunk.len()), 0);
        let written = encoder.compress(chunk, &mut out[start + 4..]).map_err(CompressionError::Snappy)?;
        // A block of at most 32 KiB compresses to far less than 2 GiB.
        let length = i32::try_from(written).unwrap_or(i32::MAX);
        out[start..start + 4].copy_from_slice(&length.to_be_bytes());
        out.truncate(start + 4 + written);
        Ok(())
    })
}

/// Compress `input` as one plain raw snappy block (no framing) appended to
/// `out`.
pub fn compress_raw(input: &[u8], out: &mut Vec<u8>) -> Result<(), CompressionError> {
    let start = out.len();
    out.resize(start + max_compress_len(input.len()), 0);
    match Encoder::new().compress(input, &mut out[start..]) {
        Ok(written) => {
            out.truncate(start + written);
            Ok(())
        }
        Err(err) => {
            out.truncate(start);
            Err(CompressionError::Snappy(err))
        }
    }
}

/// Decompress snappy `input`, appending to `out`: xerial framing when the
/// input starts with [`XERIAL_MAGIC`] (any version numbers, any number of
/// blocks), otherwise one plain raw snappy block.
///
/// Each block's declared length is checked against what is left of
/// `max_output` before anything is allocated; over it the call fails with
/// [`CompressionError::TooLarge`]. On error `out` is left as it was.
pub fn decompress(input: &[u8], max_output: usize, out: &mut Vec<u8>) -> Result<(), CompressionError> {
    rollback_on_error(out, |out| {
        let limit = Limit::new(out, max_output);
        let mut decoder = Decoder::new();
        if !input.starts_with(&XERIAL_MAGIC) {
            return decompress_block(&mut decoder, input, limit, out);
        }
        let mut input = Input::new(input);
        input.take(XERIAL_HEADER_LEN, "xerial snappy header")?;
        while !input.is_empty() {
            let length = input.i32_be("xerial block length")?;
            let remaining = input.remaining();
            let block = match usize::try_from(length) {
                Ok(n) if n <= remaining => input.take(n, "xerial block")?,
                _ => return Err(CompressionError::XerialBlockLength { length, remaining }),
            };
            decompress_block(&mut decoder, block, limit, out)?;
        }
        Ok(())
    })
}

/// Largest output a raw snappy block can produce per input byte.
pub(super) const MAX_EXPANSION: usize = 22;

/// Decompress one raw snappy block onto `out`, checking its declared length
/// against `limit` before allocating.
fn decompress_block(
    decoder: &mut Decoder,
    block: &[u8],
    limit: Limit,
    out: &mut Vec<u8>,
) -> Result<(), CompressionError> {
    let len = decompress_len(block).map_err(CompressionError::Snappy)?;
    limit.check(out, len)?;
    // A snappy element expands at most 64 / 3 times (a 3-byte copy of 64 bytes), so a block
    // that claims more than 22 times its size is lying: refuse it before allocating.
    if len > block.len().saturating_mul(MAX_EXPANSION) {
        return Err(CompressionError::Snappy(snap::Error::TooBig {
            given: len as u64,
            max: (block.len() * MAX_EXPANSION) as u64,
        }));
    }
    let start = out.len();
    out.resize(start + len, 0);
    let written = decoder.decompress(block, &mut out[start..]).map_err(CompressionError::Snappy)?;
    out.truncate(start + written);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::mixed_data;
    use super::*;

    #[test]
    fn a_block_claiming_more_than_snappy_can_expand_is_refused_before_allocating() {
        // raw snappy whose varint header claims ~256 MiB from 6 bytes
        let mut out = Vec::new();
        let err = decompress(&[0xfe, 0xff, 0xff, 0x7f, 0x00, 0x01], 1 << 30, &mut out).unwrap_err();
        assert!(matches!(err, CompressionError::Snappy(snap::Error::TooBig { .. })), "{err}");
        assert_eq!(out.capacity(), 0);
    }

    macro_rules! fixture {
        ($name:literal) => {
            include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/kafka-0.8.2.2/", $name)).as_slice()
        };
    }

    fn unsnap(input: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        decompress(input, 1 << 20, &mut out).unwrap();
        out
    }

    /// The (compressed, uncompressed) sizes of each block of an xerial stream.
    fn xerial_blocks(stream: &[u8]) -> Vec<(usize, usize)> {
        assert_eq!(stream[..8], XERIAL_MAGIC);
        let mut rest = &stream[16..];
        let mut blocks = Vec::new();
        while !rest.is_empty() {
            let len = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
            let block = &rest[4..4 + len];
            blocks.push((len, decompress_len(block).unwrap()));
            rest = &rest[4 + len..];
        }
        blocks
    }

    #[test]
    fn round_trips() {
        for len in [0, 1, 100, 200 * 1024] {
            let data = mixed_data(len);
            let mut packed = Vec::new();
            compress(&data, &mut packed).unwrap();
            assert_eq!(unsnap(&packed), data, "len {len}");
            let sizes: Vec<usize> = xerial_blocks(&packed).iter().map(|b| b.1).collect();
            let expected: Vec<usize> = data.chunks(XERIAL_BLOCK_SIZE).map(<[u8]>::len).collect();
            assert_eq!(sizes, expected, "len {len}");

            let mut raw = Vec::new();
            compress_raw(&data, &mut raw).unwrap();
            assert!(!raw.starts_with(&XERIAL_MAGIC));
            assert_eq!(unsnap(&raw), data, "raw len {len}");
        }
    }

    #[test]
    fn header_is_xerial_version_1() {
        let mut packed = b"ab".to_vec();
        compress(b"", &mut packed).unwrap();
        assert_eq!(packed, b"ab\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01");
        assert!(unsnap(&packed[2..]).is_empty());
    }

    #[test]
    fn fixture_set1_decodes() {
        // produce_v0_snappy_set1: value at 77, 110 bytes, one block 90 -> 153.
        let value = &fixture!("produce_v0_snappy_set1.req.bin")[77..77 + 110];
        assert_eq!(xerial_blocks(value), [(90, 153)]);
        let set = unsnap(value);
        assert_eq!(set.len(), 153);
        assert_eq!(set[8..12], [0, 0, 0, 0x27]);
        assert_eq!(&set[22..31], b"snappy-k0");
        assert_eq!(&set[35..51], b"snappy message 0");
        assert_eq!(&set[137..153], b"snappy message 2");
    }

    #[test]
    fn fixture_multiblock_decodes() {
        // produce_v0_snappy_multiblock: value at 81, 2187 bytes, blocks
        // 1610 -> 32768 and 553 -> 11294.
        let value = &fixture!("produce_v0_snappy_multiblock.req.bin")[81..81 + 2187];
        assert_eq!(xerial_blocks(value), [(1610, 32768), (553, 11294)]);
        let set = unsnap(value);
        assert_eq!(set.len(), 44062);
        assert_eq!(&set[22..27], b"big-0");
        assert_eq!(set[27..31], 22000u32.to_be_bytes());
        assert!(set[31..].starts_with(b"snappy block tes"));
        assert_eq!(&set[22031 + 22..22031 + 27], b"big-1");

        // Our encoder cuts the same set into the same two blocks.
        let mut ours = Vec::new();
        compress(&set, &mut ours).unwrap();
        let sizes: Vec<usize> = xerial_blocks(&ours).iter().map(|b| b.1).collect();
        assert_eq!(sizes, [32768, 11294]);
        assert_eq!(ours[..16], value[..16]);
        assert_eq!(unsnap(&ours), set);

        // One byte short of the output is too large, even after a whole block.
        for limit in [0, 32768, 44061] {
            let err = decompress(value, limit, &mut Vec::new()).unwrap_err();
            assert!(matches!(err, CompressionError::TooLarge { limit: l } if l == limit), "{err:?}");
        }
    }

    #[test]
    fn java_console_producer_value_decodes() {
        // Written by snappy-java in Kafka's ConsoleProducer: value at 91,
        // 110 bytes, one block 90 -> 150.
        let value = &fixture!("java_console_producer_produce_v0_snappy.req.bin")[91..91 + 110];
        assert_eq!(xerial_blocks(value), [(90, 150)]);
        let set = unsnap(value);
        assert_eq!(set.len(), 150);
        assert_eq!(&set[22..25], b"jk0");
        assert_eq!(&set[29..50], b"java snappy message 0");
    }

    #[test]
    fn any_xerial_version_is_accepted() {
        let mut packed = Vec::new();
        compress(b"versions", &mut packed).unwrap();
        packed[8..16].copy_from_slice(&[0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(unsnap(&packed), b"versions");
    }

    #[test]
    fn truncated_at_every_length() {
        let value = &fixture!("produce_v0_snappy_set1.req.bin")[77..77 + 110];
        for len in 0..value.len() {
            let mut out = b"keep".to_vec();
            let result = decompress(&value[..len], 1 << 20, &mut out);
            if len == 16 {
                // The header alone is a valid, empty stream.
                assert!(result.is_ok() && out == b"keep");
                continue;
            }
            assert!(result.is_err(), "len {len}");
            assert_eq!(out, b"keep", "len {len}");
            if (8..16).contains(&len) {
                assert!(matches!(result, Err(CompressionError::Truncated { needed: 16, .. })), "{result:?}");
            }
        }
        let mut raw = Vec::new();
        compress_raw(&mixed_data(300), &mut raw).unwrap();
        for len in 0..raw.len() {
            assert!(decompress(&raw[..len], 1 << 20, &mut Vec::new()).is_err(), "raw len {len}");
        }
    }

    #[test]
    fn hostile_block_lengths() {
        let mut stream = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01".to_vec();
        for (length, tail) in [(i32::MAX, &b"\x00"[..]), (-1, b""), (i32::MIN, b"abc"), (5, b"abcd")] {
            let mut input = stream.clone();
            input.extend_from_slice(&length.to_be_bytes());
            input.extend_from_slice(tail);
            let err = decompress(&input, 1 << 20, &mut Vec::new()).unwrap_err();
            assert!(matches!(err, CompressionError::XerialBlockLength { length: l, .. } if l == length), "{err:?}");
        }
        assert_eq!(
            CompressionError::XerialBlockLength { length: i32::MAX, remaining: 1 }.to_string(),
            "xerial snappy block length 2147483647 is invalid with 1 bytes left"
        );
        // A block length field cut short.
        stream.extend_from_slice(&[0, 0]);
        let err = decompress(&stream, 1 << 20, &mut Vec::new()).unwrap_err();
        assert!(matches!(err, CompressionError::Truncated { needed: 4, available: 2, .. }), "{err:?}");
    }

    #[test]
    fn huge_declared_raw_length_is_too_large() {
        // Raw snappy declaring 2^32 - 1 bytes, followed by a tiny literal.
        let input = [0xff, 0xff, 0xff, 0xff, 0x0f, 0x00, b'x'];
        let err = decompress(&input, 1 << 20, &mut Vec::new()).unwrap_err();
        assert!(matches!(err, CompressionError::TooLarge { limit: 1_048_576 }), "{err:?}");
        // The same inside xerial framing.
        let mut framed = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x07".to_vec();
        framed.extend_from_slice(&input);
        let err = decompress(&framed, 1 << 20, &mut Vec::new()).unwrap_err();
        assert!(matches!(err, CompressionError::TooLarge { .. }), "{err:?}");
    }

    #[test]
    fn flipped_bytes_never_panic() {
        let value = fixture!("produce_v0_snappy_set1.req.bin")[77..77 + 110].to_vec();
        for i in 0..value.len() {
            for mask in [0x01, 0x80, 0xff] {
                let mut bad = value.clone();
                bad[i] ^= mask;
                let mut out = Vec::new();
                if decompress(&bad, 1 << 16, &mut out).is_ok() {
                    assert!(out.len() <= 1 << 16);
                }
            }
        }
    }
}

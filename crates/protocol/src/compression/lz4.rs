//! LZ4 (codec 3) as Kafka 0.8 writes it: an LZ4 frame whose header checksum
//! follows KAFKA-3160.
//!
//! Kafka 0.8 and 0.9 compute the frame header checksum over the magic number
//! as well as the frame descriptor, where the LZ4 specification hashes the
//! descriptor only; a 0.8.2 broker rejects a frame with the standard checksum
//! (error -1). [`compress`] therefore writes the Kafka 0.8 form,
//! [`compress_with`] can write either, and [`decompress`] accepts both.
//!
//! Frames written here: magic `04 22 4d 18`, FLG `0x60` (version 01,
//! independent blocks, no block checksum, no content size, no content
//! checksum), BD `0x40` (64 KiB blocks), the header checksum, blocks of
//! `[u32 LE size, high bit set = stored uncompressed][data]`, and a u32 0
//! end mark.

use lz4_flex::block::{
    compress_into, decompress_into, decompress_into_with_dict, get_maximum_output_size, DecompressError,
};
use xxhash_rust::xxh32::xxh32;

use super::{rollback_on_error, CompressionError, Input, Limit};

/// The LZ4 frame magic number 0x184D2204, as it appears on the wire.
pub const MAGIC: [u8; 4] = [0x04, 0x22, 0x4d, 0x18];

/// Uncompressed bytes per block in frames written here (64 KiB, BD `0x40`).
pub const BLOCK_SIZE: usize = 64 * 1024;

pub(super) const FRAME_MAGIC: u32 = u32::from_le_bytes(MAGIC);
/// Skippable frames use magics 0x184D2A50 to 0x184D2A5F.
pub(super) const SKIPPABLE_MAGIC: u32 = 0x184D_2A50;
pub(super) const SKIPPABLE_MASK: u32 = 0xFFFF_FFF0;

/// FLG written here: version 01 and block independence.
const FLG: u8 = 0x60;
/// BD written here: 64 KiB maximum block size.
const BD: u8 = 0x40;

pub(super) const FLG_VERSION_MASK: u8 = 0xc0;
pub(super) const FLG_VERSION_01: u8 = 0x40;
pub(super) const FLG_BLOCK_INDEPENDENCE: u8 = 0x20;
pub(super) const FLG_BLOCK_CHECKSUM: u8 = 0x10;
pub(super) const FLG_CONTENT_SIZE: u8 = 0x08;
pub(super) const FLG_CONTENT_CHECKSUM: u8 = 0x04;
pub(super) const FLG_RESERVED: u8 = 0x02;
pub(super) const FLG_DICTIONARY_ID: u8 = 0x01;
pub(super) const BD_RESERVED: u8 = 0x8f;

/// High bit of a block size: the block is stored uncompressed.
pub(super) const UNCOMPRESSED_BIT: u32 = 0x8000_0000;

/// The most output one byte of an LZ4 block can produce (a match length
/// extension byte of 255).
pub(super) const MAX_EXPANSION: usize = 255;

/// Window a linked (dependent) block may reach back into.
pub(super) const WINDOW: usize = 64 * 1024;

/// How the header checksum (HC) byte of an LZ4 frame is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum HeaderChecksum {
    /// Kafka 0.8/0.9 (KAFKA-3160): `(xxh32(magic ++ descriptor) >> 8) & 0xff`.
    /// The only form a 0.8.2 broker accepts; `0x1a` for FLG `0x60`, BD `0x40`.
    #[default]
    Kafka08,
    /// The LZ4 frame specification: `(xxh32(descriptor) >> 8) & 0xff`;
    /// `0x82` for FLG `0x60`, BD `0x40`. Rejected by a 0.8.2 broker.
    Standard,
}

impl HeaderChecksum {
    /// The checksum byte for a frame whose descriptor (FLG, BD and any
    /// optional fields, without the magic) is `descriptor`.
    pub(super) fn byte(self, descriptor: &[u8]) -> u8 {
        let hash = match self {
            HeaderChecksum::Kafka08 => {
                let mut header = [0; 4 + 2 + 8];
                header[..4].copy_from_slice(&MAGIC);
                header[4..4 + descriptor.len()].copy_from_slice(descriptor);
                xxh32(&header[..4 + descriptor.len()], 0)
            }
            HeaderChecksum::Standard => xxh32(descriptor, 0),
        };
        hash.to_le_bytes()[1]
    }
}

/// Compress `input` into one LZ4 frame in the Kafka 0.8 form, appended to
/// `out`; the frame starts `04 22 4d 18 60 40 1a`.
pub fn compress(input: &[u8], out: &mut Vec<u8>) -> Result<(), CompressionError> {
    compress_with(input, HeaderChecksum::Kafka08, out)
}

/// Compress `input` into one LZ4 frame with the given header checksum form,
/// appended to `out`.
///
/// Each 64 KiB of input becomes one independently compressed block, stored
/// uncompressed when compression does not make it smaller.
pub fn compress_with(input: &[u8], checksum: HeaderChecksum, out: &mut Vec<u8>) -> Result<(), CompressionError> {
    compress_parts(&[input], checksum, out)
}

/// As [`compress_with`], of `parts` one after the other (see [`super::for_each_block`]).
pub(super) fn compress_parts(
    parts: &[&[u8]],
    checksum: HeaderChecksum,
    out: &mut Vec<u8>,
) -> Result<(), CompressionError> {
    rollback_on_error(out, |out| {
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&[FLG, BD, checksum.byte(&[FLG, BD])]);
        super::for_each_block(parts, BLOCK_SIZE, |chunk| {
            let at = out.len();
            out.resize(at + 4 + get_maximum_output_size(chunk.len()), 0);
            let written = compress_into(chunk, &mut out[at + 4..]).map_err(CompressionError::Lz4Compress)?;
            // Sizes fit in 31 bits: a chunk is at most 64 KiB.
            let size = if written < chunk.len() {
                out.truncate(at + 4 + written);
                written as u32
            } else {
                out.truncate(at + 4);
                out.extend_from_slice(chunk);
                chunk.len() as u32 | UNCOMPRESSED_BIT
            };
            out[at..at + 4].copy_from_slice(&size.to_le_bytes());
            Ok(())
        })?;
        out.extend_from_slice(&0u32.to_le_bytes());
        Ok(())
    })
}

/// Decompress LZ4 `input`, appending to `out`.
///
/// Accepts one or more concatenated LZ4 frames (skippable frames are
/// skipped) with either header checksum form, linked or independent blocks,
/// block and content checksums (verified), a content size (checked against
/// `max_output` and the actual size) and block maximum sizes of 64 KiB to
/// 4 MiB. Dictionary ids are rejected. No buffer larger than the smaller of
/// the block maximum and what is left of `max_output` is allocated per block;
/// output beyond `max_output` fails with [`CompressionError::TooLarge`]. On
/// error `out` is left as it was.
pub fn decompress(input: &[u8], max_output: usize, out: &mut Vec<u8>) -> Result<(), CompressionError> {
    rollback_on_error(out, |out| {
        let limit = Limit::new(out, max_output);
        let mut input = Input::new(input);
        loop {
            let magic = input.u32_le("lz4 frame magic")?;
            if magic == FRAME_MAGIC {
                decompress_frame(&mut input, limit, out)?;
            } else if magic & SKIPPABLE_MASK == SKIPPABLE_MAGIC {
                let size = input.u32_le("lz4 skippable frame size")?;
                input.take(usize::try_from(size).unwrap_or(usize::MAX), "lz4 skippable frame")?;
            } else {
                return Err(CompressionError::Lz4Magic(magic));
            }
            if input.is_empty() {
                return Ok(());
            }
        }
    })
}

/// A frame's descriptor, read and checked.
pub(super) struct FrameHeader {
    pub(super) flg: u8,
    pub(super) block_max: usize,
    pub(super) content_size: Option<u64>,
}

/// Reads and checks the descriptor and header checksum of a frame whose magic has been read;
/// a declared content size over `room` fails with `exceeded`.
pub(super) fn read_frame_header(
    input: &mut Input<'_>,
    room: usize,
    exceeded: impl FnOnce() -> CompressionError,
) -> Result<FrameHeader, CompressionError> {
    let [flg, bd] = input.array("lz4 frame descriptor")?;
    let invalid = |reason| Err(CompressionError::Lz4Descriptor { flg, bd, reason });
    if flg & FLG_VERSION_MASK != FLG_VERSION_01 {
        return invalid("version must be 01");
    }
    if flg & FLG_RESERVED != 0 || bd & BD_RESERVED != 0 {
        return invalid("reserved bits are set");
    }
    if flg & FLG_DICTIONARY_ID != 0 {
        return invalid("dictionary ids are not supported");
    }
    let block_max = match (bd >> 4) & 0x07 {
        code @ 4..=7 => 1usize << (8 + 2 * code),
        _ => return invalid("block maximum size code must be 4 to 7"),
    };

    let mut descriptor = [flg, bd, 0, 0, 0, 0, 0, 0, 0, 0];
    let mut descriptor_len = 2;
    let mut content_size = None;
    if flg & FLG_CONTENT_SIZE != 0 {
        let bytes: [u8; 8] = input.array("lz4 content size")?;
        descriptor[2..].copy_from_slice(&bytes);
        descriptor_len = 10;
        let size = u64::from_le_bytes(bytes);
        if usize::try_from(size).map_or(true, |size| size > room) {
            return Err(exceeded());
        }
        content_size = Some(size);
    }
    let descriptor = &descriptor[..descriptor_len];
    let found = input.u8("lz4 header checksum")?;
    let kafka08 = HeaderChecksum::Kafka08.byte(descriptor);
    let standard = HeaderChecksum::Standard.byte(descriptor);
    if found != kafka08 && found != standard {
        return Err(CompressionError::Lz4HeaderChecksum { found, kafka08, standard });
    }
    Ok(FrameHeader { flg, block_max, content_size })
}

/// Decode one frame whose magic has been read.
fn decompress_frame(input: &mut Input<'_>, limit: Limit, out: &mut Vec<u8>) -> Result<(), CompressionError> {
    let FrameHeader { flg, block_max, content_size } = read_frame_header(input, limit.room(out), || limit.exceeded())?;

    let frame_start = out.len();
    loop {
        let word = input.u32_le("lz4 block size")?;
        if word == 0 {
            break;
        }
        let size = usize::try_from(word & !UNCOMPRESSED_BIT).unwrap_or(usize::MAX);
        if size > block_max {
            return Err(CompressionError::Lz4BlockSize { size, max: block_max });
        }
        let data = input.take(size, "lz4 block")?;
        if flg & FLG_BLOCK_CHECKSUM != 0 {
            verify("block", input.u32_le("lz4 block checksum")?, data)?;
        }
        if word & UNCOMPRESSED_BIT != 0 {
            limit.check(out, size)?;
            out.extend_from_slice(data);
            continue;
        }
        // No block can need more than the block maximum or 255 bytes per
        // input byte; bounding the buffer by both keeps a stream of tiny
        // blocks from costing a block-maximum allocation each.
        let bound = block_max.min(size.saturating_mul(MAX_EXPANSION));
        let room = limit.room(out);
        let capacity = bound.min(room);
        let at = out.len();
        out.resize(at + capacity, 0);
        let (before, block_out) = out.split_at_mut(at);
        let result = if flg & FLG_BLOCK_INDEPENDENCE != 0 {
            decompress_into(data, block_out)
        } else {
            let window = &before[frame_start.max(at.saturating_sub(WINDOW))..];
            decompress_into_with_dict(data, block_out, window)
        };
        match result {
            Ok(written) => out.truncate(at + written),
            Err(DecompressError::OutputTooSmall { .. }) if room < bound => return Err(limit.exceeded()),
            Err(err) => return Err(CompressionError::Lz4Block(err)),
        }
    }

    if flg & FLG_CONTENT_CHECKSUM != 0 {
        verify("content", input.u32_le("lz4 content checksum")?, &out[frame_start..])?;
    }
    let actual = (out.len() - frame_start) as u64;
    match content_size {
        Some(declared) if declared != actual => Err(CompressionError::Lz4ContentSize { declared, actual }),
        _ => Ok(()),
    }
}

/// Check `data` against the xxh32 checksum `expected` read from the frame.
pub(super) fn verify(what: &'static str, expected: u32, data: &[u8]) -> Result<(), CompressionError> {
    let actual = xxh32(data, 0);
    if actual != expected {
        return Err(CompressionError::Lz4Checksum { what, expected, actual });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::mixed_data;
    use super::*;

    macro_rules! fixture {
        ($name:literal) => {
            include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/kafka-0.8.2.2/", $name)).as_slice()
        };
    }

    fn unlz4(input: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        decompress(input, 1 << 20, &mut out).unwrap();
        out
    }

    /// The size words of each block of a frame written with FLG 0x60.
    fn block_words(frame: &[u8]) -> Vec<u32> {
        let mut rest = &frame[7..];
        let mut words = Vec::new();
        loop {
            let word = u32::from_le_bytes(rest[..4].try_into().unwrap());
            if word == 0 {
                assert_eq!(rest.len(), 4, "nothing after the end mark");
                return words;
            }
            words.push(word);
            rest = &rest[4 + (word & !UNCOMPRESSED_BIT) as usize..];
        }
    }

    /// A frame header with the given descriptor and a valid checksum.
    fn header(flg: u8, bd: u8, content_size: Option<u64>, form: HeaderChecksum) -> Vec<u8> {
        let mut frame = MAGIC.to_vec();
        frame.extend_from_slice(&[flg, bd]);
        if let Some(size) = content_size {
            frame.extend_from_slice(&size.to_le_bytes());
        }
        let hc = form.byte(&frame[4..]);
        frame.push(hc);
        frame
    }

    fn push_block(frame: &mut Vec<u8>, word: u32, data: &[u8]) {
        frame.extend_from_slice(&word.to_le_bytes());
        frame.extend_from_slice(data);
    }

    fn expect_err(input: &[u8], max_output: usize) -> CompressionError {
        let mut out = b"keep".to_vec();
        let err = decompress(input, max_output, &mut out).unwrap_err();
        assert_eq!(out, b"keep", "out restored after {err:?}");
        err
    }

    #[test]
    fn round_trips() {
        for len in [0, 1, 100, 200 * 1024] {
            let data = mixed_data(len);
            let mut packed = Vec::new();
            compress(&data, &mut packed).unwrap();
            assert_eq!(unlz4(&packed), data, "len {len}");
            let mut standard = Vec::new();
            compress_with(&data, HeaderChecksum::Standard, &mut standard).unwrap();
            assert_eq!(unlz4(&standard), data, "standard len {len}");
            let blocks = block_words(&packed).len();
            assert_eq!(blocks, data.len().div_ceil(BLOCK_SIZE), "len {len}");
        }
    }

    #[test]
    fn header_bytes() {
        let mut packed = Vec::new();
        compress(b"", &mut packed).unwrap();
        assert_eq!(packed, [0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x1a, 0, 0, 0, 0]);
        let mut packed = Vec::new();
        compress(&mixed_data(1000), &mut packed).unwrap();
        assert_eq!(packed[..7], [0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x1a]);
        let mut standard = b"x".to_vec();
        compress_with(b"abc", HeaderChecksum::Standard, &mut standard).unwrap();
        assert_eq!(standard[1..8], [0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82]);
        assert_eq!(HeaderChecksum::default(), HeaderChecksum::Kafka08);
    }

    #[test]
    fn incompressible_blocks_are_stored() {
        let noise = &mixed_data(3 * 4096)[2 * 4096..];
        let mut packed = Vec::new();
        compress(noise, &mut packed).unwrap();
        assert_eq!(block_words(&packed), [4096 | UNCOMPRESSED_BIT]);
        assert_eq!(&packed[11..11 + 4096], noise);
        assert_eq!(unlz4(&packed), noise);
        let mut packed = Vec::new();
        compress(&[b'k'; 4096], &mut packed).unwrap();
        assert!(block_words(&packed)[0] < 100);
    }

    #[test]
    fn fixture_set1_decodes() {
        // produce_v0_lz4_set1: value at 74, 107 bytes, one 92-byte block -> 135.
        let value = &fixture!("produce_v0_lz4_set1.req.bin")[74..74 + 107];
        assert_eq!(value[..7], [0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x1a]);
        assert_eq!(block_words(value), [92]);
        let set = unlz4(value);
        assert_eq!(set.len(), 135);
        assert_eq!(&set[22..28], b"lz4-k0");
        assert_eq!(&set[32..45], b"lz4 message 0");
        assert_eq!(&set[122..135], b"lz4 message 2");

        // Our encoding of the same set decodes back, in both header forms.
        for form in [HeaderChecksum::Kafka08, HeaderChecksum::Standard] {
            let mut ours = Vec::new();
            compress_with(&set, form, &mut ours).unwrap();
            assert_eq!(unlz4(&ours), set);
        }
    }

    #[test]
    fn fixture_multiblock_decodes() {
        // produce_v0_lz4_multiblock: value at 81, 449 bytes, blocks of 339 and
        // 91 bytes -> 81662.
        let value = &fixture!("produce_v0_lz4_multiblock.req.bin")[81..81 + 449];
        assert_eq!(block_words(value), [339, 91]);
        let set = unlz4(value);
        assert_eq!(set.len(), 81662);
        assert_eq!(&set[22..27], b"big-0");
        assert_eq!(set[27..31], 40800u32.to_be_bytes());
        assert!(set[31..].starts_with(b"lz4 block test 0"));
        assert_eq!(&set[40831 + 22..40831 + 27], b"big-1");
        assert!(set[40831 + 31..].starts_with(b"lz4 block test 1"));

        let mut ours = Vec::new();
        compress(&set, &mut ours).unwrap();
        assert_eq!(block_words(&ours).len(), 2);
        assert_eq!(unlz4(&ours), set);

        for limit in [0, 65535, 65536, 81661] {
            let err = expect_err(value, limit);
            assert!(matches!(err, CompressionError::TooLarge { limit: l } if l == limit), "{limit}: {err:?}");
        }
        let mut out = Vec::new();
        decompress(value, 81662, &mut out).unwrap();
        assert_eq!(out, set);
    }

    #[test]
    fn fixture_standard_header_checksum_decodes() {
        // produce_v0_lz4_standard_hc: value at 78, 68 bytes, HC 0x82 -> 60 bytes.
        let value = &fixture!("produce_v0_lz4_standard_hc.req.bin")[78..78 + 68];
        assert_eq!(value[..7], [0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82]);
        let set = unlz4(value);
        assert_eq!(set.len(), 60);
        assert_eq!(&set[22..28], b"std-k0");
        assert_eq!(&set[32..60], b"lz4 standard header checksum");
    }

    #[test]
    fn fixture_java_console_producer_decodes() {
        // Written by Kafka's own KafkaLZ4BlockOutputStream: value at 88, 110 bytes -> 141.
        let value = &fixture!("java_console_producer_produce_v0_lz4.req.bin")[88..88 + 110];
        assert_eq!(value[..7], [0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x1a]);
        let set = unlz4(value);
        assert_eq!(set.len(), 141);
        assert_eq!(&set[22..25], b"jk0");
        assert_eq!(&set[29..47], b"java lz4 message 0");
    }

    #[test]
    fn fixture_fetch_values_decode() {
        // fetch_v0_lz4: the broker's recompressed wrappers at 65 (106 bytes)
        // and 197 (111 bytes), 135 bytes each.
        let resp = fixture!("fetch_v0_lz4.resp.bin");
        let first = unlz4(&resp[65..65 + 106]);
        let second = unlz4(&resp[197..197 + 111]);
        assert_eq!(first.len(), 135);
        assert_eq!(second.len(), 135);
        assert_eq!(first, unlz4(&fixture!("produce_v0_lz4_set1.req.bin")[74..74 + 107]));
        assert_eq!(second[7], 3, "first inner offset is 3");
        assert_eq!(&second[22..28], b"lz4-k3");
        assert_eq!(&second[122..135], b"lz4 message 5");
    }

    #[test]
    fn bad_header_checksum_names_both_forms() {
        let mut value = fixture!("produce_v0_lz4_set1.req.bin")[74..74 + 107].to_vec();
        value[6] = 0x55;
        let err = expect_err(&value, 1 << 20);
        assert!(
            matches!(err, CompressionError::Lz4HeaderChecksum { found: 0x55, kafka08: 0x1a, standard: 0x82 }),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "lz4 frame header checksum 0x55 matches neither the kafka 0.8 value 0x1a nor the standard value 0x82"
        );
    }

    #[test]
    fn bad_descriptors() {
        for (flg, bd) in [
            (0x20, 0x40),
            (0xa0, 0x40),
            (0x62, 0x40),
            (0x61, 0x40),
            (0x60, 0xc0),
            (0x60, 0x41),
            (0x60, 0x30),
            (0x60, 0x00),
        ] {
            let mut frame = header(flg, bd, None, HeaderChecksum::Kafka08);
            frame.extend_from_slice(&[0; 4]);
            let err = expect_err(&frame, 1 << 20);
            assert!(
                matches!(err, CompressionError::Lz4Descriptor { flg: f, bd: b, .. } if f == flg && b == bd),
                "{err:?}"
            );
        }
        let err = CompressionError::Lz4Descriptor { flg: 0x20, bd: 0x40, reason: "version must be 01" };
        assert_eq!(err.to_string(), "unsupported lz4 frame descriptor FLG 0x20 BD 0x40: version must be 01");
        let err = expect_err(b"\x04\x22\x4d\x19\x60\x40\x1a\0\0\0\0", 1 << 20);
        assert!(matches!(err, CompressionError::Lz4Magic(0x194d_2204)), "{err:?}");
    }

    #[test]
    fn hostile_block_sizes() {
        for word in [0x7fff_ffff, 0xffff_ffff, 0x0001_0001, 0x8001_0001] {
            let mut frame = header(FLG, BD, None, HeaderChecksum::Kafka08);
            push_block(&mut frame, word, b"abc");
            let err = expect_err(&frame, 1 << 20);
            let size = (word & !UNCOMPRESSED_BIT) as usize;
            assert!(matches!(err, CompressionError::Lz4BlockSize { size: s, max: 65536 } if s == size), "{err:?}");
        }
        // Within the block maximum but beyond the input.
        let mut frame = header(FLG, BD, None, HeaderChecksum::Kafka08);
        push_block(&mut frame, 100, b"abc");
        let err = expect_err(&frame, 1 << 20);
        assert!(matches!(err, CompressionError::Truncated { needed: 100, available: 3, .. }), "{err:?}");
        // A stored block larger than max_output.
        let mut frame = header(FLG, BD, None, HeaderChecksum::Kafka08);
        push_block(&mut frame, 10 | UNCOMPRESSED_BIT, b"0123456789");
        frame.extend_from_slice(&[0; 4]);
        assert!(matches!(expect_err(&frame, 9), CompressionError::TooLarge { limit: 9 }));
        let mut out = Vec::new();
        decompress(&frame, 10, &mut out).unwrap();
        assert_eq!(out, b"0123456789");
    }

    #[test]
    fn larger_block_maximums() {
        // Compressible, so the compressed block fits in 64 KiB.
        let data: Vec<u8> = (0..200 * 1024).map(|i| b'a' + (i / 100 % 7) as u8).collect();
        let block = lz4_flex::block::compress(&data);
        assert!(block.len() < BLOCK_SIZE);
        for (bd, ok) in [(0x40, false), (0x50, true), (0x60, true), (0x70, true)] {
            let mut frame = header(FLG, bd, None, HeaderChecksum::Standard);
            push_block(&mut frame, block.len() as u32, &block);
            frame.extend_from_slice(&[0; 4]);
            let mut out = Vec::new();
            let result = decompress(&frame, 1 << 20, &mut out);
            if ok {
                result.unwrap();
                assert_eq!(out, data);
            } else {
                // 200 KiB does not fit a 64 KiB block.
                assert!(matches!(result, Err(CompressionError::Lz4Block(_))), "{result:?}");
            }
        }
    }

    #[test]
    fn optional_checksums_and_content_size() {
        let data = mixed_data(1000);
        let block = lz4_flex::block::compress(&data);
        let flg = FLG | FLG_BLOCK_CHECKSUM | FLG_CONTENT_SIZE | FLG_CONTENT_CHECKSUM;
        let build = |content_size: u64, block_sum: u32, content_sum: u32| {
            let mut frame = header(flg, BD, Some(content_size), HeaderChecksum::Kafka08);
            push_block(&mut frame, block.len() as u32, &block);
            frame.extend_from_slice(&block_sum.to_le_bytes());
            frame.extend_from_slice(&[0; 4]);
            frame.extend_from_slice(&content_sum.to_le_bytes());
            frame
        };
        let (block_sum, content_sum) = (xxh32(&block, 0), xxh32(&data, 0));
        let good = build(1000, block_sum, content_sum);
        assert_eq!(unlz4(&good), data);
        let mut standard = good.clone();
        standard[14] = HeaderChecksum::Standard.byte(&standard[4..14]);
        assert_eq!(unlz4(&standard), data);

        let err = expect_err(&build(1000, block_sum ^ 1, content_sum), 1 << 20);
        assert!(matches!(err, CompressionError::Lz4Checksum { what: "block", .. }), "{err:?}");
        let err = expect_err(&build(1000, block_sum, content_sum ^ 1), 1 << 20);
        assert!(matches!(err, CompressionError::Lz4Checksum { what: "content", .. }), "{err:?}");
        let err = expect_err(&build(999, block_sum, content_sum), 1 << 20);
        assert!(matches!(err, CompressionError::Lz4ContentSize { declared: 999, actual: 1000 }), "{err:?}");
        // The content size hint is checked against max_output up front.
        let err = expect_err(&build(u64::MAX, block_sum, content_sum), 1 << 20);
        assert!(matches!(err, CompressionError::TooLarge { .. }), "{err:?}");
        let err = expect_err(&good, 999);
        assert!(matches!(err, CompressionError::TooLarge { limit: 999 }), "{err:?}");
        // Corrupt block data is caught by the block checksum before decoding.
        let mut bad = good.clone();
        bad[20] ^= 0x40;
        assert!(matches!(expect_err(&bad, 1 << 20), CompressionError::Lz4Checksum { what: "block", .. }));
    }

    #[test]
    fn maximal_expansion_fits() {
        // Zeros compress close to LZ4's 255:1 bound.
        let zeros = vec![0; 3 * BLOCK_SIZE];
        let mut packed = Vec::new();
        compress(&zeros, &mut packed).unwrap();
        assert!(packed.len() < zeros.len() / 200, "{}", packed.len());
        assert_eq!(unlz4(&packed), zeros);
    }

    #[test]
    fn many_tiny_blocks_in_4_mib_frame() {
        // Each 2-byte block (one literal) must not cost a 4 MiB buffer.
        let mut frame = header(FLG, 0x70, None, HeaderChecksum::Kafka08);
        for _ in 0..50_000 {
            push_block(&mut frame, 2, &[0x10, b'x']);
        }
        frame.extend_from_slice(&[0; 4]);
        let mut out = Vec::new();
        decompress(&frame, 1 << 30, &mut out).unwrap();
        assert_eq!(out, vec![b'x'; 50_000]);
        assert!(out.capacity() < 1 << 20, "{}", out.capacity());
    }

    #[test]
    fn linked_blocks() {
        let data = mixed_data(100 * 1024);
        let (first, second) = data.split_at(BLOCK_SIZE);
        let mut frame = header(0x40, BD, None, HeaderChecksum::Standard);
        let block = lz4_flex::block::compress(first);
        push_block(&mut frame, block.len() as u32, &block);
        let block = lz4_flex::block::compress_with_dict(second, first);
        push_block(&mut frame, block.len() as u32, &block);
        frame.extend_from_slice(&[0; 4]);
        assert_eq!(unlz4(&frame), data);
    }

    #[test]
    fn concatenated_and_skippable_frames() {
        let mut input = vec![0x5f, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3];
        compress(b"first ", &mut input).unwrap();
        input.extend_from_slice(&[0x50, 0x2a, 0x4d, 0x18, 0, 0, 0, 0]);
        compress_with(b"second", HeaderChecksum::Standard, &mut input).unwrap();
        assert_eq!(unlz4(&input), b"first second");
        // Trailing garbage after a frame.
        input.push(0);
        assert!(matches!(expect_err(&input, 1 << 20), CompressionError::Truncated { .. }));
        input.extend_from_slice(&[0, 0, 0]);
        assert!(matches!(expect_err(&input, 1 << 20), CompressionError::Lz4Magic(0)));
        // A skippable frame longer than the input.
        let err = expect_err(&[0x50, 0x2a, 0x4d, 0x18, 0xff, 0xff, 0xff, 0xff, 1], 1 << 20);
        assert!(matches!(err, CompressionError::Truncated { .. }), "{err:?}");
    }

    #[test]
    fn truncated_at_every_length() {
        let value = &fixture!("produce_v0_lz4_set1.req.bin")[74..74 + 107];
        for len in 0..value.len() {
            let err = expect_err(&value[..len], 1 << 20);
            assert!(matches!(err, CompressionError::Truncated { .. }), "len {len}: {err:?}");
        }
        let value = &fixture!("produce_v0_lz4_multiblock.req.bin")[81..81 + 449];
        for len in 0..value.len() {
            expect_err(&value[..len], 1 << 20);
        }
    }

    #[test]
    fn flipped_bytes_never_panic() {
        for value in [
            &fixture!("produce_v0_lz4_set1.req.bin")[74..74 + 107],
            &fixture!("produce_v0_lz4_multiblock.req.bin")[81..81 + 449],
        ] {
            for i in 0..value.len() {
                for mask in [0x01, 0x80, 0xff] {
                    let mut bad = value.to_vec();
                    bad[i] ^= mask;
                    let mut out = Vec::new();
                    if decompress(&bad, 100_000, &mut out).is_ok() {
                        assert!(out.len() <= 100_000);
                    }
                }
            }
        }
    }
}

//! gzip (codec 1) as Kafka writes it: one member in the layout of Java's
//! `GZIPOutputStream`.

use std::io::{Read, Write};

use flate2::bufread::MultiGzDecoder;
use flate2::GzBuilder;

use super::{rollback_on_error, CompressionError};

/// The 10-byte header that starts every member [`compress`] writes: magic
/// `1f 8b`, method 8 (deflate), no flags, mtime 0, XFL 0 and OS byte `0xff`,
/// byte for byte what `GZIPOutputStream` writes on JDK 16 and later (JDK 7
/// and 8 wrote OS byte `0x00`).
pub const HEADER: [u8; 10] = [0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xff];

/// Compress `input` into one gzip member appended to `out`: [`HEADER`],
/// deflate data at level 6 (Java's default), CRC-32 and length, both
/// little-endian.
pub fn compress(input: &[u8], out: &mut Vec<u8>) -> Result<(), CompressionError> {
    compress_level(input, 6, out)
}

/// As [`compress`], at deflate `level` (0 stored, 1 fastest ... 9 smallest; above 9 counts as
/// 9). The header stays [`HEADER`] whatever the level (Java writes XFL 0 at every level).
pub fn compress_level(input: &[u8], level: u32, out: &mut Vec<u8>) -> Result<(), CompressionError> {
    let start = out.len();
    let mut encoder =
        GzBuilder::new().mtime(0).operating_system(HEADER[9]).write(&mut *out, flate2::Compression::new(level.min(9)));
    encoder.write_all(input).map_err(CompressionError::Gzip)?;
    encoder.finish().map_err(CompressionError::Gzip)?;
    // flate2 marks levels 1 and 9 in XFL (4 and 2)
    out[start + 8] = HEADER[8];
    Ok(())
}

/// Decompress gzip `input` (one member or several concatenated ones, any
/// header flags), appending to `out`.
///
/// Fails with [`CompressionError::TooLarge`] once more than `max_output`
/// bytes come out: the decoder is read through a limit instead of trusting
/// the members' length fields. On error `out` is left as it was.
pub fn decompress(input: &[u8], max_output: usize, out: &mut Vec<u8>) -> Result<(), CompressionError> {
    rollback_on_error(out, |out| {
        if input.is_empty() {
            return Err(CompressionError::Truncated { what: "gzip header", needed: HEADER.len(), available: 0 });
        }
        let start = out.len();
        let limit = u64::try_from(max_output).unwrap_or(u64::MAX).saturating_add(1);
        MultiGzDecoder::new(input).take(limit).read_to_end(out).map_err(CompressionError::Gzip)?;
        if out.len() - start > max_output {
            return Err(CompressionError::TooLarge { limit: max_output });
        }
        Ok(())
    })
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

    fn unzip(input: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        decompress(input, 1 << 20, &mut out).unwrap();
        out
    }

    /// The inner message set of produce_v0_gzip_set1 / fetch_v0_gzip.
    fn inner_set() -> Vec<u8> {
        unzip(&fixture!("produce_v0_gzip_set1.req.bin")[75..75 + 84])
    }

    #[test]
    fn round_trips() {
        for len in [0, 1, 100, 200 * 1024] {
            let data = mixed_data(len);
            let mut packed = Vec::new();
            compress(&data, &mut packed).unwrap();
            assert_eq!(unzip(&packed), data, "len {len}");
        }
    }

    #[test]
    fn every_level_keeps_javas_header_and_round_trips() {
        let data = mixed_data(64 * 1024);
        let mut sizes = Vec::new();
        for level in [0, 1, 6, 9, 12] {
            let mut packed = Vec::new();
            compress_level(&data, level, &mut packed).unwrap();
            assert_eq!(packed[..10], HEADER, "level {level}");
            let mut out = Vec::new();
            decompress(&packed, data.len(), &mut out).unwrap();
            assert_eq!(out, data, "level {level}");
            sizes.push(packed.len());
        }
        // stored is the largest, fastest next; 12 is clamped to 9
        assert!(sizes[0] > sizes[1] && sizes[1] > sizes[2], "{sizes:?}");
        assert_eq!(sizes[3], sizes[4]);
        let (mut six, mut default) = (Vec::new(), Vec::new());
        compress_level(&data, 6, &mut six).unwrap();
        compress(&data, &mut default).unwrap();
        assert_eq!(six, default);
    }

    #[test]
    fn header_is_javas() {
        let mut packed = Vec::new();
        compress(b"gzip message", &mut packed).unwrap();
        assert_eq!(packed[..10], [0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff]);
        assert_eq!(packed[..10], HEADER);
        // Trailer: CRC-32 and ISIZE, little-endian.
        let n = packed.len();
        assert_eq!(packed[n - 8..n - 4], crc32fast::hash(b"gzip message").to_le_bytes());
        assert_eq!(packed[n - 4..], 12u32.to_le_bytes());
        // Appends to what `out` already holds.
        let mut out = b"xy".to_vec();
        compress(b"gzip message", &mut out).unwrap();
        assert_eq!(&out[2..], &packed[..]);
    }

    #[test]
    fn produce_fixture_value_decodes() {
        // produce_v0_gzip_set1: value at 75, 84 bytes, header with OS byte 0x00.
        let value = &fixture!("produce_v0_gzip_set1.req.bin")[75..75 + 84];
        assert_eq!(value[..10], [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0x00]);
        let set = unzip(value);
        assert_eq!(set.len(), 141);
        assert_eq!(set[..12], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x23]);
        assert_eq!(&set[22..29], b"gzip-k0");
        assert_eq!(&set[33..47], b"gzip message 0");
        assert_eq!(&set[127..141], b"gzip message 2");
    }

    #[test]
    fn fetch_fixture_values_decode() {
        // fetch_v0_gzip: wrappers written by the broker (JDK 17, OS byte 0xff).
        let resp = fixture!("fetch_v0_gzip.resp.bin");
        let first = &resp[66..66 + 84];
        let second = &resp[176..176 + 87];
        assert_eq!(first[..10], HEADER);
        assert_eq!(second[..10], HEADER);
        assert_eq!(unzip(first), inner_set());
        let set = unzip(second);
        assert_eq!(set.len(), 141);
        assert_eq!(set[7], 3, "first inner offset is 3");
        assert_eq!(&set[18 + 4..18 + 11], b"gzip-k3");
        assert_eq!(&set[127..141], b"gzip message 5");
    }

    #[test]
    fn our_output_of_fixture_set_decodes() {
        let set = inner_set();
        let mut packed = Vec::new();
        compress(&set, &mut packed).unwrap();
        assert_eq!(packed[..10], HEADER);
        assert_eq!(unzip(&packed), set);
    }

    #[test]
    fn concatenated_members() {
        let mut packed = Vec::new();
        compress(b"first ", &mut packed).unwrap();
        compress(b"second", &mut packed).unwrap();
        assert_eq!(unzip(&packed), b"first second");
    }

    #[test]
    fn too_large() {
        let mut packed = Vec::new();
        compress(&[7; 5000], &mut packed).unwrap();
        let mut out = Vec::new();
        decompress(&packed, 5000, &mut out).unwrap();
        assert_eq!(out.len(), 5000);
        let mut out = Vec::new();
        let err = decompress(&packed, 4999, &mut out).unwrap_err();
        assert!(matches!(err, CompressionError::TooLarge { limit: 4999 }), "{err:?}");
        assert!(out.is_empty());
    }

    #[test]
    fn truncated_at_every_length() {
        let value = &fixture!("fetch_v0_gzip.resp.bin")[66..66 + 84];
        for len in 0..value.len() {
            let mut out = b"keep".to_vec();
            assert!(decompress(&value[..len], 1 << 20, &mut out).is_err(), "len {len}");
            assert_eq!(out, b"keep");
        }
    }

    #[test]
    fn flipped_bytes_never_panic() {
        let value = fixture!("fetch_v0_gzip.resp.bin")[66..66 + 84].to_vec();
        for i in 0..value.len() {
            for mask in [0x01, 0x80, 0xff] {
                let mut bad = value.clone();
                bad[i] ^= mask;
                let mut out = Vec::new();
                if decompress(&bad, 1 << 20, &mut out).is_ok() {
                    assert!(out.len() <= 1 << 20);
                }
            }
        }
        // A flipped bit in the deflate data or trailer is caught by the CRC.
        let mut bad = value.clone();
        bad[84 - 8] ^= 1;
        assert!(matches!(decompress(&bad, 1 << 20, &mut Vec::new()), Err(CompressionError::Gzip(_))));
    }

    #[test]
    fn garbage_is_an_error() {
        for input in [&b"\x1f"[..], b"not gzip at all", &[0; 32]] {
            assert!(decompress(input, 1 << 20, &mut Vec::new()).is_err(), "{input:?}");
        }
        let mut packed = Vec::new();
        compress(b"data", &mut packed).unwrap();
        packed.extend_from_slice(b"trailing");
        assert!(decompress(&packed, 1 << 20, &mut Vec::new()).is_err());
    }
}

//! Compression codecs as Kafka writes and reads them.
//!
//! A compressed message v0/v1 (a "wrapper") carries a whole inner message set
//! in its value; a compressed RecordBatch v2 carries its records section
//! compressed. The codec is named by the low three bits of the attributes.
//! The byte layouts produced here are the ones Kafka's own Java client and
//! brokers write:
//!
//! * [`gzip`]: one gzip member laid out as Java's `GZIPOutputStream` does it
//!   (mtime 0, XFL 0, OS byte `0xff`).
//! * [`snappy`]: xerial (`snappy-java`) framing with 32 KiB blocks, for every
//!   magic, as Java writes it. (librdkafka writes one raw snappy block without
//!   framing in v2 batches, kafka-python xerial framing; the decoder reads
//!   both, as snappy-java and the brokers do.)
//! * [`lz4`]: an LZ4 frame with 64 KiB independent blocks. Magic 0 uses the
//!   broken Kafka 0.8 header checksum (KAFKA-3160), magic 1 and 2 the
//!   standard one ([`compress_for_magic`]).
//! * [`zstd`]: a standard zstd frame, magic 2 only.
//!
//! Every decoder takes a `max_output` limit and checks it before allocating,
//! so a small hostile input cannot make it allocate a large buffer.

use std::fmt;
use std::str::FromStr;

pub mod gzip;
pub mod lz4;
pub mod snappy;
pub mod stream;
pub mod zstd;

/// Compression codec of a Kafka message (attributes & 0x07).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Compression {
    /// No compression (codec 0).
    #[default]
    None,
    /// gzip (codec 1).
    Gzip,
    /// Snappy with xerial framing (codec 2).
    Snappy,
    /// LZ4 frame (codec 3, Kafka 0.8.2 and later).
    Lz4,
    /// Zstandard (codec 4, Kafka 2.1 and later): RecordBatch v2 only.
    Zstd,
}

impl Compression {
    /// Mask selecting the codec bits of a message's attributes byte.
    pub const ATTRIBUTE_MASK: i8 = 0x07;

    /// The codec's value in the attributes byte: 0, 1, 2 or 3.
    #[must_use]
    pub const fn attribute_bits(self) -> i8 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }

    /// The codec named by the low three bits of a message v0/v1's `attributes`.
    ///
    /// Other attribute bits are ignored. Codec bits 4 to 7 name no codec a
    /// message v0/v1 may carry (zstd is for RecordBatch v2 only, as brokers
    /// enforce) and give [`CompressionError::UnknownCodec`].
    pub fn from_attributes(attributes: i8) -> Result<Self, CompressionError> {
        match attributes & Self::ATTRIBUTE_MASK {
            0 => Ok(Compression::None),
            1 => Ok(Compression::Gzip),
            2 => Ok(Compression::Snappy),
            3 => Ok(Compression::Lz4),
            bits => Err(CompressionError::UnknownCodec(bits)),
        }
    }

    /// The codec named by the low three bits of a RecordBatch v2's `attributes`
    /// (an `int16`): 0 to 4, zstd included. Bits 5 to 7 give
    /// [`CompressionError::UnknownCodec`].
    pub fn from_batch_attributes(attributes: i16) -> Result<Self, CompressionError> {
        match (attributes & 0x07) as i8 {
            4 => Ok(Compression::Zstd),
            bits => Compression::from_attributes(bits),
        }
    }

    /// The lowest message format (magic) that can carry the codec: 2 for zstd, 0 for the
    /// others.
    #[must_use]
    pub const fn min_magic(self) -> i8 {
        match self {
            Compression::Zstd => 2,
            _ => 0,
        }
    }

    /// Parses every codec name a RecordBatch v2 may carry: `none`, `gzip`, `snappy`, `lz4`,
    /// `zstd` (any case) or Kafka's number (`0` to `4`). [`FromStr`] takes the four of Kafka
    /// 0.8.2 only (what a 0.8 producer's `compression.codec` accepts).
    ///
    /// # Errors
    ///
    /// [`CompressionError::UnknownCodecName`] for anything else.
    pub fn from_name(s: &str) -> Result<Self, CompressionError> {
        if s == "4" || s.eq_ignore_ascii_case("zstd") {
            return Ok(Compression::Zstd);
        }
        s.parse()
    }

    /// The codec's name as Kafka's `compression.codec` / `compression.type`
    /// settings spell it: `"none"`, `"gzip"`, `"snappy"`, `"lz4"` or `"zstd"`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for Compression {
    type Err = CompressionError;

    /// Parses a codec name of Kafka 0.8.2 (`none`, `gzip`, `snappy`, `lz4`,
    /// any case) or its numeric code (`0` to `3`); `zstd` is refused here (a
    /// 0.8 producer cannot send it): [`Compression::from_name`] takes it.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let codec = match s {
            "0" => Compression::None,
            "1" => Compression::Gzip,
            "2" => Compression::Snappy,
            "3" => Compression::Lz4,
            _ if s.eq_ignore_ascii_case("none") => Compression::None,
            _ if s.eq_ignore_ascii_case("gzip") => Compression::Gzip,
            _ if s.eq_ignore_ascii_case("snappy") => Compression::Snappy,
            _ if s.eq_ignore_ascii_case("lz4") => Compression::Lz4,
            _ => return Err(CompressionError::UnknownCodecName(s.to_owned())),
        };
        Ok(codec)
    }
}

/// Errors from compressing or decompressing a message value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompressionError {
    /// Returned when a message's attributes carry codec bits (the value
    /// shown) that name no known codec.
    #[error("unknown compression codec {0} in message attributes")]
    UnknownCodec(i8),

    /// Returned when a codec name or number (the string shown) is not one of
    /// `none`, `gzip`, `snappy`, `lz4`, `0`, `1`, `2`, `3`.
    #[error("unknown compression codec name {0:?}")]
    UnknownCodecName(String),

    /// Returned when the decompressed data would exceed the caller's
    /// `max_output` limit.
    #[error("decompressed data exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The `max_output` limit that would have been exceeded.
        limit: usize,
    },

    /// Returned when the compressed input ends inside a header, length field,
    /// block or checksum.
    #[error("truncated {what}: {needed} bytes needed, {available} available")]
    Truncated {
        /// The structure that was cut off.
        what: &'static str,
        /// Bytes the structure needs.
        needed: usize,
        /// Bytes left in the input.
        available: usize,
    },

    /// Returned when the gzip encoder or decoder fails, for example on a
    /// corrupt deflate stream, a bad CRC-32 or a truncated member.
    #[error("gzip codec failed")]
    Gzip(#[source] std::io::Error),

    /// Returned when the snappy encoder or decoder rejects a raw snappy block.
    #[error("snappy codec failed")]
    Snappy(#[source] snap::Error),

    /// Returned when an xerial snappy block length is negative or larger
    /// than the bytes left in the input.
    #[error("xerial snappy block length {length} is invalid with {remaining} bytes left")]
    XerialBlockLength {
        /// The block length read from the input.
        length: i32,
        /// Bytes left in the input after the length field.
        remaining: usize,
    },

    /// Returned when LZ4 input, or what follows a frame in it, does not start
    /// with the LZ4 frame magic or a skippable frame magic (the value shown).
    #[error("bad lz4 frame magic 0x{0:08x}")]
    Lz4Magic(u32),

    /// Returned when an LZ4 frame descriptor uses a version, flag or block
    /// size this decoder does not accept.
    #[error("unsupported lz4 frame descriptor FLG 0x{flg:02x} BD 0x{bd:02x}: {reason}")]
    Lz4Descriptor {
        /// The FLG byte.
        flg: u8,
        /// The BD byte.
        bd: u8,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// Returned when an LZ4 frame's header checksum byte matches neither the
    /// Kafka 0.8 form nor the LZ4 specification's form.
    #[error(
        "lz4 frame header checksum 0x{found:02x} matches neither the kafka 0.8 value \
         0x{kafka08:02x} nor the standard value 0x{standard:02x}"
    )]
    Lz4HeaderChecksum {
        /// The checksum byte found in the frame.
        found: u8,
        /// The value Kafka 0.8 writes (xxh32 over magic and descriptor).
        kafka08: u8,
        /// The value the LZ4 specification prescribes (xxh32 over the
        /// descriptor only).
        standard: u8,
    },

    /// Returned when an LZ4 block's size is larger than the frame's block
    /// maximum.
    #[error("lz4 block of {size} bytes exceeds the frame's block maximum of {max} bytes")]
    Lz4BlockSize {
        /// The block size read from the input.
        size: usize,
        /// The frame's block maximum size.
        max: usize,
    },

    /// Returned when an LZ4 block or content checksum does not match the data.
    #[error("lz4 {what} checksum mismatch: frame says 0x{expected:08x}, data gives 0x{actual:08x}")]
    Lz4Checksum {
        /// `"block"` or `"content"`.
        what: &'static str,
        /// The checksum stored in the frame.
        expected: u32,
        /// The checksum of the data.
        actual: u32,
    },

    /// Returned when an LZ4 frame's declared content size differs from the
    /// size of its decompressed blocks.
    #[error("lz4 frame declares {declared} content bytes but holds {actual}")]
    Lz4ContentSize {
        /// The content size declared in the frame descriptor.
        declared: u64,
        /// The number of bytes the frame's blocks decompressed to.
        actual: u64,
    },

    /// Returned when an LZ4 block cannot be decompressed.
    #[error("lz4 block is corrupt")]
    Lz4Block(#[source] lz4_flex::block::DecompressError),

    /// Returned when an LZ4 block cannot be compressed.
    #[error("lz4 block compression failed")]
    Lz4Compress(#[source] lz4_flex::block::CompressError),

    /// Returned when libzstd fails (the reason shown is its error name), for
    /// example on a corrupt frame or one asking for too large a window.
    #[error("zstd codec failed: {0}")]
    Zstd(&'static str),

    /// Returned when a codec is asked for in a message format that cannot
    /// carry it (zstd below magic 2).
    #[error("{codec} needs message format (magic) {} or later, not {magic}", codec.min_magic())]
    CodecNeedsMagic {
        /// The codec.
        codec: Compression,
        /// The magic asked for.
        magic: i8,
    },
}

/// Compress `input` with `codec`, appending to `out`. `Compression::None` copies.
///
/// The layouts are the ones Kafka 0.8.2 writes in a message v0; see
/// [`gzip::compress`], [`snappy::compress`] and [`lz4::compress`] (the 0.8
/// header checksum); zstd, which no message v0 may carry, is [`zstd::compress`].
/// [`compress_for_magic`] writes what a given message format needs.
pub fn compress(codec: Compression, input: &[u8], out: &mut Vec<u8>) -> Result<(), CompressionError> {
    match codec {
        Compression::None => {
            out.extend_from_slice(input);
            Ok(())
        }
        Compression::Gzip => gzip::compress(input, out),
        Compression::Snappy => snappy::compress(input, out),
        Compression::Lz4 => lz4::compress(input, out),
        Compression::Zstd => zstd::compress(input, out),
    }
}

/// Compress `input` with `codec` as message format `magic` carries it, appending to `out`:
/// magic 0 as [`compress`]; magic 1 and 2 write LZ4 frames with the standard header checksum
/// (Kafka 0.10 and later, KIP-57). Zstd needs magic 2.
///
/// # Errors
///
/// [`CompressionError::CodecNeedsMagic`] for zstd below magic 2; the codec's own errors.
pub fn compress_for_magic(
    codec: Compression,
    magic: i8,
    input: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), CompressionError> {
    compress_parts_for_magic(codec, magic, &[input], out)
}

/// Runs `f` with this thread's scratch buffer, empty: what a codec writes before the result is
/// copied once, at its exact size, into the buffer that keeps it. The buffer keeps its room
/// for the thread's next use (up to 1 MiB; a larger one is let go after use), so a batch's
/// compression neither allocates nor grows an allocation it then holds at more than its size.
/// A thread whose locals are being torn down gets a buffer of its own.
pub(crate) fn with_scratch<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    /// A larger scratch buffer is let go after use rather than kept by its thread.
    const KEEP: usize = 1 << 20;
    thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let mut out = SCRATCH.try_with(|scratch| scratch.take()).unwrap_or_default();
    out.clear();
    let done = f(&mut out);
    if out.capacity() <= KEEP {
        let _ = SCRATCH.try_with(|scratch| scratch.replace(out));
    }
    done
}

/// [`compress_for_magic`] of `parts` one after the other, read where they are: snappy and lz4
/// take their fixed-size blocks from them (a block across two parts is gathered in a buffer
/// of one block); gzip and zstd join them first (deflate's output depends on how its input is
/// cut into writes). The same bytes as compressing the parts joined.
///
/// # Errors
///
/// As [`compress_for_magic`].
pub fn compress_parts_for_magic(
    codec: Compression,
    magic: i8,
    parts: &[&[u8]],
    out: &mut Vec<u8>,
) -> Result<(), CompressionError> {
    if magic < codec.min_magic() {
        return Err(CompressionError::CodecNeedsMagic { codec, magic });
    }
    let joined = || match parts {
        [one] => std::borrow::Cow::Borrowed(*one),
        _ => std::borrow::Cow::Owned(parts.concat()),
    };
    match codec {
        Compression::None => {
            parts.iter().for_each(|part| out.extend_from_slice(part));
            Ok(())
        }
        Compression::Gzip => gzip::compress(&joined(), out),
        Compression::Snappy => snappy::compress_parts(parts, out),
        Compression::Lz4 if magic >= 1 => lz4::compress_parts(parts, lz4::HeaderChecksum::Standard, out),
        Compression::Lz4 => lz4::compress_parts(parts, lz4::HeaderChecksum::Kafka08, out),
        Compression::Zstd => zstd::compress(&joined(), out),
    }
}

/// Calls `f` with the bytes of `parts` (one after the other) in blocks of `size` bytes, the
/// last one shorter: what `joined.chunks(size)` gives. A block within one part is that part's
/// bytes; one across parts is gathered first.
pub(crate) fn for_each_block(
    parts: &[&[u8]],
    size: usize,
    mut f: impl FnMut(&[u8]) -> Result<(), CompressionError>,
) -> Result<(), CompressionError> {
    let mut gathered = Vec::new();
    let (mut i, mut pos) = (0, 0);
    loop {
        while i < parts.len() && pos == parts[i].len() {
            (i, pos) = (i + 1, 0);
        }
        let Some(part) = parts.get(i) else { return Ok(()) };
        let here = part.len() - pos;
        if here >= size || parts[i + 1..].iter().all(|p| p.is_empty()) {
            let n = here.min(size);
            f(&part[pos..pos + n])?;
            pos += n;
            continue;
        }
        gathered.clear();
        while gathered.len() < size && i < parts.len() {
            let n = (size - gathered.len()).min(parts[i].len() - pos);
            gathered.extend_from_slice(&parts[i][pos..pos + n]);
            pos += n;
            if pos == parts[i].len() {
                (i, pos) = (i + 1, 0);
            }
        }
        f(&gathered)?;
    }
}

/// Decompress `input`, appending to `out`; fails with `CompressionError::TooLarge`
/// if the output would exceed `max_output` bytes.
///
/// `max_output` bounds the bytes this call appends, and is checked before
/// anything is allocated. On error `out` is left as it was.
pub fn decompress(
    codec: Compression,
    input: &[u8],
    max_output: usize,
    out: &mut Vec<u8>,
) -> Result<(), CompressionError> {
    match codec {
        Compression::None => {
            if input.len() > max_output {
                return Err(CompressionError::TooLarge { limit: max_output });
            }
            out.extend_from_slice(input);
            Ok(())
        }
        Compression::Gzip => gzip::decompress(input, max_output, out),
        Compression::Snappy => snappy::decompress(input, max_output, out),
        Compression::Lz4 => lz4::decompress(input, max_output, out),
        Compression::Zstd => zstd::decompress(input, max_output, out),
    }
}

/// Runs `decode`, truncating `out` back to its length on entry if it fails.
fn rollback_on_error(
    out: &mut Vec<u8>,
    decode: impl FnOnce(&mut Vec<u8>) -> Result<(), CompressionError>,
) -> Result<(), CompressionError> {
    let start = out.len();
    let result = decode(out);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

/// How far a decoder may grow its output: the length `out` had on entry
/// plus the caller's `max_output`.
#[derive(Debug, Clone, Copy)]
struct Limit {
    end: usize,
    max_output: usize,
}

impl Limit {
    fn new(out: &[u8], max_output: usize) -> Self {
        Limit { end: out.len().saturating_add(max_output), max_output }
    }

    /// Bytes that may still be appended to `out`.
    fn room(self, out: &[u8]) -> usize {
        self.end.saturating_sub(out.len())
    }

    /// Fails with [`CompressionError::TooLarge`] unless `additional` more
    /// bytes fit after `out`.
    fn check(self, out: &[u8], additional: usize) -> Result<(), CompressionError> {
        if additional > self.room(out) {
            return Err(self.exceeded());
        }
        Ok(())
    }

    fn exceeded(self) -> CompressionError {
        CompressionError::TooLarge { limit: self.max_output }
    }
}

/// A forward-only view of compressed input that reports truncation.
struct Input<'a> {
    rest: &'a [u8],
}

impl<'a> Input<'a> {
    fn new(rest: &'a [u8]) -> Self {
        Input { rest }
    }

    fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// The next `n` bytes; `what` names them in the error if fewer are left.
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], CompressionError> {
        if n > self.rest.len() {
            return Err(CompressionError::Truncated { what, needed: n, available: self.rest.len() });
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], CompressionError> {
        let mut bytes = [0; N];
        bytes.copy_from_slice(self.take(N, what)?);
        Ok(bytes)
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, CompressionError> {
        Ok(self.array::<1>(what)?[0])
    }

    fn u32_le(&mut self, what: &'static str) -> Result<u32, CompressionError> {
        self.array(what).map(u32::from_le_bytes)
    }

    fn i32_be(&mut self, what: &'static str) -> Result<i32, CompressionError> {
        self.array(what).map(i32::from_be_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Compression; 5] =
        [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd];

    /// Compressing parts is compressing them joined, byte for byte, for every codec and
    /// message format, wherever the parts are cut (within a block, on a block's edge, empty).
    #[test]
    fn parts_compress_to_the_bytes_of_their_join() {
        let data = mixed_data(150 * 1024);
        let cuts: [&[usize]; 6] = [
            &[],
            &[0, 0],
            &[100],
            &[32 * 1024, 64 * 1024],
            &[1, 32 * 1024 - 1, 32 * 1024 + 5, 65_536, 65_537, 140_000],
            &[50_000, 50_000, 149 * 1024],
        ];
        for cut in cuts {
            let mut parts = Vec::new();
            let mut from = 0;
            for &at in cut.iter().chain(std::iter::once(&data.len())) {
                parts.push(&data[from..at]);
                from = at;
            }
            for codec in ALL {
                for magic in codec.min_magic()..=2 {
                    let (mut want, mut got) = (vec![9u8], vec![9u8]);
                    compress_for_magic(codec, magic, &data, &mut want).unwrap();
                    compress_parts_for_magic(codec, magic, &parts, &mut got).unwrap();
                    assert!(got == want, "{codec} magic {magic} cut at {cut:?}");
                }
            }
        }
        let err = compress_parts_for_magic(Compression::Zstd, 1, &[b"a", b"b"], &mut Vec::new()).unwrap_err();
        assert!(matches!(err, CompressionError::CodecNeedsMagic { .. }), "{err}");
    }

    proptest::proptest! {
        #[test]
        fn blocks_of_parts_are_the_chunks_of_their_join(
            lens in proptest::collection::vec(0usize..300, 0..8),
            size in 1usize..200,
        ) {
            let data: Vec<u8> = (0..lens.iter().sum::<usize>()).map(|i| i as u8).collect();
            let mut parts = Vec::new();
            let mut from = 0;
            for len in &lens {
                parts.push(&data[from..from + len]);
                from += len;
            }
            let mut blocks: Vec<Vec<u8>> = Vec::new();
            for_each_block(&parts, size, |b| {
                blocks.push(b.to_vec());
                Ok(())
            })
            .unwrap();
            let want: Vec<Vec<u8>> = data.chunks(size).map(<[u8]>::to_vec).collect();
            proptest::prop_assert_eq!(blocks, want);
        }
    }

    /// 200 KiB mixing compressible text, a counter pattern and noise.
    pub(super) fn mixed_data(len: usize) -> Vec<u8> {
        let mut data = Vec::with_capacity(len);
        let mut state: u32 = 0x1234_5678;
        while data.len() < len {
            let i = data.len();
            let byte = match (i / 4096) % 3 {
                0 => b"kafka message set payload "[i % 26],
                1 => (i % 251) as u8,
                _ => {
                    state ^= state << 13;
                    state ^= state >> 17;
                    state ^= state << 5;
                    state as u8
                }
            };
            data.push(byte);
        }
        data
    }

    #[test]
    fn attribute_bits_round_trip() {
        for codec in ALL {
            assert_eq!(Compression::from_batch_attributes(i16::from(codec.attribute_bits())).unwrap(), codec);
            assert_eq!(Compression::from_batch_attributes(i16::from(codec.attribute_bits()) | 0x7ff8).unwrap(), codec);
            if codec == Compression::Zstd {
                assert!(Compression::from_attributes(4).is_err(), "no zstd in a message v0/v1");
                continue;
            }
            assert_eq!(Compression::from_attributes(codec.attribute_bits()).unwrap(), codec);
            // Higher attribute bits do not affect the codec.
            assert_eq!(Compression::from_attributes(codec.attribute_bits() | 0x78).unwrap(), codec);
        }
        assert_eq!(Compression::from_attributes(1).unwrap(), Compression::Gzip);
        assert_eq!(Compression::from_attributes(2).unwrap(), Compression::Snappy);
        assert_eq!(Compression::from_attributes(3).unwrap(), Compression::Lz4);
        assert_eq!(Compression::from_attributes(-128).unwrap(), Compression::None);
        assert_eq!(Compression::default(), Compression::None);
    }

    #[test]
    fn unknown_codec_bits() {
        for bits in 4..=7i8 {
            match Compression::from_attributes(bits) {
                Err(CompressionError::UnknownCodec(b)) => assert_eq!(b, bits),
                other => panic!("{other:?}"),
            }
        }
        let err = Compression::from_attributes(0x0f).unwrap_err();
        assert_eq!(err.to_string(), "unknown compression codec 7 in message attributes");
    }

    #[test]
    fn names_display_and_parse() {
        let names = ["none", "gzip", "snappy", "lz4", "zstd"];
        for (codec, name) in ALL.into_iter().zip(names) {
            assert_eq!(codec.name(), name);
            assert_eq!(codec.to_string(), name);
            assert_eq!(Compression::from_name(name).unwrap(), codec);
            assert_eq!(Compression::from_name(&name.to_ascii_uppercase()).unwrap(), codec);
            assert_eq!(Compression::from_name(&codec.attribute_bits().to_string()).unwrap(), codec);
            if codec == Compression::Zstd {
                continue;
            }
            assert_eq!(name.parse::<Compression>().unwrap(), codec);
            assert_eq!(name.to_ascii_uppercase().parse::<Compression>().unwrap(), codec);
            assert_eq!(codec.attribute_bits().to_string().parse::<Compression>().unwrap(), codec);
        }
        assert_eq!("GZip".parse::<Compression>().unwrap(), Compression::Gzip);
        assert_eq!(format!("{:>6}", Compression::Lz4), "   lz4");
        for bad in ["", "zstd", "4", "-1", " gzip", "lz4 ", "01"] {
            match bad.parse::<Compression>() {
                Err(CompressionError::UnknownCodecName(s)) => assert_eq!(s, bad),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
        assert_eq!("zstd".parse::<Compression>().unwrap_err().to_string(), "unknown compression codec name \"zstd\"");
        assert!(Compression::from_name("5").is_err() && Compression::from_name("zstd ").is_err());
    }

    #[test]
    fn compress_for_magic_picks_the_lz4_header_and_refuses_old_zstd() {
        let mut v0 = Vec::new();
        compress_for_magic(Compression::Lz4, 0, b"abc", &mut v0).unwrap();
        assert_eq!(&v0[..7], &[0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x1a]);
        for magic in [1, 2] {
            let mut v = Vec::new();
            compress_for_magic(Compression::Lz4, magic, b"abc", &mut v).unwrap();
            assert_eq!(&v[..7], &[0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82]);
        }
        for magic in [0, 1] {
            let err = compress_for_magic(Compression::Zstd, magic, b"abc", &mut Vec::new()).unwrap_err();
            assert_eq!(err.to_string(), format!("zstd needs message format (magic) 2 or later, not {magic}"));
        }
        let mut z = Vec::new();
        compress_for_magic(Compression::Zstd, 2, b"abc", &mut z).unwrap();
        assert!(z.starts_with(&zstd::MAGIC));
    }

    #[test]
    fn round_trip_every_codec() {
        for codec in ALL {
            for len in [0, 1, 100, 200 * 1024] {
                let data = mixed_data(len);
                let mut packed = Vec::new();
                compress(codec, &data, &mut packed).unwrap();
                let mut unpacked = b"prefix".to_vec();
                decompress(codec, &packed, len, &mut unpacked).unwrap();
                assert_eq!(&unpacked[..6], b"prefix", "{codec} len {len}");
                assert_eq!(&unpacked[6..], &data[..], "{codec} len {len}");
            }
        }
    }

    #[test]
    fn max_output_smaller_than_output_is_too_large() {
        let data = mixed_data(100_000);
        for codec in ALL {
            let mut packed = Vec::new();
            compress(codec, &data, &mut packed).unwrap();
            for limit in [0, 1, 99_999] {
                let mut out = b"keep".to_vec();
                match decompress(codec, &packed, limit, &mut out) {
                    Err(CompressionError::TooLarge { limit: l }) => assert_eq!(l, limit, "{codec}"),
                    other => panic!("{codec} limit {limit}: {other:?}"),
                }
                assert_eq!(out, b"keep", "{codec}: out restored on error");
            }
        }
    }

    #[test]
    fn error_messages() {
        let err = CompressionError::TooLarge { limit: 10 };
        assert_eq!(err.to_string(), "decompressed data exceeds the limit of 10 bytes");
        let err = CompressionError::Truncated { what: "lz4 block", needed: 8, available: 3 };
        assert_eq!(err.to_string(), "truncated lz4 block: 8 bytes needed, 3 available");
        let err = CompressionError::Gzip(std::io::Error::other("inner"));
        assert_eq!(err.to_string(), "gzip codec failed");
        assert!(std::error::Error::source(&err).is_some());
    }
}

//! Streaming decompression: a compressed value read a step at a time, so that a reader holds
//! a bounded window of its output instead of all of it (the high-level consumer expands a
//! fetched wrapper or batch as the application iterates it).
//!
//! [`Decompressor::read_into`] appends the next piece of output to a buffer: about [`STEP`]
//! bytes for gzip, zstd and a raw snappy block (no xerial framing: librdkafka's v2 batches),
//! one block for snappy's xerial framing (32 KiB as Java writes them) and for lz4 (the
//! frame's block maximum, 64 KiB as Kafka writes them); an uncompressed value is handed on
//! whole.
//!
//! A raw snappy block is decoded here element by element, keeping the last 64 KiB of output
//! for its copies to reach back into: every snappy encoder (Google's, the `snap` crate's,
//! librdkafka's) compresses in 64 KiB fragments whose copies stay inside them, so a copy from
//! further back, valid for the format but written by none, is refused
//! ([`snap::Error::Offset`]).
//!
//! The checks and errors are the whole-value decoders' ([`super::decompress`]): the same
//! `max_output` bound over all the output (checked before a block is allocated), the same
//! truncation, checksum and descriptor errors. They come when the step that meets them runs,
//! after the output before them was handed out.

use std::io::Read;

use bytes::{Buf, Bytes, BytesMut};
use flate2::bufread::MultiGzDecoder;
use lz4_flex::block::{decompress_into, decompress_into_with_dict, DecompressError};
use snap::raw::{decompress_len, Decoder};
use xxhash_rust::xxh32::Xxh32;
use zstd::zstd_safe::{DCtx, DParameter, InBuffer, OutBuffer};

use super::lz4::{
    read_frame_header, verify, FrameHeader, FLG_BLOCK_CHECKSUM, FLG_BLOCK_INDEPENDENCE, FLG_CONTENT_CHECKSUM,
    FRAME_MAGIC, SKIPPABLE_MAGIC, SKIPPABLE_MASK, UNCOMPRESSED_BIT, WINDOW,
};
use super::snappy::{XERIAL_HEADER_LEN, XERIAL_MAGIC};
use super::{gzip, zstd as zstd_codec, Compression, CompressionError, Input};

/// Output produced per step by the gzip and zstd decoders.
pub const STEP: usize = 32 * 1024;

/// A compressed value decompressed a step at a time (see the module docs).
pub struct Decompressor {
    state: State,
    max_output: usize,
    produced: usize,
    done: bool,
}

impl std::fmt::Debug for Decompressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decompressor")
            .field("produced", &self.produced)
            .field("max_output", &self.max_output)
            .finish_non_exhaustive()
    }
}

enum State {
    Plain(Bytes),
    Gzip(Box<MultiGzDecoder<bytes::buf::Reader<Bytes>>>, bool),
    Xerial { input: Bytes, started: bool, decoder: Decoder },
    RawSnappy(Box<RawSnappy>),
    Lz4(Box<Lz4Stream>),
    Zstd(Box<ZstdStream>),
}

impl Decompressor {
    /// A decompressor of `input` compressed with `codec`, that fails with
    /// [`CompressionError::TooLarge`] once more than `max_output` bytes would come out.
    pub fn new(codec: Compression, input: Bytes, max_output: usize) -> Decompressor {
        let state = match codec {
            Compression::None => State::Plain(input),
            Compression::Gzip => {
                let empty = input.is_empty();
                State::Gzip(Box::new(MultiGzDecoder::new(input.reader())), empty)
            }
            Compression::Snappy if input.starts_with(&XERIAL_MAGIC) => {
                State::Xerial { input, started: false, decoder: Decoder::new() }
            }
            Compression::Snappy => {
                State::RawSnappy(Box::new(RawSnappy { input, declared: None, total: 0, history: Vec::new() }))
            }
            Compression::Lz4 => {
                State::Lz4(Box::new(Lz4Stream { input, started: false, frame: None, dict: Vec::new() }))
            }
            Compression::Zstd => State::Zstd(Box::new(ZstdStream::new(input, max_output))),
        };
        Decompressor { state, max_output, produced: 0, done: false }
    }

    /// The most output it may produce.
    pub fn max_output(&self) -> usize {
        self.max_output
    }

    /// Bytes produced so far.
    pub fn produced(&self) -> usize {
        self.produced
    }

    /// Bytes of output the decompressor keeps for itself between steps (lz4's window for
    /// linked blocks; gzip's and zstd's windows live inside their codecs and are not counted).
    pub fn held_bytes(&self) -> usize {
        match &self.state {
            State::Lz4(s) => s.dict.capacity(),
            State::RawSnappy(s) => s.history.capacity(),
            _ => 0,
        }
    }

    /// Appends the next piece of output to `out`: `Ok(true)` when something was appended,
    /// `Ok(false)` at the end of the value (the value was whole and well formed).
    ///
    /// # Errors
    ///
    /// The codec's errors, as [`super::decompress`] gives them; on error `out` is left as it
    /// was and the decompressor should not be read again.
    pub fn read_into(&mut self, out: &mut BytesMut) -> Result<bool, CompressionError> {
        let start = out.len();
        while !self.done {
            let room = self.max_output - self.produced;
            let result = match &mut self.state {
                State::Plain(input) => {
                    self.done = true;
                    if input.len() > room {
                        Err(CompressionError::TooLarge { limit: self.max_output })
                    } else {
                        out.extend_from_slice(input);
                        Ok(())
                    }
                }
                State::Gzip(decoder, empty) => gzip_step(decoder, *empty, room, self.max_output, out, &mut self.done),
                State::Xerial { input, started, decoder } => {
                    xerial_step(input, started, decoder, room, self.max_output, out, &mut self.done)
                }
                State::RawSnappy(s) => s.step(room, self.max_output, out, &mut self.done),
                State::Lz4(s) => s.step(room, self.max_output, out, &mut self.done),
                State::Zstd(s) => s.step(room, self.max_output, out, &mut self.done),
            };
            if let Err(e) = result {
                out.truncate(start);
                self.done = true;
                return Err(e);
            }
            if out.len() > start {
                self.produced += out.len() - start;
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// Grows `out` by `n` zeroed bytes and returns where they start.
fn grow(out: &mut BytesMut, n: usize) -> usize {
    let at = out.len();
    out.resize(at + n, 0);
    at
}

fn gzip_step(
    decoder: &mut MultiGzDecoder<bytes::buf::Reader<Bytes>>,
    empty: bool,
    room: usize,
    max_output: usize,
    out: &mut BytesMut,
    done: &mut bool,
) -> Result<(), CompressionError> {
    if empty {
        let needed = gzip::HEADER.len();
        return Err(CompressionError::Truncated { what: "gzip header", needed, available: 0 });
    }
    // one byte over the room is enough to learn that the output goes past it
    let step = STEP.min(room.saturating_add(1));
    let at = grow(out, step);
    let n = loop {
        match decoder.read(&mut out[at..]) {
            Ok(n) => break n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(CompressionError::Gzip(e)),
        }
    };
    out.truncate(at + n);
    if n > room {
        return Err(CompressionError::TooLarge { limit: max_output });
    }
    *done = n == 0;
    Ok(())
}

fn xerial_step(
    input: &mut Bytes,
    started: &mut bool,
    decoder: &mut Decoder,
    room: usize,
    max_output: usize,
    out: &mut BytesMut,
    done: &mut bool,
) -> Result<(), CompressionError> {
    if !std::mem::replace(started, true) {
        Input::new(input).take(XERIAL_HEADER_LEN, "xerial snappy header")?;
        input.advance(XERIAL_HEADER_LEN);
    }
    if input.is_empty() {
        *done = true;
        return Ok(());
    }
    let length = Input::new(input).i32_be("xerial block length")?;
    input.advance(4);
    let remaining = input.len();
    let block = match usize::try_from(length) {
        Ok(n) if n <= remaining => input.split_to(n),
        _ => return Err(CompressionError::XerialBlockLength { length, remaining }),
    };
    snappy_block(decoder, &block, room, max_output, out)
}

/// One raw snappy block onto `out`, its declared length checked against `room` and the
/// format's largest expansion before anything is allocated (as [`super::snappy`] does).
fn snappy_block(
    decoder: &mut Decoder,
    block: &[u8],
    room: usize,
    max_output: usize,
    out: &mut BytesMut,
) -> Result<(), CompressionError> {
    let len = decompress_len(block).map_err(CompressionError::Snappy)?;
    if len > room {
        return Err(CompressionError::TooLarge { limit: max_output });
    }
    let most = block.len().saturating_mul(super::snappy::MAX_EXPANSION);
    if len > most {
        return Err(CompressionError::Snappy(snap::Error::TooBig { given: len as u64, max: most as u64 }));
    }
    let at = grow(out, len);
    let written = decoder.decompress(block, &mut out[at..]).map_err(CompressionError::Snappy)?;
    out.truncate(at + written);
    Ok(())
}

/// A raw snappy block decoded element by element (see the module docs).
struct RawSnappy {
    input: Bytes,
    /// The length its header declares, once read.
    declared: Option<usize>,
    /// Bytes produced so far.
    total: usize,
    /// The output of the last step and at least the 64 KiB before it.
    history: Vec<u8>,
}

/// How far back a raw snappy copy may reach (the encoders' fragment size).
const SNAPPY_WINDOW: usize = 64 * 1024;

impl RawSnappy {
    fn step(
        &mut self,
        room: usize,
        max_output: usize,
        out: &mut BytesMut,
        done: &mut bool,
    ) -> Result<(), CompressionError> {
        let snappy = |e| Err(CompressionError::Snappy(e));
        let declared = match self.declared {
            Some(n) => n,
            None => {
                if self.input.is_empty() {
                    return snappy(snap::Error::Empty);
                }
                // as the whole-block decoder: the declared length checked before anything
                let len = decompress_len(&self.input).map_err(CompressionError::Snappy)?;
                if len > room {
                    return Err(CompressionError::TooLarge { limit: max_output });
                }
                let most = self.input.len().saturating_mul(super::snappy::MAX_EXPANSION);
                if len > most {
                    return snappy(snap::Error::TooBig { given: len as u64, max: most as u64 });
                }
                let header = self.input.iter().position(|b| b & 0x80 == 0).map_or(self.input.len(), |i| i + 1);
                self.input.advance(header);
                self.declared = Some(len);
                len
            }
        };
        let start = self.history.len();
        while !self.input.is_empty() && self.history.len() - start < STEP {
            let src = &self.input[..];
            let tag = src[0];
            let (len, used, offset) = match tag & 3 {
                0 => {
                    let (len, header) = match tag >> 2 {
                        n @ 0..=59 => (usize::from(n) + 1, 1),
                        n => {
                            let bytes = usize::from(n) - 59;
                            let Some(le) = src.get(1..1 + bytes) else {
                                return snappy(snap::Error::Literal {
                                    len: bytes as u64,
                                    src_len: src.len() as u64 - 1,
                                    dst_len: (declared - self.total) as u64,
                                });
                            };
                            let len = le.iter().rev().fold(0usize, |v, &b| (v << 8) | usize::from(b)) + 1;
                            (len, 1 + bytes)
                        }
                    };
                    if src.len() - header < len || declared - self.total < len {
                        return snappy(snap::Error::Literal {
                            len: len as u64,
                            src_len: (src.len() - header) as u64,
                            dst_len: (declared - self.total) as u64,
                        });
                    }
                    self.history.extend_from_slice(&src[header..header + len]);
                    self.total += len;
                    self.input.advance(header + len);
                    continue;
                }
                1 if src.len() >= 2 => {
                    (4 + usize::from((tag >> 2) & 7), 2, (usize::from(tag & 0xe0) << 3) | usize::from(src[1]))
                }
                2 if src.len() >= 3 => {
                    (1 + usize::from(tag >> 2), 3, usize::from(u16::from_le_bytes([src[1], src[2]])))
                }
                3 if src.len() >= 5 => {
                    let offset = u32::from_le_bytes([src[1], src[2], src[3], src[4]]);
                    (1 + usize::from(tag >> 2), 5, usize::try_from(offset).unwrap_or(usize::MAX))
                }
                _ => return snappy(snap::Error::CopyRead { len: 1 << (tag & 3), src_len: src.len() as u64 - 1 }),
            };
            if offset == 0 || offset > self.total || offset > self.history.len() {
                return snappy(snap::Error::Offset { offset: offset as u64, dst_pos: self.total as u64 });
            }
            if declared - self.total < len {
                return snappy(snap::Error::CopyWrite { len: len as u64, dst_len: (declared - self.total) as u64 });
            }
            let from = self.history.len() - offset;
            if offset >= len {
                self.history.extend_from_within(from..from + len);
            } else {
                for i in 0..len {
                    let b = self.history[from + i];
                    self.history.push(b);
                }
            }
            self.total += len;
            self.input.advance(used);
        }
        out.extend_from_slice(&self.history[start..]);
        if self.history.len() > 2 * SNAPPY_WINDOW {
            self.history.drain(..self.history.len() - SNAPPY_WINDOW);
        }
        if self.input.is_empty() {
            if self.total != declared {
                return snappy(snap::Error::HeaderMismatch {
                    expected_len: declared as u64,
                    got_len: self.total as u64,
                });
            }
            *done = true;
        }
        Ok(())
    }
}

/// An lz4 input read frame by frame and block by block.
struct Lz4Stream {
    input: Bytes,
    started: bool,
    frame: Option<Lz4Frame>,
    /// The frame's last 64 KiB of output, for linked blocks.
    dict: Vec<u8>,
}

struct Lz4Frame {
    header: FrameHeader,
    produced: u64,
    hasher: Option<Xxh32>,
}

impl Lz4Stream {
    /// Reads frame headers and skippable frames until a block is decoded (or the end).
    fn step(
        &mut self,
        room: usize,
        max_output: usize,
        out: &mut BytesMut,
        done: &mut bool,
    ) -> Result<(), CompressionError> {
        let exceeded = || CompressionError::TooLarge { limit: max_output };
        loop {
            let mut input = Input::new(&self.input);
            let Some(frame) = &mut self.frame else {
                if self.started && input.is_empty() {
                    *done = true;
                    return Ok(());
                }
                self.started = true;
                let magic = input.u32_le("lz4 frame magic")?;
                if magic == FRAME_MAGIC {
                    let header = read_frame_header(&mut input, room, exceeded)?;
                    let hasher = (header.flg & FLG_CONTENT_CHECKSUM != 0).then(|| Xxh32::new(0));
                    self.frame = Some(Lz4Frame { header, produced: 0, hasher });
                    self.dict.clear();
                } else if magic & SKIPPABLE_MASK == SKIPPABLE_MAGIC {
                    let size = input.u32_le("lz4 skippable frame size")?;
                    input.take(usize::try_from(size).unwrap_or(usize::MAX), "lz4 skippable frame")?;
                    if input.is_empty() {
                        *done = true;
                    }
                } else {
                    return Err(CompressionError::Lz4Magic(magic));
                }
                let used = self.input.len() - input.remaining();
                self.input.advance(used);
                if *done {
                    return Ok(());
                }
                continue;
            };
            let flg = frame.header.flg;
            let block_max = frame.header.block_max;
            let word = input.u32_le("lz4 block size")?;
            if word == 0 {
                if let Some(hasher) = &frame.hasher {
                    let expected = input.u32_le("lz4 content checksum")?;
                    let actual = hasher.digest();
                    if actual != expected {
                        return Err(CompressionError::Lz4Checksum { what: "content", expected, actual });
                    }
                }
                if let Some(declared) = frame.header.content_size.filter(|&d| d != frame.produced) {
                    return Err(CompressionError::Lz4ContentSize { declared, actual: frame.produced });
                }
                self.frame = None;
                let used = self.input.len() - input.remaining();
                self.input.advance(used);
                if self.input.is_empty() {
                    *done = true;
                    return Ok(());
                }
                continue;
            }
            let size = usize::try_from(word & !UNCOMPRESSED_BIT).unwrap_or(usize::MAX);
            if size > block_max {
                return Err(CompressionError::Lz4BlockSize { size, max: block_max });
            }
            let data = input.take(size, "lz4 block")?;
            if flg & FLG_BLOCK_CHECKSUM != 0 {
                verify("block", input.u32_le("lz4 block checksum")?, data)?;
            }
            let at = out.len();
            if word & UNCOMPRESSED_BIT != 0 {
                if size > room {
                    return Err(exceeded());
                }
                out.extend_from_slice(data);
            } else {
                // as the whole-value decoder: no block needs more than the block maximum or
                // 255 bytes per input byte
                let bound = block_max.min(size.saturating_mul(super::lz4::MAX_EXPANSION));
                let capacity = bound.min(room);
                grow(out, capacity);
                let result = if flg & FLG_BLOCK_INDEPENDENCE != 0 {
                    decompress_into(data, &mut out[at..])
                } else {
                    decompress_into_with_dict(data, &mut out[at..], &self.dict)
                };
                match result {
                    Ok(written) => out.truncate(at + written),
                    Err(DecompressError::OutputTooSmall { .. }) if room < bound => return Err(exceeded()),
                    Err(err) => return Err(CompressionError::Lz4Block(err)),
                }
            }
            let produced = &out[at..];
            frame.produced += produced.len() as u64;
            if let Some(hasher) = &mut frame.hasher {
                hasher.update(produced);
            }
            if flg & FLG_BLOCK_INDEPENDENCE == 0 {
                self.dict.extend_from_slice(produced);
                if self.dict.len() > WINDOW {
                    self.dict.drain(..self.dict.len() - WINDOW);
                }
            }
            let used = self.input.len() - input.remaining();
            self.input.advance(used);
            return Ok(());
        }
    }
}

/// A zstd input read through libzstd's streaming decoder.
struct ZstdStream {
    dctx: Result<DCtx<'static>, CompressionError>,
    input: Bytes,
    frame_done: bool,
}

impl ZstdStream {
    fn new(input: Bytes, max_output: usize) -> ZstdStream {
        let dctx = DCtx::try_create()
            .ok_or(CompressionError::Zstd("cannot allocate a decompression context"))
            .and_then(|mut dctx| {
                let window = DParameter::WindowLogMax(zstd_codec::window_log_max(max_output));
                dctx.set_parameter(window).map_err(zstd_codec::failed)?;
                Ok(dctx)
            });
        ZstdStream { dctx, input, frame_done: false }
    }

    /// As [`zstd_codec::decompress`]'s loop, one turn per call.
    fn step(
        &mut self,
        room: usize,
        max_output: usize,
        out: &mut BytesMut,
        done: &mut bool,
    ) -> Result<(), CompressionError> {
        let dctx = self.dctx.as_mut().map_err(|e| std::mem::replace(e, CompressionError::Zstd("failed before")))?;
        if self.frame_done && self.input.is_empty() {
            *done = true;
            return Ok(());
        }
        let step = STEP.min(room.saturating_add(1));
        let at = grow(out, step);
        let mut src = InBuffer::around(&self.input);
        let (written, result) = {
            let mut dst = OutBuffer::around(&mut out[at..]);
            let result = dctx.decompress_stream(&mut dst, &mut src);
            (dst.pos(), result)
        };
        let read = src.pos();
        out.truncate(at + written);
        self.input.advance(read);
        let hint = result.map_err(zstd_codec::failed)?;
        if written > room {
            return Err(CompressionError::TooLarge { limit: max_output });
        }
        self.frame_done = hint == 0;
        let stalled = written == 0 && read == 0;
        if !self.frame_done && (stalled || (self.input.is_empty() && written < step)) {
            return Err(CompressionError::Truncated { what: "zstd frame", needed: hint, available: 0 });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::mixed_data;
    use super::super::{compress, decompress, snappy};
    use super::*;

    const ALL: [Compression; 5] =
        [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd];

    /// Every piece the decompressor hands out, or its error.
    fn pieces(codec: Compression, input: &[u8], max_output: usize) -> Result<Vec<usize>, (Vec<u8>, CompressionError)> {
        let mut d = Decompressor::new(codec, Bytes::copy_from_slice(input), max_output);
        let (mut out, mut sizes) = (BytesMut::new(), Vec::new());
        loop {
            let before = out.len();
            match d.read_into(&mut out) {
                Ok(true) => sizes.push(out.len() - before),
                Ok(false) => return Ok(sizes),
                Err(e) => return Err((out.to_vec(), e)),
            }
        }
    }

    fn whole(codec: Compression, input: &[u8], max_output: usize) -> Result<Vec<u8>, CompressionError> {
        let mut out = Vec::new();
        decompress(codec, input, max_output, &mut out).map(|()| out)
    }

    fn streamed(codec: Compression, input: &[u8], max_output: usize) -> Result<Vec<u8>, CompressionError> {
        let mut d = Decompressor::new(codec, Bytes::copy_from_slice(input), max_output);
        let mut out = BytesMut::new();
        while d.read_into(&mut out)? {}
        Ok(out.to_vec())
    }

    /// Compressed forms of `data`: every codec, and snappy also as one raw block.
    fn packed(data: &[u8]) -> Vec<(Compression, Vec<u8>)> {
        let mut all: Vec<_> = ALL
            .iter()
            .map(|&codec| {
                let mut p = Vec::new();
                compress(codec, data, &mut p).unwrap();
                (codec, p)
            })
            .collect();
        let mut raw = Vec::new();
        snappy::compress_raw(data, &mut raw).unwrap();
        all.push((Compression::Snappy, raw));
        all
    }

    #[test]
    fn output_comes_in_bounded_steps_and_equals_the_whole_value() {
        let mut data = mixed_data(300 * 1024);
        data.extend(std::iter::repeat_n(7u8, 4 << 20)); // expands a thousandfold
        for (codec, p) in packed(&data) {
            let sizes = pieces(codec, &p, data.len()).unwrap_or_else(|(_, e)| panic!("{codec}: {e}"));
            assert_eq!(sizes.iter().sum::<usize>(), data.len(), "{codec}");
            if codec != Compression::None {
                // a step's worth, or one block of 64 KiB; a raw snappy step ends after the
                // element that reaches STEP (a copy is at most 64 bytes, a literal as long as
                // it was in the input)
                let most = sizes.iter().max().copied().unwrap_or(0);
                assert!(most <= 64 * 1024 + 64, "{codec}: a piece of {most} bytes");
            }
            assert_eq!(streamed(codec, &p, data.len()).unwrap(), data, "{codec}");
        }
    }

    #[test]
    fn errors_and_bounds_are_the_whole_decoders() {
        let data = mixed_data(100 * 1024);
        for (codec, p) in packed(&data) {
            for max in [0, 1, data.len() - 1, data.len()] {
                let (w, s) = (whole(codec, &p, max), streamed(codec, &p, max));
                assert_eq!(w.is_ok(), s.is_ok(), "{codec} max {max}: {w:?} / {s:?}");
                if let (Err(CompressionError::TooLarge { limit: a }), Err(e)) = (&w, &s) {
                    assert!(matches!(e, CompressionError::TooLarge { limit } if limit == a), "{codec}: {e}");
                }
            }
            let step = (p.len() / 97).max(1);
            for cut in (0..p.len()).step_by(step) {
                let (w, s) = (whole(codec, &p[..cut], 1 << 20), streamed(codec, &p[..cut], 1 << 20));
                assert_eq!(w.is_ok(), s.is_ok(), "{codec} cut at {cut}: {w:?} / {s:?}");
                let mut flipped = p.clone();
                flipped[cut] ^= 0x21;
                let (w, s) = (whole(codec, &flipped, 1 << 20), streamed(codec, &flipped, 1 << 20));
                match (w, s) {
                    (Ok(a), Ok(b)) => assert_eq!(a, b, "{codec} flip at {cut}"),
                    (Err(_), Err(_)) => {}
                    (w, s) => panic!(
                        "{codec} flip at {cut}: whole {:?} streamed {:?}",
                        w.map(|v| v.len()),
                        s.map(|v| v.len())
                    ),
                }
            }
        }
    }

    #[test]
    fn a_raw_snappy_copy_beyond_the_window_is_refused() {
        // a literal of `literal` bytes, then a copy of 4 bytes from `back` bytes back (copy4)
        let block = |literal: u32, back: u32| {
            let mut block = Vec::new();
            let mut v = literal + 4;
            while v >= 0x80 {
                block.push((v as u8) | 0x80);
                v >>= 7;
            }
            block.push(v as u8);
            block.push(62 << 2); // literal, length - 1 in the next 3 bytes
            block.extend_from_slice(&(literal - 1).to_le_bytes()[..3]);
            block.extend(mixed_data(literal as usize));
            block.push((3 << 2) | 3);
            block.extend_from_slice(&back.to_le_bytes());
            block
        };
        // the literal is the step before the copy: its last 64 KiB at least stay in reach
        let near = block(140_000, 65_536);
        assert_eq!(
            streamed(Compression::Snappy, &near, 1 << 20).unwrap(),
            whole(Compression::Snappy, &near, 1 << 20).unwrap()
        );
        // valid for the format, written by no encoder (they copy within 64 KiB fragments)
        let far = block(140_000, 100_000);
        assert_eq!(whole(Compression::Snappy, &far, 1 << 20).unwrap().len(), 140_004);
        match streamed(Compression::Snappy, &far, 1 << 20) {
            Err(CompressionError::Snappy(snap::Error::Offset { offset: 100_000, .. })) => {}
            other => panic!("{other:?}"),
        }
    }
}

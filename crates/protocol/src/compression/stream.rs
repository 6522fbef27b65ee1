//! Streaming decompression: a compressed value read a step at a time, so that a reader holds
//! a bounded window of its output instead of all of it (the high-level consumer expands a
//! fetched wrapper or batch as the application iterates it).
//!
//! [`Decompressor::read_into`] appends the next piece of output to a buffer: at most
//! [`STEP`] bytes for gzip and zstd, one block for snappy's xerial framing (32 KiB as Java
//! writes them) and for lz4 (the frame's block maximum, 64 KiB as Kafka writes them). Two
//! cases cannot be cut finer: a raw snappy block (no xerial framing: librdkafka's v2 batches)
//! is one block, and an uncompressed value is handed on whole.
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
    RawSnappy(Bytes),
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
            Compression::Snappy => State::RawSnappy(input),
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
                State::RawSnappy(input) => {
                    self.done = true;
                    snappy_block(&mut Decoder::new(), input, room, self.max_output, out)
                }
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
    fn step(&mut self, room: usize, max_output: usize, out: &mut BytesMut, done: &mut bool) -> Result<(), CompressionError> {
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
    fn step(&mut self, room: usize, max_output: usize, out: &mut BytesMut, done: &mut bool) -> Result<(), CompressionError> {
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

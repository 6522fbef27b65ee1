//! A byte stream cut into frames by frame::split_frame. The first byte picks the maximum frame
//! size (n * 16) and the size of the chunks the stream is fed in (n % 7 + 1); fed all at once or
//! chunk by chunk, the same frames (and the same error) must come out, and the frames with
//! their size prefixes must be exactly the stream's first bytes.
#![no_main]

use bytes::{BufMut, Bytes, BytesMut};
use gregor_protocol::frame::split_frame;
use libfuzzer_sys::fuzz_target;

fn all_at_once(stream: &[u8], max: usize) -> (Vec<Bytes>, bool, usize) {
    let mut buf = BytesMut::from(stream);
    let mut frames = Vec::new();
    loop {
        match split_frame(&mut buf, max) {
            Ok(Some(f)) => {
                assert!(f.len() <= max);
                frames.push(f);
            }
            Ok(None) => return (frames, false, buf.len()),
            Err(_) => return (frames, true, buf.len()),
        }
    }
}

fn chunked(stream: &[u8], max: usize, chunk: usize) -> (Vec<Bytes>, bool) {
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    for piece in stream.chunks(chunk) {
        buf.put_slice(piece);
        loop {
            match split_frame(&mut buf, max) {
                Ok(Some(f)) => frames.push(f),
                Ok(None) => break,
                Err(_) => return (frames, true),
            }
        }
    }
    (frames, false)
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, stream)) = data.split_first() else { return };
    let max = usize::from(selector) * 16;
    let chunk = usize::from(selector % 7) + 1;
    let (frames, failed, left) = all_at_once(stream, max);
    let mut rebuilt = BytesMut::new();
    for f in &frames {
        rebuilt.put_u32(f.len() as u32);
        rebuilt.put_slice(f);
    }
    assert_eq!(&rebuilt[..], &stream[..stream.len() - left]);
    if !failed {
        // what is left is an incomplete frame
        assert!(
            left < 4 || left < 4 + u32::from_be_bytes(stream[stream.len() - left..][..4].try_into().unwrap()) as usize
        );
    }
    let (frames2, failed2) = chunked(stream, max, chunk);
    assert_eq!(frames, frames2);
    assert_eq!(failed, failed2);
});

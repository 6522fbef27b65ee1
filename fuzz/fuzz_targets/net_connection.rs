//! A selector byte and the bytes a broker sends back, fed to a `gregor_net::BrokerConnection`
//! over an in-memory duplex stream while up to four requests (Metadata v0 and Fetch v0,
//! correlation ids 0, 1, 2, 3) wait for their responses: the frame reader (size prefixes,
//! partial reads, a max frame size down to 64 bytes and up to 1 GiB), the correlation-id
//! dispatch and the response decoding. Selector: bits 0-1 the max frame size (64, 1 KiB, 1 MiB,
//! 1 GiB), bits 2-4 the size of the chunks the broker writes, bits 5-6 the number of requests
//! minus one.
//!
//! Checks: no panic; every request ends (a response, or an error) without hanging, on a
//! paused clock so request timeouts cost nothing; no more responses than whole frames were
//! sent; once the broker has closed the stream the connection is poisoned and a new request
//! fails at once. Run with `-malloc_limit_mb=64`: a size prefix must not make the reader
//! allocate what it announces.
#![no_main]

use std::time::Duration;

use gregor_net::{BrokerConnection, ConnectionConfig};
use gregor_protocol::messages::{FetchRequest, MetadataRequest};
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const MAX_FRAME: [usize; 4] = [64, 1024, 1 << 20, 1 << 30];
const CHUNK: [usize; 8] = [1, 3, 7, 16, 64, 512, 4096, usize::MAX];

/// How many whole frames of at most `max` bytes the stream starts with.
fn whole_frames(mut stream: &[u8], max: usize) -> usize {
    let mut n = 0;
    while let Some((size, rest)) = stream.split_first_chunk::<4>() {
        let size = i32::from_be_bytes(*size);
        match usize::try_from(size) {
            Ok(size) if size <= max && size <= rest.len() => {
                n += 1;
                stream = &rest[size..];
            }
            _ => break,
        }
    }
    n
}

async fn run(selector: u8, stream: Vec<u8>) {
    let max = MAX_FRAME[usize::from(selector & 3)];
    let chunk = CHUNK[usize::from((selector >> 2) & 7)];
    let requests = usize::from((selector >> 5) & 3) + 1;
    let config = ConnectionConfig::builder().max_frame_size(max).build().unwrap();
    let (client, mut broker) = tokio::io::duplex(1 << 16);
    let conn = BrokerConnection::from_io(client, &config);

    let mut waiting = tokio::task::JoinSet::new();
    for i in 0..requests {
        let conn = conn.clone();
        waiting.spawn(async move {
            if i % 2 == 0 {
                conn.request(0, &MetadataRequest::all_topics()).await.map(|_| ())
            } else {
                let fetch = FetchRequest {
                    replica_id: -1,
                    max_wait_time: 100,
                    min_bytes: 1,
                    topics: vec![],
                    ..Default::default()
                };
                conn.request(0, &fetch).await.map(|_| ())
            }
        });
    }
    let frames = whole_frames(&stream, max);
    let writer = tokio::spawn(async move {
        let mut sink = vec![0u8; 1 << 16];
        for piece in stream.chunks(chunk.min(stream.len().max(1))) {
            // a client that stopped reading (poisoned) must not block the broker forever
            match tokio::time::timeout(Duration::from_secs(1), broker.write_all(piece)).await {
                Ok(Ok(())) => {}
                _ => return,
            }
            // take what the client wrote, so neither side blocks on a full pipe
            while let Ok(Ok(n)) = tokio::time::timeout(Duration::ZERO, broker.read(&mut sink)).await {
                if n == 0 {
                    break;
                }
            }
        }
        let _ = broker.shutdown().await;
    });

    let mut answered = 0;
    while let Some(done) = tokio::time::timeout(Duration::from_secs(3600), waiting.join_next())
        .await
        .expect("a request hung past every timeout")
    {
        if done.expect("a request task panicked").is_ok() {
            answered += 1;
        }
    }
    assert!(answered <= frames, "{answered} responses from {frames} whole frames");
    writer.await.expect("the broker task panicked");
    // the stream has ended: the reader must see it
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(conn.is_poisoned(), "the connection outlived the end of its stream");
    let late = tokio::time::timeout(Duration::from_secs(3600), conn.request(0, &MetadataRequest::all_topics()))
        .await
        .expect("a request on a dead connection hung");
    assert!(late.is_err(), "a request on a dead connection succeeded");
    conn.close().await;
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, stream)) = data.split_first() else { return };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
    rt.block_on(run(selector, stream.to_vec()));
});

//! The HostileBroker's listener and connections: greet each connection as its
//! [`Accept`] says, then read requests one at a time and serve each under the fault its rules
//! pick ([`crate::fault`]), with the mini-broker's answers ([`super::answer`]).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use gregor_protocol::frame::{split_frame, RequestHeader};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};

use super::answer::carry_out;
use super::state::Shared;
use crate::fault::{self, Accept, Plan, Then};

/// The largest request frame the broker reads; a larger one closes the connection, as a
/// 0.8.2 broker does past `socket.request.max.bytes`.
pub const MAX_REQUEST_SIZE: usize = 100 * 1024 * 1024;

pub(super) async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((stream, _peer)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let id = shared.accepted.fetch_add(1, Ordering::SeqCst);
        let accept = shared.state().accept;
        if accept == Accept::Close {
            drop(stream);
            continue;
        }
        let _ = stream.set_nodelay(true);
        let conn_shared = shared.clone();
        // hold the map's lock while spawning, so the task cannot remove itself before it is in
        let mut connections = shared.connections();
        let task = tokio::spawn(async move {
            if accept == Accept::Stall {
                // hold the socket, never read; the task ends when it is aborted
                let _held = stream;
                std::future::pending::<()>().await;
            } else {
                connection(stream, id, accept == Accept::Silent, &conn_shared).await;
            }
            conn_shared.connections().remove(&id);
        });
        connections.insert(id, task.abort_handle());
    }
}

/// Reads requests off one connection and serves each under its fault, until the client
/// closes, a request is malformed, or a fault ends the connection. A muted connection reads
/// and logs requests and does nothing else.
async fn connection(stream: TcpStream, connection: u64, mut muted: bool, shared: &Shared) {
    let (mut read, mut write) = stream.into_split();
    let mut buf = BytesMut::with_capacity(16 * 1024);
    loop {
        let mut frame = loop {
            match split_frame(&mut buf, MAX_REQUEST_SIZE) {
                Ok(Some(frame)) => break frame,
                Ok(None) => match read.read_buf(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                },
                Err(_) => return,
            }
        };
        // like a 0.8 broker: a request it cannot parse closes the connection
        let Ok(header) = RequestHeader::decode(&mut frame) else { return };
        let Ok(request) = crate::kafka_0_8_2::decode_request(&header, frame) else { return };
        let fault = shared.take(connection, &header, &request, muted);
        let plan = if muted {
            Plan::mute()
        } else {
            fault::serve(fault.as_ref(), &header, request, |request| carry_out(shared, &header, request)).await
        };
        match fault::write_plan(&plan, &mut write).await {
            Ok(Then::Serve) => {}
            Ok(Then::Mute) => muted = true,
            Ok(Then::Close) | Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{broker, fetch_of};
    use super::super::HostileBroker;
    use crate::fault::{Accept, Fault, Rule, GARBAGE, TRAILING, WRONG_CORRELATION_OFFSET};
    use crate::wire::{self, Conn};
    use gregor_protocol::frame::{decode_response, ApiKey, RequestHeader};
    use gregor_protocol::messages::{FetchPartition, FetchRequest, MetadataRequest};
    use gregor_protocol::{Compression, ErrorCode};
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    const WITHIN: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn a_once_rule_is_used_up_and_rules_go_in_order() {
        let b = broker().await;
        b.intercept(Rule::on(ApiKey::Metadata, Fault::WrongCorrelationId).once());
        b.intercept(Rule::any(Fault::TrailingBytes));
        let mut c = Conn::open(b.addr()).await;
        let id = c.send(0, &wire::metadata(&[])).await;
        let frame = c.recv_frame(WITHIN).await.unwrap();
        assert_eq!(i32::from_be_bytes(frame[..4].try_into().unwrap()), id + WRONG_CORRELATION_OFFSET);
        c.send(0, &wire::metadata(&[])).await;
        let frame = c.recv_frame(WITHIN).await.unwrap();
        assert!(frame.ends_with(TRAILING));
        assert!(decode_response::<MetadataRequest>(0, frame).is_err());
        b.clear_intercepts();
        c.call(0, &wire::metadata(&[])).await;
        let faults: Vec<_> = b.served().into_iter().map(|s| s.fault).collect();
        assert_eq!(faults, [Fault::WrongCorrelationId, Fault::TrailingBytes, Fault::Answer]);
    }

    #[tokio::test]
    async fn a_rule_for_another_broker_id_leaves_this_one_alone() {
        let b = HostileBroker::builder().node_id(4).topic("t", 1).start().await.unwrap();
        b.intercept(Rule::on(ApiKey::Metadata, Fault::Close).on_broker(3));
        b.intercept(Rule::on(ApiKey::Metadata, Fault::WrongCorrelationId).on_broker(4).once());
        let mut c = Conn::open(b.addr()).await;
        let id = c.send(0, &wire::metadata(&[])).await;
        let frame = c.recv_frame(WITHIN).await.unwrap();
        assert_eq!(i32::from_be_bytes(frame[..4].try_into().unwrap()), id + WRONG_CORRELATION_OFFSET);
        let md = c.call(0, &wire::metadata(&[])).await;
        assert_eq!(md.brokers[0].node_id, 4);
    }

    /// The fault the FakeCluster always had, now on the HostileBroker: an error code for
    /// everything the request names, and the request not carried out.
    #[tokio::test]
    async fn an_error_answers_every_partition_with_the_code_and_stores_nothing() {
        let b = broker().await;
        b.intercept(Rule::on(ApiKey::Produce, Fault::Error(ErrorCode::NotLeaderForPartition)).once());
        let mut c = Conn::open(b.addr()).await;
        let request = wire::produce("t", 1, 1, vec![wire::msg(None, "x")], Compression::None);
        let r = c.call(0, &request).await;
        let p = &r.topics[0].partitions[0];
        assert_eq!((p.partition, p.error(), p.offset), (1, Some(ErrorCode::NotLeaderForPartition), -1));
        assert!(b.log("t", 1).is_empty(), "a refused Produce is not stored");
        // once: the retry is stored
        let r = c.call(0, &request).await;
        assert_eq!((r.topics[0].partitions[0].error(), r.topics[0].partitions[0].offset), (None, 0));
        assert_eq!(b.log("t", 1).len(), 1);

        // every partition of a Fetch, and the whole ConsumerMetadata response
        b.intercept(Rule::on(ApiKey::Fetch, Fault::Error(ErrorCode::OffsetOutOfRange)).once());
        let mut fetch = fetch_of("t", 0, 0);
        fetch.topics[0].partitions.push(FetchPartition {
            partition: 1,
            fetch_offset: 0,
            max_bytes: 100,
            ..Default::default()
        });
        let f = c.call(0, &fetch).await;
        let codes: Vec<_> = f.topics[0].partitions.iter().map(|p| (p.partition, p.error())).collect();
        assert_eq!(codes, [(0, Some(ErrorCode::OffsetOutOfRange)), (1, Some(ErrorCode::OffsetOutOfRange))]);
        b.intercept(Rule::any(Fault::Error(ErrorCode::ConsumerCoordinatorNotAvailable)).once());
        let cm = c.call(0, &gregor_protocol::messages::ConsumerMetadataRequest::group("g")).await;
        assert_eq!((cm.error_code, cm.node_id), (ErrorCode::ConsumerCoordinatorNotAvailable.code(), -1));

        // acks=0: the connection is closed, as 0.8.2 does when an acks=0 Produce fails
        b.intercept(Rule::on(ApiKey::Produce, Fault::Error(ErrorCode::MessageSizeTooLarge)).once());
        c.send(0, &wire::produce("t", 0, 0, vec![wire::msg(None, "y")], Compression::None)).await;
        assert!(c.recv_frame(WITHIN).await.is_none());
        assert_eq!(b.log("t", 0).len(), 2, "not stored either");
    }

    #[tokio::test]
    async fn close_stops_the_request_before_the_broker_carries_it_out() {
        let b = broker().await;
        b.intercept(Rule::on(ApiKey::Produce, Fault::Close).once());
        let mut c = Conn::open(b.addr()).await;
        c.send(0, &wire::produce("t", 1, 1, vec![wire::msg(None, "x")], Compression::None)).await;
        assert!(c.recv_frame(WITHIN).await.is_none());
        assert!(b.log("t", 1).is_empty());
        // a lost response is different: the Produce is stored
        b.intercept(Rule::on(ApiKey::Produce, Fault::TruncateThenClose).once());
        let mut c = Conn::open(b.addr()).await;
        c.send(0, &wire::produce("t", 1, 1, vec![wire::msg(None, "x")], Compression::None)).await;
        assert!(c.recv_frame(WITHIN).await.is_none(), "half a frame, then closed");
        assert_eq!(b.log("t", 1).len(), 1);
    }

    #[tokio::test]
    async fn corrupt_fetches_are_what_they_say() {
        let b = broker().await;
        let mut c = Conn::open(b.addr()).await;

        b.intercept(Rule::on(ApiKey::Fetch, Fault::BadCrc).once());
        let f = c.call(0, &fetch_of("t", 1, 7)).await;
        let err = f.topics[0].partitions[0].messages("t", 7).unwrap_err();
        assert!(
            matches!(&err, gregor_protocol::Error::Crc { location, .. }
                if location.offset == 7 && location.partition == Some(1) && location.topic.as_deref() == Some("t")),
            "{err:?}"
        );

        b.intercept(Rule::on(ApiKey::Fetch, Fault::MessageSetOverrun).once());
        c.send(0, &fetch_of("t", 0, 0)).await;
        let frame = c.recv_frame(WITHIN).await.unwrap();
        let err = decode_response::<FetchRequest>(0, frame).unwrap_err();
        assert!(matches!(err, gregor_protocol::Error::InvalidLength { .. }), "{err:?}");

        b.intercept(Rule::on(ApiKey::Metadata, Fault::HugeArrayCount).once());
        c.send(0, &wire::metadata(&[])).await;
        let frame = c.recv_frame(WITHIN).await.unwrap();
        let err = decode_response::<MetadataRequest>(0, frame).unwrap_err();
        assert!(matches!(err, gregor_protocol::Error::InvalidLength { length: 2147483647, .. }), "{err:?}");
    }

    /// A raw client socket: requests encoded by the codec, responses read as bytes.
    async fn raw(b: &HostileBroker) -> TcpStream {
        TcpStream::connect(b.addr()).await.unwrap()
    }

    async fn send_metadata(s: &mut TcpStream, correlation_id: i32) {
        let header = RequestHeader {
            api_key: ApiKey::Metadata,
            api_version: 0,
            correlation_id,
            client_id: Some("raw".into()),
            unknown_tagged_fields: Default::default(),
        };
        let mut out = bytes::BytesMut::new();
        gregor_protocol::frame::encode_request(&header, &wire::metadata(&[]), &mut out).unwrap();
        s.write_all(&out).await.unwrap();
    }

    async fn read_to_end(s: &mut TcpStream) -> Vec<u8> {
        let mut all = Vec::new();
        tokio::time::timeout(WITHIN, s.read_to_end(&mut all)).await.unwrap().unwrap();
        all
    }

    #[tokio::test]
    async fn framing_faults_write_what_they_say() {
        let b = broker().await;
        let mut s = raw(&b).await;
        send_metadata(&mut s, 9).await;
        let mut good = vec![0; 4];
        tokio::time::timeout(WITHIN, s.read_exact(&mut good)).await.unwrap().unwrap();
        let size = i32::from_be_bytes(good[..4].try_into().unwrap()) as usize;
        let frame_len = 4 + size;

        b.intercept(Rule::on(ApiKey::Metadata, Fault::GarbageAfter).once());
        let mut s = raw(&b).await;
        send_metadata(&mut s, 1).await;
        let mut got = vec![0; frame_len + GARBAGE.len()];
        tokio::time::timeout(WITHIN, s.read_exact(&mut got)).await.unwrap().unwrap();
        assert_eq!(&got[4..8], &1i32.to_be_bytes());
        assert_eq!(&got[frame_len..], GARBAGE);
        assert!(i32::from_be_bytes(GARBAGE[..4].try_into().unwrap()) < 0);

        b.intercept(Rule::on(ApiKey::Metadata, Fault::SizePrefix(i32::MAX)).once());
        let mut s = raw(&b).await;
        send_metadata(&mut s, 1).await;
        let mut size = [0; 4];
        tokio::time::timeout(WITHIN, s.read_exact(&mut size)).await.unwrap().unwrap();
        assert_eq!(i32::from_be_bytes(size), i32::MAX);
        // silent from then on, the connection open
        send_metadata(&mut s, 2).await;
        let mut more = [0; 1];
        assert!(tokio::time::timeout(Duration::from_millis(100), s.read(&mut more)).await.is_err());
        assert_eq!(b.served().last().unwrap().fault, Fault::Silent);

        b.intercept(Rule::on(ApiKey::Metadata, Fault::TruncateThenClose).once());
        let mut s = raw(&b).await;
        send_metadata(&mut s, 1).await;
        let all = read_to_end(&mut s).await;
        assert!(all.len() > 4 && all.len() < frame_len, "{} of {frame_len}", all.len());
        assert_eq!(&all[..4], &good[..4]);

        b.intercept(Rule::on(ApiKey::Metadata, Fault::Close).once());
        let mut s = raw(&b).await;
        send_metadata(&mut s, 1).await;
        assert!(read_to_end(&mut s).await.is_empty());
    }

    #[tokio::test]
    async fn accept_close_closes_at_once() {
        let b = HostileBroker::builder().accept(Accept::Close).start().await.unwrap();
        let mut s = raw(&b).await;
        let mut buf = [0; 1];
        let n = tokio::time::timeout(WITHIN, s.read(&mut buf)).await.unwrap().unwrap_or(0);
        assert_eq!(n, 0);
        assert_eq!(b.connections_accepted(), 1);
        assert_eq!(b.open_connections(), 0);
    }
}

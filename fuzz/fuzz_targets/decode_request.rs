//! A request frame without its size prefix: RequestHeader::decode then AnyRequest::decode. A
//! decode that succeeds must re-encode (header + body, and through frame::encode_request) to
//! the identical bytes (a boolean read from a byte other than 0 or 1 written back as 1, and
//! then those bytes must decode to the same header and request), or,
//! for a flexible version (whose varints may be read from non-canonical forms too), to bytes
//! that decode to the same header and request; the message sets of a Produce request are
//! walked as well.
#![no_main]

use bytes::{BufMut, BytesMut};
use gregor_protocol::frame::{encode_request, RequestHeader};
use gregor_protocol::messages::AnyRequest;
use gregor_protocol::Encode;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut buf = gregor_protocol_fuzz::bytes(data);
    let Ok(header) = RequestHeader::decode(&mut buf) else { return };
    let header_len = data.len() - buf.len();
    let flexible = header.api_key.is_flexible(header.api_version);
    let mut out = BytesMut::new();
    header.encode(&mut out).expect("a decoded header re-encodes");
    if !flexible {
        assert_eq!(&out[..], &data[..header_len], "header round trip");
    }

    let Ok(req) = AnyRequest::decode(&header, buf) else { return };
    assert_eq!(req.api_key(), header.api_key);
    req.encode(header.api_version, &mut out).unwrap_or_else(|e| panic!("decoded {req:?} but re-encoding failed: {e}"));
    if flexible {
        assert_decodes_to(&out, &header, &req);
        return;
    }
    // a boolean is read as Kafka reads it (any byte but 0 is true) and written back as 1: the
    // one difference allowed. A byte written back as 1 could also be some other field's value
    // rewritten, so where any byte differs the re-encoded bytes must also decode to the same
    // header and request (a rewritten length, count or integer would not).
    if &out[..] != data {
        let canonical = out.len() == data.len() && out.iter().zip(data).all(|(&o, &d)| o == d || (o == 1 && d > 1));
        assert!(canonical, "request round trip: {header:?} {req:?}\n  out: {:?}\n data: {data:?}", &out[..]);
        assert_decodes_to(&out, &header, &req);
    }

    let mut framed = BytesMut::new();
    match &req {
        AnyRequest::Produce(r) => encode_request(&header, r, &mut framed),
        AnyRequest::Fetch(r) => encode_request(&header, r, &mut framed),
        AnyRequest::Offsets(r) => encode_request(&header, r, &mut framed),
        AnyRequest::Metadata(r) => encode_request(&header, r, &mut framed),
        AnyRequest::OffsetCommit(r) => encode_request(&header, r, &mut framed),
        AnyRequest::OffsetFetch(r) => encode_request(&header, r, &mut framed),
        AnyRequest::ConsumerMetadata(r) => encode_request(&header, r, &mut framed),
        _ => return,
    }
    .expect("encode_request of a decoded request");
    let mut expected = BytesMut::new();
    expected.put_u32(out.len() as u32);
    expected.put_slice(&out);
    assert_eq!(framed, expected, "encode_request round trip");

    if let AnyRequest::Produce(p) = &req {
        for t in &p.topics {
            for part in &t.partitions {
                gregor_protocol_fuzz::walk_set(&part.message_set);
            }
        }
    }
});

/// The re-encoded bytes decode to the same header and request.
fn assert_decodes_to(out: &BytesMut, header: &RequestHeader, req: &AnyRequest) {
    let mut again = out.clone().freeze();
    let header_again = RequestHeader::decode(&mut again).expect("a re-encoded header decodes");
    assert_eq!(&header_again, header, "header not stable");
    let req_again = AnyRequest::decode(&header_again, again).expect("a re-encoded request decodes");
    assert_eq!(&req_again, req, "request not stable: {header:?}");
}

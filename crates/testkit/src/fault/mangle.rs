//! What a [`Fault`] does to one request, as pure decisions: [`before`] says whether the broker
//! carries the request out (and after what delay), [`after`] turns the broker's correct
//! response into the bytes to write and what the connection does next. No clock, no IO: the
//! fakes' connection loops sleep and write ([`super::write`]).

use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use gregor_protocol::frame::{decode_response, encode_response, ApiKey, RequestHeader};
use gregor_protocol::messages::{AnyRequest, FetchRequest};
use gregor_protocol::{wire, Message, MessageAndOffset, MessageSet};

use super::error::error_response;
use super::{Fault, BAD_CRC_VALUE, GARBAGE, MESSAGE_SET_OVERRUN, TRAILING, WRONG_CORRELATION_OFFSET};

/// Where a message's CRC starts in a message-set entry: after its offset (8) and size (4).
const CRC_AT: usize = 12;

/// What the faults need to know of a request once the broker has carried it out (taken before
/// the request goes to the broker's handler, which consumes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Asked {
    pub(crate) api_key: ApiKey,
    pub(crate) version: i16,
    pub(crate) correlation_id: i32,
    /// Fetch: the offset asked for in its first partition.
    pub(crate) fetch_offset: Option<i64>,
}

impl Asked {
    pub(crate) fn of(header: &RequestHeader, request: &AnyRequest) -> Asked {
        let fetch_offset = match request {
            AnyRequest::Fetch(f) => f.topics.first().and_then(|t| t.partitions.first()).map(|p| p.fetch_offset),
            _ => None,
        };
        Asked {
            api_key: header.api_key,
            version: header.api_version,
            correlation_id: header.correlation_id,
            fetch_offset,
        }
    }
}

/// What the connection does once a plan is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Then {
    /// Read and serve the next request.
    Serve,
    /// Read later requests, log them, never carry out or answer any.
    Mute,
    /// Close the connection.
    Close,
}

/// The bytes to write for one request and what the connection does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Written in order (empty: nothing).
    pub(crate) bytes: Bytes,
    /// One byte at a time, this long apart.
    pub(crate) pace: Option<Duration>,
    pub(crate) then: Then,
}

impl Plan {
    /// These bytes written; the connection goes on.
    pub(crate) fn send(bytes: Bytes) -> Plan {
        Plan { bytes, pace: None, then: Then::Serve }
    }

    /// These bytes written; then the connection is closed.
    pub(crate) fn send_then_close(bytes: Bytes) -> Plan {
        Plan { bytes, pace: None, then: Then::Close }
    }

    fn answer(frame: Option<Bytes>) -> Plan {
        Plan::send(frame.unwrap_or_default())
    }

    /// Nothing written; the connection is closed.
    pub(crate) fn close() -> Plan {
        Plan { bytes: Bytes::new(), pace: None, then: Then::Close }
    }

    /// Nothing written; the connection stays silent.
    pub(crate) fn mute() -> Plan {
        Plan { bytes: Bytes::new(), pace: None, then: Then::Mute }
    }

    fn then(mut self, then: Then) -> Plan {
        self.then = then;
        self
    }
}

/// What a broker's handler made of a request it carried out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Handled {
    /// The correct response frame, size prefix included.
    Frame(Bytes),
    /// No response is due (`acks=0`).
    Nothing,
    /// The broker closes the connection (a failed `acks=0` Produce, an unknown API).
    Close,
}

/// Before the broker sees a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Before {
    /// Carry it out after this delay (zero: at once), then ask [`after`].
    CarryOut(Duration),
    /// Do not carry it out; write this instead.
    Instead(Plan),
}

/// Whether `fault` lets the broker carry `request` out.
pub(crate) fn before(fault: Option<&Fault>, header: &RequestHeader, request: &AnyRequest) -> Before {
    match fault {
        Some(Fault::Error(code)) => Before::Instead(match error_response(header, request, *code) {
            Some(frame) => Plan::send(frame),
            None => Plan::close(),
        }),
        Some(Fault::Close) => Before::Instead(Plan::close()),
        Some(Fault::Delay(delay)) => Before::CarryOut(*delay),
        _ => Before::CarryOut(Duration::ZERO),
    }
}

/// What `fault` makes of the correct response to a request the broker carried out.
pub(crate) fn after(fault: Option<&Fault>, asked: &Asked, handled: Handled) -> Plan {
    let frame = match handled {
        Handled::Frame(frame) => Some(frame),
        Handled::Nothing => None,
        Handled::Close => return Plan::close(),
    };
    let Some(fault) = fault else { return Plan::answer(frame) };
    match fault {
        Fault::Answer | Fault::Delay(_) => Plan::answer(frame),
        // [`before`] stops these; were one to get here, the connection goes as Close says
        Fault::Error(_) | Fault::Close => Plan::close(),
        Fault::NoResponse => Plan::answer(None),
        Fault::Silent => Plan::mute(),
        Fault::WrongCorrelationId => Plan::answer(frame.map(|f| {
            let mut out = BytesMut::from(&f[..]);
            let wrong = asked.correlation_id.wrapping_add(WRONG_CORRELATION_OFFSET);
            out[4..8].copy_from_slice(&wrong.to_be_bytes());
            out.freeze()
        })),
        Fault::TruncateThenClose => Plan::answer(frame.map(truncated)).then(Then::Close),
        Fault::TruncateThenSilence => Plan::answer(frame.map(truncated)).then(Then::Mute),
        Fault::SizePrefix(size) => Plan::send(Bytes::copy_from_slice(&size.to_be_bytes())).then(Then::Mute),
        Fault::BadCrc => match (asked.api_key, &frame) {
            (ApiKey::Fetch, Some(f)) => Plan::answer(bad_crc(f, asked).or(frame)),
            _ => {
                tracing::warn!(api = %asked.api_key, "fault BadCrc breaks Fetch responses only: answered correctly");
                Plan::answer(frame)
            }
        },
        Fault::MessageSetOverrun => match (asked.api_key, &frame) {
            (ApiKey::Fetch, Some(f)) => Plan::send(message_set_overrun(f, asked).unwrap_or_else(|| huge_array(asked))),
            _ => Plan::send(huge_array(asked)),
        },
        Fault::HugeArrayCount => Plan::send(huge_array(asked)),
        Fault::TrailingBytes => Plan::answer(frame.map(|f| {
            let mut body = BytesMut::from(&f[8..]);
            body.put_slice(TRAILING);
            framed(asked.correlation_id, &body)
        })),
        Fault::GarbageAfter => {
            let mut out = BytesMut::new();
            out.put_slice(frame.as_deref().unwrap_or_default());
            out.put_slice(GARBAGE);
            Plan::send(out.freeze())
        }
        Fault::Slowloris(pace) => Plan { pace: Some(*pace), ..Plan::answer(frame) },
        Fault::Raw(bytes) => Plan::send(bytes.clone()),
    }
}

/// The size prefix and at least one byte of the body, never the whole frame.
fn truncated(frame: Bytes) -> Bytes {
    let cut = (frame.len() / 2).max(5).min(frame.len().saturating_sub(1));
    frame.slice(..cut)
}

/// A frame of `correlation_id` around `body`.
fn framed(correlation_id: i32, body: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(8 + body.len());
    out.put_i32(i32::try_from(4 + body.len()).unwrap_or(i32::MAX));
    out.put_i32(correlation_id);
    out.put_slice(body);
    out.freeze()
}

fn huge_array(asked: &Asked) -> Bytes {
    let mut body = BytesMut::new();
    body.put_i32(i32::MAX);
    body.put_slice(&[0; 8]);
    framed(asked.correlation_id, &body)
}

/// The Fetch response with its first partition's first message's CRC flipped (a made-up
/// message at the offset asked for when there is no whole message); `None` when the frame is
/// not a Fetch response or names no partition.
fn bad_crc(frame: &Bytes, asked: &Asked) -> Option<Bytes> {
    let (_, mut response) = decode_response::<FetchRequest>(asked.version, frame.slice(4..)).ok()?;
    let p = response.topics.first_mut()?.partitions.first_mut()?;
    let mut set = if matches!(p.message_set.entries().next(), Some(Ok(_))) {
        BytesMut::from(&p.message_set.as_bytes()[..])
    } else {
        let offset = asked.fetch_offset.unwrap_or(0).max(0);
        let made_up = Message::new(None, Some(Bytes::from_static(BAD_CRC_VALUE)));
        let set = MessageSet::encode(&[MessageAndOffset::new(offset, made_up)]).ok()?;
        p.error_code = 0;
        p.high_watermark = p.high_watermark.max(offset.saturating_add(1));
        BytesMut::from(&set.as_bytes()[..])
    };
    set[CRC_AT] ^= 0xff;
    p.message_set = MessageSet::from_bytes(set.freeze());
    let mut out = BytesMut::new();
    encode_response(asked.correlation_id, asked.version, &response, &mut out).ok()?;
    Some(out.freeze())
}

/// A Fetch response of the first partition alone whose message-set size runs
/// [`MESSAGE_SET_OVERRUN`] bytes past the end of the frame; `None` when the frame is not a
/// Fetch response or names no partition.
fn message_set_overrun(frame: &Bytes, asked: &Asked) -> Option<Bytes> {
    let (_, response) = decode_response::<FetchRequest>(asked.version, frame.slice(4..)).ok()?;
    let t = response.topics.first()?;
    let p = t.partitions.first()?;
    let set = p.message_set.as_bytes();
    let mut body = BytesMut::new();
    body.put_i32(1);
    wire::put_string(&mut body, "topic", &t.topic).ok()?;
    body.put_i32(1);
    body.put_i32(p.partition);
    body.put_i16(p.error_code);
    body.put_i64(p.high_watermark);
    body.put_i32(i32::try_from(set.len()).unwrap_or(i32::MAX).saturating_add(MESSAGE_SET_OVERRUN));
    body.put_slice(set);
    Some(framed(asked.correlation_id, &body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gregor_protocol::messages::{
        FetchPartition, FetchResponse, FetchResponsePartition, FetchResponseTopic, FetchTopic, MetadataRequest,
        MetadataResponse,
    };
    use gregor_protocol::{Encode, ErrorCode};

    fn fetch_asked(offset: i64) -> Asked {
        Asked { api_key: ApiKey::Fetch, version: 0, correlation_id: 42, fetch_offset: Some(offset) }
    }

    fn metadata_asked() -> Asked {
        Asked { api_key: ApiKey::Metadata, version: 0, correlation_id: 42, fetch_offset: None }
    }

    fn frame_of<B: Encode>(body: &B) -> Bytes {
        let mut out = BytesMut::new();
        encode_response(42, 0, body, &mut out).unwrap();
        out.freeze()
    }

    fn metadata_frame() -> Bytes {
        frame_of(&MetadataResponse { brokers: vec![], topics: vec![], ..Default::default() })
    }

    /// A Fetch response frame: t/0 with `messages` from `first` (hw after them), t/1 empty.
    fn fetch_frame(first: i64, messages: &[&str]) -> Bytes {
        let entries: Vec<_> = messages
            .iter()
            .enumerate()
            .map(|(i, v)| MessageAndOffset::new(first + i as i64, Message::new(None, Some(Bytes::from(v.to_string())))))
            .collect();
        let part = |partition, set, hw| FetchResponsePartition::new(partition, 0, hw, set);
        frame_of(&FetchResponse {
            topics: vec![FetchResponseTopic::new(
                "t",
                vec![
                    part(0, MessageSet::encode(&entries).unwrap(), first + messages.len() as i64),
                    part(1, MessageSet::new(), 0),
                ],
            )],
            ..Default::default()
        })
    }

    fn decode_fetch(frame: Bytes) -> gregor_protocol::Result<FetchResponse> {
        decode_response::<FetchRequest>(0, frame.slice(4..)).map(|(h, r)| {
            assert_eq!(h.correlation_id, 42);
            r
        })
    }

    fn ok(bytes: Bytes) -> Plan {
        Plan { bytes, pace: None, then: Then::Serve }
    }

    #[test]
    fn before_stops_error_and_close_and_delays_delay() {
        let header = RequestHeader {
            api_key: ApiKey::Metadata,
            api_version: 0,
            correlation_id: 5,
            client_id: None,
            unknown_tagged_fields: Default::default(),
        };
        let request = AnyRequest::Metadata(MetadataRequest::for_topics(["t"]));
        let ms = Duration::from_millis(30);
        assert_eq!(before(None, &header, &request), Before::CarryOut(Duration::ZERO));
        assert_eq!(before(Some(&Fault::Delay(ms)), &header, &request), Before::CarryOut(ms));
        assert_eq!(before(Some(&Fault::BadCrc), &header, &request), Before::CarryOut(Duration::ZERO));
        assert_eq!(before(Some(&Fault::Close), &header, &request), Before::Instead(Plan::close()));
        let Before::Instead(plan) = before(Some(&Fault::Error(ErrorCode::LeaderNotAvailable)), &header, &request)
        else {
            panic!("an error is not carried out")
        };
        assert_eq!(plan.then, Then::Serve);
        let (h, r) = decode_response::<MetadataRequest>(0, plan.bytes.slice(4..)).unwrap();
        assert_eq!(h.correlation_id, 5);
        assert_eq!((r.topics[0].name(), r.topics[0].error()), ("t", Some(ErrorCode::LeaderNotAvailable)));
        for fault in [Fault::Error(ErrorCode::NotLeaderForPartition), Fault::Close] {
            assert!(!fault.carries_out(), "{fault:?}");
        }
        for fault in [Fault::Answer, Fault::Silent, Fault::NoResponse, Fault::BadCrc, Fault::Raw(Bytes::new())] {
            assert!(fault.carries_out(), "{fault:?}");
        }
    }

    /// Each fault over a Metadata response, by what it writes and what comes next.
    #[test]
    fn framing_faults_write_what_they_say() {
        let good = metadata_frame();
        let asked = metadata_asked();
        let plan = |fault: Fault| after(Some(&fault), &asked, Handled::Frame(good.clone()));
        let ms = Duration::from_millis(3);

        assert_eq!(after(None, &asked, Handled::Frame(good.clone())), ok(good.clone()));
        assert_eq!(plan(Fault::Answer), ok(good.clone()));
        assert_eq!(plan(Fault::Delay(ms)), ok(good.clone()));
        assert_eq!(plan(Fault::NoResponse), ok(Bytes::new()));
        assert_eq!(plan(Fault::Silent), Plan { then: Then::Mute, ..ok(Bytes::new()) });
        assert_eq!(plan(Fault::Slowloris(ms)), Plan { pace: Some(ms), ..ok(good.clone()) });
        assert_eq!(plan(Fault::Raw(Bytes::from_static(b"xy"))), ok(Bytes::from_static(b"xy")));
        assert_eq!(
            plan(Fault::SizePrefix(-7)),
            Plan { then: Then::Mute, ..ok(Bytes::copy_from_slice(&(-7i32).to_be_bytes())) }
        );

        let wrong = plan(Fault::WrongCorrelationId).bytes;
        assert_eq!((&wrong[..4], &wrong[8..]), (&good[..4], &good[8..]));
        assert_eq!(&wrong[4..8], &(42 + WRONG_CORRELATION_OFFSET).to_be_bytes());

        for (fault, then) in [(Fault::TruncateThenClose, Then::Close), (Fault::TruncateThenSilence, Then::Mute)] {
            let p = plan(fault);
            assert_eq!(p.then, then);
            assert!(p.bytes.len() > 4 && p.bytes.len() < good.len(), "{} of {}", p.bytes.len(), good.len());
            assert_eq!(p.bytes[..], good[..p.bytes.len()]);
        }

        let trailing = plan(Fault::TrailingBytes).bytes;
        assert!(trailing.ends_with(TRAILING));
        assert_eq!(trailing.len(), good.len() + TRAILING.len());
        let err = decode_response::<MetadataRequest>(0, trailing.slice(4..)).unwrap_err();
        assert!(matches!(err, gregor_protocol::Error::TrailingBytes { remaining: 4, .. }), "{err:?}");

        let garbage = plan(Fault::GarbageAfter).bytes;
        assert_eq!((&garbage[..good.len()], &garbage[good.len()..]), (&good[..], GARBAGE));

        for fault in [Fault::HugeArrayCount, Fault::MessageSetOverrun] {
            let huge = plan(fault).bytes;
            assert_eq!(&huge[4..8], &42i32.to_be_bytes());
            let err = decode_response::<MetadataRequest>(0, huge.slice(4..)).unwrap_err();
            assert!(matches!(err, gregor_protocol::Error::InvalidLength { length: 2147483647, .. }), "{err:?}");
        }

        // BadCrc has nothing to break outside Fetch
        assert_eq!(plan(Fault::BadCrc), ok(good.clone()));
    }

    #[test]
    fn without_a_response_only_made_up_bytes_are_written() {
        let asked = metadata_asked();
        let plan = |fault: Fault| after(Some(&fault), &asked, Handled::Nothing);
        for fault in [Fault::Answer, Fault::WrongCorrelationId, Fault::TrailingBytes, Fault::BadCrc] {
            assert_eq!(plan(fault.clone()), ok(Bytes::new()), "{fault:?}");
        }
        assert_eq!(plan(Fault::TruncateThenClose), Plan::close());
        assert_eq!(plan(Fault::GarbageAfter), ok(Bytes::from_static(GARBAGE)));
        assert_eq!(plan(Fault::HugeArrayCount).bytes.len(), 4 + 4 + 4 + 8);
        // a broker that closes closes, whatever the fault
        assert_eq!(after(Some(&Fault::Silent), &asked, Handled::Close), Plan::close());
        assert_eq!(after(None, &asked, Handled::Close), Plan::close());
    }

    #[test]
    fn bad_crc_breaks_the_first_message_of_the_first_partition() {
        let good = fetch_frame(3, &["a", "b"]);
        let plan = after(Some(&Fault::BadCrc), &fetch_asked(3), Handled::Frame(good.clone()));
        assert_eq!(plan.bytes.len(), good.len(), "only one byte differs");
        assert_eq!(good.iter().zip(plan.bytes.iter()).filter(|(a, b)| a != b).count(), 1);
        let response = decode_fetch(plan.bytes).unwrap();
        let p = &response.topics[0].partitions[0];
        let err = p.messages("t", 3).unwrap_err();
        assert!(
            matches!(&err, gregor_protocol::Error::Crc { location, .. } if location.offset == 3 && location.partition == Some(0)),
            "{err:?}"
        );
        assert_eq!(response.topics[0].partitions[1].message_set.len(), 0, "the other partition is untouched");
    }

    #[test]
    fn bad_crc_makes_a_message_up_when_there_is_none() {
        // t/0 empty at offset 9 (no message in the correct response)
        let good = fetch_frame(9, &[]);
        let plan = after(Some(&Fault::BadCrc), &fetch_asked(9), Handled::Frame(good));
        let response = decode_fetch(plan.bytes).unwrap();
        let p = &response.topics[0].partitions[0];
        assert_eq!((p.error_code, p.high_watermark), (0, 10));
        let err = p.messages("t", 9).unwrap_err();
        assert!(matches!(&err, gregor_protocol::Error::Crc { location, .. } if location.offset == 9), "{err:?}");
        // with the CRC fixed back it is the made-up message
        let mut set = BytesMut::from(&p.message_set.as_bytes()[..]);
        set[CRC_AT] ^= 0xff;
        let entries: Vec<_> = MessageSet::from_bytes(set.freeze()).entries().collect::<Result<_, _>>().unwrap();
        assert_eq!(entries[0].message.value.as_deref(), Some(BAD_CRC_VALUE));
    }

    #[test]
    fn message_set_overrun_runs_past_the_frame() {
        let good = fetch_frame(0, &["a"]);
        let plan = after(Some(&Fault::MessageSetOverrun), &fetch_asked(0), Handled::Frame(good));
        assert_eq!(plan.then, Then::Serve);
        let err = decode_fetch(plan.bytes.clone()).unwrap_err();
        assert!(matches!(err, gregor_protocol::Error::InvalidLength { .. }), "{err:?}");
        // size, correlation id, 1 topic, "t", 1 partition, partition, error code, high watermark
        let size_at = 4 + 4 + 4 + (2 + 1) + 4 + 4 + 2 + 8;
        let set_len = plan.bytes.len() - size_at - 4;
        assert!(set_len > 0, "the set of one message is there");
        let size = i32::from_be_bytes(plan.bytes[size_at..size_at + 4].try_into().unwrap());
        assert_eq!(size, set_len as i32 + MESSAGE_SET_OVERRUN);
    }

    #[test]
    fn asked_takes_the_first_fetch_offset() {
        let header = RequestHeader {
            api_key: ApiKey::Fetch,
            api_version: 0,
            correlation_id: 3,
            client_id: None,
            unknown_tagged_fields: Default::default(),
        };
        let request = AnyRequest::Fetch(FetchRequest {
            replica_id: -1,
            max_wait_time: 0,
            min_bytes: 0,
            topics: vec![FetchTopic::new(
                "t",
                vec![
                    FetchPartition { partition: 1, fetch_offset: 17, max_bytes: 1, ..Default::default() },
                    FetchPartition { partition: 0, fetch_offset: 4, max_bytes: 1, ..Default::default() },
                ],
            )],
            ..Default::default()
        });
        let expected = Asked { api_key: ApiKey::Fetch, version: 0, correlation_id: 3, fetch_offset: Some(17) };
        assert_eq!(Asked::of(&header, &request), expected);
    }
}

//! One vocabulary of broker faults for every fake broker in the testkit: the
//! [`FakeCluster`](crate::FakeCluster) and the [`HostileBroker`](crate::hostile::HostileBroker)
//! both take the same [`Rule`]s, each naming a [`Fault`], and apply them the same way to every
//! connection they serve.
//!
//! ```text
//!   request ──► rules (first match with uses left) ──► Fault
//!                 │                                      │
//!                 │ none: Fault::Answer        before    │  Error, Close: not carried out
//!                 ▼                                      ▼  Delay: wait, then carry it out
//!        the broker carries the request out ──► its correct response frame (or none: acks=0)
//!                                                        │
//!                                                after   ▼  mangled, written, held back
//!                                            bytes on the wire, then serve / mute / close
//! ```
//!
//! # How a fault is chosen
//!
//! Each request is matched against the broker's rules in the order they were added; the first
//! whose API key (or [`Rule::any`]) and broker ([`Rule::on_broker`]) match and that has uses
//! left ([`Rule::once`], [`Rule::times`]; [`Rule::always`] is the default) supplies the fault,
//! and one use of it is spent. A request no rule matches is answered correctly. Rules are added
//! and cleared while clients run (`intercept` and `clear_intercepts` on either fake).
//!
//! # What "carried out" means
//!
//! Every fault but [`Fault::Error`] and [`Fault::Close`] lets the broker carry the request out
//! first — a Produce is appended, an OffsetCommit stored — and then spoils or withholds the
//! response, as when a broker did the work and the response was lost or mangled on the way: a
//! client that retries a Produce then writes it twice. [`Fault::Error`] and [`Fault::Close`]
//! stop the request before the broker touches it.
//!
//! A Produce with `acks=0` gets no response from a healthy broker. The faults that spoil the
//! correct response then have nothing to spoil and write nothing (the connection still closes
//! or goes silent when the fault says so); those that make their bytes up ([`Fault::SizePrefix`],
//! [`Fault::HugeArrayCount`], [`Fault::MessageSetOverrun`] outside Fetch, the garbage of
//! [`Fault::GarbageAfter`], [`Fault::Raw`]) write them all the same. A request the broker itself
//! answers by closing the connection (a failed `acks=0` Produce, an API 0.8.2 does not know)
//! is closed whatever the fault.
//!
//! # Connections
//!
//! A connection that a fault silenced ([`Fault::Silent`], [`Fault::TruncateThenSilence`],
//! [`Fault::SizePrefix`]) stays open; the requests that follow on it are read and logged (as
//! [`Fault::Silent`]) but neither carried out nor answered, and they use no rule. How a broker
//! greets new connections is an [`Accept`].
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use gregor_protocol::frame::ApiKey;
//! use gregor_protocol::ErrorCode;
//! use gregor_testkit::fault::{Fault, Rule};
//! use gregor_testkit::hostile::HostileBroker;
//!
//! let broker = HostileBroker::builder().topic("events", 1).start().await.unwrap();
//! // the next Fetch gets a message whose CRC is wrong...
//! broker.intercept(Rule::on(ApiKey::Fetch, Fault::BadCrc).once());
//! // ...the next two Produce requests NotLeaderForPartition...
//! broker.intercept(Rule::on(ApiKey::Produce, Fault::Error(ErrorCode::NotLeaderForPartition)).times(2));
//! // ...and anything else, after those, silence
//! broker.intercept(Rule::any(Fault::Silent));
//! // the same rules go to a FakeCluster, optionally for one broker:
//! // cluster.intercept(Rule::on(ApiKey::Fetch, Fault::BadCrc).on_broker(2).once());
//! # }
//! ```

mod error;
mod mangle;
mod rule;
mod write;

use std::time::Duration;

use bytes::Bytes;
use gregor_protocol::ErrorCode;

pub(crate) use mangle::{Handled, Plan, Then};
pub use rule::Rule;
pub(crate) use rule::Rules;
pub(crate) use write::{serve, write_plan};

/// What [`Fault::WrongCorrelationId`] adds to the request's correlation id.
pub const WRONG_CORRELATION_OFFSET: i32 = 1_000_000;
/// The bytes [`Fault::GarbageAfter`] writes after a valid response: read as a size prefix they
/// are negative (`0xdeadbeef`), so no honest reader can take them for a frame.
pub const GARBAGE: &[u8] = b"\xde\xad\xbe\xefgarbage after the response";
/// By how many bytes the message-set size of [`Fault::MessageSetOverrun`] exceeds the bytes
/// that follow it in the frame.
pub const MESSAGE_SET_OVERRUN: i32 = 1_000_000;
/// The bytes [`Fault::TrailingBytes`] appends inside the frame, after the body.
pub const TRAILING: &[u8] = b"junk";
/// The value of the message a [`Fault::BadCrc`] Fetch serves (with its CRC broken) at the
/// offset asked for when the partition has no whole message there.
pub const BAD_CRC_VALUE: &[u8] = b"hostile";

/// What a fake broker does to one request (see the [module docs](self) for how one is chosen,
/// what "carried out" means and what happens to `acks=0`).
///
/// Every fault works on both fakes. "The correct response" is what the fake answers when no
/// rule matches: Kafka 0.8.2's answer for the [`FakeCluster`](crate::FakeCluster), the
/// answer of a one-broker cluster holding its builder's topics for the
/// [`HostileBroker`](crate::hostile::HostileBroker).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// No fault: the correct response. Useful ahead of a broader rule, to let some requests
    /// through (`Rule::on(ApiKey::Metadata, Fault::Answer)` before `Rule::any(Fault::Silent)`);
    /// the request logs name it for requests no rule matched.
    Answer,
    /// The request is not carried out; its response carries this error code for every
    /// topic/partition it names (ConsumerMetadata: the whole response; Metadata: no brokers and
    /// every topic asked for, none when it asked for all). Models a broker refusing a request:
    /// NotLeaderForPartition after a leader moved, RequestTimedOut, a coordinator not there yet.
    /// An `acks=0` Produce gets its connection closed instead, as 0.8.2 does when one fails.
    Error(ErrorCode),
    /// The request is carried out after this delay and answered correctly; requests behind it
    /// on the connection wait, as a 0.8 broker answers in order. Models a slow broker (a GC
    /// pause, a slow disk, a busy request queue).
    Delay(Duration),
    /// The connection is closed before the request is carried out, with no response. Models a
    /// broker that crashed or reset the connection with the request in flight.
    Close,
    /// The request is carried out but this one response is never sent; later requests on the
    /// connection are answered as usual. Models a response lost on the way: the client must
    /// time out, and a retried Produce is written twice.
    NoResponse,
    /// The request is carried out; no response to it or to any later request on this
    /// connection, which stays open until the client or the broker closes it. Models a broker
    /// that accepts and never answers (a hung request thread, a full disk).
    Silent,
    /// The correct response carrying the request's correlation id plus
    /// [`WRONG_CORRELATION_OFFSET`]. Models a broker (or proxy) that mixes up responses.
    WrongCorrelationId,
    /// The first half of the correct response frame (its size prefix and at least one byte of
    /// the body, never all of it), then the connection is closed. Models a broker dying while
    /// writing.
    TruncateThenClose,
    /// The first half of the correct response frame, as [`Fault::TruncateThenClose`], then
    /// nothing more on this connection. Models a network that stalls in the middle of a
    /// response.
    TruncateThenSilence,
    /// Only this 4-byte size prefix (e.g. `i32::MAX`, or a negative size), then nothing more on
    /// this connection. Models a corrupt stream, or a peer that is not a Kafka broker.
    SizePrefix(i32),
    /// Fetch: the first partition's first message with its CRC flipped (or, when that
    /// partition has no whole message, one message of value [`BAD_CRC_VALUE`] at the offset
    /// asked for, with no error code); the frame and everything else are correct. Models
    /// corruption on a broker's disk. Other APIs have no CRC to break: the correct response,
    /// and a warning in the log.
    BadCrc,
    /// Fetch: a response of only the first partition, whose message-set size is
    /// [`MESSAGE_SET_OVERRUN`] bytes larger than what follows it in the frame. Models a length
    /// field that lies. Other APIs: as [`Fault::HugeArrayCount`].
    MessageSetOverrun,
    /// A whole frame with the correct correlation id whose body starts with an array count of
    /// `i32::MAX` (2^31-1) followed by 8 zero bytes (the first array of the response: brokers
    /// for Metadata, topics for the others; ConsumerMetadata has no array and just fails to
    /// decode). Models a count that would make a trusting client allocate gigabytes.
    HugeArrayCount,
    /// The correct response with [`TRAILING`] appended inside the frame (its size counts
    /// them). Models a broker newer than the version the client asked for.
    TrailingBytes,
    /// The correct response, then [`GARBAGE`] outside any frame. Models a stream that goes bad
    /// after a good response.
    GarbageAfter,
    /// The correct response, one byte at a time, this long apart. Models a congested link.
    Slowloris(Duration),
    /// Exactly these bytes, whatever they are (frame them yourself); the request is carried out.
    Raw(Bytes),
}

impl Fault {
    /// Whether the broker carries the request out before the fault acts on its response (every
    /// fault but [`Fault::Error`] and [`Fault::Close`]).
    pub fn carries_out(&self) -> bool {
        !matches!(self, Fault::Error(_) | Fault::Close)
    }
}

/// How a fake broker greets a new connection (`set_accept` on either fake).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Accept {
    /// Read requests and answer them by the rules (the default).
    #[default]
    Serve,
    /// Close the connection right after accepting it, before reading anything. Models a broker
    /// that is shutting down, or one out of file descriptors.
    Close,
    /// Keep the connection open, read requests, log them, never carry out or answer any, as if
    /// the first had met [`Fault::Silent`].
    Silent,
    /// Keep the connection open and never read from it: a client's writes stall once the
    /// socket buffers fill. Models a broker whose network threads are stuck.
    Stall,
}

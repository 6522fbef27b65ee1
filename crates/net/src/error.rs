//! The crate's one error type, and why a connection was given up.

use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use gregor_protocol::frame::ApiKey;
use gregor_protocol::ErrorCode;

use crate::config::ConfigError;
use crate::BrokerId;

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The hint given when a broker closes a connection while a request waits: a Kafka 0.8 broker
/// closes the connection, without a word, on a request it cannot parse (an API or version newer
/// than itself) and on a failed `acks=0` Produce.
pub const BROKER_CLOSED_HINT: &str = "is the API version newer than the broker, or did an acks=0 produce fail?";

/// Everything that can go wrong talking to Kafka 0.8.2 brokers.
///
/// Errors that end a connection come in two shapes: the request whose own failure ended it gets
/// the specific variant ([`Error::Timeout`]); every other request in flight on that connection,
/// and every later one, gets [`Error::Poisoned`] carrying the same [`PoisonReason`]. Use
/// [`Error::is_retriable`] to decide whether to retry (through a [`crate::Pool`], which opens a
/// fresh connection).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Returned when a TCP connection to a broker cannot be opened (the name does not resolve,
    /// the port refuses, the socket cannot be configured).
    #[error("could not connect to broker at {addr}")]
    Connect {
        /// The address as given (`host:port`).
        addr: String,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// Returned when connecting to a broker takes longer than
    /// [`ConnectionConfig::connect_timeout`](crate::ConnectionConfig::connect_timeout).
    #[error("connecting to broker at {addr} timed out after {after:?}")]
    ConnectTimeout {
        /// The address as given.
        addr: String,
        /// The timeout.
        after: Duration,
    },
    /// Returned when an IO operation outside a connection's reader and writer fails (setting
    /// `TCP_NODELAY` on a connected socket).
    #[error("io error talking to {addr}")]
    Io {
        /// The broker's address.
        addr: String,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// Returned to the request that got no response within
    /// [`ConnectionConfig::request_timeout`](crate::ConnectionConfig::request_timeout); its
    /// connection is poisoned, since the stream can no longer be trusted to be in step.
    #[error(
        "{api} request (correlation id {correlation_id}) to {addr} got no response within {after:?}; \
         the connection was closed (a fetch's max wait must stay below the request timeout)"
    )]
    Timeout {
        /// The broker's address.
        addr: String,
        /// The request's API.
        api: ApiKey,
        /// The request's correlation id.
        correlation_id: i32,
        /// The timeout.
        after: Duration,
    },
    /// Returned when a connection was given up (an IO error, the broker closing it, a bad frame,
    /// an unknown correlation id, another request's timeout): every request in flight on it and
    /// every later one fails with this. Get a fresh connection from the [`crate::Pool`].
    #[error("connection to {addr} is unusable: {reason}")]
    Poisoned {
        /// The broker's address.
        addr: String,
        /// What killed the connection.
        reason: PoisonReason,
    },
    /// Returned when a connection was closed by [`crate::BrokerConnection::close`] (or dropped)
    /// before or while a request was sent.
    #[error("connection to {addr} was closed by the client")]
    Closed {
        /// The broker's address.
        addr: String,
    },
    /// Returned when a request frame is larger than
    /// [`ConnectionConfig::max_frame_size`](crate::ConnectionConfig::max_frame_size) (a broker
    /// would close the connection on it: `socket.request.max.bytes`). Send fewer messages per
    /// request.
    #[error("{api} request of {size} bytes to {addr} exceeds max frame size {max}")]
    FrameTooLarge {
        /// The broker's address.
        addr: String,
        /// The request's API.
        api: ApiKey,
        /// The frame's size (without its 4-byte size prefix).
        size: usize,
        /// The configured maximum.
        max: usize,
    },
    /// Returned when a request cannot be encoded (an unsupported version, a field the version
    /// lacks, a string too long). Nothing was sent.
    #[error("could not encode {api} v{version} request")]
    Encode {
        /// The request's API.
        api: ApiKey,
        /// The version asked for.
        version: i16,
        /// What the codec said.
        #[source]
        source: gregor_protocol::Error,
    },
    /// Returned when a response frame arrived for the request but its body cannot be decoded as
    /// the version that was sent (the connection stays usable: the frame was whole).
    #[error("could not decode {api} v{version} response (correlation id {correlation_id}) from {addr}")]
    Decode {
        /// The broker's address.
        addr: String,
        /// The request's API.
        api: ApiKey,
        /// The version the response was decoded as.
        version: i16,
        /// The request's correlation id.
        correlation_id: i32,
        /// What the codec said.
        #[source]
        source: gregor_protocol::Error,
    },
    /// Returned when [`crate::BrokerConnection::request`] is given a request the broker does
    /// not answer (Produce with `acks=0`): use [`crate::BrokerConnection::send`].
    #[error("{api} request gets no response from a broker (acks=0?): use send(), not request()")]
    NoResponseExpected {
        /// The request's API.
        api: ApiKey,
    },
    /// Returned when no broker of the bootstrap list or the known brokers answered a
    /// Metadata request. Check `metadata.broker.list` and that the brokers run.
    #[error("no broker answered metadata (tried {})", tried.join(", "))]
    NoBrokerAvailable {
        /// The addresses tried, in order (each once per round).
        tried: Vec<String>,
        /// The last error seen.
        #[source]
        last: Option<Box<Error>>,
    },
    /// Returned when a broker id is not in the known metadata (refresh metadata first).
    #[error("broker {broker_id} is not in the known metadata; refresh metadata")]
    UnknownBroker {
        /// The broker id.
        broker_id: BrokerId,
    },
    /// Returned when the metadata names no leader for a partition (an election is running, the
    /// topic is being created, or the metadata is stale): refresh after `retry.backoff.ms`.
    #[error("{topic}/{partition} has no known leader; refresh metadata after a backoff")]
    NoLeader {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
    },
    /// Returned when a broker answered with an error code.
    #[error("broker answered {code} for {context}")]
    Broker {
        /// The code.
        code: ErrorCode,
        /// What it was about (topic, partition, API, broker).
        context: String,
    },
    /// Returned when the TLS handshake with a broker failed on its certificate or the protocol
    /// (unknown issuer, a name the certificate does not carry, an expired certificate, no common
    /// cipher, a client certificate the broker refused). Not retriable: the same certificates
    /// would fail again; fix the `ssl.*` settings.
    #[error("TLS with broker at {addr} failed: {reason}")]
    Tls {
        /// The broker's address.
        addr: String,
        /// What rustls said.
        reason: String,
    },
    /// Returned when SASL authentication with a broker failed: the mechanism is not enabled,
    /// the credentials were refused, or the broker's answers do not fit the mechanism. Not
    /// retriable: the same credentials would fail again. Never quotes a password.
    #[error("SASL {mechanism} authentication with broker at {addr} failed: {reason}")]
    Sasl {
        /// The broker's address.
        addr: String,
        /// The mechanism.
        mechanism: crate::sasl::SaslMechanism,
        /// What went wrong.
        reason: String,
    },
    /// Returned when a broker speaks no version of an API that gregor implements (a Kafka 4
    /// broker has no Produce v0-v2, a 0.8 broker no ApiVersions): nothing was sent. Not
    /// retriable on this broker.
    #[error("broker at {addr}: {source}")]
    NoCommonVersion {
        /// The broker's address.
        addr: String,
        /// The API and both sides' versions.
        #[source]
        source: crate::versions::NoCommonVersion,
    },
    /// Returned when a setting is invalid.
    #[error("invalid configuration")]
    Config(#[from] ConfigError),
}

impl Error {
    /// A [`Error::Broker`] for `code` about `context`.
    pub fn broker(code: ErrorCode, context: impl Into<String>) -> Error {
        Error::Broker { code, context: context.into() }
    }

    /// True when sending again (on a fresh connection, perhaps to another broker after a
    /// metadata refresh) may succeed: connection failures, timeouts, poisoned connections,
    /// missing leaders, and retriable broker codes ([`ErrorCode::is_retriable`]).
    pub fn is_retriable(&self) -> bool {
        if self.is_tls_refusal() {
            return false;
        }
        match self {
            Error::Connect { .. }
            | Error::ConnectTimeout { .. }
            | Error::Io { .. }
            | Error::Timeout { .. }
            | Error::Poisoned { .. }
            | Error::NoBrokerAvailable { .. }
            | Error::UnknownBroker { .. }
            | Error::NoLeader { .. } => true,
            Error::Broker { code, .. } => code.is_retriable(),
            _ => false,
        }
    }

    /// True when the client's view of the cluster may be stale, so metadata should be refreshed
    /// before a retry: the broker is unreachable or gone, a leader is missing, or a broker code
    /// says so ([`ErrorCode::needs_metadata_refresh`]).
    pub fn needs_metadata_refresh(&self) -> bool {
        match self {
            Error::Connect { .. }
            | Error::ConnectTimeout { .. }
            | Error::Io { .. }
            | Error::Timeout { .. }
            | Error::Poisoned { .. }
            | Error::UnknownBroker { .. }
            | Error::NoLeader { .. } => true,
            Error::Broker { code, .. } => code.needs_metadata_refresh(),
            _ => false,
        }
    }

    /// True for a connection TLS gave up on: a failed handshake ([`Error::Tls`]), or an alert
    /// after it (a broker refusing the client certificate it asked for, under TLS 1.3, says so
    /// only once the client's side of the handshake is done).
    pub fn is_tls_refusal(&self) -> bool {
        match self {
            Error::Tls { .. } => true,
            Error::Poisoned { reason: PoisonReason::Io { error, .. }, .. } => {
                error.get_ref().is_some_and(|inner| inner.is::<rustls::Error>())
            }
            _ => false,
        }
    }

    /// True for a connection refused in a way no retry, on this broker or another, can fix:
    /// a TLS refusal ([`Error::is_tls_refusal`]) or a failed SASL authentication ([`Error::Sasl`]).
    /// Clients fail at once on it instead of retrying (fix the `ssl.*`/`sasl.*` settings).
    pub fn is_security_refusal(&self) -> bool {
        self.is_tls_refusal() || matches!(self, Error::Sasl { .. })
    }

    /// True when the broker closed the connection (EOF, or a reset): what a Kafka 0.8/0.9 broker
    /// does on a request it does not know, such as ApiVersions. Over TLS such a close is an
    /// EOF without TLS's close_notify (rustls reports `UnexpectedEof`): a broker closed it too.
    pub fn is_broker_closed(&self) -> bool {
        match self.poison_reason() {
            Some(PoisonReason::BrokerClosed { .. }) => true,
            Some(PoisonReason::Io { error, .. }) => matches!(
                error.kind(),
                io::ErrorKind::ConnectionReset
                    | io::ErrorKind::ConnectionAborted
                    | io::ErrorKind::BrokenPipe
                    | io::ErrorKind::UnexpectedEof
            ),
            _ => false,
        }
    }

    /// The broker's error code, for [`Error::Broker`].
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Error::Broker { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Why the connection died, for [`Error::Poisoned`].
    pub fn poison_reason(&self) -> Option<&PoisonReason> {
        match self {
            Error::Poisoned { reason, .. } => Some(reason),
            _ => None,
        }
    }
}

/// Why a connection was given up. Cheap to clone: every waiter gets a copy.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum PoisonReason {
    /// Reading from or writing to the socket failed.
    Io {
        /// `"read"` or `"write"`.
        during: &'static str,
        /// What the OS said.
        error: Arc<io::Error>,
    },
    /// The broker closed the connection (EOF).
    BrokerClosed {
        /// Requests that were waiting for a response.
        in_flight: usize,
        /// Requests without a response (`acks=0` Produce) sent since the last response.
        unanswered_sends: usize,
    },
    /// A response frame's size prefix is negative or above
    /// [`ConnectionConfig::max_frame_size`](crate::ConnectionConfig::max_frame_size).
    FrameTooLarge {
        /// The size prefix as read.
        size: i64,
        /// The configured maximum.
        max: usize,
    },
    /// A response frame is too short to hold a correlation id.
    ShortFrame {
        /// The frame's size.
        size: usize,
    },
    /// A response carried a correlation id no request is waiting for: the stream is out of step.
    UnexpectedCorrelation {
        /// The oldest correlation id still waiting (a 0.8 broker answers in order), if any.
        expected: Option<i32>,
        /// The correlation id received.
        got: i32,
    },
    /// A request got no response in time.
    Timeout {
        /// The request's API.
        api: ApiKey,
        /// Its correlation id.
        correlation_id: i32,
        /// The timeout.
        after: Duration,
    },
    /// The client closed the connection.
    Closed,
}

impl PoisonReason {
    /// True when the broker closed the connection right after requests that it may have
    /// refused (so the hint [`BROKER_CLOSED_HINT`] applies).
    pub fn has_hint(&self) -> bool {
        matches!(self, PoisonReason::BrokerClosed { in_flight, unanswered_sends } if *in_flight + *unanswered_sends > 0)
    }

    /// The error a request gets on a connection poisoned for this reason.
    pub(crate) fn to_error(&self, addr: &str) -> Error {
        match self {
            PoisonReason::Closed => Error::Closed { addr: addr.to_owned() },
            reason => Error::Poisoned { addr: addr.to_owned(), reason: reason.clone() },
        }
    }
}

impl fmt::Display for PoisonReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PoisonReason::Io { during, error } => write!(f, "{during} failed: {error}"),
            PoisonReason::BrokerClosed { in_flight, unanswered_sends } => {
                if *in_flight + *unanswered_sends > 0 {
                    write!(
                        f,
                        "broker closed the connection with {in_flight} request(s) awaiting a response and \
                         {unanswered_sends} acks=0 request(s) sent: {BROKER_CLOSED_HINT}"
                    )
                } else {
                    write!(f, "broker closed the connection")
                }
            }
            PoisonReason::FrameTooLarge { size, max } => {
                write!(f, "response frame of {size} bytes exceeds max frame size {max}")
            }
            PoisonReason::ShortFrame { size } => {
                write!(f, "response frame of {size} bytes is too short for a correlation id")
            }
            PoisonReason::UnexpectedCorrelation { expected: Some(e), got } => {
                write!(f, "response with correlation id {got} matches no request (expected {e})")
            }
            PoisonReason::UnexpectedCorrelation { expected: None, got } => {
                write!(f, "response with correlation id {got} arrived while no request was waiting")
            }
            PoisonReason::Timeout { api, correlation_id, after } => {
                write!(f, "{api} request (correlation id {correlation_id}) got no response within {after:?}")
            }
            PoisonReason::Closed => write!(f, "closed by the client"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_carry_values_and_fixes() {
        let e = Error::Poisoned {
            addr: "b:9092".into(),
            reason: PoisonReason::BrokerClosed { in_flight: 1, unanswered_sends: 0 },
        };
        assert_eq!(
            e.to_string(),
            "connection to b:9092 is unusable: broker closed the connection with 1 request(s) awaiting a \
             response and 0 acks=0 request(s) sent: is the API version newer than the broker, or did an \
             acks=0 produce fail?"
        );
        assert!(e.is_retriable());
        let idle = PoisonReason::BrokerClosed { in_flight: 0, unanswered_sends: 0 };
        assert_eq!(idle.to_string(), "broker closed the connection");
        assert!(!idle.has_hint());
        let e = Error::broker(ErrorCode::NotLeaderForPartition, "t/0");
        assert!(e.is_retriable() && e.needs_metadata_refresh());
        assert_eq!(e.code(), Some(ErrorCode::NotLeaderForPartition));
        let e = Error::broker(ErrorCode::MessageSizeTooLarge, "t/0");
        assert!(!e.is_retriable());
        assert!(matches!(PoisonReason::Closed.to_error("a"), Error::Closed { .. }));
    }

    #[test]
    fn errors_are_send_and_sync() {
        fn assert<T: Send + Sync + 'static>() {}
        assert::<Error>();
    }
}

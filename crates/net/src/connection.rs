//! [`BrokerConnection`]: one TCP connection to one broker, with many requests in flight.
//!
//! ```text
//!  request()/send() ──► encode, take a slot (max_in_flight), assign the correlation id,
//!        │              register a waiter (id -> oneshot), queue the frame
//!        │                                  │
//!        │                        writer task ──► socket
//!        │                                              │
//!        └──◄── oneshot ◄── reader task ◄── next_frame ◄─┘   (match by correlation id;
//!                              │                              an unknown id poisons)
//!                              └── request deadlines: the oldest unanswered request past
//!                                  request_timeout poisons the connection
//! ```
//!
//! Any IO error, EOF, bad frame, unknown correlation id or timeout **poisons** the connection:
//! the tasks stop, the socket closes, every waiter fails at once with [`Error::Poisoned`] (the
//! timed-out request itself with [`Error::Timeout`]), and every later request fails the same
//! way without touching the socket. A [`crate::Pool`] replaces poisoned connections.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use gregor_protocol::frame::{decode_response, encode_request_frame, ApiKey, RequestFrame, RequestHeader};
use gregor_protocol::messages::ApiVersionsRequest;
use gregor_protocol::{ErrorCode, Request};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream, ToSocketAddrs};
use tokio::sync::{mpsc, oneshot, watch, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::Instrument;

use crate::config::ConnectionConfig;
use crate::error::{Error, PoisonReason, Result};
use crate::versions::BrokerVersions;
use crate::BrokerId;

/// Where the correlation id sits in an encoded request frame: after the 4-byte size, the
/// 2-byte api key and the 2-byte api version.
const CORRELATION_ID_AT: usize = 8;
/// Bytes the reader asks the socket for at least.
const READ_CHUNK: usize = 16 * 1024;
/// Frames the writer takes from its queue before flushing.
const WRITE_BATCH: usize = 64;

/// A connection to one broker: pipelined requests matched to responses by correlation id.
///
/// Cheap to clone (an `Arc`); every clone shares the same socket, and many requests may be in
/// flight at once from any of them (up to
/// [`ConnectionConfig::max_in_flight`](crate::ConnectionConfig::max_in_flight)). The socket is
/// closed by [`BrokerConnection::close`], when the connection is poisoned, or when the last
/// clone is dropped.
///
/// ```no_run
/// # async fn demo() -> Result<(), gregor_net::Error> {
/// use gregor_net::{BrokerConnection, ConnectionConfig};
/// use gregor_protocol::messages::MetadataRequest;
///
/// let conn = BrokerConnection::connect("127.0.0.1:9092", &ConnectionConfig::default()).await?;
/// let metadata = conn.request(0, &MetadataRequest::all_topics()).await?;
/// println!("{} brokers", metadata.brokers.len());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct BrokerConnection {
    handle: Arc<Handle>,
}

/// The user-facing side; when the last clone goes, the connection closes.
struct Handle {
    shared: Arc<Shared>,
    queue: mpsc::Sender<Outgoing>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shared.poison(PoisonReason::Closed, None);
    }
}

/// What the tasks and the handle share.
struct Shared {
    addr: String,
    /// Known when opened for a known broker, or learnt later by the pool.
    broker_id: OnceLock<BrokerId>,
    /// The versions the broker speaks, once asked (or its fallback release's).
    versions: OnceLock<BrokerVersions>,
    /// The `connection` span of the tasks (its `broker_id` is recorded once known).
    span: tracing::Span,
    config: ConnectionConfig,
    state: Mutex<State>,
    slots: Arc<Semaphore>,
    /// Wakes the reader when the first deadline appears.
    deadline_added: Notify,
    closed: watch::Sender<bool>,
}

#[derive(Default)]
struct State {
    next_correlation_id: i32,
    pending: HashMap<i32, Pending>,
    /// Correlation ids in the order they were registered, with their deadlines (which are
    /// therefore in order too). Entries already answered are skipped lazily.
    deadlines: VecDeque<(i32, Instant)>,
    /// Requests without a response sent since the last response (for the EOF hint).
    unanswered_sends: usize,
    poisoned: Option<PoisonReason>,
}

struct Pending {
    api: ApiKey,
    /// `None` when nobody waits (a [`BrokerConnection::send`] of a request that is answered):
    /// the response is read and dropped.
    waiter: Option<oneshot::Sender<Result<Bytes>>>,
    /// The in-flight slot, freed when the response arrives.
    _slot: OwnedSemaphorePermit,
}

/// What a queued request waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// A response, handed to the caller.
    Wait,
    /// A response nobody wants (a [`BrokerConnection::send`] of an answered request).
    Discard,
    /// Nothing: the broker does not answer (acks=0).
    NoResponse,
}

/// A request registered and queued.
struct Queued {
    correlation_id: i32,
    response: Option<oneshot::Receiver<Result<Bytes>>>,
    written: Option<oneshot::Receiver<()>>,
}

struct Outgoing {
    /// The frame, in parts: a Produce request's message sets are written from the request's
    /// own buffers (see [`write_batch`]).
    frame: RequestFrame,
    /// Told once the frame is written (for [`BrokerConnection::send`]).
    written: Option<oneshot::Sender<()>>,
    /// The slot of a request without a response, freed once written.
    _slot: Option<OwnedSemaphorePermit>,
}

impl fmt::Debug for BrokerConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BrokerConnection")
            .field("addr", &self.shared().addr)
            .field("broker_id", &self.broker_id())
            .field("in_flight", &self.in_flight())
            .field("poisoned", &self.is_poisoned())
            .finish()
    }
}

impl BrokerConnection {
    /// Opens a TCP connection to `addr` (`host:port`, or a `SocketAddr`), sets its socket
    /// options from `config` (`SO_SNDBUF`, `SO_RCVBUF`, `TCP_NODELAY`) and starts its reader
    /// and writer tasks.
    ///
    /// Cancel safety: dropping the future abandons the attempt; nothing is left behind.
    ///
    /// # Errors
    ///
    /// [`Error::Connect`] when the address does not resolve or no resolved address accepts,
    /// [`Error::ConnectTimeout`] after
    /// [`ConnectionConfig::connect_timeout`](crate::ConnectionConfig::connect_timeout),
    /// [`Error::Tls`] when the TLS handshake is refused, [`Error::Sasl`] when SASL
    /// authentication (with [`ConnectionConfig::sasl`](crate::ConnectionConfig::sasl) set) fails.
    pub async fn connect<A>(addr: A, config: &ConnectionConfig) -> Result<BrokerConnection>
    where
        A: ToSocketAddrs + fmt::Display,
    {
        let addr = addr.to_string();
        Self::connect_to(addr, None, config).await
    }

    /// [`BrokerConnection::connect`] for a broker whose id is known (it shows in traces).
    pub(crate) async fn connect_to(
        addr: String,
        broker_id: Option<BrokerId>,
        config: &ConnectionConfig,
    ) -> Result<BrokerConnection> {
        let timeout = config.connect_timeout();
        let stream = match tokio::time::timeout(timeout, open(&addr, config)).await {
            Ok(stream) => stream?,
            Err(_) => return Err(Error::ConnectTimeout { addr, after: timeout }),
        };
        if config.tcp_nodelay() {
            stream.set_nodelay(true).map_err(|source| Error::Io { addr: addr.clone(), source })?;
        }
        let conn = match config.tls() {
            None => {
                tracing::debug!(%addr, broker_id, "connected to broker");
                let (read, write) = stream.into_split();
                Self::spawn(read, write, addr.clone(), broker_id, config.clone())
            }
            Some(tls) => {
                let name =
                    crate::tls::server_name(&addr).map_err(|reason| Error::Tls { addr: addr.clone(), reason })?;
                let connector = tokio_rustls::TlsConnector::from(tls.rustls());
                let stream = match tokio::time::timeout(timeout, connector.connect(name, stream)).await {
                    Ok(Ok(stream)) => stream,
                    Ok(Err(e)) => return Err(tls_error(&addr, e)),
                    Err(_) => return Err(Error::ConnectTimeout { addr, after: timeout }),
                };
                tracing::debug!(%addr, broker_id, "connected to broker over TLS");
                let (read, write) = tokio::io::split(stream);
                Self::spawn(read, write, addr.clone(), broker_id, config.clone())
            }
        };
        if let Some(sasl) = config.sasl() {
            // SASL (Kafka 1.0+) needs the broker's versions first, whatever api.version.request
            // says; a broker that closes on ApiVersions cannot do SASL
            let sasl_failed = |reason: String| Error::Sasl { addr: addr.clone(), mechanism: sasl.mechanism, reason };
            match conn.negotiate().await {
                Ok(_) => {}
                Err(e) if e.is_broker_closed() => {
                    return Err(sasl_failed(
                        "the broker closed the connection on ApiVersions (Kafka before 0.10), so it cannot do SASL"
                            .into(),
                    ))
                }
                Err(e) => return Err(e),
            }
            conn.authenticate(sasl).await?;
            return Ok(conn);
        }
        let fallback = BrokerVersions::fallback(config.broker_version_fallback());
        if !config.api_version_request() {
            conn.set_versions(fallback);
            return Ok(conn);
        }
        match conn.negotiate().await {
            Ok(_) => Ok(conn),
            Err(e) if e.is_broker_closed() => {
                // a Kafka 0.8/0.9 broker closes the connection on ApiVersions: open a fresh one
                // and speak the fallback release's versions on it
                tracing::info!(
                    %addr,
                    fallback = %config.broker_version_fallback(),
                    "broker closed the connection on ApiVersions (Kafka before 0.10): using the fallback versions"
                );
                let retry = config.without_api_version_request();
                Box::pin(Self::connect_to(addr, broker_id, &retry)).await
            }
            Err(e) => Err(e),
        }
    }

    /// Asks the broker which versions of which APIs it speaks (ApiVersions, KIP-35) and keeps
    /// the answer for [`BrokerConnection::versions`]. A broker that does not know the version
    /// asked (v3) answers error 35 with the versions of ApiVersions it has; the request is then
    /// repeated in the highest of those.
    ///
    /// # Errors
    ///
    /// Any request error; a Kafka 0.8/0.9 broker closes the connection
    /// ([`Error::is_broker_closed`]), which [`BrokerConnection::connect`] turns into the
    /// fallback versions; [`Error::Broker`] for an error code in the answer.
    pub async fn negotiate(&self) -> Result<&BrokerVersions> {
        let software = ApiVersionsRequest {
            client_software_name: CLIENT_SOFTWARE_NAME.to_owned(),
            client_software_version: CLIENT_SOFTWARE_VERSION.to_owned(),
            ..Default::default()
        };
        let timeout = self.shared().config.api_version_request_timeout();
        let ask = |version: i16| {
            let request = if version >= 3 { software.clone() } else { ApiVersionsRequest::default() };
            async move {
                match tokio::time::timeout(timeout, self.request(version, &request)).await {
                    Ok(answer) => answer,
                    Err(_) => Err(Error::Timeout {
                        addr: self.addr().to_owned(),
                        api: ApiKey::ApiVersions,
                        correlation_id: -1,
                        after: timeout,
                    }),
                }
            }
        };
        // v3, as librdkafka asks: Kafka 3.x answers v4 with error 35 and would cost a second
        // round trip on every connection; v4 says nothing more
        let ours = ApiVersionsRequest::VERSIONS.max.min(3);
        let mut answer = ask(ours).await?;
        if answer.error_code == UNSUPPORTED_VERSION {
            let theirs = answer.versions_of(ApiKey::ApiVersions).map_or(0, |(_, max)| max);
            answer = ask(theirs.clamp(0, ours)).await?;
        }
        if answer.error_code != 0 {
            let code = ErrorCode::from_i16(answer.error_code).unwrap_or(ErrorCode::Unknown(answer.error_code));
            return Err(Error::broker(code, format!("ApiVersions from {}", self.addr())));
        }
        let versions = BrokerVersions::negotiated(&answer);
        tracing::debug!(addr = %self.addr(), apis = answer.api_keys.len(), "negotiated API versions");
        self.set_versions(versions);
        Ok(self.versions().unwrap_or_else(|| unreachable!("set above")))
    }

    /// Authenticates the connection with SASL (Kafka 1.0+: SaslHandshake v1 naming the
    /// mechanism, then SaslAuthenticate rounds until the mechanism is done). The versions must be
    /// known ([`BrokerConnection::negotiate`]): SASL brokers all answer ApiVersions.
    ///
    /// # Errors
    ///
    /// [`Error::Sasl`] (not retriable) when the broker does not offer the mechanism, refuses the
    /// credentials (error 58 with the broker's message), answers something the mechanism cannot
    /// use, or cannot prove it knows the password (SCRAM); request errors otherwise.
    pub async fn authenticate(&self, sasl: &crate::sasl::SaslConfig) -> Result<()> {
        use gregor_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
        let fail = |reason: String| Error::Sasl { addr: self.addr().to_owned(), mechanism: sasl.mechanism, reason };
        let versions = self.versions().ok_or_else(|| fail("the broker's API versions are not known".into()))?;
        let handshake = versions.pick_for::<SaslHandshakeRequest>().map_err(|e| fail(e.to_string()))?;
        if handshake < 1 {
            return Err(fail(
                "the broker speaks SaslHandshake v0 only (Kafka 0.10): gregor needs v1 and SaslAuthenticate (Kafka 1.0+)"
                    .into(),
            ));
        }
        let authenticate = versions.pick_for::<SaslAuthenticateRequest>().map_err(|e| fail(e.to_string()))?;
        let request = SaslHandshakeRequest { mechanism: sasl.mechanism.name().to_owned(), ..Default::default() };
        let answer = self.request(handshake, &request).await?;
        if answer.error_code != 0 {
            return Err(fail(format!(
                "the broker does not offer {} (error {}); it offers {}",
                sasl.mechanism,
                answer.error_code,
                if answer.mechanisms.is_empty() { "none".to_string() } else { answer.mechanisms.join(", ") }
            )));
        }
        let mut client = crate::sasl::SaslClient::new(sasl.clone());
        let mut token = client.first_message();
        loop {
            let request = SaslAuthenticateRequest { auth_bytes: token.into(), ..Default::default() };
            let answer = self.request(authenticate, &request).await?;
            if answer.error_code != 0 {
                let said = answer.error_message.unwrap_or_default();
                return Err(fail(format!("the broker refused the credentials (error {}): {said}", answer.error_code)));
            }
            match client.answer(&answer.auth_bytes) {
                Ok(Some(next)) => token = next,
                Ok(None) => break,
                Err(e) => return Err(fail(e.to_string())),
            }
        }
        tracing::debug!(addr = %self.addr(), mechanism = %sasl.mechanism, user = %sasl.username, "authenticated");
        Ok(())
    }

    /// The versions the broker speaks: its ApiVersions answer, or the fallback release's for a
    /// broker before Kafka 0.10 (or with `api.version.request` off). `None` for a connection made
    /// with [`BrokerConnection::from_io`] until [`BrokerConnection::negotiate`] ran.
    pub fn versions(&self) -> Option<&BrokerVersions> {
        self.shared().versions.get()
    }

    /// The version to send `R` in: the highest of `ours` (the versions the caller can fill and
    /// read, within what gregor-protocol implements) that the broker speaks. A connection
    /// that was never asked (made with [`BrokerConnection::from_io`]) speaks 0.8.2's.
    ///
    /// # Errors
    ///
    /// [`Error::NoCommonVersion`] when the ranges do not meet.
    pub fn version_for<R: Request>(&self, ours: std::ops::RangeInclusive<i16>) -> Result<i16> {
        let implemented = R::VERSIONS;
        let ours = gregor_protocol::frame::VersionRange {
            min: (*ours.start()).max(implemented.min),
            max: (*ours.end()).min(implemented.max),
        };
        let fallback;
        let versions = match self.versions() {
            Some(v) => v,
            None => {
                fallback = BrokerVersions::fallback(crate::versions::BrokerVersionFallback::DEFAULT);
                &fallback
            }
        };
        let ours = (ours.min <= ours.max).then_some(ours);
        versions.pick(R::KEY, ours).map_err(|source| Error::NoCommonVersion { addr: self.addr().to_owned(), source })
    }

    /// The version gregor's clients send `R` in with this broker: [`version_for`](Self::version_for)
    /// the [`client_versions`](crate::versions::client_versions) of `R`.
    ///
    /// # Errors
    ///
    /// [`Error::NoCommonVersion`] when the ranges do not meet.
    pub fn client_version<R: Request>(&self) -> Result<i16> {
        let range = crate::versions::client_versions(R::KEY).unwrap_or(R::VERSIONS);
        self.version_for::<R>(range.min..=range.max)
    }

    /// Sets the versions (first one wins).
    pub(crate) fn set_versions(&self, versions: BrokerVersions) {
        let _ = self.shared().versions.set(versions);
    }

    /// A connection over any byte stream (a test seam: drive it with [`tokio::io::duplex`]).
    /// Its address reads `"<io>"`.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (it spawns the reader and writer tasks).
    pub fn from_io<IO>(io: IO, config: &ConnectionConfig) -> BrokerConnection
    where
        IO: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (read, write) = tokio::io::split(io);
        Self::spawn(read, write, "<io>".to_owned(), None, config.clone())
    }

    fn spawn<R, W>(
        read: R,
        write: W,
        addr: String,
        broker_id: Option<BrokerId>,
        config: ConnectionConfig,
    ) -> BrokerConnection
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let max_in_flight = config.max_in_flight();
        let (queue, rx) = mpsc::channel(max_in_flight);
        let span = tracing::debug_span!("connection", broker_id = tracing::field::Empty, addr = %addr);
        let shared = Arc::new(Shared {
            addr,
            broker_id: OnceLock::new(),
            versions: OnceLock::new(),
            span: span.clone(),
            config,
            state: Mutex::new(State::default()),
            slots: Arc::new(Semaphore::new(max_in_flight)),
            deadline_added: Notify::new(),
            closed: watch::Sender::new(false),
        });
        if let Some(id) = broker_id {
            shared.set_broker_id(id);
        }
        let reader = tokio::spawn(read_loop(read, shared.clone()).instrument(span.clone()));
        let writer = tokio::spawn(write_loop(write, rx, shared.clone()).instrument(span));
        BrokerConnection { handle: Arc::new(Handle { shared, queue, tasks: Mutex::new(vec![reader, writer]) }) }
    }

    fn shared(&self) -> &Shared {
        &self.handle.shared
    }

    /// Sends `request` in `version` and waits for its response.
    ///
    /// Many requests may be in flight at once; each gets its own response, matched by
    /// correlation id. When [`max_in_flight`](crate::ConnectionConfig::max_in_flight) are
    /// already in flight, this waits for a slot. Version pinning is the caller's: a 0.8 broker
    /// closes the connection on a version it does not know.
    ///
    /// Cancel safety: dropping the future is harmless. Before the request is queued nothing
    /// happened; after, the request is still sent, its response is read and dropped, and the
    /// connection stays usable.
    ///
    /// # Errors
    ///
    /// * [`Error::NoResponseExpected`] for a request the broker does not answer (acks=0);
    /// * [`Error::Encode`] and [`Error::FrameTooLarge`] before anything is sent;
    /// * [`Error::Timeout`] when no response came within the request timeout (the connection
    ///   is then poisoned);
    /// * [`Error::Poisoned`] or [`Error::Closed`] when the connection failed or was closed
    ///   before or while the request was in flight;
    /// * [`Error::Decode`] when the response frame does not decode (the connection stays usable).
    pub async fn request<R: Request>(&self, version: i16, request: &R) -> Result<R::Response> {
        self.request_queued(version, request).await?.await
    }

    /// [`BrokerConnection::request`] in two steps: returns once the request is queued on the
    /// connection (requests queued one after the other reach the broker in that order, and a
    /// 0.8 broker answers in order), with a future of its response. For pipelining in a chosen
    /// order: queue the next request only after this returns.
    ///
    /// # Errors
    ///
    /// As [`BrokerConnection::request`]: this step's before anything is sent, the future's for
    /// the response.
    pub async fn request_queued<R: Request>(
        &self,
        version: i16,
        request: &R,
    ) -> Result<impl std::future::Future<Output = Result<R::Response>> + Send + 'static> {
        if !request.expects_response() {
            return Err(Error::NoResponseExpected { api: R::KEY });
        }
        let frame = self.encode(version, request)?;
        let span = request_span::<R>(version);
        let started = Instant::now();
        let queued = self.enqueue(frame, Mode::Wait).instrument(span.clone()).await?;
        Ok(self.response_of::<R>(version, queued, started, span))
    }

    /// [`BrokerConnection::request_queued`] without waiting: when a slot and a place in the
    /// connection's queue are free now, `request` is encoded and queued before this returns,
    /// and its response comes as the future returned; `Ok(None)` when either is taken (nothing
    /// was encoded or sent: queue it with `request_queued`). For a caller that wants its
    /// request on its way before it does anything else, with no task in between.
    ///
    /// # Errors
    ///
    /// As [`BrokerConnection::request_queued`].
    pub fn try_request_queued<R: Request>(
        &self,
        version: i16,
        request: &R,
    ) -> Result<Option<impl std::future::Future<Output = Result<R::Response>> + Send + 'static>> {
        if !request.expects_response() {
            return Err(Error::NoResponseExpected { api: R::KEY });
        }
        let shared = self.shared();
        let slot = match shared.slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(tokio::sync::TryAcquireError::NoPermits) => return Ok(None),
            Err(tokio::sync::TryAcquireError::Closed) => return Err(shared.current_error()),
        };
        let place = match self.handle.queue.try_reserve() {
            Ok(place) => place,
            Err(mpsc::error::TrySendError::Full(())) => return Ok(None),
            Err(mpsc::error::TrySendError::Closed(())) => return Err(shared.current_error()),
        };
        let frame = self.encode(version, request)?;
        let span = request_span::<R>(version);
        let started = Instant::now();
        let queued = span.in_scope(|| self.register(slot, place, frame, Mode::Wait))?;
        Ok(Some(self.response_of::<R>(version, queued, started, span)))
    }

    /// The response to a request `queued` at `started`, decoded in `version`.
    fn response_of<R: Request>(
        &self,
        version: i16,
        queued: Queued,
        started: Instant,
        span: tracing::Span,
    ) -> impl std::future::Future<Output = Result<R::Response>> + Send + 'static {
        let correlation_id = queued.correlation_id;
        span.record("correlation_id", correlation_id);
        let waiter = queued.response;
        let conn = self.clone();
        async move {
            let shared = conn.shared();
            let Some(response) = waiter else {
                return Err(shared.current_error());
            };
            let result = match response.await {
                Ok(result) => result,
                Err(_) => Err(shared.current_error()),
            };
            let frame = match result {
                Ok(frame) => frame,
                Err(e) => {
                    tracing::debug!(addr = %shared.addr, error = %e, "request failed");
                    return Err(e);
                }
            };
            let bytes = frame.len();
            let (_, body) = decode_response::<R>(version, frame).map_err(|source| Error::Decode {
                addr: shared.addr.clone(),
                api: R::KEY,
                version,
                correlation_id,
                source,
            })?;
            tracing::debug!(
                addr = %shared.addr,
                bytes,
                elapsed_us = started.elapsed().as_micros() as u64,
                "response"
            );
            Ok(body)
        }
        .instrument(span)
    }

    /// Sends `request` in `version` without waiting for a response: for requests the broker
    /// does not answer (Produce with `acks=0`). Returns once the frame is written to the socket.
    ///
    /// No waiter is registered for a request without a response. A request that *is* answered
    /// gets a silent waiter that reads and drops its response, so the stream stays in step.
    /// A 0.8 broker answers in order, so later responses still match.
    ///
    /// **Warning:** a broker that rejects an acks=0 Produce closes the connection without a
    /// word: the next request fails with [`Error::Poisoned`] whose reason carries that hint.
    ///
    /// Cancel safety: dropping the future after the request was queued does not unqueue it; the
    /// frame is still written.
    ///
    /// # Errors
    ///
    /// [`Error::Encode`] and [`Error::FrameTooLarge`] before anything is sent;
    /// [`Error::Poisoned`] or [`Error::Closed`] when the connection failed before the frame was
    /// written.
    pub async fn send<R: Request>(&self, version: i16, request: &R) -> Result<()> {
        let frame = self.encode(version, request)?;
        let span = request_span::<R>(version);
        async move {
            let mode = if request.expects_response() { Mode::Discard } else { Mode::NoResponse };
            let queued = self.enqueue(frame, mode).await?;
            tracing::Span::current().record("correlation_id", queued.correlation_id);
            let Some(written) = queued.written else {
                return Err(self.shared().current_error());
            };
            match written.await {
                Ok(()) => {
                    tracing::debug!(addr = %self.shared().addr, "sent without waiting for a response");
                    Ok(())
                }
                Err(_) => Err(self.shared().current_error()),
            }
        }
        .instrument(span)
        .await
    }

    fn encode<R: Request>(&self, version: i16, request: &R) -> Result<RequestFrame> {
        let client_id = self.shared().config.client_id();
        let header = RequestHeader {
            api_key: R::KEY,
            api_version: version,
            correlation_id: 0,
            client_id: Some(client_id.to_owned()),
            unknown_tagged_fields: Default::default(),
        };
        // a Produce request's message sets are not copied: the frame shares them
        let frame = encode_request_frame(&header, request, client_id.len()).map_err(|source| Error::Encode {
            api: R::KEY,
            version,
            source,
        })?;
        let size = frame.len() - 4;
        let max = self.shared().config.max_frame_size();
        if size > max {
            return Err(Error::FrameTooLarge { addr: self.shared().addr.clone(), api: R::KEY, size, max });
        }
        Ok(frame)
    }

    /// Takes a slot and a queue place, then registers and queues the frame atomically, so that
    /// correlation ids reach the socket in order. Returns the correlation id, the response
    /// waiter ([`Mode::Wait`]) and the written signal ([`Mode::Discard`], [`Mode::NoResponse`]).
    async fn enqueue(&self, frame: RequestFrame, mode: Mode) -> Result<Queued> {
        let shared = self.shared();
        // both awaits are cancel safe: nothing is registered until `register`
        let slot = shared.slots.clone().acquire_owned().await.map_err(|_| shared.current_error())?;
        let place = self.handle.queue.reserve().await.map_err(|_| shared.current_error())?;
        self.register(slot, place, frame, mode)
    }

    /// With a slot and a queue place taken: registers and queues the frame under the state's
    /// lock (see [`BrokerConnection::enqueue`]).
    fn register(
        &self,
        slot: OwnedSemaphorePermit,
        place: mpsc::Permit<'_, Outgoing>,
        frame: RequestFrame,
        mode: Mode,
    ) -> Result<Queued> {
        let shared = self.shared();
        let api = ApiKey::from_i16(i16::from_be_bytes([frame.head[4], frame.head[5]]));
        let mut st = shared.lock();
        if let Some(reason) = &st.poisoned {
            return Err(reason.to_error(&shared.addr));
        }
        let correlation_id = st.allocate_correlation_id();
        let frame = with_correlation_id(frame, correlation_id);
        let mut queued = Queued { correlation_id, response: None, written: None };
        let mut written_tx = None;
        if mode != Mode::Wait {
            let (tx, rx) = oneshot::channel();
            written_tx = Some(tx);
            queued.written = Some(rx);
        }
        if mode == Mode::NoResponse {
            st.unanswered_sends += 1;
            place.send(Outgoing { frame, written: written_tx, _slot: Some(slot) });
            return Ok(queued);
        }
        let waiter = if mode == Mode::Wait {
            let (tx, rx) = oneshot::channel();
            queued.response = Some(rx);
            Some(tx)
        } else {
            None
        };
        st.prune_deadlines();
        let first = st.deadlines.is_empty();
        let deadline = Instant::now() + shared.config.request_timeout();
        st.pending.insert(correlation_id, Pending { api, waiter, _slot: slot });
        st.deadlines.push_back((correlation_id, deadline));
        place.send(Outgoing { frame, written: written_tx, _slot: None });
        drop(st);
        if first {
            shared.deadline_added.notify_one();
        }
        Ok(queued)
    }

    /// True once the connection failed or was closed: every request on it fails. A
    /// [`crate::Pool`] replaces it on the next `get`.
    pub fn is_poisoned(&self) -> bool {
        self.shared().lock().poisoned.is_some()
    }

    /// Why the connection is unusable, if it is.
    pub fn poison_reason(&self) -> Option<PoisonReason> {
        self.shared().lock().poisoned.clone()
    }

    /// The broker's address as given to [`BrokerConnection::connect`] (`"<io>"` for
    /// [`BrokerConnection::from_io`]).
    pub fn addr(&self) -> &str {
        &self.shared().addr
    }

    /// The broker's id, when the connection was opened for a known broker (by a
    /// [`crate::Pool`]).
    pub fn broker_id(&self) -> Option<BrokerId> {
        self.shared().broker_id.get().copied()
    }

    /// Records the broker id of a connection opened by address (first id wins).
    pub(crate) fn set_broker_id(&self, id: BrokerId) {
        self.shared().set_broker_id(id);
    }

    /// The requests waiting for a response right now (requests sent with
    /// [`BrokerConnection::send`] that get none are not counted).
    pub fn in_flight(&self) -> usize {
        self.shared().lock().pending.len()
    }

    /// True when both values are clones of the same connection.
    pub fn same_connection(&self, other: &BrokerConnection) -> bool {
        Arc::ptr_eq(&self.handle, &other.handle)
    }

    /// Closes the connection: requests in flight fail with [`Error::Closed`] and so does every
    /// later one; returns once the reader and writer tasks have stopped and the socket is
    /// closed. Closing twice is harmless.
    ///
    /// Cancel safety: the connection is closed at the first poll; dropping the future only
    /// skips waiting for the tasks.
    pub async fn close(&self) {
        self.shared().poison(PoisonReason::Closed, None);
        let tasks = std::mem::take(&mut *self.handle.tasks.lock().unwrap_or_else(|p| p.into_inner()));
        for task in tasks {
            let _ = task.await;
        }
    }
}

/// The `ClientSoftwareName` gregor sends in ApiVersions v3+ (brokers show it in their metrics).
pub const CLIENT_SOFTWARE_NAME: &str = "gregor";
/// The `ClientSoftwareVersion` gregor sends: this crate's version.
pub const CLIENT_SOFTWARE_VERSION: &str = env!("CARGO_PKG_VERSION");
/// Error 35, UNSUPPORTED_VERSION.
const UNSUPPORTED_VERSION: i16 = 35;

/// A failed TLS handshake: [`Error::Tls`] when rustls refused (a certificate, the protocol),
/// [`Error::Io`] when the network failed under it (retriable).
fn tls_error(addr: &str, e: io::Error) -> Error {
    match e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
        Some(refused) => Error::Tls { addr: addr.to_owned(), reason: refused.to_string() },
        None => Error::Io { addr: addr.to_owned(), source: e },
    }
}

/// Writes the correlation id into an encoded request frame.
fn with_correlation_id(mut frame: RequestFrame, correlation_id: i32) -> RequestFrame {
    frame.head[CORRELATION_ID_AT..CORRELATION_ID_AT + 4].copy_from_slice(&correlation_id.to_be_bytes());
    frame
}

impl State {
    fn allocate_correlation_id(&mut self) -> i32 {
        // wrap to 0 (never negative); skip an id still waiting (only after 2^31 requests)
        loop {
            let id = self.next_correlation_id;
            self.next_correlation_id = id.checked_add(1).unwrap_or(0);
            if !self.pending.contains_key(&id) {
                return id;
            }
        }
    }

    /// Drops answered entries from the front of the deadline queue.
    fn prune_deadlines(&mut self) {
        while let Some((id, _)) = self.deadlines.front() {
            if self.pending.contains_key(id) {
                break;
            }
            self.deadlines.pop_front();
        }
    }
}

impl Shared {
    fn set_broker_id(&self, id: BrokerId) {
        if self.broker_id.set(id).is_ok() {
            self.span.record("broker_id", id);
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The error a request gets once the connection is unusable.
    fn current_error(&self) -> Error {
        match &self.lock().poisoned {
            Some(reason) => reason.to_error(&self.addr),
            None => Error::Closed { addr: self.addr.clone() },
        }
    }

    /// Marks the connection unusable (the first reason wins), fails every waiter, and stops the
    /// tasks. `culprit` is the request that timed out, which gets [`Error::Timeout`].
    fn poison(&self, reason: PoisonReason, culprit: Option<i32>) {
        let pending = {
            let mut st = self.lock();
            if st.poisoned.is_some() {
                return;
            }
            st.poisoned = Some(reason.clone());
            st.deadlines.clear();
            std::mem::take(&mut st.pending)
        };
        self.slots.close();
        self.closed.send_replace(true);
        match reason {
            PoisonReason::Closed => {
                tracing::debug!(addr = %self.addr, in_flight = pending.len(), "connection closed")
            }
            // before the versions are known the only request out is ApiVersions: a Kafka 0.8/0.9
            // broker closes the connection on it, which connect() expects (and says so itself)
            ref reason @ (PoisonReason::BrokerClosed { .. } | PoisonReason::Io { .. })
                if self.versions.get().is_none() =>
            {
                tracing::debug!(addr = %self.addr, %reason, "connection closed while asking for the broker's versions")
            }
            ref reason => tracing::warn!(
                addr = %self.addr,
                broker_id = self.broker_id.get().copied(),
                in_flight = pending.len(),
                %reason,
                "connection poisoned"
            ),
        }
        for (correlation_id, p) in pending {
            let Some(waiter) = p.waiter else { continue };
            let error = if culprit == Some(correlation_id) {
                Error::Timeout {
                    addr: self.addr.clone(),
                    api: p.api,
                    correlation_id,
                    after: self.config.request_timeout(),
                }
            } else {
                reason.to_error(&self.addr)
            };
            let _ = waiter.send(Err(error));
        }
    }

    /// Hands a response frame to its waiter. False when the connection got poisoned.
    fn dispatch(&self, frame: Bytes) -> bool {
        if frame.len() < 4 {
            self.poison(PoisonReason::ShortFrame { size: frame.len() }, None);
            return false;
        }
        let correlation_id = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
        let mut st = self.lock();
        match st.pending.remove(&correlation_id) {
            Some(p) => {
                st.unanswered_sends = 0;
                st.prune_deadlines();
                drop(st);
                tracing::trace!(correlation_id, bytes = frame.len(), "response frame");
                if let Some(waiter) = p.waiter {
                    // the receiver is gone when the request future was dropped: discard
                    let _ = waiter.send(Ok(frame));
                }
                true
            }
            None => {
                st.prune_deadlines();
                let expected = st.deadlines.front().map(|(id, _)| *id);
                drop(st);
                self.poison(PoisonReason::UnexpectedCorrelation { expected, got: correlation_id }, None);
                false
            }
        }
    }

    /// The deadline of the oldest unanswered request.
    fn next_deadline(&self) -> Option<Instant> {
        let mut st = self.lock();
        st.prune_deadlines();
        st.deadlines.front().map(|(_, d)| *d)
    }

    /// Poisons the connection when the oldest unanswered request is past its deadline.
    fn expire(&self, now: Instant) {
        let expired = {
            let mut st = self.lock();
            st.prune_deadlines();
            match st.deadlines.front() {
                Some((id, deadline)) if *deadline <= now => st.pending.get(id).map(|p| (*id, p.api)),
                _ => None,
            }
        };
        if let Some((correlation_id, api)) = expired {
            let after = self.config.request_timeout();
            self.poison(PoisonReason::Timeout { api, correlation_id, after }, Some(correlation_id));
        }
    }

    fn eof(&self) {
        let reason = {
            let st = self.lock();
            PoisonReason::BrokerClosed { in_flight: st.pending.len(), unanswered_sends: st.unanswered_sends }
        };
        self.poison(reason, None);
    }
}

/// Resolves `addr` and connects to the first address that accepts, with the socket options.
async fn open(addr: &str, config: &ConnectionConfig) -> Result<TcpStream> {
    let connect_error = |source: io::Error| Error::Connect { addr: addr.to_owned(), source };
    let resolved = tokio::net::lookup_host(addr).await.map_err(connect_error)?;
    let mut last = None;
    for target in resolved {
        let socket = if target.is_ipv4() { TcpSocket::new_v4() } else { TcpSocket::new_v6() }.map_err(connect_error)?;
        if let Some(bytes) = config.send_buffer_bytes() {
            socket.set_send_buffer_size(u32::try_from(bytes).unwrap_or(u32::MAX)).map_err(connect_error)?;
        }
        if let Some(bytes) = config.receive_buffer_bytes() {
            socket.set_recv_buffer_size(u32::try_from(bytes).unwrap_or(u32::MAX)).map_err(connect_error)?;
        }
        match socket.connect(target).await {
            Ok(stream) => return Ok(stream),
            Err(e) => {
                tracing::debug!(%addr, %target, error = %e, "connect failed");
                last = Some(e);
            }
        }
    }
    Err(connect_error(
        last.unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the name resolved to no address")),
    ))
}

/// Resolves once the connection is closed or poisoned.
async fn wait_closed(closed: &mut watch::Receiver<bool>) {
    loop {
        if *closed.borrow_and_update() {
            return;
        }
        if closed.changed().await.is_err() {
            return;
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

async fn read_loop<R: AsyncRead + Unpin>(mut read: R, shared: Arc<Shared>) {
    let mut closed = shared.closed.subscribe();
    let max = shared.config.max_frame_size();
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    loop {
        let missing = loop {
            match next_frame(&mut buf, max) {
                Framing::Frame(frame) => {
                    if !shared.dispatch(frame) {
                        return;
                    }
                }
                Framing::Missing(n) => break n,
                Framing::TooLarge(size) => {
                    shared.poison(PoisonReason::FrameTooLarge { size, max }, None);
                    return;
                }
            }
        };
        if buf.capacity() - buf.len() < READ_CHUNK / 2 {
            // room for the rest of the frame, but never more than has arrived so far: memory
            // follows the bytes received (at most doubling), not a size prefix a broker sent
            buf.reserve(missing.clamp(READ_CHUNK, buf.len().max(READ_CHUNK)));
        }
        let deadline = shared.next_deadline();
        tokio::select! {
            biased;
            () = wait_closed(&mut closed) => return,
            read = read.read_buf(&mut buf) => match read {
                Ok(0) => {
                    shared.eof();
                    return;
                }
                Ok(n) => tracing::trace!(bytes = n, "read"),
                Err(error) => {
                    shared.poison(PoisonReason::Io { during: "read", error: Arc::new(error) }, None);
                    return;
                }
            },
            () = sleep_until(deadline) => shared.expire(Instant::now()),
            () = shared.deadline_added.notified() => {}
        }
    }
}

/// What the front of the reader's buffer holds.
#[derive(Debug, PartialEq, Eq)]
enum Framing {
    /// A whole frame (without its size prefix), taken off the buffer.
    Frame(Bytes),
    /// An incomplete frame (or size prefix): this many more bytes are needed.
    Missing(usize),
    /// A size prefix that is negative or above the max frame size.
    TooLarge(i64),
}

/// Takes the frame at the front of `buf` when it is whole. Unlike
/// [`gregor_protocol::frame::split_frame`], never reserves room for a frame that has not
/// arrived: a size prefix alone must not make the client allocate what it announces.
fn next_frame(buf: &mut BytesMut, max: usize) -> Framing {
    if buf.len() < 4 {
        return Framing::Missing(4 - buf.len());
    }
    let size = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    let Some(size) = usize::try_from(size).ok().filter(|s| *s <= max) else {
        return Framing::TooLarge(i64::from(size));
    };
    if buf.len() < 4 + size {
        return Framing::Missing(4 + size - buf.len());
    }
    buf.advance(4);
    Framing::Frame(buf.split_to(size).freeze())
}

/// The span of one request: its API, version and (once queued) correlation id.
fn request_span<R: Request>(version: i16) -> tracing::Span {
    tracing::debug_span!("request", api_key = %R::KEY, version, correlation_id = tracing::field::Empty)
}

async fn write_loop<W: AsyncWrite + Unpin>(mut write: W, mut queue: mpsc::Receiver<Outgoing>, shared: Arc<Shared>) {
    let mut closed = shared.closed.subscribe();
    let mut batch = Vec::with_capacity(WRITE_BATCH);
    loop {
        let first = tokio::select! {
            biased;
            () = wait_closed(&mut closed) => break,
            next = queue.recv() => match next {
                Some(outgoing) => outgoing,
                None => break,
            },
        };
        batch.push(first);
        while batch.len() < WRITE_BATCH {
            match queue.try_recv() {
                Ok(outgoing) => batch.push(outgoing),
                Err(_) => break,
            }
        }
        let written = tokio::select! {
            biased;
            () = wait_closed(&mut closed) => break,
            written = write_batch(&mut write, &batch) => written,
        };
        if let Err(error) = written {
            shared.poison(PoisonReason::Io { during: "write", error: Arc::new(error) }, None);
            break;
        }
        for outgoing in batch.drain(..) {
            if let Some(written) = outgoing.written {
                let _ = written.send(());
            }
        }
    }
    // whatever is still queued fails: its senders see their `written` channel dropped
    drop(batch);
    queue.close();
    let _ = tokio::time::timeout(Duration::from_millis(100), write.shutdown()).await;
}

/// Writes the frames' parts with vectored writes (one `writev` for a batch of frames when the
/// socket takes it all), so that the message sets a Produce request shares go from their own
/// buffers to the socket without being copied into a frame first.
async fn write_batch<W: AsyncWrite + Unpin>(write: &mut W, batch: &[Outgoing]) -> io::Result<()> {
    let mut slices = Vec::with_capacity(batch.iter().map(|o| 1 + o.frame.tail.len()).sum());
    for outgoing in batch {
        tracing::trace!(bytes = outgoing.frame.len(), "write");
        slices.push(io::IoSlice::new(&outgoing.frame.head));
        slices.extend(outgoing.frame.tail.iter().filter(|p| !p.is_empty()).map(|p| io::IoSlice::new(p)));
    }
    let mut left = &mut slices[..];
    while !left.is_empty() {
        let n = write.write_vectored(left).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        io::IoSlice::advance_slices(&mut left, n);
    }
    write.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use gregor_protocol::frame::{encode_response, split_frame};
    use gregor_protocol::messages::{
        MetadataRequest, MetadataResponse, ProducePartition, ProduceRequest, ProduceTopic, TopicMetadata,
    };
    use gregor_protocol::{Compression, Decode, Message, MessageSet};
    use tokio::io::DuplexStream;

    /// The broker's side of a duplex: reads request frames, writes what it is told to.
    struct Peer {
        io: DuplexStream,
        buf: BytesMut,
    }

    impl Peer {
        /// The next request's header and body, or `None` at EOF.
        async fn recv(&mut self) -> Option<(RequestHeader, Bytes)> {
            loop {
                if let Some(mut frame) = split_frame(&mut self.buf, 1 << 24).unwrap() {
                    let header = RequestHeader::decode(&mut frame).unwrap();
                    return Some((header, frame));
                }
                if self.io.read_buf(&mut self.buf).await.unwrap() == 0 {
                    return None;
                }
            }
        }

        /// The next request, which must be Metadata: its correlation id and topics.
        async fn recv_metadata(&mut self) -> (i32, Vec<String>) {
            let (header, mut body) = self.recv().await.expect("a request");
            assert_eq!(header.api_key, ApiKey::Metadata);
            assert_eq!(header.client_id.as_deref(), Some("unit"));
            let request = MetadataRequest::decode(0, &mut body).unwrap();
            (header.correlation_id, request.topic_names().map(str::to_owned).collect())
        }

        async fn reply_metadata(&mut self, correlation_id: i32, topics: &[String]) {
            self.io.write_all(&metadata_frame(correlation_id, topics)).await.unwrap();
        }
    }

    fn metadata_frame(correlation_id: i32, topics: &[String]) -> BytesMut {
        let body = MetadataResponse {
            brokers: vec![],
            topics: topics.iter().map(|t| TopicMetadata::new(t.clone(), 0, vec![])).collect(),
            ..Default::default()
        };
        let mut out = BytesMut::new();
        encode_response(correlation_id, 0, &body, &mut out).unwrap();
        out
    }

    fn md(topic: &str) -> MetadataRequest {
        MetadataRequest::for_topics(vec![topic.to_owned()])
    }

    fn topics_of(r: &MetadataResponse) -> Vec<String> {
        r.topics.iter().map(|t| t.name().to_owned()).collect()
    }

    fn connect_with(config: ConnectionConfigBuilderExt) -> (BrokerConnection, Peer) {
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let config = config(ConnectionConfig::builder().client_id("unit")).build().unwrap();
        (BrokerConnection::from_io(ours, &config), Peer { io: theirs, buf: BytesMut::new() })
    }

    type ConnectionConfigBuilderExt = fn(crate::ConnectionConfigBuilder) -> crate::ConnectionConfigBuilder;

    #[tokio::test]
    async fn produce_frames_written_in_parts_arrive_whole_through_partial_writes() {
        // a 64-byte pipe: every write is partial, and cuts the frames' parts anywhere
        let (ours, theirs) = tokio::io::duplex(64);
        let config = ConnectionConfig::builder().client_id("unit").build().unwrap();
        let conn = BrokerConnection::from_io(ours, &config);
        let mut peer = Peer { io: theirs, buf: BytesMut::new() };
        let set = |fill: u8, n: usize| {
            let messages = (0..n).map(|i| Message::new(None, Some(Bytes::from(vec![fill.wrapping_add(i as u8); 300]))));
            MessageSet::from_messages(messages, Compression::None).unwrap()
        };
        // two sets large enough to be shared, a small one copied between them
        let request = ProduceRequest {
            required_acks: 0,
            timeout: 1000,
            topics: vec![ProduceTopic::new(
                "t",
                vec![
                    ProducePartition { partition: 0, message_set: set(b'a', 20), ..Default::default() },
                    ProducePartition { partition: 1, message_set: set(b'k', 1), ..Default::default() },
                    ProducePartition { partition: 2, message_set: set(b'q', 9), ..Default::default() },
                ],
            )],
            ..Default::default()
        };
        // queued at once, so that frames are written together
        let senders: Vec<_> = (0..3)
            .map(|_| {
                let (c, r) = (conn.clone(), request.clone());
                tokio::spawn(async move { c.send(0, &r).await })
            })
            .collect();
        for _ in 0..3 {
            let (header, mut body) = peer.recv().await.expect("a request");
            assert_eq!((header.api_key, header.client_id.as_deref()), (ApiKey::Produce, Some("unit")));
            assert_eq!(ProduceRequest::decode(0, &mut body).unwrap(), request);
            assert!(body.is_empty());
        }
        for s in senders {
            s.await.unwrap().unwrap();
        }
    }

    fn connect() -> (BrokerConnection, Peer) {
        connect_with(|b| b)
    }

    fn produce(acks: i16) -> ProduceRequest {
        let set = MessageSet::from_messages([Message::new(None, Some(Bytes::from_static(b"v")))], Compression::None);
        ProduceRequest {
            required_acks: acks,
            timeout: 1000,
            topics: vec![ProduceTopic::new("t", vec![ProducePartition::new(0, set.unwrap())])],
            ..Default::default()
        }
    }

    fn poison_of(e: &Error) -> &PoisonReason {
        e.poison_reason().unwrap_or_else(|| panic!("not poisoned: {e:?}"))
    }

    #[tokio::test]
    async fn pipelined_requests_answered_in_reverse_order_each_get_their_own() {
        let (conn, mut peer) = connect();
        let tasks: Vec<_> = ["a", "b", "c"]
            .into_iter()
            .map(|t| {
                let conn = conn.clone();
                tokio::spawn(async move { (t, conn.request(0, &md(t)).await) })
            })
            .collect();
        let mut seen = Vec::new();
        for _ in 0..3 {
            seen.push(peer.recv_metadata().await);
        }
        assert_eq!(conn.in_flight(), 3, "three requests in flight on one connection");
        let mut ids: Vec<i32> = seen.iter().map(|s| s.0).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 3, "distinct correlation ids");
        for (id, topics) in seen.iter().rev() {
            peer.reply_metadata(*id, topics).await;
        }
        for task in tasks {
            let (topic, response) = task.await.unwrap();
            assert_eq!(topics_of(&response.unwrap()), [topic]);
        }
        assert_eq!(conn.in_flight(), 0);
        assert!(!conn.is_poisoned());
    }

    #[tokio::test]
    async fn correlation_ids_follow_the_wire_order() {
        let (conn, mut peer) = connect();
        let c = conn.clone();
        let task = tokio::spawn(async move {
            let (ra, rb) = (md("a"), md("b"));
            tokio::join!(c.request(0, &ra), c.request(0, &rb))
        });
        let (first, t1) = peer.recv_metadata().await;
        let (second, t2) = peer.recv_metadata().await;
        assert_eq!(second, first + 1);
        peer.reply_metadata(first, &t1).await;
        peer.reply_metadata(second, &t2).await;
        let (a, b) = task.await.unwrap();
        assert_eq!(topics_of(&a.unwrap()), ["a"]);
        assert_eq!(topics_of(&b.unwrap()), ["b"]);
    }

    #[tokio::test]
    async fn an_unknown_correlation_id_poisons() {
        let (conn, mut peer) = connect();
        let c = conn.clone();
        let task = tokio::spawn(async move { c.request(0, &md("a")).await });
        let (id, topics) = peer.recv_metadata().await;
        peer.reply_metadata(id + 100, &topics).await;
        let err = task.await.unwrap().unwrap_err();
        match poison_of(&err) {
            PoisonReason::UnexpectedCorrelation { expected, got } => {
                assert_eq!((*expected, *got), (Some(id), id + 100))
            }
            other => panic!("{other:?}"),
        }
        assert!(err.is_retriable());
        assert!(conn.is_poisoned());
        let later = conn.request(0, &md("b")).await.unwrap_err();
        assert!(matches!(poison_of(&later), PoisonReason::UnexpectedCorrelation { .. }), "{later}");
        assert!(peer.recv().await.is_none(), "the socket is closed, nothing more was sent");
    }

    #[tokio::test]
    async fn eof_poisons_every_waiter_with_the_hint() {
        let (conn, mut peer) = connect();
        let tasks: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|t| {
                let conn = conn.clone();
                tokio::spawn(async move { conn.request(0, &md(t)).await })
            })
            .collect();
        peer.recv_metadata().await;
        peer.recv_metadata().await;
        drop(peer);
        for task in tasks {
            let err = task.await.unwrap().unwrap_err();
            assert!(matches!(poison_of(&err), PoisonReason::BrokerClosed { in_flight: 2, unanswered_sends: 0 }));
            assert!(poison_of(&err).has_hint());
            assert!(err.to_string().contains(crate::BROKER_CLOSED_HINT), "{err}");
        }
        assert!(conn.is_poisoned());
    }

    #[tokio::test]
    async fn responses_fed_one_byte_at_a_time() {
        let (conn, mut peer) = connect();
        let c = conn.clone();
        let task = tokio::spawn(async move {
            let (ra, rb) = (md("a"), md("bb"));
            tokio::join!(c.request(0, &ra), c.request(0, &rb))
        });
        let (id1, t1) = peer.recv_metadata().await;
        let (id2, t2) = peer.recv_metadata().await;
        let mut bytes = metadata_frame(id2, &t2);
        bytes.extend_from_slice(&metadata_frame(id1, &t1));
        for byte in bytes.iter() {
            peer.io.write_all(&[*byte]).await.unwrap();
            peer.io.flush().await.unwrap();
            tokio::task::yield_now().await;
        }
        let (a, b) = task.await.unwrap();
        assert_eq!(topics_of(&a.unwrap()), ["a"]);
        assert_eq!(topics_of(&b.unwrap()), ["bb"]);
        assert!(!conn.is_poisoned());
    }

    #[tokio::test]
    async fn an_oversized_response_frame_poisons_with_the_sizes() {
        let (conn, mut peer) = connect_with(|b| b.max_frame_size(1024));
        let c = conn.clone();
        let task = tokio::spawn(async move { c.request(0, &md("a")).await });
        peer.recv_metadata().await;
        peer.io.write_all(&1_000_000i32.to_be_bytes()).await.unwrap();
        let err = task.await.unwrap().unwrap_err();
        assert!(matches!(poison_of(&err), PoisonReason::FrameTooLarge { size: 1_000_000, max: 1024 }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "connection to <io> is unusable: response frame of 1000000 bytes exceeds max frame size 1024"
        );
        assert!(conn.is_poisoned());
    }

    #[tokio::test]
    async fn an_oversized_request_fails_before_it_is_sent() {
        let (conn, mut peer) = connect_with(|b| b.max_frame_size(64));
        let big = MetadataRequest::for_topics(vec!["x".repeat(100)]);
        let err = conn.request(0, &big).await.unwrap_err();
        assert!(matches!(err, Error::FrameTooLarge { api: ApiKey::Metadata, max: 64, .. }), "{err:?}");
        assert!(!conn.is_poisoned());
        let c = conn.clone();
        let task = tokio::spawn(async move { c.request(0, &md("a")).await });
        let (id, topics) = peer.recv_metadata().await;
        peer.reply_metadata(id, &topics).await;
        task.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_short_response_frame_poisons() {
        let (conn, mut peer) = connect();
        let c = conn.clone();
        let task = tokio::spawn(async move { c.request(0, &md("a")).await });
        peer.recv_metadata().await;
        peer.io.write_all(&[0, 0, 0, 2, 0, 0]).await.unwrap();
        let err = task.await.unwrap().unwrap_err();
        assert!(matches!(poison_of(&err), PoisonReason::ShortFrame { size: 2 }), "{err:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_timeout_poisons_the_connection() {
        let (conn, mut peer) = connect_with(|b| b.request_timeout(Duration::from_secs(5)));
        let c = conn.clone();
        let started = Instant::now();
        let first = tokio::spawn(async move { c.request(0, &md("a")).await });
        let (id, _) = peer.recv_metadata().await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let c = conn.clone();
        let second = tokio::spawn(async move { c.request(0, &md("b")).await });
        peer.recv_metadata().await;
        let err = first.await.unwrap().unwrap_err();
        match &err {
            Error::Timeout { api, correlation_id, after, .. } => {
                assert_eq!((*api, *correlation_id, *after), (ApiKey::Metadata, id, Duration::from_secs(5)))
            }
            other => panic!("{other:?}"),
        }
        assert!(err.is_retriable());
        let waited = started.elapsed();
        assert!(waited >= Duration::from_secs(5) && waited < Duration::from_secs(6), "{waited:?}");
        let err = second.await.unwrap().unwrap_err();
        assert!(matches!(poison_of(&err), PoisonReason::Timeout { correlation_id, .. } if *correlation_id == id));
        assert!(conn.is_poisoned());
        // a late answer reaches nobody; the socket is closed
        assert!(peer.recv().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_future_still_times_out_an_unanswered_request() {
        let (conn, mut peer) = connect_with(|b| b.request_timeout(Duration::from_secs(5)));
        let req = md("a");
        let fut = conn.request(0, &req);
        tokio::select! {
            _ = fut => panic!("answered"),
            _ = peer.recv_metadata() => {}
        }
        tokio::time::sleep(Duration::from_secs(6)).await;
        assert!(matches!(conn.poison_reason(), Some(PoisonReason::Timeout { .. })));
    }

    #[tokio::test]
    async fn a_dropped_request_future_is_harmless() {
        let (conn, mut peer) = connect();
        // dropped after it was written: its late response is read and discarded
        let req = md("dropped");
        let fut = conn.request(0, &req);
        let (id, topics) = tokio::select! {
            _ = fut => panic!("answered before it was sent"),
            got = peer.recv_metadata() => got,
        };
        assert_eq!(conn.in_flight(), 1);
        peer.reply_metadata(id, &topics).await;
        let c = conn.clone();
        let task = tokio::spawn(async move { c.request(0, &md("next")).await });
        let (id2, topics2) = peer.recv_metadata().await;
        assert_eq!(id2, id + 1);
        peer.reply_metadata(id2, &topics2).await;
        assert_eq!(topics_of(&task.await.unwrap().unwrap()), ["next"]);
        assert_eq!(conn.in_flight(), 0);
        assert!(!conn.is_poisoned());
    }

    #[tokio::test]
    async fn a_future_dropped_while_waiting_for_a_slot_is_harmless() {
        let (conn, mut peer) = connect_with(|b| b.max_in_flight(1));
        let c = conn.clone();
        let first = tokio::spawn(async move { c.request(0, &md("a")).await });
        let (id, topics) = peer.recv_metadata().await;
        // the only slot is taken: this one waits, and is dropped while waiting
        let waiting = tokio::time::timeout(Duration::from_millis(20), conn.request(0, &md("never"))).await;
        assert!(waiting.is_err(), "it waited for the slot");
        peer.reply_metadata(id, &topics).await;
        first.await.unwrap().unwrap();
        let c = conn.clone();
        let task = tokio::spawn(async move { c.request(0, &md("b")).await });
        let (id2, topics2) = peer.recv_metadata().await;
        assert_eq!((id2, topics2.as_slice()), (id + 1, ["b".to_owned()].as_slice()), "the dropped one was never sent");
        peer.reply_metadata(id2, &topics2).await;
        task.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn try_request_queued_queues_at_once_or_leaves_the_request_alone() {
        let (conn, mut peer) = connect_with(|b| b.max_in_flight(1));
        // a free slot: queued before it returns, in order with the requests queued after it
        let first = conn.try_request_queued(0, &md("a")).unwrap().expect("a free slot");
        // the only slot is taken: nothing is encoded or sent
        assert!(conn.try_request_queued(0, &md("b")).unwrap().is_none(), "no slot: no request");
        let (id, topics) = peer.recv_metadata().await;
        assert_eq!(topics, ["a"]);
        assert!(tokio::time::timeout(Duration::from_millis(30), peer.recv()).await.is_err(), "b was never sent");
        peer.reply_metadata(id, &topics).await;
        // the future owns what it needs: it outlives the borrow, and waits on any task
        let answered = tokio::spawn(first).await.unwrap().unwrap();
        assert_eq!(topics_of(&answered), ["a"]);
        let second = conn.try_request_queued(0, &md("c")).unwrap().expect("the slot is free again");
        let (id2, topics2) = peer.recv_metadata().await;
        assert_eq!((id2, topics2.as_slice()), (id + 1, ["c".to_owned()].as_slice()));
        peer.reply_metadata(id2, &topics2).await;
        assert_eq!(topics_of(&second.await.unwrap()), ["c"]);
        // a closed connection: an error, not "try later"
        conn.close().await;
        let closed = conn.try_request_queued(0, &md("d"));
        assert!(closed.is_err(), "a closed connection takes no request");
    }

    #[tokio::test]
    async fn max_in_flight_bounds_the_requests_on_the_wire() {
        let (conn, mut peer) = connect_with(|b| b.max_in_flight(2));
        let tasks: Vec<_> = ["a", "b", "c"]
            .into_iter()
            .map(|t| {
                let conn = conn.clone();
                tokio::spawn(async move { conn.request(0, &md(t)).await })
            })
            .collect();
        let first = peer.recv_metadata().await;
        let second = peer.recv_metadata().await;
        assert!(
            tokio::time::timeout(Duration::from_millis(50), peer.recv()).await.is_err(),
            "a third request went out while two were in flight"
        );
        peer.reply_metadata(first.0, &first.1).await;
        let third = peer.recv_metadata().await;
        peer.reply_metadata(second.0, &second.1).await;
        peer.reply_metadata(third.0, &third.1).await;
        for task in tasks {
            task.await.unwrap().unwrap();
        }
    }

    #[tokio::test]
    async fn send_for_acks_0_registers_no_waiter() {
        let (conn, mut peer) = connect();
        conn.send(0, &produce(0)).await.unwrap();
        assert_eq!(conn.in_flight(), 0, "no waiter for a request without a response");
        let (header, _) = peer.recv().await.unwrap();
        assert_eq!(header.api_key, ApiKey::Produce);
        // a request after it is matched as usual
        let c = conn.clone();
        let task = tokio::spawn(async move { c.request(0, &md("a")).await });
        let (id, topics) = peer.recv_metadata().await;
        assert_eq!(id, header.correlation_id + 1);
        peer.reply_metadata(id, &topics).await;
        task.await.unwrap().unwrap();
        // request() refuses a request that gets no response
        let err = conn.request(0, &produce(0)).await.unwrap_err();
        assert!(matches!(err, Error::NoResponseExpected { api: ApiKey::Produce }), "{err:?}");
    }

    #[tokio::test]
    async fn eof_after_an_acks_0_send_carries_the_hint() {
        let (conn, mut peer) = connect();
        conn.send(0, &produce(0)).await.unwrap();
        peer.recv().await.unwrap();
        drop(peer);
        let err = conn.request(0, &md("a")).await.unwrap_err();
        let reason = poison_of(&err);
        assert!(matches!(reason, PoisonReason::BrokerClosed { unanswered_sends: 1, .. }), "{reason:?}");
        assert!(reason.has_hint());
    }

    #[tokio::test]
    async fn send_of_an_answered_request_discards_its_response() {
        let (conn, mut peer) = connect();
        conn.send(0, &md("ignored")).await.unwrap();
        let (id, topics) = peer.recv_metadata().await;
        assert_eq!(conn.in_flight(), 1, "a silent waiter keeps the stream in step");
        peer.reply_metadata(id, &topics).await;
        let c = conn.clone();
        let task = tokio::spawn(async move { c.request(0, &md("a")).await });
        let (id2, topics2) = peer.recv_metadata().await;
        peer.reply_metadata(id2, &topics2).await;
        assert_eq!(topics_of(&task.await.unwrap().unwrap()), ["a"]);
        assert!(!conn.is_poisoned());
    }

    #[tokio::test]
    async fn a_response_that_does_not_decode_fails_only_its_request() {
        let (conn, mut peer) = connect();
        let c = conn.clone();
        let task = tokio::spawn(async move { c.request(0, &md("a")).await });
        let (id, topics) = peer.recv_metadata().await;
        let mut frame = metadata_frame(id, &topics);
        frame.extend_from_slice(b"junk");
        let size = (frame.len() - 4) as i32;
        frame[..4].copy_from_slice(&size.to_be_bytes());
        peer.io.write_all(&frame).await.unwrap();
        let err = task.await.unwrap().unwrap_err();
        assert!(matches!(err, Error::Decode { correlation_id, .. } if correlation_id == id), "{err:?}");
        let c = conn.clone();
        let task = tokio::spawn(async move { c.request(0, &md("b")).await });
        let (id, topics) = peer.recv_metadata().await;
        peer.reply_metadata(id, &topics).await;
        task.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn close_fails_waiters_and_later_requests() {
        let (conn, mut peer) = connect();
        let c = conn.clone();
        let task = tokio::spawn(async move { c.request(0, &md("a")).await });
        peer.recv_metadata().await;
        conn.close().await;
        assert!(matches!(task.await.unwrap().unwrap_err(), Error::Closed { .. }));
        assert!(matches!(conn.request(0, &md("b")).await.unwrap_err(), Error::Closed { .. }));
        assert!(matches!(conn.send(0, &produce(0)).await.unwrap_err(), Error::Closed { .. }));
        assert!(conn.is_poisoned());
        assert!(peer.recv().await.is_none(), "the socket is closed");
        conn.close().await;
    }

    #[tokio::test]
    async fn dropping_the_last_clone_closes_the_socket() {
        let (conn, mut peer) = connect();
        drop(conn);
        assert!(peer.recv().await.is_none());
    }

    #[tokio::test]
    async fn an_unsupported_version_is_an_encode_error() {
        let (conn, _peer) = connect();
        // Metadata v14 is past the newest version gregor-protocol implements
        let err = conn.request(14, &md("a")).await.unwrap_err();
        assert!(matches!(err, Error::Encode { api: ApiKey::Metadata, version: 14, .. }), "{err:?}");
        assert!(!conn.is_poisoned());
    }

    #[test]
    fn next_frame_takes_whole_frames_and_reserves_nothing_for_missing_ones() {
        let mut buf = BytesMut::new();
        let stream = [&b"\x00\x00\x00\x03abc"[..], b"\x00\x00\x00\x00", b"\x00\x00\x00\x01z"].concat();
        let mut got = Vec::new();
        for byte in stream {
            buf.extend_from_slice(&[byte]);
            loop {
                match next_frame(&mut buf, 16) {
                    Framing::Frame(f) => got.push(f),
                    Framing::Missing(n) => {
                        assert!(n >= 1);
                        break;
                    }
                    Framing::TooLarge(size) => panic!("{size}"),
                }
            }
        }
        assert_eq!(got, [Bytes::from_static(b"abc"), Bytes::new(), Bytes::from_static(b"z")]);
        // a size prefix within the max, and nothing else: no room is made for it
        let mut buf = BytesMut::from(&100_000_000i32.to_be_bytes()[..]);
        let capacity = buf.capacity();
        assert_eq!(next_frame(&mut buf, 1 << 30), Framing::Missing(100_000_000));
        assert_eq!(buf.capacity(), capacity);
        // too large, negative
        let mut buf = BytesMut::from(&17i32.to_be_bytes()[..]);
        assert_eq!(next_frame(&mut buf, 16), Framing::TooLarge(17));
        let mut buf = BytesMut::from(&(-1i32).to_be_bytes()[..]);
        assert_eq!(next_frame(&mut buf, 16), Framing::TooLarge(-1));
        assert_eq!(buf.len(), 4, "nothing consumed");
    }

    #[test]
    fn public_futures_are_send() {
        fn assert_send<T: Send>(_: &T) {}
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let (conn, _peer) = connect();
            let config = ConnectionConfig::default();
            assert_send(&conn.request(0, &md("a")));
            assert_send(&conn.send(0, &produce(0)));
            assert_send(&conn.close());
            assert_send(&BrokerConnection::connect("127.0.0.1:1", &config));
            let pool = crate::Pool::new(config);
            assert_send(&pool.get(0));
            assert_send(&pool.get_addr("127.0.0.1:1"));
            assert_send(&pool.close());
            let cache = crate::MetadataCache::new("127.0.0.1:1", pool).unwrap();
            assert_send(&cache.refresh(&[]));
            assert_send(&cache.leader_connection("t", 0));
        });
    }
}

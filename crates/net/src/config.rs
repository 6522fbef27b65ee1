//! Connection and metadata settings, named after Kafka 0.8.2's client properties.
//!
//! | setting | Kafka property | default |
//! |---|---|---|
//! | [`ConnectionConfig::client_id`] | `client.id` | `""` ([`DEFAULT_CLIENT_ID`]) |
//! | [`ConnectionConfig::request_timeout`] | `socket.timeout.ms` | 30 s ([`DEFAULT_REQUEST_TIMEOUT`]) |
//! | [`ConnectionConfig::connect_timeout`] | — | 10 s ([`DEFAULT_CONNECT_TIMEOUT`]) |
//! | [`ConnectionConfig::max_frame_size`] | `socket.request.max.bytes` (broker) | 100 MiB ([`DEFAULT_MAX_FRAME_SIZE`]) |
//! | [`ConnectionConfig::send_buffer_bytes`] | `send.buffer.bytes` | 100 KiB ([`DEFAULT_SEND_BUFFER_BYTES`]) |
//! | [`ConnectionConfig::receive_buffer_bytes`] | `socket.receive.buffer.bytes` | OS default |
//! | [`ConnectionConfig::max_in_flight`] | — | 64 ([`DEFAULT_MAX_IN_FLIGHT`]) |
//! | [`ConnectionConfig::tcp_nodelay`] | — | true |
//! | [`ConnectionConfig::api_version_request`] | `api.version.request` (librdkafka) | true |
//! | [`ConnectionConfig::api_version_request_timeout`] | `api.version.request.timeout.ms` (librdkafka) | 10 s |
//! | [`ConnectionConfig::broker_version_fallback`] | `broker.version.fallback` (librdkafka) | 0.8.2 |
//! | [`ConnectionConfig::tls`] | `security.protocol=SSL`, `ssl.*` ([`TlsConfig`]) | plaintext |
//! | [`ConnectionConfig::sasl`] | `security.protocol=SASL_*`, `sasl.*` ([`SaslConfig`]) | none |
//!
//! [`Security`] reads `security.protocol` and the `ssl.*` and `sasl.*`
//! properties into the last two ([`ConnectionConfigBuilder::security`]).
//! | [`MetadataConfig::refresh_interval`] | `topic.metadata.refresh.interval.ms` | 600 s ([`DEFAULT_REFRESH_INTERVAL`]) |
//! | [`MetadataConfig::retry_backoff`] | `retry.backoff.ms` | 100 ms ([`DEFAULT_RETRY_BACKOFF`]) |
//! | [`MetadataConfig::retry_backoff_max`] | — | 1 s ([`DEFAULT_RETRY_BACKOFF_MAX`]) |
//! | [`MetadataConfig::refresh_rounds`] | — | 3 ([`DEFAULT_REFRESH_ROUNDS`]) |

use std::time::Duration;

use gregor_config::{check_at_most, check_timeout};

use crate::sasl::SaslConfig;
use crate::security::Security;
use crate::tls::TlsConfig;
use crate::versions::BrokerVersionFallback;

/// Kafka 0.8.2's default `client.id`: empty.
pub const DEFAULT_CLIENT_ID: &str = "";
/// Default [`ConnectionConfig::request_timeout`]: 30 s, the 0.8.2 consumer's `socket.timeout.ms`.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Default [`ConnectionConfig::connect_timeout`]: 10 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default [`ConnectionConfig::max_frame_size`]: 100 MiB, a 0.8.2 broker's
/// `socket.request.max.bytes`.
pub const DEFAULT_MAX_FRAME_SIZE: usize = 104_857_600;
/// Default [`ConnectionConfig::send_buffer_bytes`]: 100 KiB, the 0.8.2 producer's
/// `send.buffer.bytes`.
pub const DEFAULT_SEND_BUFFER_BYTES: usize = 100 * 1024;
/// Default [`ConnectionConfig::max_in_flight`]: 64 requests per connection.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;
/// Default [`ConnectionConfig::api_version_request_timeout`]: 10 s, as librdkafka's.
pub const DEFAULT_API_VERSION_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Default [`MetadataConfig::refresh_interval`]: 600 s, the 0.8.2 producer's
/// `topic.metadata.refresh.interval.ms`.
pub const DEFAULT_REFRESH_INTERVAL: Duration = Duration::from_secs(600);
/// Default [`MetadataConfig::retry_backoff`]: 100 ms, Kafka 0.8.2's `retry.backoff.ms`.
pub const DEFAULT_RETRY_BACKOFF: Duration = Duration::from_millis(100);
/// Default [`MetadataConfig::retry_backoff_max`]: 1 s.
pub const DEFAULT_RETRY_BACKOFF_MAX: Duration = Duration::from_secs(1);
/// Default [`MetadataConfig::refresh_rounds`]: 3.
pub const DEFAULT_REFRESH_ROUNDS: u32 = 3;

/// The longest timeout any builder of this crate accepts: `u32::MAX` milliseconds (about 49.7
/// days). Longer ones are refused rather than risk an overflowing deadline; Kafka's own
/// timeouts are `int` milliseconds, at most 2147483647.
pub const MAX_TIMEOUT: Duration = Duration::from_millis(u32::MAX as u64);

// The one configuration error of every gregor client, and Kafka's `client.id` rule, from the
// configuration kit (re-exported here, where they were first defined).
pub use gregor_config::{validate_client_id, ConfigError};

/// Checks a required `metadata.broker.list` (the producer's and the simple consumer's) and
/// returns its addresses.
///
/// # Errors
///
/// [`ConfigError::Missing`] when it is empty or only spaces, else what
/// [`parse_broker_list`](crate::parse_broker_list) refuses.
pub fn validate_broker_list(list: &str) -> Result<Vec<String>, ConfigError> {
    if list.trim().is_empty() {
        return Err(ConfigError::missing("metadata.broker.list"));
    }
    crate::parse_broker_list(list)
}

fn check_buffer(property: &'static str, bytes: Option<usize>) -> Result<(), ConfigError> {
    match bytes {
        Some(0) => Err(ConfigError::invalid(property, 0, "must be above zero (None for the OS default)")),
        Some(n) if n > i32::MAX as usize => Err(ConfigError::invalid(property, n, "must be at most 2147483647 bytes")),
        _ => Ok(()),
    }
}

/// How to talk to one broker: timeouts, sizes and socket options. Cheap to clone.
///
/// Build one with [`ConnectionConfig::builder`] (or take [`ConnectionConfig::default`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionConfig {
    client_id: String,
    request_timeout: Duration,
    connect_timeout: Duration,
    max_frame_size: usize,
    send_buffer_bytes: Option<usize>,
    receive_buffer_bytes: Option<usize>,
    max_in_flight: usize,
    tcp_nodelay: bool,
    api_version_request: bool,
    api_version_request_timeout: Duration,
    broker_version_fallback: BrokerVersionFallback,
    tls: Option<TlsConfig>,
    sasl: Option<SaslConfig>,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            client_id: DEFAULT_CLIENT_ID.to_owned(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            send_buffer_bytes: Some(DEFAULT_SEND_BUFFER_BYTES),
            receive_buffer_bytes: None,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            tcp_nodelay: true,
            api_version_request: true,
            api_version_request_timeout: DEFAULT_API_VERSION_REQUEST_TIMEOUT,
            broker_version_fallback: BrokerVersionFallback::DEFAULT,
            tls: None,
            sasl: None,
        }
    }
}

impl ConnectionConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> ConnectionConfigBuilder {
        ConnectionConfigBuilder { config: ConnectionConfig::default() }
    }

    /// A builder starting from these settings (to change a few).
    pub fn to_builder(&self) -> ConnectionConfigBuilder {
        ConnectionConfigBuilder { config: self.clone() }
    }

    /// `client.id`: the name sent in every request header, shown in broker logs.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// How long a request may wait for its response (`socket.timeout.ms`).
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// How long opening a connection may take.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// The largest frame sent or accepted, without its 4-byte size prefix.
    pub fn max_frame_size(&self) -> usize {
        self.max_frame_size
    }

    /// `send.buffer.bytes`: the socket's `SO_SNDBUF`, or `None` for the OS default.
    pub fn send_buffer_bytes(&self) -> Option<usize> {
        self.send_buffer_bytes
    }

    /// `socket.receive.buffer.bytes`: the socket's `SO_RCVBUF`, or `None` for the OS default.
    pub fn receive_buffer_bytes(&self) -> Option<usize> {
        self.receive_buffer_bytes
    }

    /// The most requests in flight on one connection.
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight
    }

    /// Whether `TCP_NODELAY` is set.
    pub fn tcp_nodelay(&self) -> bool {
        self.tcp_nodelay
    }

    /// `api.version.request`: whether a new connection first asks the broker which versions it
    /// speaks (ApiVersions).
    pub fn api_version_request(&self) -> bool {
        self.api_version_request
    }

    /// `api.version.request.timeout.ms`: how long the ApiVersions answer may take.
    pub fn api_version_request_timeout(&self) -> Duration {
        self.api_version_request_timeout
    }

    /// `broker.version.fallback`: the release whose versions a broker gets when it does not
    /// answer ApiVersions (or when `api.version.request` is off).
    pub fn broker_version_fallback(&self) -> BrokerVersionFallback {
        self.broker_version_fallback
    }

    /// TLS (`security.protocol=SSL`), or `None` for plaintext.
    pub fn tls(&self) -> Option<&TlsConfig> {
        self.tls.as_ref()
    }

    /// SASL authentication (`security.protocol=SASL_PLAINTEXT` or `SASL_SSL`), or `None`.
    pub fn sasl(&self) -> Option<&SaslConfig> {
        self.sasl.as_ref()
    }

    /// These settings with TLS and SASL from `security` instead (no other setting changes, so
    /// there is nothing to check again).
    pub fn with_security(&self, security: &Security) -> ConnectionConfig {
        ConnectionConfig { tls: security.tls().cloned(), sasl: security.sasl().cloned(), ..self.clone() }
    }

    /// The TLS and SASL settings together, as a [`Security`].
    pub fn security(&self) -> Security {
        Security::new(self.tls.clone(), self.sasl.clone())
    }

    /// These settings without the ApiVersions request (for the second connection to a broker
    /// that closed the first on it).
    pub(crate) fn without_api_version_request(&self) -> ConnectionConfig {
        ConnectionConfig { api_version_request: false, ..self.clone() }
    }
}

/// Builds a [`ConnectionConfig`]; [`ConnectionConfigBuilder::build`] checks it.
#[derive(Debug, Clone)]
pub struct ConnectionConfigBuilder {
    config: ConnectionConfig,
}

impl ConnectionConfigBuilder {
    /// `client.id`: the name sent in every request header, shown in broker logs and request
    /// logs. Default: `""` ([`DEFAULT_CLIENT_ID`], as Kafka 0.8.2's producer).
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.config.client_id = client_id.into();
        self
    }

    /// How long a request may wait for its response, like the 0.8.2 consumer's
    /// `socket.timeout.ms`. Default: 30 s ([`DEFAULT_REQUEST_TIMEOUT`]).
    ///
    /// A request unanswered this long poisons its connection (every other request in flight on
    /// it fails too), since a late response could no longer be told apart. It must exceed a
    /// Fetch's `fetch.wait.max.ms` and a Produce's `request.timeout.ms` (the broker-side ack
    /// timeout, 10 s by default), or healthy long polls and acks=-1 produces time out.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.config.request_timeout = timeout;
        self
    }

    /// How long opening a TCP connection (resolving included) may take. Default: 10 s
    /// ([`DEFAULT_CONNECT_TIMEOUT`]); Kafka 0.8 has no separate property.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.config.connect_timeout = timeout;
        self
    }

    /// The largest frame (without its 4-byte size prefix) sent or accepted. Default: 100 MiB
    /// ([`DEFAULT_MAX_FRAME_SIZE`], a 0.8.2 broker's `socket.request.max.bytes`).
    ///
    /// A larger response poisons the connection (the stream cannot be trusted past a bad size);
    /// a larger request fails before it is sent. Memory per connection is bounded by it: keep it
    /// above `fetch.message.max.bytes` times the partitions per fetch.
    pub fn max_frame_size(mut self, bytes: usize) -> Self {
        self.config.max_frame_size = bytes;
        self
    }

    /// `send.buffer.bytes`: the socket's `SO_SNDBUF`, or `None` for the OS default.
    /// Default: 100 KiB ([`DEFAULT_SEND_BUFFER_BYTES`], as Kafka 0.8.2's producer).
    pub fn send_buffer_bytes(mut self, bytes: Option<usize>) -> Self {
        self.config.send_buffer_bytes = bytes;
        self
    }

    /// `socket.receive.buffer.bytes`: the socket's `SO_RCVBUF`, or `None` for the OS default.
    /// Default: `None`. Kafka 0.8.2's consumer sets 64 KiB; a fixed size switches off Linux's
    /// receive-buffer autotuning, which usually fetches faster.
    pub fn receive_buffer_bytes(mut self, bytes: Option<usize>) -> Self {
        self.config.receive_buffer_bytes = bytes;
        self
    }

    /// The most requests in flight (sent or queued, awaiting their response) on one connection;
    /// more wait for a slot. Default: 64 ([`DEFAULT_MAX_IN_FLIGHT`]). Kafka 0.8's own clients
    /// keep one; pipelining more raises throughput, and a Produce retried after a failure can be
    /// reordered behind later ones (keep one per partition if order matters).
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.config.max_in_flight = n;
        self
    }

    /// Sets `TCP_NODELAY` (no Nagle delay for small pipelined requests). Default: true.
    pub fn tcp_nodelay(mut self, nodelay: bool) -> Self {
        self.config.tcp_nodelay = nodelay;
        self
    }

    /// `api.version.request`: ask each broker, on each new connection, which versions of which
    /// APIs it speaks (ApiVersions, Kafka 0.10+), so that requests go out in the highest version
    /// both sides know. A Kafka 0.8/0.9 broker closes the connection on it; the connection is
    /// then opened again and speaks the [`broker_version_fallback`](Self::broker_version_fallback)
    /// release's versions. Default: true, as librdkafka's (false saves that round trip on a cluster
    /// known to be 0.8/0.9).
    pub fn api_version_request(mut self, on: bool) -> Self {
        self.config.api_version_request = on;
        self
    }

    /// `api.version.request.timeout.ms`: how long the ApiVersions answer may take; past it the
    /// connection fails (it is not taken for an old broker: those close the connection at once).
    /// Default: 10 s ([`DEFAULT_API_VERSION_REQUEST_TIMEOUT`]).
    pub fn api_version_request_timeout(mut self, timeout: Duration) -> Self {
        self.config.api_version_request_timeout = timeout;
        self
    }

    /// TLS for every connection (`security.protocol=SSL`), with the certificates of a
    /// [`TlsConfig`]; `None` (the default) for plaintext.
    pub fn tls(mut self, tls: Option<TlsConfig>) -> Self {
        self.config.tls = tls;
        self
    }

    /// SASL authentication for every connection (`security.protocol=SASL_PLAINTEXT` or
    /// `SASL_SSL`, with `sasl.mechanism`, `sasl.username`, `sasl.password`); `None` (the
    /// default) for none. Each new connection asks the broker's versions (ApiVersions, whatever
    /// `api.version.request` says) and authenticates ([`crate::BrokerConnection::authenticate`])
    /// before any other request; a failure is a non-retriable [`crate::Error::Sasl`].
    pub fn sasl(mut self, sasl: Option<SaslConfig>) -> Self {
        self.config.sasl = sasl;
        self
    }

    /// TLS and SASL from a [`Security`] (what `security.protocol` and the `ssl.*` and
    /// `sasl.*` properties say): sets both [`tls`](Self::tls) and [`sasl`](Self::sasl).
    pub fn security(mut self, security: &Security) -> Self {
        self.config.tls = security.tls().cloned();
        self.config.sasl = security.sasl().cloned();
        self
    }

    /// `broker.version.fallback`: the Kafka release (0.8.0 to 0.9.0) whose versions a broker
    /// that does not answer ApiVersions gets. Default: 0.8.2.
    pub fn broker_version_fallback(mut self, release: BrokerVersionFallback) -> Self {
        self.config.broker_version_fallback = release;
        self
    }

    /// Checks the settings.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Invalid`] for a zero timeout or one over [`MAX_TIMEOUT`], a max frame
    /// size under 8 bytes or above `i32::MAX`, a zero buffer size or one above `i32::MAX`,
    /// `max_in_flight` of 0 or above 1 000 000, and a `client.id` that
    /// [`validate_client_id`] refuses.
    pub fn build(self) -> Result<ConnectionConfig, ConfigError> {
        let c = self.config;
        check_timeout("api.version.request.timeout.ms", c.api_version_request_timeout, MAX_TIMEOUT)?;
        validate_client_id(&c.client_id)?;
        check_timeout("socket.timeout.ms", c.request_timeout, MAX_TIMEOUT)?;
        check_timeout("connect_timeout", c.connect_timeout, MAX_TIMEOUT)?;
        if c.max_frame_size < 8 || c.max_frame_size > i32::MAX as usize {
            return Err(ConfigError::invalid(
                "max_frame_size",
                c.max_frame_size,
                "must be between 8 and 2147483647 bytes",
            ));
        }
        check_buffer("send.buffer.bytes", c.send_buffer_bytes)?;
        check_buffer("socket.receive.buffer.bytes", c.receive_buffer_bytes)?;
        if c.max_in_flight == 0 || c.max_in_flight > 1_000_000 {
            return Err(ConfigError::invalid("max_in_flight", c.max_in_flight, "must be between 1 and 1000000"));
        }
        Ok(c)
    }
}

/// How a [`crate::MetadataCache`] refreshes.
#[derive(Debug, Clone, PartialEq)]
pub struct MetadataConfig {
    refresh_interval: Duration,
    retry_backoff: Duration,
    retry_backoff_max: Duration,
    refresh_rounds: u32,
}

impl Default for MetadataConfig {
    fn default() -> Self {
        MetadataConfig {
            refresh_interval: DEFAULT_REFRESH_INTERVAL,
            retry_backoff: DEFAULT_RETRY_BACKOFF,
            retry_backoff_max: DEFAULT_RETRY_BACKOFF_MAX,
            refresh_rounds: DEFAULT_REFRESH_ROUNDS,
        }
    }
}

impl MetadataConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> MetadataConfigBuilder {
        MetadataConfigBuilder { config: MetadataConfig::default() }
    }

    /// A builder starting from these settings (to change a few).
    pub fn to_builder(&self) -> MetadataConfigBuilder {
        MetadataConfigBuilder { config: self.clone() }
    }

    /// `topic.metadata.refresh.interval.ms`.
    pub fn refresh_interval(&self) -> Duration {
        self.refresh_interval
    }

    /// `retry.backoff.ms`: the first pause between rounds of a refresh.
    pub fn retry_backoff(&self) -> Duration {
        self.retry_backoff
    }

    /// The longest pause between rounds.
    pub fn retry_backoff_max(&self) -> Duration {
        self.retry_backoff_max
    }

    /// How many times a refresh goes through every broker before it gives up.
    pub fn refresh_rounds(&self) -> u32 {
        self.refresh_rounds
    }
}

/// Builds a [`MetadataConfig`].
#[derive(Debug, Clone)]
pub struct MetadataConfigBuilder {
    config: MetadataConfig,
}

impl MetadataConfigBuilder {
    /// `topic.metadata.refresh.interval.ms`: metadata older than this is refreshed
    /// ([`crate::MetadataCache::needs_refresh`]). Default: 600 s ([`DEFAULT_REFRESH_INTERVAL`],
    /// Kafka 0.8.2's producer). Shorter finds new partitions sooner at one Metadata request
    /// per interval.
    pub fn refresh_interval(mut self, interval: Duration) -> Self {
        self.config.refresh_interval = interval;
        self
    }

    /// `retry.backoff.ms`: the pause after a round of a refresh in which no broker answered,
    /// doubled each round up to [`MetadataConfigBuilder::retry_backoff_max`], with jitter.
    /// Default: 100 ms ([`DEFAULT_RETRY_BACKOFF`]).
    pub fn retry_backoff(mut self, backoff: Duration) -> Self {
        self.config.retry_backoff = backoff;
        self
    }

    /// The longest pause between rounds. Default: 1 s ([`DEFAULT_RETRY_BACKOFF_MAX`]).
    pub fn retry_backoff_max(mut self, max: Duration) -> Self {
        self.config.retry_backoff_max = max;
        self
    }

    /// How many times a refresh goes through every broker (the bootstrap list, then the known
    /// ones) before it fails with [`crate::Error::NoBrokerAvailable`]. Default: 3
    /// ([`DEFAULT_REFRESH_ROUNDS`]). A refresh can take up to rounds × brokers ×
    /// `connect_timeout` when brokers do not refuse but black-hole connections.
    pub fn refresh_rounds(mut self, rounds: u32) -> Self {
        self.config.refresh_rounds = rounds;
        self
    }

    /// Checks the settings.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Invalid`] for zero rounds, a backoff over [`MAX_TIMEOUT`], or a max
    /// backoff below the backoff.
    pub fn build(self) -> Result<MetadataConfig, ConfigError> {
        let c = self.config;
        if c.refresh_rounds == 0 {
            return Err(ConfigError::invalid("refresh_rounds", 0, "must be at least 1"));
        }
        check_at_most("retry.backoff.ms", c.retry_backoff, MAX_TIMEOUT)?;
        check_at_most("retry_backoff_max", c.retry_backoff_max, MAX_TIMEOUT)?;
        if c.retry_backoff_max < c.retry_backoff {
            return Err(ConfigError::invalid(
                "retry_backoff_max",
                c.retry_backoff_max.as_millis(),
                format!("must be at least retry.backoff.ms ({} ms)", c.retry_backoff.as_millis()),
            ));
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Holds the constants against the table in the module docs (Kafka 0.8.2's defaults).
    #[test]
    fn defaults_are_kafka_0_8_2s() {
        let c = ConnectionConfig::default();
        assert_eq!(c.client_id(), "");
        assert_eq!(c.request_timeout(), Duration::from_millis(30_000));
        assert_eq!(c.connect_timeout(), Duration::from_secs(10));
        assert_eq!(c.max_frame_size(), 104_857_600);
        assert_eq!(c.send_buffer_bytes(), Some(102_400));
        assert_eq!(c.receive_buffer_bytes(), None);
        assert_eq!(c.max_in_flight(), 64);
        assert!(c.tcp_nodelay());
        assert_eq!(ConnectionConfig::builder().build().unwrap(), c);
        let m = MetadataConfig::default();
        assert_eq!(m.refresh_interval(), Duration::from_millis(600_000));
        assert_eq!(m.retry_backoff(), Duration::from_millis(100));
        assert_eq!(m.refresh_rounds(), 3);
        assert_eq!(MetadataConfig::builder().build().unwrap(), m);
    }

    #[test]
    fn build_rejects_what_cannot_work() {
        let e = ConnectionConfig::builder().max_in_flight(0).build().unwrap_err();
        assert_eq!(e.to_string(), "invalid value \"0\" for max_in_flight: must be between 1 and 1000000");
        assert!(ConnectionConfig::builder().request_timeout(Duration::ZERO).build().is_err());
        assert!(ConnectionConfig::builder().max_frame_size(4).build().is_err());
        assert!(ConnectionConfig::builder().send_buffer_bytes(Some(0)).build().is_err());
        assert!(MetadataConfig::builder().refresh_rounds(0).build().is_err());
        assert!(MetadataConfig::builder().retry_backoff(Duration::from_secs(5)).build().is_err());
        let c = ConnectionConfig::builder().client_id("app").max_in_flight(1).build().unwrap();
        assert_eq!((c.client_id(), c.max_in_flight()), ("app", 1));
        let d = c.to_builder().max_in_flight(8).build().unwrap();
        assert_eq!((d.client_id(), d.max_in_flight()), ("app", 8));
    }
}

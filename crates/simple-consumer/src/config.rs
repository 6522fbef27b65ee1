//! Simple-consumer settings, named after Kafka 0.8.2's consumer properties.
//!
//! | setting | property | default |
//! |---|---|---|
//! | [`SimpleConsumerConfig::metadata_broker_list`] | `metadata.broker.list` | required |
//! | [`SimpleConsumerConfig::client_id`] | `client.id` | `""` ([`DEFAULT_CLIENT_ID`]) |
//! | [`SimpleConsumerConfig::socket_timeout`] | `socket.timeout.ms` | 30 s ([`DEFAULT_SOCKET_TIMEOUT`]) |
//! | [`SimpleConsumerConfig::fetch_message_max_bytes`] | `fetch.message.max.bytes` | 1048576 ([`DEFAULT_FETCH_MESSAGE_MAX_BYTES`]) |
//! | [`SimpleConsumerConfig::fetch_min_bytes`] | `fetch.min.bytes` | 1 ([`DEFAULT_FETCH_MIN_BYTES`]) |
//! | [`SimpleConsumerConfig::fetch_wait_max`] | `fetch.wait.max.ms` | 100 ms ([`DEFAULT_FETCH_WAIT_MAX`]) |
//! | [`SimpleConsumerConfig::refresh_leader_backoff`] | `refresh.leader.backoff.ms` | 200 ms ([`DEFAULT_REFRESH_LEADER_BACKOFF`]) |
//! | [`SimpleConsumerConfig::refresh_leader_backoff_max`] | `refresh.leader.backoff.max.ms` (gregor) | 1 s ([`DEFAULT_REFRESH_LEADER_BACKOFF_MAX`]) |
//! | [`SimpleConsumerConfig::refresh_leader_max_retries`] | `refresh.leader.max.retries` (gregor) | 10 ([`DEFAULT_REFRESH_LEADER_MAX_RETRIES`]) |
//! | [`SimpleConsumerConfig::fetch_message_auto_grow_max_bytes`] | `fetch.message.auto.grow.max.bytes` (gregor) | off ([`DEFAULT_FETCH_MESSAGE_AUTO_GROW_MAX_BYTES`]) |
//! | [`SimpleConsumerConfig::isolation_level`] | `isolation.level` | `read_uncommitted` |
//! | [`SimpleConsumerConfig::api_version_request`] | `api.version.request` | true |
//! | [`SimpleConsumerConfig::broker_version_fallback`] | `broker.version.fallback` | `0.8.2` |
//! | [`SimpleConsumerConfig::security`] | `security.protocol`, `ssl.*`, `sasl.*` (see [`gregor_net::security`]) | `PLAINTEXT` |
//!
//! With `api.version.request` on, each connection asks its broker which versions it speaks
//! (ApiVersions) and Fetch, ListOffsets and Metadata go out in the highest version both sides
//! know: records come back with timestamps and headers (Kafka 0.10/0.11 on) and a Kafka 4
//! broker, which has dropped 0.8.2's versions, can be read at all. A broker that does not
//! answer ApiVersions (Kafka 0.8/0.9) gets the versions of `broker.version.fallback`.
//!
//! The properties marked (gregor) do not exist in Kafka 0.8.2: its `SimpleConsumer` does not
//! retry at all, and its high-level consumer retries leader lookups forever.
//!
//! Validation: [`SimpleConsumerConfigBuilder::build`] (which
//! [`SimpleConsumerConfig::from_properties`] ends in) refuses every value that cannot work with a
//! [`ConfigError`] naming the property and the reason, e.g. `invalid value "10" for
//! fetch.message.max.bytes: must be at least 26 bytes, ...`. Millisecond and count properties
//! are Kafka `int`s: at most 2147483647. `client.id` follows Kafka's rule (ASCII letters and
//! digits, `.`, `_`, `-`). An unknown property name is an error
//! ([`ConfigError::UnknownProperty`]), where Kafka only logs a warning.

use std::time::Duration;

use gregor_config::{check_count, check_ms};
use gregor_net::versions::InvalidFallback;
use gregor_net::{
    BrokerVersionFallback, ConnectionConfig, IsolationLevel, MetadataConfig, Security, SecurityProperties,
};
use gregor_protocol::message::{ENTRY_HEADER_SIZE, MESSAGE_V0_OVERHEAD};

// The one configuration error of every gregor client, from the configuration kit.
pub use gregor_config::ConfigError;

/// Kafka 0.8.2's default `client.id` for a simple consumer: empty (its `SimpleConsumer` takes
/// the id as an argument; the high-level consumer uses the group id).
pub const DEFAULT_CLIENT_ID: &str = "";
/// Kafka 0.8.2's default `socket.timeout.ms`: 30 s.
pub const DEFAULT_SOCKET_TIMEOUT: Duration = Duration::from_millis(30_000);
/// Kafka 0.8.2's default `fetch.message.max.bytes`: 1 MiB.
pub const DEFAULT_FETCH_MESSAGE_MAX_BYTES: i32 = 1024 * 1024;
/// Kafka 0.8.2's default `fetch.min.bytes`: 1.
pub const DEFAULT_FETCH_MIN_BYTES: i32 = 1;
/// Kafka 0.8.2's default `fetch.wait.max.ms`: 100 ms.
pub const DEFAULT_FETCH_WAIT_MAX: Duration = Duration::from_millis(100);
/// Kafka 0.8.2's default `refresh.leader.backoff.ms`: 200 ms.
pub const DEFAULT_REFRESH_LEADER_BACKOFF: Duration = Duration::from_millis(200);
/// Default `refresh.leader.backoff.max.ms` (gregor): 1 s.
pub const DEFAULT_REFRESH_LEADER_BACKOFF_MAX: Duration = Duration::from_millis(1000);
/// Default `refresh.leader.max.retries` (gregor): 10, about 8 s of retrying with the default
/// backoffs — longer than a 0.8.2 cluster takes to replace a leader killed with `kill -9`
/// (`zookeeper.session.timeout.ms`, 6 s).
pub const DEFAULT_REFRESH_LEADER_MAX_RETRIES: u32 = 10;
/// Default `fetch.message.auto.grow.max.bytes` (gregor): off.
pub const DEFAULT_FETCH_MESSAGE_AUTO_GROW_MAX_BYTES: Option<i32> = None;
/// The smallest `fetch.message.max.bytes` accepted: an offset/size header and an empty
/// Message v0 (26 bytes). Below it not even the size of the next message comes back.
pub const MIN_FETCH_MESSAGE_MAX_BYTES: i32 = (ENTRY_HEADER_SIZE + MESSAGE_V0_OVERHEAD) as i32;

/// Every property [`SimpleConsumerConfig::from_properties`] knows, in the order of the module
/// table.
pub const PROPERTIES: &[&str] = &[
    "metadata.broker.list",
    "client.id",
    "socket.timeout.ms",
    "fetch.message.max.bytes",
    "fetch.min.bytes",
    "fetch.wait.max.ms",
    "refresh.leader.backoff.ms",
    "refresh.leader.backoff.max.ms",
    "refresh.leader.max.retries",
    "fetch.message.auto.grow.max.bytes",
    "isolation.level",
    "api.version.request",
    "broker.version.fallback",
];

/// The client name in [`ConfigError::UnknownProperty`].
const CLIENT: &str = "simple-consumer";

/// Today's Kafka names [`SimpleConsumerConfig::from_properties`] accepts for settings of
/// [`PROPERTIES`]: `bootstrap.servers`, `fetch.max.wait.ms`, `max.partition.fetch.bytes`. Both
/// names of one setting with different values are an error.
pub const MODERN_NAMES: &[gregor_config::Alias] = &[
    gregor_config::Alias { modern: "bootstrap.servers", classic: "metadata.broker.list", translate: None },
    gregor_config::Alias { modern: "fetch.max.wait.ms", classic: "fetch.wait.max.ms", translate: None },
    gregor_config::Alias { modern: "max.partition.fetch.bytes", classic: "fetch.message.max.bytes", translate: None },
];

/// How a [`crate::SimpleConsumer`] talks to the cluster. Cheap to clone.
///
/// ```
/// use std::time::Duration;
/// use gregor_simple_consumer::SimpleConsumerConfig;
///
/// let config = SimpleConsumerConfig::builder()
///     .metadata_broker_list("k1:9092,k2:9092")
///     .client_id("reader")
///     .fetch_wait_max(Duration::from_millis(500))
///     .build()?;
/// assert_eq!(config.fetch_message_max_bytes(), 1_048_576);
/// # Ok::<(), gregor_simple_consumer::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleConsumerConfig {
    metadata_broker_list: String,
    client_id: String,
    socket_timeout: Duration,
    fetch_message_max_bytes: i32,
    fetch_min_bytes: i32,
    fetch_wait_max: Duration,
    refresh_leader_backoff: Duration,
    refresh_leader_backoff_max: Duration,
    refresh_leader_max_retries: u32,
    fetch_message_auto_grow_max_bytes: Option<i32>,
    isolation_level: IsolationLevel,
    api_version_request: bool,
    broker_version_fallback: BrokerVersionFallback,
    security: Security,
}

impl Default for SimpleConsumerConfig {
    /// The defaults, with an empty (hence invalid) broker list: a config from here is only
    /// useful through [`SimpleConsumerConfig::to_builder`].
    fn default() -> Self {
        SimpleConsumerConfig {
            metadata_broker_list: String::new(),
            client_id: DEFAULT_CLIENT_ID.to_owned(),
            socket_timeout: DEFAULT_SOCKET_TIMEOUT,
            fetch_message_max_bytes: DEFAULT_FETCH_MESSAGE_MAX_BYTES,
            fetch_min_bytes: DEFAULT_FETCH_MIN_BYTES,
            fetch_wait_max: DEFAULT_FETCH_WAIT_MAX,
            refresh_leader_backoff: DEFAULT_REFRESH_LEADER_BACKOFF,
            refresh_leader_backoff_max: DEFAULT_REFRESH_LEADER_BACKOFF_MAX,
            refresh_leader_max_retries: DEFAULT_REFRESH_LEADER_MAX_RETRIES,
            fetch_message_auto_grow_max_bytes: DEFAULT_FETCH_MESSAGE_AUTO_GROW_MAX_BYTES,
            isolation_level: IsolationLevel::ReadUncommitted,
            api_version_request: ConnectionConfig::default().api_version_request(),
            broker_version_fallback: BrokerVersionFallback::DEFAULT,
            security: Security::plaintext(),
        }
    }
}

impl SimpleConsumerConfig {
    /// A builder starting from the defaults; [`SimpleConsumerConfigBuilder::metadata_broker_list`]
    /// must be set.
    pub fn builder() -> SimpleConsumerConfigBuilder {
        SimpleConsumerConfigBuilder { config: SimpleConsumerConfig::default() }
    }

    /// A builder starting from these settings (to change a few).
    pub fn to_builder(&self) -> SimpleConsumerConfigBuilder {
        SimpleConsumerConfigBuilder { config: self.clone() }
    }

    /// Reads Kafka's property names (`metadata.broker.list`, `fetch.message.max.bytes`, ...,
    /// and the gregor ones of the [module table](self), all in [`PROPERTIES`]); durations are in
    /// milliseconds, as in Kafka; values are trimmed. `fetch.message.auto.grow.max.bytes=0`
    /// leaves auto-grow off (the default). `security.protocol` and the `ssl.*` and `sasl.*`
    /// properties are read by [`gregor_net::Security::from_properties`].
    ///
    /// ```
    /// use gregor_simple_consumer::SimpleConsumerConfig;
    ///
    /// let config = SimpleConsumerConfig::from_properties([
    ///     ("metadata.broker.list", "k1:9092"),
    ///     ("fetch.message.max.bytes", "10240"),
    ///     ("fetch.wait.max.ms", "500"),
    /// ])?;
    /// assert_eq!(config.fetch_message_max_bytes(), 10_240);
    /// # Ok::<(), gregor_simple_consumer::ConfigError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ConfigError::UnknownProperty`] for a name not in [`PROPERTIES`],
    /// [`ConfigError::Invalid`] for a value that does not parse or is out of range, what
    /// [`gregor_net::Security::from_properties`] refuses, and what
    /// [`SimpleConsumerConfigBuilder::build`] rejects.
    pub fn from_properties<I, K, V>(properties: I) -> Result<SimpleConsumerConfig, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut b = SimpleConsumerConfig::builder();
        let mut security = SecurityProperties::new();
        let properties = properties.into_iter().filter(|(k, v)| !security.take(k, v));
        for property in gregor_config::read_with_aliases(CLIENT, PROPERTIES, MODERN_NAMES, properties) {
            let p = property?;
            b = match p.name() {
                "metadata.broker.list" => b.metadata_broker_list(p.value()),
                "client.id" => b.client_id(p.value()),
                "socket.timeout.ms" => b.socket_timeout(p.ms(1)?),
                "fetch.message.max.bytes" => b.fetch_message_max_bytes(p.int(MIN_FETCH_MESSAGE_MAX_BYTES.into())?),
                "fetch.min.bytes" => b.fetch_min_bytes(p.int(0)?),
                "fetch.wait.max.ms" => b.fetch_wait_max(p.ms(0)?),
                "refresh.leader.backoff.ms" => b.refresh_leader_backoff(p.ms(0)?),
                "refresh.leader.backoff.max.ms" => b.refresh_leader_backoff_max(p.ms(0)?),
                "refresh.leader.max.retries" => b.refresh_leader_max_retries(p.int(0)?),
                "fetch.message.auto.grow.max.bytes" => match p.int(0)? {
                    0 => b.fetch_message_auto_grow_max_bytes(None),
                    n => b.fetch_message_auto_grow_max_bytes(Some(n)),
                },
                "isolation.level" => b.isolation_level(p.value().parse().map_err(|e: String| p.invalid(e))?),
                "api.version.request" => b.api_version_request(p.bool()?),
                "broker.version.fallback" => {
                    b.broker_version_fallback(p.value().parse().map_err(|e: InvalidFallback| p.invalid(e.0))?)
                }
                _ => unreachable!("every name of PROPERTIES is handled"),
            };
        }
        b.security(security.build()?).build()
    }

    /// Every property of [`PROPERTIES`] with its value, as [`SimpleConsumerConfig::from_properties`]
    /// reads it back (auto-grow off is `0`): to log the settings in effect, or to round-trip them.
    /// The security properties follow unless the protocol is `PLAINTEXT`
    /// ([`Security::to_properties`]: secrets are `***`, so they do not read back).
    pub fn to_properties(&self) -> Vec<(&'static str, String)> {
        let mut props = vec![
            ("metadata.broker.list", self.metadata_broker_list.clone()),
            ("client.id", self.client_id.clone()),
            ("socket.timeout.ms", self.socket_timeout.as_millis().to_string()),
            ("fetch.message.max.bytes", self.fetch_message_max_bytes.to_string()),
            ("fetch.min.bytes", self.fetch_min_bytes.to_string()),
            ("fetch.wait.max.ms", self.fetch_wait_max.as_millis().to_string()),
            ("refresh.leader.backoff.ms", self.refresh_leader_backoff.as_millis().to_string()),
            ("refresh.leader.backoff.max.ms", self.refresh_leader_backoff_max.as_millis().to_string()),
            ("refresh.leader.max.retries", self.refresh_leader_max_retries.to_string()),
            ("fetch.message.auto.grow.max.bytes", self.fetch_message_auto_grow_max_bytes.unwrap_or(0).to_string()),
            ("isolation.level", self.isolation_level.to_string()),
            ("api.version.request", self.api_version_request.to_string()),
            ("broker.version.fallback", self.broker_version_fallback.to_string()),
        ];
        if self.security.protocol() != gregor_net::SecurityProtocol::Plaintext {
            props.extend(self.security.to_properties());
        }
        props
    }

    /// `metadata.broker.list`: the brokers asked for metadata first (`host:port,host:port`).
    pub fn metadata_broker_list(&self) -> &str {
        &self.metadata_broker_list
    }

    /// `client.id`: the name sent in every request header.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// `socket.timeout.ms`: how long a request may wait for its response.
    pub fn socket_timeout(&self) -> Duration {
        self.socket_timeout
    }

    /// `fetch.message.max.bytes`: the most bytes fetched per partition and request.
    pub fn fetch_message_max_bytes(&self) -> i32 {
        self.fetch_message_max_bytes
    }

    /// `fetch.min.bytes`: the fewest bytes a broker answers a fetch with before
    /// `fetch.wait.max.ms` runs out.
    pub fn fetch_min_bytes(&self) -> i32 {
        self.fetch_min_bytes
    }

    /// `fetch.wait.max.ms`: the longest a broker parks a fetch waiting for `fetch.min.bytes`.
    pub fn fetch_wait_max(&self) -> Duration {
        self.fetch_wait_max
    }

    /// `refresh.leader.backoff.ms`: the wait before looking a lost leader up again.
    pub fn refresh_leader_backoff(&self) -> Duration {
        self.refresh_leader_backoff
    }

    /// `refresh.leader.backoff.max.ms` (gregor): the longest wait between leader lookups.
    pub fn refresh_leader_backoff_max(&self) -> Duration {
        self.refresh_leader_backoff_max
    }

    /// `refresh.leader.max.retries` (gregor): how many times a partition is retried after a
    /// leader error before the error is returned.
    pub fn refresh_leader_max_retries(&self) -> u32 {
        self.refresh_leader_max_retries
    }

    /// `fetch.message.auto.grow.max.bytes` (gregor): the fetch size may grow up to this for a
    /// message larger than `fetch.message.max.bytes`; `None` when off.
    pub fn fetch_message_auto_grow_max_bytes(&self) -> Option<i32> {
        self.fetch_message_auto_grow_max_bytes
    }

    /// `isolation.level`: `read_committed` leaves out the records of aborted transactions and
    /// reads only up to the last stable offset (brokers from Kafka 0.11, with
    /// `api.version.request`); `read_uncommitted` (the default) reads everything.
    pub fn isolation_level(&self) -> IsolationLevel {
        self.isolation_level
    }

    /// `api.version.request`: whether connections ask brokers for their versions (see the
    /// module docs).
    pub fn api_version_request(&self) -> bool {
        self.api_version_request
    }

    /// `broker.version.fallback`: the release a broker that does not answer ApiVersions is
    /// spoken to as.
    pub fn broker_version_fallback(&self) -> BrokerVersionFallback {
        self.broker_version_fallback
    }

    /// `security.protocol` and its TLS and SASL settings, for every broker connection.
    pub fn security(&self) -> &Security {
        &self.security
    }

    /// `fetch.wait.max.ms` in the `int32` milliseconds of a Fetch request.
    pub(crate) fn fetch_wait_max_ms(&self) -> i32 {
        self.fetch_wait_max.as_millis() as i32
    }

    /// The settings of the consumer's connections: `client.id`, `socket.timeout.ms` and the
    /// security settings, the rest [`ConnectionConfig`]'s defaults.
    ///
    /// # Errors
    ///
    /// What [`gregor_net::ConnectionConfigBuilder::build`] rejects (a `client.id` over 32767
    /// bytes).
    pub fn connection_config(&self) -> Result<ConnectionConfig, ConfigError> {
        ConnectionConfig::builder()
            .client_id(self.client_id.clone())
            .request_timeout(self.socket_timeout)
            .api_version_request(self.api_version_request)
            .broker_version_fallback(self.broker_version_fallback)
            .security(&self.security)
            .build()
    }

    /// The settings of the consumer's metadata cache: [`MetadataConfig`]'s defaults.
    pub fn metadata_config(&self) -> MetadataConfig {
        MetadataConfig::default()
    }
}

/// Builds a [`SimpleConsumerConfig`]; [`SimpleConsumerConfigBuilder::build`] checks it.
#[derive(Debug, Clone)]
pub struct SimpleConsumerConfigBuilder {
    config: SimpleConsumerConfig,
}

impl SimpleConsumerConfigBuilder {
    /// `metadata.broker.list`: `host:port,host:port` of brokers to ask for metadata; the
    /// leaders are found from there. Required (no default). One live broker is enough; list
    /// several so a dead one does not stop the consumer from starting.
    pub fn metadata_broker_list(mut self, list: impl Into<String>) -> Self {
        self.config.metadata_broker_list = list.into();
        self
    }

    /// `client.id`: the name sent in every request header, shown in broker logs and request
    /// logs. Default: `""` ([`DEFAULT_CLIENT_ID`]).
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.config.client_id = client_id.into();
        self
    }

    /// `socket.timeout.ms`: how long a request may wait for its response. Default: 30 s
    /// ([`DEFAULT_SOCKET_TIMEOUT`]).
    ///
    /// It must exceed `fetch.wait.max.ms` (Kafka's consumer enforces it too), or every long
    /// poll on a quiet partition times out. A timed-out request closes its connection, failing
    /// every other request in flight on it.
    pub fn socket_timeout(mut self, timeout: Duration) -> Self {
        self.config.socket_timeout = timeout;
        self
    }

    /// `fetch.message.max.bytes`: the most bytes fetched per partition in one request.
    /// Default: 1048576 ([`DEFAULT_FETCH_MESSAGE_MAX_BYTES`]).
    ///
    /// It must be at least as large as the largest message of the topic (the broker's
    /// `message.max.bytes`, 1000012 by default): a larger message cannot be fetched and comes
    /// back as [`crate::Error::MessageSizeTooLarge`] (see
    /// [`SimpleConsumerConfigBuilder::fetch_message_auto_grow_max_bytes`]). Memory: up to this
    /// many bytes per partition per fetch are buffered, so a fetch of N partitions may hold N
    /// times it. At least [`MIN_FETCH_MESSAGE_MAX_BYTES`].
    pub fn fetch_message_max_bytes(mut self, bytes: i32) -> Self {
        self.config.fetch_message_max_bytes = bytes;
        self
    }

    /// `fetch.min.bytes`: the fewest bytes a broker answers a fetch with, unless
    /// `fetch.wait.max.ms` runs out first. Default: 1 ([`DEFAULT_FETCH_MIN_BYTES`]): answer as
    /// soon as there is anything. Larger values trade latency for fewer, fuller fetches; 0
    /// answers at once even with nothing.
    pub fn fetch_min_bytes(mut self, bytes: i32) -> Self {
        self.config.fetch_min_bytes = bytes;
        self
    }

    /// `fetch.wait.max.ms`: the longest a broker parks a fetch waiting for `fetch.min.bytes`.
    /// Default: 100 ms ([`DEFAULT_FETCH_WAIT_MAX`]).
    ///
    /// Every [`crate::SimpleConsumer::fetch`] of partitions with nothing new takes this long;
    /// 0 makes fetches return at once (a [`crate::MessageStream`] then still waits 10 ms
    /// between empty polls rather than spin). Must stay below `socket.timeout.ms`.
    pub fn fetch_wait_max(mut self, wait: Duration) -> Self {
        self.config.fetch_wait_max = wait;
        self
    }

    /// `refresh.leader.backoff.ms`: the wait before looking up the leader of a partition
    /// that has just lost its leader (or answered NotLeaderForPartition, or whose broker cannot
    /// be reached). Default: 200 ms ([`DEFAULT_REFRESH_LEADER_BACKOFF`]). It doubles on each
    /// further retry of the same call, up to `refresh.leader.backoff.max.ms`, with jitter.
    pub fn refresh_leader_backoff(mut self, backoff: Duration) -> Self {
        self.config.refresh_leader_backoff = backoff;
        self
    }

    /// `refresh.leader.backoff.max.ms` (gregor): the longest wait between two leader lookups
    /// of one call. Default: 1 s ([`DEFAULT_REFRESH_LEADER_BACKOFF_MAX`]). Not below
    /// `refresh.leader.backoff.ms`.
    pub fn refresh_leader_backoff_max(mut self, max: Duration) -> Self {
        self.config.refresh_leader_backoff_max = max;
        self
    }

    /// `refresh.leader.max.retries` (gregor): how many times one call retries a partition after
    /// a leader error (NotLeaderForPartition, UnknownTopicOrPartition, LeaderNotAvailable, no
    /// leader in the metadata, an unreachable leader), refreshing metadata before each retry,
    /// before returning the last error. Default: 10
    /// ([`DEFAULT_REFRESH_LEADER_MAX_RETRIES`]), about 8 s with the default backoffs. 0 never
    /// retries.
    pub fn refresh_leader_max_retries(mut self, retries: u32) -> Self {
        self.config.refresh_leader_max_retries = retries;
        self
    }

    /// `fetch.message.auto.grow.max.bytes` (gregor): when a partition's next message is larger
    /// than `fetch.message.max.bytes`, fetch that partition again with a size just large
    /// enough for it, if that is at most this many bytes. Default: off
    /// ([`DEFAULT_FETCH_MESSAGE_AUTO_GROW_MAX_BYTES`]): the fetch returns
    /// [`crate::Error::MessageSizeTooLarge`] with the size needed.
    ///
    /// **Warning:** costs a second round trip for the partition each time it happens, and up
    /// to this many bytes of memory per partition; must exceed `fetch.message.max.bytes`.
    pub fn fetch_message_auto_grow_max_bytes(mut self, max: Option<i32>) -> Self {
        self.config.fetch_message_auto_grow_max_bytes = max;
        self
    }

    /// `security.protocol` and the `ssl.*` / `sasl.*` settings of every broker connection, as
    /// [`gregor_net::Security`] (TLS settings, SASL credentials). Default: plaintext.
    pub fn security(mut self, security: Security) -> Self {
        self.config.security = security;
        self
    }

    /// `isolation.level` (see [`SimpleConsumerConfig::isolation_level`]).
    pub fn isolation_level(mut self, level: IsolationLevel) -> Self {
        self.config.isolation_level = level;
        self
    }

    /// `api.version.request` (see [`SimpleConsumerConfig::api_version_request`]).
    pub fn api_version_request(mut self, on: bool) -> Self {
        self.config.api_version_request = on;
        self
    }

    /// `broker.version.fallback` (see [`SimpleConsumerConfig::broker_version_fallback`]).
    pub fn broker_version_fallback(mut self, release: BrokerVersionFallback) -> Self {
        self.config.broker_version_fallback = release;
        self
    }

    /// Checks the settings.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Missing`] without `metadata.broker.list`; [`ConfigError::Invalid`] for a
    /// malformed `metadata.broker.list` (every entry must be `host:port`), a `client.id` that
    /// [`gregor_net::config::validate_client_id`] refuses, a zero `socket.timeout.ms` or one
    /// not above `fetch.wait.max.ms`, a duration over `i32::MAX` ms, a
    /// `fetch.message.max.bytes` below [`MIN_FETCH_MESSAGE_MAX_BYTES`], a negative
    /// `fetch.min.bytes`, a `refresh.leader.max.retries` over `i32::MAX`, a
    /// `refresh.leader.backoff.max.ms` below `refresh.leader.backoff.ms`, and an auto-grow limit
    /// not above `fetch.message.max.bytes`.
    pub fn build(self) -> Result<SimpleConsumerConfig, ConfigError> {
        let c = self.config;
        gregor_net::config::validate_broker_list(&c.metadata_broker_list)?;
        gregor_config::validate_client_id(&c.client_id)?;
        check_ms("socket.timeout.ms", c.socket_timeout, 1)?;
        check_ms("fetch.wait.max.ms", c.fetch_wait_max, 0)?;
        check_ms("refresh.leader.backoff.ms", c.refresh_leader_backoff, 0)?;
        check_ms("refresh.leader.backoff.max.ms", c.refresh_leader_backoff_max, 0)?;
        if c.socket_timeout <= c.fetch_wait_max {
            return Err(ConfigError::invalid(
                "socket.timeout.ms",
                c.socket_timeout.as_millis(),
                format!("must exceed fetch.wait.max.ms ({} ms), or long polls time out", c.fetch_wait_max.as_millis()),
            ));
        }
        if c.fetch_message_max_bytes < MIN_FETCH_MESSAGE_MAX_BYTES {
            return Err(ConfigError::invalid(
                "fetch.message.max.bytes",
                c.fetch_message_max_bytes,
                format!(
                    "must be at least {MIN_FETCH_MESSAGE_MAX_BYTES} bytes, the smallest message with its offset and size"
                ),
            ));
        }
        check_count("fetch.min.bytes", c.fetch_min_bytes, 0)?;
        check_count("refresh.leader.max.retries", c.refresh_leader_max_retries, 0)?;
        if c.refresh_leader_backoff_max < c.refresh_leader_backoff {
            return Err(ConfigError::invalid(
                "refresh.leader.backoff.max.ms",
                c.refresh_leader_backoff_max.as_millis(),
                format!("must be at least refresh.leader.backoff.ms ({} ms)", c.refresh_leader_backoff.as_millis()),
            ));
        }
        if let Some(max) = c.fetch_message_auto_grow_max_bytes {
            if max <= c.fetch_message_max_bytes {
                return Err(ConfigError::invalid(
                    "fetch.message.auto.grow.max.bytes",
                    max,
                    format!("must exceed fetch.message.max.bytes ({}), or be 0 (off)", c.fetch_message_max_bytes),
                ));
            }
        }
        c.connection_config()?;
        if c.refresh_leader_backoff.is_zero() && c.refresh_leader_max_retries > 0 {
            tracing::warn!("refresh.leader.backoff.ms is 0: leader errors are retried without a pause");
        }
        if c.fetch_min_bytes > c.fetch_message_max_bytes && !c.fetch_wait_max.is_zero() {
            tracing::warn!(
                fetch_min_bytes = c.fetch_min_bytes,
                fetch_message_max_bytes = c.fetch_message_max_bytes,
                "fetch.min.bytes exceeds fetch.message.max.bytes: a one-partition fetch always waits fetch.wait.max.ms"
            );
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> SimpleConsumerConfigBuilder {
        SimpleConsumerConfig::builder().metadata_broker_list("k1:9092")
    }

    /// Holds the constants against the table in the module docs (Kafka 0.8.2's defaults).
    #[test]
    fn defaults_are_kafka_0_8_2s() {
        let c = base().build().unwrap();
        assert_eq!(c.metadata_broker_list(), "k1:9092");
        assert_eq!(c.client_id(), "");
        assert_eq!(c.socket_timeout(), Duration::from_millis(30_000));
        assert_eq!(c.fetch_message_max_bytes(), 1_048_576);
        assert_eq!(c.fetch_min_bytes(), 1);
        assert_eq!(c.fetch_wait_max(), Duration::from_millis(100));
        assert_eq!(c.refresh_leader_backoff(), Duration::from_millis(200));
        assert_eq!(c.refresh_leader_backoff_max(), Duration::from_millis(1000));
        assert_eq!(c.refresh_leader_max_retries(), 10);
        assert_eq!(c.fetch_message_auto_grow_max_bytes(), None);
        assert_eq!(MIN_FETCH_MESSAGE_MAX_BYTES, 26);
        let conn = c.connection_config().unwrap();
        assert_eq!((conn.client_id(), conn.request_timeout()), ("", Duration::from_secs(30)));
    }

    #[test]
    fn build_rejects_what_cannot_work() {
        let e = SimpleConsumerConfig::builder().build().unwrap_err();
        assert_eq!(e.to_string(), "missing required property metadata.broker.list");
        assert!(SimpleConsumerConfig::builder().metadata_broker_list("nohost").build().is_err());
        let e = base().socket_timeout(Duration::from_millis(100)).build().unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid value \"100\" for socket.timeout.ms: must exceed fetch.wait.max.ms (100 ms), or long polls time out"
        );
        let e = base().fetch_message_max_bytes(25).build().unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid value \"25\" for fetch.message.max.bytes: must be at least 26 bytes, the smallest message with \
             its offset and size"
        );
        assert!(base().fetch_min_bytes(-1).build().is_err());
        assert!(base().fetch_wait_max(Duration::from_secs(1 << 40)).build().is_err());
        assert!(base().refresh_leader_backoff_max(Duration::from_millis(10)).build().is_err());
        let e = base().fetch_message_auto_grow_max_bytes(Some(1024)).build().unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid value \"1024\" for fetch.message.auto.grow.max.bytes: must exceed fetch.message.max.bytes \
             (1048576), or be 0 (off)"
        );
        assert!(base().client_id("x".repeat(40_000)).build().is_err());
        let ok = base().fetch_message_max_bytes(10_240).fetch_message_auto_grow_max_bytes(Some(1 << 20)).build();
        assert_eq!(ok.unwrap().fetch_message_auto_grow_max_bytes(), Some(1 << 20));
    }

    #[test]
    fn properties_use_kafkas_names() {
        let c = SimpleConsumerConfig::from_properties([
            ("metadata.broker.list", "a:1,b:2"),
            ("client.id", "app"),
            ("socket.timeout.ms", "5000"),
            ("fetch.message.max.bytes", "10240"),
            ("fetch.min.bytes", "0"),
            ("fetch.wait.max.ms", "250"),
            ("refresh.leader.backoff.ms", "50"),
            ("refresh.leader.backoff.max.ms", "400"),
            ("refresh.leader.max.retries", "3"),
            ("fetch.message.auto.grow.max.bytes", "65536"),
        ])
        .unwrap();
        assert_eq!(c.metadata_broker_list(), "a:1,b:2");
        assert_eq!(c.client_id(), "app");
        assert_eq!(c.socket_timeout(), Duration::from_secs(5));
        assert_eq!((c.fetch_message_max_bytes(), c.fetch_min_bytes()), (10_240, 0));
        assert_eq!(c.fetch_wait_max(), Duration::from_millis(250));
        assert_eq!(c.refresh_leader_backoff(), Duration::from_millis(50));
        assert_eq!(c.refresh_leader_backoff_max(), Duration::from_millis(400));
        assert_eq!(c.refresh_leader_max_retries(), 3);
        assert_eq!(c.fetch_message_auto_grow_max_bytes(), Some(65_536));
        assert_eq!(c.to_builder().client_id("other").build().unwrap().client_id(), "other");
        let e = SimpleConsumerConfig::from_properties([("group.id", "g")]).unwrap_err();
        assert!(
            e.to_string().starts_with("unknown simple-consumer property \"group.id\"; known: metadata.broker.list, "),
            "{e}"
        );
        let e = SimpleConsumerConfig::from_properties([("fetch.wait.max.ms", "soon")]).unwrap_err();
        assert_eq!(e.to_string(), "invalid value \"soon\" for fetch.wait.max.ms: not an integer (0 to 2147483647)");
    }

    #[test]
    fn security_properties_reach_the_connections_and_secrets_stay_hidden() {
        let c = SimpleConsumerConfig::from_properties([
            ("metadata.broker.list", "a:1"),
            ("security.protocol", "ssl"),
            ("enable.ssl.certificate.verification", "false"),
        ])
        .unwrap();
        assert!(c.security().tls().is_some());
        assert_eq!(c.connection_config().unwrap().security(), *c.security());
        // to_properties reads back (no secret here), and plaintext adds nothing
        assert_eq!(SimpleConsumerConfig::from_properties(c.to_properties()).unwrap(), c);
        let plain = SimpleConsumerConfig::from_properties([("metadata.broker.list", "a:1")]).unwrap();
        assert_eq!(plain.to_properties().len(), PROPERTIES.len());
        let e = SimpleConsumerConfig::from_properties([
            ("metadata.broker.list", "a:1"),
            ("security.protocol", "SSL"),
            ("sasl.password", "reader-secret"),
        ])
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid value \"***\" for sasl.password: needs security.protocol SASL_PLAINTEXT or SASL_SSL \
             (security.protocol is SSL)"
        );
        let c = SimpleConsumerConfig::from_properties([
            ("metadata.broker.list", "a:1"),
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.username", "reader"),
            ("sasl.password", "reader-secret"),
        ])
        .unwrap();
        assert!(!format!("{c:?}").contains("reader-secret"));
        assert!(!format!("{:?}", c.to_properties()).contains("reader-secret"));
        assert!(!format!("{:?}", c.connection_config().unwrap()).contains("reader-secret"));
    }
}

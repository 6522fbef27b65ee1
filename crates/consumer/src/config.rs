//! [`ConsumerConfig`]: Kafka 0.8.2's high-level consumer properties, with 0.8.2's defaults.
//!
//! Every property of 0.8.2's `kafka.consumer.ConsumerConfig` that the connector uses is here,
//! spelled as Kafka spells it. Build one with [`ConsumerConfig::builder`] (setters are the
//! property names with dots as underscores, `.ms` dropped when the setter takes a
//! [`Duration`]) or from Kafka's property names with [`ConsumerConfig::from_properties`];
//! [`ConsumerConfig::to_properties`] writes them back.
//!
//! Validation: [`ConsumerConfigBuilder::build`] (which `from_properties` ends in) refuses every
//! value that cannot work with a [`ConfigError`] naming the property and the reason, e.g.
//! `invalid value "earliest" for auto.offset.reset: must be smallest or largest`. It applies
//! Kafka 0.8.2's `ConsumerConfig.validate` (`group.id` and `client.id` of ASCII letters and
//! digits, `.`, `_`, `-`; `auto.offset.reset`; `offsets.storage`; `socket.timeout.ms` at least
//! `fetch.wait.max.ms`) and more where 0.8.2 accepts a value that cannot work: millisecond,
//! count and size properties are Kafka `int`s (at most 2147483647), counts and sizes that size
//! a queue at least 1, `fetch.message.max.bytes` at least [`MIN_FETCH_MESSAGE_MAX_BYTES`],
//! `consumer.timeout.ms` -1 or more, `zookeeper.connect` a parseable
//! `host:port[,host:port...][/chroot]`, `partition.assignment.strategy` `range` or `roundrobin`
//! (0.8.2 silently uses range for anything else), `consumer.id` Kafka's characters (it becomes
//! part of a znode name). An unknown property name is [`ConfigError::UnknownProperty`], where
//! Kafka 0.8.2 only logs a warning.
//!
//! Security: `security.protocol` and the `ssl.*` and `sasl.*` properties are read beside
//! these by [`gregor_net::Security`] (see [`gregor_net::security`] for the table) into
//! [`ConsumerConfig::security`], which every broker connection of the consumer uses
//! (ZooKeeper connections stay as they are).

use std::time::Duration;

use gregor_config::{check_count, check_ms, check_name_chars, validate_client_id, INT_MAX};
use gregor_net::{BrokerVersionFallback, IsolationLevel, Security, SecurityProperties, SecurityProtocol};
use gregor_protocol::message::{ENTRY_HEADER_SIZE, MESSAGE_V0_OVERHEAD};

use crate::assignment::AssignmentStrategy;

/// `zookeeper.session.timeout.ms` default: 6000 ms.
pub const DEFAULT_ZOOKEEPER_SESSION_TIMEOUT_MS: u64 = 6000;
/// `zookeeper.connection.timeout.ms` default: 6000 ms.
pub const DEFAULT_ZOOKEEPER_CONNECTION_TIMEOUT_MS: u64 = 6000;
/// `zookeeper.sync.time.ms` default: 2000 ms.
pub const DEFAULT_ZOOKEEPER_SYNC_TIME_MS: u64 = 2000;
/// `socket.timeout.ms` default: 30 000 ms.
pub const DEFAULT_SOCKET_TIMEOUT_MS: u64 = 30_000;
/// `socket.receive.buffer.bytes` default: 64 KiB.
pub const DEFAULT_SOCKET_RECEIVE_BUFFER_BYTES: usize = 64 * 1024;
/// `fetch.message.max.bytes` default: 1 MiB.
pub const DEFAULT_FETCH_MESSAGE_MAX_BYTES: i32 = 1024 * 1024;
/// `num.consumer.fetchers` default: 1.
pub const DEFAULT_NUM_CONSUMER_FETCHERS: usize = 1;
/// `auto.commit.enable` default: true.
pub const DEFAULT_AUTO_COMMIT_ENABLE: bool = true;
/// `auto.commit.interval.ms` default: 60 000 ms.
pub const DEFAULT_AUTO_COMMIT_INTERVAL_MS: u64 = 60_000;
/// `queued.max.message.chunks` default: 2.
pub const DEFAULT_QUEUED_MAX_MESSAGE_CHUNKS: usize = 2;
/// `rebalance.max.retries` default: 4.
pub const DEFAULT_REBALANCE_MAX_RETRIES: u32 = 4;
/// `rebalance.backoff.ms` default: 2000 ms (0.8.2 defaults it to `zookeeper.sync.time.ms`).
pub const DEFAULT_REBALANCE_BACKOFF_MS: u64 = DEFAULT_ZOOKEEPER_SYNC_TIME_MS;
/// `refresh.leader.backoff.ms` default: 200 ms.
pub const DEFAULT_REFRESH_LEADER_BACKOFF_MS: u64 = 200;
/// `fetch.min.bytes` default: 1.
pub const DEFAULT_FETCH_MIN_BYTES: i32 = 1;
/// `fetch.wait.max.ms` default: 100 ms.
pub const DEFAULT_FETCH_WAIT_MAX_MS: u64 = 100;
/// `auto.offset.reset` default: largest.
pub const DEFAULT_AUTO_OFFSET_RESET: AutoOffsetReset = AutoOffsetReset::Largest;
/// `consumer.timeout.ms` default: -1 (block forever).
pub const DEFAULT_CONSUMER_TIMEOUT_MS: i64 = -1;
/// `exclude.internal.topics` default: true.
pub const DEFAULT_EXCLUDE_INTERNAL_TOPICS: bool = true;
/// `partition.assignment.strategy` default: range.
pub const DEFAULT_PARTITION_ASSIGNMENT_STRATEGY: AssignmentStrategy = AssignmentStrategy::Range;
/// `offsets.storage` default: zookeeper.
pub const DEFAULT_OFFSETS_STORAGE: OffsetsStorage = OffsetsStorage::Zookeeper;
/// `offsets.channel.backoff.ms` default: 1000 ms.
pub const DEFAULT_OFFSETS_CHANNEL_BACKOFF_MS: u64 = 1000;
/// `offsets.channel.socket.timeout.ms` default: 10 000 ms.
pub const DEFAULT_OFFSETS_CHANNEL_SOCKET_TIMEOUT_MS: u64 = 10_000;
/// `offsets.commit.max.retries` default: 5.
pub const DEFAULT_OFFSETS_COMMIT_MAX_RETRIES: u32 = 5;
/// `dual.commit.enabled` default: true (it only matters with `offsets.storage=kafka`).
pub const DEFAULT_DUAL_COMMIT_ENABLED: bool = true;
/// The smallest `fetch.message.max.bytes` accepted: an offset/size header and an empty
/// Message v0 (26 bytes). Below it not even the size of the next message comes back.
pub const MIN_FETCH_MESSAGE_MAX_BYTES: i32 = (ENTRY_HEADER_SIZE + MESSAGE_V0_OVERHEAD) as i32;

/// Every property [`ConsumerConfig::from_properties`] knows: all of Kafka 0.8.2's
/// `kafka.consumer.ConsumerConfig` (and its `ZKConfig`).
pub const PROPERTIES: &[&str] = &[
    "group.id",
    "consumer.id",
    "zookeeper.connect",
    "zookeeper.session.timeout.ms",
    "zookeeper.connection.timeout.ms",
    "zookeeper.sync.time.ms",
    "socket.timeout.ms",
    "socket.receive.buffer.bytes",
    "fetch.message.max.bytes",
    "num.consumer.fetchers",
    "auto.commit.enable",
    "auto.commit.interval.ms",
    "queued.max.message.chunks",
    "rebalance.max.retries",
    "rebalance.backoff.ms",
    "refresh.leader.backoff.ms",
    "fetch.min.bytes",
    "fetch.wait.max.ms",
    "auto.offset.reset",
    "consumer.timeout.ms",
    "exclude.internal.topics",
    "partition.assignment.strategy",
    "client.id",
    "offsets.storage",
    "offsets.channel.backoff.ms",
    "offsets.channel.socket.timeout.ms",
    "offsets.commit.max.retries",
    "dual.commit.enabled",
    "isolation.level",
    "api.version.request",
    "broker.version.fallback",
];

/// The client name in [`ConfigError::UnknownProperty`].
const CLIENT: &str = "consumer";

/// Today's Kafka consumer names [`ConsumerConfig::from_properties`] accepts for settings of
/// [`PROPERTIES`]: `enable.auto.commit`, `fetch.max.wait.ms`, `max.partition.fetch.bytes`, and
/// `auto.offset.reset`'s `earliest`/`latest` (for `smallest`/`largest`). Both names of one
/// setting with different values are an error. (`bootstrap.servers` belongs to the
/// broker-coordinated consumer, not this ZooKeeper-coordinated one.)
pub const MODERN_NAMES: &[gregor_config::Alias] = &[
    gregor_config::Alias { modern: "enable.auto.commit", classic: "auto.commit.enable", translate: None },
    gregor_config::Alias { modern: "fetch.max.wait.ms", classic: "fetch.wait.max.ms", translate: None },
    gregor_config::Alias { modern: "max.partition.fetch.bytes", classic: "fetch.message.max.bytes", translate: None },
];

/// `auto.offset.reset`: where to start when there is no committed offset, or it is out of range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoOffsetReset {
    /// `smallest`: the log start.
    Smallest,
    /// `largest`: the log end (only new messages).
    Largest,
}

impl AutoOffsetReset {
    /// Kafka's name: `smallest` or `largest`.
    pub fn as_str(self) -> &'static str {
        match self {
            AutoOffsetReset::Smallest => "smallest",
            AutoOffsetReset::Largest => "largest",
        }
    }
}

/// `offsets.storage`: where offsets are committed and read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffsetsStorage {
    /// `zookeeper`: `/consumers/G/offsets/T/P`.
    Zookeeper,
    /// `kafka`: OffsetCommit/OffsetFetch (v1 with Kafka 0.8.2, up to v7 as negotiated) at the
    /// coordinator found with ConsumerMetadata (FindCoordinator).
    Kafka,
}

impl OffsetsStorage {
    /// Kafka's name: `zookeeper` or `kafka`.
    pub fn as_str(self) -> &'static str {
        match self {
            OffsetsStorage::Zookeeper => "zookeeper",
            OffsetsStorage::Kafka => "kafka",
        }
    }
}

// Returned by `ConsumerConfigBuilder::build` and `ConsumerConfig::from_properties`: the one
// configuration error of every gregor client, from the configuration kit.
pub use gregor_config::ConfigError;

/// Kafka 0.8.2's high-level consumer configuration. See each builder setter for the
/// property, its default and its cost.
#[derive(Clone, Debug)]
pub struct ConsumerConfig {
    /// `group.id` (required).
    pub group_id: String,
    /// `consumer.id`: when set, the consumer id is `<group>_<consumer.id>`.
    pub consumer_id: Option<String>,
    /// `zookeeper.connect`: `host:port[,host:port][/chroot]` (required).
    pub zookeeper_connect: String,
    /// `zookeeper.session.timeout.ms`.
    pub zookeeper_session_timeout: Duration,
    /// `zookeeper.connection.timeout.ms`.
    pub zookeeper_connection_timeout: Duration,
    /// `zookeeper.sync.time.ms`.
    pub zookeeper_sync_time: Duration,
    /// `socket.timeout.ms`.
    pub socket_timeout: Duration,
    /// `socket.receive.buffer.bytes`.
    pub socket_receive_buffer_bytes: usize,
    /// `fetch.message.max.bytes`.
    pub fetch_message_max_bytes: i32,
    /// `num.consumer.fetchers`.
    pub num_consumer_fetchers: usize,
    /// `auto.commit.enable`.
    pub auto_commit_enable: bool,
    /// `auto.commit.interval.ms`.
    pub auto_commit_interval: Duration,
    /// `queued.max.message.chunks`.
    pub queued_max_message_chunks: usize,
    /// `rebalance.max.retries`.
    pub rebalance_max_retries: u32,
    /// `rebalance.backoff.ms`.
    pub rebalance_backoff: Duration,
    /// `refresh.leader.backoff.ms`.
    pub refresh_leader_backoff: Duration,
    /// `fetch.min.bytes`.
    pub fetch_min_bytes: i32,
    /// `fetch.wait.max.ms`.
    pub fetch_wait_max: Duration,
    /// `auto.offset.reset`.
    pub auto_offset_reset: AutoOffsetReset,
    /// `consumer.timeout.ms`: `None` is -1 (block forever).
    pub consumer_timeout: Option<Duration>,
    /// `exclude.internal.topics`.
    pub exclude_internal_topics: bool,
    /// `partition.assignment.strategy`.
    pub partition_assignment_strategy: AssignmentStrategy,
    /// `client.id` (defaults to the group id).
    pub client_id: String,
    /// `offsets.storage`.
    pub offsets_storage: OffsetsStorage,
    /// `offsets.channel.backoff.ms`.
    pub offsets_channel_backoff: Duration,
    /// `offsets.channel.socket.timeout.ms`.
    pub offsets_channel_socket_timeout: Duration,
    /// `offsets.commit.max.retries`.
    pub offsets_commit_max_retries: u32,
    /// `dual.commit.enabled`.
    pub dual_commit_enabled: bool,
    /// `isolation.level` (Kafka 0.11+): `read_committed` leaves out the records of aborted
    /// transactions and reads up to the last stable offset; default `read_uncommitted`.
    pub isolation_level: IsolationLevel,
    /// `api.version.request` (Kafka 0.10+, librdkafka): each connection asks its broker which
    /// versions it speaks, and fetches go out in the highest both know (records then carry
    /// timestamps and headers); a broker that does not answer (0.8/0.9) gets
    /// `broker.version.fallback`'s. Default: true.
    pub api_version_request: bool,
    /// `broker.version.fallback` (librdkafka): default 0.8.2.
    pub broker_version_fallback: BrokerVersionFallback,
    /// `security.protocol` with its `ssl.*` / `sasl.*` settings, for every broker connection.
    pub security: Security,
}

impl ConsumerConfig {
    /// A builder with every default.
    pub fn builder() -> ConsumerConfigBuilder {
        ConsumerConfigBuilder::default()
    }

    /// Reads Kafka's property names ([`PROPERTIES`]); values are trimmed, durations are in
    /// milliseconds, booleans and `offsets.storage` are read in any case (as Kafka does),
    /// `consumer.timeout.ms=-1` blocks forever. `security.protocol` and the `ssl.*` and
    /// `sasl.*` properties are read by [`gregor_net::Security::from_properties`].
    ///
    /// # Errors
    ///
    /// [`ConfigError::UnknownProperty`] for a name the consumer does not know,
    /// [`ConfigError::Invalid`] for a value that does not parse or is impossible (or a
    /// security setting [`gregor_net::Security::from_properties`] refuses),
    /// [`ConfigError::Missing`] without `group.id` or `zookeeper.connect`, and everything
    /// [`ConsumerConfigBuilder::build`] refuses.
    pub fn from_properties<I, K, V>(properties: I) -> Result<ConsumerConfig, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut b = ConsumerConfig::builder();
        let mut security = SecurityProperties::new();
        let properties = properties.into_iter().filter(|(k, v)| !security.take(k, v));
        for property in gregor_config::read_with_aliases(CLIENT, PROPERTIES, MODERN_NAMES, properties) {
            let p = property?;
            b =
                match p.name() {
                    "group.id" => b.group_id(p.value()),
                    "consumer.id" => b.consumer_id(p.value()),
                    "zookeeper.connect" => b.zookeeper_connect(p.value()),
                    "zookeeper.session.timeout.ms" => b.zookeeper_session_timeout(p.ms(0)?),
                    "zookeeper.connection.timeout.ms" => b.zookeeper_connection_timeout(p.ms(0)?),
                    "zookeeper.sync.time.ms" => b.zookeeper_sync_time(p.ms(0)?),
                    "socket.timeout.ms" => b.socket_timeout(p.ms(0)?),
                    "socket.receive.buffer.bytes" => b.socket_receive_buffer_bytes(p.int(1)?),
                    "fetch.message.max.bytes" => b.fetch_message_max_bytes(p.int(i32::MIN.into())?),
                    "num.consumer.fetchers" => b.num_consumer_fetchers(p.int(1)?),
                    "auto.commit.enable" => b.auto_commit_enable(p.bool()?),
                    "auto.commit.interval.ms" => b.auto_commit_interval(p.ms(0)?),
                    "queued.max.message.chunks" => b.queued_max_message_chunks(p.int(1)?),
                    "rebalance.max.retries" => b.rebalance_max_retries(p.int(0)?),
                    "rebalance.backoff.ms" => b.rebalance_backoff(p.ms(0)?),
                    "refresh.leader.backoff.ms" => b.refresh_leader_backoff(p.ms(0)?),
                    "fetch.min.bytes" => b.fetch_min_bytes(p.int(i32::MIN.into())?),
                    "fetch.wait.max.ms" => b.fetch_wait_max(p.ms(0)?),
                    "auto.offset.reset" => b.auto_offset_reset(p.choice(&[
                        ("smallest", AutoOffsetReset::Smallest),
                        ("largest", AutoOffsetReset::Largest),
                        // today's names for the same
                        ("earliest", AutoOffsetReset::Smallest),
                        ("latest", AutoOffsetReset::Largest),
                    ])?),
                    "consumer.timeout.ms" => {
                        match p
                            .int_between::<i64>(-1, INT_MAX)
                            .map_err(|_| p.invalid("must be -1 (block forever) or 0 to 2147483647"))?
                        {
                            -1 => b.consumer_timeout(None),
                            n => b.consumer_timeout(Some(Duration::from_millis(n.unsigned_abs()))),
                        }
                    }
                    "exclude.internal.topics" => b.exclude_internal_topics(p.bool()?),
                    "partition.assignment.strategy" => b.partition_assignment_strategy(p.choice(&[
                        ("range", AssignmentStrategy::Range),
                        ("roundrobin", AssignmentStrategy::RoundRobin),
                    ])?),
                    "client.id" => b.client_id(p.value()),
                    "offsets.storage" => b.offsets_storage(p.choice_ignore_case(&[
                        ("zookeeper", OffsetsStorage::Zookeeper),
                        ("kafka", OffsetsStorage::Kafka),
                    ])?),
                    "offsets.channel.backoff.ms" => b.offsets_channel_backoff(p.ms(0)?),
                    "offsets.channel.socket.timeout.ms" => b.offsets_channel_socket_timeout(p.ms(0)?),
                    "offsets.commit.max.retries" => b.offsets_commit_max_retries(p.int(0)?),
                    "dual.commit.enabled" => b.dual_commit_enabled(p.bool()?),
                    "isolation.level" => b.isolation_level(p.value().parse().map_err(|e: String| p.invalid(e))?),
                    "api.version.request" => b.api_version_request(p.bool()?),
                    "broker.version.fallback" => b.broker_version_fallback(
                        p.value().parse().map_err(|e: gregor_net::versions::InvalidFallback| p.invalid(e.0))?,
                    ),
                    _ => unreachable!("every name of PROPERTIES is handled"),
                };
        }
        b.security(security.build()?).build()
    }

    /// Every property of [`PROPERTIES`] with its value, in [`ConsumerConfig::from_properties`]'s
    /// syntax (`consumer.id` only when set): to log the settings in effect, or to read them
    /// back. The security properties follow unless the protocol is `PLAINTEXT`
    /// ([`Security::to_properties`]: secrets are `***`, so they do not read back).
    pub fn to_properties(&self) -> Vec<(&'static str, String)> {
        let ms = |d: Duration| d.as_millis().to_string();
        let mut props = vec![("group.id", self.group_id.clone())];
        if let Some(id) = &self.consumer_id {
            props.push(("consumer.id", id.clone()));
        }
        props.extend([
            ("zookeeper.connect", self.zookeeper_connect.clone()),
            ("zookeeper.session.timeout.ms", ms(self.zookeeper_session_timeout)),
            ("zookeeper.connection.timeout.ms", ms(self.zookeeper_connection_timeout)),
            ("zookeeper.sync.time.ms", ms(self.zookeeper_sync_time)),
            ("socket.timeout.ms", ms(self.socket_timeout)),
            ("socket.receive.buffer.bytes", self.socket_receive_buffer_bytes.to_string()),
            ("fetch.message.max.bytes", self.fetch_message_max_bytes.to_string()),
            ("num.consumer.fetchers", self.num_consumer_fetchers.to_string()),
            ("auto.commit.enable", self.auto_commit_enable.to_string()),
            ("auto.commit.interval.ms", ms(self.auto_commit_interval)),
            ("queued.max.message.chunks", self.queued_max_message_chunks.to_string()),
            ("rebalance.max.retries", self.rebalance_max_retries.to_string()),
            ("rebalance.backoff.ms", ms(self.rebalance_backoff)),
            ("refresh.leader.backoff.ms", ms(self.refresh_leader_backoff)),
            ("fetch.min.bytes", self.fetch_min_bytes.to_string()),
            ("fetch.wait.max.ms", ms(self.fetch_wait_max)),
            ("auto.offset.reset", self.auto_offset_reset.as_str().to_owned()),
            ("consumer.timeout.ms", self.consumer_timeout.map_or("-1".to_owned(), ms)),
            ("exclude.internal.topics", self.exclude_internal_topics.to_string()),
            ("partition.assignment.strategy", self.partition_assignment_strategy.as_str().to_owned()),
            ("client.id", self.client_id.clone()),
            ("offsets.storage", self.offsets_storage.as_str().to_owned()),
            ("offsets.channel.backoff.ms", ms(self.offsets_channel_backoff)),
            ("offsets.channel.socket.timeout.ms", ms(self.offsets_channel_socket_timeout)),
            ("offsets.commit.max.retries", self.offsets_commit_max_retries.to_string()),
            ("dual.commit.enabled", self.dual_commit_enabled.to_string()),
            ("isolation.level", self.isolation_level.to_string()),
            ("api.version.request", self.api_version_request.to_string()),
            ("broker.version.fallback", self.broker_version_fallback.to_string()),
        ]);
        if self.security.protocol() != SecurityProtocol::Plaintext {
            props.extend(self.security.to_properties());
        }
        props
    }
}

/// Builds a [`ConsumerConfig`]; every setter names its Kafka property and default.
#[derive(Clone, Debug)]
pub struct ConsumerConfigBuilder {
    group_id: Option<String>,
    consumer_id: Option<String>,
    zookeeper_connect: Option<String>,
    client_id: Option<String>,
    rebalance_backoff: Option<Duration>,
    security: Security,
    c: Defaults,
}

#[derive(Clone, Debug)]
struct Defaults {
    zookeeper_session_timeout: Duration,
    zookeeper_connection_timeout: Duration,
    zookeeper_sync_time: Duration,
    socket_timeout: Duration,
    socket_receive_buffer_bytes: usize,
    fetch_message_max_bytes: i32,
    num_consumer_fetchers: usize,
    auto_commit_enable: bool,
    auto_commit_interval: Duration,
    queued_max_message_chunks: usize,
    rebalance_max_retries: u32,
    refresh_leader_backoff: Duration,
    fetch_min_bytes: i32,
    fetch_wait_max: Duration,
    auto_offset_reset: AutoOffsetReset,
    consumer_timeout: Option<Duration>,
    exclude_internal_topics: bool,
    partition_assignment_strategy: AssignmentStrategy,
    offsets_storage: OffsetsStorage,
    offsets_channel_backoff: Duration,
    offsets_channel_socket_timeout: Duration,
    offsets_commit_max_retries: u32,
    dual_commit_enabled: bool,
    isolation_level: IsolationLevel,
    api_version_request: bool,
    broker_version_fallback: BrokerVersionFallback,
}

impl Default for ConsumerConfigBuilder {
    fn default() -> Self {
        let ms = Duration::from_millis;
        ConsumerConfigBuilder {
            group_id: None,
            consumer_id: None,
            zookeeper_connect: None,
            client_id: None,
            rebalance_backoff: None,
            security: Security::plaintext(),
            c: Defaults {
                zookeeper_session_timeout: ms(DEFAULT_ZOOKEEPER_SESSION_TIMEOUT_MS),
                zookeeper_connection_timeout: ms(DEFAULT_ZOOKEEPER_CONNECTION_TIMEOUT_MS),
                zookeeper_sync_time: ms(DEFAULT_ZOOKEEPER_SYNC_TIME_MS),
                socket_timeout: ms(DEFAULT_SOCKET_TIMEOUT_MS),
                socket_receive_buffer_bytes: DEFAULT_SOCKET_RECEIVE_BUFFER_BYTES,
                fetch_message_max_bytes: DEFAULT_FETCH_MESSAGE_MAX_BYTES,
                num_consumer_fetchers: DEFAULT_NUM_CONSUMER_FETCHERS,
                auto_commit_enable: DEFAULT_AUTO_COMMIT_ENABLE,
                auto_commit_interval: ms(DEFAULT_AUTO_COMMIT_INTERVAL_MS),
                queued_max_message_chunks: DEFAULT_QUEUED_MAX_MESSAGE_CHUNKS,
                rebalance_max_retries: DEFAULT_REBALANCE_MAX_RETRIES,
                refresh_leader_backoff: ms(DEFAULT_REFRESH_LEADER_BACKOFF_MS),
                fetch_min_bytes: DEFAULT_FETCH_MIN_BYTES,
                fetch_wait_max: ms(DEFAULT_FETCH_WAIT_MAX_MS),
                auto_offset_reset: DEFAULT_AUTO_OFFSET_RESET,
                consumer_timeout: None,
                exclude_internal_topics: DEFAULT_EXCLUDE_INTERNAL_TOPICS,
                partition_assignment_strategy: DEFAULT_PARTITION_ASSIGNMENT_STRATEGY,
                offsets_storage: DEFAULT_OFFSETS_STORAGE,
                offsets_channel_backoff: ms(DEFAULT_OFFSETS_CHANNEL_BACKOFF_MS),
                offsets_channel_socket_timeout: ms(DEFAULT_OFFSETS_CHANNEL_SOCKET_TIMEOUT_MS),
                offsets_commit_max_retries: DEFAULT_OFFSETS_COMMIT_MAX_RETRIES,
                dual_commit_enabled: DEFAULT_DUAL_COMMIT_ENABLED,
                isolation_level: IsolationLevel::ReadUncommitted,
                api_version_request: gregor_net::ConnectionConfig::default().api_version_request(),
                broker_version_fallback: BrokerVersionFallback::DEFAULT,
            },
        }
    }
}

macro_rules! setter {
    ($(#[$doc:meta])* $name:ident: $ty:ty) => {
        $(#[$doc])*
        pub fn $name(mut self, value: $ty) -> Self {
            self.c.$name = value;
            self
        }
    };
}

impl ConsumerConfigBuilder {
    /// `group.id` (required): the consumer group.
    pub fn group_id(mut self, v: impl Into<String>) -> Self {
        self.group_id = Some(v.into());
        self
    }
    /// `consumer.id`: the consumer id becomes `<group>_<consumer.id>`; by default it is
    /// `<group>_<host>-<ms>-<8 hex>`. **Warning:** two live consumers with the same id collide.
    pub fn consumer_id(mut self, v: impl Into<String>) -> Self {
        self.consumer_id = Some(v.into());
        self
    }
    /// `zookeeper.connect` (required): `host:port[,host:port...][/chroot]`.
    pub fn zookeeper_connect(mut self, v: impl Into<String>) -> Self {
        self.zookeeper_connect = Some(v.into());
        self
    }
    /// `client.id`: the client id of requests; defaults to the group id.
    pub fn client_id(mut self, v: impl Into<String>) -> Self {
        self.client_id = Some(v.into());
        self
    }
    /// `rebalance.backoff.ms`: pause between rebalance attempts (jittered); default
    /// [`DEFAULT_REBALANCE_BACKOFF_MS`] (0.8.2 defaults it to `zookeeper.sync.time.ms`). An
    /// attempt that failed on a partition another member owns retries as soon as that member
    /// releases it, without waiting out the pause (and without counting against
    /// `rebalance.max.retries`).
    pub fn rebalance_backoff(mut self, v: Duration) -> Self {
        self.rebalance_backoff = Some(v);
        self
    }
    setter!(
        /// `zookeeper.session.timeout.ms`, default [`DEFAULT_ZOOKEEPER_SESSION_TIMEOUT_MS`]: a
        /// consumer silent this long loses its registration and partitions.
        zookeeper_session_timeout: Duration
    );
    setter!(
        /// `zookeeper.connection.timeout.ms`, default [`DEFAULT_ZOOKEEPER_CONNECTION_TIMEOUT_MS`].
        zookeeper_connection_timeout: Duration
    );
    setter!(
        /// `zookeeper.sync.time.ms`, default [`DEFAULT_ZOOKEEPER_SYNC_TIME_MS`].
        zookeeper_sync_time: Duration
    );
    setter!(
        /// `socket.timeout.ms`, default [`DEFAULT_SOCKET_TIMEOUT_MS`]; must be at least
        /// `fetch.wait.max.ms`.
        socket_timeout: Duration
    );
    setter!(
        /// `socket.receive.buffer.bytes`, default [`DEFAULT_SOCKET_RECEIVE_BUFFER_BYTES`].
        socket_receive_buffer_bytes: usize
    );
    setter!(
        /// `fetch.message.max.bytes`, default [`DEFAULT_FETCH_MESSAGE_MAX_BYTES`]: bytes asked
        /// per partition per fetch; a larger message is an error on its stream, repeated while
        /// its partition stays stuck on it (as in Kafka 0.8.2) until a connector with a larger
        /// value reads it. Cost: up to this many bytes per queued chunk.
        fetch_message_max_bytes: i32
    );
    setter!(
        /// `num.consumer.fetchers`, default [`DEFAULT_NUM_CONSUMER_FETCHERS`]. Accepted for
        /// compatibility, but gregor always runs one concurrent fetch task per leader broker
        /// (Java's fetcher threads are per broker too; this number only split them further).
        num_consumer_fetchers: usize
    );
    setter!(
        /// `auto.commit.enable`, default [`DEFAULT_AUTO_COMMIT_ENABLE`]. Disabled, the app must
        /// call `commit_offsets`.
        auto_commit_enable: bool
    );
    setter!(
        /// `auto.commit.interval.ms`, default [`DEFAULT_AUTO_COMMIT_INTERVAL_MS`]: the window of
        /// redelivery after a crash.
        auto_commit_interval: Duration
    );
    setter!(
        /// `queued.max.message.chunks`, default [`DEFAULT_QUEUED_MAX_MESSAGE_CHUNKS`]: fetched
        /// chunks (one partition's messages from one fetch) buffered per stream, as Java's
        /// per-stream queue. Cost: up to `(streams x this + owned partitions) x
        /// fetch.message.max.bytes` of prefetched data in all (a chunk waiting for room is held
        /// by its fetcher, one per partition at most).
        queued_max_message_chunks: usize
    );
    setter!(
        /// `rebalance.max.retries`, default [`DEFAULT_REBALANCE_MAX_RETRIES`].
        rebalance_max_retries: u32
    );
    setter!(
        /// `refresh.leader.backoff.ms`, default [`DEFAULT_REFRESH_LEADER_BACKOFF_MS`].
        refresh_leader_backoff: Duration
    );
    setter!(
        /// `fetch.min.bytes`, default [`DEFAULT_FETCH_MIN_BYTES`].
        fetch_min_bytes: i32
    );
    setter!(
        /// `fetch.wait.max.ms`, default [`DEFAULT_FETCH_WAIT_MAX_MS`]: the broker's long poll.
        fetch_wait_max: Duration
    );
    setter!(
        /// `auto.offset.reset`, default [`DEFAULT_AUTO_OFFSET_RESET`].
        auto_offset_reset: AutoOffsetReset
    );
    setter!(
        /// `consumer.timeout.ms`, default `None` ([`DEFAULT_CONSUMER_TIMEOUT_MS`] = -1, block
        /// forever): how long a stream's `next` waits before failing with a timeout.
        consumer_timeout: Option<Duration>
    );
    setter!(
        /// `exclude.internal.topics`, default [`DEFAULT_EXCLUDE_INTERNAL_TOPICS`]: filters
        /// never match `__consumer_offsets`.
        exclude_internal_topics: bool
    );
    setter!(
        /// `partition.assignment.strategy`, default [`DEFAULT_PARTITION_ASSIGNMENT_STRATEGY`].
        partition_assignment_strategy: AssignmentStrategy
    );
    setter!(
        /// `offsets.storage`, default [`DEFAULT_OFFSETS_STORAGE`].
        offsets_storage: OffsetsStorage
    );
    setter!(
        /// `offsets.channel.backoff.ms`, default [`DEFAULT_OFFSETS_CHANNEL_BACKOFF_MS`].
        offsets_channel_backoff: Duration
    );
    setter!(
        /// `offsets.channel.socket.timeout.ms`, default
        /// [`DEFAULT_OFFSETS_CHANNEL_SOCKET_TIMEOUT_MS`].
        offsets_channel_socket_timeout: Duration
    );
    setter!(
        /// `offsets.commit.max.retries`, default [`DEFAULT_OFFSETS_COMMIT_MAX_RETRIES`].
        offsets_commit_max_retries: u32
    );
    setter!(
        /// `dual.commit.enabled`, default [`DEFAULT_DUAL_COMMIT_ENABLED`]: with
        /// `offsets.storage=kafka`, also commit to ZooKeeper, and read the max of both.
        dual_commit_enabled: bool
    );
    setter!(
        /// `isolation.level`, default `read_uncommitted` (see [`ConsumerConfig::isolation_level`]).
        isolation_level: IsolationLevel
    );
    setter!(
        /// `api.version.request`, default true (see
        /// [`ConsumerConfig::api_version_request`]).
        api_version_request: bool
    );
    setter!(
        /// `broker.version.fallback`, default 0.8.2.
        broker_version_fallback: BrokerVersionFallback
    );

    /// `security.protocol` and the `ssl.*` / `sasl.*` settings of every broker connection, as
    /// [`gregor_net::Security`] (TLS settings, SASL credentials). Default: plaintext.
    pub fn security(mut self, security: Security) -> Self {
        self.security = security;
        self
    }

    /// Validates and builds.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Missing`] without `group.id` or `zookeeper.connect` (or with only spaces
    /// in `zookeeper.connect`); [`ConfigError::Invalid`] for impossible values, as the
    /// [module docs](self) list them.
    pub fn build(self) -> Result<ConsumerConfig, ConfigError> {
        let group_id = self.group_id.ok_or(ConfigError::missing("group.id"))?;
        if group_id.is_empty() {
            return Err(ConfigError::invalid("group.id", "", "must not be empty"));
        }
        check_name_chars("group.id", &group_id)?;
        if let Some(id) = &self.consumer_id {
            if id.is_empty() {
                return Err(ConfigError::invalid(
                    "consumer.id",
                    "",
                    "must not be empty (leave it unset for a generated id)",
                ));
            }
            check_name_chars("consumer.id", id)?;
        }
        let zookeeper_connect = match self.zookeeper_connect {
            Some(connect) if !connect.trim().is_empty() => connect,
            _ => return Err(ConfigError::missing("zookeeper.connect")),
        };
        gregor_zk::validate_connect_string(&zookeeper_connect).map_err(|e| match e {
            gregor_zk::Error::InvalidConnectString { reason, .. } => {
                ConfigError::invalid("zookeeper.connect", &zookeeper_connect, reason)
            }
            other => ConfigError::invalid("zookeeper.connect", &zookeeper_connect, other.to_string()),
        })?;
        let c = self.c;
        let min_session = u64::try_from(gregor_zk::MIN_SESSION_TIMEOUT.as_millis()).unwrap_or(u64::MAX);
        check_ms("zookeeper.session.timeout.ms", c.zookeeper_session_timeout, min_session)?;
        check_ms("zookeeper.connection.timeout.ms", c.zookeeper_connection_timeout, 1)?;
        check_ms("zookeeper.sync.time.ms", c.zookeeper_sync_time, 0)?;
        check_ms("socket.timeout.ms", c.socket_timeout, 1)?;
        check_count("socket.receive.buffer.bytes", c.socket_receive_buffer_bytes, 1)?;
        if c.fetch_message_max_bytes < MIN_FETCH_MESSAGE_MAX_BYTES {
            return Err(ConfigError::invalid(
                "fetch.message.max.bytes",
                c.fetch_message_max_bytes,
                format!(
                    "must be at least {MIN_FETCH_MESSAGE_MAX_BYTES} bytes, the smallest message with its offset and size"
                ),
            ));
        }
        check_count("num.consumer.fetchers", c.num_consumer_fetchers, 1)?;
        check_ms("auto.commit.interval.ms", c.auto_commit_interval, 0)?;
        if c.auto_commit_enable && c.auto_commit_interval.is_zero() {
            return Err(ConfigError::invalid(
                "auto.commit.interval.ms",
                0,
                "must be at least 1 when auto.commit.enable=true",
            ));
        }
        check_count("queued.max.message.chunks", c.queued_max_message_chunks, 1)?;
        check_count("rebalance.max.retries", c.rebalance_max_retries, 0)?;
        if let Some(backoff) = self.rebalance_backoff {
            check_ms("rebalance.backoff.ms", backoff, 0)?;
        }
        check_ms("refresh.leader.backoff.ms", c.refresh_leader_backoff, 0)?;
        check_count("fetch.min.bytes", c.fetch_min_bytes, 0)?;
        check_ms("fetch.wait.max.ms", c.fetch_wait_max, 0)?;
        if c.socket_timeout < c.fetch_wait_max {
            return Err(ConfigError::invalid(
                "socket.timeout.ms",
                c.socket_timeout.as_millis(),
                format!(
                    "must be at least fetch.wait.max.ms ({} ms), or every long poll times out",
                    c.fetch_wait_max.as_millis()
                ),
            ));
        }
        if let Some(timeout) = c.consumer_timeout {
            check_ms("consumer.timeout.ms", timeout, 0)?;
        }
        let client_id = self.client_id.unwrap_or_else(|| group_id.clone());
        validate_client_id(&client_id)?;
        check_ms("offsets.channel.backoff.ms", c.offsets_channel_backoff, 0)?;
        check_ms("offsets.channel.socket.timeout.ms", c.offsets_channel_socket_timeout, 1)?;
        check_count("offsets.commit.max.retries", c.offsets_commit_max_retries, 0)?;
        if c.rebalance_max_retries == 0 {
            tracing::warn!("rebalance.max.retries=0: a single conflict leaves the consumer without partitions until the next change");
        }
        if c.fetch_min_bytes > c.fetch_message_max_bytes && !c.fetch_wait_max.is_zero() {
            tracing::warn!(
                fetch_min_bytes = c.fetch_min_bytes,
                fetch_message_max_bytes = c.fetch_message_max_bytes,
                "fetch.min.bytes exceeds fetch.message.max.bytes: a fetch of one partition always waits fetch.wait.max.ms"
            );
        }
        Ok(ConsumerConfig {
            group_id,
            consumer_id: self.consumer_id,
            zookeeper_connect,
            zookeeper_session_timeout: c.zookeeper_session_timeout,
            zookeeper_connection_timeout: c.zookeeper_connection_timeout,
            zookeeper_sync_time: c.zookeeper_sync_time,
            socket_timeout: c.socket_timeout,
            socket_receive_buffer_bytes: c.socket_receive_buffer_bytes,
            fetch_message_max_bytes: c.fetch_message_max_bytes,
            num_consumer_fetchers: c.num_consumer_fetchers,
            auto_commit_enable: c.auto_commit_enable,
            auto_commit_interval: c.auto_commit_interval,
            queued_max_message_chunks: c.queued_max_message_chunks,
            rebalance_max_retries: c.rebalance_max_retries,
            rebalance_backoff: self.rebalance_backoff.unwrap_or(c.zookeeper_sync_time),
            refresh_leader_backoff: c.refresh_leader_backoff,
            fetch_min_bytes: c.fetch_min_bytes,
            fetch_wait_max: c.fetch_wait_max,
            auto_offset_reset: c.auto_offset_reset,
            consumer_timeout: c.consumer_timeout,
            exclude_internal_topics: c.exclude_internal_topics,
            partition_assignment_strategy: c.partition_assignment_strategy,
            client_id,
            offsets_storage: c.offsets_storage,
            offsets_channel_backoff: c.offsets_channel_backoff,
            offsets_channel_socket_timeout: c.offsets_channel_socket_timeout,
            offsets_commit_max_retries: c.offsets_commit_max_retries,
            dual_commit_enabled: c.dual_commit_enabled,
            isolation_level: c.isolation_level,
            api_version_request: c.api_version_request,
            broker_version_fallback: c.broker_version_fallback,
            security: self.security,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table of Kafka 0.8.2's documentation ("Important configuration properties for the
    /// high-level consumer"), value by value.
    #[test]
    fn defaults_match_kafka_0_8_2() {
        assert_eq!(DEFAULT_ZOOKEEPER_SESSION_TIMEOUT_MS, 6000);
        assert_eq!(DEFAULT_ZOOKEEPER_CONNECTION_TIMEOUT_MS, 6000);
        assert_eq!(DEFAULT_ZOOKEEPER_SYNC_TIME_MS, 2000);
        assert_eq!(DEFAULT_SOCKET_TIMEOUT_MS, 30 * 1000);
        assert_eq!(DEFAULT_SOCKET_RECEIVE_BUFFER_BYTES, 64 * 1024);
        assert_eq!(DEFAULT_FETCH_MESSAGE_MAX_BYTES, 1024 * 1024);
        assert_eq!(DEFAULT_NUM_CONSUMER_FETCHERS, 1);
        const { assert!(DEFAULT_AUTO_COMMIT_ENABLE) };
        assert_eq!(DEFAULT_AUTO_COMMIT_INTERVAL_MS, 60 * 1000);
        assert_eq!(DEFAULT_QUEUED_MAX_MESSAGE_CHUNKS, 2);
        assert_eq!(DEFAULT_REBALANCE_MAX_RETRIES, 4);
        assert_eq!(DEFAULT_FETCH_MIN_BYTES, 1);
        assert_eq!(DEFAULT_FETCH_WAIT_MAX_MS, 100);
        assert_eq!(DEFAULT_REBALANCE_BACKOFF_MS, 2000);
        assert_eq!(DEFAULT_REFRESH_LEADER_BACKOFF_MS, 200);
        assert_eq!(DEFAULT_AUTO_OFFSET_RESET, AutoOffsetReset::Largest);
        assert_eq!(DEFAULT_CONSUMER_TIMEOUT_MS, -1);
        const { assert!(DEFAULT_EXCLUDE_INTERNAL_TOPICS) };
        assert_eq!(DEFAULT_PARTITION_ASSIGNMENT_STRATEGY, AssignmentStrategy::Range);
        assert_eq!(DEFAULT_OFFSETS_STORAGE, OffsetsStorage::Zookeeper);
        assert_eq!(DEFAULT_OFFSETS_CHANNEL_BACKOFF_MS, 1000);
        assert_eq!(DEFAULT_OFFSETS_CHANNEL_SOCKET_TIMEOUT_MS, 10000);
        assert_eq!(DEFAULT_OFFSETS_COMMIT_MAX_RETRIES, 5);
        const { assert!(DEFAULT_DUAL_COMMIT_ENABLED) };
    }

    #[test]
    fn builder_defaults() {
        let c = ConsumerConfig::builder().group_id("g").zookeeper_connect("127.0.0.1:2181/k").build().unwrap();
        assert_eq!(c.client_id, "g");
        assert_eq!(c.rebalance_backoff, Duration::from_millis(2000));
        assert_eq!(c.consumer_timeout, None);
        assert_eq!(c.fetch_message_max_bytes, 1 << 20);
        assert_eq!(c.zookeeper_session_timeout, Duration::from_secs(6));
        // rebalance.backoff.ms follows zookeeper.sync.time.ms unless set
        let c = ConsumerConfig::builder()
            .group_id("g")
            .zookeeper_connect("z")
            .zookeeper_sync_time(Duration::from_millis(500))
            .build()
            .unwrap();
        assert_eq!(c.rebalance_backoff, Duration::from_millis(500));
    }

    #[test]
    fn from_properties_reads_every_name() {
        let props = [
            ("group.id", "grp"),
            ("consumer.id", "me"),
            ("zookeeper.connect", "h:1/chroot"),
            ("zookeeper.session.timeout.ms", "7000"),
            ("zookeeper.connection.timeout.ms", "7001"),
            ("zookeeper.sync.time.ms", "100"),
            ("socket.timeout.ms", "5000"),
            ("socket.receive.buffer.bytes", "1000"),
            ("fetch.message.max.bytes", "2048"),
            ("num.consumer.fetchers", "3"),
            ("auto.commit.enable", "false"),
            ("auto.commit.interval.ms", "10"),
            ("queued.max.message.chunks", "7"),
            ("rebalance.max.retries", "9"),
            ("rebalance.backoff.ms", "11"),
            ("refresh.leader.backoff.ms", "12"),
            ("fetch.min.bytes", "13"),
            ("fetch.wait.max.ms", "14"),
            ("auto.offset.reset", "smallest"),
            ("consumer.timeout.ms", "15"),
            ("exclude.internal.topics", "false"),
            ("partition.assignment.strategy", "roundrobin"),
            ("client.id", "cli"),
            ("offsets.storage", "kafka"),
            ("offsets.channel.backoff.ms", "16"),
            ("offsets.channel.socket.timeout.ms", "17"),
            ("offsets.commit.max.retries", "18"),
            ("dual.commit.enabled", "false"),
        ];
        let c = ConsumerConfig::from_properties(props).unwrap();
        let ms = Duration::from_millis;
        assert_eq!(c.group_id, "grp");
        assert_eq!(c.consumer_id.as_deref(), Some("me"));
        assert_eq!(c.zookeeper_connect, "h:1/chroot");
        assert_eq!(c.zookeeper_session_timeout, ms(7000));
        assert_eq!(c.zookeeper_connection_timeout, ms(7001));
        assert_eq!(c.zookeeper_sync_time, ms(100));
        assert_eq!(c.socket_timeout, ms(5000));
        assert_eq!(c.socket_receive_buffer_bytes, 1000);
        assert_eq!(c.fetch_message_max_bytes, 2048);
        assert_eq!(c.num_consumer_fetchers, 3);
        assert!(!c.auto_commit_enable);
        assert_eq!(c.auto_commit_interval, ms(10));
        assert_eq!(c.queued_max_message_chunks, 7);
        assert_eq!(c.rebalance_max_retries, 9);
        assert_eq!(c.rebalance_backoff, ms(11));
        assert_eq!(c.refresh_leader_backoff, ms(12));
        assert_eq!(c.fetch_min_bytes, 13);
        assert_eq!(c.fetch_wait_max, ms(14));
        assert_eq!(c.auto_offset_reset, AutoOffsetReset::Smallest);
        assert_eq!(c.consumer_timeout, Some(ms(15)));
        assert!(!c.exclude_internal_topics);
        assert_eq!(c.partition_assignment_strategy, AssignmentStrategy::RoundRobin);
        assert_eq!(c.client_id, "cli");
        assert_eq!(c.offsets_storage, OffsetsStorage::Kafka);
        assert_eq!(c.offsets_channel_backoff, ms(16));
        assert_eq!(c.offsets_channel_socket_timeout, ms(17));
        assert_eq!(c.offsets_commit_max_retries, 18);
        assert!(!c.dual_commit_enabled);
        let c = ConsumerConfig::from_properties([
            ("group.id", "g"),
            ("zookeeper.connect", "z"),
            ("consumer.timeout.ms", "-1"),
        ])
        .unwrap();
        assert_eq!(c.consumer_timeout, None);
    }

    #[test]
    fn rejects_bad_values() {
        let base = [("group.id", "g"), ("zookeeper.connect", "z")];
        let with =
            |k: &'static str, v: &'static str| ConsumerConfig::from_properties(base.iter().copied().chain([(k, v)]));
        assert!(matches!(
            with("auto.offset.reset", "oldest"),
            Err(ConfigError::Invalid { property: "auto.offset.reset", .. })
        ));
        // today's names for smallest and largest are read
        assert_eq!(with("auto.offset.reset", "earliest").unwrap().auto_offset_reset, AutoOffsetReset::Smallest);
        assert_eq!(with("auto.offset.reset", "latest").unwrap().auto_offset_reset, AutoOffsetReset::Largest);
        // and today's property names, which may not contradict the classic ones
        assert!(!with("enable.auto.commit", "false").unwrap().auto_commit_enable);
        let both = ConsumerConfig::from_properties(
            base.iter().copied().chain([("auto.commit.enable", "true"), ("enable.auto.commit", "false")]),
        );
        assert!(matches!(both, Err(ConfigError::Conflict { .. })), "{both:?}");
        assert!(matches!(
            with("fetch.wait.max.ms", "40000"),
            Err(ConfigError::Invalid { property: "socket.timeout.ms", .. })
        ));
        assert!(matches!(with("offsets.storage", "db"), Err(ConfigError::Invalid { property: "offsets.storage", .. })));
        assert!(matches!(with("partition.assignment.strategy", "sticky"), Err(ConfigError::Invalid { .. })));
        assert!(matches!(with("auto.commit.enable", "yes"), Err(ConfigError::Invalid { .. })));
        assert!(matches!(with("num.consumer.fetchers", "x"), Err(ConfigError::Invalid { .. })));
        assert!(matches!(with("bogus.prop", "1"), Err(ConfigError::UnknownProperty { client: "consumer", .. })));
        assert!(matches!(
            ConsumerConfig::from_properties([("group.id", "g")]),
            Err(ConfigError::Missing { property: "zookeeper.connect" })
        ));
        assert!(matches!(
            ConsumerConfig::from_properties([("zookeeper.connect", "z")]),
            Err(ConfigError::Missing { property: "group.id" })
        ));
        let e = with("fetch.wait.max.ms", "40000").unwrap_err().to_string();
        assert_eq!(
            e,
            "invalid value \"30000\" for socket.timeout.ms: must be at least fetch.wait.max.ms (40000 ms), or every \
             long poll times out"
        );
    }

    #[test]
    fn security_properties_are_read_beside_the_consumers_and_secrets_stay_hidden() {
        let base = [("group.id", "g"), ("zookeeper.connect", "h:1")];
        let c = ConsumerConfig::from_properties(base.into_iter().chain([
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanisms", "SCRAM-SHA-512"),
            ("sasl.username", "member"),
            ("sasl.password", "member-secret"),
        ]))
        .unwrap();
        assert_eq!(c.security.protocol(), SecurityProtocol::SaslPlaintext);
        assert!(!format!("{c:?}").contains("member-secret"));
        let props = c.to_properties();
        assert!(props.contains(&("sasl.password", "***".to_owned())), "{props:?}");
        let plain = ConsumerConfig::from_properties(base).unwrap();
        assert!(plain.to_properties().iter().all(|(k, _)| !k.starts_with("security.")));
        let e = ConsumerConfig::from_properties(base.into_iter().chain([("ssl.ca.location", "/ca.pem")])).unwrap_err();
        assert_eq!(e.property(), "ssl.ca.location");
        let s =
            Security::from_properties([("security.protocol", "SSL"), ("enable.ssl.certificate.verification", "false")])
                .unwrap();
        let c = ConsumerConfig::builder().group_id("g").zookeeper_connect("h:1").security(s.clone()).build().unwrap();
        assert_eq!(c.security, s);
    }
}

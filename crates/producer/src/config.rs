//! Producer settings, named after Kafka 0.8.2's producer properties, with 0.8.2's defaults.
//!
//! | setter | Kafka property | default (0.8.2) |
//! |---|---|---|
//! | [`metadata_broker_list`](ProducerConfigBuilder::metadata_broker_list) | `metadata.broker.list` | required |
//! | [`producer_type`](ProducerConfigBuilder::producer_type) | `producer.type` | `sync` ([`DEFAULT_PRODUCER_TYPE`]) |
//! | [`request_required_acks`](ProducerConfigBuilder::request_required_acks) | `request.required.acks` | `0` ([`DEFAULT_REQUEST_REQUIRED_ACKS`]) |
//! | [`request_timeout`](ProducerConfigBuilder::request_timeout) | `request.timeout.ms` | `10000` ([`DEFAULT_REQUEST_TIMEOUT`]) |
//! | [`queue_buffering_max`](ProducerConfigBuilder::queue_buffering_max) | `queue.buffering.max.ms` | `5000` ([`DEFAULT_QUEUE_BUFFERING_MAX`]) |
//! | [`queue_buffering_max_messages`](ProducerConfigBuilder::queue_buffering_max_messages) | `queue.buffering.max.messages` | `10000` ([`DEFAULT_QUEUE_BUFFERING_MAX_MESSAGES`]) |
//! | [`queue_buffering_max_bytes`](ProducerConfigBuilder::queue_buffering_max_bytes) | `queue.buffering.max.bytes` (not 0.8.2's; Java's `buffer.memory`, librdkafka's `queue.buffering.max.kbytes` in bytes) | `0` = none: only the message bound |
//! | [`queue_enqueue_timeout`](ProducerConfigBuilder::queue_enqueue_timeout) | `queue.enqueue.timeout.ms` | `-1` = block ([`DEFAULT_QUEUE_ENQUEUE_TIMEOUT`]) |
//! | [`batch_num_messages`](ProducerConfigBuilder::batch_num_messages) | `batch.num.messages` | `200` ([`DEFAULT_BATCH_NUM_MESSAGES`]) |
//! | [`batch_size`](ProducerConfigBuilder::batch_size) | `batch.size` (not 0.8.2's: Java's and librdkafka's name) | `-1` = none: only `batch.num.messages` |
//! | [`message_send_max_retries`](ProducerConfigBuilder::message_send_max_retries) | `message.send.max.retries` | `3` ([`DEFAULT_MESSAGE_SEND_MAX_RETRIES`]) |
//! | [`retry_backoff`](ProducerConfigBuilder::retry_backoff) | `retry.backoff.ms` | `100` ([`DEFAULT_RETRY_BACKOFF`]) |
//! | [`delivery_timeout`](ProducerConfigBuilder::delivery_timeout) | `delivery.timeout.ms` (not 0.8.2's: Java's and librdkafka's name) | `-1` = none: a record fails after `message.send.max.retries` |
//! | [`max_in_flight`](ProducerConfigBuilder::max_in_flight) | `max.in.flight.requests.per.connection` (not a 0.8.2 old-producer property: the 0.8.2 Java producer's name) | `1` ([`DEFAULT_MAX_IN_FLIGHT`]) |
//! | [`topic_metadata_refresh_interval`](ProducerConfigBuilder::topic_metadata_refresh_interval) | `topic.metadata.refresh.interval.ms` | `600000` ([`DEFAULT_TOPIC_METADATA_REFRESH_INTERVAL`]) |
//! | [`compression_codec`](ProducerConfigBuilder::compression_codec) | `compression.codec` | `none` ([`DEFAULT_COMPRESSION_CODEC`]) |
//! | [`compressed_topics`](ProducerConfigBuilder::compressed_topics) | `compressed.topics` | empty (every topic, when a codec is set) |
//! | [`client_id`](ProducerConfigBuilder::client_id) | `client.id` | `""` ([`DEFAULT_CLIENT_ID`]) |
//! | [`send_buffer_bytes`](ProducerConfigBuilder::send_buffer_bytes) | `send.buffer.bytes` | `102400` ([`DEFAULT_SEND_BUFFER_BYTES`]) |
//! | [`partitioner`](ProducerConfigBuilder::partitioner) | `partitioner.class` | `kafka.producer.DefaultPartitioner` = [`PartitionerKind::Default08`] |
//! | — (encoders are values given to the producer) | `serializer.class`, `key.serializer.class` | `kafka.serializer.DefaultEncoder` |
//! | [`api_version_request`](ProducerConfigBuilder::api_version_request) | `api.version.request` (Kafka 0.10+, librdkafka) | `true` |
//! | [`broker_version_fallback`](ProducerConfigBuilder::broker_version_fallback) | `broker.version.fallback` (librdkafka) | `0.8.2` |
//! | [`enable_idempotence`](ProducerConfigBuilder::enable_idempotence) | `enable.idempotence` (Kafka 0.11+) | `false` |
//! | [`security`](ProducerConfigBuilder::security) | `security.protocol`, `ssl.*`, `sasl.*` (see [`gregor_net::security`]) | `PLAINTEXT` |
//!
//! With `api.version.request` on, each connection asks its broker which versions it speaks and
//! Produce goes out in the highest version both know: from Kafka 0.11 (Produce v3) each batch
//! is a RecordBatch v2 with CreateTime timestamps, which a Kafka 4 broker requires. A broker
//! that does not answer (Kafka 0.8/0.9) gets `broker.version.fallback`'s versions.
//!
//! [`ProducerConfig::from_properties`] reads these names exactly (and the security properties,
//! which [`gregor_net::Security`] reads for every client); [`ProducerConfig::builder`]
//! sets them with typed values; [`ProducerConfig::to_properties`] writes them back. Both ways
//! in end in the same checks: impossible values and combinations are [`ConfigError::Invalid`]
//! naming the property and the reason (`invalid value "2" for request.required.acks: must be
//! -1 (all in-sync replicas), 0 (no response) or 1 (the leader)`), legal but suspicious ones
//! are logged with `tracing::warn!`.
//!
//! The checks are Kafka 0.8.2's (`ProducerConfig.validate`: `client.id` characters,
//! `batch.num.messages` at most `queue.buffering.max.messages`, `producer.type`; the ranges of
//! `request.required.acks` and `request.timeout.ms`) and more where 0.8.2 accepts a value that
//! cannot work: millisecond, count and size properties are Kafka `int`s (at most 2147483647),
//! sizes and capacities at least 1, `queue.enqueue.timeout.ms` -1 or more, `compressed.topics`
//! legal topic names. An unknown property is [`ConfigError::UnknownProperty`], where Kafka 0.8.2
//! only logs a warning and goes on with the default.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use gregor_config::{check_count, check_ms, shorten, validate_client_id, validate_topic_name, Alias, INT_MAX};
use gregor_net::{BrokerVersionFallback, Security, SecurityProperties};
use gregor_protocol::Compression;

use crate::partitioner::PartitionerKind;

/// Kafka 0.8.2's default `producer.type`: `sync`.
pub const DEFAULT_PRODUCER_TYPE: ProducerType = ProducerType::Sync;
/// Kafka 0.8.2's default `request.required.acks`: `0`, no acknowledgement (see
/// [`ProducerConfigBuilder::request_required_acks`] for what that costs).
pub const DEFAULT_REQUEST_REQUIRED_ACKS: i16 = 0;
/// Kafka 0.8.2's default `request.timeout.ms`: 10 s.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_millis(10_000);
/// Kafka 0.8.2's default `queue.buffering.max.ms`: 5 s.
pub const DEFAULT_QUEUE_BUFFERING_MAX: Duration = Duration::from_millis(5_000);
/// Kafka 0.8.2's default `queue.buffering.max.messages`: 10 000.
pub const DEFAULT_QUEUE_BUFFERING_MAX_MESSAGES: usize = 10_000;
/// Kafka 0.8.2's default `queue.enqueue.timeout.ms`: `-1`, block until there is room.
pub const DEFAULT_QUEUE_ENQUEUE_TIMEOUT: EnqueueTimeout = EnqueueTimeout::Block;
/// Kafka 0.8.2's default `batch.num.messages`: 200.
pub const DEFAULT_BATCH_NUM_MESSAGES: usize = 200;
/// Kafka 0.8.2's default `message.send.max.retries`: 3 (so up to 4 sends).
pub const DEFAULT_MESSAGE_SEND_MAX_RETRIES: u32 = 3;
/// The default `max.in.flight.requests.per.connection`: 1, one request per broker and one
/// batch per partition in flight, as Kafka 0.8's producer sends (order kept through retries).
pub const DEFAULT_MAX_IN_FLIGHT: usize = 1;
/// Kafka 0.8.2's default `retry.backoff.ms`: 100 ms.
pub const DEFAULT_RETRY_BACKOFF: Duration = Duration::from_millis(100);
/// Kafka 0.8.2's default `topic.metadata.refresh.interval.ms`: 600 s.
pub const DEFAULT_TOPIC_METADATA_REFRESH_INTERVAL: Duration = Duration::from_millis(600_000);
/// Kafka 0.8.2's default `compression.codec`: `none`.
pub const DEFAULT_COMPRESSION_CODEC: Compression = Compression::None;
/// Kafka 0.8.2's default `client.id`: empty.
pub const DEFAULT_CLIENT_ID: &str = "";
/// Kafka 0.8.2's default `send.buffer.bytes`: 100 KiB.
pub const DEFAULT_SEND_BUFFER_BYTES: usize = 102_400;
/// Kafka 0.8.2's default `partitioner.class`, read as [`PartitionerKind::Default08`].
pub const DEFAULT_PARTITIONER_CLASS: &str = "kafka.producer.DefaultPartitioner";
/// Kafka 0.8.2's default `serializer.class` (and so `key.serializer.class`).
pub const DEFAULT_SERIALIZER_CLASS: &str = "kafka.serializer.DefaultEncoder";
/// How much longer than `request.timeout.ms` the producer waits for a Produce response before
/// it gives up on the connection: the broker may take the whole `request.timeout.ms` to
/// answer an acks=-1 request, and the answer still has to travel.
pub const RESPONSE_TIMEOUT_MARGIN: Duration = Duration::from_secs(1);

/// Every property [`ProducerConfig::from_properties`] knows, in the order of the table above.
pub const PROPERTIES: &[&str] = &[
    "metadata.broker.list",
    "producer.type",
    "request.required.acks",
    "request.timeout.ms",
    "queue.buffering.max.ms",
    "queue.buffering.max.messages",
    "queue.buffering.max.bytes",
    "queue.enqueue.timeout.ms",
    "batch.num.messages",
    "batch.size",
    "message.send.max.retries",
    "retry.backoff.ms",
    "delivery.timeout.ms",
    "max.in.flight.requests.per.connection",
    "topic.metadata.refresh.interval.ms",
    "compression.codec",
    "compressed.topics",
    "client.id",
    "send.buffer.bytes",
    "partitioner.class",
    "serializer.class",
    "key.serializer.class",
    "api.version.request",
    "broker.version.fallback",
    "enable.idempotence",
];

/// The client name in [`ConfigError::UnknownProperty`].
const CLIENT: &str = "producer";

/// Today's Kafka producer names [`ProducerConfig::from_properties`] accepts for the settings of
/// [`PROPERTIES`] (Kafka's Java producer, librdkafka): `bootstrap.servers`, `acks` (`all` is
/// -1), `linger.ms`, `retries`, `compression.type`, `max.block.ms`, `metadata.max.age.ms`. Both
/// names of one setting with different values are an error.
pub const MODERN_NAMES: &[Alias] = &[
    Alias { modern: "bootstrap.servers", classic: "metadata.broker.list", translate: None },
    Alias { modern: "acks", classic: "request.required.acks", translate: Some(acks_all) },
    Alias { modern: "linger.ms", classic: "queue.buffering.max.ms", translate: None },
    Alias { modern: "retries", classic: "message.send.max.retries", translate: None },
    Alias { modern: "compression.type", classic: "compression.codec", translate: None },
    Alias { modern: "max.block.ms", classic: "queue.enqueue.timeout.ms", translate: None },
    Alias { modern: "buffer.memory", classic: "queue.buffering.max.bytes", translate: None },
    Alias { modern: "metadata.max.age.ms", classic: "topic.metadata.refresh.interval.ms", translate: None },
];

/// `acks=all` is `-1`.
fn acks_all(value: &str) -> Option<String> {
    value.eq_ignore_ascii_case("all").then(|| "-1".to_owned())
}

// The one configuration error of every gregor client, from the configuration kit.
pub use gregor_config::ConfigError;

/// `producer.type`: whether `send` waits for the broker (`sync`) or queues (`async`).
///
/// Both [`crate::SyncProducer`] and [`crate::AsyncProducer`] accept any configuration; this
/// tells an application reading a properties file (such as the `gregor` CLI) which to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ProducerType {
    /// `sync`: each send waits for its acknowledgement ([`crate::SyncProducer`]).
    #[default]
    Sync,
    /// `async`: sends are queued and batched in the background ([`crate::AsyncProducer`]).
    Async,
}

impl ProducerType {
    /// The property value: `sync` or `async`.
    pub fn name(self) -> &'static str {
        match self {
            ProducerType::Sync => "sync",
            ProducerType::Async => "async",
        }
    }
}

impl fmt::Display for ProducerType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for ProducerType {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let table = [("sync", ProducerType::Sync), ("async", ProducerType::Async)];
        gregor_config::parse_choice("producer.type", s.trim(), &table, false)
    }
}

/// `queue.enqueue.timeout.ms`: what a send does when the queue holds
/// `queue.buffering.max.messages` records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum EnqueueTimeout {
    /// `-1`: wait (asynchronously) until there is room.
    #[default]
    Block,
    /// `0`: fail at once with [`crate::SendError::QueueFull`], giving the record back.
    FailFast,
    /// `> 0`: wait up to this long, then fail with [`crate::SendError::QueueFull`].
    Wait(Duration),
}

impl EnqueueTimeout {
    /// Reads Kafka's number: -1 blocks, 0 fails at once, more waits that many milliseconds.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Invalid`] below -1 or above 2147483647.
    pub fn from_ms(ms: i64) -> Result<EnqueueTimeout, ConfigError> {
        match ms {
            -1 => Ok(EnqueueTimeout::Block),
            0 => Ok(EnqueueTimeout::FailFast),
            ms if ms > 0 && ms <= INT_MAX => Ok(EnqueueTimeout::Wait(Duration::from_millis(ms as u64))),
            ms => Err(ConfigError::invalid(
                "queue.enqueue.timeout.ms",
                ms,
                "must be -1 (block), 0 (fail at once) or a wait of 1 to 2147483647 ms",
            )),
        }
    }

    /// Kafka's number for it.
    pub fn as_ms(self) -> i64 {
        match self {
            EnqueueTimeout::Block => -1,
            EnqueueTimeout::FailFast => 0,
            EnqueueTimeout::Wait(d) => d.as_millis().min(i64::MAX as u128) as i64,
        }
    }
}

/// Settings of a [`crate::AsyncProducer`] or [`crate::SyncProducer`]; see the
/// [module docs](self) for the table. Cheap to clone.
///
/// ```
/// use std::time::Duration;
/// use gregor_producer::{EnqueueTimeout, ProducerConfig};
///
/// let config = ProducerConfig::builder()
///     .metadata_broker_list("k1:9092,k2:9092")
///     .request_required_acks(-1)
///     .queue_buffering_max(Duration::from_millis(20))
///     .queue_enqueue_timeout(EnqueueTimeout::FailFast)
///     .build()?;
/// assert_eq!(config.batch_num_messages(), 200);
///
/// let same = ProducerConfig::from_properties([
///     ("metadata.broker.list", "k1:9092,k2:9092"),
///     ("request.required.acks", "-1"),
///     ("queue.buffering.max.ms", "20"),
///     ("queue.enqueue.timeout.ms", "0"),
/// ])?;
/// assert_eq!(same.request_required_acks(), -1);
/// # Ok::<(), gregor_producer::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct ProducerConfig {
    metadata_broker_list: String,
    producer_type: ProducerType,
    request_required_acks: i16,
    request_timeout: Duration,
    queue_buffering_max: Duration,
    queue_buffering_max_messages: usize,
    queue_enqueue_timeout: EnqueueTimeout,
    queue_buffering_max_bytes: Option<usize>,
    batch_num_messages: usize,
    batch_size: Option<usize>,
    message_send_max_retries: u32,
    retry_backoff: Duration,
    delivery_timeout: Option<Duration>,
    max_in_flight: usize,
    topic_metadata_refresh_interval: Option<Duration>,
    compression_codec: Compression,
    compressed_topics: BTreeSet<String>,
    client_id: String,
    send_buffer_bytes: usize,
    partitioner: PartitionerKind,
    serializer_class: Option<String>,
    key_serializer_class: Option<String>,
    api_version_request: bool,
    broker_version_fallback: BrokerVersionFallback,
    enable_idempotence: bool,
    security: Security,
}

impl Default for ProducerConfig {
    /// Kafka 0.8.2's defaults, with an empty `metadata.broker.list` (which
    /// [`ProducerConfigBuilder::build`] rejects).
    fn default() -> Self {
        ProducerConfig {
            metadata_broker_list: String::new(),
            producer_type: DEFAULT_PRODUCER_TYPE,
            request_required_acks: DEFAULT_REQUEST_REQUIRED_ACKS,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            queue_buffering_max: DEFAULT_QUEUE_BUFFERING_MAX,
            queue_buffering_max_messages: DEFAULT_QUEUE_BUFFERING_MAX_MESSAGES,
            queue_enqueue_timeout: DEFAULT_QUEUE_ENQUEUE_TIMEOUT,
            queue_buffering_max_bytes: None,
            batch_num_messages: DEFAULT_BATCH_NUM_MESSAGES,
            batch_size: None,
            message_send_max_retries: DEFAULT_MESSAGE_SEND_MAX_RETRIES,
            retry_backoff: DEFAULT_RETRY_BACKOFF,
            delivery_timeout: None,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            topic_metadata_refresh_interval: Some(DEFAULT_TOPIC_METADATA_REFRESH_INTERVAL),
            compression_codec: DEFAULT_COMPRESSION_CODEC,
            compressed_topics: BTreeSet::new(),
            client_id: DEFAULT_CLIENT_ID.to_owned(),
            send_buffer_bytes: DEFAULT_SEND_BUFFER_BYTES,
            partitioner: PartitionerKind::Default08,
            serializer_class: None,
            key_serializer_class: None,
            api_version_request: gregor_net::ConnectionConfig::default().api_version_request(),
            broker_version_fallback: BrokerVersionFallback::DEFAULT,
            enable_idempotence: false,
            security: Security::plaintext(),
        }
    }
}

impl ProducerConfig {
    /// A builder starting from Kafka 0.8.2's defaults.
    pub fn builder() -> ProducerConfigBuilder {
        ProducerConfigBuilder { config: ProducerConfig::default() }
    }

    /// A builder starting from these settings (to change a few).
    pub fn to_builder(&self) -> ProducerConfigBuilder {
        ProducerConfigBuilder { config: self.clone() }
    }

    /// Reads Kafka 0.8.2 producer properties by their exact names (see [`PROPERTIES`]);
    /// properties not given keep their defaults. Values are trimmed; `compressed.topics` is a
    /// comma-separated list; `compression.codec` takes a name (any case) or Kafka's number (0 to
    /// 3); `topic.metadata.refresh.interval.ms` takes a negative value for "only after
    /// failures"; `partitioner.class` takes `kafka.producer.DefaultPartitioner` (or `default`),
    /// `murmur2` (or the Java client's
    /// `org.apache.kafka.clients.producer.internals.DefaultPartitioner`) and `round_robin`.
    /// `serializer.class` and `key.serializer.class` accept Kafka's `DefaultEncoder`,
    /// `StringEncoder` and (keys only) `NullEncoder`; they are only recorded: the encoders are
    /// the values given to the producer's constructor. `security.protocol` and the `ssl.*` and
    /// `sasl.*` properties are read by [`gregor_net::Security::from_properties`].
    ///
    /// # Errors
    ///
    /// [`ConfigError::UnknownProperty`] naming the first unknown property,
    /// [`ConfigError::Invalid`] for a value that does not parse or is out of range, what
    /// [`gregor_net::Security::from_properties`] refuses, and everything
    /// [`ProducerConfigBuilder::build`] rejects.
    pub fn from_properties<I, K, V>(properties: I) -> Result<ProducerConfig, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut b = ProducerConfig::builder();
        // the security properties go to their own reader
        let mut security = SecurityProperties::new();
        let properties = properties.into_iter().filter(|(k, v)| !security.take(k, v));
        for property in gregor_config::read_with_aliases(CLIENT, PROPERTIES, MODERN_NAMES, properties) {
            let p = property?;
            let value = p.value();
            b = match p.name() {
                "metadata.broker.list" => b.metadata_broker_list(value),
                "producer.type" => b.producer_type(value.parse()?),
                "request.required.acks" => b.request_required_acks(p.choice(ACKS).map_err(|_| p.invalid(ACKS_REASON))?),
                "request.timeout.ms" => b.request_timeout(p.ms(1)?),
                "queue.buffering.max.ms" => b.queue_buffering_max(p.ms(0)?),
                "queue.buffering.max.messages" => b.queue_buffering_max_messages(p.int(1)?),
                "queue.buffering.max.bytes" => {
                    let n: usize = p.int(0)?;
                    b.queue_buffering_max_bytes((n > 0).then_some(n))
                }
                "queue.enqueue.timeout.ms" => {
                    let n: i64 = value
                        .parse()
                        .map_err(|_| p.invalid("not an integer (-1 to block, 0 to fail at once, or a wait in ms)"))?;
                    b.queue_enqueue_timeout(EnqueueTimeout::from_ms(n)?)
                }
                "batch.num.messages" => b.batch_num_messages(p.int(1)?),
                "batch.size" => {
                    let n: i64 = p.int(-1)?;
                    b.batch_size(usize::try_from(n).ok())
                }
                "message.send.max.retries" => b.message_send_max_retries(p.int(0)?),
                "retry.backoff.ms" => b.retry_backoff(p.ms(0)?),
                "delivery.timeout.ms" => {
                    let n: i64 = p.int(-1)?;
                    b.delivery_timeout(u64::try_from(n).ok().map(Duration::from_millis))
                }
                "max.in.flight.requests.per.connection" => b.max_in_flight(p.int(1)?),
                "topic.metadata.refresh.interval.ms" => {
                    let n: i64 = p.int(i32::MIN.into())?;
                    b.topic_metadata_refresh_interval(u64::try_from(n).ok().map(Duration::from_millis))
                }
                "compression.codec" => b.compression_codec(
                    Compression::from_name(value)
                        .map_err(|_| p.invalid("must be none, gzip, snappy, lz4 or zstd (any case), or 0 to 4"))?,
                ),
                "compressed.topics" => {
                    b.compressed_topics(value.split(',').map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned))
                }
                "client.id" => b.client_id(value),
                "send.buffer.bytes" => b.send_buffer_bytes(p.int(1)?),
                "partitioner.class" => b.partitioner(PartitionerKind::from_class_name(value)?),
                "serializer.class" => {
                    check_serializer(p.name(), value, false)?;
                    b.config.serializer_class = Some(value.to_owned());
                    b
                }
                "key.serializer.class" => {
                    check_serializer(p.name(), value, true)?;
                    b.config.key_serializer_class = Some(value.to_owned());
                    b
                }
                "api.version.request" => b.api_version_request(p.bool()?),
                "enable.idempotence" => b.enable_idempotence(p.bool()?),
                "broker.version.fallback" => b.broker_version_fallback(
                    value.parse().map_err(|e: gregor_net::versions::InvalidFallback| p.invalid(e.0))?,
                ),
                _ => unreachable!("every name of PROPERTIES is handled"),
            };
        }
        b.security(security.build()?).build()
    }

    /// Every property of [`PROPERTIES`] with its value, in [`ProducerConfig::from_properties`]'s
    /// syntax: to log the settings in effect, or to read them back. `partitioner.class` of a
    /// [`PartitionerKind::Custom`] is `custom`, which `from_properties` refuses (a custom
    /// partitioner is a value, not a name); `serializer.class` and `key.serializer.class` are
    /// the recorded names, else Kafka's defaults. The security properties follow unless the
    /// protocol is `PLAINTEXT` ([`Security::to_properties`]: secrets are `***`, so they do not
    /// read back).
    pub fn to_properties(&self) -> Vec<(&'static str, String)> {
        let ms = |d: Duration| d.as_millis().to_string();
        let serializer = self.serializer_class.as_deref().unwrap_or(DEFAULT_SERIALIZER_CLASS);
        let mut props = vec![
            ("metadata.broker.list", self.metadata_broker_list.clone()),
            ("producer.type", self.producer_type.to_string()),
            ("request.required.acks", self.request_required_acks.to_string()),
            ("request.timeout.ms", ms(self.request_timeout)),
            ("queue.buffering.max.ms", ms(self.queue_buffering_max)),
            ("queue.buffering.max.messages", self.queue_buffering_max_messages.to_string()),
            ("queue.buffering.max.bytes", self.queue_buffering_max_bytes.unwrap_or(0).to_string()),
            ("queue.enqueue.timeout.ms", self.queue_enqueue_timeout.as_ms().to_string()),
            ("batch.num.messages", self.batch_num_messages.to_string()),
            ("batch.size", self.batch_size.map_or("-1".to_owned(), |n| n.to_string())),
            ("message.send.max.retries", self.message_send_max_retries.to_string()),
            ("retry.backoff.ms", ms(self.retry_backoff)),
            ("delivery.timeout.ms", self.delivery_timeout.map_or("-1".to_owned(), ms)),
            ("max.in.flight.requests.per.connection", self.max_in_flight.to_string()),
            ("topic.metadata.refresh.interval.ms", self.topic_metadata_refresh_interval.map_or("-1".to_owned(), ms)),
            ("compression.codec", self.compression_codec.to_string()),
            ("compressed.topics", self.compressed_topics.iter().map(String::as_str).collect::<Vec<_>>().join(",")),
            ("client.id", self.client_id.clone()),
            ("send.buffer.bytes", self.send_buffer_bytes.to_string()),
            ("partitioner.class", self.partitioner.class_name().to_owned()),
            ("serializer.class", serializer.to_owned()),
            ("key.serializer.class", self.key_serializer_class.as_deref().unwrap_or(serializer).to_owned()),
            ("api.version.request", self.api_version_request.to_string()),
            ("broker.version.fallback", self.broker_version_fallback.to_string()),
            ("enable.idempotence", self.enable_idempotence.to_string()),
        ];
        if self.security.protocol() != gregor_net::SecurityProtocol::Plaintext {
            props.extend(self.security.to_properties());
        }
        props
    }

    /// `metadata.broker.list`.
    pub fn metadata_broker_list(&self) -> &str {
        &self.metadata_broker_list
    }

    /// `producer.type`.
    pub fn producer_type(&self) -> ProducerType {
        self.producer_type
    }

    /// `request.required.acks`: -1, 0 or 1.
    pub fn request_required_acks(&self) -> i16 {
        self.request_required_acks
    }

    /// `request.timeout.ms`.
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// How long the producer waits for a Produce response: `request.timeout.ms` plus
    /// [`RESPONSE_TIMEOUT_MARGIN`].
    pub fn response_timeout(&self) -> Duration {
        self.request_timeout + RESPONSE_TIMEOUT_MARGIN
    }

    /// `queue.buffering.max.ms`: the linger.
    pub fn queue_buffering_max(&self) -> Duration {
        self.queue_buffering_max
    }

    /// `queue.buffering.max.messages`: the queue's capacity.
    pub fn queue_buffering_max_messages(&self) -> usize {
        self.queue_buffering_max_messages
    }

    /// `queue.enqueue.timeout.ms`.
    pub fn queue_enqueue_timeout(&self) -> EnqueueTimeout {
        self.queue_enqueue_timeout
    }

    /// `queue.buffering.max.bytes`: the bytes the queue may hold, if bounded.
    pub fn queue_buffering_max_bytes(&self) -> Option<usize> {
        self.queue_buffering_max_bytes
    }

    /// `batch.num.messages`.
    pub fn batch_num_messages(&self) -> usize {
        self.batch_num_messages
    }

    /// `batch.size`: the most bytes of a partition's batch, if bounded.
    pub fn batch_size(&self) -> Option<usize> {
        self.batch_size
    }

    /// `message.send.max.retries`.
    pub fn message_send_max_retries(&self) -> u32 {
        self.message_send_max_retries
    }

    /// `max.in.flight.requests.per.connection`.
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight
    }

    /// `retry.backoff.ms`.
    pub fn retry_backoff(&self) -> Duration {
        self.retry_backoff
    }

    /// `delivery.timeout.ms`, if set.
    pub fn delivery_timeout(&self) -> Option<Duration> {
        self.delivery_timeout
    }

    /// `topic.metadata.refresh.interval.ms`: `None` when negative (refresh only after
    /// failures), `Some(ZERO)` to refresh after every send.
    pub fn topic_metadata_refresh_interval(&self) -> Option<Duration> {
        self.topic_metadata_refresh_interval
    }

    /// `compression.codec`.
    pub fn compression_codec(&self) -> Compression {
        self.compression_codec
    }

    /// `compressed.topics` (empty = every topic, when a codec is set).
    pub fn compressed_topics(&self) -> &BTreeSet<String> {
        &self.compressed_topics
    }

    /// The codec used for `topic`: `compression.codec` when it is set and `compressed.topics`
    /// is empty or names the topic, else none (Kafka 0.8.2's rule).
    pub fn compression_for(&self, topic: &str) -> Compression {
        if self.compression_codec == Compression::None {
            return Compression::None;
        }
        if self.compressed_topics.is_empty() || self.compressed_topics.contains(topic) {
            self.compression_codec
        } else {
            Compression::None
        }
    }

    /// `client.id`.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// `send.buffer.bytes`.
    pub fn send_buffer_bytes(&self) -> usize {
        self.send_buffer_bytes
    }

    /// The partitioner (`partitioner.class`).
    pub fn partitioner(&self) -> &PartitionerKind {
        &self.partitioner
    }

    /// `serializer.class` as read by [`ProducerConfig::from_properties`], if given (recorded
    /// only: the value encoder is the one given to the producer).
    pub fn serializer_class(&self) -> Option<&str> {
        self.serializer_class.as_deref()
    }

    /// `key.serializer.class` as read by [`ProducerConfig::from_properties`], if given.
    pub fn key_serializer_class(&self) -> Option<&str> {
        self.key_serializer_class.as_deref()
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

    /// `enable.idempotence`: every batch carries a producer id and per-partition sequence
    /// numbers, so a retry of a batch the broker already wrote is not written twice (Kafka
    /// 0.11+).
    pub fn enable_idempotence(&self) -> bool {
        self.enable_idempotence
    }

    /// `security.protocol` and its TLS and SASL settings, for every broker connection.
    pub fn security(&self) -> &Security {
        &self.security
    }
}

/// `request.required.acks` as Kafka spells its three values.
const ACKS: &[(&str, i16)] = &[("-1", -1), ("0", 0), ("1", 1)];

const ACKS_REASON: &str = "must be -1 (all in-sync replicas), 0 (no response) or 1 (the leader)";

fn check_serializer(property: &'static str, value: &str, key: bool) -> Result<(), ConfigError> {
    let known = matches!(value, "kafka.serializer.DefaultEncoder" | "kafka.serializer.StringEncoder")
        || (key && value == "kafka.serializer.NullEncoder");
    if known {
        return Ok(());
    }
    Err(ConfigError::invalid(
        property,
        value,
        "encoders are Rust values given to the producer's constructor (gregor_serde::BytesEncoder is \
         kafka.serializer.DefaultEncoder, gregor_serde::StringEncoder is kafka.serializer.StringEncoder); \
         only those names are accepted here",
    ))
}

/// Builds a [`ProducerConfig`]; [`ProducerConfigBuilder::build`] checks it.
#[derive(Debug, Clone)]
pub struct ProducerConfigBuilder {
    config: ProducerConfig,
}

impl ProducerConfigBuilder {
    /// `metadata.broker.list`: `host:port,host:port`, the brokers asked for metadata first.
    /// Required. Any live broker of the cluster will do; list a few so one being down does not
    /// matter. Only used to bootstrap: the leaders' addresses come from metadata.
    pub fn metadata_broker_list(mut self, list: impl Into<String>) -> Self {
        self.config.metadata_broker_list = list.into();
        self
    }

    /// `producer.type`: `sync` or `async`. Default: `sync` ([`DEFAULT_PRODUCER_TYPE`]).
    /// Informational: build a [`crate::SyncProducer`] or an [`crate::AsyncProducer`]
    /// accordingly (see [`ProducerType`]).
    pub fn producer_type(mut self, producer_type: ProducerType) -> Self {
        self.config.producer_type = producer_type;
        self
    }

    /// `request.required.acks`: when the broker acknowledges a Produce request. Default: `0`
    /// ([`DEFAULT_REQUEST_REQUIRED_ACKS`], Kafka 0.8.2's default).
    ///
    /// * `0`: the broker sends **no response at all**. A record counts as delivered once its
    ///   request is written to the socket, its offset is unknown (-1), and a record the broker
    ///   rejects (too large, not the leader) is **lost without an error**: a 0.8 broker just
    ///   closes the connection, which the producer only sees at its next request. Fastest,
    ///   weakest.
    /// * `1`: the leader answers once it has appended the records. Records the leader
    ///   appended but no follower copied are lost if the leader dies.
    /// * `-1`: the leader answers once every in-sync replica has them (up to
    ///   `request.timeout.ms`). Nothing acknowledged is lost while one in-sync replica
    ///   survives; slowest.
    ///
    /// **Warning:** the 0.8.2 default, 0, loses data silently on any broker-side error. Use 1
    /// or -1 unless losing records is acceptable.
    pub fn request_required_acks(mut self, acks: i16) -> Self {
        self.config.request_required_acks = acks;
        self
    }

    /// `request.timeout.ms`: how long the broker waits for the in-sync replicas of an acks=-1
    /// request before answering 7 RequestTimedOut (the records stay in the leader's log, so a
    /// retry may store them twice). The producer itself waits this plus
    /// [`RESPONSE_TIMEOUT_MARGIN`] for any response before it drops the connection and
    /// retries. Default: 10 s ([`DEFAULT_REQUEST_TIMEOUT`]).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.config.request_timeout = timeout;
        self
    }

    /// `queue.buffering.max.ms`: the linger, how long a record may wait for more records to
    /// join its batch before its partition is sent. Default: 5 s
    /// ([`DEFAULT_QUEUE_BUFFERING_MAX`]). A batch also goes out at once when
    /// `batch.num.messages` records wait for its broker, when the queue is full, and on
    /// `flush`/`close`. Longer means bigger requests and more latency; 0 sends as soon as the
    /// background task sees a record (what [`crate::SyncProducer`] uses). A batch may go up to
    /// a millisecond (a quarter of the linger, if less) before its linger ends: tokio's timers
    /// fire on whole milliseconds, after their deadline, so the producer wakes that much early
    /// rather than late.
    pub fn queue_buffering_max(mut self, linger: Duration) -> Self {
        self.config.queue_buffering_max = linger;
        self
    }

    /// `queue.buffering.max.messages`: the most records the producer holds at once — queued,
    /// in flight or waiting to be retried — a hard bound. Default: 10 000
    /// ([`DEFAULT_QUEUE_BUFFERING_MAX_MESSAGES`]). When it is reached every queued partition
    /// is sent at once, and sends wait or fail as `queue.enqueue.timeout.ms` says.
    ///
    /// Memory: about this many times (key + value + ~150 bytes of bookkeeping), plus one
    /// encoded copy of each batch in flight.
    pub fn queue_buffering_max_messages(mut self, n: usize) -> Self {
        self.config.queue_buffering_max_messages = n;
        self
    }

    /// `queue.buffering.max.bytes` (Java's `buffer.memory`; librdkafka's
    /// `queue.buffering.max.kbytes`, in bytes): a second bound on the queue, the bytes its
    /// records hold, counted as each weighs on the wire as Message v0 in a MessageSet (key +
    /// value + 26 bytes) plus its headers' keys and values, from `send` to its result. Default:
    /// none (`None`; `0` as a property): only `queue.buffering.max.messages` bounds the queue
    /// (as a property at most 2147483647). With both, a send
    /// needs a place and its bytes, and waits or fails for either as `queue.enqueue.timeout.ms`
    /// says ([`crate::SendError::QueueBytesFull`] for the bytes, the record given back); a record larger
    /// than the byte bound is refused at once ([`crate::SendError::InvalidRecord`]). To weigh a
    /// record before taking it, the producer encodes its value by reference (a copy for owned
    /// `Vec`/`String` values) only when this bound is set.
    ///
    /// Which bound bites first: a queue of `queue.buffering.max.messages` records of `s` bytes
    /// holds `messages × (s + 26)` bytes; below that, the byte bound caps it. The bound counts
    /// the records' bytes, not the producer's bookkeeping per record (see
    /// [`queue_buffering_max_messages`](Self::queue_buffering_max_messages)).
    pub fn queue_buffering_max_bytes(mut self, bytes: Option<usize>) -> Self {
        self.config.queue_buffering_max_bytes = bytes;
        self
    }

    /// `queue.enqueue.timeout.ms`: what a send does when the queue is full. Default: block
    /// (`-1`, [`DEFAULT_QUEUE_ENQUEUE_TIMEOUT`]). [`EnqueueTimeout::FailFast`] (`0`) returns
    /// [`crate::SendError::QueueFull`] at once with the record; [`EnqueueTimeout::Wait`] waits
    /// that long first.
    pub fn queue_enqueue_timeout(mut self, timeout: EnqueueTimeout) -> Self {
        self.config.queue_enqueue_timeout = timeout;
        self
    }

    /// `batch.num.messages`: the most records in one Produce request, and the number of
    /// records waiting for one broker that sends them before the linger ends. Default: 200
    /// ([`DEFAULT_BATCH_NUM_MESSAGES`]). At most `queue.buffering.max.messages`.
    pub fn batch_num_messages(mut self, n: usize) -> Self {
        self.config.batch_num_messages = n;
        self
    }

    /// `batch.size` (Java's and librdkafka's name; not a 0.8.2 property): the most bytes of one
    /// partition's batch, counted uncompressed as it is sent (its Message v0 entries, key and
    /// value and 26 bytes each; or a RecordBatch v2's 61-byte header and its records). A
    /// record that does not fit its partition's batch begins the next one, and a record larger
    /// than the bound goes in a batch of its own (so `Some(0)` sends every record alone, as Java's
    /// `batch.size=0`). A partition with a batch so filled is sent without waiting for
    /// `queue.buffering.max.ms`, as a broker's `batch.num.messages` records are. Default: none
    /// (`None`; `-1` as a property, as 0.8.2's producer, which batches by count alone). With
    /// both bounds, a Produce request holds at most `batch.num.messages` records in all and
    /// each of its partitions' batches at most `batch.size` bytes; a partition sends one batch
    /// per request, so a small `batch.size` also bounds what a partition sends per round trip.
    /// As a property at most 2147483647.
    pub fn batch_size(mut self, bytes: Option<usize>) -> Self {
        self.config.batch_size = bytes;
        self
    }

    /// `message.send.max.retries`: how many times a failed batch is sent again (so up to this
    /// plus one sends), and how many metadata refreshes a record waits for a leader, before
    /// it fails. Default: 3 ([`DEFAULT_MESSAGE_SEND_MAX_RETRIES`]). Retries keep the order of
    /// each partition (one batch per partition in flight); after a 7 RequestTimedOut or a lost
    /// connection a retry may store records twice.
    pub fn message_send_max_retries(mut self, n: u32) -> Self {
        self.config.message_send_max_retries = n;
        self
    }

    /// `max.in.flight.requests.per.connection`: Produce requests in flight per broker, and
    /// batches in flight per partition. Default 1 ([`DEFAULT_MAX_IN_FLIGHT`]), as Kafka 0.8's
    /// producer: every partition's records are in the log in send order, retries included.
    /// More pipelines requests (for brokers leading few partitions, or far away), and then a
    /// retried batch may land after a later batch of its partition — as with librdkafka or
    /// Java's producer without idempotence. What pipelines is full requests (`batch.num.messages`
    /// records for the broker), a full queue's, retries and a flush's: a request made ready by
    /// the linger alone waits until the broker has no request of this producer in flight. A
    /// broker serves a connection's requests one at a time, so it would wait there behind the
    /// other anyway; waiting in the producer, the records that come meanwhile join it and the
    /// broker serves one request instead of several (at a linger of 0, small requests pipelined
    /// five deep to brokers whose acks=-1 requests take 6 ms: a median latency of 44 ms; one at
    /// a time, 12 ms). The cost: those records also wait for the network's round trip between
    /// the broker's answer and their request's arrival.
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.config.max_in_flight = n;
        self
    }

    /// `retry.backoff.ms`: the pause before a failed batch is sent again and between
    /// metadata refreshes while a partition has no leader (leader elections take a moment).
    /// Default: 100 ms ([`DEFAULT_RETRY_BACKOFF`]).
    pub fn retry_backoff(mut self, backoff: Duration) -> Self {
        self.config.retry_backoff = backoff;
        self
    }

    /// `delivery.timeout.ms` (Java's and librdkafka's name; not a 0.8.2 property): the longest
    /// a record waits in the producer before it fails with [`crate::Error::DeliveryTimeout`],
    /// counted from when the producer's task takes it: for its linger, its topic's metadata,
    /// its partition's leader, a batch ahead of it, a retry's backoff. A record in flight is
    /// not cut short: its request's answer counts (it takes at most `request.timeout.ms` and
    /// [`RESPONSE_TIMEOUT_MARGIN`]), and an answer after the deadline that would have been
    /// retried fails it instead; records behind a batch of their partition in flight wait for
    /// its answer, so results stay in order per partition. So a record's result comes within
    /// about this plus `request.timeout.ms` of its send, whatever `message.send.max.retries`
    /// allows; a record may also fail earlier, when its retries run out. A RecordBatch v2
    /// batch expires whole, by its oldest record (as Java's); Message v0 records one by one (up
    /// to a sixteenth of the linger early, as a linger may end). Must be at least
    /// `queue.buffering.max.ms` + `request.timeout.ms` (Java's rule). Default: none (`None`;
    /// `-1` as a property): a record waits until it is sent and its retries or metadata
    /// refreshes run out, as with 0.8.2's producer.
    pub fn delivery_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.config.delivery_timeout = timeout;
        self
    }

    /// `topic.metadata.refresh.interval.ms`: metadata is refreshed after failures and also
    /// this often; each refresh picks a new partition for null-key records
    /// ([`PartitionerKind::Default08`]). `None` (Kafka's negative value) refreshes only after
    /// failures, `Some(Duration::ZERO)` after every request (costly). Default: 600 s
    /// ([`DEFAULT_TOPIC_METADATA_REFRESH_INTERVAL`]).
    pub fn topic_metadata_refresh_interval(mut self, interval: Option<Duration>) -> Self {
        self.config.topic_metadata_refresh_interval = interval;
        self
    }

    /// `compression.codec`: none, gzip, snappy, lz4 or zstd. Default: none
    /// ([`DEFAULT_COMPRESSION_CODEC`]). A compressed batch travels as one wrapper message
    /// (one RecordBatch from Kafka 0.11); it costs CPU on the producer (and on a 0.8 broker,
    /// which recompresses) and saves bandwidth and disk. zstd needs Kafka 2.1 (Produce v7, so
    /// `api.version.request` on): a batch for an older leader fails, naming why.
    pub fn compression_codec(mut self, codec: Compression) -> Self {
        self.config.compression_codec = codec;
        self
    }

    /// `compressed.topics`: the topics the codec applies to; empty (the default) means every
    /// topic. Ignored (with a warning) when the codec is none.
    pub fn compressed_topics<I, S>(mut self, topics: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.config.compressed_topics = topics.into_iter().map(Into::into).collect();
        self
    }

    /// `client.id`: the name in every request, shown in broker logs and metrics. Default:
    /// `""` ([`DEFAULT_CLIENT_ID`]).
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.config.client_id = client_id.into();
        self
    }

    /// `send.buffer.bytes`: the sockets' `SO_SNDBUF`. Default: 100 KiB
    /// ([`DEFAULT_SEND_BUFFER_BYTES`]).
    pub fn send_buffer_bytes(mut self, bytes: usize) -> Self {
        self.config.send_buffer_bytes = bytes;
        self
    }

    /// The partitioner (`partitioner.class`). Default: [`PartitionerKind::Default08`] (keyed
    /// records by murmur2, null keys stick to one random partition per topic until the next
    /// metadata refresh, as 0.8.2's `kafka.producer.DefaultPartitioner` does for null keys).
    pub fn partitioner(mut self, partitioner: PartitionerKind) -> Self {
        self.config.partitioner = partitioner;
        self
    }

    /// `security.protocol` and the `ssl.*` / `sasl.*` settings of every broker connection, as
    /// [`gregor_net::Security`] (TLS settings, SASL credentials). Default: plaintext.
    pub fn security(mut self, security: Security) -> Self {
        self.config.security = security;
        self
    }

    /// `api.version.request`: ask each broker for its versions and send the highest both
    /// speak (see the module docs). Default: true.
    pub fn api_version_request(mut self, on: bool) -> Self {
        self.config.api_version_request = on;
        self
    }

    /// `enable.idempotence`: the broker keeps each partition's records in the order sent and
    /// writes a retried batch at most once, as Java's and librdkafka's idempotent producers
    /// (KIP-98): the producer asks for a producer id (InitProducerId) and numbers each
    /// partition's records. Needs brokers from Kafka 0.11 (RecordBatch v2, so
    /// `api.version.request` on), `request.required.acks=-1`, `message.send.max.retries` of at
    /// least 1 and `max.in.flight.requests.per.connection` of at most 5. Default: false.
    pub fn enable_idempotence(mut self, on: bool) -> Self {
        self.config.enable_idempotence = on;
        self
    }

    /// `broker.version.fallback`: the release (0.8.0 to 0.9.0) whose versions a broker that
    /// does not answer ApiVersions gets. Default: 0.8.2.
    pub fn broker_version_fallback(mut self, release: BrokerVersionFallback) -> Self {
        self.config.broker_version_fallback = release;
        self
    }

    /// Checks the settings.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Missing`] without `metadata.broker.list`; [`ConfigError::Invalid`] for a
    /// malformed `metadata.broker.list` (every entry `host:port`, port 1 to 65535), acks other
    /// than -1, 0 and 1, a `request.timeout.ms` of zero, a duration over 2147483647 ms, a zero
    /// queue capacity, `batch.num.messages` or `send.buffer.bytes`, a count over 2147483647, a
    /// `batch.num.messages` above `queue.buffering.max.messages`, a `client.id` that
    /// [`validate_client_id`] refuses (Kafka's characters, at most 32767
    /// bytes), or an illegal topic name in `compressed.topics`.
    pub fn build(self) -> Result<ProducerConfig, ConfigError> {
        let c = self.config;
        gregor_net::config::validate_broker_list(&c.metadata_broker_list)?;
        if !matches!(c.request_required_acks, -1..=1) {
            return Err(ConfigError::invalid("request.required.acks", c.request_required_acks, ACKS_REASON));
        }
        check_ms("request.timeout.ms", c.request_timeout, 1)?;
        check_ms("queue.buffering.max.ms", c.queue_buffering_max, 0)?;
        check_count("queue.buffering.max.messages", c.queue_buffering_max_messages, 1)?;
        if let Some(bytes) = c.queue_buffering_max_bytes {
            if bytes < 1 {
                return Err(ConfigError::invalid("queue.buffering.max.bytes", bytes, "must be at least 1"));
            }
        }
        if let EnqueueTimeout::Wait(d) = c.queue_enqueue_timeout {
            check_ms("queue.enqueue.timeout.ms", d, 0)?;
        }
        check_count("batch.num.messages", c.batch_num_messages, 1)?;
        if let Some(bytes) = c.batch_size {
            check_count("batch.size", bytes, 0)?;
        }
        if c.batch_num_messages > c.queue_buffering_max_messages {
            return Err(ConfigError::invalid(
                "batch.num.messages",
                c.batch_num_messages,
                format!(
                    "must not exceed queue.buffering.max.messages ({}): a batch could never fill; lower it or \
                     raise the queue",
                    c.queue_buffering_max_messages
                ),
            ));
        }
        check_count("message.send.max.retries", c.message_send_max_retries, 0)?;
        check_count("max.in.flight.requests.per.connection", c.max_in_flight, 1)?;
        check_ms("retry.backoff.ms", c.retry_backoff, 0)?;
        if let Some(timeout) = c.delivery_timeout {
            check_ms("delivery.timeout.ms", timeout, 1)?;
            let least = c.queue_buffering_max + c.request_timeout;
            if timeout < least {
                return Err(ConfigError::invalid(
                    "delivery.timeout.ms",
                    timeout.as_millis(),
                    format!(
                        "must be at least queue.buffering.max.ms + request.timeout.ms ({} ms): a record must be \
                         able to wait out its linger and one request",
                        least.as_millis()
                    ),
                ));
            }
        }
        if c.compression_codec == Compression::Zstd && !c.api_version_request {
            return Err(ConfigError::invalid(
                "compression.codec",
                "zstd",
                "needs api.version.request=true: zstd batches need Kafka 2.1 (Produce v7), whose versions must be negotiated",
            ));
        }
        if c.enable_idempotence {
            let needs = |property: &'static str, value: String, reason: &str| {
                Err(ConfigError::invalid(property, value, format!("enable.idempotence needs {reason}")))
            };
            if c.request_required_acks != -1 {
                return needs(
                    "request.required.acks",
                    c.request_required_acks.to_string(),
                    "-1 (acks=all): a record the leader alone holds can be lost",
                );
            }
            if c.message_send_max_retries == 0 {
                return needs("message.send.max.retries", "0".to_owned(), "at least 1 retry");
            }
            if c.max_in_flight > 5 {
                return needs(
                    "max.in.flight.requests.per.connection",
                    c.max_in_flight.to_string(),
                    "at most 5 (a broker remembers the last 5 batches of a producer)",
                );
            }
            if !c.api_version_request {
                return needs(
                    "api.version.request",
                    "false".to_owned(),
                    "true: producer ids come with Kafka 0.11, whose versions must be negotiated",
                );
            }
        }
        if let Some(d) = c.topic_metadata_refresh_interval {
            check_ms("topic.metadata.refresh.interval.ms", d, 0)?;
        }
        let bad_topic = c.compressed_topics.iter().find_map(|t| validate_topic_name(t).err().map(|e| (t, e)));
        if let Some((topic, e)) = bad_topic {
            let list = c.compressed_topics.iter().map(String::as_str).collect::<Vec<_>>().join(",");
            return Err(ConfigError::invalid(
                "compressed.topics",
                list,
                format!("topic {:?} {e}", shorten(topic.clone())),
            ));
        }
        validate_client_id(&c.client_id)?;
        check_count("send.buffer.bytes", c.send_buffer_bytes, 1)?;
        warn_suspicious(&c);
        Ok(c)
    }
}

/// The two-tier check's second tier: legal, but probably not what was meant.
fn warn_suspicious(c: &ProducerConfig) {
    if c.compression_codec == Compression::None && !c.compressed_topics.is_empty() {
        tracing::warn!(
            compressed_topics = ?c.compressed_topics,
            "compressed.topics is set but compression.codec is none: nothing is compressed"
        );
    }
    if c.topic_metadata_refresh_interval == Some(Duration::ZERO) {
        tracing::warn!("topic.metadata.refresh.interval.ms=0 refreshes metadata after every request");
    }
    if c.message_send_max_retries > 0 && c.retry_backoff.is_zero() {
        tracing::warn!("retry.backoff.ms=0: retries will not wait for a leader election to finish");
    }
    if c.producer_type == ProducerType::Async && c.queue_buffering_max.is_zero() && c.batch_num_messages > 1 {
        tracing::warn!("queue.buffering.max.ms=0 with producer.type=async: records are sent nearly one by one");
    }
    if let EnqueueTimeout::Wait(d) = c.queue_enqueue_timeout {
        if d > c.response_timeout() * (c.message_send_max_retries + 1) {
            tracing::warn!(
                queue_enqueue_timeout_ms = d.as_millis() as u64,
                "queue.enqueue.timeout.ms is longer than a record can take to fail: -1 (block) says the same"
            );
        }
    }
    if c.request_required_acks == 1 && c.message_send_max_retries == 0 {
        tracing::debug!("acks=1 without retries: a leader change fails records");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Holds the constants against Kafka 0.8.2's documented producer defaults (the
    /// "Producer Configs" table of the 0.8.2 documentation), and the builder's defaults against
    /// the constants. tests/config.rs holds `to_properties` of the defaults against the same
    /// table, property by property.
    #[test]
    fn defaults_are_kafka_0_8_2s() {
        let ms = Duration::from_millis;
        assert_eq!(DEFAULT_PRODUCER_TYPE, ProducerType::Sync);
        assert_eq!(DEFAULT_REQUEST_REQUIRED_ACKS, 0);
        assert_eq!(DEFAULT_REQUEST_TIMEOUT, ms(10_000));
        assert_eq!(DEFAULT_QUEUE_BUFFERING_MAX, ms(5000));
        assert_eq!(DEFAULT_QUEUE_BUFFERING_MAX_MESSAGES, 10_000);
        assert_eq!(DEFAULT_QUEUE_ENQUEUE_TIMEOUT.as_ms(), -1);
        assert_eq!(DEFAULT_BATCH_NUM_MESSAGES, 200);
        assert_eq!(DEFAULT_MESSAGE_SEND_MAX_RETRIES, 3);
        assert_eq!(DEFAULT_RETRY_BACKOFF, ms(100));
        assert_eq!(DEFAULT_TOPIC_METADATA_REFRESH_INTERVAL, ms(600_000));
        assert_eq!(DEFAULT_COMPRESSION_CODEC, Compression::None);
        assert_eq!(DEFAULT_CLIENT_ID, "");
        assert_eq!(DEFAULT_SEND_BUFFER_BYTES, 100 * 1024);
        assert_eq!(DEFAULT_PARTITIONER_CLASS, "kafka.producer.DefaultPartitioner");
        assert_eq!(DEFAULT_SERIALIZER_CLASS, "kafka.serializer.DefaultEncoder");
        let c = ProducerConfig::builder().metadata_broker_list("k:9092").build().unwrap();
        assert_eq!((c.producer_type(), c.request_required_acks()), (DEFAULT_PRODUCER_TYPE, 0));
        assert_eq!((c.request_timeout(), c.queue_buffering_max()), (DEFAULT_REQUEST_TIMEOUT, ms(5000)));
        assert_eq!((c.queue_buffering_max_messages(), c.batch_num_messages()), (10_000, 200));
        assert_eq!(c.queue_enqueue_timeout(), DEFAULT_QUEUE_ENQUEUE_TIMEOUT);
        assert_eq!((c.message_send_max_retries(), c.retry_backoff()), (3, DEFAULT_RETRY_BACKOFF));
        assert_eq!(c.topic_metadata_refresh_interval(), Some(DEFAULT_TOPIC_METADATA_REFRESH_INTERVAL));
        assert_eq!((c.compression_codec(), c.compressed_topics().len()), (Compression::None, 0));
        assert_eq!((c.client_id(), c.send_buffer_bytes()), ("", DEFAULT_SEND_BUFFER_BYTES));
        assert_eq!(c.partitioner().class_name(), DEFAULT_PARTITIONER_CLASS);
        assert_eq!((c.serializer_class(), c.key_serializer_class()), (None, None));
    }

    #[test]
    fn from_properties_reads_kafkas_names() {
        let c = ProducerConfig::from_properties([
            ("metadata.broker.list", " a:1, b:2 "),
            ("producer.type", "async"),
            ("request.required.acks", "-1"),
            ("request.timeout.ms", "1500"),
            ("queue.buffering.max.ms", "0"),
            ("queue.buffering.max.messages", "500"),
            ("queue.enqueue.timeout.ms", "250"),
            ("batch.num.messages", "50"),
            ("message.send.max.retries", "0"),
            ("retry.backoff.ms", "20"),
            ("topic.metadata.refresh.interval.ms", "-1"),
            ("compression.codec", "2"),
            ("compressed.topics", "a, b,,"),
            ("client.id", "app"),
            ("send.buffer.bytes", "65536"),
            ("partitioner.class", "round_robin"),
            ("key.serializer.class", "kafka.serializer.StringEncoder"),
        ])
        .unwrap();
        assert_eq!(c.metadata_broker_list(), "a:1, b:2");
        assert_eq!(c.producer_type(), ProducerType::Async);
        assert_eq!(c.request_required_acks(), -1);
        assert_eq!(c.request_timeout(), Duration::from_millis(1500));
        assert_eq!(c.response_timeout(), Duration::from_millis(2500));
        assert_eq!(c.queue_buffering_max(), Duration::ZERO);
        assert_eq!(c.queue_buffering_max_messages(), 500);
        assert_eq!(c.queue_enqueue_timeout(), EnqueueTimeout::Wait(Duration::from_millis(250)));
        assert_eq!(c.batch_num_messages(), 50);
        assert_eq!(c.message_send_max_retries(), 0);
        assert_eq!(c.retry_backoff(), Duration::from_millis(20));
        assert_eq!(c.topic_metadata_refresh_interval(), None);
        assert_eq!(c.compression_codec(), Compression::Snappy);
        assert_eq!(c.compressed_topics().iter().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(c.compression_for("a"), Compression::Snappy);
        assert_eq!(c.compression_for("c"), Compression::None);
        assert_eq!(c.client_id(), "app");
        assert_eq!(c.send_buffer_bytes(), 65536);
        assert!(matches!(c.partitioner(), PartitionerKind::RoundRobin));
        assert_eq!(c.key_serializer_class(), Some("kafka.serializer.StringEncoder"));
        let all =
            ProducerConfig::from_properties([("metadata.broker.list", "a:1"), ("compression.codec", "gzip")]).unwrap();
        assert_eq!(all.compression_for("anything"), Compression::Gzip, "empty compressed.topics = all");
    }

    #[test]
    fn todays_names_are_read_as_the_classic_settings() {
        let c = ProducerConfig::from_properties([
            ("bootstrap.servers", "a:1,b:2"),
            ("acks", "all"),
            ("linger.ms", "5"),
            ("retries", "7"),
            ("compression.type", "lz4"),
            ("max.block.ms", "250"),
            ("metadata.max.age.ms", "30000"),
            ("enable.idempotence", "false"),
        ])
        .unwrap();
        assert_eq!(c.metadata_broker_list(), "a:1,b:2");
        assert_eq!(c.request_required_acks(), -1);
        assert_eq!(c.queue_buffering_max(), Duration::from_millis(5));
        assert_eq!(c.message_send_max_retries(), 7);
        assert_eq!(c.compression_codec(), Compression::Lz4);
        assert_eq!(c.queue_enqueue_timeout(), EnqueueTimeout::Wait(Duration::from_millis(250)));
        assert_eq!(c.topic_metadata_refresh_interval(), Some(Duration::from_secs(30)));
        // both names with different values: which one was meant cannot be guessed
        let e = ProducerConfig::from_properties([
            ("bootstrap.servers", "a:1"),
            ("linger.ms", "5"),
            ("queue.buffering.max.ms", "10"),
        ])
        .unwrap_err();
        assert!(matches!(e, ConfigError::Conflict { first: "linger.ms", second: "queue.buffering.max.ms", .. }), "{e}");
        // errors name the property as given
        let e = ProducerConfig::from_properties([("bootstrap.servers", "a:1"), ("acks", "most")]).unwrap_err();
        assert_eq!(e.property(), "acks");
        // Java's buffer.memory is queue.buffering.max.bytes
        let c = ProducerConfig::from_properties([("bootstrap.servers", "a:1"), ("buffer.memory", "33554432")]).unwrap();
        assert_eq!(c.queue_buffering_max_bytes(), Some(33_554_432));
        assert!(c.to_properties().contains(&("queue.buffering.max.bytes", "33554432".to_owned())));
        let e = ProducerConfig::from_properties([
            ("bootstrap.servers", "a:1"),
            ("buffer.memory", "1000"),
            ("queue.buffering.max.bytes", "2000"),
        ])
        .unwrap_err();
        assert!(matches!(e, ConfigError::Conflict { .. }), "{e}");
        // 0: no byte bound (the default)
        let c = ProducerConfig::from_properties([("bootstrap.servers", "a:1"), ("queue.buffering.max.bytes", "0")])
            .unwrap();
        assert_eq!(c.queue_buffering_max_bytes(), None);
        // Java's delivery.timeout.ms: at least the linger and a request
        let c =
            ProducerConfig::from_properties([("bootstrap.servers", "a:1"), ("delivery.timeout.ms", "120000")]).unwrap();
        assert_eq!(c.delivery_timeout(), Some(Duration::from_secs(120)));
        let e = ProducerConfig::from_properties([
            ("bootstrap.servers", "a:1"),
            ("linger.ms", "100"),
            ("request.timeout.ms", "1000"),
            ("delivery.timeout.ms", "1099"),
        ])
        .unwrap_err();
        assert_eq!(e.property(), "delivery.timeout.ms");
        assert!(e.to_string().contains("at least queue.buffering.max.ms + request.timeout.ms (1100 ms)"), "{e}");
        // Java's batch.size: the byte bound of a partition's batch; -1 none
        let c = ProducerConfig::from_properties([("bootstrap.servers", "a:1"), ("batch.size", "16384")]).unwrap();
        assert_eq!(c.batch_size(), Some(16_384));
        assert!(c.to_properties().contains(&("batch.size", "16384".to_owned())));
        let c = ProducerConfig::from_properties([("bootstrap.servers", "a:1"), ("batch.size", "0")]).unwrap();
        assert_eq!(c.batch_size(), Some(0));
        let c = ProducerConfig::from_properties([("bootstrap.servers", "a:1"), ("batch.size", "-1")]).unwrap();
        assert_eq!(c.batch_size(), None);
    }

    #[test]
    fn unknown_properties_are_named() {
        let e = ProducerConfig::from_properties([("metadata.broker.list", "a:1"), ("lingre.ms", "5")]).unwrap_err();
        assert_eq!(
            e,
            ConfigError::UnknownProperty { client: "producer", property: "lingre.ms".into(), known: PROPERTIES }
        );
        assert!(e.to_string().starts_with("unknown producer property \"lingre.ms\"; known: metadata.broker.list"));
    }

    fn invalid_property(props: &[(&str, &str)]) -> (&'static str, String, String) {
        let mut all = vec![("metadata.broker.list", "a:1")];
        all.extend_from_slice(props);
        match ProducerConfig::from_properties(all) {
            Err(ConfigError::Invalid { property, value, reason }) => (property, value, reason),
            other => panic!("{props:?} gave {other:?}"),
        }
    }

    #[test]
    fn every_invalid_value_names_its_property() {
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);
        let cases: &[Case<'_>] = &[
            (&[("request.required.acks", "2")], "request.required.acks", "2"),
            (&[("request.required.acks", "-2")], "request.required.acks", "-2"),
            (&[("request.required.acks", "all")], "request.required.acks", "all"),
            (&[("producer.type", "batch")], "producer.type", "batch"),
            (&[("request.timeout.ms", "0")], "request.timeout.ms", "0"),
            (&[("request.timeout.ms", "3000000000")], "request.timeout.ms", "3000000000"),
            (&[("queue.buffering.max.ms", "-5")], "queue.buffering.max.ms", "-5"),
            (&[("queue.buffering.max.messages", "0")], "queue.buffering.max.messages", "0"),
            (&[("queue.enqueue.timeout.ms", "-2")], "queue.enqueue.timeout.ms", "-2"),
            (&[("batch.num.messages", "0")], "batch.num.messages", "0"),
            (&[("queue.buffering.max.messages", "100"), ("batch.num.messages", "101")], "batch.num.messages", "101"),
            (&[("message.send.max.retries", "-1")], "message.send.max.retries", "-1"),
            (&[("retry.backoff.ms", "x")], "retry.backoff.ms", "x"),
            (&[("compression.codec", "zstd"), ("api.version.request", "false")], "compression.codec", "zstd"),
            (&[("compression.codec", "brotli")], "compression.codec", "brotli"),
            (&[("send.buffer.bytes", "0")], "send.buffer.bytes", "0"),
            (&[("partitioner.class", "com.example.Mine")], "partitioner.class", "com.example.Mine"),
            (&[("serializer.class", "com.example.AvroEncoder")], "serializer.class", "com.example.AvroEncoder"),
            (&[("metadata.broker.list", "nohost")], "metadata.broker.list", "nohost"),
        ];
        for (props, property, value) in cases {
            let (p, v, reason) = invalid_property(props);
            assert_eq!((p, v.as_str()), (*property, *value), "{props:?}: {reason}");
            assert!(!reason.is_empty());
        }
        let e = ProducerConfig::builder().build().unwrap_err();
        assert_eq!(e.to_string(), "missing required property metadata.broker.list", "the list is required");
        let e = ProducerConfig::from_properties([("metadata.broker.list", " ")]).unwrap_err();
        assert_eq!(e, ConfigError::Missing { property: "metadata.broker.list" });
        let e = ProducerConfig::builder()
            .metadata_broker_list("a:1")
            .queue_buffering_max_messages(10)
            .batch_num_messages(20)
            .build()
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid value \"20\" for batch.num.messages: must not exceed queue.buffering.max.messages (10): a \
             batch could never fill; lower it or raise the queue"
        );
    }

    #[test]
    fn security_properties_are_read_beside_the_producers_and_secrets_stay_hidden() {
        let c = ProducerConfig::from_properties([
            ("bootstrap.servers", "a:1"),
            ("security.protocol", "SASL_SSL"),
            ("enable.ssl.certificate.verification", "false"),
            ("sasl.mechanism", "SCRAM-SHA-256"),
            ("sasl.username", "app"),
            ("sasl.password", "app-secret"),
        ])
        .unwrap();
        assert_eq!(c.security().protocol(), gregor_net::SecurityProtocol::SaslSsl);
        assert_eq!(c.security().sasl().unwrap().username, "app");
        assert!(!format!("{c:?}").contains("app-secret"));
        let props = c.to_properties();
        assert!(props.contains(&("sasl.password", "***".to_owned())), "{props:?}");
        assert!(!format!("{props:?}").contains("app-secret"));
        // plaintext adds nothing to the 0.8.2 table
        let plain = ProducerConfig::from_properties([("bootstrap.servers", "a:1")]).unwrap();
        assert_eq!(plain.to_properties().len(), PROPERTIES.len());
        assert_eq!(*plain.security(), Security::plaintext());
        // the errors are the security reader's, naming the property
        let e = ProducerConfig::from_properties([("bootstrap.servers", "a:1"), ("ssl.ca.location", "/ca.pem")])
            .unwrap_err();
        assert_eq!(e.property(), "ssl.ca.location");
        let e = ProducerConfig::from_properties([("bootstrap.servers", "a:1"), ("sasl.password", "app-secret")])
            .unwrap_err();
        assert!(e.to_string().contains("\"***\" for sasl.password"), "{e}");
        assert!(!e.to_string().contains("app-secret"));
        let e = ProducerConfig::from_properties([("bootstrap.servers", "a:1"), ("security.protocol", "SASL_SSL")])
            .unwrap_err();
        assert_eq!(e, ConfigError::missing("sasl.mechanism"));
        // the builder takes the net type
        let s = gregor_net::Security::from_properties([
            ("security.protocol", "SSL"),
            ("enable.ssl.certificate.verification", "false"),
        ])
        .unwrap();
        let c = ProducerConfig::builder().metadata_broker_list("a:1").security(s.clone()).build().unwrap();
        assert_eq!(*c.security(), s);
    }

    #[test]
    fn enqueue_timeout_maps_kafkas_numbers() {
        assert_eq!(EnqueueTimeout::from_ms(-1).unwrap(), EnqueueTimeout::Block);
        assert_eq!(EnqueueTimeout::from_ms(0).unwrap(), EnqueueTimeout::FailFast);
        assert_eq!(EnqueueTimeout::from_ms(30).unwrap(), EnqueueTimeout::Wait(Duration::from_millis(30)));
        assert!(EnqueueTimeout::from_ms(-7).is_err());
        for ms in [-1, 0, 30] {
            assert_eq!(EnqueueTimeout::from_ms(ms).unwrap().as_ms(), ms);
        }
    }
}

//! What the coordinator asks a worker to do and what the worker reports (one JSON line).

use serde::{Deserialize, Serialize};

/// The producers under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Client {
    /// gregor's AsyncProducer on tokio's multi-thread runtime (what `#[tokio::main]` gives).
    Gregor,
    /// gregor's AsyncProducer on a current-thread runtime (opt-in: `--clients ...,gregor-ct`).
    GregorCt,
    /// librdkafka through the rdkafka crate (BaseProducer), in 0.8.2 mode.
    Librdkafka,
    /// kafka-rust (the `kafka` crate), synchronous Producer::send_all.
    KafkaRust,
}

impl Client {
    pub const ALL: [Client; 4] = [Client::Gregor, Client::GregorCt, Client::Librdkafka, Client::KafkaRust];

    pub fn name(self) -> &'static str {
        match self {
            Client::Gregor => "gregor",
            Client::GregorCt => "gregor-ct",
            Client::Librdkafka => "librdkafka",
            Client::KafkaRust => "kafka-rust",
        }
    }

    pub fn parse(s: &str) -> Option<Client> {
        match s {
            "gregor" => Some(Client::Gregor),
            "gregor-ct" => Some(Client::GregorCt),
            "librdkafka" | "rdkafka" => Some(Client::Librdkafka),
            "kafka-rust" | "kafka" | "kafka_rust" => Some(Client::KafkaRust),
            _ => None,
        }
    }

    pub fn is_gregor(self) -> bool {
        matches!(self, Client::Gregor | Client::GregorCt)
    }

    /// Why this client cannot run `codec` in Kafka 0.8.2 mode (the report prints "n/a" and
    /// this reason), or None when it can.
    pub fn unsupported(self, codec: Codec) -> Option<&'static str> {
        match (self, codec) {
            (Client::KafkaRust, Codec::Lz4) => {
                Some("kafka-rust 0.10 has no lz4: its producer Compression is NONE, GZIP or SNAPPY")
            }
            (Client::KafkaRust, Codec::Zstd) => {
                Some("kafka-rust 0.10 has no zstd: its producer Compression is NONE, GZIP or SNAPPY")
            }
            _ => None,
        }
    }
}

/// The consumers under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConsumerClient {
    /// gregor's SimpleConsumer: one `fetch` of every unfinished partition per round (one Fetch
    /// request per leader, all leaders at once).
    GregorSimple,
    /// gregor's high-level ZooKeeper group consumer: one member, n streams, a task per stream.
    GregorGroup,
    /// librdkafka (rdkafka crate BaseConsumer), `assign()` of every partition at an explicit
    /// offset, no offset commits, 0.8.2 mode.
    Librdkafka,
    /// kafka-rust's Consumer (Fetch v0), no group, no offset storage, from the earliest offset.
    KafkaRust,
}

impl ConsumerClient {
    pub const ALL: [ConsumerClient; 4] = [
        ConsumerClient::GregorSimple,
        ConsumerClient::GregorGroup,
        ConsumerClient::Librdkafka,
        ConsumerClient::KafkaRust,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ConsumerClient::GregorSimple => "gregor-simple",
            ConsumerClient::GregorGroup => "gregor-group",
            ConsumerClient::Librdkafka => "librdkafka",
            ConsumerClient::KafkaRust => "kafka-rust",
        }
    }

    pub fn parse(s: &str) -> Option<ConsumerClient> {
        match s {
            "gregor-simple" | "simple" => Some(ConsumerClient::GregorSimple),
            "gregor-group" | "group" | "gregor-hl" => Some(ConsumerClient::GregorGroup),
            "librdkafka" | "rdkafka" => Some(ConsumerClient::Librdkafka),
            "kafka-rust" | "kafka" | "kafka_rust" => Some(ConsumerClient::KafkaRust),
            _ => None,
        }
    }

    pub fn is_gregor(self) -> bool {
        matches!(self, ConsumerClient::GregorSimple | ConsumerClient::GregorGroup)
    }

    /// Why this consumer cannot read a topic compressed with `codec`, or None.
    pub fn unsupported(self, codec: Codec) -> Option<&'static str> {
        match (self, codec) {
            (ConsumerClient::KafkaRust, Codec::Lz4) => {
                Some("kafka-rust 0.10 cannot decode lz4: its fetch decoder fails with UnsupportedCompression")
            }
            (ConsumerClient::KafkaRust, Codec::Zstd) => {
                Some("kafka-rust 0.10 cannot decode zstd: its fetch decoder fails with UnsupportedCompression")
            }
            _ => None,
        }
    }
}

/// Compression codecs of the benchmark: Kafka 0.8.2's four, and zstd (Kafka 2.1+: RecordBatch
/// v2 only), which runs on the modern profile alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Codec {
    None,
    Snappy,
    Gzip,
    Lz4,
    Zstd,
}

impl Codec {
    /// Kafka 0.8.2's codecs: the default.
    pub const ALL: [Codec; 4] = [Codec::None, Codec::Snappy, Codec::Gzip, Codec::Lz4];

    pub fn name(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Snappy => "snappy",
            Codec::Gzip => "gzip",
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
        }
    }

    pub fn parse(s: &str) -> Option<Codec> {
        Codec::ALL.into_iter().chain([Codec::Zstd]).find(|c| c.name() == s)
    }

    /// Only RecordBatch v2 carries it: a Kafka 0.8.2 profile leaves it out.
    pub fn needs_modern(self) -> bool {
        self == Codec::Zstd
    }

    /// gregor-protocol's codec.
    pub fn gregor(self) -> gregor_protocol::Compression {
        match self {
            Codec::None => gregor_protocol::Compression::None,
            Codec::Snappy => gregor_protocol::Compression::Snappy,
            Codec::Gzip => gregor_protocol::Compression::Gzip,
            Codec::Lz4 => gregor_protocol::Compression::Lz4,
            Codec::Zstd => gregor_protocol::Compression::Zstd,
        }
    }
}

/// What a worker process runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum WorkerSpec {
    Produce(RunSpec),
    Consume(ConsumeSpec),
    Codec(CodecSpec),
}

/// One producer run: one client, one config, one fresh topic.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunSpec {
    pub client: Client,
    pub brokers: String,
    pub topic: String,
    pub partitions: i32,
    pub acks: i16,
    pub codec: Codec,
    pub messages: usize,
    pub message_size: usize,
    /// Messages per partition batch (librdkafka `batch.num.messages`); gregor's
    /// `batch.num.messages` (per broker request) is this times the partitions each broker
    /// leads; kafka-rust's `send_all` slice is this times the partitions.
    pub batch: usize,
    /// gregor `queue.buffering.max.ms`, librdkafka `linger.ms`.
    pub linger_ms: u64,
    /// gregor and librdkafka `queue.buffering.max.messages`.
    pub queue: usize,
    /// Messages per second handed to the client (None: as fast as it takes them).
    #[serde(default)]
    pub rate: Option<f64>,
    /// The cluster's timing profile (None: an external cluster), for the JSON's readers.
    #[serde(default)]
    pub timing: Option<String>,
    /// Partitions led per broker (for gregor's per-request batch size).
    pub partitions_per_broker: usize,
    /// `--librdkafka K=V`: librdkafka properties set after the benchmark's own.
    #[serde(default)]
    pub librdkafka: Vec<(String, String)>,
}

/// What a producer worker measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    pub spec: RunSpec,
    pub acked: usize,
    pub failed: usize,
    pub first_error: Option<String>,
    /// From just before the producer is created until the last acknowledgement.
    pub elapsed_s: f64,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    #[serde(default)]
    pub p999_us: Option<f64>,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// The worker process's whole CPU time (start, run, close), for the coordinator's
    /// disturbance check.
    #[serde(default)]
    pub process_cpu_s: f64,
    /// VmHWM at the end of the run (KiB) and before the producer was created.
    pub peak_rss_kib: u64,
    pub baseline_rss_kib: u64,
    /// The most messages handed to the client and not yet acknowledged to the benchmark at
    /// once (sampled every 256 messages): its queue and what was in flight.
    #[serde(default)]
    pub peak_held: usize,
    /// Filled in by the coordinator: sum of the topic's high watermarks after the run.
    #[serde(default)]
    pub high_watermark_sum: Option<i64>,
    /// Filled in by the coordinator: each partition's high watermark after the run.
    #[serde(default)]
    pub high_watermarks: Vec<i64>,
    /// Filled in by the coordinator: CPU seconds the cluster process used during the run.
    #[serde(default)]
    pub cluster_cpu_s: Option<f64>,
    /// Filled in by the coordinator: CPU seconds the rest of the machine used during the run
    /// (all busy CPU less the worker process's and the cluster's): other work on the
    /// machine competing for its cores.
    #[serde(default)]
    pub other_cpu_s: Option<f64>,
    /// Filled in by the coordinator: 0 for the first attempt, n for the n-th redo.
    #[serde(default)]
    pub attempt: usize,
    /// Filled in by the coordinator: the machine's TCP timeouts, loss probes and
    /// retransmissions during the run.
    #[serde(default)]
    pub tcp: Option<crate::measure::TcpCounters>,
}

impl RunResult {
    pub fn rate(&self) -> f64 {
        self.acked as f64 / self.elapsed_s
    }

    /// The client's own memory: peak RSS less the worker's RSS before the client was made
    /// (the benchmark's payload pool and its per-message latency arrays, the same for all).
    pub fn client_kib(&self) -> u64 {
        self.peak_rss_kib.saturating_sub(self.baseline_rss_kib)
    }
}

/// One consumer run: read a topic the bench's producer filled, from offset 0 to the end
/// offsets given.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConsumeSpec {
    pub client: ConsumerClient,
    pub brokers: String,
    pub zookeeper: String,
    pub topic: String,
    pub partitions: i32,
    /// The codec the topic was written with (for the report).
    pub codec: Codec,
    /// Per partition: the offset after its last message (its high watermark).
    pub end_offsets: Vec<i64>,
    /// Messages in the topic: the bench's messages 0..N (payload i mod pool), so the
    /// fingerprint every consumer must arrive at is known.
    pub messages: usize,
    pub message_size: usize,
    /// `fetch.message.max.bytes` (gregor, librdkafka), kafka-rust's max bytes per partition.
    pub fetch_max_bytes: i32,
    /// `fetch.wait.max.ms` of every client.
    pub fetch_wait_ms: u64,
    /// Streams of the group consumer's one member.
    pub streams: usize,
    /// Which producer wrote the topic (for the report).
    pub written_by: String,
    /// The cluster's timing profile (None: an external cluster), for the JSON's readers.
    #[serde(default)]
    pub timing: Option<String>,
    /// `--librdkafka K=V`: librdkafka properties set after the benchmark's own.
    #[serde(default)]
    pub librdkafka: Vec<(String, String)>,
}

/// What a consumer worker measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConsumeResult {
    pub spec: ConsumeSpec,
    /// Distinct messages read (in offset order per partition).
    pub messages: u64,
    /// Value bytes of those messages.
    pub bytes: u64,
    /// Messages delivered again (an offset below the partition's next expected one).
    pub duplicates: u64,
    /// Offsets skipped (an offset above the partition's next expected one).
    pub gaps: u64,
    /// The order-independent fingerprint of the values read, and the one expected.
    pub fingerprint: u64,
    pub expected_fingerprint: u64,
    /// From creating the consumer to its first message handed to the app.
    pub startup_s: f64,
    /// From creating the consumer to its last message: the rate is `messages / elapsed_s`
    /// (a batch-fetching consumer hands out its first messages only once a whole fetch is in,
    /// so a rate from the first message on would flatter it).
    pub elapsed_s: f64,
    /// CPU from creating the consumer to the last message.
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    #[serde(default)]
    pub process_cpu_s: f64,
    pub peak_rss_kib: u64,
    pub baseline_rss_kib: u64,
    #[serde(default)]
    pub cluster_cpu_s: Option<f64>,
    #[serde(default)]
    pub other_cpu_s: Option<f64>,
    #[serde(default)]
    pub attempt: usize,
}

impl ConsumeResult {
    pub fn rate(&self) -> f64 {
        self.messages as f64 / self.elapsed_s.max(1e-9)
    }

    /// Why the run does not count, or None when it read exactly the topic.
    pub fn verify(&self) -> Option<String> {
        if self.messages != self.spec.messages as u64 || self.duplicates != 0 || self.gaps != 0 {
            return Some(format!(
                "read {} distinct messages of {} ({} duplicates, {} skipped offsets)",
                self.messages, self.spec.messages, self.duplicates, self.gaps
            ));
        }
        if self.fingerprint != self.expected_fingerprint {
            return Some(format!(
                "values' fingerprint {:#x}, expected {:#x}: some value differs from what was produced",
                self.fingerprint, self.expected_fingerprint
            ));
        }
        None
    }
}

/// The codec micro-benchmarks: `messages` messages of `message_size` bytes per set; each
/// operation timed for `samples` samples of at least `sample_ms`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CodecSpec {
    pub messages: usize,
    pub message_size: usize,
    pub samples: usize,
    pub sample_ms: u64,
}

/// One codec operation's timing.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CodecResult {
    /// `crc32`, `encode`, `decode`, `compress`, `decompress`.
    pub op: String,
    pub codec: Codec,
    /// Median over the samples, nanoseconds per message.
    pub ns_per_msg: f64,
    /// Fastest and slowest sample, ns per message.
    pub min_ns: f64,
    pub max_ns: f64,
    /// Uncompressed payload bytes (the values) per message, for MB/s.
    pub payload_bytes_per_msg: f64,
    /// Bytes in and out of one operation on the whole set.
    pub input_bytes: usize,
    pub output_bytes: usize,
}

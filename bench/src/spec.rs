//! What the coordinator asks a worker to do and what the worker reports (one JSON line).

use serde::{Deserialize, Serialize};

/// The three clients under test.
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
    pub const ALL: [Client; 3] = [Client::Gregor, Client::Librdkafka, Client::KafkaRust];

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
}

/// Compression codecs of the benchmark (Kafka 0.8.2's, less lz4 which kafka-rust lacks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Codec {
    None,
    Snappy,
    Gzip,
}

impl Codec {
    pub const ALL: [Codec; 3] = [Codec::None, Codec::Snappy, Codec::Gzip];

    pub fn name(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Snappy => "snappy",
            Codec::Gzip => "gzip",
        }
    }

    pub fn parse(s: &str) -> Option<Codec> {
        Codec::ALL.into_iter().find(|c| c.name() == s)
    }
}

/// One run: one client, one config, one fresh topic.
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
    /// `--rate`: messages per second handed to the client (None: as fast as it takes them).
    #[serde(default)]
    pub rate: Option<f64>,
    /// Partitions led per broker (for gregor's per-request batch size).
    pub partitions_per_broker: usize,
}

/// What a worker measured.
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
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// The worker process's whole CPU time (start, run, close), for the coordinator's
    /// disturbance check.
    #[serde(default)]
    pub process_cpu_s: f64,
    /// VmHWM at the end of the run (KiB) and before the producer was created.
    pub peak_rss_kib: u64,
    pub baseline_rss_kib: u64,
    /// Filled in by the coordinator: sum of the topic's high watermarks after the run.
    #[serde(default)]
    pub high_watermark_sum: Option<i64>,
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
}

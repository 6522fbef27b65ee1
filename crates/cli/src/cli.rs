//! The command line: subcommands, flags and their help, and the parsers of flag values.

use clap::builder::NonEmptyStringValueParser;
use clap::{value_parser, ArgGroup, Args, Parser, Subcommand, ValueEnum};
use gregor_protocol::messages::{EARLIEST_TIME, LATEST_TIME};

const ABOUT: &str = "Produce, fetch and consume on Kafka 0.8.2; administer topics, groups and replicas";

const LONG_ABOUT: &str = "\
Produce, fetch and consume on Kafka 0.8.2, with gregor's own clients; administer topics, \
replicas, consumer groups and the cluster through ZooKeeper, as Kafka 0.8.2's own tools do.

Exit codes: 0 on success, 1 on failure (the error and its causes on stderr), 2 on a usage \
error (a bad flag, an invalid --property).";

const EXAMPLES: &str = "\
Examples:
  printf 'k1:hello\\nk2:world\\n' | gregor produce --broker-list 127.0.0.1:9092 --topic events --key-separator :
  gregor fetch --broker-list 127.0.0.1:9092 --topic events --partition 0 --offset earliest --print-key
  gregor offsets --broker-list 127.0.0.1:9092 --topic events --time -1
  gregor fetch --bootstrap-server 127.0.0.1:9092 --topic events --partition 0 --offset earliest
  gregor consume --zookeeper 127.0.0.1:2181 --group billing --topic events --from-beginning
  gregor topics --zookeeper 127.0.0.1:2181 --create --topic events --partitions 6 --replication-factor 2
  gregor groups --zookeeper 127.0.0.1:2181 --describe --group billing";

/// The `gregor` command.
#[derive(Debug, Parser)]
#[command(name = "gregor", version, about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
#[command(propagate_version = true, subcommand_required = true, arg_required_else_help = true)]
pub(crate) struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Send one message per line of stdin to a topic
    #[command(long_about = PRODUCE_ABOUT)]
    Produce(ProduceArgs),
    /// Print the messages of one partition, one per line, from an offset
    #[command(long_about = FETCH_ABOUT)]
    Fetch(FetchArgs),
    /// Print partitions' offsets before a time, as Kafka's GetOffsetShell does (T:P:O1,O2)
    #[command(long_about = OFFSETS_ABOUT)]
    Offsets(OffsetsArgs),
    /// Print each broker's API versions and the one gregor uses of each, as Kafka's
    /// kafka-broker-api-versions.sh does
    ApiVersions(ApiVersionsArgs),
    /// Read topics as a member of a consumer group, one message value per line
    #[command(long_about = CONSUME_ABOUT)]
    Consume(ConsumeArgs),
    /// Create, list, describe, alter and delete topics (kafka-topics.sh)
    #[command(long_about = TOPICS_ABOUT)]
    Topics(TopicsArgs),
    /// List the brokers and the controller, from ZooKeeper or (with how gregor speaks to each
    /// broker) from a Metadata request
    #[command(long_about = BROKERS_ABOUT)]
    Brokers(BrokersArgs),
    /// List consumer groups, show their offsets and lag, reset their offsets
    #[command(long_about = GROUPS_ABOUT)]
    Groups(GroupsArgs),
    /// Under-replicated and offline partitions, leaders and partitions per broker
    Health(HealthArgs),
    /// Move partitions to other brokers (kafka-reassign-partitions.sh)
    #[command(long_about = REASSIGN_ABOUT)]
    Reassign(ReassignArgs),
    /// Move leadership back to the preferred replicas (kafka-preferred-replica-election.sh)
    #[command(long_about = ELECT_ABOUT)]
    ElectLeaders(ElectLeadersArgs),
    /// Measure producer or consumer throughput and latency
    #[command(subcommand)]
    Perf(PerfCommand),
    /// Check the audit: per topic and window, messages produced (by producers with audit on)
    /// against messages still in the log
    #[command(long_about = AUDIT_ABOUT)]
    Audit(AuditArgs),
}

const AUDIT_ABOUT: &str = "\
Check the audit (LinkedIn's pattern): per topic and window, the messages producers with audit \
on had acknowledged against the messages still in the log, so loss is detected.

Producers with audit on (gregor_producer::audit) publish, at the end of each window, the \
partitions, offset ranges and fingerprints of what they had acknowledged to an audit topic. \
This reads every audit record, then each claimed offset of each audited partition from its \
leader, and prints per topic and window: produced, seen, missing (absent from the log, or \
replaced by other messages after a truncation), failed (deliveries the producer saw fail: \
known losses, not missing), unverified (acknowledged with acks=0: no offsets), expired \
(deleted by retention) and the completeness; per partition also the messages no audit record \
accounts for (unaudited: producers without audit).

Exit codes: 0 when nothing is missing, 1 when anything is missing or a partition could not be \
read (or on failure), 2 on a usage error.";

/// Flags of `gregor audit`.
#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    #[command(flatten)]
    pub(crate) zk: ZkArgs,

    /// The topic producers publish audit records to
    #[arg(long, value_name = "TOPIC", default_value = gregor_producer::audit::DEFAULT_AUDIT_TOPIC, value_parser = NonEmptyStringValueParser::new())]
    pub(crate) audit_topic: String,

    /// Check only this topic (repeatable or comma-separated; reported even without audit
    /// records). Default: every topic the audit records name
    #[arg(long, value_name = "TOPIC", value_delimiter = ',', value_parser = NonEmptyStringValueParser::new())]
    pub(crate) topic: Vec<String>,

    /// Bytes per fetch (fetch.message.max.bytes); a larger message grows the fetch
    #[arg(long, value_name = "BYTES", value_parser = value_parser!(i32).range(1024..))]
    pub(crate) fetch_max_bytes: Option<i32>,

    /// table or json
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = OutputFormat::Table)]
    pub(crate) output: OutputFormat,
}

/// `gregor perf` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum PerfCommand {
    /// Send --messages messages of --message-size bytes; summary: messages/s, MB/s, p50/p99
    /// of the time from send to delivery
    Produce(PerfProduceArgs),
    /// Read --messages messages of --topic from the beginning as a new group; summary:
    /// messages/s, MB/s, p50/p99 of the wait per message
    Consume(PerfConsumeArgs),
}

/// Flags of `gregor perf produce`.
#[derive(Debug, Args)]
pub(crate) struct PerfProduceArgs {
    /// Brokers to bootstrap from, host:port[,host:port...]
    #[arg(
        long,
        visible_alias = "bootstrap-server",
        value_name = "HOST:PORT,...",
        value_parser = NonEmptyStringValueParser::new()
    )]
    pub(crate) broker_list: String,

    /// Topic to send to
    #[arg(long, value_name = "TOPIC", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) topic: String,

    /// How many messages
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..))]
    pub(crate) messages: u64,

    /// Bytes per message value: random uppercase letters, cycling through up to 4,096
    /// distinct values (so compression meets data a real topic could hold)
    #[arg(long, value_name = "BYTES", default_value_t = 100)]
    pub(crate) message_size: usize,

    /// A Kafka 0.8.2 producer property, repeatable (request.required.acks, compression.codec,
    /// batch.num.messages, ...). The messages have no key, so partitioner.class defaults to
    /// round_robin here (0.8's default partitioner would send them all to one partition); the
    /// summary names the partitioner and counts each partition's messages
    #[arg(long = "property", value_name = "KEY=VALUE", value_parser = parse_property)]
    pub(crate) properties: Vec<(String, String)>,

    /// A properties file (Kafka's format: key=value lines, # comments) read before the
    /// --property values, which win: typically the security settings shared by every command
    /// (security.protocol=SSL, ssl.ca.location, ssl.certificate.location, ssl.key.location,
    /// sasl.*), or any other property of this client
    #[arg(long, value_name = "FILE")]
    pub(crate) command_config: Option<std::path::PathBuf>,

    /// table or json
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = OutputFormat::Table)]
    pub(crate) output: OutputFormat,
}

/// Flags of `gregor perf consume`.
#[derive(Debug, Args)]
pub(crate) struct PerfConsumeArgs {
    /// ZooKeeper of the cluster (zookeeper.connect)
    #[arg(long, value_name = "HOST:PORT,...[/CHROOT]", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) zookeeper: String,

    /// Topic to read
    #[arg(long, value_name = "TOPIC", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) topic: String,

    /// Stop after N messages
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..))]
    pub(crate) messages: u64,

    /// Consumer group (default: gregor-perf-PID; offsets are not committed)
    #[arg(long, value_name = "GROUP", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) group: Option<String>,

    /// Stop after MS milliseconds without a message
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub(crate) timeout_ms: u64,

    /// A Kafka 0.8.2 consumer property, repeatable
    #[arg(long = "property", value_name = "KEY=VALUE", value_parser = parse_property)]
    pub(crate) properties: Vec<(String, String)>,

    /// A properties file (Kafka's format: key=value lines, # comments) read before the
    /// --property values, which win: typically the security settings shared by every command
    /// (security.protocol=SSL, ssl.ca.location, ssl.certificate.location, ssl.key.location,
    /// sasl.*), or any other property of this client
    #[arg(long, value_name = "FILE")]
    pub(crate) command_config: Option<std::path::PathBuf>,

    /// table or json
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = OutputFormat::Table)]
    pub(crate) output: OutputFormat,
}

const PRODUCE_ABOUT: &str = "\
Send one message per line of stdin to a topic.

Each line, without its trailing \\n, is one message; its bytes are sent unchanged (a \\r \
before the \\n is kept, an empty line is an empty message, a last line without \\n is sent \
too). Lines are read as they come and handed to gregor's asynchronous producer, which batches \
them (batch.num.messages, queue.buffering.max.ms); reading waits while the producer's queue \
(queue.buffering.max.messages) is full, so input of any size streams in bounded memory.

When stdin ends, every message's delivery is awaited. A summary goes to stderr: the messages \
sent (per partition) and every failure with its reason and input line numbers. The exit code \
is 1 if any message was not delivered. Ctrl-C stops reading and delivers what was read; a \
second Ctrl-C gives up on deliveries still pending (they are reported as failed).

Producer settings are Kafka 0.8.2's (see --property); this command's defaults differ from the \
library's: producer.type=async, request.required.acks=1, queue.buffering.max.ms=1000 \
(as kafka-console-producer.sh), client.id=gregor-produce.";

const FETCH_ABOUT: &str = "\
Print the messages of one partition, one per line, from an offset.

Each message is printed as its value, preceded by its key and a tab with --print-key, and by \
its offset and a tab with --print-offset (offset<TAB>key<TAB>value with both). A null key or \
value prints as `null`, as Kafka's console consumer prints it. Keys and values that are not \
valid UTF-8 are printed lossily: each invalid byte sequence becomes U+FFFD. Newlines inside \
a value are printed as they are.

Fetching stops after --max-messages messages, or once the partition's high watermark is \
reached (everything committed when the command started and since was printed), or, with \
--timeout-ms, only after that long without a new message. A closed stdout (e.g. `| head`) \
ends the command quietly with exit 0; so does Ctrl-C.";

const OFFSETS_ABOUT: &str = "\
Print partitions' offsets before a time, one line per partition, as Kafka 0.8's GetOffsetShell \
prints them: topic:partition:offset[,offset...] (newest first; nothing after the last colon \
when the broker lists none).

--time -1 (or latest) gives the log end offset, the offset of the next message; -2 (or \
earliest) the oldest offset still kept. What a time in milliseconds since the epoch gives \
depends on the broker. Kafka 0.8 to 0.10.0 (ListOffsets v0): the base offsets of the log \
segments last written before that time (segment boundaries, not message offsets), and with \
--max above 1, -1 lists the log end and then the segment bases, newest first. Kafka 0.10.1 and \
later (ListOffsets v1+, every broker of today): the first offset whose message's timestamp is \
at or after that time (nothing when every message is older), as kafka-get-offsets.sh gives it; \
one offset per partition, whatever --max says.";

/// `--compression`: Kafka's codecs (zstd from Kafka 2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Codec {
    /// no compression
    None,
    /// gzip (Kafka codec 1)
    Gzip,
    /// snappy, in Kafka's xerial framing (codec 2)
    Snappy,
    /// lz4, in Kafka 0.8's framing (codec 3)
    Lz4,
    /// zstd (codec 4; brokers from Kafka 2.1)
    Zstd,
}

impl Codec {
    /// The `compression.codec` value.
    pub(crate) fn property(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Gzip => "gzip",
            Codec::Snappy => "snappy",
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
        }
    }
}

/// Flags of `gregor produce`.
#[derive(Debug, Args)]
pub(crate) struct ProduceArgs {
    /// Brokers to bootstrap from, host:port[,host:port...] (metadata.broker.list); any live
    /// broker of the cluster will do
    #[arg(
        long,
        visible_alias = "bootstrap-server",
        value_name = "HOST:PORT,...",
        value_parser = NonEmptyStringValueParser::new()
    )]
    pub(crate) broker_list: String,

    /// Topic to send to
    #[arg(long, value_name = "TOPIC", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) topic: String,

    /// request.required.acks: 1 = the leader appended the message (default), -1 = every
    /// in-sync replica has it, 0 = no response at all (fastest; offsets unknown and
    /// broker-side errors are lost)
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = value_parser!(i16).range(-1..=1))]
    pub(crate) acks: Option<i16>,

    /// compression.codec of the message sets (default: none)
    #[arg(long, value_name = "CODEC", value_enum)]
    pub(crate) compression: Option<Codec>,

    /// Split each line at the first SEP: the bytes before it are the key, the bytes after it
    /// the value; a line without SEP is sent with a null key. Without this flag every key is
    /// null
    #[arg(long, value_name = "SEP", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) key_separator: Option<String>,

    /// Send every message to this partition. Without it the partitioner chooses: murmur2 of
    /// the key (as the Java client), and for null keys one random partition until the next
    /// metadata refresh (as Kafka 0.8.2)
    #[arg(long, value_name = "P", allow_negative_numbers = true, value_parser = value_parser!(i32).range(0..))]
    pub(crate) partition: Option<i32>,

    /// A Kafka 0.8.2 producer property, repeatable: batch.num.messages,
    /// queue.buffering.max.ms, queue.buffering.max.messages, queue.enqueue.timeout.ms,
    /// message.send.max.retries, retry.backoff.ms, request.timeout.ms, compressed.topics,
    /// client.id, partitioner.class, ... The flags above win over the same property given here
    #[arg(long = "property", value_name = "KEY=VALUE", value_parser = parse_property)]
    pub(crate) properties: Vec<(String, String)>,

    /// A properties file (Kafka's format: key=value lines, # comments) read before the
    /// --property values, which win: typically the security settings shared by every command
    /// (security.protocol=SSL, ssl.ca.location, ssl.certificate.location, ssl.key.location,
    /// sasl.*), or any other property of this client
    #[arg(long, value_name = "FILE")]
    pub(crate) command_config: Option<std::path::PathBuf>,
}

/// Flags of `gregor fetch`.
#[derive(Debug, Args)]
pub(crate) struct FetchArgs {
    /// Brokers to bootstrap from, host:port[,host:port...] (metadata.broker.list); the
    /// partition is read from its leader
    #[arg(
        long,
        visible_alias = "bootstrap-server",
        value_name = "HOST:PORT,...",
        value_parser = NonEmptyStringValueParser::new()
    )]
    pub(crate) broker_list: String,

    /// Topic to read
    #[arg(long, value_name = "TOPIC", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) topic: String,

    /// Partition to read
    #[arg(long, value_name = "P", allow_negative_numbers = true, value_parser = value_parser!(i32).range(0..))]
    pub(crate) partition: i32,

    /// Where to start: an offset, `earliest` (or -2: the oldest message kept) or `latest`
    /// (or -1: only messages produced from now on, with --timeout-ms)
    #[arg(long, value_name = "O|earliest|latest", allow_negative_numbers = true, value_parser = parse_start)]
    pub(crate) offset: StartOffset,

    /// Stop after printing N messages
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) max_messages: Option<u64>,

    /// Print each message's offset and a tab before it
    #[arg(long)]
    pub(crate) print_offset: bool,

    /// Print each message's key (`null` for a null key) and a tab before its value
    #[arg(long)]
    pub(crate) print_key: bool,

    /// Print each message's timestamp (`CreateTime:MS`, `LogAppendTime:MS`, or `NO_TIMESTAMP`
    /// before Kafka 0.10) and a tab, after the offset
    #[arg(long)]
    pub(crate) print_timestamp: bool,

    /// Print each message's headers (`key:value,key:value`, `NO_HEADERS` for none, as Kafka's
    /// console consumer does) and a tab, before the key
    #[arg(long)]
    pub(crate) print_headers: bool,

    /// Keep waiting for new messages, and stop only after MS milliseconds without one.
    /// Default: stop at the high watermark
    #[arg(long, value_name = "MS", allow_negative_numbers = true)]
    pub(crate) timeout_ms: Option<u64>,

    /// A Kafka 0.8.2 simple-consumer property, repeatable: fetch.message.max.bytes,
    /// fetch.wait.max.ms, fetch.min.bytes, socket.timeout.ms, client.id,
    /// refresh.leader.backoff.ms, refresh.leader.max.retries, ...
    #[arg(long = "property", value_name = "KEY=VALUE", value_parser = parse_property)]
    pub(crate) properties: Vec<(String, String)>,

    /// A properties file (Kafka's format: key=value lines, # comments) read before the
    /// --property values, which win: typically the security settings shared by every command
    /// (security.protocol=SSL, ssl.ca.location, ssl.certificate.location, ssl.key.location,
    /// sasl.*), or any other property of this client
    #[arg(long, value_name = "FILE")]
    pub(crate) command_config: Option<std::path::PathBuf>,
}

/// Flags of `gregor api-versions`.
#[derive(Debug, Args)]
pub(crate) struct ApiVersionsArgs {
    /// Brokers to bootstrap from, host:port[,host:port...]; every broker of the cluster is asked
    #[arg(
        long,
        visible_alias = "bootstrap-server",
        value_name = "HOST:PORT,...",
        value_parser = NonEmptyStringValueParser::new()
    )]
    pub(crate) broker_list: String,

    /// A client property, repeatable (client.id, api.version.request, broker.version.fallback,
    /// security settings, ...)
    #[arg(long = "property", value_name = "KEY=VALUE", value_parser = parse_property)]
    pub(crate) properties: Vec<(String, String)>,

    /// A properties file (Kafka's format) read before the --property values: typically the
    /// security settings
    #[arg(long, value_name = "FILE")]
    pub(crate) command_config: Option<std::path::PathBuf>,
}

/// Flags of `gregor offsets`.
#[derive(Debug, Args)]
pub(crate) struct OffsetsArgs {
    /// Brokers to bootstrap from, host:port[,host:port...] (metadata.broker.list); each
    /// partition's offsets are asked of its leader
    #[arg(
        long,
        visible_alias = "bootstrap-server",
        value_name = "HOST:PORT,...",
        value_parser = NonEmptyStringValueParser::new()
    )]
    pub(crate) broker_list: String,

    /// Topic to look up
    #[arg(long, value_name = "TOPIC", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) topic: String,

    /// Partitions to look up, repeatable or comma-separated (default: every partition of the
    /// topic)
    #[arg(long, value_name = "P", allow_negative_numbers = true, value_delimiter = ',', value_parser = value_parser!(i32).range(0..))]
    pub(crate) partition: Vec<i32>,

    /// -1 (or `latest`): the log end offset; -2 (or `earliest`): the oldest offset kept; or
    /// milliseconds since the epoch: the segment base offsets before that time (Kafka 0.8 to
    /// 0.10.0), the first offset at or after it (Kafka 0.10.1 and later)
    #[arg(long, value_name = "-1|-2|MS", allow_negative_numbers = true, value_parser = parse_time)]
    pub(crate) time: i64,

    /// The most offsets to list per partition (Kafka 0.8 to 0.10.0; later brokers answer one)
    #[arg(long, value_name = "N", allow_negative_numbers = true, default_value_t = 1, value_parser = value_parser!(i32).range(1..))]
    pub(crate) max: i32,

    /// A Kafka 0.8.2 simple-consumer property, repeatable (client.id, socket.timeout.ms,
    /// refresh.leader.backoff.ms, refresh.leader.max.retries, ...)
    #[arg(long = "property", value_name = "KEY=VALUE", value_parser = parse_property)]
    pub(crate) properties: Vec<(String, String)>,

    /// A properties file (Kafka's format: key=value lines, # comments) read before the
    /// --property values, which win: typically the security settings shared by every command
    /// (security.protocol=SSL, ssl.ca.location, ssl.certificate.location, ssl.key.location,
    /// sasl.*), or any other property of this client
    #[arg(long, value_name = "FILE")]
    pub(crate) command_config: Option<std::path::PathBuf>,
}

const CONSUME_ABOUT: &str = "\
Read topics as a member of a consumer group (Kafka 0.8.2's ZooKeeper-coordinated high-level \
consumer, as kafka-console-consumer.sh), one message value per line of stdout.

Without --group a group of its own is used (gregor-console-<random>). --from-beginning sets \
auto.offset.reset=smallest: a group without committed offsets starts at the oldest message \
(a group with committed offsets resumes from them, as in Kafka). Without it a new group \
starts at the log end and prints only messages produced from now on.

The command stops after --max-messages messages, after --timeout-ms without a message \
(consumer.timeout.ms), on Ctrl-C, or when stdout is closed (e.g. `| head`): in each case \
quietly, with exit 0, after committing the offsets of the messages printed and leaving the \
group. A null value prints as `null`; values that are not UTF-8 print lossily.";

const TOPICS_ABOUT: &str = "\
Create, list, describe, alter and delete topics through ZooKeeper, as kafka-topics.sh does; \
the controller acts on what is written (brings new partitions online, deletes marked topics \
when the brokers run with delete.topic.enable=true).

Exactly one of --create, --list, --describe, --alter, --delete. Tables for people; \
--output json for scripts.";

const GROUPS_ABOUT: &str = "\
Consumer groups of the ZooKeeper-coordinated consumer: --list the groups registered in \
ZooKeeper; --describe a group's members and, per partition, its committed offset, the log \
size, the lag and the owner (ConsumerOffsetChecker); --reset-offsets of an inactive group to \
the earliest or latest offset of each partition, or to an offset.";

const REASSIGN_ABOUT: &str = "\
Move partitions between brokers, as kafka-reassign-partitions.sh does:
  --generate proposes moving the topics of --topics-to-move-json-file \
({\"topics\":[{\"topic\":\"t\"}],\"version\":1}) onto --broker-list (nothing is written);
  --execute starts the moves of --reassignment-json-file \
({\"version\":1,\"partitions\":[{\"topic\":\"t\",\"partition\":0,\"replicas\":[1,2]}]}) and \
prints the current assignment to roll back with;
  --verify tells, per partition of the file, whether its move completed, is in progress or \
failed.";

const ELECT_ABOUT: &str = "\
Ask the controller to move leadership back to each partition's preferred (first) replica, \
as kafka-preferred-replica-election.sh does: every partition of every topic, those of \
--topic, or those of --path-to-json-file ({\"partitions\":[{\"topic\":\"t\",\"partition\":0}]}).";

/// `--output`: for people or for scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub(crate) enum OutputFormat {
    /// aligned tables and sentences
    #[default]
    Table,
    /// one JSON document on stdout
    Json,
}

/// The ZooKeeper flags of the admin and consumer commands.
#[derive(Debug, Args)]
pub(crate) struct ZkArgs {
    /// ZooKeeper of the cluster, host:port[,host:port...] and an optional /chroot (Kafka's
    /// zookeeper.connect)
    #[arg(long, value_name = "HOST:PORT,...[/CHROOT]", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) zookeeper: String,

    /// How long to wait for a ZooKeeper session (also its session timeout)
    #[arg(long, value_name = "MS", default_value_t = 6000, value_parser = value_parser!(u64).range(1500..))]
    pub(crate) zookeeper_timeout_ms: u64,

    /// A properties file (Kafka's format: key=value lines, # comments) with the security
    /// settings of the broker connections (log sizes, offset coordinators, the audit's reads):
    /// security.protocol, ssl.* and sasl.*, as Kafka's tools take --command-config
    #[arg(long, value_name = "FILE")]
    pub(crate) command_config: Option<std::path::PathBuf>,
}

/// Flags of `gregor consume`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("subscription").required(true).args(["topic", "whitelist", "blacklist"])))]
pub(crate) struct ConsumeArgs {
    /// ZooKeeper of the cluster, host:port[,host:port...] and an optional /chroot
    /// (zookeeper.connect)
    #[arg(long, value_name = "HOST:PORT,...[/CHROOT]", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) zookeeper: String,

    /// Consumer group (group.id). Default: gregor-console-NNNNN (random)
    #[arg(long, value_name = "GROUP", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) group: Option<String>,

    /// Topic to read (it must exist)
    #[arg(long, value_name = "TOPIC", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) topic: Option<String>,

    /// Read every topic whose whole name matches this regex (`,` means `|`); topics created
    /// later are picked up
    #[arg(long, value_name = "REGEX", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) whitelist: Option<String>,

    /// Read every topic whose name does not match this regex
    #[arg(long, value_name = "REGEX", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) blacklist: Option<String>,

    /// Start at the oldest message when the group has no committed offset
    /// (auto.offset.reset=smallest; default: largest, only new messages)
    #[arg(long)]
    pub(crate) from_beginning: bool,

    /// Stop after printing N messages
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) max_messages: Option<u64>,

    /// Stop after MS milliseconds without a message (consumer.timeout.ms). Default: wait
    /// forever
    #[arg(long, value_name = "MS", allow_negative_numbers = true)]
    pub(crate) timeout_ms: Option<u64>,

    /// A Kafka 0.8.2 consumer property, repeatable: auto.commit.interval.ms,
    /// fetch.message.max.bytes, offsets.storage, partition.assignment.strategy, client.id,
    /// ... The flags above win over the same property given here
    #[arg(long = "property", value_name = "KEY=VALUE", value_parser = parse_property)]
    pub(crate) properties: Vec<(String, String)>,

    /// A properties file (Kafka's format: key=value lines, # comments) read before the
    /// --property values, which win: typically the security settings shared by every command
    /// (security.protocol=SSL, ssl.ca.location, ssl.certificate.location, ssl.key.location,
    /// sasl.*), or any other property of this client
    #[arg(long, value_name = "FILE")]
    pub(crate) command_config: Option<std::path::PathBuf>,
}

/// Flags of `gregor topics`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("action").required(true).args(["create", "list", "describe", "alter", "delete"])))]
pub(crate) struct TopicsArgs {
    #[command(flatten)]
    pub(crate) zk: ZkArgs,

    /// Create --topic with --partitions and --replication-factor (or --replica-assignment)
    #[arg(long)]
    pub(crate) create: bool,

    /// List the topics
    #[arg(long)]
    pub(crate) list: bool,

    /// Describe every topic, or --topic: leader, replicas and in-sync replicas per partition
    #[arg(long)]
    pub(crate) describe: bool,

    /// Change --topic: add partitions (--partitions, the new total), set (--config) or
    /// remove (--delete-config) configuration overrides
    #[arg(long)]
    pub(crate) alter: bool,

    /// Mark --topic for deletion (the controller deletes it when the brokers run with
    /// delete.topic.enable=true)
    #[arg(long)]
    pub(crate) delete: bool,

    /// The topic
    #[arg(long, value_name = "TOPIC", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) topic: Option<String>,

    /// Partitions to create with, or (--alter) the new partition count
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = value_parser!(i32).range(1..))]
    pub(crate) partitions: Option<i32>,

    /// Replicas per partition (at most the number of live brokers)
    #[arg(long, value_name = "R", allow_negative_numbers = true, value_parser = value_parser!(i32).range(1..))]
    pub(crate) replication_factor: Option<i32>,

    /// Explicit replicas, partitions separated by `,`, the brokers of one partition by `:`,
    /// preferred leader first (`0:1,1:2,2:0`); with --alter --partitions, of the new ones
    #[arg(long, value_name = "B:B,B:B,...", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) replica_assignment: Option<String>,

    /// A topic configuration override (retention.ms, cleanup.policy, ...), repeatable
    #[arg(long = "config", value_name = "KEY=VALUE", value_parser = parse_property)]
    pub(crate) config: Vec<(String, String)>,

    /// Remove a configuration override (--alter), repeatable
    #[arg(long, value_name = "KEY", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) delete_config: Vec<String>,

    /// --describe only the partitions with fewer in-sync replicas than replicas
    #[arg(long)]
    pub(crate) under_replicated_partitions: bool,

    /// --describe only the partitions without a live leader
    #[arg(long)]
    pub(crate) unavailable_partitions: bool,

    /// table or json
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = OutputFormat::Table)]
    pub(crate) output: OutputFormat,
}

const BROKERS_ABOUT: &str = "\
List the brokers and the controller, from one of two sources (exactly one must be given):

  --zookeeper         the brokers registered in ZooKeeper (/brokers/ids) and the controller
                      (/controller), as Kafka 0.8.2's tools read them;
  --bootstrap-server  the brokers a Metadata answer lists (the only way for a KRaft cluster,
                      which has no ZooKeeper), with each one's rack, the controller (Metadata
                      v1+ names it), and how gregor speaks to it: `negotiated` (it answered
                      ApiVersions) or `fallback 0.8.2` (a Kafka 0.8/0.9 broker closes the
                      connection on ApiVersions; see broker.version.fallback), and the Produce,
                      Fetch and Metadata versions gregor sends it.";

/// Flags of `gregor brokers`: ZooKeeper or a Metadata request as the source, exactly one.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("source").required(true).args(["zookeeper", "broker_list"])))]
pub(crate) struct BrokersArgs {
    /// ZooKeeper of the cluster, host:port[,host:port...] and an optional /chroot (Kafka's
    /// zookeeper.connect): list the brokers registered there
    #[arg(long, value_name = "HOST:PORT,...[/CHROOT]", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) zookeeper: Option<String>,

    /// How long to wait for a ZooKeeper session (also its session timeout); with --zookeeper
    /// only
    #[arg(long, value_name = "MS", default_value_t = 6000, value_parser = value_parser!(u64).range(1500..), conflicts_with = "broker_list")]
    pub(crate) zookeeper_timeout_ms: u64,

    /// Brokers to bootstrap from, host:port[,host:port...]: list the brokers their Metadata
    /// answer names, and connect to each to show how gregor speaks to it (for clusters without
    /// ZooKeeper)
    #[arg(
        long,
        visible_alias = "bootstrap-server",
        value_name = "HOST:PORT,...",
        value_parser = NonEmptyStringValueParser::new()
    )]
    pub(crate) broker_list: Option<String>,

    /// A client property, repeatable (client.id, api.version.request, broker.version.fallback,
    /// socket.timeout.ms, security settings, ...); with --bootstrap-server only
    #[arg(long = "property", value_name = "KEY=VALUE", value_parser = parse_property, conflicts_with = "zookeeper")]
    pub(crate) properties: Vec<(String, String)>,

    /// A properties file (Kafka's format) with the security settings of the broker
    /// connections (security.protocol, ssl.*, sasl.*), as Kafka's tools take --command-config
    #[arg(long, value_name = "FILE")]
    pub(crate) command_config: Option<std::path::PathBuf>,

    /// table or json
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = OutputFormat::Table)]
    pub(crate) output: OutputFormat,
}

/// Flags of `gregor health`.
#[derive(Debug, Args)]
pub(crate) struct HealthArgs {
    #[command(flatten)]
    pub(crate) zk: ZkArgs,

    /// table or json
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = OutputFormat::Table)]
    pub(crate) output: OutputFormat,
}

/// `--offsets-storage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub(crate) enum Storage {
    /// /consumers/G/offsets in ZooKeeper (offsets.storage=zookeeper)
    #[default]
    Zookeeper,
    /// __consumer_offsets through the group's coordinator (offsets.storage=kafka)
    Kafka,
}

/// `--to` of `groups --reset-offsets`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResetTo {
    /// The oldest offset of each partition.
    Earliest,
    /// The log end of each partition.
    Latest,
    /// This offset in every partition.
    Offset(i64),
}

/// Flags of `gregor groups`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("action").required(true).args(["list", "describe", "reset_offsets"])))]
pub(crate) struct GroupsArgs {
    #[command(flatten)]
    pub(crate) zk: ZkArgs,

    /// List the groups registered in ZooKeeper
    #[arg(long)]
    pub(crate) list: bool,

    /// Members, and per partition: committed offset, log size, lag, owner
    #[arg(long, requires = "group")]
    pub(crate) describe: bool,

    /// Move the committed offsets of --topic for an inactive --group to --to
    #[arg(long, requires_all = ["group", "topic", "to"])]
    pub(crate) reset_offsets: bool,

    /// The consumer group
    #[arg(long, value_name = "GROUP", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) group: Option<String>,

    /// The topic (--reset-offsets; with --describe, only its partitions: needed for a group
    /// that keeps its offsets in Kafka only)
    #[arg(long, value_name = "TOPIC", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) topic: Option<String>,

    /// earliest, latest, or an offset
    #[arg(long, value_name = "earliest|latest|OFFSET", value_parser = parse_reset)]
    pub(crate) to: Option<ResetTo>,

    /// Where the group keeps its offsets
    #[arg(long, value_name = "STORAGE", value_enum, default_value_t = Storage::Zookeeper)]
    pub(crate) offsets_storage: Storage,

    /// Accepted for compatibility with ConsumerOffsetChecker's tooling; brokers are found in
    /// ZooKeeper (/brokers/ids), as Kafka's tools find them
    #[arg(long, value_name = "HOST:PORT,...", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) broker_list: Option<String>,

    /// table or json
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = OutputFormat::Table)]
    pub(crate) output: OutputFormat,
}

/// Flags of `gregor reassign`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("action").required(true).args(["generate", "execute", "verify"])))]
pub(crate) struct ReassignArgs {
    #[command(flatten)]
    pub(crate) zk: ZkArgs,

    /// Propose a plan moving the topics of --topics-to-move-json-file onto --broker-list
    #[arg(long, requires_all = ["topics_to_move_json_file", "broker_list"])]
    pub(crate) generate: bool,

    /// Start the moves of --reassignment-json-file
    #[arg(long, requires = "reassignment_json_file")]
    pub(crate) execute: bool,

    /// Check the moves of --reassignment-json-file
    #[arg(long, requires = "reassignment_json_file")]
    pub(crate) verify: bool,

    /// {"topics":[{"topic":"t"}],"version":1}
    #[arg(long, value_name = "FILE")]
    pub(crate) topics_to_move_json_file: Option<std::path::PathBuf>,

    /// The brokers to move onto, comma-separated ids (--generate)
    #[arg(long, value_name = "ID,ID,...", value_delimiter = ',', value_parser = value_parser!(i32).range(0..))]
    pub(crate) broker_list: Vec<i32>,

    // (help as an attribute: rustdoc would read [1,2] as a link)
    #[arg(
        long,
        value_name = "FILE",
        help = r#"The moves: {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}"#
    )]
    pub(crate) reassignment_json_file: Option<std::path::PathBuf>,

    /// table or json
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = OutputFormat::Table)]
    pub(crate) output: OutputFormat,
}

/// Flags of `gregor elect-leaders`.
#[derive(Debug, Args)]
pub(crate) struct ElectLeadersArgs {
    #[command(flatten)]
    pub(crate) zk: ZkArgs,

    /// The partitions to elect for: {"partitions":[{"topic":"t","partition":0}]}. Default:
    /// every partition
    #[arg(long, value_name = "FILE", conflicts_with = "topic")]
    pub(crate) path_to_json_file: Option<std::path::PathBuf>,

    /// Only the partitions of this topic
    #[arg(long, value_name = "TOPIC", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) topic: Option<String>,

    /// table or json
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = OutputFormat::Table)]
    pub(crate) output: OutputFormat,
}

/// `earliest`, `latest` or an offset (0 or more).
fn parse_reset(s: &str) -> Result<ResetTo, String> {
    match s.trim() {
        x if x.eq_ignore_ascii_case("earliest") || x.eq_ignore_ascii_case("smallest") => Ok(ResetTo::Earliest),
        x if x.eq_ignore_ascii_case("latest") || x.eq_ignore_ascii_case("largest") => Ok(ResetTo::Latest),
        x => match x.parse::<i64>() {
            Ok(n) if n >= 0 => Ok(ResetTo::Offset(n)),
            _ => Err("expected earliest, latest or an offset (0 or more)".to_owned()),
        },
    }
}

/// Checks the flag combinations clap's attributes cannot express; the error is a usage error
/// (exit 2).
pub(crate) fn check(cli: &Cli) -> Result<(), clap::Error> {
    use clap::error::ErrorKind;
    use clap::CommandFactory;
    let fail = |sub: &str, kind: ErrorKind, msg: String| {
        let mut cmd = Cli::command();
        let cmd = cmd.find_subcommand_mut(sub).map(|c| c.clone()).unwrap_or_else(Cli::command);
        Err(cmd.bin_name(format!("gregor {sub}")).error(kind, msg))
    };
    match &cli.command {
        Command::Topics(a) => {
            let needs_topic = a.create || a.alter || a.delete;
            if needs_topic && a.topic.is_none() {
                return fail("topics", ErrorKind::MissingRequiredArgument, "--topic is required here".into());
            }
            if a.create && a.replica_assignment.is_none() && (a.partitions.is_none() || a.replication_factor.is_none())
            {
                return fail(
                    "topics",
                    ErrorKind::MissingRequiredArgument,
                    "--create needs --partitions and --replication-factor (or --replica-assignment)".into(),
                );
            }
            if a.create && a.replica_assignment.is_some() && (a.partitions.is_some() || a.replication_factor.is_some())
            {
                return fail(
                    "topics",
                    ErrorKind::ArgumentConflict,
                    "--replica-assignment replaces --partitions and --replication-factor".into(),
                );
            }
            if a.alter && a.partitions.is_none() && a.config.is_empty() && a.delete_config.is_empty() {
                return fail(
                    "topics",
                    ErrorKind::MissingRequiredArgument,
                    "--alter needs --partitions, --config or --delete-config".into(),
                );
            }
            if a.alter && a.replication_factor.is_some() {
                return fail(
                    "topics",
                    ErrorKind::ArgumentConflict,
                    "--alter cannot change the replication factor: use `gregor reassign`".into(),
                );
            }
            if a.alter && a.replica_assignment.is_some() && a.partitions.is_none() {
                return fail(
                    "topics",
                    ErrorKind::MissingRequiredArgument,
                    "--replica-assignment needs --partitions with --alter".into(),
                );
            }
            if !a.create
                && !a.alter
                && (a.partitions.is_some()
                    || a.replication_factor.is_some()
                    || a.replica_assignment.is_some()
                    || !a.config.is_empty())
            {
                return fail(
                    "topics",
                    ErrorKind::ArgumentConflict,
                    "--partitions, --replication-factor, --replica-assignment and --config go with --create or --alter"
                        .into(),
                );
            }
            if !a.alter && !a.delete_config.is_empty() {
                return fail("topics", ErrorKind::ArgumentConflict, "--delete-config goes with --alter".into());
            }
            if !a.describe && (a.under_replicated_partitions || a.unavailable_partitions) {
                return fail(
                    "topics",
                    ErrorKind::ArgumentConflict,
                    "--under-replicated-partitions and --unavailable-partitions go with --describe".into(),
                );
            }
            Ok(())
        }
        Command::Consume(a) if a.max_messages == Some(0) => {
            fail("consume", ErrorKind::InvalidValue, "--max-messages must be at least 1".into())
        }
        _ => Ok(()),
    }
}

/// Where `fetch` starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StartOffset {
    /// The oldest offset the partition keeps.
    Earliest,
    /// The log end: only messages produced from now on.
    Latest,
    /// This offset.
    At(i64),
}

/// `KEY=VALUE` (split at the first `=`; the key must not be empty).
fn parse_property(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.to_owned())),
        Some(_) => Err("the property name before '=' is empty".to_owned()),
        None => Err(format!("expected KEY=VALUE, e.g. batch.num.messages=500, not {s:?}")),
    }
}

/// `earliest`, `latest`, -2, -1 or an offset.
fn parse_start(s: &str) -> Result<StartOffset, String> {
    match s.trim() {
        x if x.eq_ignore_ascii_case("earliest") || x.eq_ignore_ascii_case("smallest") => Ok(StartOffset::Earliest),
        x if x.eq_ignore_ascii_case("latest") || x.eq_ignore_ascii_case("largest") => Ok(StartOffset::Latest),
        x => match x.parse::<i64>() {
            Ok(EARLIEST_TIME) => Ok(StartOffset::Earliest),
            Ok(LATEST_TIME) => Ok(StartOffset::Latest),
            Ok(n) if n >= 0 => Ok(StartOffset::At(n)),
            _ => Err("expected an offset (0 or more), earliest (-2) or latest (-1)".to_owned()),
        },
    }
}

/// `-1`/`latest`, `-2`/`earliest`, or milliseconds since the epoch.
fn parse_time(s: &str) -> Result<i64, String> {
    match s.trim() {
        x if x.eq_ignore_ascii_case("latest") => Ok(LATEST_TIME),
        x if x.eq_ignore_ascii_case("earliest") => Ok(EARLIEST_TIME),
        x => match x.parse::<i64>() {
            Ok(t) if t >= EARLIEST_TIME => Ok(t),
            _ => Err("expected -1 (latest), -2 (earliest) or milliseconds since the epoch".to_owned()),
        },
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn values_parse_as_documented() {
        assert_eq!(parse_property("a.b=c=d"), Ok(("a.b".to_owned(), "c=d".to_owned())));
        assert_eq!(parse_property("client.id="), Ok(("client.id".to_owned(), String::new())));
        assert!(parse_property("=x").is_err());
        assert!(parse_property("nothing").is_err());
        assert_eq!(parse_start("earliest"), Ok(StartOffset::Earliest));
        assert_eq!(parse_start("-2"), Ok(StartOffset::Earliest));
        assert_eq!(parse_start("LATEST"), Ok(StartOffset::Latest));
        assert_eq!(parse_start("-1"), Ok(StartOffset::Latest));
        assert_eq!(parse_start("42"), Ok(StartOffset::At(42)));
        assert!(parse_start("-3").is_err());
        assert!(parse_start("soon").is_err());
        assert_eq!(parse_time("-1"), Ok(-1));
        assert_eq!(parse_time("earliest"), Ok(-2));
        assert_eq!(parse_time("1700000000000"), Ok(1_700_000_000_000));
        assert!(parse_time("-3").is_err());
        assert!(parse_time("yesterday").is_err());
    }

    #[test]
    fn bootstrap_server_is_another_name_for_broker_list() {
        for command in ["produce", "fetch", "offsets"] {
            let mut args = vec!["gregor", command, "--bootstrap-server", "b:1", "--topic", "t"];
            match command {
                "fetch" => args.extend(["--partition", "0", "--offset", "earliest"]),
                "offsets" => args.extend(["--time", "-1"]),
                _ => {}
            }
            let cli = Cli::try_parse_from(args).unwrap();
            let list = match cli.command {
                Command::Produce(a) => a.broker_list,
                Command::Fetch(a) => a.broker_list,
                Command::Offsets(a) => a.broker_list,
                _ => unreachable!(),
            };
            assert_eq!(list, "b:1", "{command}");
        }
        let both =
            ["gregor", "offsets", "--bootstrap-server", "a:1", "--broker-list", "b:1", "--topic", "t", "--time", "-1"];
        assert!(Cli::try_parse_from(both).is_err(), "one flag, given once");
    }

    #[test]
    fn negative_values_parse_as_values_not_flags() {
        let cli =
            Cli::try_parse_from(["gregor", "offsets", "--broker-list", "b:1", "--topic", "t", "--time", "-2"]).unwrap();
        let Command::Offsets(a) = cli.command else { panic!("offsets") };
        assert_eq!((a.time, a.max, a.partition.len()), (-2, 1, 0));
        let cli = Cli::try_parse_from([
            "gregor",
            "produce",
            "--broker-list",
            "b:1",
            "--topic",
            "t",
            "--acks",
            "-1",
            "--property",
            "batch.num.messages=5",
        ])
        .unwrap();
        let Command::Produce(a) = cli.command else { panic!("produce") };
        assert_eq!(a.acks, Some(-1));
        assert_eq!(a.properties, [("batch.num.messages".to_owned(), "5".to_owned())]);
        let e = Cli::try_parse_from(["gregor", "produce", "--broker-list", "b:1", "--topic", "t", "--acks", "2"])
            .unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn offsets_take_a_partition_list() {
        let cli = Cli::try_parse_from([
            "gregor",
            "offsets",
            "--broker-list",
            "b:1",
            "--topic",
            "t",
            "--time",
            "latest",
            "--partition",
            "0,2",
            "--partition",
            "5",
        ])
        .unwrap();
        let Command::Offsets(a) = cli.command else { panic!("offsets") };
        assert_eq!(a.partition, [0, 2, 5]);
    }
}

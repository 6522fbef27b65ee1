//! The command line: subcommands, flags and their help, and the parsers of flag values.

use clap::builder::NonEmptyStringValueParser;
use clap::{value_parser, Args, Parser, Subcommand, ValueEnum};
use gregor_protocol::messages::{EARLIEST_TIME, LATEST_TIME};

const ABOUT: &str = "Produce, fetch and look up offsets on Kafka 0.8.2 brokers";

const LONG_ABOUT: &str = "\
Produce, fetch and look up offsets on Kafka 0.8.2 brokers, with gregor's own clients.

Exit codes: 0 on success, 1 on failure (the error and its causes on stderr), 2 on a usage \
error (a bad flag, an invalid --property).";

const EXAMPLES: &str = "\
Examples:
  printf 'k1:hello\\nk2:world\\n' | gregor produce --broker-list 127.0.0.1:9092 --topic events --key-separator :
  gregor fetch --broker-list 127.0.0.1:9092 --topic events --partition 0 --offset earliest --print-key
  gregor offsets --broker-list 127.0.0.1:9092 --topic events --time -1";

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
earliest) the oldest offset still kept; a time in milliseconds since the epoch gives the base \
offsets of the log segments last written before that time (segment boundaries, not message \
offsets). With --max above 1, -1 lists the log end and then the segment bases, newest first.";

/// `--compression`: the codecs Kafka 0.8.2 knows.
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
}

impl Codec {
    /// The `compression.codec` value.
    pub(crate) fn property(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Gzip => "gzip",
            Codec::Snappy => "snappy",
            Codec::Lz4 => "lz4",
        }
    }
}

/// Flags of `gregor produce`.
#[derive(Debug, Args)]
pub(crate) struct ProduceArgs {
    /// Brokers to bootstrap from, host:port[,host:port...] (metadata.broker.list); any live
    /// broker of the cluster will do
    #[arg(long, value_name = "HOST:PORT,...", value_parser = NonEmptyStringValueParser::new())]
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
}

/// Flags of `gregor fetch`.
#[derive(Debug, Args)]
pub(crate) struct FetchArgs {
    /// Brokers to bootstrap from, host:port[,host:port...] (metadata.broker.list); the
    /// partition is read from its leader
    #[arg(long, value_name = "HOST:PORT,...", value_parser = NonEmptyStringValueParser::new())]
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

    /// Keep waiting for new messages, and stop only after MS milliseconds without one.
    /// Default: stop at the high watermark
    #[arg(long, value_name = "MS", allow_negative_numbers = true)]
    pub(crate) timeout_ms: Option<u64>,

    /// A Kafka 0.8.2 simple-consumer property, repeatable: fetch.message.max.bytes,
    /// fetch.wait.max.ms, fetch.min.bytes, socket.timeout.ms, client.id,
    /// refresh.leader.backoff.ms, refresh.leader.max.retries, ...
    #[arg(long = "property", value_name = "KEY=VALUE", value_parser = parse_property)]
    pub(crate) properties: Vec<(String, String)>,
}

/// Flags of `gregor offsets`.
#[derive(Debug, Args)]
pub(crate) struct OffsetsArgs {
    /// Brokers to bootstrap from, host:port[,host:port...] (metadata.broker.list); each
    /// partition's offsets are asked of its leader
    #[arg(long, value_name = "HOST:PORT,...", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) broker_list: String,

    /// Topic to look up
    #[arg(long, value_name = "TOPIC", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) topic: String,

    /// Partitions to look up, repeatable or comma-separated (default: every partition of the
    /// topic)
    #[arg(long, value_name = "P", allow_negative_numbers = true, value_delimiter = ',', value_parser = value_parser!(i32).range(0..))]
    pub(crate) partition: Vec<i32>,

    /// -1 (or `latest`): the log end offset; -2 (or `earliest`): the oldest offset kept; or
    /// milliseconds since the epoch: the segment base offsets before that time
    #[arg(long, value_name = "-1|-2|MS", allow_negative_numbers = true, value_parser = parse_time)]
    pub(crate) time: i64,

    /// The most offsets to list per partition
    #[arg(long, value_name = "N", allow_negative_numbers = true, default_value_t = 1, value_parser = value_parser!(i32).range(1..))]
    pub(crate) max: i32,

    /// A Kafka 0.8.2 simple-consumer property, repeatable (client.id, socket.timeout.ms,
    /// refresh.leader.backoff.ms, refresh.leader.max.retries, ...)
    #[arg(long = "property", value_name = "KEY=VALUE", value_parser = parse_property)]
    pub(crate) properties: Vec<(String, String)>,
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

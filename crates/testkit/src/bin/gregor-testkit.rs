//! `gregor-testkit`: runs a FakeCluster outside tests: Kafka 0.8.2 brokers with a real
//! ZooKeeper (started here unless given one), or with `--modern` brokers of a KRaft cluster
//! (Kafka 3.7 to 4.x) that need no ZooKeeper.
//!
//! ```text
//! gregor-testkit [--brokers N] [--zookeeper HOST:PORT[/chroot]] [--port FIRST_PORT]
//!                [--num-partitions N] [--default-replication-factor N]
//!                [--offsets-topic-num-partitions N] [--delete-topic-enable]
//!                [--timing instant|kafka-0.8.2]
//!                [--request-log N]   (requests kept for inspection; default 1000, 0 = off)
//!                [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]
//! gregor-testkit --modern [--brokers N] [--port FIRST_PORT] [--num-partitions N]
//!                [--default-replication-factor N] [--offsets-topic-num-partitions N]
//!                [--timing instant|kafka-0.8.2] [--request-log N]
//!                [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]
//!                [--sasl-user NAME:PASSWORD ... [--sasl-mechanisms PLAIN,SCRAM-SHA-256,SCRAM-SHA-512]]
//! ```
//!
//! `--brokers` defaults to 3; `--port` gives the brokers consecutive ports from FIRST_PORT
//! (default: free ports the system picks); `--num-partitions` and
//! `--default-replication-factor` are `num.partitions` and `default.replication.factor`, what a
//! topic created without them (auto-creation, CreateTopics with -1) gets.
//!
//! With `--tls-cert` and `--tls-key` (PEM: the brokers' certificate chain and its key) every
//! broker serves TLS only (`security.protocol=SSL` for clients); `--tls-client-ca` also
//! requires client certificates signed by that CA.
//!
//! `--timing kafka-0.8.2` makes the brokers take the time a real broker under load takes
//! (`Timing::kafka_0_8_2`: service time, throughput per broker and per partition, followers'
//! fetch for acks=-1); the default `instant` answers at once.
//!
//! `--modern` starts `FakeCluster::modern()`: ApiVersions, Metadata, Produce, Fetch,
//! ListOffsets, CreateTopics, InitProducerId, the group coordinator's and the admin APIs at
//! today's versions, topics kept in the cluster's own metadata. `--zookeeper` is refused with
//! it (there is no ZooKeeper); topics can be deleted without `--delete-topic-enable`, as
//! Kafka 3.x's default has it. `--sasl-user` (repeatable; the password
//! is everything after the first colon) requires SASL on every connection
//! (`security.protocol=SASL_PLAINTEXT`, or `SASL_SSL` with `--tls-cert`), with the mechanisms of
//! `--sasl-mechanisms` (default: all three). Kafka 0.8.2 has no SASL: both need `--modern`.
//!
//! Prints exactly one line when ready, then runs until it is killed or its standard input
//! closes:
//!
//! ```text
//! brokers=127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3 zookeeper=127.0.0.1:Z       (0.8.2)
//! brokers=127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3 mode=modern cluster_id=ID   (--modern)
//! ```

use std::process::ExitCode;

use gregor_testkit::sasl::Mechanism;
use gregor_testkit::tls::ServerTls;
use gregor_testkit::zookeeper::ZooKeeperServer;
use gregor_testkit::{FakeCluster, FakeClusterBuilder};
use tokio::io::AsyncReadExt;

const USAGE: &str = "usage: gregor-testkit [--brokers N] [--zookeeper HOST:PORT[/chroot]] [--port FIRST_PORT] \
[--num-partitions N] [--default-replication-factor N] [--offsets-topic-num-partitions N] [--delete-topic-enable] \
[--timing instant|kafka-0.8.2] \
[--request-log N] [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]
       gregor-testkit --modern [--brokers N] [--port FIRST_PORT] [--num-partitions N] \
[--default-replication-factor N] [--request-log N] [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]] \
[--sasl-user NAME:PASSWORD ... [--sasl-mechanisms PLAIN,SCRAM-SHA-256,SCRAM-SHA-512]]";

/// Every mechanism the fake offers, `--sasl-mechanisms`' default.
const ALL_MECHANISMS: [Mechanism; 3] = [Mechanism::Plain, Mechanism::ScramSha256, Mechanism::ScramSha512];

#[derive(Debug, Default)]
struct Args {
    modern: bool,
    brokers: usize,
    zookeeper: Option<String>,
    port: Option<u16>,
    num_partitions: Option<i32>,
    replication_factor: Option<i32>,
    offsets_partitions: Option<i32>,
    delete_topic_enable: bool,
    /// `--timing instant|kafka-0.8.2`.
    timing: gregor_testkit::Timing,
    request_log: usize,
    tls_cert: Option<String>,
    tls_key: Option<String>,
    tls_client_ca: Option<String>,
    /// `--sasl-user` values: (name, password).
    sasl_users: Vec<(String, String)>,
    /// `--sasl-mechanisms`, if given.
    sasl_mechanisms: Option<Vec<Mechanism>>,
}

fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut args = Args { brokers: 3, request_log: 1000, ..Args::default() };
    while let Some(flag) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match flag.as_str() {
            "--modern" => args.modern = true,
            "--brokers" => args.brokers = num(&value("--brokers")?, "--brokers")?,
            "--zookeeper" => args.zookeeper = Some(value("--zookeeper")?),
            "--port" => args.port = Some(num(&value("--port")?, "--port")?),
            "--num-partitions" => args.num_partitions = Some(num(&value("--num-partitions")?, "--num-partitions")?),
            "--default-replication-factor" => {
                args.replication_factor =
                    Some(num(&value("--default-replication-factor")?, "--default-replication-factor")?)
            }
            "--offsets-topic-num-partitions" => {
                args.offsets_partitions =
                    Some(num(&value("--offsets-topic-num-partitions")?, "--offsets-topic-num-partitions")?)
            }
            "--delete-topic-enable" => args.delete_topic_enable = true,
            "--timing" => {
                args.timing = match value("--timing")?.as_str() {
                    "instant" => gregor_testkit::Timing::instant(),
                    "kafka-0.8.2" => gregor_testkit::Timing::kafka_0_8_2(),
                    other => return Err(format!("--timing {other}: instant or kafka-0.8.2\n{USAGE}")),
                }
            }
            "--request-log" => args.request_log = num(&value("--request-log")?, "--request-log")?,
            "--tls-cert" => args.tls_cert = Some(value("--tls-cert")?),
            "--tls-key" => args.tls_key = Some(value("--tls-key")?),
            "--tls-client-ca" => args.tls_client_ca = Some(value("--tls-client-ca")?),
            "--sasl-user" => args.sasl_users.push(sasl_user(&value("--sasl-user")?)?),
            "--sasl-mechanisms" => args.sasl_mechanisms = Some(mechanisms(&value("--sasl-mechanisms")?)?),
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    if args.brokers == 0 {
        return Err("--brokers must be at least 1".to_owned());
    }
    if let Some(p) = args.port {
        ports(p, args.brokers)?;
    }
    if args.tls_cert.is_some() != args.tls_key.is_some() {
        return Err("--tls-cert and --tls-key go together".to_owned());
    }
    if args.tls_client_ca.is_some() && args.tls_cert.is_none() {
        return Err("--tls-client-ca needs --tls-cert and --tls-key".to_owned());
    }
    if args.modern {
        let refused = [(args.zookeeper.is_some(), "--zookeeper", "the modern mode (KRaft) runs without ZooKeeper")];
        if let Some((_, flag, why)) = refused.iter().find(|(given, _, _)| *given) {
            return Err(format!("{flag} does not go with --modern: {why}"));
        }
        if args.sasl_mechanisms.is_some() && args.sasl_users.is_empty() {
            return Err("--sasl-mechanisms needs at least one --sasl-user".to_owned());
        }
    } else if !args.sasl_users.is_empty() || args.sasl_mechanisms.is_some() {
        return Err("--sasl-user and --sasl-mechanisms need --modern: Kafka 0.8.2 has no SASL".to_owned());
    }
    Ok(args)
}

/// `NAME:PASSWORD`, split at the first colon (a password may hold colons, a name may not).
/// Errors never repeat the value: it may hold a password.
fn sasl_user(s: &str) -> Result<(String, String), String> {
    match s.split_once(':') {
        Some((name, password)) if !name.is_empty() => Ok((name.to_owned(), password.to_owned())),
        Some(_) => Err("--sasl-user: the NAME before the first colon is empty (NAME:PASSWORD)".to_owned()),
        None => Err("--sasl-user: no colon between NAME and PASSWORD (NAME:PASSWORD)".to_owned()),
    }
}

/// A comma-separated list of Kafka's mechanism names.
fn mechanisms(s: &str) -> Result<Vec<Mechanism>, String> {
    let mut out = Vec::new();
    for name in s.split(',').map(str::trim) {
        let m = Mechanism::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = ALL_MECHANISMS.iter().map(|m| m.name()).collect();
            format!("--sasl-mechanisms: {name:?} is not one of {}", known.join(", "))
        })?;
        if !out.contains(&m) {
            out.push(m);
        }
    }
    Ok(out)
}

/// The ports of `brokers` brokers from `first` on, or why they do not fit below 65536.
fn ports(first: u16, brokers: usize) -> Result<Vec<u16>, String> {
    (0..brokers)
        .map(|i| u16::try_from(i).ok().and_then(|i| first.checked_add(i)))
        .collect::<Option<Vec<u16>>>()
        .ok_or_else(|| format!("--port {first} with --brokers {brokers} runs past port 65535"))
}

fn num<T: std::str::FromStr>(s: &str, name: &str) -> Result<T, String> {
    s.parse().map_err(|_| format!("{name}: {s:?} is not a valid number"))
}

/// The brokers' TLS from the flags, if any.
fn tls(args: &Args) -> Result<Option<ServerTls>, gregor_testkit::cluster::Error> {
    let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) else { return Ok(None) };
    let tls = ServerTls::from_files(cert, key)?;
    match &args.tls_client_ca {
        None => Ok(Some(tls)),
        Some(ca) => {
            let pem = std::fs::read_to_string(ca)
                .map_err(|e| gregor_testkit::cluster::Error::Tls(format!("cannot read {ca}: {e}")))?;
            Ok(Some(tls.require_client_certificates(&pem)?))
        }
    }
}

/// The chain of an error's sources, `: `-separated, for one line on stderr.
fn chain(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        msg.push_str(&format!(": {s}"));
        src = s.source();
    }
    msg
}

/// The flags every mode shares, applied to `builder`.
fn configure(mut builder: FakeClusterBuilder, args: &Args, tls: Option<ServerTls>) -> FakeClusterBuilder {
    builder = builder.brokers(args.brokers).request_log_capacity(args.request_log);
    if let Some(tls) = tls {
        builder = builder.tls(tls);
    }
    if let Some(p) = args.port {
        // checked by parse
        builder = builder.ports(ports(p, args.brokers).unwrap_or_default());
    }
    builder.configure(|c| {
        if let Some(n) = args.num_partitions {
            c.num_partitions = n;
        }
        if let Some(n) = args.replication_factor {
            c.default_replication_factor = n;
        }
        if let Some(n) = args.offsets_partitions {
            c.offsets_topic_num_partitions = n;
        }
        // Kafka 3.x deletes topics by default (the modern mode's default); 0.8.2 only when asked
        c.delete_topic_enable |= args.delete_topic_enable;
        c.timing = args.timing;
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(msg) => {
            eprintln!("{msg}");
            return ExitCode::from(2);
        }
    };
    gregor_testkit::init_tracing();
    let tls = match tls(&args) {
        Ok(tls) => tls,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    // the ZooKeeper server (if started here) lives as long as the cluster
    let mut _server = None;
    let (builder, zookeeper) = if args.modern {
        let mut builder = FakeCluster::modern();
        if !args.sasl_users.is_empty() {
            let mechanisms = args.sasl_mechanisms.clone().unwrap_or_else(|| ALL_MECHANISMS.to_vec());
            builder = builder.sasl(&mechanisms, args.sasl_users.clone());
        }
        (builder, None)
    } else {
        let zookeeper = match &args.zookeeper {
            Some(z) => z.clone(),
            None => match ZooKeeperServer::start() {
                Ok(s) => {
                    let c = s.connect_string();
                    _server = Some(s);
                    c
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::FAILURE;
                }
            },
        };
        (FakeCluster::builder(zookeeper.clone()), Some(zookeeper))
    };
    let cluster = match configure(builder, &args, tls).start().await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {}", chain(&e));
            return ExitCode::FAILURE;
        }
    };
    match zookeeper {
        Some(zookeeper) => println!("brokers={} zookeeper={zookeeper}", cluster.bootstrap()),
        None => {
            println!("brokers={} mode=modern cluster_id={}", cluster.bootstrap(), cluster.cluster_id().unwrap_or("-"))
        }
    }
    let mut stdin = tokio::io::stdin();
    let mut sink = [0u8; 1024];
    let stdin_closed = async move { while !matches!(stdin.read(&mut sink).await, Ok(0) | Err(_)) {} };
    tokio::select! {
        _ = stdin_closed => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    cluster.shutdown().await;
    ExitCode::SUCCESS
}

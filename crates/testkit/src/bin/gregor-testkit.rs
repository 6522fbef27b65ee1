//! `gregor-testkit`: runs a FakeCluster (and, unless given one, a real ZooKeeper) outside tests.
//!
//! ```text
//! gregor-testkit --brokers 3 [--zookeeper HOST:PORT[/chroot]] [--port FIRST_PORT]
//!                [--num-partitions N] [--default-replication-factor N]
//!                [--offsets-topic-num-partitions N] [--delete-topic-enable]
//!                [--request-log N]   (requests kept for inspection; default 1000, 0 = off)
//!                [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]
//! ```
//!
//! With `--tls-cert` and `--tls-key` (PEM: the brokers' certificate chain and its key) every
//! broker serves TLS only (`security.protocol=SSL` for clients); `--tls-client-ca` also
//! requires client certificates signed by that CA.
//!
//! Prints exactly one line when ready,
//! `brokers=127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3 zookeeper=127.0.0.1:Z`, then runs until it is
//! killed or its standard input closes.

use std::process::ExitCode;

use gregor_testkit::tls::ServerTls;
use gregor_testkit::zookeeper::ZooKeeperServer;
use gregor_testkit::FakeCluster;
use tokio::io::AsyncReadExt;

const USAGE: &str = "usage: gregor-testkit [--brokers N] [--zookeeper HOST:PORT[/chroot]] [--port FIRST_PORT] \
[--num-partitions N] [--default-replication-factor N] [--offsets-topic-num-partitions N] [--delete-topic-enable] \
[--request-log N] [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]";

#[derive(Debug, Default)]
struct Args {
    brokers: usize,
    zookeeper: Option<String>,
    port: Option<u16>,
    num_partitions: Option<i32>,
    replication_factor: Option<i32>,
    offsets_partitions: Option<i32>,
    delete_topic_enable: bool,
    request_log: usize,
    tls_cert: Option<String>,
    tls_key: Option<String>,
    tls_client_ca: Option<String>,
}

fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut args = Args { brokers: 3, request_log: 1000, ..Args::default() };
    while let Some(flag) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match flag.as_str() {
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
            "--request-log" => args.request_log = num(&value("--request-log")?, "--request-log")?,
            "--tls-cert" => args.tls_cert = Some(value("--tls-cert")?),
            "--tls-key" => args.tls_key = Some(value("--tls-key")?),
            "--tls-client-ca" => args.tls_client_ca = Some(value("--tls-client-ca")?),
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    if args.brokers == 0 {
        return Err("--brokers must be at least 1".to_owned());
    }
    if args.tls_cert.is_some() != args.tls_key.is_some() {
        return Err("--tls-cert and --tls-key go together".to_owned());
    }
    if args.tls_client_ca.is_some() && args.tls_cert.is_none() {
        return Err("--tls-client-ca needs --tls-cert and --tls-key".to_owned());
    }
    Ok(args)
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
    let (_server, zookeeper) = match &args.zookeeper {
        Some(z) => (None, z.clone()),
        None => match ZooKeeperServer::start() {
            Ok(s) => {
                let c = s.connect_string();
                (Some(s), c)
            }
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        },
    };
    let mut builder =
        FakeCluster::builder(zookeeper.clone()).brokers(args.brokers).request_log_capacity(args.request_log);
    if let Some(tls) = tls {
        builder = builder.tls(tls);
    }
    if let Some(p) = args.port {
        builder = builder.ports((0..args.brokers as u16).map(|i| p + i).collect());
    }
    builder = builder.configure(|c| {
        if let Some(n) = args.num_partitions {
            c.num_partitions = n;
        }
        if let Some(n) = args.replication_factor {
            c.default_replication_factor = n;
        }
        if let Some(n) = args.offsets_partitions {
            c.offsets_topic_num_partitions = n;
        }
        c.delete_topic_enable = args.delete_topic_enable;
    });
    let cluster = match builder.start().await {
        Ok(c) => c,
        Err(e) => {
            let mut msg = e.to_string();
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                msg.push_str(&format!(": {s}"));
                src = s.source();
            }
            eprintln!("error: {msg}");
            return ExitCode::FAILURE;
        }
    };
    println!("brokers={} zookeeper={zookeeper}", cluster.bootstrap());
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

//! # gregor — the command line
//!
//! `gregor` talks to Kafka 0.8.2 brokers with gregor's own clients, in the style of Kafka's
//! shell tools (`--broker-list`, `--topic`, `--property k=v`):
//!
//! * `gregor produce` — one message per line of stdin, sent by the [`AsyncProducer`]
//!   (batching; every message's delivery is awaited and reported; exit 1 if any failed);
//! * `gregor fetch` — one partition from an offset, one message per line of stdout, by the
//!   [`SimpleConsumer`]; stops at `--max-messages`, at the high watermark, or after
//!   `--timeout-ms` without a message;
//! * `gregor offsets` — `getOffsetsBefore` per partition, printed as Kafka 0.8's
//!   `GetOffsetShell` prints it: `topic:partition:offset[,offset...]`;
//! * `gregor consume` — a member of a consumer group ([`ConsumerConnector`], ZooKeeper
//!   coordinated), one message value per line, committing on exit (kafka-console-consumer);
//! * `gregor topics`, `brokers`, `groups`, `health`, `reassign`, `elect-leaders` — cluster
//!   administration through ZooKeeper with [`Admin`], as Kafka 0.8.2's shell tools; tables for
//!   people, `--output json` for scripts; `brokers --bootstrap-server` lists the brokers from a
//!   Metadata request instead (clusters without ZooKeeper), with how gregor speaks to each;
//! * `gregor perf produce|consume` — throughput and latency with a closing summary;
//! * `gregor audit` — produced against seen per topic and window, from the audit records of
//!   producers with audit on (exit 1 when anything is missing).
//!
//! ```text
//!  stdin ─ lines ─► produce ─► AsyncProducer ─► leaders ─► delivery results ─► summary (stderr)
//!  stdout ◄─ lines ◄─ fetch ◄─ SimpleConsumer::fetch_partition ◄─ leader of topic/partition
//!  stdout ◄─ T:P:O1,O2 ◄─ offsets ◄─ SimpleConsumer::offsets_before ◄─ leaders
//! ```
//!
//! Security (TLS; SASL is read but not run yet): `--command-config FILE`, a properties file in
//! Kafka's format with `security.protocol`, `ssl.*` and `sasl.*` (and, for the client commands,
//! any of their properties, before the `--property` values), or the same as `--property`
//! values.
//!
//! Exit codes: 0 on success, 1 on failure (the error and its causes on stderr, one per line),
//! 2 on a usage error (a bad flag or an invalid `--property`).
//!
//! Bytes: `produce` sends each line's bytes unchanged (only the `\n` is dropped); `fetch`
//! prints keys and values that are not valid UTF-8 *lossily* (each invalid sequence becomes
//! U+FFFD), and a null key or value as `null`, as Kafka's console consumer does.
//!
//! [`AsyncProducer`]: gregor_producer::AsyncProducer
//! [`SimpleConsumer`]: gregor_simple_consumer::SimpleConsumer
//! [`ConsumerConnector`]: gregor_consumer::ConsumerConnector
//! [`Admin`]: gregor_admin::Admin

mod admin;
mod api_versions;
mod audit;
mod brokers;
mod cli;
mod consume;
mod error;
mod fetch;
mod offsets;
mod output;
mod perf;
mod produce;
mod properties;
mod table;
mod tally;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::error::CliError;

fn main() -> ExitCode {
    // clap prints help/version (exit 0) and usage errors (exit 2) itself
    let cli = Cli::parse();
    if let Err(e) = cli::check(&cli) {
        e.exit();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return CliError::new("could not start the async runtime", e).report(),
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Produce(args) => produce::run(args).await,
            Command::Fetch(args) => fetch::run(args).await,
            Command::Offsets(args) => offsets::run(args).await,
            Command::ApiVersions(args) => api_versions::run(args).await,
            Command::Consume(args) => consume::run(args).await,
            Command::Topics(args) => admin::topics(args).await,
            Command::Brokers(args) => admin::brokers(args).await,
            Command::Groups(args) => admin::groups(args).await,
            Command::Health(args) => admin::health(args).await,
            Command::Reassign(args) => admin::reassign(args).await,
            Command::ElectLeaders(args) => admin::elect_leaders(args).await,
            // the sending loop on one of the runtime's workers, as an application's sending
            // code usually runs, rather than on this thread: with it here, the loop, the
            // producer's task and the second worker made three threads busy at once, which on
            // a 2-core machine shared with a broker cost up to 14% of the throughput
            // (benchmarks/timing/session-27.md)
            Command::Perf(cli::PerfCommand::Produce(args)) => match tokio::spawn(perf::produce(args)).await {
                Ok(result) => result,
                Err(e) => Err(CliError::new("perf produce stopped", e)),
            },
            Command::Perf(cli::PerfCommand::Consume(args)) => perf::consume(args).await,
            Command::Audit(args) => audit::run(args).await,
        }
    });
    // a read of stdin may still be blocked on its thread: never wait for it
    runtime.shutdown_background();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => e.report(),
    }
}

//! The report: a table per run and the ratios gregor/librdkafka and gregor/kafka-rust per
//! config (Markdown, readable as plain text).

use std::fmt::Write;

use crate::spec::{Client, RunResult};
use crate::Row;

pub struct Context<'a> {
    pub command: String,
    pub messages: usize,
    pub message_size: usize,
    pub partitions: i32,
    pub rf: usize,
    pub batch: usize,
    pub gregor_batch: usize,
    pub linger_ms: u64,
    pub queue: usize,
    pub repeat: usize,
    pub rate: Option<f64>,
    pub cluster_rss_kib: Option<u64>,
    pub load: (String, String),
    pub max_other: f64,
    pub rows: &'a [Row],
}

fn rate(r: &RunResult) -> f64 {
    r.acked as f64 / r.elapsed_s
}

fn cpu_us_per_msg(r: &RunResult) -> f64 {
    (r.cpu_user_s + r.cpu_sys_s) * 1e6 / r.acked.max(1) as f64
}

fn ms(us: Option<f64>) -> String {
    us.map_or("-".into(), |v| format!("{:.1}", v / 1000.0))
}

pub fn render(cx: &Context<'_>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "## Producer benchmark: gregor vs librdkafka vs kafka-rust\n");
    let _ = writeln!(s, "command: `{}`\n", cx.command);
    let (_, rdkafka_version) = rdkafka::util::get_rdkafka_version();
    let _ = writeln!(
        s,
        "clients: gregor (this workspace, AsyncProducer), librdkafka {rdkafka_version} (rdkafka crate, BaseProducer, \
         api.version.request=false, broker.version.fallback=0.8.2), kafka-rust (kafka crate 0.10, Producer).\n"
    );
    let _ = writeln!(
        s,
        "{} messages of {} bytes per run, each run on a fresh topic of {} partitions × replication factor {} \
         (messages spread evenly: message i goes to partition i mod {}), 3-broker FakeCluster + real ZooKeeper \
         (gregor-testkit, its own process). Batching: librdkafka batch.num.messages={} linger.ms={} \
         queue.buffering.max.messages={}; gregor batch.num.messages={} (per broker request) \
         queue.buffering.max.ms={} queue.buffering.max.messages={}; kafka-rust send_all of {} messages. \
         {}Each client runs in its own process; CPU = user+sys of that process from producer creation \
         to the last ack; peak RSS = its VmHWM. Every run verified: all N acknowledged and the topic's \
         high watermarks sum to N.\n",
        cx.messages,
        cx.message_size,
        cx.partitions,
        cx.rf,
        cx.partitions,
        cx.batch,
        cx.linger_ms,
        cx.queue,
        cx.gregor_batch,
        cx.linger_ms,
        cx.queue,
        cx.batch * cx.partitions as usize,
        if cx.repeat > 1 {
            format!("{} runs per cell, the median by throughput shown (range in brackets). ", cx.repeat)
        } else {
            String::new()
        },
    );
    let _ = writeln!(
        s,
        "{} gregor on tokio's multi-thread runtime (gregor-ct: current-thread); librdkafka's \
         BaseProducer polled by the sending thread.\n",
        match cx.rate {
            Some(r) => format!("Messages handed over at {r:.0} msg/s (--rate)."),
            None =>
                "Messages handed over as fast as each client takes them (a full queue blocks or is polled).".to_owned(),
        },
    );
    let _ = writeln!(
        s,
        "| acks | codec | client | msg/s | MB/s | p50 ms | p99 ms | CPU µs/msg | CPU s (user+sys) | peak RSS MiB | cluster CPU s | other CPU s | HW sum |"
    );
    let _ = writeln!(s, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in cx.rows {
        match &row.result {
            Ok(r) => {
                let spread = if row.all_rates.len() > 1 {
                    let lo = row.all_rates.iter().copied().fold(f64::INFINITY, f64::min);
                    let hi = row.all_rates.iter().copied().fold(0.0, f64::max);
                    format!(" ({lo:.0}–{hi:.0})")
                } else {
                    String::new()
                };
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {:.0}{} | {:.1} | {} | {} | {:.2} | {:.2} | {:.1} | {} | {} | {} |",
                    row.acks,
                    row.codec.name(),
                    row.client.name(),
                    rate(r),
                    spread,
                    rate(r) * cx.message_size as f64 / 1e6,
                    ms(r.p50_us),
                    ms(r.p99_us),
                    cpu_us_per_msg(r),
                    r.cpu_user_s + r.cpu_sys_s,
                    r.peak_rss_kib as f64 / 1024.0,
                    r.cluster_cpu_s.map_or("-".into(), |c| format!("{c:.1}")),
                    r.other_cpu_s.map_or("-".into(), |c| {
                        let flag = if crate::disturbance(r).unwrap_or(0.0) > cx.max_other { " !" } else { "" };
                        format!("{c:.1}{flag}")
                    }),
                    r.high_watermark_sum.map_or("-".into(), |h| h.to_string()),
                );
            }
            Err(e) => {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | FAILED: {} | | | | | | | | | |",
                    row.acks,
                    row.codec.name(),
                    row.client.name(),
                    e.replace('|', "/")
                );
            }
        }
    }
    let _ = writeln!(
        s,
        "\nLatency: from the moment the benchmark hands a message to the client (before `send` / \
         `produce` returns, so time spent waiting for room in a full queue counts) to its \
         acknowledgement: gregor's delivery callback, librdkafka's delivery report; kafka-rust is \
         synchronous, so its messages are acknowledged when the `send_all` carrying them returns \
         (one request per leader, one broker after the other). {}\n",
        if cx.rate.is_some() {
            "Paced run: latencies are the clients' own."
        } else {
            "Unpaced run: the queue fills, so gregor's and librdkafka's latencies are mostly time \
             spent in their 100,000-message queues (Little's law: queue / throughput); compare \
             latencies in a run with --rate."
        }
    );
    let _ = writeln!(
        s,
        "cluster CPU s: CPU the gregor-testkit process (3 brokers) used during the run. other CPU s: \
         the rest of the machine's busy CPU during the run (anything else running on its {} cores). A run where that exceeded {:.0}% of the machine's CPU \
         was done again (up to --redo times) and the least disturbed attempt kept; `!` marks one \
         still above it. \
         Load average at the start: {}; at the end: {}.{}\n",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        cx.max_other * 100.0,
        cx.load.0,
        cx.load.1,
        cx.cluster_rss_kib.map_or(String::new(), |k| format!(" Cluster RSS at the end: {:.0} MiB.", k as f64 / 1024.0)),
    );

    // ratios
    let mut seen = Vec::new();
    for row in cx.rows {
        if !seen.contains(&(row.acks, row.codec)) {
            seen.push((row.acks, row.codec));
        }
    }
    let present = |c: Client| cx.rows.iter().any(|r| r.client == c && r.result.is_ok());
    let peers: Vec<Client> = [Client::Librdkafka, Client::KafkaRust].into_iter().filter(|c| present(*c)).collect();
    let mut summary = Vec::new();
    for gregor in [Client::Gregor, Client::GregorCt].into_iter().filter(|c| present(*c)) {
        let _ = writeln!(
            s,
            "### Ratios {0} ÷ peer (throughput > 1: {0} is faster; CPU, p99, RSS < 1: {0} uses less)\n",
            gregor.name()
        );
        let _ = writeln!(s, "| acks | codec | peer | throughput | CPU per msg | p99 latency | peak RSS |");
        let _ = writeln!(s, "|---|---|---|---:|---:|---:|---:|");
        let mut geo: Vec<(Client, Vec<f64>)> = peers.iter().map(|p| (*p, Vec::new())).collect();
        for &(acks, codec) in &seen {
            let find = |c: Client| {
                cx.rows
                    .iter()
                    .find(|r| r.acks == acks && r.codec == codec && r.client == c)
                    .and_then(|r| r.result.as_ref().ok())
            };
            for (peer, list) in geo.iter_mut() {
                let (Some(g), Some(p)) = (find(gregor), find(*peer)) else {
                    let _ = writeln!(s, "| {acks} | {} | {} | n/a | n/a | n/a | n/a |", codec.name(), peer.name());
                    continue;
                };
                let tp = rate(g) / rate(p);
                list.push(tp);
                let p99 = match (g.p99_us, p.p99_us) {
                    (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
                    _ => "-".into(),
                };
                let _ = writeln!(
                    s,
                    "| {acks} | {} | {} | {:.2} | {:.2} | {} | {:.2} |",
                    codec.name(),
                    peer.name(),
                    tp,
                    cpu_us_per_msg(g) / cpu_us_per_msg(p),
                    p99,
                    g.peak_rss_kib as f64 / p.peak_rss_kib.max(1) as f64,
                );
            }
        }
        let _ = writeln!(s);
        for (peer, list) in &geo {
            if !list.is_empty() {
                let gm = (list.iter().map(|x| x.ln()).sum::<f64>() / list.len() as f64).exp();
                summary.push(format!(
                    "Throughput {} ÷ {}: geometric mean {:.2} over {} configs (min {:.2}, max {:.2}).",
                    gregor.name(),
                    peer.name(),
                    gm,
                    list.len(),
                    list.iter().copied().fold(f64::INFINITY, f64::min),
                    list.iter().copied().fold(0.0, f64::max)
                ));
            }
        }
    }
    for line in summary {
        let _ = writeln!(s, "{line}\n");
    }
    s
}

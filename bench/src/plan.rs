//! Which clusters a run covers and what runs on each. `--timing` names the FakeCluster's broker
//! timing profiles, in order: each gets a cluster of its own, started when the one before is
//! stopped, and the cluster suites (producer, latency, consumer) run on each. The default run
//! covers both profiles; the real-timing one then runs each cell once (`--real-timing-repeat`),
//! its runs being several times longer, so that the whole run stays within about 40 minutes.

use crate::spec::{Client, Codec, ConsumerClient};
use crate::Args;

/// Answers at once (`gregor_testkit::Timing::instant`).
pub const INSTANT: &str = "instant";
/// A real broker's timing (`gregor_testkit::Timing::kafka_0_8_2`).
pub const REAL: &str = "kafka-0.8.2";
/// The FakeCluster in its modern mode (`gregor-testkit --modern`: KRaft-style, Kafka 3.7-4.x,
/// no ZooKeeper), answering at once: the clients negotiate versions and write RecordBatch v2.
pub const MODERN: &str = "modern";
/// The FakeCluster in its modern mode with `kafka-0.8.2`'s broker timing (`gregor-testkit
/// --modern --timing kafka-0.8.2`): RecordBatch v2 to brokers that take time, so that queues
/// fill and the memory suite measures the modern record format.
pub const MODERN_TIMED: &str = "modern-timed";
/// The default run's profiles, in order.
pub const PROFILES: [&str; 2] = [INSTANT, REAL];
/// Every profile `--timing` takes.
pub const ALL_PROFILES: [&str; 4] = [INSTANT, REAL, MODERN, MODERN_TIMED];

/// The profile's cluster is the FakeCluster's modern mode (KRaft-style, no ZooKeeper): the
/// clients negotiate versions and write RecordBatch v2.
pub fn is_modern(profile: &str) -> bool {
    profile == MODERN || profile == MODERN_TIMED
}

/// The profile's brokers take the time a real broker under load takes (the `kafka-0.8.2` model).
pub fn takes_time(profile: &str) -> bool {
    profile == REAL || profile == MODERN_TIMED
}

/// `gregor-testkit --timing` for the profile's brokers.
pub fn broker_timing(profile: &str) -> &'static str {
    if takes_time(profile) {
        REAL
    } else {
        INSTANT
    }
}

/// Why a client or consumer of `--clients`/`--consumers` does not run on `profile` (the
/// report says so), or None.
pub fn left_out(profile: &str) -> Option<&'static str> {
    is_modern(profile).then_some(
        "kafka-rust (Kafka 0.8 requests only, no version negotiation) and gregor-group (its group \
         lives in ZooKeeper, which a modern cluster has not) do not run on the modern profiles",
    )
}

/// Why `--codecs` zstd does not run on `profile`, or None.
pub fn zstd_left_out(profile: &str) -> Option<&'static str> {
    (!is_modern(profile))
        .then_some("zstd runs on the modern profiles only: Kafka 0.8.2 has no zstd (RecordBatch v2 only)")
}

/// `--timing LIST`: the profiles named, in the order given, each once.
pub fn parse_timing(list: &str) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for t in list.split(',').map(str::trim) {
        if !ALL_PROFILES.contains(&t) {
            return Err(format!(
                "--timing: unknown profile {t:?} (instant, kafka-0.8.2, modern, modern-timed, or several: \
                 instant,kafka-0.8.2)"
            ));
        }
        if !out.iter().any(|o| o == t) {
            out.push(t.to_owned());
        }
    }
    Ok(out)
}

/// One cluster and what runs on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The FakeCluster's timing profile; `None`: the external cluster.
    pub timing: Option<String>,
    pub repeat: usize,
    pub consumer_repeat: usize,
    pub latency_repeat: usize,
    /// Runs per memory cell: `--memory-repeat`, else on a profile whose brokers take time
    /// `--real-timing-repeat`'s when given ("every suite"), else 1.
    pub memory_repeat: usize,
    /// The memory suite runs on this cluster: on every profile whose brokers take time
    /// (`kafka-0.8.2`, `modern-timed`: the queues fill), else on the first that is not `modern`.
    pub memory: bool,
    /// Why its runs per cell are fewer than the options say, for the report.
    pub reduced: Option<String>,
}

impl Plan {
    /// The profile's name, `external` for an external cluster.
    pub fn name(&self) -> &str {
        self.timing.as_deref().unwrap_or("external")
    }

    /// The options as this cluster's runs use them (its runs per cell; on the modern profile,
    /// the clients that speak to it; on a Kafka 0.8.2 profile, no zstd).
    pub fn apply(&self, args: &Args) -> Args {
        let modern = self.timing.as_deref().is_some_and(is_modern);
        // an external cluster's version is its own business: zstd runs there when asked
        let zstd = modern || self.timing.is_none();
        let codecs = |list: &[Codec]| list.iter().copied().filter(|c| zstd || !c.needs_modern()).collect();
        Args {
            codecs: codecs(&args.codecs),
            memory_codecs: codecs(&args.memory_codecs),
            repeat: self.repeat,
            consumer_repeat: self.consumer_repeat,
            latency_repeat: self.latency_repeat,
            memory_repeat: Some(self.memory_repeat),
            clients: args.clients.iter().copied().filter(|c| !(modern && *c == Client::KafkaRust)).collect(),
            consumers: args
                .consumers
                .iter()
                .copied()
                .filter(|c| !(modern && matches!(c, ConsumerClient::KafkaRust | ConsumerClient::GregorGroup)))
                .collect(),
            ..args.clone()
        }
    }
}

/// The clusters of a run, in order: one per `--timing` profile, or the external cluster.
pub fn plans(args: &Args) -> Vec<Plan> {
    let base = |timing: Option<String>| Plan {
        timing,
        repeat: args.repeat,
        consumer_repeat: args.consumer_repeat,
        latency_repeat: args.latency_repeat,
        memory_repeat: args.memory_repeat.unwrap_or(1),
        memory: false,
        reduced: None,
    };
    if args.external.is_some() {
        return vec![Plan { memory: true, ..base(None) }];
    }
    // (never `modern`: it answers at once, and a full queue is what the suite measures)
    let timed = args.timing.iter().any(|t| takes_time(t));
    let first_other = args.timing.iter().map(String::as_str).find(|t| *t != MODERN);
    let memory_on = |t: &str| if timed { takes_time(t) } else { Some(t) == first_other };
    let several = args.timing.len() > 1;
    // given, it applies whatever the profiles; by default only beside another profile
    let real_repeat = args.real_timing_repeat.or(several.then_some(1));
    args.timing
        .iter()
        .map(|t| {
            let mut plan = Plan { memory: memory_on(t), ..base(Some(t.clone())) };
            if let (true, None, Some(r)) = (takes_time(t), args.memory_repeat, args.real_timing_repeat) {
                plan.memory_repeat = r;
            }
            if let (true, Some(r)) = (takes_time(t), real_repeat) {
                let fewer = r < plan.repeat || r < plan.consumer_repeat || r < plan.latency_repeat;
                (plan.repeat, plan.consumer_repeat, plan.latency_repeat) = (r, r, r);
                if fewer {
                    plan.reduced = Some(format!(
                        "{r} run(s) per cell on `{t}` in every suite ({}), where the options ask for {} \
                         (producer), {} (consumer) and {} (latency): its runs take several times longer \
                         than on `{INSTANT}`, and this keeps the whole run within about 40 minutes",
                        if args.real_timing_repeat.is_some() {
                            "`--real-timing-repeat`"
                        } else {
                            "the default beside another profile; `--real-timing-repeat R` to change it"
                        },
                        args.repeat,
                        args.consumer_repeat,
                        args.latency_repeat
                    ));
                }
            }
            plan
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timing_list_keeps_its_order_and_drops_repeats() {
        assert_eq!(parse_timing("instant").unwrap(), ["instant"]);
        assert_eq!(parse_timing("instant,kafka-0.8.2").unwrap(), ["instant", "kafka-0.8.2"]);
        assert_eq!(parse_timing("kafka-0.8.2, instant,kafka-0.8.2").unwrap(), ["kafka-0.8.2", "instant"]);
        assert_eq!(parse_timing("modern,instant").unwrap(), ["modern", "instant"]);
        assert_eq!(parse_timing("modern-timed").unwrap(), ["modern-timed"]);
        assert!(parse_timing("instant,slow").unwrap_err().contains("\"slow\""));
        assert!(parse_timing("").is_err());
    }

    /// The options of the command line `v`.
    fn args_of(v: &[&str]) -> crate::Args {
        crate::parse_args(v.iter().map(|a| a.to_string()).collect()).unwrap()
    }

    fn plans_of(v: &[&str]) -> Vec<Plan> {
        plans(&args_of(v))
    }

    #[test]
    fn the_memory_suite_runs_on_the_real_timing_profile_else_the_first() {
        let on = |v: &[&str]| plans_of(v).iter().filter(|p| p.memory).map(|p| p.name().to_owned()).collect::<Vec<_>>();
        assert_eq!(on(&[]), ["kafka-0.8.2"]);
        assert_eq!(on(&["--timing", "kafka-0.8.2,instant"]), ["kafka-0.8.2"]);
        assert_eq!(on(&["--timing", "instant"]), ["instant"]);
        assert_eq!(on(&["--timing", "modern,instant", "--suites", "memory"]), ["instant"]);
        assert!(on(&["--timing", "modern", "--suites", "memory"]).is_empty());
        assert_eq!(on(&["--brokers", "h:9092", "--zookeeper", "h:2181"]), ["external"]);
        // every profile whose brokers take time, the modern one with its timing too
        assert_eq!(on(&["--timing", "instant,kafka-0.8.2,modern-timed"]), ["kafka-0.8.2", "modern-timed"]);
        assert_eq!(on(&["--timing", "modern,modern-timed"]), ["modern-timed"]);
        assert_eq!(on(&["--timing", "modern-timed", "--suites", "memory"]), ["modern-timed"]);
    }

    /// `modern-timed` is the modern cluster (its clients, zstd) with `kafka-0.8.2`'s broker
    /// timing (the testkit's `--timing`, the real-timing repeat counts).
    #[test]
    fn the_timed_modern_profile_is_modern_and_takes_time() {
        assert!(is_modern(MODERN_TIMED) && is_modern(MODERN) && !is_modern(REAL) && !is_modern(INSTANT));
        assert!(takes_time(MODERN_TIMED) && takes_time(REAL) && !takes_time(MODERN) && !takes_time(INSTANT));
        assert_eq!(
            [INSTANT, REAL, MODERN, MODERN_TIMED].map(broker_timing),
            [INSTANT, REAL, INSTANT, REAL],
            "gregor-testkit --timing takes instant or kafka-0.8.2"
        );
        let argv = ["--timing", "instant,modern-timed", "--codecs", "none,zstd"];
        let args = args_of(&argv);
        let p = plans(&args);
        assert_eq!(
            p.iter().map(repeats).collect::<Vec<_>>(),
            [of("instant", 3, 3, 3, false), of("modern-timed", 1, 1, 1, true)]
        );
        assert!(p[1].reduced.as_deref().unwrap().contains("on `modern-timed`"));
        let timed = p[1].apply(&args);
        assert_eq!(timed.codecs, [Codec::None, Codec::Zstd]);
        assert!(!timed.clients.contains(&Client::KafkaRust));
        assert_eq!(timed.consumers, [ConsumerClient::GregorSimple, ConsumerClient::Librdkafka]);
        assert!(left_out(MODERN_TIMED).is_some() && zstd_left_out(MODERN_TIMED).is_none());
        // --real-timing-repeat counts for its memory cells too
        let args = args_of(&["--timing", "modern-timed", "--suites", "memory", "--real-timing-repeat", "3"]);
        assert_eq!(plans(&args)[0].memory_repeat, 3);
    }

    fn repeats(p: &Plan) -> (String, usize, usize, usize, bool) {
        (p.name().to_owned(), p.repeat, p.consumer_repeat, p.latency_repeat, p.reduced.is_some())
    }

    fn of(name: &str, r: usize, c: usize, l: usize, reduced: bool) -> (String, usize, usize, usize, bool) {
        (name.to_owned(), r, c, l, reduced)
    }

    #[test]
    fn the_default_run_covers_both_profiles_the_real_one_once_per_cell() {
        let p = plans_of(&[]);
        assert_eq!(
            p.iter().map(repeats).collect::<Vec<_>>(),
            [of("instant", 3, 3, 3, false), of("kafka-0.8.2", 1, 1, 1, true)]
        );
        let why = p[1].reduced.as_deref().unwrap();
        assert!(why.contains("1 run(s) per cell") && why.contains("--real-timing-repeat"), "{why}");
        // a smoke run has one run per cell anyway: nothing is reduced
        let p = plans_of(&["--quick"]);
        assert_eq!(
            p.iter().map(repeats).collect::<Vec<_>>(),
            [of("instant", 1, 1, 1, false), of("kafka-0.8.2", 1, 1, 1, false)]
        );
    }

    #[test]
    fn one_profile_alone_keeps_the_repeat_options_unless_told() {
        let one = |v: &[&str]| plans_of(v).iter().map(repeats).collect::<Vec<_>>();
        assert_eq!(one(&["--timing", "instant"]), [of("instant", 3, 3, 3, false)]);
        assert_eq!(one(&["--timing", "kafka-0.8.2", "--repeat", "5"]), [of("kafka-0.8.2", 5, 3, 3, false)]);
        assert_eq!(one(&["--timing", "kafka-0.8.2", "--real-timing-repeat", "2"]), [of("kafka-0.8.2", 2, 2, 2, true)]);
        assert_eq!(
            one(&["--timing", "kafka-0.8.2,instant", "--real-timing-repeat", "4", "--latency-repeat", "1"]),
            [of("kafka-0.8.2", 4, 4, 4, false), of("instant", 3, 3, 1, false)]
        );
        let external = one(&["--brokers", "h:9092", "--zookeeper", "h:2181"]);
        assert_eq!(external, [of("external", 3, 3, 3, false)]);
    }

    /// `--real-timing-repeat` is "runs per cell of every suite on kafka-0.8.2": the memory
    /// suite's too, unless `--memory-repeat` says otherwise.
    #[test]
    fn the_memory_suite_runs_as_often_as_the_real_timing_profiles_other_suites() {
        let memory = |v: &[&str]| {
            let args = args_of(v);
            plans(&args)
                .iter()
                .filter(|p| p.memory)
                .map(|p| (p.memory_repeat, p.apply(&args).memory_repeat))
                .collect::<Vec<_>>()
        };
        assert_eq!(memory(&[]), [(1, Some(1))]);
        assert_eq!(memory(&["--real-timing-repeat", "3"]), [(3, Some(3))]);
        assert_eq!(memory(&["--real-timing-repeat", "3", "--memory-repeat", "5"]), [(5, Some(5))]);
        assert_eq!(memory(&["--memory-repeat", "2"]), [(2, Some(2))]);
        // on another profile (kafka-0.8.2 not among them) it is --memory-repeat's or 1
        assert_eq!(memory(&["--timing", "instant", "--suites", "memory", "--real-timing-repeat", "3"]), [(1, Some(1))]);
        assert_eq!(memory(&["--brokers", "h:9092", "--zookeeper", "h:2181", "--memory-repeat", "4"]), [(4, Some(4))]);
    }

    #[test]
    fn the_modern_profile_leaves_out_the_clients_that_cannot_speak_to_it() {
        let p = plans_of(&["--timing", "instant,modern"]);
        let args = args_of(&["--timing", "instant,modern"]);
        let (instant, modern) = (p[0].apply(&args), p[1].apply(&args));
        assert_eq!(instant.clients, args.clients);
        assert_eq!(instant.consumers, args.consumers);
        assert!(args.clients.contains(&Client::KafkaRust));
        assert!(!modern.clients.contains(&Client::KafkaRust));
        assert_eq!(modern.clients.len(), args.clients.len() - 1);
        assert_eq!(modern.consumers, [ConsumerClient::GregorSimple, ConsumerClient::Librdkafka]);
        assert!(left_out(MODERN).is_some() && left_out(INSTANT).is_none());
    }

    /// zstd (RecordBatch v2 only) runs on the modern profile and an external cluster, and is
    /// left out of Kafka 0.8.2's profiles, the memory suite's codecs included.
    #[test]
    fn zstd_runs_on_the_modern_profile_only() {
        let argv = ["--timing", "kafka-0.8.2,modern", "--codecs", "none,zstd", "--memory-codecs", "zstd,snappy"];
        let args = args_of(&argv);
        let p = plans_of(&argv);
        let (real, modern) = (p[0].apply(&args), p[1].apply(&args));
        assert_eq!(real.codecs, [Codec::None]);
        assert_eq!(real.memory_codecs, [Codec::Snappy]);
        assert_eq!(modern.codecs, [Codec::None, Codec::Zstd]);
        let external = plans_of(&["--brokers", "h:9092", "--zookeeper", "h:2181", "--codecs", "zstd"]);
        let args = args_of(&["--brokers", "h:9092", "--zookeeper", "h:2181", "--codecs", "zstd"]);
        assert_eq!(external[0].apply(&args).codecs, [Codec::Zstd]);
        assert!(zstd_left_out(REAL).is_some() && zstd_left_out(MODERN).is_none());
        assert_eq!(Codec::parse("zstd"), Some(Codec::Zstd));
        assert!(!Codec::ALL.contains(&Codec::Zstd), "not a default codec");
    }
}

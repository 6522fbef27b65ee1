//! Partitioners: which partition of a topic a record goes to.
//!
//! * [`murmur2`] is the Java client's `Utils.murmur2`, bit for bit; keyed records go to
//!   `(murmur2(key) & 0x7fffffff) % partitions`, as the Java client and librdkafka's
//!   `murmur2`/`murmur2_random` partitioners place them, so gregor, Java and librdkafka
//!   producers put the same key in the same partition.
//! * [`PartitionerKind`] picks the strategy; [`Partitioner`] is the trait for your own.
//!
//! Keyed records are placed over **all** partitions of the topic (so a key always maps to the
//! same partition; a record whose partition has no leader waits for one). Records without a
//! key, and every record under [`PartitionerKind::RoundRobin`], go to partitions that have a
//! leader.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use gregor_config::ConfigError;

/// The Java client's murmur2 hash (`org.apache.kafka.common.utils.Utils.murmur2`): seed
/// `0x9747b28c`, little-endian 4-byte blocks, the tail folded in as Java's switch fall-through
/// does.
///
/// ```
/// assert_eq!(gregor_producer::murmur2(b"21"), -973_932_308);
/// ```
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let len = data.len();
    let mut h: u32 = SEED ^ (len as u32);
    let mut blocks = data.chunks_exact(4);
    for block in &mut blocks {
        let mut k = u32::from_le_bytes([block[0], block[1], block[2], block[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = blocks.remainder();
    if tail.len() >= 3 {
        h ^= u32::from(tail[2]) << 16;
    }
    if tail.len() >= 2 {
        h ^= u32::from(tail[1]) << 8;
    }
    if !tail.is_empty() {
        h ^= u32::from(tail[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// The index (not the id) of the partition a key goes to among `partitions` partitions:
/// `(murmur2(key) & 0x7fffffff) % partitions`. `partitions` must be above 0.
///
/// ```
/// assert_eq!(gregor_producer::murmur2_partition(b"foobar", 50), 16);
/// ```
pub fn murmur2_partition(key: &[u8], partitions: usize) -> usize {
    ((murmur2(key) & 0x7fff_ffff) as usize) % partitions.max(1)
}

/// A partitioner of your own ([`PartitionerKind::Custom`]).
///
/// Called on the producer's background task for every record without an explicit
/// partition, once the topic's metadata is known: keep it fast and never block.
pub trait Partitioner: Send + Sync {
    /// The partition for a record of `topic` with `key` (`None` = null key). `partitions`
    /// lists every partition id of the topic, sorted; `available` those with a leader. A
    /// return value not in `partitions` fails the record with
    /// [`Error::InvalidPartition`](crate::Error::InvalidPartition).
    fn partition(&self, topic: &str, key: Option<&[u8]>, partitions: &[i32], available: &[i32]) -> i32;
}

impl<F> Partitioner for F
where
    F: Fn(&str, Option<&[u8]>, &[i32], &[i32]) -> i32 + Send + Sync,
{
    fn partition(&self, topic: &str, key: Option<&[u8]>, partitions: &[i32], available: &[i32]) -> i32 {
        self(topic, key, partitions, available)
    }
}

/// Which partitioner the producer uses (`partitioner.class`).
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum PartitionerKind {
    /// Kafka 0.8.2's `kafka.producer.DefaultPartitioner` as far as it can be carried over
    /// (the default):
    /// * keyed records: [`murmur2`] over all partitions. (0.8's Scala partitioner hashes the
    ///   key *object* with `hashCode`, which for a byte array is its identity: no stable
    ///   placement to be compatible with, so the Java client's murmur2 is used instead.)
    /// * null keys: 0.8's sticky choice — one random partition with a leader per topic, kept
    ///   until the next metadata refresh (`topic.metadata.refresh.interval.ms` or a refresh
    ///   after a failure), then chosen again.
    #[default]
    Default08,
    /// The Java client's `DefaultPartitioner` (librdkafka's `murmur2_random` for keyed
    /// records): keyed records by [`murmur2`]; null keys round robin over the partitions
    /// with a leader.
    Murmur2,
    /// Every record, keyed or not, to the next partition with a leader, in turn per topic.
    RoundRobin,
    /// Your own.
    Custom(Arc<dyn Partitioner>),
}

impl fmt::Debug for PartitionerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PartitionerKind::Default08 => f.write_str("Default08"),
            PartitionerKind::Murmur2 => f.write_str("Murmur2"),
            PartitionerKind::RoundRobin => f.write_str("RoundRobin"),
            PartitionerKind::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

impl PartitionerKind {
    /// A custom partitioner.
    pub fn custom(partitioner: impl Partitioner + 'static) -> PartitionerKind {
        PartitionerKind::Custom(Arc::new(partitioner))
    }

    /// Reads a `partitioner.class` value: `kafka.producer.DefaultPartitioner` or `default`,
    /// `murmur2` or `org.apache.kafka.clients.producer.internals.DefaultPartitioner`,
    /// `round_robin` or `roundrobin`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Invalid`] for another name (a custom partitioner is a value: give it to
    /// [`crate::ProducerConfigBuilder::partitioner`]).
    pub fn from_class_name(name: &str) -> Result<PartitionerKind, ConfigError> {
        match name.trim() {
            "kafka.producer.DefaultPartitioner" | "default" => Ok(PartitionerKind::Default08),
            "murmur2" | "org.apache.kafka.clients.producer.internals.DefaultPartitioner" => {
                Ok(PartitionerKind::Murmur2)
            }
            "round_robin" | "roundrobin" => Ok(PartitionerKind::RoundRobin),
            other => Err(ConfigError::Invalid {
                property: "partitioner.class",
                value: other.to_owned(),
                reason: "must be kafka.producer.DefaultPartitioner, murmur2 or round_robin; give a custom \
                         partitioner to ProducerConfigBuilder::partitioner"
                    .to_owned(),
            }),
        }
    }

    /// The `partitioner.class` name this reads from (`custom` for [`PartitionerKind::Custom`]).
    pub fn class_name(&self) -> &'static str {
        match self {
            PartitionerKind::Default08 => "kafka.producer.DefaultPartitioner",
            PartitionerKind::Murmur2 => "murmur2",
            PartitionerKind::RoundRobin => "round_robin",
            PartitionerKind::Custom(_) => "custom",
        }
    }
}

/// What choosing a partition came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Choice {
    /// This partition.
    Partition(i32),
    /// Not yet: the topic has no partition (with a leader, for records placed by
    /// availability); wait for metadata.
    Wait,
    /// A custom partitioner returned a partition the topic does not have.
    Invalid(i32),
}

/// The partitioner with its state (sticky choices, round-robin counters). Pure: randomness is
/// drawn from the `rng` given.
#[derive(Debug)]
pub(crate) struct PartitionerState {
    kind: PartitionerKind,
    sticky: HashMap<String, i32>,
    counters: HashMap<String, usize>,
}

impl PartitionerState {
    pub(crate) fn new(kind: PartitionerKind) -> PartitionerState {
        PartitionerState { kind, sticky: HashMap::new(), counters: HashMap::new() }
    }

    /// Forgets the sticky null-key choices (called on every metadata refresh, as 0.8 clears
    /// its `sendPartitionPerTopicCache`).
    pub(crate) fn reset_sticky(&mut self) {
        self.sticky.clear();
    }

    /// The partition for a record of `topic` with `key`; `partitions` are all partition ids
    /// (sorted), `available` those with a leader; `draw` gives a random number.
    pub(crate) fn choose(
        &mut self,
        topic: &str,
        key: Option<&[u8]>,
        partitions: &[i32],
        available: &[i32],
        draw: &mut dyn FnMut() -> usize,
    ) -> Choice {
        match (&self.kind, key) {
            (PartitionerKind::Default08 | PartitionerKind::Murmur2, Some(key)) => {
                if partitions.is_empty() {
                    return Choice::Wait;
                }
                Choice::Partition(partitions[murmur2_partition(key, partitions.len())])
            }
            (PartitionerKind::Default08, None) => {
                if let Some(&p) = self.sticky.get(topic) {
                    if available.contains(&p) {
                        return Choice::Partition(p);
                    }
                }
                if available.is_empty() {
                    return Choice::Wait;
                }
                let p = available[draw() % available.len()];
                self.sticky.insert(topic.to_owned(), p);
                Choice::Partition(p)
            }
            (PartitionerKind::Murmur2, None) | (PartitionerKind::RoundRobin, _) => {
                if available.is_empty() {
                    return Choice::Wait;
                }
                let counter = match self.counters.get_mut(topic) {
                    Some(c) => c,
                    None => self.counters.entry(topic.to_owned()).or_insert_with(&mut *draw),
                };
                let p = available[*counter % available.len()];
                *counter = counter.wrapping_add(1);
                Choice::Partition(p)
            }
            (PartitionerKind::Custom(custom), key) => {
                if partitions.is_empty() {
                    return Choice::Wait;
                }
                let p = custom.partition(topic, key, partitions, available);
                if partitions.contains(&p) {
                    Choice::Partition(p)
                } else {
                    Choice::Invalid(p)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Apache Kafka's `UtilsTest.testMurmur2` vectors (the Java client's own test), then the
    /// vectors of librdkafka's `rdmurmur2.c` unit test (its murmur2 partitioners must agree
    /// with Java), then kafkajs's.
    #[test]
    fn murmur2_matches_java_and_librdkafka() {
        let java: &[(&[u8], i32)] = &[
            (b"21", -973_932_308),
            (b"foobar", -790_332_482),
            (b"a-little-bit-long-string", -985_981_536),
            (b"a-little-bit-longer-string", -1_486_304_829),
            (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58_897_971),
            (b"abc", 479_470_107),
        ];
        let librdkafka: &[(&[u8], u32)] = &[
            (b"kafka", 0xd067_cf64),
            (b"giberish123456789", 0x8f55_2b0c),
            (b"1234", 0x9fc9_7b14),
            (b"234", 0xe7c0_09ca),
            (b"34", 0x8739_30da),
            (b"4", 0x5a4b_5ca1),
            (b"PreAmbleWillBeRemoved,ThePrePartThatIs", 0x7842_4f1c),
            (b"reAmbleWillBeRemoved,ThePrePartThatIs", 0x4a62_b377),
            (b"eAmbleWillBeRemoved,ThePrePartThatIs", 0xe0e4_e09e),
            (b"AmbleWillBeRemoved,ThePrePartThatIs", 0x62b8_b43f),
            (b"", 0x106e_08d9),
        ];
        let kafkajs: &[(&[u8], i32)] =
            &[(b"0", 971_027_396), (b"1", -1_993_445_489), (b"128", -326_012_175), (b"100:48069", 1_009_543_857)];
        for (key, want) in java.iter().chain(kafkajs) {
            assert_eq!(murmur2(key), *want, "{:?}", String::from_utf8_lossy(key));
        }
        for (key, want) in librdkafka {
            assert_eq!(murmur2(key) as u32, *want, "{:?}", String::from_utf8_lossy(key));
        }
        assert_eq!(murmur2_partition(b"foobar", 50), 16);
        // (h & 0x7fffffff) % n, never a negative index
        assert_eq!(murmur2_partition(b"21", 3), ((-973_932_308i32 & 0x7fff_ffff) % 3) as usize);
    }

    fn no_draw() -> impl FnMut() -> usize {
        || panic!("no random draw expected")
    }

    #[test]
    fn keyed_records_use_all_partitions_by_murmur2() {
        for kind in [PartitionerKind::Default08, PartitionerKind::Murmur2] {
            let mut s = PartitionerState::new(kind);
            let all = [0, 1, 2, 3, 4];
            for key in [&b"a"[..], b"foobar", b"21", b""] {
                let want = all[murmur2_partition(key, 5)];
                // even when that partition has no leader: the record waits for one
                assert_eq!(s.choose("t", Some(key), &all, &[], &mut no_draw()), Choice::Partition(want));
            }
            assert_eq!(s.choose("t", Some(b"k"), &[], &[], &mut no_draw()), Choice::Wait);
        }
    }

    #[test]
    fn null_keys_stick_until_reset() {
        let mut s = PartitionerState::new(PartitionerKind::Default08);
        let mut draws = [1usize, 2, 0].into_iter();
        let mut draw = move || draws.next().unwrap();
        let all = [0, 1, 2];
        for _ in 0..10 {
            assert_eq!(s.choose("t", None, &all, &all, &mut draw), Choice::Partition(1));
        }
        // another topic has its own choice
        assert_eq!(s.choose("u", None, &all, &all, &mut draw), Choice::Partition(2));
        s.reset_sticky();
        assert_eq!(s.choose("t", None, &all, &all, &mut draw), Choice::Partition(0));
        assert_eq!(s.choose("t", None, &all, &all, &mut no_draw()), Choice::Partition(0));
        // only partitions with a leader; the sticky one losing its leader picks again
        let mut s = PartitionerState::new(PartitionerKind::Default08);
        assert_eq!(s.choose("t", None, &all, &[2], &mut || 7), Choice::Partition(2));
        assert_eq!(s.choose("t", None, &all, &[0, 1], &mut || 1), Choice::Partition(1));
        assert_eq!(s.choose("t", None, &all, &[], &mut no_draw()), Choice::Wait);
    }

    #[test]
    fn round_robin_cycles_available_partitions() {
        let mut s = PartitionerState::new(PartitionerKind::RoundRobin);
        let all = [0, 1, 2];
        let got: Vec<_> = (0..6).map(|_| s.choose("t", Some(b"same key"), &all, &all, &mut || 0)).collect();
        let want: Vec<_> = [0, 1, 2, 0, 1, 2].into_iter().map(Choice::Partition).collect();
        assert_eq!(got, want);
        assert_eq!(s.choose("t", None, &all, &[2], &mut no_draw()), Choice::Partition(2));
        assert_eq!(s.choose("t", None, &all, &[], &mut no_draw()), Choice::Wait);
        // Murmur2's null keys round robin too
        let mut s = PartitionerState::new(PartitionerKind::Murmur2);
        let got: Vec<_> = (0..3).map(|_| s.choose("t", None, &all, &all, &mut || 1)).collect();
        assert_eq!(got, [1, 2, 0].map(Choice::Partition));
    }

    #[test]
    fn custom_partitioners_are_checked() {
        let last = |_: &str, _: Option<&[u8]>, all: &[i32], _: &[i32]| *all.last().unwrap();
        let mut s = PartitionerState::new(PartitionerKind::custom(last));
        assert_eq!(s.choose("t", None, &[0, 1, 2], &[0], &mut no_draw()), Choice::Partition(2));
        let mut bad =
            PartitionerState::new(PartitionerKind::custom(|_: &str, _: Option<&[u8]>, _: &[i32], _: &[i32]| 9));
        assert_eq!(bad.choose("t", None, &[0, 1], &[0, 1], &mut no_draw()), Choice::Invalid(9));
        assert_eq!(format!("{:?}", PartitionerKind::custom(last)), "Custom(..)");
    }

    #[test]
    fn class_names_round_trip() {
        for kind in [PartitionerKind::Default08, PartitionerKind::Murmur2, PartitionerKind::RoundRobin] {
            let name = kind.class_name();
            assert_eq!(PartitionerKind::from_class_name(name).unwrap().class_name(), name);
        }
        assert!(PartitionerKind::from_class_name("x.Y").is_err());
    }
}

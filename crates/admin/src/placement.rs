//! Kafka 0.8.2's replica placement (`AdminUtils.assignReplicasToBrokers`) and the checks of an
//! explicit assignment. Pure.
//!
//! Two goals, as Kafka states them: spread the replicas evenly over the brokers, and for the
//! partitions led by one broker, spread their followers over the other brokers. The first
//! replica of partition `p` goes to broker index `(p + start_index) % n`; the others follow it at
//! a shift of `1 + (replica_shift + j) % (n - 1)` for follower `j`, and `replica_shift` grows by
//! one each time the partition id wraps around the broker list.
//!
//! ```
//! use gregor_admin::placement::assign_replicas;
//!
//! // Kafka's own test vector (AdminTest.testReplicaAssignment).
//! let a = assign_replicas(&[0, 1, 2, 3, 4], 10, 3, 0, 0)?;
//! assert_eq!(a[0], [0, 1, 2]);
//! assert_eq!(a[5], [0, 2, 3]);
//! assert_eq!(a[9], [4, 1, 2]);
//! # Ok::<(), gregor_admin::Error>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};

use rand::Rng;

use crate::error::{Error, Result};

/// Places `replication_factor` replicas of `partitions` partitions (ids `0..partitions`) on
/// `brokers`, in the order given (Kafka sorts the live brokers first), exactly as Kafka 0.8.2's
/// `AdminUtils.assignReplicasToBrokers` does with the given start index and replica shift
/// (Kafka draws both at random: see [`assign_replicas_random`]). Element `i` of the result is
/// partition `i`'s replica list, preferred leader first.
///
/// # Errors
///
/// [`Error::InvalidPartitionCount`] for `partitions < 1`, [`Error::InvalidReplicationFactor`]
/// for `replication_factor < 1`, [`Error::ReplicationFactorTooLarge`] when it exceeds the
/// number of brokers, [`Error::InvalidBrokerList`] for a broker listed twice.
pub fn assign_replicas(
    brokers: &[i32],
    partitions: i32,
    replication_factor: i32,
    start_index: usize,
    replica_shift: usize,
) -> Result<Vec<Vec<i32>>> {
    assign_replicas_from(brokers, partitions, replication_factor, start_index, replica_shift, 0)
}

/// As [`assign_replicas`], for partitions `first_partition..first_partition + partitions`
/// (Kafka's `startPartitionId`, used when adding partitions): the first replica of partition
/// `p` is broker index `(p + start_index) % n`, and the replica shift starts at `replica_shift`
/// and grows by one at each partition id in the range that is a multiple of `n`. Element `i`
/// of the result is partition `first_partition + i`'s replica list.
///
/// # Errors
///
/// As [`assign_replicas`].
pub fn assign_replicas_from(
    brokers: &[i32],
    partitions: i32,
    replication_factor: i32,
    start_index: usize,
    replica_shift: usize,
    first_partition: i32,
) -> Result<Vec<Vec<i32>>> {
    check_placement(brokers, partitions, replication_factor)?;
    let n = brokers.len();
    let rf = replication_factor as usize;
    let mut shift = replica_shift;
    let mut out = Vec::with_capacity(partitions as usize);
    for i in 0..partitions as usize {
        let p = first_partition.max(0) as usize + i;
        if p > 0 && p % n == 0 {
            shift += 1;
        }
        let first = (p + start_index) % n;
        let mut replicas = Vec::with_capacity(rf);
        replicas.push(brokers[first]);
        for j in 0..rf - 1 {
            replicas.push(brokers[(first + 1 + (shift + j) % (n - 1)) % n]);
        }
        out.push(replicas);
    }
    Ok(out)
}

/// As [`assign_replicas`] with Kafka's random start index and replica shift (each drawn
/// uniformly from `0..brokers.len()`), as `kafka-topics.sh --create` and
/// `kafka-reassign-partitions.sh --generate` place replicas.
///
/// # Errors
///
/// As [`assign_replicas`].
pub fn assign_replicas_random(brokers: &[i32], partitions: i32, replication_factor: i32) -> Result<Vec<Vec<i32>>> {
    assign_replicas_random_with(&mut rand::rng(), brokers, partitions, replication_factor)
}

/// As [`assign_replicas_random`], drawing from `rng` (for reproducible placements).
///
/// # Errors
///
/// As [`assign_replicas`].
pub fn assign_replicas_random_with<R: Rng + ?Sized>(
    rng: &mut R,
    brokers: &[i32],
    partitions: i32,
    replication_factor: i32,
) -> Result<Vec<Vec<i32>>> {
    check_placement(brokers, partitions, replication_factor)?;
    let start = rng.random_range(0..brokers.len());
    let shift = rng.random_range(0..brokers.len());
    assign_replicas(brokers, partitions, replication_factor, start, shift)
}

fn check_placement(brokers: &[i32], partitions: i32, replication_factor: i32) -> Result<()> {
    if partitions < 1 {
        return Err(Error::InvalidPartitionCount { partitions });
    }
    if replication_factor < 1 {
        return Err(Error::InvalidReplicationFactor { replication_factor });
    }
    if replication_factor as usize > brokers.len() {
        return Err(Error::ReplicationFactorTooLarge { replication_factor, brokers: brokers.len() });
    }
    check_broker_list(brokers)
}

/// Checks a broker list for a placement: not empty, no broker twice.
///
/// # Errors
///
/// [`Error::InvalidBrokerList`] naming the problem.
pub fn check_broker_list(brokers: &[i32]) -> Result<()> {
    if brokers.is_empty() {
        return Err(Error::InvalidBrokerList { reason: "it is empty".into() });
    }
    let dups = duplicates(brokers);
    if !dups.is_empty() {
        return Err(Error::InvalidBrokerList {
            reason: format!("it contains duplicate entries: {}", crate::error::join(&dups)),
        });
    }
    Ok(())
}

/// The values listed more than once, sorted (Kafka's `Utils.duplicates`).
pub(crate) fn duplicates<T: Ord + Clone>(items: &[T]) -> Vec<T> {
    let mut seen = BTreeSet::new();
    let mut dups = BTreeSet::new();
    for i in items {
        if !seen.insert(i.clone()) {
            dups.insert(i.clone());
        }
    }
    dups.into_iter().collect()
}

/// Checks an explicit replica assignment (element `i` = partition `i`'s replicas) as Kafka's
/// `TopicCommand` and `AdminUtils` do: at least one partition, every replica list non-empty,
/// without a broker twice, and all of the same length. Returns the replication factor.
///
/// # Errors
///
/// [`Error::InvalidAssignment`] naming the partition and the problem.
pub fn check_assignment(assignment: &[Vec<i32>]) -> Result<usize> {
    check_assignment_from(assignment, 0)
}

/// As [`check_assignment`], for partitions numbered from `first_partition`.
pub(crate) fn check_assignment_from(assignment: &[Vec<i32>], first_partition: usize) -> Result<usize> {
    let Some(first) = assignment.first() else {
        return Err(Error::assignment("it lists no partition"));
    };
    let rf = first.len();
    for (i, replicas) in assignment.iter().enumerate() {
        let p = first_partition + i;
        if replicas.is_empty() {
            return Err(Error::assignment(format!("partition {p} has no replica")));
        }
        let dups = duplicates(replicas);
        if !dups.is_empty() {
            return Err(Error::assignment(format!(
                "partition {p} lists broker {} more than once: {:?}",
                crate::error::join(&dups),
                replicas
            )));
        }
        if replicas.len() != rf {
            return Err(Error::assignment(format!(
                "partition {p} has {} replicas {:?} but partition {first_partition} has {rf}: all \
                 partitions must have the same replication factor",
                replicas.len(),
                replicas
            )));
        }
    }
    Ok(rf)
}

/// Parses a replica assignment as `kafka-topics.sh --replica-assignment` takes it: partitions
/// separated by `,`, the brokers of one partition by `:`, preferred leader first
/// (`"0:1,1:2,2:0"` is three partitions with two replicas each). Checked with
/// [`check_assignment`].
///
/// # Errors
///
/// [`Error::InvalidAssignment`] for an empty string, a broker id that is not an integer, and
/// the problems [`check_assignment`] finds.
pub fn parse_replica_assignment(text: &str) -> Result<Vec<Vec<i32>>> {
    let mut out = Vec::new();
    for (p, part) in text.split(',').enumerate() {
        let mut replicas = Vec::new();
        for b in part.split(':') {
            let b = b.trim();
            let id = b.parse::<i32>().map_err(|_| {
                Error::assignment(format!("broker id {b:?} of partition {p} in {text:?} is not an integer"))
            })?;
            replicas.push(id);
        }
        out.push(replicas);
    }
    check_assignment(&out)?;
    Ok(out)
}

/// The assignment as a map from partition id, numbered from `first_partition`.
pub(crate) fn to_map(assignment: Vec<Vec<i32>>, first_partition: i32) -> BTreeMap<i32, Vec<i32>> {
    assignment.into_iter().zip(first_partition..).map(|(r, p)| (p, r)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn kafka_admin_test_vector() {
        // kafka.admin.AdminTest.testReplicaAssignment (0.8.2): brokers 0..5, 10 partitions,
        // replication factor 3, fixed start index 0 (which is also the replica shift).
        let expected: Vec<Vec<i32>> = vec![
            vec![0, 1, 2],
            vec![1, 2, 3],
            vec![2, 3, 4],
            vec![3, 4, 0],
            vec![4, 0, 1],
            vec![0, 2, 3],
            vec![1, 3, 4],
            vec![2, 4, 0],
            vec![3, 0, 1],
            vec![4, 1, 2],
        ];
        assert_eq!(assign_replicas(&[0, 1, 2, 3, 4], 10, 3, 0, 0).unwrap(), expected);
    }

    #[test]
    fn same_placement_as_the_testkit() {
        assert_eq!(assign_replicas(&[0, 1, 2], 3, 2, 0, 0).unwrap(), vec![vec![0, 1], vec![1, 2], vec![2, 0]]);
        let a = assign_replicas(&[0, 1, 2], 6, 3, 1, 0).unwrap();
        assert_eq!(a[0], vec![1, 2, 0]);
        assert_eq!(a[3], vec![1, 0, 2]);
        assert_eq!(assign_replicas(&[5], 2, 1, 0, 0).unwrap(), vec![vec![5], vec![5]]);
    }

    #[test]
    fn placement_from_a_later_partition_as_add_partitions_does() {
        // partition 3 of 3 brokers is a multiple of 3: the shift grows before it is placed
        let a = assign_replicas_from(&[0, 1, 2], 3, 2, 0, 0, 3).unwrap();
        assert_eq!(a, vec![vec![0, 2], vec![1, 0], vec![2, 1]]);
        // from partition 0 it is the plain placement
        assert_eq!(
            assign_replicas_from(&[1, 4, 7, 9], 6, 3, 2, 1, 0).unwrap(),
            assign_replicas(&[1, 4, 7, 9], 6, 3, 2, 1).unwrap()
        );
    }

    #[test]
    fn placement_is_balanced_and_never_repeats_a_broker() {
        let brokers = [0, 1, 2, 3, 4, 5];
        let a = assign_replicas(&brokers, 12, 3, 4, 2).unwrap();
        let mut leaders = BTreeMap::new();
        let mut replicas = BTreeMap::new();
        for r in &a {
            assert!(duplicates(r).is_empty(), "{r:?}");
            *leaders.entry(r[0]).or_insert(0) += 1;
            for b in r {
                *replicas.entry(*b).or_insert(0) += 1;
            }
        }
        assert!(leaders.values().all(|&n| n == 2), "{leaders:?}");
        assert!(replicas.values().all(|&n| n == 6), "{replicas:?}");
    }

    #[test]
    fn random_placement_uses_a_start_and_shift_from_the_rng() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let a = assign_replicas_random_with(&mut rng, &[0, 1, 2], 6, 2).unwrap();
        let found = (0..3)
            .flat_map(|s| (0..3).map(move |h| (s, h)))
            .any(|(s, h)| assign_replicas(&[0, 1, 2], 6, 2, s, h).unwrap() == a);
        assert!(found);
        assert_eq!(assign_replicas_random(&[3, 4], 5, 2).unwrap().len(), 5);
    }

    #[test]
    fn placement_errors() {
        assert!(matches!(assign_replicas(&[0, 1, 2], 0, 1, 0, 0), Err(Error::InvalidPartitionCount { partitions: 0 })));
        assert!(matches!(
            assign_replicas(&[0, 1, 2], 1, 0, 0, 0),
            Err(Error::InvalidReplicationFactor { replication_factor: 0 })
        ));
        let err = assign_replicas(&[0, 1, 2], 1, 4, 0, 0).unwrap_err();
        assert_eq!(err.to_string(), "replication factor 4 larger than the 3 available brokers");
        let err = assign_replicas(&[0, 1, 1], 1, 1, 0, 0).unwrap_err();
        assert_eq!(err.to_string(), "invalid broker list: it contains duplicate entries: 1");
        let err = assign_replicas_random(&[], 1, 1).unwrap_err();
        assert!(matches!(err, Error::ReplicationFactorTooLarge { brokers: 0, .. }), "{err}");
    }

    #[test]
    fn explicit_assignments() {
        assert_eq!(parse_replica_assignment("0:1, 1:2,2:0").unwrap(), vec![vec![0, 1], vec![1, 2], vec![2, 0]]);
        assert_eq!(parse_replica_assignment("3").unwrap(), vec![vec![3]]);
        let err = parse_replica_assignment("0:1,1").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid replica assignment: partition 1 has 1 replicas [1] but partition 0 has 2: all \
             partitions must have the same replication factor"
        );
        let err = parse_replica_assignment("0:0").unwrap_err();
        assert_eq!(err.to_string(), "invalid replica assignment: partition 0 lists broker 0 more than once: [0, 0]");
        let err = parse_replica_assignment("0:x").unwrap_err();
        assert!(err.to_string().contains("broker id \"x\" of partition 0"), "{err}");
        parse_replica_assignment("").unwrap_err();
        assert!(matches!(check_assignment(&[]), Err(Error::InvalidAssignment { .. })));
        assert!(matches!(check_assignment(&[vec![]]), Err(Error::InvalidAssignment { .. })));
        assert_eq!(check_assignment(&[vec![1, 2, 3]]).unwrap(), 3);
    }
}

//! Kafka 0.8.2's replica placement (`AdminUtils.assignReplicasToBrokers`), used for
//! auto-created topics.

/// Assigns `replication_factor` replicas to each of `partitions` partitions over `brokers`
/// (sorted), starting at broker index `start` with replica shift `shift` (Kafka picks both at
/// random): the first replica round-robins over the brokers, the others follow at a shift that
/// grows by one after each full round.
pub(crate) fn assign_replicas(
    brokers: &[i32],
    partitions: i32,
    replication_factor: i32,
    start: usize,
    shift: usize,
) -> Vec<Vec<i32>> {
    let n = brokers.len();
    let mut shift = shift;
    let mut out = Vec::with_capacity(partitions.max(0) as usize);
    for p in 0..partitions.max(0) as usize {
        if p > 0 && p % n == 0 {
            shift += 1;
        }
        let first = (p + start) % n;
        let mut replicas = vec![brokers[first]];
        for j in 0..(replication_factor.max(1) as usize - 1) {
            replicas.push(brokers[(first + 1 + (shift + j) % (n - 1)) % n]);
        }
        out.push(replicas);
    }
    out
}

/// Java's `String.hashCode`.
pub(crate) fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// The `__consumer_offsets` partition that holds a group (`Utils.abs(group.hashCode) % n`).
pub(crate) fn offsets_partition_for(group: &str, partitions: i32) -> i32 {
    let h = java_string_hash(group);
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % partitions.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_spreads_leaders_and_followers_like_kafka() {
        let a = assign_replicas(&[0, 1, 2], 3, 2, 0, 0);
        assert_eq!(a, vec![vec![0, 1], vec![1, 2], vec![2, 0]]);
        let a = assign_replicas(&[0, 1, 2], 6, 3, 1, 0);
        assert_eq!(a[0], vec![1, 2, 0]);
        assert_eq!(a[3], vec![1, 0, 2]);
        assert_eq!(assign_replicas(&[5], 2, 1, 0, 0), vec![vec![5], vec![5]]);
    }

    #[test]
    fn java_hash_codes() {
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("hello"), 99_162_322);
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        assert_eq!(offsets_partition_for("polygenelubricants", 50), 0);
    }
}

//! The name of one partition of one topic: Kafka's `TopicAndPartition`.

use std::fmt;

/// One partition of one topic, Kafka's `kafka.common.TopicAndPartition`: the key of every
/// per-partition map in gregor (consumer ownership and offsets, reassignment plans, preferred
/// replica elections).
///
/// Ordered by topic, then partition (as the pair `(topic, partition)` orders). Displayed as
/// `topic/partition`, the way gregor's messages name a partition; Kafka's own
/// `"[topic,partition]"` (its `toString`, which the round-robin assignor hashes) is spelled out
/// where Kafka's text is needed.
///
/// With the `serde` feature it is (de)serialized as Kafka writes it in ZooKeeper and in its
/// tools' JSON files: `{"topic":"t","partition":0}`, unknown fields ignored.
///
/// ```
/// use gregor_protocol::TopicPartition;
///
/// let tp = TopicPartition::new("events", 3);
/// assert_eq!(tp.to_string(), "events/3");
/// assert_eq!(TopicPartition::from(("events", 3)), tp);
/// assert!(TopicPartition::new("events", 10) > TopicPartition::new("events", 9));
/// assert!(TopicPartition::new("a", 10) < TopicPartition::new("b", 0));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TopicPartition {
    /// The topic.
    pub topic: String,
    /// The partition id.
    pub partition: i32,
}

impl TopicPartition {
    /// Partition `partition` of `topic`.
    pub fn new(topic: impl Into<String>, partition: i32) -> TopicPartition {
        TopicPartition { topic: topic.into(), partition }
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.topic, self.partition)
    }
}

impl From<(String, i32)> for TopicPartition {
    fn from((topic, partition): (String, i32)) -> TopicPartition {
        TopicPartition { topic, partition }
    }
}

impl From<(&str, i32)> for TopicPartition {
    fn from((topic, partition): (&str, i32)) -> TopicPartition {
        TopicPartition { topic: topic.to_owned(), partition }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_as_gregor_messages_name_a_partition() {
        assert_eq!(TopicPartition::new("events", 0).to_string(), "events/0");
        assert_eq!(TopicPartition::new("a.b-c_d", 2147483647).to_string(), "a.b-c_d/2147483647");
        assert_eq!(TopicPartition::new("t", -1).to_string(), "t/-1");
    }

    #[test]
    fn converts_from_pairs() {
        let tp = TopicPartition { topic: "t".into(), partition: 5 };
        assert_eq!(TopicPartition::from(("t".to_owned(), 5)), tp);
        assert_eq!(TopicPartition::from(("t", 5)), tp);
        assert_eq!(TopicPartition::new(String::from("t"), 5), tp);
    }

    /// The order of the pair `(topic, partition)`: topic bytes first, then the partition as a
    /// number (10 after 9), so maps keyed by it iterate as maps keyed by the pair did.
    #[test]
    fn orders_by_topic_then_partition_as_the_pair_does() {
        let pairs: Vec<(&str, i32)> =
            vec![("b", 0), ("a", 10), ("a", 9), ("A", 1), ("a", -1), ("ab", 0), ("a", 0), ("", 3)];
        let mut by_type: Vec<TopicPartition> = pairs.iter().copied().map(TopicPartition::from).collect();
        by_type.sort();
        let mut by_pair = pairs;
        by_pair.sort();
        let want: Vec<TopicPartition> = by_pair.into_iter().map(TopicPartition::from).collect();
        assert_eq!(by_type, want);
        assert_eq!(
            by_type.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["/3", "A/1", "a/-1", "a/0", "a/9", "a/10", "ab/0", "b/0"]
        );
    }

    #[cfg(feature = "serde")]
    #[test]
    fn serializes_with_kafkas_field_names() {
        let tp = TopicPartition::new("events", 1);
        assert_eq!(serde_json::to_string(&tp).unwrap(), r#"{"topic":"events","partition":1}"#);
        // Kafka's hash order, and fields of later versions, parse too
        let real = r#"{"partition":1,"extra":[1],"topic":"events"}"#;
        assert_eq!(serde_json::from_str::<TopicPartition>(real).unwrap(), tp);
        assert!(serde_json::from_str::<TopicPartition>(r#"{"topic":"events"}"#).is_err());
        assert!(serde_json::from_str::<TopicPartition>(r#"{"topic":"t","partition":2147483648}"#).is_err());
    }
}

//! Topic filters for `create_message_streams_by_filter`, as Kafka 0.8.2's `TopicFilter`.
//!
//! The filter is a Java regex, normalized as Kafka normalizes it: trimmed, `,` turned into
//! `|`, spaces removed, leading and trailing quotes stripped (property files bring them). A
//! topic is allowed by a whitelist when the WHOLE name matches (Java's `String.matches`), by a
//! blacklist when it does not; with `exclude.internal.topics` the offsets topic is never
//! allowed. The normalized string is written into the registration, so Java members of the
//! group see the same subscription. The `regex` crate covers the Java syntax used for topic
//! names (classes, alternation, groups, quantifiers); Java-only constructs (possessive
//! quantifiers, lookaround) are rejected as invalid.

/// The internal offsets topic, excluded from filters when `exclude.internal.topics=true`.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// A topic filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TopicFilter {
    /// Topics matching the filter (Kafka's `Whitelist`).
    Whitelist(String),
    /// Topics not matching the filter (Kafka's `Blacklist`).
    Blacklist(String),
}

impl TopicFilter {
    /// The filter string (as written into `/consumers/G/ids/<id>`): Kafka's
    /// `Whitelist` normalizes it by trimming and turning `,` into `|`.
    pub fn regex(&self) -> String {
        let s = match self {
            TopicFilter::Whitelist(s) | TopicFilter::Blacklist(s) => s,
        };
        s.trim().replace(',', "|").replace(' ', "").trim_matches(|c| c == '"' || c == '\'').to_owned()
    }

    /// The compiled filter (anchored: the whole topic name must match).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSubscription`](crate::Error::InvalidSubscription) when the filter is not
    /// a valid regex.
    #[allow(clippy::result_large_err)] // the crate's one Error type, as everywhere else
    pub fn matcher(&self) -> crate::Result<regex::Regex> {
        let re = self.regex();
        regex::Regex::new(&format!("^(?:{re})$"))
            .map_err(|e| crate::Error::InvalidSubscription(format!("topic filter {re:?} is not a valid regex: {e}")))
    }

    /// Checks that the filter compiles.
    ///
    /// # Errors
    ///
    /// As [`TopicFilter::matcher`].
    #[allow(clippy::result_large_err)] // the crate's one Error type, as everywhere else
    pub fn validate(&self) -> crate::Result<()> {
        self.matcher().map(|_| ())
    }

    /// `white_list` or `black_list`.
    pub fn pattern(&self) -> &'static str {
        match self {
            TopicFilter::Whitelist(_) => gregor_zk::payloads::PATTERN_WHITE_LIST,
            TopicFilter::Blacklist(_) => gregor_zk::payloads::PATTERN_BLACK_LIST,
        }
    }

    /// Parses a registration's pattern and key back into a filter.
    pub fn from_registration(pattern: &str, regex: &str) -> Option<TopicFilter> {
        match pattern {
            gregor_zk::payloads::PATTERN_WHITE_LIST => Some(TopicFilter::Whitelist(regex.to_owned())),
            gregor_zk::payloads::PATTERN_BLACK_LIST => Some(TopicFilter::Blacklist(regex.to_owned())),
            _ => None,
        }
    }

    /// Whether `topic` is allowed (as Kafka's `isTopicAllowed`); an invalid filter allows
    /// nothing.
    pub fn is_topic_allowed(&self, topic: &str, exclude_internal_topics: bool) -> bool {
        match self.matcher() {
            Ok(m) => self.allowed_by(&m, topic, exclude_internal_topics),
            Err(_) => false,
        }
    }

    /// As [`TopicFilter::is_topic_allowed`] with a matcher compiled once.
    pub fn allowed_by(&self, matcher: &regex::Regex, topic: &str, exclude_internal_topics: bool) -> bool {
        if exclude_internal_topics && topic == OFFSETS_TOPIC {
            return false;
        }
        let matches = matcher.is_match(topic);
        match self {
            TopicFilter::Whitelist(_) => matches,
            TopicFilter::Blacklist(_) => !matches,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitelist_and_blacklist_are_anchored_java_regexes() {
        let w = TopicFilter::Whitelist(" a, logs-.*,x[0-9]+y ".into());
        assert_eq!(w.regex(), "a|logs-.*|x[0-9]+y");
        assert!(w.is_topic_allowed("a", true));
        assert!(!w.is_topic_allowed("ab", true)); // whole-name match, as String.matches
        assert!(!w.is_topic_allowed("ba", true));
        assert!(w.is_topic_allowed("logs-1", true));
        assert!(w.is_topic_allowed("x12y", true));
        assert!(!w.is_topic_allowed("xy", true));
        assert!(!w.is_topic_allowed("x1y2", true));
        let dot = TopicFilter::Whitelist("a.c".into());
        assert!(dot.is_topic_allowed("abc", true)); // '.' is any character, as in Java
        let all = TopicFilter::Whitelist(".*".into());
        assert!(all.is_topic_allowed("t", true));
        assert!(!all.is_topic_allowed(OFFSETS_TOPIC, true));
        assert!(all.is_topic_allowed(OFFSETS_TOPIC, false));
        let b = TopicFilter::Blacklist("a,b.*".into());
        assert!(!b.is_topic_allowed("a", true));
        assert!(!b.is_topic_allowed("bee", true));
        assert!(b.is_topic_allowed("c", true));
        assert!(b.is_topic_allowed("ab", true));
        assert!(!b.is_topic_allowed(OFFSETS_TOPIC, true));
        assert!(b.is_topic_allowed(OFFSETS_TOPIC, false));
        let quoted = TopicFilter::Whitelist("\"t1,t2\"".into());
        assert_eq!(quoted.regex(), "t1|t2");
        assert!(quoted.is_topic_allowed("t2", true));
        assert!(TopicFilter::Whitelist("a(".into()).validate().is_err());
        assert!(!TopicFilter::Whitelist("a(".into()).is_topic_allowed("a(", true));
    }
}

//! Topic filters for `create_message_streams_by_filter`.
//!
//! **Limitation:** Kafka's `TopicFilter` is a Java regex (with `,` turned into `|`). This
//! crate has no regex engine, so a filter is a comma-separated list of alternatives, each
//! either an exact topic name or a glob where `*` (or Java's `.*`) matches any run of
//! characters. `a,b`, `logs-.*`, `*` and `.*` work as in Kafka; any other regex syntax
//! (`[a-z]+`, `?`, `|` groups, a `.` meaning "any character") is matched LITERALLY. The
//! filter string is written into the registration unchanged, so Java members of the group
//! see the same subscription.

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
        s.trim().replace(',', "|").replace(' ', "").replace('"', "")
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

    /// Whether `topic` is allowed (as Kafka's `isTopicAllowed`).
    pub fn is_topic_allowed(&self, topic: &str, exclude_internal_topics: bool) -> bool {
        if exclude_internal_topics && topic == OFFSETS_TOPIC {
            return false;
        }
        let re = self.regex();
        let matches = re.split('|').any(|alt| glob(alt, topic));
        match self {
            TopicFilter::Whitelist(_) => matches,
            TopicFilter::Blacklist(_) => !matches,
        }
    }
}

/// `*` and `.*` match any run; everything else literally.
fn glob(pattern: &str, s: &str) -> bool {
    let pattern = pattern.replace(".*", "*");
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == s;
    }
    let mut rest = s;
    let first = parts[0];
    if !rest.starts_with(first) {
        return false;
    }
    rest = &rest[first.len()..];
    let last = parts[parts.len() - 1];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitelist_and_blacklist() {
        let w = TopicFilter::Whitelist("a, logs-.*,x*y".into());
        assert_eq!(w.regex(), "a|logs-.*|x*y");
        assert!(w.is_topic_allowed("a", true));
        assert!(!w.is_topic_allowed("ab", true));
        assert!(w.is_topic_allowed("logs-1", true));
        assert!(w.is_topic_allowed("xzzy", true));
        assert!(w.is_topic_allowed("xy", true));
        assert!(!w.is_topic_allowed("xyz", true));
        let all = TopicFilter::Whitelist(".*".into());
        assert!(all.is_topic_allowed("t", true));
        assert!(!all.is_topic_allowed(OFFSETS_TOPIC, true));
        assert!(all.is_topic_allowed(OFFSETS_TOPIC, false));
        let b = TopicFilter::Blacklist("a".into());
        assert!(!b.is_topic_allowed("a", true));
        assert!(b.is_topic_allowed("b", true));
    }
}

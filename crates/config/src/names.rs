//! Kafka 0.8.2's naming rules: the characters of `client.id`, `group.id` (and gregor's
//! `consumer.id`), and topic names.
//!
//! Kafka 0.8.2 checks ids with `Config.validateChars` (`[a-zA-Z0-9._-]`, no length limit but
//! the request header's `int16` string length for `client.id`) and topic names with
//! `kafka.common.Topic.validate` (not empty, not `.` or `..`, at most 255 characters of the
//! same set). A name with `/` would put a group's or a topic's znodes in the wrong place.

use crate::ConfigError;

/// The longest `client.id`: 32767 bytes, the most a request header's `int16` string length
/// can say.
pub const MAX_CLIENT_ID_BYTES: usize = i16::MAX as usize;

/// The longest topic name Kafka 0.8.2 accepts (`Topic.maxNameLength`).
pub const MAX_TOPIC_NAME_LENGTH: usize = 255;

/// The reason given for a character outside [`is_legal_char`], after the character.
const LEGAL_CHARS: &str = "only ASCII letters and digits, '.', '_' and '-' are allowed";

/// The characters Kafka 0.8.2 allows in a `client.id`, a `group.id` and a topic name
/// (`[a-zA-Z0-9._-]`).
pub fn is_legal_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

/// Checks that `value` of `property` has only Kafka's characters ([`is_legal_char`]), as Kafka
/// 0.8.2's `Config.validateChars` does for `group.id` and `client.id` (and gregor for
/// `consumer.id`, which becomes part of a znode name). Empty is allowed.
///
/// # Errors
///
/// [`ConfigError::Invalid`] naming the first illegal character: `contains ' ': only ASCII
/// letters and digits, '.', '_' and '-' are allowed`.
pub fn check_name_chars(property: &'static str, value: &str) -> Result<(), ConfigError> {
    match value.chars().find(|c| !is_legal_char(*c)) {
        Some(c) => Err(ConfigError::invalid(property, value, format!("contains {c:?}: {LEGAL_CHARS}"))),
        None => Ok(()),
    }
}

/// Checks a `client.id` as Kafka 0.8.2 does (`Config.validateChars`): only ASCII letters and
/// digits, `.`, `_` and `-` (empty is allowed), and, for the request header's `int16` length, at
/// most [`MAX_CLIENT_ID_BYTES`].
///
/// # Errors
///
/// [`ConfigError::Invalid`] naming `client.id`: `longer than 32767 bytes`, or as
/// [`check_name_chars`].
pub fn validate_client_id(client_id: &str) -> Result<(), ConfigError> {
    if client_id.len() > MAX_CLIENT_ID_BYTES {
        return Err(ConfigError::invalid("client.id", client_id, format!("longer than {MAX_CLIENT_ID_BYTES} bytes")));
    }
    check_name_chars("client.id", client_id)
}

/// Why a topic name is not one Kafka 0.8.2 accepts. Its `Display` is the reason with the
/// detail (the character); [`TopicNameError::rule`] is the same rule as a fixed text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TopicNameError {
    /// Returned for an empty name.
    #[error("must not be empty")]
    Empty,
    /// Returned for `.` or `..`.
    #[error("must not be \".\" or \"..\"")]
    Dots,
    /// Returned for a name over [`MAX_TOPIC_NAME_LENGTH`] bytes.
    #[error("must not be longer than 255 characters")]
    TooLong {
        /// The name's length in bytes.
        len: usize,
    },
    /// Returned for a name with a character outside [`is_legal_char`].
    #[error("contains {c:?}: only ASCII letters and digits, '.', '_' and '-' are allowed")]
    IllegalChar {
        /// The first such character.
        c: char,
    },
}

impl TopicNameError {
    /// The rule the name breaks, as a fixed text (for errors that carry a `&'static str`): the
    /// `Display` without the character.
    pub fn rule(&self) -> &'static str {
        match self {
            TopicNameError::Empty => "must not be empty",
            TopicNameError::Dots => "must not be \".\" or \"..\"",
            TopicNameError::TooLong { .. } => "must not be longer than 255 characters",
            TopicNameError::IllegalChar { .. } => {
                "contains a character other than ASCII letters and digits, '.', '_' and '-'"
            }
        }
    }
}

/// Checks a topic name against Kafka 0.8.2's rules (`kafka.common.Topic.validate`): not empty,
/// not `.` or `..`, at most [`MAX_TOPIC_NAME_LENGTH`] bytes, and only ASCII letters, digits,
/// `.`, `_` and `-` (so bytes and characters are the same count for a legal name).
///
/// # Errors
///
/// The [`TopicNameError`] of the first rule broken, in that order.
pub fn validate_topic_name(name: &str) -> Result<(), TopicNameError> {
    if name.is_empty() {
        Err(TopicNameError::Empty)
    } else if name == "." || name == ".." {
        Err(TopicNameError::Dots)
    } else if name.len() > MAX_TOPIC_NAME_LENGTH {
        Err(TopicNameError::TooLong { len: name.len() })
    } else if let Some(c) = name.chars().find(|c| !is_legal_char(*c)) {
        Err(TopicNameError::IllegalChar { c })
    } else {
        Ok(())
    }
}

/// Checks that `name`, the value of `property`, is a topic name Kafka 0.8.2 accepts
/// ([`validate_topic_name`]).
///
/// # Errors
///
/// [`ConfigError::Invalid`] for `property` with the [`TopicNameError`] as the reason:
/// `invalid value "a b" for audit.topic: contains ' ': only ASCII letters and digits, ...`.
pub fn check_topic_name(property: &'static str, name: &str) -> Result<(), ConfigError> {
    validate_topic_name(name).map_err(|e| ConfigError::invalid(property, name, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legal_characters() {
        let legal: String = ('a'..='z').chain('A'..='Z').chain('0'..='9').chain(['.', '_', '-']).collect();
        assert!(legal.chars().all(is_legal_char));
        for c in [' ', '/', ':', '#', '*', ',', '+', '\t', '\n', '\0', 'é', 'ü', '🦀', '\u{0660}'] {
            assert!(!is_legal_char(c), "{c:?}");
        }
    }

    #[test]
    fn ids_with_kafkas_characters() {
        for ok in ["", "app", "A-z_0.9", "..", "-"] {
            check_name_chars("group.id", ok).unwrap();
            validate_client_id(ok).unwrap();
        }
        validate_client_id(&"x".repeat(32_767)).unwrap();
        let chars = "only ASCII letters and digits, '.', '_' and '-' are allowed";
        for (bad, c) in
            [("my group", "' '"), ("a/b", "'/'"), ("a:b", "':'"), ("café", "'é'"), ("a\0", "'\\0'"), ("a b/c", "' '")]
        {
            assert_eq!(
                check_name_chars("group.id", bad).unwrap_err().to_string(),
                format!("invalid value {bad:?} for group.id: contains {c}: {chars}")
            );
            assert_eq!(
                validate_client_id(bad).unwrap_err().to_string(),
                format!("invalid value {bad:?} for client.id: contains {c}: {chars}")
            );
        }
        assert_eq!(
            validate_client_id(&"x".repeat(32_768)).unwrap_err().to_string(),
            format!("invalid value \"{}... (32768 bytes)\" for client.id: longer than 32767 bytes", "x".repeat(64))
        );
        // the length is checked first: a long id of bad characters is refused for its length
        let e = validate_client_id(&" ".repeat(40_000)).unwrap_err();
        assert!(e.to_string().ends_with("longer than 32767 bytes"), "{e}");
    }

    #[test]
    fn topic_names_kafka_accepts() {
        for name in ["a", "events", "Events.v2", "a_b-c.d", "0", "..a", "a..", "...", "-", "_"] {
            assert_eq!(validate_topic_name(name), Ok(()), "{name:?}");
        }
        assert_eq!(validate_topic_name(&"x".repeat(255)), Ok(()));
    }

    #[test]
    fn topic_names_kafka_refuses() {
        let dots = "must not be \".\" or \"..\"";
        let long = "must not be longer than 255 characters";
        let cases: Vec<(String, TopicNameError, &str)> = vec![
            (String::new(), TopicNameError::Empty, "must not be empty"),
            (".".into(), TopicNameError::Dots, dots),
            ("..".into(), TopicNameError::Dots, dots),
            ("x".repeat(256), TopicNameError::TooLong { len: 256 }, long),
            // the length first, then the characters
            (" ".repeat(300), TopicNameError::TooLong { len: 300 }, long),
            ("é".repeat(128), TopicNameError::TooLong { len: 256 }, long),
        ];
        for (name, error, rule) in cases {
            let e = validate_topic_name(&name).unwrap_err();
            assert_eq!((e, e.rule(), e.to_string()), (error, rule, rule.to_owned()), "{name:?}");
        }
        // a character outside the set: the rule, and the character in the message
        let rule = "contains a character other than ASCII letters and digits, '.', '_' and '-'";
        let legal = "only ASCII letters and digits, '.', '_' and '-' are allowed";
        for (name, c, shown) in
            [("a b", ' ', "' '"), ("a/b", '/', "'/'"), ("tópico", 'ó', "'ó'"), ("a\n", '\n', "'\\n'")]
        {
            let e = validate_topic_name(name).unwrap_err();
            assert_eq!(e, TopicNameError::IllegalChar { c }, "{name:?}");
            assert_eq!(e.rule(), rule);
            assert_eq!(e.to_string(), format!("contains {shown}: {legal}"));
        }
        for bad in ["a:b", "a*", "a,b", "a+b", "a\0"] {
            assert!(matches!(validate_topic_name(bad), Err(TopicNameError::IllegalChar { .. })), "{bad:?}");
        }
    }

    #[test]
    fn topic_names_as_property_values() {
        check_topic_name("audit.topic", "__audit").unwrap();
        for (name, message) in [
            ("", "invalid value \"\" for audit.topic: must not be empty"),
            ("..", "invalid value \"..\" for audit.topic: must not be \".\" or \"..\""),
            (
                "a b",
                "invalid value \"a b\" for audit.topic: contains ' ': only ASCII letters and digits, '.', '_' and '-' \
                 are allowed",
            ),
        ] {
            assert_eq!(check_topic_name("audit.topic", name).unwrap_err().to_string(), message, "{name:?}");
        }
        let long = "t".repeat(256);
        assert_eq!(
            check_topic_name("audit.topic", &long).unwrap_err().to_string(),
            format!(
                "invalid value \"{}... (256 bytes)\" for audit.topic: must not be longer than 255 characters",
                "t".repeat(64)
            )
        );
    }
}

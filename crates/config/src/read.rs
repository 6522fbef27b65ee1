//! Reading Kafka properties: names checked against a client's list, values read into types.

use std::time::Duration;

use crate::error::shorten;
use crate::ConfigError;

/// The largest value of a Kafka `int` property (milliseconds, counts, sizes): 2147483647.
pub const INT_MAX: i64 = i32::MAX as i64;

/// Reads `properties` (Kafka's names and values, as from a `.properties` file) for `client`,
/// whose property names are `known`: each item is the next property, in the order given, as a
/// [`Property`] to read typed, or the [`ConfigError::UnknownProperty`] of a name not in
/// `known`. Names and values are trimmed.
///
/// ```
/// use gregor_config::{read, ConfigError};
///
/// let mut acks = 0;
/// for property in read("producer", &["request.required.acks"], [("request.required.acks", " -1 ")]) {
///     let property = property?;
///     acks = property.int_between(-1, 1)?;
/// }
/// assert_eq!(acks, -1);
/// # Ok::<(), ConfigError>(())
/// ```
pub fn read<I, K, V>(client: &'static str, known: &'static [&'static str], properties: I) -> Properties<I::IntoIter>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: AsRef<str>,
{
    read_with_aliases(client, known, &[], properties)
}

/// A name today's Kafka clients use for a setting a gregor client knows under its Kafka 0.8
/// name: `linger.ms` for `queue.buffering.max.ms`, `acks` for `request.required.acks`.
#[derive(Debug, Clone, Copy)]
pub struct Alias {
    /// Today's name (`linger.ms`).
    pub modern: &'static str,
    /// The client's own name for the setting (`queue.buffering.max.ms`), one of its known names.
    pub classic: &'static str,
    /// Turns a value in today's syntax into the classic one (`acks=all` into `-1`); `None` when
    /// the syntax is the same. A value it cannot turn is passed on as given, so the classic
    /// reader refuses it (naming the modern property).
    pub translate: Option<fn(&str) -> Option<String>>,
}

/// As [`read`], also accepting the `modern` name of each of `aliases` for its `classic` one: the
/// [`Property`] then has the classic [`name`](Property::name) (to dispatch on) while errors name
/// the property as given. Both names of one setting with different values are a
/// [`ConfigError::Conflict`]; the same value under both is accepted.
///
/// ```
/// use gregor_config::{read_with_aliases, Alias, ConfigError};
///
/// const KNOWN: &[&str] = &["queue.buffering.max.ms"];
/// const ALIASES: &[Alias] = &[Alias { modern: "linger.ms", classic: "queue.buffering.max.ms", translate: None }];
/// let p = read_with_aliases("producer", KNOWN, ALIASES, [("linger.ms", "5")]).next().unwrap()?;
/// assert_eq!((p.name(), p.given_as(), p.value()), ("queue.buffering.max.ms", "linger.ms", "5"));
///
/// let both = [("linger.ms", "5"), ("queue.buffering.max.ms", "10")];
/// let e = read_with_aliases("producer", KNOWN, ALIASES, both).collect::<Result<Vec<_>, _>>().unwrap_err();
/// assert_eq!(
///     e.to_string(),
///     "queue.buffering.max.ms=\"10\" and linger.ms=\"5\" name the same producer setting with different values: give one"
/// );
/// # Ok::<(), ConfigError>(())
/// ```
pub fn read_with_aliases<I, K, V>(
    client: &'static str,
    known: &'static [&'static str],
    aliases: &'static [Alias],
    properties: I,
) -> Properties<I::IntoIter>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: AsRef<str>,
{
    Properties { client, known, aliases, properties: properties.into_iter(), seen: Vec::new() }
}

/// The properties given to [`read`], each checked against the client's known names.
#[derive(Debug, Clone)]
pub struct Properties<I> {
    client: &'static str,
    known: &'static [&'static str],
    aliases: &'static [Alias],
    properties: I,
    /// (classic name, name as given, value as read) of each setting so far.
    seen: Vec<(&'static str, &'static str, String)>,
}

impl<I, K, V> Iterator for Properties<I>
where
    I: Iterator<Item = (K, V)>,
    K: AsRef<str>,
    V: AsRef<str>,
{
    type Item = Result<Property<V>, ConfigError>;

    fn next(&mut self) -> Option<Self::Item> {
        let (key, value) = self.properties.next()?;
        let key = key.as_ref().trim();
        let property = if let Some(name) = self.known.iter().copied().find(|name| *name == key) {
            Property { name, given: name, value: Value::Given(value) }
        } else if let Some(alias) = self.aliases.iter().find(|a| a.modern == key) {
            let translated = alias.translate.and_then(|t| t(value.as_ref().trim()));
            let value = match translated {
                Some(v) => Value::Translated(v),
                None => Value::Given(value),
            };
            Property { name: alias.classic, given: alias.modern, value }
        } else {
            let known = self.known;
            return Some(Err(ConfigError::UnknownProperty { client: self.client, property: key.to_owned(), known }));
        };
        let now = property.value().to_owned();
        if let Some((_, given, before)) =
            self.seen.iter().find(|(classic, given, _)| *classic == property.name && *given != property.given)
        {
            if *before != now {
                return Some(Err(ConfigError::Conflict {
                    client: self.client,
                    first: given,
                    first_value: shorten(before.clone()),
                    second: property.given,
                    second_value: shorten(now),
                }));
            }
        }
        self.seen.push((property.name, property.given, now));
        Some(Ok(property))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.properties.size_hint()
    }
}

/// A value as given, or turned into the classic syntax.
#[derive(Debug, Clone)]
enum Value<V> {
    Given(V),
    Translated(String),
}

/// One known property and its value, from [`read`]. The typed reads name the property in their
/// errors (as it was given: the modern name of an [`Alias`]).
#[derive(Debug, Clone)]
pub struct Property<V> {
    name: &'static str,
    given: &'static str,
    value: Value<V>,
}

impl<V: AsRef<str>> Property<V> {
    /// The property's name, as the client's list spells it (for an [`Alias`], its classic
    /// name).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The name as given: the same as [`Property::name`], or an [`Alias`]'s modern name.
    pub fn given_as(&self) -> &'static str {
        self.given
    }

    /// The value, trimmed (for an [`Alias`] with a translation, in the classic syntax).
    pub fn value(&self) -> &str {
        match &self.value {
            Value::Given(v) => v.as_ref().trim(),
            Value::Translated(v) => v,
        }
    }

    /// A [`ConfigError::Invalid`] for this property (as given) and value, with `reason`.
    pub fn invalid(&self, reason: impl Into<String>) -> ConfigError {
        ConfigError::invalid(self.given, self.value(), reason)
    }

    /// An integer from `min` to [`INT_MAX`] (a Kafka `int`), as `T`: see [`parse_int`].
    ///
    /// # Errors
    ///
    /// [`ConfigError::Invalid`] for a value that is not an integer, is out of range, or does
    /// not fit `T`.
    pub fn int<T: TryFrom<i64>>(&self, min: i64) -> Result<T, ConfigError> {
        self.int_between(min, INT_MAX)
    }

    /// An integer from `min` to `max`, as `T`: see [`parse_int`].
    ///
    /// # Errors
    ///
    /// [`ConfigError::Invalid`] for a value that is not an integer, is out of range, or does
    /// not fit `T`.
    pub fn int_between<T: TryFrom<i64>>(&self, min: i64, max: i64) -> Result<T, ConfigError> {
        let n = parse_int(self.given, self.value(), min, max)?;
        T::try_from(n).map_err(|_| self.invalid(format!("must be between {min} and {max}")))
    }

    /// Milliseconds from `min` to [`INT_MAX`], as a [`Duration`]: see [`parse_ms`].
    ///
    /// # Errors
    ///
    /// [`ConfigError::Invalid`] for a value that is not an integer or is out of range.
    pub fn ms(&self, min: u32) -> Result<Duration, ConfigError> {
        parse_ms(self.given, self.value(), min)
    }

    /// `true` or `false` in any case: see [`parse_bool`].
    ///
    /// # Errors
    ///
    /// [`ConfigError::Invalid`] for anything else.
    pub fn bool(&self) -> Result<bool, ConfigError> {
        parse_bool(self.given, self.value())
    }

    /// The value of the name in `table` the value equals: see [`parse_choice`].
    ///
    /// # Errors
    ///
    /// [`ConfigError::Invalid`] listing the names, for any other value.
    pub fn choice<T: Copy>(&self, table: &[(&str, T)]) -> Result<T, ConfigError> {
        parse_choice(self.given, self.value(), table, false)
    }

    /// As [`Property::choice`], with the names compared in any (ASCII) case, as Kafka reads
    /// `offsets.storage`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Invalid`] listing the names, for any other value.
    pub fn choice_ignore_case<T: Copy>(&self, table: &[(&str, T)]) -> Result<T, ConfigError> {
        parse_choice(self.given, self.value(), table, true)
    }
}

/// Reads `value` of `property` as a decimal integer from `min` to `max`.
///
/// # Errors
///
/// [`ConfigError::Invalid`] with the reason `not an integer (MIN to MAX)` for a value that does
/// not parse as one (`1.5`, `10s`, `1e3`), `must be between MIN and MAX` for one out of range.
pub fn parse_int(property: &'static str, value: &str, min: i64, max: i64) -> Result<i64, ConfigError> {
    let n: i64 =
        value.parse().map_err(|_| ConfigError::invalid(property, value, format!("not an integer ({min} to {max})")))?;
    if n < min || n > max {
        return Err(ConfigError::invalid(property, value, format!("must be between {min} and {max}")));
    }
    Ok(n)
}

/// Reads `value` of `property` as milliseconds from `min` to [`INT_MAX`] (Kafka's `.ms`
/// properties are `int`s), into a [`Duration`].
///
/// # Errors
///
/// As [`parse_int`].
pub fn parse_ms(property: &'static str, value: &str, min: u32) -> Result<Duration, ConfigError> {
    let ms = parse_int(property, value, min.into(), INT_MAX)?;
    Ok(Duration::from_millis(ms.unsigned_abs()))
}

/// Reads a Kafka boolean: `true` or `false` in any case, as Kafka's
/// `VerifiableProperties.getBoolean` (Scala's `toBoolean`) reads them; `None` for anything else
/// (`yes`, `1`, `on`).
pub fn kafka_bool(value: &str) -> Option<bool> {
    if value.eq_ignore_ascii_case("true") {
        Some(true)
    } else if value.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// Reads `value` of `property` as a Kafka boolean ([`kafka_bool`]).
///
/// # Errors
///
/// [`ConfigError::Invalid`] with the reason `must be true or false`.
pub fn parse_bool(property: &'static str, value: &str) -> Result<bool, ConfigError> {
    kafka_bool(value).ok_or_else(|| ConfigError::invalid(property, value, "must be true or false"))
}

/// Reads `value` of `property` as one of the names of `table` (exactly, or in any ASCII case
/// when `ignore_case`), giving that name's value.
///
/// # Errors
///
/// [`ConfigError::Invalid`] with the reason `must be A or B` (`must be A, B or C`, ...: the
/// names of `table` in order) for any other value.
pub fn parse_choice<T: Copy>(
    property: &'static str,
    value: &str,
    table: &[(&str, T)],
    ignore_case: bool,
) -> Result<T, ConfigError> {
    let found =
        table.iter().find(|(name, _)| if ignore_case { name.eq_ignore_ascii_case(value) } else { *name == value });
    match found {
        Some((_, choice)) => Ok(*choice),
        None => Err(ConfigError::invalid(property, value, format!("must be {}", one_of(table)))),
    }
}

/// `a`, `a or b`, `a, b or c`: the names of `table`.
fn one_of<T>(table: &[(&str, T)]) -> String {
    let names: Vec<&str> = table.iter().map(|(name, _)| *name).collect();
    match names.split_last() {
        None => "nothing".to_owned(),
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: &[&str] = &["a.ms", "b.count", "c.enable", "d.mode"];

    /// The message of `result`'s error (which must be one).
    fn message<T: std::fmt::Debug>(result: Result<T, ConfigError>) -> String {
        result.unwrap_err().to_string()
    }

    #[test]
    fn names_are_checked_and_trimmed_values_kept_in_order() {
        let given = [(" a.ms ", " 5 "), ("b.count", "x"), ("nope", "1"), ("c.enable", "TRUE")];
        let read: Vec<_> = read("test", KNOWN, given).collect();
        assert_eq!(read.len(), 4);
        let first = read[0].as_ref().unwrap();
        assert_eq!((first.name(), first.value()), ("a.ms", "5"));
        assert_eq!(read[1].as_ref().unwrap().name(), "b.count", "a bad value is found when it is read, not here");
        assert_eq!(
            read[2].as_ref().unwrap_err(),
            &ConfigError::UnknownProperty { client: "test", property: "nope".into(), known: KNOWN }
        );
        assert_eq!(read[3].as_ref().unwrap().bool(), Ok(true));
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        for unknown in ["", "A.MS", "a_ms", "a.ms.x", "group.id"] {
            let e = read("simple-consumer", KNOWN, [(unknown, "1")]).next().unwrap().unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("unknown simple-consumer property {unknown:?}; known: a.ms, b.count, c.enable, d.mode")
            );
        }
        // owned names and values read the same
        let owned = vec![("d.mode".to_owned(), "x".to_owned())];
        assert_eq!(read("t", KNOWN, owned).next().unwrap().unwrap().value(), "x");
    }

    fn property(value: &str) -> Property<&str> {
        Property { name: "p", given: "p", value: Value::Given(value) }
    }

    #[test]
    fn ints_in_a_range() {
        let accepted: &[(&str, i64, i64, i64)] = &[
            ("0", 0, 10, 0),
            ("10", 0, 10, 10),
            ("-1", -1, 10, -1),
            ("+7", 0, 10, 7),
            (" 3 ", 0, 10, 3),
            ("2147483647", 0, INT_MAX, INT_MAX),
            ("-2147483648", i32::MIN.into(), INT_MAX, i32::MIN.into()),
        ];
        for (value, min, max, n) in accepted {
            assert_eq!(property(value).int_between::<i64>(*min, *max), Ok(*n), "{value}");
        }
        let refused: &[(&str, i64, i64, &str)] = &[
            ("11", 0, 10, "invalid value \"11\" for p: must be between 0 and 10"),
            ("-1", 0, 10, "invalid value \"-1\" for p: must be between 0 and 10"),
            ("2147483648", 1, INT_MAX, "invalid value \"2147483648\" for p: must be between 1 and 2147483647"),
            ("1.5", 1, INT_MAX, "invalid value \"1.5\" for p: not an integer (1 to 2147483647)"),
            ("10s", 0, 5, "invalid value \"10s\" for p: not an integer (0 to 5)"),
            ("1e3", 0, 5, "invalid value \"1e3\" for p: not an integer (0 to 5)"),
            ("", 0, 5, "invalid value \"\" for p: not an integer (0 to 5)"),
            ("99999999999999999999", 0, 5, "invalid value \"99999999999999999999\" for p: not an integer (0 to 5)"),
        ];
        for (value, min, max, expected) in refused {
            assert_eq!(message(property(value).int_between::<i64>(*min, *max)), *expected, "{value}");
        }
        // int is min..=INT_MAX, into the caller's type
        assert_eq!(property("5").int::<usize>(1), Ok(5usize));
        assert_eq!(property("4294967296").int::<u32>(0).unwrap_err().to_string(), {
            "invalid value \"4294967296\" for p: must be between 0 and 2147483647"
        });
        // a range wider than the type is refused with the range, not wrapped
        assert_eq!(
            message(property("300").int_between::<u8>(0, 1000)),
            "invalid value \"300\" for p: must be between 0 and 1000"
        );
        assert_eq!(
            message(property("-1").int_between::<usize>(-5, 5)),
            "invalid value \"-1\" for p: must be between -5 and 5"
        );
    }

    #[test]
    fn milliseconds_into_durations() {
        assert_eq!(property("0").ms(0), Ok(Duration::ZERO));
        assert_eq!(property("1500").ms(1), Ok(Duration::from_millis(1500)));
        assert_eq!(property("2147483647").ms(0), Ok(Duration::from_millis(2_147_483_647)));
        for (value, min, expected) in [
            ("0", 1, "invalid value \"0\" for p: must be between 1 and 2147483647"),
            ("-1", 0, "invalid value \"-1\" for p: must be between 0 and 2147483647"),
            ("1000", 1500, "invalid value \"1000\" for p: must be between 1500 and 2147483647"),
            ("2147483648", 0, "invalid value \"2147483648\" for p: must be between 0 and 2147483647"),
            ("5s", 0, "invalid value \"5s\" for p: not an integer (0 to 2147483647)"),
        ] {
            assert_eq!(message(property(value).ms(min)), expected, "{value}");
        }
    }

    #[test]
    fn booleans_as_kafka_reads_them() {
        for (value, b) in [("true", true), ("TRUE", true), ("True", true), ("false", false), ("fAlSe", false)] {
            assert_eq!(property(value).bool(), Ok(b), "{value}");
            assert_eq!(kafka_bool(value), Some(b));
        }
        for value in ["yes", "no", "1", "0", "on", "", "t", "truee"] {
            assert_eq!(
                message(property(value).bool()),
                format!("invalid value {value:?} for p: must be true or false")
            );
            assert_eq!(kafka_bool(value), None);
        }
    }

    #[test]
    fn choices_from_a_table() {
        #[derive(Debug, Clone, Copy, PartialEq)]
        enum Mode {
            A,
            B,
            C,
        }
        let two = [("range", Mode::A), ("roundrobin", Mode::B)];
        let three = [("none", Mode::A), ("gzip", Mode::B), ("snappy", Mode::C)];
        assert_eq!(property("roundrobin").choice(&two), Ok(Mode::B));
        assert_eq!(property(" range ").choice(&two), Ok(Mode::A));
        assert_eq!(property("gzip").choice(&three), Ok(Mode::B));
        assert_eq!(property("GZIP").choice_ignore_case(&three), Ok(Mode::B));
        for (result, expected) in [
            (property("Range").choice(&two), "invalid value \"Range\" for p: must be range or roundrobin"),
            (property("sticky").choice(&two), "invalid value \"sticky\" for p: must be range or roundrobin"),
            (property("lz4").choice(&three), "invalid value \"lz4\" for p: must be none, gzip or snappy"),
            (property("GZIP").choice(&three), "invalid value \"GZIP\" for p: must be none, gzip or snappy"),
            (property("x").choice(&three[..1]), "invalid value \"x\" for p: must be none"),
            (property("x").choice::<Mode>(&[]), "invalid value \"x\" for p: must be nothing"),
        ] {
            assert_eq!(message(result), expected);
        }
    }

    #[test]
    fn long_values_are_shortened_in_reads() {
        let long = format!("{}x", "9".repeat(80));
        assert_eq!(
            message(property(&long).int::<i64>(0)),
            format!("invalid value \"{}... (81 bytes)\" for p: not an integer (0 to 2147483647)", "9".repeat(64))
        );
    }
}

#[cfg(test)]
mod alias_tests {
    use super::*;

    const KNOWN: &[&str] = &["request.required.acks", "queue.buffering.max.ms"];

    fn acks(value: &str) -> Option<String> {
        (value == "all").then(|| "-1".to_owned())
    }

    const ALIASES: &[Alias] = &[
        Alias { modern: "acks", classic: "request.required.acks", translate: Some(acks) },
        Alias { modern: "linger.ms", classic: "queue.buffering.max.ms", translate: None },
    ];

    fn all(given: &[(&'static str, &'static str)]) -> Result<Vec<(&'static str, String)>, ConfigError> {
        read_with_aliases("producer", KNOWN, ALIASES, given.iter().copied())
            .map(|p| p.map(|p| (p.name(), p.value().to_owned())))
            .collect()
    }

    #[test]
    fn modern_names_read_as_their_classic_setting() {
        assert_eq!(
            all(&[("acks", "all"), ("linger.ms", " 5 ")]).unwrap(),
            [("request.required.acks", "-1".to_owned()), ("queue.buffering.max.ms", "5".to_owned())]
        );
        // the same value under both names is no conflict (acks=all is -1)
        assert_eq!(all(&[("request.required.acks", "-1"), ("acks", "all")]).unwrap().len(), 2);
        // a name given twice: the later wins, as before
        assert_eq!(all(&[("linger.ms", "1"), ("linger.ms", "2")]).unwrap()[1].1, "2");
    }

    #[test]
    fn both_names_with_different_values_are_a_conflict_naming_both() {
        let e = all(&[("request.required.acks", "1"), ("acks", "all")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "acks=\"-1\" and request.required.acks=\"1\" name the same producer setting with different values: give one"
        );
        assert_eq!(e.property(), "acks");
    }

    #[test]
    fn errors_name_the_property_as_given() {
        let p = read_with_aliases("producer", KNOWN, ALIASES, [("linger.ms", "soon")]).next().unwrap().unwrap();
        let e = p.ms(0).unwrap_err();
        assert_eq!(e.property(), "linger.ms");
        assert!(e.to_string().starts_with("invalid value \"soon\" for linger.ms"), "{e}");
        // a value the translation does not know goes on as given, and the classic read refuses it
        let p = read_with_aliases("producer", KNOWN, ALIASES, [("acks", "most")]).next().unwrap().unwrap();
        assert_eq!(p.int_between::<i16>(-1, 1).unwrap_err().property(), "acks");
    }
}

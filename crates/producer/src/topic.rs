//! [`Topic`]: a topic's name as records and results carry it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// A topic name, interned: a `Copy` handle to one process-wide copy of the name, which
/// records and results carry without a reference count or an allocation.
///
/// (A record holding an `Arc<str>` had its count raised when the application cloned it and
/// lowered when the producer was done with it, and each result raised and lowered another:
/// four atomic operations per record, and on a multi-thread runtime its counter's cache line
/// moved between cores.) Each distinct name is allocated the first time the process sees it
/// and kept for the life of the process, as a Kafka client keeps the metadata of every topic
/// it sent to; equal names are the same pointer, so comparing two `Topic`s compares pointers.
///
/// Make one with [`Topic::new`] (or `Topic::from`, or let [`Record::new`](crate::Record::new) take a `&str` or a
/// `String`). Making one looks the name up: a thread's last name is kept, so a thread sending
/// to one topic takes no lock, but an application sending to many does better to make each
/// `Topic` once and reuse it. It derefs to `str`; hashing and ordering are those of the name.
///
/// ```
/// use gregor_producer::{Record, Topic};
///
/// let events = Topic::new("events");
/// assert_eq!(events, Topic::from(String::from("events")));
/// assert_eq!(events, "events");
/// assert!(events.starts_with("ev"));
/// let r: Record<(), &str> = Record::new(events, "hello");
/// assert_eq!(r.topic.as_str(), "events");
/// ```
#[derive(Clone, Copy)]
pub struct Topic(&'static str);

impl Topic {
    /// The interned name `name` (allocated the first time the process sees it).
    pub fn new(name: &str) -> Topic {
        thread_local! {
            static LAST: std::cell::Cell<Option<Topic>> = const { std::cell::Cell::new(None) };
        }
        // a thread's last name, without the process-wide lock; `try_with` fails only in a
        // thread-local destructor, which then takes the lock
        let cached = LAST.try_with(|last| last.get().filter(|t| t.0 == name)).ok().flatten();
        if let Some(topic) = cached {
            return topic;
        }
        let topic = Topic::intern(name);
        let _ = LAST.try_with(|last| last.set(Some(topic)));
        topic
    }

    fn intern(name: &str) -> Topic {
        static NAMES: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
        // a panic under the lock leaves the set as it was (an insert is all that happens)
        let mut names = NAMES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let names = names.get_or_insert_with(HashSet::new);
        if let Some(known) = names.get(name) {
            return Topic(known);
        }
        let own: &'static str = Box::leak(Box::from(name));
        names.insert(own);
        Topic(own)
    }

    /// The name.
    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl std::ops::Deref for Topic {
    type Target = str;

    fn deref(&self) -> &str {
        self.0
    }
}

impl AsRef<str> for Topic {
    fn as_ref(&self) -> &str {
        self.0
    }
}

impl std::borrow::Borrow<str> for Topic {
    fn borrow(&self) -> &str {
        self.0
    }
}

impl PartialEq for Topic {
    /// Equal names are the same pointer.
    fn eq(&self, other: &Topic) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for Topic {}

impl PartialEq<str> for Topic {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Topic {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for Topic {
    fn eq(&self, other: &String) -> bool {
        self.0 == other.as_str()
    }
}

impl std::hash::Hash for Topic {
    /// The name's hash (as `str`'s, which `Borrow<str>` needs).
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state)
    }
}

impl PartialOrd for Topic {
    fn partial_cmp(&self, other: &Topic) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Topic {
    /// By name.
    fn cmp(&self, other: &Topic) -> std::cmp::Ordering {
        self.0.cmp(other.0)
    }
}

impl From<&str> for Topic {
    fn from(name: &str) -> Topic {
        Topic::new(name)
    }
}

impl From<&String> for Topic {
    fn from(name: &String) -> Topic {
        Topic::new(name)
    }
}

impl From<String> for Topic {
    fn from(name: String) -> Topic {
        Topic::new(&name)
    }
}

impl From<Arc<str>> for Topic {
    fn from(name: Arc<str>) -> Topic {
        Topic::new(&name)
    }
}

impl From<Box<str>> for Topic {
    fn from(name: Box<str>) -> Topic {
        Topic::new(&name)
    }
}

impl From<Topic> for Arc<str> {
    fn from(topic: Topic) -> Arc<str> {
        Arc::from(topic.0)
    }
}

impl From<Topic> for String {
    fn from(topic: Topic) -> String {
        topic.0.to_owned()
    }
}

impl std::fmt::Display for Topic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::fmt::Debug for Topic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn equal_topic_names_are_one_pointer_whatever_they_were_made_from() {
        let events = Topic::new("record-test-events");
        let made = [
            Topic::from(String::from("record-test-events")),
            Topic::from(&String::from("record-test-events")),
            Topic::from(Arc::<str>::from("record-test-events")),
            Topic::from(Box::<str>::from("record-test-events")),
            // another name in between: the thread's last name is no longer this one
            {
                let _ = Topic::new("record-test-other");
                Topic::new("record-test-events")
            },
            std::thread::spawn(|| Topic::new("record-test-events")).join().unwrap(),
        ];
        for t in made {
            assert!(std::ptr::eq(t.as_str(), events.as_str()));
            assert_eq!(t, events);
        }
        let other = Topic::new("record-test-other");
        assert_ne!(other, events);
        assert!(!std::ptr::eq(other.as_str(), events.as_str()));
        assert_eq!(events, "record-test-events");
        assert_eq!(events.to_string(), "record-test-events");
        assert_eq!(format!("{events:?}"), "\"record-test-events\"");
    }

    #[test]
    fn a_topic_hashes_and_orders_as_its_name() {
        let set: HashSet<Topic> = [Topic::new("record-test-b"), Topic::new("record-test-a")].into_iter().collect();
        // Borrow<str>: looked up by the name
        assert!(set.contains("record-test-a"));
        assert!(!set.contains("record-test-c"));
        let mut sorted = [Topic::new("record-test-b"), Topic::new("record-test-c"), Topic::new("record-test-a")];
        sorted.sort();
        assert_eq!(
            sorted.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
            ["record-test-a", "record-test-b", "record-test-c"]
        );
    }
}

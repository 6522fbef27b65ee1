//! Topic names: [`Topic`], the application's handle on a name, and [`TopicId`], the small
//! number a producer gives each name it sends to, which its records carry instead.
//!
//! Why two: a record crosses from the sending thread to the producer's task. Had it carried a
//! counted handle on its topic's name, the count would be raised on the sending thread and
//! lowered on the producer's, and on a multi-thread runtime its cache line would move between
//! cores twice per record. So the sending side maps the record's [`Topic`] to its producer's
//! [`TopicId`] for that name (under the lock it takes anyway, comparing pointers with the last
//! topic it saw) and lets go of the `Topic` on the sending thread; the producer's task keeps
//! its own copy of each name and hands out results with clones of it, made and dropped on the
//! delivery side.
//!
//! Every name is freed once nothing uses it: a `Topic` is a reference-counted name, and a
//! producer's names ([`TopicNames`]) go with the producer. (They were interned for the life
//! of the process before: an application sending to unbounded topic names leaked them.)

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// A topic's name: a reference-counted handle, cheap to clone (one atomic increment, no
/// allocation), freed when the last handle is dropped.
///
/// Make one with [`Topic::new`] (or `Topic::from`, or let [`Record::new`](crate::Record::new)
/// take a `&str` or a `String`). Making one from a `&str` allocates the name, unless the
/// thread's last `Topic` made that way had the same name: each thread keeps its last one, so a
/// thread sending to one topic allocates it once (and holds that one name until it makes
/// another). At the highest rates make the `Topic` once and clone it into each record: a
/// producer then recognizes it by its pointer.
///
/// It derefs to `str`; equality, hashing and ordering are those of the name.
///
/// ```
/// use gregor_producer::{Record, Topic};
///
/// let events = Topic::new("events");
/// assert_eq!(events, Topic::from(String::from("events")));
/// assert_eq!(events, "events");
/// assert!(events.starts_with("ev"));
/// let r: Record<(), &str> = Record::new(events.clone(), "hello");
/// assert_eq!(r.topic.as_str(), "events");
/// ```
#[derive(Clone)]
pub struct Topic(Arc<str>);

impl Topic {
    /// The topic `name` (see the type's docs for when this allocates).
    pub fn new(name: &str) -> Topic {
        thread_local! {
            static LAST: RefCell<Option<Topic>> = const { RefCell::new(None) };
        }
        // `try_with` fails only in a thread-local destructor, `try_borrow_mut` never (nothing
        // here calls back into it): then the name is allocated as it would be anyway
        let cached = LAST.try_with(|last| {
            let mut last = last.try_borrow_mut().ok()?;
            match &*last {
                Some(topic) if *topic.0 == *name => Some(topic.clone()),
                _ => {
                    let topic = Topic(Arc::from(name));
                    *last = Some(topic.clone());
                    Some(topic)
                }
            }
        });
        cached.ok().flatten().unwrap_or_else(|| Topic(Arc::from(name)))
    }

    /// A topic whose name is not known (a record dropped after its producer let go of its
    /// names: never in practice).
    pub(crate) fn unknown() -> Topic {
        Topic(Arc::from(""))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True when `other` is this very handle's name (same allocation): the cheap test a
    /// producer makes before comparing names.
    pub(crate) fn same_handle(&self, other: &Topic) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::ops::Deref for Topic {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Topic {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for Topic {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq for Topic {
    /// Equal names (the same allocation is compared by pointer first).
    fn eq(&self, other: &Topic) -> bool {
        self.same_handle(other) || self.0 == other.0
    }
}

impl Eq for Topic {}

impl PartialEq<str> for Topic {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Topic {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for Topic {
    fn eq(&self, other: &String) -> bool {
        &*self.0 == other.as_str()
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
        self.0.cmp(&other.0)
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
    /// This allocation of the name, as it is.
    fn from(name: Arc<str>) -> Topic {
        Topic(name)
    }
}

impl From<Box<str>> for Topic {
    fn from(name: Box<str>) -> Topic {
        Topic(Arc::from(name))
    }
}

impl From<Topic> for Arc<str> {
    fn from(topic: Topic) -> Arc<str> {
        topic.0
    }
}

impl From<Topic> for String {
    fn from(topic: Topic) -> String {
        topic.0.to_string()
    }
}

impl std::fmt::Display for Topic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Debug for Topic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

/// A name a producer registered: what its records carry from the sending thread to its task
/// and while the task holds them (4 + 4 bytes, copied without a count). Valid while the
/// producer's [`TopicNames`] lives; the generation tells a stale number from the entry that
/// reuses its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct TopicId {
    index: u32,
    generation: u32,
}

impl TopicId {
    /// A number no name has (the tests' records whose topic is never read).
    pub(crate) const UNREGISTERED: TopicId = TopicId { index: u32::MAX, generation: u32::MAX };

    /// The name, while its producer lives (the rare path: a record that is dropped
    /// undelivered reads its topic's name for its error).
    pub(crate) fn name(self) -> Option<Arc<str>> {
        let table = table();
        let entry = table.entries.get(self.index as usize)?;
        entry.name.clone().filter(|_| entry.generation == self.generation)
    }
}

/// The process's table of the names producers registered: slots reused once free.
struct Table {
    entries: Vec<Entry>,
    free: Vec<u32>,
}

struct Entry {
    name: Option<Arc<str>>,
    generation: u32,
}

static TABLE: Mutex<Table> = Mutex::new(Table { entries: Vec::new(), free: Vec::new() });

fn table() -> MutexGuard<'static, Table> {
    // a panic under the lock leaves the table consistent (one slot written at a time)
    TABLE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One producer's registered names. Its parts (the inbox, the task, the delivery task) each
/// hold it, declared after whatever holds records, so it outlives every record of the
/// producer; dropping the last handle frees its entries.
#[derive(Debug, Default)]
pub(crate) struct TopicNames {
    ids: Mutex<Vec<TopicId>>,
}

impl TopicNames {
    /// No names yet.
    pub(crate) fn new() -> Arc<TopicNames> {
        Arc::new(TopicNames::default())
    }

    /// Registers `name` (a copy of its own: the producer's): its number, and the copy.
    pub(crate) fn register(&self, name: &str) -> (TopicId, Arc<str>) {
        let own: Arc<str> = Arc::from(name);
        let id = {
            let mut table = table();
            match table.free.pop() {
                Some(index) => {
                    let entry = &mut table.entries[index as usize];
                    entry.generation = entry.generation.wrapping_add(1);
                    entry.name = Some(own.clone());
                    TopicId { index, generation: entry.generation }
                }
                None => {
                    let index = u32::try_from(table.entries.len()).expect("fewer than 2^32 topic names at once");
                    table.entries.push(Entry { name: Some(own.clone()), generation: 0 });
                    TopicId { index, generation: 0 }
                }
            }
        };
        self.ids.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(id);
        (id, own)
    }
}

impl Drop for TopicNames {
    fn drop(&mut self) {
        let ids = std::mem::take(self.ids.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner()));
        if ids.is_empty() {
            return;
        }
        let mut freed = Vec::with_capacity(ids.len());
        {
            let mut table = table();
            for id in ids {
                if let Some(entry) = table.entries.get_mut(id.index as usize) {
                    if entry.generation == id.generation {
                        freed.extend(entry.name.take());
                        table.free.push(id.index);
                    }
                }
            }
        }
        // the names are freed outside the lock
        drop(freed);
    }
}

/// The sending side's map from a record's [`Topic`] to its producer's [`TopicId`], used under
/// the inbox's lock: the last topic is compared by pointer (then by name), others are looked
/// up by name, and a new name is registered.
#[derive(Debug)]
pub(crate) struct TopicMap {
    last: Option<(Topic, TopicId)>,
    known: HashMap<Arc<str>, TopicId>,
    names: Arc<TopicNames>,
}

impl TopicMap {
    /// A map registering its names in `names`.
    pub(crate) fn new(names: Arc<TopicNames>) -> TopicMap {
        TopicMap { last: None, known: HashMap::new(), names }
    }

    /// The number of `topic`'s name (registered the first time).
    pub(crate) fn id(&mut self, topic: &Topic) -> TopicId {
        self.id_new(topic).0
    }

    /// [`TopicMap::id`], and whether the name was registered now (the first record of the
    /// topic).
    pub(crate) fn id_new(&mut self, topic: &Topic) -> (TopicId, bool) {
        if let Some((last, id)) = &self.last {
            if last.same_handle(topic) || last.0 == topic.0 {
                return (*id, false);
            }
        }
        let (id, new) = match self.known.get(topic.as_str()) {
            Some(id) => (*id, false),
            None => {
                let (id, own) = self.names.register(topic);
                self.known.insert(own, id);
                (id, true)
            }
        };
        self.last = Some((topic.clone(), id));
        (id, new)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn topics_are_equal_by_name_whatever_they_were_made_from() {
        let events = Topic::new("topic-test-events");
        let made = [
            Topic::from(String::from("topic-test-events")),
            Topic::from(&String::from("topic-test-events")),
            Topic::from(Arc::<str>::from("topic-test-events")),
            Topic::from(Box::<str>::from("topic-test-events")),
            std::thread::spawn(|| Topic::new("topic-test-events")).join().unwrap(),
        ];
        for t in made {
            assert_eq!(t, events);
        }
        let other = Topic::new("topic-test-other");
        assert_ne!(other, events);
        assert_eq!(events, "topic-test-events");
        assert_eq!(events.to_string(), "topic-test-events");
        assert_eq!(format!("{events:?}"), "\"topic-test-events\"");
        let arc: Arc<str> = Arc::from("topic-test-arc");
        assert!(Arc::ptr_eq(&Arc::from(Topic::from(arc.clone())), &arc), "an Arc is taken as it is");
    }

    #[test]
    fn a_thread_makes_its_last_name_once() {
        let a = Topic::new("topic-test-a");
        assert!(a.same_handle(&Topic::new("topic-test-a")), "the thread's last name: no allocation");
        let b = Topic::new("topic-test-b");
        assert!(!b.same_handle(&a));
        assert!(!Topic::new("topic-test-a").same_handle(&a), "another name came in between");
    }

    #[test]
    fn a_name_is_freed_when_nothing_uses_it() {
        let topic = Topic::new("topic-test-freed");
        let weak = Arc::downgrade(&Arc::<str>::from(topic.clone()));
        drop(topic);
        // the thread's cache still holds it until the thread makes another name
        assert!(weak.upgrade().is_some());
        let _other = Topic::new("topic-test-something-else");
        assert!(weak.upgrade().is_none(), "freed");
    }

    #[test]
    fn a_topic_hashes_and_orders_as_its_name() {
        let set: HashSet<Topic> = [Topic::new("topic-test-b"), Topic::new("topic-test-a")].into_iter().collect();
        // Borrow<str>: looked up by the name
        assert!(set.contains("topic-test-a"));
        assert!(!set.contains("topic-test-c"));
        let mut sorted = [Topic::new("topic-test-b"), Topic::new("topic-test-c"), Topic::new("topic-test-a")];
        sorted.sort();
        assert_eq!(
            sorted.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
            ["topic-test-a", "topic-test-b", "topic-test-c"]
        );
    }

    #[test]
    fn a_producers_names_are_numbered_once_and_freed_with_it() {
        let names = TopicNames::new();
        let mut map = TopicMap::new(names.clone());
        let events = Topic::new("topic-test-numbered");
        let id = map.id(&events);
        assert_eq!(map.id(&events), id, "the last topic, by pointer");
        assert_eq!(map.id(&Topic::from(Arc::<str>::from("topic-test-numbered"))), id, "by name");
        let other = map.id(&Topic::new("topic-test-numbered-2"));
        assert_ne!(other, id);
        assert_eq!(map.id(&events), id, "looked up again");
        assert_eq!(id.name().as_deref(), Some("topic-test-numbered"));
        assert_eq!(other.name().as_deref(), Some("topic-test-numbered-2"));
        // the producer's copy of the name is its own, not the application's
        let own = id.name().unwrap();
        assert!(!Arc::ptr_eq(&own, &Arc::<str>::from(events.clone())));
        let weak = Arc::downgrade(&own);
        drop(own);
        // the producer goes: its names with it, and their numbers no longer read
        drop(map);
        drop(names);
        assert!(weak.upgrade().is_none(), "the producer's copy is freed");
        assert_eq!(id.name(), None);
        assert_eq!(other.name(), None);
        // a slot reused by another producer's name is not read through a stale number
        let names = TopicNames::new();
        let (reused, _) = names.register("topic-test-reused");
        assert_eq!(reused.name().as_deref(), Some("topic-test-reused"));
        assert_eq!(id.name(), None);
        assert_eq!(other.name(), None);
    }
}

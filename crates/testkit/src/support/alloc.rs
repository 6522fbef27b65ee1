//! A counting global allocator for tests that measure memory: the process's live heap (and the
//! part of it in large blocks) and its peak, and the largest single allocation a thread makes
//! while watched.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicIsize, AtomicU64, Ordering};

thread_local! {
    /// Whether this thread's allocations are being watched for the largest one.
    static WATCHING: Cell<bool> = const { Cell::new(false) };
    /// The largest single allocation (or reallocation's new size) since watching began.
    static LARGEST: Cell<usize> = const { Cell::new(0) };
    /// How many allocations (and reallocations) this thread has made.
    static THREAD_ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// A global allocator that forwards every call to [`System`] and counts: the bytes allocated
/// and not yet freed by the whole process ([`live`](Self::live); the part of them in blocks of
/// at least 1 MiB, [`live_large`](Self::live_large)), their highest value
/// ([`peak`](Self::peak)), and, per thread, the largest single allocation made while watched
/// ([`largest_allocation`](Self::largest_allocation)).
///
/// It only counts when it is the binary's `#[global_allocator]`; declare it with
/// [`counting_allocator!`](crate::counting_allocator), one per test binary:
///
/// ```ignore
/// gregor_testkit::counting_allocator!(ALLOCATOR);
///
/// #[test]
/// fn decoding_a_huge_length_prefix_allocates_nothing_big() {
///     let (_, largest) = ALLOCATOR.largest_allocation(|| decode(&[0x7f, 0xff, 0xff, 0xff]));
///     assert!(largest < 4096, "{largest}");
/// }
/// ```
///
/// The heap is the process's: other tests of the binary running at the same time allocate
/// too, so a binary that measures [`live`](Self::live) should hold one test. The largest
/// allocation is the calling thread's alone (a current-thread runtime keeps a connection's
/// tasks on it).
#[derive(Debug)]
pub struct CountingAllocator {
    live: AtomicIsize,
    live_large: AtomicIsize,
    peak: AtomicIsize,
    allocations: AtomicU64,
}

/// The size from which a block counts in [`CountingAllocator::live_large`]: 1 MiB.
pub const LARGE_ALLOCATION: usize = 1 << 20;

impl CountingAllocator {
    /// A counter at zero (a `const fn`, for the `static`).
    #[allow(clippy::new_without_default)] // a `static` needs the const fn; Default is never wanted
    pub const fn new() -> CountingAllocator {
        CountingAllocator {
            live: AtomicIsize::new(0),
            live_large: AtomicIsize::new(0),
            peak: AtomicIsize::new(0),
            allocations: AtomicU64::new(0),
        }
    }

    /// Bytes allocated and not yet freed by the whole process.
    ///
    /// # Panics
    ///
    /// When this allocator is not the binary's `#[global_allocator]` (it has counted nothing).
    pub fn live(&self) -> usize {
        self.installed();
        usize::try_from(self.live.load(Ordering::Relaxed)).unwrap_or(0)
    }

    /// The part of [`live`](Self::live) in blocks of at least [`LARGE_ALLOCATION`] bytes each.
    ///
    /// For a test that bounds what many small buffers add up to, in a process where another
    /// component keeps a few large buffers whose size it does not control: the ZooKeeper
    /// client (zookeeper-async 5) reads into a 2 MiB buffer that grows once to 4 MiB, at no
    /// foreseeable moment, the first time a read ends inside a frame.
    ///
    /// # Panics
    ///
    /// As [`live`](Self::live).
    pub fn live_large(&self) -> usize {
        self.installed();
        usize::try_from(self.live_large.load(Ordering::Relaxed)).unwrap_or(0)
    }

    /// The highest [`live`](Self::live) since the process started or the last
    /// [`reset_peak`](Self::reset_peak).
    ///
    /// # Panics
    ///
    /// As [`live`](Self::live).
    pub fn peak(&self) -> usize {
        self.installed();
        usize::try_from(self.peak.load(Ordering::Relaxed)).unwrap_or(0)
    }

    /// Starts a new [`peak`](Self::peak) from the current [`live`](Self::live).
    pub fn reset_peak(&self) {
        self.peak.store(self.live.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// How many allocations (and reallocations) the process has made.
    pub fn allocations(&self) -> u64 {
        self.allocations.load(Ordering::Relaxed)
    }

    /// How many allocations (and reallocations) the calling thread has made: what a test that
    /// counts per operation wants, since the test harness's own threads allocate too.
    ///
    /// # Panics
    ///
    /// As [`live`](Self::live).
    pub fn thread_allocations(&self) -> u64 {
        self.installed();
        THREAD_ALLOCATIONS.with(Cell::get)
    }

    /// Runs `f` and returns its value with the largest single allocation this thread made
    /// meanwhile (0 when it made none).
    ///
    /// # Panics
    ///
    /// As [`live`](Self::live).
    pub fn largest_allocation<T>(&self, f: impl FnOnce() -> T) -> (T, usize) {
        let watch = self.watch_largest();
        let value = f();
        (value, watch.stop())
    }

    /// Starts watching this thread's allocations, for code that cannot be a closure (an
    /// `.await` on a current-thread runtime): [`LargestAllocation::stop`] returns the largest.
    ///
    /// # Panics
    ///
    /// As [`live`](Self::live).
    pub fn watch_largest(&self) -> LargestAllocation {
        self.installed();
        let outer = (WATCHING.with(Cell::get), LARGEST.with(Cell::get));
        LARGEST.with(|l| l.set(0));
        WATCHING.with(|w| w.set(true));
        LargestAllocation { outer, not_send: PhantomData }
    }

    fn installed(&self) {
        assert!(
            self.allocations() > 0,
            "this CountingAllocator is not the #[global_allocator]: declare it with \
             `gregor_testkit::counting_allocator!(NAME)` and use that static"
        );
    }

    fn grew(&self, size: usize) {
        let now = self.live.fetch_add(size as isize, Ordering::Relaxed) + size as isize;
        if size >= LARGE_ALLOCATION {
            self.live_large.fetch_add(size as isize, Ordering::Relaxed);
        }
        self.peak.fetch_max(now, Ordering::Relaxed);
        self.allocations.fetch_add(1, Ordering::Relaxed);
        let _ = THREAD_ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // try_with: nothing during thread-local destruction; const-initialised cells never
        // allocate, so this cannot recurse
        let _ = WATCHING.try_with(|watching| {
            if watching.get() {
                let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
            }
        });
    }

    fn shrank(&self, size: usize) {
        self.live.fetch_sub(size as isize, Ordering::Relaxed);
        if size >= LARGE_ALLOCATION {
            self.live_large.fetch_sub(size as isize, Ordering::Relaxed);
        }
    }
}

/// This thread's watch for its largest allocation, started by
/// [`CountingAllocator::watch_largest`]. Watches nest: an outer watch sees what an inner one
/// saw.
#[derive(Debug)]
#[must_use = "stop() returns the largest allocation"]
pub struct LargestAllocation {
    outer: (bool, usize),
    // the counters are the thread's: the watch must end on the thread that started it
    not_send: PhantomData<*const ()>,
}

impl LargestAllocation {
    /// Stops watching; the largest single allocation this thread made since the watch began.
    pub fn stop(self) -> usize {
        let largest = LARGEST.with(Cell::get);
        let (outer_watching, outer_largest) = self.outer;
        WATCHING.with(|w| w.set(outer_watching));
        LARGEST.with(|l| l.set(if outer_watching { outer_largest.max(largest) } else { outer_largest }));
        largest
    }
}

// The one `unsafe` of the test support: a global allocator must implement the unsafe trait.
// SAFETY: every call is forwarded unchanged to `System`, which upholds `GlobalAlloc`'s contract;
// the counting touches only atomics and const-initialised thread-locals (no allocation, no
// reentrancy, no effect on the pointers returned).
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract, which is `System.alloc`'s.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            self.grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            self.grew(layout.size());
        }
        p
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller upholds `realloc`'s contract (`ptr` came from this allocator, that
        // is from `System`, with `layout`), which is `System.realloc`'s.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            self.grew(new_size);
            self.shrank(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller upholds `dealloc`'s contract (`ptr` came from `System` with
        // `layout`).
        unsafe { System.dealloc(ptr, layout) };
        self.shrank(layout.size());
    }
}

/// Declares this test binary's `#[global_allocator]`: a `static` [`CountingAllocator`] named
/// `$name` (default `ALLOCATOR`), optionally with a visibility.
///
/// ```ignore
/// gregor_testkit::counting_allocator!(ALLOCATOR);
///
/// let before = ALLOCATOR.live();
/// ```
#[macro_export]
macro_rules! counting_allocator {
    () => {
        $crate::counting_allocator!(ALLOCATOR);
    };
    ($vis:vis $name:ident) => {
        #[global_allocator]
        $vis static $name: $crate::support::CountingAllocator = $crate::support::CountingAllocator::new();
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    // live() and peak() are tested in tests/counting_allocator.rs, a binary of one test: the
    // heap is the process's, and the tests of this binary run side by side
    crate::counting_allocator!(ALLOCATOR);

    const MIB: usize = 1 << 20;

    #[test]
    fn the_largest_allocation_is_this_threads_and_counts_a_realloc_by_its_new_size() {
        let (v, largest) = ALLOCATOR.largest_allocation(|| Vec::<u8>::with_capacity(123_457));
        assert_eq!((v.capacity(), largest), (123_457, 123_457));
        let ((), largest) = ALLOCATOR.largest_allocation(|| {
            let mut s = Vec::<u8>::with_capacity(1000);
            s.reserve_exact(5000);
            assert_eq!(s.capacity(), 5000);
        });
        assert_eq!(largest, 5000);
        let ((), largest) = ALLOCATOR.largest_allocation(|| {
            std::thread::scope(|s| {
                s.spawn(|| drop(vec![0u8; 4 * MIB]));
            });
        });
        assert!(largest < MIB, "another thread's 4 MiB was not this thread's: {largest}");
        let ((), largest) = ALLOCATOR.largest_allocation(|| {});
        assert_eq!(largest, 0);
    }

    #[test]
    fn watches_nest() {
        let outer = ALLOCATOR.watch_largest();
        let big = Vec::<u8>::with_capacity(70_000);
        let inner = ALLOCATOR.watch_largest();
        let small = Vec::<u8>::with_capacity(300);
        assert_eq!(inner.stop(), 300);
        let medium = Vec::<u8>::with_capacity(9_000);
        assert_eq!(outer.stop(), 70_000);
        drop((big, small, medium));
        let ((), after) = ALLOCATOR.largest_allocation(|| drop(Vec::<u8>::with_capacity(10)));
        assert_eq!(after, 10, "a stopped watch leaves nothing behind");
    }

    #[test]
    fn an_allocator_that_is_not_installed_refuses_to_measure() {
        static NOT_INSTALLED: CountingAllocator = CountingAllocator::new();
        let failed = std::panic::catch_unwind(|| NOT_INSTALLED.live()).expect_err("it counted nothing");
        let text = match failed.downcast::<String>() {
            Ok(s) => *s,
            Err(e) => e.downcast_ref::<&str>().map(|s| (*s).to_owned()).unwrap_or_default(),
        };
        assert!(text.contains("is not the #[global_allocator]"), "{text}");
        assert!(std::panic::catch_unwind(|| NOT_INSTALLED.largest_allocation(|| ())).is_err());
    }
}

//! `gregor_testkit::support::CountingAllocator` installed from outside the testkit, as a client
//! crate's test binary does, and its process-wide counters. One test in this binary: the heap
//! is the process's, so nothing else may run beside it.

gregor_testkit::counting_allocator!(ALLOCATOR);

const MIB: usize = 1 << 20;

#[test]
fn live_large_and_peak_follow_the_heap_and_the_largest_allocation_the_thread() {
    let before = ALLOCATOR.live();
    let large_before = ALLOCATOR.live_large();
    ALLOCATOR.reset_peak();
    assert!(ALLOCATOR.peak() < before + MIB, "a new peak starts from the live heap");
    let big = vec![1u8; 64 * MIB];
    let during = ALLOCATOR.live();
    assert!(during >= before + 64 * MIB && during < before + 65 * MIB, "{before} -> {during}");
    assert_eq!(ALLOCATOR.live_large(), large_before + 64 * MIB, "the 64 MiB block is a large one");
    let (more, largest) = ALLOCATOR.largest_allocation(|| vec![2u8; 3 * MIB]);
    assert_eq!(largest, 3 * MIB);
    drop((big, more));
    assert_eq!(ALLOCATOR.live_large(), large_before, "the large frees were counted");
    let after = ALLOCATOR.live();
    assert!(after < before + MIB, "the frees were counted: {before} -> {during} -> {after}");
    let peak = ALLOCATOR.peak();
    assert!(peak >= before + 67 * MIB && peak < before + 68 * MIB, "{before} -> peak {peak}");
    ALLOCATOR.reset_peak();
    assert!(ALLOCATOR.peak() < before + MIB, "a new peak starts from the live heap");
    assert!(ALLOCATOR.allocations() > 3);
    // many small blocks are not large, however much they add up to; a block that grows past
    // the threshold by reallocation becomes large, and one that shrinks below it is not
    let small: Vec<Vec<u8>> = (0..64).map(|_| vec![3u8; 64 * 1024]).collect();
    assert_eq!(ALLOCATOR.live_large(), large_before);
    let mut growing = vec![4u8; MIB - 1];
    assert_eq!(ALLOCATOR.live_large(), large_before);
    growing.reserve_exact(2 * MIB);
    assert_eq!(ALLOCATOR.live_large(), large_before + growing.capacity());
    growing.truncate(10);
    growing.shrink_to_fit();
    assert_eq!(ALLOCATOR.live_large(), large_before);
    drop((small, growing));
    assert_eq!(ALLOCATOR.live_large(), large_before);
}

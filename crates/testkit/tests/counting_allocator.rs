//! `gregor_testkit::support::CountingAllocator` installed from outside the testkit, as a client
//! crate's test binary does, and its process-wide counters. One test in this binary: the heap
//! is the process's, so nothing else may run beside it.

gregor_testkit::counting_allocator!(ALLOCATOR);

const MIB: usize = 1 << 20;

#[test]
fn live_and_peak_follow_the_heap_and_the_largest_allocation_the_thread() {
    let before = ALLOCATOR.live();
    ALLOCATOR.reset_peak();
    assert!(ALLOCATOR.peak() < before + MIB, "a new peak starts from the live heap");
    let big = vec![1u8; 64 * MIB];
    let during = ALLOCATOR.live();
    assert!(during >= before + 64 * MIB && during < before + 65 * MIB, "{before} -> {during}");
    let (more, largest) = ALLOCATOR.largest_allocation(|| vec![2u8; 3 * MIB]);
    assert_eq!(largest, 3 * MIB);
    drop((big, more));
    let after = ALLOCATOR.live();
    assert!(after < before + MIB, "the frees were counted: {before} -> {during} -> {after}");
    let peak = ALLOCATOR.peak();
    assert!(peak >= before + 67 * MIB && peak < before + 68 * MIB, "{before} -> peak {peak}");
    ALLOCATOR.reset_peak();
    assert!(ALLOCATOR.peak() < before + MIB, "a new peak starts from the live heap");
    assert!(ALLOCATOR.allocations() > 3);
}

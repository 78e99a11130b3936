//! The SA's PathRecord lookup allocates nothing: a counting global allocator (in this test
//! binary only) sees no allocation across thousands of lookups on a swept fabric (once the
//! snapshot's path tables, built on first use, are there).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use ibsm::core::lids::Guid2Lid;
use ibsm::core::{Sm, SmConfig};
use ibsm::sa;
use ibsm::transport::sim::SimDriver;
use ibsm_mad::Lid;
use ibsm_topology::GenSpec;

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator; only counts calls.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above, for `dealloc`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn path_record_lookups_allocate_nothing() {
    let topo = GenSpec::fat_tree(3, 8).generate().expect("generates");
    let mut drv = SimDriver::new(&topo, 3, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    assert!(drv.sweep(600_000_000_000, |_| {}).expect("up").complete);
    let snap = drv.sm.snapshot().expect("snapshot");
    let lids: Vec<Lid> = snap.end_ports().filter_map(|p| snap.port(p).map(|r| r.lid)).collect();
    // The snapshot's compact path tables are built once, on first use: not per lookup.
    let _ = snap.paths();
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let mut found = 0usize;
    for &s in &lids {
        for &d in &lids {
            found += usize::from(sa::path_between(&snap, s, d).is_some());
        }
    }
    let allocated = ALLOCATIONS.load(Ordering::Relaxed) - before;
    assert_eq!(found, lids.len() * lids.len(), "every pair has a path");
    assert_eq!(allocated, 0, "{allocated} allocations in {found} lookups");
}

//! The SA's PathRecord lookup allocates nothing: a counting global allocator (in this test
//! binary only) sees no allocation across thousands of lookups on a swept fabric (once the
//! snapshot's path tables, built on first use, are there).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use ibsm::core::lids::Guid2Lid;
use ibsm::core::{Sm, SmConfig};
use ibsm::sa;
use ibsm::transport::sim::SimDriver;
use ibsm_mad::Lid;
use ibsm_topology::GenSpec;

struct Counting;

thread_local! {
    /// Allocations made by this thread (each test counts its own: they run side by side).
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: forwards to the system allocator; only counts calls.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
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
    let before = allocations();
    let mut found = 0usize;
    for &s in &lids {
        for &d in &lids {
            found += usize::from(sa::path_between(&snap, s, d).is_some());
        }
    }
    let allocated = allocations() - before;
    assert_eq!(found, lids.len() * lids.len(), "every pair has a path");
    assert_eq!(allocated, 0, "{allocated} allocations in {found} lookups");
}

#[test]
fn a_path_record_get_allocates_its_reply_and_nothing_else() {
    use ibsm_mad::header::Method;
    use ibsm_mad::records::PathRecord;
    let topo = GenSpec::fat_tree(3, 8).generate().expect("generates");
    let mut drv = SimDriver::new(&topo, 3, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    assert!(drv.sweep(600_000_000_000, |_| {}).expect("up").complete);
    let snap = drv.sm.snapshot().expect("snapshot");
    let lids: Vec<Lid> = snap.end_ports().filter_map(|p| snap.port(p).map(|r| r.lid)).collect();
    let mask = PathRecord::COMP_SLID | PathRecord::COMP_DLID;
    let requests: Vec<[u8; 256]> = lids
        .iter()
        .zip(lids.iter().rev())
        .enumerate()
        .map(|(i, (&s, &d))| {
            let q = PathRecord { slid: s, dlid: d, ..PathRecord::default() };
            ibsm_mad::sa::request(Method::Get, mask, i as u64, &q).expect("request")
        })
        .collect();
    let live = sa::Live::new(drv.sm.sm_info(false));
    let mut state = sa::SaState::default();
    let _ = snap.paths();
    let mut answers = Vec::with_capacity(requests.len());
    let before = allocations();
    for (r, &s) in requests.iter().zip(&lids) {
        answers.push(sa::serve(&snap, &mut state, &live, r, s, &sa::Limits::default()).expect("answer"));
    }
    let allocated = allocations() - before;
    assert!(answers.iter().all(|a| a.records == 1 && a.bytes.len() == 256), "one record each");
    assert_eq!(allocated, requests.len() as u64, "one allocation (the reply) per Get");
}

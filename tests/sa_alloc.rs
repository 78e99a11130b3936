//! The SA's PathRecord lookup allocates nothing: a counting global allocator (in this test
//! binary only) sees no allocation across thousands of lookups on a swept fabric (once the
//! snapshot's path tables, built on first use, are there); a Get answered through the core
//! allocates nothing either once the driver hands the sent buffers back (the answer is written
//! into one of them), and says what a fresh buffer would.

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

#[test]
fn a_path_record_get_through_the_core_whose_buffers_come_back_allocates_nothing() {
    use ibsm::core::MadSource;
    use ibsm_mad::header::Method;
    use ibsm_mad::records::PathRecord;
    let topo = GenSpec::fat_tree(3, 8).generate().expect("generates");
    // No rate limit: one requester asks many times within a microsecond of virtual time.
    let cfg = SmConfig { sa_rate_limit: 0, ..SmConfig::default() };
    let mut drv = SimDriver::new(&topo, 3, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    assert!(drv.sweep(600_000_000_000, |_| {}).expect("up").complete);
    let mut sm = drv.sm;
    let snap = sm.snapshot().expect("snapshot");
    let lids: Vec<Lid> = snap.end_ports().filter_map(|p| snap.port(p).map(|r| r.lid)).collect();
    let mask = PathRecord::COMP_SLID | PathRecord::COMP_DLID;
    // Every pair of end ports, in both orders, from the source's port.
    let pairs: Vec<(Lid, Lid)> = lids.iter().flat_map(|&s| lids.iter().map(move |&d| (s, d))).collect();
    let requests: Vec<[u8; 256]> = pairs
        .iter()
        .enumerate()
        .map(|(i, &(s, d))| {
            let q = PathRecord { slid: s, dlid: d, ..PathRecord::default() };
            ibsm_mad::sa::request(Method::Get, mask, i as u64, &q).expect("request")
        })
        .collect();
    // What the SA answers each with, from a fresh buffer of its own.
    let live = sa::Live::new(sm.sm_info(false));
    let expected: Vec<Vec<u8>> = requests
        .iter()
        .zip(&pairs)
        .map(|(r, &(s, _))| {
            sa::serve(&snap, &mut sa::SaState::default(), &live, r, s, &sa::Limits::default()).expect("answer").bytes
        })
        .collect();
    let mut now = sm.now() + 1_000_000;
    let mut answered = Vec::with_capacity(requests.len());
    let mut ask = |sm: &mut Sm, i: usize, now: u64| {
        sm.handle_mad(now, &requests[i], MadSource::lid(pairs[i].0, 1));
        let mut t = sm.poll_transmit(now).expect("an answer");
        answered.push(t.bytes.clone());
        // Sent, as the daemon's MAD thread sends it: the buffer goes back, scribbled over (the
        // next answer written into it must not show any of it).
        t.bytes.fill(0xa5);
        sm.recycle(t.bytes);
    };
    // The first few hundred: the buffers the sweep left in the core's pool go round once.
    let warm = 300.min(requests.len());
    for i in 0..warm {
        now += 1_000;
        ask(&mut sm, i, now);
    }
    let before = allocations();
    for i in warm..requests.len() {
        now += 1_000;
        ask(&mut sm, i, now);
    }
    let allocated = allocations() - before;
    assert_eq!(answered.len(), expected.len());
    for (i, (got, want)) in answered.iter().zip(&expected).enumerate() {
        assert_eq!(got, want, "answer {i}, pair {:?}", pairs[i]);
    }
    assert!(expected.iter().all(|b| b.len() == 256), "one MAD each");
    // (The `answered` copies were made with capacity for every answer above; nothing else.)
    assert_eq!(allocated, (requests.len() - warm) as u64, "only the test's own copies: {allocated}");
}

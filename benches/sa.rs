//! The SA on the 3-level fat tree of 48-port switches (27,648 HCAs, 2,880 switches), swept by
//! the SM core on the simulated fabric: snapshot build, PathRecord lookup in-process, and
//! PathRecord Get requests served from bytes to bytes (`sa::serve`) and through the core
//! (`Sm::handle_mad` and `poll_transmit`). Throughput is per core (criterion runs one thread).
//! `IBSM_SA_BENCH_RADIX=24` runs the 3,456-HCA tree instead.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ibsm::core::lids::Guid2Lid;
use ibsm::core::{MadSource, Sm, SmConfig};
use ibsm::sa::{self, Limits, Live, SaState};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::Lid;
use ibsm_mad::header::Method;
use ibsm_mad::records::PathRecord;
use ibsm_topology::GenSpec;

/// Pairs of end-port LIDs, spread over the fabric by a fixed linear congruential walk.
fn pairs(lids: &[Lid], n: usize) -> Vec<(Lid, Lid)> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        lids[(x >> 33) as usize % lids.len()]
    };
    (0..n).map(|_| (next(), next())).collect()
}

fn sa(c: &mut Criterion) {
    let radix: u8 = std::env::var("IBSM_SA_BENCH_RADIX").ok().and_then(|r| r.parse().ok()).unwrap_or(48);
    let topo = GenSpec::fat_tree(3, radix).generate().expect("generates");
    let mut drv = SimDriver::new(&topo, 1, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    let report = drv.sweep(600_000_000_000, |_| {}).expect("subnet up");
    assert!(report.complete);
    let mut sm = drv.sm;
    sm.set_sa_limits(Limits::default());
    let snap = sm.snapshot().expect("snapshot");
    let lids: Vec<Lid> = snap.end_ports().filter_map(|p| snap.port(p).map(|r| r.lid)).collect();
    let pairs = pairs(&lids, 4096);
    let name = format!("k{radix}");
    eprintln!("{name}: {} switches, {} CAs, {} end ports", report.switches, report.cas, lids.len());

    let mut g = c.benchmark_group("sa");
    g.sample_size(10);
    g.bench_function(format!("snapshot_build/{name}"), |b| b.iter(|| sm.build_snapshot()));
    // What `expected-topology` adds to every heavy sweep: the fabric found as a topology, and
    // its comparison with the plan (here the fabric itself: no difference).
    g.bench_function(format!("cabling_check/{name}"), |b| {
        b.iter(|| {
            let found = ibsm::core::checks::subnet_topology(sm.subnet());
            assert!(ibsm_topology::diff(&topo, &found, false).is_empty());
        });
    });
    // What every routing step of a sweep starts with: the routing view of the discovered subnet.
    g.bench_function(format!("view_build/{name}"), |b| {
        b.iter(|| ibsm::fabric_view::build(&sm.subnet().describe(), 0).view.switches.len());
    });
    // What the first `ibsm status` after a sweep works out (problems.unrouted_lids).
    g.bench_function(format!("unrouted_lids/{name}"), |b| {
        b.iter(|| assert_eq!(sa::snapshot::Unrouted::of(&snap).total, 0));
    });

    g.throughput(Throughput::Elements(pairs.len() as u64));
    g.bench_function(format!("path_lookup/{name}"), |b| {
        b.iter(|| {
            let mut found = 0u32;
            for &(s, d) in &pairs {
                found += u32::from(sa::path_between(&snap, s, d).is_some());
            }
            assert_eq!(found as usize, pairs.len());
        });
    });

    let mask = PathRecord::COMP_SLID | PathRecord::COMP_DLID;
    let requests: Vec<[u8; 256]> = pairs
        .iter()
        .enumerate()
        .map(|(i, &(s, d))| {
            let q = PathRecord { slid: s, dlid: d, ..PathRecord::default() };
            ibsm_mad::sa::request(Method::Get, mask, i as u64, &q).expect("request")
        })
        .collect();
    let live = Live::new(sm.sm_info(false));
    let mut state = SaState::default();
    g.bench_function(format!("serve_path_get/{name}"), |b| {
        b.iter(|| {
            for r in &requests {
                let a = sa::serve(&snap, &mut state, &live, r, Lid(1), &Limits::default()).expect("answer");
                assert_eq!(a.records, 1);
            }
        });
    });
    let mut now = sm.now();
    g.bench_function(format!("core_path_get/{name}"), |b| {
        b.iter(|| {
            // Requesters spread over the fabric, as many clients would be (one requester alone
            // would meet its rate limit).
            for (r, &(s, _)) in requests.iter().zip(&pairs) {
                now += 1_000;
                sm.handle_mad(now, r, MadSource::lid(s, 1));
                let t = sm.poll_transmit(now).expect("an answer");
                assert_eq!(t.bytes.len(), 256);
            }
        });
    });
    g.finish();
}

criterion_group!(benches, sa);
criterion_main!(benches);

//! Cold-to-up bring-up of a generated fat tree by the SM core on the simulated fabric, in one
//! process: discovery, LIDs, port configuration, routing, LFT programming, arming, activating.
//! Wall time is what criterion measures; SMP counts are printed once per fabric.

use criterion::{Criterion, criterion_group, criterion_main};
use ibsm::core::lids::Guid2Lid;
use ibsm::core::{Sm, SmConfig};
use ibsm::transport::sim::SimDriver;
use ibsm_topology::{GenSpec, Topology};

fn bring_up(topo: &Topology) -> ibsm::core::SubnetReport {
    let sm = Sm::new(SmConfig::default(), Guid2Lid::default());
    let mut drv = SimDriver::new(topo, 1, sm, None).expect("attach");
    drv.sweep(600_000_000_000, |_| {}).expect("subnet up")
}

fn bringup(c: &mut Criterion) {
    let mut g = c.benchmark_group("bringup");
    g.sample_size(10);
    for (name, spec) in [("k8-3level", GenSpec::fat_tree(3, 8)), ("k24-3level", GenSpec::fat_tree(3, 24))] {
        let topo = spec.generate().expect("generates");
        let r = bring_up(&topo);
        assert!(r.complete);
        eprintln!(
            "{name}: {} switches, {} CAs: {} SMPs sent, {} LFT blocks, fabric time {} us",
            r.switches,
            r.cas,
            r.smps_sent,
            r.lft_blocks_sent,
            r.total_ns / 1000
        );
        g.bench_function(name, |b| b.iter(|| bring_up(&topo)));
    }
    g.finish();
}

criterion_group!(benches, bringup);
criterion_main!(benches);

//! Scale of the simulated fabric: powering on the 3-level fat tree of 48-port switches (27,648
//! HCAs, 2,880 switches), from a topology and from `.net` text, and answering directed-route
//! SMPs on it. Generating and parsing alone are `ibsm-topology`'s `topology` bench; peak memory
//! is measured separately with `ibsm sim info` (see BENCHMARKS.md).

use criterion::{Criterion, criterion_group, criterion_main};
use ibsm_mad::smp::SmpRepr;
use ibsm_mad::{DrPath, Lid, ids};
use ibsm_sim::fabric::{Dest, Fabric, SimConfig, SimTime};
use ibsm_sim::topology::{GenSpec, NodeKind, Topology};

fn scale(c: &mut Criterion) {
    let mut g = c.benchmark_group("k48-3level");
    g.sample_size(10);
    let spec = GenSpec::fat_tree(3, 48);
    let topo = spec.generate().expect("generates");
    let text = topo.to_net();
    g.bench_function("power-on", |b| b.iter(|| Fabric::new(&topo, SimConfig::default())));
    g.bench_function("parse+power-on", |b| {
        b.iter(|| {
            let t = Topology::parse_str(&text, "k48.net").expect("parses");
            Fabric::new(&t, SimConfig::default())
        });
    });
    // 1,000 directed-route NodeInfo Gets, 3 hops deep, from an HCA.
    let host = topo.nodes.iter().position(|n| n.kind != NodeKind::Switch).expect("a CA");
    g.bench_function("1000-dr-gets-3-hops", |b| {
        let mut f = Fabric::new(&topo, SimConfig::default());
        let agent = f.attach(host, 1).expect("attach");
        let path = DrPath::new(&[1, 30, 30]).expect("path");
        b.iter(|| {
            for tid in 0..1000u64 {
                let smp = SmpRepr::get_dr(&path, ids::attr::NODE_INFO, 0, tid);
                f.send(agent, &smp.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
            }
            let limit = f.now().plus(1_000_000_000);
            f.run_until_idle(limit);
            let mut n = 0;
            while f.recv(agent).is_some() {
                n += 1;
            }
            assert_eq!(n, 1000);
            SimTime(n)
        });
    });
    g.finish();
}

criterion_group!(benches, scale);
criterion_main!(benches);

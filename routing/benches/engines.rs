//! Routing speed: each engine on the 3-level fat tree of 24-port switches (720 switches, 3,456
//! CAs), and with `IBSM_BENCH_K48=1` also on the 48-port one (2,880 switches, 27,648 CAs).
//!
//! Run: `cargo bench -p ibsm-routing --bench engines` (add `IBSM_BENCH_K48=1` for k = 48).

#![allow(missing_docs)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use ibsm_routing::ftree::{FatTree, PortLoads, Shape};
use ibsm_routing::{ENGINE_NAMES, Engine, FabricView, Neighbor, NodeId, engine_by_name};
use ibsm_topology::generators::GenSpec;

fn engines(c: &mut Criterion) {
    let mut radices = vec![24u8];
    if std::env::var_os("IBSM_BENCH_K48").is_some() {
        radices.push(48);
    }
    for k in radices {
        let view = common::view(&common::generate(&GenSpec::fat_tree(3, k)), 0);
        let mut group = c.benchmark_group(format!("fat-tree-3x{k}"));
        group.sample_size(10).measurement_time(Duration::from_secs(if k > 24 { 20 } else { 5 }));
        for name in ENGINE_NAMES {
            let Some(engine) = engine_by_name(name) else { continue };
            if engine.route(&view).is_err() {
                continue;
            }
            group.bench_function(*name, |b| b.iter(|| engine.route(black_box(&view))));
        }
        // What a quick sweep computes after a cable is pulled: the last full route repaired.
        if let Ok(routes) = FatTree.route(&view) {
            group.bench_function("ftree-port-loads", |b| b.iter(|| PortLoads::count(black_box(&routes))));
            let whole = std::sync::Arc::new(view.clone());
            group.bench_function("ftree-shape", |b| b.iter(|| Shape::of(black_box(&whole))));
            for (what, degraded) in [("edge", without_uplink(&view, true)), ("agg", without_uplink(&view, false))] {
                let Some(degraded) = degraded else { continue };
                group.bench_function(format!("ftree-repair-{what}-cable"), |b| {
                    b.iter(|| FatTree.repair(black_box(&view), &routes, &degraded));
                });
                // The same with the route's per-port counts worked out before the fault, as
                // the SM keeps them with its base.
                let loads = PortLoads::count(&routes);
                group.bench_function(format!("ftree-repair-{what}-cable-counted"), |b| {
                    b.iter(|| FatTree.repair_counted(black_box(&view), &routes, Some(&loads), &degraded));
                });
                // And with the fabric's shape kept too: the lost links taken out of it.
                let kept = std::sync::Arc::new(view.clone());
                let shape = Shape::of(&kept);
                group.bench_function(format!("ftree-repair-{what}-cable-shaped"), |b| {
                    b.iter(|| {
                        FatTree.repair_shaped(black_box(&kept), &routes, Some(&loads), shape.as_ref(), &degraded)
                    });
                });
            }
        }
        group.finish();
    }
}

/// `view` less one cable: the first edge switch's (a switch with a CA) first uplink, or (not
/// `edge`) the first uplink of the aggregation switch above it.
fn without_uplink(view: &FabricView, edge: bool) -> Option<FabricView> {
    let has_ca = |s: usize| view.switches[s].ports.iter().flatten().any(|n| matches!(n.node, NodeId::Ca(_)));
    // The first port of switch `s` to a switch without CAs: (port, that switch, its port).
    let up_of = |s: usize| {
        view.switches[s].ports.iter().enumerate().find_map(|(p, n)| match n {
            Some(Neighbor { node: NodeId::Switch(t), port }) if !has_ca(*t) => Some((p, *t, *port)),
            _ => None,
        })
    };
    let leaf = (0..view.switches.len()).find(|&s| has_ca(s))?;
    let (mut p, mut s, mut t, mut tp) = {
        let (p, t, tp) = up_of(leaf)?;
        (p, leaf, t, tp)
    };
    if !edge {
        s = t;
        (p, t, tp) = up_of(s)?;
    }
    let mut v = view.clone();
    *v.switches[s].ports.get_mut(p)? = None;
    *v.switches[t].ports.get_mut(usize::from(tp.0))? = None;
    Some(v)
}

criterion_group!(benches, engines);
criterion_main!(benches);

//! Graph analyses of `routes check`: the credit-loop search over the channel dependency graph
//! (building it on flat arrays; petgraph's strongly connected components against the early-exit
//! depth-first search on flat arrays, and the check's verdict, which runs the flat search and,
//! only if it finds a cycle, the petgraph one) and the fabric's connected components and DOT rendering,
//! on the 3-level fat tree of 24-port switches (720 switches, 3,456 CAs) routed by updn and
//! minhop, and on a 16x16 torus routed by minhop (which has credit loops). With
//! `IBSM_BENCH_K48=1` the graph groups also run on the 48-port tree (2,880 switches, 27,648 CAs).
//!
//! Run: `cargo bench -p ibsm-routing --bench graphs`.

#![allow(missing_docs)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use ibsm_routing::check::{CdgTraffic, ChannelDeps, CheckOptions, CreditLoops, check_with};
use ibsm_routing::components::{components, fabric_graph, to_dot};
use ibsm_routing::{FabricView, Routes, engine_by_name};
use ibsm_topology::generators::GenSpec;

/// The fabrics and routes measured: `(name, view, routes, traffic)`.
fn cases() -> Vec<(String, FabricView, Routes, CdgTraffic)> {
    let tree = common::view(&common::generate(&GenSpec::fat_tree(3, 24)), 0);
    let torus = common::view(&common::generate(&GenSpec::torus(&[16, 16], 2)), 0);
    let route = |v: &FabricView, e: &str| engine_by_name(e).and_then(|e| e.route(v).ok()).unwrap_or_default();
    let minhop = route(&tree, "minhop");
    vec![
        ("ft3x24-updn".to_owned(), tree.clone(), route(&tree, "updn"), CdgTraffic::DataPlane),
        ("ft3x24-minhop".to_owned(), tree.clone(), minhop.clone(), CdgTraffic::DataPlane),
        ("ft3x24-minhop-all".to_owned(), tree, minhop, CdgTraffic::All),
        ("torus16x16-minhop".to_owned(), torus.clone(), route(&torus, "minhop"), CdgTraffic::DataPlane),
    ]
}

/// The k = 48 tree routed by updn, if asked for.
fn k48() -> Option<(String, FabricView, Routes, CdgTraffic)> {
    std::env::var_os("IBSM_BENCH_K48")?;
    let tree = common::view(&common::generate(&GenSpec::fat_tree(3, 48)), 0);
    let routes = engine_by_name("updn")?.route(&tree).ok()?;
    Some(("ft3x48-updn".to_owned(), tree, routes, CdgTraffic::DataPlane))
}

/// The channel dependency graph: building it, then both cycle searches on the built graph.
fn cdg(c: &mut Criterion) {
    let mut group = c.benchmark_group("cdg");
    group.sample_size(10).measurement_time(Duration::from_secs(5));
    for (name, view, routes, traffic) in cases().into_iter().chain(k48()) {
        let deps = ChannelDeps::new(&view, &routes, traffic);
        let (loops, stats) = deps.scc_analysis();
        let cycle = match &loops {
            CreditLoops::Found(c) => format!("a cycle of {}", c.len()),
            _ => "no cycle".to_owned(),
        };
        let dfs = deps.first_cycle_dfs().map_or_else(|| "no cycle".to_owned(), |c| format!("a cycle of {}", c.len()));
        eprintln!("{name}: {stats:?}; scc: {cycle}; dfs: {dfs}");
        group.bench_function(format!("{name}/build"), |b| {
            b.iter(|| ChannelDeps::new(black_box(&view), &routes, traffic));
        });
        group.bench_function(format!("{name}/scc-petgraph"), |b| b.iter(|| black_box(&deps).scc_analysis()));
        group.bench_function(format!("{name}/dfs-flat"), |b| b.iter(|| black_box(&deps).first_cycle_dfs()));
        group.bench_function(format!("{name}/check-verdict"), |b| b.iter(|| black_box(&deps).credit_loops()));
    }
    group.finish();
}

/// Connected components and the DOT text of the cabling.
fn connectivity(c: &mut Criterion) {
    let mut group = c.benchmark_group("components");
    group.sample_size(10).measurement_time(Duration::from_secs(5));
    let mut fabrics: Vec<(String, FabricView)> = Vec::new();
    for (name, view, _, _) in cases().into_iter().chain(k48()) {
        let fabric = name.split('-').next().unwrap_or_default().to_owned();
        if !fabrics.iter().any(|(n, _)| *n == fabric) {
            fabrics.push((fabric, view));
        }
    }
    for (name, view) in &fabrics {
        let g = fabric_graph(view);
        eprintln!(
            "{name}: {} nodes, {} cables, {} component(s)",
            g.node_count(),
            g.edge_count(),
            components(view).count()
        );
        group.bench_function(format!("{name}/graph"), |b| b.iter(|| fabric_graph(black_box(view))));
        group.bench_function(format!("{name}/components"), |b| b.iter(|| components(black_box(view))));
        group.bench_function(format!("{name}/dot"), |b| b.iter(|| to_dot(black_box(view))));
    }
    group.finish();
}

fn check_path(c: &mut Criterion) {
    let mut group = c.benchmark_group("check");
    group.sample_size(10).measurement_time(Duration::from_secs(5));
    for (name, view, routes, traffic) in cases() {
        let walk = CheckOptions { shifts: false, credit_loops: false, cdg_traffic: traffic, max_examples: 10 };
        let cdg = CheckOptions { credit_loops: true, ..walk };
        group.bench_function(format!("{name}/walk"), |b| b.iter(|| check_with(black_box(&view), &routes, &walk)));
        group.bench_function(format!("{name}/walk+cdg"), |b| b.iter(|| check_with(black_box(&view), &routes, &cdg)));
    }
    group.finish();
}

criterion_group!(benches, check_path, cdg, connectivity);
criterion_main!(benches);

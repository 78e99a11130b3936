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
use ibsm_routing::{ENGINE_NAMES, engine_by_name};
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
        group.finish();
    }
}

criterion_group!(benches, engines);
criterion_main!(benches);

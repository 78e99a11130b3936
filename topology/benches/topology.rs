//! Scale of the fabric description: generating and parsing the 3-level fat tree of 48-port
//! switches (27,648 HCAs, 2,880 switches). Powering it on in the simulator is `ibsm-sim`'s
//! `scale` bench; peak memory is measured with `ibsm sim info` (see BENCHMARKS.md).

use criterion::{Criterion, criterion_group, criterion_main};
use ibsm_topology::{GenSpec, Topology};

fn scale(c: &mut Criterion) {
    let mut g = c.benchmark_group("k48-3level");
    g.sample_size(10);
    let spec = GenSpec::fat_tree(3, 48);
    g.bench_function("generate", |b| b.iter(|| spec.generate().expect("generates")));
    let text = spec.generate().expect("generates").to_net();
    g.bench_function("parse-net", |b| b.iter(|| Topology::parse_str(&text, "k48.net").expect("parses")));
    g.finish();
}

criterion_group!(benches, scale);
criterion_main!(benches);

//! The `net_parse` fuzz target in its stable, bounded form (issue 23, RB1): the target's own
//! body (`topology/fuzz/bodies/net_parse.rs`) on inputs from a fixed seed, generated fabrics
//! written as `.net` text and mutations of the example fabrics and the `ibnetdiscover` captures.
//! It runs in `cargo test`, where the fuzz target (nightly only) cannot.

#[path = "../fuzz/bodies/net_parse.rs"]
mod body;
#[path = "../../fuzz/seeded.rs"]
mod seeded;

use ibsm_topology::{GenSpec, Topology};
use seeded::Rng;

const ITERATIONS: usize = 30_000;

/// The example fabrics and the captures, each at most 16 KiB (a longer file is cut there: the
/// mutations need a prefix, not the whole of a large fabric).
fn corpus() -> Vec<Vec<u8>> {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut out = Vec::new();
    for dir in [format!("{root}/../examples/fabrics"), format!("{root}/tests/data")] {
        let mut paths: Vec<_> =
            std::fs::read_dir(&dir).expect("corpus dir").map(|e| e.expect("entry").path()).collect();
        paths.sort();
        for p in paths.iter().filter(|p| p.extension().is_some_and(|e| e == "net" || e == "ibnetdiscover")) {
            let mut bytes = std::fs::read(p).expect("corpus file");
            bytes.truncate(16 << 10);
            out.push(bytes);
        }
    }
    assert!(out.len() >= 10, "{} corpus files", out.len());
    out
}

/// A small generated fabric (fat tree, torus, mesh, random), written as a `.net` file.
fn structured(rng: &mut Rng) -> Vec<u8> {
    let spec = match rng.below(4) {
        0 => GenSpec::fat_tree(2, *rng.pick(&[2u8, 4])),
        1 => GenSpec::torus(&[2 + rng.below(2) as u16, 2 + rng.below(2) as u16], 1 + rng.below(2) as u8),
        2 => GenSpec::mesh(&[1 + rng.below(3) as u16, 2], 1 + rng.below(2) as u8),
        _ => GenSpec::random(2 + rng.below(5), 8, 1 + rng.below(3) as u8, rng.below(8), rng.next_u64()),
    };
    spec.generate().map(|t| t.to_net().into_bytes()).unwrap_or_default()
}

#[test]
fn net_parse_never_panics_and_round_trips_on_seeded_inputs() {
    let corpus = corpus();
    let mut parsed = 0usize;
    seeded::run("net_parse", 0x1b5a_0002, ITERATIONS, &corpus, 32 << 10, structured, |data| {
        body::check(data);
        if std::str::from_utf8(data).is_ok_and(|t| Topology::parse_str(t, "x.net").is_ok()) {
            parsed += 1;
        }
    });
    eprintln!("{ITERATIONS} inputs, {parsed} parsed and round-tripped");
    // Both sides of the parser are reached: many inputs parse (and so round-trip), many do not.
    assert!(parsed > ITERATIONS / 4 && parsed < ITERATIONS, "{parsed} of {ITERATIONS} inputs parsed");
}

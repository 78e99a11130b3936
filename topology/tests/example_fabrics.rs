//! The example fabrics in `examples/fabrics/` are generator output: each must parse, describe
//! the shape its name says, and stay byte-identical to what its generator spec produces now.
//! Regenerate them after a deliberate format or generator change with
//! `IBSM_REGEN_EXAMPLES=1 cargo test -p ibsm-topology --test example_fabrics`.

use std::path::PathBuf;

use ibsm_topology::Topology;
use ibsm_topology::generators::{FatTree, GenSpec};

/// File name, generator spec, (switches, CAs, links).
fn examples() -> Vec<(&'static str, GenSpec, (usize, usize, usize))> {
    vec![
        ("fat-tree-2l-k4.net", GenSpec::fat_tree(2, 4), (6, 8, 16)),
        ("fat-tree-3l-k4.net", GenSpec::fat_tree(3, 4), (20, 16, 48)),
        ("fat-tree-2l-k6-2to1.net", GenSpec::FatTree(FatTree::new(2, 6).oversubscribed(2)), (8, 24, 36)),
        ("fat-tree-3l-k4-degraded.net", GenSpec::FatTree(FatTree::new(3, 4).degraded(3, 2, 42)), (18, 16, 37)),
        ("rail-k4-r2.net", GenSpec::rail_fat_tree(4, 2), (6, 8, 16)),
        ("torus-3x3.net", GenSpec::torus(&[3, 3], 1), (9, 9, 27)),
        ("mesh-2x2x2.net", GenSpec::mesh(&[2, 2, 2], 1), (8, 8, 20)),
        ("random-8sw.net", GenSpec::random(8, 6, 1, 12, 1), (8, 8, 20)),
    ]
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/fabrics")
}

#[test]
fn examples_parse_and_match_their_generators() {
    let regen = std::env::var_os("IBSM_REGEN_EXAMPLES").is_some();
    for (file, spec, (switches, cas, links)) in examples() {
        let generated = spec.generate().unwrap();
        let path = dir().join(file);
        if regen {
            std::fs::write(&path, generated.to_net()).unwrap();
        }
        let loaded = Topology::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((loaded.switch_count(), loaded.ca_count(), loaded.link_count()), (switches, cas, links), "{file}");
        assert_eq!(loaded, generated, "{file} differs from its generator; regenerate (see module docs)");
    }
}

#[test]
fn readme_lists_every_example() {
    let readme = std::fs::read_to_string(dir().join("README.md")).unwrap();
    for (file, ..) in examples() {
        assert!(readme.contains(file), "README.md does not mention {file}");
    }
}

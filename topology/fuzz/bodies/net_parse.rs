//! The body of the `net_parse` fuzz target, shared with its stable form
//! (`topology/tests/fuzz_seeded.rs`): `Topology::parse_str` on arbitrary text must never panic,
//! and whatever parses must write (`to_net`) and parse back to the same topology.

use ibsm_topology::Topology;

/// Parses `data` as a `.net` file and checks the round trip; panics when a check fails.
pub fn check(data: &[u8]) {
    let Ok(text) = core::str::from_utf8(data) else { return };
    if let Ok(topo) = Topology::parse_str(text, "fuzz.net") {
        let back = Topology::parse_str(&topo.to_net(), "again.net");
        assert_eq!(back.as_ref(), Ok(&topo));
    }
}

//! Fuzz target: `Topology::parse_str` on arbitrary text must never panic, and whatever parses
//! must write (`to_net`) and parse back to the same topology.

#![no_main]

use ibsm_topology::Topology;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = core::str::from_utf8(data) else { return };
    if let Ok(topo) = Topology::parse_str(text, "fuzz.net") {
        let back = Topology::parse_str(&topo.to_net(), "again.net");
        assert_eq!(back.as_ref(), Ok(&topo));
    }
});

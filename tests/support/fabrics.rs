//! Fabrics made from the examples for a test: cabling changed on purpose, nodes added.

use std::fmt::Write as _;

use ibsm_topology::{Peer, Topology};

/// `fat-tree-2l-k4.net` (`t`) with leaf-0's and leaf-1's cables to spine-0 swapped at the
/// spine: leaf-0[3] in spine-0[2], leaf-1[3] in spine-0[1].
pub fn spine0_uplinks_swapped(t: &Topology) -> Topology {
    let mut t = t.clone();
    let (s0, l0, l1) =
        (t.find("spine-0").expect("spine"), t.find("leaf-0").expect("leaf"), t.find("leaf-1").expect("leaf"));
    let attrs = t.nodes[s0].peer(1).expect("cabled").attrs;
    t.nodes[s0].links[1] = Some(Peer { node: l1, port: 3, attrs });
    t.nodes[s0].links[2] = Some(Peer { node: l0, port: 3, attrs });
    t.nodes[l0].links[3] = Some(Peer { node: s0, port: 2, attrs });
    t.nodes[l1].links[3] = Some(Peer { node: s0, port: 1, attrs });
    t
}

/// `fat-tree-2l-k4.net` with one storage CA on each spine (port 5): CAs on two levels, as
/// `.net` text. The storage ports' GUIDs are 0x30000000000001 and 0x30000000000101.
pub fn with_storage() -> String {
    let text = std::fs::read_to_string(super::cmd::root().join("examples/fabrics/fat-tree-2l-k4.net")).expect("fabric");
    let mut out = String::new();
    let mut spine = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("Switch\t4 \"spine-") {
            spine = name.strip_suffix('"').map(str::to_owned);
            out.push_str(&line.replace("Switch\t4", "Switch\t5"));
            out.push('\n');
            continue;
        }
        if line.is_empty()
            && let Some(s) = spine.take()
        {
            let _ = writeln!(out, "[5]\t\"stor-{s}\"[1]");
        }
        out.push_str(line);
        out.push('\n');
    }
    for s in 0..2 {
        let _ = write!(
            out,
            "\nvendid=0x2c9\ndevid=0x101b\nsysimgguid=0x30000000000{s}00\ncaguid=0x30000000000{s}00\nCa\t1 \
             \"stor-{s}\"\n[1](30000000000{s}01)\t\"spine-{s}\"[5]\n"
        );
    }
    out
}

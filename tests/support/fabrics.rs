//! Fabrics made from the examples for a test: cabling changed on purpose.

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

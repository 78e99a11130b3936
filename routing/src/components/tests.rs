//! Connectivity and DOT on hand-built fabrics.

use ibsm_mad::{Guid, Lid, PortNum};

use super::*;
use crate::{CaPortView, CaView, SwitchView};

#[allow(clippy::unnecessary_wraps)]
fn nb(node: NodeId, port: u8) -> Option<Neighbor> {
    Some(Neighbor { node, port: PortNum(port) })
}

/// Two switches cabled port 3 to port 3, each with two CAs on ports 1 and 2: switch `i` has
/// CAs `2i` and `2i + 1`.
fn dumbbell() -> FabricView {
    let switch = |i: usize| SwitchView {
        guid: Guid(0x10 + i as u64),
        lid: Lid(1 + i as u16),
        ports: vec![None, nb(NodeId::Ca(2 * i), 1), nb(NodeId::Ca(2 * i + 1), 1), nb(NodeId::Switch(1 - i), 3)],
    };
    let ca = |c: usize| CaView {
        guid: Guid(0x20 + c as u64),
        ports: vec![CaPortView {
            num: PortNum(1),
            lid: Lid(3 + c as u16),
            neighbor: nb(NodeId::Switch(c / 2), 1 + (c % 2) as u8),
        }],
    };
    FabricView { switches: vec![switch(0), switch(1)], cas: (0..4).map(ca).collect(), lmc: 0 }
}

#[test]
fn connected_fabric_is_one_component() {
    let v = dumbbell();
    let g = fabric_graph(&v);
    assert_eq!((g.node_count(), g.edge_count()), (6, 5), "each cable once");
    let c = components(&v);
    assert_eq!(c.count(), 1);
    assert!(c.is_connected());
    assert_eq!(c.sizes, vec![ComponentSize { switches: 2, cas: 4 }]);
    assert_eq!(c.count(), petgraph::algo::connected_components(&g));
}

#[test]
fn cutting_the_only_link_between_halves_gives_two_components() {
    let mut v = dumbbell();
    v.switches[0].ports[3] = None;
    v.switches[1].ports[3] = None;
    let c = components(&v);
    assert_eq!(c.count(), 2);
    assert!(!c.is_connected());
    assert_eq!(c.of_switch, vec![0, 1]);
    assert_eq!(c.of_ca, vec![0, 0, 1, 1]);
    assert_eq!(c.sizes, vec![ComponentSize { switches: 1, cas: 2 }; 2]);
    assert_eq!(c.count(), petgraph::algo::connected_components(&fabric_graph(&v)));
    // A CA unplugged from both ends stands alone.
    v.cas[3].ports[0].neighbor = None;
    v.switches[1].ports[2] = None;
    let c = components(&v);
    assert_eq!(c.count(), 3);
    assert_eq!(c.sizes[2], ComponentSize { switches: 0, cas: 1 });
}

#[test]
fn one_sided_and_dangling_cables() {
    // Listed from one end only: still a cable, and still only one edge.
    let mut v = dumbbell();
    v.switches[1].ports[3] = None;
    assert_eq!(fabric_graph(&v).edge_count(), 5);
    assert_eq!(components(&v).count(), 1);
    // Pointing outside the view: ignored, no panic.
    v.switches[0].ports[3] = nb(NodeId::Switch(9), 1);
    v.cas[0].ports[0].neighbor = nb(NodeId::Ca(40), 1);
    assert_eq!(components(&v).count(), 2);
    let empty = components(&FabricView::default());
    assert_eq!((empty.count(), empty.is_connected()), (0, true));
}

#[test]
fn dot_names_every_node_and_cable() {
    let v = dumbbell();
    let dot = to_dot(&v);
    assert!(dot.starts_with("graph {"), "{dot}");
    for sw in &v.switches {
        assert!(dot.contains(&format!("switch {}\\nLID {}", sw.guid, sw.lid)), "{dot}");
    }
    for ca in &v.cas {
        assert!(dot.contains(&format!("CA {}", ca.guid)), "{dot}");
    }
    assert_eq!(dot.lines().filter(|l| l.contains(" -- ")).count(), 5, "{dot}");
    assert!(dot.contains("0 -- 1 [ taillabel = \"3\", headlabel = \"3\"]"), "{dot}");
}

//! Test support: a routing [`FabricView`] built straight from a simulator topology, with LIDs
//! assigned sequentially (switches first, then CA ports, each aligned to `2^lmc`), and the
//! generator topologies every engine is tested on.

#![allow(dead_code)] // each test binary uses a different part

use ibsm_mad::{Lid, PortNum};
use ibsm_routing::{CaPortView, CaView, FabricView, Neighbor, NodeId, SwitchView};
use ibsm_topology::generators::{Degrade, FatTree, GenSpec, RailFatTree};
use ibsm_topology::{NodeKind, Topology};

/// The view of `t` with sequential LIDs.
pub fn view(t: &Topology, lmc: u8) -> FabricView {
    let mut ids = Vec::with_capacity(t.nodes.len());
    let (mut sw, mut ca) = (0, 0);
    for n in &t.nodes {
        if n.kind == NodeKind::Switch {
            ids.push(NodeId::Switch(sw));
            sw += 1;
        } else {
            ids.push(NodeId::Ca(ca));
            ca += 1;
        }
    }
    let step = 1u16 << lmc.min(7);
    let mut next_lid = step;
    let mut lid = || {
        let l = Lid(next_lid);
        next_lid += step;
        l
    };
    let mut v = FabricView { switches: Vec::new(), cas: Vec::new(), lmc };
    for n in t.nodes.iter().filter(|n| n.kind == NodeKind::Switch) {
        let ports = n
            .links
            .iter()
            .enumerate()
            .map(|(p, l)| if p == 0 { None } else { l.map(|l| Neighbor { node: ids[l.node], port: PortNum(l.port) }) })
            .collect();
        v.switches.push(SwitchView { guid: n.node_guid, lid: lid(), ports });
    }
    for n in t.nodes.iter().filter(|n| n.kind != NodeKind::Switch) {
        let ports = (1..=n.num_ports)
            .filter_map(|p| {
                let l = n.peer(p)?;
                Some(CaPortView {
                    num: PortNum(p),
                    lid: lid(),
                    neighbor: Some(Neighbor { node: ids[l.node], port: PortNum(l.port) }),
                })
            })
            .collect();
        v.cas.push(CaView { guid: n.node_guid, ports });
    }
    v
}

/// Generates `spec` (panics on a bad spec: test input).
pub fn generate(spec: &GenSpec) -> Topology {
    spec.generate().unwrap()
}

/// Named test fabrics: every generator shape, small enough for exhaustive checks.
pub fn zoo() -> Vec<(String, Topology)> {
    let specs: Vec<(&str, GenSpec)> = vec![
        ("fat-tree 2x8", GenSpec::fat_tree(2, 8)),
        ("fat-tree 3x4", GenSpec::fat_tree(3, 4)),
        ("fat-tree 3x8", GenSpec::fat_tree(3, 8)),
        ("fat-tree 2x12 2:1", GenSpec::FatTree(FatTree::new(2, 12).oversubscribed(2))),
        ("fat-tree 3x6 2:1", GenSpec::FatTree(FatTree::new(3, 6).oversubscribed(2))),
        ("fat-tree 2x8 degraded", GenSpec::FatTree(FatTree::new(2, 8).degraded(5, 1, 3))),
        ("fat-tree 3x8 degraded", GenSpec::FatTree(FatTree::new(3, 8).degraded(12, 3, 11))),
        ("fat-tree 3x8 degraded b", GenSpec::FatTree(FatTree::new(3, 8).degraded(30, 2, 5))),
        ("rail 8x2", GenSpec::rail_fat_tree(8, 2)),
        ("rail 8x4", GenSpec::rail_fat_tree(8, 4)),
        (
            "rail 8x2 degraded",
            GenSpec::RailFatTree(RailFatTree {
                degrade: Degrade { links: 4, switches: 1, seed: 9 },
                ..RailFatTree::new(8, 2)
            }),
        ),
        (
            "rail 8x2 degraded b",
            GenSpec::RailFatTree(RailFatTree {
                degrade: Degrade { links: 3, switches: 0, seed: 4 },
                ..RailFatTree::new(8, 2)
            }),
        ),
        ("torus 4x4", GenSpec::torus(&[4, 4], 2)),
        ("torus 3x3x3", GenSpec::torus(&[3, 3, 3], 1)),
        ("torus 8", GenSpec::torus(&[8], 1)),
        ("mesh 5x3", GenSpec::mesh(&[5, 3], 2)),
        ("random 20", GenSpec::random(20, 8, 2, 40, 1)),
        ("random 30", GenSpec::random(30, 12, 3, 70, 42)),
        ("random tree 12", GenSpec::random(12, 6, 1, 11, 7)),
    ];
    specs.into_iter().map(|(n, s)| (n.to_owned(), generate(&s))).collect()
}

//! Test support: a routing [`FabricView`] built straight from a simulator topology, with LIDs
//! assigned sequentially (switches first, then CA ports, each aligned to `2^lmc`), and the
//! generator topologies every engine is tested on (and a dragonfly, which has no generator).

#![allow(dead_code)] // each test binary uses a different part

use ibsm_mad::{Guid, Lid, PortNum};
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

/// A dragonfly: `groups` groups of `a` switches, all-to-all inside a group, one global link
/// between every two groups (spread over the group's switches), `p` hosts per switch.
#[allow(clippy::many_single_char_names)] // the dragonfly's usual names: a switches per group, p hosts
pub fn dragonfly(groups: usize, a: usize, p: usize) -> FabricView {
    let n = groups * a;
    let mut ports: Vec<Vec<Option<Neighbor>>> = vec![vec![None]; n];
    let link = |ports: &mut Vec<Vec<Option<Neighbor>>>, x: usize, y: usize| {
        let px = ports[x].len() as u8;
        let py = ports[y].len() as u8;
        ports[x].push(Some(Neighbor { node: NodeId::Switch(y), port: PortNum(py) }));
        ports[y].push(Some(Neighbor { node: NodeId::Switch(x), port: PortNum(px) }));
    };
    for g in 0..groups {
        for i in 0..a {
            for j in i + 1..a {
                link(&mut ports, g * a + i, g * a + j);
            }
        }
    }
    let mut k = 0;
    for g in 0..groups {
        for h in g + 1..groups {
            link(&mut ports, g * a + k % a, h * a + (k / a) % a);
            k += 1;
        }
    }
    let mut cas = Vec::new();
    let mut lid = n as u16 + 1;
    for (s, sp) in ports.iter_mut().enumerate() {
        for _ in 0..p {
            let c = cas.len();
            sp.push(Some(Neighbor { node: NodeId::Ca(c), port: PortNum(1) }));
            let port = PortNum(sp.len() as u8 - 1);
            cas.push(CaView {
                guid: Guid(0x1000 + c as u64),
                ports: vec![CaPortView {
                    num: PortNum(1),
                    lid: Lid(lid),
                    neighbor: Some(Neighbor { node: NodeId::Switch(s), port }),
                }],
            });
            lid += 1;
        }
    }
    let switches = ports
        .into_iter()
        .enumerate()
        .map(|(s, ports)| SwitchView { guid: Guid(0x10 + s as u64), lid: Lid(1 + s as u16), ports })
        .collect();
    FabricView { switches, cas, lmc: 0 }
}

//! Fat-tree routing on hand-built fabrics: what it accepts, what it declines and why.

use ibsm_mad::{Guid, Lid, PortNum};

use super::*;
use crate::check::{CreditLoops, check};
use crate::{CaPortView, CaView, Neighbor, NodeId, SwitchView};

#[allow(clippy::unnecessary_wraps)]
fn nb(node: NodeId, port: u8) -> Option<Neighbor> {
    Some(Neighbor { node, port: PortNum(port) })
}

/// `leaves` leaves with `hosts` CAs each and `spines` spines, each leaf linked to the spines
/// listed in `links[leaf]`. Leaf `l` port `hosts + 1 + j` goes to spine `j`, spine port `l + 1`
/// to leaf `l`. Switch LIDs first, then CA LIDs, from 1.
fn two_level(hosts: usize, spines: usize, links: &[Vec<usize>]) -> FabricView {
    let leaves = links.len();
    let mut switches = Vec::new();
    for (l, up) in links.iter().enumerate() {
        let mut ports = vec![None];
        ports.extend((0..hosts).map(|h| nb(NodeId::Ca(l * hosts + h), 1)));
        ports.extend(
            (0..spines).map(|j| if up.contains(&j) { nb(NodeId::Switch(leaves + j), l as u8 + 1) } else { None }),
        );
        switches.push(SwitchView { guid: Guid(0x100 + l as u64), lid: Lid(1 + l as u16), ports });
    }
    for j in 0..spines {
        let mut ports = vec![None];
        ports.extend(links.iter().map(|up| if up.contains(&j) { nb(NodeId::Switch(0), 0) } else { None }));
        // Fix the leaf indices (placeholder above keeps the closure simple).
        for (l, p) in ports.iter_mut().enumerate().skip(1) {
            if let Some(n) = p {
                *n = Neighbor { node: NodeId::Switch(l - 1), port: PortNum((hosts + 1 + j) as u8) };
            }
        }
        switches.push(SwitchView { guid: Guid(0x200 + j as u64), lid: Lid((leaves + 1 + j) as u16), ports });
    }
    let first_ca = (leaves + spines + 1) as u16;
    let cas = (0..leaves * hosts)
        .map(|i| CaView {
            guid: Guid(0x300 + i as u64),
            ports: vec![CaPortView {
                num: PortNum(1),
                lid: Lid(first_ca + i as u16),
                neighbor: nb(NodeId::Switch(i / hosts), (1 + i % hosts) as u8),
            }],
        })
        .collect();
    FabricView { switches, cas, lmc: 0 }
}

#[test]
fn complete_two_level_tree_is_contention_free() {
    let v = two_level(3, 3, &[vec![0, 1, 2], vec![0, 1, 2], vec![0, 1, 2], vec![0, 1, 2]]);
    let r = FatTree.route(&v).unwrap();
    let rep = check(&v, &r);
    assert!(rep.is_clean(), "{rep}");
    assert_eq!(rep.shifts.unwrap().worst, 1, "{rep}");
    assert_eq!(rep.hops.non_minimal, 0);
    // Top-to-top routes exist (down and back up), and nothing loops.
    assert_eq!(rep.switch_reachable, rep.switch_pairs);
}

#[test]
fn the_hosts_of_a_leaf_go_down_distinct_spines() {
    let v = two_level(3, 3, &[vec![0, 1, 2], vec![0, 1, 2]]);
    let r = FatTree.route(&v).unwrap();
    // Leaf 0 reaches the three CAs of leaf 1 (LIDs 9, 10, 11) over three different spines.
    let mut ports: Vec<u8> = (9..12).map(|l| r.tables[0].port_for(Lid(l)).unwrap().0).collect();
    ports.sort_unstable();
    assert_eq!(ports, vec![4, 5, 6]);
}

#[test]
fn degraded_tree_is_routed_around_missing_links() {
    let v = two_level(2, 3, &[vec![0, 1, 2], vec![1, 2], vec![0, 2], vec![0, 1, 2]]);
    let r = FatTree.route(&v).unwrap();
    let rep = check(&v, &r);
    assert_eq!(rep.reachable, rep.pairs, "{rep}");
    assert_eq!(rep.loops, 0);
    assert_eq!(rep.hops.non_minimal, 0, "{rep}");
    assert_eq!(rep.switch_reachable, rep.switch_pairs, "{rep}");
}

#[test]
fn declines_with_a_reason() {
    // Two leaves whose only common neighbour path is leaf-spine-leaf-spine-leaf.
    let v = two_level(1, 2, &[vec![0], vec![1], vec![0, 1]]);
    let e = FatTree.route_typed(&v).unwrap_err();
    assert!(matches!(e, FtreeError::NotFatTree(NotFatTree::NoUpDownPath { .. })), "{e}");
    let e = FatTree.route(&v).unwrap_err();
    assert!(
        matches!(&e, RoutingError::Declined { engine: "ftree", reason } if reason.contains("not a fat tree")),
        "{e}"
    );

    // A leaf linked to a leaf.
    let mut v = two_level(1, 1, &[vec![0], vec![0]]);
    v.switches[0].ports.push(nb(NodeId::Switch(1), 4));
    v.switches[1].ports.push(nb(NodeId::Switch(0), 4));
    assert!(matches!(FatTree.route_typed(&v), Err(FtreeError::NotFatTree(NotFatTree::SameLevelLink { level: 0, .. }))));

    // No CA at all.
    let mut v = two_level(1, 1, &[vec![0]]);
    v.cas.clear();
    v.switches[0].ports[1] = None;
    assert_eq!(FatTree.route_typed(&v), Err(FtreeError::NotFatTree(NotFatTree::NoLeaves)));
}

#[test]
fn oversubscribed_leaf_shares_uplinks_evenly() {
    // 4 hosts over 2 spines: 2:1.
    let v = two_level(4, 2, &[vec![0, 1], vec![0, 1], vec![0, 1]]);
    let r = FatTree.route(&v).unwrap();
    let rep = check(&v, &r);
    assert!(rep.is_clean() || matches!(rep.credit_loops, CreditLoops::None), "{rep}");
    assert_eq!(rep.reachable, rep.pairs);
    assert_eq!(rep.shifts.unwrap().worst, 2, "{rep}");
}

#[test]
fn a_spine_cut_off_from_a_leaf_answers_it_through_one_valley_switch() {
    // Leaf 0 lost its cable to spine 1: spine 1 reaches leaf 0's hosts only down and up again.
    let v = two_level(2, 3, &[vec![0, 2], vec![0, 1, 2], vec![0, 1, 2], vec![0, 1, 2]]);
    let idx = Indexed::new(&v).unwrap();
    let tree = Tree::new(&v, &idx).unwrap();
    let tops = valley::Tops::new(&tree);
    let spine1 = 5;
    assert!(!tops.meet(0, spine1) && tops.meet(1, spine1) && tops.meet(0, 1));
    assert!(tops.cut_off(&tree, 0) && !tops.cut_off(&tree, 1), "only leaf 0 is cut off");
    let r = FatTree.route(&v).unwrap();
    // Spine 1 answers leaf 0's hosts (LIDs 8, 9) down to leaf 1, the valley switch (its port 2),
    // and leaf 0 reaches spine 1 (LID 6) through leaf 1 too: up to a spine, down to leaf 1.
    for lid in [8, 9] {
        assert_eq!(r.tables[spine1].port_for(Lid(lid)), Some(PortNum(2)), "LID {lid}");
    }
    let up = r.tables[0].port_for(Lid(6)).unwrap();
    let spine = match v.switches[0].ports[usize::from(up.0)].unwrap().node {
        NodeId::Switch(s) => s,
        NodeId::Ca(_) => panic!("leaf 0 sends spine 1's LID to a CA"),
    };
    assert_eq!(r.tables[spine].port_for(Lid(6)).map(|p| p.0), Some(1 + 1), "down to leaf 1 from spine {spine}");
    let rep = check(&v, &r);
    assert!(rep.is_clean(), "the whole data plane is free of credit loops: {rep}");
}

#[test]
fn given_roots_are_kept_when_they_are_the_top_level_and_declined_otherwise() {
    let v = two_level(2, 3, &[vec![0, 1, 2], vec![0, 1, 2], vec![0, 1, 2]]);
    let spines = vec![Guid(0x200), Guid(0x201), Guid(0x202)];
    assert_eq!(FatTree.roots(&v).unwrap(), spines);
    // The spines, in any order: the same tables as ftree's own.
    let rooted = Rooted::new(vec![Guid(0x202), Guid(0x200), Guid(0x201)]);
    assert_eq!(rooted.route(&v).unwrap(), FatTree.route(&v).unwrap());
    // A leaf, or only some spines: declined, saying both lists.
    for wrong in [vec![Guid(0x100)], vec![Guid(0x200), Guid(0x201)]] {
        let err = Rooted::new(wrong).route(&v).unwrap_err().to_string();
        assert!(err.contains("root GUID file names") && err.contains("top level is"), "{err}");
    }
    // In a chain, up/down takes over with the given root.
    let opts = crate::EngineOptions { roots: vec![Guid(0x100)], ..crate::EngineOptions::default() };
    let out = crate::chain::Chain::from_names_with(&["ftree", "updn"], &opts).unwrap().run(&v).unwrap();
    assert_eq!(out.engine, "updn");
    assert_eq!(out.declined.len(), 1);
    assert_eq!(out.routes, crate::updn::UpDown::with_roots(vec![Guid(0x100)]).route(&v).unwrap());
    assert_ne!(out.routes, crate::updn::UpDown::auto().route(&v).unwrap(), "a leaf root changes the routes");
}

//! Looking at a fabric: switch tiers, the nodes grouped by tier, and a Graphviz DOT drawing
//! ranked by tier.
//!
//! A switch's tier is its distance in switch hops from the nearest switch that has a CA or
//! router cabled to it (those are tier 1; CAs and routers are tier 0); a switch no CA reaches
//! through switches has no tier. Pure text out; rendering is Graphviz's business (`dot -Tsvg`).

use std::collections::VecDeque;
use std::fmt::Write as _;

use crate::{NodeKind, Topology};

/// Each node's tier (index = node index): 0 for CAs and routers, 1 for switches with one
/// cabled, and so on up; `None` for a switch cut off from every CA.
pub fn tiers(t: &Topology) -> Vec<Option<u8>> {
    let mut tier: Vec<Option<u8>> = vec![None; t.nodes.len()];
    let mut queue = VecDeque::new();
    for (i, n) in t.nodes.iter().enumerate() {
        if n.kind != NodeKind::Switch {
            tier[i] = Some(0);
            for p in 1..=n.num_ports {
                if let Some(peer) = n.peer(p)
                    && t.nodes.get(peer.node).is_some_and(|s| s.kind == NodeKind::Switch)
                    && tier[peer.node].is_none()
                {
                    tier[peer.node] = Some(1);
                    queue.push_back(peer.node);
                }
            }
        }
    }
    while let Some(i) = queue.pop_front() {
        let next = tier[i].map_or(1, |x| x.saturating_add(1));
        for p in 1..=t.nodes[i].num_ports {
            if let Some(peer) = t.nodes[i].peer(p)
                && t.nodes.get(peer.node).is_some_and(|s| s.kind == NodeKind::Switch)
                && tier[peer.node].is_none()
            {
                tier[peer.node] = Some(next);
                queue.push_back(peer.node);
            }
        }
    }
    tier
}

/// Node indexes grouped by tier, highest first: the switch tiers, then the CAs and routers
/// (tier 0), then the switches without a tier (`None`); within a group, by name. Empty groups
/// are left out.
pub fn by_tier(t: &Topology) -> Vec<(Option<u8>, Vec<usize>)> {
    let tier = tiers(t);
    let mut levels: Vec<Option<u8>> =
        tier.iter().copied().collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    levels.sort_by_key(|l| std::cmp::Reverse(l.map_or(-1, i16::from)));
    levels
        .into_iter()
        .map(|l| {
            let mut members: Vec<usize> = (0..t.nodes.len()).filter(|&i| tier[i] == l).collect();
            members.sort_by(|&a, &b| t.nodes[a].name.cmp(&t.nodes[b].name));
            (l, members)
        })
        .collect()
}

fn quote(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The fabric as Graphviz DOT: one node per switch (boxes) and CA (ellipses), one edge per
/// cable labelled with its ports, nodes of a tier on one rank (highest tier at the top).
pub fn to_dot(t: &Topology) -> String {
    let tier = tiers(t);
    let mut out = String::from("graph fabric {\n  rankdir=BT;\n  node [fontsize=10];\n");
    let top = tier.iter().flatten().copied().max().unwrap_or(0);
    for level in (0..=top).rev() {
        let members: Vec<usize> = (0..t.nodes.len()).filter(|&i| tier[i] == Some(level)).collect();
        if members.is_empty() {
            continue;
        }
        let _ = writeln!(out, "  {{ rank=same; // tier {level}");
        for i in members {
            let n = &t.nodes[i];
            let shape = if n.kind == NodeKind::Switch { "box" } else { "ellipse" };
            let _ = writeln!(out, "    n{i} [label=\"{}\", shape={shape}];", quote(&n.name));
        }
        out.push_str("  }\n");
    }
    for (i, n) in t.nodes.iter().enumerate().filter(|(i, _)| tier[*i].is_none()) {
        let _ = writeln!(out, "  n{i} [label=\"{}\", shape=box, style=dashed];", quote(&n.name));
    }
    for (i, n) in t.nodes.iter().enumerate() {
        for p in 1..=n.num_ports {
            let Some(peer) = n.peer(p) else { continue };
            // Each cable once, from the lower (node, port) end.
            if (i, p) < (peer.node, peer.port) {
                let _ = writeln!(
                    out,
                    "  n{i} -- n{} [taillabel=\"{p}\", headlabel=\"{}\", fontsize=8];",
                    peer.node, peer.port
                );
            }
        }
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GenSpec;

    #[test]
    fn a_three_level_fat_tree_has_three_switch_tiers() {
        let Ok(t) = GenSpec::fat_tree(3, 4).generate() else { panic!("generates") };
        let tier = tiers(&t);
        let switch_tiers: std::collections::BTreeSet<u8> = (0..t.nodes.len())
            .filter(|&i| t.nodes[i].kind == NodeKind::Switch)
            .map(|i| tier[i].unwrap_or(u8::MAX))
            .collect();
        assert_eq!(switch_tiers.into_iter().collect::<Vec<_>>(), [1, 2, 3]);
        let dot = to_dot(&t);
        assert!(dot.starts_with("graph fabric {") && dot.ends_with("}\n"));
        assert_eq!(dot.matches(" -- ").count(), t.link_count(), "one edge per cable");
        assert_eq!(dot.matches("rank=same").count(), 4, "CAs and three switch tiers");
        let groups = by_tier(&t);
        let levels: Vec<Option<u8>> = groups.iter().map(|g| g.0).collect();
        assert_eq!(levels, [Some(3), Some(2), Some(1), Some(0)], "highest first, CAs last");
        assert_eq!(groups.iter().map(|g| g.1.len()).sum::<usize>(), t.nodes.len());
        assert_eq!(groups[3].1.len(), t.ca_count());
    }
}

//! Fabrics the engines' and the check's unit tests share (test builds only): hand-built views
//! whose GUIDs, LIDs and ports the tests reason about, generated ones, and cuts of them.

use ibsm_mad::{Guid, Lid, PortNum};

use ibsm_topology::NodeKind;
use ibsm_topology::generators::GenSpec;

use crate::{CaPortView, CaView, FabricView, Neighbor, NodeId, SwitchView};

/// A ring of `n` switches with one CA each: switch `i` (GUID 0x500 + i, LID i + 1) has port 1
/// cabled to the next switch's port 2, port 2 to the previous one's port 1, and port 3 to CA
/// `i` (GUID 0x600 + i, port 1, LID n + i + 1).
pub(crate) fn ring(n: usize) -> FabricView {
    let nb = |node, port| Some(Neighbor { node, port: PortNum(port) });
    let switches = (0..n)
        .map(|i| SwitchView {
            guid: Guid(0x500 + i as u64),
            lid: Lid(1 + i as u16),
            ports: vec![
                None,
                nb(NodeId::Switch((i + 1) % n), 2),
                nb(NodeId::Switch((i + n - 1) % n), 1),
                nb(NodeId::Ca(i), 1),
            ],
        })
        .collect();
    let cas = (0..n)
        .map(|i| CaView {
            guid: Guid(0x600 + i as u64),
            ports: vec![CaPortView {
                num: PortNum(1),
                lid: Lid((n + i + 1) as u16),
                neighbor: nb(NodeId::Switch(i), 3),
            }],
        })
        .collect();
    FabricView { switches, cas, lmc: 0 }
}

/// The view of generated fabric `spec`, LIDs in order (switches, then CA ports), each aligned
/// to `2^lmc`.
pub(crate) fn generated(spec: &GenSpec, lmc: u8) -> FabricView {
    let t = spec.generate().expect("a valid spec");
    let (mut sw, mut ca) = (0, 0);
    let ids: Vec<NodeId> = t
        .nodes
        .iter()
        .map(|n| {
            let id = if n.kind == NodeKind::Switch { NodeId::Switch(sw) } else { NodeId::Ca(ca) };
            if n.kind == NodeKind::Switch {
                sw += 1;
            } else {
                ca += 1;
            }
            id
        })
        .collect();
    let step = 1u16 << lmc;
    let mut next = 0u16;
    let mut lid = || {
        next += step;
        Lid(next)
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
                let neighbor = Some(Neighbor { node: ids[l.node], port: PortNum(l.port) });
                Some(CaPortView { num: PortNum(p), lid: lid(), neighbor })
            })
            .collect();
        v.cas.push(CaView { guid: n.node_guid, ports });
    }
    v
}

/// `view` less the switch-to-switch cable at switch `s` port `p` (both ends).
pub(crate) fn cut(view: &FabricView, s: usize, p: usize) -> FabricView {
    let mut v = view.clone();
    if let Some(nb) = v.switches[s].ports[p].take()
        && let NodeId::Switch(o) = nb.node
    {
        v.switches[o].ports[usize::from(nb.port.0)] = None;
    }
    v
}

/// `view` less switch `s` and its cables (and its CAs' cables).
pub(crate) fn crash(view: &FabricView, s: usize) -> FabricView {
    let mut v = view.clone();
    v.switches.remove(s);
    let fix = |n: &mut Option<crate::Neighbor>| match n.map(|x| x.node) {
        Some(NodeId::Switch(o)) if o == s => *n = None,
        Some(NodeId::Switch(o)) if o > s => {
            if let Some(x) = n.as_mut() {
                x.node = NodeId::Switch(o - 1);
            }
        }
        _ => {}
    };
    for sw in &mut v.switches {
        sw.ports.iter_mut().for_each(fix);
    }
    for ca in &mut v.cas {
        for p in &mut ca.ports {
            fix(&mut p.neighbor);
        }
    }
    v
}

/// Switch-to-switch cables, as (switch, port) on the lower-indexed end.
pub(crate) fn trunks(view: &FabricView) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (s, sw) in view.switches.iter().enumerate() {
        for (p, nb) in sw.ports.iter().enumerate() {
            if matches!(nb.map(|n| n.node), Some(NodeId::Switch(o)) if o > s) {
                out.push((s, p));
            }
        }
    }
    out
}

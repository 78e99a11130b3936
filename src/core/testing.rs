//! Test support for the core's components: small subnets built by hand, so that a component
//! can be tested alone, without an `Sm` or a simulated fabric.

use ibsm_mad::attrs::{NodeInfo, NodeType, PortInfo, PortState};
use ibsm_mad::{DrPath, Guid, PortNum};

use super::state::{Node, PortRecord, Subnet};

/// A node of `kind` whose node and port GUID are `guid`, with `ports` ports all Active (and no
/// port GUID on a CA's ports yet), reached by the empty route.
pub fn node(kind: NodeType, guid: u64, ports: u8) -> Node {
    let info = NodeInfo {
        base_version: 1,
        class_version: 1,
        node_type: kind,
        num_ports: ports,
        system_image_guid: Guid(0),
        node_guid: Guid(guid),
        port_guid: Guid(guid),
        partition_cap: 16,
        device_id: 0,
        revision: 0,
        local_port_num: PortNum(1),
        vendor_id: 0,
    };
    let up = PortRecord {
        info: Some(PortInfo { port_state: PortState::Active, ..PortInfo::default() }),
        ..PortRecord::default()
    };
    let ports = vec![up; usize::from(ports) + 1];
    Node { info, desc: format!("n{guid:x}"), switch_info: None, path: DrPath::local(), ports, carried: false }
}

/// Adds `n` to `s`; its index.
pub fn add(s: &mut Subnet, n: Node) -> usize {
    s.by_guid.insert(n.info.node_guid, s.nodes.len());
    s.nodes.push(n);
    s.nodes.len() - 1
}

/// The SM's CA (0x10) on port 1 of a 6-port switch (0x20), CAs 0x102 and 0x103 of port GUIDs
/// `a` and `b` on ports 2 and 3 (nodes 0 to 3 in that order).
pub fn star(a: u64, b: u64) -> Subnet {
    let mut s = Subnet::default();
    let sm = add(&mut s, node(NodeType::Ca, 0x10, 1));
    let sw = add(&mut s, node(NodeType::Switch, 0x20, 6));
    for (p, g) in [(2, a), (3, b)] {
        let mut ca = node(NodeType::Ca, 0x100 + u64::from(p), 1);
        ca.ports[1].guid = Some(Guid(g));
        ca.info.port_guid = Guid(g);
        let i = add(&mut s, ca);
        s.link((sw, PortNum(p)), (i, PortNum(1)));
    }
    s.nodes[sm].ports[1].guid = Some(Guid(0x10));
    s.link((sm, PortNum(1)), (sw, PortNum(1)));
    s.local = Some((sm, PortNum(1)));
    s
}

//! The `lid` and `guid` answers (`ibsm lid LID`, `ibsm guid GUID`): what the SM knows of one
//! port or node, from the last completed sweep's snapshot: the node, each port's state and
//! link, its neighbour, its partitions, and the routes through it (for a switch port, how
//! many LIDs the switch sends out of it; for an end port, how many of its LIDs the switch
//! facing it routes to it).
//!
//! Owns [`PortReport`] and [`report`]. Reads only the snapshot (and names nodes by the SM's
//! `node-name-map` where it names them); sends no MAD.

use serde::{Deserialize, Serialize};

use ibsm_mad::attrs::NodeType;
use ibsm_mad::{Guid, Lid};

use crate::core::NodeNames;
use crate::sa::snapshot::{PortAt, SnapNode, Snapshot, link_mbps};

/// What to look up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortKey {
    /// The end port (or switch) that owns a LID.
    Lid(Lid),
    /// A port GUID, or a node GUID (then every port of the node).
    Guid(Guid),
}

/// The answer: a node and the ports asked about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortReport {
    /// The node.
    pub node: NodeLine,
    /// The ports (one for an end port asked by LID or port GUID; every port of a switch, or of
    /// a node asked by its node GUID).
    pub ports: Vec<PortLine>,
}

/// A node, named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeLine {
    /// Node GUID, `0x` and 16 hex digits.
    pub guid: String,
    /// `switch`, `ca` or `router`.
    pub kind: String,
    /// Its name in `node-name-map`, else its NodeDescription.
    pub desc: String,
    /// Physical ports.
    pub num_ports: u8,
}

/// One port as the SM last read or wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortLine {
    /// Port number (0: a switch's management port).
    pub port: u8,
    /// Port GUID.
    pub guid: String,
    /// The LIDs the port owns (its LMC range; a switch's on port 0).
    pub lids: Vec<u16>,
    /// Logical state (`Active`, `Down`, ...), as last read; `unknown` if never read.
    pub state: String,
    /// Physical state (`LinkUp`, `Polling`, ...).
    pub phys: String,
    /// Data rate of the link, Mb/s (absent when down or unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_mbps: Option<u32>,
    /// The port at the other end of the cable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neighbor: Option<Neighbor>,
    /// P_Keys of an end port's table, as programmed (`0xffff`; empty: none or unknown).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pkeys: Vec<String>,
    /// A switch's external port: LIDs its forwarding table sends out of this port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routed_out: Option<usize>,
}

/// The far end of a cable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Neighbor {
    /// Its node GUID.
    pub guid: String,
    /// Its name in `node-name-map`, else its NodeDescription.
    pub desc: String,
    /// Its port number.
    pub port: u8,
    /// When it is a switch: LIDs its forwarding table sends out of that port (towards the
    /// port asked about).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routed_out: Option<usize>,
}

/// The report on `key`, or why there is none.
///
/// # Errors
/// A sentence for the operator when no port or node answers to `key`.
pub fn report(snap: &Snapshot, key: PortKey, names: &NodeNames) -> Result<PortReport, String> {
    let (node_idx, ports): (u32, Vec<u8>) = match key {
        PortKey::Lid(lid) => {
            let (n, p) = snap.by_lid(lid).ok_or_else(|| format!("no port has LID {}", lid.0))?;
            (n, whole_switch_or(snap, n, p))
        }
        PortKey::Guid(guid) => {
            if let Some((n, p)) = snap.by_guid(guid) {
                (n, whole_switch_or(snap, n, p))
            } else {
                let n = (0..u32::try_from(snap.nodes.len()).unwrap_or(u32::MAX))
                    .find(|&i| snap.node(i).is_some_and(|n| n.info.node_guid == guid))
                    .ok_or_else(|| format!("no port or node has GUID {}", fmt_guid(guid)))?;
                (n, all_ports(snap, n))
            }
        }
    };
    let node = snap.node(node_idx).ok_or_else(|| "the snapshot changed under the query".to_owned())?;
    Ok(PortReport {
        node: NodeLine {
            guid: fmt_guid(node.info.node_guid),
            kind: kind_name(node.info.node_type).to_owned(),
            desc: names.show(node.info.node_guid, &node.desc).to_owned(),
            num_ports: node.info.num_ports,
        },
        ports: ports.into_iter().filter_map(|p| port_line(snap, node, (node_idx, p), names)).collect(),
    })
}

/// A switch is shown whole (its LID and GUID name the switch); an end port alone.
fn whole_switch_or(snap: &Snapshot, node: u32, port: u8) -> Vec<u8> {
    if snap.node(node).is_some_and(SnapNode::is_switch) { all_ports(snap, node) } else { vec![port] }
}

/// Every port of a node that the snapshot has (a CA's unused entry 0 left out).
fn all_ports(snap: &Snapshot, node: u32) -> Vec<u8> {
    let Some(n) = snap.node(node) else { return Vec::new() };
    let first = usize::from(!n.is_switch());
    (first..n.ports.len()).filter_map(|p| u8::try_from(p).ok()).collect()
}

fn port_line(snap: &Snapshot, node: &SnapNode, at: PortAt, names: &NodeNames) -> Option<PortLine> {
    let port = snap.port(at)?;
    let info = port.info.as_ref();
    let neighbor = port.remote.and_then(|(rn, rp)| {
        let far = snap.node(rn)?;
        Some(Neighbor {
            guid: fmt_guid(far.info.node_guid),
            desc: names.show(far.info.node_guid, &far.desc).to_owned(),
            port: rp,
            routed_out: routed_out(far, rp),
        })
    });
    Some(PortLine {
        port: at.1,
        guid: fmt_guid(port.guid),
        lids: snap.lids_of(at).map(|l| l.0).collect(),
        state: info.map_or_else(|| "unknown".to_owned(), |i| format!("{:?}", i.port_state)),
        phys: info.map_or_else(|| "unknown".to_owned(), |i| format!("{:?}", i.port_physical_state)),
        rate_mbps: info.filter(|_| port.remote.is_some()).and_then(link_mbps),
        neighbor,
        pkeys: port.pkeys.iter().filter(|k| k.0 != 0).map(|k| format!("{:#06x}", k.0)).collect(),
        routed_out: if at.1 == 0 { None } else { routed_out(node, at.1) },
    })
}

/// For a switch: how many LIDs its table sends out of `port`.
fn routed_out(node: &SnapNode, port: u8) -> Option<usize> {
    node.is_switch().then(|| node.lft().iter().fold(0, |n, p| n + usize::from(p.0 == port)))
}

fn kind_name(t: NodeType) -> &'static str {
    match t {
        NodeType::Switch => "switch",
        NodeType::Router => "router",
        _ => "ca",
    }
}

fn fmt_guid(g: Guid) -> String {
    format!("{:#018x}", g.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibsm_mad::attrs::{NodeInfo, PortInfo, PortState};
    use ibsm_mad::{PKey, PortNum};

    use crate::sa::snapshot::{SmPort, SnapPort};

    /// A switch (GUID 0x10, LID 1, three ports) with two CAs on ports 1 and 2 (LIDs 2 and 3).
    fn two_hosts() -> Snapshot {
        let up = |lid: u16| PortInfo { lid: Lid(lid), port_state: PortState::Active, ..PortInfo::default() };
        let node = |kind, guid: u64, ports: u8| NodeInfo {
            base_version: 1,
            class_version: 1,
            node_type: kind,
            num_ports: ports,
            system_image_guid: Guid(guid),
            node_guid: Guid(guid),
            port_guid: Guid(guid),
            partition_cap: 64,
            device_id: 0,
            revision: 0,
            local_port_num: PortNum(1),
            vendor_id: 0,
        };
        let port = |guid: u64, lid: u16, remote: PortAt, pkeys: Vec<PKey>| SnapPort {
            info: Some(up(lid)),
            guid: Guid(guid),
            lid: Lid(lid),
            remote: Some(remote),
            pkeys,
        };
        let switch = SnapNode {
            info: node(NodeType::Switch, 0x10, 3),
            desc: "leaf-0".to_owned(),
            switch_info: None,
            ports: std::sync::Arc::new(vec![
                SnapPort { info: Some(up(1)), guid: Guid(0x10), lid: Lid(1), remote: None, pkeys: vec![] },
                SnapPort { lid: Lid::UNASSIGNED, ..port(0x10, 0, (1, 1), vec![]) },
                SnapPort { lid: Lid::UNASSIGNED, ..port(0x10, 0, (2, 1), vec![]) },
                SnapPort { guid: Guid(0x10), ..SnapPort::default() },
            ]),
            // LID 0 unrouted, 1 to port 0, 2 out of port 1, 3 out of port 2.
            table: Some(std::sync::Arc::new(ibsm_routing::Lft::from(
                [0xff, 0, 1, 2].into_iter().map(ibsm_mad::PortNum).collect::<Vec<_>>(),
            ))),
        };
        let ca = |guid: u64, lid: u16, sw_port: u8| SnapNode {
            info: node(NodeType::Ca, guid, 1),
            desc: format!("host-{lid}"),
            switch_info: None,
            ports: std::sync::Arc::new(vec![
                SnapPort::default(),
                port(guid + 1, lid, (0, sw_port), vec![PKey(0xffff), PKey(0), PKey(0x8001)]),
            ]),
            table: None,
        };
        Snapshot::new(0xfe80 << 48, 0, 0x12, vec![switch, ca(0x20, 2, 1), ca(0x30, 3, 2)], SmPort::default())
    }

    #[test]
    fn an_end_port_by_lid_shows_its_link_partitions_and_the_route_to_it() {
        let r = report(&two_hosts(), PortKey::Lid(Lid(3)), &NodeNames::default()).unwrap();
        assert_eq!((r.node.kind.as_str(), r.node.desc.as_str()), ("ca", "host-3"));
        assert_eq!(r.ports.len(), 1);
        let p = &r.ports[0];
        assert_eq!((p.port, p.lids.as_slice(), p.state.as_str()), (1, &[3u16][..], "Active"));
        assert_eq!(p.pkeys, ["0xffff", "0x8001"], "empty slots are left out");
        let n = p.neighbor.as_ref().unwrap();
        assert_eq!((n.desc.as_str(), n.port, n.routed_out), ("leaf-0", 2, Some(1)));
        // With a node name map: the node and its neighbour by their names.
        let map = [(Guid(0x10), "rack1 leaf".to_owned()), (Guid(0x30), "node-3".to_owned())];
        let named = report(&two_hosts(), PortKey::Lid(Lid(3)), &NodeNames::new(map.into_iter().collect())).unwrap();
        assert_eq!(named.node.desc, "node-3");
        assert_eq!(named.ports[0].neighbor.as_ref().unwrap().desc, "rack1 leaf");
    }

    #[test]
    fn a_switch_by_lid_or_node_guid_shows_every_port_with_what_it_routes() {
        let snap = two_hosts();
        let by_lid = report(&snap, PortKey::Lid(Lid(1)), &NodeNames::default()).unwrap();
        assert_eq!(by_lid, report(&snap, PortKey::Guid(Guid(0x10)), &NodeNames::default()).unwrap());
        let routed: Vec<_> = by_lid.ports.iter().map(|p| (p.port, p.routed_out)).collect();
        assert_eq!(routed, [(0, None), (1, Some(1)), (2, Some(1)), (3, Some(0))]);
        assert_eq!(by_lid.ports[1].neighbor.as_ref().unwrap().desc, "host-2");
        assert!(by_lid.ports[3].neighbor.is_none());
    }

    #[test]
    fn a_ca_by_node_guid_lists_its_ports_and_unknown_keys_say_so() {
        let snap = two_hosts();
        let r = report(&snap, PortKey::Guid(Guid(0x20)), &NodeNames::default()).unwrap();
        assert_eq!(r.ports.iter().map(|p| p.guid.as_str()).collect::<Vec<_>>(), ["0x0000000000000021"]);
        assert_eq!(
            report(&snap, PortKey::Guid(Guid(0x21)), &NodeNames::default()).unwrap(),
            r,
            "by port GUID: the same port"
        );
        assert!(report(&snap, PortKey::Lid(Lid(9)), &NodeNames::default()).unwrap_err().contains("no port has LID 9"));
        assert!(
            report(&snap, PortKey::Guid(Guid(0x99)), &NodeNames::default()).unwrap_err().contains("0x0000000000000099")
        );
    }
}

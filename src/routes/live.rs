//! The routing state of a running SM, as its control socket ships it: the discovered fabric
//! (switches, CA ports, cables, LIDs, names: the SM's `node-name-map` where it names a node) and
//! the forwarding table each switch holds.
//!
//! [`LiveRoutes::from_sm`] takes the snapshot from the sans-IO core's getters (its subnet as the
//! fabric-view builder's description; the transport calls it, nothing here does I/O), and
//! [`LiveRoutes::to_plan`] turns a received snapshot back into that description, built into the
//! [`Plan`] and [`Routes`] that `routes dump` and `routes check` print and analyse, so a live
//! fabric goes through exactly the same builder and printers as an offline one. The wire form is its
//! own serde types: GUIDs as `0x` + 16 hex digits, cables named by node GUID and port (never by
//! an index of the SM's), tables as hex text, and with a layered routing each switch's path SLs
//! ([`LiveRoutes::layers`]) for `routes check` and `routes dump --format sl`.

use std::collections::HashMap;
use std::fmt::Write as _;

use ibsm_mad::attrs::NodeType;
use ibsm_mad::{Guid, Lid, PortNum};
use ibsm_routing::{Lft, Routes};
use serde::{Deserialize, Serialize};

use super::plan::Plan;
use crate::core::{Guid2Lid, NodeNames, Sm};
use crate::fabric_view::{DescNode, DescPort, FabricDesc, PortRef};
use crate::sa::Snapshot;

/// Schema version of [`LiveRoutes`].
pub const VERSION: u32 = 1;

/// The answer to the control socket's `routes` query (schema version 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveRoutes {
    /// Schema version ([`VERSION`]).
    pub version: u32,
    /// Routing engine of the chain that routed the last sweep.
    pub engine: String,
    /// LID mask control.
    pub lmc: u8,
    /// Every switch, in the SM's discovery order.
    pub switches: Vec<LiveSwitch>,
    /// Every CA (and router), in the SM's discovery order.
    pub cas: Vec<LiveCa>,
}

/// One switch and its table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveSwitch {
    /// NodeGUID.
    pub guid: String,
    /// Port GUID of the management port 0.
    pub port_guid: String,
    /// LID of port 0 (0 when none was assigned).
    pub lid: u16,
    /// Its name in the SM's `node-name-map`, else its NodeDescription.
    pub name: String,
    /// Number of external ports.
    pub num_ports: u8,
    /// Ports with a live cable.
    pub links: Vec<LiveLink>,
    /// The forwarding table the switch holds, two hex digits (the egress port, `ff` =
    /// unrouted) per LID from LID 0 to LinearFDBTop; empty when the SM knows nothing of it.
    pub lft: String,
    /// With a layered routing (`dfsssp` on more than one layer), the SL of the path from this
    /// switch to each LID, one hex digit per LID from LID 0 to the table's top (the layer the
    /// SA gives the pair); absent otherwise.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sls: String,
}

/// A cabled port of a switch or CA.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveLink {
    /// Local port number.
    pub port: u8,
    /// NodeGUID of the node at the other end.
    pub peer: String,
    /// Port number at the other end.
    pub peer_port: u8,
}

/// One CA or router.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveCa {
    /// NodeGUID.
    pub guid: String,
    /// Its name in the SM's `node-name-map`, else its NodeDescription.
    pub name: String,
    /// `true` for a router, `false` for a channel adapter.
    pub router: bool,
    /// End ports.
    pub ports: Vec<LiveCaPort>,
}

/// One end port of a CA.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveCaPort {
    /// Port number.
    pub num: u8,
    /// Port GUID.
    pub guid: String,
    /// Base LID (0 when none was assigned).
    pub lid: u16,
    /// The cable, if the port has a live one.
    pub link: Option<LiveLink>,
}

/// Why a snapshot cannot be taken, or a received one cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LiveError {
    /// The SM has not finished a sweep yet.
    #[error("the SM has not completed a sweep yet; ask again when the subnet is up")]
    NoSweepYet,
    /// The snapshot is of a schema this program does not read.
    #[error("routes snapshot version {found}, expected {VERSION}")]
    Version {
        /// The version found.
        found: u32,
    },
    /// A malformed field.
    #[error("routes snapshot: {what}: {value:?}")]
    Field {
        /// Which field, and of what.
        what: String,
        /// The value found.
        value: String,
    },
}

fn guid_text(g: Guid) -> String {
    format!("0x{:016x}", g.0)
}

impl LiveRoutes {
    /// What `sm` discovered and what each switch holds, as of its last completed sweep (the
    /// SA's snapshot: a running sweep does not hold the answer up, and it never shows a half
    /// discovered fabric).
    ///
    /// # Errors
    /// [`LiveError::NoSweepYet`] before the first sweep ends.
    pub fn from_sm(sm: &Sm) -> Result<LiveRoutes, LiveError> {
        let snap = sm.snapshot().ok_or(LiveError::NoSweepYet)?;
        Ok(LiveRoutes::from_snapshot(&snap, &sm.config().node_names))
    }

    /// The routes snapshot of an SA snapshot, each node named by `names` (`node-name-map`)
    /// where it names it, else by its NodeDescription.
    pub fn from_snapshot(snap: &Snapshot, names: &NodeNames) -> LiveRoutes {
        let desc = snap.describe();
        let link = |p: &DescPort| {
            let peer = p.peer?;
            Some(LiveLink { port: p.num.0, peer: guid_text(desc.nodes.get(peer.node)?.guid), peer_port: peer.port.0 })
        };
        let mut switches = Vec::new();
        let mut cas = Vec::new();
        for n in &desc.nodes {
            if n.is_switch() {
                let port0 = n.port(PortNum(0));
                let mut lft = String::new();
                let at = snap.nodes.iter().position(|s| s.info.node_guid == n.guid);
                let mut sls = String::new();
                if let Some(at) = at.and_then(|i| u32::try_from(i).ok()) {
                    let none = Lft::new();
                    let t = snap.node(at).map_or(&none, crate::sa::snapshot::SnapNode::lft);
                    lft.reserve(t.len() * 2);
                    for p in t.iter() {
                        let _ = write!(lft, "{:02x}", p.0);
                    }
                    if snap.layers.is_some() {
                        for lid in 0..u16::try_from(t.len()).unwrap_or(u16::MAX) {
                            let sl = snap.path_layer((at, 0), Lid(lid)).unwrap_or(0).min(15);
                            let _ = write!(sls, "{sl:x}");
                        }
                    }
                }
                switches.push(LiveSwitch {
                    guid: guid_text(n.guid),
                    port_guid: guid_text(port0.map_or(n.guid, |p| p.guid)),
                    lid: port0.map_or(0, |p| p.lid.0),
                    name: names.show(n.guid, n.name).to_owned(),
                    num_ports: n.num_ports,
                    links: n.ports.iter().filter(|p| p.num.0 != 0).filter_map(link).collect(),
                    lft,
                    sls,
                });
            } else {
                cas.push(LiveCa {
                    guid: guid_text(n.guid),
                    name: names.show(n.guid, n.name).to_owned(),
                    router: n.kind == NodeType::Router,
                    ports: n
                        .ports
                        .iter()
                        .map(|p| LiveCaPort { num: p.num.0, guid: guid_text(p.guid), lid: p.lid.0, link: link(p) })
                        .collect(),
                });
            }
        }
        let engine = if snap.routing_engine.is_empty() { "none" } else { snap.routing_engine.as_str() };
        LiveRoutes { version: VERSION, engine: engine.to_owned(), lmc: snap.lmc, switches, cas }
    }

    /// The discovered fabric as a topology (nodes, GUIDs, cables; no widths or speeds), for
    /// `ibsm topology diff`.
    ///
    /// # Errors
    /// [`LiveError`] for a malformed GUID. A cable to a node that is not in the snapshot is left
    /// out.
    pub fn to_topology(&self) -> Result<ibsm_topology::Topology, LiveError> {
        use ibsm_topology::{NodeKind, Peer, TopoNode, Topology};
        let parse = |what: &str, s: &str| {
            s.parse::<Guid>().map_err(|_| LiveError::Field { what: what.to_owned(), value: s.to_owned() })
        };
        let mut t = Topology::default();
        let mut index: HashMap<Guid, usize> = HashMap::new();
        for s in &self.switches {
            let guid = parse("switch GUID", &s.guid)?;
            let mut n = TopoNode::new(NodeKind::Switch, s.name.clone(), s.num_ports, guid);
            if let Some(p0) = n.port_guids.first_mut() {
                *p0 = parse("switch port GUID", &s.port_guid)?;
            }
            index.insert(guid, t.nodes.len());
            t.nodes.push(n);
        }
        for c in &self.cas {
            let guid = parse("CA GUID", &c.guid)?;
            let num_ports = c.ports.iter().map(|p| p.num).max().unwrap_or(0);
            let kind = if c.router { NodeKind::Router } else { NodeKind::Ca };
            let mut n = TopoNode::new(kind, c.name.clone(), num_ports, guid);
            for p in &c.ports {
                if let Some(slot) = n.port_guids.get_mut(usize::from(p.num)) {
                    *slot = parse("CA port GUID", &p.guid)?;
                }
            }
            index.insert(guid, t.nodes.len());
            t.nodes.push(n);
        }
        // Cables, from the switches' side and the CAs' side (a cable is listed from both ends).
        let links = self.switches.iter().flat_map(|s| s.links.iter().map(move |l| (&s.guid, l))).chain(
            self.cas.iter().flat_map(|c| c.ports.iter().filter_map(move |p| p.link.as_ref().map(|l| (&c.guid, l)))),
        );
        for (owner, l) in links {
            let (Some(&a), Some(&b)) = (index.get(&parse("GUID", owner)?), index.get(&parse("peer GUID", &l.peer)?))
            else {
                continue;
            };
            if let Some(slot) = t.nodes[a].links.get_mut(usize::from(l.port)) {
                *slot = Some(Peer { node: b, port: l.peer_port, attrs: ibsm_topology::LinkAttrs::default() });
            }
        }
        Ok(t)
    }

    /// The SL of every path of a layered routing, one row per switch in the order of
    /// [`LiveRoutes::to_plan`]'s view (by NodeGUID), one SL per LID; `None` when no switch
    /// carries SLs (not layered). A digit that is not hex reads as SL 0.
    pub fn layers(&self) -> Option<Vec<Vec<u8>>> {
        if self.switches.iter().all(|s| s.sls.is_empty()) {
            return None;
        }
        let mut switches: Vec<(Option<Guid>, &LiveSwitch)> =
            self.switches.iter().map(|s| (s.guid.parse::<Guid>().ok(), s)).collect();
        switches.sort_by_key(|(g, _)| *g);
        let row = |s: &LiveSwitch| {
            s.sls.chars().map(|c| c.to_digit(16).and_then(|d| u8::try_from(d).ok()).unwrap_or(0)).collect()
        };
        Some(switches.into_iter().map(|(_, s)| row(s)).collect())
    }

    /// The snapshot as the routing input the SM used (described and built as the SM builds
    /// it), named for the dumps, and the tables the switches hold (aligned with the plan's
    /// switches).
    ///
    /// # Errors
    /// [`LiveError`] for an unknown version, a malformed GUID or table, or a cable to a node
    /// that is not in the snapshot.
    pub fn to_plan(&self) -> Result<(Plan, Routes), LiveError> {
        if self.version != VERSION {
            return Err(LiveError::Version { found: self.version });
        }
        let lmc = self.lmc.min(7);
        let parse = |what: &str, s: &str| {
            s.parse::<Guid>().map_err(|_| LiveError::Field { what: what.to_owned(), value: s.to_owned() })
        };
        // Description node indices: the switches in NodeGUID order (the order the routing view
        // takes them in, so that the tables line up with the view's switches), then the CAs.
        let mut switches: Vec<(Guid, &LiveSwitch)> =
            self.switches.iter().map(|s| Ok((parse("switch GUID", &s.guid)?, s))).collect::<Result<_, LiveError>>()?;
        switches.sort_by_key(|(g, _)| *g);
        let mut index: HashMap<Guid, usize> = HashMap::new();
        for (k, (g, _)) in switches.iter().enumerate() {
            index.insert(*g, k);
        }
        for (k, c) in self.cas.iter().enumerate() {
            index.insert(parse("CA GUID", &c.guid)?, self.switches.len() + k);
        }
        let peer = |l: &LiveLink| -> Result<PortRef, LiveError> {
            let g = parse("peer GUID", &l.peer)?;
            let node = *index.get(&g).ok_or_else(|| LiveError::Field {
                what: format!("port {}: cable to a node not in the snapshot", l.port),
                value: l.peer.clone(),
            })?;
            Ok(PortRef { node, port: PortNum(l.peer_port) })
        };
        let mut desc = FabricDesc { nodes: Vec::with_capacity(self.switches.len() + self.cas.len()) };
        let mut guid2lid = Guid2Lid::default();
        let mut routes = Routes::default();
        for &(guid, s) in &switches {
            let port_guid = parse("switch port GUID", &s.port_guid)?;
            let lid = Lid(s.lid);
            if lid != Lid::UNASSIGNED {
                guid2lid.insert(port_guid, lid, span_end(lid, lmc));
            }
            let mut ports = vec![DescPort { num: PortNum(0), guid: port_guid, lid, peer: None }];
            for l in &s.links {
                if l.port == 0 || l.port > s.num_ports {
                    return Err(LiveError::Field {
                        what: format!("switch {}: link port", s.guid),
                        value: l.port.to_string(),
                    });
                }
                ports.push(DescPort {
                    num: PortNum(l.port),
                    guid: port_guid,
                    lid: Lid::UNASSIGNED,
                    peer: Some(peer(l)?),
                });
            }
            let kind = NodeType::Switch;
            desc.nodes.push(DescNode { kind, guid, name: &s.name, num_ports: s.num_ports, ports });
            routes.tables.push(std::sync::Arc::new(decode_lft(&s.lft).ok_or_else(|| LiveError::Field {
                what: format!("switch {}: lft", s.guid),
                value: s.lft.chars().take(16).collect(),
            })?));
        }
        for c in &self.cas {
            let guid = parse("CA GUID", &c.guid)?;
            let mut ports = Vec::with_capacity(c.ports.len());
            for p in &c.ports {
                let port_guid = parse("CA port GUID", &p.guid)?;
                let lid = Lid(p.lid);
                if lid != Lid::UNASSIGNED {
                    guid2lid.insert(port_guid, lid, span_end(lid, lmc));
                }
                let peer = p.link.as_ref().map(&peer).transpose()?;
                ports.push(DescPort { num: PortNum(p.num), guid: port_guid, lid, peer });
            }
            let kind = if c.router { NodeType::Router } else { NodeType::Ca };
            let num_ports = c.ports.iter().map(|p| p.num).max().unwrap_or(0);
            desc.nodes.push(DescNode { kind, guid, name: &c.name, num_ports, ports });
        }
        Ok((Plan::from_desc(&desc, lmc, guid2lid), routes))
    }
}

/// The last LID of the `2^lmc` LIDs from `base`.
fn span_end(base: Lid, lmc: u8) -> Lid {
    Lid(base.0.saturating_add((1u16 << lmc.min(7)) - 1))
}

/// Two hex digits per LID; `None` if malformed.
fn decode_lft(hex: &str) -> Option<Lft> {
    let bytes = hex.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    let ports = bytes
        .chunks_exact(2)
        .map(|pair| {
            let text = std::str::from_utf8(pair).ok()?;
            u8::from_str_radix(text, 16).ok().map(PortNum)
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Lft::from(ports))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{Guid2Lid, SmConfig};
    use crate::transport::sim::SimDriver;
    use ibsm_topology::Topology;

    const FABRIC: &str = include_str!("../../examples/fabrics/fat-tree-2l-k4.net");

    fn swept() -> (Topology, SimDriver) {
        let topo = Topology::parse_str(FABRIC, "fat-tree-2l-k4.net").unwrap();
        let mut drv = SimDriver::new(&topo, 1, Sm::new(SmConfig::default(), Guid2Lid::default()), None).unwrap();
        assert!(drv.sweep(60_000_000_000, |_| {}).is_some_and(|r| r.complete));
        (topo, drv)
    }

    #[test]
    fn a_snapshot_through_json_prints_as_the_offline_plan_with_the_sms_lids() {
        let (topo, drv) = swept();
        let live: LiveRoutes =
            serde_json::from_str(&serde_json::to_string(&LiveRoutes::from_sm(&drv.sm).unwrap()).unwrap()).unwrap();
        let (plan, routes) = live.to_plan().unwrap();
        // Independent side: the offline planner numbered with the SM's table, routed by the chain.
        let offline = super::super::plan(&topo, 0, drv.sm.guid2lid().clone(), None);
        let chain = ibsm_routing::chain::Chain::from_names(&SmConfig::default().routing_engine).unwrap();
        let out = chain.run(&offline.view).unwrap();
        assert_eq!(live.engine, out.engine);
        let dump = super::super::dump::opensm;
        assert_eq!(dump(&plan, &routes, None), dump(&offline, &out.routes, None));
        assert_eq!(plan.view.switches.len(), 6);
        assert_eq!(plan.view.cas.iter().map(|c| c.ports.len()).sum::<usize>(), 8);
    }

    #[test]
    fn the_node_name_map_names_the_nodes_it_knows_in_the_routes_and_the_subnet_list() {
        let (topo, drv) = swept();
        let leaf = topo.nodes[topo.find("leaf-0").unwrap()].node_guid;
        let names = NodeNames::new(HashMap::from([(leaf, "rack1 leaf".to_owned())]));
        let snap = drv.sm.snapshot().unwrap();
        let live = LiveRoutes::from_snapshot(&snap, &names);
        let shown: Vec<&str> = live.switches.iter().map(|s| s.name.as_str()).collect();
        assert!(shown.contains(&"rack1 leaf") && shown.contains(&"leaf-1") && !shown.contains(&"leaf-0"), "{shown:?}");
        let lst = super::super::subnet_lst::render(&snap, &names);
        assert!(lst.contains("{rack1 leaf}") && !lst.contains("{leaf-0}"), "{lst}");
        // Without a map, the NodeDescriptions.
        let plain = LiveRoutes::from_snapshot(&snap, &NodeNames::default());
        assert!(plain.switches.iter().any(|s| s.name == "leaf-0"));
    }

    #[test]
    fn no_snapshot_before_a_sweep_and_malformed_snapshots_are_errors() {
        let sm = Sm::new(SmConfig::default(), Guid2Lid::default());
        assert_eq!(LiveRoutes::from_sm(&sm), Err(LiveError::NoSweepYet));
        let (_, drv) = swept();
        let good = LiveRoutes::from_sm(&drv.sm).unwrap();
        let mut bad = good.clone();
        bad.switches[0].lft.push('f');
        assert!(matches!(bad.to_plan(), Err(LiveError::Field { .. })), "odd hex length");
        let mut bad = good.clone();
        bad.switches[0].links[0].peer = "0x00000000deadbeef".to_owned();
        assert!(bad.to_plan().unwrap_err().to_string().contains("not in the snapshot"));
        let mut bad = good.clone();
        bad.cas[0].guid = "zz".to_owned();
        assert!(bad.to_plan().is_err());
        let mut bad = good;
        bad.version = 2;
        assert_eq!(bad.to_plan().unwrap_err(), LiveError::Version { found: 2 });
    }
}

//! The routing state of a running SM, as its control socket ships it: the discovered fabric
//! (switches, CA ports, cables, LIDs, names) and the forwarding table each switch holds.
//!
//! [`LiveRoutes::from_sm`] takes the snapshot from the sans-IO core's getters (the transport
//! calls it; nothing here does I/O), and [`LiveRoutes::to_plan`] turns a received snapshot back
//! into the [`Plan`] and [`Routes`] that `routes dump` and `routes check` print and analyse, so a
//! live fabric goes through exactly the same printers as an offline one. The wire form is its
//! own serde types: GUIDs as `0x` + 16 hex digits, cables named by node GUID and port (never by
//! an index of the SM's), tables as hex text.

use std::collections::HashMap;
use std::fmt::Write as _;

use ibsm_mad::attrs::NodeType;
use ibsm_mad::{Guid, Lid, PortNum};
use ibsm_routing::{CaPortView, CaView, FabricView, Lft, Neighbor, NodeId, Routes, SwitchView};
use serde::{Deserialize, Serialize};

use super::plan::{LidOwner, OwnerKind, Plan};
use crate::core::{Sm, SweepPhase};

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
    /// NodeDescription.
    pub name: String,
    /// Number of external ports.
    pub num_ports: u8,
    /// Ports with a live cable.
    pub links: Vec<LiveLink>,
    /// The forwarding table the switch holds, two hex digits (the egress port, `ff` =
    /// unrouted) per LID from LID 0 to LinearFDBTop; empty when the SM knows nothing of it.
    pub lft: String,
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
    /// NodeDescription.
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
    /// A sweep is running: the fabric model is being rebuilt.
    #[error("a sweep is running (phase {0}); ask again when it is over")]
    SweepRunning(&'static str),
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
    /// Snapshot of what `sm` discovered and what each switch holds.
    ///
    /// # Errors
    /// [`LiveError::NoSweepYet`] before the first sweep ends, [`LiveError::SweepRunning`] while
    /// one runs.
    pub fn from_sm(sm: &Sm) -> Result<LiveRoutes, LiveError> {
        if sm.last_report().is_none() {
            return Err(LiveError::NoSweepYet);
        }
        if sm.phase() != SweepPhase::Up {
            return Err(LiveError::SweepRunning(sm.phase().name()));
        }
        let subnet = sm.subnet();
        let lmc = sm.config().lmc;
        let (view, _) = crate::core::lft::fabric_view(subnet, lmc);
        let guid_of = |id: NodeId| match id {
            NodeId::Switch(k) => view.switches.get(k).map(|s| s.guid),
            NodeId::Ca(k) => view.cas.get(k).map(|c| c.guid),
        };
        let link = |port: u8, nb: Option<&Neighbor>| {
            let nb = nb?;
            Some(LiveLink { port, peer: guid_text(guid_of(nb.node)?), peer_port: nb.port.0 })
        };
        let (switch_nodes, ca_nodes): (Vec<_>, Vec<_>) = subnet.nodes.iter().partition(|n| n.is_switch());
        let switches = view
            .switches
            .iter()
            .zip(&switch_nodes)
            .map(|(sw, node)| {
                let links = sw
                    .ports
                    .iter()
                    .enumerate()
                    .filter_map(|(p, nb)| link(u8::try_from(p).ok()?, nb.as_ref()))
                    .collect();
                let mut lft = String::new();
                if let Some(t) = sm.programmed_lft(sw.guid) {
                    lft.reserve(t.ports.len() * 2);
                    for p in &t.ports {
                        let _ = write!(lft, "{:02x}", p.0);
                    }
                }
                LiveSwitch {
                    guid: guid_text(sw.guid),
                    port_guid: guid_text(node.info.port_guid),
                    lid: sw.lid.0,
                    name: node.desc.clone(),
                    num_ports: u8::try_from(sw.ports.len().saturating_sub(1)).unwrap_or(u8::MAX),
                    links,
                    lft,
                }
            })
            .collect();
        let cas = view
            .cas
            .iter()
            .zip(&ca_nodes)
            .map(|(ca, node)| LiveCa {
                guid: guid_text(ca.guid),
                name: node.desc.clone(),
                router: node.info.node_type == NodeType::Router,
                ports: ca
                    .ports
                    .iter()
                    .map(|p| LiveCaPort {
                        num: p.num.0,
                        guid: guid_text(node.port(p.num).and_then(|r| r.guid).unwrap_or(node.info.port_guid)),
                        lid: p.lid.0,
                        link: link(p.num.0, p.neighbor.as_ref()),
                    })
                    .collect(),
            })
            .collect();
        Ok(LiveRoutes {
            version: VERSION,
            engine: sm.routing_engine_used().unwrap_or("none").to_owned(),
            lmc,
            switches,
            cas,
        })
    }

    /// The snapshot as the routing input the SM used, named for the dumps, and the tables the
    /// switches hold (aligned with the plan's switches).
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
        let mut ids: HashMap<Guid, NodeId> = HashMap::new();
        for (k, s) in self.switches.iter().enumerate() {
            ids.insert(parse("switch GUID", &s.guid)?, NodeId::Switch(k));
        }
        for (k, c) in self.cas.iter().enumerate() {
            ids.insert(parse("CA GUID", &c.guid)?, NodeId::Ca(k));
        }
        let neighbor = |l: &LiveLink| -> Result<Neighbor, LiveError> {
            let g = parse("peer GUID", &l.peer)?;
            let node = *ids.get(&g).ok_or_else(|| LiveError::Field {
                what: format!("port {}: cable to a node not in the snapshot", l.port),
                value: l.peer.clone(),
            })?;
            Ok(Neighbor { node, port: PortNum(l.peer_port) })
        };
        let mut plan = Plan { view: FabricView { switches: Vec::new(), cas: Vec::new(), lmc }, ..Plan::default() };
        let mut owned: Vec<(Lid, LidOwner)> = Vec::new();
        let mut routes = Routes::default();
        for s in &self.switches {
            let guid = parse("switch GUID", &s.guid)?;
            let mut ports = vec![None; usize::from(s.num_ports) + 1];
            for l in &s.links {
                let slot = ports.get_mut(usize::from(l.port)).filter(|_| l.port != 0).ok_or_else(|| {
                    LiveError::Field { what: format!("switch {}: link port", s.guid), value: l.port.to_string() }
                })?;
                *slot = Some(neighbor(l)?);
            }
            let lid = Lid(s.lid);
            if lid != Lid::UNASSIGNED {
                let port_guid = parse("switch port GUID", &s.port_guid)?;
                owned.push((lid, LidOwner { kind: OwnerKind::Switch, port_guid, name: s.name.clone() }));
                plan.guid2lid.insert(port_guid, lid, span_end(lid, lmc));
            }
            plan.view.switches.push(SwitchView { guid, lid, ports });
            plan.switch_names.push(s.name.clone());
            routes.tables.push(decode_lft(&s.lft).ok_or_else(|| LiveError::Field {
                what: format!("switch {}: lft", s.guid),
                value: s.lft.chars().take(16).collect(),
            })?);
        }
        for c in &self.cas {
            let guid = parse("CA GUID", &c.guid)?;
            let kind = if c.router { OwnerKind::Router } else { OwnerKind::Ca };
            let mut ports = Vec::with_capacity(c.ports.len());
            for p in &c.ports {
                let lid = Lid(p.lid);
                if lid != Lid::UNASSIGNED {
                    let port_guid = parse("CA port GUID", &p.guid)?;
                    owned.push((lid, LidOwner { kind, port_guid, name: c.name.clone() }));
                    plan.guid2lid.insert(port_guid, lid, span_end(lid, lmc));
                }
                let neighbor = p.link.as_ref().map(&neighbor).transpose()?;
                ports.push(CaPortView { num: PortNum(p.num), lid, neighbor });
            }
            plan.view.cas.push(CaView { guid, ports });
        }
        let span = usize::from(plan.view.lids_per_port());
        plan.owners = vec![None; usize::from(plan.view.max_lid()) + 1];
        for (lid, owner) in owned {
            for l in usize::from(lid.0)..usize::from(lid.0) + span {
                if let Some(slot) = plan.owners.get_mut(l) {
                    *slot = Some(owner.clone());
                }
            }
        }
        Ok((plan, routes))
    }
}

/// The last LID of the `2^lmc` LIDs from `base`.
fn span_end(base: Lid, lmc: u8) -> Lid {
    Lid(base.0.saturating_add((1u16 << lmc.min(7)) - 1))
}

/// Two hex digits per LID; `None` if malformed.
fn decode_lft(hex: &str) -> Option<Lft> {
    let bytes = hex.as_bytes();
    if bytes.len() % 2 != 0 {
        return None;
    }
    let ports = bytes
        .chunks_exact(2)
        .map(|pair| {
            let text = std::str::from_utf8(pair).ok()?;
            u8::from_str_radix(text, 16).ok().map(PortNum)
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Lft { ports })
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

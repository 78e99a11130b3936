//! `ibsm-topology`: the fabric description, shared by the simulator, the SM's offline planner
//! (`ibsm routes dump --topology`) and the tests.
//!
//! Owns: which nodes exist, their GUIDs and port counts, and which ports are cabled to which.
//! This is what a `.net` file says and what the generators produce; it holds no run-time state
//! (port states, LIDs and tables live in the simulated fabric built from it, or in the SM).
//!
//! Node indices (`usize` into [`Topology::nodes`]) are stable for the life of a topology.
//!
//! Modules: [`parse`] reads the ibsim / ibnetdiscover `.net` format ([`Topology::parse_str`],
//! [`Topology::load`]), [`write`] emits it ([`Topology::to_net`]), [`diff`] compares a fabric
//! with its expected cabling, [`view`] ranks switches by tier and draws the fabric as DOT, [`generators`] builds standard
//! shapes (fat trees, tori, random graphs) from a [`generators::GenSpec`], [`error`] holds the
//! parser's error type, [`file`] reads a file bounded (regular files only, up to a size limit;
//! the SM reads its own files through it too), and [`rng`] is the seeded generator behind every
//! random choice (the generators' and the simulator's). Depends on `ibsm-mad` (and `libc` for
//! one flag) only; nothing here touches MADs,
//! run-time port state or the clock.

pub mod diff;
pub mod error;
pub mod file;
pub mod generators;
pub mod parse;
pub mod rng;
pub mod view;
pub mod write;

mod lines;

pub use diff::{Difference, TopoDiff, diff};
pub use error::{Endpoint, LinkConflict, Pos, TopoError};
pub use generators::{GenError, GenSpec};
pub use view::{by_tier, tiers, to_dot};
pub use write::IbsimLimits;

use ibsm_mad::Guid;

/// Node kind, as in `NodeInfo.NodeType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// Channel adapter (`Hca` / `Ca` in `.net` files).
    Ca,
    /// Switch.
    Switch,
    /// Router (`Rt`), parsed and kept, but simulated like a CA.
    Router,
}

/// Width and speed of a link, as the `.net` `w=`/`s=` attributes or ibnetdiscover's `4xSDR` give them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct LinkAttrs {
    /// `LinkWidthActive` encoding (1 = 1x, 2 = 4x, 4 = 8x, 8 = 12x, 16 = 2x); `None` = default 4x.
    pub width: Option<u8>,
    /// `LinkSpeedActive` encoding (1 = SDR, 2 = DDR, 4 = QDR); `None` = default.
    pub speed: Option<u8>,
    /// `LinkSpeedExtActive` encoding (1 = FDR, 2 = EDR, 4 = HDR, 8 = NDR), from ibsim's `e=` option
    /// or ibnetdiscover's `4xEDR`-style rate; `None` = no extended speed.
    pub ext_speed: Option<u8>,
}

impl LinkAttrs {
    /// Width and speed as infiniband-diags print them (`4xQDR`, `1xSDR`, `4xEDR`); the `.net`
    /// defaults (4x, SDR) where unset.
    pub fn text(self) -> String {
        let width = match self.width.unwrap_or(2) {
            1 => "1x",
            2 => "4x",
            4 => "8x",
            8 => "12x",
            16 => "2x",
            _ => "?x",
        };
        let speed = match (self.ext_speed, self.speed.unwrap_or(1)) {
            (Some(1), _) => "FDR",
            (Some(2), _) => "EDR",
            (Some(4), _) => "HDR",
            (Some(8), _) => "NDR",
            (_, 2) => "DDR",
            (_, 4) => "QDR",
            _ => "SDR",
        };
        format!("{width}{speed}")
    }
}

/// One end of a cable as seen from a port: the remote node index and port number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Peer {
    /// Index of the remote node in [`Topology::nodes`].
    pub node: usize,
    /// Remote port number (1-based).
    pub port: u8,
    /// Link attributes (the same on both ends).
    pub attrs: LinkAttrs,
}

/// One node of the fabric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopoNode {
    /// Kind.
    pub kind: NodeKind,
    /// The quoted node id of the `.net` file (`"Switch1"`, `"S-0008f104..."`), without quotes.
    /// It is also the `NodeDescription` the simulator reports when [`TopoNode::desc`] is `None`.
    pub name: String,
    /// The `NodeDescription` given after the header's `#` (ibnetdiscover's `# "MT4123 host7"`),
    /// when it differs from the node id. ibsim reports it as `NodeDescription`; see
    /// [`TopoNode::node_desc`].
    pub desc: Option<String>,
    /// Number of physical ports (switch port 0 not counted).
    pub num_ports: u8,
    /// `NodeGUID`.
    pub node_guid: Guid,
    /// `SystemImageGUID` (defaults to the `NodeGUID`).
    pub sys_guid: Guid,
    /// `PortGUIDs` by port number, index `0..=num_ports`. For a switch, entry 0 is the switch's
    /// single port GUID (equal to the `NodeGUID` unless the file says otherwise) and the other
    /// entries are unused; for a CA, entry `p` is port `p`'s GUID and entry 0 is unused.
    pub port_guids: Vec<Guid>,
    /// Links by port number, index `0..=num_ports` (index 0 is always `None`).
    pub links: Vec<Option<Peer>>,
    /// Vendor id, device id and revision, when the file gives them.
    pub vendor_id: u32,
    /// Device id.
    pub device_id: u16,
    /// Revision.
    pub revision: u32,
}

impl TopoNode {
    /// A node without links and with ibsim's default GUID layout: a switch's port GUID is its
    /// `NodeGUID`, a CA's or router's port `p` has GUID `NodeGUID` + `p` (entry 0 holds the
    /// `NodeGUID`). `SystemImageGUID` = `NodeGUID`, vendor/device/revision 0, no description.
    pub fn new(kind: NodeKind, name: impl Into<String>, num_ports: u8, node_guid: Guid) -> TopoNode {
        let port_guids = (0..=u64::from(num_ports))
            .map(|p| match kind {
                NodeKind::Switch => node_guid,
                NodeKind::Ca | NodeKind::Router => Guid(node_guid.0.wrapping_add(p)),
            })
            .collect();
        TopoNode {
            kind,
            name: name.into(),
            desc: None,
            num_ports,
            node_guid,
            sys_guid: node_guid,
            port_guids,
            links: vec![None; usize::from(num_ports) + 1],
            vendor_id: 0,
            device_id: 0,
            revision: 0,
        }
    }

    /// The `NodeDescription` to report: [`TopoNode::desc`] if set, else the node id.
    pub fn node_desc(&self) -> &str {
        self.desc.as_deref().unwrap_or(&self.name)
    }

    /// The peer cabled to `port`, if any (`None` for port 0 or an out-of-range port).
    pub fn peer(&self, port: u8) -> Option<Peer> {
        self.links.get(usize::from(port)).copied().flatten()
    }

    /// The GUID of `port` (the switch port GUID for every port of a switch).
    pub fn port_guid(&self, port: u8) -> Guid {
        match self.kind {
            NodeKind::Switch => self.port_guids.first().copied().unwrap_or(self.node_guid),
            _ => self.port_guids.get(usize::from(port)).copied().unwrap_or(self.node_guid),
        }
    }
}

/// A whole fabric description.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Topology {
    /// All nodes, in file order.
    pub nodes: Vec<TopoNode>,
}

impl Topology {
    /// Index of the node with this `.net` name.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }
    /// Number of switches.
    pub fn switch_count(&self) -> usize {
        self.nodes.iter().filter(|n| n.kind == NodeKind::Switch).count()
    }
    /// Number of CAs (and routers).
    pub fn ca_count(&self) -> usize {
        self.nodes.len() - self.switch_count()
    }
    /// Number of cables (each counted once).
    pub fn link_count(&self) -> usize {
        self.nodes.iter().map(|n| n.links.iter().flatten().count()).sum::<usize>() / 2
    }
    /// The first CA port that has a cable, in topology order: where the simulator and the
    /// offline planner put the SM when not told otherwise.
    pub fn first_cabled_ca_port(&self) -> Option<(usize, u8)> {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.kind == NodeKind::Ca)
            .find_map(|(i, n)| (1..=n.num_ports).find(|&p| n.peer(p).is_some()).map(|p| (i, p)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_cabled_ca_port_skips_switches_and_uncabled_ports() {
        let net = "Switch 2 \"s\"\n[1] \"h1\"[2]\n[2] \"h2\"[1]\n\nHca 2 \"h1\"\n[2] \"s\"[1]\n\nHca 1 \"h2\"\n[1] \"s\"[2]\n";
        let t = Topology::parse_str(net, "t.net").expect("parses");
        assert_eq!(t.first_cabled_ca_port(), Some((1, 2)));
        let lone = Topology::parse_str("Switch 2 \"s\"\n\nHca 1 \"h\"\n", "lone.net").expect("parses");
        assert_eq!(lone.first_cabled_ca_port(), None);
    }
}

//! The fabric description: which nodes exist, their GUIDs and port counts, and which ports are
//! cabled to which. This is what a `.net` file says and what the generators produce; it holds no
//! run-time state (port states, LIDs, tables live in the simulated fabric built from it).
//!
//! Node indices (`usize` into [`Topology::nodes`]) are stable for the life of a topology.

use ibsm_mad::Guid;

/// Node kind, as in NodeInfo.NodeType.
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LinkAttrs {
    /// LinkWidthActive encoding (1 = 1x, 2 = 4x, 4 = 8x, 8 = 12x, 16 = 2x); `None` = default 4x.
    pub width: Option<u8>,
    /// LinkSpeedActive encoding (1 = SDR, 2 = DDR, 4 = QDR); `None` = default.
    pub speed: Option<u8>,
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
    /// It is also the NodeDescription the simulator reports, as ibsim does.
    pub name: String,
    /// Number of physical ports (switch port 0 not counted).
    pub num_ports: u8,
    /// NodeGUID.
    pub node_guid: Guid,
    /// SystemImageGUID (defaults to the NodeGUID).
    pub sys_guid: Guid,
    /// PortGUIDs by port number, index 0..=num_ports. For a switch, entry 0 is the switch's
    /// single port GUID (equal to the NodeGUID unless the file says otherwise) and the other
    /// entries are unused; for a CA, entry `p` is port `p`'s GUID and entry 0 is unused.
    pub port_guids: Vec<Guid>,
    /// Links by port number, index 0..=num_ports (index 0 is always `None`).
    pub links: Vec<Option<Peer>>,
    /// Vendor id, device id and revision, when the file gives them.
    pub vendor_id: u32,
    /// Device id.
    pub device_id: u16,
    /// Revision.
    pub revision: u32,
}

impl TopoNode {
    /// The GUID of `port` (the switch port GUID for every port of a switch).
    pub fn port_guid(&self, port: u8) -> Guid {
        match self.kind {
            NodeKind::Switch => self.port_guids[0],
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
}

//! The SA snapshot's node records ([`SnapNode`], [`SnapNodes`]: each node's attributes and
//! ports as the SA answers from them) and the vocabulary of a walk through the forwarding
//! tables ([`PortAt`], [`Walk`], [`MAX_HOPS`], [`min_mtu`], [`link_mbps`]): the leaf that the
//! snapshot and its compact path tables both build on.

use std::sync::Arc;

use ibsm_mad::attrs::{LinkSpeed, LinkSpeedExt, LinkWidth, Mtu, NodeInfo, NodeType, PortInfo, SwitchInfo};
use ibsm_mad::{Guid, Lid, PKey, PortNum};

/// A port as `(node index, port number)`.
pub type PortAt = (u32, u8);

/// One port of a snapshot node.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SnapPort {
    /// PortInfo as last read or written (None: never read).
    pub info: Option<PortInfo>,
    /// Port GUID (a switch's one port GUID on every port; 0 if unknown).
    pub guid: Guid,
    /// Base LID of an end port (a switch's on port 0); [`Lid::UNASSIGNED`] otherwise.
    pub lid: Lid,
    /// The port at the other end of the cable, when the link is up and both ends are known.
    pub remote: Option<PortAt>,
    /// An end port's P_Key table as the SM programmed it, index by index (0: an empty slot;
    /// empty: no partition, or unknown).
    pub pkeys: Vec<PKey>,
}

/// One node of a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapNode {
    /// NodeInfo as read (PortGUID and LocalPortNum are those of the port it was read through;
    /// records give each port its own).
    pub info: NodeInfo,
    /// NodeDescription text.
    pub desc: String,
    /// SwitchInfo (switches), as last read or written.
    pub switch_info: Option<SwitchInfo>,
    /// Ports by number, `0..=NumPorts` (entry 0 of a CA unused), shared with the records
    /// before and after this one while they do not change: a record whose forwarding table
    /// alone changed (a repair's 1,153 switches at k = 48) takes its ports without a copy. A
    /// write goes through [`Arc::make_mut`], which copies them first where shared.
    pub ports: Arc<Vec<SnapPort>>,
    /// Switches: the egress port for each LID as the switch holds it (0xff: unrouted); the
    /// table this SM holds for it, shared, not copied ([`SnapNode::lft`] reads it).
    pub table: Option<std::sync::Arc<ibsm_routing::Lft>>,
}

impl SnapNode {
    /// A switch's egress port for each LID as the switch holds it (`0xff`: unrouted); empty
    /// for a CA or a switch whose table is unknown.
    pub fn lft(&self) -> &ibsm_routing::Lft {
        static NONE: ibsm_routing::Lft = ibsm_routing::Lft::new();
        self.table.as_deref().unwrap_or(&NONE)
    }

    /// The ports, to change: copied first where another record shares them.
    pub fn ports_mut(&mut self) -> &mut Vec<SnapPort> {
        Arc::make_mut(&mut self.ports)
    }

    /// Whether the node is a switch.
    pub fn is_switch(&self) -> bool {
        self.info.node_type == NodeType::Switch
    }

    /// The node's end ports: port 0 of a switch, or every CA port with a LID.
    pub fn end_ports(&self) -> impl Iterator<Item = u8> + '_ {
        let switch = self.is_switch();
        self.ports.iter().enumerate().filter_map(move |(i, p)| {
            let end = if switch { i == 0 } else { i > 0 && p.lid != Lid::UNASSIGNED };
            end.then(|| u8::try_from(i).ok()).flatten()
        })
    }

    /// The NodeInfo a record shows for `port`: PortGUID and LocalPortNum of that port (port 0
    /// for a switch, whichever port discovery read it through, as OpenSM shows it).
    pub fn info_for(&self, port: u8) -> NodeInfo {
        let mut info = self.info;
        if let Some(p) = self.ports.get(usize::from(port)) {
            if !self.is_switch() {
                info.port_guid = p.guid;
            }
            info.local_port_num = PortNum(port);
        }
        info
    }
}

/// The nodes of a snapshot, each record behind an `Arc` of its own so that snapshots share
/// the records that did not change between them. Reads give `&SnapNode`; a write
/// (`nodes[i].desc = …`, `for n in &mut nodes`) copies the record first where another
/// snapshot holds it, so no reader sees it change.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SnapNodes(pub(super) Vec<Arc<SnapNode>>);

/// The nodes of a [`SnapNodes`], read.
pub type NodesIter<'a> = std::iter::Map<std::slice::Iter<'a, Arc<SnapNode>>, fn(&Arc<SnapNode>) -> &SnapNode>;

/// The nodes of a [`SnapNodes`], each copied first where shared.
pub type NodesIterMut<'a> =
    std::iter::Map<std::slice::IterMut<'a, Arc<SnapNode>>, fn(&mut Arc<SnapNode>) -> &mut SnapNode>;

impl SnapNodes {
    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The node at index `i`.
    pub fn get(&self, i: usize) -> Option<&SnapNode> {
        self.0.get(i).map(|n| &**n)
    }

    /// The nodes in order.
    pub fn iter(&self) -> NodesIter<'_> {
        self.0.iter().map(|n| &**n)
    }

    /// The nodes in order, to change: each copied first where another snapshot shares it.
    pub fn iter_mut(&mut self) -> NodesIterMut<'_> {
        self.0.iter_mut().map(Arc::make_mut)
    }

    /// The record of node `i` as shared (for a snapshot made from this one).
    pub fn shared(&self, i: usize) -> Option<&Arc<SnapNode>> {
        self.0.get(i)
    }
}

impl std::ops::Index<usize> for SnapNodes {
    type Output = SnapNode;

    fn index(&self, i: usize) -> &SnapNode {
        &self.0[i]
    }
}

impl std::ops::IndexMut<usize> for SnapNodes {
    fn index_mut(&mut self, i: usize) -> &mut SnapNode {
        Arc::make_mut(&mut self.0[i])
    }
}

impl<'a> IntoIterator for &'a SnapNodes {
    type Item = &'a SnapNode;
    type IntoIter = NodesIter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a> IntoIterator for &'a mut SnapNodes {
    type Item = &'a mut SnapNode;
    type IntoIter = NodesIterMut<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

impl FromIterator<SnapNode> for SnapNodes {
    fn from_iter<I: IntoIterator<Item = SnapNode>>(iter: I) -> SnapNodes {
        SnapNodes(iter.into_iter().map(Arc::new).collect())
    }
}

/// What a walk through the forwarding tables found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Walk {
    /// Switches the packet crosses (0 for a port to itself).
    pub switches: u32,
    /// The smallest MTU along the path.
    pub mtu: Mtu,
    /// The lowest link rate along the path, Mb/s.
    pub rate_mbps: u32,
    /// The destination end port.
    pub dest: PortAt,
}

/// The most switches a path may cross before the walk calls it a loop.
pub const MAX_HOPS: u32 = 64;

/// The smaller of two MTUs (an MTU whose size is unknown loses to a known one).
pub fn min_mtu(a: Mtu, b: Mtu) -> Mtu {
    match (a.bytes(), b.bytes()) {
        (Some(x), Some(y)) if y < x => b,
        (None, Some(_)) => b,
        _ => a,
    }
}

/// The data rate of a port's link in Mb/s: lanes × lane rate.
pub fn link_mbps(info: &PortInfo) -> Option<u32> {
    let lanes = match info.link_width_active {
        LinkWidth::X1 => 1,
        LinkWidth::X2 => 2,
        LinkWidth::X4 => 4,
        LinkWidth::X8 => 8,
        LinkWidth::X12 => 12,
        LinkWidth::Unknown(_) => return None,
    };
    // XDR (IBTA 1.7's LinkSpeedExtActive2, read with SMSupportExtendedSpeeds): 200 Gb/s of data
    // per lane; it overrides LinkSpeedExtActive.
    if info.link_speed_ext_active2 == ibsm_mad::attrs::LINK_SPEED_EXT2_XDR {
        return Some(lanes * 200_000);
    }
    let lane = match info.link_speed_ext_active {
        LinkSpeedExt::Fdr => 14_000,
        LinkSpeedExt::Edr => 25_000,
        LinkSpeedExt::Hdr => 50_000,
        LinkSpeedExt::Ndr => 100_000,
        LinkSpeedExt::None | LinkSpeedExt::Unknown(_) => match info.link_speed_active {
            LinkSpeed::Sdr => 2_500,
            LinkSpeed::Ddr => 5_000,
            LinkSpeed::Qdr => 10_000,
            LinkSpeed::None | LinkSpeed::Unknown(_) => return None,
        },
    };
    Some(lanes * lane)
}

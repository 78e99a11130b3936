//! The subnet's nodes ([`Nodes`] of [`Node`], each with its [`PortRecord`]s), with a book of which of them changed since the SA's last
//! snapshot was taken from them.
//!
//! Owns [`Node`] and [`PortRecord`] (a node and its ports as discovery found them), and
//! [`Nodes`]: the node list of the subnet, read as a slice (`&[Node]`: every
//! read of a node is free), changed only through methods that mark the node they hand out
//! ([`Nodes::get_mut`], [`Nodes::push`]; [`Nodes::iter_mut`] marks them all). So a change to what
//! the SA's snapshot shows of a node (its NodeInfo, NodeDescription, SwitchInfo, a port's
//! PortInfo, GUID, LID or cable) cannot be made without the mark: there is no `&mut Node` to be
//! had otherwise. The one way in that does not mark, [`Nodes::routes_mut`], hands out only the
//! directed routes, which the snapshot does not show.
//!
//! The book counts from a mark ([`Nodes::settle`], called by the coordinator with the mark of
//! the snapshot it has just taken); [`Nodes::changed_since`] answers only for that mark, so a
//! snapshot made from another subnet value (an older one, one discovered anew, a clone that
//! went its own way from before the mark) is never patched from marks that do not describe it.
//! A clone carries the book with it: marks describe the value, wherever it goes.

use std::ops::Deref;

use ibsm_mad::attrs::{NodeInfo, NodeType, PortInfo, PortState, SwitchInfo};
use ibsm_mad::{DrPath, Guid, Lid, PortNum};

/// Index of a node in the subnet's [`Nodes`].
pub type NodeIdx = usize;

/// One port of a discovered node.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PortRecord {
    /// Port GUID, when NodeInfo was read through this port (CA ports) or for any switch port.
    pub guid: Option<Guid>,
    /// The PortInfo last read from the port, or returned by the last Set that succeeded.
    pub info: Option<PortInfo>,
    /// For CA ports: a directed route that enters the node through this port (boxed: most
    /// ports are switch ports, which have none, and 65 bytes on each of them was 11 MB at
    /// k = 48).
    pub path: Option<Box<DrPath>>,
    /// The port cabled to this one, once discovery has seen both ends.
    pub remote: Option<(NodeIdx, PortNum)>,
    /// Base LID assigned to this end port in this sweep ([`Lid::UNASSIGNED`] if none).
    pub lid: Lid,
}

impl PortRecord {
    /// The port's logical link is up (Init, Armed or Active), as last read.
    pub fn is_linked(&self) -> bool {
        self.info.is_some_and(|i| matches!(i.port_state, PortState::Init | PortState::Armed | PortState::Active))
    }
}

/// A node found by discovery.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// NodeInfo as read the first time the node was reached.
    pub info: NodeInfo,
    /// NodeDescription text (empty until read).
    pub desc: String,
    /// SwitchInfo, for switches once read.
    pub switch_info: Option<SwitchInfo>,
    /// The first directed route found to the node.
    pub path: DrPath,
    /// Ports by number, `0..=NumPorts` (entry 0 of a CA is unused).
    pub ports: Vec<PortRecord>,
    /// Kept from the last sweep because it did not answer in this one although the port
    /// facing it is still up: its LIDs and links stay in the routing, nothing is sent to it.
    pub carried: bool,
}

impl Node {
    /// Whether the node is a switch.
    pub fn is_switch(&self) -> bool {
        self.info.node_type == NodeType::Switch
    }

    /// The directed route to use for an SMP about `port`: for a CA, a route entering through
    /// that port; otherwise the node's route.
    pub fn path_for(&self, port: PortNum) -> DrPath {
        if self.is_switch() {
            return self.path;
        }
        self.ports.get(usize::from(port.0)).and_then(|p| p.path.as_deref().copied()).unwrap_or(self.path)
    }

    /// The port record for `port`, if the node has that port.
    pub fn port(&self, port: PortNum) -> Option<&PortRecord> {
        self.ports.get(usize::from(port.0))
    }

    /// Mutable access to a port record.
    pub fn port_mut(&mut self, port: PortNum) -> Option<&mut PortRecord> {
        self.ports.get_mut(usize::from(port.0))
    }

    /// The node's end ports: port 0 of a switch, or every CA port whose GUID is known.
    pub fn end_ports(&self) -> impl Iterator<Item = PortNum> + '_ {
        let switch = self.is_switch();
        self.ports.iter().enumerate().filter_map(move |(i, p)| {
            let num = PortNum(u8::try_from(i).ok()?);
            let end = if switch { i == 0 } else { i > 0 && p.guid.is_some() && p.info.is_some() };
            end.then_some(num)
        })
    }
}

/// The subnet's nodes in discovery order, with the book of those changed since a mark.
#[derive(Debug, Clone, Default)]
pub struct Nodes {
    list: Vec<Node>,
    /// The mark the book counts from (0: none; every node counts as changed).
    since: u64,
    /// One bit per node index: changed since `since`.
    changed: Vec<u64>,
}

/// The nodes changed since a mark ([`Nodes::changed_since`]).
#[derive(Debug, Clone, Copy)]
pub struct Changed<'a>(&'a [u64]);

impl Changed<'_> {
    /// Whether node `i` may have changed (a node added since counts as changed).
    pub fn contains(&self, i: NodeIdx) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }

    /// How many nodes are marked.
    pub fn count(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }
}

/// A node's directed routes, to change without a mark: the SA's snapshot does not show them.
#[derive(Debug)]
pub struct RoutesMut<'a> {
    node: &'a mut Node,
}

impl RoutesMut<'_> {
    /// The node's route (the first one found to it).
    pub fn path(&mut self) -> &mut DrPath {
        &mut self.node.path
    }

    /// The route entering a CA through port `p` (`None`: no such port).
    pub fn port_path(&mut self, p: usize) -> Option<&mut Option<Box<DrPath>>> {
        self.node.ports.get_mut(p).map(|r| &mut r.path)
    }

    /// The number of port records (`0..=NumPorts`).
    pub fn port_count(&self) -> usize {
        self.node.ports.len()
    }

    /// Whether the node is a switch.
    pub fn is_switch(&self) -> bool {
        self.node.is_switch()
    }
}

impl Nodes {
    /// The node at `i`, to change: marked changed.
    pub fn get_mut(&mut self, i: NodeIdx) -> Option<&mut Node> {
        if i < self.list.len() {
            self.mark(i);
        }
        self.list.get_mut(i)
    }

    /// Adds a node at the end (marked changed).
    pub fn push(&mut self, node: Node) {
        self.mark(self.list.len());
        self.list.push(node);
    }

    /// Every node, to change: all count as changed (the book is dropped).
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Node> {
        self.forget();
        self.list.iter_mut()
    }

    /// Keeps the first `len` nodes: the book is dropped.
    pub fn truncate(&mut self, len: usize) {
        self.forget();
        self.list.truncate(len);
    }

    /// Removes the last node: the book is dropped.
    pub fn pop(&mut self) -> Option<Node> {
        self.forget();
        self.list.pop()
    }

    /// The directed routes of node `i`, to change without a mark (the snapshot does not show them).
    pub fn routes_mut(&mut self, i: NodeIdx) -> Option<RoutesMut<'_>> {
        self.list.get_mut(i).map(|node| RoutesMut { node })
    }

    /// Marks node `i` changed (one whose record elsewhere was changed to match it: the SA's
    /// snapshot patched between sweeps).
    pub fn mark(&mut self, i: NodeIdx) {
        if self.since == 0 {
            return;
        }
        let w = i / 64;
        if self.changed.len() <= w {
            self.changed.resize(w + 1, 0);
        }
        self.changed[w] |= 1u64 << (i % 64);
    }

    /// The nodes changed since `mark` (nonzero), or `None` when the book does not count from it
    /// (every node must then be compared).
    pub fn changed_since(&self, mark: u64) -> Option<Changed<'_>> {
        (mark != 0 && self.since == mark).then_some(Changed(&self.changed))
    }

    /// The book starts again from `mark` (nonzero: the snapshot just taken of these nodes as
    /// they are; 0: no mark), nothing changed since.
    pub fn settle(&mut self, mark: u64) {
        self.since = mark;
        self.changed.clear();
    }

    /// Drops the book: every node counts as changed.
    fn forget(&mut self) {
        self.settle(0);
    }
}

impl Deref for Nodes {
    type Target = [Node];

    fn deref(&self) -> &[Node] {
        &self.list
    }
}

/// Unit tests change nodes in place: every node then counts as changed (the book is dropped),
/// which is always right, only slower. Outside tests there is no `&mut [Node]` to be had.
#[cfg(test)]
impl std::ops::DerefMut for Nodes {
    fn deref_mut(&mut self) -> &mut [Node] {
        self.forget();
        &mut self.list
    }
}

/// Nodes are equal when their lists are (the book is not what they are).
impl PartialEq for Nodes {
    fn eq(&self, other: &Nodes) -> bool {
        self.list == other.list
    }
}

impl From<Vec<Node>> for Nodes {
    fn from(list: Vec<Node>) -> Nodes {
        Nodes { list, since: 0, changed: Vec::new() }
    }
}

impl FromIterator<Node> for Nodes {
    fn from_iter<I: IntoIterator<Item = Node>>(iter: I) -> Nodes {
        Nodes::from(iter.into_iter().collect::<Vec<_>>())
    }
}

impl<'a> IntoIterator for &'a Nodes {
    type Item = &'a Node;
    type IntoIter = std::slice::Iter<'a, Node>;

    fn into_iter(self) -> Self::IntoIter {
        self.list.iter()
    }
}

impl<'a> IntoIterator for &'a mut Nodes {
    type Item = &'a mut Node;
    type IntoIter = std::slice::IterMut<'a, Node>;

    /// Every node, to change: all count as changed ([`Nodes::iter_mut`]).
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testing::star;

    #[test]
    fn a_node_handed_out_to_change_is_marked_and_the_book_answers_only_for_its_mark() {
        let mut nodes = star(0x102, 0x103).nodes;
        let n = nodes.len();
        assert!(nodes.changed_since(0).is_none(), "0 is no mark");
        assert!(nodes.changed_since(7).is_none(), "no mark yet");
        nodes.settle(7);
        assert_eq!(nodes.changed_since(7).map(|c| c.count()), Some(0));
        assert!(nodes.changed_since(8).is_none(), "another mark: not this book");
        // Read: no mark.
        let _ = nodes.iter().map(|x| x.desc.len()).sum::<usize>();
        assert_eq!(nodes.changed_since(7).map(|c| c.count()), Some(0));
        // Routes: no mark.
        if let Some(mut r) = nodes.routes_mut(1) {
            *r.path() = DrPath::local();
        }
        assert_eq!(nodes.changed_since(7).map(|c| c.count()), Some(0));
        // A node to change: marked, and only it.
        if let Some(x) = nodes.get_mut(1) {
            x.desc = "new".into();
        }
        let c = nodes.changed_since(7).expect("the book");
        assert!(c.contains(1) && !c.contains(0) && !c.contains(2) && c.count() == 1);
        // Out of range: nothing marked.
        assert!(nodes.get_mut(n + 100).is_none());
        assert_eq!(nodes.changed_since(7).map(|c| c.count()), Some(1));
        // A node added counts as changed.
        let extra = nodes[0].clone();
        nodes.push(extra);
        assert!(nodes.changed_since(7).is_some_and(|c| c.contains(n) && c.count() == 2));
        // A clone carries the book; all handed out: the book is dropped.
        let copy = nodes.clone();
        assert!(copy.changed_since(7).is_some_and(|c| c.contains(1)));
        let _ = nodes.iter_mut().count();
        assert!(nodes.changed_since(7).is_none());
        // Settled again: nothing changed since the new mark.
        nodes.settle(9);
        assert!(nodes.changed_since(9).is_some_and(|c| c.count() == 0));
        nodes.truncate(1);
        assert!(nodes.changed_since(9).is_none(), "nodes removed: the book is dropped");
    }
}

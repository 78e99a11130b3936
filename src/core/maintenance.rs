//! Maintenance: what an operator told the SM to hold still.
//!
//! Owns [`Maintenance`]: whether sweeping is held (`ibsm sweeping off`) and since when, and the
//! ports an operator disabled (`ibsm port disable`), by node GUID and port number. It resolves
//! the node an operator names (a GUID, a LID or a NodeDescription, [`NodeRef`]) in the subnet
//! it is given, refuses what would cut the SM off (its own port, the only link to a node,
//! unless forced) and answers with the PortInfo Set to queue; it keeps no subnet and sends
//! nothing. Which sweeps a hold stops, and when the Sets go, is the coordinator's call
//! (`Sm::hold_sweeping`, `Sm::disable_port`, `Sm::enable_port`).
//!
//! A disabled port gets PortPhysicalState Disabled (PortState left alone: "no change"), the Set
//! that OpenSM's console and `ibportstate disable` send; `enable` sets it Polling, so that the
//! link trains again. Every sweep writes Disabled again where a disabled port was found
//! otherwise (someone enabled it behind the SM's back) and explores nothing through it.

use std::collections::{BTreeSet, HashSet, VecDeque};

use ibsm_mad::attrs::{PhysPortState, PortInfo};
use ibsm_mad::{DrPath, Guid, Lid, PortNum};

use super::state::{NodeIdx, Subnet, port_info_set};
use super::transactions::{PlannedInfo, PortStep, Req, Request};

/// A node as an operator names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeRef {
    /// A node GUID or the GUID of one of its ports.
    Guid(Guid),
    /// A LID of one of its end ports.
    Lid(Lid),
    /// Its NodeDescription, exactly.
    Desc(String),
}

impl NodeRef {
    /// Reads what an operator typed: `0x` and hex digits is a GUID, a decimal number a LID,
    /// anything else a NodeDescription.
    pub fn parse(text: &str) -> NodeRef {
        let t = text.trim();
        if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X"))
            && !hex.is_empty()
            && hex.len() <= 16
            && let Ok(g) = u64::from_str_radix(hex, 16)
        {
            return NodeRef::Guid(Guid(g));
        }
        match t.parse::<u16>() {
            Ok(l) => NodeRef::Lid(Lid(l)),
            Err(_) => NodeRef::Desc(text.to_owned()),
        }
    }
}

impl std::fmt::Display for NodeRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NodeRef::Guid(g) => write!(f, "{:#018x}", g.0),
            NodeRef::Lid(l) => write!(f, "LID {}", l.0),
            NodeRef::Desc(d) => write!(f, "{d:?}"),
        }
    }
}

/// A port disabled or enabled: which, and the Set to queue (none when the node is not in the
/// subnet: an `enable` then only takes the port off the list).
#[derive(Debug, Clone, PartialEq)]
pub struct Toggled {
    /// The node's GUID.
    pub node: Guid,
    /// Its NodeDescription (empty when unknown).
    pub desc: String,
    /// The port.
    pub port: PortNum,
    /// Whether the list of disabled ports changed (false: it was already so).
    pub changed: bool,
    /// The PortInfo Set, if the node can be reached.
    pub(super) set: Option<Request>,
}

impl Toggled {
    /// Whether a Set was queued.
    pub fn sent(&self) -> bool {
        self.set.is_some()
    }
}

/// What an operator holds still: sweeping, and disabled ports.
#[derive(Debug, Clone, Default)]
pub struct Maintenance {
    /// Sweeping held since then (the core's clock).
    held_since: Option<u64>,
    /// Disabled ports: (node GUID, port).
    disabled: BTreeSet<(Guid, u8)>,
    /// Both ends of the links the last sweep found up through a disabled port, and took out.
    cut: BTreeSet<(Guid, u8)>,
}

impl Maintenance {
    /// Holds sweeping from `now`. `false` when it was held already (the first time stands).
    pub fn hold(&mut self, now: u64) -> bool {
        if self.held_since.is_some() {
            return false;
        }
        self.held_since = Some(now);
        true
    }

    /// Lets sweeping go on. `false` when it was not held.
    pub fn release(&mut self) -> bool {
        self.held_since.take().is_some()
    }

    /// Since when sweeping is held, if it is.
    pub fn held_since(&self) -> Option<u64> {
        self.held_since
    }

    /// Whether sweeping is held.
    pub fn held(&self) -> bool {
        self.held_since.is_some()
    }

    /// The disabled ports, (node GUID, port), in order.
    pub fn disabled(&self) -> &BTreeSet<(Guid, u8)> {
        &self.disabled
    }

    /// Replaces the list of disabled ports (read from the state directory at start, or
    /// adopted from the master at a takeover).
    pub fn set_disabled(&mut self, ports: impl IntoIterator<Item = (Guid, u8)>) {
        self.disabled = ports.into_iter().collect();
    }

    /// Whether `port` of the node `node` is disabled.
    pub fn is_disabled(&self, node: Guid, port: PortNum) -> bool {
        self.disabled.contains(&(node, port.0))
    }

    /// Where a sweep configures `port` of `node` (read as `info`): a disabled port that is not
    /// Disabled gets PortPhysicalState Disabled in `set`. `true` when it did.
    pub fn keep_disabled(&self, node: Guid, port: PortNum, info: &PortInfo, set: &mut PortInfo) -> bool {
        if port.0 == 0 || !self.is_disabled(node, port) || info.port_physical_state == PhysPortState::Disabled {
            return false;
        }
        set.port_physical_state = PhysPortState::Disabled;
        true
    }

    /// After discovery: the links up through a disabled port (someone enabled it behind the
    /// SM's back, or the SM just started) are taken out of `subnet`, so that nothing is routed
    /// over them and neither end is brought up; both ends are remembered ([`Maintenance::cut`]).
    pub fn cut_links(&mut self, subnet: &mut Subnet) {
        self.cut.clear();
        let mut ends = Vec::new();
        for (i, n) in subnet.nodes.iter().enumerate() {
            for (p, rec) in n.ports.iter().enumerate().skip(1) {
                let port = u8::try_from(p).unwrap_or(u8::MAX);
                if let Some(far) = rec.remote.filter(|_| self.disabled.contains(&(n.info.node_guid, port))) {
                    ends.push(((i, PortNum(port)), far));
                }
            }
        }
        for (near, far) in ends {
            for (i, p) in [near, far] {
                if let Some(n) = subnet.nodes.get_mut(i) {
                    let guid = n.info.node_guid;
                    if let Some(rec) = n.port_mut(p) {
                        rec.remote = None;
                    }
                    self.cut.insert((guid, p.0));
                }
            }
        }
    }

    /// Whether `end` is an end of a link the last sweep took out ([`Maintenance::cut_links`]):
    /// not counted among the ports the sweep should have brought up.
    pub fn cut(&self, end: (Guid, u8)) -> bool {
        self.cut.contains(&end)
    }

    /// Disables `port` of the node `who` names in `subnet`. Refused: an unknown node or port,
    /// the SM's own port, and (unless `force`) a port whose link is the only way from the SM
    /// to some node.
    ///
    /// # Errors
    /// Why not, for the operator.
    pub fn disable(&mut self, subnet: &Subnet, who: &NodeRef, port: u8, force: bool) -> Result<Toggled, String> {
        let idx = resolve(subnet, who)?;
        let n = subnet.node(idx).ok_or_else(|| format!("no node {who}"))?;
        let port = checked_port(n, port)?;
        if subnet.local == Some((idx, port)) {
            return Err(format!("port {} of {who} is the SM's own port; not disabling it", port.0));
        }
        if !force {
            let cut = cut_off(subnet, &self.disabled, (idx, port));
            if let Some(&first) = cut.first() {
                let name = subnet.node(first).map(|c| c.desc.clone()).unwrap_or_default();
                return Err(format!(
                    "port {} of {who} is the only link from the SM to {} node(s) (\"{name}\" among them); \
                     --force disables it anyway",
                    port.0,
                    cut.len()
                ));
            }
        }
        let changed = self.disabled.insert((n.info.node_guid, port.0));
        let set = toggle_set(subnet, idx, port, PhysPortState::Disabled);
        Ok(Toggled { node: n.info.node_guid, desc: n.desc.clone(), port, changed, set })
    }

    /// Enables `port` of the node `who` names: off the list, and PortPhysicalState Polling when
    /// the node is in `subnet`. A node no longer in the subnet (that port was its only link)
    /// is named by its node GUID; the port leaves the list and no Set can reach it.
    ///
    /// # Errors
    /// An unknown node or port.
    pub fn enable(&mut self, subnet: &Subnet, who: &NodeRef, port: u8) -> Result<Toggled, String> {
        let idx = match resolve(subnet, who) {
            Ok(i) => i,
            Err(e) => {
                if let NodeRef::Guid(g) = who
                    && self.disabled.remove(&(*g, port))
                {
                    return Ok(Toggled {
                        node: *g,
                        desc: String::new(),
                        port: PortNum(port),
                        changed: true,
                        set: None,
                    });
                }
                return Err(e);
            }
        };
        let n = subnet.node(idx).ok_or_else(|| format!("no node {who}"))?;
        let port = checked_port(n, port)?;
        let changed = self.disabled.remove(&(n.info.node_guid, port.0));
        let set = toggle_set(subnet, idx, port, PhysPortState::Polling);
        Ok(Toggled { node: n.info.node_guid, desc: n.desc.clone(), port, changed, set })
    }
}

/// The node `who` names in `subnet`.
///
/// # Errors
/// None or several nodes match.
pub fn resolve(subnet: &Subnet, who: &NodeRef) -> Result<NodeIdx, String> {
    let found: Vec<NodeIdx> = match who {
        NodeRef::Guid(g) => match subnet.by_guid.get(g) {
            Some(&i) => vec![i],
            None => subnet
                .nodes
                .iter()
                .enumerate()
                .filter(|(_, n)| n.ports.iter().any(|p| p.guid == Some(*g)))
                .map(|(i, _)| i)
                .collect(),
        },
        NodeRef::Lid(l) => {
            if l.0 == 0 || l.0 >= 0xc000 {
                return Err(format!("{} is not a unicast LID (1 to 49151)", l.0));
            }
            subnet
                .nodes
                .iter()
                .enumerate()
                .filter(|(_, n)| {
                    n.ports.iter().any(|p| {
                        let lmc = p.info.map_or(0, |i| i.lmc.min(7));
                        p.lid != Lid::UNASSIGNED && (p.lid.0..p.lid.0.saturating_add(1 << lmc)).contains(&l.0)
                    })
                })
                .map(|(i, _)| i)
                .collect()
        }
        NodeRef::Desc(d) => subnet.nodes.iter().enumerate().filter(|(_, n)| n.desc == *d).map(|(i, _)| i).collect(),
    };
    match found.as_slice() {
        [one] => Ok(*one),
        [] => Err(format!("no node {who} in the fabric the SM last swept")),
        many => Err(format!("{} nodes are named {who}; name one by its GUID", many.len())),
    }
}

/// `port` as a port number of `n` (1 to NumPorts).
fn checked_port(n: &super::state::Node, port: u8) -> Result<PortNum, String> {
    if port == 0 || port > n.info.num_ports {
        return Err(format!("{:#018x} has ports 1 to {}; not {port}", n.info.node_guid.0, n.info.num_ports));
    }
    Ok(PortNum(port))
}

/// The Set that gives `port` of node `idx` the physical state `phys`, everything else as read
/// ("no change" where a Set may leave a field alone). `None` when the port was never read.
fn toggle_set(subnet: &Subnet, idx: NodeIdx, port: PortNum, phys: PhysPortState) -> Option<Request> {
    let n = subnet.node(idx)?;
    let info = n.port(port)?.info?;
    let mut want = port_info_set(&info);
    want.port_physical_state = phys;
    let path = path_avoiding(subnet, idx, (idx, port)).unwrap_or_else(|| n.path_for(port));
    Some(Request::sweep(
        path,
        Req::SetPortInfo { node: idx, port, info: PlannedInfo::one(want), step: PortStep::Toggle },
    ))
}

/// A directed route from the SM to node `target` that does not cross the link at `avoid`
/// (the Set that disables a port must not travel over it: its answer could not come back).
/// `None` when there is none (the SM's only way to the node is that link).
fn path_avoiding(subnet: &Subnet, target: NodeIdx, avoid: (NodeIdx, PortNum)) -> Option<DrPath> {
    let (start, _) = subnet.local?;
    let mut seen: HashSet<NodeIdx> = HashSet::from([start]);
    let mut queue = VecDeque::from([(start, DrPath::local())]);
    while let Some((i, path)) = queue.pop_front() {
        if i == target {
            return Some(path);
        }
        let Some(n) = subnet.node(i) else { continue };
        // Only switches, and the SM's own node, send an SMP on.
        if i != start && !n.is_switch() {
            continue;
        }
        for (p, rec) in n.ports.iter().enumerate().skip(1) {
            let here = PortNum(u8::try_from(p).unwrap_or(u8::MAX));
            let Some((far, fp)) = rec.remote else { continue };
            if !rec.is_linked() || (i, here) == avoid || (far, fp) == avoid || seen.contains(&far) {
                continue;
            }
            if let Ok(next) = path.push(here.0) {
                seen.insert(far);
                queue.push_back((far, next));
            }
        }
    }
    None
}

/// The nodes the SM would no longer reach if the link at `without` went down too (besides the
/// links of the ports in `disabled`): a walk over the linked ports from the SM's node.
fn cut_off(subnet: &Subnet, disabled: &BTreeSet<(Guid, u8)>, without: (NodeIdx, PortNum)) -> Vec<NodeIdx> {
    let Some((start, _)) = subnet.local else { return Vec::new() };
    let down = |i: NodeIdx, p: PortNum| {
        (i, p) == without || subnet.node(i).is_some_and(|n| disabled.contains(&(n.info.node_guid, p.0)))
    };
    let mut seen: HashSet<NodeIdx> = HashSet::from([start]);
    let mut queue = VecDeque::from([start]);
    while let Some(i) = queue.pop_front() {
        let Some(n) = subnet.node(i) else { continue };
        for (p, rec) in n.ports.iter().enumerate().skip(1) {
            let here = PortNum(u8::try_from(p).unwrap_or(u8::MAX));
            let Some((far, fp)) = rec.remote else { continue };
            if !rec.is_linked() || down(i, here) || down(far, fp) {
                continue;
            }
            if seen.insert(far) {
                queue.push_back(far);
            }
        }
    }
    (0..subnet.nodes.len()).filter(|i| !seen.contains(i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testing::{add, node};
    use ibsm_mad::attrs::{NodeType, PortState};

    /// The SM's CA (0x1) on switch 0x10 port 1; switch 0x10 port 2 to switch 0x20 port 1, and
    /// port 3 to 0x20 port 2 (two links); 0x20 port 3 to the CA 0x2.
    fn fabric() -> Subnet {
        let mut s = Subnet::default();
        let sm = add(&mut s, node(NodeType::Ca, 0x1, 1));
        let a = add(&mut s, node(NodeType::Switch, 0x10, 4));
        let b = add(&mut s, node(NodeType::Switch, 0x20, 4));
        let h = add(&mut s, node(NodeType::Ca, 0x2, 1));
        s.nodes[h].desc = "host-2".into();
        s.nodes[h].ports[1].guid = Some(Guid(0x102));
        s.nodes[b].desc = "leaf".into();
        for (x, y) in [((sm, 1), (a, 1)), ((a, 2), (b, 1)), ((a, 3), (b, 2)), ((b, 3), (h, 1))] {
            s.link((x.0, PortNum(x.1)), (y.0, PortNum(y.1)));
        }
        for n in &mut s.nodes {
            for p in n.ports.iter_mut().skip(1) {
                if let Some(i) = p.info.as_mut() {
                    i.port_state = if p.remote.is_some() { PortState::Active } else { PortState::Down };
                }
            }
        }
        s.nodes[h].ports[1].lid = Lid(7);
        s.local = Some((sm, PortNum(1)));
        s
    }

    #[test]
    fn names_resolve_by_guid_port_guid_lid_and_description() {
        let s = fabric();
        assert_eq!(NodeRef::parse("0x20"), NodeRef::Guid(Guid(0x20)));
        assert_eq!(NodeRef::parse("7"), NodeRef::Lid(Lid(7)));
        assert_eq!(NodeRef::parse("host-2"), NodeRef::Desc("host-2".into()));
        assert_eq!(resolve(&s, &NodeRef::Guid(Guid(0x20))), Ok(2));
        assert_eq!(resolve(&s, &NodeRef::Guid(Guid(0x102))), Ok(3), "by port GUID");
        assert_eq!(resolve(&s, &NodeRef::Lid(Lid(7))), Ok(3));
        assert_eq!(resolve(&s, &NodeRef::Desc("leaf".into())), Ok(2));
        assert!(resolve(&s, &NodeRef::Desc("nobody".into())).unwrap_err().contains("no node"));
        assert!(resolve(&s, &NodeRef::Lid(Lid(0))).unwrap_err().contains("not a unicast LID"));
        let mut two = s.clone();
        two.nodes[1].desc = "leaf".into();
        assert!(resolve(&two, &NodeRef::Desc("leaf".into())).unwrap_err().contains("2 nodes"));
    }

    #[test]
    fn the_sms_own_port_and_an_only_link_are_refused_unless_forced() {
        let s = fabric();
        let mut m = Maintenance::default();
        let own = m.disable(&s, &NodeRef::Guid(Guid(0x1)), 1, true).unwrap_err();
        assert!(own.contains("the SM's own port"), "{own}");
        // The SM's switch's port toward it cuts off everything.
        let all = m.disable(&s, &NodeRef::Guid(Guid(0x10)), 1, false).unwrap_err();
        assert!(all.contains("only link from the SM to 3 node(s)"), "{all}");
        // The host's only link.
        let host = m.disable(&s, &NodeRef::Desc("leaf".into()), 3, false).unwrap_err();
        assert!(host.contains("\"host-2\""), "{host}");
        assert!(m.disabled().is_empty(), "nothing refused is listed");
        assert!(m.disable(&s, &NodeRef::Guid(Guid(0x20)), 9, false).unwrap_err().contains("ports 1 to 4"));
        // One of two parallel links may go, but then the other is the only one left.
        let one = m.disable(&s, &NodeRef::Guid(Guid(0x10)), 2, false).expect("a redundant link");
        assert!(one.changed && one.set.is_some());
        assert!(m.disable(&s, &NodeRef::Guid(Guid(0x10)), 3, false).unwrap_err().contains("only link"));
        // Forced, the host's link goes too.
        let forced = m.disable(&s, &NodeRef::Guid(Guid(0x20)), 3, true).expect("forced");
        assert_eq!((forced.node, forced.port), (Guid(0x20), PortNum(3)));
        assert_eq!(m.disabled().iter().copied().collect::<Vec<_>>(), [(Guid(0x10), 2), (Guid(0x20), 3)]);
    }

    #[test]
    fn disable_and_enable_send_the_physical_state_and_leave_the_rest_alone() {
        let s = fabric();
        let mut m = Maintenance::default();
        let d = m.disable(&s, &NodeRef::Guid(Guid(0x10)), 2, false).expect("disable");
        let Some(Request { req: Req::SetPortInfo { node: 1, port: PortNum(2), info, .. }, .. }) = d.set else {
            panic!("a PortInfo Set to 0x10 port 2: {:?}", d.set)
        };
        assert_eq!(info.port_physical_state, PhysPortState::Disabled);
        assert_eq!(info.port_state, PortState::NoChange, "the logical state is left to the link");
        let again = m.disable(&s, &NodeRef::Guid(Guid(0x10)), 2, false).expect("again");
        assert!(!again.changed && again.set.is_some(), "listed once, the Set sent again");
        // The far end of that link is reached over the other one, not over the link it cuts.
        let far = m.disable(&s, &NodeRef::Guid(Guid(0x20)), 1, false).expect("the far end");
        let via = DrPath::local().push(1).and_then(|p| p.push(3)).expect("path");
        assert_eq!(far.set.map(|r| r.path), Some(via));
        // A sweep that finds it up again writes Disabled; one that finds it Disabled does not.
        let read = s.nodes[1].ports[2].info.expect("read");
        let mut set = port_info_set(&read);
        assert!(m.keep_disabled(Guid(0x10), PortNum(2), &read, &mut set));
        assert_eq!(set.port_physical_state, PhysPortState::Disabled);
        let mut off = read;
        off.port_physical_state = PhysPortState::Disabled;
        assert!(!m.keep_disabled(Guid(0x10), PortNum(2), &off, &mut port_info_set(&off)));
        assert!(!m.keep_disabled(Guid(0x10), PortNum(3), &read, &mut port_info_set(&read)), "not listed");
        // A sweep that finds the link up takes it out, both ends.
        let mut found = s.clone();
        m.cut_links(&mut found);
        assert!(found.nodes[1].ports[2].remote.is_none() && found.nodes[2].ports[1].remote.is_none());
        assert!(found.nodes[1].ports[3].remote.is_some(), "the other link stays");
        assert!(m.cut((Guid(0x10), 2)) && m.cut((Guid(0x20), 1)) && !m.cut((Guid(0x10), 3)));
        // Enabled: Polling, off the list.
        let e = m.enable(&s, &NodeRef::Guid(Guid(0x10)), 2).expect("enable");
        let Some(Request { req: Req::SetPortInfo { info, .. }, .. }) = e.set else { panic!("a Set") };
        assert_eq!(info.port_physical_state, PhysPortState::Polling);
        assert!(e.changed && m.disabled().len() == 1, "0x20 port 1 is still disabled");
        // A node gone from the subnet is taken off the list by its GUID, with no Set.
        m.set_disabled([(Guid(0x99), 1)]);
        assert!(!m.is_disabled(Guid(0x20), PortNum(1)), "the list is replaced");
        let gone = m.enable(&s, &NodeRef::Guid(Guid(0x99)), 1).expect("forgotten");
        assert!(gone.changed && gone.set.is_none() && m.disabled().is_empty());
        assert!(m.enable(&s, &NodeRef::Guid(Guid(0x99)), 1).is_err(), "unknown and not listed");
    }

    #[test]
    fn a_hold_keeps_its_first_time() {
        let mut m = Maintenance::default();
        assert!(!m.held() && !m.release());
        assert!(m.hold(5));
        assert!(!m.hold(9));
        assert_eq!(m.held_since(), Some(5));
        assert!(m.release() && m.held_since().is_none());
    }
}

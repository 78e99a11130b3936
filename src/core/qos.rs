//! QoS: the component that owns the SL-to-VL and VL arbitration tables ([`Qos`]): what the QoS
//! setting resolves to for the discovered subnet (through `ibsm_qos::resolve`), and what this SM
//! wrote to each port, so that a later sweep writes only the tables that differ, as with LFT
//! and P_Key blocks.
//!
//! Off (no `qos-policy-file`, no `--qos-policy`) it resolves nothing and writes nothing: the
//! ports keep their tables. On, each sweep resolves the subnet's ports (VLCap and its peer's,
//! the arbitration capacities, IsSLMappingSupported, SwitchInfo.EnhancedPort0) and answers with
//! the PortInfo fields configuration must set ([`Qos::port_settings`]: OperationalVLs,
//! VLHighLimit) and the table Sets to queue ([`Qos::table_sets`]). A port that shows no LID
//! (reset since) is written whole again; a Set that fails is forgotten, so the next sweep
//! writes it again. With `use-optimized-slvl`, a switch that advertises
//! OptimizedSLtoVLMappingProgramming gets one SL2VL Set per output port whose input ports all
//! want one table (modifier bit 16), held as if written pair by pair. Tables are held by node
//! and by the port they sit on (the two ports of a CA apart).
//!
//! For the standbys it keeps, per node, a digest of the SL2VL tables and one of the
//! VLArbitration blocks it holds written ([`Qos::written_digests`]; order-free sums kept as
//! each Set ends). A standby taking over adopts them ([`Qos::adopt_written`]): its first
//! [`Qos::table_sets`] holds as written a node's tables of each kind whose digest is the one it
//! computes for what it wants, so a takeover with the same QoS writes no table; a node found
//! reset, or whose tables of a kind differ, gets all of that kind. A takeover without them
//! ([`Qos::forget_written`]) writes every table: what this SM wrote in an earlier
//! mastership may have been overwritten since. A table about to be
//! rewritten stops being held before its Set goes out ([`Qos::take_digests_changed`]), so that
//! a standby never takes an old digest for what a port holds. OperationalVLs and VLHighLimit
//! need no books: the configure pass compares them with the PortInfo it read.
//!
//! It takes the subnet and the setting as arguments and answers with values; it sends nothing
//! and touches no other component's state.

use std::collections::BTreeMap;

use ibsm_mad::attrs::{CapabilityMask, NodeType, PortState, SlToVlTable, VlArbitrationTable};
use ibsm_mad::{Guid, Lid, PortNum};
use ibsm_qos::{NodeKind, NodeQos, NodeView, PortView};

use super::events::SmEvent;
use super::state::{Node, Subnet};
use super::transactions::{Req, Request};

/// QoS as configured: the simple options and the policy file's content.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QosSetting {
    /// OpenSM's simple QoS options (`[qos]` in the configuration).
    pub options: ibsm_qos::QosOptions,
    /// The qos-policy.conf read at start or reload.
    pub policy: ibsm_qos::QosPolicy,
}

/// The QoS tables: as resolved, as written.
#[derive(Debug, Clone, Default)]
pub struct Qos {
    /// What each node's ports should hold, by NodeGUID.
    resolved: BTreeMap<Guid, NodeQos>,
    /// The tables this SM wrote (or adopted at a takeover), by NodeGUID.
    held: BTreeMap<Guid, NodeHeld>,
    /// A takeover's word on what each node holds: the old master's digests, used (and dropped)
    /// by the next [`Qos::table_sets`].
    adopted: BTreeMap<Guid, TableDigests>,
    /// Some node's digests changed since [`Qos::take_digests_changed`].
    digests_changed: bool,
    /// Tables written.
    blocks_sent: u64,
}

/// Digests of the tables held on one node, one for its SL2VL tables and one for its
/// VLArbitration blocks: each the wrapping sum of a keyed hash of every table with its place
/// (input and output port, or port and block), so that a Set's end updates it in constant
/// time and a standby computes the same value from the tables it wants.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableDigests {
    /// Over the SL2VL tables.
    pub sl2vl: u64,
    /// Over the VLArbitration blocks.
    pub vlarb: u64,
}

/// The tables held on one node. Keys name the port they sit on: SL2VL by (input, output),
/// an end port's by (0, its port number); VLArbitration by (port, block).
#[derive(Debug, Clone, Default)]
struct NodeHeld {
    sl2vl: BTreeMap<(u8, u8), SlToVlTable>,
    vlarb: BTreeMap<(u8, u16), VlArbitrationTable>,
    digests: TableDigests,
}

/// The key the table digests are hashed with (fixed: the digests are compared, not secret).
const DIGEST_KEY: [u8; 16] = *b"ibsm-qos-tables1";

fn sl2vl_hash(guid: Guid, (input, output): (u8, u8), t: &SlToVlTable) -> u64 {
    let mut b = [0u8; 27];
    b[0] = 1;
    b[1..9].copy_from_slice(&guid.0.to_be_bytes());
    b[9] = input;
    b[10] = output;
    b[11..27].copy_from_slice(&t.vls);
    crate::siphash::siphash24(&DIGEST_KEY, &b)
}

fn vlarb_hash(guid: Guid, (port, block): (u8, u16), t: &VlArbitrationTable) -> u64 {
    let mut b = [0u8; 76];
    b[0] = 2;
    b[1..9].copy_from_slice(&guid.0.to_be_bytes());
    b[9] = port;
    b[10..12].copy_from_slice(&block.to_be_bytes());
    for (i, e) in t.entries.iter().enumerate() {
        b[12 + 2 * i] = e.vl;
        b[13 + 2 * i] = e.weight;
    }
    crate::siphash::siphash24(&DIGEST_KEY, &b)
}

/// Holds `table` at `key` in `tables` (`None`: nothing known there), keeping `digest` the
/// wrapping sum of `hash` over what is held. True when something changed.
fn hold<K: Ord + Copy, T: PartialEq>(
    tables: &mut BTreeMap<K, T>,
    digest: &mut u64,
    key: K,
    table: Option<T>,
    hash: impl Fn(K, &T) -> u64,
) -> bool {
    let old = match table {
        Some(t) => tables.insert(key, t),
        None => tables.remove(&key),
    };
    let new = tables.get(&key);
    if old.as_ref() == new {
        return false;
    }
    if let Some(o) = &old {
        *digest = digest.wrapping_sub(hash(key, o));
    }
    if let Some(t) = new {
        *digest = digest.wrapping_add(hash(key, t));
    }
    true
}

impl NodeHeld {
    /// Holds `table` at `key` (`None`: nothing known there), keeping the digest.
    fn set_sl2vl(&mut self, guid: Guid, key: (u8, u8), table: Option<SlToVlTable>) -> bool {
        hold(&mut self.sl2vl, &mut self.digests.sl2vl, key, table, |k, t| sl2vl_hash(guid, k, t))
    }

    fn set_vlarb(&mut self, guid: Guid, key: (u8, u16), table: Option<VlArbitrationTable>) -> bool {
        hold(&mut self.vlarb, &mut self.digests.vlarb, key, table, |k, t| vlarb_hash(guid, k, t))
    }

    fn is_empty(&self) -> bool {
        self.sl2vl.is_empty() && self.vlarb.is_empty()
    }
}

/// The tables `want` gives a node, keyed as [`NodeHeld`] keys them.
fn wanted(want: &NodeQos, switch: bool) -> NodeHeld {
    let mut w = NodeHeld::default();
    for p in &want.ports {
        for (input, t) in &p.sl2vl {
            w.set_sl2vl(want.guid, (if switch { *input } else { 0 }, p.num), Some(*t));
        }
        for (block, t) in &p.vlarb {
            w.set_vlarb(want.guid, (p.num, *block), Some(*t));
        }
    }
    w
}

/// The QoS view of one node of the subnet. Each VLCap is bounded by `max_op_vls` (OpenSM's
/// `max_op_vls`, as the port settings apply it): the link manager, not QoS, decides how many
/// VLs a port runs, and QoS masks its tables to those.
fn node_view(subnet: &Subnet, n: &Node, max_op_vls: u8) -> NodeView {
    let bound = |cap: u8| if cap == 0 { 0 } else { cap.min(max_op_vls.max(1)) };
    let kind = match n.info.node_type {
        NodeType::Switch => NodeKind::Switch { enhanced_port0: n.switch_info.is_some_and(|si| si.enhanced_port0) },
        NodeType::Router => NodeKind::Router,
        _ => NodeKind::Ca,
    };
    let mut ports = Vec::new();
    for (i, rec) in n.ports.iter().enumerate() {
        let Some(info) = rec.info else { continue };
        let Ok(num) = u8::try_from(i) else { break };
        // A CA port is reached through itself: one whose link is not up cannot be written.
        if !n.is_switch() && (num == 0 || !rec.is_linked()) {
            continue;
        }
        let peer = rec.remote.and_then(|(rn, rp)| subnet.node(rn)?.port(rp)?.info);
        ports.push(PortView {
            num,
            up: num == 0 || info.port_state != PortState::Down,
            vl_cap: bound(info.vl_cap),
            peer_vl_cap: peer.map(|p| bound(p.vl_cap)),
            vl_arb_high_cap: info.vl_arbitration_high_cap,
            vl_arb_low_cap: info.vl_arbitration_low_cap,
            sl_mapping: info.capability_mask.contains(CapabilityMask::IS_SL_MAPPING_SUPPORTED),
        });
    }
    NodeView { guid: n.info.node_guid, kind, ports }
}

impl Qos {
    /// Resolves `setting` for the subnet (nothing when QoS is off), no port running more than
    /// `max_op_vls` VLs. Returns the warnings.
    pub fn resolve(&mut self, subnet: &Subnet, setting: Option<&QosSetting>, max_op_vls: u8) -> Vec<SmEvent> {
        self.resolved.clear();
        let Some(setting) = setting else { return Vec::new() };
        let views: Vec<NodeView> =
            subnet.nodes.iter().filter(|n| !n.carried).map(|n| node_view(subnet, n, max_op_vls)).collect();
        match ibsm_qos::resolve(&setting.options, &views) {
            Ok(nodes) => {
                self.resolved = nodes.into_iter().map(|n| (n.guid, n)).collect();
                Vec::new()
            }
            // The configuration is checked when read; this is a last guard, not a path.
            Err(e) => vec![SmEvent::QosWarning(format!("QoS options refused, no QoS tables written: {e}"))],
        }
    }

    /// (OperationalVLs, VLHighLimit) QoS wants on port `port` of node `node`, if it sets it.
    pub fn port_settings(&self, node: Guid, port: PortNum) -> Option<(u8, u8)> {
        let p = self.resolved.get(&node)?.ports.iter().find(|p| p.num == port.0)?;
        Some((p.operational_vls, p.vl_high_limit))
    }

    /// The SL2VL and VLArbitration Sets whose table differs from what this SM last wrote.
    /// With `optimized` (`use-optimized-slvl`), a switch that advertises
    /// OptimizedSLtoVLMappingProgramming gets one Set per output port whose input ports all
    /// want the same table (modifier bit 16), where some of them differ from what was written.
    /// After a takeover ([`Qos::adopt_written`]), a node's tables of one kind whose digest is
    /// the old master's are held as written first; a node found reset is not.
    pub(crate) fn table_sets(&mut self, subnet: &Subnet, optimized: bool) -> Vec<Request> {
        let mut sets = Vec::new();
        let adopted = std::mem::take(&mut self.adopted);
        for (i, n) in subnet.nodes.iter().enumerate().filter(|(_, n)| !n.carried) {
            let guid = n.info.node_guid;
            let Some(want) = self.resolved.get(&guid) else { continue };
            let switch = n.is_switch();
            let one_set = optimized
                && switch
                && n.switch_info.is_some_and(|si| si.optimized_sl_to_vl_mapping_programming & 1 == 1);
            // A node whose port shows no LID was reset: it holds its power-on tables.
            let reset =
                n.end_ports().any(|p| n.port(p).and_then(|r| r.info).is_some_and(|pi| pi.lid == Lid::UNASSIGNED));
            if reset {
                self.digests_changed |= self.held.remove(&guid).is_some();
            } else if let Some(theirs) = adopted.get(&guid) {
                // What the old master wrote, of each kind, where it is what this SM wants.
                let mut w = wanted(want, switch);
                if w.digests.sl2vl != theirs.sl2vl {
                    w.sl2vl.clear();
                    w.digests.sl2vl = 0;
                }
                if w.digests.vlarb != theirs.vlarb {
                    w.vlarb.clear();
                    w.digests.vlarb = 0;
                }
                self.held.insert(guid, w);
            }
            // Tables about to change: no longer what the node holds (for the standbys).
            let (mut flux_sl2vl, mut flux_vlarb) = (Vec::new(), Vec::new());
            let held = self.held.get(&guid);
            let had_sl2vl = |key: (u8, u8)| held.and_then(|h| h.sl2vl.get(&key));
            for p in &want.ports {
                // Requests go to the switch (port 0 in the path), or through the CA's port.
                let port = if switch { PortNum(0) } else { PortNum(p.num) };
                let output = if switch { p.num } else { 0 };
                for (block, table) in &p.vlarb {
                    let had = held.and_then(|h| h.vlarb.get(&(p.num, *block)));
                    if had == Some(table) {
                        continue;
                    }
                    if had.is_some() {
                        flux_vlarb.push((p.num, *block));
                    }
                    let req = Req::SetVlArb { node: i, port, guid, output, block: *block, table: Box::new(*table) };
                    sets.push(Request::sweep(n.path_for(PortNum(p.num)), req));
                }
                if one_set
                    && let Some((_, first)) = p.sl2vl.first()
                    && p.sl2vl.iter().all(|(_, t)| t == first)
                {
                    if p.sl2vl.iter().any(|(input, _)| had_sl2vl((*input, output)) != Some(first)) {
                        flux_sl2vl.extend(p.sl2vl.iter().map(|(input, _)| (*input, output)));
                        let req =
                            Req::SetSl2Vl { node: i, port, guid, input: 0, output, all_inputs: true, table: *first };
                        sets.push(Request::sweep(n.path_for(PortNum(p.num)), req));
                    }
                    continue;
                }
                for (input, table) in &p.sl2vl {
                    let key = (if switch { *input } else { 0 }, p.num);
                    let had = had_sl2vl(key);
                    if had == Some(table) {
                        continue;
                    }
                    if had.is_some() {
                        flux_sl2vl.push(key);
                    }
                    let req =
                        Req::SetSl2Vl { node: i, port, guid, input: key.0, output, all_inputs: false, table: *table };
                    sets.push(Request::sweep(n.path_for(PortNum(p.num)), req));
                }
            }
            if let Some(h) = self.held.get_mut(&guid) {
                for key in flux_sl2vl {
                    self.digests_changed |= h.set_sl2vl(guid, key, None);
                }
                for key in flux_vlarb {
                    self.digests_changed |= h.set_vlarb(guid, key, None);
                }
            }
        }
        sets
    }

    /// An SL2VL Set through `port` (0: a switch's) ended: remember the table, or forget it so
    /// that it is written again. One Set may cover several input ports (the one-Set form):
    /// `inputs` lists them.
    pub fn on_sl2vl(
        &mut self,
        guid: Guid,
        port: PortNum,
        (inputs, output): (&[u8], u8),
        table: &SlToVlTable,
        done: bool,
    ) {
        if done {
            self.blocks_sent += 1;
        }
        // An end port's one table is held under its own port number.
        let output = if port.0 == 0 { output } else { port.0 };
        let held = self.held.entry(guid).or_default();
        for &input in inputs {
            held.set_sl2vl(guid, (input, output), done.then_some(*table));
        }
        if held.is_empty() {
            self.held.remove(&guid);
        }
    }

    /// The input ports resolved for a switch's `output`: those a one-Set SL2VL write covers.
    pub fn sl2vl_inputs(&self, guid: Guid, output: u8) -> Vec<u8> {
        let Some(want) = self.resolved.get(&guid) else { return Vec::new() };
        want.ports
            .iter()
            .find(|p| p.num == output)
            .map(|p| p.sl2vl.iter().map(|(i, _)| *i).collect())
            .unwrap_or_default()
    }

    /// A VLArbitration Set through `port` (0: a switch's, of port `output`) ended: remember the
    /// block, or forget it.
    pub fn on_vlarb(
        &mut self,
        guid: Guid,
        port: PortNum,
        (output, block): (u8, u16),
        table: &VlArbitrationTable,
        done: bool,
    ) {
        if done {
            self.blocks_sent += 1;
        }
        let output = if port.0 == 0 { output } else { port.0 };
        let held = self.held.entry(guid).or_default();
        held.set_vlarb(guid, (output, block), done.then_some(*table));
        if held.is_empty() {
            self.held.remove(&guid);
        }
    }

    /// The digests of the tables held on each node (by NodeGUID, nodes holding none left
    /// out): what the ports hold, for the standbys.
    pub fn written_digests(&self) -> Vec<(Guid, TableDigests)> {
        self.held.iter().filter(|(_, h)| !h.is_empty()).map(|(g, h)| (*g, h.digests)).collect()
    }

    /// A takeover: what this SM wrote in an earlier mastership may have been overwritten by
    /// the master since; nothing is held (every table is written) unless
    /// [`Qos::adopt_written`] follows.
    pub fn forget_written(&mut self) {
        self.held.clear();
        self.adopted.clear();
    }

    /// A standby taking over: the digests its master's tables had (its
    /// [`Qos::written_digests`], replicated) replace what this SM knew. The next
    /// [`Qos::table_sets`] holds a node's tables of one kind as written where their digest is
    /// the one this SM computes for what it wants, and the node shows no reset.
    pub fn adopt_written(&mut self, digests: impl IntoIterator<Item = (Guid, TableDigests)>) {
        self.forget_written();
        self.adopted = digests.into_iter().collect();
    }

    /// Whether a node's tables stopped being held since the last call (a reset, or a table
    /// about to be rewritten): the coordinator publishes the digests again before a standby
    /// could take the old ones for what the node holds.
    pub fn take_digests_changed(&mut self) -> bool {
        std::mem::take(&mut self.digests_changed)
    }

    /// SL2VL tables and VLArbitration blocks held as written on node `node`.
    pub fn tables_held(&self, node: Guid) -> usize {
        self.held.get(&node).map_or(0, |h| h.sl2vl.len() + h.vlarb.len())
    }

    /// SL2VL and VLArbitration tables written since start.
    pub fn blocks_sent(&self) -> u64 {
        self.blocks_sent
    }
}

#[cfg(test)]
mod tests {
    use ibsm_mad::attrs::CapabilityMask;

    use super::*;
    use crate::core::testing::star;

    /// A star whose ports run 8 VLs with SL mapping and VL arbitration tables.
    fn qos_star() -> Subnet {
        with_qos_ports(star(0x2, 0x3))
    }

    /// `s` with every port running 8 VLs with SL mapping and VL arbitration tables.
    fn with_qos_ports(mut s: Subnet) -> Subnet {
        for n in &mut s.nodes {
            for rec in &mut n.ports {
                if let Some(info) = rec.info.as_mut() {
                    info.vl_cap = 4;
                    info.vl_arbitration_high_cap = 8;
                    info.vl_arbitration_low_cap = 8;
                    info.capability_mask = info.capability_mask.with(CapabilityMask::IS_SL_MAPPING_SUPPORTED);
                    info.lid = Lid(1);
                }
            }
        }
        s
    }

    /// Each Set of `sets` ended (`done`), as the coordinator reports them.
    fn ended(q: &mut Qos, sets: &[Request], done: bool) {
        for r in sets {
            match &r.req {
                Req::SetSl2Vl { guid, port, input, output, table, .. } => {
                    q.on_sl2vl(*guid, *port, (&[*input], *output), table, done);
                }
                Req::SetVlArb { guid, port, output, block, table, .. } => {
                    q.on_vlarb(*guid, *port, (*output, *block), table, done);
                }
                other => panic!("not a QoS Set: {other:?}"),
            }
        }
    }

    #[test]
    fn off_writes_nothing_and_on_writes_only_what_differs_from_what_it_wrote() {
        let s = qos_star();
        let mut q = Qos::default();
        assert!(q.resolve(&s, None, 5).is_empty());
        assert!(q.table_sets(&s, false).is_empty(), "QoS off: the ports keep their tables");
        assert_eq!(q.port_settings(Guid(0x20), PortNum(1)), None);

        let setting = QosSetting::default();
        assert!(q.resolve(&s, Some(&setting), 5).is_empty());
        let first = q.table_sets(&s, false);
        assert!(first.iter().any(|r| matches!(r.req, Req::SetSl2Vl { .. })), "{first:?}");
        assert!(first.iter().any(|r| matches!(r.req, Req::SetVlArb { .. })), "{first:?}");
        assert!(q.port_settings(Guid(0x20), PortNum(1)).is_some(), "QoS sets OperationalVLs");
        ended(&mut q, &first, true);
        assert_eq!(q.blocks_sent(), first.len() as u64);
        assert!(q.table_sets(&s, false).is_empty(), "everything written is held");

        // A Set that failed is forgotten and written again; the rest stays held.
        ended(&mut q, &first[..1], false);
        assert_eq!(q.table_sets(&s, false).len(), 1);
        // A node that shows no LID was reset: all its tables again.
        let mut reset = s.clone();
        let sw = reset.by_guid[&Guid(0x20)];
        for rec in &mut reset.nodes[sw].ports {
            if let Some(info) = rec.info.as_mut() {
                info.lid = Lid::UNASSIGNED;
            }
        }
        ended(&mut q, &first[..1], true);
        let again = q.table_sets(&reset, false);
        let of_switch = first
            .iter()
            .filter(|r| matches!(r.req, Req::SetSl2Vl { guid, .. } | Req::SetVlArb { guid, .. } if guid == Guid(0x20)))
            .count();
        assert!(of_switch > 0);
        assert_eq!(again.len(), of_switch, "the reset switch's tables, no one else's");
    }

    /// The (guid, port, kind) of each Set: kind 0 for SL2VL, 1 for VLArbitration.
    fn places(sets: &[Request]) -> Vec<(Guid, u8, u8)> {
        sets.iter()
            .map(|r| match &r.req {
                Req::SetSl2Vl { guid, port, output, .. } => (*guid, if port.0 == 0 { *output } else { port.0 }, 0),
                Req::SetVlArb { guid, port, output, .. } => (*guid, if port.0 == 0 { *output } else { port.0 }, 1),
                other => panic!("not a QoS Set: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn the_two_ports_of_a_ca_are_held_apart() {
        // A CA (0x104) cabled on both its ports, port 2 running fewer VLs than port 1: its two
        // ports want different tables. Held under one key, each Set's end overwrote the other
        // port's table and every sweep wrote one port again; a failed Set on one port was
        // hidden by the other's success.
        let mut s = star(0x2, 0x3);
        let ca = crate::core::testing::add(&mut s, crate::core::testing::node(NodeType::Ca, 0x104, 2));
        let sw = s.by_guid[&Guid(0x20)];
        s.link((sw, PortNum(4)), (ca, PortNum(1)));
        s.link((sw, PortNum(5)), (ca, PortNum(2)));
        let mut s = with_qos_ports(s);
        for (n, p) in [(ca, 2), (sw, 5)] {
            s.nodes[n].ports[p].info.as_mut().expect("info").vl_cap = 2;
        }
        let mut q = Qos::default();
        assert!(q.resolve(&s, Some(&QosSetting::default()), 5).is_empty());
        let first = q.table_sets(&s, false);
        let of_ca: Vec<Request> =
            first.iter().filter(|r| places(std::slice::from_ref(*r))[0].0 == Guid(0x104)).cloned().collect();
        let ports: std::collections::BTreeSet<u8> = places(&of_ca).iter().map(|p| p.1).collect();
        assert_eq!(ports, [1, 2].into(), "both ports written: {of_ca:?}");
        let table = |port: u8| {
            of_ca.iter().find_map(|r| match &r.req {
                Req::SetSl2Vl { port: p, table, .. } if p.0 == port => Some(*table),
                _ => None,
            })
        };
        assert_ne!(table(1), table(2), "the two ports want different SL2VL tables");
        ended(&mut q, &first, true);
        let none = q.table_sets(&s, false);
        assert!(none.is_empty(), "both ports' tables held: {none:?}");

        // Port 1's Sets fail, port 2's succeed after: port 1 is written again, and only it.
        let (one, two): (Vec<Request>, Vec<Request>) =
            of_ca.iter().cloned().partition(|r| places(std::slice::from_ref(r))[0].1 == 1);
        ended(&mut q, &one, false);
        ended(&mut q, &two, true);
        let again = q.table_sets(&s, false);
        assert_eq!(places(&again), places(&one), "port 1's tables again");
    }

    #[test]
    fn a_standby_adopts_the_digests_and_writes_only_what_differs_or_was_reset() {
        let s = qos_star();
        let setting = QosSetting::default();
        let mut master = Qos::default();
        master.resolve(&s, Some(&setting), 5);
        let sets = master.table_sets(&s, false);
        // Written in another order than computed: the digests do not depend on it.
        let mut reversed = sets.clone();
        reversed.reverse();
        ended(&mut master, &reversed, true);
        let digests = master.written_digests();
        assert_eq!(digests.len(), 4, "the switch and three CAs: {digests:?}");

        // Same setting: nothing to write.
        let mut standby = Qos::default();
        standby.adopt_written(digests.clone());
        standby.resolve(&s, Some(&setting), 5);
        let none = standby.table_sets(&s, false);
        assert!(none.is_empty(), "the old master's tables held: {none:?}");
        assert_eq!(standby.written_digests(), digests, "held as the old master held them");
        assert!(!standby.take_digests_changed());

        // One Set of the master failed: that node's tables of that kind are written, no more.
        let mut partial = master.clone();
        let failed = sets.iter().find(|r| matches!(r.req, Req::SetVlArb { .. })).expect("a VLArb Set").clone();
        ended(&mut partial, std::slice::from_ref(&failed), false);
        let mut standby = Qos::default();
        standby.adopt_written(partial.written_digests());
        standby.resolve(&s, Some(&setting), 5);
        let (guid, _, _) = places(std::slice::from_ref(&failed))[0];
        let want: Vec<(Guid, u8, u8)> = places(&sets).into_iter().filter(|p| p.0 == guid && p.2 == 1).collect();
        assert_eq!(places(&standby.table_sets(&s, false)), want, "the node's VLArb blocks, not its SL2VL");

        // Another arbitration setting on the standby: VLArb blocks only, of the nodes it changes.
        let mut options = ibsm_qos::QosOptions::default();
        options.set_opensm("qos_ca_vlarb_low", "0:0,1:64").expect("valid");
        let other = QosSetting { options, ..QosSetting::default() };
        let mut standby = Qos::default();
        standby.adopt_written(digests.clone());
        standby.resolve(&s, Some(&other), 5);
        let changed = standby.table_sets(&s, false);
        assert!(!changed.is_empty());
        assert!(changed.iter().all(|r| matches!(r.req, Req::SetVlArb { .. })), "{changed:?}");
        assert!(places(&changed).iter().all(|p| p.0 != Guid(0x20)), "the switch keeps its tables");

        // The switch reset before the takeover (no LID): all its tables, no one else's.
        let mut reset = s.clone();
        let sw = reset.by_guid[&Guid(0x20)];
        for rec in &mut reset.nodes[sw].ports {
            if let Some(info) = rec.info.as_mut() {
                info.lid = Lid::UNASSIGNED;
            }
        }
        let mut standby = Qos::default();
        standby.adopt_written(digests.clone());
        standby.resolve(&reset, Some(&setting), 5);
        let again = standby.table_sets(&reset, false);
        let of_switch: Vec<(Guid, u8, u8)> = places(&sets).into_iter().filter(|p| p.0 == Guid(0x20)).collect();
        assert_eq!(places(&again), of_switch);

        // A table about to change is no longer held: the digests are published again.
        let mut options = ibsm_qos::QosOptions::default();
        options.set_opensm("qos_sl2vl", "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0").expect("valid");
        let mut m = master.clone();
        assert!(!m.take_digests_changed());
        m.resolve(&s, Some(&QosSetting { options, ..QosSetting::default() }), 5);
        assert!(!m.table_sets(&s, false).is_empty());
        assert!(m.take_digests_changed());
        assert_ne!(m.written_digests(), digests);
    }
}

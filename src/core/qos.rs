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
//! want one table (modifier bit 16), held as if written pair by pair.
//!
//! It takes the subnet and the setting as arguments and answers with values; it sends nothing
//! and touches no other component's state.

use std::collections::{BTreeMap, HashMap};

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
    /// SL2VL tables this SM wrote: (node, input, output).
    held_sl2vl: HashMap<(Guid, u8, u8), SlToVlTable>,
    /// VL arbitration blocks this SM wrote: (node, port, block).
    held_vlarb: HashMap<(Guid, u8, u16), VlArbitrationTable>,
    /// Tables written.
    blocks_sent: u64,
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
    pub(crate) fn table_sets(&mut self, subnet: &Subnet, optimized: bool) -> Vec<Request> {
        let mut sets = Vec::new();
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
                self.held_sl2vl.retain(|k, _| k.0 != guid);
                self.held_vlarb.retain(|k, _| k.0 != guid);
            }
            for p in &want.ports {
                // Requests go to the switch (port 0 in the path), or through the CA's port.
                let port = if switch { PortNum(0) } else { PortNum(p.num) };
                let output = if switch { p.num } else { 0 };
                for (block, table) in &p.vlarb {
                    if self.held_vlarb.get(&(guid, output, *block)) == Some(table) {
                        continue;
                    }
                    let req = Req::SetVlArb { node: i, port, guid, output, block: *block, table: Box::new(*table) };
                    sets.push(Request::sweep(n.path_for(PortNum(p.num)), req));
                }
                if one_set
                    && let Some((_, first)) = p.sl2vl.first()
                    && p.sl2vl.iter().all(|(_, t)| t == first)
                {
                    if p.sl2vl.iter().any(|(input, _)| self.held_sl2vl.get(&(guid, *input, output)) != Some(first)) {
                        let req =
                            Req::SetSl2Vl { node: i, port, guid, input: 0, output, all_inputs: true, table: *first };
                        sets.push(Request::sweep(n.path_for(PortNum(p.num)), req));
                    }
                    continue;
                }
                for (input, table) in &p.sl2vl {
                    let key = (guid, if switch { *input } else { 0 }, output);
                    if self.held_sl2vl.get(&key) == Some(table) {
                        continue;
                    }
                    let req =
                        Req::SetSl2Vl { node: i, port, guid, input: key.1, output, all_inputs: false, table: *table };
                    sets.push(Request::sweep(n.path_for(PortNum(p.num)), req));
                }
            }
        }
        sets
    }

    /// An SL2VL Set ended: remember the table, or forget it so that it is written again.
    /// One Set may cover several input ports (the one-Set form): `inputs` lists them.
    pub fn on_sl2vl(&mut self, guid: Guid, (inputs, output): (&[u8], u8), table: &SlToVlTable, done: bool) {
        if done {
            self.blocks_sent += 1;
        }
        for &input in inputs {
            if done {
                self.held_sl2vl.insert((guid, input, output), *table);
            } else {
                self.held_sl2vl.remove(&(guid, input, output));
            }
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

    /// A VLArbitration Set ended: remember the block, or forget it.
    pub fn on_vlarb(&mut self, guid: Guid, (port, block): (u8, u16), table: &VlArbitrationTable, done: bool) {
        if done {
            self.blocks_sent += 1;
            self.held_vlarb.insert((guid, port, block), *table);
        } else {
            self.held_vlarb.remove(&(guid, port, block));
        }
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
        let mut s = star(0x2, 0x3);
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
                Req::SetSl2Vl { guid, input, output, table, .. } => {
                    q.on_sl2vl(*guid, (&[*input], *output), table, done);
                }
                Req::SetVlArb { guid, output, block, table, .. } => q.on_vlarb(*guid, (*output, *block), table, done),
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
}

//! PortInfoRecord (Get, GetTable): every port with a PortInfo, keyed by the LID of its end port
//! (a switch's port 0 LID for all its ports) and the port number (a CA port's own number, as
//! OpenSM gives it). M_Key is never shown.
//!
//! A requester, trusted or not, sees the ports it may see ([`Snapshot::visible_to`]), port by
//! port: a switch's port 0 by its partitions, the switch's external ports by their
//! enforcement tables, as OpenSM filters them.
//!
//! CapabilityMask and CapabilityMask2 match as the IBTA 1.2 errata has it (and as OpenSM
//! does): by equality, unless bit 31 of the AttributeModifier asks for the enhanced match
//! (ClassPortInfo advertises it), where a port matches when it has every bit the template
//! sets. `saquery -s` lists the SMs that way (CapabilityMask IsSM, enhanced).

use ibsm_mad::attrs::PortInfo;
use ibsm_mad::records::PortInfoRecord;
use ibsm_mad::{Attribute, MKey, PortNum};

use super::answer::Table;
use super::node_record::end_ports;
use super::snapshot::Snapshot;
use super::{Answer, Limits, Query};

/// AttributeModifier bit 31: CapabilityMask and CapabilityMask2 match bit by bit.
pub(super) const ENHANCED_CAP_MATCH: u32 = 1 << 31;

/// The capability components matched by meaning (every template bit set in the port's mask)
/// under the enhanced match, and the template they are matched against.
struct CapMatch {
    mask: u64,
    want: PortInfo,
}

impl CapMatch {
    fn of(q: &Query<'_>) -> Option<CapMatch> {
        let caps = PortInfoRecord::COMP_CAPABILITY_MASK | PortInfoRecord::COMP_CAPABILITY_MASK2;
        let mask = q.header.comp_mask & caps;
        if q.header.attr_mod & ENHANCED_CAP_MATCH == 0 || mask == 0 {
            return None;
        }
        let want = PortInfoRecord::parse(q.template).ok()?.port_info;
        Some(CapMatch { mask, want })
    }

    fn holds(&self, info: &PortInfo) -> bool {
        let w = &self.want;
        (self.mask & PortInfoRecord::COMP_CAPABILITY_MASK == 0
            || info.capability_mask.0 & w.capability_mask.0 == w.capability_mask.0)
            && (self.mask & PortInfoRecord::COMP_CAPABILITY_MASK2 == 0
                || info.capability_mask2.0 & w.capability_mask2.0 == w.capability_mask2.0)
    }
}

/// Get/GetTable(PortInfoRecord).
pub(super) fn query(snap: &Snapshot, q: &Query<'_>, limits: &Limits) -> Answer {
    let mut t = Table::new::<PortInfoRecord>(q, limits);
    let caps = CapMatch::of(q);
    let mask = q.header.comp_mask & !caps.as_ref().map_or(0, |c| c.mask);
    let requester = snap.by_lid(q.requester);
    'ends: for (n, end) in end_ports(snap, q, PortInfoRecord::COMP_ENDPORT_LID, 0) {
        let (Some(node), Some(end_port)) = (snap.node(n), snap.port((n, end))) else { continue };
        let ports: Vec<u8> = if node.is_switch() {
            (0..node.ports.len()).filter_map(|p| u8::try_from(p).ok()).collect()
        } else {
            vec![end]
        };
        for p in ports {
            // Each port as OpenSM filters it: a switch's port 0 by its partitions, its external
            // ports by their enforcement tables (none: visible).
            if !snap.visible_to(requester, (n, p)) {
                continue;
            }
            let Some(mut info) = node.ports.get(usize::from(p)).and_then(|r| r.info) else { continue };
            if caps.as_ref().is_some_and(|c| !c.holds(&info)) {
                continue;
            }
            info.m_key = MKey(0);
            let rec = PortInfoRecord { endport_lid: end_port.lid, port_num: PortNum(p), options: 0, port_info: info };
            if !t.offer_under(q, mask, &rec) {
                break 'ends;
            }
        }
    }
    t.answer(q, limits)
}

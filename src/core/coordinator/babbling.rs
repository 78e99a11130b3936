//! The coordinator's side of the babbling-port policy ([`crate::core::babbling::Babbling`]): a
//! trap is counted for the port it names, a port past the limit has the end of its cable nearer
//! to the SM disabled (PortState Down, PortPhysicalState Disabled), and at the end of the
//! back-off the same port is set to Polling so that the link trains again. Those Sets are
//! toggles, as `ibsm port disable|enable` sends them: their answers are not taken into the
//! subnet, and a heavy sweep follows each (the switch's trap 128 for the link's change may be
//! lost). Each change of the ports disabled is published to the standbys at once, so a new
//! master keeps them disabled and enables them when their back-off ends; a standby's list is
//! replaced by each one it syncs (`sync_sections`) and a handover empties the old master's
//! (`mastership`). Only a master acts; the policy is off unless `babbling-port-policy` is on.

use ibsm_mad::attrs::{Notice, NoticeDetails, PhysPortState, PortState};
use ibsm_mad::{Lid, PortNum};

use crate::core::Sm;
use crate::core::events::SmEvent;
use crate::core::state::{NodeIdx, SmState, Subnet, port_info_set};
use crate::core::transactions::{PlannedInfo, PortStep, Req, Request};
use crate::sync::Section;

impl Sm {
    /// Counts an acknowledged trap from `from` for the port it names (a trap 129-131 names its
    /// port; any other trap from a CA or router counts for the port the LID is on) and disables
    /// the nearer end of that port's cable when the count passes the limit.
    pub(in crate::core) fn count_babble(&mut self, from: Lid, notice: Option<&Notice>) {
        let cfg = self.cfg.babbling;
        if !cfg.enabled || self.state != SmState::Master {
            return;
        }
        let Some(n) = notice else { return };
        let (lid, named) = match n.details {
            NoticeDetails::PortHealth { lid, port, .. } => (lid, Some(port)),
            _ => (from, None),
        };
        let Some((guid, is_switch, at)) = self.sa.snapshot().and_then(|s| {
            let at = s.by_lid(lid)?;
            let node = s.node(at.0)?;
            Some((node.info.node_guid, node.is_switch(), at.1))
        }) else {
            return;
        };
        let port = match named {
            Some(p) => p,
            None if !is_switch => PortNum(at),
            None => return,
        };
        let Some(&idx) = self.subnet.by_guid.get(&guid) else { return };
        if port.0 == 0 {
            return; // a switch's management port has no cable to disable
        }
        let Some(traps) = self.babbling.on_trap(&cfg, (guid, port.0), self.now) else { return };
        let (t_idx, t_port) = nearer_end(&self.subnet, idx, port);
        if self.subnet.local == Some((t_idx, t_port)) {
            return; // never the SM's own port: it would cut the SM off
        }
        let Some(t_guid) = self.subnet.node(t_idx).map(|n| n.info.node_guid) else { return };
        if self.babbling.is_disabled((t_guid, t_port.0)) {
            return;
        }
        if self.set_phys(t_idx, t_port, PhysPortState::Disabled) {
            self.babbling.disabled(&cfg, (t_guid, t_port.0), (guid, port.0), traps, self.now);
            self.events.push_back(SmEvent::BabblingPort {
                node: t_guid,
                port: t_port,
                babbler: (guid, port),
                traps,
                disabled: true,
            });
            self.publish(&[Section::BabblingPorts]);
        }
    }

    /// Enables again the ports whose back-off has ended (a master only; a standby holds the
    /// master's list and deadlines, and enables them once it is master).
    pub(in crate::core) fn babbling_timer(&mut self) {
        if self.state != SmState::Master {
            return;
        }
        let due = self.babbling.take_due(self.now);
        if !due.is_empty() {
            self.publish(&[Section::BabblingPorts]);
        }
        for (guid, p) in due {
            let Some(&idx) = self.subnet.by_guid.get(&guid) else { continue };
            let port = PortNum(p);
            if self.set_phys(idx, port, PhysPortState::Polling) {
                self.events.push_back(SmEvent::BabblingPort {
                    node: guid,
                    port,
                    babbler: (guid, port),
                    traps: 0,
                    disabled: false,
                });
            }
        }
    }

    /// Queues a PortInfo Set of `phys` on `port` of node `idx` (Disabled also takes PortState
    /// Down); false when the port's PortInfo is unknown.
    fn set_phys(&mut self, idx: NodeIdx, port: PortNum, phys: PhysPortState) -> bool {
        let Some(n) = self.subnet.node(idx) else { return false };
        let Some(rec) = n.port(port) else { return false };
        let Some(info) = rec.info else { return false };
        let mut set = port_info_set(&info);
        set.port_physical_state = phys;
        if phys == PhysPortState::Disabled {
            set.port_state = PortState::Down;
        }
        if !n.is_switch() {
            self.cfg.m_key.apply(rec.guid, &mut set);
        }
        let req = Req::SetPortInfo { node: idx, port, info: PlannedInfo::one(set), step: PortStep::Toggle };
        self.tx.push(Request::sweep(n.path_for(port), req));
        true
    }
}

/// The end of `port`'s cable nearer to the SM (fewer directed-route hops), as OpenSM picks it:
/// the far end of a babbling link may be the one that does not answer.
fn nearer_end(subnet: &Subnet, idx: NodeIdx, port: PortNum) -> (NodeIdx, PortNum) {
    let hops = |i: NodeIdx, p: PortNum| subnet.node(i).map_or(u8::MAX, |n| n.path_for(p).hop_count());
    match subnet.node(idx).and_then(|n| n.port(port)).and_then(|r| r.remote) {
        Some((rn, rp)) if hops(rn, rp) < hops(idx, port) => (rn, rp),
        _ => (idx, port),
    }
}

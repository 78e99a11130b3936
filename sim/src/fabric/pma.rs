//! The performance management agent (PMA, class 0x04) of every simulated node.
//!
//! Owns: the answers to PerfMgt Get/Set of ClassPortInfo, PortCounters and PortCountersExtended
//! on QP1, like ibsim's PMA, from the port counters of `counters` ([`PortPerf`]), and the
//! fabric's side of counting (packets crossing cables, a [`super::ErrorRate`] fault given to a
//! cable).
//!
//! What is counted: a MAD that leaves a port onto its cable adds 1 to that port's PortXmitPkts
//! (and PortUnicastXmitPkts: every MAD is unicast) and [`MAD_DATA_WORDS`] (72) to PortXmitData;
//! one that arrives adds the same to the receiving port's Rcv counters. Data counters count
//! 4-byte words, as the IBTA defines them (LRH + BTH + DETH + 256-byte MAD + ICRC = 288 octets =
//! 72 words; ibsim counts the same). A packet a fault rule drops on the cable counts as sent,
//! not as received. Nothing that does not cross a cable is counted (a switch's port 0, a
//! directed-route SMP to the node itself). Counters are kept 64-bit; PortCounters reports them
//! saturated to its field widths (32-bit data, 16/8/4-bit errors), PortCountersExtended reports
//! them whole. PortXmitWait stays 0 (the sim has no credit stalls). A node restart clears its
//! counters.
//!
//! Answers: switches advertise CapabilityMask 0x1300 (AllPortSelect, IsExtendedWidthSupported,
//! PortCountersXmitWaitSupported), CAs 0x1200, as ibsim does. `PortSelect` names a port of the
//! node (0..=NumPorts on a switch, 1..=NumPorts on a CA); 0xFF on a switch sums (Get) or clears
//! (Set) all its ports. Another port number gives status 0x001c. A Set clears the counters its
//! `CounterSelect` (and `CounterSelect2` bit 0, PortXmitWait) names and answers with the counters
//! after clearing; Set(ClassPortInfo) and other attributes give 0x000c, a class version other than
//! 1 gives 0x0004. Only Get and Set reach the PMA: other PerfMgt methods (a Send, which tests use
//! as plain data-plane traffic) go to an agent at the port as any GSI MAD does. The PMA shares the node's management processor:
//! its answers queue behind SMPs with the same service time ([`super::Timing`]).

use ibsm_mad::header::{Mad, Method};
use ibsm_mad::perf::{PERF_DATA_OFFSET, PmCapabilities, PortCounters, PortCountersExtended};
use ibsm_mad::records::ClassPortInfo;
use ibsm_mad::{Attribute, MAD_LEN, ids};

use super::counters::{ErrorRate, PerfSum};
use super::deliver::Packet;
use super::state::PortRef;
use super::{Dest, Fabric};
use crate::topology::NodeKind;

/// CapabilityMask a switch's PMA advertises (as ibsim's).
const SWITCH_PM_CAPS: u16 =
    PmCapabilities::ALL_PORT_SELECT | PmCapabilities::EXTENDED_WIDTH | PmCapabilities::XMIT_WAIT;
/// CapabilityMask a CA's PMA advertises (as ibsim's).
const CA_PM_CAPS: u16 = PmCapabilities::EXTENDED_WIDTH | PmCapabilities::XMIT_WAIT;

impl Fabric {
    /// The PMA of the node owning port `p` (a CA port, or a switch's port 0) answers a PerfMgt
    /// request that arrived there; the answer leaves when the node's management processor is
    /// done with what came before.
    pub(crate) fn pma_answer(&mut self, p: PortRef, pkt: &Packet) {
        let node = self.ports[p as usize].node as usize;
        if !self.nodes[node].alive {
            self.stats.dropped_unreachable += 1;
            return;
        }
        let mut mad = *pkt.mad;
        let status = self.pma(node, &mut mad);
        mad[3] = Method::GetResp.raw();
        ibsm_mad::bits::put_u16(&mut mad, 4, status);
        self.stats.pma_answered += 1;
        let at = self.sma_slot(node);
        let dest = Dest { dlid: pkt.slid, qpn: 1 };
        let src = self.reply_port(p);
        self.inject(at, src, mad, dest, Some(pkt.pkey.0));
    }

    /// Handles one PerfMgt request in place (data area rewritten); returns the MAD status.
    fn pma(&mut self, node: usize, mad: &mut [u8; MAD_LEN]) -> u16 {
        let hdr = Mad::new_unchecked(&mad[..]);
        let (method, attr) = (hdr.method(), hdr.attr_id());
        if hdr.class_version() != 1 {
            return ids::status::BAD_VERSION;
        }
        if !matches!(method, Method::Get | Method::Set) {
            return ids::status::BAD_METHOD;
        }
        let is_set = method == Method::Set;
        let is_switch = self.nodes[node].kind == NodeKind::Switch;
        let data = &mut mad[PERF_DATA_OFFSET..];
        match attr {
            ids::perf_attr::CLASS_PORT_INFO if !is_set => {
                let cpi = ClassPortInfo {
                    base_version: 1,
                    class_version: 1,
                    capability_mask: if is_switch { SWITCH_PM_CAPS } else { CA_PM_CAPS },
                    resp_time_value: 18,
                    ..ClassPortInfo::default()
                };
                data.fill(0);
                cpi.emit(data);
                ids::status::OK
            }
            ids::perf_attr::PORT_COUNTERS | ids::perf_attr::PORT_COUNTERS_EXTENDED => {
                let port_select = data[1];
                let Some(ports) = self.selected_ports(node, port_select) else {
                    return ids::status::BAD_FIELD;
                };
                let now = self.now;
                let mut sum = PerfSum::default();
                for q in ports.clone() {
                    let received = self.received(q);
                    let perf = &mut self.ports[q as usize].perf;
                    perf.settle(now);
                    if is_set {
                        if attr == ids::perf_attr::PORT_COUNTERS {
                            let Ok(req) = PortCounters::parse(data) else { return ids::status::BAD_FIELD };
                            perf.clear(req.counter_select, req.counter_select2, received);
                        } else {
                            let Ok(req) = PortCountersExtended::parse(data) else { return ids::status::BAD_FIELD };
                            perf.clear_ext(req.counter_select, received);
                        }
                    }
                    sum.add(perf, received);
                }
                if attr == ids::perf_attr::PORT_COUNTERS {
                    let mut out = sum.port_counters(port_select);
                    if let Ok(req) = PortCounters::parse(data) {
                        out.counter_select = req.counter_select;
                        out.counter_select2 = req.counter_select2;
                    }
                    data.fill(0);
                    out.emit(data);
                } else {
                    let mut out = sum.port_counters_ext(port_select);
                    if let Ok(req) = PortCountersExtended::parse(data) {
                        out.counter_select = req.counter_select;
                    }
                    data.fill(0);
                    out.emit(data);
                }
                ids::status::OK
            }
            _ => ids::status::BAD_METHOD_ATTR,
        }
    }

    /// The ports `PortSelect` names at `node`, or `None` when it names none.
    fn selected_ports(&self, node: usize, sel: u8) -> Option<core::ops::Range<PortRef>> {
        let n = &self.nodes[node];
        let first = n.first_port;
        if n.kind == NodeKind::Switch {
            return match sel {
                ibsm_mad::perf::ALL_PORTS => Some(first..first + PortRef::from(n.num_ports) + 1),
                s if s <= n.num_ports => Some(first + PortRef::from(s)..first + PortRef::from(s) + 1),
                _ => None,
            };
        }
        if sel == 0 || sel > n.num_ports {
            return None;
        }
        let q = self.port_ref(node, sel)?;
        Some(q..q + 1)
    }

    /// The counters of `node`'s `port` at the fabric's current time, whole: PortCountersExtended
    /// with the 64-bit error counters and PortXmitWait filled in as well (which the PMA does
    /// not advertise). For tests that hold a performance manager's figures against the
    /// fabric's own counts without sending a MAD. `None` for a port the node does not have.
    pub fn port_counters_now(&mut self, node: usize, port: u8) -> Option<PortCountersExtended> {
        let p = self.port_ref(node, port)?;
        let now = self.now;
        let received = self.received(p);
        let perf = &mut self.ports[p as usize].perf;
        perf.settle(now);
        let e = perf.errors();
        let mut one = PerfSum::default();
        one.add(perf, received);
        Some(PortCountersExtended {
            symbol_errors: e.symbol_errors,
            link_error_recovery: e.link_error_recovery,
            link_downed: e.link_downed,
            rcv_errors: e.rcv_errors,
            rcv_remote_physical_errors: e.rcv_remote_physical_errors,
            rcv_switch_relay_errors: e.rcv_switch_relay_errors,
            xmit_discards: e.xmit_discards,
            xmit_constraint_errors: e.xmit_constraint_errors,
            rcv_constraint_errors: e.rcv_constraint_errors,
            local_link_integrity_errors: e.local_link_integrity_errors,
            excessive_buffer_overrun_errors: e.excessive_buffer_overrun_errors,
            vl15_dropped: e.vl15_dropped,
            xmit_wait: e.xmit_wait,
            ..one.port_counters_ext(port)
        })
    }

    /// The MADs port `p` received from its cable since its power-on: what the peer delivered
    /// onto the cable, from where `p`'s count starts (see [`super::counters::PortPerf`]).
    pub(crate) fn received(&self, p: PortRef) -> u64 {
        let port = &self.ports[p as usize];
        let delivered = port.peer.map_or(0, |q| self.ports[q as usize].perf.delivered());
        port.perf.received(delivered)
    }

    /// Gives the cable at `node`/`port` (both its ends) an error rate.
    pub(crate) fn set_link_errors(&mut self, node: usize, port: u8, rate: ErrorRate) {
        let Some(p) = self.port_ref(node, port) else { return };
        let now = self.now;
        let peer = self.ports[p as usize].peer;
        for q in std::iter::once(p).chain(peer) {
            self.ports[q as usize].perf.set_rate(rate, now);
        }
    }
}

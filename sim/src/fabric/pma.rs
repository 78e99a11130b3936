//! The performance management agent (PMA, class 0x04) of every simulated node, and the port
//! counters it reports.
//!
//! Owns: per-port traffic and error counters ([`PortPerf`]), their counting as packets cross
//! cables, the error rates a [`super::ErrorRate`] fault gives a cable, and the answers to
//! PerfMgt Get/Set of ClassPortInfo, PortCounters and PortCountersExtended on QP1, like
//! ibsim's PMA.
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
use ibsm_mad::perf::{
    COUNTER_SELECT2_XMIT_WAIT, CounterSelect, CounterSelectExt, MAD_DATA_WORDS, PERF_DATA_OFFSET, PmCapabilities,
    PortCounters, PortCountersExtended,
};
use ibsm_mad::records::ClassPortInfo;
use ibsm_mad::{Attribute, MAD_LEN, ids};

use super::deliver::Packet;
use super::fault::ErrorRate;
use super::state::PortRef;
use super::{Dest, Fabric, SimTime};
use crate::topology::NodeKind;

/// One second of virtual time, the default error-rate interval.
const SECOND_NS: u64 = 1_000_000_000;

/// Error counters of a port (64-bit; reported saturated by PortCounters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ErrorCounters {
    pub symbol_errors: u64,
    pub link_error_recovery: u64,
    pub link_downed: u64,
    pub rcv_errors: u64,
    pub rcv_remote_physical_errors: u64,
    pub rcv_switch_relay_errors: u64,
    pub xmit_discards: u64,
    pub xmit_constraint_errors: u64,
    pub rcv_constraint_errors: u64,
    pub local_link_integrity_errors: u64,
    pub excessive_buffer_overrun_errors: u64,
    pub vl15_dropped: u64,
    pub xmit_wait: u64,
}

/// An error rate in force on a port, with the time its errors were last added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ActiveRate {
    rate: ErrorRate,
    since: SimTime,
    /// Sub-unit remainders of symbol, receive and link-downed errors (numerators over the
    /// interval), so that no error is lost between settlements.
    carry: [u128; 3],
}

/// What a port has seen besides its traffic: kept apart so that a quiet port costs one pointer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct PerfExtra {
    errors: ErrorCounters,
    rate: Option<ActiveRate>,
}

/// The counters of one port: traffic totals since the last clear, and (boxed, allocated on first
/// use) errors and an error rate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PortPerf {
    pub xmit_words: u64,
    pub rcv_words: u64,
    pub xmit_pkts: u64,
    pub rcv_pkts: u64,
    /// Unicast packets are all packets here, but a Set may clear them apart.
    pub unicast_xmit_pkts: u64,
    pub unicast_rcv_pkts: u64,
    extra: Option<Box<PerfExtra>>,
}

impl PortPerf {
    /// One MAD left the port onto its cable.
    pub fn count_xmit(&mut self) {
        self.xmit_words = self.xmit_words.wrapping_add(MAD_DATA_WORDS);
        self.xmit_pkts = self.xmit_pkts.wrapping_add(1);
        self.unicast_xmit_pkts = self.unicast_xmit_pkts.wrapping_add(1);
    }

    /// One MAD arrived at the port from its cable.
    pub fn count_rcv(&mut self) {
        self.rcv_words = self.rcv_words.wrapping_add(MAD_DATA_WORDS);
        self.rcv_pkts = self.rcv_pkts.wrapping_add(1);
        self.unicast_rcv_pkts = self.unicast_rcv_pkts.wrapping_add(1);
    }

    /// The error counters (zero when none was ever counted).
    pub fn errors(&self) -> ErrorCounters {
        self.extra.as_ref().map(|e| e.errors).unwrap_or_default()
    }

    fn extra(&mut self) -> &mut PerfExtra {
        self.extra.get_or_insert_with(Box::default)
    }

    /// Sets (or, with a zero rate, ends) the port's error rate from `now`, after adding the
    /// errors the previous rate produced until `now`.
    pub fn set_rate(&mut self, rate: ErrorRate, now: SimTime) {
        self.settle(now);
        let rate = (!rate.is_zero()).then_some(ActiveRate { rate, since: now, carry: [0; 3] });
        if rate.is_some() || self.extra.is_some() {
            self.extra().rate = rate;
        }
    }

    /// Adds the errors the port's error rate produced between the last settlement and `now`.
    pub fn settle(&mut self, now: SimTime) {
        let Some(extra) = self.extra.as_mut() else { return };
        let Some(active) = extra.rate.as_mut() else { return };
        let interval = u128::from(if active.rate.interval_ns == 0 { SECOND_NS } else { active.rate.interval_ns });
        let elapsed = u128::from(now.0.saturating_sub(active.since.0));
        active.since = active.since.max(now);
        let per = [active.rate.symbol_errors, active.rate.rcv_errors, active.rate.link_downed];
        let mut add = [0u64; 3];
        for i in 0..3 {
            let total = elapsed * u128::from(per[i]) + active.carry[i];
            add[i] = u64::try_from(total / interval).unwrap_or(u64::MAX);
            active.carry[i] = total % interval;
        }
        let e = &mut extra.errors;
        e.symbol_errors = e.symbol_errors.saturating_add(add[0]);
        e.rcv_errors = e.rcv_errors.saturating_add(add[1]);
        e.link_downed = e.link_downed.saturating_add(add[2]);
    }

    /// Power-on: every counter back to zero; the cable's error rate (a property of the cable)
    /// stays, counting from `now`.
    pub fn power_on(&mut self, now: SimTime) {
        let rate = self.extra.as_ref().and_then(|e| e.rate).map(|r| r.rate);
        *self = PortPerf::default();
        if let Some(r) = rate {
            self.set_rate(r, now);
        }
    }

    /// PortCounters as the PMA reports them: each counter saturated to its field width.
    fn port_counters(&self, port_select: u8) -> PortCounters {
        let e = self.errors();
        PortCounters {
            port_select,
            symbol_errors: sat(e.symbol_errors),
            link_error_recovery: sat(e.link_error_recovery),
            link_downed: sat(e.link_downed),
            rcv_errors: sat(e.rcv_errors),
            rcv_remote_physical_errors: sat(e.rcv_remote_physical_errors),
            rcv_switch_relay_errors: sat(e.rcv_switch_relay_errors),
            xmit_discards: sat(e.xmit_discards),
            xmit_constraint_errors: sat(e.xmit_constraint_errors),
            rcv_constraint_errors: sat(e.rcv_constraint_errors),
            local_link_integrity_errors: sat::<u8>(e.local_link_integrity_errors).min(0x0f),
            excessive_buffer_overrun_errors: sat::<u8>(e.excessive_buffer_overrun_errors).min(0x0f),
            vl15_dropped: sat(e.vl15_dropped),
            xmit_data: sat(self.xmit_words),
            rcv_data: sat(self.rcv_words),
            xmit_pkts: sat(self.xmit_pkts),
            rcv_pkts: sat(self.rcv_pkts),
            xmit_wait: sat(e.xmit_wait),
            ..PortCounters::default()
        }
    }

    /// PortCountersExtended as the PMA reports it (the additional error counters are not
    /// advertised, so they read 0).
    fn port_counters_ext(&self, port_select: u8) -> PortCountersExtended {
        PortCountersExtended {
            port_select,
            xmit_data: self.xmit_words,
            rcv_data: self.rcv_words,
            xmit_pkts: self.xmit_pkts,
            rcv_pkts: self.rcv_pkts,
            unicast_xmit_pkts: self.unicast_xmit_pkts,
            unicast_rcv_pkts: self.unicast_rcv_pkts,
            ..PortCountersExtended::default()
        }
    }

    /// Clears what a Set(PortCounters) selects.
    fn clear(&mut self, sel: CounterSelect, sel2: u8) {
        let has = |bit: CounterSelect| sel.contains(bit);
        if has(CounterSelect::XMIT_DATA) {
            self.xmit_words = 0;
        }
        if has(CounterSelect::RCV_DATA) {
            self.rcv_words = 0;
        }
        if has(CounterSelect::XMIT_PKTS) {
            self.xmit_pkts = 0;
        }
        if has(CounterSelect::RCV_PKTS) {
            self.rcv_pkts = 0;
        }
        let Some(extra) = self.extra.as_mut() else { return };
        let e = &mut extra.errors;
        let fields: [(CounterSelect, &mut u64); 12] = [
            (CounterSelect::SYMBOL_ERRORS, &mut e.symbol_errors),
            (CounterSelect::LINK_ERROR_RECOVERY, &mut e.link_error_recovery),
            (CounterSelect::LINK_DOWNED, &mut e.link_downed),
            (CounterSelect::RCV_ERRORS, &mut e.rcv_errors),
            (CounterSelect::RCV_REMOTE_PHYSICAL_ERRORS, &mut e.rcv_remote_physical_errors),
            (CounterSelect::RCV_SWITCH_RELAY_ERRORS, &mut e.rcv_switch_relay_errors),
            (CounterSelect::XMIT_DISCARDS, &mut e.xmit_discards),
            (CounterSelect::XMIT_CONSTRAINT_ERRORS, &mut e.xmit_constraint_errors),
            (CounterSelect::RCV_CONSTRAINT_ERRORS, &mut e.rcv_constraint_errors),
            (CounterSelect::LOCAL_LINK_INTEGRITY_ERRORS, &mut e.local_link_integrity_errors),
            (CounterSelect::EXCESSIVE_BUFFER_OVERRUN_ERRORS, &mut e.excessive_buffer_overrun_errors),
            (CounterSelect::VL15_DROPPED, &mut e.vl15_dropped),
        ];
        for (bit, v) in fields {
            if sel.contains(bit) {
                *v = 0;
            }
        }
        if sel2 & COUNTER_SELECT2_XMIT_WAIT != 0 {
            e.xmit_wait = 0;
        }
    }

    /// Clears what a Set(PortCountersExtended) selects.
    fn clear_ext(&mut self, sel: CounterSelectExt) {
        let fields: [(CounterSelectExt, &mut u64); 6] = [
            (CounterSelectExt::XMIT_DATA, &mut self.xmit_words),
            (CounterSelectExt::RCV_DATA, &mut self.rcv_words),
            (CounterSelectExt::XMIT_PKTS, &mut self.xmit_pkts),
            (CounterSelectExt::RCV_PKTS, &mut self.rcv_pkts),
            (CounterSelectExt::UNICAST_XMIT_PKTS, &mut self.unicast_xmit_pkts),
            (CounterSelectExt::UNICAST_RCV_PKTS, &mut self.unicast_rcv_pkts),
        ];
        for (bit, v) in fields {
            if sel.contains(bit) {
                *v = 0;
            }
        }
    }

    /// Adds another port's counters (for PortSelect 0xFF), saturating.
    fn add(&mut self, o: &PortPerf) {
        self.xmit_words = self.xmit_words.saturating_add(o.xmit_words);
        self.rcv_words = self.rcv_words.saturating_add(o.rcv_words);
        self.xmit_pkts = self.xmit_pkts.saturating_add(o.xmit_pkts);
        self.rcv_pkts = self.rcv_pkts.saturating_add(o.rcv_pkts);
        self.unicast_xmit_pkts = self.unicast_xmit_pkts.saturating_add(o.unicast_xmit_pkts);
        self.unicast_rcv_pkts = self.unicast_rcv_pkts.saturating_add(o.unicast_rcv_pkts);
        let (theirs, ours) = (o.errors(), self.errors());
        if theirs != ErrorCounters::default() {
            let sum = &mut self.extra().errors;
            let add = |x: u64, y: u64| x.saturating_add(y);
            *sum = ErrorCounters {
                symbol_errors: add(theirs.symbol_errors, ours.symbol_errors),
                link_error_recovery: add(theirs.link_error_recovery, ours.link_error_recovery),
                link_downed: add(theirs.link_downed, ours.link_downed),
                rcv_errors: add(theirs.rcv_errors, ours.rcv_errors),
                rcv_remote_physical_errors: add(theirs.rcv_remote_physical_errors, ours.rcv_remote_physical_errors),
                rcv_switch_relay_errors: add(theirs.rcv_switch_relay_errors, ours.rcv_switch_relay_errors),
                xmit_discards: add(theirs.xmit_discards, ours.xmit_discards),
                xmit_constraint_errors: add(theirs.xmit_constraint_errors, ours.xmit_constraint_errors),
                rcv_constraint_errors: add(theirs.rcv_constraint_errors, ours.rcv_constraint_errors),
                local_link_integrity_errors: add(theirs.local_link_integrity_errors, ours.local_link_integrity_errors),
                excessive_buffer_overrun_errors: add(theirs.excessive_buffer_overrun_errors, ours.excessive_buffer_overrun_errors),
                vl15_dropped: add(theirs.vl15_dropped, ours.vl15_dropped),
                xmit_wait: add(theirs.xmit_wait, ours.xmit_wait),
            };
        }
    }
}

/// `v` saturated to the width of `T`.
fn sat<T: TryFrom<u64> + Bounded>(v: u64) -> T {
    T::try_from(v).unwrap_or(T::MAX)
}

/// The maximum of an unsigned counter type.
trait Bounded {
    const MAX: Self;
}
impl Bounded for u8 {
    const MAX: u8 = u8::MAX;
}
impl Bounded for u16 {
    const MAX: u16 = u16::MAX;
}
impl Bounded for u32 {
    const MAX: u32 = u32::MAX;
}

/// CapabilityMask a switch's PMA advertises (as ibsim's).
const SWITCH_PM_CAPS: u16 = PmCapabilities::ALL_PORT_SELECT | PmCapabilities::EXTENDED_WIDTH | PmCapabilities::XMIT_WAIT;
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
        let mut mad = pkt.mad;
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
                let mut sum = PortPerf::default();
                for q in ports.clone() {
                    let perf = &mut self.ports[q as usize].perf;
                    perf.settle(now);
                    if is_set {
                        if attr == ids::perf_attr::PORT_COUNTERS {
                            let Ok(req) = PortCounters::parse(data) else { return ids::status::BAD_FIELD };
                            perf.clear(req.counter_select, req.counter_select2);
                        } else {
                            let Ok(req) = PortCountersExtended::parse(data) else { return ids::status::BAD_FIELD };
                            perf.clear_ext(req.counter_select);
                        }
                    }
                    sum.add(perf);
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

#[cfg(test)]
mod tests {
    use super::*;

    const RATE: ErrorRate = ErrorRate { symbol_errors: 4, rcv_errors: 1, link_downed: 0, interval_ns: 1_000_000_000 };

    #[test]
    fn power_on_clears_counters_and_keeps_the_cable_rate() {
        let mut p = PortPerf::default();
        p.count_xmit();
        p.count_rcv();
        p.set_rate(RATE, SimTime(0));
        p.settle(SimTime::from_millis(2_000));
        assert_eq!((p.errors().symbol_errors, p.errors().rcv_errors), (8, 2));
        p.power_on(SimTime::from_millis(2_000));
        assert_eq!((p.xmit_pkts, p.rcv_words, p.errors()), (0, 0, ErrorCounters::default()));
        p.settle(SimTime::from_millis(3_000));
        assert_eq!(p.errors().symbol_errors, 4, "the rate counts on from the restart");
    }

    #[test]
    fn all_port_select_sums_and_a_set_clears_by_mask() {
        let (mut a, mut b) = (PortPerf::default(), PortPerf::default());
        for _ in 0..3 {
            a.count_xmit();
        }
        b.count_rcv();
        let mut sum = PortPerf::default();
        sum.add(&a);
        sum.add(&b);
        let pc = sum.port_counters(ibsm_mad::perf::ALL_PORTS);
        assert_eq!((pc.xmit_pkts, pc.rcv_pkts, pc.xmit_data, pc.rcv_data), (3, 1, 216, 72));
        a.clear(CounterSelect::XMIT_PKTS, 0);
        assert_eq!((a.xmit_pkts, a.xmit_words), (0, 216));
    }
}

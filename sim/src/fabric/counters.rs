//! Port counters of the simulated fabric: per-port traffic and error counts ([`PortPerf`]),
//! their counting as packets cross cables, and the error rates a cable can be given
//! ([`ErrorRate`]), settled deterministically over virtual time. The PMA (`pma`) reports them;
//! the port state (`state`) holds one per port. A leaf module: it imports no other file of
//! the fabric.

use ibsm_mad::perf::{
    COUNTER_SELECT2_XMIT_WAIT, CounterSelect, CounterSelectExt, MAD_DATA_WORDS, PortCounters, PortCountersExtended,
};

use super::SimTime;

/// An error rate on a cable, as a bad cable or transceiver produces: every `interval_ns` of
/// virtual time, the ports at **both** ends of the cable count `symbol_errors` more
/// SymbolErrorCounter, `rcv_errors` more PortRcvErrors and `link_downed` more LinkDownedCounter
/// (spread evenly over the interval, deterministically: after `k` whole intervals exactly `k`
/// times each). Only the counters change: packets still pass (add a [`LinkRule`] to drop
/// some) and the link stays up (use [`Fault::LinkDown`] to flap it). All zero ends the fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ErrorRate {
    /// SymbolErrorCounter increments per interval.
    pub symbol_errors: u32,
    /// PortRcvErrors increments per interval.
    pub rcv_errors: u32,
    /// LinkDownedCounter increments per interval.
    pub link_downed: u32,
    /// The interval, ns of virtual time (0 is taken as 1 s).
    pub interval_ns: u64,
}

impl ErrorRate {
    /// No errors: the rate that ends the fault.
    pub fn is_zero(&self) -> bool {
        self.symbol_errors == 0 && self.rcv_errors == 0 && self.link_downed == 0
    }
}

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

/// What a port has seen besides its MAD counts: kept apart so that a quiet port costs one
/// pointer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct PerfExtra {
    errors: ErrorCounters,
    rate: Option<ActiveRate>,
    /// Where each traffic counter was last cleared, in MADs sent or received since power-on
    /// (indexed as [`Traffic::COUNTERS`]): a counter reads the MADs counted since.
    cleared: [u64; 6],
    /// MADs sent that a fault rule dropped on the cable (they never reached the peer).
    lost: u64,
    /// What the peer had delivered to this port before this port's power-on, less what it
    /// delivered before its own (see [`PortPerf::delivered`]).
    rcv_base: u64,
}

/// Traffic counters as the PMA reports them (data in 4-byte words).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Traffic {
    pub xmit_words: u64,
    pub rcv_words: u64,
    pub xmit_pkts: u64,
    pub rcv_pkts: u64,
    /// Unicast packets are all packets here, but a Set may clear them apart.
    pub unicast_xmit_pkts: u64,
    pub unicast_rcv_pkts: u64,
}

impl Traffic {
    /// The six counters in order: whether each counts sent MADs (else received ones), and
    /// whether in data words (else packets).
    const COUNTERS: [(bool, bool); 6] =
        [(true, true), (false, true), (true, false), (false, false), (true, false), (false, false)];

    fn from_array(v: [u64; 6]) -> Traffic {
        Traffic {
            xmit_words: v[0],
            rcv_words: v[1],
            xmit_pkts: v[2],
            rcv_pkts: v[3],
            unicast_xmit_pkts: v[4],
            unicast_rcv_pkts: v[5],
        }
    }

    fn to_array(self) -> [u64; 6] {
        [self.xmit_words, self.rcv_words, self.xmit_pkts, self.rcv_pkts, self.unicast_xmit_pkts, self.unicast_rcv_pkts]
    }
}

/// The counters of one port: the MADs it sent onto its cable since power-on (every traffic
/// counter derives from them and from the peer's, as only MADs cross the simulated cables),
/// and (boxed, allocated on first use) errors, an error rate, where each traffic counter was
/// last cleared, and the MADs a fault rule dropped on the cable. 16 bytes for a port whose
/// counters were never cleared or given errors.
///
/// A port does not count what it receives: a hop would then write the record of the port at
/// the cable's far end, a second cache miss a hop on a large fabric. What a port received is
/// what its peer delivered onto the cable (sent, less what a fault rule dropped), from the
/// port's power-on: [`PortPerf::received`] with the peer's [`PortPerf::delivered`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct PortPerf {
    sent: u64,
    extra: Option<Box<PerfExtra>>,
}

impl PortPerf {
    /// Bytes from the start of a `PortPerf` to the end of its MAD count (what a hop touches).
    #[cfg(test)]
    pub(crate) const COUNTS_LEN: usize = std::mem::offset_of!(PortPerf, sent) + 8;

    /// One MAD left the port onto its cable.
    #[inline]
    pub fn count_xmit(&mut self) {
        self.sent = self.sent.wrapping_add(1);
    }

    /// The last MAD counted by [`PortPerf::count_xmit`] was dropped on the cable (a fault
    /// rule): the peer does not receive it.
    pub fn count_lost(&mut self) {
        let extra = self.extra();
        extra.lost = extra.lost.wrapping_add(1);
    }

    /// MADs this port put on its cable that reached the far end, since its power-on.
    pub fn delivered(&self) -> u64 {
        self.sent.wrapping_sub(self.extra.as_ref().map_or(0, |e| e.lost))
    }

    /// MADs this port received since its power-on, given what its peer has
    /// [`PortPerf::delivered`] (0 for a port without a cable).
    pub fn received(&self, peer_delivered: u64) -> u64 {
        peer_delivered.wrapping_sub(self.extra.as_ref().map_or(0, |e| e.rcv_base))
    }

    /// Moves where the port's receive count starts by `by` MADs (wrapping): the peer's count
    /// restarts at its power-on (`by` = minus what it had delivered), this port's at its own
    /// (`by` = what the peer has delivered).
    pub fn shift_rcv_base(&mut self, by: u64) {
        if by != 0 {
            let extra = self.extra();
            extra.rcv_base = extra.rcv_base.wrapping_add(by);
        }
    }

    /// The traffic counters, given the MADs the port [`PortPerf::received`]: the MADs counted
    /// since each counter's last clear.
    pub fn traffic(&self, received: u64) -> Traffic {
        let cleared = self.extra.as_ref().map_or([0; 6], |e| e.cleared);
        let mut v = [0u64; 6];
        for (i, &(xmit, words)) in Traffic::COUNTERS.iter().enumerate() {
            let mads = if xmit { self.sent } else { received }.wrapping_sub(cleared[i]);
            v[i] = if words { mads.wrapping_mul(MAD_DATA_WORDS) } else { mads };
        }
        Traffic::from_array(v)
    }

    /// Clears the traffic counters selected (by index in [`Traffic::COUNTERS`]); `received` as
    /// for [`PortPerf::traffic`].
    fn clear_traffic(&mut self, selected: [bool; 6], received: u64) {
        if !selected.contains(&true) {
            return;
        }
        let sent = self.sent;
        let extra = self.extra();
        for (i, &(xmit, _)) in Traffic::COUNTERS.iter().enumerate() {
            if selected[i] {
                extra.cleared[i] = if xmit { sent } else { received };
            }
        }
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
    /// stays, counting from `now`. The receive count then starts where the peer's delivered
    /// count is 0: the fabric shifts it to what the peer has delivered so far
    /// ([`PortPerf::shift_rcv_base`]), and the peer's by what this port had delivered.
    pub fn power_on(&mut self, now: SimTime) {
        let rate = self.extra.as_ref().and_then(|e| e.rate).map(|r| r.rate);
        *self = PortPerf::default();
        if let Some(r) = rate {
            self.set_rate(r, now);
        }
    }

    /// Clears what a Set(PortCounters) selects.
    pub(super) fn clear(&mut self, sel: CounterSelect, sel2: u8, received: u64) {
        let has = |bit: CounterSelect| sel.contains(bit);
        self.clear_traffic(
            [
                has(CounterSelect::XMIT_DATA),
                has(CounterSelect::RCV_DATA),
                has(CounterSelect::XMIT_PKTS),
                has(CounterSelect::RCV_PKTS),
                false,
                false,
            ],
            received,
        );
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
    pub(super) fn clear_ext(&mut self, sel: CounterSelectExt, received: u64) {
        let has = |bit: CounterSelectExt| sel.contains(bit);
        self.clear_traffic(
            [
                has(CounterSelectExt::XMIT_DATA),
                has(CounterSelectExt::RCV_DATA),
                has(CounterSelectExt::XMIT_PKTS),
                has(CounterSelectExt::RCV_PKTS),
                has(CounterSelectExt::UNICAST_XMIT_PKTS),
                has(CounterSelectExt::UNICAST_RCV_PKTS),
            ],
            received,
        );
    }
}

/// Counters summed over the ports a PMA request selects (one port, or all for PortSelect
/// 0xFF), saturating.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PerfSum {
    pub traffic: Traffic,
    pub errors: ErrorCounters,
}

impl PerfSum {
    /// Adds a port's counters (`received` as for [`PortPerf::traffic`]).
    pub(super) fn add(&mut self, port: &PortPerf, received: u64) {
        let (mine, theirs) = (self.traffic.to_array(), port.traffic(received).to_array());
        self.traffic = Traffic::from_array(std::array::from_fn(|i| mine[i].saturating_add(theirs[i])));
        let (theirs, ours) = (port.errors(), self.errors);
        let add = |x: u64, y: u64| x.saturating_add(y);
        self.errors = ErrorCounters {
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
            excessive_buffer_overrun_errors: add(
                theirs.excessive_buffer_overrun_errors,
                ours.excessive_buffer_overrun_errors,
            ),
            vl15_dropped: add(theirs.vl15_dropped, ours.vl15_dropped),
            xmit_wait: add(theirs.xmit_wait, ours.xmit_wait),
        };
    }

    /// PortCounters as the PMA reports them: each counter saturated to its field width.
    pub(super) fn port_counters(&self, port_select: u8) -> PortCounters {
        let (e, t) = (&self.errors, &self.traffic);
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
            xmit_data: sat(t.xmit_words),
            rcv_data: sat(t.rcv_words),
            xmit_pkts: sat(t.xmit_pkts),
            rcv_pkts: sat(t.rcv_pkts),
            xmit_wait: sat(e.xmit_wait),
            ..PortCounters::default()
        }
    }

    /// PortCountersExtended as the PMA reports it (the additional error counters are not
    /// advertised, so they read 0).
    pub(super) fn port_counters_ext(&self, port_select: u8) -> PortCountersExtended {
        let t = &self.traffic;
        PortCountersExtended {
            port_select,
            xmit_data: t.xmit_words,
            rcv_data: t.rcv_words,
            xmit_pkts: t.xmit_pkts,
            rcv_pkts: t.rcv_pkts,
            unicast_xmit_pkts: t.unicast_xmit_pkts,
            unicast_rcv_pkts: t.unicast_rcv_pkts,
            ..PortCountersExtended::default()
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

#[cfg(test)]
mod tests {
    use super::*;

    const RATE: ErrorRate = ErrorRate { symbol_errors: 4, rcv_errors: 1, link_downed: 0, interval_ns: 1_000_000_000 };

    #[test]
    fn power_on_clears_counters_and_keeps_the_cable_rate() {
        let mut p = PortPerf::default();
        p.count_xmit();
        p.set_rate(RATE, SimTime(0));
        p.settle(SimTime::from_millis(2_000));
        assert_eq!((p.errors().symbol_errors, p.errors().rcv_errors), (8, 2));
        assert_eq!((p.delivered(), p.received(5)), (1, 5));
        p.power_on(SimTime::from_millis(2_000));
        // The fabric starts the receive count at what the peer has delivered (5).
        p.shift_rcv_base(5);
        assert_eq!((p.traffic(p.received(5)), p.errors()), (Traffic::default(), ErrorCounters::default()));
        assert_eq!(p.received(7), 2, "counts on from the peer's count at the restart");
        p.settle(SimTime::from_millis(3_000));
        assert_eq!(p.errors().symbol_errors, 4, "the rate counts on from the restart");
    }

    /// What a rule drops on the cable was sent, but the peer does not receive it.
    #[test]
    fn a_lost_mad_is_sent_and_not_delivered() {
        let mut p = PortPerf::default();
        for _ in 0..4 {
            p.count_xmit();
        }
        p.count_lost();
        assert_eq!((p.traffic(0).xmit_pkts, p.delivered()), (4, 3));
    }

    #[test]
    fn all_port_select_sums_and_a_set_clears_by_mask() {
        let (mut a, b) = (PortPerf::default(), PortPerf::default());
        for _ in 0..3 {
            a.count_xmit();
        }
        let mut sum = PerfSum::default();
        sum.add(&a, 0);
        sum.add(&b, 1);
        let pc = sum.port_counters(ibsm_mad::perf::ALL_PORTS);
        assert_eq!((pc.xmit_pkts, pc.rcv_pkts, pc.xmit_data, pc.rcv_data), (3, 1, 216, 72));
        a.clear(CounterSelect::XMIT_PKTS, 0, 0);
        assert_eq!((a.traffic(0).xmit_pkts, a.traffic(0).xmit_words), (0, 216));
        a.count_xmit();
        let t = a.traffic(0);
        assert_eq!((t.xmit_pkts, t.xmit_words, t.unicast_xmit_pkts), (1, 288, 4), "cleared counters count on");
        a.clear_ext(CounterSelectExt(CounterSelectExt::XMIT_DATA.0 | CounterSelectExt::UNICAST_XMIT_PKTS.0), 0);
        let t = a.traffic(0);
        assert_eq!((t.xmit_pkts, t.xmit_words, t.unicast_xmit_pkts, t.rcv_pkts), (1, 0, 0, 0));
        a.clear(CounterSelect::RCV_PKTS, 0, 6);
        assert_eq!(a.traffic(9).rcv_pkts, 3, "a received count clears where it stood");
    }
}

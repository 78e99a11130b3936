//! The PM against a fake PMA in this file (no `Sm`, no simulator): reads, totals, clears,
//! thresholds, the window and timeouts.

use std::collections::HashMap;

use ibsm_mad::header::{MadHeader, Method};
use ibsm_mad::perf::{PERF_DATA_OFFSET, PerfMad, PmCapabilities, PortCounters, PortCountersExtended};
use ibsm_mad::records::ClassPortInfo;
use ibsm_mad::{Attribute, Guid, Lid, MAD_LEN, ids};

use super::counters::{Counter, Counts};
use super::window::PER_LID;
use super::{Perf, PerfConfig, Target};
use crate::core::SmEvent;
use crate::core::io::Transmit;

/// A PMA per LID: capabilities and 64-bit counters per port; it answers like a real one
/// (narrow forms saturate; a Set clears what its CounterSelect names).
#[derive(Default)]
struct FakePma {
    caps: HashMap<Lid, u16>,
    ports: HashMap<(Lid, u8), Counts>,
    gets: usize,
    sets: usize,
}

impl FakePma {
    fn answer(&mut self, t: &Transmit) -> Vec<u8> {
        let mut mad: [u8; MAD_LEN] = t.bytes[..MAD_LEN].try_into().unwrap();
        let h = MadHeader::from_bytes(&mad).unwrap();
        let lid = t.to.lid;
        let data = &mut mad[PERF_DATA_OFFSET..];
        match h.attr_id {
            ids::perf_attr::CLASS_PORT_INFO => {
                self.gets += 1;
                let cpi = ClassPortInfo { capability_mask: self.caps[&lid], ..ClassPortInfo::default() };
                cpi.emit(data);
            }
            ids::perf_attr::PORT_COUNTERS => {
                let req = PortCounters::parse(data).unwrap();
                let c = self.ports.entry((lid, req.port_select)).or_default();
                if h.method == Method::Set {
                    self.sets += 1;
                    for k in Counter::ALL {
                        let bit = match super::clear_bit(k) {
                            Some(b) => req.counter_select.contains(b),
                            None => req.counter_select2 & 1 != 0,
                        };
                        if bit {
                            c.set(k, 0);
                        }
                    }
                } else {
                    self.gets += 1;
                }
                let sat = |k: Counter| c.get(k).min(k.narrow_max());
                let pc = PortCounters {
                    port_select: req.port_select,
                    symbol_errors: u16::try_from(sat(Counter::SymbolErrors)).unwrap(),
                    link_downed: u8::try_from(sat(Counter::LinkDowned)).unwrap(),
                    rcv_errors: u16::try_from(sat(Counter::RcvErrors)).unwrap(),
                    xmit_wait: u32::try_from(sat(Counter::XmitWait)).unwrap(),
                    xmit_data: u32::try_from(sat(Counter::XmitData)).unwrap(),
                    rcv_data: u32::try_from(sat(Counter::RcvData)).unwrap(),
                    xmit_pkts: u32::try_from(sat(Counter::XmitPkts)).unwrap(),
                    rcv_pkts: u32::try_from(sat(Counter::RcvPkts)).unwrap(),
                    ..PortCounters::default()
                };
                data.fill(0);
                pc.emit(data);
            }
            ids::perf_attr::PORT_COUNTERS_EXTENDED => {
                self.gets += 1;
                let req = PortCountersExtended::parse(data).unwrap();
                let c = self.ports.entry((lid, req.port_select)).or_default();
                let ext = PortCountersExtended {
                    port_select: req.port_select,
                    xmit_data: c.get(Counter::XmitData),
                    rcv_data: c.get(Counter::RcvData),
                    xmit_pkts: c.get(Counter::XmitPkts),
                    rcv_pkts: c.get(Counter::RcvPkts),
                    ..PortCountersExtended::default()
                };
                data.fill(0);
                ext.emit(data);
            }
            _ => panic!("unexpected attribute {:#x}", h.attr_id),
        }
        mad[3] = Method::GetResp.raw();
        mad.to_vec()
    }

    fn add(&mut self, lid: Lid, port: u8, c: Counter, n: u64) {
        let e = self.ports.entry((lid, port)).or_default();
        e.set(c, e.get(c) + n);
    }
}

fn switch(guid: u64, lid: u16, ports: u8) -> Target {
    Target {
        node: Guid(guid),
        desc: format!("sw{guid}"),
        switch: true,
        ports: (1..=ports).map(|p| (p, Lid(lid))).collect(),
    }
}

/// Runs a PM sweep to its end: sends as the window allows, answers them in sending order.
/// Returns the most reads seen in flight at once, and at one LID.
fn sweep(pm: &mut Perf, pma: &mut FakePma, now: u64, targets: Vec<Target>) -> (usize, usize) {
    pm.start(now, targets);
    let (mut most, mut most_lid) = (0, 0);
    let mut out: Vec<Transmit> = Vec::new();
    loop {
        while let Some(t) = pm.poll_transmit(now) {
            out.push(t);
        }
        most = most.max(out.len());
        let mut by_lid: HashMap<Lid, usize> = HashMap::new();
        for t in &out {
            *by_lid.entry(t.to.lid).or_default() += 1;
        }
        most_lid = most_lid.max(by_lid.values().copied().max().unwrap_or(0));
        if out.is_empty() {
            break;
        }
        let t = out.remove(0);
        assert_eq!((t.to.qpn, t.bytes[1]), (1, ids::class::PERF));
        let answer = pma.answer(&t);
        pm.handle_response(now, &answer);
    }
    assert!(!pm.sweeping());
    (most, most_lid)
}

fn cfg() -> PerfConfig {
    PerfConfig { max_in_flight: 8, ..PerfConfig::default() }
}

#[test]
fn reads_extended_counters_and_keeps_totals() {
    let mut pm = Perf::new(cfg());
    let mut pma = FakePma::default();
    for lid in 1..=4u16 {
        pma.caps.insert(Lid(lid), PmCapabilities::ALL_PORT_SELECT | PmCapabilities::EXTENDED_WIDTH);
    }
    pma.add(Lid(2), 3, Counter::XmitData, 5_000_000_000); // past 32 bits
    pma.add(Lid(2), 3, Counter::SymbolErrors, 7);
    let targets: Vec<Target> = (1..=4u16).map(|l| switch(u64::from(l) * 0x100, l, 6)).collect();
    let (most, most_lid) = sweep(&mut pm, &mut pma, 0, targets.clone());
    assert!(most <= 8 && most_lid <= PER_LID, "window {most}, per LID {most_lid}");
    assert_eq!(pm.books().len(), 24);
    let b = &pm.books()[&(Guid(0x200), 3)];
    assert_eq!(b.totals.get(Counter::XmitData), 5_000_000_000);
    assert_eq!(b.totals.get(Counter::SymbolErrors), 7);
    // 4 ClassPortInfo, then PortCounters and PortCountersExtended per port; no clear needed.
    assert_eq!((pma.gets, pma.sets), (4 + 24 * 2, 0));
    pma.add(Lid(2), 3, Counter::XmitData, 100);
    pma.add(Lid(2), 3, Counter::SymbolErrors, 2);
    sweep(&mut pm, &mut pma, 10_000_000_000, targets);
    let b = &pm.books()[&(Guid(0x200), 3)];
    assert_eq!(b.totals.get(Counter::XmitData), 5_000_000_100);
    assert_eq!(b.last_interval().map(|i| i.delta.get(Counter::SymbolErrors)), Some(2));
    assert_eq!(b.rate(Counter::XmitData), Some(10.0));
    // ClassPortInfo is read once.
    assert_eq!(pma.gets, 4 + 24 * 4);
    assert_eq!(pm.counts().sweeps, 2);
    assert!(pm.flagged().is_empty());
}

#[test]
fn narrow_counters_are_cleared_and_nothing_is_lost() {
    let mut pm = Perf::new(cfg());
    let mut pma = FakePma::default();
    pma.caps.insert(Lid(5), 0); // no extended counters: 32-bit data only
    let t = vec![switch(0x500, 5, 2)];
    let mut total = 0;
    for round in 0..4u64 {
        // 3e9 words per interval: a 32-bit counter not cleared would saturate by round 2.
        pma.add(Lid(5), 1, Counter::XmitData, 3_000_000_000);
        pma.add(Lid(5), 1, Counter::SymbolErrors, 20_000); // 16 bits: cleared past half
        total += 3_000_000_000;
        sweep(&mut pm, &mut pma, round * 10, t.clone());
        let b = &pm.books()[&(Guid(0x500), 1)];
        assert_eq!(b.totals.get(Counter::XmitData), total, "round {round}");
        assert_eq!(b.totals.get(Counter::SymbolErrors), 20_000 * (round + 1), "round {round}");
        assert_eq!(b.saturated, 0);
    }
    assert_eq!(pma.sets, 4, "a clear of the busy port per round, none of the quiet one");
}

#[test]
fn a_port_over_a_threshold_is_flagged_once_and_cleared_by_a_quiet_interval() {
    let mut pm = Perf::new(cfg());
    let mut pma = FakePma::default();
    pma.caps.insert(Lid(1), PmCapabilities::EXTENDED_WIDTH);
    let t = vec![switch(0x100, 1, 4)];
    sweep(&mut pm, &mut pma, 0, t.clone());
    pma.add(Lid(1), 2, Counter::SymbolErrors, 11);
    pma.add(Lid(1), 3, Counter::SymbolErrors, 10); // at the threshold: not over
    sweep(&mut pm, &mut pma, 10, t.clone());
    let keys: Vec<_> = pm.flagged().keys().copied().collect();
    assert_eq!(keys, vec![(Guid(0x100), 2)]);
    let ev = pm.poll_event();
    assert!(
        matches!(&ev, Some(SmEvent::PortErrors { port, over, .. }) if port.0 == 2 && over == &vec![("SymbolErrorCounter", 11, 10)]),
        "{ev:?}"
    );
    pma.add(Lid(1), 2, Counter::SymbolErrors, 50);
    sweep(&mut pm, &mut pma, 20, t.clone());
    assert_eq!(pm.poll_event(), None, "logged once");
    assert_eq!(pm.flagged()[&(Guid(0x100), 2)].over, vec![(Counter::SymbolErrors, 50, 10)]);
    sweep(&mut pm, &mut pma, 30, t);
    assert!(pm.flagged().is_empty());
    assert_eq!(pm.counts().threshold_events, 1);
}

#[test]
fn unanswered_reads_are_retried_then_given_up() {
    let mut pm = Perf::new(PerfConfig { timeout_ns: 100, retries: 1, ..cfg() });
    pm.start(0, vec![switch(0x100, 1, 2)]);
    let mut sent = 0;
    let mut now = 0;
    while pm.sweeping() {
        while pm.poll_transmit(now).is_some() {
            sent += 1;
        }
        now = pm.poll_timeout(true).expect("a deadline while reads wait");
        pm.handle_timeout(now);
    }
    assert_eq!(sent, 2, "ClassPortInfo and its retry");
    assert_eq!((pm.counts().timeouts, pm.counts().failed), (2, 1));
    assert_eq!(pm.last_sweep().map(|s| s.failed), Some(1));
    assert!(pm.books().is_empty());
    // The next PM sweep is due an interval after this one started; a late answer is ignored.
    assert_eq!(pm.poll_timeout(true), Some(10_000_000_000));
    let late = PerfMad::request(Method::GetResp, 1, 0, &ClassPortInfo::default());
    pm.handle_response(now, &late);
    assert_eq!(pm.counts().answers, 0);
}

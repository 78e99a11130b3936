//! Several SMs on one simulated fabric: starting them, waiting for the election to settle,
//! and reading the LIDs they see.

use std::collections::BTreeMap;

use ibsm::core::{Guid2Lid, MadSource, Sm, SmConfig, SmState, SweepPhase};
use ibsm::transport::sim::SimSms;
use ibsm_mad::{Attribute as _, Guid, Lid};
use ibsm_sim::fabric::{Dest, SimTime};
use ibsm_topology::{NodeKind, Topology};

pub const SECOND: u64 = 1_000_000_000;

pub fn cfg(priority: u8, sm_key: u64) -> SmConfig {
    SmConfig { priority, sm_key, ..SmConfig::default() }
}

/// The CA ports of `topo`, in order.
pub fn hosts(topo: &Topology) -> Vec<(usize, u8)> {
    (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Ca).map(|i| (i, 1)).collect()
}

/// SMs with `priorities` on the first hosts, all started; runs until one is master and the
/// others standby. Returns the harness and the master's index.
pub fn elect(topo: &Topology, seed: u64, priorities: &[u8]) -> (SimSms, usize) {
    elect_with(topo, seed, priorities, |h, until| {
        h.run_until(until, |_, _| false);
    })
}

/// [`elect`], each step of 100 ms taken by `step(harness, until)`.
fn elect_with(
    topo: &Topology,
    seed: u64,
    priorities: &[u8],
    mut step: impl FnMut(&mut SimSms, u64),
) -> (SimSms, usize) {
    let at = hosts(topo);
    let sms = priorities.iter().enumerate().map(|(i, &p)| (Sm::new(cfg(p, 7), Guid2Lid::default()), at[i])).collect();
    let mut h = SimSms::new(topo, seed, sms).expect("attach");
    for i in 0..priorities.len() {
        h.start(i);
    }
    let settled = |h: &SimSms| {
        let states: Vec<SmState> = h.sms.iter().map(|s| s.sm.state()).collect();
        states.iter().filter(|s| **s == SmState::Master).count() == 1
            && states.iter().filter(|s| **s == SmState::Standby).count() == states.len() - 1
    };
    let end = h.now() + 60 * SECOND;
    while !settled(&h) {
        assert!(h.now() < end, "no single master: {:?}", h.sms.iter().map(|s| s.sm.state()).collect::<Vec<_>>());
        let until = h.now() + 100_000_000;
        step(&mut h, until);
        if h.now() < until {
            h.fabric.advance_to(SimTime(until));
        }
    }
    let master = h.sms.iter().position(|s| s.sm.state() == SmState::Master).expect("a master");
    (h, master)
}

/// The LID every end port holds, read from the SMs' view: (port GUID -> LID) of the master.
pub fn lids(h: &SimSms, i: usize) -> BTreeMap<Guid, Lid> {
    let snap = h.sms[i].sm.snapshot().expect("snapshot");
    snap.end_ports().filter_map(|at| snap.port(at).map(|p| (p.guid, p.lid))).collect()
}

/// What each SM sent while [`run_counting`] stepped it: every MAD, and the Sets among them
/// (SubnSet or SubnAdmSet, the methods that change a port, a switch or a record).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sent {
    pub mads: u64,
    pub sets: u64,
    /// The Sets by attribute ID.
    pub sets_by_attr: BTreeMap<u16, u64>,
    /// The directed routes the Sets went by (`SmpRoute` as Debug), by attribute ID: where
    /// they went.
    pub set_routes: BTreeMap<u16, std::collections::BTreeSet<String>>,
}

/// Steps the live SMs of `h` and the fabric as [`SimSms::run_until`] does (compute in virtual
/// time, transmit, timers, received MADs), until `limit_ns` or nothing is left to do, counting
/// what each SM hands to the fabric in `sent` (indexed as `h.sms`). Written here, not taken
/// from the harness, so that the count sees every MAD on its way out.
pub fn run_counting(h: &mut SimSms, limit_ns: u64, sent: &mut [Sent]) {
    const SET: u8 = 0x02;
    loop {
        let now = h.now();
        for (i, s) in h.sms.iter_mut().enumerate().filter(|(_, s)| s.alive) {
            if s.sm.poll_compute().is_some() {
                s.sm.handle_compute(&mut || now);
            }
            while let Some(t) = s.sm.poll_transmit(now) {
                sent[i].mads += 1;
                if t.bytes.get(3) == Some(&SET) {
                    sent[i].sets += 1;
                    let attr = t.bytes.get(16..18).map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
                    *sent[i].sets_by_attr.entry(attr).or_default() += 1;
                    if let Ok(smp) = ibsm_mad::smp::SmpRepr::parse(&t.bytes) {
                        sent[i].set_routes.entry(attr).or_default().insert(format!("{:?}", smp.route));
                    }
                }
                let mut mad = [0u8; ibsm_mad::MAD_LEN];
                let n = t.bytes.len().min(mad.len());
                mad[..n].copy_from_slice(&t.bytes[..n]);
                h.fabric.send_pkey(s.agent, &mad, Dest { dlid: t.to.lid, qpn: t.to.qpn }, t.to.pkey_index);
            }
            while s.sm.poll_event().is_some() {}
        }
        let timers = h.sms.iter().filter(|s| s.alive).filter_map(|s| s.sm.poll_timeout()).min();
        let next = match (h.fabric.next_event().map(|t| t.0), timers) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => return,
        };
        if next > limit_ns {
            return;
        }
        h.fabric.advance_to(SimTime(next));
        let now = h.now();
        for s in h.sms.iter_mut().filter(|s| s.alive) {
            while let Some(r) = h.fabric.recv(s.agent) {
                let src = MadSource { slid: r.slid, sqpn: r.sqpn, pkey_index: r.pkey_index, sl: 0, grh: None };
                s.sm.handle_mad(r.at.0, &r.mad[..], src);
            }
            if s.sm.poll_timeout().is_some_and(|t| t <= now) {
                s.sm.handle_timeout(now);
            }
        }
    }
}

/// As [`elect`], stepping with [`run_counting`] from the start: also returns what each SM sent.
pub fn elect_counting(topo: &Topology, seed: u64, priorities: &[u8]) -> (SimSms, usize, Vec<Sent>) {
    let mut sent = vec![Sent::default(); priorities.len()];
    let (h, master) = elect_with(topo, seed, priorities, |h, until| run_counting(h, until, &mut sent));
    (h, master, sent)
}

/// Sends a NodeRecord GetTable (as `saquery` sends it) from `probe` to the SA at `dlid`, steps
/// the SMs for a second with [`run_counting`], and says whether an answer came back.
pub fn sa_answers(h: &mut SimSms, probe: ibsm_sim::fabric::AgentId, dlid: Lid, sent: &mut [Sent]) -> bool {
    use ibsm_mad::header::Method;
    use ibsm_mad::records::NodeRecord;
    const TID: u64 = 0x5a_0001;
    let bytes = ibsm_mad::sa::request(Method::GetTable, 0, TID, &NodeRecord::parse(&[0; 108]).expect("record"))
        .expect("request");
    h.fabric.send(probe, &bytes, Dest { dlid, qpn: 1 });
    let end = h.now() + SECOND;
    run_counting(h, end, sent);
    if h.now() < end {
        h.fabric.advance_to(SimTime(end));
    }
    let mut answered = false;
    while let Some(r) = h.fabric.recv(probe) {
        answered |= ibsm_mad::sa::SaHeader::from_bytes(&r.mad[..]).is_ok_and(|a| a.tid & 0xffff_ffff == TID);
    }
    answered
}

/// Steps `h` from the master's death at `died`, counting in `sent`, until SM `standby` is
/// master with its subnet up and 3 s more of virtual time have passed.
pub fn run_takeover(h: &mut SimSms, standby: usize, sent: &mut [Sent], died: u64) {
    let up = |h: &SimSms| h.sms[standby].sm.state() == SmState::Master && h.sms[standby].sm.phase() == SweepPhase::Up;
    let mut end = None;
    while end.is_none_or(|e| h.now() < e) {
        assert!(h.now() < died + 30 * SECOND, "no takeover");
        let step = h.now() + 20_000_000;
        run_counting(h, step, sent);
        if h.now() < step {
            h.fabric.advance_to(SimTime(step));
        }
        if end.is_none() && up(h) {
            end = Some(h.now() + 3 * SECOND);
        }
    }
    assert!(up(h), "the new master's subnet is up");
    assert!(h.fabric.check_routes().ok(), "every pair routed after the takeover");
}

/// Trap 129 (local link integrity) from the CA port at `lid` about its port 1, TID `tid`.
pub fn trap_129(lid: ibsm_mad::Lid, tid: u64) -> [u8; ibsm_mad::MAD_LEN] {
    use ibsm_mad::attrs::{Notice, NoticeDetails, NoticeType, ProducerType};
    let details = NoticeDetails::PortHealth { trap: 129, lid, port: ibsm_mad::PortNum(1) };
    let notice = Notice::generic(NoticeType::Urgent, ProducerType::Ca, lid, details).expect("generic");
    let mut full = [0u8; 80];
    ibsm_mad::Attribute::emit(&notice, &mut full);
    let mut data = [0u8; 64];
    data.copy_from_slice(&full[..64]);
    ibsm_mad::smp::SmpRepr::set_lid(ibsm_mad::ids::attr::NOTICE, 0, tid, data)
        .with_method(ibsm_mad::header::Method::Trap)
        .to_bytes()
}

/// QoS on every port: SL2VL, VL arbitration and high limits (as tests/qos.rs sets them).
pub fn qos_setting() -> ibsm::core::QosSetting {
    let mut options = ibsm_qos::QosOptions::default();
    options.set_opensm("qos_sl2vl", "0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,15").expect("valid");
    options.set_opensm("qos_ca_vlarb_low", "0:0,1:64,2:128,3:192").expect("valid");
    options.set_opensm("qos_ca_vlarb_high", "0:4").expect("valid");
    options.set_opensm("qos_swe_vlarb_low", "0:32,1:32,2:32,3:32").expect("valid");
    options.set_opensm("qos_ca_high_limit", "6").expect("valid");
    options.set_opensm("qos_swe_high_limit", "3").expect("valid");
    let policy = ibsm_qos::parse_qos_policy("qos-ulps\n default : 0\n ipoib : 1\nend-qos-ulps\n").expect("policy");
    ibsm::core::QosSetting { options, policy }
}

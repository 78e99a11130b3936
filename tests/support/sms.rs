//! Several SMs on one simulated fabric: starting them, waiting for the election to settle,
//! and reading the LIDs they see.

use std::collections::BTreeMap;

use ibsm::core::{Guid2Lid, Sm, SmConfig, SmState};
use ibsm::transport::sim::SimSms;
use ibsm_mad::{Guid, Lid};
use ibsm_sim::fabric::SimTime;
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
        let step = h.now() + 100_000_000;
        h.run_until(step, |_, _| false);
        if h.now() < step {
            h.fabric.advance_to(SimTime(step));
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

//! Requests, concurrent work and partial sweeps, end to end on the simulated fabric: another
//! port of the fabric (a probe agent, as `sminfo`, `saquery` or a standby SM would be) sends
//! MADs to the SM through the fabric and reads what comes back; the core alone decides the
//! answers (the same core serves umad, where `tests/ibsim_bringup.rs` asks the same questions
//! with infiniband-diags). A switch that stops answering for a whole sweep is modelled with
//! packet rules that drop everything crossing its cables.

use std::path::Path;

use ibsm::core::{Guid2Lid, Sm, SmConfig, SmEvent, SubnetReport, SweepPhase};
use ibsm::transport::sim::{ComputeTime, SimDriver};
use ibsm_mad::attrs::{LinearForwardingTable, SmInfo, SmState};
use ibsm_mad::header::{Mad, Method};
use ibsm_mad::smp::SmpRepr;
use ibsm_mad::{Attribute, DrPath, Lid, MAD_LEN, ids};
use ibsm_sim::fabric::{AgentId, Dest, Fault, LinkRule, Received};
use ibsm_topology::{NodeKind, Topology};

const SEED: u64 = 7;
const LIMIT: u64 = 600_000_000_000;

fn fat_tree() -> Topology {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabrics/fat-tree-2l-k4.net");
    Topology::load(&p).expect("example fabric")
}

/// The SM on the first cabled CA, a probe on another CA of the same leaf switch, and the
/// directed route from the probe to the SM's port (out of the probe's port, then the leaf's
/// port towards the SM).
struct Setup {
    topo: Topology,
    drv: SimDriver,
    probe: AgentId,
    to_sm: DrPath,
}

fn setup() -> Setup {
    let topo = fat_tree();
    let drv = SimDriver::new(&topo, SEED, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    let (sm_node, sm_port) = drv.at;
    let leaf = topo.nodes[sm_node].peer(sm_port).expect("SM port cabled");
    let (probe_node, probe_port) = (1..=topo.nodes[leaf.node].num_ports)
        .filter_map(|p| topo.nodes[leaf.node].peer(p))
        .find(|peer| topo.nodes[peer.node].kind == NodeKind::Ca && peer.node != sm_node)
        .map(|peer| (peer.node, peer.port))
        .expect("another host on the SM's leaf");
    let leaf_exit = (1..=topo.nodes[leaf.node].num_ports)
        .find(|&p| topo.nodes[leaf.node].peer(p).is_some_and(|x| x.node == sm_node && x.port == sm_port))
        .expect("leaf port to the SM");
    let mut drv = drv;
    let probe = drv.fabric.attach(probe_node, probe_port).expect("probe attaches");
    let to_sm = DrPath::new(&[probe_port, leaf_exit]).expect("path");
    Setup { topo, drv, probe, to_sm }
}

impl Setup {
    /// Runs SM and fabric until the probe receives something (or nothing is left to do),
    /// passing every SM event to `on_event` with the SM as it is right when the event is out.
    fn until_probe_hears(&mut self, mut on_event: impl FnMut(&Sm, &SmEvent)) -> Option<Received> {
        for _ in 0..100_000 {
            if let Some(r) = self.drv.fabric.recv(self.probe) {
                return Some(r);
            }
            let step = self.drv.now() + 1_000_000;
            // Stop at every event so that `on_event` sees the SM at that moment.
            if let Some(ev) = self.drv.run_until(step, |_| true) {
                on_event(&self.drv.sm, &ev);
            } else {
                if self.drv.fabric.next_event().is_none() && self.drv.sm.poll_timeout().is_none() {
                    return self.drv.fabric.recv(self.probe);
                }
                self.drv.fabric.advance_to(ibsm_sim::fabric::SimTime(step));
            }
        }
        None
    }

    fn sweep(&mut self) -> SubnetReport {
        self.drv.sweep(LIMIT, |_| {}).expect("sweep report")
    }

    fn sm_info_get(&mut self, tid: u64) {
        let smp = SmpRepr::get_dr(&self.to_sm, ids::attr::SM_INFO, 0, tid).to_bytes();
        self.drv.fabric.send(self.probe, &smp, Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
    }
}

fn sm_info_of(r: &Received) -> SmInfo {
    let smp = SmpRepr::parse(&r.mad[..]).expect("SMP answer");
    assert_eq!((smp.method, smp.status & 0x7fff), (Method::GetResp, 0), "SMInfo answered with success");
    SmInfo::parse(&smp.data).expect("SMInfo")
}

#[test]
fn sm_info_poll_in_the_middle_of_a_sweep_is_answered_and_changes_no_phase() {
    let mut s = setup();
    s.drv.sm.start_sweep(0);
    // Run into the sweep: until it starts configuring ports.
    let ev =
        s.drv.run_until(LIMIT, |ev| matches!(ev, SmEvent::PhaseStarted { phase: SweepPhase::ConfiguringPorts, .. }));
    assert!(ev.is_some(), "the sweep reaches ConfiguringPorts");
    s.sm_info_get(0x77);
    let mut answered_in = None;
    let mut phases = vec![SweepPhase::Discovering, SweepPhase::AssigningLids, SweepPhase::ConfiguringPorts];
    let mut report = None;
    let heard = s.until_probe_hears(|sm, ev| match ev {
        SmEvent::SmInfoAnswered { phase, .. } => {
            assert_eq!(*phase, sm.phase(), "answering did not move the phase");
            answered_in = Some(*phase);
        }
        SmEvent::PhaseStarted { phase, .. } => phases.push(*phase),
        SmEvent::SubnetUp(r) => report = Some(r.clone()),
        _ => {}
    });
    let heard = heard.expect("the probe gets an answer");
    let info = sm_info_of(&heard);
    let phase = answered_in.expect("the core reported the answer");
    assert_ne!(phase, SweepPhase::Up, "answered during the sweep");
    assert_eq!(info.sm_state, SmState::Discovering, "not master before the first sweep ends");
    assert_eq!(info.guid, s.drv.sm.port_guid());
    // Without M_Key protection the SM_Key is shown to any requester, as OpenSM shows it (the
    // key's secrecy rests on M_Keys; see tests/mkeys.rs for the protected case).
    assert_eq!(info.sm_key, ibsm::core::DEFAULT_SM_KEY);
    // The sweep goes on through every phase once, and completes.
    let report = match report {
        Some(r) => r,
        None => s
            .drv
            .run_until(LIMIT, |ev| {
                if let SmEvent::PhaseStarted { phase, .. } = ev {
                    phases.push(*phase);
                }
                matches!(ev, SmEvent::SubnetUp(_))
            })
            .and_then(|ev| if let SmEvent::SubnetUp(r) = ev { Some(r) } else { None })
            .expect("sweep completes"),
    };
    assert!(report.complete, "{report:?}");
    assert_eq!(phases, SweepPhase::ALL.to_vec(), "each phase once, in order");

    // As master: state 3, and an activity count that the master's own sweeps raise (a standby
    // takes a count that stays the same for a dead master). Each answered SMInfo query counts
    // too (as in OpenSM), so two polls in a row differ; a sweep between two polls must raise
    // the count by at least the SMPs the sweep sent (a sweep sends dozens; a poll counts one).
    s.sm_info_get(0x78);
    let first = sm_info_of(&s.until_probe_hears(|_, _| {}).expect("answer"));
    assert_eq!(first.sm_state, SmState::Master);
    s.sm_info_get(0x79);
    let second = sm_info_of(&s.until_probe_hears(|_, _| {}).expect("answer"));
    assert!(second.act_count.wrapping_sub(first.act_count) >= 1, "an answered poll counts");
    let swept = s.sweep();
    assert!(swept.smps_sent > 1, "{swept:?}");
    s.sm_info_get(0x7a);
    let third = sm_info_of(&s.until_probe_hears(|_, _| {}).expect("answer"));
    let by_sweep = u64::from(third.act_count.wrapping_sub(second.act_count));
    assert!(
        by_sweep >= swept.smps_sent,
        "ActCount {} -> {} -> {}: a sweep of {} SMPs between the last two polls",
        first.act_count,
        second.act_count,
        third.act_count,
        swept.smps_sent
    );
}

#[test]
fn unserved_sa_requests_and_unknown_smps_get_0x000c_from_the_core_and_traps_start_a_sweep() {
    let mut s = setup();
    let first = s.sweep();
    assert!(first.complete);
    // An SA GetTable of an attribute the SA does not serve (RandomForwardingTableRecord), LID-routed to the SM's LID on QP1, as saquery sends it.
    let mut sa = [0u8; MAD_LEN];
    {
        let mut m = Mad::new_unchecked(&mut sa[..]);
        m.set_base_version(1);
        m.set_mgmt_class(ibsm_mad::header::MgmtClass::SubnAdm);
        m.set_class_version(2);
        m.set_method(Method::GetTable);
        m.set_tid(0x1234);
        m.set_attr_id(ids::sa_attr::RFT_RECORD);
    }
    s.drv.fabric.send(s.probe, &sa, Dest { dlid: first.sm_lid, qpn: 1 });
    let r = s.until_probe_hears(|_, _| {}).expect("SA answer");
    let h = Mad::new_unchecked(&r.mad[..]);
    assert_eq!((h.method(), h.status(), h.tid() & 0xffff_ffff), (Method::GetTableResp, 0x000c, 0x1234));
    assert_eq!(r.sqpn, 1, "answered from QP1");
    // A Get of an attribute the SM does not serve, directed to its port.
    let smp = SmpRepr::get_dr(&s.to_sm, 0xff90, 0, 0x55).to_bytes();
    s.drv.fabric.send(s.probe, &smp, Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
    let r = s.until_probe_hears(|_, _| {}).expect("SMP answer");
    let smp = SmpRepr::parse(&r.mad[..]).expect("SMP");
    assert_eq!((smp.method, smp.status & 0x7fff), (Method::GetResp, 0x000c));
    assert_eq!(s.drv.sm.request_counters().unsupported, 2);

    // A cable pulled between a spine and a leaf: the switch sends trap 128, the core
    // acknowledges it and sweeps again on its own.
    let spine = s.topo.nodes.iter().position(|n| n.name == "spine-1").expect("spine-1");
    s.drv.fabric.inject_fault(Fault::LinkDown { node: spine, port: 1 });
    let mut trap = None;
    let ev = s.drv.run_until(s.drv.now() + LIMIT, |ev| {
        if let SmEvent::TrapReceived { number, .. } = ev {
            trap = Some(*number);
        }
        matches!(ev, SmEvent::SubnetUp(_))
    });
    assert_eq!(trap, Some(Some(128)), "trap 128 reached the core");
    let Some(SmEvent::SubnetUp(after)) = ev else { panic!("no sweep after the trap") };
    assert_eq!(after.links, first.links - 1, "the re-sweep sees the pulled cable");
    assert!(after.complete, "{after:?}");
    // The other end's trap may take a route through the pulled cable and be lost: at least one.
    assert!(s.drv.sm.request_counters().traps >= 1);
}

/// What switch `node` routes `lid` to, read from the simulated fabric along `path`.
fn lft_entry(s: &mut Setup, path: &[u8], lid: u16) -> Option<u8> {
    let smp = SmpRepr::get_dr(&DrPath::new(path).ok()?, ids::attr::LFT, u32::from(lid / 64), 0x9000 + u64::from(lid));
    let sm_agent = s.drv.agent;
    s.drv.fabric.send(sm_agent, &smp.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
    s.drv.fabric.run_until_idle(ibsm_sim::fabric::SimTime(s.drv.now() + 1_000_000_000));
    while let Some(r) = s.drv.fabric.recv(sm_agent) {
        let Ok(resp) = SmpRepr::parse(&r.mad[..]) else { continue };
        if resp.tid & 0xffff_ffff == 0x9000 + u64::from(lid) {
            let t = LinearForwardingTable::parse(&resp.data).ok()?;
            return t.ports.get(usize::from(lid % 64)).map(|p| p.0);
        }
    }
    None
}

#[test]
fn a_switch_that_stays_silent_for_a_sweep_keeps_its_hosts_lids_and_routes() {
    let mut s = setup();
    let first = s.sweep();
    assert!(first.complete, "{first:?}");
    let leaf = s.topo.nodes.iter().position(|n| n.name == "leaf-3").expect("leaf-3");
    let hosts: Vec<usize> = (1..=s.topo.nodes[leaf].num_ports)
        .filter_map(|p| s.topo.nodes[leaf].peer(p))
        .filter(|peer| s.topo.nodes[peer.node].kind == NodeKind::Ca)
        .map(|peer| peer.node)
        .collect();
    assert_eq!(hosts.len(), 2);
    let host_lids: Vec<Lid> =
        hosts.iter().map(|&h| s.drv.sm.guid2lid().get(s.topo.nodes[h].port_guid(1)).expect("LID").0).collect();
    // Paths from the SM to both spines: out of the SM's port, then the leaf's uplinks 3 and 4.
    let sm_port = s.drv.at.1;
    let spine_paths = [vec![sm_port, 3], vec![sm_port, 4]];
    let before: Vec<Vec<Option<u8>>> =
        spine_paths.iter().map(|p| host_lids.iter().map(|l| lft_entry(&mut s, p, l.0)).collect()).collect();
    assert!(before.iter().flatten().all(Option::is_some), "spines route the hosts: {before:?}");

    // leaf-3 goes silent: everything crossing its cables is dropped for the whole sweep.
    for p in 1..=s.topo.nodes[leaf].num_ports {
        s.drv.fabric.inject_fault(Fault::AddRule(LinkRule {
            link: Some((leaf, p)),
            drop: 1.0,
            delay_ns: 0,
            jitter_ns: 0,
        }));
    }
    let second = s.sweep();
    assert!(!second.complete, "a sweep with a silent switch is not complete");
    assert_eq!(second.blocked.len(), 1, "{:?}", second.blocked);
    assert_eq!(second.blocked[0].guid, s.topo.nodes[leaf].node_guid);
    assert_eq!(second.blocked[0].desc, "leaf-3");
    assert_eq!((second.switches, second.cas), (first.switches, first.cas), "carried over, not dropped");
    for (h, l) in hosts.iter().zip(&host_lids) {
        assert_eq!(s.drv.sm.guid2lid().get(s.topo.nodes[*h].port_guid(1)).map(|x| x.0), Some(*l), "host LID kept");
    }
    s.drv.fabric.inject_fault(Fault::ClearRules);
    let after: Vec<Vec<Option<u8>>> =
        spine_paths.iter().map(|p| host_lids.iter().map(|l| lft_entry(&mut s, p, l.0)).collect()).collect();
    assert_eq!(after, before, "every other switch still routes the silent switch's hosts");

    // It answers again: the next sweep completes it.
    let third = s.sweep();
    assert!(third.complete, "{third:?}");
    assert!(third.blocked.is_empty());
    assert_eq!((third.switches, third.cas), (first.switches, first.cas));
}

#[test]
fn routing_time_is_measured_where_the_work_happens() {
    let topo = fat_tree();
    let mut drv = SimDriver::new(&topo, SEED, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    drv.compute_time = ComputeTime::Wall;
    let r = drv.sweep(LIMIT, |_| {}).expect("report");
    let routing = r.phases.iter().find(|p| p.phase == SweepPhase::Routing).expect("routing phase");
    assert!(routing.ns > 0, "routing time is measured, not assumed: {:?}", r.phases);
    // In virtual time only, computing is free: the same fabric reports 0 for it.
    let mut drv = SimDriver::new(&topo, SEED, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    let r = drv.sweep(LIMIT, |_| {}).expect("report");
    let routing = r.phases.iter().find(|p| p.phase == SweepPhase::Routing).expect("routing phase");
    assert_eq!(routing.ns, 0);
}

/// Sends a directed-route Set from the SM's own port (the SM is idle) and waits for the answer.
fn dr_set(s: &mut Setup, path: &[u8], attr: u16, attr_mod: u32, data: [u8; 64]) {
    let tid = 0xa000 + u64::from(attr);
    let smp = SmpRepr::set_dr(&DrPath::new(path).expect("path"), attr, attr_mod, tid, data);
    let sm_agent = s.drv.agent;
    s.drv.fabric.send(sm_agent, &smp.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
    s.drv.fabric.run_until_idle(ibsm_sim::fabric::SimTime(s.drv.now() + 1_000_000_000));
    while s.drv.fabric.recv(sm_agent).is_some() {}
}

#[test]
fn tables_another_sm_may_have_written_are_read_back_not_trusted() {
    let mut s = setup();
    let first = s.sweep();
    assert!(first.complete);
    let path = vec![s.drv.at.1, 3]; // spine-0, through the leaf's first uplink
    let lid = first.sm_lid.0;
    let right = lft_entry(&mut s, &path, lid).expect("spine routes the SM's LID");
    // Another SM (here: a Set behind the SM's back) writes the spine's table and names itself
    // master on the spine's port 0; LinearFDBTop stays the same.
    let mut block = LinearForwardingTable::unrouted();
    for (i, p) in block.ports.iter_mut().enumerate() {
        *p = ibsm_mad::PortNum(if i == usize::from(lid % 64) { right % 4 + 1 } else { 0xff });
    }
    let mut data = [0u8; 64];
    block.emit(&mut data);
    dr_set(&mut s, &path, ids::attr::LFT, u32::from(lid / 64), data);
    assert_ne!(lft_entry(&mut s, &path, lid), Some(right), "the foreign write took");
    let smp = SmpRepr::get_dr(&DrPath::new(&path).expect("path"), ids::attr::PORT_INFO, 0, 0xb000);
    s.drv.fabric.send(s.drv.agent, &smp.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
    s.drv.fabric.run_until_idle(ibsm_sim::fabric::SimTime(s.drv.now() + 1_000_000_000));
    let r = s.drv.fabric.recv(s.drv.agent).expect("PortInfo answer");
    let mut pi = ibsm_mad::attrs::PortInfo::parse(&SmpRepr::parse(&r.mad[..]).expect("SMP").data).expect("PortInfo");
    pi.master_sm_lid = Lid(0x99);
    pi.port_state = ibsm_mad::attrs::PortState::NoChange;
    pi.port_physical_state = ibsm_mad::attrs::PhysPortState::NoChange;
    let mut data = [0u8; 64];
    pi.emit(&mut data);
    dr_set(&mut s, &path, ids::attr::PORT_INFO, 0, data);

    let second = s.sweep();
    assert!(second.complete, "{second:?}");
    assert!(second.lft_blocks_sent >= 1, "the overwritten block is rewritten: {second:?}");
    assert_eq!(lft_entry(&mut s, &path, lid), Some(right), "the route is right again");
    // With no other master in sight, the next sweep trusts what it wrote and sends nothing.
    let third = s.sweep();
    assert_eq!(third.lft_blocks_sent, 0, "{third:?}");
}

//! M_Keys on the simulated fabric (our sim enforces them as the IBTA and the kernel's SMA do:
//! protect bits, lease, violation counter, trap 256): per-port keys set with protect bits and
//! lease, every SMP carrying them, a second SM locked out and reported, and recovery when the
//! SM restarts with another secret.

use std::fmt::Write as _;

use ibsm::core::mkeys::{MKeyConfig, MKeyMode, MKeySecret};
use ibsm::core::{Guid2Lid, Sm, SmConfig, SmEvent};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::attrs::PortInfo;
use ibsm_mad::header::Method;
use ibsm_mad::smp::SmpRepr;
use ibsm_mad::{Attribute, DrPath, Guid, Lid, MKey, ids};
use ibsm_sim::fabric::{AgentId, Dest, SimTime};
use ibsm_topology::{NodeKind, Topology};

mod support;
use support::sa::{LIMIT, Oracle, example};

fn mkey_cfg(secret: u8, protect: u8) -> SmConfig {
    let m_key = MKeyConfig { mode: MKeyMode::PerPort, protect, lease_s: 60, secret: MKeySecret([secret; 16]) };
    SmConfig { m_key, ..SmConfig::default() }
}

/// PortInfo of the port at the end of `path` (attribute modifier `port`), asked from `agent`
/// with `key`; `None` when the port does not answer (a refused M_Key).
fn port_info(drv: &mut SimDriver, agent: AgentId, path: &DrPath, port: u8, key: u64) -> Option<PortInfo> {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0x7000_0000);
    let tid = u64::from(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let mut smp = SmpRepr::get_dr(path, ids::attr::PORT_INFO, u32::from(port), tid);
    smp.m_key = MKey(key);
    drv.fabric.send(agent, &smp.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
    let t = drv.fabric.now().0 + 1_000_000_000;
    drv.fabric.run_until_idle(SimTime(t));
    let mut got = None;
    while let Some(r) = drv.fabric.recv(agent) {
        if let Ok(resp) = SmpRepr::parse(&r.mad[..])
            && resp.tid & 0xffff_ffff == tid
        {
            got = PortInfo::parse(&resp.data).ok();
        }
    }
    got
}

/// The SM_Key in the SMInfo the SM at the end of `path` answers to `agent` sending M_Key `key`
/// (the SM is stepped meanwhile); `None` without an answer.
fn sm_key_seen(drv: &mut SimDriver, agent: AgentId, path: &DrPath, key: u64) -> Option<u64> {
    use ibsm_mad::attrs::SmInfo;
    let mut smp = SmpRepr::get_dr(path, ids::attr::SM_INFO, 0, 0x5151);
    smp.m_key = MKey(key);
    drv.fabric.send(agent, &smp.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
    drv.run_until(drv.now() + 500_000_000, |_| false);
    let mut got = None;
    while let Some(r) = drv.fabric.recv(agent) {
        if let Ok(resp) = SmpRepr::parse(&r.mad[..])
            && resp.tid & 0xffff_ffff == 0x5151
        {
            got = SmInfo::parse(&resp.data).ok().map(|i| i.sm_key);
        }
    }
    got
}

/// Every end port: (directed route from the SM's port, attribute modifier, port GUID).
fn end_ports(topo: &Topology, drv: &SimDriver) -> Vec<(DrPath, u8, Guid)> {
    let routes = Oracle::from_topology(topo, drv.at).routes;
    let mut out = Vec::new();
    for (i, n) in topo.nodes.iter().enumerate() {
        if n.kind == NodeKind::Switch {
            out.push((DrPath::new(&routes[&i]).expect("route"), 0, n.port_guid(0)));
        } else if i == drv.at.0 {
            out.push((DrPath::local(), drv.at.1, n.port_guid(drv.at.1)));
        } else {
            let peer = n.peer(1).expect("cabled");
            let mut r = routes[&peer.node].clone();
            r.push(peer.port);
            out.push((DrPath::new(&r).expect("route"), 1, n.port_guid(1)));
        }
    }
    out
}

#[test]
fn every_port_gets_its_own_key_with_protect_bits_and_lease() {
    let topo = example("fat-tree-2l-k4.net");
    let cfg = mkey_cfg(7, 1);
    let keys = cfg.m_key;
    let mut drv = SimDriver::new(&topo, 3, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    let first = drv.sweep(LIMIT, |_| {}).expect("up");
    // The key Sets go before the rest, so no SMP meets a port in the middle of a key change.
    assert!(first.complete && first.smps_retried == 0, "{first:?}");
    let agent = drv.agent;
    let mut seen = std::collections::HashSet::new();
    for (path, port, guid) in end_ports(&topo, &drv) {
        // Without the key: the Get works at level 1 but hides the key.
        let blind = port_info(&mut drv, agent, &path, port, 0).expect("a Get at level 1 is answered");
        assert_eq!((blind.m_key.0, blind.m_key_protect_bits, blind.m_key_lease_period), (0, 1, 60), "{guid:?}");
        // With it: the key is the one derived for this port.
        let info = port_info(&mut drv, agent, &path, port, keys.key_for(guid)).expect("answered");
        assert_eq!(info.m_key.0, keys.key_for(guid), "{guid:?}");
        assert!(seen.insert(info.m_key.0), "every port's key differs");
        assert_eq!(drv.sm.mkeys_held().get(&guid), Some(&keys.key_for(guid)), "the SM knows what it set");
    }
    // The reads without the key raised traps at no port (Gets are no violation at level 1), and
    // the SM's own SMPs carried the right keys: a second sweep completes without any trap 256.
    let mut bad = 0;
    let second = drv.sweep(LIMIT, |e| bad += usize::from(matches!(e, SmEvent::BadMKey { .. }))).expect("up");
    assert!(second.complete);
    assert_eq!(bad, 0);
    assert!(drv.sm.mkey_violations().is_empty());
    // And it sends no key Set: as many SMPs as a second sweep without M_Keys.
    let mut plain = SimDriver::new(&topo, 3, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    let plain_first = plain.sweep(LIMIT, |_| {}).expect("up");
    let plain_second = plain.sweep(LIMIT, |_| {}).expect("up");
    assert_eq!(second.smps_sent, plain_second.smps_sent, "no key Set once the keys are in place");
    // The first sweep: one key Set per end port more.
    let end_ports = u64::try_from(first.end_ports).expect("small");
    assert_eq!(first.smps_sent, plain_first.smps_sent + end_ports);
}

#[test]
fn a_second_sm_without_the_key_is_locked_out_and_reported() {
    locked_out(0);
    locked_out(1);
    locked_out(2);
    locked_out(3);
}

/// A rogue SM on another host, ports keyed at `protect`.
fn locked_out(protect: u8) {
    let topo = example("fat-tree-2l-k4.net");
    let mut drv = SimDriver::new(&topo, 3, Sm::new(mkey_cfg(7, protect), Guid2Lid::default()), None).expect("attach");
    assert!(drv.sweep(LIMIT, |_| {}).expect("up").complete);
    // Another host runs a rogue SM: it tries to change its own port's LID and to read the key.
    let host = (0..topo.nodes.len()).rev().find(|&i| topo.nodes[i].kind == NodeKind::Ca).expect("host");
    let rogue = drv.fabric.attach(host, 1).expect("probe");
    let read = port_info(&mut drv, rogue, &DrPath::local(), 1, 0);
    let held = drv.sm.mkeys_held()[&topo.nodes[host].port_guid(1)];
    if protect == 0 {
        // Level 0: the Get is answered with the key itself, and is no violation.
        assert_eq!(read.map(|i| (i.m_key.0, i.m_key_protect_bits)), Some((held, 0)), "level 0: the key is shown");
    } else if protect == 1 {
        // Level 1: the Get is answered, without the key, and is no violation.
        assert_eq!(read.map(|i| (i.m_key.0, i.m_key_protect_bits)), Some((0, 1)), "level 1: the key is hidden");
    } else {
        assert_eq!(read, None, "level {protect}: a Get without the key fails");
    }
    // Refused: the Get at levels 2 and 3, then at every level the Set and the TrapRepress.
    let refusals = u64::from(protect >= 2) + 2;
    if protect == 1 {
        // The SM_Key in the SM's SMInfo is shown only to a requester with the M_Key of the
        // SM's port (the Get itself passes at level 1).
        let routes = Oracle::from_topology(&topo, (host, 1)).routes;
        let peer = topo.nodes[drv.at.0].peer(drv.at.1).expect("cabled");
        let mut r = routes[&peer.node].clone();
        r.push(peer.port);
        let to_sm = DrPath::new(&r).expect("route");
        let sm_port_key = mkey_cfg(7, protect).m_key.key_for(topo.nodes[drv.at.0].port_guid(drv.at.1));
        assert_eq!(sm_key_seen(&mut drv, rogue, &to_sm, 0), Some(0), "hidden without the port's M_Key");
        assert_eq!(
            sm_key_seen(&mut drv, rogue, &to_sm, sm_port_key),
            Some(ibsm::core::DEFAULT_SM_KEY),
            "shown with it"
        );
    }
    let mut set = SmpRepr::set_dr(&DrPath::local(), ids::attr::PORT_INFO, 1, 0x99, {
        let mut info = PortInfo { lid: Lid(0x777), ..PortInfo::default() };
        info.m_key = MKey(0);
        let mut d = [0u8; 64];
        info.emit(&mut d);
        d
    });
    set.m_key = MKey(0x1234);
    drv.fabric.send(rogue, &set.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
    // A TrapRepress with a wrong key, as a rogue would send to silence the port's traps: refused
    // at every level (the IBTA checks TrapRepress as it checks Set).
    let mut repress = SmpRepr::get_dr(&DrPath::local(), ids::attr::NOTICE, 0, 0x9a).with_method(Method::TrapRepress);
    repress.m_key = MKey(0x1234);
    // (It names no trap: had it passed the check, the port would count it as unmatched.)
    let unmatched = drv.fabric.stats().trap_represses_unmatched;
    drv.fabric.send(rogue, &repress.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
    let mut reports = Vec::new();
    drv.run_until(drv.now() + 2_000_000_000, |e| {
        if let SmEvent::BadMKey { lid, m_key, ours, count, .. } = e {
            reports.push((*lid, *m_key, *ours, *count));
        }
        false
    });
    let host_lid = drv.sm.guid2lid().get(topo.nodes[host].port_guid(1)).expect("LID").0;
    // The first refusal is reported at once (at level 2 the Get, with key 0, else the Set); a
    // second within the 10 s per-source report interval is counted, not logged again.
    let first_key = if protect >= 2 { MKey(0) } else { MKey(0x1234) };
    assert_eq!(reports, [(host_lid, first_key, false, 1)], "reported once, not ours");
    assert_eq!(drv.sm.mkey_violations()[&host_lid].count, refusals, "every refusal counted");
    let taken = drv.fabric.stats().trap_represses_unmatched - unmatched;
    assert_eq!(taken, 0, "level {protect}: the TrapRepress with a wrong key is refused");
    // The port is unchanged: the SM reads its LID with its key.
    let path = end_ports(&topo, &drv).into_iter().find(|(_, _, g)| *g == topo.nodes[host].port_guid(1)).expect("port");
    let key = drv.sm.mkeys_held()[&topo.nodes[host].port_guid(1)];
    let agent = drv.agent;
    assert_eq!(port_info(&mut drv, agent, &path.0, 1, key).expect("answered").lid, host_lid);
    if protect >= 2 {
        // SM5: at levels 2 and 3 an SMInfo Get that fails the SM's port's M_Key check gets no
        // answer at all (as an SMA drops a failed Get), not an answer with the key hidden; with
        // the port's M_Key it is answered, with the SM_Key.
        let routes = Oracle::from_topology(&topo, (host, 1)).routes;
        let peer = topo.nodes[drv.at.0].peer(drv.at.1).expect("cabled");
        let mut r = routes[&peer.node].clone();
        r.push(peer.port);
        let to_sm = DrPath::new(&r).expect("route");
        let sm_port_key = mkey_cfg(7, protect).m_key.key_for(topo.nodes[drv.at.0].port_guid(drv.at.1));
        assert_eq!(sm_key_seen(&mut drv, rogue, &to_sm, 0), None, "level {protect}: no answer without the M_Key");
        assert_eq!(sm_key_seen(&mut drv, rogue, &to_sm, 0x1234), None, "level {protect}: nor with a wrong one");
        assert_eq!(sm_key_seen(&mut drv, rogue, &to_sm, sm_port_key), Some(ibsm::core::DEFAULT_SM_KEY), "with it");
    }
}

#[test]
fn a_restart_with_the_same_secret_keeps_the_keys_and_another_recovers_after_the_lease() {
    restart_and_recover(1);
}

#[test]
fn at_protect_level_2_recovery_goes_hop_by_hop_within_lease_times_hops_plus_one() {
    restart_and_recover(2);
}

/// Keys at `protect`, a restart with the same secret, then one with another secret.
fn restart_and_recover(protect: u8) {
    let topo = example("fat-tree-2l-k4.net");
    let mut drv = SimDriver::new(&topo, 3, Sm::new(mkey_cfg(7, protect), Guid2Lid::default()), None).expect("attach");
    assert!(drv.sweep(LIMIT, |_| {}).expect("up").complete);

    // Same secret, no key remembered: the derived keys are the ports' keys.
    // The state directory keeps guid2lid and the neighbour map (the secret is the config's).
    let table = drv.sm.guid2lid().clone();
    let neighbors = drv.sm.mkey_neighbors().clone();
    drv.sm = Sm::new(mkey_cfg(7, protect), table.clone());
    drv.sm.set_mkey_neighbors(neighbors.clone());
    let mut bad = 0;
    let again = drv.sweep(LIMIT, |e| bad += usize::from(matches!(e, SmEvent::BadMKey { .. }))).expect("up");
    assert!(again.complete, "{again:?}");
    assert_eq!(bad, 0, "no port refused the SM");

    // Another secret (the state directory was lost): the ports refuse the new keys until their
    // lease (60 s) runs out, then show their old key and take the new one.
    let start = drv.now();
    drv.sm = Sm::new(mkey_cfg(9, protect), table);
    drv.sm.set_mkey_neighbors(neighbors);
    let new_keys = mkey_cfg(9, protect).m_key;
    let mut refused = Vec::new();
    let first = drv
        .sweep(LIMIT, |e| {
            if let SmEvent::BadMKey { lid, ours, lease_s, .. } = e {
                refused.push((*lid, *ours, *lease_s));
            }
        })
        .expect("a report");
    assert!(!first.complete, "the Sets were refused");
    assert!(!refused.is_empty() && refused.iter().all(|r| r.1), "reported as ours: {refused:?}");
    if protect < 2 {
        // Gets work at level 1, so the SM read every port's lease.
        assert!(refused.iter().all(|r| r.2 == Some(60)), "with the lease: {refused:?}");
    }
    // The SM sweeps again on its own (the lease's end is scheduled), until the subnet is up.
    let up = drv.run_until(start + 600_000_000_000, |e| matches!(e, SmEvent::SubnetUp(r) if r.complete));
    assert!(up.is_some(), "recovered");
    let took = drv.now() - start;
    // At level 1 every port refused in the first sweep (Gets work), so one lease (plus the
    // sweep after it) is the bound. At level 2 a port that refuses Gets hides the ports behind
    // it until its lease ends: lease × (hops + 1), hops the longest route.
    let hops = end_ports(&topo, &drv).iter().map(|(p, _, _)| p.hop_count()).max().unwrap_or(0);
    // Plus 5 s for the sweeps themselves and the SM's 100 ms margin per lease.
    let bound = 60 * if protect < 2 { 1 } else { u64::from(hops) + 1 } + 5;
    assert!(took <= bound * 1_000_000_000, "recovered in {} s, bound {bound} s", took / 1_000_000_000);
    eprintln!(
        "protect {protect}: every port took the new key {:.1} s (virtual) after the restart; lease 60 s, {hops} hops",
        took as f64 / 1e9
    );
    let agent = drv.agent;
    for (path, port, guid) in end_ports(&topo, &drv) {
        let info = port_info(&mut drv, agent, &path, port, new_keys.key_for(guid)).expect("answered");
        assert_eq!(info.m_key.0, new_keys.key_for(guid), "{guid:?} has the new key");
    }
}

#[test]
fn keys_imported_from_opensms_guid2mkey_let_ibsm_take_over_without_a_refusal() {
    let topo = example("fat-tree-2l-k4.net");
    // "OpenSM" keyed the subnet with one key at protect level 2.
    let opensm = SmConfig {
        m_key: MKeyConfig {
            mode: MKeyMode::Fixed(0x0bad_cafe),
            protect: 2,
            lease_s: 60,
            secret: MKeySecret::default(),
        },
        ..SmConfig::default()
    };
    let mut drv = SimDriver::new(&topo, 3, Sm::new(opensm, Guid2Lid::default()), None).expect("attach");
    assert!(drv.sweep(LIMIT, |_| {}).expect("up").complete);
    // Its guid2mkey, as OpenSM writes it, read the way `ibsm run` reads the `guid2mkey` option.
    let mut text = String::new();
    for g in drv.sm.mkeys_held().keys() {
        let _ = writeln!(text, "0x{:016x} 0x{:016x}", g.0, 0x0bad_cafe_u64);
    }
    let imported = ibsm::daemon::state::parse_guid2mkey(&text).expect("OpenSM's format");
    let table = drv.sm.guid2lid().clone();
    let neighbors = drv.sm.mkey_neighbors().clone();
    drv.sm = Sm::new(mkey_cfg(5, 2), table);
    drv.sm.set_mkeys_held(imported);
    drv.sm.set_mkey_neighbors(neighbors);
    let mut bad = 0;
    let r = drv.sweep(LIMIT, |e| bad += usize::from(matches!(e, SmEvent::BadMKey { .. }))).expect("up");
    assert!(r.complete && bad == 0 && r.smps_retried == 0, "taken over at once, no SMP refused: {r:?}");
    let (keys, agent) = (mkey_cfg(5, 2).m_key, drv.agent);
    for (path, port, guid) in end_ports(&topo, &drv) {
        let info = port_info(&mut drv, agent, &path, port, keys.key_for(guid)).expect("answered with ibsm's key");
        assert_eq!(info.m_key.0, keys.key_for(guid));
    }
}

/// Sends SubnSet(PortInfo) `info` from `agent` along `path` (attribute modifier `port`) with
/// M_Key `key`, and lets the fabric carry it and any answer (the SMs are not stepped).
fn set_port_info(drv: &mut SimDriver, agent: AgentId, path: &DrPath, port: u8, key: u64, info: &PortInfo) {
    let mut data = [0u8; 64];
    info.emit(&mut data);
    let mut smp = SmpRepr::set_dr(path, ids::attr::PORT_INFO, u32::from(port), 0x6b00 + u64::from(port), data);
    smp.m_key = MKey(key);
    drv.fabric.send(agent, &smp.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
    let t = drv.fabric.now().0 + 1_000_000_000;
    drv.fabric.run_until_idle(SimTime(t));
}

#[test]
fn the_m_key_violation_counter_saturates_at_0xffff() {
    // MK2: M_KeyViolations (PortInfo) counts refused SMPs and stops at 0xFFFF (IBTA 14.2.4.1):
    // it never wraps to 0, which would hide an attack from an SM that reads it.
    let topo = example("fat-tree-2l-k4.net");
    let mut drv = SimDriver::new(&topo, 5, Sm::new(mkey_cfg(7, 1), Guid2Lid::default()), None).expect("attach");
    assert!(drv.sweep(LIMIT, |_| {}).expect("up").complete);
    let host = (0..topo.nodes.len()).rev().find(|&i| topo.nodes[i].kind == NodeKind::Ca).expect("host");
    let guid = topo.nodes[host].port_guid(1);
    let (path, port, _) = end_ports(&topo, &drv).into_iter().find(|p| p.2 == guid).expect("the host's port");
    let key = drv.sm.mkeys_held()[&guid];
    let sm = drv.agent;
    let read = |drv: &mut SimDriver| port_info(drv, sm, &path, port, key).expect("answered with the key");
    assert_eq!(read(&mut drv).m_key_violations, 0, "no violation yet");
    // The holder of the key sets the counter near its top (as a management tool may clear it).
    let mut info = read(&mut drv);
    info.port_state = ibsm_mad::attrs::PortState::NoChange;
    info.port_physical_state = ibsm_mad::attrs::PhysPortState::NoChange;
    info.m_key_violations = 0xfffd;
    set_port_info(&mut drv, sm, &path, port, key, &info);
    assert_eq!(read(&mut drv).m_key_violations, 0xfffd, "the key's holder set the counter");
    // A rogue on the host sends Sets with a wrong key: each is refused and counted, up to 0xFFFF.
    let rogue = drv.fabric.attach(host, 1).expect("rogue");
    let forged = PortInfo { lid: Lid(0x777), ..info };
    for n in 1..=5u16 {
        set_port_info(&mut drv, rogue, &DrPath::local(), 1, 0x1234, &forged);
        let now = read(&mut drv);
        assert_eq!(now.m_key_violations, 0xfffd_u16.saturating_add(n), "after {n} refused Sets");
        assert_ne!(now.lid, Lid(0x777), "the forged Set changed nothing");
    }
}

#[test]
fn a_rogue_sending_bad_keys_every_half_lease_for_three_leases_changes_nothing() {
    // MK3: each bad-key Set starts the port's lease timer; the SM represses the port's trap 256
    // with the port's key, which stops the timer, so the protection never lapses. No periodic
    // sweep runs here: only the SM's answer to the trap keeps the port's key in force.
    let topo = example("fat-tree-2l-k4.net");
    let lease = 60;
    let cfg = SmConfig { sweep_interval_ns: None, resweep_interval_ns: None, ..mkey_cfg(7, 2) };
    let mut drv = SimDriver::new(&topo, 8, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    assert!(drv.sweep(LIMIT, |_| {}).expect("up").complete);
    let host = (0..topo.nodes.len()).rev().find(|&i| topo.nodes[i].kind == NodeKind::Ca).expect("host");
    let guid = topo.nodes[host].port_guid(1);
    let (path, port, _) = end_ports(&topo, &drv).into_iter().find(|p| p.2 == guid).expect("the host's port");
    let key = drv.sm.mkeys_held()[&guid];
    let rogue = drv.fabric.attach(host, 1).expect("rogue");
    let forged = PortInfo { lid: Lid(0x777), m_key: MKey(0x1234), m_key_protect_bits: 0, ..PortInfo::default() };
    let start = drv.now();
    let mut traps = 0;
    let mut sent = 0u64;
    while drv.now() < start + 3 * lease * 1_000_000_000 + 10_000_000_000 {
        // Sent with the SM stepped at once: it gets the trap as the fabric delivers it.
        let mut data = [0u8; 64];
        forged.emit(&mut data);
        let mut smp = SmpRepr::set_dr(&DrPath::local(), ids::attr::PORT_INFO, 1, 0x6c00 + sent, data);
        smp.m_key = MKey(0xbad);
        drv.fabric.send(rogue, &smp.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
        sent += 1;
        let next = drv.now() + lease / 2 * 1_000_000_000;
        drv.run_until(next, |e| {
            traps += usize::from(matches!(e, SmEvent::TrapReceived { number: Some(256), .. }));
            false
        });
        if drv.now() < next {
            drv.fabric.advance_to(SimTime(next));
        }
    }
    assert!(sent >= 7, "{sent} bad-key Sets over three leases");
    assert_eq!(traps, usize::try_from(sent).expect("few"), "every refusal trapped to the SM");
    let host_lid = drv.sm.guid2lid().get(guid).expect("LID").0;
    assert_eq!(drv.sm.mkey_violations()[&host_lid].count, sent, "every trap 256 counted by the SM");
    // The rogue still cannot read the port (protect 2 in force), and the SM reads its own key,
    // protect bits and the LID it gave.
    assert_eq!(port_info(&mut drv, rogue, &DrPath::local(), 1, 0), None, "protection lapsed");
    let sm = drv.agent;
    let now = port_info(&mut drv, sm, &path, port, key).expect("answered with the key");
    assert_eq!((now.m_key.0, now.m_key_protect_bits), (key, 2));
    assert_ne!(now.lid, Lid(0x777));
    assert_eq!(u64::from(now.m_key_violations), sent + 1, "every bad-key Set counted, and the Get");
}

#[test]
fn a_standby_takes_over_a_protected_fabric_without_a_refusal_and_keeps_every_key() {
    // MK5: per-port keys at protect 2 and the same secret on both SMs; the standby is synced
    // (its sync holds the keys); the master is killed. The new master is up within 2 s of the
    // kill, no port refuses it (no trap 256, no SMP failed), and every port still holds its key
    // with protect bits 2, read back with that key.
    use ibsm::core::SmState;
    use ibsm::transport::sim::SimSms;
    const SECOND: u64 = 1_000_000_000;
    let topo = example("fat-tree-2l-k4.net");
    let hosts: Vec<(usize, u8)> =
        (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Ca).map(|i| (i, 1)).collect();
    let sms = [9u8, 5]
        .iter()
        .enumerate()
        .map(|(i, &p)| (Sm::new(SmConfig { priority: p, ..mkey_cfg(7, 2) }, Guid2Lid::default()), hosts[i]))
        .collect();
    let mut h = SimSms::new(&topo, 4, sms).expect("attach");
    // Both start together (a fresh SM with only the secret cannot read a port at protect 2:
    // it needs the keys, from the state sync or `guid2mkey`).
    h.start(0);
    h.start(1);
    let mut standby = false;
    let up = h.run_until(60 * SECOND, |i, e| {
        standby |= i == 1 && matches!(e, SmEvent::Standby { .. });
        i == 0 && matches!(e, SmEvent::SubnetUp(r) if r.complete)
    });
    assert!(up.is_some(), "the master's subnet up");
    h.run_until(h.now() + 10 * SECOND, |i, e| {
        standby |= i == 1 && matches!(e, SmEvent::Standby { .. });
        standby
    });
    assert!(standby && h.sms[1].sm.state() == SmState::Standby, "{:?}", h.sms[1].sm.state());
    // Until the standby is current with the master's state (the keys included).
    let end = h.now() + 30 * SECOND;
    while h.sms[0].sm.sync_status().version == 0
        || h.sms[1].sm.sync_status().current_at != Some(h.sms[0].sm.sync_status().version)
    {
        assert!(h.now() < end, "no sync: {:?}", h.sms[1].sm.sync_status());
        let step = h.now() + 100_000_000;
        h.run_until(step, |_, _| false);
        if h.now() < step {
            h.fabric.advance_to(SimTime(step));
        }
    }
    let keys = h.sms[0].sm.mkeys_held().clone();
    assert!(keys.len() >= 14, "every end port keyed: {}", keys.len());
    h.kill(0);
    let died = h.now();
    let mut refusals = Vec::new();
    let up = h.run_until(died + 30 * SECOND, |i, e| {
        if let SmEvent::BadMKey { lid, .. } = e {
            refusals.push(*lid);
        }
        i == 1 && matches!(e, SmEvent::SubnetUp(_))
    });
    let Some((_, SmEvent::SubnetUp(report))) = up else { panic!("no takeover: {up:?}") };
    let took = h.now() - died;
    assert_eq!(h.sms[1].sm.state(), SmState::Master);
    assert!(report.complete && report.smps_failed == 0, "{report:?}");
    assert!(refusals.is_empty(), "ports refused the new master: {refusals:?}");
    assert!(took <= 2 * SECOND, "master with the subnet up {} ms after the kill", took / 1_000_000);
    assert_eq!(h.sms[1].sm.mkeys_held(), &keys, "the new master holds the same keys");
    // Every end port, read from the new master's port with its key: the same key, protect 2.
    let routes = Oracle::from_topology(&topo, hosts[1]).routes;
    let agent = h.sms[1].agent;
    h.sms[1].alive = false;
    for (i, n) in topo.nodes.iter().enumerate() {
        let (path, port, guid) = if n.kind == NodeKind::Switch {
            (DrPath::new(&routes[&i]).expect("route"), 0u8, n.port_guid(0))
        } else if (i, 1) == hosts[1] {
            (DrPath::local(), 1, n.port_guid(1))
        } else {
            let peer = n.peer(1).expect("cabled");
            let mut r = routes[&peer.node].clone();
            r.push(peer.port);
            (DrPath::new(&r).expect("route"), 1, n.port_guid(1))
        };
        let mut smp = SmpRepr::get_dr(
            &path,
            ids::attr::PORT_INFO,
            u32::from(port),
            0x7a00 + u64::try_from(i).expect("few nodes"),
        );
        smp.m_key = MKey(keys[&guid]);
        h.fabric.send(agent, &smp.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
        h.fabric.run_until_idle(SimTime(h.now() + SECOND));
        let mut info = None;
        while let Some(r) = h.fabric.recv(agent) {
            if let Ok(resp) = SmpRepr::parse(&r.mad[..])
                && resp.tid & 0xffff_ffff == 0x7a00 + u64::try_from(i).expect("few nodes")
            {
                info = PortInfo::parse(&resp.data).ok();
            }
        }
        let info = info.unwrap_or_else(|| panic!("{} did not answer with its key", n.name));
        assert_eq!((info.m_key.0, info.m_key_protect_bits), (keys[&guid], 2), "{}", n.name);
    }
}

/// Per-port keys are a contract with the fabric: a site's ports hold keys derived from its
/// secret, so a new ibsm must derive the very same ones. These values were computed by the
/// hand-written SipHash-2-4 that derived them before the `siphasher` crate did (and checked
/// against it), for three secrets and three port GUIDs.
#[test]
fn per_port_keys_from_a_secret_never_change() {
    // (secret, [(port GUID, key)]).
    type Case = ([u8; 16], [(u64, u64); 3]);
    let cases: [Case; 3] = [
        (
            std::array::from_fn(|i| u8::try_from(i).unwrap_or(0)),
            [
                (0x0002_c903_0000_0001, 0x52a1_96bd_ebee_8019),
                (0x0002_c903_0000_ffff, 0x5123_c569_e68e_88d8),
                (0xe41d_2d03_00a1_b2c3, 0xaf1d_b470_0f9a_f43c),
            ],
        ),
        (
            [0xa5; 16],
            [
                (0x0002_c903_0000_0001, 0x8f36_8cfd_bff1_1902),
                (0x0002_c903_0000_ffff, 0xca23_731d_74fc_374d),
                (0xe41d_2d03_00a1_b2c3, 0x33dd_0d7e_c411_833c),
            ],
        ),
        (
            std::array::from_fn(|i| 0xf0 + u8::try_from(i).unwrap_or(0)),
            [
                (0x0002_c903_0000_0001, 0xc345_0fae_33eb_e9c9),
                (0x0002_c903_0000_ffff, 0x2c4a_fc07_aaba_1c8e),
                (0xe41d_2d03_00a1_b2c3, 0x6e01_c02a_2e03_d466),
            ],
        ),
    ];
    for (secret, keys) in cases {
        let cfg = MKeyConfig { mode: MKeyMode::PerPort, protect: 1, lease_s: 60, secret: MKeySecret(secret) };
        for (guid, key) in keys {
            assert_eq!(cfg.key_for(Guid(guid)), key, "secret {secret:02x?}, port GUID {guid:#018x}");
        }
    }
}

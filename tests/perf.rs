//! The performance manager on the in-process simulator: its reads cross the simulated fabric
//! to every node's PMA and back (class 0x04, QP1); a cable given an error rate is flagged
//! within two intervals and nothing else is; its totals equal the fabric's own counts; a
//! standby reads nothing, and a new master starts reading within an interval.

use std::collections::BTreeSet;

use ibsm::core::perf::counters::Counter;
use ibsm::core::{Guid2Lid, Sm, SmConfig, SmEvent, SmState};
use ibsm::transport::sim::SimDriver;
use ibsm_mad::{Guid, Lid};
use ibsm_sim::fabric::{ErrorRate, Fault, SimTime};

mod support;
use support::sa::{LIMIT, example};
use support::sms::{SECOND, elect};

const INTERVAL: u64 = 10 * SECOND;

fn up() -> (SimDriver, ibsm_topology::Topology) {
    let topo = example("fat-tree-2l-k4.net");
    let mut drv = SimDriver::new(&topo, 3, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("attach");
    let report = drv.sweep(LIMIT, |_| {}).expect("a report");
    assert!(report.complete, "{report:?}");
    (drv, topo)
}

/// Runs until `t` of virtual time, collecting the SM's events.
fn run_to(drv: &mut SimDriver, t: u64, events: &mut Vec<SmEvent>) {
    drv.run_until(t, |ev| {
        events.push(ev.clone());
        false
    });
}

fn guid(topo: &ibsm_topology::Topology, name: &str) -> (usize, Guid) {
    let i = topo.find(name).expect("node");
    (i, topo.nodes[i].node_guid)
}

#[test]
fn a_cable_with_errors_is_flagged_within_two_intervals_and_nothing_else() {
    let (mut drv, topo) = up();
    let mut events = Vec::new();
    // The first PM sweep starts when the bring-up ends; let it read every port.
    let t0 = drv.now();
    run_to(&mut drv, t0 + SECOND, &mut events);
    let pm = drv.sm.perf();
    let first = *pm.last_sweep().expect("a PM sweep right after the bring-up");
    // Every cabled port of the fabric: 8 HCAs, and 4 leaves and 2 spines fully cabled.
    assert_eq!(pm.books().len(), 8 + 4 * 4 + 2 * 4, "ports read");
    assert_eq!(first.failed, 0);
    assert!(pm.flagged().is_empty());

    // leaf-0 port 3 goes to spine-0: a bad cable, 20 symbol errors a second at both ends.
    let (leaf, leaf_guid) = guid(&topo, "leaf-0");
    let rate = ErrorRate { symbol_errors: 20, rcv_errors: 0, link_downed: 0, interval_ns: SECOND };
    let at = drv.now();
    drv.fabric.inject_fault(Fault::LinkErrors { node: leaf, port: 3, rate });
    run_to(&mut drv, at + 2 * INTERVAL, &mut events);
    let (_, spine_guid) = guid(&topo, "spine-0");
    let peer = drv
        .sm
        .subnet()
        .nodes
        .iter()
        .find(|n| n.info.node_guid == leaf_guid)
        .and_then(|n| n.ports[3].remote)
        .expect("leaf-0[3] is cabled");
    let peer_port = peer.1.0;
    let want: BTreeSet<(Guid, u8)> = [(leaf_guid, 3), (spine_guid, peer_port)].into();
    let flagged: BTreeSet<(Guid, u8)> = drv.sm.perf().flagged().keys().copied().collect();
    assert_eq!(flagged, want, "both ends of the bad cable, nothing else");
    let reported: BTreeSet<(Guid, u8)> = events
        .iter()
        .filter_map(|e| match e {
            SmEvent::PortErrors { node, port, over, .. } => {
                assert!(over.iter().all(|(c, d, t)| *c == "SymbolErrorCounter" && d > t), "{over:?}");
                Some((*node, port.0))
            }
            _ => None,
        })
        .collect();
    assert_eq!(reported, want, "one event per port");
    assert_eq!(drv.sm.perf().counts().threshold_events, 2, "logged once each");
    // `ibsm status` lists them among its problems; `ibsm counters --errors` answers them.
    let st = ibsm::daemon::control::status(&drv.sm);
    let listed: BTreeSet<(String, u8)> = st.problems.port_errors.iter().map(|p| (p.node.clone(), p.port)).collect();
    let hex = |g: Guid| format!("{:#018x}", g.0);
    assert_eq!(listed, want.iter().map(|&(g, p)| (hex(g), p)).collect(), "{:?}", st.problems);
    assert!(st.problems.port_errors.iter().all(|p| p.counters.iter().all(|c| c.starts_with("SymbolErrorCounter="))));
    let query = ibsm::daemon::control::Query::Counters(ibsm::daemon::control::Selection { errors: true, top: None });
    assert_eq!(ibsm::daemon::control::parse_request(&query.request_line()), Ok(query.clone()));
    let line = ibsm::daemon::control::respond(&drv.sm, &query);
    let answer: ibsm::daemon::control::CountersAnswer = serde_json::from_str(&line).expect(&line);
    let answered: BTreeSet<(String, u8)> = answer.ports.iter().map(|p| (p.node.clone(), p.port)).collect();
    assert_eq!(answered, want.iter().map(|&(g, p)| (hex(g), p)).collect());
    assert_eq!(answer.ports_left_out, 32 - 2);
    // Metrics: the errors, in errors, for those two ports only.
    let text = ibsm::daemon::metrics::render(&drv.sm);
    let error_series: Vec<&str> = text.lines().filter(|l| l.starts_with("ibsm_port_errors_total{")).collect();
    assert_eq!(error_series.len(), 2, "{error_series:?}");
    assert!(error_series.iter().all(|l| l.contains("counter=\"SymbolErrorCounter\"")), "{error_series:?}");
    assert!(text.contains("ibsm_perf_ports_over_threshold 2\n"));

    // The fault ends; after a PM sweep has read the frozen counters, the PM's totals equal the
    // fabric's own counts for every port it reads.
    drv.fabric.inject_fault(Fault::LinkErrors { node: leaf, port: 3, rate: ErrorRate::default() });
    let sweeps = drv.sm.perf().counts().sweeps;
    let t = drv.now();
    drv.run_until(t + 2 * INTERVAL, |_| false);
    assert!(drv.sm.perf().counts().sweeps >= sweeps + 2);
    assert!(drv.sm.perf().flagged().is_empty(), "a quiet interval clears the flag");
    let books = drv.sm.perf().books().clone();
    let mut errors_seen = 0;
    for ((node, port), book) in &books {
        let i = topo.nodes.iter().position(|n| n.node_guid == *node).expect("node of the fabric");
        let sim = drv.fabric.port_counters_now(i, *port).expect("port");
        assert_eq!(book.totals.get(Counter::SymbolErrors), sim.symbol_errors, "{node}[{port}]");
        assert_eq!(book.totals.get(Counter::RcvErrors), sim.rcv_errors, "{node}[{port}]");
        errors_seen += sim.symbol_errors;
        // Traffic: since the PM read the port it has carried at most the rest of that PM
        // sweep's MADs (the SM's own link carries them all) and a light sweep's; every MAD is
        // 72 words, so words = 72 x packets: the unit is the PMA's.
        let (pm_pkts, pm_words) = (book.totals.get(Counter::XmitPkts), book.totals.get(Counter::XmitData));
        assert!(pm_pkts > 0 && pm_words == 72 * pm_pkts, "{node}[{port}]: {pm_pkts} packets, {pm_words} words");
        let bound = 4 * books.len() as u64 + 64;
        assert!(
            sim.xmit_pkts >= pm_pkts && sim.xmit_pkts - pm_pkts <= bound,
            "{node}[{port}]: {} vs {pm_pkts}",
            sim.xmit_pkts
        );
        let pm_rcv = book.totals.get(Counter::RcvPkts);
        assert!(
            sim.rcv_pkts >= pm_rcv && sim.rcv_pkts - pm_rcv <= bound,
            "{node}[{port}]: {} vs {pm_rcv}",
            sim.rcv_pkts
        );
    }
    // Both ends counted 20 a second for the 20 s (less the last event's distance to the end).
    assert!(errors_seen >= 2 * 20 * 19, "{errors_seen}");
}

#[test]
fn pm_reads_wait_while_a_sweep_runs() {
    let (mut drv, _) = up();
    let mut events = Vec::new();
    let t0 = drv.now();
    run_to(&mut drv, t0 + SECOND, &mut events);
    assert_eq!(drv.sm.perf().counts().sweeps, 1);
    // The second PM sweep starts and sends its first window...
    let due = drv.sm.perf().last_sweep().expect("a PM sweep").started_at + INTERVAL;
    drv.run_until(due, |_| false);
    drv.fabric.advance_to(SimTime(due));
    assert!(drv.sm.perf().sweeping(), "the PM sweep is under way");
    let sent = drv.sm.perf().counts().sent;
    // ...and a heavy sweep starts while most of its reads are still queued: no PM read leaves
    // until the sweep ends.
    drv.sm.start_sweep(drv.now());
    let sweeping = |drv: &SimDriver| drv.sm.phase() != ibsm::core::SweepPhase::Up;
    assert!(sweeping(&drv));
    while sweeping(&drv) {
        assert_eq!(drv.sm.perf().counts().sent, sent, "a PM read left during the sweep");
        let t = drv.now();
        drv.run_until(t + 10_000, |_| false);
        assert!(drv.now() < due + 5 * SECOND, "the sweep ends");
    }
    let t = drv.now();
    drv.run_until(t + SECOND, |_| false);
    let pm = drv.sm.perf();
    assert_eq!(pm.counts().sweeps, 2, "the PM sweep went on after it");
    assert_eq!(pm.last_sweep().map(|s| (s.ports_read, s.failed)), Some((32, 0)));
    assert_eq!(drv.sm.state(), SmState::Master);
}

#[test]
fn a_standby_reads_nothing_and_a_new_master_reads_within_an_interval() {
    let topo = example("fat-tree-2l-k4.net");
    let (mut h, master) = elect(&topo, 5, &[3, 1]);
    let standby = 1 - master;
    let t = h.now();
    h.run_until(t + 2 * INTERVAL, |_, _| false);
    assert!(h.sms[master].sm.perf().counts().sweeps >= 2);
    assert_eq!(h.sms[standby].sm.perf().counts().sent, 0, "a standby sends no PM read");
    h.kill(master);
    let killed = h.now();
    let end = killed + 60 * SECOND;
    while h.sms[standby].sm.state() != SmState::Master {
        assert!(h.now() < end, "the standby takes over");
        let until = h.now() + 100_000_000;
        h.run_until(until, |_, _| false);
        // The harness stops at its last event before `until`; the clock goes on to it.
        if h.now() < until {
            h.fabric.advance_to(SimTime(until));
        }
    }
    let took_over = h.now();
    h.run_until(took_over + INTERVAL, |_, _| false);
    let pm = h.sms[standby].sm.perf();
    let first = pm.last_sweep().expect("the new master ran a PM sweep");
    assert!(first.started_at <= took_over + INTERVAL, "within an interval of the takeover");
    assert!(pm.books().len() >= 8, "{} ports", pm.books().len());
}

/// This process's CPU time so far (user + system), from /proc (clock ticks of 10 ms).
fn cpu_ms() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = after.split_whitespace().collect();
    // After the command name: the state (field 3) first, so utime (14) and stime (15) are 11
    // and 12.
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    (tick(11) + tick(12)) * 10
}

/// The figures of BENCHMARKS.md's PM sweep on the k=48 three-level fat tree (27,648 HCAs,
/// 2,880 switches): fabric time of a PM sweep of every cabled port at the simulator's default
/// 10 us per MAD, and the CPU time this process spent on it (the SM and the simulator
/// together, so an upper bound for the SM's); then the rate of SA PathRecord answers through the
/// core from one host (32 in flight, no per-requester limit) during a PM sweep and idle, in
/// fabric time (the SA's answer takes none: a round trip) and in wall time (the SM and the
/// simulator in one thread: the PM's work, and the simulation of its MADs, slow it there).
/// `cargo test --release -p ibsm --test perf -- --ignored --nocapture k48`.
#[test]
#[ignore = "k=48: minutes in a debug build; run with --release"]
fn k48_pm_sweep_figures() {
    // IBSM_PERF_K=12 (an even k) tries the same on a smaller tree.
    let k = std::env::var("IBSM_PERF_K").ok().and_then(|v| v.parse().ok()).unwrap_or(48);
    let topo = ibsm_topology::GenSpec::fat_tree(3, k).generate().expect("fat tree");
    // No per-requester SA limit: the SA load below comes from one port, and measures the SA.
    let cfg = SmConfig { sa_rate_limit: 0, ..SmConfig::default() };
    let mut drv = SimDriver::new(&topo, 1, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    drv.compute_time = ibsm::transport::sim::ComputeTime::Wall;
    let report = drv.sweep(600 * SECOND, |_| {}).expect("a report");
    assert!(report.complete);
    // The first PM sweep starts as the bring-up ends; time the second, a steady-state one.
    let t = drv.now();
    drv.run_until(t + 5 * SECOND, |_| false);
    let first = *drv.sm.perf().last_sweep().expect("the first PM sweep ended");
    let due = first.started_at + INTERVAL;
    drv.run_until(due - 1, |_| false);
    drv.fabric.advance_to(SimTime(due - 1));
    let (cpu0, wall0) = (cpu_ms(), std::time::Instant::now());
    while drv.sm.perf().counts().sweeps < 2 {
        let until = drv.now() + 10_000_000;
        drv.run_until(until, |_| false);
        if drv.now() < until {
            drv.fabric.advance_to(SimTime(until));
        }
        assert!(drv.now() < due + INTERVAL, "the PM sweep fits in its interval");
    }
    let (cpu, wall) = (cpu_ms() - cpu0, wall0.elapsed());
    let s = *drv.sm.perf().last_sweep().expect("second PM sweep");
    let c = drv.sm.perf().counts();
    println!(
        "k{k} PM sweep: {} ports read, {} failed, fabric time {:.1} ms; {} MADs over both sweeps; process CPU {} ms, wall {:.0} ms",
        s.ports_read,
        s.failed,
        (s.ended_at - s.started_at) as f64 / 1e6,
        c.sent,
        cpu,
        wall.as_secs_f64() * 1e3
    );
    assert_eq!(s.failed, 0);

    // The SA while a PM sweep runs, and idle: PathRecord Gets between random pairs of hosts
    // from a host of the fabric, SA_WINDOW in flight, for half the second PM sweep's length of
    // virtual time from the start of the third, then as long after it ended.
    let hosts: Vec<Lid> = topo
        .nodes
        .iter()
        .filter(|n| n.kind == ibsm_topology::NodeKind::Ca)
        .filter_map(|n| drv.sm.guid2lid().get(n.port_guid(1)).map(|(lo, _)| lo))
        .collect();
    let sm_lid = drv.sm.guid2lid().get(drv.sm.port_guid()).expect("the SM's LID").0;
    let probe_at = topo.nodes.iter().rposition(|n| n.kind == ibsm_topology::NodeKind::Ca).expect("a host");
    let probe = drv.fabric.attach(probe_at, 1).expect("probe");
    let third = drv.sm.perf().last_sweep().expect("second PM sweep").started_at + INTERVAL;
    drv.run_until(third - 1, |_| false);
    drv.fabric.advance_to(SimTime(third - 1));
    let span = (s.ended_at - s.started_at) / 2;
    let busy = sa_load(&mut drv, probe, sm_lid, &hosts, span);
    assert!(drv.sm.perf().sweeping(), "the PM sweep ran all along the SA load");
    let mut idle_at = drv.now();
    while drv.sm.perf().sweeping() {
        idle_at += 10_000_000;
        drv.run_until(idle_at, |_| false);
        drv.fabric.advance_to(SimTime(idle_at));
    }
    let idle = sa_load(&mut drv, probe, sm_lid, &hosts, span);
    assert!(!drv.sm.perf().sweeping(), "no PM sweep during the idle load");
    for (what, (n, wall, cpu, latency)) in [("during a PM sweep", busy), ("idle", idle)] {
        #[allow(clippy::cast_precision_loss)] // counts far below 2^52
        let (per_virtual, per_wall) = (n as f64 / (span as f64 / 1e9), n as f64 / wall);
        println!(
            "SA PathRecords {what}: {n} answered in {:.1} ms of fabric time ({per_virtual:.0}/s), wall {:.0} ms ({per_wall:.0}/s), process CPU {cpu} ms, mean answer time {:.1} us",
            span as f64 / 1e6,
            wall * 1e3,
            latency as f64 / 1e3
        );
    }
}

/// SA PathRecord Gets in flight at once in [`sa_load`].
const SA_WINDOW: usize = 32;

/// Sends PathRecord Gets (SLID and DLID of pseudo-random pairs of `hosts`) from `probe` to the
/// SA for `span` ns of virtual time, [`SA_WINDOW`] in flight, each answer sending the next:
/// (answers with status 0, wall seconds, process CPU ms, mean fabric time from a request's
/// sending to its answer's arrival, ns).
fn sa_load(
    drv: &mut SimDriver,
    probe: ibsm_sim::fabric::AgentId,
    sm_lid: Lid,
    hosts: &[Lid],
    span: u64,
) -> (u64, f64, u64, u64) {
    use ibsm_mad::header::Method;
    use ibsm_mad::records::PathRecord;
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut tid = 0x5a00_0000_u64;
    let mut send = |drv: &mut SimDriver, sent: &mut std::collections::HashMap<u64, u64>| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let pick = |s: u64| hosts[usize::try_from(s % hosts.len() as u64).unwrap_or(0)];
        let r = PathRecord { slid: pick(seed >> 33), dlid: pick(seed >> 7), ..PathRecord::default() };
        tid += 1;
        sent.insert(tid & 0xffff_ffff, drv.now());
        let mad = ibsm_mad::sa::request(Method::Get, PathRecord::COMP_SLID | PathRecord::COMP_DLID, tid, &r)
            .expect("request");
        drv.fabric.send(probe, &mad, ibsm_sim::fabric::Dest { dlid: sm_lid, qpn: 1 });
    };
    let mut sent = std::collections::HashMap::new();
    let end = drv.now() + span;
    let (cpu0, wall0) = (cpu_ms(), std::time::Instant::now());
    for _ in 0..SA_WINDOW {
        send(drv, &mut sent);
    }
    let (mut answered, mut waited) = (0, 0);
    while drv.now() < end {
        let step = (drv.now() + 1_000).min(end);
        drv.run_until(step, |_| false);
        if drv.now() < step {
            drv.fabric.advance_to(SimTime(step));
        }
        while let Some(r) = drv.fabric.recv(probe) {
            let h = ibsm_mad::sa::SaHeader::from_bytes(&r.mad[..]).expect("an SA answer");
            // An answer to the load before this one (in flight when it ended) is not counted.
            let Some(at) = sent.remove(&(h.tid & 0xffff_ffff)) else { continue };
            assert_eq!(h.status, 0, "PathRecord answered");
            answered += 1;
            waited += r.at.0 - at;
            send(drv, &mut sent);
        }
    }
    (answered, wall0.elapsed().as_secs_f64(), cpu_ms() - cpu0, waited / answered.max(1))
}

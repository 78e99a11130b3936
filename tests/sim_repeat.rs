//! A seeded simulated run repeats itself, MAD for MAD, with every part of the core that keeps
//! state in a hash map switched on: per-port M_Keys with a lease, a partition policy with
//! several P_Keys, QoS tables, the performance manager (and a bad cable for it to find), the
//! babbling-port policy, a multicast group a host creates and an event subscription, traps from
//! a cable cut and a port flap, a standby SM kept current by state sync that takes over when
//! the master dies, all under a packet delay (with jitter) and a drop rule.
//!
//! The run goes twice in one process. Std `HashMap`s and `HashSet`s draw new random keys for
//! each map, so a map whose iteration order reaches the wire (the order MADs are sent in, or
//! which of several is sent first) makes the two runs part: the test compares every MAD each
//! SM and the host sent and received (time, direction, address, header and a hash of the bytes)
//! and every event with its virtual time, and on a difference names the first.
//!
//! The harness steps the SMs itself (as `support::sms::run_counting` does), so that it sees every
//! MAD on its way in and out; computing takes no virtual time. Without jitter (answers then
//! arrive together), a run that hands each SM the MADs of one instant as one batch
//! (`Sm::handle_mads`, as the umad loop does) must trace as one that hands them one by one
//! (`Sm::handle_mad`, as the simulated transport does).

use std::hash::{Hash, Hasher};

use ibsm::core::mkeys::{MKeyConfig, MKeyMode, MKeySecret};
use ibsm::core::{Guid2Lid, MadSource, Sm, SmConfig, SmState};
use ibsm::transport::sim::SimSms;
use ibsm_mad::header::Method;
use ibsm_mad::records::{JoinState, McMemberRecord};
use ibsm_mad::sa::request;
use ibsm_mad::{Gid, Lid, MAD_LEN, PKey};
use ibsm_sim::fabric::{AgentId, Dest, ErrorRate, Fault, LinkRule, SimConfig, SimTime, Stats};
use ibsm_topology::{NodeKind, Topology};

mod support;
use support::sa::{MC_CREATE, PREFIX, example, inform_all, path_query};
use support::sms::{SECOND, hosts, lids, qos_setting, trap_129};

/// One line of a run's trace.
type Line = String;

/// A run's trace, and how the SMs are handed what they receive.
struct Trace {
    lines: Vec<Line>,
    /// The MADs an SM receives at one instant go to it as one batch ([`Sm::handle_mads`], as
    /// the umad loop hands them over), not one by one ([`Sm::handle_mad`], as the simulated
    /// transport does).
    batched: bool,
    /// Batches of more than one MAD handed over.
    batches: usize,
}

impl Trace {
    fn push(&mut self, line: Line) {
        self.lines.push(line);
    }
}

/// The MAD in a line: class, method, attribute, modifier, TID and a hash of all its bytes.
fn mad_line(bytes: &[u8]) -> String {
    // The std hasher with its fixed keys: the same bytes hash the same in every run.
    #[allow(deprecated)]
    let mut h = std::hash::SipHasher::new();
    bytes.hash(&mut h);
    let be16 = |r: std::ops::Range<usize>| bytes.get(r).map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
    let attr_mod = bytes.get(20..24).map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    let tid = bytes.get(8..16).map_or(0, |b| u64::from_be_bytes(b.try_into().unwrap()));
    format!(
        "class {:#04x} method {:#04x} attr {:#06x} mod {attr_mod:#x} tid {tid:#x} status {:#x} len {} hash {:016x}",
        bytes.get(1).copied().unwrap_or(0),
        bytes.get(3).copied().unwrap_or(0),
        be16(16..18),
        be16(4..6),
        bytes.len(),
        h.finish()
    )
}

/// Steps the live SMs and the fabric for `for_ns` (the clock then at its end), writing every MAD
/// an SM sends or receives, every MAD `host` receives, and every SM event into `trace`.
fn run_tracing(h: &mut SimSms, host: Option<AgentId>, for_ns: u64, trace: &mut Trace) {
    let limit_ns = h.now() + for_ns;
    loop {
        let now = h.now();
        for (i, s) in h.sms.iter_mut().enumerate().filter(|(_, s)| s.alive) {
            while s.sm.poll_compute().is_some() {
                s.sm.handle_compute(&mut || now);
            }
            while let Some(t) = s.sm.poll_transmit(now) {
                trace.push(format!("{now} sm{i} tx lid {} qp {} {}", t.to.lid.0, t.to.qpn, mad_line(&t.bytes)));
                let mut mad = [0u8; MAD_LEN];
                let n = t.bytes.len().min(MAD_LEN);
                mad[..n].copy_from_slice(&t.bytes[..n]);
                h.fabric.send_pkey(s.agent, &mad, Dest { dlid: t.to.lid, qpn: t.to.qpn }, t.to.pkey_index);
            }
            while let Some(ev) = s.sm.poll_event() {
                trace.push(format!("{now} sm{i} event {ev:?}"));
            }
        }
        let timers = h.sms.iter().filter(|s| s.alive).filter_map(|s| s.sm.poll_timeout()).min();
        let next = match (h.fabric.next_event().map(|t| t.0), timers) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => u64::MAX,
        };
        if next > limit_ns {
            h.fabric.advance_to(SimTime(limit_ns.max(h.now())));
            return;
        }
        h.fabric.advance_to(SimTime(next));
        let now = h.now();
        for (i, s) in h.sms.iter_mut().enumerate().filter(|(_, s)| s.alive) {
            let mut batch = Vec::new();
            while let Some(r) = h.fabric.recv(s.agent) {
                trace.push(format!("{} sm{i} rx slid {} {}", r.at.0, r.slid.0, mad_line(&r.mad[..])));
                let src = MadSource { slid: r.slid, sqpn: r.sqpn, pkey_index: r.pkey_index, sl: 0, grh: None };
                if trace.batched {
                    batch.push((r.at.0, r.mad, src));
                } else {
                    s.sm.handle_mad(r.at.0, &r.mad[..], src);
                }
            }
            // Batched: each run of MADs that arrived at one instant, together.
            for group in batch.chunk_by(|a, b| a.0 == b.0) {
                trace.batches += usize::from(group.len() > 1);
                s.sm.handle_mads(group[0].0, group.iter().map(|(_, mad, src)| (&mad[..], *src)));
            }
            if s.sm.poll_timeout().is_some_and(|t| t <= now) {
                s.sm.handle_timeout(now);
            }
        }
        if let Some(host) = host {
            while let Some(r) = h.fabric.recv(host) {
                trace.push(format!("{} host rx slid {} {}", r.at.0, r.slid.0, mad_line(&r.mad[..])));
            }
        }
    }
}

/// The host asks the SA at `sm_lid` for a PathRecord from its LID to each of `to` (TIDs from
/// `tid`), then for the table of every path from it, and waits for the answers.
fn paths(h: &mut SimSms, (host, sm_lid, me): (AgentId, Lid, Lid), to: &[Lid], tid: u64, trace: &mut Trace) {
    let mut asks = Vec::new();
    for (i, &dlid) in to.iter().enumerate() {
        let (mask, rec) = path_query(Some(me), Some(dlid), None, None);
        asks.push((Method::Get, mask, tid + i as u64, rec));
    }
    let (mask, rec) = path_query(Some(me), None, None, None);
    asks.push((Method::GetTable, mask, tid + 0x80, rec));
    for (method, mask, tid, rec) in asks {
        let mut bytes = request(method, mask, tid, &rec).expect("request");
        bytes[36..44].copy_from_slice(&ibsm::sa::DEFAULT_SA_KEY.to_be_bytes());
        h.fabric.send(host, &bytes, Dest { dlid: sm_lid, qpn: 1 });
        trace.push(format!("{} host tx {tid:#x}", h.now()));
        run_tracing(h, Some(host), SECOND / 1000, trace);
    }
    run_tracing(h, Some(host), SECOND / 2, trace);
}

/// An SM with `priority` and every stateful part on.
fn cfg(topo: &Topology, priority: u8) -> SmConfig {
    let guid = |i: usize| topo.nodes[hosts(topo)[i].0].port_guid(1).0;
    let text = format!(
        "Default=0x7fff : ALL=full ;\nalpha=0x0001 : 0x{:016x}=full, 0x{:016x}=full, 0x{:016x}=limited ;\n\
         beta=0x0002 : 0x{:016x}=full, 0x{:016x}=limited, 0x{:016x}=full ;\ngamma=0x0003 : ALL=limited ;\n",
        guid(2),
        guid(3),
        guid(4),
        guid(4),
        guid(5),
        guid(6)
    );
    SmConfig {
        priority,
        sm_key: 7,
        m_key: MKeyConfig { mode: MKeyMode::PerPort, protect: 1, lease_s: 5, secret: MKeySecret([0x5a; 16]) },
        partitions: ibsm_partitions::parse_partitions_conf(&text).expect("policy"),
        qos: Some(qos_setting()),
        babbling: ibsm::core::babbling::BabblingConfig {
            enabled: true,
            max_traps: 3,
            window_ns: 10 * SECOND,
            backoff_ns: 5 * SECOND,
        },
        sweep_interval_ns: Some(2 * SECOND),
        perf: ibsm::core::perf::PerfConfig { interval_ns: 2 * SECOND, ..Default::default() },
        ..SmConfig::default()
    }
}

/// What one run saw: its trace, the fabric's counts, and what the test checks it exercised.
struct Run {
    trace: Vec<Line>,
    stats: Stats,
    exercised: Vec<(&'static str, bool)>,
    batches: usize,
}

/// The scenario, seeded.
fn run(topo: &Topology, seed: u64, top: &str, (jitter_ns, batched): (u64, bool)) -> Run {
    let at = hosts(topo);
    let sms =
        vec![(Sm::new(cfg(topo, 9), Guid2Lid::default()), at[0]), (Sm::new(cfg(topo, 5), Guid2Lid::default()), at[1])];
    let mut h = SimSms::with_config(topo, SimConfig { seed, ..SimConfig::default() }, sms).expect("attach");
    h.fabric.inject_fault(Fault::AddRule(LinkRule::global_delay(2_000, jitter_ns)));
    h.fabric.inject_fault(Fault::AddRule(LinkRule::global_drop(0.01)));
    let mut trace = Trace { lines: Vec::new(), batched, batches: 0 };
    h.start(0);
    h.start(1);
    run_tracing(&mut h, None, 4 * SECOND, &mut trace);

    // A host creates a multicast group and subscribes to every notice, on the master's SA;
    // a bad cable gives the PM errors to count.
    let host = h.fabric.attach(at[4].0, at[4].1).expect("attach");
    let me = Gid { prefix: PREFIX, guid: topo.nodes[at[4].0].port_guid(1) };
    let join = McMemberRecord {
        port_gid: me,
        qkey: 0x1234,
        pkey: PKey(0xffff),
        join_state: JoinState::FULL_MEMBER,
        ..McMemberRecord::default()
    };
    let master = h.master().expect("a master");
    let sm_lid = lids(&h, master)[&h.sms[master].sm.port_guid()];
    for (tid, bytes) in [
        (0x11, request(Method::Set, MC_CREATE, 0x11, &join).expect("request")),
        (0x12, request(Method::Set, 0, 0x12, &inform_all()).expect("request")),
    ] {
        let mut bytes = bytes;
        bytes[36..44].copy_from_slice(&ibsm::sa::DEFAULT_SA_KEY.to_be_bytes());
        h.fabric.send(host, &bytes, Dest { dlid: sm_lid, qpn: 1 });
        trace.push(format!("{} host tx {tid:#x}", h.now()));
    }
    // The host's port babbles: traps 129 about itself, past the policy's limit.
    let my_lid = lids(&h, master)[&me.guid];
    for i in 0..6 {
        h.fabric.send(host, &trap_129(my_lid, 0x100 + i), Dest { dlid: sm_lid, qpn: 0 });
        trace.push(format!("{} host trap {i}", h.now()));
        run_tracing(&mut h, Some(host), SECOND / 1000, &mut trace);
    }
    let host_lids: Vec<Lid> = at.iter().map(|&(n, p)| lids(&h, master)[&topo.nodes[n].port_guid(p)]).collect();
    paths(&mut h, (host, sm_lid, my_lid), &host_lids, 0x200, &mut trace);
    let leaf = topo.nodes[at[6].0].peer(1).expect("h6's leaf");
    h.fabric.inject_fault(Fault::LinkErrors {
        node: at[6].0,
        port: 1,
        rate: ErrorRate { symbol_errors: 50, rcv_errors: 5, link_downed: 0, interval_ns: SECOND },
    });
    run_tracing(&mut h, Some(host), 3 * SECOND, &mut trace);

    // A cable cut between two switches, and a host port that flaps.
    let spine = topo.find(top).expect("the switch");
    let cut = (1..=topo.nodes[spine].num_ports)
        .find(|&p| topo.nodes[spine].peer(p).is_some_and(|q| topo.nodes[q.node].kind == NodeKind::Switch))
        .expect("a cable to another switch");
    h.fabric.inject_fault(Fault::LinkDown { node: spine, port: cut });
    run_tracing(&mut h, Some(host), 3 * SECOND, &mut trace);
    for _ in 0..4 {
        h.fabric.inject_fault(Fault::LinkDown { node: leaf.node, port: leaf.port });
        run_tracing(&mut h, Some(host), SECOND / 5, &mut trace);
        h.fabric.inject_fault(Fault::LinkUp { node: leaf.node, port: leaf.port });
        run_tracing(&mut h, Some(host), SECOND / 5, &mut trace);
    }
    run_tracing(&mut h, Some(host), 4 * SECOND, &mut trace);

    // The master dies; the standby takes over with what it was synced.
    let synced = h.sms[1 - master].sm.sync_status().current_at.is_some();
    h.kill(master);
    h.fabric.inject_fault(Fault::LinkUp { node: spine, port: cut });
    run_tracing(&mut h, Some(host), 10 * SECOND, &mut trace);
    let new_master = 1 - master;
    let sm_lid = lids(&h, new_master)[&h.sms[new_master].sm.port_guid()];
    paths(&mut h, (host, sm_lid, my_lid), &host_lids, 0x300, &mut trace);

    let saw = |what: &str| trace.lines.iter().any(|l| l.contains(what));
    let exercised = vec![
        (
            "the join answered",
            trace.lines.iter().any(|l| l.contains("host rx") && l.contains("attr 0x0038") && l.contains("status 0x0 ")),
        ),
        ("a trap", saw("TrapReceived")),
        ("a notice reported", trace.lines.iter().any(|l| l.contains("host rx") && l.contains("method 0x06"))),
        (
            "paths answered",
            trace.lines.iter().any(|l| l.contains("host rx") && l.contains("attr 0x0035") && l.contains("status 0x0 ")),
        ),
        ("port errors", saw("PortErrors")),
        ("a babbling port", saw("BabblingPort")),
        ("the standby synced", synced),
        ("the standby took over", h.sms[1 - master].sm.state() == SmState::Master),
        (
            "M_Keys set",
            trace.lines.iter().any(|l| l.contains("tx") && l.contains("attr 0x0015") && l.contains("method 0x02")),
        ),
        (
            "QoS tables set",
            trace.lines.iter().any(|l| l.contains("tx") && l.contains("attr 0x0017") && l.contains("method 0x02")),
        ),
    ];
    Run { trace: trace.lines, stats: h.fabric.stats(), exercised, batches: trace.batches }
}

/// Runs `fabric` with `seed` twice as the simulated transport hands the SMs their MADs (one
/// by one) and compares; then, without jitter (so that answers arrive together), once one by
/// one and once as the umad loop hands them over (in batches), and compares those.
fn repeats(fabric: &str, top: &str, seed: u64) {
    let topo = example(fabric);
    let first = run(&topo, seed, top, (20_000, false));
    let missing: Vec<&str> = first.exercised.iter().filter(|e| !e.1).map(|e| e.0).collect();
    assert!(missing.is_empty(), "{fabric} seed {seed}: the run did not exercise {missing:?}");
    assert!(first.stats.dropped_fault > 0 && first.stats.pma_answered > 0, "{fabric} seed {seed}: {:?}", first.stats);
    same(fabric, seed, "second run", &first, &run(&topo, seed, top, (20_000, false)));
    let still = run(&topo, seed, top, (0, false));
    let batched = run(&topo, seed, top, (0, true));
    assert!(batched.batches > 100, "{fabric} seed {seed}: only {} batches of several MADs", batched.batches);
    same(fabric, seed, "batched run", &still, &batched);
}

/// `other`'s trace and counts are `first`'s, or the first line where they part is shown.
fn same(fabric: &str, seed: u64, what: &str, first: &Run, other: &Run) {
    if let Some(i) = (0..first.trace.len().min(other.trace.len())).find(|&i| first.trace[i] != other.trace[i]) {
        let from = i.saturating_sub(5);
        panic!(
            "{fabric} seed {seed}: the {what} parts at line {i} of {}:\nbefore:\n{}\none by one: {}\n{what}: {}",
            first.trace.len(),
            first.trace[from..i].join("\n"),
            first.trace[i],
            other.trace[i]
        );
    }
    assert_eq!(first.trace.len(), other.trace.len(), "{fabric} seed {seed}: the {what} is longer or shorter");
    assert_eq!(first.stats, other.stats, "{fabric} seed {seed}: {what}");
}

#[test]
fn a_seeded_run_with_every_stateful_part_repeats_itself_mad_for_mad() {
    for seed in 1..=3 {
        repeats("fat-tree-2l-k4.net", "spine-0", seed);
    }
}

#[test]
fn a_seeded_run_on_three_levels_repeats_itself_mad_for_mad() {
    for seed in 1..=3 {
        repeats("fat-tree-3l-k4.net", "core-0", seed);
    }
}

#[test]
fn a_seeded_run_on_a_random_fabric_repeats_itself_mad_for_mad() {
    for seed in 1..=3 {
        repeats("random-8sw.net", "sw-0", seed);
    }
}

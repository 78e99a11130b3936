//! `ibsm sim soak`: seeded random fault sequences against the SM on the in-process simulator,
//! with the fabric's invariants checked at every quiescent point.
//!
//! Owns the generator of a seed's fault script (rounds of one to three faults: cables of
//! switches and hosts pulled and plugged back, switches and hosts crashed and restarted, packet
//! loss up to a bound and delay, the master SM killed and started again; at most three faults
//! at a time, never an SM's host, its cable or its leaf; each round ends with `settle` and a
//! quiet gap), the checks at each `settle` (exactly one master and every other live SM standing
//! by; every live HCA reaches every other through the switches' own tables without a loop or a
//! dead link; the master's routes have no credit loop; every port present since the start keeps
//! its LID; no table of a live SM holds more than a few entries per port of the fabric), and the reduction of a failing script to a minimal one that still fails. The script
//! is plain `ibsm sim play` text, so a failure replays with `ibsm sim play --standbys N`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ibsm_mad::{Guid, Lid};
use ibsm_sim::rng::Rng;
use ibsm_topology::{NodeKind, Topology};

use crate::core::{SmConfig, SmState};
use crate::lab::play::{Action, Step, apply, parse_script, run_to, sm_hosts, up};
use crate::transport::sim::{ComputeTime, SimSms};

/// Virtual time between a round's `settle` and the next round: time for the SM to finish.
const QUIET_NS: u64 = 20_000_000_000;

/// How a seed's script is made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SoakConfig {
    /// Rounds per seed.
    pub rounds: usize,
    /// Highest packet loss a round may set (0..=1).
    pub max_drop: f64,
    /// Standby SMs beside the master (with none, no SM is killed).
    pub standbys: usize,
}

impl Default for SoakConfig {
    fn default() -> Self {
        SoakConfig { rounds: 5, max_drop: 0.2, standbys: 1 }
    }
}

/// What a fault took down, to bring back later.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Down {
    Cable(String),
    Node(String),
    Sm,
}

/// The fault script of `seed` on `topo`, as `ibsm sim play` text.
pub fn script(topo: &Topology, seed: u64, cfg: &SoakConfig) -> String {
    let mut rng = Rng::new(seed);
    let sms = sm_hosts(topo, cfg.standbys + 1);
    let sm_nodes: Vec<usize> = sms.iter().map(|a| a.0).collect();
    let sm_leaves: Vec<usize> = sms.iter().filter_map(|&(n, p)| topo.nodes[n].peer(p)).map(|p| p.node).collect();
    let spare = |i: usize| !sm_nodes.contains(&i) && !sm_leaves.contains(&i);
    let switches: Vec<usize> =
        (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Switch && spare(i)).collect();
    let hosts: Vec<usize> =
        (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind != NodeKind::Switch && spare(i)).collect();
    let cable = |rng: &mut Rng, node: usize| -> Option<String> {
        let n = &topo.nodes[node];
        let ports: Vec<u8> =
            (1..=n.num_ports).filter(|&p| n.peer(p).is_some_and(|q| !sm_nodes.contains(&q.node))).collect();
        (!ports.is_empty()).then(|| format!("{}[{}]", n.name, ports[rng.index(ports.len())]))
    };
    let mut out = String::new();
    let mut down: Vec<Down> = Vec::new();
    let mut t: u64 = 1_000_000_000;
    let line = |out: &mut String, t: u64, what: String| {
        let _ = writeln!(out, "{}ms {what}", t / 1_000_000);
    };
    for _ in 0..cfg.rounds {
        for _ in 0..=rng.index(3) {
            t += rng.below(500) * 1_000_000;
            let roll = rng.below(100);
            let bring_back = down.len() >= 3 || (roll < 20 && !down.is_empty());
            if bring_back {
                match down.remove(rng.index(down.len())) {
                    Down::Cable(c) => line(&mut out, t, format!("link-up {c}")),
                    Down::Node(n) => line(&mut out, t, format!("node-restart {n}")),
                    Down::Sm => line(&mut out, t, "sm-restart".to_owned()),
                }
                continue;
            }
            match roll {
                // The master dies (a standby takes over); at most one SM down at a time.
                93.. if cfg.standbys > 0 && !down.contains(&Down::Sm) => {
                    line(&mut out, t, "sm-kill".to_owned());
                    down.push(Down::Sm);
                }
                20..50 if !switches.is_empty() => {
                    let sw = switches[rng.index(switches.len())];
                    if let Some(c) = cable(&mut rng, sw).filter(|c| !down.contains(&Down::Cable(c.clone()))) {
                        line(&mut out, t, format!("link-down {c}"));
                        down.push(Down::Cable(c));
                    }
                }
                50..65 if !switches.is_empty() => {
                    let n = topo.nodes[switches[rng.index(switches.len())]].name.clone();
                    if !down.contains(&Down::Node(n.clone())) {
                        line(&mut out, t, format!("node-crash {n}"));
                        down.push(Down::Node(n));
                    }
                }
                65..80 if !hosts.is_empty() => {
                    // A host reboots: down now, back a little later in the same round.
                    let n = topo.nodes[hosts[rng.index(hosts.len())]].name.clone();
                    line(&mut out, t, format!("node-crash {n}"));
                    t += (50 + rng.below(400)) * 1_000_000;
                    line(&mut out, t, format!("node-restart {n}"));
                }
                80..95 => {
                    let p = (rng.below(1000) as f64 / 1000.0) * cfg.max_drop;
                    line(&mut out, t, format!("drop {p:.3}"));
                }
                _ => line(&mut out, t, format!("delay {}us", rng.below(100))),
            }
        }
        // Half the time, everything comes back before the round ends.
        if rng.chance(0.5) {
            for d in std::mem::take(&mut down) {
                t += rng.below(200) * 1_000_000;
                match d {
                    Down::Cable(c) => line(&mut out, t, format!("link-up {c}")),
                    Down::Node(n) => line(&mut out, t, format!("node-restart {n}")),
                    Down::Sm => line(&mut out, t, "sm-restart".to_owned()),
                }
            }
        }
        t += 200_000_000;
        line(&mut out, t, "settle".to_owned());
        t += QUIET_NS;
    }
    out
}

/// Why a script failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Index of the `settle` step where a check failed.
    pub step: usize,
    /// What failed.
    pub what: String,
}

/// The LID of every end port the master knows.
fn lids(h: &SimSms) -> BTreeMap<Guid, Lid> {
    let Some(snap) = h.master().and_then(|m| h.sms[m].sm.snapshot()) else { return BTreeMap::new() };
    snap.end_ports().filter_map(|at| snap.port(at)).map(|p| (p.guid, p.lid)).collect()
}

/// What is wrong at a quiescent point, if anything.
fn check(h: &SimSms, first: &BTreeMap<Guid, Lid>) -> Option<String> {
    let live: Vec<SmState> = h.sms.iter().filter(|s| s.alive).map(|s| s.sm.state()).collect();
    let masters = live.iter().filter(|s| **s == SmState::Master).count();
    if masters != 1 || live.iter().any(|s| !matches!(s, SmState::Master | SmState::Standby)) {
        return Some(format!("SM states {live:?}: not exactly one master and the others standing by"));
    }
    let c = h.fabric.check_routes();
    if !c.ok() {
        return Some(format!(
            "{} of {} HCA pairs unrouted, {} over a dead link, {} looping; e.g. {}",
            c.unrouted,
            c.pairs,
            c.dead_link,
            c.loops,
            c.first_failure.unwrap_or_default()
        ));
    }
    let now = lids(h);
    if let Some((g, l)) = first.iter().find(|(g, l)| now.get(g).is_some_and(|n| n != *l)) {
        return Some(format!("port {g} had LID {} and now has {}", l.0, now[g].0));
    }
    // The master's routes, as the SA and `routes check` see them: no credit loop in the
    // CA-to-CA traffic, which is what the fat-tree engine guarantees on any tree, degraded ones
    // included (switch-sourced routes of a switch cut off from a subtree may take a valley).
    let m = h.master()?;
    let (plan, routes) = crate::routes::live::LiveRoutes::from_sm(&h.sms[m].sm).ok()?.to_plan().ok()?;
    let opts = ibsm_routing::check::CheckOptions {
        shifts: false,
        cdg_traffic: ibsm_routing::check::CdgTraffic::CaToCa,
        ..ibsm_routing::check::CheckOptions::default()
    };
    let report = ibsm_routing::check::check_with(&plan.view, &routes, &opts);
    if let ibsm_routing::check::CreditLoops::Found(l) = &report.credit_loops {
        return Some(format!("credit loop in the master's routes: {l:?}"));
    }
    None
}

/// The most entries any of an SM's tables may hold on `topo` (see [`Sm::footprint`]): a few
/// per port of the fabric. A table past it grows with time, not with the fabric.
///
/// [`Sm::footprint`]: crate::core::Sm::footprint
pub fn footprint_bound(topo: &Topology) -> usize {
    let ports: usize = topo.nodes.iter().map(|n| usize::from(n.num_ports) + 1).sum();
    4 * ports + 256
}

/// An SM table past `bound`, if any.
fn check_footprint(h: &SimSms, bound: usize) -> Option<String> {
    for (i, s) in h.sms.iter().enumerate().filter(|(_, s)| s.alive) {
        if let Some((name, n)) = s.sm.footprint().into_iter().find(|&(_, n)| n > bound) {
            return Some(format!("SM {i}: {name} holds {n} entries, past the bound of {bound} for this fabric"));
        }
    }
    None
}

/// Plays `steps` on `topo` with seed `seed` (one master and `standbys` standbys configured by
/// `cfg`) and checks every `settle`.
///
/// # Errors
/// When the fabric does not come up at all (not a soak failure: a bad fabric).
pub fn run(
    topo: &Topology,
    steps: &[Step],
    seed: u64,
    (cfg, standbys): (&SmConfig, usize),
) -> Result<Option<Failure>, String> {
    let sim = ibsm_sim::fabric::SimConfig { seed, ..Default::default() };
    let mut h = up(topo, sim, cfg, standbys, ComputeTime::Virtual)?;
    let t0 = h.now();
    let first = lids(&h);
    let bound = footprint_bound(topo);
    for (i, step) in steps.iter().enumerate() {
        run_to(&mut h, t0 + step.at_ns, &mut |_, _| {});
        apply(&mut h, cfg, step.action);
        if step.action != Action::Settle {
            continue;
        }
        let end = steps.get(i + 1).map_or(t0 + step.at_ns + QUIET_NS, |s| t0 + s.at_ns);
        run_to(&mut h, end, &mut |_, _| {});
        if let Some(what) = check(&h, &first).or_else(|| check_footprint(&h, bound)) {
            return Ok(Some(Failure { step: i, what }));
        }
    }
    Ok(None)
}

/// A smallest sub-script of `steps` (greedy, one step at a time, `settle`s kept) that still
/// fails, and its failure.
pub fn minimize(topo: &Topology, steps: &[Step], seed: u64, sms: (&SmConfig, usize)) -> (Vec<Step>, Option<Failure>) {
    let mut best: Vec<Step> = steps.to_vec();
    let mut failure = run(topo, &best, seed, sms).ok().flatten();
    if let Some(f) = &failure {
        // Nothing after the failing settle matters.
        best.truncate(f.step + 1);
    }
    let mut i = best.len();
    while i > 0 {
        i -= 1;
        if best[i].action == Action::Settle {
            continue;
        }
        let mut trial = best.clone();
        trial.remove(i);
        if let Ok(Some(f)) = run(topo, &trial, seed, sms) {
            best = trial;
            failure = Some(f);
        }
    }
    (best, failure)
}

/// The script of `seed`, parsed.
///
/// # Errors
/// Only if the generator wrote a line the parser refuses (a bug: the text is in the message).
pub fn steps(topo: &Topology, seed: u64, cfg: &SoakConfig) -> Result<Vec<Step>, String> {
    let text = script(topo, seed, cfg);
    parse_script(&text, topo).map_err(|e| format!("generated script refused: {e:?}\n{text}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{Guid2Lid, Sm};
    use crate::transport::sim::SimDriver;

    fn k8() -> Topology {
        ibsm_topology::GenSpec::fat_tree(3, 8).generate().expect("fabric")
    }

    #[test]
    fn a_seed_always_makes_the_same_script_and_it_parses() {
        let t = k8();
        let cfg = SoakConfig::default();
        for seed in 1..=50 {
            assert_eq!(script(&t, seed, &cfg), script(&t, seed, &cfg));
            let s = steps(&t, seed, &cfg).expect("parses");
            assert_eq!(s.iter().filter(|x| x.action == Action::Settle).count(), cfg.rounds);
        }
        assert_ne!(script(&t, 1, &cfg), script(&t, 2, &cfg));
    }

    #[test]
    fn a_failing_script_is_reduced_to_what_makes_it_fail() {
        // An SM that never routes again after bring-up (no resweep, traps ignored by a fabric
        // with its trap rules dropped) cannot repair a pulled cable: the soak must catch that.
        let t = k8();
        let cfg = SmConfig { resweep_interval_ns: None, sweep_interval_ns: None, ..SmConfig::default() };
        let text = "1000ms delay 3us\n1100ms drop 1\n1200ms link-down core-0[1]\n1300ms settle\n";
        let s = parse_script(text, &t).expect("parses");
        // drop 1 loses every packet (traps too) until settle; after settle the trap is gone.
        let (min, failure) = minimize(&t, &s, 3, (&cfg, 0));
        let failure = failure.expect("fails");
        assert!(failure.what.contains("HCA pairs"), "{failure:?}");
        let lines: Vec<&str> = min.iter().map(|x| x.line.as_str()).collect();
        assert_eq!(lines, vec!["1100ms drop 1", "1200ms link-down core-0[1]", "1300ms settle"]);
    }

    #[test]
    fn a_lost_trap_is_caught_by_the_light_sweep() {
        // The same lost trap with the default configuration: the light sweep sees the switch's
        // PortStateChange and the heavy sweep it brings routes around the cable.
        let t = k8();
        let text = "1000ms drop 1\n1200ms link-down core-0[1]\n1300ms settle\n";
        let s = parse_script(text, &t).expect("parses");
        assert_eq!(run(&t, &s, 3, (&SmConfig::default(), 0)).expect("comes up"), None);
    }

    #[test]
    fn a_cable_cut_during_a_takeover_sweep_is_routed_around() {
        // Seed 39 of the soak: the master killed, 0.9 % loss, and a cable cut while the
        // standby's takeover sweep reads the fabric (no master yet at the cut, so its traps go
        // to the dead one). A switch whose PortStateChange was cleared after its ports were read
        // lost the change: the sweep routed over the dead cable and no light sweep saw it
        // (124 host pairs over it 20 s later). The cut moved over the whole sweep (with either poll schedule), 20 ms apart.
        let t = k8();
        let mut failed = Vec::new();
        for cut in (22_300..=23_400).step_by(20) {
            let text = format!(
                "1461ms settle\n21673ms sm-kill\n22107ms drop 0.009\n{cut}ms link-down agg-5[4]\n{}ms settle\n",
                cut + 200
            );
            let s = parse_script(&text, &t).expect("parses");
            if let Some(f) = run(&t, &s, 39, (&SmConfig::default(), 1)).expect("comes up") {
                failed.push(format!("cut at {cut} ms: {}", f.what));
            }
        }
        assert!(failed.is_empty(), "{} of 56 cuts not repaired:\n{}", failed.len(), failed.join("\n"));
    }

    #[test]
    fn a_cable_cut_during_a_quick_sweep_is_seen() {
        // edge-6's host cable h24 flapped twice: four trap 128s, so its sixth within the
        // duplicate window is suppressed (a flapping switch's traps are not trusted; its
        // PortStateChange is). A fifth, h25's cable cut at 1000 ms, brings a quick sweep of edge-6
        // (its reads at about 1001.0-1001.1 ms); a sixth, h26's cable cut, its trap suppressed,
        // is moved across that quick sweep 2 us apart. Only edge-6's PortStateChange tells of it:
        // cleared after the ports were read, it lost a cut made after its port's read.
        let t = k8();
        let mut failed = Vec::new();
        let cuts: Vec<u64> = (9_000_990..=9_001_150).step_by(2).collect();
        for &cut in &cuts {
            let text = format!(
                "1s link-down edge-6[1]\n3s link-up edge-6[1]\n5s link-down edge-6[1]\n7s link-up edge-6[1]\n\
                 9000ms link-down edge-6[6]\n{cut}us link-down edge-6[3]\n9500ms settle\n"
            );
            let steps = parse_script(&text, &t).expect("parses");
            let sim = ibsm_sim::fabric::SimConfig { seed: 7, ..Default::default() };
            let mut h = up(&t, sim, &SmConfig::default(), 0, ComputeTime::Virtual).expect("comes up");
            let t0 = h.now();
            for st in &steps {
                run_to(&mut h, t0 + st.at_ns, &mut |_, _| {});
                apply(&mut h, &SmConfig::default(), st.action);
            }
            run_to(&mut h, t0 + 29_500_000_000, &mut |_, _| {});
            let subnet = h.sms[0].sm.subnet();
            let edge = subnet.nodes.iter().find(|n| n.desc.contains("edge-6")).expect("edge-6 in the model");
            let linked: Vec<u8> = (1..=8)
                .filter(|&p| edge.port(ibsm_mad::PortNum(p)).is_some_and(crate::core::state::PortRecord::is_linked))
                .collect();
            if linked != [1, 2, 4, 5, 7, 8] {
                failed.push(format!("second cut at {cut} us: edge-6 ports linked in the model: {linked:?}"));
            }
        }
        assert!(failed.is_empty(), "{} of {} cuts not seen:\n{}", failed.len(), cuts.len(), failed.join("\n"));
    }

    #[test]
    fn light_sweeps_on_a_quiet_fabric_write_nothing() {
        let t = k8();
        let mut drv = SimDriver::new(&t, 1, Sm::new(SmConfig::default(), Guid2Lid::default()), None).expect("sim");
        drv.sweep(600_000_000_000, |_| {}).expect("up");
        let (smps, blocks) = (drv.fabric.stats().sma_answered, drv.fabric.stats().lft_blocks_set);
        let mut heavy = 0;
        drv.run_until(drv.now() + 65_000_000_000, |e| {
            heavy += usize::from(matches!(e, crate::core::SmEvent::SubnetUp(_)));
            false
        });
        let switches = t.nodes.iter().filter(|n| n.kind == NodeKind::Switch).count() as u64;
        // Six light sweeps in 65 s, one SwitchInfo per switch each, and nothing else.
        assert_eq!((heavy, drv.fabric.stats().lft_blocks_set), (0, blocks));
        assert_eq!(drv.fabric.stats().sma_answered - smps, 6 * switches);
    }

    #[test]
    fn a_killed_master_is_replaced_by_the_standby_and_a_lone_one_is_missed() {
        let t = k8();
        let text = "1s sm-kill\n1500ms link-down core-0[1]\n2s settle\n3s sm-restart\n4s settle\n";
        let s = parse_script(text, &t).expect("parses");
        // With a standby: it takes over, routes around the cable, keeps every LID; the old
        // master, back, stands by (or takes the subnet back by handover): one master either way.
        assert_eq!(run(&t, &s, 5, (&SmConfig::default(), 1)).expect("comes up"), None);
        // Alone: nobody is master after the kill, and the soak says so.
        let f = run(&t, &s, 5, (&SmConfig::default(), 0)).expect("comes up").expect("fails");
        assert!(f.what.contains("not exactly one master"), "{f:?}");
    }

    #[test]
    fn a_long_soak_keeps_every_table_of_the_sm_within_the_fabrics_bound() {
        let t = k8();
        // The check can fail: a bound of 0 is past at once.
        let sim = ibsm_sim::fabric::SimConfig { seed: 9, ..Default::default() };
        let h = up(&t, sim, &SmConfig::default(), 1, ComputeTime::Virtual).expect("up");
        let f = check_footprint(&h, 0).expect("past a bound of 0");
        assert!(f.contains("guid2lid holds 208 entries"), "{f}");
        // 60 rounds of faults on one seed: nothing grows with time.
        let cfg = SoakConfig { rounds: 60, ..SoakConfig::default() };
        let s = steps(&t, 9, &cfg).expect("parses");
        assert_eq!(run(&t, &s, 9, (&SmConfig::default(), 1)).expect("comes up"), None);
    }

    #[test]
    fn many_seeds_keep_the_invariants() {
        let t = k8();
        // 150 seeds, about 750 rounds of faults: what `cargo test` (and so CI) soaks.
        for seed in 1..=150 {
            let s = steps(&t, seed, &SoakConfig::default()).expect("parses");
            let failure = run(&t, &s, seed, (&SmConfig::default(), 1)).expect("comes up");
            assert_eq!(failure, None, "seed {seed}:\n{}", script(&t, seed, &SoakConfig::default()));
        }
    }
}

//! Wall-clock timing of every engine on large fat trees (ignored by default; run with
//! `cargo test -p ibsm-routing --release --test timing -- --ignored --nocapture`).

mod common;

use std::time::Instant;

use ibsm_routing::check::{CdgTraffic, CheckOptions, CreditLoops, check_with};
use ibsm_routing::{ENGINE_NAMES, engine_by_name};
use ibsm_topology::generators::GenSpec;

fn time_tree(k: u8, with_check: bool) {
    let t0 = Instant::now();
    let view = common::view(&common::generate(&GenSpec::fat_tree(3, k)), 0);
    eprintln!("k={k}: {} switches, {} CAs, built in {:?}", view.switches.len(), view.cas.len(), t0.elapsed());
    let only = std::env::var("IBSM_ENGINE").ok();
    for name in ENGINE_NAMES.iter().filter(|n| only.as_deref().is_none_or(|o| o == **n)) {
        let Some(e) = engine_by_name(name) else { continue };
        let t = Instant::now();
        let routed = e.route(&view);
        let dt = t.elapsed();
        match routed {
            Ok(routes) if with_check => {
                let t = Instant::now();
                let rep = check_with(&view, &routes, &CheckOptions { shifts: k <= 24, ..CheckOptions::default() });
                eprintln!("{name:7} {dt:?} (check {:?})\n{rep}", t.elapsed());
                let data = CheckOptions { shifts: false, cdg_traffic: CdgTraffic::CaToCa, ..CheckOptions::default() };
                let verdict = match check_with(&view, &routes, &data).credit_loops {
                    CreditLoops::Found(c) => format!("FOUND ({} channels)", c.len()),
                    other => format!("{other:?}"),
                };
                eprintln!("CA-to-CA credit loops: {verdict}");
            }
            Ok(_) => eprintln!("{name:7} {dt:?}"),
            Err(e) => eprintln!("{name:7} {dt:?} declined: {e}"),
        }
    }
}

#[test]
#[ignore = "slow: timing run"]
fn k24() {
    time_tree(24, true);
}

#[test]
#[ignore = "slow: timing run"]
fn k48() {
    time_tree(48, std::env::var_os("IBSM_CHECK_K48").is_some());
}

/// DFSSSP on a fabric: time, peak of the layers, per-VL verdict.
fn time_dfsssp(what: &str, view: &ibsm_routing::FabricView) {
    let t = Instant::now();
    let l = ibsm_routing::dfsssp::Dfsssp::default().layered(view);
    let dt = t.elapsed();
    match l {
        Ok(l) => {
            let t = Instant::now();
            let per_vl = ibsm_routing::check::credit_loops_per_vl(view, &l.routes, &|s, d| l.layers.layer(s, d));
            let loops = per_vl.iter().filter(|v| matches!(v.loops, CreditLoops::Found(_))).count();
            eprintln!(
                "{what}: {} switches, {} CAs: dfsssp {dt:?}, {} layers {:?}; per-VL check {:?}, VLs with a loop: {loops}",
                view.switches.len(),
                view.cas.len(),
                l.layers.used(),
                l.layers.per_layer(),
                t.elapsed()
            );
        }
        Err(e) => eprintln!("{what}: dfsssp {dt:?} failed: {e}"),
    }
}

#[test]
#[ignore = "slow: timing run"]
fn dfsssp_k32_and_random_1000() {
    time_dfsssp("fat tree k=32", &common::view(&common::generate(&GenSpec::fat_tree(3, 32)), 0));
    time_dfsssp("random 1000", &common::view(&common::generate(&GenSpec::random(1000, 24, 8, 4000, 1)), 0));
}

/// The layered repair against a full dfsssp route, after each of `cuts` switch-to-switch cables
/// (spread over the fabric) is cut alone: times, paths re-routed and re-layered.
fn time_repair(what: &str, view: &ibsm_routing::FabricView, cuts: usize) {
    use ibsm_routing::NodeId;
    use ibsm_routing::dfsssp::{Dfsssp, repair::repair};
    let t = Instant::now();
    let Ok(base) = Dfsssp::default().layered(view) else { return eprintln!("{what}: dfsssp declined") };
    let full = t.elapsed();
    let mut cables = Vec::new();
    for (s, sw) in view.switches.iter().enumerate() {
        for (p, nb) in sw.ports.iter().enumerate() {
            if let Some(nb) = nb
                && matches!(nb.node, NodeId::Switch(o) if o > s)
            {
                cables.push((s, p, *nb));
            }
        }
    }
    let step = (cables.len() / cuts).max(1);
    let (mut full_cut, mut rep_times) = (Vec::new(), Vec::new());
    for &(s, p, nb) in cables.iter().step_by(step).take(cuts) {
        let mut v = view.clone();
        v.switches[s].ports[p] = None;
        if let NodeId::Switch(o) = nb.node {
            v.switches[o].ports[usize::from(nb.port.0)] = None;
        }
        let t = Instant::now();
        let r = repair(view, &base.routes, Some(&base.layers), &v, 8, Dfsssp::NAME);
        let dt = t.elapsed();
        let t = Instant::now();
        let again = Dfsssp::default().layered(&v);
        full_cut.push(t.elapsed());
        match r {
            Some(Ok(r)) => {
                eprintln!(
                    "{what} cut {s}:{p}: repair {dt:?} ({} paths re-routed, {} stranded, {} entries, {}); full route {:?}{}",
                    r.rerouted,
                    r.stranded,
                    r.entries,
                    if r.one_pass { "one pass" } else { "two passes" },
                    full_cut.last(),
                    if again.is_ok() { "" } else { " (declined)" }
                );
                rep_times.push(dt);
            }
            other => eprintln!("{what} cut {s}:{p}: repair {dt:?} gave {other:?}"),
        }
    }
    rep_times.sort();
    full_cut.sort();
    eprintln!(
        "{what}: {} switches, {} CAs: full dfsssp {full:?}; over {} cuts, median repair {:?}, median full route of the cut fabric {:?}",
        view.switches.len(),
        view.cas.len(),
        rep_times.len(),
        rep_times.get(rep_times.len() / 2),
        full_cut.get(full_cut.len() / 2)
    );
}

#[test]
#[ignore = "slow: timing run"]
fn dfsssp_repair_torus_and_random_64() {
    time_repair("torus 4x4x4", &common::view(&common::generate(&GenSpec::torus(&[4, 4, 4], 2)), 0), 9);
    time_repair("random 64", &common::view(&common::generate(&GenSpec::random(64, 16, 4, 200, 7)), 0), 9);
}

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

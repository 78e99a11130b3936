//! How the SM spreads its SMPs over the switches' agents, on the simulator's clock (each
//! simulated SMA serves one SMP at a time, 10 µs each): the LFT blocks of a bring-up go out
//! block by block across the switches, so programming them takes a small part of writing them
//! one after another. Fabric time is deterministic, so these bounds are not wall-clock timings.

use ibsm::core::{Guid2Lid, Sm, SmConfig, SweepPhase};
use ibsm::transport::sim::SimDriver;
use ibsm_sim::fabric::{SimConfig, Timing};
use ibsm_topology::{GenSpec, NodeKind};

#[test]
fn lft_blocks_are_spread_over_the_switches() {
    // 3-level k = 8 with LMC 3: 80 switches, about 1,700 LIDs, 27 blocks per switch, more than
    // a window's worth in all but far fewer than a window per switch.
    let topo = GenSpec::fat_tree(3, 8).generate().expect("fabric");
    let switches = topo.nodes.iter().filter(|n| n.kind == NodeKind::Switch).count() as u64;
    let sim = SimConfig { seed: 5, ..SimConfig::default() };
    assert_eq!(sim.timing.switch_sma_ns, Timing::DEFAULT_SMA_NS);
    let cfg = SmConfig { lmc: 3, ..SmConfig::default() };
    let mut drv = SimDriver::with_config(&topo, sim, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    let report = drv.sweep(60_000_000_000, |_| {}).expect("subnet up");
    assert!(report.complete, "{report:?}");
    let blocks = report.lft_blocks_sent;
    let per_switch = blocks / switches;
    assert!(per_switch > 20, "{blocks} blocks over {switches} switches");
    let lfts = report.phases.iter().find(|p| p.phase == SweepPhase::ProgrammingLfts).expect("phase").ns;
    let one_after_another = blocks * Timing::DEFAULT_SMA_NS;
    eprintln!("{blocks} blocks on {switches} switches: {lfts} ns of fabric time ({one_after_another} ns one by one)");
    // Spread over the switches, 64 in flight: about blocks / 64 service times. Switch after
    // switch, the window waits on one or two agents: close to one after another.
    assert!(lfts * 16 <= one_after_another, "{lfts} ns for {blocks} blocks");
}

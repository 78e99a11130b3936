//! ClientReregister after a re-route that moved path SLs (issue 25): a 4x4 torus under
//! `dfsssp` (on more than one layer). A host sends on the SL its PathRecord gave it; a running master's full layered
//! route that puts a pair on another layer makes that SL stale. Once every LFT block of such a
//! route is written, a follow-up sweep sets ClientReregister on every CA port (Linux IPoIB asks
//! for its paths again). Judged on the simulator's counts: a quick repair that kept every SL
//! tells no port; `ibsm reroute` over the repaired tables, which moves SLs, tells every live CA
//! port once, and every such Set comes after the route's last LFT block.

use ibsm::core::lft::RouteMode;
use ibsm::core::{Guid2Lid, Requested, Sm, SmConfig, SmEvent};
use ibsm::routes::live::LiveRoutes;
use ibsm::transport::sim::SimDriver;
use ibsm_sim::fabric::Fault;
use ibsm_topology::NodeKind;
use ibsm_topology::generators::GenSpec;

mod support;
use support::order::{sl_changed, switch_cables};

const LIMIT: u64 = 10_000_000_000;

/// Runs to the next sweep's report: the report and the virtual time it came at.
fn next_up(drv: &mut SimDriver) -> (ibsm::core::SubnetReport, u64) {
    let mut at = 0;
    let limit = drv.now() + LIMIT;
    let ev = drv.run_until_at(limit, |t, ev| {
        at = t;
        matches!(ev, SmEvent::SubnetUp(_))
    });
    let Some(SmEvent::SubnetUp(r)) = ev else { panic!("no sweep ended: {ev:?}") };
    (r, at)
}

fn sls(drv: &SimDriver) -> Vec<Vec<u8>> {
    LiveRoutes::from_sm(&drv.sm).expect("routes").layers().expect("layers")
}

#[test]
fn a_reroute_that_moves_sls_tells_every_ca_port_after_its_last_lft_block() {
    let topo = GenSpec::torus(&[4, 4], 1).generate().expect("torus");
    let cas = topo
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Ca)
        .flat_map(|n| (1..=n.num_ports).filter(|&p| n.peer(p).is_some()))
        .count() as u64;
    let cfg = SmConfig { routing_engine: vec!["dfsssp".into()], ..SmConfig::default() };
    let mut drv = SimDriver::new(&topo, 7, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    let report = drv.sweep(LIMIT, |_| {}).expect("a report");
    assert!(report.complete && report.routing_engine == "dfsssp", "{report:?}");
    assert_eq!(drv.fabric.stats().client_reregisters, cas, "a first start tells every CA port");
    let cables = switch_cables(&topo);
    // Cables cut one after another until a quick repair keeps every pair's SL: it tells no port.
    let mut kept = false;
    for &(sw, port) in cables.iter().step_by(3).take(8) {
        let before = sls(&drv);
        let told = drv.fabric.stats().client_reregisters;
        drv.fabric.inject_fault(Fault::LinkDown { node: sw, port });
        let (r, _) = next_up(&mut drv);
        let RouteMode::Repaired { stranded, .. } = r.routing_mode else { panic!("not repaired: {r:?}") };
        if stranded == 0 {
            assert_eq!(sl_changed(&before, &sls(&drv)), 0, "no pair stranded: no SL moved");
            // Whatever follows within a virtual second: no port told.
            let until = drv.now() + 1_000_000_000;
            drv.run_until(until, |_| false);
            assert_eq!(drv.fabric.stats().client_reregisters, told, "a repair that kept the SLs tells no port");
            kept = true;
            break;
        }
        assert_eq!(drv.fabric.stats().client_reregisters, told, "a repair is not a full route: no port told");
    }
    assert!(kept, "a cut repaired with every SL kept");
    // The re-route: routed in full over the repaired tables, some pair on another layer.
    let before = sls(&drv);
    let told = drv.fabric.stats().client_reregisters;
    drv.sm.request_sweep(Requested::Reroute).expect("master");
    let (r, routed_at) = next_up(&mut drv);
    assert_eq!(r.routing_mode, RouteMode::Full, "{r:?}");
    let moved = sl_changed(&before, &sls(&drv));
    assert!(moved > 0, "the re-route moved SLs");
    let stats = drv.fabric.stats();
    assert_eq!(stats.client_reregisters, told, "not before the route's sweep ended");
    assert!(stats.last_lft_set_at.0 <= routed_at);
    // The follow-up sweep: every CA port told once, no LFT block written.
    let (r, _) = next_up(&mut drv);
    assert!(r.complete, "{r:?}");
    let after = drv.fabric.stats();
    assert_eq!(after.client_reregisters, told + cas, "every live CA port told once ({moved} pairs moved)");
    assert_eq!((after.lft_blocks_set, after.last_lft_set_at), (stats.lft_blocks_set, stats.last_lft_set_at));
    // And once only: the sweep after tells none.
    let until = drv.now() + 1_000_000_000;
    drv.run_until(until, |_| false);
    assert_eq!(drv.fabric.stats().client_reregisters, told + cas);
}

/// The CA ports (node, port) cabled to the switches whose rows of SLs differ between `before`
/// and `after` (rows by switch in NodeGUID order, as [`LiveRoutes::layers`] gives them).
fn ports_of_moved(topo: &ibsm_topology::Topology, before: &[Vec<u8>], after: &[Vec<u8>]) -> Vec<(usize, u8)> {
    let mut switches: Vec<usize> = (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Switch).collect();
    switches.sort_by_key(|&i| topo.nodes[i].node_guid);
    let moved: Vec<usize> =
        switches.iter().zip(before.iter().zip(after)).filter(|(_, (a, b))| a != b).map(|(&s, _)| s).collect();
    let mut out: Vec<(usize, u8)> = topo
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.kind == NodeKind::Ca)
        .flat_map(|(i, n)| (1..=n.num_ports).filter_map(move |p| n.peer(p).map(|q| (i, p, q.node))))
        .filter(|&(_, _, s)| moved.contains(&s))
        .map(|(i, p, _)| (i, p))
        .collect();
    out.sort_unstable();
    out
}

/// The CA ports told to re-register since the first `from` of the simulator's log, sorted,
/// and the earliest time any was told.
fn told_since(drv: &SimDriver, from: usize) -> (Vec<(usize, u8)>, Option<u64>) {
    let log: Vec<_> = drv.fabric.reregistrations().skip(from).copied().collect();
    let mut ports: Vec<(usize, u8)> = log.iter().map(|&(n, p, _)| (n, p)).collect();
    ports.sort_unstable();
    (ports, log.iter().map(|&(_, _, t)| t.0).min())
}

#[test]
fn a_repair_that_strands_pairs_tells_only_the_ports_whose_sls_moved_after_its_last_lft_block() {
    let topo = GenSpec::torus(&[4, 4], 1).generate().expect("torus");
    let cfg = SmConfig { routing_engine: vec!["dfsssp".into()], ..SmConfig::default() };
    let mut drv = SimDriver::new(&topo, 7, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    let report = drv.sweep(LIMIT, |_| {}).expect("a report");
    assert!(report.complete && report.routing_engine == "dfsssp", "{report:?}");
    let cas = drv.fabric.reregistrations().count();
    assert!(cas > 0 && cas < ibsm_sim::fabric::TRAP_LOG_LEN, "the first start tells every CA port ({cas})");
    // Each cable cut, then plugged back, until a repair strands pairs (moves their SLs).
    let (mut kept, mut stranding) = (0, false);
    for (sw, port) in switch_cables(&topo) {
        let before = sls(&drv);
        let mark = drv.fabric.reregistrations().count();
        drv.fabric.inject_fault(Fault::LinkDown { node: sw, port });
        let (r, _) = next_up(&mut drv);
        let RouteMode::Repaired { stranded, .. } = r.routing_mode else { panic!("not repaired: {r:?}") };
        let repaired = sls(&drv);
        let written_at = drv.fabric.stats().last_lft_set_at.0;
        // Whatever follows within a virtual second (the follow-up sweep, if any).
        let until = drv.now() + 1_000_000_000;
        drv.run_until(until, |_| false);
        let (told, first) = told_since(&drv, mark);
        let want = ports_of_moved(&topo, &before, &repaired);
        assert_eq!(told, want, "cable {sw}:{port}, {stranded} stranded: the CA ports whose paths' SLs moved, once");
        assert_eq!(stranded == 0, want.is_empty(), "cable {sw}:{port}: SLs move only with stranded pairs");
        if let Some(t) = first {
            assert!(t > written_at, "cable {sw}:{port}: told after the repair's last LFT block");
        }
        // The cable back: the last full route's tables again, and the stranded pairs' SLs.
        let mark = drv.fabric.reregistrations().count();
        drv.fabric.inject_fault(Fault::LinkUp { node: sw, port });
        let (r, _) = next_up(&mut drv);
        assert_eq!(r.routing_mode, RouteMode::Reused, "{r:?}");
        let back = sls(&drv);
        assert_eq!(back, before, "cable {sw}:{port}: every SL back");
        let written_at = drv.fabric.stats().last_lft_set_at.0;
        let until = drv.now() + 1_000_000_000;
        drv.run_until(until, |_| false);
        let (told_back, first) = told_since(&drv, mark);
        assert_eq!(told_back, want, "cable {sw}:{port} back: the same ports told again, once");
        if let Some(t) = first {
            assert!(t > written_at, "cable {sw}:{port} back: told after the last LFT block");
        }
        eprintln!(
            "cable {sw}:{port}: {stranded} stranded, {} CA ports told, {} when it came back",
            want.len(),
            told_back.len()
        );
        if stranded == 0 {
            kept += 1;
        } else {
            assert!(want.len() < cas, "cable {sw}:{port}: not every CA port told ({} of {cas})", want.len());
            stranding = true;
            if kept > 0 {
                break;
            }
        }
    }
    assert!(kept > 0 && stranding, "cuts that kept every SL ({kept}) and one that stranded pairs");
}

/// A reload from a plain engine (every path on SL 0) to a layered one that puts some pairs on
/// other layers: the hosts' SLs moved, so once the new tables are written every CA port is
/// told to re-register; and back to the plain engine, told again.
#[test]
fn a_reload_from_a_plain_engine_to_a_layered_one_tells_every_ca_port() {
    let topo = GenSpec::torus(&[4, 4], 1).generate().expect("torus");
    let cfg = SmConfig { routing_engine: vec!["minhop".into()], ..SmConfig::default() };
    let mut drv = SimDriver::new(&topo, 7, Sm::new(cfg.clone(), Guid2Lid::default()), None).expect("attach");
    let report = drv.sweep(LIMIT, |_| {}).expect("a report");
    assert!(report.complete && report.routing_engine == "minhop", "{report:?}");
    let cas = drv.fabric.stats().client_reregisters;
    assert!(cas > 0, "a first start tells every CA port");
    for (engine, layered) in [("dfsssp", true), ("minhop", false)] {
        let told = drv.fabric.stats().client_reregisters;
        let r = drv.sm.reconfigure(SmConfig { routing_engine: vec![engine.into()], ..cfg.clone() });
        assert!(r.reroute, "{engine}: a new engine routes from scratch: {r:?}");
        let (r, routed_at) = next_up(&mut drv);
        assert_eq!((r.routing_mode, r.routing_engine.as_str()), (RouteMode::Full, engine), "{r:?}");
        let layers = LiveRoutes::from_sm(&drv.sm).expect("routes").layers();
        if layered {
            let layers = layers.expect("dfsssp has layers");
            assert!(layers.iter().flatten().any(|&l| l != 0), "{engine}: some pair off layer 0");
        }
        let stats = drv.fabric.stats();
        assert_eq!(stats.client_reregisters, told, "{engine}: not before the route's sweep ended");
        assert!(stats.last_lft_set_at.0 <= routed_at);
        let until = drv.now() + 1_000_000_000;
        drv.run_until(until, |_| false);
        assert_eq!(drv.fabric.stats().client_reregisters, told + cas, "{engine}: every live CA port told once");
    }
}

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

//! Nue's layers programmed by the running SM, on the simulated fabric: a 4x4x4 torus routed by
//! `routing-engine = "nue"`. Judged from what the fabric and the SA give: every PathRecord's SL
//! (asked source by source through the SA) depends on the destination only (Nue puts each
//! destination on one layer); the SL2VL tables read back from every switch map each SL in use
//! to its own VL; every CA pair is routed by the tables; and with each pair on the VL its SL
//! maps to, no VL's channel dependency graph has a cycle. On ports with one VL (`max-op-vls 1`)
//! Nue still routes, on one layer, with no credit loop: it never declines for want of VLs.

use std::collections::HashMap;

use ibsm::core::{PortConfig, SmConfig};
use ibsm::routes::live::LiveRoutes;
use ibsm_mad::Lid;
use ibsm_mad::header::Method;
use ibsm_mad::records::PathRecord;
use ibsm_routing::check::{CreditLoops, check, credit_loops_per_vl};
use ibsm_topology::Topology;
use ibsm_topology::generators::GenSpec;

mod support;
use support::sa::{Swept, records, sl_n_on_vl_n, swept_on_vl0};

fn torus() -> Topology {
    GenSpec::torus(&[4, 4, 4], 1).generate().expect("torus")
}

fn swept(topo: &Topology, ports: PortConfig) -> Swept {
    swept_with(topo, SmConfig { ports, ..SmConfig::default() })
}

fn swept_with(topo: &Topology, cfg: SmConfig) -> Swept {
    let cfg = SmConfig { routing_engine: vec!["nue".into()], ..cfg };
    swept_on_vl0(topo, 11, cfg)
}

/// The SL of every (source switch, destination LID) from the SA, asked source by source, and
/// the number of records on each SL.
fn sls(s: &Swept, view: &ibsm_routing::FabricView) -> (HashMap<(usize, u16), u8>, [u64; 16]) {
    let mut sources: Vec<(Lid, usize)> = view.switches.iter().enumerate().map(|(i, w)| (w.lid, i)).collect();
    for c in &view.cas {
        for p in &c.ports {
            if let Some(ibsm_routing::NodeId::Switch(at)) = p.neighbor.map(|n| n.node) {
                sources.push((p.lid, at));
            }
        }
    }
    let mut sl_of = HashMap::new();
    let mut by_dest: HashMap<u16, u8> = HashMap::new();
    let mut used = [0u64; 16];
    for &(slid, at) in &sources {
        let ask = PathRecord { slid, ..PathRecord::default() };
        let recs = records::<PathRecord>(&s.ask(Method::GetTable, PathRecord::COMP_SLID, &ask));
        assert_eq!(recs.len(), sources.len(), "LID {}: a record to every end port", slid.0);
        for r in recs {
            used[usize::from(r.sl.min(15))] += 1;
            sl_of.insert((at, r.dlid.0), r.sl);
            // Nue: one layer per destination, whatever the source.
            let first = *by_dest.entry(r.dlid.0).or_insert(r.sl);
            assert_eq!(first, r.sl, "LID {} -> {}: SL {} but {first} from another source", slid.0, r.dlid.0, r.sl);
        }
    }
    (sl_of, used)
}

#[test]
fn the_sm_programs_nues_layers_and_no_vl_has_a_credit_loop() {
    let topo = torus();
    let mut s = swept(&topo, PortConfig::default());
    assert_eq!(s.drv.sm.routing_engine_used(), Some("nue"));
    let (plan, routes) = LiveRoutes::from_sm(&s.drv.sm).expect("routes").to_plan().expect("plan");
    let view = &plan.view;
    let r = check(view, &routes);
    assert_eq!(r.reachable, r.pairs, "every CA pair routed");
    let (sl_of, used) = sls(&s, view);
    let layers = used.iter().rposition(|&n| n > 0).map_or(0, |l| l + 1);
    assert!(layers >= 2, "the destinations are spread over the layers: {used:?}");
    assert!(layers <= 8, "within the fabric's VLs: {used:?}");
    // Every switch maps every SL in use to its own VL, on every input/output pair of live ports.
    assert!(sl_n_on_vl_n(&mut s.drv, &topo, layers) > 0);
    // Each pair on the VL its SL maps to (SL n on VL n, as read back): no VL has a credit loop.
    let per_vl = credit_loops_per_vl(view, &routes, &|s, d| sl_of.get(&(s, d.0)).copied());
    assert!(per_vl.len() >= 2, "{per_vl:?}");
    for v in &per_vl {
        assert_eq!(v.loops, CreditLoops::None, "VL {}", v.vl);
    }
}

#[test]
fn on_one_vl_nue_still_routes_the_torus_without_a_credit_loop() {
    let topo = torus();
    let s = swept(&topo, PortConfig { max_op_vls: 1, ..PortConfig::default() });
    assert_eq!(s.drv.sm.routing_engine_used(), Some("nue"), "nue does not decline on one VL");
    let (plan, routes) = LiveRoutes::from_sm(&s.drv.sm).expect("routes").to_plan().expect("plan");
    let view = &plan.view;
    let r = check(view, &routes);
    assert_eq!(r.reachable, r.pairs, "every CA pair routed");
    let (_, used) = sls(&s, view);
    assert!(used[1..].iter().all(|&n| n == 0), "every path on SL 0: {used:?}");
    // One VL: the tables alone have no credit loop.
    let one = credit_loops_per_vl(view, &routes, &|_, _| Some(0));
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].loops, CreditLoops::None);
}

#[test]
fn max_layers_one_keeps_every_path_on_sl_0_where_the_fabric_has_eight_vls() {
    // `max-layers = 1` (what `config import-opensm` writes for OpenSM's nue default): hosts that
    // ignore PathRecord SLs stay free of credit loops.
    let topo = torus();
    let mut cfg = SmConfig::default();
    cfg.routing_options.max_layers = Some(1);
    let s = swept_with(&topo, cfg);
    assert_eq!(s.drv.sm.routing_engine_used(), Some("nue"));
    let (plan, routes) = LiveRoutes::from_sm(&s.drv.sm).expect("routes").to_plan().expect("plan");
    let view = &plan.view;
    let r = check(view, &routes);
    assert_eq!(r.reachable, r.pairs, "every CA pair routed");
    let (_, used) = sls(&s, view);
    assert!(used[0] > 0 && used[1..].iter().all(|&n| n == 0), "every path on SL 0: {used:?}");
    let one = credit_loops_per_vl(view, &routes, &|_, _| Some(0));
    assert_eq!(one[0].loops, CreditLoops::None, "SL 0 alone has no credit loop");
}

//! dfsssp's layers programmed by the running SM, on the simulated fabric: a 4x4x4 torus routed
//! by `dfsssp` on more than one layer. Judged from what the fabric and the SA give, not from
//! the SM's own layer table: every PathRecord's SL (asked source by source through the SA) is
//! the same for every source behind one switch; the SL2VL tables read back from every switch
//! with directed-route Gets map each SL in use to its own VL on every input/output pair; and
//! the tables the switches hold, with each pair on the VL its PathRecord SL maps to, have no
//! credit loop in any VL's channel dependency graph. A fabric whose ports run too few VLs
//! (`max-op-vls 1`) leaves dfsssp one layer, which the torus cannot route on: the chain's next
//! engine routes.

use std::collections::HashMap;

use ibsm::core::{Guid2Lid, PortConfig, Sm, SmConfig};
use ibsm::routes::live::LiveRoutes;
use ibsm::transport::sim::SimDriver;
use ibsm_mad::attrs::SlToVlTable;
use ibsm_mad::header::Method;
use ibsm_mad::records::PathRecord;
use ibsm_mad::smp::SmpRepr;
use ibsm_mad::{Attribute, DrPath, Lid, PortNum};
use ibsm_routing::check::{CreditLoops, credit_loops_per_vl};
use ibsm_sim::fabric::{Dest, SimTime};
use ibsm_topology::generators::GenSpec;
use ibsm_topology::{NodeKind, Topology};

mod support;
use support::sa::{LIMIT, Oracle, Swept, dr_get, records};

fn torus() -> Topology {
    GenSpec::torus(&[4, 4, 4], 1).generate().expect("torus")
}

/// Every switch's SL2VL on every input/output pair set to VL 0 for every SL, before any SM
/// runs (the simulator starts with SL n on VL n, which would hide an SM that writes nothing).
fn all_on_vl0(drv: &mut SimDriver, topo: &Topology) {
    let oracle = Oracle::from_topology(topo, drv.at);
    for (i, n) in topo.nodes.iter().enumerate().filter(|(_, n)| n.kind == NodeKind::Switch) {
        let path = DrPath::new(&oracle.routes[&i]).expect("path");
        for out in 1..=n.num_ports {
            for input in 0..=n.num_ports {
                let smp = SmpRepr::set_dr(
                    &path,
                    SlToVlTable::ID,
                    SlToVlTable::attr_mod(PortNum(input), PortNum(out)),
                    0x7000_0000,
                    [0; 64],
                );
                drv.fabric.send(drv.agent, &smp.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
            }
        }
        drv.fabric.run_until_idle(SimTime(drv.fabric.now().0 + 1_000_000_000));
        while drv.fabric.recv(drv.agent).is_some() {}
    }
}

fn swept(topo: &Topology, ports: PortConfig) -> Swept {
    let cfg = SmConfig { routing_engine: vec!["dfsssp".into(), "updn".into()], ports, ..SmConfig::default() };
    let mut drv = SimDriver::new(topo, 7, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    all_on_vl0(&mut drv, topo);
    let report = drv.sweep(LIMIT, |_| {}).expect("a report");
    assert!(report.complete, "{report:?}");
    let snap = drv.sm.snapshot().expect("a snapshot");
    Swept { topo: topo.clone(), drv, snap }
}

#[test]
fn the_sm_programs_the_layers_and_no_vl_has_a_credit_loop() {
    let topo = torus();
    let mut s = swept(&topo, PortConfig::default());
    assert_eq!(s.drv.sm.routing_engine_used(), Some("dfsssp"));
    let (plan, routes) = LiveRoutes::from_sm(&s.drv.sm).expect("routes").to_plan().expect("plan");
    let view = &plan.view;
    // Every end port's LID and the view's switch it leaves from.
    let mut sources: Vec<(Lid, usize)> = Vec::new();
    for (i, w) in view.switches.iter().enumerate() {
        sources.push((w.lid, i));
    }
    for c in &view.cas {
        for p in &c.ports {
            if let Some(ibsm_routing::NodeId::Switch(at)) = p.neighbor.map(|n| n.node) {
                sources.push((p.lid, at));
            }
        }
    }
    // The SL of every (source switch, destination LID), from the SA, source by source.
    let mut sl_of: HashMap<(usize, u16), u8> = HashMap::new();
    let mut used = [0u64; 16];
    for &(slid, at) in &sources {
        let ask = PathRecord { slid, ..PathRecord::default() };
        let a = s.ask(Method::GetTable, PathRecord::COMP_SLID, &ask);
        let recs = records::<PathRecord>(&a);
        assert_eq!(recs.len(), sources.len(), "LID {}: a record to every end port", slid.0);
        for r in recs {
            used[usize::from(r.sl.min(15))] += 1;
            let was = sl_of.insert((at, r.dlid.0), r.sl);
            assert!(
                was.is_none_or(|w| w == r.sl),
                "LID {} -> {}: SL {} but {was:?} from its switch",
                slid.0,
                r.dlid.0,
                r.sl
            );
        }
    }
    let layers = used.iter().rposition(|&n| n > 0).map_or(0, |l| l + 1);
    assert!(layers >= 2, "the torus needs more than one layer: {used:?}");
    // A request for an SL other than the pair's gets no record.
    let (slid, at) = sources[sources.len() - 1];
    let (dlid, _) = sources[0];
    let sl = sl_of[&(at, dlid.0)];
    for (want, n) in [(sl, 1), ((sl + 1) % 16, 0)] {
        let ask = PathRecord { slid, dlid, sl: want, ..PathRecord::default() };
        let mask = PathRecord::COMP_SLID | PathRecord::COMP_DLID | PathRecord::COMP_SL;
        assert_eq!(records::<PathRecord>(&s.ask(Method::GetTable, mask, &ask)).len(), n, "SL {want} asked");
    }
    // Every switch maps every SL in use to its own VL, on every input/output pair of live ports.
    let oracle = Oracle::from_topology(&topo, s.drv.at);
    let mut tables = 0;
    for (i, n) in topo.nodes.iter().enumerate().filter(|(_, n)| n.kind == NodeKind::Switch) {
        let path = DrPath::new(&oracle.routes[&i]).expect("path");
        let live: Vec<u8> = (1..=n.num_ports).filter(|&p| n.peer(p).is_some()).collect();
        for &out in &live {
            for input in std::iter::once(0).chain(live.iter().copied()) {
                let data =
                    dr_get(&mut s.drv, &path, SlToVlTable::ID, SlToVlTable::attr_mod(PortNum(input), PortNum(out)))
                        .expect("SL2VL answered");
                let vls = SlToVlTable::parse(&data).expect("parses").vls;
                for sl in 0..layers {
                    assert_eq!(usize::from(vls[sl]), sl, "switch {} {input}->{out}: SL {sl}", n.name);
                }
                tables += 1;
            }
        }
    }
    assert!(tables > 0);
    // Each pair on the VL its SL maps to (SL n on VL n, as read back): no VL has a credit loop.
    let per_vl = credit_loops_per_vl(view, &routes, &|s, d| sl_of.get(&(s, d.0)).copied());
    assert!(per_vl.len() >= 2, "{per_vl:?}");
    for v in &per_vl {
        assert!(!matches!(v.loops, CreditLoops::Found(_)), "VL {}: {:?}", v.vl, v.loops);
    }
    // Judged on one VL, the same tables loop: the layers are what makes them safe.
    let one = credit_loops_per_vl(view, &routes, &|_, _| Some(0));
    assert!(matches!(one[0].loops, CreditLoops::Found(_)), "minimal torus routes on one VL loop");
}

#[test]
fn ports_with_too_few_vls_leave_the_torus_to_the_next_engine() {
    let topo = torus();
    let s = swept(&topo, PortConfig { max_op_vls: 1, ..PortConfig::default() });
    assert_eq!(s.drv.sm.routing_engine_used(), Some("updn"), "dfsssp declines with one VL");
    // Every path on SL 0.
    let (slid, dlid) = (s.snap.sm.lid, Lid(s.snap.sm.lid.0 + 1));
    let ask = PathRecord { slid, ..PathRecord::default() };
    let recs = records::<PathRecord>(&s.ask(Method::GetTable, PathRecord::COMP_SLID, &ask));
    assert!(!recs.is_empty() && recs.iter().all(|r| r.sl == 0), "{dlid:?}");
}

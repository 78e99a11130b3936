//! QoS classes times routing layers, on the simulated fabric: a 4x4 torus routed by `dfsssp`
//! (and by `nue`) with a two-class QoS policy (the default level on SL 0, service ID 0x1000 on SL 1). Judged
//! from what the fabric and the SA give, not from the SM's own tables: every pair has a
//! PathRecord in each class; each class's records carry SLs of its own range (two classes on
//! the simulator's 8 data VLs: 4 layers each, class 0 on SLs 0-3, class 1 on SLs 4-7); the
//! SL2VL tables read back from every switch (every input/output pair of live ports) map each
//! class's SLs to VLs no other class uses; and the tables the switches hold, each pair on the
//! VL its record's SL maps to, have no credit loop in any VL. Where the classes leave one layer
//! (`max-op-vls 2`: 2 VLs for 2 classes) dfsssp declines on the torus, the chain's next engine
//! routes, and QoS's own tables and SLs stay as configured. A partition's IPoIB group with
//! `sl=1` is on class 1's first SL.

use std::collections::{BTreeSet, HashMap};

use ibsm::core::{PortConfig, QosSetting, SmConfig};
use ibsm::routes::live::LiveRoutes;
use ibsm::transport::sim::SimDriver;
use ibsm_mad::Attribute;
use ibsm_mad::Lid;
use ibsm_mad::header::Method;
use ibsm_mad::records::PathRecord;
use ibsm_routing::check::{CreditLoops, credit_loops_per_vl};
use ibsm_topology::Topology;
use ibsm_topology::generators::GenSpec;

mod support;
use support::sa::{Swept, each_switch_sl2vl, records, swept_on_vl0, through_core};

const POLICY: &str = "qos-ulps\n    default : 0\n    any, service-id 0x1000 : 1\nend-qos-ulps\n";
const STORAGE_SID: u64 = 0x1000;

fn torus() -> Topology {
    GenSpec::torus(&[4, 4], 1).generate().expect("torus")
}

fn swept(topo: &Topology, ports: PortConfig) -> Swept {
    swept_with(topo, ports, ibsm_partitions::Policy::no_file(), "dfsssp")
}

fn swept_with(topo: &Topology, ports: PortConfig, partitions: ibsm_partitions::Policy, engine: &str) -> Swept {
    let policy = ibsm_qos::parse_qos_policy(POLICY).expect("policy");
    let cfg = SmConfig {
        routing_engine: vec![engine.into(), "updn".into()],
        ports,
        partitions,
        qos: Some(QosSetting { options: ibsm_qos::QosOptions::default(), policy }),
        ..SmConfig::default()
    };
    swept_on_vl0(topo, 7, cfg)
}

/// The SL2VL tables every switch holds on every input/output pair of live ports, read back:
/// the one table they all hold (asserted equal).
fn switch_sl2vl(drv: &mut SimDriver, topo: &Topology) -> [u8; 16] {
    let mut seen: Option<[u8; 16]> = None;
    each_switch_sl2vl(drv, topo, |name, input, out, vls| {
        assert_eq!(*seen.get_or_insert(vls), vls, "switch {name} {input}->{out}");
    });
    seen.expect("some switch table")
}

/// Every end port's LID and the routing view's switch it leaves from.
fn sources(view: &ibsm_routing::FabricView) -> Vec<(Lid, usize)> {
    let mut out: Vec<(Lid, usize)> = view.switches.iter().enumerate().map(|(i, w)| (w.lid, i)).collect();
    for c in &view.cas {
        for p in &c.ports {
            if let Some(ibsm_routing::NodeId::Switch(at)) = p.neighbor.map(|n| n.node) {
                out.push((p.lid, at));
            }
        }
    }
    out
}

/// The SL of every (source switch, destination LID) for the class a service ID selects (none:
/// the default level), asked from the SA source by source; every source reaches every end port.
fn class_sls(s: &Swept, srcs: &[(Lid, usize)], sid: Option<u64>) -> HashMap<(usize, u16), u8> {
    let mut sl_of = HashMap::new();
    for &(slid, at) in srcs {
        let ask = PathRecord { slid, service_id: sid.unwrap_or(0), ..PathRecord::default() };
        let mask = PathRecord::COMP_SLID | sid.map_or(0, |_| PathRecord::COMP_SERVICE_ID);
        let recs = records::<PathRecord>(&s.ask(Method::GetTable, mask, &ask));
        assert_eq!(recs.len(), srcs.len(), "LID {} ({sid:?}): a record to every end port", slid.0);
        for r in recs {
            let was = sl_of.insert((at, r.dlid.0), r.sl);
            assert!(was.is_none_or(|w| w == r.sl), "LID {} -> {}: SL {} but {was:?}", slid.0, r.dlid.0, r.sl);
        }
    }
    sl_of
}

#[test]
fn two_classes_each_get_their_own_layers_and_no_vl_has_a_credit_loop() {
    two_classes_on_their_own_layers("dfsssp");
}

#[test]
fn under_nue_too() {
    two_classes_on_their_own_layers("nue");
}

fn two_classes_on_their_own_layers(engine: &str) {
    let topo = torus();
    let mut s = swept_with(&topo, PortConfig::default(), ibsm_partitions::Policy::no_file(), engine);
    assert_eq!(s.drv.sm.routing_engine_used(), Some(engine));
    let (plan, routes) = LiveRoutes::from_sm(&s.drv.sm).expect("routes").to_plan().expect("plan");
    let view = &plan.view;
    let srcs = sources(view);
    let sl2vl = switch_sl2vl(&mut s.drv, &topo);
    let mut vls_of_class: Vec<BTreeSet<u8>> = Vec::new();
    for (class, sid) in [(0u8, None), (1u8, Some(STORAGE_SID))] {
        let sl_of = class_sls(&s, &srcs, sid);
        let sls: BTreeSet<u8> = sl_of.values().copied().collect();
        // Two classes on 8 data VLs: 4 layers each, class c on SLs 4c..4c+3.
        let range = class * 4..class * 4 + 4;
        assert!(sls.iter().all(|sl| range.contains(sl)), "class {class}: SLs {sls:?}, expected within {range:?}");
        assert!(sls.len() >= 2, "class {class}: the torus needs more than one layer: {sls:?}");
        let vls: BTreeSet<u8> = sls.iter().map(|&sl| sl2vl[usize::from(sl)]).collect();
        assert_eq!(vls.len(), sls.len(), "class {class}: each layer on a VL of its own: {sl2vl:?}");
        // Each pair on the VL its SL maps to, as read back: no VL has a credit loop.
        let per_vl =
            credit_loops_per_vl(view, &routes, &|sw, d| sl_of.get(&(sw, d.0)).map(|&sl| sl2vl[usize::from(sl)]));
        for v in &per_vl {
            assert!(!matches!(v.loops, CreditLoops::Found(_)), "class {class} VL {}: {:?}", v.vl, v.loops);
        }
        // A record asked for with an SL of another class's range gets nothing.
        let (slid, at) = srcs[srcs.len() - 1];
        let (dlid, _) = srcs[0];
        let sl = sl_of[&(at, dlid.0)];
        for (want, n) in [(sl, 1), ((sl + 4) % 8, 0)] {
            let ask = PathRecord { slid, dlid, sl: want, service_id: sid.unwrap_or(0), ..PathRecord::default() };
            let mask = PathRecord::COMP_SLID
                | PathRecord::COMP_DLID
                | PathRecord::COMP_SL
                | sid.map_or(0, |_| PathRecord::COMP_SERVICE_ID);
            assert_eq!(records::<PathRecord>(&s.ask(Method::GetTable, mask, &ask)).len(), n, "SL {want} asked");
        }
        vls_of_class.push(vls);
    }
    assert!(vls_of_class[0].is_disjoint(&vls_of_class[1]), "classes share a VL: {vls_of_class:?}");
    // Judged on one VL, the same tables loop: the layers are what makes them safe.
    let one = credit_loops_per_vl(view, &routes, &|_, _| Some(0));
    assert!(matches!(one[0].loops, CreditLoops::Found(_)), "minimal torus routes on one VL loop");
}

#[test]
fn classes_that_leave_one_layer_hand_the_torus_to_the_next_engine_with_qos_as_configured() {
    let topo = torus();
    let mut s = swept(&topo, PortConfig { max_op_vls: 2, ..PortConfig::default() });
    assert_eq!(s.drv.sm.routing_engine_used(), Some("updn"), "2 VLs for 2 classes: one layer, dfsssp declines");
    let sl2vl = switch_sl2vl(&mut s.drv, &topo);
    assert_eq!(&sl2vl[..2], &[0, 1], "QoS's own table, masked to 2 VLs");
    let srcs: Vec<(Lid, usize)> = {
        let (plan, _) = LiveRoutes::from_sm(&s.drv.sm).expect("routes").to_plan().expect("plan");
        sources(&plan.view)
    };
    for (sl, sid) in [(0u8, None), (1u8, Some(STORAGE_SID))] {
        let sls: BTreeSet<u8> = class_sls(&s, &srcs, sid).into_values().collect();
        assert_eq!(sls, BTreeSet::from([sl]), "the level's own SL");
    }
}

#[test]
fn a_partition_group_is_on_its_class_first_sl() {
    use ibsm_mad::ids::status;
    use ibsm_mad::records::{McMemberRecord, stride};
    let topo = torus();
    let partitions =
        ibsm_partitions::parse_partitions_conf("Default=0x7fff, ipoib, sl=1 : ALL=full ;\n").expect("policy");
    let mut s = swept_with(&topo, PortConfig::default(), partitions, "dfsssp");
    assert_eq!(s.drv.sm.routing_engine_used(), Some("dfsssp"));
    s.drv.sm.set_sa_limits(ibsm::sa::Limits::default());
    let (from, now) = (s.snap.sm.lid, s.drv.now());
    let (st, data) = through_core(&mut s.drv, now, from, (Method::GetTable, 0, 1), &McMemberRecord::default());
    assert_eq!(st, status::OK);
    let sls: BTreeSet<u8> = data
        .chunks_exact(stride::<McMemberRecord>())
        .map(|c| McMemberRecord::parse(c).expect("record"))
        .filter(|r| r.mgid != ibsm_mad::Gid::default())
        .map(|r| r.sl)
        .collect();
    // sl=1 is class 1 (SL 1 on VL 1): with 4 layers per class, its first SL is 4.
    assert_eq!(sls, BTreeSet::from([4]), "the broadcast group's SL");
}

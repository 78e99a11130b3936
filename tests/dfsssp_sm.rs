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

use ibsm::core::{PortConfig, SmConfig};
use ibsm::routes::live::LiveRoutes;
use ibsm_mad::Lid;
use ibsm_mad::header::Method;
use ibsm_mad::records::PathRecord;
use ibsm_routing::check::{CreditLoops, credit_loops_per_vl};
use ibsm_topology::Topology;
use ibsm_topology::generators::GenSpec;

mod support;
use support::sa::{Swept, records, sl_n_on_vl_n, swept_on_vl0};

fn torus() -> Topology {
    GenSpec::torus(&[4, 4, 4], 1).generate().expect("torus")
}

fn swept(topo: &Topology, ports: PortConfig) -> Swept {
    let cfg = SmConfig { routing_engine: vec!["dfsssp".into(), "updn".into()], ports, ..SmConfig::default() };
    swept_on_vl0(topo, 7, cfg)
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
    assert!(sl_n_on_vl_n(&mut s.drv, &topo, layers) > 0);
    // Each pair on the VL its SL maps to (SL n on VL n, as read back): no VL has a credit loop.
    let per_vl = credit_loops_per_vl(view, &routes, &|s, d| sl_of.get(&(s, d.0)).copied());
    assert!(per_vl.len() >= 2, "{per_vl:?}");
    for v in &per_vl {
        assert!(!matches!(v.loops, CreditLoops::Found(_)), "VL {}: {:?}", v.vl, v.loops);
    }
    // What the control socket ships (`routes check --socket`, `routes dump --format sl`): each
    // switch's SLs, through JSON, are the SA's, and judged per VL they have no credit loop.
    let live = LiveRoutes::from_sm(&s.drv.sm).expect("routes");
    let live: LiveRoutes = serde_json::from_str(&serde_json::to_string(&live).expect("json")).expect("parses");
    let rows = live.layers().expect("a layered routing ships its SLs");
    assert_eq!(rows.len(), view.switches.len());
    for (&(at, dlid), &sl) in &sl_of {
        assert_eq!(rows[at].get(usize::from(dlid)).copied(), Some(sl), "switch {at} to LID {dlid}");
    }
    let shipped = ibsm::routes::layers::Layers::Live(rows);
    let forward = credit_loops_per_vl(view, &routes, &|s, d| shipped.sl(s, d));
    assert!(ibsm::routes::layers::all_clear(&forward));
    // This torus needs more layers paired than the budget, so dfsssp keeps per-path layers: the
    // ways back (an RC responder's replies on the requester's SL) are on other VLs than their
    // routes' own, and `routes check` finds them looping.
    let with_replies = ibsm::routes::layers::per_vl(view, &routes, &shipped);
    assert!(with_replies.iter().any(|v| v.replies > 0));
    assert!(!ibsm::routes::layers::all_clear(&with_replies));
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
    assert_eq!(LiveRoutes::from_sm(&s.drv.sm).expect("routes").layers(), None, "no SLs shipped");
}

/// `routes check --socket` and `routes dump --socket --format sl` on a running `ibsm run --sim`
/// whose chain routed a torus with dfsssp on two layers: each VL judged, no credit loop, every CA
/// pair's SL shown, some on SL 1.
#[test]
fn routes_on_the_socket_judge_and_show_the_running_sms_layers() {
    use std::time::Duration;
    use support::cmd::{ibsm, tmp_dir};
    use support::daemon::Daemon;
    let dir = tmp_dir("dfsssp-socket");
    let (sock, state) = (dir.join("sock"), dir.join("state"));
    let (so, st) = (sock.to_str().expect("utf-8"), state.to_str().expect("utf-8"));
    let torus = "examples/fabrics/torus-3x3.net";
    let args = ["run", "--sim", torus, "--routing-engine", "dfsssp,updn", "--state-dir", st, "--control", so];
    let mut sm = Daemon::start(&args, None, &[]);
    let status = sm.wait_up(&sock, Duration::from_secs(30));
    assert_eq!(status["last_sweep"]["routing_engine"], "dfsssp", "{status}");
    let (code, out, err) = ibsm(&["routes", "check", "--socket", so, "--no-shifts"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("credit loops per VL") && out.contains("VL  1:"), "{out}");
    assert!(!out.contains("LOOP through"), "{out}");
    let (code, out, err) = ibsm(&["routes", "dump", "--socket", so, "--format", "sl"]);
    assert_eq!(code, Some(0), "{err}");
    let sls: Vec<&str> = out.lines().filter(|l| !l.starts_with('#')).filter_map(|l| l.split(' ').nth(2)).collect();
    assert!(!sls.is_empty() && sls.contains(&"1") && sls.iter().all(|&s| s < "8"), "{out}");
    drop(sm);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A full route on layers that do not pair both directions of every pair (the 4x4x4 torus is
/// over dfsssp's pairing budget) is reported once, naming the engine and the layers; a paired
/// route (the 4x4 torus, on more than one layer) is not.
#[test]
fn a_route_whose_layers_are_not_paired_is_reported() {
    use ibsm::core::{Guid2Lid, Sm, SmEvent};
    use ibsm::transport::sim::SimDriver;
    for (dims, paired) in [(&[4u16, 4, 4][..], false), (&[4, 4][..], true)] {
        let topo = GenSpec::torus(dims, 1).generate().expect("torus");
        let cfg = SmConfig { routing_engine: vec!["dfsssp".into()], ..SmConfig::default() };
        let mut drv = SimDriver::new(&topo, 7, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
        let mut reported = Vec::new();
        let report = drv
            .sweep(support::sa::LIMIT, |ev| {
                if let SmEvent::LayersNotPaired { engine, layers } = ev {
                    reported.push((engine.clone(), *layers));
                }
            })
            .expect("a report");
        assert!(report.complete && report.routing_engine == "dfsssp", "{dims:?}: {report:?}");
        let used = LiveRoutes::from_sm(&drv.sm)
            .expect("routes")
            .layers()
            .into_iter()
            .flatten()
            .flatten()
            .max()
            .map_or(1, |m| m + 1);
        assert!(used > 1, "{dims:?}: on more than one layer");
        if paired {
            assert!(reported.is_empty(), "{dims:?}: paired, yet reported {reported:?}");
        } else {
            assert_eq!(reported, [("dfsssp".to_owned(), used)], "{dims:?}");
        }
    }
}

//! dfsssp under ibsim: OpenSM 3.3.23 (`-R dfsssp -Q`, QoS on with its default tables, which is
//! what carries its layers' SLs to VLs) and ibsm (`--routing-engine dfsssp`, QoS off: it writes
//! the same default SL2VL itself) on one fabric neither was tuned for, a 4x3 torus with a host
//! per switch, each SM on a fresh ibsim with OpenSM's `guid2lid`. Under each, from a client host
//! with the stock tools: every switch's table (`ibroute`), every switch's SL2VL on every
//! input/output pair (`smpquery sl2vl`) and the PathRecord SL of every host to every end port
//! (`saquery PR`). The judge is this test's own: the tables read back, each pair on the VL its
//! PathRecord SL maps to through the SL2VL read back, must route every pair with no credit loop
//! in any VL (`ibsm_routing::check::credit_loops_per_vl` on the tables as `ibroute` printed them).
//!
//! What matches and what differs is asserted where it must hold, and printed with counts:
//! - both pass the judge (every pair routed, no credit loop in any VL, while the same tables on
//!   one VL would loop) and use more than one VL;
//! - the SL2VL tables are equal on every switch input/output pair (QoS's default: SL n on VL n
//!   within 8 VLs, SL 8 on VL 0 and so on; seen: 360 of 360 equal);
//! - the tables differ (seen: 0 of 12 equal): the engines balance paths in their own orders;
//! - the SLs differ (seen: 29 of 276 equal): ibsm gives a pair its layer, both directions of a
//!   pair on one (3 layers here, 2 per path), while OpenSM then spreads the paths of a layer over the VLs left empty, at
//!   random (`vl_split_count` in osm_ucast_dfsssp.c: all 8 VLs here). Both are deadlock-free;
//!   OpenSM's balances traffic over more VLs, ibsm's leaves VLs free.
//!
//! - with every pair's way back counted on the pair's VL (an RC responder replies on the
//!   requester's SL), ibsm's VLs stay loop-free (asserted); OpenSM's, whose pairs' two
//!   directions have their own VLs, loop on one of its 8 (seen, printed).
//!
//! The fabric has one host per switch, so a (source switch, destination) pair's VL is that of
//! the one host's PathRecord.
//!
//! `other_fabrics_routed_loop_free_and_balanced_as_minhop` (ignored: the fabrics are named at
//! run time) is issue 25's acceptance check on fabrics the tests do not use: the same reading
//! back and judge, ibsm alone, for each layered engine, plus the balance of the tables read back
//! against minhop's on the same fabric and LIDs.
//!
//! Skipped with `IBSM_SKIP_IBSIM=1`; fails with the install command when ibsim, OpenSM or
//! infiniband-diags are missing.

mod support;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use ibsm::core::Guid2Lid;
use ibsm_mad::{Lid, PortNum};
use ibsm_routing::check::{CreditLoops, credit_loops_per_vl, credit_loops_per_vl_with_replies};
use ibsm_routing::{Engine, Lft, Routes};
use ibsm_topology::generators::GenSpec;
use ibsm_topology::{NodeKind, Topology};
use support::ibsim::{Ibsim, IbsimConfig, require_ibsim, require_tools, saquery_records, wait_for};
use support::opensm::{OpenSm, guid2lid_lids, start_ibsm_with_lids, switch_tables};

/// Tools at once against one ibsim (it serves at most 10 clients, the SM among them).
const PARALLEL: usize = 4;

/// What one SM left: tables by switch, SL2VL by (switch, input, output), SL by (host, end LID).
struct Seen {
    tables: BTreeMap<String, Vec<String>>,
    sl2vl: BTreeMap<(String, u8, u8), Vec<u8>>,
    sls: BTreeMap<(String, u16), u8>,
}

fn fabric() -> Topology {
    let t = GenSpec::torus(&[4, 3], 1).generate().expect("torus");
    // Named as ibsim will name them: through its own text.
    Topology::parse_str(&t.to_net(), "torus-4x3").expect("reparses")
}

fn lid_of(topo: &Topology, lids: &BTreeMap<u64, u16>, i: usize) -> u16 {
    let n = &topo.nodes[i];
    lids[&n.port_guid(u8::from(n.kind != NodeKind::Switch)).0]
}

fn seen(sim: &Ibsim, client: &str, topo: &Topology, lids: &BTreeMap<u64, u16>) -> Seen {
    let tables = switch_tables(sim, client, topo, lids);
    let switches: Vec<usize> = (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Switch).collect();
    let hosts: Vec<usize> = (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Ca).collect();
    // `smpquery sl2vl LID OUT` prints every input port's table to OUT:
    // `ports: in  0, out  1: | 0| 1| ...` (16 VLs, SL 0 first).
    let mut sl2vl_cmds = Vec::new();
    for &s in &switches {
        let n = &topo.nodes[s];
        sl2vl_cmds.extend((1..=n.num_ports).filter(|&p| n.peer(p).is_some()).map(|out| (s, out)));
    }
    let run_sl2vl = |&(s, out): &(usize, u8)| {
        let l = lid_of(topo, lids, s).to_string();
        let o = sim.run_at(Some(client), "smpquery", &["sl2vl", &l, &out.to_string()]).expect("runs");
        assert!(o.success(), "{}", o.describe());
        let mut rows = Vec::new();
        for line in o.stdout.lines().filter(|l| l.starts_with("ports: in")) {
            let input = line["ports: in".len()..].split(',').next().and_then(|x| x.trim().parse::<u8>().ok());
            let vls: Vec<u8> = line.split('|').skip(1).filter_map(|v| v.trim().parse().ok()).collect();
            if let Some(input) = input {
                rows.push(((topo.nodes[s].name.clone(), input, out), vls));
            }
        }
        assert!(!rows.is_empty(), "{}", o.describe());
        rows
    };
    let mut pr_cmds = Vec::new();
    for &h in &hosts {
        for d in hosts.iter().chain(&switches) {
            if *d != h {
                pr_cmds.push((h, *d));
            }
        }
    }
    let run_pr = |&(h, d): &(usize, usize)| {
        let (sl, dl) = (lid_of(topo, lids, h), lid_of(topo, lids, d));
        let o = sim.run_at(Some(client), "saquery", &["PR", "--src-to-dst", &format!("{sl}:{dl}")]).expect("runs");
        let recs = saquery_records(&o.stdout);
        let sl = recs
            .first()
            .and_then(|r| r.get("sl"))
            .and_then(|v| u8::from_str_radix(v.trim_start_matches("0x"), 16).ok());
        ((topo.nodes[h].name.clone(), dl), sl.unwrap_or_else(|| panic!("PR {h}->{d}: {}", o.describe())))
    };
    let (sl2vl, sls) = std::thread::scope(|scope| {
        let a: Vec<_> = sl2vl_cmds
            .chunks(sl2vl_cmds.len().div_ceil(PARALLEL).max(1))
            .map(|part| scope.spawn(move || part.iter().flat_map(run_sl2vl).collect::<Vec<_>>()))
            .collect();
        let b: Vec<_> = pr_cmds
            .chunks(pr_cmds.len().div_ceil(PARALLEL).max(1))
            .map(|part| scope.spawn(move || part.iter().map(run_pr).collect::<Vec<_>>()))
            .collect();
        (
            a.into_iter().flat_map(|w| w.join().expect("worker")).collect(),
            b.into_iter().flat_map(|w| w.join().expect("worker")).collect(),
        )
    });
    Seen { tables, sl2vl, sls }
}

/// The judge: every pair routed by the tables read back, no credit loop in any VL with each pair
/// on the VL its PathRecord SL maps to. Returns the VLs used and how many VLs loop once every
/// pair's way back is counted on its VL too.
fn judge(who: &str, topo: &Topology, g2l: &str, s: &Seen) -> (usize, usize) {
    let (vls, back, _) = judge_report(who, topo, g2l, s);
    (vls, back)
}

/// [`judge`], and the check report of the tables read back (reachability, hops, forwarding
/// index, shift permutations).
fn judge_report(who: &str, topo: &Topology, g2l: &str, s: &Seen) -> (usize, usize, ibsm_routing::check::CheckReport) {
    let table = Guid2Lid::parse(g2l).expect("guid2lid");
    let plan = ibsm::routes::plan(topo, 0, table, None);
    let view = &plan.view;
    let name_of: HashMap<u64, &str> = topo.nodes.iter().map(|n| (n.node_guid.0, n.name.as_str())).collect();
    let mut tables = Vec::new();
    for w in &view.switches {
        let name = name_of[&w.guid.0];
        let mut lft = Lft::unrouted(view.max_lid());
        for l in &s.tables[name] {
            // `0x0003 002 : (...)`: LID, egress port.
            let mut f = l.split_whitespace();
            let lid = f.next().and_then(|x| u16::from_str_radix(x.trim_start_matches("0x"), 16).ok());
            let port = f.next().and_then(|x| x.parse::<u8>().ok());
            if let (Some(lid), Some(port)) = (lid, port)
                && let Some(e) = lft.entries_mut().get_mut(usize::from(lid))
            {
                *e = PortNum(port);
            }
        }
        tables.push(Arc::new(lft));
    }
    let routes = Routes { tables };
    let report = ibsm_routing::check::check(view, &routes);
    assert_eq!(report.reachable, report.pairs, "{who}: every CA pair reachable:\n{report}");
    // The VL of (source switch, LID): from a host behind that switch, through the switch's SL2VL
    // (input from the host's port to the path's egress).
    let row: HashMap<&str, usize> = view.switches.iter().enumerate().map(|(i, w)| (name_of[&w.guid.0], i)).collect();
    let mut vl: HashMap<(usize, u16), u8> = HashMap::new();
    for ((host, dlid), &sl) in &s.sls {
        let h = topo.find(host).expect("host");
        let peer = topo.nodes[h].peer(1).expect("cabled");
        let sw = &topo.nodes[peer.node].name;
        let at = row[sw.as_str()];
        let out = routes.tables[at].port_for(Lid(*dlid)).map_or(0, |p| p.0);
        let map = s.sl2vl.get(&(sw.clone(), peer.port, out));
        let v = map.and_then(|m| m.get(usize::from(sl)).copied()).unwrap_or(sl);
        // Every host behind a switch is on the VL of the switch's pair.
        let was = vl.insert((at, *dlid), v);
        assert!(was.is_none_or(|w| w == v), "{who}: hosts at {sw} to LID {dlid} on VLs {was:?} and {v}");
    }
    let per_vl = credit_loops_per_vl(view, &routes, &|s, d| vl.get(&(s, d.0)).copied());
    for v in &per_vl {
        assert!(!matches!(v.loops, CreditLoops::Found(_)), "{who}: VL {} has a credit loop: {:?}", v.vl, v.loops);
    }
    let one = credit_loops_per_vl(view, &routes, &|_, _| Some(0));
    // With every pair's way back on the pair's VL too (an RC responder replies on the SL of the
    // requester's path): the VLs that then loop.
    let back = credit_loops_per_vl_with_replies(view, &routes, &|s, d| vl.get(&(s, d.0)).copied());
    let back_loops = back.iter().filter(|v| matches!(v.loops, CreditLoops::Found(_))).count();
    eprintln!(
        "{who}: {} VLs used ({}), one VL would {}loop; with the ways back {back_loops} of {} VLs loop ({} ways back off their route's VL)",
        per_vl.len(),
        per_vl.iter().map(|v| format!("VL {}: {} pairs", v.vl, v.pairs)).collect::<Vec<_>>().join(", "),
        if matches!(one[0].loops, CreditLoops::Found(_)) { "" } else { "not " },
        back.len(),
        back.iter().map(|v| v.replies).sum::<u64>()
    );
    (per_vl.len(), back_loops, report)
}

#[test]
fn opensm_and_ibsm_program_dfsssp_layers_free_of_credit_loops() {
    if !require_ibsim() || !require_tools(&["opensm", "ibroute", "smpquery", "saquery"]) {
        return;
    }
    let topo = fabric();
    let hosts: Vec<&str> = topo.nodes.iter().filter(|n| n.kind == NodeKind::Ca).map(|n| n.name.as_str()).collect();
    let (sm_host, client) = (hosts[0], hosts[1]);
    let net = topo.to_net();

    // OpenSM.
    let sim = Ibsim::start_text(&net, &IbsimConfig::default()).expect("ibsim");
    let osm = OpenSm::start(&sim, sm_host, "opensm", &["-R", "dfsssp", "-Q"]);
    osm.wait_subnet_up(&topo, Duration::from_secs(60));
    let g2l_path = osm.dir().join("guid2lid");
    let ends = topo.nodes.len();
    wait_for("OpenSM's guid2lid", Duration::from_secs(30), || {
        std::fs::read_to_string(&g2l_path).is_ok_and(|t| guid2lid_lids(&t).len() >= ends)
    });
    let g2l = std::fs::read_to_string(&g2l_path).expect("guid2lid");
    let lids = guid2lid_lids(&g2l);
    let o = seen(&sim, client, &topo, &lids);
    drop(osm);
    drop(sim);

    // ibsm, with OpenSM's LIDs.
    let mut sim = Ibsim::start_text(&net, &IbsimConfig::default()).expect("ibsim");
    let (mut sm, _) = start_ibsm_with_lids(&mut sim, sm_host, &g2l, &["--routing-engine", "dfsssp,updn"]);
    assert!(sm.stdout().contains("routing dfsssp"), "ibsm routed with dfsssp: {}", sm.stdout());
    let i = seen(&sim, client, &topo, &lids);
    let _ = sm.kill();

    // Both: no credit loop in any VL, more than one in use, SL n on VL n for the SLs in use.
    let ((vo, _), (vi, back_i)) = (judge("OpenSM", &topo, &g2l, &o), judge("ibsm", &topo, &g2l, &i));
    assert!(vo >= 2 && vi >= 2, "both layer the torus: OpenSM {vo} VLs, ibsm {vi}");
    // ibsm pairs its layers there: an RC pair's way back stays loop-free too.
    assert_eq!(back_i, 0, "ibsm: VLs looping with the ways back");
    for (who, s) in [("OpenSM", &o), ("ibsm", &i)] {
        let used = s.sls.values().copied().max().unwrap_or(0);
        for (k, m) in &s.sl2vl {
            for sl in 0..=used {
                assert_eq!(m.get(usize::from(sl)).copied(), Some(sl), "{who}: {k:?} SL {sl}: {m:?}");
            }
        }
    }
    // What differs: the tables and the SL of a pair (each engine's own balance and layer order).
    let tables_same = o.tables.iter().filter(|(k, v)| i.tables.get(*k) == Some(v)).count();
    let sls_same = o.sls.iter().filter(|(k, v)| i.sls.get(*k) == Some(v)).count();
    let sl2vl_same = o.sl2vl.iter().filter(|(k, v)| i.sl2vl.get(*k) == Some(v)).count();
    eprintln!(
        "same under both: {tables_same} of {} switch tables, {sls_same} of {} PathRecord SLs, {sl2vl_same} of {} SL2VL tables",
        o.tables.len(),
        o.sls.len(),
        o.sl2vl.len()
    );
}

/// A guid2lid giving every end port of `topo` (switch port 0, CA ports) a LID, in node order.
fn lids_in_order(topo: &Topology) -> String {
    let mut out = String::new();
    let mut lid = 1u16;
    for n in &topo.nodes {
        let ports: Vec<u8> = if n.kind == NodeKind::Switch { vec![0] } else { (1..=n.num_ports).collect() };
        for p in ports {
            let _ = writeln!(out, "0x{:016x} 0x{lid:04x} 0x{lid:04x}", n.port_guid(p).0);
            lid += 1;
        }
    }
    out
}

/// Issue 25's acceptance check, on fabrics named at run time (a comma-separated list of `.net`
/// files in `IBSM_VL_FABRICS`; engines in `IBSM_VL_ENGINES`, default `dfsssp,nue`):
///
/// `IBSM_VL_FABRICS=a.net,b.net cargo test -p ibsm --test ibsim_dfsssp other_fabrics -- --ignored --nocapture`
///
/// For each fabric and engine, ibsm alone under ibsim (LIDs in node order), read back with the
/// stock tools as above (`ibroute`, `smpquery sl2vl`, `saquery PR`; a fabric of one host per
/// switch, so a switch's pair has its host's SL): every pair routed, no credit loop in any VL,
/// and the shift permutations' worst link load no higher than minhop's on the same fabric and
/// LIDs (routed offline). The ways back (an RC responder's replies on the requester's SL) are
/// counted and must be loop-free where the engine pairs its layers (dfsssp within its budget;
/// nue does not pair, and its count is printed).
#[test]
#[ignore = "the acceptance check: the fabrics come from IBSM_VL_FABRICS"]
fn other_fabrics_routed_loop_free_and_balanced_as_minhop() {
    let Ok(list) = std::env::var("IBSM_VL_FABRICS") else {
        eprintln!("IBSM_VL_FABRICS is not set: no fabric to check");
        return;
    };
    if !require_ibsim() || !require_tools(&["ibroute", "smpquery", "saquery"]) {
        return;
    }
    let engines = std::env::var("IBSM_VL_ENGINES").unwrap_or_else(|_| "dfsssp,nue".to_owned());
    for path in list.split(',').filter(|p| !p.is_empty()) {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let net = Topology::parse_str(&text, path).expect("a fabric").to_net();
        let topo = Topology::parse_str(&net, path).expect("reparses");
        let hosts: Vec<&str> = topo.nodes.iter().filter(|n| n.kind == NodeKind::Ca).map(|n| n.name.as_str()).collect();
        let (sm_host, client) = (hosts[0], hosts[1]);
        let g2l = lids_in_order(&topo);
        let lids = guid2lid_lids(&g2l);
        let plan = ibsm::routes::plan(&topo, 0, Guid2Lid::parse(&g2l).expect("guid2lid"), None);
        let minhop = ibsm_routing::minhop::MinHop.route(&plan.view).expect("minhop routes");
        let mh = ibsm_routing::check::check(&plan.view, &minhop);
        let mh_shift = mh.shifts.as_ref().map_or(0, |s| s.worst);
        for engine in engines.split(',') {
            let who = format!("{path} {engine}");
            let mut sim = Ibsim::start_text(&net, &IbsimConfig::default()).expect("ibsim");
            let (mut sm, _) = start_ibsm_with_lids(&mut sim, sm_host, &g2l, &["--routing-engine", engine]);
            let out = sm.stdout();
            assert!(out.contains(&format!("routing {engine}")), "{who}: ibsm routed with {engine}: {out}");
            let paired = !sm.stderr().contains("layers-not-paired");
            let s = seen(&sim, client, &topo, &lids);
            let _ = sm.kill();
            let (vls, back, r) = judge_report(&who, &topo, &g2l, &s);
            let shift = r.shifts.as_ref().map_or(0, |s| s.worst);
            eprintln!(
                "{who}: {} of {} CA pairs routed, {vls} VLs, {back} VLs loop with the ways back (paired: {paired}); \
                 shift worst {shift} (minhop {mh_shift}), mean worst {:.2} (minhop {:.2}); forwarding index max {} \
                 (minhop {}); hops mean {:.3} (minhop {:.3})",
                r.reachable,
                r.pairs,
                r.shifts.as_ref().map_or(0.0, |s| s.mean_worst),
                mh.shifts.as_ref().map_or(0.0, |s| s.mean_worst),
                r.forwarding_index.max,
                mh.forwarding_index.max,
                r.hops.mean,
                mh.hops.mean,
            );
            assert!(shift <= mh_shift, "{who}: shift worst {shift}, minhop's {mh_shift}");
            if engine == "dfsssp" && paired {
                assert_eq!(back, 0, "{who}: paired layers, yet VLs loop with the ways back");
            }
        }
    }
}

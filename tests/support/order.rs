//! The write order of LFT blocks, judged on the simulated fabric (issue 25): every state the
//! switches' tables go through, read from the simulator's switches, checked for credit loops
//! per VL with each pair on the VL of its SL (SL n on VL n), and for entries a change drops
//! held beside entries it adds. Used by `repair_order.rs` and `takeover_order.rs`.

use ibsm_mad::Lid;
use ibsm_routing::check::{CreditLoops, credit_loops_per_vl};
use ibsm_routing::{FabricView, Lft, Routes};
use ibsm_sim::fabric::Fabric;
use ibsm_topology::{NodeKind, Topology};

/// Every view switch's table as the simulator's switches (`nodes`, in the view's order) hold
/// it now, for LIDs `0..=top`.
pub fn held(fabric: &Fabric, nodes: &[usize], top: u16) -> Vec<Lft> {
    nodes
        .iter()
        .map(|&n| {
            Lft::from(
                (0..=top)
                    .map(|l| ibsm_mad::PortNum(fabric.lft_entry(n, l).unwrap_or(Lft::UNROUTED.0)))
                    .collect::<Vec<_>>(),
            )
        })
        .collect()
}

/// The credit loops of each VL in `state` with the pairs on the SLs `rows` give (by view
/// switch and destination LID): (VL, channels).
pub fn loops(view: &FabricView, state: &[Lft], rows: &[Vec<u8>]) -> Vec<(u8, usize)> {
    let routes = Routes::from_tables(state.to_vec());
    let sl = |s: usize, d: Lid| rows.get(s).and_then(|r| r.get(usize::from(d.0))).copied();
    credit_loops_per_vl(view, &routes, &sl)
        .into_iter()
        .filter_map(|v| if let CreditLoops::Found(c) = v.loops { Some((v.vl, c.len())) } else { None })
        .collect()
}

/// Whether `state` holds an entry of `last` that `first` did not (routed): a new entry has
/// been written.
pub fn written_new(state: &[Lft], first: &[Lft], last: &[Lft]) -> bool {
    state.iter().zip(first.iter().zip(last)).any(|(t, (a, z))| {
        t.iter().zip(a.iter().zip(z.iter())).any(|(p, (x, y))| x != y && p == y && y != Lft::UNROUTED)
    })
}

/// The entries `state` holds of the tables before a change (`old`) that the change drops,
/// and of its new tables (`new`) where they differ from the old: (old ones, new ones).
pub fn old_and_new(state: &[Lft], old: &[Lft], new: &[Lft]) -> (usize, usize) {
    let (mut o, mut n) = (0, 0);
    for ((t, a), z) in state.iter().zip(old).zip(new) {
        for ((p, x), y) in t.iter().zip(a.iter()).zip(z.iter()) {
            if x != y {
                o += usize::from(p == x && x != Lft::UNROUTED);
                n += usize::from(p == y && y != Lft::UNROUTED);
            }
        }
    }
    (o, n)
}

/// (switch, LID) pairs whose SL differs between `old` and `new`.
pub fn sl_changed(old: &[Vec<u8>], new: &[Vec<u8>]) -> usize {
    old.iter().zip(new).map(|(a, b)| a.iter().zip(b).filter(|(x, y)| x != y).count()).sum()
}

/// The states of `states` that loop with the SLs the hosts hold, as (state, [(VL, channels)]):
/// until a new entry of the last state is written, the old SLs (`old_sl`); from then on the
/// new ones (`new_sl`: a pair whose SL changed is judged on its new SL, which its host only
/// uses once it asks again).
pub fn looping(
    view: &FabricView,
    states: &[Vec<Lft>],
    old_sl: &[Vec<u8>],
    new_sl: &[Vec<u8>],
) -> Vec<(usize, Vec<(u8, usize)>)> {
    let (first, last) = (&states[0], &states[states.len() - 1]);
    (0..states.len())
        .map(|k| (k, loops(view, &states[k], if written_new(&states[k], first, last) { new_sl } else { old_sl })))
        .filter(|(_, l)| !l.is_empty())
        .collect()
}

/// Every switch-to-switch cable of `topo` once, counted from its lower node: (switch, port).
pub fn switch_cables(topo: &Topology) -> Vec<(usize, u8)> {
    topo.nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.kind == NodeKind::Switch)
        .flat_map(|(i, n)| {
            (1..=n.num_ports)
                .filter(move |&p| n.peer(p).is_some_and(|q| topo.nodes[q.node].kind == NodeKind::Switch && q.node > i))
                .map(move |p| (i, p))
        })
        .collect()
}

/// The first switch-to-switch cable of `topo`: (switch, port).
pub fn first_cable(topo: &Topology) -> (usize, u8) {
    (0..topo.nodes.len())
        .filter(|&i| topo.nodes[i].kind == NodeKind::Switch)
        .find_map(|i| {
            (1..=topo.nodes[i].num_ports)
                .find(|&p| topo.nodes[i].peer(p).is_some_and(|q| topo.nodes[q.node].kind == NodeKind::Switch))
                .map(|p| (i, p))
        })
        .expect("a switch-to-switch cable")
}

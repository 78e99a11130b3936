//! Credit loops per virtual lane: one channel dependency graph for each VL, built from the
//! tables, the SL of every pair and the SL-to-VL mapping.
//!
//! A packet keeps its VL along its path when every hop maps its SL to the same VL (the SM
//! programs SL2VL so), so a pair's dependencies belong to the graph of its VL only. The traffic
//! is [`super::CdgTraffic::DataPlane`]'s: every switch towards every CA port LID (CAs and the
//! switch agents answering them), and the switches CAs hang off towards switch LIDs. Each pair's
//! path is walked in full from its source switch, since pairs that share a suffix may be on
//! different VLs. The caller says which VL a (source switch, destination LID) pair uses.
//!
//! [`credit_loops_per_vl_with_replies`] adds the way back of every CA pair: an RC responder
//! sends its ACKs and read responses on the route back to the requester but with the SL of the
//! requester's path (the CM's REQ carries one SL for both directions), so the route from B's
//! switch to A's LID is counted on the VL of the pair (A's switch, B's LID) too.
//!
//! Owns only the per-VL collection; the cycle search is the check's ([`ChannelDeps`]).
//! Guarantees: never panics, whatever the view, tables and VL function.

use ibsm_mad::Lid;

use super::cdg::{PortSet, add};
use super::report::{CdgStats, CreditLoops};
use super::{ChannelDeps, Fabric, Next};
use crate::graph::Owner;
use crate::{FabricView, Routes};

/// The verdict on one VL's channel dependency graph.
#[derive(Debug, Clone, PartialEq)]
pub struct VlLoops {
    /// The VL.
    pub vl: u8,
    /// Pairs on it whose dependencies were counted.
    pub pairs: u64,
    /// Routes walked on it as another pair's way back (an RC responder's replies on the SL of
    /// the requester's path): (source switch, destination LID, VL) once each, where the route's
    /// own VL is another. 0 from [`credit_loops_per_vl`].
    pub replies: u64,
    /// Its credit-loop verdict (a cycle with its channels, in dependency order).
    pub loops: CreditLoops,
    /// Its graph's figures.
    pub stats: CdgStats,
}

/// Builds the channel dependency graph of each VL that some pair uses (`vl_of(source switch,
/// destination LID)`, VL 0 where it says `None`; VLs above 15 are counted as 15) and searches
/// each for a cycle. VLs in ascending order.
pub fn credit_loops_per_vl(
    view: &FabricView,
    routes: &Routes,
    vl_of: &dyn Fn(usize, Lid) -> Option<u8>,
) -> Vec<VlLoops> {
    per_vl(view, routes, vl_of, false)
}

/// [`credit_loops_per_vl`] with the way back of every CA pair on the pair's VL: for CA ports A
/// and B (every LID of each), the route from B's switch to A's LID is also counted on the VL of
/// (A's switch, B's LID), as an RC connection's responder uses it. Engines whose pairs' two
/// directions share an SL, or whose layers hold the routes back, pass it as they pass
/// [`credit_loops_per_vl`].
pub fn credit_loops_per_vl_with_replies(
    view: &FabricView,
    routes: &Routes,
    vl_of: &dyn Fn(usize, Lid) -> Option<u8>,
) -> Vec<VlLoops> {
    per_vl(view, routes, vl_of, true)
}

fn per_vl(view: &FabricView, routes: &Routes, vl_of: &dyn Fn(usize, Lid) -> Option<u8>, replies: bool) -> Vec<VlLoops> {
    let f = Fabric::new(view, routes);
    let mut deps: Vec<Option<Vec<PortSet>>> = vec![None; 16];
    let mut pairs = [0u64; 16];
    let mut back = [0u64; 16];
    let mut host_switch = vec![false; f.switches()];
    for h in &f.hosts {
        if let Some(x) = host_switch.get_mut(h.attach) {
            *x = true;
        }
    }
    for (lid, o) in f.owner.iter().enumerate() {
        let Ok(lid) = u16::try_from(lid) else { break };
        let to_ca = match o {
            Owner::None => continue,
            Owner::Port(..) => true,
            Owner::Switch(_) => false,
        };
        for (s, &hosts) in host_switch.iter().enumerate() {
            if !to_ca && !hosts {
                continue;
            }
            let vl = usize::from(vl_of(s, Lid(lid)).unwrap_or(0).min(15));
            let set = deps[vl].get_or_insert_with(|| vec![[0; 4]; f.next.len()]);
            pairs[vl] += 1;
            walk(&f, s, lid, set);
        }
    }
    if replies {
        way_back(&f, vl_of, &mut deps, &mut back);
    }
    deps.into_iter()
        .enumerate()
        .filter_map(|(vl, sets)| {
            let sets = sets?;
            let (loops, stats) = ChannelDeps::from_port_sets(&f, &sets).credit_loops();
            Some(VlLoops { vl: u8::try_from(vl).unwrap_or(15), pairs: pairs[vl], replies: back[vl], loops, stats })
        })
        .collect()
}

/// Adds, for every CA LID `a` (port A on switch `sa`) and every other switch `t` with CAs, the
/// route from `t` to `a` on each VL that a pair (`sa`, LID of a CA port on `t`) uses, where that
/// VL is not the route's own (already counted).
fn way_back(
    f: &Fabric<'_>,
    vl_of: &dyn Fn(usize, Lid) -> Option<u8>,
    deps: &mut [Option<Vec<PortSet>>],
    back: &mut [u64; 16],
) {
    let vl = |s: usize, lid: u16| usize::from(vl_of(s, Lid(lid)).unwrap_or(0).min(15));
    // The LIDs of the CA ports on each switch.
    let mut lids_at: Vec<Vec<u16>> = vec![Vec::new(); f.switches()];
    for h in &f.hosts {
        if let Some(v) = lids_at.get_mut(h.attach) {
            v.extend((0..f.per_port).map(|k| h.lid.0.saturating_add(k)));
        }
    }
    for h in &f.hosts {
        for a in (0..f.per_port).map(|k| h.lid.0.saturating_add(k)) {
            for (t, lids) in lids_at.iter().enumerate() {
                if t == h.attach || lids.is_empty() {
                    continue;
                }
                // The VLs A's requests to the ports on `t` use, less the route's own.
                let mut vls = lids.iter().fold(0u16, |m, &b| m | 1 << vl(h.attach, b));
                vls &= !(1 << vl(t, a));
                while vls != 0 {
                    let v = vls.trailing_zeros() as usize;
                    vls &= vls - 1;
                    let Some(slot) = deps.get_mut(v) else { continue };
                    let set = slot.get_or_insert_with(|| vec![[0; 4]; f.next.len()]);
                    back[v] += 1;
                    walk(f, t, a, set);
                }
            }
        }
    }
}

/// Adds the dependencies of the path from switch `from` to `lid` to `set`.
fn walk(f: &Fabric<'_>, from: usize, lid: u16, set: &mut [PortSet]) {
    let mut prev: Option<usize> = None;
    let mut cur = from;
    for _ in 0..=f.switches() {
        let Some(p) = f.port(cur, lid) else { return };
        let Some(chan) = f.chan(cur, p) else { return };
        let Next::Switch(next) = f.next(cur, p) else { return };
        if let Some(pc) = prev
            && let Some(d) = set.get_mut(pc)
        {
            add(d, p.0);
        }
        prev = Some(chan);
        cur = next;
    }
}

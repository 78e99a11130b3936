//! The layers (SLs) of a layered routing (`dfsssp`) as `routes` prints them: each CA pair's SL
//! (`routes dump --format sl`) and the credit-loop verdict of every VL's channel dependency
//! graph (`routes check`).
//!
//! A layer is the pair's SL and SL n travels on VL n (the SL2VL the SM programs for a layered
//! routing), so the VL of a pair is its layer: offline the engine's ([`Layers::Engine`]), live
//! the SLs a running SM's SA gives ([`Layers::Live`], shipped with its tables by the control
//! socket). Owns only this formatting and the verdict it feeds to the exit status; the analysis
//! is `ibsm_routing::check::credit_loops_per_vl`.

use core::fmt::Write as _;

use ibsm_mad::Lid;
use ibsm_routing::check::{CreditLoops, VlLoops, credit_loops_per_vl_with_replies};
use ibsm_routing::dfsssp::PathLayers;
use ibsm_routing::{FabricView, NodeId, Routes};
use serde::Serialize;

/// The SL of every path of a layered routing, by source switch (the view's order) and
/// destination LID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layers {
    /// The engine's layers (offline).
    Engine(PathLayers),
    /// A running SM's, one row per switch (the view's order), one SL per LID.
    Live(Vec<Vec<u8>>),
}

impl Layers {
    /// The SL of the path from switch `s` to `dlid`, if known.
    pub fn sl(&self, s: usize, dlid: Lid) -> Option<u8> {
        match self {
            Layers::Engine(l) => l.layer(s, dlid),
            Layers::Live(rows) => rows.get(s)?.get(usize::from(dlid.0)).copied(),
        }
    }
}

/// Every CA port pair with its SL: a header, then `SRC-LID DST-LID SL` per line (base LIDs,
/// sources in view order), the source's own LID left out.
pub fn pair_sls(view: &FabricView, layers: &Layers) -> String {
    let ends: Vec<(Lid, usize)> = view
        .cas
        .iter()
        .flat_map(|c| c.ports.iter())
        .filter(|p| p.lid.is_unicast())
        .filter_map(|p| match p.neighbor?.node {
            NodeId::Switch(s) => Some((p.lid, s)),
            NodeId::Ca(_) => None,
        })
        .collect();
    let mut out = String::from("# source LID, destination LID, SL (the routing layer of the pair)\n");
    for &(src, s) in &ends {
        for &(dst, _) in &ends {
            if src == dst {
                continue;
            }
            let sl = layers.sl(s, dst).unwrap_or(0);
            let _ = writeln!(out, "{} {} {sl}", src.0, dst.0);
        }
    }
    out
}

/// Each VL's verdict, for a layered routing: each pair's path on its SL's VL, and its way back
/// on the same VL (an RC responder replies on the SL of the requester's path).
pub fn per_vl(view: &FabricView, routes: &Routes, layers: &Layers) -> Vec<VlLoops> {
    credit_loops_per_vl_with_replies(view, routes, &|s, d| layers.sl(s, d))
}

/// Whether no VL has a credit loop.
pub fn all_clear(v: &[VlLoops]) -> bool {
    v.iter().all(|x| !matches!(x.loops, CreditLoops::Found(_)))
}

/// The per-VL verdict as `routes check` prints it: a line per VL, and a loop's channels.
pub fn text(v: &[VlLoops]) -> String {
    let mut out =
        String::from("credit loops per VL (SL n on VL n, each pair on its layer's SL, its way back on the same SL):\n");
    for x in v {
        let _ = write!(
            out,
            "  VL {:>2}: {} pairs, {} ways back, {} channels, {} dependencies: ",
            x.vl, x.pairs, x.replies, x.stats.channels, x.stats.dependencies
        );
        match &x.loops {
            CreditLoops::Found(c) => {
                let path: Vec<String> = c.iter().map(ToString::to_string).collect();
                let _ = writeln!(out, "LOOP through {} channels: {}", c.len(), path.join(", "));
            }
            CreditLoops::None => out.push_str("none\n"),
            CreditLoops::NotChecked => out.push_str("not checked\n"),
        }
    }
    out
}

/// One VL in `routes check --json` (`credit_loops_per_vl`).
#[derive(Debug, Serialize)]
pub struct JsonVl {
    /// The VL.
    pub vl: u8,
    /// Pairs on it.
    pub pairs: u64,
    /// Routes counted on it as the way back of a pair on it (an RC responder's replies), where
    /// the route's own VL is another.
    pub ways_back: u64,
    /// "none" or "found".
    pub credit_loops: &'static str,
    /// A loop's channels as (switch GUID, egress port), in dependency order.
    pub example: Vec<(String, u8)>,
}

/// The per-VL verdict for JSON.
pub fn json(v: &[VlLoops]) -> Vec<JsonVl> {
    v.iter()
        .map(|x| JsonVl {
            vl: x.vl,
            pairs: x.pairs,
            ways_back: x.replies,
            credit_loops: match x.loops {
                CreditLoops::Found(_) => "found",
                CreditLoops::None => "none",
                CreditLoops::NotChecked => "not-checked",
            },
            example: match &x.loops {
                CreditLoops::Found(c) => c.iter().map(|ch| (ch.switch.to_string(), ch.port.0)).collect(),
                _ => Vec::new(),
            },
        })
        .collect()
}

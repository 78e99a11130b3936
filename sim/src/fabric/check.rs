//! The invariants of a programmed fabric, read from the simulated switches' own tables: every
//! live CA port reaches every other live CA port's base LID through the LFTs, crossing only
//! Active ports, without a loop.
//!
//! Owns [`RouteCheck`], [`Fabric::check_routes`] and [`Fabric::lft_port`] (one entry, for
//! tests). Reads state only: no packet is sent, no counter or random number is touched. Cost:
//! switches × destinations (each switch's verdict for a destination is computed once), so a
//! 27,648-HCA fabric checks in about a second.

use std::collections::BTreeMap;

use super::Fabric;
use super::state::{NodeRef, PortRef};
use crate::topology::NodeKind;

/// What [`Fabric::check_routes`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteCheck {
    /// Live CA ports (alive node, port Active with a LID).
    pub end_ports: usize,
    /// (source port, destination LID) pairs checked.
    pub pairs: u64,
    /// Pairs whose path ends at an LFT entry that is unset, out of range, or at the wrong CA.
    pub unrouted: u64,
    /// Pairs whose path leaves through a port that is not Active (a dead link).
    pub dead_link: u64,
    /// Pairs whose path comes back to a switch it already crossed.
    pub loops: u64,
    /// One failing pair, described, for a report.
    pub first_failure: Option<String>,
}

impl RouteCheck {
    /// Every pair reaches its destination.
    pub fn ok(&self) -> bool {
        self.unrouted == 0 && self.dead_link == 0 && self.loops == 0
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Unknown,
    Visiting,
    Reaches,
    Unrouted,
    Dead,
    Loop,
}

impl Fabric {
    fn live_ca_ports(&self) -> Vec<PortRef> {
        let mut out = Vec::new();
        for n in self.nodes.iter().filter(|n| n.alive && n.kind != NodeKind::Switch) {
            for num in 1..=n.num_ports {
                let p = n.first_port + PortRef::from(num);
                if self.ports.get(p as usize).is_some_and(|port| port.is_active() && port.lid != 0) {
                    out.push(p);
                }
            }
        }
        out
    }

    /// Where a packet leaving through `out` lands toward `dlid`: the next switch (node index), or
    /// a final verdict.
    fn step(&self, out: PortRef, dlid: u16) -> Result<NodeRef, Verdict> {
        let port = self.ports.get(out as usize).ok_or(Verdict::Unrouted)?;
        if !port.is_active() {
            return Err(Verdict::Dead);
        }
        let arrival = port.peer.and_then(|q| self.ports.get(q as usize)).ok_or(Verdict::Dead)?;
        let node = arrival.node as usize;
        if !arrival.is_active() || !self.nodes.get(node).is_some_and(|n| n.alive) {
            return Err(Verdict::Dead);
        }
        if self.nodes[node].kind == NodeKind::Switch {
            Ok(node)
        } else if arrival.owns_lid(dlid) {
            Err(Verdict::Reaches)
        } else {
            Err(Verdict::Unrouted)
        }
    }

    /// The verdict for `dlid` from switch `start`, filling `memo` along the way.
    fn verdict_at_switch(&self, start: NodeRef, dlid: u16, memo: &mut [Verdict]) -> Verdict {
        let mut path = Vec::new();
        let mut node = start;
        let verdict = loop {
            match memo[node] {
                Verdict::Unknown => {}
                Verdict::Visiting => break Verdict::Loop,
                v => break v,
            }
            memo[node] = Verdict::Visiting;
            path.push(node);
            let n = &self.nodes[node];
            if self.ports.get(n.first_port as usize).is_some_and(|p| p.owns_lid(dlid)) {
                break Verdict::Reaches;
            }
            let entry =
                n.switch.and_then(|s| self.switches.get(s as usize)).and_then(|s| s.lft_port(&self.lft_blocks, dlid));
            let Some(e) = entry.filter(|&e| e != 0 && e <= n.num_ports) else { break Verdict::Unrouted };
            match self.step(n.first_port + PortRef::from(e), dlid) {
                Ok(next) => node = next,
                Err(v) => break v,
            }
        };
        for n in path {
            memo[n] = verdict;
        }
        verdict
    }

    /// Switch `node`'s LFT entry for `lid`, as the switch holds it (`None`: not a switch, or
    /// the entry is unset or past LinearFDBTop).
    pub fn lft_port(&self, node: usize, lid: u16) -> Option<u8> {
        let s = self.nodes.get(node)?.switch?;
        self.switches.get(s as usize)?.lft_port(&self.lft_blocks, lid)
    }

    /// Checks every (live CA port, live CA port's base LID) pair through the switches' tables.
    pub fn check_routes(&self) -> RouteCheck {
        let ends = self.live_ca_ports();
        let mut check = RouteCheck { end_ports: ends.len(), ..RouteCheck::default() };
        // Sources by the switch their cable leads to (the verdict is the switch's); the few
        // cabled to another CA, or whose first hop fails, are checked one by one.
        let mut by_switch: BTreeMap<NodeRef, Vec<PortRef>> = BTreeMap::new();
        let mut single = Vec::new();
        for &src in &ends {
            match self.step(src, 0) {
                Ok(sw) => by_switch.entry(sw).or_default().push(src),
                Err(_) => single.push(src),
            }
        }
        let mut memo = vec![Verdict::Unknown; self.nodes.len()];
        for &dst in &ends {
            let dlid = self.ports[dst as usize].lid;
            memo.fill(Verdict::Unknown);
            for (&sw, srcs) in &by_switch {
                let Some(&first) = srcs.iter().find(|&&s| s != dst) else { continue };
                let n = srcs.len() as u64 - u64::from(srcs.contains(&dst));
                check.pairs += n;
                let v = self.verdict_at_switch(sw, dlid, &mut memo);
                check.count(self, v, n, first, dlid);
            }
            for &src in single.iter().filter(|&&s| s != dst) {
                check.pairs += 1;
                let v = self.step(src, dlid).err().unwrap_or(Verdict::Unrouted);
                check.count(self, v, 1, src, dlid);
            }
        }
        check
    }
}

impl RouteCheck {
    /// Counts `n` pairs from `src`'s switch (or `src`) to `dlid` with verdict `v`.
    fn count(&mut self, fabric: &Fabric, v: Verdict, n: u64, src: PortRef, dlid: u16) {
        let counter = match v {
            Verdict::Reaches => return,
            Verdict::Dead => &mut self.dead_link,
            Verdict::Loop => &mut self.loops,
            Verdict::Unrouted | Verdict::Unknown | Verdict::Visiting => &mut self.unrouted,
        };
        *counter += n;
        if self.first_failure.is_none() {
            let p = &fabric.ports[src as usize];
            self.first_failure =
                Some(format!("from LID {} (node {} port {}) to LID {dlid}: {v:?}", p.lid, p.node, p.num));
        }
    }
}

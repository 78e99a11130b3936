//! The channel dependency graph (CDG) of a set of forwarding tables.
//!
//! A channel is a directed switch-to-switch link. Channel `a = (x -> s)` depends on channel
//! `b = (s -> y)` when some switch `x` sends a LID to `s` and `s` sends the same LID on to `y`.
//! Which routes count is the [`CdgTraffic`] choice. Links to CAs are left out: nothing depends on
//! a CA's ingress, and a CA's egress depends on nothing else.
//!
//! Owns: building the graph. The pass over every (LID, switch) route is the hot loop, so it stays
//! on flat arrays (one 256-bit egress-port set per channel, which also removes duplicate
//! dependencies) and ends in a compressed sparse-row graph, [`ChannelDeps`]. The cycle analysis
//! over that graph reads it from beside: `dfs`, `scc`, and `loops` which chooses between them.
//!
//! Guarantees: never panics, whatever the view and tables.

use super::report::{CdgStats, Channel, CreditLoops};
use super::{CdgTraffic, Fabric, Next};
use crate::graph::Owner;
use crate::{FabricView, Routes};

/// One bit per possible egress port (0..=255) of the switch a channel leads to.
pub(crate) type PortSet = [u64; 4];

pub(super) fn add(set: &mut PortSet, p: u8) {
    set[usize::from(p >> 6)] |= 1u64 << (p & 63);
}

/// The ports of a [`PortSet`], in ascending order.
pub(crate) fn ports(set: PortSet) -> impl Iterator<Item = u8> {
    (0u8..4).flat_map(move |w| {
        let mut bits = set[usize::from(w)];
        core::iter::from_fn(move || {
            if bits == 0 {
                return None;
            }
            let b = bits.trailing_zeros();
            bits &= bits - 1;
            // `w < 4` and `b < 64`, so the port fits in a byte.
            u8::try_from(u32::from(w) * 64 + b).ok()
        })
    })
}

/// The channel dependency graph: nodes are the directed switch-to-switch links, numbered
/// `0..channels().len()`, and an edge `a -> b` means channel `a` depends on channel `b`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChannelDeps {
    /// Node `i`'s channel.
    channels: Vec<Channel>,
    /// `succ[start[i]..start[i + 1]]`: the channels node `i` depends on, ascending.
    start: Vec<usize>,
    succ: Vec<u32>,
}

impl ChannelDeps {
    /// The dependency graph of `routes` on `view`, from the routes `traffic` selects.
    pub fn new(view: &FabricView, routes: &Routes, traffic: CdgTraffic) -> ChannelDeps {
        ChannelDeps::build(&Fabric::new(view, routes), traffic)
    }

    /// The directed switch-to-switch links, by node number.
    pub fn channels(&self) -> &[Channel] {
        &self.channels
    }

    /// Number of dependency edges.
    pub fn dependencies(&self) -> usize {
        self.succ.len()
    }

    /// The channels channel `c` depends on, ascending (none if `c` is out of range).
    pub fn depends_on(&self, c: usize) -> impl Iterator<Item = usize> + '_ {
        self.succ_of(c).iter().map(|&n| n as usize)
    }

    /// The slice of `succ` behind [`ChannelDeps::depends_on`].
    pub(super) fn succ_of(&self, c: usize) -> &[u32] {
        match (self.start.get(c), self.start.get(c + 1)) {
            (Some(&a), Some(&b)) => self.succ.get(a..b).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// Whether channel `a` depends on channel `b`.
    pub fn depends(&self, a: usize, b: usize) -> bool {
        self.depends_on(a).any(|n| n == b)
    }

    /// Every dependency as a `(from, to)` pair of node numbers, in node order.
    pub(super) fn edges(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        (0..self.channels.len()).flat_map(move |a| {
            let a32 = u32::try_from(a).unwrap_or(u32::MAX);
            self.depends_on(a).map(move |b| (a32, u32::try_from(b).unwrap_or(u32::MAX)))
        })
    }

    /// Whether channel `c` depends on itself.
    pub(super) fn self_dependent(&self, c: usize) -> bool {
        u32::try_from(c).is_ok_and(|c32| self.succ_of(c).binary_search(&c32).is_ok())
    }

    /// A graph of `n` channels with the given dependencies (test fabrics without a view):
    /// channel `i` is named port `i` (truncated to a byte) of switch `i`.
    #[cfg(test)]
    pub(super) fn from_edges(n: usize, edges: &[(usize, usize)]) -> ChannelDeps {
        use ibsm_mad::{Guid, PortNum};
        let name = |i: usize| Guid(i as u64);
        let channels = (0..n).map(|i| Channel { switch: name(i), port: PortNum(i as u8), to: name(i + 1) }).collect();
        let mut start = vec![0];
        let mut succ = Vec::new();
        for a in 0..n {
            let mut to: Vec<u32> = edges.iter().filter(|e| e.0 == a).map(|e| e.1 as u32).collect();
            to.sort_unstable();
            succ.extend(to);
            start.push(succ.len());
        }
        ChannelDeps { channels, start, succ }
    }

    pub(super) fn build(f: &Fabric<'_>, traffic: CdgTraffic) -> ChannelDeps {
        ChannelDeps::from_port_sets(f, &collect(f, traffic))
    }

    /// The graph of dependencies given as egress-port sets by the fabric's channel index.
    pub(super) fn from_port_sets(f: &Fabric<'_>, deps: &[PortSet]) -> ChannelDeps {
        // Node numbers of the switch-to-switch channels; `u32::MAX` for the others.
        let mut node = vec![u32::MAX; f.next.len()];
        let mut channels = Vec::new();
        for (c, n) in f.next.iter().enumerate() {
            if let Next::Switch(_) = n
                && let Some(ch) = channel(f, c)
                && let Ok(i) = u32::try_from(channels.len())
            {
                node[c] = i;
                channels.push(ch);
            }
        }
        let mut start = Vec::with_capacity(channels.len() + 1);
        let mut succ = Vec::new();
        for (c, set) in deps.iter().enumerate() {
            if node[c] == u32::MAX {
                continue;
            }
            start.push(succ.len());
            let Next::Switch(n) = f.next[c] else { continue };
            let first = succ.len();
            for p in ports(*set) {
                if let Some(c2) = f.chan(n, ibsm_mad::PortNum(p))
                    && let Some(&to) = node.get(c2)
                    && to != u32::MAX
                {
                    succ.push(to);
                }
            }
            succ[first..].sort_unstable();
        }
        start.push(succ.len());
        ChannelDeps { channels, start, succ }
    }
}

/// The dependencies as egress-port sets, indexed by the fabric's channel index.
fn collect(f: &Fabric<'_>, traffic: CdgTraffic) -> Vec<PortSet> {
    let mut deps: Vec<PortSet> = vec![[0; 4]; f.next.len()];
    let mut host_switches: Vec<usize> = f.hosts.iter().map(|h| h.attach).collect();
    host_switches.sort_unstable();
    host_switches.dedup();
    let mut on_path = vec![false; f.switches()];
    for (lid, o) in f.owner.iter().enumerate() {
        if *o == Owner::None {
            continue;
        }
        let Ok(lid) = u16::try_from(lid) else { break };
        let to_ca = matches!(o, Owner::Port(..));
        let all_sources = match traffic {
            CdgTraffic::All => true,
            CdgTraffic::DataPlane => to_ca,
            CdgTraffic::CaToCa => {
                if !to_ca {
                    continue;
                }
                false
            }
        };
        if !all_sources {
            mark_paths(f, lid, &host_switches, &mut on_path);
        }
        for (s, &on) in on_path.iter().enumerate() {
            if !all_sources && !on {
                continue;
            }
            let Some(p1) = f.port(s, lid) else { continue };
            let Some(c1) = f.chan(s, p1) else { continue };
            let Next::Switch(n) = f.next[c1] else { continue };
            let Some(p2) = f.port(n, lid) else { continue };
            if let Some(c2) = f.chan(n, p2)
                && matches!(f.next[c2], Next::Switch(_))
            {
                add(&mut deps[c1], p2.0);
            }
        }
    }
    deps
}

/// Marks the switches that packets from CA ports to `lid` pass through.
fn mark_paths(f: &Fabric<'_>, lid: u16, starts: &[usize], on_path: &mut [bool]) {
    on_path.fill(false);
    for &start in starts {
        let mut cur = start;
        for _ in 0..=on_path.len() {
            if on_path[cur] {
                break;
            }
            on_path[cur] = true;
            let Some(p) = f.port(cur, lid) else { break };
            match f.next(cur, p) {
                Next::Switch(n) => cur = n,
                _ => break,
            }
        }
    }
}

fn channel(f: &Fabric<'_>, c: usize) -> Option<Channel> {
    let (s, port) = f.chan_parts(c)?;
    let Next::Switch(n) = *f.next.get(c)? else { return None };
    Some(Channel { switch: f.switch_guid(s), port, to: f.switch_guid(n) })
}

/// The check's credit-loop verdict for `f`.
pub(super) fn credit_loops(f: &Fabric<'_>, traffic: CdgTraffic) -> (CreditLoops, CdgStats) {
    ChannelDeps::build(f, traffic).credit_loops()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_sets_list_their_ports_in_order() {
        let mut s = [0; 4];
        for p in [255, 0, 64, 63, 130] {
            add(&mut s, p);
        }
        assert_eq!(ports(s).collect::<Vec<_>>(), vec![0, 63, 64, 130, 255]);
        assert_eq!(ports([0; 4]).count(), 0);
    }

    #[test]
    fn out_of_range_channels_have_no_dependencies() {
        let d = ChannelDeps::default();
        assert_eq!(d.depends_on(7).count(), 0);
        assert!(!d.depends(0, 1));
        assert_eq!(d.credit_loops().0, CreditLoops::None);
        assert_eq!(d.scc_analysis().0, CreditLoops::None);
        assert!(!d.self_dependent(3));
        assert_eq!(d.first_cycle_dfs(), None);
    }
}

//! The validated, index-friendly form of a [`FabricView`] shared by the engines in this crate
//! (`updn`, `ftree`) and by the `check` analysis.
//!
//! Owns: the switch-to-switch adjacency in compressed form (per switch, its `(port, neighbour)`
//! links in port order), the list of routable destinations (end-port LID ranges and where they
//! attach), the LID owner map, and breadth-first distances. Guarantees: building it either
//! succeeds on a consistent view or returns the [`RoutingError`] that names the inconsistency; no
//! accessor panics afterwards. It holds no routing policy.

use std::collections::VecDeque;

use ibsm_mad::{Guid, Lid, PortNum};

use crate::{FabricView, NodeId, RoutingError};

/// Distance value for "not reachable".
pub(crate) const FAR: u32 = u32::MAX;

/// Switch adjacency in compressed sparse-row form.
#[derive(Debug, Clone, Default)]
pub(crate) struct SwitchGraph {
    /// `links[start[s]..start[s + 1]]` are switch `s`'s links.
    start: Vec<usize>,
    /// `(local port, neighbour switch, neighbour port)`, in local port order.
    links: Vec<(PortNum, usize, PortNum)>,
}

impl SwitchGraph {
    /// Number of switches.
    pub(crate) fn len(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    /// Switch `s`'s links to other switches, in port order.
    pub(crate) fn links(&self, s: usize) -> &[(PortNum, usize, PortNum)] {
        match (self.start.get(s), self.start.get(s + 1)) {
            (Some(&a), Some(&b)) => self.links.get(a..b).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// This graph less the links `gone` names (switch, local port); `marked[s]`: switch `s`
    /// may have such a link (the others are copied whole).
    pub(crate) fn without(&self, marked: &[bool], gone: impl Fn(usize, PortNum) -> bool) -> SwitchGraph {
        let mut out =
            SwitchGraph { start: Vec::with_capacity(self.start.len()), links: Vec::with_capacity(self.links.len()) };
        for s in 0..self.len() {
            out.start.push(out.links.len());
            let links = self.links(s);
            if marked.get(s).copied().unwrap_or(false) {
                out.links.extend(links.iter().filter(|l| !gone(s, l.0)));
            } else {
                out.links.extend_from_slice(links);
            }
        }
        out.start.push(out.links.len());
        out
    }

    /// Every link, switch by switch (`(switch, port, neighbour, its port)`), in order.
    #[cfg(test)]
    pub(crate) fn all_links(&self) -> Vec<(usize, PortNum, usize, PortNum)> {
        (0..self.len()).flat_map(|s| self.links(s).iter().map(move |l| (s, l.0, l.1, l.2))).collect()
    }

    /// Hop distances from the `sources` (distance 0) to every switch, into `dist`.
    pub(crate) fn bfs(&self, sources: &[usize], dist: &mut Vec<u32>, queue: &mut VecDeque<usize>) {
        dist.clear();
        dist.resize(self.len(), FAR);
        queue.clear();
        for &s in sources {
            if let Some(d) = dist.get_mut(s)
                && *d == FAR
            {
                *d = 0;
                queue.push_back(s);
            }
        }
        while let Some(s) = queue.pop_front() {
            let next = dist[s] + 1;
            for &(_, n, _) in self.links(s) {
                if dist[n] == FAR {
                    dist[n] = next;
                    queue.push_back(n);
                }
            }
        }
    }

    /// Connected components: a component number per switch, numbered from 0 in switch order.
    pub(crate) fn components(&self) -> (Vec<usize>, usize) {
        let mut comp = vec![usize::MAX; self.len()];
        let mut count = 0;
        let mut stack = Vec::new();
        for s in 0..self.len() {
            if comp[s] != usize::MAX {
                continue;
            }
            comp[s] = count;
            stack.push(s);
            while let Some(x) = stack.pop() {
                for &(_, n, _) in self.links(x) {
                    if comp[n] == usize::MAX {
                        comp[n] = count;
                        stack.push(n);
                    }
                }
            }
            count += 1;
        }
        (comp, count)
    }
}

/// Who owns a LID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    /// Nobody.
    None,
    /// A switch (its port 0), by switch index.
    Switch(usize),
    /// A CA port: CA index and port number.
    Port(usize, PortNum),
}

/// A routable end port: its LID range and the switch port it hangs off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dest {
    /// Base LID.
    pub base: u16,
    /// The switch that is, or is cabled to, the end port.
    pub attach: usize,
    /// Port of `attach` leading to the end port (0 for the switch itself).
    pub port: PortNum,
    /// The CA index for a CA port, `None` for a switch.
    pub ca: Option<usize>,
}

/// A validated view: adjacency and destinations (LID ranges checked for overlaps).
#[derive(Debug, Clone)]
pub(crate) struct Indexed {
    /// Switch-to-switch links.
    pub graph: SwitchGraph,
    /// Switch LIDs first (switch order), then CA ports (CA order, port order).
    pub dests: Vec<Dest>,
    /// CA ports cabled to a switch, per switch.
    pub hosts_at: Vec<u32>,
    /// LIDs per end port.
    pub per_port: u16,
    /// Highest LID owned.
    pub top: u16,
}

impl Indexed {
    /// Validates `view` and indexes it.
    pub(crate) fn new(view: &FabricView) -> Result<Indexed, RoutingError> {
        let per_port = view.lids_per_port();
        let top = view.max_lid();
        let mut start = Vec::with_capacity(view.switches.len() + 1);
        let mut links = Vec::new();
        let mut hosts_at = vec![0u32; view.switches.len()];
        for sw in &view.switches {
            start.push(links.len());
            for (p, nb) in sw.ports.iter().enumerate() {
                let Some(nb) = nb else { continue };
                let port = PortNum(u8::try_from(p).unwrap_or(u8::MAX));
                let exists = match nb.node {
                    NodeId::Switch(i) => i < view.switches.len(),
                    NodeId::Ca(i) => i < view.cas.len(),
                };
                if !exists || p == 0 {
                    return Err(RoutingError::DanglingNeighbor { guid: sw.guid, port, node: nb.node });
                }
                if let NodeId::Switch(i) = nb.node {
                    links.push((port, i, nb.port));
                }
            }
        }
        start.push(links.len());
        let graph = SwitchGraph { start, links };

        let mut owner = vec![Owner::None; usize::from(top) + 1];
        let guid_of = |o: Owner| match o {
            Owner::Switch(s) => view.switches.get(s).map(|s| s.guid).unwrap_or_default(),
            Owner::Port(c, _) => view.cas.get(c).map(|c| c.guid).unwrap_or_default(),
            Owner::None => Guid::default(),
        };
        let claim = |owner: &mut Vec<Owner>, base: Lid, who: Owner| -> Result<(), RoutingError> {
            for k in 0..per_port {
                let lid = base.0.saturating_add(k);
                if let Some(slot) = owner.get_mut(usize::from(lid)) {
                    if *slot != Owner::None {
                        let (first, second) = (guid_of(*slot), guid_of(who));
                        return Err(RoutingError::DuplicateLid { lid: Lid(lid), first, second });
                    }
                    *slot = who;
                }
            }
            Ok(())
        };
        let mut dests = Vec::new();
        for (i, sw) in view.switches.iter().enumerate() {
            if sw.lid.is_unicast() {
                claim(&mut owner, sw.lid, Owner::Switch(i))?;
                dests.push(Dest { base: sw.lid.0, attach: i, port: PortNum(0), ca: None });
            }
        }
        for (c, ca) in view.cas.iter().enumerate() {
            for p in &ca.ports {
                if !p.lid.is_unicast() {
                    continue;
                }
                claim(&mut owner, p.lid, Owner::Port(c, p.num))?;
                if let Some(nb) = p.neighbor
                    && let NodeId::Switch(s) = nb.node
                    && s < view.switches.len()
                {
                    // The switch must agree that this port is cabled to this CA.
                    let back = view.switches[s].ports.get(usize::from(nb.port.0)).copied().flatten();
                    if back.is_some_and(|b| b.node == NodeId::Ca(c)) {
                        hosts_at[s] += 1;
                        dests.push(Dest { base: p.lid.0, attach: s, port: nb.port, ca: Some(c) });
                    }
                }
            }
        }
        Ok(Indexed { graph, dests, hosts_at, per_port, top })
    }
}

/// Writes `port` for `lid` into `table` if the LID is inside it.
pub(crate) fn set(table: &mut crate::Lft, lid: u16, port: PortNum) {
    if let Some(e) = table.entries_mut().get_mut(usize::from(lid)) {
        *e = port;
    }
}

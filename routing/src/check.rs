//! `routes check`: what a set of forwarding tables does to a fabric, measured by walking them.
//!
//! Owns the analysis and its [`CheckReport`]; it is both the operator's `ibsm routes check` and the
//! oracle of this crate's tests. Given a [`FabricView`] and the [`Routes`] for it (from an engine
//! or read back from live switches), it reports:
//!
//! * reachability: every (source CA port, destination LID) pair, CA to CA, is followed hop by hop
//!   through the tables; a pair is reachable, a black hole (unrouted entry, a port with no cable,
//!   delivery to the wrong node) or a loop. Switch-to-LID routes (from every switch to every LID)
//!   are counted too.
//! * hop counts against the shortest path through the switch graph.
//! * the edge forwarding index: the number of CA-to-CA routes over each directed switch-to-switch
//!   link (max and mean over all such links, and each link's figure).
//! * the shift permutations `host i -> host (i + s) mod N` for every `s` in `1..N`, hosts being the
//!   CA ports cabled to a switch in view order (CA order, then port order), base LIDs only: the
//!   worst number of flows on one switch egress link.
//! * credit loops: the strongly connected components of the channel dependency graph
//!   ([`ChannelDeps`], built from the routes [`CdgTraffic`] selects, searched with petgraph),
//!   how many are cyclic and how many channels they hold ([`CdgStats`]), with one example cycle;
//!   when the data-plane graph has one, whether the traffic between CAs alone has one too
//!   ([`CheckReport::credit_loops_between_cas`], [`CheckReport::is_sound`]).
//! * credit loops per virtual lane ([`credit_loops_per_vl`]): one dependency graph per VL, each
//!   pair's path counted on the VL its SL maps to (for engines that layer paths, `dfsssp`), and
//!   with [`credit_loops_per_vl_with_replies`] each CA pair's way back on that VL too (an RC
//!   responder's replies on the SL of the requester's path).
//! * connectivity: the connected components of the cabling ([`crate::components`]).
//!
//! Guarantees: never panics, whatever the view and tables (tables may be missing, short, point at
//! ports with no cable, or loop). It changes nothing and has no I/O.

mod cdg;
mod dfs;
mod loops;
mod report;
mod scc;
mod vl;
mod walk;

use ibsm_mad::{Guid, Lid, PortNum};

use crate::graph::Owner;
use crate::{FabricView, NodeId, Routes};

pub use cdg::ChannelDeps;
pub(crate) use cdg::{PortSet, ports as set_ports};
pub use report::{CdgStats, Channel, ChannelLoad, CreditLoops, Failure, FailureKind, HopStats, LinkLoad, ShiftStats};
pub use vl::{VlLoops, credit_loops_per_vl, credit_loops_per_vl_with_replies};

use crate::components::ComponentSize;

/// What to compute besides reachability, hops and the edge forwarding index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckOptions {
    /// Walk every shift permutation (cost: hosts² path walks).
    pub shifts: bool,
    /// Build the channel dependency graph and look for a cycle.
    pub credit_loops: bool,
    /// Whose traffic the channel dependency graph is built from.
    pub cdg_traffic: CdgTraffic,
    /// How many failing pairs to keep as examples.
    pub max_examples: usize,
}

/// Which routes count when building the channel dependency graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CdgTraffic {
    /// The traffic that is flow-controlled in a real fabric: every route towards a CA port (CA
    /// to CA, and switch agents answering CAs) plus the routes from CA-attached switches towards
    /// switch LIDs (CAs querying switches). Switch-to-switch routes are left out: only VL15
    /// SMPs, which have no credits, travel between switch management ports.
    #[default]
    DataPlane,
    /// Every switch's route to every LID (switches originate management traffic too).
    All,
    /// Only the routes packets from CA ports to CA ports take: the data plane. (Switch-sourced
    /// and switch-bound management traffic left out.)
    CaToCa,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions { shifts: true, credit_loops: true, cdg_traffic: CdgTraffic::DataPlane, max_examples: 10 }
    }
}

/// The result of [`check`]: plain data, printed as a table by its `Display`.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckReport {
    /// Switches in the view.
    pub switches: usize,
    /// CA ports with a LID cabled to a switch (the hosts of the shift permutations).
    pub hosts: usize,
    /// The view's LMC.
    pub lmc: u8,
    /// CA-to-CA pairs checked (source port × destination LID, own port excluded).
    pub pairs: u64,
    /// Pairs whose walk reached the destination.
    pub reachable: u64,
    /// Pairs that ended in a black hole (unrouted, dead port, wrong node).
    pub black_holes: u64,
    /// Pairs caught in a forwarding loop.
    pub loops: u64,
    /// Switch-to-LID routes checked (every switch to every LID it does not own).
    pub switch_pairs: u64,
    /// Of those, how many reach their LID.
    pub switch_reachable: u64,
    /// CA-to-switch routes checked (every CA port to every switch LID): the SM's LID-routed path
    /// to each switch, among others.
    pub ca_to_switch_pairs: u64,
    /// Of those, how many reach their switch.
    pub ca_to_switch_reachable: u64,
    /// The first failing pairs (CA to CA first, then switch to LID), at most
    /// [`CheckOptions::max_examples`].
    pub failures: Vec<Failure>,
    /// Hop counts of the reachable CA-to-CA pairs.
    pub hops: HopStats,
    /// Edge forwarding index over directed switch-to-switch links.
    pub forwarding_index: LinkLoad,
    /// The routes on each directed switch-to-switch link, the figures `forwarding_index`
    /// summarises, in view order (switch, then egress port).
    pub link_loads: Vec<ChannelLoad>,
    /// Shift permutations, if computed.
    pub shifts: Option<ShiftStats>,
    /// Credit loops, if computed.
    pub credit_loops: CreditLoops,
    /// When the data-plane graph ([`CdgTraffic::DataPlane`]) has a loop: the verdict for the
    /// traffic between CAs alone ([`CdgTraffic::CaToCa`]). [`CreditLoops::None`] there means every
    /// loop needs the management traffic of switches (requests to their management ports and
    /// their answers): see [`CheckReport::is_sound`]. Otherwise [`CreditLoops::NotChecked`].
    pub credit_loops_between_cas: CreditLoops,
    /// Figures of the channel dependency graph, if credit loops were computed.
    pub cdg: Option<CdgStats>,
    /// Connected components of the cabling (switches and CAs as nodes): 1 for a connected
    /// fabric, 0 for an empty one.
    pub components: usize,
    /// Size of each component, in order of its first node (switches first, in view order).
    pub component_sizes: Vec<ComponentSize>,
}

impl CheckReport {
    /// Every CA pair and every switch-to-LID route reachable, and no credit loop found.
    pub fn is_clean(&self) -> bool {
        self.is_reachable() && !matches!(self.credit_loops, CreditLoops::Found(_))
    }

    /// Every CA pair and every switch-to-LID route reachable, and no credit loop in the traffic
    /// between CAs: the data plane's loops, if any, all need the management traffic of switches.
    ///
    /// That is what a fat tree routed with one VL can promise once it is degraded: a switch cut
    /// off from part of the tree (a spine that lost its cable into a pod, and the spines and
    /// aggregation switches of its column with it) can only reach that part, and be reached from
    /// it, down and then up again; and routes that keep the CAs' traffic up-then-down cannot also
    /// keep both directions of those valleys out of every cycle. Such a loop can stall only while
    /// management packets (performance or vendor MADs to or from those switches; SMPs use VL15,
    /// which has no credits) sit at the head of full queues all around it, and the switches'
    /// head-of-queue lifetime discards them. `updn` routes the same fabric with none at all.
    pub fn is_sound(&self) -> bool {
        self.is_reachable()
            && match self.credit_loops {
                CreditLoops::Found(_) => self.credit_loops_between_cas == CreditLoops::None,
                _ => true,
            }
    }

    /// Every CA pair and every switch-to-LID route reachable.
    fn is_reachable(&self) -> bool {
        self.reachable == self.pairs && self.switch_reachable == self.switch_pairs
    }

    /// The data plane has credit loops and every one of them needs switch management traffic.
    pub fn loops_need_management_traffic(&self) -> bool {
        matches!(self.credit_loops, CreditLoops::Found(_)) && self.credit_loops_between_cas == CreditLoops::None
    }
}

/// Checks `routes` on `view` with the default options.
pub fn check(view: &FabricView, routes: &Routes) -> CheckReport {
    check_with(view, routes, &CheckOptions::default())
}

/// Checks `routes` on `view`.
pub fn check_with(view: &FabricView, routes: &Routes, opts: &CheckOptions) -> CheckReport {
    let fabric = Fabric::new(view, routes);
    let mut report = walk::walk_all(&fabric, opts);
    if opts.shifts {
        report.shifts = Some(walk::shifts(&fabric));
    }
    if opts.credit_loops {
        let (loops, stats) = cdg::credit_loops(&fabric, opts.cdg_traffic);
        if opts.cdg_traffic == CdgTraffic::DataPlane && matches!(loops, CreditLoops::Found(_)) {
            report.credit_loops_between_cas = cdg::credit_loops(&fabric, CdgTraffic::CaToCa).0;
        }
        report.credit_loops = loops;
        report.cdg = Some(stats);
    }
    let components = crate::components::components(view);
    report.components = components.count();
    report.component_sizes = components.sizes;
    report
}

/// Where a switch port leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// No cable (or port 0, or beyond the switch).
    Dead,
    /// Another switch.
    Switch(usize),
    /// A CA port.
    Port(usize, PortNum),
}

/// A host: a CA port with a LID, cabled to a switch.
#[derive(Debug, Clone, Copy)]
struct Host {
    guid: Guid,
    num: PortNum,
    lid: Lid,
    attach: usize,
}

/// The view and tables, resolved for fast walking without trusting either.
struct Fabric<'a> {
    view: &'a FabricView,
    routes: &'a Routes,
    /// `next[chan_start[s] + p]`: where port `p` of switch `s` leads.
    next: Vec<Next>,
    /// First channel index of each switch; one channel per port number `0..ports.len()`.
    chan_start: Vec<usize>,
    owner: Vec<Owner>,
    hosts: Vec<Host>,
    per_port: u16,
}

impl<'a> Fabric<'a> {
    fn new(view: &'a FabricView, routes: &'a Routes) -> Fabric<'a> {
        let mut chan_start = Vec::with_capacity(view.switches.len() + 1);
        let mut next = Vec::new();
        for sw in &view.switches {
            chan_start.push(next.len());
            for (p, nb) in sw.ports.iter().enumerate() {
                let n = match nb {
                    Some(nb) if p != 0 => match nb.node {
                        NodeId::Switch(i) if i < view.switches.len() => Next::Switch(i),
                        NodeId::Ca(c) if c < view.cas.len() => Next::Port(c, nb.port),
                        _ => Next::Dead,
                    },
                    _ => Next::Dead,
                };
                next.push(n);
            }
        }
        chan_start.push(next.len());
        let per_port = view.lids_per_port();
        let top = usize::from(view.max_lid());
        let mut owner = vec![Owner::None; top + 1];
        for (i, sw) in view.switches.iter().enumerate() {
            claim(&mut owner, sw.lid, per_port, Owner::Switch(i));
        }
        let mut hosts = Vec::new();
        for (c, ca) in view.cas.iter().enumerate() {
            for p in &ca.ports {
                claim(&mut owner, p.lid, per_port, Owner::Port(c, p.num));
                if !p.lid.is_unicast() {
                    continue;
                }
                if let Some(nb) = p.neighbor
                    && let NodeId::Switch(s) = nb.node
                    && s < view.switches.len()
                {
                    hosts.push(Host { guid: ca.guid, num: p.num, lid: p.lid, attach: s });
                }
            }
        }
        Fabric { view, routes, next, chan_start, owner, hosts, per_port }
    }

    fn switches(&self) -> usize {
        self.view.switches.len()
    }

    /// The egress port of switch `s` for `lid`, if routed.
    fn port(&self, s: usize, lid: u16) -> Option<PortNum> {
        self.routes.tables.get(s)?.port_for(Lid(lid))
    }

    /// Channel index of port `p` of switch `s`, if the switch has that port.
    fn chan(&self, s: usize, p: PortNum) -> Option<usize> {
        let start = *self.chan_start.get(s)?;
        let end = *self.chan_start.get(s + 1)?;
        let c = start + usize::from(p.0);
        (c < end).then_some(c)
    }

    /// Where port `p` of switch `s` leads.
    fn next(&self, s: usize, p: PortNum) -> Next {
        self.chan(s, p).and_then(|c| self.next.get(c).copied()).unwrap_or(Next::Dead)
    }

    fn owner(&self, lid: u16) -> Owner {
        self.owner.get(usize::from(lid)).copied().unwrap_or(Owner::None)
    }

    fn switch_guid(&self, s: usize) -> Guid {
        self.view.switches.get(s).map(|s| s.guid).unwrap_or_default()
    }

    /// The switch at the far end of channel `c`, with the channel's switch and port.
    fn chan_parts(&self, c: usize) -> Option<(usize, PortNum)> {
        let s = self.chan_start.partition_point(|&start| start <= c).checked_sub(1)?;
        let p = c.checked_sub(*self.chan_start.get(s)?)?;
        Some((s, PortNum(u8::try_from(p).ok()?)))
    }
}

/// Records the first owner of each LID of the range starting at `base` (later claims lose; the
/// engines report such overlaps, the check only has to stay consistent).
fn claim(owner: &mut [Owner], base: Lid, per_port: u16, who: Owner) {
    if !base.is_unicast() {
        return;
    }
    for k in 0..per_port {
        if let Some(slot) = owner.get_mut(usize::from(base.0.saturating_add(k)))
            && *slot == Owner::None
        {
            *slot = who;
        }
    }
}

#[cfg(test)]
mod tests;

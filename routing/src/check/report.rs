//! The parts of a [`CheckReport`] and its human table (`Display`).

use core::fmt;

use ibsm_mad::{Guid, Lid, PortNum};

use super::CheckReport;
use crate::components::ComponentSize;

/// A directed link out of a switch port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Channel {
    /// The switch the link leaves.
    pub switch: Guid,
    /// Its egress port.
    pub port: PortNum,
    /// The node at the far end.
    pub to: Guid,
}

impl fmt::Display for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}] -> {}", self.switch, self.port, self.to)
    }
}

/// How a walk failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// The switch has no entry for the LID.
    Unrouted,
    /// The entry names a port with no cable.
    DeadPort(PortNum),
    /// The entry delivers to a node that does not own the LID.
    Misdelivered(PortNum),
    /// The walk came back to a switch it had visited.
    Loop,
}

/// One failing route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// Source node GUID (a CA, or a switch for switch-to-LID routes).
    pub source: Guid,
    /// Source port (0 for a switch).
    pub source_port: PortNum,
    /// Destination LID.
    pub dlid: Lid,
    /// The switch where the walk failed.
    pub at: Guid,
    /// How.
    pub kind: FailureKind,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}] -> LID {}: ", self.source, self.source_port, self.dlid)?;
        match self.kind {
            FailureKind::Unrouted => write!(f, "no route at switch {}", self.at),
            FailureKind::DeadPort(p) => write!(f, "switch {} sends it to port {p}, which has no cable", self.at),
            FailureKind::Misdelivered(p) => {
                write!(f, "switch {} delivers it on port {p} to a node that does not own it", self.at)
            }
            FailureKind::Loop => write!(f, "forwarding loop through switch {}", self.at),
        }
    }
}

/// Hop counts of the reachable CA-to-CA pairs (links traversed, CA links included).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct HopStats {
    /// Longest route.
    pub max: u32,
    /// Mean route length.
    pub mean: f64,
    /// Mean shortest possible length over the same pairs.
    pub shortest_mean: f64,
    /// Pairs routed over more hops than the shortest path.
    pub non_minimal: u64,
    /// The largest excess over the shortest path.
    pub max_extra: u32,
}

/// Routes per directed switch-to-switch link.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LinkLoad {
    /// Directed switch-to-switch links.
    pub links: usize,
    /// The most routes on one link.
    pub max: u64,
    /// Mean routes per link.
    pub mean: f64,
    /// The link carrying `max` (the first one found).
    pub worst: Option<Channel>,
}

/// The CA-to-CA routes over one directed switch-to-switch link: one entry of the edge
/// forwarding index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelLoad {
    /// The link.
    pub channel: Channel,
    /// CA-to-CA routes over it.
    pub routes: u64,
}

/// Worst link load over the shift permutations.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ShiftStats {
    /// Shifts walked (`hosts - 1`).
    pub shifts: usize,
    /// The most flows one switch egress link carries in any shift (1 = contention-free).
    pub worst: u32,
    /// A shift that reaches `worst` (the smallest such `s`).
    pub worst_shift: usize,
    /// Mean over shifts of each shift's most loaded link.
    pub mean_worst: f64,
    /// Shifts in which some link carries more than one flow.
    pub contended_shifts: usize,
}

/// The credit-loop verdict.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CreditLoops {
    /// Not computed.
    #[default]
    NotChecked,
    /// The channel dependency graph is acyclic.
    None,
    /// A cycle, as the channels in dependency order (the last depends back on the first).
    Found(Vec<Channel>),
}

/// Figures of the channel dependency graph, from its strongly connected components.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CdgStats {
    /// Channels (directed switch-to-switch links), the graph's nodes.
    pub channels: usize,
    /// Dependencies between channels, the graph's edges.
    pub dependencies: usize,
    /// Strongly connected components that contain a cycle: independent credit loops.
    pub cyclic_components: usize,
    /// Channels in those components: every one of them lies on some credit loop.
    pub cyclic_channels: usize,
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 { 100.0 } else { part as f64 * 100.0 / whole as f64 }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "fabric              {} switches, {} CA ports, LMC {}", self.switches, self.hosts, self.lmc)?;
        write_components(f, &self.component_sizes)?;
        writeln!(
            f,
            "CA-to-CA routes     {} checked, {} reachable ({:.2}%), {} black holes, {} loops",
            self.pairs,
            self.reachable,
            pct(self.reachable, self.pairs),
            self.black_holes,
            self.loops
        )?;
        writeln!(
            f,
            "switch-to-LID       {} checked, {} reachable ({:.2}%)",
            self.switch_pairs,
            self.switch_reachable,
            pct(self.switch_reachable, self.switch_pairs)
        )?;
        writeln!(
            f,
            "CA-to-switch        {} checked, {} reachable ({:.2}%)",
            self.ca_to_switch_pairs,
            self.ca_to_switch_reachable,
            pct(self.ca_to_switch_reachable, self.ca_to_switch_pairs)
        )?;
        let h = &self.hops;
        writeln!(
            f,
            "hops                max {}, mean {:.3} (shortest possible {:.3}), {} non-minimal (max +{})",
            h.max, h.mean, h.shortest_mean, h.non_minimal, h.max_extra
        )?;
        let e = &self.forwarding_index;
        write!(f, "forwarding index    max {}, mean {:.2} over {} directed switch links", e.max, e.mean, e.links)?;
        if let Some(w) = e.worst {
            write!(f, " (worst {w})")?;
        }
        writeln!(f)?;
        match &self.shifts {
            Some(s) => writeln!(
                f,
                "shift permutations  worst link load {} (shift {}), mean worst {:.2}, {} of {} shifts contended",
                s.worst, s.worst_shift, s.mean_worst, s.contended_shifts, s.shifts
            )?,
            None => writeln!(f, "shift permutations  not computed")?,
        }
        match &self.credit_loops {
            CreditLoops::NotChecked => writeln!(f, "credit loops        not computed")?,
            CreditLoops::None => {
                write!(f, "credit loops        none")?;
                if let Some(g) = &self.cdg {
                    write!(f, " ({} channels, {} dependencies)", g.channels, g.dependencies)?;
                }
                writeln!(f)?;
            }
            CreditLoops::Found(cycle) => {
                if self.loops_need_management_traffic() {
                    write!(f, "credit loops        none between CAs; in switch management traffic only: FOUND")?;
                } else {
                    write!(f, "credit loops        FOUND")?;
                }
                if let Some(g) = &self.cdg {
                    write!(
                        f,
                        " in {} cyclic component(s) holding {} of {} channels",
                        g.cyclic_components, g.cyclic_channels, g.channels
                    )?;
                }
                writeln!(f, ", a cycle of {} channels:", cycle.len())?;
                for c in cycle {
                    writeln!(f, "                    {c}")?;
                }
                if self.loops_need_management_traffic() {
                    writeln!(
                        f,
                        "note                every loop needs packets to or from switches cut off from part of"
                    )?;
                    writeln!(
                        f,
                        "                    the tree (routed down then up); the switches' head-of-queue lifetime"
                    )?;
                    writeln!(
                        f,
                        "                    ends a stall, and `--engine updn` routes this fabric without any"
                    )?;
                }
            }
        }
        if !self.failures.is_empty() {
            writeln!(f, "failures (first {}):", self.failures.len())?;
            for x in &self.failures {
                writeln!(f, "  {x}")?;
            }
        }
        Ok(())
    }
}

/// The "components" line: the count, then the sizes of the first few.
fn write_components(f: &mut fmt::Formatter<'_>, sizes: &[ComponentSize]) -> fmt::Result {
    const SHOWN: usize = 4;
    write!(f, "components          {}", sizes.len())?;
    if sizes.len() > 1 {
        let list: Vec<String> =
            sizes.iter().take(SHOWN).map(|c| format!("{} switches + {} CAs", c.switches, c.cas)).collect();
        write!(f, " ({}{})", list.join(", "), if sizes.len() > SHOWN { ", ..." } else { "" })?;
    }
    writeln!(f)
}

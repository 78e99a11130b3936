//! The cabling half of [`Checks`]. The expected cabling (`expected-topology`), checked at
//! every sweep: after discovery the
//! fabric found is compared with the plan ([`ibsm_topology::diff`]: nodes missing or extra,
//! cables missing, extra or miscabled); a quick sweep adds the planned cables it saw go down.
//! The differences are reported when they change ([`SmEvent::Cabling`]) and shown in the
//! status. With `refuse-miscabled`, both ends of a miscabled cable are taken out of the model
//! before anything is programmed: neither end is armed or activated, and no route crosses it
//! (as OPA-FM's pre-defined topology check does; OpenSM has nothing like it).
//!
//! A loopback cable (a switch cabled to itself on two ports, `sw0[2]-sw0[3]`) is taken out of
//! the model the same way at every sweep, with or without a plan, and reported as a difference
//! (`loopback cable "sw0"[2] - "sw0"[3]`) with its two ports among the refused ones; the `.net`
//! reader refuses such a cable outright, as it refuses a port cabled to itself.

use std::collections::{BTreeSet, HashMap};

use ibsm_mad::attrs::NodeType;
use ibsm_mad::{Guid, PortNum};
use ibsm_topology::diff::End;
use ibsm_topology::{Difference, NodeKind, Peer, TopoDiff, TopoNode, Topology};

use super::Checks;
use crate::core::events::SmEvent;
use crate::core::state::{NodeIdx, Subnet};

/// What the last check found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cabling {
    /// The differences from the plan (empty without a plan).
    pub diff: TopoDiff,
    /// Ports left out, by node GUID and port: the ends of loopback cables, and with
    /// `refuse-miscabled` the ends of miscabled cables.
    pub refused: BTreeSet<(Guid, u8)>,
}

/// The fabric of `subnet` as a [`Topology`]: nodes by GUID and their linked cables.
pub fn subnet_topology(subnet: &Subnet) -> Topology {
    let mut t = Topology::default();
    for n in &subnet.nodes {
        let kind = match n.info.node_type {
            NodeType::Switch => NodeKind::Switch,
            NodeType::Router => NodeKind::Router,
            _ => NodeKind::Ca,
        };
        let mut node = TopoNode::new(kind, n.desc.clone(), n.info.num_ports, n.info.node_guid);
        for (p, rec) in n.ports.iter().enumerate().skip(1) {
            if let (Some((rn, rp)), true, Some(slot)) = (rec.remote, rec.is_linked(), node.links.get_mut(p)) {
                *slot = Some(Peer { node: rn, port: rp.0, attrs: ibsm_topology::LinkAttrs::default() });
            }
        }
        t.nodes.push(node);
    }
    t
}

impl Checks {
    /// After discovery: takes loopback cables (a node cabled to itself on two ports) out of
    /// the model, compares the fabric with `plan`, and with `refuse_miscabled` takes the
    /// miscabled cables out of the model. Returns the event to report when the outcome changed.
    pub fn check_cabling(
        &mut self,
        subnet: &mut Subnet,
        plan: Option<&Topology>,
        refuse_miscabled: bool,
    ) -> Option<SmEvent> {
        let loops = loopback_ends(subnet);
        if plan.is_none() && loops.is_empty() {
            let had_loops = self.cabling.diff.differences.iter().any(|d| matches!(d, Difference::Loopback { .. }));
            if had_loops {
                return self.report_cabling(Cabling::default());
            }
            self.cabling = Cabling::default();
            return None;
        }
        let found = subnet_topology(subnet);
        // Without a plan the fabric is its own: the loopbacks are the only differences.
        let diff = ibsm_topology::diff(plan.unwrap_or(&found), &found, false);
        let mut ends: Vec<(Guid, u8)> = loops;
        if refuse_miscabled {
            for d in &diff.differences {
                if let Difference::Miscabled { at, found: Some(f), .. } = d {
                    ends.extend([*at, *f]);
                }
            }
        }
        let index: HashMap<Guid, NodeIdx> =
            subnet.nodes.iter().enumerate().map(|(i, n)| (n.info.node_guid, i)).collect();
        let mut refused = BTreeSet::new();
        for (guid, port) in ends {
            if let Some(r) =
                index.get(&guid).and_then(|&i| subnet.nodes.get_mut(i)).and_then(|n| n.port_mut(PortNum(port)))
            {
                r.remote = None;
                refused.insert((guid, port));
            }
        }
        self.report_cabling(Cabling { diff, refused })
    }

    /// A quick sweep saw these cables go down: the planned ones among them are missing now.
    /// Returns the event to report when that changed the outcome.
    pub fn cabling_lost(&mut self, plan: Option<&Topology>, cables: &[(End, End)]) -> Option<SmEvent> {
        let plan = plan?;
        let planned: BTreeSet<(End, End)> = plan
            .nodes
            .iter()
            .flat_map(|n| {
                (1..=n.num_ports).filter_map(|p| {
                    let peer = n.peer(p)?;
                    Some(((n.node_guid, p), (plan.nodes.get(peer.node)?.node_guid, peer.port)))
                })
            })
            .filter(|&(a, b)| cables.iter().any(|&(x, y)| (x, y) == (a, b) || (y, x) == (a, b)))
            .collect();
        if planned.is_empty() {
            return None;
        }
        let mut next = self.cabling.clone();
        for (a, b) in planned {
            next.diff.differences.push(Difference::MissingLink { a: a.min(b), b: a.max(b) });
        }
        next.diff.differences.sort();
        next.diff.differences.dedup();
        self.report_cabling(next)
    }

    /// Keeps `next`; the event when it differs from what was reported last.
    fn report_cabling(&mut self, next: Cabling) -> Option<SmEvent> {
        let changed = next.diff.differences != self.cabling.diff.differences || next.refused != self.cabling.refused;
        let event = changed.then(|| SmEvent::Cabling { differences: next.diff.lines(), refused: next.refused.len() });
        self.cabling = next;
        event
    }
}

/// Both ends of every loopback cable discovered: (node GUID, port) of a port whose remote
/// is another port of its own node. Such a cable joins a switch to itself (or a CA's two
/// ports): no route can use it, and the ports are left unarmed.
fn loopback_ends(subnet: &Subnet) -> Vec<(Guid, u8)> {
    let mut out = Vec::new();
    for (i, n) in subnet.nodes.iter().enumerate() {
        for (p, rec) in n.ports.iter().enumerate().skip(1) {
            if let (Some((rn, rp)), true, Ok(p)) = (rec.remote, rec.is_linked(), u8::try_from(p))
                && rn == i
                && rp.0 != p
            {
                out.push((n.info.node_guid, p));
            }
        }
    }
    out
}

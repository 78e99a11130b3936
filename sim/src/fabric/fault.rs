//! Fault vocabulary: what can go wrong in the fabric, and per-link packet rules.
//!
//! A [`Fault`] changes the fabric (a cable pulled, a node crashed); a [`LinkRule`] is consulted
//! for every packet crossing a cable and returns a verdict: pass, pass later, or drop; a
//! [`SetFault`] makes a node's SMA refuse Sets of one attribute; an [`ErrorRate`] makes a cable's
//! ports count errors, as a bad cable does. All are deterministic given the fabric's seed.

use ibsm_mad::Guid;

use super::counters::ErrorRate;
use super::state::NodeRef;

/// A change to the fabric, applied now or at a scheduled virtual time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    /// Pull the cable at `node`/`port` (both ends go Down/Polling).
    LinkDown {
        /// Node index.
        node: NodeRef,
        /// Port number.
        port: u8,
    },
    /// Plug the cable back (both ends go Init/LinkUp).
    LinkUp {
        /// Node index.
        node: NodeRef,
        /// Port number.
        port: u8,
    },
    /// The node stops answering and all its links go down.
    Crash(NodeRef),
    /// The node comes back at power-on state (no LIDs, empty tables) and its links retrain.
    Restart(NodeRef),
    /// Change a node's GUID (and its port GUIDs accordingly), e.g. to create a duplicate.
    SetGuid {
        /// Node index.
        node: NodeRef,
        /// New NodeGUID.
        guid: Guid,
    },
    /// Add a packet rule.
    AddRule(LinkRule),
    /// Remove every packet rule.
    ClearRules,
    /// Make the SMA of a node refuse Sets of one attribute (see [`SetFault`]).
    FailSets(SetFault),
    /// Remove every [`SetFault`].
    ClearSetFaults,
    /// Give the cable at `node`/`port` an error rate (see [`ErrorRate`]); a zero rate ends it.
    LinkErrors {
        /// Node index (either end of the cable).
        node: NodeRef,
        /// Port number.
        port: u8,
        /// The rate.
        rate: ErrorRate,
    },
}

/// Sets of one attribute that an SMA refuses, as a faulty switch or HCA firmware would: the
/// Set changes nothing and is answered with an error status, or not answered at all. Gets of
/// the attribute are answered as usual, so a read-back shows what the node really holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetFault {
    /// The node whose SMA refuses; `None` = every node.
    pub node: Option<NodeRef>,
    /// The attribute ID (`ids::attr::MFT`, `SWITCH_INFO`, `PKEY_TABLE`, ...).
    pub attr: u16,
    /// `Some(status)`: answered with this MAD status (e.g. 0x001c); `None`: dropped silently.
    pub status: Option<u16>,
}

/// A rule applied to packets crossing a cable: drop with a probability, or delay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkRule {
    /// The cable, named by one of its ends; `None` = every cable.
    pub link: Option<(NodeRef, u8)>,
    /// Probability of dropping a packet that crosses (0.0..=1.0).
    pub drop: f64,
    /// Fixed extra delay, ns.
    pub delay_ns: u64,
    /// Extra random delay, uniform in `0..=jitter_ns`, ns.
    pub jitter_ns: u64,
}

impl LinkRule {
    /// Drop `p` of all packets on every cable.
    pub fn global_drop(p: f64) -> LinkRule {
        LinkRule { link: None, drop: p, delay_ns: 0, jitter_ns: 0 }
    }
    /// Delay every packet on every cable by `ns` plus up to `jitter_ns`.
    pub fn global_delay(ns: u64, jitter_ns: u64) -> LinkRule {
        LinkRule { link: None, drop: 0.0, delay_ns: ns, jitter_ns }
    }
}

/// What a rule chain says about one packet on one cable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Pass { extra_ns: u64 },
    Drop,
}

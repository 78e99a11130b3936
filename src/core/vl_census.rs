//! The census of SL-to-VL and VL arbitration tables: reading every port's tables for the SA,
//! between sweeps, once someone asks for them.
//!
//! Owns when the tables are read and the SA requests waiting for them. Nothing is read until
//! the SA is first asked for an SLtoVLMappingTableRecord or VLArbitrationTableRecord: most
//! fabrics never are, and a switch holds a map per (input, output) pair (2,401 SMPs for a
//! 48-port switch). From then on, between sweeps, the nodes without tables are read, at most
//! [`WINDOW`] SMPs at a time under [`Op::Census`] (a sweep starting meanwhile is not held up by
//! them), one read of each of up to [`WINDOW`] nodes in turn (a node's agent serves one SMP at a
//! time), and each sweep's new nodes after it. Requests for the two records wait (at most
//! [`MAX_HELD`]) until every node of the subnet has been read, then are answered. A node that
//! leaves the subnet is forgotten and read again if it comes back. A read that fails leaves
//! that table out of the answers; it is not a sweep failure.
//!
//! The tables themselves live in the SA's state (`sa::vl_tables::VlTables`).

use std::collections::{HashMap, VecDeque};

use ibsm_mad::header::MadHeader;
use ibsm_mad::ids::sa_attr;
use ibsm_mad::{Guid, PortNum};

use super::Sm;
use super::io::MadSource;
use super::state::{SmState, SweepPhase};
use super::transactions::{Op, Outcome, Req, Request};
use crate::sa::vl_tables::VlRead;

/// Most census SMPs queued or in flight at once.
pub(super) const WINDOW: usize = 32;
/// Most SA requests waiting for the census.
pub(super) const MAX_HELD: usize = 64;

/// Where the census stands.
#[derive(Debug, Default)]
pub(super) struct Census {
    /// The SA was asked: read every node's tables and keep them current.
    wanted: bool,
    /// The pass (one per sweep); answers of earlier passes are stored but not counted.
    pass: u32,
    /// The next node (subnet index) of this pass.
    next: usize,
    /// The nodes being read (at most [`WINDOW`]), each with its reads not yet queued.
    active: VecDeque<VecDeque<Request>>,
    /// Reads of this pass not yet answered, per node.
    remaining: HashMap<Guid, usize>,
    /// Every node of the subnet has its tables.
    done: bool,
    /// SA requests waiting for the census.
    held: Vec<(Vec<u8>, MadSource)>,
    /// Table reads that failed.
    pub failed: u64,
}

impl Census {
    /// SA requests waiting.
    pub(super) fn held(&self) -> usize {
        self.held.len()
    }
}

/// Whether an SA request asks for the tables the census reads.
pub(super) fn wants_tables(h: &MadHeader) -> bool {
    matches!(h.attr_id, sa_attr::SL2VL_RECORD | sa_attr::VL_ARB_RECORD)
}

impl Sm {
    /// An SA request for the tables before the census is done: keep it (or drop it past
    /// [`MAX_HELD`]; the client retries) and start the census. Returns false when the tables
    /// are all read and the request can be answered now.
    pub(super) fn hold_for_census(&mut self, bytes: &[u8], src: &MadSource) -> bool {
        if self.census.done {
            return false;
        }
        if self.census.held.len() < MAX_HELD {
            self.census.held.push((bytes.to_vec(), *src));
        } else {
            self.counters.sa_dropped += 1;
        }
        if !self.census.wanted {
            self.census.wanted = true;
            self.census.pass += 1;
        }
        self.census_pump();
        true
    }

    /// A sweep ended: forget the nodes that left and those whose reads were cut short, and read
    /// the new ones.
    pub(super) fn census_after_sweep(&mut self) {
        let unfinished = std::mem::take(&mut self.census.remaining);
        let present = &self.subnet.by_guid;
        self.sa_state.vl.retain(|g| present.contains_key(&g) && !unfinished.contains_key(&g));
        if !self.census.wanted {
            return;
        }
        self.census.pass += 1;
        self.census.next = 0;
        self.census.active.clear();
        self.census.done = false;
        self.census_pump();
    }

    /// Queues the next reads, as the window allows; answers the waiting requests when every
    /// node has been read.
    pub(super) fn census_pump(&mut self) {
        if !self.census.wanted || self.state != SmState::Master || self.phase != SweepPhase::Up || self.census.done {
            return;
        }
        while self.tx.outstanding_for(Op::Census) < WINDOW {
            if self.census.active.len() < WINDOW && self.census.next < self.subnet.nodes.len() {
                self.start_node_reads();
                continue;
            }
            // One read of each node in turn.
            let Some(mut reads) = self.census.active.pop_front() else { break };
            if let Some(r) = reads.pop_front() {
                self.tx.push(r);
            }
            if !reads.is_empty() {
                self.census.active.push_back(reads);
            }
        }
        let finished = self.census.next >= self.subnet.nodes.len()
            && self.census.active.is_empty()
            && self.tx.is_idle_for(Op::Census)
            && self.census.remaining.is_empty();
        if finished {
            self.census.done = true;
            for (bytes, src) in std::mem::take(&mut self.census.held) {
                if let Ok(h) = MadHeader::from_bytes(&bytes) {
                    self.answer_sa(&h, &bytes, &src);
                }
            }
        }
    }

    /// Starts the next node of the pass without tables: its entry and its list of reads.
    fn start_node_reads(&mut self) {
        let Some(n) = self.subnet.nodes.get(self.census.next) else { return };
        self.census.next += 1;
        let guid = n.info.node_guid;
        if self.sa_state.vl.has(guid) {
            return;
        }
        let switch = n.is_switch();
        let last = u8::try_from(n.ports.len().saturating_sub(1)).unwrap_or(u8::MAX);
        let ca_ports: Vec<u8> = if switch { Vec::new() } else { n.end_ports().map(|p| p.0).collect() };
        let caps = |p: u8| {
            let info = n.ports.get(usize::from(p)).and_then(|r| r.info)?;
            Some((info.vl_arbitration_low_cap, info.vl_arbitration_high_cap))
        };
        let reads = self.sa_state.vl.start(guid, (switch, last), &ca_ports, caps);
        if reads.is_empty() {
            return;
        }
        self.census.remaining.insert(guid, reads.len());
        let pass = self.census.pass;
        let list = reads
            .into_iter()
            .map(|(at, read)| {
                let req = Req::GetVlTable { node: guid, port: PortNum(at), switch, read, pass };
                Request { path: n.path_for(PortNum(at)), req, op: Op::Census }
            })
            .collect();
        self.census.active.push_back(list);
    }

    /// A table read ended.
    pub(super) fn on_vl_table(&mut self, node: Guid, read: VlRead, pass: u32, outcome: &Outcome) {
        match outcome {
            Outcome::Reply { status: 0, data } => self.sa_state.vl.store(node, read, data),
            _ => self.census.failed += 1,
        }
        if pass == self.census.pass {
            if let Some(r) = self.census.remaining.get_mut(&node) {
                *r = r.saturating_sub(1);
                if *r == 0 {
                    self.census.remaining.remove(&node);
                }
            }
        }
        self.census_pump();
    }
}

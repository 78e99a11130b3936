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
//! that table out of the answers; it is not a sweep failure. A table the SM writes (QoS) after
//! its node was read replaces what was read, from the Set's answer (`Sa::vl_written`).
//!
//! The tables themselves live in the SA's state (`sa::vl_tables::VlTables`), which [`Census`]
//! is handed (`&mut VlTables`, by [`super::Sa`], which owns both) with the subnet and the census
//! SMPs outstanding; it answers with values ([`Pump`]: the reads to queue and the held requests
//! to answer now) and touches nothing else. Whether the census may run (a master between
//! sweeps) is the coordinator's call.

use std::collections::{HashMap, VecDeque};

use ibsm_mad::header::MadHeader;
use ibsm_mad::ids::sa_attr;
use ibsm_mad::{Guid, PortNum};

use crate::core::io::MadSource;
use crate::core::state::Subnet;
use crate::core::transactions::{Op, Outcome, Req, Request};
use crate::sa::vl_tables::{VlRead, VlTables};

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
    failed: u64,
}

/// What a step of the census asks for.
#[derive(Debug, Default)]
pub(crate) struct Pump {
    /// Reads to queue.
    pub reads: Vec<Request>,
    /// SA requests held until now, to answer (the census is done).
    pub answer: Vec<(Vec<u8>, MadSource)>,
}

/// What becomes of an SA request for the tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// The tables are all read: answer it now.
    Answer,
    /// Kept until the census is done.
    Held,
    /// Past [`MAX_HELD`] waiting: dropped (the client retries).
    Dropped,
}

impl Census {
    /// SA requests waiting.
    pub(super) fn held(&self) -> usize {
        self.held.len()
    }

    /// Table reads that failed so far.
    #[cfg(test)]
    fn failed(&self) -> u64 {
        self.failed
    }

    /// An SA request for the tables: answered now once the census is done; otherwise kept (or
    /// dropped past [`MAX_HELD`]), and the census is wanted from now on.
    pub fn hold(&mut self, bytes: &[u8], src: &MadSource) -> Hold {
        if self.done {
            return Hold::Answer;
        }
        let hold = if self.held.len() < MAX_HELD {
            self.held.push((bytes.to_vec(), *src));
            Hold::Held
        } else {
            Hold::Dropped
        };
        if !self.wanted {
            self.wanted = true;
            self.pass += 1;
        }
        hold
    }

    /// A sweep ended with `subnet`: forget the nodes that left and those whose reads were cut
    /// short, and (when the census is wanted) start a pass for the new ones.
    pub fn after_sweep(&mut self, subnet: &Subnet, vl: &mut VlTables) {
        let unfinished = std::mem::take(&mut self.remaining);
        let present = &subnet.by_guid;
        vl.retain(|g| present.contains_key(&g) && !unfinished.contains_key(&g));
        if !self.wanted {
            return;
        }
        self.pass += 1;
        self.next = 0;
        self.active.clear();
        self.done = false;
    }

    /// The next reads, as the window allows (`outstanding` census SMPs are queued or in flight);
    /// the waiting requests to answer once every node has been read.
    pub(crate) fn pump(&mut self, subnet: &Subnet, vl: &mut VlTables, mut outstanding: usize) -> Pump {
        let mut out = Pump::default();
        if !self.wanted || self.done {
            return out;
        }
        while outstanding < WINDOW {
            if self.active.len() < WINDOW && self.next < subnet.nodes.len() {
                self.start_node_reads(subnet, vl);
                continue;
            }
            // One read of each node in turn.
            let Some(mut reads) = self.active.pop_front() else { break };
            if let Some(r) = reads.pop_front() {
                out.reads.push(r);
                outstanding += 1;
            }
            if !reads.is_empty() {
                self.active.push_back(reads);
            }
        }
        let finished =
            self.next >= subnet.nodes.len() && self.active.is_empty() && outstanding == 0 && self.remaining.is_empty();
        if finished {
            self.done = true;
            out.answer = std::mem::take(&mut self.held);
        }
        out
    }

    /// Starts the next node of the pass without tables: its entry and its list of reads.
    fn start_node_reads(&mut self, subnet: &Subnet, vl: &mut VlTables) {
        let Some(n) = subnet.nodes.get(self.next) else { return };
        self.next += 1;
        let guid = n.info.node_guid;
        if vl.has(guid) {
            return;
        }
        let switch = n.is_switch();
        let last = u8::try_from(n.ports.len().saturating_sub(1)).unwrap_or(u8::MAX);
        let ca_ports: Vec<u8> = if switch { Vec::new() } else { n.end_ports().map(|p| p.0).collect() };
        let caps = |p: u8| {
            let info = n.ports.get(usize::from(p)).and_then(|r| r.info)?;
            Some((info.vl_arbitration_low_cap, info.vl_arbitration_high_cap))
        };
        let reads = vl.start(guid, (switch, last), &ca_ports, caps);
        if reads.is_empty() {
            return;
        }
        self.remaining.insert(guid, reads.len());
        let pass = self.pass;
        let list = reads
            .into_iter()
            .map(|(at, read)| {
                let req = Req::GetVlTable { node: guid, port: PortNum(at), switch, read, pass };
                Request { path: n.path_for(PortNum(at)), req, op: Op::Census }
            })
            .collect();
        self.active.push_back(list);
    }

    /// A table read of pass `pass` ended: the table is stored (or counted as failed).
    pub(crate) fn on_read(&mut self, vl: &mut VlTables, node: Guid, read: VlRead, pass: u32, outcome: &Outcome) {
        match outcome {
            Outcome::Reply { status: 0, data } => vl.store(node, read, data),
            _ => self.failed += 1,
        }
        if pass == self.pass
            && let Some(r) = self.remaining.get_mut(&node)
        {
            *r = r.saturating_sub(1);
            if *r == 0 {
                self.remaining.remove(&node);
            }
        }
    }
}

/// Whether an SA request asks for the tables the census reads.
pub(super) fn wants_tables(h: &MadHeader) -> bool {
    matches!(h.attr_id, sa_attr::SL2VL_RECORD | sa_attr::VL_ARB_RECORD)
}

#[cfg(test)]
mod tests {
    use ibsm_mad::Lid;

    use super::*;
    use crate::core::testing::star;

    fn src() -> MadSource {
        MadSource { slid: Lid(9), sqpn: 1, pkey_index: 0, sl: 0, grh: None }
    }

    /// Answers every read the census asks for (`fail`: those of node `fail` fail), as a window
    /// would, until it answers its held requests; the reads asked for, and the answers.
    fn run(c: &mut Census, s: &Subnet, vl: &mut VlTables, fail: Guid) -> (usize, Vec<(Vec<u8>, MadSource)>) {
        let mut asked = 0;
        for _ in 0..100 {
            let pump = c.pump(s, vl, 0);
            assert!(pump.reads.len() <= WINDOW);
            if !pump.answer.is_empty() || pump.reads.is_empty() {
                return (asked, pump.answer);
            }
            asked += pump.reads.len();
            for r in pump.reads {
                let Req::GetVlTable { node, read, pass, .. } = r.req else { panic!("{r:?}") };
                let outcome = if node == fail { Outcome::Timeout } else { Outcome::Reply { status: 0, data: [0; 64] } };
                c.on_read(vl, node, read, pass, &outcome);
            }
        }
        panic!("the census never ended")
    }

    #[test]
    fn nothing_is_read_until_asked_then_every_node_once_and_the_requests_are_answered() {
        let s = star(0x102, 0x103);
        let mut vl = VlTables::default();
        let mut c = Census::default();
        assert!(c.pump(&s, &mut vl, 0).reads.is_empty(), "not asked: nothing read");
        assert_eq!(c.hold(b"first", &src()), Hold::Held);
        assert_eq!(c.hold(b"second", &src()), Hold::Held);
        assert_eq!(c.held(), 2);
        assert!(c.pump(&s, &mut vl, WINDOW).reads.is_empty(), "the window is full");
        let (asked, answer) = run(&mut c, &s, &mut vl, Guid(0x103));
        // The switch: 7x7 maps and two blocks of each of 7 ports; each CA: a map and two blocks.
        assert_eq!(asked, 49 + 14 + 3 * 3);
        assert_eq!(answer.iter().map(|(b, _)| b.as_slice()).collect::<Vec<_>>(), [&b"first"[..], b"second"]);
        assert_eq!(c.failed(), 3, "a failed read is counted, not retried");
        assert_eq!(c.hold(b"third", &src()), Hold::Answer, "done: answered at once");
        assert_eq!(vl.len(), 4);
    }

    #[test]
    fn after_a_sweep_only_new_nodes_are_read_and_the_held_requests_are_bounded() {
        let s = star(0x102, 0x103);
        let mut vl = VlTables::default();
        let mut c = Census::default();
        c.hold(b"x", &src());
        run(&mut c, &s, &mut vl, Guid(0));
        // The same fabric: nothing to read, done at once.
        c.after_sweep(&s, &mut vl);
        let pump = c.pump(&s, &mut vl, 0);
        assert!(pump.reads.is_empty() && pump.answer.is_empty());
        assert_eq!(c.hold(b"y", &src()), Hold::Answer);
        // One CA replaced by another: only the new one is read; the old one is forgotten.
        let mut t = star(0x102, 0x104);
        t.nodes[3].info.node_guid = Guid(0x104);
        t.by_guid = t.nodes.iter().enumerate().map(|(i, n)| (n.info.node_guid, i)).collect();
        c.after_sweep(&t, &mut vl);
        assert!(!vl.has(Guid(0x103)));
        for i in 0..MAX_HELD {
            assert_eq!(c.hold(&[0; 4], &src()), Hold::Held, "{i}");
        }
        assert_eq!(c.hold(&[0; 4], &src()), Hold::Dropped);
        let (asked, answer) = run(&mut c, &t, &mut vl, Guid(0));
        assert_eq!((asked, answer.len()), (3, MAX_HELD));
    }
}

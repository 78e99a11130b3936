//! The PM's own window of reads: a queue, at most `max_in_flight` reads waiting for their
//! answers (and at most [`PER_LID`] at one PMA, so that a sweep is spread over the nodes as the
//! SMPs are), the TIDs they went with, timeouts and retries. Apart from the SMP window of
//! `transactions`: a PM read never takes an SMP's place. TIDs are matched on their low 32 bits
//! (umad and ibsim put their agent's id in the high ones).

use std::collections::{HashMap, VecDeque};

use ibsm_mad::{Guid, Lid};

use crate::core::io::{Address, GSI_QKEY, Transmit, TransmitKind};

/// Reads in flight at one LID at most.
pub const PER_LID: usize = 2;
/// How far down the queue a send looks for a read whose PMA has room.
const SCAN: usize = 64;

/// One PM request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// Get(ClassPortInfo) of a node's PMA.
    ClassPortInfo {
        /// NodeGUID.
        node: Guid,
        /// Where its PMA answers.
        lid: Lid,
    },
    /// Get(PortCounters) of a port.
    Counters {
        /// NodeGUID.
        node: Guid,
        /// The port.
        port: u8,
        /// Where its PMA answers.
        lid: Lid,
    },
    /// Get(PortCountersExtended) of a port.
    Extended {
        /// NodeGUID.
        node: Guid,
        /// The port.
        port: u8,
        /// Where its PMA answers.
        lid: Lid,
    },
    /// Set(PortCounters) clearing the counters `select` names (bits by `Counter` index).
    Clear {
        /// NodeGUID.
        node: Guid,
        /// The port.
        port: u8,
        /// Where its PMA answers.
        lid: Lid,
        /// The counters to clear.
        select: u32,
    },
}

impl Read {
    /// The LID it goes to.
    pub fn lid(&self) -> Lid {
        match *self {
            Read::ClassPortInfo { lid, .. }
            | Read::Counters { lid, .. }
            | Read::Extended { lid, .. }
            | Read::Clear { lid, .. } => lid,
        }
    }
    /// The port it reads, if it reads one.
    pub fn port(&self) -> Option<(Guid, u8)> {
        match *self {
            Read::ClassPortInfo { .. } => None,
            Read::Counters { node, port, .. } | Read::Extended { node, port, .. } | Read::Clear { node, port, .. } => {
                Some((node, port))
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Flight {
    read: Read,
    due: u64,
    tries: u32,
}

/// The queue and the reads in flight.
#[derive(Debug, Default)]
pub struct Window {
    max: usize,
    timeout_ns: u64,
    retries: u32,
    queue: VecDeque<Read>,
    in_flight: HashMap<u32, Flight>,
    per_lid: HashMap<Lid, usize>,
    /// Reads timed out and to be sent again, first.
    again: VecDeque<(Read, u32)>,
    next_tid: u32,
}

impl Window {
    /// A window of `max` reads in flight, each waited for `timeout_ns` and sent `retries` more
    /// times.
    pub fn new(max: usize, timeout_ns: u64, retries: u32) -> Window {
        Window { max: max.max(1), timeout_ns, retries, ..Window::default() }
    }

    /// Queues a read last.
    pub fn push(&mut self, r: Read) {
        self.queue.push_back(r);
    }
    /// Queues a read first (a clear: the sooner it follows its reading, the less it can miss).
    pub fn push_front(&mut self, r: Read) {
        self.queue.push_front(r);
    }
    /// Drops everything queued and in flight (late answers are then ignored).
    pub fn clear(&mut self) {
        self.queue.clear();
        self.in_flight.clear();
        self.per_lid.clear();
        self.again.clear();
    }
    /// Reads in flight.
    pub fn len(&self) -> usize {
        self.in_flight.len()
    }
    /// Nothing queued or in flight.
    pub fn is_idle(&self) -> bool {
        self.queue.is_empty() && self.in_flight.is_empty() && self.again.is_empty()
    }

    /// The next request to send at `now`, if the window (and its PMA) has room.
    pub fn poll_transmit(&mut self, now: u64) -> Option<Transmit> {
        if self.in_flight.len() >= self.max {
            return None;
        }
        let (read, tries) = if let Some(a) = self.again.pop_front() {
            a
        } else {
            let room = |r: &Read| self.per_lid.get(&r.lid()).copied().unwrap_or(0) < PER_LID;
            let i = self.queue.iter().take(SCAN).position(room)?;
            (self.queue.remove(i)?, 0)
        };
        self.next_tid = self.next_tid.wrapping_add(1).max(1);
        let tid = self.next_tid;
        self.in_flight.insert(tid, Flight { read, due: now.saturating_add(self.timeout_ns), tries });
        *self.per_lid.entry(read.lid()).or_default() += 1;
        let to = Address { lid: read.lid(), qpn: 1, qkey: GSI_QKEY, pkey_index: 0, sl: 0, grh: None };
        let bytes = super::request(&read, u64::from(tid)).to_vec();
        Some(Transmit { bytes, to, kind: TransmitKind::Request { timeout_ns: self.timeout_ns } })
    }

    /// The read answered by a response with `tid`, taken out of the window.
    pub fn answered(&mut self, tid: u64) -> Option<Read> {
        #[allow(clippy::cast_possible_truncation)] // the low 32 bits are ours
        let f = self.in_flight.remove(&(tid as u32))?;
        self.left(f.read.lid());
        Some(f.read)
    }

    /// Reads whose answer is overdue at `now`: sent again, or given up after the retries.
    /// Returns (timeouts, reads given up).
    pub fn expire(&mut self, now: u64) -> (u64, Vec<Read>) {
        // In the order they were due (sent), not the map's: the map's order changes from one
        // process to the next, and the reads sent again must not (a seeded run repeats).
        let mut overdue: Vec<(u64, u32)> =
            self.in_flight.iter().filter(|(_, f)| f.due <= now).map(|(t, f)| (f.due, *t)).collect();
        overdue.sort_unstable();
        let mut failed = Vec::new();
        for (_, tid) in &overdue {
            let Some(f) = self.in_flight.remove(tid) else { continue };
            self.left(f.read.lid());
            if f.tries < self.retries {
                self.again.push_back((f.read, f.tries + 1));
            } else {
                failed.push(f.read);
            }
        }
        (overdue.len() as u64, failed)
    }

    /// The earliest deadline of a read in flight.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.in_flight.values().map(|f| f.due).min()
    }

    fn left(&mut self, lid: Lid) {
        if let Some(n) = self.per_lid.get_mut(&lid) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_lid.remove(&lid);
            }
        }
    }
}

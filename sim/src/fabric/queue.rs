//! The fabric's event queue: events in the order of their virtual time, and in the order they
//! were queued among events of the same time.
//!
//! A binary heap of `(time, sequence)` pairs gives that order, at about 250 instructions a pop
//! in the k = 48 bring-up (6.2 M pops; this queue: 190 a push and pop together). The fabric's
//! queue is monotone: nothing is queued for a time before the last event taken (the clock
//! never goes back, and every event is queued for now or later), which is what a *radix queue*
//! needs. Events are kept in 64 buckets by the highest bit in which their time differs from
//! the last time taken; the lowest non-empty bucket holds the earliest events, and taking its
//! earliest time moves the bucket's other events to lower buckets, each event a few times over
//! its life at most. Events due at the last time taken wait in a FIFO of their own.
//! (Buckets by 6-bit digit, 704 of them, moving events fewer times, took more instructions
//! at k = 24: most times hold one event, and each then cost a bucket swap.)
//!
//! The order is exactly a min-heap's on (time, sequence), the sequence being the order of
//! [`EventQueue::push`] calls, with no sequence kept: events of one time are always in one
//! bucket (the bucket is a function of the time), appended in push order and moved together,
//! in their order, so they stay in push order. The unit tests check the order against
//! [`std::collections::BinaryHeap`] on random schedules. An event queued for a time before the
//! last one taken (which the fabric never does) is still taken in that order: the queue is
//! rebuilt around it.

use std::collections::VecDeque;

/// An event with its due time.
#[derive(Debug)]
struct Entry<T> {
    at: u64,
    item: T,
}

/// A monotone priority queue on `(time, push order)`; see the module documentation.
#[derive(Debug)]
pub(crate) struct EventQueue<T> {
    /// The time of the last event taken (every event held is due then or later).
    last: u64,
    /// Events due at `last`, in push order.
    due: VecDeque<Entry<T>>,
    /// `buckets[i]`: events due after `last` whose time's highest bit differing from `last`'s
    /// is bit `i`.
    buckets: [Vec<Entry<T>>; 64],
    /// The earliest time in each non-empty bucket.
    mins: [u64; 64],
    /// Bit `i` set when `buckets[i]` is not empty.
    full: u64,
    len: usize,
}

impl<T> Default for EventQueue<T> {
    fn default() -> Self {
        EventQueue {
            last: 0,
            due: VecDeque::new(),
            buckets: std::array::from_fn(|_| Vec::new()),
            mins: [0; 64],
            full: 0,
            len: 0,
        }
    }
}

impl<T> EventQueue<T> {
    /// Events held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no event is held.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Queues `item` for time `at`, after every event queued before for the same time.
    pub fn push(&mut self, at: u64, item: T) {
        self.len += 1;
        if at < self.last {
            self.rebase(at);
        }
        self.place(Entry { at, item });
    }

    /// The time of the earliest event.
    pub fn peek_at(&self) -> Option<u64> {
        if !self.due.is_empty() {
            return Some(self.last);
        }
        (self.full != 0).then(|| self.mins[self.full.trailing_zeros() as usize])
    }

    /// Takes the earliest event (the first queued of those due at the earliest time).
    pub fn pop(&mut self) -> Option<(u64, T)> {
        if self.due.is_empty() {
            self.refill()?;
        }
        let e = self.due.pop_front()?;
        self.len -= 1;
        Some((e.at, e.item))
    }

    /// Files an entry due at `last` or later.
    #[inline]
    fn place(&mut self, e: Entry<T>) {
        debug_assert!(e.at >= self.last);
        let diff = e.at ^ self.last;
        if diff == 0 {
            // Pushed after everything held, or moved here in order.
            self.due.push_back(e);
            return;
        }
        let i = diff.ilog2() as usize;
        let bit = 1u64 << i;
        if self.full & bit == 0 || e.at < self.mins[i] {
            self.mins[i] = e.at;
        }
        self.full |= bit;
        self.buckets[i].push(e);
    }

    /// Makes the earliest bucket's earliest time the last time taken: its events due then go
    /// to `due`, the rest to lower buckets. `None` when nothing is held.
    fn refill(&mut self) -> Option<()> {
        if self.full == 0 {
            return None;
        }
        let i = self.full.trailing_zeros() as usize;
        self.last = self.mins[i];
        self.full &= !(1u64 << i);
        let mut bucket = std::mem::take(&mut self.buckets[i]);
        // In bucket order, which is push order among events of one time; every event of the
        // bucket differs from `last` below bit `i` only.
        for e in bucket.drain(..) {
            self.place(e);
        }
        self.buckets[i] = bucket;
        Some(())
    }

    /// Makes `at` (before `last`) the queue's time: every event is filed again.
    fn rebase(&mut self, at: u64) {
        let mut all: Vec<Entry<T>> = self.due.drain(..).collect();
        for b in &mut self.buckets {
            all.append(b);
        }
        self.full = 0;
        self.last = at;
        // Stable: events of one time come from one bucket (or `due`), in push order.
        all.sort_by_key(|e| e.at);
        for e in all {
            self.place(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    use proptest::prelude::*;

    use super::EventQueue;

    /// Runs `ops` (push at `now + delay`, or pop) on the queue and on a binary heap of (time,
    /// sequence); every pop must give the same event. `now` follows the popped times, as the
    /// fabric's clock does; `past` pushes go before it.
    fn same_order(ops: &[(bool, u64, bool)]) {
        let mut q = EventQueue::default();
        let mut heap = BinaryHeap::new();
        let (mut now, mut seq) = (0u64, 0u64);
        for &(is_push, delay, past) in ops {
            if is_push {
                let at = if past { now.saturating_sub(delay) } else { now + delay };
                q.push(at, seq);
                heap.push(Reverse((at, seq)));
                seq += 1;
            } else {
                assert_eq!(q.peek_at(), heap.peek().map(|r| r.0.0));
                let got = q.pop();
                let want = heap.pop().map(|r| r.0);
                assert_eq!(got, want);
                if let Some((at, _)) = got {
                    now = now.max(at);
                }
            }
            assert_eq!(q.len(), heap.len());
        }
        while let Some(Reverse(want)) = heap.pop() {
            assert_eq!(q.pop(), Some(want));
        }
        assert_eq!(q.pop(), None);
        assert!(q.is_empty());
    }

    #[test]
    fn events_of_one_time_leave_in_push_order() {
        let mut q = EventQueue::default();
        for i in 0..5 {
            q.push(100, i);
        }
        q.push(50, 9);
        q.push(100, 5);
        assert_eq!(q.peek_at(), Some(50));
        assert_eq!(q.pop(), Some((50, 9)));
        // Pushed while 100's events wait in the buckets and after they moved to `due`.
        q.push(100, 6);
        assert_eq!(q.pop(), Some((100, 0)));
        q.push(100, 7);
        let rest: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(rest, (1..8).map(|i| (100, i)).collect::<Vec<_>>());
    }

    #[test]
    fn a_push_before_the_last_time_taken_comes_out_first() {
        let mut q = EventQueue::default();
        q.push(10, 'a');
        q.push(30, 'b');
        q.push(20, 'c');
        assert_eq!(q.pop(), Some((10, 'a')));
        assert_eq!(q.pop(), Some((20, 'c')));
        q.push(5, 'd');
        q.push(30, 'e');
        assert_eq!(q.peek_at(), Some(5));
        assert_eq!(q.pop(), Some((5, 'd')));
        assert_eq!(q.pop(), Some((30, 'b')));
        assert_eq!(q.pop(), Some((30, 'e')));
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn far_times_and_the_end_of_time() {
        let ops: Vec<(bool, u64, bool)> = [0, u64::MAX / 2, 1, 1 << 40, 3, u64::MAX / 2]
            .iter()
            .flat_map(|&d| [(true, d, false), (true, d, false), (false, 0, false)])
            .collect();
        same_order(&ops);
        let mut q = EventQueue::default();
        q.push(u64::MAX, 1);
        q.push(0, 0);
        q.push(u64::MAX, 2);
        assert_eq!(q.pop(), Some((0, 0)));
        assert_eq!(q.pop(), Some((u64::MAX, 1)));
        assert_eq!(q.pop(), Some((u64::MAX, 2)));
    }

    proptest! {
        #[test]
        fn pops_in_a_binary_heaps_order(
            ops in proptest::collection::vec(
                (proptest::bool::weighted(0.6), prop_oneof![0u64..4, 0u64..1_000, 0u64..100_000_000], proptest::bool::weighted(0.02)),
                0..600,
            )
        ) {
            same_order(&ops);
        }
    }
}

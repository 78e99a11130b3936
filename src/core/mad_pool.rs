//! A bounded pool of 256-byte MAD buffers, for the SMPs the core sends.
//!
//! Owns: buffers the drivers handed back ([`crate::core::Sm::recycle`]), each exactly one MAD
//! long with exactly that capacity, at most [`MadPool::MAX`] of them. A bring-up sends two
//! million SMPs; with thousands in flight a 256-byte buffer is past the allocator's fast bins,
//! so each fresh one was a `calloc` and its drop a `free` that merged chunks. A buffer taken
//! from here goes out in a [`crate::core::Transmit`], comes back in the answer (the simulated
//! fabric answers in the request's own buffer) or after the write (umad copies it into the
//! kernel), and is handed back.
//!
//! Guarantees: [`MadPool::take`] gives a buffer of exactly [`MAD_LEN`] bytes whose contents are
//! unspecified (the caller writes every byte); a buffer handed back is kept only if it has that
//! length and capacity (so that `Vec::into_boxed_slice` on it does not reallocate) and the pool
//! has room: the pool never holds more than [`MadPool::MAX`] buffers, whatever a driver hands
//! back. It must not touch what the buffers mean: it never reads them.

use ibsm_mad::MAD_LEN;

/// Spare MAD buffers.
#[derive(Default)]
pub(crate) struct MadPool {
    /// The boxes are the point: each is an allocation kept to be written again.
    #[allow(clippy::vec_box)]
    free: Vec<Box<[u8; MAD_LEN]>>,
    /// Buffers handed out that were not in the pool (allocated).
    made: u64,
}

impl std::fmt::Debug for MadPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MadPool").field("free", &self.free.len()).field("made", &self.made).finish()
    }
}

impl MadPool {
    /// Most buffers kept (256 KiB): more than a window of SMPs in flight (the default is 64,
    /// `max-smps` at most a few thousand), so that a window's worth of answers refills it.
    pub const MAX: usize = 1024;

    /// A buffer of [`MAD_LEN`] bytes: one handed back, or a new one. Its contents are
    /// unspecified: the caller writes all of it.
    pub fn take(&mut self) -> Box<[u8; MAD_LEN]> {
        if let Some(b) = self.free.pop() {
            return b;
        }
        self.made += 1;
        Box::new([0u8; MAD_LEN])
    }

    /// A buffer handed back, if the pool holds one (nothing is allocated): for a writer that
    /// has its own way to allocate (the SA's answers). Its contents are unspecified.
    pub fn take_kept(&mut self) -> Option<Vec<u8>> {
        self.free.pop().map(|b| Vec::from(b as Box<[u8]>))
    }

    /// Keeps `bytes` for a later [`MadPool::take`] if it is one MAD long with no spare capacity
    /// and the pool has room; otherwise drops it.
    pub fn give(&mut self, bytes: Vec<u8>) {
        if bytes.len() == MAD_LEN && bytes.capacity() == MAD_LEN && self.free.len() < Self::MAX {
            // Length and capacity agree: the box is the vector's own allocation.
            if let Ok(b) = bytes.into_boxed_slice().try_into() {
                self.free.push(b);
            }
        }
    }

    /// Buffers kept.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.free.len()
    }

    /// Buffers allocated by [`MadPool::take`] so far.
    pub fn made(&self) -> u64 {
        self.made
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_handed_back_is_the_one_taken_next() {
        let mut pool = MadPool::default();
        let b = pool.take();
        assert_eq!(pool.made(), 1);
        let at = b.as_ptr();
        pool.give(Vec::from(b as Box<[u8]>));
        assert_eq!(pool.len(), 1);
        let again = pool.take();
        assert_eq!(again.as_ptr(), at, "the same allocation");
        assert_eq!((pool.made(), pool.len()), (1, 0));
        // `take_kept` gives only what was handed back, and as a vector of one MAD.
        assert!(pool.take_kept().is_none());
        pool.give(Vec::from(again as Box<[u8]>));
        let kept = pool.take_kept().expect("the buffer handed back");
        assert_eq!((kept.as_ptr(), kept.len(), kept.capacity()), (at, MAD_LEN, MAD_LEN));
        assert_eq!((pool.made(), pool.len()), (1, 0));
    }

    #[test]
    fn buffers_of_another_size_or_capacity_are_dropped() {
        let mut pool = MadPool::default();
        pool.give(vec![0u8; MAD_LEN - 1]);
        pool.give(vec![0u8; 2 * MAD_LEN]);
        let mut spare = Vec::with_capacity(2 * MAD_LEN);
        spare.resize(MAD_LEN, 0u8);
        pool.give(spare);
        pool.give(Vec::new());
        assert_eq!(pool.len(), 0);
        // A boxed MAD turned into a vector has its exact capacity: it is kept.
        let boxed: Box<[u8; MAD_LEN]> = Box::new([7; MAD_LEN]);
        pool.give(Vec::from(boxed as Box<[u8]>));
        assert_eq!(pool.len(), 1);
    }

    #[test]
    fn the_pool_holds_at_most_max() {
        let mut pool = MadPool::default();
        for _ in 0..MadPool::MAX + 10 {
            pool.give(vec![0u8; MAD_LEN]);
        }
        assert_eq!(pool.len(), MadPool::MAX);
        for _ in 0..MadPool::MAX {
            pool.take();
        }
        assert_eq!((pool.len(), pool.made()), (0, 0));
        pool.take();
        assert_eq!(pool.made(), 1);
    }
}

//! The simulated switches' linear forwarding tables, held as shared 64-entry blocks.
//!
//! Owns [`Lft`] (one switch's table: a block id per LFT block written) and [`LftBlocks`] (the
//! fabric's store of distinct blocks, each with the count of tables that hold it). A Set that
//! writes a block whose content some table already holds shares it; a block no table holds any
//! more is freed. A fat tree's switches hold the same blocks many times over (the k = 24 tree's
//! ftree tables: 47,520 blocks written, 1,040 distinct), so the fabric keeps four bytes per
//! block written instead of 64: at k = 56, 12 MB instead of 188 MB. Where every block differs it
//! costs about 30 bytes more per block than a plain table. What a switch answers and forwards
//! is the same as with a plain table: an entry never written reads 0xff.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// One LFT block's 64 entries (output ports).
pub(crate) type Block = [u8; 64];

/// No block: a table's slot never written, the end of a hash chain.
const NONE: u32 = u32::MAX;

/// The content of a block never written: every entry 0xff.
const UNSET: Block = [0xff; 64];

/// One switch's table: the id in [`LftBlocks`] of each block written ([`NONE`] for a block
/// below the highest written that was not), grown as blocks are written.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lft {
    blocks: Vec<u32>,
}

/// The fabric's distinct LFT blocks, shared by the switches' tables.
#[derive(Debug, Clone, Default)]
pub(crate) struct LftBlocks {
    content: Vec<Block>,
    /// Tables holding each block; 0 for a free slot.
    refs: Vec<u32>,
    /// The next block with the same content hash, or [`NONE`].
    next: Vec<u32>,
    free: Vec<u32>,
    /// The first block of each content hash.
    by_hash: HashMap<u64, u32, BuildHasherDefault<Mixed>>,
}

/// A hasher for keys that are already well mixed (the block hashes): it passes them on.
#[derive(Default)]
struct Mixed(u64);

impl Hasher for Mixed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// The content hash of a block: its eight words folded, then finished as splitmix64 does.
fn hash(b: &Block) -> u64 {
    let mut h = 0u64;
    for w in b.chunks_exact(8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(w);
        h = (h ^ u64::from_le_bytes(word)).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(31);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

impl Lft {
    /// The store's id of block `block` ([`NONE`] when not written): what a Set of it reads
    /// first (the fabric touches it ahead, see the `warm` module).
    pub fn slot(&self, block: usize) -> u32 {
        self.blocks.get(block).copied().unwrap_or(NONE)
    }

    /// Entry `lid` (0xff when never written).
    pub fn entry(&self, store: &LftBlocks, lid: u16) -> u8 {
        let lid = usize::from(lid);
        match self.blocks.get(lid / 64) {
            Some(&id) if id != NONE => store.content[id as usize][lid % 64],
            _ => 0xff,
        }
    }

    /// Block `block`'s 64 entries (all 0xff when never written).
    pub fn block<'a>(&self, store: &'a LftBlocks, block: usize) -> &'a Block {
        match self.blocks.get(block) {
            Some(&id) if id != NONE => &store.content[id as usize],
            _ => &UNSET,
        }
    }

    /// Writes block `block` with `entries`; `blocks_to_top` is how many blocks the table will
    /// hold (LinearFDBTop), room for which is made at once. True when an entry changed.
    pub fn set(&mut self, store: &mut LftBlocks, block: usize, entries: &Block, blocks_to_top: usize) -> bool {
        if self.blocks.len() <= block {
            self.blocks.reserve_exact(blocks_to_top.max(block + 1) - self.blocks.len());
            self.blocks.resize(block + 1, NONE);
        }
        let old = self.blocks[block];
        let changed = self.block(store, block) != entries;
        if !changed {
            return false;
        }
        self.blocks[block] = store.hold(entries);
        if old != NONE {
            store.release(old);
        }
        true
    }

    /// Forgets the whole table (a switch reset).
    pub fn clear(&mut self, store: &mut LftBlocks) {
        for id in std::mem::take(&mut self.blocks) {
            if id != NONE {
                store.release(id);
            }
        }
    }
}

impl LftBlocks {
    /// Distinct blocks held by some table.
    #[cfg(test)]
    pub fn distinct(&self) -> usize {
        self.content.len() - self.free.len()
    }

    /// The id of a block with `entries`, held once more (stored if no table holds it yet).
    fn hold(&mut self, entries: &Block) -> u32 {
        self.hold_hashed(hash(entries), entries)
    }

    /// [`LftBlocks::hold`] with the hash of `entries` given.
    fn hold_hashed(&mut self, h: u64, entries: &Block) -> u32 {
        let head = self.by_hash.get(&h).copied().unwrap_or(NONE);
        let mut at = head;
        while at != NONE {
            let i = at as usize;
            if self.content[i] == *entries {
                self.refs[i] += 1;
                return at;
            }
            at = self.next[i];
        }
        let id = if let Some(id) = self.free.pop() {
            let i = id as usize;
            self.content[i] = *entries;
            self.refs[i] = 1;
            self.next[i] = head;
            id
        } else {
            // At most 768 blocks a switch (LinearFDBCap 49,152) on fewer than 65,536 switches.
            let Ok(id) = u32::try_from(self.content.len()) else {
                unreachable!("more distinct LFT blocks than a fabric's switches can hold")
            };
            self.content.push(*entries);
            self.refs.push(1);
            self.next.push(head);
            id
        };
        self.by_hash.insert(h, id);
        id
    }

    /// One table less holds block `id`; freed when none does.
    fn release(&mut self, id: u32) {
        self.release_hashed(hash(&self.content[id as usize]), id);
    }

    /// [`LftBlocks::release`] with the hash of the block's content given.
    fn release_hashed(&mut self, h: u64, id: u32) {
        let i = id as usize;
        self.refs[i] -= 1;
        if self.refs[i] > 0 {
            return;
        }
        let after = self.next[i];
        match self.by_hash.get(&h).copied() {
            Some(head) if head == id => {
                if after == NONE {
                    self.by_hash.remove(&h);
                } else {
                    self.by_hash.insert(h, after);
                }
            }
            Some(mut at) => {
                while at != NONE {
                    let k = at as usize;
                    if self.next[k] == id {
                        self.next[k] = after;
                        break;
                    }
                    at = self.next[k];
                }
            }
            None => {}
        }
        self.next[i] = NONE;
        self.free.push(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(seed: u8) -> Block {
        std::array::from_fn(|i| seed.wrapping_add(i as u8) % 37)
    }

    /// A plain table per switch, written alongside, is what the shared tables must read as.
    #[test]
    fn shared_tables_read_as_plain_tables_through_random_writes_and_resets() {
        let mut store = LftBlocks::default();
        let mut tables = vec![Lft::default(); 6];
        let mut plain = vec![Vec::<u8>::new(); 6];
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for step in 0..4000 {
            let s = rnd(6) as usize;
            if rnd(50) == 0 {
                tables[s].clear(&mut store);
                plain[s].clear();
                continue;
            }
            let b = rnd(12) as usize;
            // Few contents, so that blocks are shared and freed often.
            let entries = if rnd(5) == 0 { UNSET } else { block(rnd(4) as u8) };
            let before = plain[s].get(b * 64..b * 64 + 64).map_or(UNSET, |e| e.try_into().unwrap_or(UNSET));
            if plain[s].len() < b * 64 + 64 {
                plain[s].resize(b * 64 + 64, 0xff);
            }
            plain[s][b * 64..b * 64 + 64].copy_from_slice(&entries);
            let changed = tables[s].set(&mut store, b, &entries, 12);
            assert_eq!(changed, before != entries, "step {step}");
            for (t, p) in tables.iter().zip(&plain) {
                for lid in 0..=(12 * 64 + 3) as u16 {
                    assert_eq!(t.entry(&store, lid), p.get(usize::from(lid)).copied().unwrap_or(0xff), "step {step}");
                }
            }
            assert!(store.distinct() <= 5, "step {step}: {} distinct blocks of 5 contents", store.distinct());
        }
    }

    #[test]
    fn a_block_no_table_holds_is_freed_and_its_slot_reused() {
        let mut store = LftBlocks::default();
        let (mut a, mut b) = (Lft::default(), Lft::default());
        assert!(a.set(&mut store, 0, &block(1), 4));
        assert!(b.set(&mut store, 3, &block(1), 4));
        assert_eq!(store.distinct(), 1);
        assert!(!b.set(&mut store, 3, &block(1), 4), "the same content again changes nothing");
        assert!(a.set(&mut store, 0, &block(2), 4));
        assert_eq!(store.distinct(), 2);
        b.clear(&mut store);
        assert_eq!(store.distinct(), 1, "block(1) is held by no table");
        assert!(b.set(&mut store, 1, &block(3), 4));
        assert_eq!(store.content.len(), 2, "the freed slot is reused");
        assert_eq!(b.block(&store, 1), &block(3));
        assert_eq!(b.block(&store, 0), &UNSET);
        assert_eq!(a.block(&store, 0), &block(2));
    }

    /// Blocks whose hashes collide are told apart by their content.
    #[test]
    fn blocks_with_one_hash_chain_are_kept_apart() {
        let mut store = LftBlocks::default();
        let mut table = Lft::default();
        // A collision made by hand: three contents filed under one hash.
        let (hash, x, y, z) = (7, block(5), block(6), block(7));
        let ix = store.hold_hashed(hash, &x);
        let iy = store.hold_hashed(hash, &y);
        let iz = store.hold_hashed(hash, &z);
        assert!(ix != iy && iy != iz && ix != iz);
        assert_eq!(store.hold_hashed(hash, &x), ix, "found along the chain");
        // y leaves the middle of the chain, z its head, x last.
        store.release_hashed(hash, iy);
        assert_eq!(store.hold_hashed(hash, &x), ix);
        assert_eq!(store.hold_hashed(hash, &z), iz);
        store.release_hashed(hash, iz);
        store.release_hashed(hash, iz);
        assert_eq!(store.hold_hashed(hash, &x), ix, "the chain still leads to x");
        for _ in 0..4 {
            store.release_hashed(hash, ix);
        }
        assert_eq!(store.distinct(), 0);
        assert!(store.by_hash.is_empty());
        assert!(table.set(&mut store, 0, &y, 1));
        assert_eq!(table.block(&store, 0), &y);
    }
}

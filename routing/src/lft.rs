//! A switch's linear forwarding table, held so that tables made from one another share what
//! they have in common.
//!
//! Owns [`Lft`]. A table is either flat (its own entries, as an engine builds it) or derived
//! from a flat table it shares (an `Arc`, usually the same switch's table in the route a repair
//! started from), holding its own copies of only the 64-LID blocks it changed. A repair that
//! moves a few LIDs of a switch copies those blocks (64 bytes each) instead of the whole table
//! (30,000 bytes at k = 48), and the routing result, the tables the SM knows the switches hold
//! and the SA's snapshot share the rest. A derived table that comes to change more than an
//! eighth of its blocks is made flat again (one copy, as before blocks were shared), so that a
//! read of any entry stays a lookup among a few blocks at most.
//!
//! Guarantees: a table reads the same however it is held (equality compares entries); no
//! method panics on an out-of-range LID. A derived table's base is always flat (a table derived
//! from a derived one shares the same base), so a read goes one level down at most and reads
//! the base's entries directly.

use std::sync::Arc;

use ibsm_mad::{Lid, PortNum};

/// Entries in one block, as in the LinearForwardingTable attribute.
const BLOCK: usize = 64;

/// A switch's linear forwarding table: the egress port for each LID from 0 to `top`.
#[derive(Debug, Clone, Default)]
pub struct Lft {
    /// The entries, for a flat table (`ports[lid]` is the egress port; [`Lft::UNROUTED`] means
    /// "drop"); empty for a derived one.
    ports: Vec<PortNum>,
    /// For a derived table: the table it shares and the blocks it changed.
    derived: Option<Box<Derived>>,
}

/// A derived table: a flat base and the blocks that differ from it (or once did).
#[derive(Debug, Clone)]
struct Derived {
    /// The flat table shared (its length is this table's).
    base: Arc<Lft>,
    /// (block number, index into `blocks`), by block number.
    keys: Vec<(u32, u32)>,
    /// Own copies of blocks, in the order first written; entries past the table's end are
    /// unrouted.
    blocks: Vec<[PortNum; BLOCK]>,
}

impl Derived {
    /// Entry `lid`: from its block's own copy, else from the base (flat: not a recursion).
    fn entry(&self, lid: usize) -> Option<PortNum> {
        match self.own(lid / BLOCK) {
            Some(b) if lid < self.base.ports.len() => b.get(lid % BLOCK).copied(),
            Some(_) => None,
            None => self.base.ports.get(lid).copied(),
        }
    }

    /// The own copy of block `b`, if there is one.
    fn own(&self, b: usize) -> Option<&[PortNum; BLOCK]> {
        let b = u32::try_from(b).ok()?;
        let k = self.keys.binary_search_by_key(&b, |k| k.0).ok()?;
        self.blocks.get(self.keys.get(k)?.1 as usize)
    }
}

impl PartialEq for Lft {
    fn eq(&self, other: &Lft) -> bool {
        self.len() == other.len() && self.blocks().zip(other.blocks()).all(|(a, b)| std::ptr::eq(a, b) || a == b)
    }
}

impl Eq for Lft {}

impl From<Vec<PortNum>> for Lft {
    fn from(ports: Vec<PortNum>) -> Lft {
        Lft { ports, derived: None }
    }
}

impl Lft {
    /// The "no route" entry (0xff, as in the LinearForwardingTable attribute).
    pub const UNROUTED: PortNum = PortNum(0xff);

    /// Entries in one block (64, as in the LinearForwardingTable attribute).
    pub const BLOCK: usize = BLOCK;

    /// An empty table (no LID).
    pub const fn new() -> Lft {
        Lft { ports: Vec::new(), derived: None }
    }

    /// A table for LIDs `0..=top`, every entry unrouted.
    pub fn unrouted(top: u16) -> Lft {
        Lft::from(vec![Self::UNROUTED; usize::from(top) + 1])
    }

    /// A table made from `from` that shares its entries (its base, if it is itself made from
    /// another): writes to it copy only the blocks they touch ([`Lft::set`]).
    pub fn derive(from: &Arc<Lft>) -> Lft {
        let derived = match &from.derived {
            Some(d) => d.clone(),
            None => Box::new(Derived { base: Arc::clone(from), keys: Vec::new(), blocks: Vec::new() }),
        };
        Lft { ports: Vec::new(), derived: Some(derived) }
    }

    /// Number of entries (LIDs `0..len`).
    #[inline]
    pub fn len(&self) -> usize {
        match &self.derived {
            None => self.ports.len(),
            Some(d) => d.base.ports.len(),
        }
    }

    /// Whether the table has no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The highest LID the table covers (LinearFDBTop), 0 for an empty table.
    pub fn top(&self) -> u16 {
        u16::try_from(self.len().saturating_sub(1)).unwrap_or(u16::MAX)
    }

    /// Entry `lid` as held ([`Lft::UNROUTED`] included), or `None` beyond the table.
    #[inline]
    pub fn entry(&self, lid: usize) -> Option<PortNum> {
        match &self.derived {
            None => self.ports.get(lid).copied(),
            Some(d) => d.entry(lid),
        }
    }

    /// The egress port for `lid`, or `None` if unrouted or beyond the table.
    #[inline]
    pub fn port_for(&self, lid: Lid) -> Option<PortNum> {
        self.entry(usize::from(lid.0)).filter(|&p| p != Self::UNROUTED)
    }

    /// The entries of block `b` (LIDs `64 b..64 b + 64`), fewer at the table's end, none past it.
    pub fn block(&self, b: usize) -> &[PortNum] {
        let start = b.saturating_mul(BLOCK);
        let n = self.len().saturating_sub(start).min(BLOCK);
        match &self.derived {
            None => self.ports.get(start..start + n).unwrap_or(&[]),
            Some(d) => match d.own(b) {
                Some(own) => &own[..n],
                None => d.base.ports.get(start..start + n).unwrap_or(&[]),
            },
        }
    }

    /// Every block in order ([`Lft::block`]).
    pub fn blocks(&self) -> impl Iterator<Item = &[PortNum]> + '_ {
        (0..self.len().div_ceil(BLOCK)).map(|b| self.block(b))
    }

    /// The entries in LID order as contiguous runs: the whole table at once for a flat one,
    /// block by block for a derived one (for loops over every entry).
    pub fn runs(&self) -> impl Iterator<Item = &[PortNum]> + '_ {
        let flat = self.derived.is_none().then_some(self.ports.as_slice());
        let blocks = self.derived.is_some().then(|| self.blocks()).into_iter().flatten();
        flat.into_iter().chain(blocks)
    }

    /// Every entry in LID order.
    pub fn iter(&self) -> impl Iterator<Item = PortNum> + '_ {
        self.runs().flat_map(|b| b.iter().copied())
    }

    /// The entries, copied out.
    pub fn to_vec(&self) -> Vec<PortNum> {
        match &self.derived {
            None => self.ports.clone(),
            Some(_) => self.iter().collect(),
        }
    }

    /// Whether block `b` of this table and of `other` are the same memory (so the same
    /// entries, without comparing them): both tables share it.
    pub fn shares_block(&self, other: &Lft, b: usize) -> bool {
        let (mine, theirs) = (self.block(b), other.block(b));
        !mine.is_empty() && std::ptr::eq(mine, theirs)
    }

    /// Whether block `b` of this table and of `other` hold the same entries, entries past a
    /// table's end read as unrouted (as the block a switch is sent): the same memory (a block
    /// both share, not compared) or equal entries. Each table's block is looked up once.
    pub fn same_block(&self, other: &Lft, b: usize) -> bool {
        let (mine, theirs) = (self.block(b), other.block(b));
        if !mine.is_empty() && std::ptr::eq(mine, theirs) {
            return true;
        }
        let common = mine.len().min(theirs.len());
        mine[..common] == theirs[..common]
            && mine[common..].iter().all(|&p| p == Self::UNROUTED)
            && theirs[common..].iter().all(|&p| p == Self::UNROUTED)
    }

    /// Calls `differs` with each block of this table (in order) that is not the same block of
    /// `other` ([`Lft::same_block`]); answers how many blocks this table has. Two flat tables
    /// are compared in one pass over their entries (a full route compared with the one a
    /// switch holds: 751 blocks a switch at k = 48, 2.2 M in all), without a lookup per block.
    pub fn differing_blocks(&self, other: &Lft, mut differs: impl FnMut(usize)) -> usize {
        let n = self.len().div_ceil(BLOCK);
        let mut from = 0;
        if self.derived.is_none() && other.derived.is_none() {
            // Blocks whole in both tables: compared as slices of the two.
            let whole = self.ports.len().min(other.ports.len()) / BLOCK;
            let (mine, theirs) = (&self.ports[..whole * BLOCK], &other.ports[..whole * BLOCK]);
            for (b, (x, y)) in mine.chunks_exact(BLOCK).zip(theirs.chunks_exact(BLOCK)).enumerate() {
                if x != y {
                    differs(b);
                }
            }
            from = whole;
        }
        for b in from..n {
            if !self.same_block(other, b) {
                differs(b);
            }
        }
        n
    }

    /// Blocks this table holds its own copies of, when it is derived from another; `None` for
    /// a flat table (every block its own).
    pub fn own_blocks(&self) -> Option<usize> {
        self.derived.as_ref().map(|d| d.blocks.len())
    }

    /// The entries, flat and this table's own (a derived table is copied out first), to write
    /// or resize in place: what an engine builds a table with.
    #[inline]
    pub fn entries_mut(&mut self) -> &mut Vec<PortNum> {
        if self.derived.is_some() {
            self.flatten();
        }
        &mut self.ports
    }

    /// A derived table made flat: its entries copied out, the base let go.
    #[cold]
    #[inline(never)]
    fn flatten(&mut self) {
        self.ports = self.to_vec();
        self.derived = None;
    }

    /// Sets entry `lid` to `port`: a derived table copies the entry's block first if it does
    /// not hold it yet (and becomes flat when it would hold more than an eighth of its
    /// blocks). Whether `lid` is in the table.
    pub fn set(&mut self, lid: usize, port: PortNum) -> bool {
        let Some(d) = &mut self.derived else {
            return self.ports.get_mut(lid).map(|e| *e = port).is_some();
        };
        let len = d.base.ports.len();
        if lid >= len {
            return false;
        }
        let Ok(b) = u32::try_from(lid / BLOCK) else { return false };
        let slot = match d.keys.binary_search_by_key(&b, |k| k.0) {
            Ok(k) => d.keys[k].1 as usize,
            Err(_) if (d.blocks.len() + 1) * 8 > len.div_ceil(BLOCK).max(64) => {
                return self.entries_mut().get_mut(lid).map(|e| *e = port).is_some();
            }
            Err(k) => {
                let mut copy = [Self::UNROUTED; BLOCK];
                let from = d.base.block(lid / BLOCK);
                copy[..from.len()].copy_from_slice(from);
                let slot = d.blocks.len();
                d.blocks.push(copy);
                d.keys.insert(k, (b, u32::try_from(slot).unwrap_or(u32::MAX)));
                slot
            }
        };
        d.blocks.get_mut(slot).and_then(|own| own.get_mut(lid % BLOCK)).map(|e| *e = port).is_some()
    }

    /// Sets entry `lid` of a shared table to `port`: a table shared elsewhere is replaced by one
    /// derived from it ([`Lft::derive`]), so that what shares it keeps the old entry and only the
    /// entry's block is copied. Whether the entry changed.
    pub fn set_shared(table: &mut Arc<Lft>, lid: usize, port: PortNum) -> bool {
        if table.entry(lid).is_none_or(|e| e == port) {
            return false;
        }
        if Arc::get_mut(table).is_none() {
            *table = Arc::new(Lft::derive(table));
        }
        Arc::get_mut(table).is_some_and(|t| t.set(lid, port))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flat table of `n` entries, entry `i` port `i % 7`.
    fn flat(n: usize) -> Arc<Lft> {
        Arc::new(Lft::from((0..n).map(|i| PortNum((i % 7) as u8)).collect::<Vec<_>>()))
    }

    #[test]
    fn a_derived_table_reads_as_its_base_with_its_writes() {
        let base = flat(200);
        let mut t = Lft::derive(&base);
        assert_eq!(t, *base);
        assert!(t.set(70, PortNum(9)));
        assert!(t.set(199, PortNum(9)));
        assert!(!t.set(200, PortNum(9)), "past the end");
        let mut want = base.to_vec();
        want[70] = PortNum(9);
        want[199] = PortNum(9);
        assert_eq!(t.to_vec(), want);
        assert_eq!(t.iter().collect::<Vec<_>>(), want);
        assert_eq!(t.runs().count(), 4, "a derived table: block by block");
        assert_eq!(base.runs().count(), 1, "a flat one: at once");
        assert_eq!((t.entry(70), t.entry(71), t.entry(200)), (Some(PortNum(9)), Some(PortNum(71 % 7)), None));
        assert_eq!(t.block(3).len(), 200 - 192);
        assert_eq!(t.block(4), &[] as &[PortNum]);
        assert_ne!(t, *base);
        assert_eq!(t, Lft::from(want));
        // Two blocks copied; the base is as it was.
        assert_eq!(t.own_blocks(), Some(2));
        assert_eq!(base.entry(70), Some(PortNum(0)));
        // Blocks not written are the base's memory; written ones are not.
        assert!(t.shares_block(&base, 0) && t.shares_block(&base, 2));
        assert!(!t.shares_block(&base, 1) && !t.shares_block(&base, 3));
    }

    #[test]
    fn a_table_derived_from_a_derived_one_shares_the_flat_base() {
        let base = flat(640);
        let mut one = Lft::derive(&base);
        one.set(5, PortNum(1));
        let one = Arc::new(one);
        let mut two = Lft::derive(&one);
        two.set(600, PortNum(3));
        assert!(two.shares_block(&base, 1), "the base's block, not a copy");
        assert!(two.shares_block(&one, 1));
        assert_eq!(
            (two.entry(5), two.entry(600), one.entry(600)),
            (Some(PortNum(1)), Some(PortNum(3)), base.entry(600))
        );
        assert_eq!(two.own_blocks(), Some(2));
    }

    #[test]
    fn a_derived_table_that_changes_many_blocks_becomes_flat() {
        let base = flat(64 * 100);
        let mut t = Lft::derive(&base);
        let mut want = base.to_vec();
        for b in 0..20 {
            let lid = b * 64 + 3;
            t.set(lid, PortNum(42));
            want[lid] = PortNum(42);
        }
        // At most an eighth of the blocks (and at least eight) are held as copies.
        assert_eq!(t.own_blocks(), None, "flat again");
        assert_eq!(t.to_vec(), want);
        let mut few = Lft::derive(&base);
        for b in 0..7 {
            few.set(b * 64, PortNum(1));
        }
        assert_eq!(few.own_blocks(), Some(7));
    }

    #[test]
    fn set_shared_copies_only_a_shared_table() {
        let base = flat(300);
        let mut shared = Arc::clone(&base);
        assert!(!Lft::set_shared(&mut shared, 10, base.entry(10).unwrap()), "the same entry");
        assert!(Arc::ptr_eq(&shared, &base));
        assert!(Lft::set_shared(&mut shared, 10, PortNum(8)));
        assert!(!Arc::ptr_eq(&shared, &base) && shared.own_blocks() == Some(1));
        assert_eq!(base.entry(10), Some(PortNum(3)), "what shared it keeps the old entry");
        let before = Arc::as_ptr(&shared);
        assert!(Lft::set_shared(&mut shared, 11, PortNum(8)));
        assert_eq!(Arc::as_ptr(&shared), before, "its own now: written in place");
        assert!(!Lft::set_shared(&mut shared, 300, PortNum(8)), "past the end");
        // A flat table nothing else holds is written in place.
        let mut own = flat(10);
        let p = Arc::as_ptr(&own);
        assert!(Lft::set_shared(&mut own, 1, PortNum(5)));
        assert!(Arc::as_ptr(&own) == p && own.own_blocks().is_none());
    }

    /// The blocks of `a` that differ from `b`, by [`Lft::differing_blocks`] and block by block.
    fn differing(a: &Lft, b: &Lft) -> (Vec<usize>, Vec<usize>) {
        let mut got = Vec::new();
        let n = a.differing_blocks(b, |k| got.push(k));
        assert_eq!(n, a.len().div_ceil(BLOCK));
        let want = (0..n).filter(|&k| !a.same_block(b, k)).collect();
        (got, want)
    }

    #[test]
    fn same_and_differing_blocks_read_past_a_tables_end_as_unrouted() {
        let base = flat(200);
        // Flat against flat, one block changed; the same table shares every block.
        let mut other = base.to_vec();
        other[130] = PortNum(9);
        let other = Lft::from(other);
        assert_eq!(differing(&base, &other), (vec![2], vec![2]));
        assert_eq!(differing(&base, &base), (vec![], vec![]));
        assert!(base.same_block(&base, 3) && !base.same_block(&other, 2) && base.same_block(&other, 1));
        // A longer table: equal where both have entries, and unrouted past the shorter's end
        // is the same; anything routed there is not.
        let mut longer = base.to_vec();
        longer.resize(300, Lft::UNROUTED);
        let mut longer = Lft::from(longer);
        assert_eq!(differing(&base, &longer), (vec![], vec![]));
        assert_eq!(differing(&longer, &base), (vec![], vec![]));
        longer.set(250, PortNum(1));
        assert_eq!(differing(&longer, &base), (vec![3], vec![3]));
        longer.set(199, PortNum(2));
        assert_eq!(differing(&longer, &base), (vec![3], vec![3]));
        longer.set(190, PortNum(2));
        assert_eq!(differing(&longer, &base), (vec![2, 3], vec![2, 3]));
        assert_eq!(differing(&base, &longer), (vec![2, 3], vec![2, 3]), "block 3 past its end");
        // Derived against flat and derived: shared blocks are the same, written ones compared.
        let mut d = Lft::derive(&base);
        d.set(5, base.entry(5).unwrap());
        d.set(70, PortNum(9));
        assert_eq!(differing(&d, &base), (vec![1], vec![1]));
        assert_eq!(differing(&base, &d), (vec![1], vec![1]));
        assert_eq!(differing(&d, &other), (vec![1, 2], vec![1, 2]));
        let e = Lft::from(d.to_vec());
        assert_eq!(differing(&d, &e), (vec![], vec![]));
        // Empty tables.
        assert_eq!(differing(&Lft::new(), &base), (vec![], vec![]));
        assert_eq!(differing(&base, &Lft::new()).0, vec![0, 1, 2, 3]);
    }

    #[test]
    fn entries_mut_makes_a_derived_table_flat() {
        let base = flat(100);
        let mut t = Lft::derive(&base);
        t.set(1, PortNum(6));
        t.entries_mut().resize(130, Lft::UNROUTED);
        assert_eq!((t.len(), t.top(), t.own_blocks()), (130, 129, None));
        assert_eq!((t.entry(1), t.entry(99), t.entry(129)), (Some(PortNum(6)), base.entry(99), Some(Lft::UNROUTED)));
        assert_eq!(Lft::new().top(), 0);
        assert!(Lft::default().is_empty());
    }
}

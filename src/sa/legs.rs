//! A memo of the walks through the forwarding tables from a switch to a LID ([`Legs`]), so
//! that a PathRecord between two hosts reads one entry instead of a forwarding table entry and
//! a port per switch crossed.
//!
//! Owns: a fixed number of slots (at most 2^20, 8 MiB), each an `AtomicU64` holding one
//! (switch, DLID) key and what the walk from that switch found ([`Leg`], or no path); the
//! distinct link rates a leg may carry (a leg stores an index). Direct-mapped: a key has one
//! slot, and a later key that maps there replaces it. Each slot is written and read whole
//! (relaxed atomics: a reader sees an old entry, a new one or none, never half of one), so
//! readers on other threads (the control socket, a table builder) may share it.
//!
//! Why it is exact: what a walk from a switch on finds depends on the forwarding tables and
//! ports of the nodes it crosses and on the DLID's owner only, all fixed for the node records
//! the memo is built with (it lives and dies with them); and a path's MTU and rate are the
//! smallest along it, so the source port's part and the switch's part combine by a minimum,
//! and so do a switch's link to the next switch and that switch's leg ([`Leg::then`]): the
//! walks keep the leg of every switch they cross.
//! Must not: hold anything but what a walk computed.

use std::sync::atomic::{AtomicU64, Ordering};

use ibsm_mad::Lid;
use ibsm_mad::attrs::Mtu;

/// What a walk found from a switch to a LID's owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leg {
    /// Switches crossed, the first one counted (1 to `MAX_HOPS`).
    pub switches: u32,
    /// The smallest MTU of a known size met on the way (`None`: none; an MTU code of unknown
    /// size changes no path's MTU).
    pub mtu: Option<Mtu>,
    /// The lowest known link rate on the way, Mb/s (`u32::MAX`: none known).
    pub rate: u32,
}

impl Leg {
    /// A walk at its first switch: one switch crossed, nothing met yet.
    pub const START: Leg = Leg { switches: 1, mtu: None, rate: u32::MAX };

    /// The leg of a switch whose walk leaves it by a link of NeighborMTU `mtu` and rate `mbps`
    /// (0: unknown), counted alone: what [`Leg::then`] adds the rest to.
    #[inline]
    pub fn step(mtu: Mtu, mbps: u32) -> Leg {
        let mut leg = Leg::START;
        leg.meet(mtu);
        if mbps != 0 {
            leg.rate = mbps;
        }
        leg
    }

    /// This leg followed by `next` (the leg of the switch this one's last link leads to): the
    /// switches of both, the smaller MTU and the lower rate; `None` past
    /// [`MAX_HOPS`](super::nodes::MAX_HOPS) switches, where a walk calls it a loop.
    #[inline]
    pub fn then(self, next: Leg) -> Option<Leg> {
        let switches = self.switches + next.switches;
        if switches > super::nodes::MAX_HOPS {
            return None;
        }
        let mut leg = Leg { switches, mtu: self.mtu, rate: self.rate.min(next.rate) };
        if let Some(m) = next.mtu {
            leg.meet(m);
        }
        Some(leg)
    }

    /// Meets a port's MTU on the way (one of unknown size changes nothing).
    #[inline]
    pub fn meet(&mut self, m: Mtu) {
        if m.bytes().is_some() {
            self.mtu = Some(self.mtu.map_or(m, |have| super::nodes::min_mtu(have, m)));
        }
    }
}

/// Most slots (8 bytes each).
const MAX_SLOTS: usize = 1 << 20;
/// Bits of a slot below the key: what the walk found.
const VALUE_BITS: u32 = 23;
/// A filled slot.
const FILLED: u64 = 1 << 63;

/// The memo (see the module doc).
pub struct Legs {
    slots: Box<[AtomicU64]>,
    /// log2 of the slot count.
    bits: u32,
    /// The rates a leg may carry, ascending; a slot stores an index + 1 (0: none).
    rates: Vec<u32>,
}

impl std::fmt::Debug for Legs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Legs").field("slots", &self.slots.len()).field("rates", &self.rates).finish_non_exhaustive()
    }
}

impl Legs {
    /// A memo of about `keys` (switch, LID) pairs (a power of two, at most 2^20 slots) whose
    /// legs carry rates from `rates` (more than 255 distinct ones: nothing is kept).
    pub fn new(keys: usize, rates: impl IntoIterator<Item = u32>) -> Legs {
        let mut rates: Vec<u32> = rates.into_iter().collect();
        rates.sort_unstable();
        rates.dedup();
        let n = if rates.len() > 255 { 0 } else { keys.clamp(64, MAX_SLOTS).next_power_of_two() };
        let slots = std::iter::repeat_with(|| AtomicU64::new(0)).take(n).collect();
        Legs { slots, bits: n.trailing_zeros(), rates }
    }

    /// The key of (`at`, `dlid`) and its slot; `None` when `at` is beyond the key's 24 bits or
    /// there are no slots.
    fn slot(&self, at: u32, dlid: Lid) -> Option<(u64, &AtomicU64)> {
        if at >= 1 << 24 || self.slots.is_empty() {
            return None;
        }
        let key = (u64::from(at) << 16) | u64::from(dlid.0);
        let i = key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - self.bits);
        Some((key, self.slots.get(usize::try_from(i).ok()?)?))
    }

    /// What is kept for (`at`, `dlid`): `Some(None)` when the walk found no path, `None` when
    /// nothing is kept.
    pub fn get(&self, at: u32, dlid: Lid) -> Option<Option<Leg>> {
        let (key, slot) = self.slot(at, dlid)?;
        let v = slot.load(Ordering::Relaxed);
        if v & FILLED == 0 || (v & !FILLED) >> VALUE_BITS != key {
            return None;
        }
        if v & 1 == 0 {
            return Some(None);
        }
        let switches = ((v >> 1) & 0x7f) as u32;
        let mtu = match ((v >> 8) & 0xf) as u8 {
            0 => None,
            raw => Some(Mtu::from_raw(raw)),
        };
        let rate = match ((v >> 12) & 0xff) as usize {
            0 => u32::MAX,
            i => *self.rates.get(i - 1)?,
        };
        Some(Some(Leg { switches, mtu, rate }))
    }

    /// Keeps what the walk from `at` to `dlid` found (a leg that cannot be stored exactly is
    /// not kept).
    pub fn put(&self, at: u32, dlid: Lid, leg: Option<Leg>) {
        let Some((key, slot)) = self.slot(at, dlid) else { return };
        let value = match leg {
            None => 0,
            Some(l) => {
                let rate = match l.rate {
                    u32::MAX => 0,
                    r => match self.rates.binary_search(&r) {
                        Ok(i) => i as u64 + 1,
                        Err(_) => return,
                    },
                };
                let mtu = l.mtu.map_or(0, |m| u64::from(m.raw()));
                if l.switches > 0x7f || mtu > 0xf {
                    return;
                }
                1 | (u64::from(l.switches) << 1) | (mtu << 8) | (rate << 12)
            }
        };
        slot.store(FILLED | (key << VALUE_BITS) | value, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_leg_comes_back_as_it_went_in_and_a_colliding_key_replaces_it() {
        let legs = Legs::new(64, [2_500, 100_000, 200_000]);
        let leg = Leg { switches: 5, mtu: Some(Mtu::M2048), rate: 100_000 };
        assert_eq!(legs.get(7, Lid(12)), None, "nothing kept yet");
        legs.put(7, Lid(12), Some(leg));
        assert_eq!(legs.get(7, Lid(12)), Some(Some(leg)));
        assert_eq!(legs.get(7, Lid(13)), None, "another key");
        legs.put(8, Lid(12), None);
        assert_eq!(legs.get(8, Lid(12)), Some(None), "no path is kept too");
        let open = Leg { switches: 64, mtu: None, rate: u32::MAX };
        legs.put(9, Lid(0xffff), Some(open));
        assert_eq!(legs.get(9, Lid(0xffff)), Some(Some(open)));
        // A rate it was not built with, or a node beyond 24 bits: not kept.
        legs.put(10, Lid(1), Some(Leg { rate: 40_000, ..leg }));
        assert_eq!(legs.get(10, Lid(1)), None);
        legs.put(1 << 24, Lid(1), Some(leg));
        assert_eq!(legs.get(1 << 24, Lid(1)), None);
        // 64 slots: among 65 keys two share a slot; the later one is kept, the earlier not.
        let keys: Vec<(u32, Lid)> = (0..65).map(|i| (100 + i, Lid(1))).collect();
        for &(at, lid) in &keys {
            legs.put(at, lid, Some(leg));
        }
        let kept = keys.iter().filter(|&&(at, lid)| legs.get(at, lid) == Some(Some(leg))).count();
        assert!(kept < keys.len(), "{kept}");
        assert!(keys.iter().all(|&(at, lid)| matches!(legs.get(at, lid), None | Some(Some(_)))));
        assert_eq!(legs.get(65 + 100, Lid(1)), None, "never put");
    }
}

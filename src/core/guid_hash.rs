//! The hash of the core's maps keyed by node GUID ([`GuidMap`]): one folded multiply a key
//! under a per-map random seed, where the standard map's SipHash-1-3 took ~140 instructions a
//! lookup (the k = 48 bring-up looks a switch up by GUID 1.38 million times, once per LFT block
//! answered).
//!
//! Why a cheaper hash is safe here: the keys are GUIDs the fabric reports, so a rogue device
//! could choose them; what it must not be able to do is make them collide in the map's low bits
//! (every lookup would then walk one long probe sequence). The hash is
//! `fmix64(fold((g ^ s0) * m))`, `m` odd: both `s0` and `m` are drawn per map from the process's
//! random keys (the standard map's own), the fold (high half xor low half of the 128-bit
//! product) and MurmurHash3's finalizer `fmix64` put every input bit into the low bits the
//! table indexes by, and the map's iteration order is as random per run
//! as the standard map's (nothing may depend on it). Not a PRF: it is the standard library's
//! guarantee against chosen keys at a lower price, not a MAC, and nothing outside this
//! process's memory ever sees a hash.
//!
//! Owns no state beyond the two seeds; touches nothing else.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

use ibsm_mad::Guid;

/// A map keyed by node or port GUID, hashed by [`GuidState`].
pub type GuidMap<V> = HashMap<Guid, V, GuidState>;

/// The per-map seeds of [`GuidHasher`]: drawn from the standard library's random keys.
#[derive(Debug, Clone, Copy)]
pub struct GuidState {
    xor: u64,
    mul: u64,
}

impl Default for GuidState {
    fn default() -> GuidState {
        let s = std::hash::RandomState::new();
        GuidState { xor: s.hash_one(0x6775_6964_u64), mul: s.hash_one(0x006d_756c_u64) | 1 }
    }
}

impl BuildHasher for GuidState {
    type Hasher = GuidHasher;

    fn build_hasher(&self) -> GuidHasher {
        GuidHasher { state: *self, h: 0 }
    }
}

/// One folded multiply a 64-bit word ([`Guid`] hashes as one).
#[derive(Debug, Clone)]
pub struct GuidHasher {
    state: GuidState,
    h: u64,
}

impl GuidHasher {
    fn fold(&mut self, word: u64) {
        let m = u128::from(word ^ self.state.xor ^ self.h.rotate_left(23)).wrapping_mul(u128::from(self.state.mul));
        self.h = (m as u64) ^ ((m >> 64) as u64);
    }
}

impl Hasher for GuidHasher {
    fn finish(&self) -> u64 {
        // MurmurHash3's 64-bit finalizer (a bijection in which every input bit reaches every
        // output bit): the fold alone spreads keys that differ only in their high bits over as
        // few as a tenth of the low bits' values for some multipliers.
        let mut h = self.h;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not used by `Guid`; any other key is hashed eight bytes at a time.
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.fold(u64::from_le_bytes(w) ^ (chunk.len() as u64) << 56);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.fold(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guid_map_finds_what_it_holds() {
        let mut m: GuidMap<u32> = GuidMap::default();
        for i in 0..10_000u64 {
            m.insert(Guid(0x0002_c903_0000_0000 + i), i as u32);
        }
        assert_eq!(m.len(), 10_000);
        assert_eq!(m.get(&Guid(0x0002_c903_0000_0000 + 4321)), Some(&4321));
        assert_eq!(m.get(&Guid(0x0002_c903_0000_0000 + 10_000)), None);
    }

    /// GUIDs that differ only in their high bits (a vendor's counter in the top byte, or keys a
    /// device chose to differ where a plain multiply keeps them apart only in the high bits)
    /// still spread over the low bits a table indexes by.
    #[test]
    fn keys_that_differ_in_high_bits_spread_over_the_low_bits() {
        let s = GuidState::default();
        let low: std::collections::HashSet<u64> =
            (0..4096u64).map(|i| s.hash_one(Guid(i << 52 | 0x1234)) & 0xfff).collect();
        // 4,096 keys into 4,096 buckets: a random function fills ~63 % of them (the fold
        // without the finalizer filled as few as 407 for some multipliers, in 300 draws).
        assert!(low.len() > 2_000, "{} distinct low 12 bits of 4,096", low.len());
    }

    #[test]
    fn maps_are_seeded_apart() {
        let (a, b) = (GuidState::default(), GuidState::default());
        let g = Guid(0x0008_f104_0399_0001);
        assert_ne!(a.hash_one(g), b.hash_one(g));
        assert_eq!(a.hash_one(g), a.hash_one(g));
    }
}

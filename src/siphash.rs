//! SipHash-2-4 (Aumasson and Bernstein's keyed hash, a PRF), from the `siphasher` crate, in
//! the one shape the SM uses: a 16-byte key and a message to a `u64`. Per-port M_Keys are
//! derived with it (`core::mkeys`), and the state sync between SMs authenticates its messages
//! and names its contents with it (`sync::wire`).
//!
//! Its output is a contract with the fabric and with other SMs: ports hold keys derived from a
//! site's secret, so a change of implementation must give the same bits (the reference vectors
//! below, and fixed per-port keys in `tests/mkeys.rs`). No I/O, no state.

use siphasher::sip::SipHasher24;

/// SipHash-2-4 of `msg` under `key` (the key's first eight bytes little-endian are k0, the
/// next eight k1, as in the paper).
pub fn siphash24(key: &[u8; 16], msg: &[u8]) -> u64 {
    SipHasher24::new_with_key(key).hash(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference_key() -> [u8; 16] {
        std::array::from_fn(|i| u8::try_from(i).unwrap_or(0))
    }

    #[test]
    fn siphash_matches_the_reference_vectors() {
        // The paper's test vectors: key 00..0f, message 00..(n-1).
        let msg: Vec<u8> = (0..64u8).collect();
        assert_eq!(siphash24(&reference_key(), &msg[..0]), 0x726f_db47_dd0e_0e31);
        assert_eq!(siphash24(&reference_key(), &msg[..8]), 0x93f5_f579_9a93_2462);
        assert_eq!(siphash24(&reference_key(), &msg[..15]), 0xa129_ca61_49be_45e5);
    }
}

//! SipHash-2-4 (Aumasson and Bernstein's keyed hash, a PRF): per-port M_Keys are derived with
//! it, and the state sync between SMs authenticates its messages and names its contents with it.
//!
//! Owns the one implementation; no I/O, no state.

/// SipHash-2-4 of `msg` under `key` (Aumasson and Bernstein's keyed hash, a PRF).
pub fn siphash24(key: &[u8; 16], msg: &[u8]) -> u64 {
    let word = |b: &[u8]| b.iter().rev().fold(0u64, |acc, &x| (acc << 8) | u64::from(x));
    let (k0, k1) = (word(&key[..8]), word(&key[8..]));
    let mut v = [
        k0 ^ 0x736f_6d65_7073_6575,
        k1 ^ 0x646f_7261_6e64_6f6d,
        k0 ^ 0x6c79_6765_6e65_7261,
        k1 ^ 0x7465_6462_7974_6573,
    ];
    let round = |v: &mut [u64; 4]| {
        v[0] = v[0].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(13) ^ v[0];
        v[0] = v[0].rotate_left(32);
        v[2] = v[2].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(16) ^ v[2];
        v[0] = v[0].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(21) ^ v[0];
        v[2] = v[2].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(17) ^ v[2];
        v[2] = v[2].rotate_left(32);
    };
    let compress = |m: u64, v: &mut [u64; 4]| {
        v[3] ^= m;
        round(v);
        round(v);
        v[0] ^= m;
    };
    let mut chunks = msg.chunks_exact(8);
    for c in &mut chunks {
        compress(word(c), &mut v);
    }
    let tail = chunks.remainder();
    compress(word(tail) | (msg.len() as u64 & 0xff) << 56, &mut v);
    v[2] ^= 0xff;
    for _ in 0..4 {
        round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
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

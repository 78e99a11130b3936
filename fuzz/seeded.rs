//! The fuzz targets' stable form: a seeded input generator and a bounded driver, shared by the
//! `fuzz_seeded` tests of every crate (each includes this file with `#[path]`).
//!
//! The fuzz targets (`fuzz/`, `mad/fuzz`, `topology/fuzz`, `partitions/fuzz`) need a nightly
//! toolchain and cargo-fuzz; CI has neither. Each target's body is a function in its `bodies/`
//! folder, called by the fuzz target and, through [`run`], by a test in `cargo test`: the same
//! checks on inputs drawn from a fixed seed, a fixed number of times. Half of the inputs come from
//! the test's own structured generator (well-formed headers or files with random fields), half
//! are mutations of a corpus (the byte fixtures, the example fabrics, known files) in the manner
//! of libFuzzer: bit flips, interesting values, inserted, erased, copied and spliced runs, whole
//! lines moved. Nothing here reads the clock or the OS's randomness: a seed and an iteration
//! number reproduce an input exactly, and a failing input is printed with both.

#![allow(dead_code)]

use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// SplitMix64: small, fast, and good enough to pick mutations. Deterministic from its seed.
pub struct Rng(u64);

impl Rng {
    /// A generator whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next_u64() % n as u64) as usize }
    }

    /// True with probability `1/n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// A random byte.
    pub fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }

    /// One of `items` (panics on an empty slice: a test's own mistake).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// `n` random bytes.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.byte()).collect()
    }
}

/// Values that break parsers more often than random ones (libFuzzer's "interesting" integers).
const INTERESTING: [u32; 14] = [
    0,
    1,
    0x7F,
    0x80,
    0xFF,
    0x100,
    0x7FFF,
    0x8000,
    0xFFFF,
    0x1_0000,
    0x7FFF_FFFF,
    0x8000_0000,
    0xFFFF_FFFF,
    0xFFFF_FFFE,
];

/// Applies one to four random mutations to `data`, drawing spliced and inserted runs from
/// `corpus` (so that text stays mostly text), and keeps it at most `max_len` bytes long.
pub fn mutate(rng: &mut Rng, data: &mut Vec<u8>, corpus: &[Vec<u8>], max_len: usize) {
    for _ in 0..=rng.below(4) {
        let len = data.len();
        match rng.below(11) {
            // Flip one bit.
            0 if len > 0 => {
                let i = rng.below(len);
                data[i] ^= 1 << rng.below(8);
            }
            // Set a byte to a random value.
            1 if len > 0 => {
                let i = rng.below(len);
                data[i] = rng.byte();
            }
            // Write an interesting value, 1, 2 or 4 bytes, either byte order.
            2 if len > 0 => {
                let v = *rng.pick(&INTERESTING);
                let width = *rng.pick(&[1usize, 2, 4]);
                let bytes = if rng.one_in(2) { v.to_be_bytes() } else { v.to_le_bytes() };
                let at = rng.below(len);
                for (k, b) in bytes[4 - width..].iter().enumerate() {
                    if let Some(slot) = data.get_mut(at + k) {
                        *slot = *b;
                    }
                }
            }
            // Erase a run.
            3 if len > 0 => {
                let at = rng.below(len);
                let n = 1 + rng.below((len - at).min(32));
                data.drain(at..at + n);
            }
            // Insert a run taken from a corpus entry.
            4 => {
                let from = rng.pick(corpus);
                if !from.is_empty() {
                    let start = rng.below(from.len());
                    let n = 1 + rng.below((from.len() - start).min(64));
                    let at = rng.below(len + 1);
                    data.splice(at..at, from[start..start + n].iter().copied());
                }
            }
            // Copy a run of the input over another place of it.
            5 if len > 1 => {
                let (a, b) = (rng.below(len), rng.below(len));
                let n = 1 + rng.below((len - a.max(b)).min(32));
                let run = data[a..a + n].to_vec();
                data[b..b + n].copy_from_slice(&run);
            }
            // Splice: keep a prefix, finish with another corpus entry's tail.
            6 => {
                let other = rng.pick(corpus);
                let cut = rng.below(len + 1);
                let from = rng.below(other.len() + 1);
                data.truncate(cut);
                data.extend_from_slice(&other[from..]);
            }
            // Truncate.
            7 if len > 0 => data.truncate(rng.below(len)),
            // Move, duplicate or delete a whole line (for the text formats).
            8 => {
                let mut lines: Vec<Vec<u8>> = data.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
                let n = lines.len();
                let (a, b) = (rng.below(n), rng.below(n));
                match rng.below(3) {
                    0 => lines.swap(a, b),
                    1 => {
                        let l = lines[a].clone();
                        lines.insert(b, l);
                    }
                    _ => {
                        lines.remove(a);
                    }
                }
                *data = lines.join(&b'\n');
            }
            // Replace a run of ASCII digits with another number (counts, LIDs, ports, P_Keys), now
            // and then one too long for any integer type.
            9 if len > 0 => {
                let at = rng.below(len);
                if let Some(start) = data[at..].iter().position(u8::is_ascii_digit).map(|p| p + at) {
                    let end = data[start..].iter().position(|b| !b.is_ascii_digit()).map_or(data.len(), |p| p + start);
                    let number = if rng.one_in(4) {
                        // Past u64 (and past any narrower type a parser might read it into).
                        (0..19 + rng.below(8)).map(|_| b'0' + rng.below(10) as u8).collect()
                    } else {
                        (u64::from(*rng.pick(&INTERESTING)) + rng.below(3) as u64).to_string().into_bytes()
                    };
                    data.splice(start..end, number);
                }
            }
            // Add a random byte at the end.
            _ => data.push(rng.byte()),
        }
    }
    data.truncate(max_len);
}

/// Runs `body` on `iterations` inputs drawn from `seed`: even iterations take `structured`'s
/// input, odd ones a mutation of a corpus entry or of a structured input. On a panic, prints the
/// target, seed, iteration and input (hex) and fails.
pub fn run(
    target: &str,
    seed: u64,
    iterations: usize,
    corpus: &[Vec<u8>],
    max_len: usize,
    mut structured: impl FnMut(&mut Rng) -> Vec<u8>,
    mut body: impl FnMut(&[u8]),
) {
    assert!(!corpus.is_empty(), "{target}: empty corpus");
    let mut rng = Rng::new(seed);
    for i in 0..iterations {
        let input = if i % 2 == 0 {
            structured(&mut rng)
        } else {
            let mut data = if rng.one_in(4) { structured(&mut rng) } else { rng.pick(corpus).clone() };
            mutate(&mut rng, &mut data, corpus, max_len);
            data
        };
        if catch_unwind(AssertUnwindSafe(|| body(&input))).is_err() {
            let hex = input.iter().fold(String::new(), |mut s, b| {
                let _ = write!(s, "{b:02x}");
                s
            });
            panic!("{target}: seed {seed:#x}, iteration {i}: the body panicked on {} bytes: {hex}", input.len());
        }
    }
}

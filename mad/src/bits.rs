//! Big-endian bit-field access in the IBTA numbering.
//!
//! The IBTA specification gives every attribute field as a bit offset counted from the most
//! significant bit of byte 0, plus a width. These helpers read and write such fields so that the
//! attribute modules can be written straight from the spec's layout tables. They never panic for
//! an in-bounds field; callers check the buffer length once, up front (see [`crate::check_len`]).

/// Reads the `width`-bit field (1..=64) that starts `bit` bits into `buf`.
///
/// Bits beyond the end of `buf` read as zero, so a short buffer never panics.
///
/// Inlined always: with a constant offset and width (every attribute's accessors) the choice
/// between the whole-byte load and the bit loop is made at compile time. (Left to the
/// compiler, `get` stayed out of line once it had two paths, and a PathRecord Get through the
/// SM core spent 910 instructions in its calls: BENCHMARKS.md, session 19.)
#[allow(clippy::inline_always)]
#[inline(always)]
pub fn get(buf: &[u8], bit: usize, width: usize) -> u64 {
    debug_assert!((1..=64).contains(&width));
    // Whole bytes within the buffer (most fields: LIDs, keys, GUIDs): one big-endian load.
    if bit.is_multiple_of(8) {
        let at = bit / 8;
        match width {
            8 => return buf.get(at).map_or(0, |&b| u64::from(b)),
            16 => return be::<2>(buf, at).map_or_else(|| get_bits(buf, bit, width), |b| u16::from_be_bytes(b).into()),
            32 => return be::<4>(buf, at).map_or_else(|| get_bits(buf, bit, width), |b| u32::from_be_bytes(b).into()),
            64 => return be::<8>(buf, at).map_or_else(|| get_bits(buf, bit, width), u64::from_be_bytes),
            _ => {}
        }
    }
    get_bits(buf, bit, width)
}

/// The `N` bytes at `at`, when all of them are in `buf`.
#[allow(clippy::inline_always)]
#[inline(always)]
fn be<const N: usize>(buf: &[u8], at: usize) -> Option<[u8; N]> {
    buf.get(at..at.checked_add(N)?)?.try_into().ok()
}

/// [`get`], bit by bit (any field, any buffer).
#[inline]
fn get_bits(buf: &[u8], bit: usize, width: usize) -> u64 {
    let first = bit / 8;
    let last = (bit + width).div_ceil(8); // exclusive
    let mut acc: u128 = 0;
    for i in first..last {
        acc = (acc << 8) | u128::from(buf.get(i).copied().unwrap_or(0));
    }
    let shift = last * 8 - (bit + width);
    let mask: u128 = (1u128 << width) - 1;
    ((acc >> shift) & mask) as u64
}

/// Writes `value` (truncated to `width` bits) into the field that starts `bit` bits into `buf`.
///
/// Bits that would fall beyond the end of `buf` are not written. Inlined always, as [`get`].
#[allow(clippy::inline_always)]
#[inline(always)]
pub fn set(buf: &mut [u8], bit: usize, width: usize, value: u64) {
    debug_assert!((1..=64).contains(&width));
    // Whole bytes within the buffer: one big-endian store (the value truncated to the width).
    if bit.is_multiple_of(8) && matches!(width, 8 | 16 | 32 | 64) {
        let at = bit / 8;
        let n = width / 8;
        if let Some(dst) = at.checked_add(n).and_then(|end| buf.get_mut(at..end)) {
            dst.copy_from_slice(&value.to_be_bytes()[8 - n..]);
            return;
        }
    }
    set_bits(buf, bit, width, value);
}

/// [`set`], bit by bit (any field, any buffer).
#[inline]
fn set_bits(buf: &mut [u8], bit: usize, width: usize, value: u64) {
    let first = bit / 8;
    let last = (bit + width).div_ceil(8);
    let shift = last * 8 - (bit + width);
    let mask: u128 = ((1u128 << width) - 1) << shift;
    let val: u128 = (u128::from(value) << shift) & mask;
    for i in first..last {
        let byte_shift = (last - 1 - i) * 8;
        let m = ((mask >> byte_shift) & 0xff) as u8;
        let v = ((val >> byte_shift) & 0xff) as u8;
        if let Some(b) = buf.get_mut(i) {
            *b = (*b & !m) | v;
        }
    }
}

/// Reads a big-endian `u16` at byte offset `off` (zero past the end).
pub fn u16_at(buf: &[u8], off: usize) -> u16 {
    get(buf, off * 8, 16) as u16
}

/// Reads a big-endian `u32` at byte offset `off` (zero past the end).
pub fn u32_at(buf: &[u8], off: usize) -> u32 {
    get(buf, off * 8, 32) as u32
}

/// Reads a big-endian `u64` at byte offset `off` (zero past the end).
pub fn u64_at(buf: &[u8], off: usize) -> u64 {
    get(buf, off * 8, 64)
}

/// Writes a big-endian `u16` at byte offset `off`.
pub fn put_u16(buf: &mut [u8], off: usize, v: u16) {
    set(buf, off * 8, 16, u64::from(v));
}

/// Writes a big-endian `u32` at byte offset `off`.
pub fn put_u32(buf: &mut [u8], off: usize, v: u32) {
    set(buf, off * 8, 32, u64::from(v));
}

/// Writes a big-endian `u64` at byte offset `off`.
pub fn put_u64(buf: &mut [u8], off: usize, v: u64) {
    set(buf, off * 8, 64, v);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn nibbles_and_bytes() {
        let buf = [0xab, 0xcd, 0xef];
        assert_eq!(get(&buf, 0, 4), 0xa);
        assert_eq!(get(&buf, 4, 4), 0xb);
        assert_eq!(get(&buf, 4, 8), 0xbc);
        assert_eq!(get(&buf, 0, 24), 0xab_cdef);
        assert_eq!(get(&buf, 7, 1), 1);
        assert_eq!(get(&buf, 20, 8), 0xf0, "bits past the end read as zero");
    }

    #[test]
    fn set_keeps_neighbours() {
        let mut buf = [0xff; 3];
        set(&mut buf, 4, 8, 0x00);
        assert_eq!(buf, [0xf0, 0x0f, 0xff]);
        set(&mut buf, 21, 3, 0b010);
        assert_eq!(buf, [0xf0, 0x0f, 0xfa]);
    }

    proptest! {
        #[test]
        fn set_then_get(bit in 0usize..200, width in 1usize..=64, v: u64) {
            let mut buf = [0u8; 40];
            set(&mut buf, bit, width, v);
            let mask = if width == 64 { u64::MAX } else { (1u64 << width) - 1 };
            prop_assert_eq!(get(&buf, bit, width), v & mask);
        }

        /// The whole-byte loads and stores give what the bit-by-bit ones give, in the buffer,
        /// across its end and past it.
        #[test]
        fn whole_bytes_as_bit_by_bit(
            bytes in proptest::collection::vec(any::<u8>(), 0..24),
            at in 0usize..28,
            n in prop_oneof![Just(1usize), Just(2), Just(4), Just(8)],
            v: u64,
        ) {
            let (bit, width) = (at * 8, n * 8);
            prop_assert_eq!(get(&bytes, bit, width), get_bits(&bytes, bit, width));
            let (mut fast, mut slow) = (bytes.clone(), bytes.clone());
            set(&mut fast, bit, width, v);
            set_bits(&mut slow, bit, width, v);
            prop_assert_eq!(fast, slow);
        }
    }
}

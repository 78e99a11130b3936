//! VLArbitrationTable (attribute 0x0018): one 32-entry block of a port's VL arbitration table.
//!
//! Each entry is two bytes: 4 reserved bits, the VL (4 bits), then the weight (8 bits: units of
//! 64 bytes the VL may send per turn; 0 skips the entry). The attribute modifier's high 16 bits
//! select the block (1 = low priority 0..31, 2 = low priority 32..63, 3 = high priority 0..31,
//! 4 = high priority 32..63); on a switch its low 16 bits name the port.

use crate::{Attribute, PortNum, Result, check_len, ids};

/// One arbitration entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VlArbEntry {
    /// The data VL this entry serves (4 bits).
    pub vl: u8,
    /// How many 64-byte units the VL may send when this entry's turn comes (0 = skip).
    pub weight: u8,
}

/// One block of 32 VL arbitration entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VlArbitrationTable {
    /// The entries of the block, in table order.
    pub entries: [VlArbEntry; 32],
}

impl VlArbitrationTable {
    /// Block selector: low-priority entries 0..31.
    pub const LOW_0_31: u16 = 1;
    /// Block selector: low-priority entries 32..63.
    pub const LOW_32_63: u16 = 2;
    /// Block selector: high-priority entries 0..31.
    pub const HIGH_0_31: u16 = 3;
    /// Block selector: high-priority entries 32..63.
    pub const HIGH_32_63: u16 = 4;

    /// The attribute modifier for `block` (one of the selectors above) of switch port `port`.
    pub const fn attr_mod(block: u16, port: PortNum) -> u32 {
        ((block as u32) << 16) | port.0 as u32
    }

    /// Splits an attribute modifier into (block selector, port).
    pub const fn split_attr_mod(attr_mod: u32) -> (u16, PortNum) {
        ((attr_mod >> 16) as u16, PortNum(attr_mod as u8))
    }
}

impl Attribute for VlArbitrationTable {
    const ID: u16 = ids::attr::VL_ARB_TABLE;
    const LEN: usize = 64;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("VLArbitrationTable", buf, Self::LEN)?;
        let mut entries = [VlArbEntry::default(); 32];
        for (e, c) in entries.iter_mut().zip(buf.chunks_exact(2)) {
            *e = VlArbEntry { vl: c[0] & 0xf, weight: c[1] };
        }
        Ok(VlArbitrationTable { entries })
    }

    fn emit(&self, buf: &mut [u8]) {
        for (c, e) in buf[..Self::LEN].chunks_exact_mut(2).zip(&self.entries) {
            c[0] = e.vl & 0xf;
            c[1] = e.weight;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::test_util::{emit_parse_roundtrip, rejects_short};
    use proptest::prelude::*;

    /// ibsim 0.10 `net` example after an OpenSM sweep, `smpquery -D vlarb 0,1 1` (Hca1 port 1).
    /// Low-priority block: smpquery printed VL 0..7 with weights 0,4,4,4,4,4,4,4.
    fn ibsim_low() -> [u8; 64] {
        let mut b = [0u8; 64];
        b[..16].copy_from_slice(&[0, 0, 1, 4, 2, 4, 3, 4, 4, 4, 5, 4, 6, 4, 7, 4]);
        b
    }

    /// Same query, high-priority block: VL 0..7 with weights 4,0,0,0,0,0,0,0.
    fn ibsim_high() -> [u8; 64] {
        let mut b = [0u8; 64];
        b[..16].copy_from_slice(&[0, 4, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0]);
        b
    }

    #[test]
    fn deconstruct_ibsim() {
        let low = VlArbitrationTable::parse(&ibsim_low()).unwrap();
        let vls: Vec<u8> = low.entries[..8].iter().map(|e| e.vl).collect();
        let weights: Vec<u8> = low.entries[..8].iter().map(|e| e.weight).collect();
        assert_eq!(vls, [0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(weights, [0, 4, 4, 4, 4, 4, 4, 4]);
        let high = VlArbitrationTable::parse(&ibsim_high()).unwrap();
        assert_eq!(high.entries[0], VlArbEntry { vl: 0, weight: 4 });
        assert_eq!(high.entries[7], VlArbEntry { vl: 7, weight: 0 });
    }

    #[test]
    fn construct_ibsim_and_reserved_bits() {
        let mut t = VlArbitrationTable::default();
        for (i, e) in t.entries[..8].iter_mut().enumerate() {
            *e = VlArbEntry { vl: i as u8, weight: if i == 0 { 0 } else { 4 } };
        }
        assert_eq!(t.to_vec(), ibsim_low());
        let mut b = ibsim_low();
        b[2] |= 0xf0;
        assert_eq!(VlArbitrationTable::parse(&b).unwrap(), t, "reserved high nibble ignored");
        assert_eq!(VlArbitrationTable::attr_mod(VlArbitrationTable::HIGH_0_31, PortNum(1)), 0x3_0001);
        assert_eq!(VlArbitrationTable::split_attr_mod(0x3_0005), (3, PortNum(5)));
        rejects_short::<VlArbitrationTable>();
    }

    proptest! {
        #[test]
        fn roundtrip(v in any::<[u8; 32]>(), w in any::<[u8; 32]>()) {
            let mut t = VlArbitrationTable::default();
            for (i, e) in t.entries.iter_mut().enumerate() {
                *e = VlArbEntry { vl: v[i] & 0xf, weight: w[i] };
            }
            emit_parse_roundtrip(&t);
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = VlArbitrationTable::parse(&b);
        }
    }
}

//! SLtoVLMappingTable (attribute 0x0017): which VL each of the 16 SLs uses on a port.
//!
//! Eight bytes, two 4-bit VLs per byte: SL 0 in the high nibble of byte 0, SL 15 in the low
//! nibble of byte 7; bytes 8..64 of the SMP data are unused. On a switch the attribute modifier
//! names the pair of ports: bits 0..8 the output port, bits 8..16 the input port.

use crate::{Attribute, PortNum, Result, check_len, ids};

/// The VL (0..=15, where 15 is the management VL) used by each SL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SlToVlTable {
    /// `vls[sl]` is the VL for service level `sl` (4 bits each).
    pub vls: [u8; 16],
}

impl SlToVlTable {
    /// Modifier bit 16: the Set applies to every input port of the output port named in bits
    /// 0..=7 (valid where SwitchInfo.OptimizedSLtoVLMappingProgramming is set).
    pub const ALL_INPUTS: u32 = 1 << 16;

    /// The attribute modifier for a switch's (input port, output port) pair.
    pub const fn attr_mod(input: PortNum, output: PortNum) -> u32 {
        ((input.0 as u32) << 8) | output.0 as u32
    }

    /// Splits an attribute modifier into (input port, output port).
    pub const fn split_attr_mod(attr_mod: u32) -> (PortNum, PortNum) {
        (PortNum((attr_mod >> 8) as u8), PortNum(attr_mod as u8))
    }
}

impl Attribute for SlToVlTable {
    const ID: u16 = ids::attr::SL2VL_TABLE;
    /// The data the table occupies; an SMP carries it in a 64-byte area (the rest zero).
    const LEN: usize = 8;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("SLtoVLMappingTable", buf, Self::LEN)?;
        let mut vls = [0u8; 16];
        for (pair, &b) in vls.chunks_exact_mut(2).zip(buf) {
            pair[0] = b >> 4;
            pair[1] = b & 0xf;
        }
        Ok(SlToVlTable { vls })
    }

    fn emit(&self, buf: &mut [u8]) {
        for (b, pair) in buf[..Self::LEN].iter_mut().zip(self.vls.chunks_exact(2)) {
            *b = ((pair[0] & 0xf) << 4) | (pair[1] & 0xf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::test_util::{emit_parse_roundtrip, rejects_short};
    use proptest::prelude::*;

    /// ibsim 0.10 `net` example, `smpquery -D sl2vl 0,1` (Hca1) and `smpquery -D sl2vl 0 1 3`
    /// (Switch1, every input port to output 1): smpquery printed SL 0..14 -> VL 0..14 and
    /// SL 15 -> VL 7.
    const IBSIM_DEFAULT: [u8; 8] = [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xe7];

    #[test]
    fn deconstruct_and_construct_ibsim() {
        let t = SlToVlTable::parse(&IBSIM_DEFAULT).unwrap();
        let expected = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 7];
        assert_eq!(t.vls, expected);
        assert_eq!(SlToVlTable { vls: expected }.to_vec(), IBSIM_DEFAULT);
        rejects_short::<SlToVlTable>();
    }

    #[test]
    fn attr_mod() {
        assert_eq!(SlToVlTable::attr_mod(PortNum(3), PortNum(1)), 0x0301);
        assert_eq!(SlToVlTable::split_attr_mod(0x0301), (PortNum(3), PortNum(1)));
    }

    proptest! {
        #[test]
        fn roundtrip(v in any::<[u8; 16]>()) {
            emit_parse_roundtrip(&SlToVlTable { vls: v.map(|x| x & 0xf) });
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = SlToVlTable::parse(&b);
        }
    }
}

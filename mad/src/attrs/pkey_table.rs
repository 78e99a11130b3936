//! P_KeyTable (attribute 0x0016): one 32-entry block of a port's partition keys.
//!
//! Attribute modifier: bits 0..16 are the block number (entries `32 * block ..`); on a switch,
//! bits 16..32 name the port (0 = management port). A CA uses the port the SMP arrived on.

use crate::{Attribute, PKey, PortNum, Result, check_len, ids};

/// One block of 32 P_Keys, in table order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PKeyTable {
    /// The keys; [`PKey::INVALID`] (0) marks an empty slot.
    pub keys: [PKey; 32],
}

impl PKeyTable {
    /// Entries per block.
    pub const ENTRIES: usize = 32;

    /// The attribute modifier addressing `block` of switch port `port` (use port 0 for a CA).
    pub const fn attr_mod(port: PortNum, block: u16) -> u32 {
        ((port.0 as u32) << 16) | block as u32
    }

    /// Splits an attribute modifier into (switch port, block number).
    pub const fn split_attr_mod(attr_mod: u32) -> (PortNum, u16) {
        (PortNum((attr_mod >> 16) as u8), attr_mod as u16)
    }
}

impl Attribute for PKeyTable {
    const ID: u16 = ids::attr::PKEY_TABLE;
    const LEN: usize = 64;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("P_KeyTable", buf, Self::LEN)?;
        let mut keys = [PKey(0); 32];
        for (k, c) in keys.iter_mut().zip(buf.chunks_exact(2)) {
            *k = PKey(u16::from_be_bytes([c[0], c[1]]));
        }
        Ok(PKeyTable { keys })
    }

    fn emit(&self, buf: &mut [u8]) {
        for (c, k) in buf[..Self::LEN].chunks_exact_mut(2).zip(&self.keys) {
            c.copy_from_slice(&k.0.to_be_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::test_util::{emit_parse_roundtrip, rejects_short};
    use proptest::prelude::*;

    /// ibsim 0.10 `net` example, `smpquery -D pkeys 0,1 1` (Hca1 port 1), block 0.
    /// smpquery printed entry 0 = 0xffff, all others 0x0000.
    fn ibsim_hca_block0() -> [u8; 64] {
        let mut b = [0u8; 64];
        b[0] = 0xff;
        b[1] = 0xff;
        b
    }

    #[test]
    fn deconstruct_and_construct_ibsim() {
        let t = PKeyTable::parse(&ibsim_hca_block0()).unwrap();
        assert_eq!(t.keys[0], PKey::DEFAULT);
        assert!(t.keys[1..].iter().all(|&k| k == PKey::INVALID));
        let mut u = PKeyTable::default();
        u.keys[0] = PKey::DEFAULT;
        assert_eq!(u.to_vec(), ibsim_hca_block0());
    }

    #[test]
    fn entry_order_and_attr_mod() {
        let mut b = [0u8; 64];
        b[62] = 0x80;
        b[63] = 0x01;
        let t = PKeyTable::parse(&b).unwrap();
        assert_eq!(t.keys[31], PKey::new(1, true));
        assert_eq!(PKeyTable::attr_mod(PortNum(3), 1), 0x0003_0001);
        assert_eq!(PKeyTable::split_attr_mod(0x0003_0001), (PortNum(3), 1));
        rejects_short::<PKeyTable>();
    }

    proptest! {
        #[test]
        fn roundtrip(k in any::<[u16; 32]>()) {
            emit_parse_roundtrip(&PKeyTable { keys: k.map(PKey) });
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = PKeyTable::parse(&b);
        }
    }
}

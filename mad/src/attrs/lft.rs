//! LinearForwardingTable (attribute 0x0019): one 64-LID block of a switch's unicast routes.
//!
//! The attribute modifier is the block number: block `n` holds the egress ports of LIDs
//! `64 * n .. 64 * n + 64`, one byte per LID, in order. Port 0xff means "no route" (drop).

use crate::{Attribute, Lid, PortNum, Result, check_len, ids};

/// One block of 64 LFT entries: `ports[i]` is the egress port for LID `64 * block + i`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LinearForwardingTable {
    /// Egress port per LID of the block; [`LinearForwardingTable::UNROUTED`] drops the packet.
    pub ports: [PortNum; 64],
}

impl LinearForwardingTable {
    /// Entries per block.
    pub const ENTRIES: usize = 64;
    /// The "no route" port value.
    pub const UNROUTED: PortNum = PortNum(0xff);

    /// A block with every entry unrouted.
    pub const fn unrouted() -> LinearForwardingTable {
        LinearForwardingTable { ports: [Self::UNROUTED; 64] }
    }

    /// The attribute modifier (block number) of the block holding `lid`.
    pub const fn block_of(lid: Lid) -> u32 {
        (lid.0 / 64) as u32
    }

    /// Index of `lid` inside its block.
    pub const fn index_of(lid: Lid) -> usize {
        (lid.0 % 64) as usize
    }

    /// The first LID of block `block`, or `None` if the block lies beyond the LID space.
    pub fn first_lid(block: u32) -> Option<Lid> {
        block.checked_mul(64).and_then(|l| u16::try_from(l).ok()).map(Lid)
    }

    /// The route for `lid`, which must belong to this block (only its index is used);
    /// `None` when the entry is unrouted.
    pub fn port_for(&self, lid: Lid) -> Option<PortNum> {
        let p = self.ports[Self::index_of(lid)];
        (p != Self::UNROUTED).then_some(p)
    }
}

impl Default for LinearForwardingTable {
    fn default() -> Self {
        Self::unrouted()
    }
}

impl Attribute for LinearForwardingTable {
    const ID: u16 = ids::attr::LFT;
    const LEN: usize = 64;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("LinearForwardingTable", buf, Self::LEN)?;
        let mut ports = [PortNum(0); 64];
        for (p, &b) in ports.iter_mut().zip(buf) {
            *p = PortNum(b);
        }
        Ok(LinearForwardingTable { ports })
    }

    fn emit(&self, buf: &mut [u8]) {
        for (b, p) in buf[..Self::LEN].iter_mut().zip(&self.ports) {
            *b = p.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::test_util::{emit_parse_roundtrip, rejects_short};
    use proptest::prelude::*;

    /// ibsim 0.10 `net` example after an OpenSM sweep, `ibroute -D 0` (Switch1), block 0.
    /// ibroute printed: LID 1 -> port 0, LID 2 -> 1, LID 3 -> 3, LID 4 -> 2; ibsim fills the
    /// rest with 0xff.
    fn ibsim_block0() -> [u8; 64] {
        let mut b = [0xffu8; 64];
        b[1..5].copy_from_slice(&[0x00, 0x01, 0x03, 0x02]);
        b
    }

    #[test]
    fn deconstruct_ibsim() {
        let t = LinearForwardingTable::parse(&ibsim_block0()).unwrap();
        assert_eq!(t.port_for(Lid(0)), None);
        assert_eq!(t.port_for(Lid(1)), Some(PortNum(0)));
        assert_eq!(t.port_for(Lid(2)), Some(PortNum(1)));
        assert_eq!(t.port_for(Lid(3)), Some(PortNum(3)));
        assert_eq!(t.port_for(Lid(4)), Some(PortNum(2)));
        assert!((5..64).all(|l| t.port_for(Lid(l)).is_none()));
    }

    #[test]
    fn construct_ibsim() {
        let mut t = LinearForwardingTable::unrouted();
        t.ports[1] = PortNum(0);
        t.ports[2] = PortNum(1);
        t.ports[3] = PortNum(3);
        t.ports[4] = PortNum(2);
        assert_eq!(t.to_vec(), ibsim_block0());
        rejects_short::<LinearForwardingTable>();
    }

    #[test]
    fn block_arithmetic() {
        assert_eq!(LinearForwardingTable::block_of(Lid(0xbfff)), 767);
        assert_eq!(LinearForwardingTable::index_of(Lid(0xbfff)), 63);
        assert_eq!(LinearForwardingTable::first_lid(767), Some(Lid(0xbfc0)));
        assert_eq!(LinearForwardingTable::first_lid(1024), None);
        assert_eq!(LinearForwardingTable::first_lid(u32::MAX), None);
    }

    proptest! {
        #[test]
        fn roundtrip(a in any::<[u8; 32]>(), b in any::<[u8; 32]>()) {
            let mut t = LinearForwardingTable::unrouted();
            for (i, v) in a.iter().chain(&b).enumerate() {
                t.ports[i] = PortNum(*v);
            }
            emit_parse_roundtrip(&t);
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = LinearForwardingTable::parse(&b);
        }
    }
}

//! GUIDInfo (attribute 0x0014): one block of 8 GUIDs assigned to a port (alias GUIDs).
//!
//! The attribute modifier is the block number: block `n` holds GUID indices `8 * n .. 8 * n + 8`.
//! Index 0 is the port's own GUID and is read-only.

use crate::bits;
use crate::{Attribute, Guid, Result, check_len, ids};

/// One block of 8 port GUIDs; `Guid(0)` marks an unused slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct GuidInfo {
    /// The GUIDs of the block, in index order.
    pub guids: [Guid; 8],
}

impl GuidInfo {
    /// Entries per block.
    pub const ENTRIES: usize = 8;
}

impl Attribute for GuidInfo {
    const ID: u16 = ids::attr::GUID_INFO;
    const LEN: usize = 64;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("GUIDInfo", buf, Self::LEN)?;
        let mut guids = [Guid(0); 8];
        for (i, g) in guids.iter_mut().enumerate() {
            *g = Guid(bits::u64_at(buf, 8 * i));
        }
        Ok(GuidInfo { guids })
    }

    fn emit(&self, buf: &mut [u8]) {
        for (i, g) in self.guids.iter().enumerate() {
            bits::put_u64(buf, 8 * i, g.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::test_util::{emit_parse_roundtrip, rejects_short};
    use proptest::prelude::*;

    /// ibsim 0.10 `net` example, `smpquery -D guidinfo 0,1` (Hca1 port 1), block 0.
    /// smpquery printed entry 0 = 0x0000000000100001, all others 0.
    fn ibsim_hca_block0() -> [u8; 64] {
        let mut b = [0u8; 64];
        b[5] = 0x10;
        b[7] = 0x01;
        b
    }

    #[test]
    fn deconstruct_and_construct_ibsim() {
        let g = GuidInfo::parse(&ibsim_hca_block0()).unwrap();
        assert_eq!(g.guids[0], Guid(0x10_0001));
        assert!(g.guids[1..].iter().all(|&x| x == Guid(0)));
        let mut h = GuidInfo::default();
        h.guids[0] = Guid(0x10_0001);
        assert_eq!(h.to_vec(), ibsim_hca_block0());
    }

    #[test]
    fn order_and_short() {
        let mut b = [0u8; 64];
        b[56..].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(GuidInfo::parse(&b).unwrap().guids[7], Guid(0x0102_0304_0506_0708));
        rejects_short::<GuidInfo>();
    }

    proptest! {
        #[test]
        fn roundtrip(g in any::<[u64; 8]>()) {
            emit_parse_roundtrip(&GuidInfo { guids: g.map(Guid) });
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = GuidInfo::parse(&b);
        }
    }
}

//! SMInfo (attribute 0x0020): what SMs exchange to elect and watch the master.
//!
//! Layout (IBTA 14.2.5.13), bit offset/width: GUID 0/64, SM_Key 64/64, ActCount 128/32,
//! Priority 160/4, SMState 164/4, reserved 168..512.

use super::{put_small, small, wire_enum};
use crate::bits;
use crate::{Attribute, Guid, Result, check_len, ids};

wire_enum! {
    /// SMInfo.SMState: the state of the SM that answered.
    pub enum SmState: 4 bits {
        /// Not participating (disabled or not started).
        NotActive = 0,
        /// Sweeping the fabric to find other SMs.
        Discovering = 1,
        /// Watching a master, ready to take over.
        Standby = 2,
        /// The master SM of the subnet.
        Master = 3,
    }
}

/// SMInfo: one SM's identity, key, liveness counter, priority and state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SmInfo {
    /// Port GUID of the SM.
    pub guid: Guid,
    /// SM_Key; only returned to requesters that know it (otherwise reads as 0).
    pub sm_key: u64,
    /// Counter the master increments while alive; a standby polls it to detect a dead master.
    pub act_count: u32,
    /// Election priority, 0..=15; higher wins, ties go to the lower GUID (4 bits).
    pub priority: u8,
    /// The SM's state.
    pub sm_state: SmState,
}

impl Attribute for SmInfo {
    const ID: u16 = ids::attr::SM_INFO;
    const LEN: usize = 64;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("SMInfo", buf, Self::LEN)?;
        Ok(SmInfo {
            guid: Guid(bits::u64_at(buf, 0)),
            sm_key: bits::u64_at(buf, 8),
            act_count: bits::u32_at(buf, 16),
            priority: small(buf, 160, 4),
            sm_state: SmState::from_raw(small(buf, 164, 4)),
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        let b = &mut buf[..Self::LEN];
        b.fill(0);
        bits::put_u64(b, 0, self.guid.0);
        bits::put_u64(b, 8, self.sm_key);
        bits::put_u32(b, 16, self.act_count);
        put_small(b, 160, 4, self.priority);
        put_small(b, 164, 4, self.sm_state.raw());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::test_util::{emit_parse_roundtrip, rejects_short};
    use proptest::prelude::*;

    /// OpenSM 3.3.23 (`-p 5`) on ibsim's Switch1, answering `sminfo` from Hca1 (LID-routed
    /// GetResp data bytes 64..84; the rest is zero). sminfo printed: guid 0x200000, activity
    /// count 66, priority 5, state 3 SMINFO_MASTER. SM_Key is OpenSM's default, 1.
    const OPENSM_MASTER: [u8; 21] = [
        0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
        0x00, 0x42, 0x53,
    ];

    /// Encoded by libibmad 44.0 `mad_set_field`: guid 0x0002c90300a1b2c3, key
    /// 0xfedcba9876543210, act 0x89abcdef, priority 14, state 2.
    const LIBIBMAD_STANDBY: [u8; 21] = [
        0x00, 0x02, 0xc9, 0x03, 0x00, 0xa1, 0xb2, 0xc3, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10, 0x89, 0xab,
        0xcd, 0xef, 0xe2,
    ];

    fn pad(head: &[u8]) -> [u8; 64] {
        let mut b = [0u8; 64];
        b[..head.len()].copy_from_slice(head);
        b
    }

    #[test]
    fn deconstruct_opensm() {
        let s = SmInfo::parse(&pad(&OPENSM_MASTER)).unwrap();
        assert_eq!(s.guid, Guid(0x20_0000));
        assert_eq!(s.sm_key, 1);
        assert_eq!(s.act_count, 66);
        assert_eq!(s.priority, 5);
        assert_eq!(s.sm_state, SmState::Master);
        assert_eq!(s.to_vec(), pad(&OPENSM_MASTER));
    }

    #[test]
    fn construct_matches_libibmad() {
        let s = SmInfo {
            guid: Guid(0x0002_c903_00a1_b2c3),
            sm_key: 0xfedc_ba98_7654_3210,
            act_count: 0x89ab_cdef,
            priority: 14,
            sm_state: SmState::Standby,
        };
        assert_eq!(s.to_vec(), pad(&LIBIBMAD_STANDBY));
        assert_eq!(SmInfo::parse(&pad(&LIBIBMAD_STANDBY)).unwrap(), s);
        rejects_short::<SmInfo>();
    }

    prop_compose! {
        fn arb_sm_info()(g in any::<u64>(), k in any::<u64>(), a in any::<u32>(), ps in any::<u8>())
            -> SmInfo {
            SmInfo {
                guid: Guid(g),
                sm_key: k,
                act_count: a,
                priority: ps >> 4,
                sm_state: SmState::from_raw(ps & 0xf),
            }
        }
    }

    proptest! {
        #[test]
        fn roundtrip(s in arb_sm_info()) {
            emit_parse_roundtrip(&s);
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = SmInfo::parse(&b);
        }
    }
}

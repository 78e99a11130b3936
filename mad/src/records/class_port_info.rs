//! ClassPortInfo (IBTA vol. 1, 13.4.8.1): the per-class description of a GSI/SMI agent.
//!
//! Every management class answers Get(ClassPortInfo); the SA uses it to advertise its
//! capabilities and response time, and subscribers read the trap fields from it. The same layout
//! serves all classes, so [`ClassPortInfo::ID`] is the class-independent id 0x0001. 72 bytes.

use crate::records::{gid_at, put_gid};
use crate::{Attribute, Gid, Lid, PKey, Result, bits, check_len, ids};

/// ClassPortInfo. Field widths below 8/16/32 bits are noted; `emit` masks to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClassPortInfo {
    /// BaseVersion of the MADs this class supports (1).
    pub base_version: u8,
    /// ClassVersion supported.
    pub class_version: u8,
    /// CapabilityMask (class-specific bits in 8..15).
    pub capability_mask: u16,
    /// CapabilityMask2 (27 bits).
    pub capability_mask2: u32,
    /// RespTimeValue (5 bits): response time is 4.096 µs × 2^value.
    pub resp_time_value: u8,
    /// RedirectGID.
    pub redirect_gid: Gid,
    /// RedirectTC.
    pub redirect_tc: u8,
    /// RedirectSL (4 bits).
    pub redirect_sl: u8,
    /// RedirectFL (20 bits).
    pub redirect_fl: u32,
    /// RedirectLID (0: no redirection).
    pub redirect_lid: Lid,
    /// RedirectP_Key.
    pub redirect_pkey: PKey,
    /// RedirectQP (24 bits).
    pub redirect_qp: u32,
    /// RedirectQ_Key.
    pub redirect_qkey: u32,
    /// TrapGID.
    pub trap_gid: Gid,
    /// TrapTC.
    pub trap_tc: u8,
    /// TrapSL (4 bits).
    pub trap_sl: u8,
    /// TrapFL (20 bits).
    pub trap_fl: u32,
    /// TrapLID.
    pub trap_lid: Lid,
    /// TrapP_Key.
    pub trap_pkey: PKey,
    /// TrapHL (hop limit).
    pub trap_hl: u8,
    /// TrapQP (24 bits).
    pub trap_qp: u32,
    /// TrapQ_Key.
    pub trap_qkey: u32,
}

impl ClassPortInfo {
    /// CapabilityMask bit 0: the class can generate traps.
    pub const CAP_IS_TRAP_SUPPORTED: u16 = 1 << 0;
    /// CapabilityMask bit 1: the class implements Get(Notice) and Set(Notice).
    pub const CAP_IS_NOTICE_SUPPORTED: u16 = 1 << 1;
}

impl Attribute for ClassPortInfo {
    const ID: u16 = ids::sa_attr::CLASS_PORT_INFO;
    const LEN: usize = 72;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("ClassPortInfo", buf, Self::LEN)?;
        let g = |bit, width| bits::get(buf, bit, width);
        Ok(ClassPortInfo {
            base_version: g(0, 8) as u8,
            class_version: g(8, 8) as u8,
            capability_mask: g(16, 16) as u16,
            capability_mask2: g(32, 27) as u32,
            resp_time_value: g(59, 5) as u8,
            redirect_gid: gid_at(buf, 8),
            redirect_tc: g(192, 8) as u8,
            redirect_sl: g(200, 4) as u8,
            redirect_fl: g(204, 20) as u32,
            redirect_lid: Lid(g(224, 16) as u16),
            redirect_pkey: PKey(g(240, 16) as u16),
            redirect_qp: g(264, 24) as u32,
            redirect_qkey: g(288, 32) as u32,
            trap_gid: gid_at(buf, 40),
            trap_tc: g(448, 8) as u8,
            trap_sl: g(456, 4) as u8,
            trap_fl: g(460, 20) as u32,
            trap_lid: Lid(g(480, 16) as u16),
            trap_pkey: PKey(g(496, 16) as u16),
            trap_hl: g(512, 8) as u8,
            trap_qp: g(520, 24) as u32,
            trap_qkey: g(544, 32) as u32,
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        let end = Self::LEN.min(buf.len());
        buf[..end].fill(0);
        let mut s = |bit, width, v: u64| bits::set(buf, bit, width, v);
        s(0, 8, self.base_version.into());
        s(8, 8, self.class_version.into());
        s(16, 16, self.capability_mask.into());
        s(32, 27, self.capability_mask2.into());
        s(59, 5, self.resp_time_value.into());
        s(192, 8, self.redirect_tc.into());
        s(200, 4, self.redirect_sl.into());
        s(204, 20, self.redirect_fl.into());
        s(224, 16, self.redirect_lid.0.into());
        s(240, 16, self.redirect_pkey.0.into());
        s(264, 24, self.redirect_qp.into());
        s(288, 32, self.redirect_qkey.into());
        s(448, 8, self.trap_tc.into());
        s(456, 4, self.trap_sl.into());
        s(460, 20, self.trap_fl.into());
        s(480, 16, self.trap_lid.0.into());
        s(496, 16, self.trap_pkey.0.into());
        s(512, 8, self.trap_hl.into());
        s(520, 24, self.trap_qp.into());
        s(544, 32, self.trap_qkey.into());
        put_gid(buf, 8, self.redirect_gid);
        put_gid(buf, 40, self.trap_gid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Guid;
    use crate::records::testutil::{emit_short_is_safe, hex, rejects_short, round_trip};
    use proptest::prelude::*;

    /// libibmad 44.0 `mad_set_field`/`mad_set_array` with IB_CPI_*_F: BaseVersion=1
    /// ClassVersion=2 CapabilityMask=0x2602 CapabilityMask2=0x5a5a5a5 RespTimeValue=0x12
    /// RedirectGID=fe80::2:c903:0:1 RedirectTC=0xab RedirectSL=7 RedirectFL=0xfedcb
    /// RedirectLID=0x1234 RedirectP_Key=0x8765 RedirectQP=0xabcdef RedirectQ_Key=0x80010000
    /// TrapGID=fe80::2:c903:0:2 TrapTC=0xcd TrapSL=0xe TrapFL=0x54321 TrapLID=0x4321
    /// TrapP_Key=0x7fff TrapHL=0x40 TrapQP=1 TrapQ_Key=0x12345678.
    const LIBIBMAD: &str = "
        01 02 26 02 b4 b4 b4 b2 fe 80 00 00 00 00 00 00
        00 02 c9 03 00 00 00 01 ab 7f ed cb 12 34 87 65
        00 ab cd ef 80 01 00 00 fe 80 00 00 00 00 00 00
        00 02 c9 03 00 00 00 02 cd e5 43 21 43 21 7f ff
        40 00 00 01 12 34 56 78";

    fn expected() -> ClassPortInfo {
        ClassPortInfo {
            base_version: 1,
            class_version: 2,
            capability_mask: 0x2602,
            capability_mask2: 0x05a5_a5a5,
            resp_time_value: 0x12,
            redirect_gid: Gid { prefix: 0xfe80_0000_0000_0000, guid: Guid(0x0002_c903_0000_0001) },
            redirect_tc: 0xab,
            redirect_sl: 7,
            redirect_fl: 0xf_edcb,
            redirect_lid: Lid(0x1234),
            redirect_pkey: PKey(0x8765),
            redirect_qp: 0xab_cdef,
            redirect_qkey: 0x8001_0000,
            trap_gid: Gid { prefix: 0xfe80_0000_0000_0000, guid: Guid(0x0002_c903_0000_0002) },
            trap_tc: 0xcd,
            trap_sl: 0xe,
            trap_fl: 0x5_4321,
            trap_lid: Lid(0x4321),
            trap_pkey: PKey(0x7fff),
            trap_hl: 0x40,
            trap_qp: 1,
            trap_qkey: 0x1234_5678,
        }
    }

    #[test]
    fn parse_libibmad_fixture() {
        assert_eq!(ClassPortInfo::parse(&hex(LIBIBMAD)).unwrap(), expected());
    }

    #[test]
    fn emit_matches_libibmad_fixture() {
        assert_eq!(expected().to_vec(), hex(LIBIBMAD));
    }

    #[test]
    fn short_input_is_truncated() {
        rejects_short::<ClassPortInfo>(&hex(LIBIBMAD));
        emit_short_is_safe(&expected());
    }

    proptest! {
        #[test]
        fn round_trips(b in proptest::collection::vec(any::<u8>(), ClassPortInfo::LEN)) {
            round_trip(&ClassPortInfo::parse(&b).unwrap());
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = ClassPortInfo::parse(&b);
        }
    }
}

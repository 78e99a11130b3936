//! MCMemberRecord (IBTA vol. 1, 15.2.5.17): multicast group creation, join and leave.
//!
//! Clients Set this record to join a group and Delete it to leave; the SA answers with the
//! group's MLID and path parameters. 52 bytes. Group bookkeeping is the SA's job, not this file's.

use crate::records::{Mtu, Rate, Selector, comp, flag, gid_at, put_gid, set_flag};
use crate::{Attribute, Gid, Lid, PKey, Result, bits, check_len, ids};

/// The 4-bit JoinState of a multicast membership: a set of membership kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct JoinState(pub u8);

impl JoinState {
    /// Bit 0: full member.
    pub const FULL_MEMBER: JoinState = JoinState(1 << 0);
    /// Bit 1: non member.
    pub const NON_MEMBER: JoinState = JoinState(1 << 1);
    /// Bit 2: send-only non member.
    pub const SEND_ONLY_NON_MEMBER: JoinState = JoinState(1 << 2);
    /// Bit 3: send-only full member.
    pub const SEND_ONLY_FULL_MEMBER: JoinState = JoinState(1 << 3);

    /// Whether every bit of `other` is set in `self`.
    pub const fn contains(self, other: JoinState) -> bool {
        self.0 & other.0 == other.0
    }
    /// The union of two states.
    #[must_use]
    pub const fn union(self, other: JoinState) -> JoinState {
        JoinState(self.0 | other.0)
    }
    /// `self` without the bits of `other` (what remains after a partial leave).
    #[must_use]
    pub const fn without(self, other: JoinState) -> JoinState {
        JoinState(self.0 & !other.0)
    }
    /// No membership bit (bits 0..4) is set.
    pub const fn is_empty(self) -> bool {
        self.0.trailing_zeros() >= 4
    }
}

/// MCMemberRecord.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct McMemberRecord {
    /// MGID: the group's multicast GID.
    pub mgid: Gid,
    /// PortGID: the member port.
    pub port_gid: Gid,
    /// Q_Key of the group.
    pub qkey: u32,
    /// MLID of the group.
    pub mlid: Lid,
    /// MTUSelector.
    pub mtu_selector: Selector,
    /// MTU.
    pub mtu: Mtu,
    /// TClass.
    pub tclass: u8,
    /// P_Key of the group.
    pub pkey: PKey,
    /// RateSelector.
    pub rate_selector: Selector,
    /// Rate.
    pub rate: Rate,
    /// PacketLifeTimeSelector.
    pub packet_life_time_selector: Selector,
    /// PacketLifeTime (6 bits).
    pub packet_life_time: u8,
    /// SL (4 bits).
    pub sl: u8,
    /// FlowLabel (20 bits).
    pub flow_label: u32,
    /// HopLimit.
    pub hop_limit: u8,
    /// Scope (4 bits), as in the MGID.
    pub scope: u8,
    /// JoinState (4 bits).
    pub join_state: JoinState,
    /// ProxyJoin: the requester joins on behalf of PortGID.
    pub proxy_join: bool,
}

impl McMemberRecord {
    /// ComponentMask: MGID.
    pub const COMP_MGID: u64 = comp(0);
    /// ComponentMask: PortGID.
    pub const COMP_PORT_GID: u64 = comp(1);
    /// ComponentMask: Q_Key.
    pub const COMP_QKEY: u64 = comp(2);
    /// ComponentMask: MLID.
    pub const COMP_MLID: u64 = comp(3);
    /// ComponentMask: MTUSelector.
    pub const COMP_MTU_SELECTOR: u64 = comp(4);
    /// ComponentMask: MTU.
    pub const COMP_MTU: u64 = comp(5);
    /// ComponentMask: TClass.
    pub const COMP_TCLASS: u64 = comp(6);
    /// ComponentMask: P_Key.
    pub const COMP_PKEY: u64 = comp(7);
    /// ComponentMask: RateSelector.
    pub const COMP_RATE_SELECTOR: u64 = comp(8);
    /// ComponentMask: Rate.
    pub const COMP_RATE: u64 = comp(9);
    /// ComponentMask: PacketLifeTimeSelector.
    pub const COMP_PACKET_LIFE_TIME_SELECTOR: u64 = comp(10);
    /// ComponentMask: PacketLifeTime.
    pub const COMP_PACKET_LIFE_TIME: u64 = comp(11);
    /// ComponentMask: SL.
    pub const COMP_SL: u64 = comp(12);
    /// ComponentMask: FlowLabel.
    pub const COMP_FLOW_LABEL: u64 = comp(13);
    /// ComponentMask: HopLimit.
    pub const COMP_HOP_LIMIT: u64 = comp(14);
    /// ComponentMask: Scope.
    pub const COMP_SCOPE: u64 = comp(15);
    /// ComponentMask: JoinState.
    pub const COMP_JOIN_STATE: u64 = comp(16);
    /// ComponentMask: ProxyJoin.
    pub const COMP_PROXY_JOIN: u64 = comp(17);
    /// ComponentMask: the trailing reserved bits.
    pub const COMP_RESERVED1: u64 = comp(18);
}

impl Attribute for McMemberRecord {
    const ID: u16 = ids::sa_attr::MC_MEMBER_RECORD;
    const LEN: usize = 52;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("MCMemberRecord", buf, Self::LEN)?;
        let g = |bit, width| bits::get(buf, bit, width);
        Ok(McMemberRecord {
            mgid: gid_at(buf, 0),
            port_gid: gid_at(buf, 16),
            qkey: g(256, 32) as u32,
            mlid: Lid(g(288, 16) as u16),
            mtu_selector: Selector::from_raw(g(304, 2) as u8),
            mtu: Mtu::from_raw(g(306, 6) as u8),
            tclass: g(312, 8) as u8,
            pkey: PKey(g(320, 16) as u16),
            rate_selector: Selector::from_raw(g(336, 2) as u8),
            rate: Rate::from_raw(g(338, 6) as u8),
            packet_life_time_selector: Selector::from_raw(g(344, 2) as u8),
            packet_life_time: g(346, 6) as u8,
            sl: g(352, 4) as u8,
            flow_label: g(356, 20) as u32,
            hop_limit: g(376, 8) as u8,
            scope: g(384, 4) as u8,
            join_state: JoinState(g(388, 4) as u8),
            proxy_join: flag(buf, 392),
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        let end = Self::LEN.min(buf.len());
        buf[..end].fill(0);
        put_gid(buf, 0, self.mgid);
        put_gid(buf, 16, self.port_gid);
        set_flag(buf, 392, self.proxy_join);
        let mut s = |bit, width, v: u64| bits::set(buf, bit, width, v);
        s(256, 32, self.qkey.into());
        s(288, 16, self.mlid.0.into());
        s(304, 2, self.mtu_selector.raw().into());
        s(306, 6, self.mtu.raw().into());
        s(312, 8, self.tclass.into());
        s(320, 16, self.pkey.0.into());
        s(336, 2, self.rate_selector.raw().into());
        s(338, 6, self.rate.raw().into());
        s(344, 2, self.packet_life_time_selector.raw().into());
        s(346, 6, self.packet_life_time.into());
        s(352, 4, self.sl.into());
        s(356, 20, self.flow_label.into());
        s(376, 8, self.hop_limit.into());
        s(384, 4, self.scope.into());
        s(388, 4, self.join_state.0.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Guid;
    use crate::records::testutil::{emit_short_is_safe, hex, rejects_short, round_trip};
    use proptest::prelude::*;

    /// libibmad 44.0 `mad_set_field`/`mad_set_array` with IB_SA_MCM_*_F:
    /// MGID=ff12:401b:ffff::ffff:ffff PortGID=fe80::2:c903:ab:cdef Q_Key=0xb1b MLID=0xc001 SL=2
    /// MTU=4 Rate=3 TClass=0x12 P_Key=0xffff FlowLabel=0x12345 JoinState=1 ProxyJoin=1.
    const LIBIBMAD: &str = "
        ff 12 40 1b ff ff 00 00 00 00 00 00 ff ff ff ff
        fe 80 00 00 00 00 00 00 00 02 c9 03 00 ab cd ef
        00 00 0b 1b c0 01 04 12 ff ff 03 00 21 23 45 00
        01 80 00 00";

    /// OpenSM 3.3.23 `ib_member_rec_t` with `ib_member_set_sl_flow_hop` and
    /// `ib_member_set_scope_state`: MGID=ff15:401b:ffff::fb PortGID=fe80::2:c903:ab:cdef
    /// Q_Key=0x80010000 MLID=0xc00f MTU=Largest 4096 TClass=0x5a P_Key=0x7fff
    /// Rate=GreaterThan 100 Gb/s PacketLifeTime=Exactly 63 SL=15 FlowLabel=0xfffff HopLimit=255
    /// Scope=5 JoinState=0xe (ProxyJoin left 0: OpenSM declares it as a C bit-field).
    const OPENSM: &str = "
        ff 15 40 1b ff ff 00 00 00 00 00 00 00 00 00 fb
        fe 80 00 00 00 00 00 00 00 02 c9 03 00 ab cd ef
        80 01 00 00 c0 0f c5 5a 7f ff 10 bf ff ff ff ff
        5e 00 00 00";

    fn port_gid() -> Gid {
        Gid { prefix: 0xfe80_0000_0000_0000, guid: Guid(0x0002_c903_00ab_cdef) }
    }

    fn libibmad_record() -> McMemberRecord {
        McMemberRecord {
            mgid: Gid { prefix: 0xff12_401b_ffff_0000, guid: Guid(0xffff_ffff) },
            port_gid: port_gid(),
            qkey: 0xb1b,
            mlid: Lid(0xc001),
            sl: 2,
            mtu: Mtu::Mtu2048,
            rate: Rate::Gbps10,
            tclass: 0x12,
            pkey: PKey(0xffff),
            flow_label: 0x1_2345,
            join_state: JoinState::FULL_MEMBER,
            proxy_join: true,
            ..McMemberRecord::default()
        }
    }

    fn opensm_record() -> McMemberRecord {
        McMemberRecord {
            mgid: Gid { prefix: 0xff15_401b_ffff_0000, guid: Guid(0xfb) },
            port_gid: port_gid(),
            qkey: 0x8001_0000,
            mlid: Lid(0xc00f),
            mtu_selector: Selector::Largest,
            mtu: Mtu::Mtu4096,
            tclass: 0x5a,
            pkey: PKey(0x7fff),
            rate_selector: Selector::GreaterThan,
            rate: Rate::Gbps100,
            packet_life_time_selector: Selector::Exactly,
            packet_life_time: 63,
            sl: 15,
            flow_label: 0xf_ffff,
            hop_limit: 255,
            scope: 5,
            join_state: JoinState(0xe),
            proxy_join: false,
        }
    }

    #[test]
    fn parse_fixtures() {
        assert_eq!(McMemberRecord::parse(&hex(LIBIBMAD)).unwrap(), libibmad_record());
        assert_eq!(McMemberRecord::parse(&hex(OPENSM)).unwrap(), opensm_record());
    }

    #[test]
    fn emit_matches_fixtures() {
        assert_eq!(libibmad_record().to_vec(), hex(LIBIBMAD));
        assert_eq!(opensm_record().to_vec(), hex(OPENSM));
    }

    #[test]
    fn short_input_is_truncated() {
        rejects_short::<McMemberRecord>(&hex(LIBIBMAD));
        emit_short_is_safe(&opensm_record());
    }

    #[test]
    fn join_state_sets() {
        let s = JoinState::FULL_MEMBER.union(JoinState::SEND_ONLY_NON_MEMBER);
        assert_eq!(s, JoinState(0b0101));
        assert!(s.contains(JoinState::FULL_MEMBER) && !s.contains(JoinState::NON_MEMBER));
        assert_eq!(s.without(JoinState::FULL_MEMBER), JoinState::SEND_ONLY_NON_MEMBER);
        assert!(s.without(s).is_empty());
    }

    proptest! {
        #[test]
        fn round_trips(b in proptest::collection::vec(any::<u8>(), McMemberRecord::LEN)) {
            round_trip(&McMemberRecord::parse(&b).unwrap());
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = McMemberRecord::parse(&b);
        }
    }
}

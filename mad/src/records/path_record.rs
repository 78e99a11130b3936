//! PathRecord (IBTA vol. 1, 15.2.5.16): the properties of one path between two ports.
//!
//! The SA answers Get/GetTable(PathRecord) with the LIDs, SL, MTU, rate and lifetime a client
//! must use to reach a destination. 64 bytes; only the layout lives here, path computation is
//! the SA's job.

use crate::records::{Mtu, Rate, Selector, comp, flag, gid_at};
use crate::{Attribute, Gid, Lid, PKey, Result, bits, ids};

/// PathRecord.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PathRecord {
    /// ServiceID (formerly reserved).
    pub service_id: u64,
    /// Destination GID.
    pub dgid: Gid,
    /// Source GID.
    pub sgid: Gid,
    /// Destination LID.
    pub dlid: Lid,
    /// Source LID.
    pub slid: Lid,
    /// RawTraffic: the path is for raw (non-IBA) packets.
    pub raw_traffic: bool,
    /// FlowLabel (20 bits).
    pub flow_label: u32,
    /// HopLimit.
    pub hop_limit: u8,
    /// TClass.
    pub tclass: u8,
    /// Reversible: the path is usable in both directions.
    pub reversible: bool,
    /// NumbPath (7 bits): in a request, the most paths to return.
    pub numb_path: u8,
    /// P_Key.
    pub pkey: PKey,
    /// QoSClass (12 bits).
    pub qos_class: u16,
    /// SL (4 bits).
    pub sl: u8,
    /// MTUSelector.
    pub mtu_selector: Selector,
    /// MTU.
    pub mtu: Mtu,
    /// RateSelector.
    pub rate_selector: Selector,
    /// Rate.
    pub rate: Rate,
    /// PacketLifeTimeSelector.
    pub packet_life_time_selector: Selector,
    /// PacketLifeTime (6 bits): 4.096 µs × 2^value.
    pub packet_life_time: u8,
    /// Preference: 0 for the preferred path of a set.
    pub preference: u8,
}

impl PathRecord {
    /// ComponentMask: ServiceID, upper half (spec component 0).
    pub const COMP_SERVICE_ID_HI: u64 = comp(0);
    /// ComponentMask: ServiceID, lower half (spec component 1).
    pub const COMP_SERVICE_ID_LO: u64 = comp(1);
    /// ComponentMask: both ServiceID components.
    pub const COMP_SERVICE_ID: u64 = comp(0) | comp(1);
    /// ComponentMask: DGID.
    pub const COMP_DGID: u64 = comp(2);
    /// ComponentMask: SGID.
    pub const COMP_SGID: u64 = comp(3);
    /// ComponentMask: DLID.
    pub const COMP_DLID: u64 = comp(4);
    /// ComponentMask: SLID.
    pub const COMP_SLID: u64 = comp(5);
    /// ComponentMask: RawTraffic.
    pub const COMP_RAW_TRAFFIC: u64 = comp(6);
    /// ComponentMask: the reserved bits after RawTraffic.
    pub const COMP_RESERVED1: u64 = comp(7);
    /// ComponentMask: FlowLabel.
    pub const COMP_FLOW_LABEL: u64 = comp(8);
    /// ComponentMask: HopLimit.
    pub const COMP_HOP_LIMIT: u64 = comp(9);
    /// ComponentMask: TClass.
    pub const COMP_TCLASS: u64 = comp(10);
    /// ComponentMask: Reversible.
    pub const COMP_REVERSIBLE: u64 = comp(11);
    /// ComponentMask: NumbPath.
    pub const COMP_NUMB_PATH: u64 = comp(12);
    /// ComponentMask: P_Key.
    pub const COMP_PKEY: u64 = comp(13);
    /// ComponentMask: QoSClass.
    pub const COMP_QOS_CLASS: u64 = comp(14);
    /// ComponentMask: SL.
    pub const COMP_SL: u64 = comp(15);
    /// ComponentMask: MTUSelector.
    pub const COMP_MTU_SELECTOR: u64 = comp(16);
    /// ComponentMask: MTU.
    pub const COMP_MTU: u64 = comp(17);
    /// ComponentMask: RateSelector.
    pub const COMP_RATE_SELECTOR: u64 = comp(18);
    /// ComponentMask: Rate.
    pub const COMP_RATE: u64 = comp(19);
    /// ComponentMask: PacketLifeTimeSelector.
    pub const COMP_PACKET_LIFE_TIME_SELECTOR: u64 = comp(20);
    /// ComponentMask: PacketLifeTime.
    pub const COMP_PACKET_LIFE_TIME: u64 = comp(21);
    /// ComponentMask: Preference.
    pub const COMP_PREFERENCE: u64 = comp(22);
}

impl Attribute for PathRecord {
    const ID: u16 = ids::sa_attr::PATH_RECORD;
    const LEN: usize = 64;

    fn parse(buf: &[u8]) -> Result<Self> {
        // Read from the record's 64 bytes as an array (the error `check_len` gives when there
        // are fewer): with the length known, the field readers' bounds checks fold away (the
        // SA reads one per PathRecord request).
        let Some(buf) = buf.first_chunk::<{ Self::LEN }>() else {
            return Err(crate::Error::Truncated { what: "PathRecord", need: Self::LEN, got: buf.len() });
        };
        let buf = &buf[..];
        let g = |bit, width| bits::get(buf, bit, width);
        Ok(PathRecord {
            service_id: g(0, 64),
            dgid: gid_at(buf, 8),
            sgid: gid_at(buf, 24),
            dlid: Lid(g(320, 16) as u16),
            slid: Lid(g(336, 16) as u16),
            raw_traffic: flag(buf, 352),
            flow_label: g(356, 20) as u32,
            hop_limit: g(376, 8) as u8,
            tclass: g(384, 8) as u8,
            reversible: flag(buf, 392),
            numb_path: g(393, 7) as u8,
            pkey: PKey(g(400, 16) as u16),
            qos_class: g(416, 12) as u16,
            sl: g(428, 4) as u8,
            mtu_selector: Selector::from_raw(g(432, 2) as u8),
            mtu: Mtu::from_raw(g(434, 6) as u8),
            rate_selector: Selector::from_raw(g(440, 2) as u8),
            rate: Rate::from_raw(g(442, 6) as u8),
            packet_life_time_selector: Selector::from_raw(g(448, 2) as u8),
            packet_life_time: g(450, 6) as u8,
            preference: g(456, 8) as u8,
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        // The 64 bytes made whole, then copied (what fits of them into a shorter buffer): the
        // SA writes one per PathRecord it answers, and field by field through the bit
        // setters it cost ~190 instructions (the tests keep that way as the judge).
        let mut r = [0u8; Self::LEN];
        r[0..8].copy_from_slice(&self.service_id.to_be_bytes());
        r[8..16].copy_from_slice(&self.dgid.prefix.to_be_bytes());
        r[16..24].copy_from_slice(&self.dgid.guid.0.to_be_bytes());
        r[24..32].copy_from_slice(&self.sgid.prefix.to_be_bytes());
        r[32..40].copy_from_slice(&self.sgid.guid.0.to_be_bytes());
        r[40..42].copy_from_slice(&self.dlid.0.to_be_bytes());
        r[42..44].copy_from_slice(&self.slid.0.to_be_bytes());
        // RawTraffic (bit 352), 3 reserved bits, FlowLabel (20 bits), HopLimit.
        let word =
            (u32::from(self.raw_traffic) << 31) | ((self.flow_label & 0xf_ffff) << 8) | u32::from(self.hop_limit);
        r[44..48].copy_from_slice(&word.to_be_bytes());
        r[48] = self.tclass;
        r[49] = (u8::from(self.reversible) << 7) | (self.numb_path & 0x7f);
        r[50..52].copy_from_slice(&self.pkey.0.to_be_bytes());
        r[52..54].copy_from_slice(&(((self.qos_class & 0xfff) << 4) | u16::from(self.sl & 0xf)).to_be_bytes());
        let sel = |s: Selector, v: u8| ((s.raw() & 0x3) << 6) | (v & 0x3f);
        r[54] = sel(self.mtu_selector, self.mtu.raw());
        r[55] = sel(self.rate_selector, self.rate.raw());
        r[56] = sel(self.packet_life_time_selector, self.packet_life_time);
        r[57] = self.preference;
        let end = Self::LEN.min(buf.len());
        buf[..end].copy_from_slice(&r[..end]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Guid;
    use crate::records::testutil::{emit_short_is_safe, hex, rejects_short, round_trip};
    use proptest::prelude::*;

    const fn gid(guid: u64) -> Gid {
        Gid { prefix: 0xfe80_0000_0000_0000, guid: Guid(guid) }
    }

    /// libibmad 44.0 `mad_set_field`/`mad_set_array` with IB_SA_PR_*_F:
    /// DGID=fe80::2:c903:0:1234 SGID=fe80::2:c903:0:abcd DLID=4 SLID=1 NumbPath=127 SL=3.
    const LIBIBMAD: &str = "
        00 00 00 00 00 00 00 00 fe 80 00 00 00 00 00 00
        00 02 c9 03 00 00 12 34 fe 80 00 00 00 00 00 00
        00 02 c9 03 00 00 ab cd 00 04 00 01 00 00 00 00
        00 7f 00 00 00 03 00 00 00 00 00 00 00 00 00 00";

    /// OpenSM 3.3.23 `ib_path_rec_init_local` plus the `ib_path_rec_t` fields it leaves out:
    /// ServiceID=0x10abc, same GIDs/LIDs, RawTraffic=1 FlowLabel=0xabcde HopLimit=0x40
    /// TClass=0x22 Reversible=1 NumbPath=1 P_Key=0x8001 QoSClass=0x123 SL=3 MTU=Exactly 2048
    /// Rate=Exactly 40 Gb/s PacketLifeTime=LessThan 18 Preference=1.
    const OPENSM: &str = "
        00 00 00 00 00 01 0a bc fe 80 00 00 00 00 00 00
        00 02 c9 03 00 00 12 34 fe 80 00 00 00 00 00 00
        00 02 c9 03 00 00 ab cd 00 04 00 01 8a bc de 40
        22 81 80 01 12 33 84 87 52 01 00 00 00 00 00 00";

    fn libibmad_record() -> PathRecord {
        PathRecord {
            dgid: gid(0x0002_c903_0000_1234),
            sgid: gid(0x0002_c903_0000_abcd),
            dlid: Lid(4),
            slid: Lid(1),
            numb_path: 127,
            sl: 3,
            ..PathRecord::default()
        }
    }

    fn opensm_record() -> PathRecord {
        PathRecord {
            service_id: 0x1_0abc,
            raw_traffic: true,
            flow_label: 0xa_bcde,
            hop_limit: 0x40,
            tclass: 0x22,
            reversible: true,
            numb_path: 1,
            pkey: PKey(0x8001),
            qos_class: 0x123,
            mtu_selector: Selector::Exactly,
            mtu: Mtu::Mtu2048,
            rate_selector: Selector::Exactly,
            rate: Rate::Gbps40,
            packet_life_time_selector: Selector::LessThan,
            packet_life_time: 18,
            preference: 1,
            ..libibmad_record()
        }
    }

    #[test]
    fn parse_fixtures() {
        // Unset selectors decode as GreaterThan (code 0) and unset MTU/rate as Unknown(0).
        assert_eq!(PathRecord::parse(&hex(LIBIBMAD)).unwrap(), libibmad_record());
        assert_eq!(PathRecord::parse(&hex(OPENSM)).unwrap(), opensm_record());
    }

    #[test]
    fn emit_matches_fixtures() {
        assert_eq!(libibmad_record().to_vec(), hex(LIBIBMAD));
        assert_eq!(opensm_record().to_vec(), hex(OPENSM));
    }

    #[test]
    fn short_input_is_truncated() {
        rejects_short::<PathRecord>(&hex(OPENSM));
        emit_short_is_safe(&opensm_record());
    }

    #[test]
    fn component_bits_match_opensm() {
        // OpenSM ib_types.h IB_PR_COMPMASK_DGID/SLID/SL/PKTLIFETIME (host order).
        assert_eq!(PathRecord::COMP_DGID, 1 << 2);
        assert_eq!(PathRecord::COMP_SLID, 1 << 5);
        assert_eq!(PathRecord::COMP_SL, 1 << 15);
        assert_eq!(PathRecord::COMP_PACKET_LIFE_TIME, 1 << 21);
    }

    /// The record written field by field through the bit setters, from the spec's layout
    /// table: the judge of [`PathRecord::emit`]'s byte-wise writing.
    fn emit_by_bits(p: &PathRecord, buf: &mut [u8]) {
        use crate::records::{put_gid, set_flag};
        let end = PathRecord::LEN.min(buf.len());
        buf[..end].fill(0);
        set_flag(buf, 352, p.raw_traffic);
        set_flag(buf, 392, p.reversible);
        let mut s = |bit, width, v: u64| bits::set(buf, bit, width, v);
        s(0, 64, p.service_id);
        s(320, 16, p.dlid.0.into());
        s(336, 16, p.slid.0.into());
        s(356, 20, p.flow_label.into());
        s(376, 8, p.hop_limit.into());
        s(384, 8, p.tclass.into());
        s(393, 7, p.numb_path.into());
        s(400, 16, p.pkey.0.into());
        s(416, 12, p.qos_class.into());
        s(428, 4, p.sl.into());
        s(432, 2, p.mtu_selector.raw().into());
        s(434, 6, p.mtu.raw().into());
        s(440, 2, p.rate_selector.raw().into());
        s(442, 6, p.rate.raw().into());
        s(448, 2, p.packet_life_time_selector.raw().into());
        s(450, 6, p.packet_life_time.into());
        s(456, 8, p.preference.into());
        put_gid(buf, 8, p.dgid);
        put_gid(buf, 24, p.sgid);
    }

    proptest! {
        #[test]
        fn round_trips(b in proptest::collection::vec(any::<u8>(), PathRecord::LEN)) {
            round_trip(&PathRecord::parse(&b).unwrap());
        }

        /// Every field at any value, over-wide ones included (cut to their width as the bit
        /// setters cut them), into buffers of every length up to past the record: the same
        /// bytes as the bit setters write, and nothing past the record touched.
        #[test]
        fn emit_writes_what_the_bit_setters_write(
            b in proptest::collection::vec(any::<u8>(), PathRecord::LEN),
            wide in any::<(u32, u8, u16, u8)>(),
            len in 0usize..80,
        ) {
            let mut p = PathRecord::parse(&b).unwrap();
            (p.flow_label, p.numb_path, p.qos_class, p.sl) = wide;
            p.packet_life_time = wide.1;
            let (mut fast, mut judge) = (vec![0xa5u8; len], vec![0xa5u8; len]);
            p.emit(&mut fast);
            emit_by_bits(&p, &mut judge);
            prop_assert_eq!(fast, judge);
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = PathRecord::parse(&b);
        }
    }
}

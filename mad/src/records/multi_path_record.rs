//! MultiPathRecord (IBTA vol. 1, 15.2.5.20): a GetMulti request for paths between GID sets.
//!
//! A 24-byte fixed part is followed by SGIDCount source GIDs and then DGIDCount destination
//! GIDs. This crate keeps the record within one MAD's SA data area (200 bytes), so at most
//! [`MultiPathRecord::MAX_GIDS`] GIDs in total; [`Attribute::LEN`] is that maximum size, and
//! `parse` only needs the bytes that the two counts announce.

use crate::records::{Mtu, Rate, Selector, comp, flag, gid_at, put_gid, set_flag};
use crate::{Attribute, Error, Gid, PKey, Result, bits, check_len, ids};

/// MultiPathRecord.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MultiPathRecord {
    /// RawTraffic.
    pub raw_traffic: bool,
    /// FlowLabel (20 bits).
    pub flow_label: u32,
    /// HopLimit.
    pub hop_limit: u8,
    /// TClass.
    pub tclass: u8,
    /// Reversible.
    pub reversible: bool,
    /// NumbPath (7 bits).
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
    /// PacketLifeTime (6 bits).
    pub packet_life_time: u8,
    /// IndependenceSelector (2 bits): how independent the returned paths should be.
    pub independence_selector: u8,
    /// ServiceID, joined from its 8 high bits (byte 13) and 56 low bits (bytes 17..24).
    pub service_id: u64,
    /// Source GIDs (SGIDCount of them).
    pub sgids: Vec<Gid>,
    /// Destination GIDs (DGIDCount of them).
    pub dgids: Vec<Gid>,
}

impl MultiPathRecord {
    /// Size of the fixed part, before the GID list.
    pub const FIXED_LEN: usize = 24;
    /// Most GIDs (sources plus destinations) that fit in one MAD's 200-byte SA data area.
    pub const MAX_GIDS: usize = (200 - Self::FIXED_LEN) / 16;

    /// ComponentMask: RawTraffic.
    pub const COMP_RAW_TRAFFIC: u64 = comp(0);
    /// ComponentMask: the reserved bits after RawTraffic.
    pub const COMP_RESERVED1: u64 = comp(1);
    /// ComponentMask: FlowLabel.
    pub const COMP_FLOW_LABEL: u64 = comp(2);
    /// ComponentMask: HopLimit.
    pub const COMP_HOP_LIMIT: u64 = comp(3);
    /// ComponentMask: TClass.
    pub const COMP_TCLASS: u64 = comp(4);
    /// ComponentMask: Reversible.
    pub const COMP_REVERSIBLE: u64 = comp(5);
    /// ComponentMask: NumbPath.
    pub const COMP_NUMB_PATH: u64 = comp(6);
    /// ComponentMask: P_Key.
    pub const COMP_PKEY: u64 = comp(7);
    /// ComponentMask: QoSClass.
    pub const COMP_QOS_CLASS: u64 = comp(8);
    /// ComponentMask: SL.
    pub const COMP_SL: u64 = comp(9);
    /// ComponentMask: MTUSelector.
    pub const COMP_MTU_SELECTOR: u64 = comp(10);
    /// ComponentMask: MTU.
    pub const COMP_MTU: u64 = comp(11);
    /// ComponentMask: RateSelector.
    pub const COMP_RATE_SELECTOR: u64 = comp(12);
    /// ComponentMask: Rate.
    pub const COMP_RATE: u64 = comp(13);
    /// ComponentMask: PacketLifeTimeSelector.
    pub const COMP_PACKET_LIFE_TIME_SELECTOR: u64 = comp(14);
    /// ComponentMask: PacketLifeTime.
    pub const COMP_PACKET_LIFE_TIME: u64 = comp(15);
    /// ComponentMask: ServiceID, high 8 bits.
    pub const COMP_SERVICE_ID_MSB: u64 = comp(16);
    /// ComponentMask: IndependenceSelector.
    pub const COMP_INDEPENDENCE_SELECTOR: u64 = comp(17);
    /// ComponentMask: the reserved bits after IndependenceSelector.
    pub const COMP_RESERVED2: u64 = comp(18);
    /// ComponentMask: SGIDCount.
    pub const COMP_SGID_COUNT: u64 = comp(19);
    /// ComponentMask: DGIDCount.
    pub const COMP_DGID_COUNT: u64 = comp(20);
    /// ComponentMask: ServiceID, low 56 bits.
    pub const COMP_SERVICE_ID_LSB: u64 = comp(21);
    /// ComponentMask: both ServiceID components.
    pub const COMP_SERVICE_ID: u64 = comp(16) | comp(21);

    /// Bytes this record occupies on the wire: the fixed part plus the GIDs that `emit` writes.
    pub fn wire_len(&self) -> usize {
        Self::FIXED_LEN + 16 * (self.sgids.len() + self.dgids.len()).min(Self::MAX_GIDS)
    }
}

impl Attribute for MultiPathRecord {
    const ID: u16 = ids::sa_attr::MULTI_PATH_RECORD;
    /// The largest record that fits in one MAD (fixed part and [`MultiPathRecord::MAX_GIDS`]).
    const LEN: usize = Self::FIXED_LEN + 16 * Self::MAX_GIDS;

    /// Needs [`MultiPathRecord::FIXED_LEN`] bytes plus 16 per announced GID. Fails with
    /// [`Error::Invalid`] when SGIDCount + DGIDCount exceeds [`MultiPathRecord::MAX_GIDS`].
    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("MultiPathRecord", buf, Self::FIXED_LEN)?;
        let g = |bit, width| bits::get(buf, bit, width);
        let nsrc = g(120, 8) as usize;
        let ndst = g(128, 8) as usize;
        if nsrc + ndst > Self::MAX_GIDS {
            return Err(Error::Invalid { what: "MultiPathRecord.SGIDCount+DGIDCount", value: (nsrc + ndst) as u64 });
        }
        check_len("MultiPathRecord GIDs", buf, Self::FIXED_LEN + 16 * (nsrc + ndst))?;
        let gid = |i: usize| gid_at(buf, Self::FIXED_LEN + 16 * i);
        Ok(MultiPathRecord {
            raw_traffic: flag(buf, 0),
            flow_label: g(4, 20) as u32,
            hop_limit: g(24, 8) as u8,
            tclass: g(32, 8) as u8,
            reversible: flag(buf, 40),
            numb_path: g(41, 7) as u8,
            pkey: PKey(g(48, 16) as u16),
            qos_class: g(64, 12) as u16,
            sl: g(76, 4) as u8,
            mtu_selector: Selector::from_raw(g(80, 2) as u8),
            mtu: Mtu::from_raw(g(82, 6) as u8),
            rate_selector: Selector::from_raw(g(88, 2) as u8),
            rate: Rate::from_raw(g(90, 6) as u8),
            packet_life_time_selector: Selector::from_raw(g(96, 2) as u8),
            packet_life_time: g(98, 6) as u8,
            service_id: (g(104, 8) << 56) | g(136, 56),
            independence_selector: g(112, 2) as u8,
            sgids: (0..nsrc).map(gid).collect(),
            dgids: (nsrc..nsrc + ndst).map(gid).collect(),
        })
    }

    /// Writes `LEN` bytes. GIDs beyond [`MultiPathRecord::MAX_GIDS`] are dropped (sources are
    /// kept first) and the counts written match the GIDs written.
    fn emit(&self, buf: &mut [u8]) {
        let end = Self::LEN.min(buf.len());
        buf[..end].fill(0);
        let nsrc = self.sgids.len().min(Self::MAX_GIDS);
        let ndst = self.dgids.len().min(Self::MAX_GIDS - nsrc);
        set_flag(buf, 0, self.raw_traffic);
        set_flag(buf, 40, self.reversible);
        let mut s = |bit, width, v: u64| bits::set(buf, bit, width, v);
        s(4, 20, self.flow_label.into());
        s(24, 8, self.hop_limit.into());
        s(32, 8, self.tclass.into());
        s(41, 7, self.numb_path.into());
        s(48, 16, self.pkey.0.into());
        s(64, 12, self.qos_class.into());
        s(76, 4, self.sl.into());
        s(80, 2, self.mtu_selector.raw().into());
        s(82, 6, self.mtu.raw().into());
        s(88, 2, self.rate_selector.raw().into());
        s(90, 6, self.rate.raw().into());
        s(96, 2, self.packet_life_time_selector.raw().into());
        s(98, 6, self.packet_life_time.into());
        s(104, 8, self.service_id >> 56);
        s(112, 2, self.independence_selector.into());
        s(120, 8, nsrc as u64);
        s(128, 8, ndst as u64);
        s(136, 56, self.service_id);
        let gids = self.sgids.iter().take(nsrc).chain(self.dgids.iter().take(ndst));
        for (i, gid) in gids.enumerate() {
            put_gid(buf, Self::FIXED_LEN + 16 * i, *gid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Guid;
    use crate::records::testutil::{emit_short_is_safe, hex, round_trip};
    use proptest::prelude::*;

    const fn gid(guid: u64) -> Gid {
        Gid { prefix: 0xfe80_0000_0000_0000, guid: Guid(guid) }
    }

    /// libibmad 44.0 `mad_set_field` with IB_SA_MP_*_F: NumbPath=2 SGIDCount=1 DGIDCount=0
    /// GID0=fe80::2:c903:0:1234.
    const LIBIBMAD: &str = "
        00 00 00 00 00 02 00 00 00 00 00 00 00 00 00 01
        00 00 00 00 00 00 00 00 fe 80 00 00 00 00 00 00
        00 02 c9 03 00 00 12 34";

    /// OpenSM 3.3.23 `ib_multipath_rec_t` filled field by field: FlowLabel=0xbeef HopLimit=2
    /// TClass=0x10 Reversible=1 NumbPath=4 P_Key=0xffff QoSClass=0xabc SL=5 MTU=Exactly 1024
    /// Rate=Largest 56 Gb/s PacketLifeTime=GreaterThan 9 ServiceID=0x123456789abcdef0
    /// IndependenceSelector=2 SGIDs=[fe80::2:c903:0:1, ..:2] DGIDs=[fe80::2:c903:0:3].
    const OPENSM: &str = "
        00 be ef 02 10 84 ff ff ab c5 83 cc 09 12 80 02
        01 34 56 78 9a bc de f0 fe 80 00 00 00 00 00 00
        00 02 c9 03 00 00 00 01 fe 80 00 00 00 00 00 00
        00 02 c9 03 00 00 00 02 fe 80 00 00 00 00 00 00
        00 02 c9 03 00 00 00 03";

    fn opensm_record() -> MultiPathRecord {
        MultiPathRecord {
            raw_traffic: false,
            flow_label: 0xbeef,
            hop_limit: 2,
            tclass: 0x10,
            reversible: true,
            numb_path: 4,
            pkey: PKey(0xffff),
            qos_class: 0xabc,
            sl: 5,
            mtu_selector: Selector::Exactly,
            mtu: Mtu::Mtu1024,
            rate_selector: Selector::Largest,
            rate: Rate::Gbps56,
            packet_life_time_selector: Selector::GreaterThan,
            packet_life_time: 9,
            independence_selector: 2,
            service_id: 0x1234_5678_9abc_def0,
            sgids: vec![gid(0x0002_c903_0000_0001), gid(0x0002_c903_0000_0002)],
            dgids: vec![gid(0x0002_c903_0000_0003)],
        }
    }

    #[test]
    fn parse_fixtures() {
        let r = MultiPathRecord::parse(&hex(LIBIBMAD)).unwrap();
        assert_eq!(r.numb_path, 2);
        assert_eq!(r.sgids, vec![gid(0x0002_c903_0000_1234)]);
        assert!(r.dgids.is_empty());
        assert_eq!(MultiPathRecord::parse(&hex(OPENSM)).unwrap(), opensm_record());
    }

    #[test]
    fn emit_matches_fixtures() {
        let r = opensm_record();
        let bytes = r.to_vec();
        assert_eq!(bytes.len(), MultiPathRecord::LEN);
        assert_eq!(r.wire_len(), hex(OPENSM).len());
        assert_eq!(bytes[..r.wire_len()], hex(OPENSM)[..]);
        assert!(bytes[r.wire_len()..].iter().all(|&b| b == 0));
    }

    #[test]
    fn gid_bounds() {
        let mut too_many = hex(OPENSM);
        too_many[15] = 11; // SGIDCount 11 + DGIDCount 1 > MAX_GIDS
        too_many.resize(MultiPathRecord::LEN + 16, 0);
        assert!(matches!(MultiPathRecord::parse(&too_many), Err(Error::Invalid { .. })));
        let short = hex(OPENSM);
        assert!(matches!(MultiPathRecord::parse(&short[..short.len() - 1]), Err(Error::Truncated { .. })));
        assert!(matches!(MultiPathRecord::parse(&short[..23]), Err(Error::Truncated { .. })));

        let mut big = opensm_record();
        big.sgids = vec![gid(1); 9];
        big.dgids = vec![gid(2); 9];
        let back = MultiPathRecord::parse(&big.to_vec()).unwrap();
        assert_eq!(back.sgids.len(), 9);
        assert_eq!(back.dgids.len(), MultiPathRecord::MAX_GIDS - 9);
        assert_eq!(MultiPathRecord::MAX_GIDS, 11);
        emit_short_is_safe(&big);
    }

    proptest! {
        #[test]
        fn round_trips(
            mut b in proptest::collection::vec(any::<u8>(), MultiPathRecord::LEN),
            nsrc in 0u8..=11,
            ndst in 0u8..=11,
        ) {
            b[15] = nsrc;
            b[16] = ndst.min(11 - nsrc);
            round_trip(&MultiPathRecord::parse(&b).unwrap());
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..260)) {
            let _ = MultiPathRecord::parse(&b);
        }
    }
}

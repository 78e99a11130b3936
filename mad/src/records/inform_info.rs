//! InformInfo (IBTA vol. 1, 13.4.8.3) and InformInfoRecord (15.2.5.12): trap subscriptions.
//!
//! A client Sets InformInfo to subscribe to (or unsubscribe from) traps; the SA keeps the
//! subscriptions and lists them as InformInfoRecords. InformInfo is 36 bytes, InformInfoRecord
//! 60. The generic/vendor union of the spec (TrapNumber or DeviceID, ProducerType or VendorID)
//! is kept as one raw field each; [`InformInfo::is_generic`] says which reading applies.

use crate::records::{comp, gid_at, put_gid, tail};
use crate::{Attribute, Gid, Lid, Result, bits, check_len, ids};

/// InformInfo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InformInfo {
    /// GID of the port whose traps are wanted; zero means "use the LID range".
    pub gid: Gid,
    /// LIDRangeBegin; 0xFFFF means all ports.
    pub lid_range_begin: Lid,
    /// LIDRangeEnd.
    pub lid_range_end: Lid,
    /// IsGeneric: generic (true) or vendor-specific (false) traps.
    pub is_generic: bool,
    /// Subscribe (true) or unsubscribe (false).
    pub subscribe: bool,
    /// Type of trap (0 fatal, 1 urgent, 2 security, 3 SM, 4 info, 0xFFFF all).
    pub trap_type: u16,
    /// TrapNumber (generic) or DeviceID (vendor); 0xFFFF means all.
    pub trap_number_or_device_id: u16,
    /// QPN (24 bits) to send reports to.
    pub qpn: u32,
    /// RespTimeValue (5 bits).
    pub resp_time_value: u8,
    /// ProducerType (generic) or VendorID (vendor), 24 bits; 0xFFFFFF means all.
    pub producer_type_or_vendor_id: u32,
}

impl InformInfo {
    /// `lid_range_begin` value meaning every LID.
    pub const ALL_LIDS: Lid = Lid(0xffff);
    /// `trap_type` and `trap_number_or_device_id` value meaning all.
    pub const ALL_TYPES: u16 = 0xffff;
    /// `producer_type_or_vendor_id` value meaning all.
    pub const ALL_PRODUCERS: u32 = 0x00ff_ffff;
}

impl Attribute for InformInfo {
    const ID: u16 = ids::sa_attr::INFORM_INFO;
    const LEN: usize = 36;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("InformInfo", buf, Self::LEN)?;
        let g = |bit, width| bits::get(buf, bit, width);
        Ok(InformInfo {
            gid: gid_at(buf, 0),
            lid_range_begin: Lid(g(128, 16) as u16),
            lid_range_end: Lid(g(144, 16) as u16),
            is_generic: g(176, 8) != 0,
            subscribe: g(184, 8) != 0,
            trap_type: g(192, 16) as u16,
            trap_number_or_device_id: g(208, 16) as u16,
            qpn: g(224, 24) as u32,
            resp_time_value: g(251, 5) as u8,
            producer_type_or_vendor_id: g(264, 24) as u32,
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        let end = Self::LEN.min(buf.len());
        buf[..end].fill(0);
        put_gid(buf, 0, self.gid);
        let mut s = |bit, width, v: u64| bits::set(buf, bit, width, v);
        s(128, 16, self.lid_range_begin.0.into());
        s(144, 16, self.lid_range_end.0.into());
        s(176, 8, self.is_generic.into());
        s(184, 8, self.subscribe.into());
        s(192, 16, self.trap_type.into());
        s(208, 16, self.trap_number_or_device_id.into());
        s(224, 24, self.qpn.into());
        s(251, 5, self.resp_time_value.into());
        s(264, 24, self.producer_type_or_vendor_id.into());
    }
}

/// InformInfoRecord: one subscription as the SA lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InformInfoRecord {
    /// SubscriberGID.
    pub subscriber_gid: Gid,
    /// Enum: tells apart several subscriptions of one subscriber.
    pub enum_: u16,
    /// The subscription.
    pub inform_info: InformInfo,
}

impl InformInfoRecord {
    /// Byte offset of the embedded InformInfo.
    const INFO_OFF: usize = 24;

    /// ComponentMask: SubscriberGID.
    pub const COMP_SUBSCRIBER_GID: u64 = comp(0);
    /// ComponentMask: Enum.
    pub const COMP_ENUM: u64 = comp(1);
    /// ComponentMask: the reserved 48 bits after Enum.
    pub const COMP_RESERVED1: u64 = comp(2);
    /// ComponentMask: InformInfo.GID.
    pub const COMP_GID: u64 = comp(3);
    /// ComponentMask: InformInfo.LIDRangeBegin.
    pub const COMP_LID_RANGE_BEGIN: u64 = comp(4);
    /// ComponentMask: InformInfo.LIDRangeEnd.
    pub const COMP_LID_RANGE_END: u64 = comp(5);
    /// ComponentMask: InformInfo's reserved 16 bits.
    pub const COMP_RESERVED2: u64 = comp(6);
    /// ComponentMask: InformInfo.IsGeneric.
    pub const COMP_IS_GENERIC: u64 = comp(7);
    /// ComponentMask: InformInfo.Subscribe.
    pub const COMP_SUBSCRIBE: u64 = comp(8);
    /// ComponentMask: InformInfo.Type.
    pub const COMP_TYPE: u64 = comp(9);
    /// ComponentMask: InformInfo.TrapNumber / DeviceID.
    pub const COMP_TRAP_NUMBER_DEVICE_ID: u64 = comp(10);
    /// ComponentMask: InformInfo.QPN.
    pub const COMP_QPN: u64 = comp(11);
    /// ComponentMask: InformInfo's reserved 3 bits before RespTimeValue.
    pub const COMP_RESERVED3: u64 = comp(12);
    /// ComponentMask: InformInfo.RespTimeValue.
    pub const COMP_RESP_TIME_VALUE: u64 = comp(13);
    /// ComponentMask: InformInfo's reserved 8 bits before ProducerType.
    pub const COMP_RESERVED4: u64 = comp(14);
    /// ComponentMask: InformInfo.ProducerType / VendorID.
    pub const COMP_PRODUCER_TYPE_VENDOR_ID: u64 = comp(15);
}

impl Attribute for InformInfoRecord {
    const ID: u16 = ids::sa_attr::INFORM_INFO_RECORD;
    const LEN: usize = Self::INFO_OFF + InformInfo::LEN;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("InformInfoRecord", buf, Self::LEN)?;
        Ok(InformInfoRecord {
            subscriber_gid: gid_at(buf, 0),
            enum_: bits::u16_at(buf, 16),
            inform_info: InformInfo::parse(tail(buf, Self::INFO_OFF))?,
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        let end = Self::LEN.min(buf.len());
        buf[..end].fill(0);
        put_gid(buf, 0, self.subscriber_gid);
        bits::put_u16(buf, 16, self.enum_);
        if let Some(t) = buf.get_mut(Self::INFO_OFF..) {
            self.inform_info.emit(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Guid;
    use crate::records::testutil::{emit_short_is_safe, hex, rejects_short, round_trip};
    use proptest::prelude::*;

    const SUBSCRIBER: Gid = Gid { prefix: 0xfe80_0000_0000_0000, guid: Guid(0x0002_c903_0000_0042) };

    /// OpenSM 3.3.23 `ib_inform_info_t`, generic form, QPN through `ib_inform_info_set_qpn`:
    /// GID=fe80::2:c903:0:42 LIDRangeBegin=0xffff LIDRangeEnd=0 IsGeneric=1 Subscribe=1 Type=4
    /// TrapNumber=64 QPN=1 RespTimeValue=0x13 ProducerType=4.
    const OPENSM_GENERIC: &str = "
        fe 80 00 00 00 00 00 00 00 02 c9 03 00 00 00 42
        ff ff 00 00 00 00 01 01 00 04 00 40 00 00 01 13
        00 00 00 04";

    /// OpenSM 3.3.23 `ib_inform_info_t`, vendor form: GID=0 LIDRangeBegin=0x10
    /// LIDRangeEnd=0x20 IsGeneric=0 Subscribe=0 Type=0xffff DeviceID=0xc738 QPN=0xabcdef
    /// RespTimeValue=0 VendorID=0x2c9.
    const OPENSM_VENDOR: &str = "
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
        00 10 00 20 00 00 00 00 ff ff c7 38 ab cd ef 00
        00 00 02 c9";

    /// OpenSM 3.3.23 `ib_inform_info_record_t`: SubscriberGID=fe80::2:c903:0:42 Enum=7,
    /// InformInfo{GID=0 LIDRangeBegin=0xffff End=0 IsGeneric=1 Subscribe=1 Type=0xffff
    /// TrapNumber=0xffff QPN=1 RespTimeValue=0 ProducerType=0xffffff}.
    const OPENSM_RECORD: &str = "
        fe 80 00 00 00 00 00 00 00 02 c9 03 00 00 00 42
        00 07 00 00 00 00 00 00 00 00 00 00 00 00 00 00
        00 00 00 00 00 00 00 00 ff ff 00 00 00 00 01 01
        ff ff ff ff 00 00 01 00 00 ff ff ff";

    fn generic() -> InformInfo {
        InformInfo {
            gid: SUBSCRIBER,
            lid_range_begin: InformInfo::ALL_LIDS,
            lid_range_end: Lid(0),
            is_generic: true,
            subscribe: true,
            trap_type: 4,
            trap_number_or_device_id: 64,
            qpn: 1,
            resp_time_value: 0x13,
            producer_type_or_vendor_id: 4,
        }
    }

    fn vendor() -> InformInfo {
        InformInfo {
            gid: Gid::default(),
            lid_range_begin: Lid(0x10),
            lid_range_end: Lid(0x20),
            is_generic: false,
            subscribe: false,
            trap_type: InformInfo::ALL_TYPES,
            trap_number_or_device_id: 0xc738,
            qpn: 0xab_cdef,
            resp_time_value: 0,
            producer_type_or_vendor_id: 0x2c9,
        }
    }

    fn record() -> InformInfoRecord {
        InformInfoRecord {
            subscriber_gid: SUBSCRIBER,
            enum_: 7,
            inform_info: InformInfo {
                gid: Gid::default(),
                lid_range_begin: InformInfo::ALL_LIDS,
                lid_range_end: Lid(0),
                is_generic: true,
                subscribe: true,
                trap_type: InformInfo::ALL_TYPES,
                trap_number_or_device_id: InformInfo::ALL_TYPES,
                qpn: 1,
                resp_time_value: 0,
                producer_type_or_vendor_id: InformInfo::ALL_PRODUCERS,
            },
        }
    }

    #[test]
    fn parse_fixtures() {
        assert_eq!(InformInfo::parse(&hex(OPENSM_GENERIC)).unwrap(), generic());
        assert_eq!(InformInfo::parse(&hex(OPENSM_VENDOR)).unwrap(), vendor());
        assert_eq!(InformInfoRecord::parse(&hex(OPENSM_RECORD)).unwrap(), record());
    }

    #[test]
    fn emit_matches_fixtures() {
        assert_eq!(generic().to_vec(), hex(OPENSM_GENERIC));
        assert_eq!(vendor().to_vec(), hex(OPENSM_VENDOR));
        assert_eq!(record().to_vec(), hex(OPENSM_RECORD));
    }

    #[test]
    fn short_input_is_truncated() {
        rejects_short::<InformInfo>(&hex(OPENSM_GENERIC));
        rejects_short::<InformInfoRecord>(&hex(OPENSM_RECORD));
        emit_short_is_safe(&generic());
        emit_short_is_safe(&record());
    }

    proptest! {
        #[test]
        fn round_trips(b in proptest::collection::vec(any::<u8>(), InformInfoRecord::LEN)) {
            round_trip(&InformInfo::parse(&b).unwrap());
            round_trip(&InformInfoRecord::parse(&b).unwrap());
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = InformInfo::parse(&b);
            let _ = InformInfoRecord::parse(&b);
        }
    }
}

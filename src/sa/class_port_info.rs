//! ClassPortInfo (Get): what this SA supports and where it answers.
//!
//! Capability bits are set for what ibsm serves, and only for that (bit numbers as OpenSM's
//! `OSM_CAP_*` / `OSM_CAP2_*` name them, from IBTA 1.2.1 tables 117 and 188 and later errata).
//! CapabilityMask, 0x2602 (as OpenSM's):
//! - 1 IsGetSetNoticeSupported: InformInfo Set and Reports ([`super::inform`]);
//! - 9 IsUDMulticastSupported: MCMemberRecord ([`super::multicast`]);
//! - 10 IsMultiPathSupported: MultiPathRecord (GetMulti);
//! - 13 IsPortInfoCapMaskMatchSupported: PortInfoRecord's enhanced CapabilityMask match
//!   (AttributeModifier bit 31, [`super::port_info_record`]).
//!
//! CapabilityMask2, set: 3 IsMulticastFDBTopSupported (SwitchInfoRecord carries the switches'
//! MulticastFDBTop, and the SM programs it where a switch honours it, see
//! `core::mcast`; `saquery` prints the field only when this bit is set); 5
//! IsAliasGUIDsSupported (GUIDInfoRecord Get, Set and Delete, path records to alias GIDs,
//! [`super::guid_info_record`]); 7
//! IsExtendedSpeedsSupported (PortInfo's extended speed fields are kept and rates computed
//! from them); 10 IsPortInfoCapMask2MatchSupported; 12 IsSendOnlyFullMemberSupported (a
//! send-only full member may create and join a group); 13 IsLinkWidth2xSupported; 15
//! IsLinkSpeedHDRSupported; 17 IsLinkSpeedNDRSupported (rates of 2x links and of HDR and NDR
//! lanes in path and multicast records). OpenSM 3.3 also sets bits 6 and 8, which stay
//! clear here:
//! - 6 IsFullPortInfoRecordSupported: the PortInfoRecord Options field is not interpreted;
//! - 8 IsMulticastServiceRecordsSupported: ServiceRecords are not tied to multicast groups.
//!
//! Bit 1 of CapabilityMask2 (QoS) waits for QoS. No redirection: the SA answers on QP1 with
//! the GSI Q_Key.

use ibsm_mad::Attribute;
use ibsm_mad::ids::status;
use ibsm_mad::records::ClassPortInfo;

use super::{Answer, Query};

/// GSI well-known Q_Key.
const GSI_QKEY: u32 = 0x8001_0000;

/// RespTimeValue: 4.096 µs × 2^16 ≈ 268 ms, an upper bound on the time to answer (as OpenSM).
const RESP_TIME_VALUE: u8 = 16;

/// CapabilityMask: Get/Set(Notice), UD multicast, MultiPathRecord, PortInfo CapMask match.
pub const CAPABILITY_MASK: u16 = (1 << 1) | (1 << 9) | (1 << 10) | (1 << 13);

/// CapabilityMask2: MulticastFDBTop, alias GUIDs, extended speeds, PortInfo CapMask2 match,
/// send-only full member joins, 2x widths, HDR and NDR speeds.
pub const CAPABILITY_MASK2: u32 =
    (1 << 3) | (1 << 5) | (1 << 7) | (1 << 10) | (1 << 12) | (1 << 13) | (1 << 15) | (1 << 17);

/// The SA's ClassPortInfo.
pub(super) fn class_port_info() -> ClassPortInfo {
    ClassPortInfo {
        base_version: 1,
        class_version: 2,
        capability_mask: CAPABILITY_MASK,
        capability_mask2: CAPABILITY_MASK2,
        resp_time_value: RESP_TIME_VALUE,
        redirect_qp: 1,
        redirect_qkey: GSI_QKEY,
        trap_qkey: GSI_QKEY,
        ..ClassPortInfo::default()
    }
}

/// Get(ClassPortInfo).
pub(super) fn get(q: &Query<'_>) -> Answer {
    let rec = class_port_info().to_vec();
    let offset = (ibsm_mad::records::stride::<ClassPortInfo>() / 8) as u16;
    Answer::single(q.header.response(status::OK, offset), &rec, 1)
}

//! The 54-byte DataDetails of a Notice, typed for the traps an SM acts on.
//!
//! Offsets below are relative to the start of DataDetails (Notice byte 10), taken from the IBTA
//! trap tables as restated by OpenSM `ib_mad_notice_attr_t` and libibmad `fields.c` (whose
//! `NoticeDataLID` is Notice bit 80 and `NoticeDataTrap144LID`/`CapMask` Notice bits 96/128,
//! which is also where ibsim writes them). Traps without a typed variant, and every vendor
//! notice, are kept as [`NoticeDetails::Raw`] so that they round-trip byte for byte.

use super::port_types::{CapabilityMask, CapabilityMask2};
use crate::bits;
use crate::{Gid, Lid, MKey, PKey, PortNum};

/// Length of DataDetails.
pub(super) const LEN: usize = 54;

/// The DataDetails of a Notice, decoded according to its trap number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoticeDetails {
    /// Trap 64: a port's GID came into service (the SA announces it to subscribers).
    Trap64 {
        /// The GID now in service.
        gid: Gid,
    },
    /// Trap 65: a port's GID went out of service.
    Trap65 {
        /// The GID now out of service.
        gid: Gid,
    },
    /// Trap 66: a multicast group was created.
    Trap66 {
        /// The group's MGID.
        mgid: Gid,
    },
    /// Trap 67: a multicast group was deleted.
    Trap67 {
        /// The group's MGID.
        mgid: Gid,
    },
    /// Trap 128: a switch saw a link state change on one of its ports; the SM should resweep.
    Trap128 {
        /// LID of the switch that reports it.
        lid: Lid,
    },
    /// Trap 129 (local link integrity threshold reached), 130 (excessive buffer overrun
    /// threshold reached) or 131 (flow control update watchdog expired) at one port.
    PortHealth {
        /// 129, 130 or 131.
        trap: u16,
        /// LID of the node whose port it is.
        lid: Lid,
        /// The port.
        port: PortNum,
    },
    /// Trap 144: a port's CapabilityMask or another local attribute changed.
    Trap144 {
        /// LID of the port that changed.
        lid: Lid,
        /// Something other than the capability mask changed (see the change flags).
        other_local_changes: bool,
        /// The port's new CapabilityMask (e.g. IsSM toggled when an SM starts or stops).
        capability_mask: CapabilityMask,
        /// CapabilityMask2 changed.
        capability_mask2_change: bool,
        /// HierarchyInfo changed.
        hierarchy_info_change: bool,
        /// The priority of the SM behind this port changed.
        sm_priority_change: bool,
        /// PortInfo.LinkSpeedEnabled changed.
        link_speed_enabled_change: bool,
        /// PortInfo.LinkWidthEnabled changed.
        link_width_enabled_change: bool,
        /// NodeDescription changed.
        node_description_change: bool,
        /// The port's new CapabilityMask2.
        capability_mask2: CapabilityMask2,
    },
    /// Trap 256: an SMP arrived with a bad M_Key (a possible attack, or a second SM with the
    /// wrong key).
    Trap256 {
        /// LID of the port whose M_Key check failed.
        lid: Lid,
        /// SLID of the offending SMP (for a directed-route SMP, its DrSLID).
        dr_slid: Lid,
        /// Method of the offending SMP.
        method: u8,
        /// AttributeID of the offending SMP.
        attribute_id: u16,
        /// AttributeModifier of the offending SMP.
        attribute_modifier: u32,
        /// M_Key the offending SMP carried.
        m_key: MKey,
        /// The offending SMP was directed-route and the return path below is valid.
        dr_notice: bool,
        /// The return path did not fit and is truncated.
        dr_path_truncated: bool,
        /// Hop count of the offending directed-route SMP (6 bits).
        dr_hop_count: u8,
        /// Return path of the offending directed-route SMP.
        dr_notice_return_path: [u8; 30],
    },
    /// Trap 257: a packet arrived with a bad P_Key.
    Trap257(KeyViolation),
    /// Trap 258: a packet arrived with a bad Q_Key.
    Trap258(KeyViolation),
    /// Trap 259: a switch external port dropped a packet for a bad P_Key.
    Trap259 {
        /// Which of the fields below are valid (one bit per field, spec order from the MSB).
        data_valid: u16,
        /// Source LID of the packet.
        lid1: Lid,
        /// Destination LID of the packet.
        lid2: Lid,
        /// P_Key the packet carried.
        pkey: PKey,
        /// SL of the packet (4 bits).
        sl: u8,
        /// Source QP (24 bits).
        qp1: u32,
        /// Destination QP (24 bits).
        qp2: u32,
        /// Source GID.
        gid1: Gid,
        /// Destination GID.
        gid2: Gid,
        /// LID of the switch that dropped it.
        switch_lid: Lid,
        /// Port of that switch.
        port_no: PortNum,
    },
    /// Any other trap, or a vendor notice: the bytes as read.
    Raw([u8; 54]),
}

/// Data of traps 257 (bad P_Key) and 258 (bad Q_Key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct KeyViolation {
    /// Source LID of the offending packet.
    pub lid1: Lid,
    /// Destination LID of the offending packet.
    pub lid2: Lid,
    /// The key the packet carried (a P_Key uses the low 16 bits).
    pub key: u32,
    /// SL of the packet (4 bits).
    pub sl: u8,
    /// Source QP (24 bits).
    pub qp1: u32,
    /// Destination QP (24 bits).
    pub qp2: u32,
    /// Source GID.
    pub gid1: Gid,
    /// Destination GID.
    pub gid2: Gid,
}

const QP_MASK: u32 = 0x00ff_ffff;

fn gid_at(d: &[u8], off: usize) -> Gid {
    Gid::from_bytes(&d[off..off + 16])
}

impl KeyViolation {
    fn parse(d: &[u8]) -> KeyViolation {
        KeyViolation {
            lid1: Lid(bits::u16_at(d, 2)),
            lid2: Lid(bits::u16_at(d, 4)),
            key: bits::u32_at(d, 6),
            sl: (d[10] >> 4) & 0xf,
            qp1: bits::u32_at(d, 10) & QP_MASK,
            qp2: bits::u32_at(d, 14) & QP_MASK,
            gid1: gid_at(d, 18),
            gid2: gid_at(d, 34),
        }
    }

    fn emit(&self, d: &mut [u8]) {
        bits::put_u16(d, 2, self.lid1.0);
        bits::put_u16(d, 4, self.lid2.0);
        bits::put_u32(d, 6, self.key);
        bits::put_u32(d, 10, (u32::from(self.sl & 0xf) << 28) | (self.qp1 & QP_MASK));
        bits::put_u32(d, 14, self.qp2 & QP_MASK);
        self.gid1.write(&mut d[18..34]);
        self.gid2.write(&mut d[34..50]);
    }
}

/// Trap 144 change-flag bits (in the 16-bit word at DataDetails byte 10).
mod change {
    pub const CAPABILITY_MASK2: u16 = 0x0020;
    pub const HIERARCHY_INFO: u16 = 0x0010;
    pub const SM_PRIORITY: u16 = 0x0008;
    pub const LINK_SPEED_ENABLED: u16 = 0x0004;
    pub const LINK_WIDTH_ENABLED: u16 = 0x0002;
    pub const NODE_DESCRIPTION: u16 = 0x0001;
}

impl NoticeDetails {
    /// Decodes the details of generic trap `trap_number`; unknown traps become `Raw`.
    ///
    /// `d` must hold at least 54 bytes (the caller, [`super::Notice`], checked that).
    pub(super) fn parse(trap_number: u16, d: &[u8]) -> NoticeDetails {
        match trap_number {
            64 => NoticeDetails::Trap64 { gid: gid_at(d, 6) },
            65 => NoticeDetails::Trap65 { gid: gid_at(d, 6) },
            66 => NoticeDetails::Trap66 { mgid: gid_at(d, 6) },
            67 => NoticeDetails::Trap67 { mgid: gid_at(d, 6) },
            128 => NoticeDetails::Trap128 { lid: Lid(bits::u16_at(d, 0)) },
            129..=131 => {
                NoticeDetails::PortHealth { trap: trap_number, lid: Lid(bits::u16_at(d, 2)), port: PortNum(d[4]) }
            }
            144 => {
                let flags = bits::u16_at(d, 10);
                NoticeDetails::Trap144 {
                    lid: Lid(bits::u16_at(d, 2)),
                    other_local_changes: d[5] & 1 != 0,
                    capability_mask: CapabilityMask(bits::u32_at(d, 6)),
                    capability_mask2_change: flags & change::CAPABILITY_MASK2 != 0,
                    hierarchy_info_change: flags & change::HIERARCHY_INFO != 0,
                    sm_priority_change: flags & change::SM_PRIORITY != 0,
                    link_speed_enabled_change: flags & change::LINK_SPEED_ENABLED != 0,
                    link_width_enabled_change: flags & change::LINK_WIDTH_ENABLED != 0,
                    node_description_change: flags & change::NODE_DESCRIPTION != 0,
                    capability_mask2: CapabilityMask2(bits::u16_at(d, 12)),
                }
            }
            256 => {
                let mut dr_notice_return_path = [0u8; 30];
                dr_notice_return_path.copy_from_slice(&d[24..54]);
                NoticeDetails::Trap256 {
                    lid: Lid(bits::u16_at(d, 2)),
                    dr_slid: Lid(bits::u16_at(d, 4)),
                    method: d[6],
                    attribute_id: bits::u16_at(d, 8),
                    attribute_modifier: bits::u32_at(d, 10),
                    m_key: MKey(bits::u64_at(d, 14)),
                    dr_notice: d[23] & 0x80 != 0,
                    dr_path_truncated: d[23] & 0x40 != 0,
                    dr_hop_count: d[23] & 0x3f,
                    dr_notice_return_path,
                }
            }
            257 => NoticeDetails::Trap257(KeyViolation::parse(d)),
            258 => NoticeDetails::Trap258(KeyViolation::parse(d)),
            259 => NoticeDetails::Trap259 {
                data_valid: bits::u16_at(d, 0),
                lid1: Lid(bits::u16_at(d, 2)),
                lid2: Lid(bits::u16_at(d, 4)),
                pkey: PKey(bits::u16_at(d, 6)),
                sl: (d[8] >> 4) & 0xf,
                qp1: bits::u32_at(d, 8) & QP_MASK,
                qp2: bits::u32_at(d, 12) & QP_MASK,
                gid1: gid_at(d, 16),
                gid2: gid_at(d, 32),
                switch_lid: Lid(bits::u16_at(d, 48)),
                port_no: PortNum(d[50]),
            },
            _ => NoticeDetails::raw(d),
        }
    }

    /// The details as raw bytes (for vendor notices and untyped traps).
    pub(super) fn raw(d: &[u8]) -> NoticeDetails {
        let mut r = [0u8; LEN];
        r.copy_from_slice(&d[..LEN]);
        NoticeDetails::Raw(r)
    }

    /// The trap number this variant describes (`None` for `Raw`).
    pub const fn trap_number(&self) -> Option<u16> {
        match self {
            NoticeDetails::Trap64 { .. } => Some(64),
            NoticeDetails::Trap65 { .. } => Some(65),
            NoticeDetails::Trap66 { .. } => Some(66),
            NoticeDetails::Trap67 { .. } => Some(67),
            NoticeDetails::Trap128 { .. } => Some(128),
            NoticeDetails::PortHealth { trap, .. } => Some(*trap),
            NoticeDetails::Trap144 { .. } => Some(144),
            NoticeDetails::Trap256 { .. } => Some(256),
            NoticeDetails::Trap257(_) => Some(257),
            NoticeDetails::Trap258(_) => Some(258),
            NoticeDetails::Trap259 { .. } => Some(259),
            NoticeDetails::Raw(_) => None,
        }
    }

    /// Writes the 54 bytes of DataDetails into `d[..54]` (reserved bytes zero).
    pub(super) fn emit(&self, d: &mut [u8]) {
        let d = &mut d[..LEN];
        d.fill(0);
        match self {
            NoticeDetails::Trap64 { gid }
            | NoticeDetails::Trap65 { gid }
            | NoticeDetails::Trap66 { mgid: gid }
            | NoticeDetails::Trap67 { mgid: gid } => {
                gid.write(&mut d[6..22]);
            }
            NoticeDetails::Trap128 { lid } => bits::put_u16(d, 0, lid.0),
            NoticeDetails::PortHealth { lid, port, .. } => {
                bits::put_u16(d, 2, lid.0);
                d[4] = port.0;
            }
            NoticeDetails::Trap144 {
                lid,
                other_local_changes,
                capability_mask,
                capability_mask2_change,
                hierarchy_info_change,
                sm_priority_change,
                link_speed_enabled_change,
                link_width_enabled_change,
                node_description_change,
                capability_mask2,
            } => {
                bits::put_u16(d, 2, lid.0);
                d[5] = u8::from(*other_local_changes);
                bits::put_u32(d, 6, capability_mask.0);
                let mut flags = 0u16;
                for (set, bit) in [
                    (*capability_mask2_change, change::CAPABILITY_MASK2),
                    (*hierarchy_info_change, change::HIERARCHY_INFO),
                    (*sm_priority_change, change::SM_PRIORITY),
                    (*link_speed_enabled_change, change::LINK_SPEED_ENABLED),
                    (*link_width_enabled_change, change::LINK_WIDTH_ENABLED),
                    (*node_description_change, change::NODE_DESCRIPTION),
                ] {
                    if set {
                        flags |= bit;
                    }
                }
                bits::put_u16(d, 10, flags);
                bits::put_u16(d, 12, capability_mask2.0);
            }
            NoticeDetails::Trap256 {
                lid,
                dr_slid,
                method,
                attribute_id,
                attribute_modifier,
                m_key,
                dr_notice,
                dr_path_truncated,
                dr_hop_count,
                dr_notice_return_path,
            } => {
                bits::put_u16(d, 2, lid.0);
                bits::put_u16(d, 4, dr_slid.0);
                d[6] = *method;
                bits::put_u16(d, 8, *attribute_id);
                bits::put_u32(d, 10, *attribute_modifier);
                bits::put_u64(d, 14, m_key.0);
                d[23] = (u8::from(*dr_notice) << 7) | (u8::from(*dr_path_truncated) << 6) | (dr_hop_count & 0x3f);
                d[24..54].copy_from_slice(dr_notice_return_path);
            }
            NoticeDetails::Trap257(k) | NoticeDetails::Trap258(k) => k.emit(d),
            NoticeDetails::Trap259 { data_valid, lid1, lid2, pkey, sl, qp1, qp2, gid1, gid2, switch_lid, port_no } => {
                bits::put_u16(d, 0, *data_valid);
                bits::put_u16(d, 2, lid1.0);
                bits::put_u16(d, 4, lid2.0);
                bits::put_u16(d, 6, pkey.0);
                bits::put_u32(d, 8, (u32::from(sl & 0xf) << 28) | (qp1 & QP_MASK));
                bits::put_u32(d, 12, qp2 & QP_MASK);
                gid1.write(&mut d[16..32]);
                gid2.write(&mut d[32..48]);
                bits::put_u16(d, 48, switch_lid.0);
                d[50] = port_no.0;
            }
            NoticeDetails::Raw(r) => d.copy_from_slice(r),
        }
    }
}

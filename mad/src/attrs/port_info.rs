//! PortInfo (attribute 0x0015): every field of a port's configuration and state.
//!
//! The attribute modifier selects the port (0 = the port the SMP arrived on, for a CA). Field
//! offsets are in the private `field` module as IBTA `(bit offset, width)` pairs (IBTA 14.2.5.6,
//! cross-checked against libibmad `fields.c` and OpenSM `ib_port_info_t`); value meanings are in
//! [`super::port_types`]. Narrow integer fields keep only their low `width` bits on emit.

use super::port_types::{
    CapabilityMask, CapabilityMask2, LinkDownDefaultState, LinkSpeed, LinkSpeedExt, LinkSpeedExtMask, LinkSpeedMask,
    LinkWidth, LinkWidthMask, Mtu, PhysPortState, PortState,
};
use crate::bits;
use crate::{Attribute, Lid, MKey, PortNum, Result, check_len, ids};

/// IBTA `(bit offset, width)` of each PortInfo field.
mod field {
    pub type F = (usize, usize);
    pub const M_KEY: F = (0, 64);
    pub const GID_PREFIX: F = (64, 64);
    pub const LID: F = (128, 16);
    pub const MASTER_SM_LID: F = (144, 16);
    pub const CAPABILITY_MASK: F = (160, 32);
    pub const DIAG_CODE: F = (192, 16);
    pub const M_KEY_LEASE_PERIOD: F = (208, 16);
    pub const LOCAL_PORT_NUM: F = (224, 8);
    pub const LINK_WIDTH_ENABLED: F = (232, 8);
    pub const LINK_WIDTH_SUPPORTED: F = (240, 8);
    pub const LINK_WIDTH_ACTIVE: F = (248, 8);
    pub const LINK_SPEED_SUPPORTED: F = (256, 4);
    pub const PORT_STATE: F = (260, 4);
    pub const PORT_PHYSICAL_STATE: F = (264, 4);
    pub const LINK_DOWN_DEFAULT_STATE: F = (268, 4);
    pub const M_KEY_PROTECT_BITS: F = (272, 2);
    // 274..277 reserved
    pub const LMC: F = (277, 3);
    pub const LINK_SPEED_ACTIVE: F = (280, 4);
    pub const LINK_SPEED_ENABLED: F = (284, 4);
    pub const NEIGHBOR_MTU: F = (288, 4);
    pub const MASTER_SM_SL: F = (292, 4);
    pub const VL_CAP: F = (296, 4);
    pub const INIT_TYPE: F = (300, 4);
    pub const VL_HIGH_LIMIT: F = (304, 8);
    pub const VL_ARBITRATION_HIGH_CAP: F = (312, 8);
    pub const VL_ARBITRATION_LOW_CAP: F = (320, 8);
    pub const INIT_TYPE_REPLY: F = (328, 4);
    pub const MTU_CAP: F = (332, 4);
    pub const VL_STALL_COUNT: F = (336, 3);
    pub const HOQ_LIFE: F = (339, 5);
    pub const OPERATIONAL_VLS: F = (344, 4);
    pub const PARTITION_ENFORCEMENT_INBOUND: F = (348, 1);
    pub const PARTITION_ENFORCEMENT_OUTBOUND: F = (349, 1);
    pub const FILTER_RAW_INBOUND: F = (350, 1);
    pub const FILTER_RAW_OUTBOUND: F = (351, 1);
    pub const M_KEY_VIOLATIONS: F = (352, 16);
    pub const P_KEY_VIOLATIONS: F = (368, 16);
    pub const Q_KEY_VIOLATIONS: F = (384, 16);
    pub const GUID_CAP: F = (400, 8);
    pub const CLIENT_REREGISTER: F = (408, 1);
    pub const MULTICAST_PKEY_TRAP_SUPPRESSION_ENABLED: F = (409, 2);
    pub const SUBNET_TIMEOUT: F = (411, 5);
    // 416..419 reserved
    pub const RESP_TIME_VALUE: F = (419, 5);
    pub const LOCAL_PHY_ERRORS: F = (424, 4);
    pub const OVERRUN_ERRORS: F = (428, 4);
    pub const MAX_CREDIT_HINT: F = (432, 16);
    // 448 reserved; 449..456: the XDR fields (IBTA 1.7; libibmad's LinkSpeedExt*2)
    pub const LINK_SPEED_EXT_ACTIVE2: F = (449, 2);
    pub const LINK_SPEED_EXT_SUPPORTED2: F = (451, 2);
    pub const LINK_SPEED_EXT_ENABLED2: F = (453, 3);
    pub const LINK_ROUND_TRIP_LATENCY: F = (456, 24);
    pub const CAPABILITY_MASK2: F = (480, 16);
    pub const LINK_SPEED_EXT_ACTIVE: F = (496, 4);
    pub const LINK_SPEED_EXT_SUPPORTED: F = (500, 4);
    // 504..507 reserved
    pub const LINK_SPEED_EXT_ENABLED: F = (507, 5);
}

/// Attribute modifier bit 31 of a PortInfo Get or Set, SMSupportExtendedSpeeds: the SM knows
/// the extended speed fields, so a port with extended speeds reports and takes them (OpenSM sets
/// it where the port's CapabilityMask has IsExtendedSpeedsSupported). The port number is in the
/// low bits.
pub const SM_SUPPORTS_EXTENDED_SPEEDS: u32 = 1 << 31;

/// LinkSpeedExtActive2 of an XDR link (212.5 Gb/s per lane).
pub const LINK_SPEED_EXT2_XDR: u8 = 1;

fn get(buf: &[u8], f: field::F) -> u64 {
    bits::get(buf, f.0, f.1)
}

fn get8(buf: &[u8], f: field::F) -> u8 {
    bits::get(buf, f.0, f.1) as u8
}

fn get16(buf: &[u8], f: field::F) -> u16 {
    bits::get(buf, f.0, f.1) as u16
}

fn put(buf: &mut [u8], f: field::F, v: impl Into<u64>) {
    bits::set(buf, f.0, f.1, v.into());
}

/// PortInfo: one port's addressing, state, capabilities, link parameters and error counters.
///
/// Fields narrower than their Rust type (noted as "N bits") are truncated to N bits by `emit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[allow(clippy::struct_excessive_bools)] // one bool per one-bit flag of the spec layout
pub struct PortInfo {
    /// Management key protecting this port's SMA (reads as 0 unless the requester knows it or
    /// protection is off).
    pub m_key: MKey,
    /// Subnet prefix of the port's GIDs (usually `fe80::`).
    pub gid_prefix: u64,
    /// Base LID of the port (switches: port 0 only).
    pub lid: Lid,
    /// LID of the master SM; where this port sends traps.
    pub master_sm_lid: Lid,
    /// What the port and its node support (IsSM, IsTrapSupported, ...).
    pub capability_mask: CapabilityMask,
    /// Diagnostic code from the port's self-test (0 = ready).
    pub diag_code: u16,
    /// Seconds the M_Key protection stays on after a failed check (0 = forever).
    pub m_key_lease_period: u16,
    /// Number of the port the SMP arrived on.
    pub local_port_num: PortNum,
    /// Link widths enabled for training.
    pub link_width_enabled: LinkWidthMask,
    /// Link widths the port supports.
    pub link_width_supported: LinkWidthMask,
    /// Width the link trained at.
    pub link_width_active: LinkWidth,
    /// Link speeds the port supports (4 bits).
    pub link_speed_supported: LinkSpeedMask,
    /// Logical state (Down/Init/Armed/Active).
    pub port_state: PortState,
    /// Physical state (Polling/LinkUp/...). Send `NoChange` in a Set unless changing it.
    pub port_physical_state: PhysPortState,
    /// Physical state to go to when the link goes down.
    pub link_down_default_state: LinkDownDefaultState,
    /// M_Key protection level 0..=3 (2 bits).
    pub m_key_protect_bits: u8,
    /// LID mask control: the port answers to 2^LMC consecutive LIDs (3 bits).
    pub lmc: u8,
    /// Speed the link trained at.
    pub link_speed_active: LinkSpeed,
    /// Link speeds enabled for training (4 bits).
    pub link_speed_enabled: LinkSpeedMask,
    /// Active MTU towards the neighbour.
    pub neighbor_mtu: Mtu,
    /// SL to use when sending to the master SM (4 bits).
    pub master_sm_sl: u8,
    /// Data VLs supported: 1 = VL0, 2 = VL0-1, 3 = VL0-3, 4 = VL0-7, 5 = VL0-14 (4 bits).
    pub vl_cap: u8,
    /// Initialisation the SM requests (4 bits).
    pub init_type: u8,
    /// High-priority VL arbitration limit.
    pub vl_high_limit: u8,
    /// Entries in the high-priority VL arbitration table.
    pub vl_arbitration_high_cap: u8,
    /// Entries in the low-priority VL arbitration table.
    pub vl_arbitration_low_cap: u8,
    /// Initialisation the port performed (4 bits).
    pub init_type_reply: u8,
    /// Largest MTU the port supports.
    pub mtu_cap: Mtu,
    /// Consecutive head-of-queue drops before a VL stalls (3 bits).
    pub vl_stall_count: u8,
    /// Head-of-queue lifetime code: packets older than 4.096 us * 2^n are dropped (5 bits).
    pub hoq_life: u8,
    /// Data VLs in use, coded like `vl_cap` (4 bits).
    pub operational_vls: u8,
    /// Switch external port: check P_Key of packets received.
    pub partition_enforcement_inbound: bool,
    /// Switch external port: check P_Key of packets sent.
    pub partition_enforcement_outbound: bool,
    /// Switch external port: drop raw packets received.
    pub filter_raw_inbound: bool,
    /// Switch external port: drop raw packets sent.
    pub filter_raw_outbound: bool,
    /// SMPs rejected for a bad M_Key (saturating counter).
    pub m_key_violations: u16,
    /// Packets rejected for a bad P_Key (saturating counter).
    pub p_key_violations: u16,
    /// Packets rejected for a bad Q_Key (saturating counter).
    pub q_key_violations: u16,
    /// Number of GUIDInfo entries the port supports.
    pub guid_cap: u8,
    /// Set by the SM to make the port's clients re-register with the SA.
    pub client_reregister: bool,
    /// Suppression of P_Key traps for multicast packets (2 bits).
    pub multicast_pkey_trap_suppression_enabled: u8,
    /// Subnet timeout code: 4.096 us * 2^n to traverse the subnet (5 bits).
    pub subnet_timeout: u8,
    /// Response time code: 4.096 us * 2^n for the SMA to answer (5 bits).
    pub resp_time_value: u8,
    /// Threshold for local physical errors before trap 129 (4 bits).
    pub local_phy_errors: u8,
    /// Threshold for buffer overruns before trap 130 (4 bits).
    pub overrun_errors: u8,
    /// Hint of the maximum credits the port may advertise.
    pub max_credit_hint: u16,
    /// Extended speed 2 the link trained at: 1 = XDR, 212.5 Gb/s per lane (2 bits; valid when
    /// CapabilityMask2.IsExtendedSpeeds2Supported is set and the SMP carried
    /// [`SM_SUPPORTS_EXTENDED_SPEEDS`]).
    pub link_speed_ext_active2: u8,
    /// Extended speeds 2 the port supports: bit 0 = XDR (2 bits).
    pub link_speed_ext_supported2: u8,
    /// Extended speeds 2 enabled for training: bit 0 = XDR (3 bits).
    pub link_speed_ext_enabled2: u8,
    /// Measured link round-trip latency in ns (24 bits).
    pub link_round_trip_latency: u32,
    /// More capabilities (valid when IS_CAPABILITY_MASK2_SUPPORTED is set).
    pub capability_mask2: CapabilityMask2,
    /// Extended speed the link trained at.
    pub link_speed_ext_active: LinkSpeedExt,
    /// Extended speeds the port supports (4 bits).
    pub link_speed_ext_supported: LinkSpeedExtMask,
    /// Extended speeds enabled for training (5 bits).
    pub link_speed_ext_enabled: LinkSpeedExtMask,
}

impl Attribute for PortInfo {
    const ID: u16 = ids::attr::PORT_INFO;
    const LEN: usize = 64;

    fn parse(buf: &[u8]) -> Result<Self> {
        use field as f;
        check_len("PortInfo", buf, Self::LEN)?;
        let b = &buf[..Self::LEN];
        Ok(PortInfo {
            m_key: MKey(get(b, f::M_KEY)),
            gid_prefix: get(b, f::GID_PREFIX),
            lid: Lid(get16(b, f::LID)),
            master_sm_lid: Lid(get16(b, f::MASTER_SM_LID)),
            capability_mask: CapabilityMask(get(b, f::CAPABILITY_MASK) as u32),
            diag_code: get16(b, f::DIAG_CODE),
            m_key_lease_period: get16(b, f::M_KEY_LEASE_PERIOD),
            local_port_num: PortNum(get8(b, f::LOCAL_PORT_NUM)),
            link_width_enabled: LinkWidthMask(get8(b, f::LINK_WIDTH_ENABLED)),
            link_width_supported: LinkWidthMask(get8(b, f::LINK_WIDTH_SUPPORTED)),
            link_width_active: LinkWidth::from_raw(get8(b, f::LINK_WIDTH_ACTIVE)),
            link_speed_supported: LinkSpeedMask(get8(b, f::LINK_SPEED_SUPPORTED)),
            port_state: PortState::from_raw(get8(b, f::PORT_STATE)),
            port_physical_state: PhysPortState::from_raw(get8(b, f::PORT_PHYSICAL_STATE)),
            link_down_default_state: LinkDownDefaultState::from_raw(get8(b, f::LINK_DOWN_DEFAULT_STATE)),
            m_key_protect_bits: get8(b, f::M_KEY_PROTECT_BITS),
            lmc: get8(b, f::LMC),
            link_speed_active: LinkSpeed::from_raw(get8(b, f::LINK_SPEED_ACTIVE)),
            link_speed_enabled: LinkSpeedMask(get8(b, f::LINK_SPEED_ENABLED)),
            neighbor_mtu: Mtu::from_raw(get8(b, f::NEIGHBOR_MTU)),
            master_sm_sl: get8(b, f::MASTER_SM_SL),
            vl_cap: get8(b, f::VL_CAP),
            init_type: get8(b, f::INIT_TYPE),
            vl_high_limit: get8(b, f::VL_HIGH_LIMIT),
            vl_arbitration_high_cap: get8(b, f::VL_ARBITRATION_HIGH_CAP),
            vl_arbitration_low_cap: get8(b, f::VL_ARBITRATION_LOW_CAP),
            init_type_reply: get8(b, f::INIT_TYPE_REPLY),
            mtu_cap: Mtu::from_raw(get8(b, f::MTU_CAP)),
            vl_stall_count: get8(b, f::VL_STALL_COUNT),
            hoq_life: get8(b, f::HOQ_LIFE),
            operational_vls: get8(b, f::OPERATIONAL_VLS),
            partition_enforcement_inbound: get(b, f::PARTITION_ENFORCEMENT_INBOUND) != 0,
            partition_enforcement_outbound: get(b, f::PARTITION_ENFORCEMENT_OUTBOUND) != 0,
            filter_raw_inbound: get(b, f::FILTER_RAW_INBOUND) != 0,
            filter_raw_outbound: get(b, f::FILTER_RAW_OUTBOUND) != 0,
            m_key_violations: get16(b, f::M_KEY_VIOLATIONS),
            p_key_violations: get16(b, f::P_KEY_VIOLATIONS),
            q_key_violations: get16(b, f::Q_KEY_VIOLATIONS),
            guid_cap: get8(b, f::GUID_CAP),
            client_reregister: get(b, f::CLIENT_REREGISTER) != 0,
            multicast_pkey_trap_suppression_enabled: get8(b, f::MULTICAST_PKEY_TRAP_SUPPRESSION_ENABLED),
            subnet_timeout: get8(b, f::SUBNET_TIMEOUT),
            resp_time_value: get8(b, f::RESP_TIME_VALUE),
            local_phy_errors: get8(b, f::LOCAL_PHY_ERRORS),
            overrun_errors: get8(b, f::OVERRUN_ERRORS),
            max_credit_hint: get16(b, f::MAX_CREDIT_HINT),
            link_speed_ext_active2: get8(b, f::LINK_SPEED_EXT_ACTIVE2),
            link_speed_ext_supported2: get8(b, f::LINK_SPEED_EXT_SUPPORTED2),
            link_speed_ext_enabled2: get8(b, f::LINK_SPEED_EXT_ENABLED2),
            link_round_trip_latency: get(b, f::LINK_ROUND_TRIP_LATENCY) as u32,
            capability_mask2: CapabilityMask2(get16(b, f::CAPABILITY_MASK2)),
            link_speed_ext_active: LinkSpeedExt::from_raw(get8(b, f::LINK_SPEED_EXT_ACTIVE)),
            link_speed_ext_supported: LinkSpeedExtMask(get8(b, f::LINK_SPEED_EXT_SUPPORTED)),
            link_speed_ext_enabled: LinkSpeedExtMask(get8(b, f::LINK_SPEED_EXT_ENABLED)),
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        use field as f;
        let b = &mut buf[..Self::LEN];
        b.fill(0);
        put(b, f::M_KEY, self.m_key.0);
        put(b, f::GID_PREFIX, self.gid_prefix);
        put(b, f::LID, self.lid.0);
        put(b, f::MASTER_SM_LID, self.master_sm_lid.0);
        put(b, f::CAPABILITY_MASK, self.capability_mask.0);
        put(b, f::DIAG_CODE, self.diag_code);
        put(b, f::M_KEY_LEASE_PERIOD, self.m_key_lease_period);
        put(b, f::LOCAL_PORT_NUM, self.local_port_num.0);
        put(b, f::LINK_WIDTH_ENABLED, self.link_width_enabled.0);
        put(b, f::LINK_WIDTH_SUPPORTED, self.link_width_supported.0);
        put(b, f::LINK_WIDTH_ACTIVE, self.link_width_active.raw());
        put(b, f::LINK_SPEED_SUPPORTED, self.link_speed_supported.0);
        put(b, f::PORT_STATE, self.port_state.raw());
        put(b, f::PORT_PHYSICAL_STATE, self.port_physical_state.raw());
        put(b, f::LINK_DOWN_DEFAULT_STATE, self.link_down_default_state.raw());
        put(b, f::M_KEY_PROTECT_BITS, self.m_key_protect_bits);
        put(b, f::LMC, self.lmc);
        put(b, f::LINK_SPEED_ACTIVE, self.link_speed_active.raw());
        put(b, f::LINK_SPEED_ENABLED, self.link_speed_enabled.0);
        put(b, f::NEIGHBOR_MTU, self.neighbor_mtu.raw());
        put(b, f::MASTER_SM_SL, self.master_sm_sl);
        put(b, f::VL_CAP, self.vl_cap);
        put(b, f::INIT_TYPE, self.init_type);
        put(b, f::VL_HIGH_LIMIT, self.vl_high_limit);
        put(b, f::VL_ARBITRATION_HIGH_CAP, self.vl_arbitration_high_cap);
        put(b, f::VL_ARBITRATION_LOW_CAP, self.vl_arbitration_low_cap);
        put(b, f::INIT_TYPE_REPLY, self.init_type_reply);
        put(b, f::MTU_CAP, self.mtu_cap.raw());
        put(b, f::VL_STALL_COUNT, self.vl_stall_count);
        put(b, f::HOQ_LIFE, self.hoq_life);
        put(b, f::OPERATIONAL_VLS, self.operational_vls);
        put(b, f::PARTITION_ENFORCEMENT_INBOUND, self.partition_enforcement_inbound);
        put(b, f::PARTITION_ENFORCEMENT_OUTBOUND, self.partition_enforcement_outbound);
        put(b, f::FILTER_RAW_INBOUND, self.filter_raw_inbound);
        put(b, f::FILTER_RAW_OUTBOUND, self.filter_raw_outbound);
        put(b, f::M_KEY_VIOLATIONS, self.m_key_violations);
        put(b, f::P_KEY_VIOLATIONS, self.p_key_violations);
        put(b, f::Q_KEY_VIOLATIONS, self.q_key_violations);
        put(b, f::GUID_CAP, self.guid_cap);
        put(b, f::CLIENT_REREGISTER, self.client_reregister);
        put(b, f::MULTICAST_PKEY_TRAP_SUPPRESSION_ENABLED, self.multicast_pkey_trap_suppression_enabled);
        put(b, f::SUBNET_TIMEOUT, self.subnet_timeout);
        put(b, f::RESP_TIME_VALUE, self.resp_time_value);
        put(b, f::LOCAL_PHY_ERRORS, self.local_phy_errors);
        put(b, f::OVERRUN_ERRORS, self.overrun_errors);
        put(b, f::MAX_CREDIT_HINT, self.max_credit_hint);
        put(b, f::LINK_SPEED_EXT_ACTIVE2, self.link_speed_ext_active2);
        put(b, f::LINK_SPEED_EXT_SUPPORTED2, self.link_speed_ext_supported2);
        put(b, f::LINK_SPEED_EXT_ENABLED2, self.link_speed_ext_enabled2);
        put(b, f::LINK_ROUND_TRIP_LATENCY, self.link_round_trip_latency);
        put(b, f::CAPABILITY_MASK2, self.capability_mask2.0);
        put(b, f::LINK_SPEED_EXT_ACTIVE, self.link_speed_ext_active.raw());
        put(b, f::LINK_SPEED_EXT_SUPPORTED, self.link_speed_ext_supported.0);
        put(b, f::LINK_SPEED_EXT_ENABLED, self.link_speed_ext_enabled.0);
    }
}

#[cfg(test)]
#[path = "port_info_tests.rs"]
mod tests;

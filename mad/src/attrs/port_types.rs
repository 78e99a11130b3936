//! Value types of PortInfo fields: port and physical state, MTU, link width and speed (single
//! values and bit sets), and the CapabilityMask/CapabilityMask2 bit sets with their named bits.
//!
//! Only the meaning of values lives here; the offsets are in the PortInfo attribute
//! (`port_info.rs`), which imports these types.

use core::ops::{BitAnd, BitOr};

use super::wire_enum;

wire_enum! {
    /// PortInfo.PortState: the logical link state. In a Set, `NoChange` leaves it alone.
    pub enum PortState: 4 bits {
        /// Set only: keep the current state (reads never return it).
        NoChange = 0,
        /// No link, or link being retrained.
        Down = 1,
        /// Link up; only SMPs flow. The SM must configure the port and move it on.
        Init = 2,
        /// Configured; waiting for the SM to activate. Only SMPs flow.
        Armed = 3,
        /// Fully up: all traffic flows.
        Active = 4,
    }
}

wire_enum! {
    /// PortInfo.PortPhysicalState: the physical layer's training state.
    pub enum PhysPortState: 4 bits {
        /// Set only: keep the current state.
        NoChange = 0,
        /// Sleeping: not trying to train.
        Sleep = 1,
        /// Polling for a partner (no cable or partner not ready).
        Polling = 2,
        /// Disabled by management.
        Disabled = 3,
        /// Training with the partner.
        PortConfigurationTraining = 4,
        /// Physical link up.
        LinkUp = 5,
        /// Recovering from link errors.
        LinkErrorRecovery = 6,
        /// Physical layer test mode.
        PhyTest = 7,
    }
}

wire_enum! {
    /// PortInfo.LinkDownDefaultState: what the physical layer does after the link goes down.
    pub enum LinkDownDefaultState: 4 bits {
        /// Set only: keep the current value.
        NoChange = 0,
        /// Go to Sleep.
        Sleep = 1,
        /// Go to Polling (the usual default).
        Polling = 2,
    }
}

wire_enum! {
    /// An MTU code (NeighborMTU, MTUCap; also used by SA records).
    pub enum Mtu: 4 bits {
        /// 256 bytes.
        M256 = 1,
        /// 512 bytes.
        M512 = 2,
        /// 1024 bytes.
        M1024 = 3,
        /// 2048 bytes.
        M2048 = 4,
        /// 4096 bytes.
        M4096 = 5,
    }
}

impl Mtu {
    /// The MTU in bytes, or `None` for an unknown code.
    pub const fn bytes(self) -> Option<u16> {
        match self {
            Mtu::M256 => Some(256),
            Mtu::M512 => Some(512),
            Mtu::M1024 => Some(1024),
            Mtu::M2048 => Some(2048),
            Mtu::M4096 => Some(4096),
            Mtu::Unknown(_) => None,
        }
    }
}

wire_enum! {
    /// PortInfo.LinkWidthActive: the width the link trained at.
    pub enum LinkWidth: 8 bits {
        /// 1 lane.
        X1 = 1,
        /// 4 lanes.
        X4 = 2,
        /// 8 lanes.
        X8 = 4,
        /// 12 lanes.
        X12 = 8,
        /// 2 lanes.
        X2 = 16,
    }
}

wire_enum! {
    /// PortInfo.LinkSpeedActive: the (pre-FDR) lane speed the link trained at.
    pub enum LinkSpeed: 4 bits {
        /// Extended speed in use (see LinkSpeedExtActive) or no link.
        None = 0,
        /// SDR, 2.5 Gb/s per lane.
        Sdr = 1,
        /// DDR, 5.0 Gb/s per lane.
        Ddr = 2,
        /// QDR, 10.0 Gb/s per lane.
        Qdr = 4,
    }
}

wire_enum! {
    /// PortInfo.LinkSpeedExtActive: the extended lane speed the link trained at.
    pub enum LinkSpeedExt: 4 bits {
        /// No extended speed active (LinkSpeedActive applies).
        None = 0,
        /// FDR, 14.0625 Gb/s per lane.
        Fdr = 1,
        /// EDR, 25.78125 Gb/s per lane.
        Edr = 2,
        /// HDR, 53.125 Gb/s per lane.
        Hdr = 4,
        /// NDR, 106.25 Gb/s per lane.
        Ndr = 8,
    }
}

/// Declares a bit-set newtype over an unsigned integer with named bits.
macro_rules! bit_set {
    (
        $(#[$meta:meta])*
        pub struct $name:ident($ty:ty);
        $( $(#[$cmeta:meta])* $cname:ident = $cval:expr; )*
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name(pub $ty);

        impl $name {
            $( $(#[$cmeta])* pub const $cname: $name = $name($cval); )*

            /// The raw value.
            pub const fn bits(self) -> $ty {
                self.0
            }
            /// True when every bit of `other` is set in `self`.
            pub const fn contains(self, other: $name) -> bool {
                self.0 & other.0 == other.0
            }
            /// `self` with the bits of `other` set.
            #[must_use]
            pub const fn with(self, other: $name) -> $name {
                $name(self.0 | other.0)
            }
            /// `self` with the bits of `other` cleared.
            #[must_use]
            pub const fn without(self, other: $name) -> $name {
                $name(self.0 & !other.0)
            }
        }

        impl BitOr for $name {
            type Output = $name;
            fn bitor(self, rhs: $name) -> $name {
                $name(self.0 | rhs.0)
            }
        }

        impl BitAnd for $name {
            type Output = $name;
            fn bitand(self, rhs: $name) -> $name {
                $name(self.0 & rhs.0)
            }
        }
    };
}

bit_set! {
    /// PortInfo.LinkWidthEnabled / LinkWidthSupported: a set of widths (bits as in [`LinkWidth`]).
    pub struct LinkWidthMask(u8);
    /// Enabled only, in a Set: keep the current value.
    NO_CHANGE = 0;
    /// 1X.
    X1 = 1;
    /// 4X.
    X4 = 2;
    /// 8X.
    X8 = 4;
    /// 12X.
    X12 = 8;
    /// 2X.
    X2 = 16;
    /// Enabled only, in a Set: enable every supported width.
    SET_TO_SUPPORTED = 0xff;
}

impl LinkWidthMask {
    /// True when the set contains the width `w`.
    pub const fn has(self, w: LinkWidth) -> bool {
        self.0 & w.raw() != 0
    }
}

bit_set! {
    /// PortInfo.LinkSpeedEnabled / LinkSpeedSupported: a set of speeds (4 bits, bits as in
    /// [`LinkSpeed`]).
    pub struct LinkSpeedMask(u8);
    /// Enabled only, in a Set: keep the current value.
    NO_CHANGE = 0;
    /// SDR.
    SDR = 1;
    /// DDR.
    DDR = 2;
    /// QDR.
    QDR = 4;
    /// Enabled only, in a Set: enable every supported speed.
    SET_TO_SUPPORTED = 0xf;
}

bit_set! {
    /// PortInfo.LinkSpeedExtSupported (4 bits) / LinkSpeedExtEnabled (5 bits): a set of
    /// extended speeds (bits as in [`LinkSpeedExt`]).
    pub struct LinkSpeedExtMask(u8);
    /// Enabled only, in a Set: keep the current value.
    NO_CHANGE = 0;
    /// FDR.
    FDR = 1;
    /// EDR.
    EDR = 2;
    /// HDR.
    HDR = 4;
    /// NDR.
    NDR = 8;
    /// Enabled only: disable all extended speeds.
    DISABLE = 0x1e;
    /// Enabled only, in a Set: enable every supported extended speed.
    SET_TO_SUPPORTED = 0x1f;
}

bit_set! {
    /// PortInfo.CapabilityMask: what the port (and its node's agents) support.
    pub struct CapabilityMask(u32);
    /// An SM runs behind this port.
    IS_SM = 0x0000_0002;
    /// The port supports Notice queries.
    IS_NOTICE_SUPPORTED = 0x0000_0004;
    /// The port sends traps.
    IS_TRAP_SUPPORTED = 0x0000_0008;
    /// Optional inter-packet delay is supported.
    IS_OPTIONAL_IPD_SUPPORTED = 0x0000_0010;
    /// Automatic path migration is supported.
    IS_AUTOMATIC_MIGRATION_SUPPORTED = 0x0000_0020;
    /// SL-to-VL mapping tables are supported.
    IS_SL_MAPPING_SUPPORTED = 0x0000_0040;
    /// The M_Key is kept in non-volatile memory.
    IS_MKEY_NVRAM = 0x0000_0080;
    /// The P_Key table is kept in non-volatile memory.
    IS_PKEY_NVRAM = 0x0000_0100;
    /// LEDInfo is supported.
    IS_LED_INFO_SUPPORTED = 0x0000_0200;
    /// An SM exists but is disabled.
    IS_SM_DISABLED = 0x0000_0400;
    /// NodeInfo.SystemImageGUID is meaningful.
    IS_SYSTEM_IMAGE_GUID_SUPPORTED = 0x0000_0800;
    /// Trap 259 (bad P_Key at a switch external port) is supported.
    IS_PKEY_SWITCH_EXTERNAL_PORT_TRAP_SUPPORTED = 0x0000_1000;
    /// CableInfo is supported.
    IS_CABLE_INFO_SUPPORTED = 0x0000_2000;
    /// LinkSpeedExt* fields are valid (FDR and later).
    IS_EXTENDED_SPEEDS_SUPPORTED = 0x0000_4000;
    /// PortInfo.CapabilityMask2 is valid.
    IS_CAPABILITY_MASK2_SUPPORTED = 0x0000_8000;
    /// A communication manager is present.
    IS_COMMUNICATION_MANAGEMENT_SUPPORTED = 0x0001_0000;
    /// SNMP tunneling agent is present.
    IS_SNMP_TUNNELING_SUPPORTED = 0x0002_0000;
    /// Re-initialisation is supported.
    IS_REINIT_SUPPORTED = 0x0004_0000;
    /// A device management agent is present.
    IS_DEVICE_MANAGEMENT_SUPPORTED = 0x0008_0000;
    /// Vendor-specific classes are supported.
    IS_VENDOR_CLASS_SUPPORTED = 0x0010_0000;
    /// Directed-route notices are supported.
    IS_DR_NOTICE_SUPPORTED = 0x0020_0000;
    /// Trap 144 is sent when this mask changes.
    IS_CAPABILITY_MASK_NOTICE_SUPPORTED = 0x0040_0000;
    /// A boot manager is present.
    IS_BOOT_MANAGEMENT_SUPPORTED = 0x0080_0000;
    /// LinkRoundTripLatency is measured.
    IS_LINK_ROUND_TRIP_LATENCY_SUPPORTED = 0x0100_0000;
    /// ClientReregister is honoured (clients rejoin multicast and re-subscribe).
    IS_CLIENT_REREGISTRATION_SUPPORTED = 0x0200_0000;
    /// Trap 144 reports OtherLocalChanges.
    IS_OTHER_LOCAL_CHANGES_NOTICE_SUPPORTED = 0x0400_0000;
    /// The LinkSpeedWidthPairsTable is supported.
    IS_LINK_SPEED_WIDTH_PAIRS_TABLE_SUPPORTED = 0x0800_0000;
    /// The vendor-specific MADs table is supported.
    IS_VENDOR_SPECIFIC_MADS_TABLE_SUPPORTED = 0x1000_0000;
    /// MulticastPKeyTrapSuppressionEnabled is honoured.
    IS_MCAST_PKEY_TRAP_SUPPRESSION_SUPPORTED = 0x2000_0000;
    /// SwitchInfo.MulticastFDBTop is honoured.
    IS_MULTICAST_FDB_TOP_SUPPORTED = 0x4000_0000;
    /// HierarchyInfo is supported.
    IS_HIERARCHY_INFO_SUPPORTED = 0x8000_0000;
}

bit_set! {
    /// PortInfo.CapabilityMask2 (valid when CapabilityMask has IS_CAPABILITY_MASK2_SUPPORTED).
    pub struct CapabilityMask2(u16);
    /// NodeDescription may be Set.
    IS_SET_NODE_DESCRIPTION_SUPPORTED = 0x0001;
    /// PortInfoExtended is supported.
    IS_PORT_INFO_EXTENDED_SUPPORTED = 0x0002;
    /// Virtualization is supported.
    IS_VIRTUALIZATION_SUPPORTED = 0x0004;
    /// SwitchPortStateTable is supported.
    IS_SWITCH_PORT_STATE_TABLE_SUPPORTED = 0x0008;
    /// 2X link width is supported.
    IS_LINK_WIDTH_2X_SUPPORTED = 0x0010;
    /// HDR speed is supported.
    IS_LINK_SPEED_HDR_SUPPORTED = 0x0020;
    /// NDR speed is supported.
    IS_LINK_SPEED_NDR_SUPPORTED = 0x0400;
    /// LinkSpeedExtActive2/Supported2/Enabled2 are valid (IBTA 1.7).
    IS_EXTENDED_SPEEDS2_SUPPORTED = 0x0800;
    /// XDR speed is supported.
    IS_LINK_SPEED_XDR_SUPPORTED = 0x1000;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn named_values() {
        assert_eq!(PortState::from_raw(4), PortState::Active);
        assert_eq!(PortState::from_raw(0x14), PortState::Active, "only the low 4 bits count");
        assert_eq!(PortState::from_raw(9), PortState::Unknown(9));
        assert_eq!(PhysPortState::from_raw(5), PhysPortState::LinkUp);
        assert_eq!(Mtu::from_raw(4).bytes(), Some(2048));
        assert_eq!(Mtu::from_raw(0), Mtu::Unknown(0));
        assert_eq!(LinkWidth::from_raw(2), LinkWidth::X4);
        assert!(LinkWidthMask(0x1f).has(LinkWidth::X12));
        // smpquery decodes 0x50c048 as IsTrap, IsSLMapping, IsExtendedSpeeds, IsCapabilityMask2,
        // IsVendorClass, IsCapabilityMaskNotice (ibsim switch port).
        let m = CapabilityMask(0x0050_c048);
        let named = CapabilityMask::IS_TRAP_SUPPORTED
            | CapabilityMask::IS_SL_MAPPING_SUPPORTED
            | CapabilityMask::IS_EXTENDED_SPEEDS_SUPPORTED
            | CapabilityMask::IS_CAPABILITY_MASK2_SUPPORTED
            | CapabilityMask::IS_VENDOR_CLASS_SUPPORTED
            | CapabilityMask::IS_CAPABILITY_MASK_NOTICE_SUPPORTED;
        assert_eq!(m, named);
        assert!(!m.contains(CapabilityMask::IS_SM));
        assert!(m.with(CapabilityMask::IS_SM).contains(CapabilityMask::IS_SM));
        assert_eq!(m.with(CapabilityMask::IS_SM).without(CapabilityMask::IS_SM), m);
        // ... and CapabilityMask2 0x30 as IsLinkWidth2xSupported, IsLinkSpeedHDRSupported.
        assert_eq!(
            CapabilityMask2(0x30),
            CapabilityMask2::IS_LINK_WIDTH_2X_SUPPORTED | CapabilityMask2::IS_LINK_SPEED_HDR_SUPPORTED
        );
    }

    proptest! {
        #[test]
        fn enums_roundtrip(raw in any::<u8>()) {
            let r4 = raw & 0xf;
            prop_assert_eq!(PortState::from_raw(r4).raw(), r4);
            prop_assert_eq!(PhysPortState::from_raw(r4).raw(), r4);
            prop_assert_eq!(LinkDownDefaultState::from_raw(r4).raw(), r4);
            prop_assert_eq!(Mtu::from_raw(r4).raw(), r4);
            prop_assert_eq!(LinkSpeed::from_raw(r4).raw(), r4);
            prop_assert_eq!(LinkSpeedExt::from_raw(r4).raw(), r4);
            prop_assert_eq!(LinkWidth::from_raw(raw).raw(), raw);
            prop_assert_eq!(u8::from(LinkWidth::from(raw)), raw);
        }
    }
}

//! PortCountersExtended (PerfMgt attribute 0x001D): the 64-bit data and packet counters of one
//! port and, where the PMA sets `IsAdditionalPortCountersExtendedSupported`, 64-bit forms of the
//! error counters and PortXmitWait.
//!
//! Layout (IBTA vol. 1, 16.1.4.11), byte offset in the data area/width in bits: reserved 0/8,
//! PortSelect 1/8, CounterSelect 2/16, CounterSelect2 4/32, then 64-bit counters from byte 8:
//! PortXmitData 8, PortRcvData 16, PortXmitPkts 24, PortRcvPkts 32, PortUnicastXmitPkts 40,
//! PortUnicastRcvPkts 48, PortMulticastXmitPkts 56, PortMulticastRcvPkts 64, and the additional
//! counters SymbolErrorCounter 72, LinkErrorRecoveryCounter 80, LinkDownedCounter 88,
//! PortRcvErrors 96, PortRcvRemotePhysicalErrors 104, PortRcvSwitchRelayErrors 112,
//! PortXmitDiscards 120, PortXmitConstraintErrors 128, PortRcvConstraintErrors 136,
//! LocalLinkIntegrityErrors 144, ExcessiveBufferOverrunErrors 152, VL15Dropped 160,
//! PortXmitWait 168, QP1Dropped 176 (184 bytes in all).

use crate::{Attribute, Result, bits, check_len, ids};

/// `CounterSelect` of PortCountersExtended: which of the first eight counters a Set clears.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct CounterSelectExt(pub u16);

impl CounterSelectExt {
    /// PortXmitData.
    pub const XMIT_DATA: CounterSelectExt = CounterSelectExt(1 << 0);
    /// PortRcvData.
    pub const RCV_DATA: CounterSelectExt = CounterSelectExt(1 << 1);
    /// PortXmitPkts.
    pub const XMIT_PKTS: CounterSelectExt = CounterSelectExt(1 << 2);
    /// PortRcvPkts.
    pub const RCV_PKTS: CounterSelectExt = CounterSelectExt(1 << 3);
    /// PortUnicastXmitPkts.
    pub const UNICAST_XMIT_PKTS: CounterSelectExt = CounterSelectExt(1 << 4);
    /// PortUnicastRcvPkts.
    pub const UNICAST_RCV_PKTS: CounterSelectExt = CounterSelectExt(1 << 5);
    /// PortMulticastXmitPkts.
    pub const MULTICAST_XMIT_PKTS: CounterSelectExt = CounterSelectExt(1 << 6);
    /// PortMulticastRcvPkts.
    pub const MULTICAST_RCV_PKTS: CounterSelectExt = CounterSelectExt(1 << 7);
    /// All eight (what `perfquery -x -R` sends is a superset: 0xffff).
    pub const ALL: CounterSelectExt = CounterSelectExt(0x00ff);

    /// Every bit of `other` is set in `self`.
    pub const fn contains(self, other: CounterSelectExt) -> bool {
        self.0 & other.0 == other.0
    }
}

/// PortCountersExtended of one port (or summed over the node's ports with `PortSelect` 0xFF).
#[allow(clippy::struct_field_names)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct PortCountersExtended {
    /// The port the counters are of (0xFF: all ports).
    pub port_select: u8,
    /// Counters (of the first eight) a Set clears.
    pub counter_select: CounterSelectExt,
    /// CounterSelect2 (32 bits): which additional counters a Set clears, in the order of the
    /// additional counters from bit 0 (SymbolErrorCounter) to bit 13 (QP1Dropped).
    pub counter_select2: u32,
    /// PortXmitData: octets sent, divided by 4.
    pub xmit_data: u64,
    /// PortRcvData: octets received, divided by 4.
    pub rcv_data: u64,
    /// PortXmitPkts.
    pub xmit_pkts: u64,
    /// PortRcvPkts.
    pub rcv_pkts: u64,
    /// PortUnicastXmitPkts.
    pub unicast_xmit_pkts: u64,
    /// PortUnicastRcvPkts.
    pub unicast_rcv_pkts: u64,
    /// PortMulticastXmitPkts.
    pub multicast_xmit_pkts: u64,
    /// PortMulticastRcvPkts.
    pub multicast_rcv_pkts: u64,
    /// SymbolErrorCounter (additional).
    pub symbol_errors: u64,
    /// LinkErrorRecoveryCounter (additional).
    pub link_error_recovery: u64,
    /// LinkDownedCounter (additional).
    pub link_downed: u64,
    /// PortRcvErrors (additional).
    pub rcv_errors: u64,
    /// PortRcvRemotePhysicalErrors (additional).
    pub rcv_remote_physical_errors: u64,
    /// PortRcvSwitchRelayErrors (additional).
    pub rcv_switch_relay_errors: u64,
    /// PortXmitDiscards (additional).
    pub xmit_discards: u64,
    /// PortXmitConstraintErrors (additional).
    pub xmit_constraint_errors: u64,
    /// PortRcvConstraintErrors (additional).
    pub rcv_constraint_errors: u64,
    /// LocalLinkIntegrityErrors (additional).
    pub local_link_integrity_errors: u64,
    /// ExcessiveBufferOverrunErrors (additional).
    pub excessive_buffer_overrun_errors: u64,
    /// VL15Dropped (additional).
    pub vl15_dropped: u64,
    /// PortXmitWait (additional).
    pub xmit_wait: u64,
    /// QP1Dropped (additional).
    pub qp1_dropped: u64,
}

impl PortCountersExtended {
    /// The 64-bit counters in wire order, from byte 8.
    fn counters(&self) -> [u64; 22] {
        [
            self.xmit_data,
            self.rcv_data,
            self.xmit_pkts,
            self.rcv_pkts,
            self.unicast_xmit_pkts,
            self.unicast_rcv_pkts,
            self.multicast_xmit_pkts,
            self.multicast_rcv_pkts,
            self.symbol_errors,
            self.link_error_recovery,
            self.link_downed,
            self.rcv_errors,
            self.rcv_remote_physical_errors,
            self.rcv_switch_relay_errors,
            self.xmit_discards,
            self.xmit_constraint_errors,
            self.rcv_constraint_errors,
            self.local_link_integrity_errors,
            self.excessive_buffer_overrun_errors,
            self.vl15_dropped,
            self.xmit_wait,
            self.qp1_dropped,
        ]
    }
}

impl Attribute for PortCountersExtended {
    const ID: u16 = ids::perf_attr::PORT_COUNTERS_EXTENDED;
    const LEN: usize = 184;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("PortCountersExtended", buf, Self::LEN)?;
        let c = |i: usize| bits::u64_at(buf, 8 + 8 * i);
        Ok(PortCountersExtended {
            port_select: buf[1],
            counter_select: CounterSelectExt(bits::u16_at(buf, 2)),
            counter_select2: bits::u32_at(buf, 4),
            xmit_data: c(0),
            rcv_data: c(1),
            xmit_pkts: c(2),
            rcv_pkts: c(3),
            unicast_xmit_pkts: c(4),
            unicast_rcv_pkts: c(5),
            multicast_xmit_pkts: c(6),
            multicast_rcv_pkts: c(7),
            symbol_errors: c(8),
            link_error_recovery: c(9),
            link_downed: c(10),
            rcv_errors: c(11),
            rcv_remote_physical_errors: c(12),
            rcv_switch_relay_errors: c(13),
            xmit_discards: c(14),
            xmit_constraint_errors: c(15),
            rcv_constraint_errors: c(16),
            local_link_integrity_errors: c(17),
            excessive_buffer_overrun_errors: c(18),
            vl15_dropped: c(19),
            xmit_wait: c(20),
            qp1_dropped: c(21),
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        let b = &mut buf[..Self::LEN];
        b.fill(0);
        b[1] = self.port_select;
        bits::put_u16(b, 2, self.counter_select.0);
        bits::put_u32(b, 4, self.counter_select2);
        for (i, v) in self.counters().into_iter().enumerate() {
            bits::put_u64(b, 8 + 8 * i, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::test_util::{emit_parse_roundtrip, rejects_short};
    use proptest::prelude::*;

    #[test]
    fn construct_and_deconstruct() {
        let pc = PortCountersExtended {
            port_select: 1,
            counter_select: CounterSelectExt::ALL,
            xmit_data: 0x0102_0304_0506_0708,
            multicast_rcv_pkts: 7,
            qp1_dropped: 0xffff_ffff_ffff_fffe,
            ..Default::default()
        };
        let b = emit_parse_roundtrip(&pc);
        assert_eq!(&b[..4], &[0, 1, 0, 0xff]);
        assert_eq!(&b[8..16], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&b[64..72], &[0, 0, 0, 0, 0, 0, 0, 7]);
        assert_eq!(&b[176..184], &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe]);
        rejects_short::<PortCountersExtended>();
    }

    proptest! {
        #[test]
        fn roundtrip(b in proptest::collection::vec(any::<u8>(), PortCountersExtended::LEN)) {
            let pc = PortCountersExtended::parse(&b).unwrap();
            let out = emit_parse_roundtrip(&pc);
            prop_assert_eq!(&out[1..], &b[1..]);
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..240)) {
            let _ = PortCountersExtended::parse(&b);
        }
    }
}

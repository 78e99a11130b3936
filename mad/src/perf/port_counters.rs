//! PortCounters (PerfMgt attribute 0x0012): the 32-bit data and packet counters and the
//! 16/8/4-bit error counters of one port, and the `CounterSelect` masks a Set uses to clear them.
//!
//! Layout (IBTA vol. 1, 16.1.3.5), byte offset in the data area/width in bits: reserved 0/8,
//! PortSelect 1/8, CounterSelect 2/16, SymbolErrorCounter 4/16, LinkErrorRecoveryCounter 6/8,
//! LinkDownedCounter 7/8, PortRcvErrors 8/16, PortRcvRemotePhysicalErrors 10/16,
//! PortRcvSwitchRelayErrors 12/16, PortXmitDiscards 14/16, PortXmitConstraintErrors 16/8,
//! PortRcvConstraintErrors 17/8, CounterSelect2 18/8, LocalLinkIntegrityErrors 19/4 (high
//! nibble), ExcessiveBufferOverrunErrors 19/4 (low nibble), QP1Dropped 20/16, VL15Dropped
//! 22/16, PortXmitData 24/32, PortRcvData 28/32, PortXmitPkts 32/32, PortRcvPkts 36/32,
//! PortXmitWait 40/32. Checked against ibsim 0.10's PMA and perfquery 44.0 in
//! `mad/tests/fixtures_perf.rs`. (perfquery 44.0 prints VL15Dropped under `QP1Dropped` too: its
//! field table reads both from byte 22; the bytes say QP1Dropped is at 20.)

use crate::{Attribute, Result, bits, check_len, ids};

/// `CounterSelect`: which counters a Set of [`PortCounters`] clears (IBTA 16.1.3.5; a 1 bit
/// clears, the counter values in the Set are otherwise ignored). [`COUNTER_SELECT2_XMIT_WAIT`] selects
/// PortXmitWait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct CounterSelect(pub u16);

impl CounterSelect {
    /// SymbolErrorCounter.
    pub const SYMBOL_ERRORS: CounterSelect = CounterSelect(1 << 0);
    /// LinkErrorRecoveryCounter.
    pub const LINK_ERROR_RECOVERY: CounterSelect = CounterSelect(1 << 1);
    /// LinkDownedCounter.
    pub const LINK_DOWNED: CounterSelect = CounterSelect(1 << 2);
    /// PortRcvErrors.
    pub const RCV_ERRORS: CounterSelect = CounterSelect(1 << 3);
    /// PortRcvRemotePhysicalErrors.
    pub const RCV_REMOTE_PHYSICAL_ERRORS: CounterSelect = CounterSelect(1 << 4);
    /// PortRcvSwitchRelayErrors.
    pub const RCV_SWITCH_RELAY_ERRORS: CounterSelect = CounterSelect(1 << 5);
    /// PortXmitDiscards.
    pub const XMIT_DISCARDS: CounterSelect = CounterSelect(1 << 6);
    /// PortXmitConstraintErrors.
    pub const XMIT_CONSTRAINT_ERRORS: CounterSelect = CounterSelect(1 << 7);
    /// PortRcvConstraintErrors.
    pub const RCV_CONSTRAINT_ERRORS: CounterSelect = CounterSelect(1 << 8);
    /// LocalLinkIntegrityErrors.
    pub const LOCAL_LINK_INTEGRITY_ERRORS: CounterSelect = CounterSelect(1 << 9);
    /// ExcessiveBufferOverrunErrors.
    pub const EXCESSIVE_BUFFER_OVERRUN_ERRORS: CounterSelect = CounterSelect(1 << 10);
    /// VL15Dropped.
    pub const VL15_DROPPED: CounterSelect = CounterSelect(1 << 11);
    /// PortXmitData.
    pub const XMIT_DATA: CounterSelect = CounterSelect(1 << 12);
    /// PortRcvData.
    pub const RCV_DATA: CounterSelect = CounterSelect(1 << 13);
    /// PortXmitPkts.
    pub const XMIT_PKTS: CounterSelect = CounterSelect(1 << 14);
    /// PortRcvPkts.
    pub const RCV_PKTS: CounterSelect = CounterSelect(1 << 15);
    /// Every counter of the mask (what `perfquery -R` sends).
    pub const ALL: CounterSelect = CounterSelect(0xffff);
    /// The error counters only (bits 0..11).
    pub const ERRORS: CounterSelect = CounterSelect(0x0fff);

    /// Every bit of `other` is set in `self`.
    pub const fn contains(self, other: CounterSelect) -> bool {
        self.0 & other.0 == other.0
    }
}

impl core::ops::BitOr for CounterSelect {
    type Output = CounterSelect;
    fn bitor(self, rhs: CounterSelect) -> CounterSelect {
        CounterSelect(self.0 | rhs.0)
    }
}

/// `CounterSelect2` bit 0: a Set clears PortXmitWait (`perfquery -R` sends it).
pub const COUNTER_SELECT2_XMIT_WAIT: u8 = 1 << 0;

/// PortCounters of one port (or, with `PortSelect` 0xFF, summed over the node's ports).
#[allow(clippy::struct_field_names)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct PortCounters {
    /// The port the counters are of (0xFF: all ports, see [`super::ALL_PORTS`]).
    pub port_select: u8,
    /// Counters a Set clears.
    pub counter_select: CounterSelect,
    /// SymbolErrorCounter (16 bits): minor link errors on any lane.
    pub symbol_errors: u16,
    /// LinkErrorRecoveryCounter (8 bits): link retrains that succeeded.
    pub link_error_recovery: u8,
    /// LinkDownedCounter (8 bits): link retrains that failed, the link went down.
    pub link_downed: u8,
    /// PortRcvErrors (16 bits): received packets with errors.
    pub rcv_errors: u16,
    /// PortRcvRemotePhysicalErrors (16 bits): received packets marked bad upstream (EBP).
    pub rcv_remote_physical_errors: u16,
    /// PortRcvSwitchRelayErrors (16 bits): received packets a switch could not forward.
    pub rcv_switch_relay_errors: u16,
    /// PortXmitDiscards (16 bits): outbound packets discarded (port down, congestion).
    pub xmit_discards: u16,
    /// PortXmitConstraintErrors (8 bits).
    pub xmit_constraint_errors: u8,
    /// PortRcvConstraintErrors (8 bits).
    pub rcv_constraint_errors: u8,
    /// CounterSelect2 (8 bits): bit 0 clears PortXmitWait ([`COUNTER_SELECT2_XMIT_WAIT`]).
    pub counter_select2: u8,
    /// LocalLinkIntegrityErrors (4 bits).
    pub local_link_integrity_errors: u8,
    /// ExcessiveBufferOverrunErrors (4 bits).
    pub excessive_buffer_overrun_errors: u8,
    /// QP1Dropped (16 bits; counted only with `IsQP1DropSupported`).
    pub qp1_dropped: u16,
    /// VL15Dropped (16 bits): SMPs dropped for lack of buffers.
    pub vl15_dropped: u16,
    /// PortXmitData: octets sent, divided by 4 (see the module doc of [`super`]).
    pub xmit_data: u32,
    /// PortRcvData: octets received, divided by 4.
    pub rcv_data: u32,
    /// PortXmitPkts.
    pub xmit_pkts: u32,
    /// PortRcvPkts.
    pub rcv_pkts: u32,
    /// PortXmitWait: ticks with data to send and no credits (with `PortCountersXmitWaitSupported`).
    pub xmit_wait: u32,
}

impl Attribute for PortCounters {
    const ID: u16 = ids::perf_attr::PORT_COUNTERS;
    const LEN: usize = 44;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("PortCounters", buf, Self::LEN)?;
        Ok(PortCounters {
            port_select: buf[1],
            counter_select: CounterSelect(bits::u16_at(buf, 2)),
            symbol_errors: bits::u16_at(buf, 4),
            link_error_recovery: buf[6],
            link_downed: buf[7],
            rcv_errors: bits::u16_at(buf, 8),
            rcv_remote_physical_errors: bits::u16_at(buf, 10),
            rcv_switch_relay_errors: bits::u16_at(buf, 12),
            xmit_discards: bits::u16_at(buf, 14),
            xmit_constraint_errors: buf[16],
            rcv_constraint_errors: buf[17],
            counter_select2: buf[18],
            local_link_integrity_errors: buf[19] >> 4,
            excessive_buffer_overrun_errors: buf[19] & 0x0f,
            qp1_dropped: bits::u16_at(buf, 20),
            vl15_dropped: bits::u16_at(buf, 22),
            xmit_data: bits::u32_at(buf, 24),
            rcv_data: bits::u32_at(buf, 28),
            xmit_pkts: bits::u32_at(buf, 32),
            rcv_pkts: bits::u32_at(buf, 36),
            xmit_wait: bits::u32_at(buf, 40),
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        let b = &mut buf[..Self::LEN];
        b.fill(0);
        b[1] = self.port_select;
        bits::put_u16(b, 2, self.counter_select.0);
        bits::put_u16(b, 4, self.symbol_errors);
        b[6] = self.link_error_recovery;
        b[7] = self.link_downed;
        bits::put_u16(b, 8, self.rcv_errors);
        bits::put_u16(b, 10, self.rcv_remote_physical_errors);
        bits::put_u16(b, 12, self.rcv_switch_relay_errors);
        bits::put_u16(b, 14, self.xmit_discards);
        b[16] = self.xmit_constraint_errors;
        b[17] = self.rcv_constraint_errors;
        b[18] = self.counter_select2;
        b[19] = (self.local_link_integrity_errors & 0x0f) << 4 | (self.excessive_buffer_overrun_errors & 0x0f);
        bits::put_u16(b, 20, self.qp1_dropped);
        bits::put_u16(b, 22, self.vl15_dropped);
        bits::put_u32(b, 24, self.xmit_data);
        bits::put_u32(b, 28, self.rcv_data);
        bits::put_u32(b, 32, self.xmit_pkts);
        bits::put_u32(b, 36, self.rcv_pkts);
        bits::put_u32(b, 40, self.xmit_wait);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::test_util::{emit_parse_roundtrip, rejects_short};
    use proptest::prelude::*;

    #[test]
    fn construct_and_deconstruct() {
        let pc = PortCounters {
            port_select: 3,
            symbol_errors: 0x1234,
            local_link_integrity_errors: 0xd,
            excessive_buffer_overrun_errors: 0xe,
            qp1_dropped: 0x0102,
            vl15_dropped: 0xf00d,
            xmit_data: 0x0a0b_0c0d,
            xmit_wait: 0x1234_5678,
            ..Default::default()
        };
        let b = emit_parse_roundtrip(&pc);
        assert_eq!(&b[..6], &[0, 3, 0, 0, 0x12, 0x34]);
        assert_eq!(&b[19..24], &[0xde, 0x01, 0x02, 0xf0, 0x0d]);
        assert_eq!(&b[24..28], &[0x0a, 0x0b, 0x0c, 0x0d]);
        assert_eq!(&b[40..44], &[0x12, 0x34, 0x56, 0x78]);
        rejects_short::<PortCounters>();
    }

    #[test]
    fn counter_select_masks() {
        assert!(CounterSelect::ALL.contains(CounterSelect::XMIT_DATA | CounterSelect::SYMBOL_ERRORS));
        assert!(!CounterSelect::ERRORS.contains(CounterSelect::XMIT_DATA));
        assert_eq!(CounterSelect::VL15_DROPPED.0, 0x0800);
        assert_eq!(CounterSelect::RCV_PKTS.0, 0x8000);
    }

    proptest! {
        #[test]
        fn roundtrip(b in proptest::collection::vec(any::<u8>(), PortCounters::LEN)) {
            let pc = PortCounters::parse(&b).unwrap();
            let out = emit_parse_roundtrip(&pc);
            // Only byte 0 is reserved: every other byte comes back as read.
            prop_assert_eq!(&out[1..], &b[1..]);
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = PortCounters::parse(&b);
        }
    }
}

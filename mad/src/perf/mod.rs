//! Performance management (class 0x04, `PerfMgt`): the MAD layout and the attributes a
//! performance manager reads and clears.
//!
//! Owns: the `PerfMgt` MAD layout (common header 0..24, 40 reserved bytes 24..64, attribute data
//! 64..256; IBTA vol. 1, 16.1.1), the zero-copy view [`PerfMad`], request building
//! ([`PerfMad::request`]), the PMA's `ClassPortInfo` capability bits ([`PmCapabilities`]; the
//! 72-byte layout is shared by every class and lives in [`crate::records::ClassPortInfo`]),
//! [`PortCounters`] (0x0012), [`PortCountersExtended`] (0x001D) and their `CounterSelect`
//! masks ([`CounterSelect`], [`CounterSelectExt`]), used by a Set to clear counters.
//!
//! Units, as the IBTA defines them: `PortXmitData`/`PortRcvData` count octets **divided by 4**
//! (every octet between the start-of-packet delimiter and the VCRC: LRH, GRH if any, BTH, DETH,
//! payload and ICRC), so a 256-byte MAD without GRH counts 72; packets count packets; error
//! counters count events. 32-bit and narrower counters stop at their maximum (they saturate,
//! they do not wrap); 64-bit counters wrap.
//!
//! Guarantees: after [`PerfMad::new_checked`] no accessor panics; `parse` never panics and fails
//! only with [`crate::Error::Truncated`]; reserved bits are ignored on parse and written as zero.
//! Nothing here decides when to read or clear a counter: that is the PM client's business.

// Field names (PortXmitData, CounterSelect, ...) are IBTA vocabulary, not Rust identifiers.
#![allow(clippy::doc_markdown)]

mod port_counters;
mod port_counters_ext;

pub use port_counters::{COUNTER_SELECT2_XMIT_WAIT, CounterSelect, PortCounters};
pub use port_counters_ext::{CounterSelectExt, PortCountersExtended};

use crate::header::{Mad, MadHeader, Method, MgmtClass};
use crate::records::ClassPortInfo;
use crate::{Attribute, Error, MAD_LEN, Result, check_len, ids};

/// Where the attribute data of a `PerfMgt` MAD starts (after 40 reserved bytes).
pub const PERF_DATA_OFFSET: usize = 64;
/// Attribute data bytes in one `PerfMgt` MAD.
pub const PERF_DATA_LEN: usize = MAD_LEN - PERF_DATA_OFFSET;
/// `PortSelect` value that selects every port of the node at once (needs
/// [`PmCapabilities::ALL_PORT_SELECT`]).
pub const ALL_PORTS: u8 = 0xff;
/// Octets per unit of `PortXmitData`/`PortRcvData`.
pub const DATA_WORD_OCTETS: u64 = 4;
/// `PortXmitData`/`PortRcvData` units that one 256-byte MAD without GRH adds: LRH 8 + BTH 12 +
/// DETH 8 + MAD 256 + ICRC 4 = 288 octets, / 4. (ibsim counts the same.)
pub const MAD_DATA_WORDS: u64 = 72;

/// The `PerfMgt` `ClassPortInfo.CapabilityMask` (and `CapabilityMask2`) bits that say what a
/// port's PMA implements (IBTA 16.1.2; the positions libibmad's `iba_types.h` and the kernel's
/// `ib_pma.h` restate). Bits 0..7 are the class-independent ones of
/// [`ClassPortInfo`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct PmCapabilities {
    /// `CapabilityMask` as read.
    pub mask: u16,
    /// `CapabilityMask2` as read (27 bits).
    pub mask2: u32,
}

impl PmCapabilities {
    /// Bit 8: `PortSelect` = 0xFF reads (and clears) all ports of the node at once.
    pub const ALL_PORT_SELECT: u16 = 1 << 8;
    /// Bit 9: `IsExtendedWidthSupported`: PortCountersExtended answers with all eight 64-bit
    /// data and packet counters (unicast and multicast included).
    pub const EXTENDED_WIDTH: u16 = 1 << 9;
    /// Bit 10: `IsExtendedWidthSupportedNoIETF`: PortCountersExtended answers, without the
    /// unicast and multicast packet counters.
    pub const EXTENDED_WIDTH_NO_IETF: u16 = 1 << 10;
    /// Bit 11: `IsSamplesOnlySupported`.
    pub const SAMPLES_ONLY: u16 = 1 << 11;
    /// Bit 12: `PortCountersXmitWaitSupported`: PortCounters.PortXmitWait is counted.
    pub const XMIT_WAIT: u16 = 1 << 12;
    /// Bit 13: `IsInhibitLimitedPkeyMulticastConstraintErrors`.
    pub const INHIBIT_LIMITED_PKEY_MC_CONSTRAINT: u16 = 1 << 13;
    /// Bit 14: `IsRSFECCountersSupported`.
    pub const RS_FEC_COUNTERS: u16 = 1 << 14;
    /// Bit 15: `IsQP1DropSupported`: PortCounters.QP1Dropped is counted.
    pub const QP1_DROP: u16 = 1 << 15;
    /// `CapabilityMask2` bit 0: `IsPMKeySupported`.
    pub const MASK2_PM_KEY: u32 = 1 << 0;
    /// `CapabilityMask2` bit 1: `IsAdditionalPortCountersExtendedSupported`: the error counters
    /// of PortCountersExtended (bytes 72..184) are counted, 64 bits wide.
    pub const MASK2_ADDITIONAL_EXTENDED: u32 = 1 << 1;

    /// The capabilities a PMA's `ClassPortInfo` answer advertises.
    pub fn from_class_port_info(cpi: &ClassPortInfo) -> PmCapabilities {
        PmCapabilities { mask: cpi.capability_mask, mask2: cpi.capability_mask2 }
    }
    /// `PortSelect` 0xFF is allowed.
    pub fn all_port_select(self) -> bool {
        self.mask & Self::ALL_PORT_SELECT != 0
    }
    /// PortCountersExtended answers (64-bit data and packet counters).
    pub fn extended_counters(self) -> bool {
        self.mask & (Self::EXTENDED_WIDTH | Self::EXTENDED_WIDTH_NO_IETF) != 0
    }
    /// PortCountersExtended includes the unicast and multicast packet counters.
    pub fn unicast_multicast_counters(self) -> bool {
        self.mask & Self::EXTENDED_WIDTH != 0
    }
    /// PortXmitWait is counted.
    pub fn xmit_wait(self) -> bool {
        self.mask & Self::XMIT_WAIT != 0
    }
    /// The 64-bit error counters of PortCountersExtended are counted.
    pub fn extended_error_counters(self) -> bool {
        self.mask2 & Self::MASK2_ADDITIONAL_EXTENDED != 0
    }
}

/// Byte offsets of a `PerfMgt` MAD (from the start of the MAD).
mod field {
    use core::ops::Range;

    pub const RESERVED: Range<usize> = 24..64;
    pub const DATA: usize = 64;
}

/// A zero-copy view of a `PerfMgt` MAD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerfMad<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> PerfMad<T> {
    /// Wraps a buffer without any check (accessors read zero or empty past the end).
    pub const fn new_unchecked(buffer: T) -> PerfMad<T> {
        PerfMad { buffer }
    }

    /// Wraps a buffer after checking that it holds a whole 256-byte MAD of class 0x04 with base
    /// version 1.
    ///
    /// # Errors
    /// [`Error::Truncated`], [`Error::WrongClass`], [`Error::BadBaseVersion`].
    pub fn new_checked(buffer: T) -> Result<PerfMad<T>> {
        let buf = buffer.as_ref();
        check_len("PerfMgt MAD", buf, MAD_LEN)?;
        let mad = Mad::new_unchecked(buf);
        let found = mad.mgmt_class().raw();
        if found != ids::class::PERF {
            return Err(Error::WrongClass { expected: "PerfMgt (0x04)", found });
        }
        if mad.base_version() != 1 {
            return Err(Error::BadBaseVersion(mad.base_version()));
        }
        Ok(PerfMad { buffer })
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// The common MAD header.
    pub fn header(&self) -> Mad<&[u8]> {
        Mad::new_unchecked(self.buffer.as_ref())
    }
    /// The attribute data, bytes 64..256.
    pub fn data(&self) -> &[u8] {
        let buf = self.buffer.as_ref();
        buf.get(field::DATA..buf.len().min(MAD_LEN)).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> PerfMad<T> {
    /// The common MAD header, mutable.
    pub fn header_mut(&mut self) -> Mad<&mut [u8]> {
        Mad::new_unchecked(self.buffer.as_mut())
    }
    /// Zeroes the reserved bytes 24..64.
    pub fn clear_reserved(&mut self) {
        if let Some(r) = self.buffer.as_mut().get_mut(field::RESERVED) {
            r.fill(0);
        }
    }
    /// The attribute data, mutable.
    pub fn data_mut(&mut self) -> &mut [u8] {
        let buf = self.buffer.as_mut();
        let end = buf.len().min(MAD_LEN);
        buf.get_mut(field::DATA..end).unwrap_or(&mut [])
    }
}

impl PerfMad<[u8; MAD_LEN]> {
    /// A whole `PerfMgt` request: `method` (Get or Set) of attribute `A` with `attr_mod` and
    /// `tid`, `data` in the data area, reserved bytes zero.
    pub fn request<A: Attribute>(method: Method, tid: u64, attr_mod: u32, data: &A) -> [u8; MAD_LEN] {
        let mut buf = [0u8; MAD_LEN];
        MadHeader {
            base_version: 1,
            mgmt_class: MgmtClass::Perf,
            class_version: 1,
            method,
            status: 0,
            class_specific: 0,
            tid,
            attr_id: A::ID,
            attr_mod,
        }
        .emit(&mut buf);
        data.emit(&mut buf[PERF_DATA_OFFSET..]);
        buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn request_layout() {
        let pc = PortCounters { port_select: 3, counter_select: CounterSelect::ALL, ..Default::default() };
        let b = PerfMad::request(Method::Set, 0x1234, 0, &pc);
        assert_eq!(&b[..4], &[1, 4, 1, 2]);
        assert_eq!(&b[16..18], &[0x00, 0x12]);
        assert!(b[24..64].iter().all(|&x| x == 0));
        assert_eq!(&b[64..68], &[0, 3, 0xff, 0xff]);
        let v = PerfMad::new_checked(&b[..]).unwrap();
        assert_eq!(v.header().tid(), 0x1234);
        assert_eq!(PortCounters::parse(v.data()).unwrap(), pc);
        assert_eq!(v.data().len(), PERF_DATA_LEN);
    }

    #[test]
    fn checked_refuses_other_classes_and_short_buffers() {
        let mut b = PerfMad::request(Method::Get, 1, 0, &PortCounters::default());
        assert!(matches!(PerfMad::new_checked(&b[..255]), Err(Error::Truncated { .. })));
        b[1] = 0x03;
        assert!(matches!(PerfMad::new_checked(&b[..]), Err(Error::WrongClass { found: 3, .. })));
        b[1] = 0x04;
        b[0] = 2;
        assert!(matches!(PerfMad::new_checked(&b[..]), Err(Error::BadBaseVersion(2))));
    }

    #[test]
    fn capabilities_of_ibsim_switch() {
        // ibsim 0.10's switch PMA advertises 0x1300 (captured in perf_classportinfo_switch.fix).
        let c = PmCapabilities { mask: 0x1300, mask2: 0 };
        assert!(c.all_port_select() && c.extended_counters() && c.unicast_multicast_counters() && c.xmit_wait());
        assert!(!c.extended_error_counters());
        let ca = PmCapabilities { mask: 0x1200, mask2: 0 };
        assert!(!ca.all_port_select() && ca.extended_counters());
    }

    proptest! {
        #[test]
        fn view_never_panics(b in proptest::collection::vec(any::<u8>(), 0..300)) {
            let v = PerfMad::new_unchecked(&b[..]);
            let _ = (v.data(), v.header().attr_id());
            if let Ok(v) = PerfMad::new_checked(&b[..]) {
                prop_assert_eq!(v.data().len(), PERF_DATA_LEN);
                let _ = PortCounters::parse(v.data());
                let _ = PortCountersExtended::parse(v.data());
            }
        }
    }
}

//! The 24-byte common MAD header shared by every management class.
//!
//! Owns: the byte layout of `BaseVersion`, `MgmtClass`, `ClassVersion`, Method, Status,
//! `ClassSpecific`, `TransactionID`, `AttributeID` and `AttributeModifier` (IBTA vol. 1,
//! 13.4.3); the typed [`MgmtClass`] and [`Method`] enums; the zero-copy view [`Mad`]; the
//! plain [`MadHeader`] repr; and [`MadHeader::validate`], the version/method check for the
//! classes ibsm speaks.
//!
//! Guarantees: after [`Mad::new_checked`] no accessor panics; unknown classes and methods are kept
//! as `Unknown(raw)` and round-trip. This module knows nothing about what follows the header:
//! the class modules (SMP, SA, RMPP) build on it, never the other way round.

use crate::ids::{class, method};
use crate::{Error, Result, bits, check_len};

/// Length of the common MAD header in bytes.
pub const HEADER_LEN: usize = 24;

/// Byte offsets of the common header fields.
mod field {
    use core::ops::Range;

    pub const BASE_VERSION: usize = 0;
    pub const MGMT_CLASS: usize = 1;
    pub const CLASS_VERSION: usize = 2;
    pub const METHOD: usize = 3;
    pub const STATUS: usize = 4;
    pub const CLASS_SPECIFIC: usize = 6;
    pub const TID: usize = 8;
    pub const ATTR_ID: usize = 16;
    pub const RESERVED: Range<usize> = 18..20;
    pub const ATTR_MOD: usize = 20;
}

/// Reads byte `i` of `buf` (zero past the end, so an unchecked view cannot panic either).
pub(crate) fn byte(buf: &[u8], i: usize) -> u8 {
    buf.get(i).copied().unwrap_or(0)
}

/// Writes byte `i` of `buf` if it exists.
pub(crate) fn put_byte(buf: &mut [u8], i: usize, v: u8) {
    if let Some(b) = buf.get_mut(i) {
        *b = v;
    }
}

/// Copies as much of `src` as fits into `buf` starting at `off`.
pub(crate) fn put_slice(buf: &mut [u8], off: usize, src: &[u8]) {
    if let Some(dst) = buf.get_mut(off..) {
        let n = dst.len().min(src.len());
        dst[..n].copy_from_slice(&src[..n]);
    }
}

/// Zeroes `range` of `buf` (clipped to the buffer).
pub(crate) fn zero(buf: &mut [u8], range: core::ops::Range<usize>) {
    let end = range.end.min(buf.len());
    if let Some(dst) = buf.get_mut(range.start.min(end)..end) {
        dst.fill(0);
    }
}

/// Decodes a libibmad `xdump`-style hex dump (groups of hex digits separated by whitespace)
/// into bytes, for the fixtures in this crate's tests.
#[cfg(test)]
pub(crate) fn hex_dump(text: &str) -> Vec<u8> {
    let digits: Vec<u8> =
        text.bytes().filter(u8::is_ascii_hexdigit).map(|c| char::from(c).to_digit(16).unwrap_or(0) as u8).collect();
    digits.chunks(2).map(|p| (p[0] << 4) | p.get(1).copied().unwrap_or(0)).collect()
}

/// A management class (MAD header byte 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MgmtClass {
    /// Subnet management, LID-routed (0x01).
    SubnLid,
    /// Subnet management, directed route (0x81).
    SubnDr,
    /// Subnet administration (0x03).
    SubnAdm,
    /// Performance management (0x04).
    Perf,
    /// Any other class, kept as read.
    Unknown(u8),
}

impl MgmtClass {
    /// The typed class for a raw byte; never yields `Unknown` for a named value.
    pub const fn from_raw(raw: u8) -> MgmtClass {
        match raw {
            class::SUBN_LID => MgmtClass::SubnLid,
            class::SUBN_DR => MgmtClass::SubnDr,
            class::SUBN_ADM => MgmtClass::SubnAdm,
            class::PERF => MgmtClass::Perf,
            other => MgmtClass::Unknown(other),
        }
    }

    /// The raw byte.
    pub const fn raw(self) -> u8 {
        match self {
            MgmtClass::SubnLid => class::SUBN_LID,
            MgmtClass::SubnDr => class::SUBN_DR,
            MgmtClass::SubnAdm => class::SUBN_ADM,
            MgmtClass::Perf => class::PERF,
            MgmtClass::Unknown(v) => v,
        }
    }

    /// Subnet management (LID-routed or directed route).
    pub const fn is_smp(self) -> bool {
        matches!(self, MgmtClass::SubnLid | MgmtClass::SubnDr)
    }

    /// The `ClassVersion` ibsm speaks for this class (`None` for classes it does not know).
    pub const fn class_version(self) -> Option<u8> {
        match self {
            MgmtClass::SubnLid | MgmtClass::SubnDr | MgmtClass::Perf => Some(1),
            MgmtClass::SubnAdm => Some(2),
            MgmtClass::Unknown(_) => None,
        }
    }
}

/// A MAD method (header byte 3), R bit (0x80) included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// Get (0x01).
    Get,
    /// Set (0x02).
    Set,
    /// Send (0x03).
    Send,
    /// Trap (0x05).
    Trap,
    /// Report (0x06).
    Report,
    /// `TrapRepress` (0x07).
    TrapRepress,
    /// `GetResp` (0x81), the answer to Get and Set.
    GetResp,
    /// `ReportResp` (0x86).
    ReportResp,
    /// `GetTable` (0x12, SA).
    GetTable,
    /// `GetTableResp` (0x92, SA), also the answer to `GetTraceTable`.
    GetTableResp,
    /// `GetTraceTable` (0x13, SA).
    GetTraceTable,
    /// `GetMulti` (0x14, SA).
    GetMulti,
    /// `GetMultiResp` (0x94, SA).
    GetMultiResp,
    /// Delete (0x15, SA).
    Delete,
    /// `DeleteResp` (0x95, SA).
    DeleteResp,
    /// Any other method byte, kept as read.
    Unknown(u8),
}

impl Method {
    /// The typed method for a raw byte; never yields `Unknown` for a named value.
    pub const fn from_raw(raw: u8) -> Method {
        match raw {
            method::GET => Method::Get,
            method::SET => Method::Set,
            method::SEND => Method::Send,
            method::TRAP => Method::Trap,
            method::REPORT => Method::Report,
            method::TRAP_REPRESS => Method::TrapRepress,
            method::GET_RESP => Method::GetResp,
            method::REPORT_RESP => Method::ReportResp,
            method::GET_TABLE => Method::GetTable,
            method::GET_TABLE_RESP => Method::GetTableResp,
            method::GET_TRACE_TABLE => Method::GetTraceTable,
            method::GET_MULTI => Method::GetMulti,
            method::GET_MULTI_RESP => Method::GetMultiResp,
            method::DELETE => Method::Delete,
            method::DELETE_RESP => Method::DeleteResp,
            other => Method::Unknown(other),
        }
    }

    /// The raw byte.
    pub const fn raw(self) -> u8 {
        match self {
            Method::Get => method::GET,
            Method::Set => method::SET,
            Method::Send => method::SEND,
            Method::Trap => method::TRAP,
            Method::Report => method::REPORT,
            Method::TrapRepress => method::TRAP_REPRESS,
            Method::GetResp => method::GET_RESP,
            Method::ReportResp => method::REPORT_RESP,
            Method::GetTable => method::GET_TABLE,
            Method::GetTableResp => method::GET_TABLE_RESP,
            Method::GetTraceTable => method::GET_TRACE_TABLE,
            Method::GetMulti => method::GET_MULTI,
            Method::GetMultiResp => method::GET_MULTI_RESP,
            Method::Delete => method::DELETE,
            Method::DeleteResp => method::DELETE_RESP,
            Method::Unknown(v) => v,
        }
    }

    /// The R bit (0x80) is set. `TrapRepress` (0x07) answers a Trap but is not a response in
    /// this sense: the spec sends it with R clear.
    pub const fn is_response(self) -> bool {
        self.raw() & method::RESPONSE != 0
    }

    /// The method a responder answers this request with (`None` for responses and for methods
    /// without a `*Resp`, such as Send and Trap).
    pub const fn response(self) -> Option<Method> {
        match self {
            Method::Get | Method::Set => Some(Method::GetResp),
            Method::Report => Some(Method::ReportResp),
            Method::GetTable | Method::GetTraceTable => Some(Method::GetTableResp),
            Method::GetMulti => Some(Method::GetMultiResp),
            Method::Delete => Some(Method::DeleteResp),
            _ => None,
        }
    }

    /// The method is defined for `class` (IBTA tables for `SubnMgt`, `SubnAdm` and `PerfMgt`).
    pub const fn is_defined_for(self, class: MgmtClass) -> bool {
        match class {
            MgmtClass::SubnLid | MgmtClass::SubnDr => {
                matches!(self, Method::Get | Method::Set | Method::GetResp | Method::Trap | Method::TrapRepress)
            }
            MgmtClass::SubnAdm => matches!(
                self,
                Method::Get
                    | Method::GetResp
                    | Method::Set
                    | Method::Report
                    | Method::ReportResp
                    | Method::GetTable
                    | Method::GetTableResp
                    | Method::GetTraceTable
                    | Method::GetMulti
                    | Method::GetMultiResp
                    | Method::Delete
                    | Method::DeleteResp
            ),
            MgmtClass::Perf => matches!(self, Method::Get | Method::Set | Method::GetResp),
            MgmtClass::Unknown(_) => false,
        }
    }
}

/// A zero-copy view of the common MAD header at the start of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mad<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Mad<T> {
    /// Wraps a buffer without any check. Accessors read zero past the end of a short buffer.
    pub const fn new_unchecked(buffer: T) -> Mad<T> {
        Mad { buffer }
    }

    /// Wraps a buffer after checking that it holds at least the 24-byte header.
    ///
    /// # Errors
    /// [`Error::Truncated`] for a buffer shorter than [`HEADER_LEN`].
    pub fn new_checked(buffer: T) -> Result<Mad<T>> {
        check_len("MAD header", buffer.as_ref(), HEADER_LEN)?;
        Ok(Mad { buffer })
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// `BaseVersion` (1 for every IBTA MAD).
    pub fn base_version(&self) -> u8 {
        byte(self.buffer.as_ref(), field::BASE_VERSION)
    }
    /// `MgmtClass`.
    pub fn mgmt_class(&self) -> MgmtClass {
        MgmtClass::from_raw(byte(self.buffer.as_ref(), field::MGMT_CLASS))
    }
    /// `ClassVersion`.
    pub fn class_version(&self) -> u8 {
        byte(self.buffer.as_ref(), field::CLASS_VERSION)
    }
    /// Method, R bit included.
    pub fn method(&self) -> Method {
        Method::from_raw(byte(self.buffer.as_ref(), field::METHOD))
    }
    /// The whole 16-bit Status field (for DR SMPs bit 15 is the D bit; see [`crate::smp::DrSmp`]).
    pub fn status(&self) -> u16 {
        bits::u16_at(self.buffer.as_ref(), field::STATUS)
    }
    /// `ClassSpecific` (the hop pointer and hop count for DR SMPs).
    pub fn class_specific(&self) -> u16 {
        bits::u16_at(self.buffer.as_ref(), field::CLASS_SPECIFIC)
    }
    /// `TransactionID`.
    pub fn tid(&self) -> u64 {
        bits::u64_at(self.buffer.as_ref(), field::TID)
    }
    /// `AttributeID`.
    pub fn attr_id(&self) -> u16 {
        bits::u16_at(self.buffer.as_ref(), field::ATTR_ID)
    }
    /// `AttributeModifier`.
    pub fn attr_mod(&self) -> u32 {
        bits::u32_at(self.buffer.as_ref(), field::ATTR_MOD)
    }
    /// Everything after the common header (empty for a short buffer).
    pub fn payload(&self) -> &[u8] {
        self.buffer.as_ref().get(HEADER_LEN..).unwrap_or(&[])
    }

    /// Checks base version, class version and method for the class (see
    /// [`MadHeader::validate`]).
    pub fn validate(&self) -> Result<()> {
        MadHeader::parse(self)?.validate()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Mad<T> {
    /// Sets `BaseVersion`.
    pub fn set_base_version(&mut self, v: u8) {
        put_byte(self.buffer.as_mut(), field::BASE_VERSION, v);
    }
    /// Sets `MgmtClass`.
    pub fn set_mgmt_class(&mut self, v: MgmtClass) {
        put_byte(self.buffer.as_mut(), field::MGMT_CLASS, v.raw());
    }
    /// Sets `ClassVersion`.
    pub fn set_class_version(&mut self, v: u8) {
        put_byte(self.buffer.as_mut(), field::CLASS_VERSION, v);
    }
    /// Sets Method.
    pub fn set_method(&mut self, v: Method) {
        put_byte(self.buffer.as_mut(), field::METHOD, v.raw());
    }
    /// Sets the whole 16-bit Status field.
    pub fn set_status(&mut self, v: u16) {
        bits::put_u16(self.buffer.as_mut(), field::STATUS, v);
    }
    /// Sets `ClassSpecific`.
    pub fn set_class_specific(&mut self, v: u16) {
        bits::put_u16(self.buffer.as_mut(), field::CLASS_SPECIFIC, v);
    }
    /// Sets `TransactionID`.
    pub fn set_tid(&mut self, v: u64) {
        bits::put_u64(self.buffer.as_mut(), field::TID, v);
    }
    /// Sets `AttributeID`.
    pub fn set_attr_id(&mut self, v: u16) {
        bits::put_u16(self.buffer.as_mut(), field::ATTR_ID, v);
    }
    /// Zeroes the reserved bytes 18..20.
    pub fn clear_reserved(&mut self) {
        zero(self.buffer.as_mut(), field::RESERVED);
    }
    /// Sets `AttributeModifier`.
    pub fn set_attr_mod(&mut self, v: u32) {
        bits::put_u32(self.buffer.as_mut(), field::ATTR_MOD, v);
    }
    /// Everything after the common header, mutable (empty for a short buffer).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut().get_mut(HEADER_LEN..).unwrap_or(&mut [])
    }
}

/// The common MAD header as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MadHeader {
    /// `BaseVersion`.
    pub base_version: u8,
    /// `MgmtClass`.
    pub mgmt_class: MgmtClass,
    /// `ClassVersion`.
    pub class_version: u8,
    /// Method, R bit included.
    pub method: Method,
    /// The whole 16-bit Status field.
    pub status: u16,
    /// `ClassSpecific`.
    pub class_specific: u16,
    /// `TransactionID`.
    pub tid: u64,
    /// `AttributeID`.
    pub attr_id: u16,
    /// `AttributeModifier`.
    pub attr_mod: u32,
}

impl MadHeader {
    /// Reads the header from a view.
    ///
    /// # Errors
    /// [`Error::Truncated`] when the view holds fewer than 24 bytes.
    pub fn parse<T: AsRef<[u8]>>(mad: &Mad<T>) -> Result<MadHeader> {
        check_len("MAD header", mad.buffer.as_ref(), HEADER_LEN)?;
        Ok(MadHeader {
            base_version: mad.base_version(),
            mgmt_class: mad.mgmt_class(),
            class_version: mad.class_version(),
            method: mad.method(),
            status: mad.status(),
            class_specific: mad.class_specific(),
            tid: mad.tid(),
            attr_id: mad.attr_id(),
            attr_mod: mad.attr_mod(),
        })
    }

    /// Reads the header from the start of `buf`.
    ///
    /// # Errors
    /// [`Error::Truncated`] when `buf` holds fewer than 24 bytes.
    pub fn from_bytes(buf: &[u8]) -> Result<MadHeader> {
        MadHeader::parse(&Mad::new_unchecked(buf))
    }

    /// Writes the 24 header bytes (reserved bytes as zero) into the start of `buf`; a shorter
    /// buffer gets what fits.
    pub fn emit(&self, buf: &mut [u8]) {
        let mut mad = Mad::new_unchecked(buf);
        mad.set_base_version(self.base_version);
        mad.set_mgmt_class(self.mgmt_class);
        mad.set_class_version(self.class_version);
        mad.set_method(self.method);
        mad.set_status(self.status);
        mad.set_class_specific(self.class_specific);
        mad.set_tid(self.tid);
        mad.set_attr_id(self.attr_id);
        mad.clear_reserved();
        mad.set_attr_mod(self.attr_mod);
    }

    /// Bytes [`MadHeader::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Checks the header against what ibsm speaks: `BaseVersion` 1; `ClassVersion` 1 for `SubnMgt`
    /// (0x01, 0x81) and `PerfMgt`, 2 for `SubnAdm`; a method defined for the class.
    ///
    /// # Errors
    /// In that order: [`Error::BadBaseVersion`], [`Error::WrongClass`] for a class ibsm does not
    /// know, [`Error::BadClassVersion`], [`Error::UnknownMethod`].
    pub fn validate(&self) -> Result<()> {
        if self.base_version != 1 {
            return Err(Error::BadBaseVersion(self.base_version));
        }
        let class = self.mgmt_class.raw();
        let Some(expected) = self.mgmt_class.class_version() else {
            return Err(Error::WrongClass { expected: "SubnMgt, SubnAdm or PerfMgt", found: class });
        };
        if self.class_version != expected {
            return Err(Error::BadClassVersion { class, expected, found: self.class_version });
        }
        if !self.method.is_defined_for(self.mgmt_class) {
            return Err(Error::UnknownMethod { class, method: self.method.raw() });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// First 24 bytes of a LID-routed SubnGet(NodeInfo) sent by `smpquery nodeinfo 1` under
    /// ibsim 0.10 (libibmad `-d -d` "send buf" dump, after the 64-byte umad header).
    const GET_NODE_INFO: [u8; 24] = [
        0x01, 0x01, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x30, 0x95, 0xf6, 0x05, 0x00, 0x11,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];

    /// First 24 bytes of `OpenSM` 3.3.23's SubnAdmGetTableResp(NodeRecord) to `saquery -d -d NR`
    /// under ibsim (libibmad "SA Response" dump). ibsim put its client id in TID bits 32..47.
    const SA_TABLE_RESP: [u8; 24] = [
        0x01, 0x03, 0x02, 0x92, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x77, 0x53, 0x6c, 0xdf, 0x00, 0x11,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];

    fn get_node_info_repr() -> MadHeader {
        MadHeader {
            base_version: 1,
            mgmt_class: MgmtClass::SubnLid,
            class_version: 1,
            method: Method::Get,
            status: 0,
            class_specific: 0,
            tid: 0x3095_f605,
            attr_id: 0x0011,
            attr_mod: 0,
        }
    }

    #[test]
    fn deconstruct() {
        let mad = Mad::new_checked(&SA_TABLE_RESP[..]).unwrap();
        assert_eq!(mad.base_version(), 1);
        assert_eq!(mad.mgmt_class(), MgmtClass::SubnAdm);
        assert_eq!(mad.class_version(), 2);
        assert_eq!(mad.method(), Method::GetTableResp);
        assert!(mad.method().is_response());
        assert_eq!(mad.status(), 0);
        assert_eq!(mad.tid(), 0x0001_0000_7753_6cdf);
        assert_eq!(mad.attr_id(), crate::ids::sa_attr::NODE_RECORD);
        assert_eq!(mad.attr_mod(), 0);
        assert_eq!(mad.validate(), Ok(()));
    }

    #[test]
    fn construct() {
        let mut buf = [0xa5u8; 24];
        let mut mad = Mad::new_unchecked(&mut buf[..]);
        mad.set_base_version(1);
        mad.set_mgmt_class(MgmtClass::SubnLid);
        mad.set_class_version(1);
        mad.set_method(Method::Get);
        mad.set_status(0);
        mad.set_class_specific(0);
        mad.set_tid(0x3095_f605);
        mad.set_attr_id(0x0011);
        mad.clear_reserved();
        mad.set_attr_mod(0);
        assert_eq!(buf, GET_NODE_INFO);
    }

    #[test]
    fn parse() {
        assert_eq!(MadHeader::from_bytes(&GET_NODE_INFO), Ok(get_node_info_repr()));
    }

    #[test]
    fn emit() {
        let mut buf = [0xffu8; 24];
        get_node_info_repr().emit(&mut buf);
        assert_eq!(buf, GET_NODE_INFO);
    }

    #[test]
    fn short_buffers() {
        assert!(matches!(Mad::new_checked(&[0u8; 23][..]), Err(Error::Truncated { need: 24, .. })));
        assert!(MadHeader::from_bytes(&[1, 1]).is_err());
        // Unchecked views of short buffers read zeros and never panic.
        let mad = Mad::new_unchecked(&[1u8, 0x81][..]);
        assert_eq!((mad.mgmt_class(), mad.tid(), mad.payload()), (MgmtClass::SubnDr, 0, &[][..]));
    }

    #[test]
    fn validation() {
        let ok = get_node_info_repr();
        assert_eq!(ok.validate(), Ok(()));
        let v = |f: fn(&mut MadHeader)| {
            let mut h = ok;
            f(&mut h);
            h.validate()
        };
        assert_eq!(v(|h| h.base_version = 2), Err(Error::BadBaseVersion(2)));
        assert_eq!(v(|h| h.class_version = 2), Err(Error::BadClassVersion { class: 1, expected: 1, found: 2 }));
        assert_eq!(
            v(|h| h.mgmt_class = MgmtClass::SubnAdm),
            Err(Error::BadClassVersion { class: 3, expected: 2, found: 1 })
        );
        assert_eq!(v(|h| h.method = Method::GetTable), Err(Error::UnknownMethod { class: 1, method: 0x12 }));
        assert_eq!(v(|h| h.method = Method::Unknown(0x33)), Err(Error::UnknownMethod { class: 1, method: 0x33 }));
        assert!(matches!(v(|h| h.mgmt_class = MgmtClass::Unknown(0x09)), Err(Error::WrongClass { found: 9, .. })));
        assert_eq!(v(|h| h.method = Method::TrapRepress), Ok(()));
        let mut sa = ok;
        sa.mgmt_class = MgmtClass::SubnAdm;
        sa.class_version = 2;
        sa.method = Method::GetTable;
        assert_eq!(sa.validate(), Ok(()));
        sa.method = Method::Trap;
        assert_eq!(sa.validate(), Err(Error::UnknownMethod { class: 3, method: 5 }));
    }

    #[test]
    fn method_pairs() {
        assert_eq!(Method::Set.response(), Some(Method::GetResp));
        assert_eq!(Method::GetTraceTable.response(), Some(Method::GetTableResp));
        assert_eq!(Method::GetResp.response(), None);
        assert!(!Method::TrapRepress.is_response());
        assert!(Method::DeleteResp.is_response());
        assert!(MgmtClass::SubnDr.is_smp() && !MgmtClass::SubnAdm.is_smp());
    }

    fn arb_header() -> impl Strategy<Value = MadHeader> {
        (any::<[u8; 6]>(), any::<[u16; 3]>(), any::<u64>(), any::<u32>()).prop_map(|(b, w, tid, attr_mod)| MadHeader {
            base_version: b[0],
            mgmt_class: MgmtClass::from_raw(b[1]),
            class_version: b[2],
            method: Method::from_raw(b[3]),
            status: w[0],
            class_specific: w[1],
            tid,
            attr_id: w[2],
            attr_mod,
        })
    }

    proptest! {
        #[test]
        fn raw_enums_round_trip(b: u8) {
            prop_assert_eq!(MgmtClass::from_raw(b).raw(), b);
            prop_assert_eq!(Method::from_raw(b).raw(), b);
            prop_assert_eq!(Method::from_raw(b).is_response(), b & 0x80 != 0);
        }

        #[test]
        fn repr_round_trip(h in arb_header()) {
            let mut buf = [0u8; 24];
            h.emit(&mut buf);
            prop_assert_eq!(MadHeader::from_bytes(&buf), Ok(h));
        }

        #[test]
        fn arbitrary_bytes_never_panic(buf in proptest::collection::vec(any::<u8>(), 0..=256)) {
            if let Ok(h) = MadHeader::from_bytes(&buf) {
                let _ = h.validate();
                let mut out = [0u8; 24];
                h.emit(&mut out);
                prop_assert_eq!(&out[..18], &buf[..18]);
                prop_assert_eq!(&out[20..], &buf[20..24]);
            }
        }
    }
}

//! Subnet administration MADs (class 0x03): the SA header and the record area.
//!
//! Owns: the layout after the common header (RMPP header 24..36, `SM_Key` 36..44, `AttributeOffset`
//! 44..46 in 8-byte words, reserved 46..48, `ComponentMask` 48..56, SA data from 56; IBTA vol. 1,
//! 15.2.1), the view [`SaMad`], the repr [`SaHeader`], request building ([`request`],
//! [`SaHeader::to_mad`]) and walking the records of a table response ([`Records`]). The records
//! themselves are [`crate::records`]' business; RMPP segmentation is the transport's.
//!
//! Guarantees: after [`SaMad::new_checked`] no accessor panics; iterating records never panics,
//! whatever `AttributeOffset` says (0, or records running past the buffer).

use crate::header::{Mad, MadHeader, Method, MgmtClass, put_slice, zero};
use crate::ids::class;
use crate::rmpp::{Rmpp, RmppHeader};
use crate::{Attribute, Error, MAD_LEN, Result, bits, check_len};

/// Length of the common header, RMPP header and SA header together: where SA data starts.
pub const SA_HEADER_LEN: usize = 56;
/// SA data bytes in one 256-byte MAD.
pub const SA_DATA_LEN: usize = MAD_LEN - SA_HEADER_LEN;

/// Byte offsets of the SA header fields (from the start of the MAD).
mod field {
    use core::ops::Range;

    pub const SM_KEY: usize = 36;
    pub const ATTR_OFFSET: usize = 44;
    pub const RESERVED: Range<usize> = 46..48;
    pub const COMP_MASK: usize = 48;
    pub const DATA: usize = 56;
}

/// A zero-copy view of an SA MAD. The buffer may be longer than 256 bytes (an RMPP-reassembled
/// response: one header followed by the data of every segment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SaMad<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> SaMad<T> {
    /// Wraps a buffer without any check (accessors read zero or empty past the end).
    pub const fn new_unchecked(buffer: T) -> SaMad<T> {
        SaMad { buffer }
    }

    /// Wraps a buffer after checking that it holds the 56-byte SA header, the class is 0x03
    /// and the base version 1.
    ///
    /// # Errors
    /// [`Error::Truncated`], [`Error::WrongClass`], [`Error::BadBaseVersion`].
    pub fn new_checked(buffer: T) -> Result<SaMad<T>> {
        let buf = buffer.as_ref();
        check_len("SA MAD", buf, SA_HEADER_LEN)?;
        let mad = Mad::new_unchecked(buf);
        let found = mad.mgmt_class().raw();
        if found != class::SUBN_ADM {
            return Err(Error::WrongClass { expected: "SubnAdm (0x03)", found });
        }
        if mad.base_version() != 1 {
            return Err(Error::BadBaseVersion(mad.base_version()));
        }
        Ok(SaMad { buffer })
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The common MAD header.
    pub fn header(&self) -> Mad<&[u8]> {
        Mad::new_unchecked(self.buffer.as_ref())
    }
    /// The RMPP header.
    pub fn rmpp(&self) -> Rmpp<&[u8]> {
        Rmpp::new_unchecked(self.buffer.as_ref())
    }
    /// `SM_Key`.
    pub fn sm_key(&self) -> u64 {
        bits::u64_at(self.buffer.as_ref(), field::SM_KEY)
    }
    /// `AttributeOffset`, in 8-byte words: the stride of records in a table response.
    pub fn attr_offset(&self) -> u16 {
        bits::u16_at(self.buffer.as_ref(), field::ATTR_OFFSET)
    }
    /// `ComponentMask`.
    pub fn comp_mask(&self) -> u64 {
        bits::u64_at(self.buffer.as_ref(), field::COMP_MASK)
    }
    /// The SA data: everything from byte 56 (200 bytes in a single MAD).
    pub fn data(&self) -> &[u8] {
        self.buffer.as_ref().get(field::DATA..).unwrap_or(&[])
    }
    /// The records of a table response, at a stride of `AttributeOffset` × 8 bytes.
    pub fn records(&self) -> Records<'_> {
        records(self.data(), self.attr_offset())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> SaMad<T> {
    /// The common MAD header, mutable.
    pub fn header_mut(&mut self) -> Mad<&mut [u8]> {
        Mad::new_unchecked(self.buffer.as_mut())
    }
    /// The RMPP header, mutable.
    pub fn rmpp_mut(&mut self) -> Rmpp<&mut [u8]> {
        Rmpp::new_unchecked(self.buffer.as_mut())
    }
    /// Sets `SM_Key`.
    pub fn set_sm_key(&mut self, v: u64) {
        bits::put_u64(self.buffer.as_mut(), field::SM_KEY, v);
    }
    /// Sets `AttributeOffset` (8-byte words).
    pub fn set_attr_offset(&mut self, v: u16) {
        bits::put_u16(self.buffer.as_mut(), field::ATTR_OFFSET, v);
    }
    /// Zeroes the reserved bytes 46..48.
    pub fn clear_reserved(&mut self) {
        zero(self.buffer.as_mut(), field::RESERVED);
    }
    /// Sets `ComponentMask`.
    pub fn set_comp_mask(&mut self, v: u64) {
        bits::put_u64(self.buffer.as_mut(), field::COMP_MASK, v);
    }
    /// The SA data, mutable.
    pub fn data_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut().get_mut(field::DATA..).unwrap_or(&mut [])
    }
}

/// The `AttributeOffset` (in 8-byte words) for records of `record_len` bytes: the length rounded
/// up to a multiple of 8 (saturating at `u16::MAX`).
pub fn attr_offset_for(record_len: usize) -> u16 {
    u16::try_from(record_len.div_ceil(8)).unwrap_or(u16::MAX)
}

/// The records in `data` at a stride of `attr_offset` × 8 bytes.
///
/// Yields only whole records: `AttributeOffset` 0 yields nothing, and a last record that would
/// run past the end of `data` is not yielded. Without RMPP (a single MAD, as under ibsim) a
/// response's trailing zero padding cannot be told from a record: callers that know the count
/// bound the iterator with `take`.
pub fn records(data: &[u8], attr_offset: u16) -> Records<'_> {
    Records { rest: data, stride: usize::from(attr_offset) * 8 }
}

/// Iterator over the records of an SA table response (see [`records`]).
#[derive(Debug, Clone)]
pub struct Records<'a> {
    rest: &'a [u8],
    stride: usize,
}

impl<'a> Iterator for Records<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.stride == 0 || self.rest.len() < self.stride {
            return None;
        }
        let (rec, rest) = self.rest.split_at(self.stride);
        self.rest = rest;
        Some(rec)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.rest.len().checked_div(self.stride).unwrap_or(0);
        (n, Some(n))
    }
}

impl ExactSizeIterator for Records<'_> {}

/// The SA header (common header, RMPP header and SA fields) as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SaHeader {
    /// Method.
    pub method: Method,
    /// Status (the SA class-specific codes are in bits 8..14; see [`crate::ids::status`]).
    pub status: u16,
    /// `TransactionID`.
    pub tid: u64,
    /// `AttributeID` (the record type).
    pub attr_id: u16,
    /// `AttributeModifier`.
    pub attr_mod: u32,
    /// The RMPP header.
    pub rmpp: RmppHeader,
    /// `SM_Key`.
    pub sm_key: u64,
    /// `AttributeOffset`, in 8-byte words.
    pub attr_offset: u16,
    /// `ComponentMask`.
    pub comp_mask: u64,
}

impl SaHeader {
    /// Reads the SA header. The class version must be 2.
    ///
    /// # Errors
    /// [`SaMad::new_checked`]'s errors, then [`Error::BadClassVersion`].
    pub fn parse<T: AsRef<[u8]>>(sa: &SaMad<T>) -> Result<SaHeader> {
        let buf = sa.buffer.as_ref();
        SaMad::new_checked(buf)?;
        // Read from the header's bytes as an array (`new_checked` saw at least that many):
        // with the length known, the field readers' bounds checks fold away.
        let Some(buf) = buf.first_chunk::<SA_HEADER_LEN>() else {
            return Err(Error::Truncated { what: "SA MAD", need: SA_HEADER_LEN, got: buf.len() });
        };
        let buf = &buf[..];
        let sa = SaMad::new_unchecked(buf);
        let mad = sa.header();
        if mad.class_version() != 2 {
            return Err(Error::BadClassVersion { class: class::SUBN_ADM, expected: 2, found: mad.class_version() });
        }
        Ok(SaHeader {
            method: mad.method(),
            status: mad.status(),
            tid: mad.tid(),
            attr_id: mad.attr_id(),
            attr_mod: mad.attr_mod(),
            rmpp: RmppHeader::from_bytes(buf)?,
            sm_key: sa.sm_key(),
            attr_offset: sa.attr_offset(),
            comp_mask: sa.comp_mask(),
        })
    }

    /// Reads the SA header from the start of `buf`.
    ///
    /// # Errors
    /// As [`SaHeader::parse`].
    pub fn from_bytes(buf: &[u8]) -> Result<SaHeader> {
        SaHeader::parse(&SaMad::new_unchecked(buf))
    }

    /// Writes the 56 header bytes (`BaseVersion` 1, class 0x03, `ClassVersion` 2,
    /// `ClassSpecific` and reserved bytes zero) into `buf`; a shorter buffer gets what fits. The
    /// data is untouched.
    pub fn emit(&self, buf: &mut [u8]) {
        // Written whole into an array of the header's length (every byte of it is a field or
        // a reserved zero), then what fits copied: with the length known the field writers'
        // bounds checks fold away (the SA writes one header per answer).
        let mut whole = [0u8; SA_HEADER_LEN];
        self.emit_whole(&mut whole);
        let end = SA_HEADER_LEN.min(buf.len());
        buf[..end].copy_from_slice(&whole[..end]);
    }

    /// [`SaHeader::emit`] into exactly the header's bytes.
    #[inline]
    fn emit_whole(&self, buf: &mut [u8; SA_HEADER_LEN]) {
        let buf = &mut buf[..];
        MadHeader {
            base_version: 1,
            mgmt_class: MgmtClass::SubnAdm,
            class_version: 2,
            method: self.method,
            status: self.status,
            class_specific: 0,
            tid: self.tid,
            attr_id: self.attr_id,
            attr_mod: self.attr_mod,
        }
        .emit(buf);
        self.rmpp.emit(buf);
        let mut sa = SaMad::new_unchecked(buf);
        sa.set_sm_key(self.sm_key);
        sa.set_attr_offset(self.attr_offset);
        sa.clear_reserved();
        sa.set_comp_mask(self.comp_mask);
    }

    /// Bytes [`SaHeader::emit`] writes: 56.
    pub const fn buffer_len(&self) -> usize {
        SA_HEADER_LEN
    }

    /// A request header: status 0, no RMPP, `SM_Key` 0, `AttributeOffset` 0, `AttributeModifier` 0.
    pub fn request(method: Method, attr_id: u16, comp_mask: u64, tid: u64) -> SaHeader {
        SaHeader {
            method,
            status: 0,
            tid,
            attr_id,
            attr_mod: 0,
            rmpp: RmppHeader::default(),
            sm_key: 0,
            attr_offset: 0,
            comp_mask,
        }
    }

    /// The header of the answer to this request: the matching response method (`GetResp` when
    /// the method has none), `status`, the records' `attr_offset`; TID, attribute and
    /// `ComponentMask` kept; `SM_Key` zero and no RMPP (the transport sets RMPP up when it
    /// segments).
    #[must_use]
    pub fn response(&self, status: u16, attr_offset: u16) -> SaHeader {
        SaHeader {
            method: self.method.response().unwrap_or(Method::GetResp),
            status,
            rmpp: RmppHeader::default(),
            sm_key: 0,
            attr_offset,
            ..*self
        }
    }

    /// A single 256-byte MAD with this header and `record` at the start of the data area.
    ///
    /// # Errors
    /// [`Error::Invalid`] when `record` is longer than the 200 data bytes of one MAD.
    pub fn to_mad(&self, record: &[u8]) -> Result<[u8; MAD_LEN]> {
        if record.len() > SA_DATA_LEN {
            return Err(Error::Invalid { what: "SA record length", value: record.len() as u64 });
        }
        let mut buf = [0u8; MAD_LEN];
        self.emit(&mut buf);
        put_slice(&mut buf, SA_HEADER_LEN, record);
        Ok(buf)
    }
}

/// A single-MAD SA request (`Get`, `GetTable`, `Delete`, ...) for the record type `A`, selecting
/// on the components in `comp_mask`, with `record` as the template.
///
/// # Errors
/// [`Error::Invalid`] when `A::LEN` exceeds the 200 data bytes of one MAD.
pub fn request<A: Attribute>(method: Method, comp_mask: u64, tid: u64, record: &A) -> Result<[u8; MAD_LEN]> {
    SaHeader::request(method, A::ID, comp_mask, tid).to_mad(&record.to_vec())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::header::hex_dump;
    use crate::ids::sa_attr;
    use crate::rmpp::{RmppFlags, RmppType};
    use proptest::collection::vec;
    use proptest::prelude::*;

    // Fixtures: libibmad "SA Request"/"SA Response" dumps of `saquery -d -d` (infiniband-diags
    // 44.0) on Hca3, answered by OpenSM 3.3.23, all under ibsim 0.10 on net.2sw2path4hca.

    /// `saquery NR`: `OpenSM`'s GetTableResp(NodeRecord). `OpenSM` built two 112-byte records
    /// (Hca1 at LID 2, then Switch1 at LID 1), but without RMPP only the first fits; bytes
    /// 224.. are umad2sim heap garbage.
    pub(crate) const NR_RESP: &str = "
        0103 0292 0000 0000 0001 0000 7753 6cdf 0011 0000 0000 0000 0000 0100 0000 0000
        0000 0000 0000 0000 0000 0000 000e 0000 0000 0000 0000 0000 0002 0000 0101 0102
        0000 0000 0010 0000 0000 0000 0010 0000 0000 0000 0010 0001 0040 0000 0000 00a1
        0100 0000 4863 6131 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
        0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
        0000 0000 0000 0000 0001 0000 0101 0208 0000 0000 0020 0000 0000 0000 0020 0000
        0000 0000 0020 0000 0008 0000 0000 00a1 0000 0000 5377 6974 6368 3100 0000 0000
        0000 0000 0000 0000 2500 0000 0000 0000 00c0 0ef9 0700 0000 0000 0000 0000 0000";

    /// `saquery PIR 1`: GetTable(PortInfoRecord) with `ComponentMask` 1 (`EndportLID`) = 1.
    const PIR_REQ: &str = "
        0103 0212 0000 0000 0000 0000 5981 b531 0012 0000 0000 0000 0000 0000 0000 0000
        0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0001 0001 0000 0000 0000";

    fn pir_req() -> [u8; 256] {
        let mut b = [0u8; 256];
        let v = hex_dump(PIR_REQ);
        b[..v.len()].copy_from_slice(&v);
        b
    }

    fn pir_header() -> SaHeader {
        SaHeader::request(Method::GetTable, sa_attr::PORT_INFO_RECORD, 1, 0x5981_b531)
    }

    #[test]
    fn deconstruct_table_response() {
        let buf = hex_dump(NR_RESP);
        let sa = SaMad::new_checked(&buf[..]).unwrap();
        assert_eq!(sa.header().method(), Method::GetTableResp);
        assert_eq!(sa.header().attr_id(), sa_attr::NODE_RECORD);
        assert_eq!(sa.rmpp().flags(), RmppFlags { active: true, first: false, last: false });
        assert_eq!((sa.sm_key(), sa.attr_offset(), sa.comp_mask()), (0, 14, 0));
        assert_eq!(sa.data().len(), 200);
        let recs: Vec<&[u8]> = sa.records().collect();
        assert_eq!(recs.len(), 1, "the second 112-byte record does not fit in 200 bytes");
        // saquery decoded it as: LID 2, CA, 2 ports, node GUID 0x100000, "Hca1".
        assert_eq!(&recs[0][..8], &[0, 2, 0, 0, 1, 1, 1, 2]);
        assert_eq!(&recs[0][44..48], b"Hca1", "NodeDescription after LID, reserved, NodeInfo");
        // With room for it (as after RMPP reassembly) the second record, Switch1 at LID 1,
        // starts 112 bytes later.
        let mut long = buf.clone();
        long.resize(56 + 2 * 112, 0);
        let view = SaMad::new_checked(&long[..]).unwrap();
        let second = view.records().nth(1).unwrap();
        assert_eq!(&second[..8], &[0, 1, 0, 0, 1, 1, 2, 8]);
    }

    #[test]
    fn construct_request() {
        let mut buf = [0u8; 256];
        buf[..4].copy_from_slice(&[1, 3, 2, 0x12]);
        let mut sa = SaMad::new_unchecked(&mut buf[..]);
        sa.header_mut().set_tid(0x5981_b531);
        sa.header_mut().set_attr_id(sa_attr::PORT_INFO_RECORD);
        sa.set_comp_mask(1);
        sa.data_mut()[..2].copy_from_slice(&[0, 1]);
        assert_eq!(buf, pir_req());
    }

    #[test]
    fn parse_and_emit_request() {
        assert_eq!(SaHeader::from_bytes(&pir_req()), Ok(pir_header()));
        assert_eq!(pir_header().to_mad(&[0, 1]), Ok(pir_req()));
        let mut out = [0xeeu8; 56];
        pir_header().emit(&mut out);
        assert_eq!(out[..], pir_req()[..56]);
        assert!(pir_header().to_mad(&[0; 201]).is_err());
    }

    #[test]
    fn parse_response_header() {
        let h = SaHeader::from_bytes(&hex_dump(NR_RESP)).unwrap();
        assert_eq!(h.method, Method::GetTableResp);
        assert_eq!(h.tid, 0x0001_0000_7753_6cdf);
        assert_eq!(h.rmpp.rmpp_type, RmppType::None);
        assert!(h.rmpp.flags.active);
        assert_eq!(h.attr_offset, 14);
        let mut sa = hex_dump(NR_RESP);
        sa[2] = 1;
        assert_eq!(SaHeader::from_bytes(&sa), Err(Error::BadClassVersion { class: 3, expected: 2, found: 1 }));
        assert!(matches!(SaHeader::from_bytes(&[1, 1, 2, 1]), Err(Error::Truncated { .. })));
    }

    #[test]
    fn response_header() {
        let r = pir_header().response(0, attr_offset_for(58));
        assert_eq!((r.method, r.attr_offset, r.tid, r.comp_mask), (Method::GetTableResp, 8, 0x5981_b531, 1));
        let mut get = pir_header();
        get.method = Method::Get;
        assert_eq!(get.response(0x0300, 0).method, Method::GetResp);
        assert_eq!(attr_offset_for(108), 14, "NodeRecord: 108 bytes padded to 112");
        assert_eq!(attr_offset_for(0), 0);
    }

    #[test]
    fn record_iteration_edge_cases() {
        let data = [7u8; 40];
        assert_eq!(records(&data, 0).count(), 0);
        assert_eq!(records(&data, 6).count(), 0, "48-byte records do not fit in 40 bytes");
        assert_eq!(records(&data, 5).count(), 1);
        assert_eq!(records(&data, 2).len(), 2);
        assert_eq!(records(&data, u16::MAX).count(), 0);
        assert_eq!(records(&[], 1).count(), 0);
        let short = SaMad::new_unchecked(&[1u8, 3, 2][..]);
        assert_eq!((short.records().count(), short.data().len(), short.sm_key()), (0, 0, 0));
    }

    #[test]
    fn checked_constructor_rejects() {
        let buf = pir_req();
        assert!(matches!(SaMad::new_checked(&buf[..55]), Err(Error::Truncated { need: 56, .. })));
        let mut smp = buf;
        smp[1] = 0x81;
        assert!(matches!(SaMad::new_checked(&smp[..]), Err(Error::WrongClass { found: 0x81, .. })));
        let mut bv = buf;
        bv[0] = 0;
        assert_eq!(SaMad::new_checked(&bv[..]).map(|_| ()), Err(Error::BadBaseVersion(0)));
    }

    fn arb_sa() -> impl Strategy<Value = SaHeader> {
        (any::<(u8, u16, u64, u16, u32)>(), any::<([u8; 5], u32, u32)>(), any::<(u64, u16, u64)>()).prop_map(
            |((m, status, tid, attr_id, attr_mod), (r, data1, data2), (sm_key, attr_offset, comp_mask))| SaHeader {
                method: Method::from_raw(m),
                status,
                tid,
                attr_id,
                attr_mod,
                rmpp: RmppHeader {
                    version: r[0],
                    rmpp_type: RmppType::from_raw(r[1]),
                    resp_time: r[2] & 0x1f,
                    flags: RmppFlags::from_raw(r[3]),
                    status: r[4],
                    data1,
                    data2,
                },
                sm_key,
                attr_offset,
                comp_mask,
            },
        )
    }

    proptest! {
        #[test]
        fn repr_round_trip(h in arb_sa(), rec in vec(any::<u8>(), 0..=200)) {
            let mad = h.to_mad(&rec).unwrap();
            prop_assert_eq!(SaHeader::from_bytes(&mad), Ok(h));
            let view = SaMad::new_checked(&mad[..]).unwrap();
            prop_assert_eq!(&view.data()[..rec.len()], &rec[..]);
        }

        #[test]
        fn arbitrary_bytes_never_panic(mut buf in vec(any::<u8>(), 256), sa: bool) {
            if sa {
                buf[..3].copy_from_slice(&[1, 3, 2]);
            }
            if let Ok(h) = SaHeader::from_bytes(&buf) {
                prop_assert_eq!(SaHeader::from_bytes(&h.to_mad(&[]).unwrap()), Ok(h));
            }
            let v = SaMad::new_unchecked(&buf[..]);
            let total: usize = v.records().map(<[u8]>::len).sum();
            prop_assert!(total <= 200);
        }

        #[test]
        fn records_tile_the_data(len in 0usize..2000, off: u16) {
            let data = vec![0u8; len];
            let n = records(&data, off).count();
            let stride = usize::from(off) * 8;
            let expected = match stride {
                0 => 0,
                s => len / s,
            };
            prop_assert_eq!(n, expected);
        }
    }
}

//! Building SA answers: record selection by ComponentMask and the response MAD for Get and
//! GetTable, as one MAD (the simulators, which carry no RMPP) or as one RMPP payload that the
//! kernel segments.
//!
//! Owns the status rules every attribute shares: Get with no match is NO_RECORDS, Get with
//! several is TOO_MANY_RECORDS, GetTable with none is an empty success; and the single-MAD
//! limit, which keeps only the records that end within the bytes the transport carries intact.
//! Records are emitted straight into the response's buffer, after room for its header: the
//! answer to a Get allocates that buffer and nothing else.

use ibsm_mad::header::Method;
use ibsm_mad::ids::status;
use ibsm_mad::records::components::{Components, matches};
use ibsm_mad::rmpp::{RmppFlags, RmppHeader, RmppType};
use ibsm_mad::sa::{SA_HEADER_LEN, SaHeader};
use ibsm_mad::{Attribute, MAD_LEN};

use super::{Limits, Query};

/// Records selected for an answer, emitted back to back at the record's stride.
#[derive(Debug)]
pub(super) struct Table {
    stride: usize,
    len: usize,
    /// The response: [`SA_HEADER_LEN`] bytes for its header, then the records; zero past
    /// `used` (made zeroed once, and a record not kept is cleared again).
    bytes: Vec<u8>,
    /// Bytes of `bytes` in use: the header and the records kept.
    used: usize,
    count: usize,
    /// Stop collecting after this many (Get needs two to see "too many").
    cap: usize,
    /// More matched than were kept.
    pub truncated: bool,
}

impl Table {
    /// An empty table of `A` records for `q` under `limits`.
    #[allow(clippy::slow_vector_initialization)] // measured: see the comment on the buffer
    pub fn new<A: Attribute>(q: &Query<'_>, limits: &Limits) -> Table {
        let stride = ibsm_mad::records::stride::<A>();
        let cap = match q.header.method {
            Method::Get => 2,
            _ => limits.max_records(stride),
        };
        // A Get's answer is one MAD (room for the second record that makes it "too many"),
        // zeroed once: the record is emitted into it and nothing is resized or cleared after.
        let room = if q.header.method == Method::Get { MAD_LEN.max(SA_HEADER_LEN + 2 * stride) } else { SA_HEADER_LEN };
        // Into the spare MAD buffer when one is offered and the answer fits one MAD (no
        // allocation, and the driver hands the buffer back again after the send), else
        // allocated, then zeroed: `vec![0; n]` would take glibc's calloc, which skips the
        // thread cache and cost more than the zeroing.
        let mut bytes = match q.spare.take() {
            Some(mut b) if room == MAD_LEN && b.len() == MAD_LEN => {
                b.fill(0);
                b
            }
            other => {
                q.spare.set(other);
                Vec::with_capacity(room)
            }
        };
        bytes.resize(room, 0);
        Table { stride, len: A::LEN, bytes, used: SA_HEADER_LEN, count: 0, cap, truncated: false }
    }

    /// Whether no more records are wanted.
    pub fn full(&self) -> bool {
        self.count >= self.cap
    }

    /// Adds `rec` if it matches the query's components. Returns false once the table is full.
    pub fn offer<A: Components>(&mut self, q: &Query<'_>, rec: &A) -> bool {
        self.offer_under(q, q.header.comp_mask, rec)
    }

    /// Adds `rec` if it matches the query's template on the components in `mask` (the query's
    /// mask less the components the caller matched by meaning). Returns false once the table is
    /// full.
    pub fn offer_under<A: Components>(&mut self, q: &Query<'_>, mask: u64, rec: &A) -> bool {
        let Some(at) = self.append(rec) else { return false };
        if matches::<A>(mask, q.template, &self.bytes[at..self.used]) {
            self.count += 1;
        } else {
            self.bytes[at..self.used].fill(0);
            self.used = at;
        }
        true
    }

    /// Adds `rec` without a component check (the caller matched it by meaning). Returns false
    /// once the table is full.
    pub fn push<A: Attribute>(&mut self, rec: &A) -> bool {
        if self.append(rec).is_none() {
            return false;
        }
        self.count += 1;
        true
    }

    /// Emits `rec` at the end of the table (not yet counted); `None` when the table is full.
    fn append<A: Attribute>(&mut self, rec: &A) -> Option<usize> {
        if self.full() {
            self.truncated = true;
            return None;
        }
        let at = self.used;
        let end = at + self.stride;
        if self.bytes.len() < end {
            self.bytes.resize(end, 0);
        }
        rec.emit(&mut self.bytes[at..at + self.len]);
        self.used = end;
        Some(at)
    }

    /// The response MAD(s) for `q`.
    pub fn answer(self, q: &Query<'_>, limits: &Limits) -> Answer {
        let h = &q.header;
        let offset = (self.stride / 8) as u16;
        let mut bytes = self.bytes;
        if h.method == Method::Get {
            return match self.count {
                0 => Answer::error(h, status::SA_NO_RECORDS),
                1 => {
                    // One MAD: the record (cut to the data area) after the header, zeros after
                    // (the buffer is zero past the record, and at least a MAD long).
                    bytes.truncate(MAD_LEN);
                    bytes.resize(MAD_LEN, 0);
                    let resp = h.response(status::OK, offset);
                    resp.emit(&mut bytes);
                    Answer { bytes, status: resp.status, records: 1, truncated: false }
                }
                _ => Answer::error(h, status::SA_TOO_MANY_RECORDS),
            };
        }
        bytes.truncate(self.used);
        let mut resp = h.response(status::OK, offset);
        let payload = bytes.len() - SA_HEADER_LEN;
        // A GetTableResp is exactly as long as its records: clients count the records from the
        // length they receive (umad2sim passes a short MAD on as it is).
        let rmpp_flags = match limits.single_mad_bytes {
            Some(_) => RmppFlags { active: true, first: true, last: true },
            // An empty table goes out as one plain MAD.
            None if payload == 0 => RmppFlags::default(),
            // One payload; the kernel's RMPP agent segments it (it fills segment numbers,
            // First/Last and the payload length of each segment).
            None => RmppFlags { active: true, first: false, last: false },
        };
        if rmpp_flags.active {
            resp.rmpp = rmpp(rmpp_flags, payload);
        }
        resp.emit(&mut bytes);
        if payload == 0 && limits.single_mad_bytes.is_none() {
            bytes.resize(MAD_LEN, 0);
        }
        Answer { bytes, status: status::OK, records: self.count, truncated: self.truncated }
    }
}

/// An RMPP DATA header for a payload of `records` bytes after the SA header.
fn rmpp(flags: RmppFlags, records: usize) -> RmppHeader {
    RmppHeader {
        version: 1,
        rmpp_type: RmppType::Data,
        flags,
        data1: 1,
        // PayloadLength counts the SA-specific header (20 bytes after the RMPP header) and data.
        data2: u32::try_from(SA_HEADER_LEN - 36 + records).unwrap_or(u32::MAX),
        ..RmppHeader::default()
    }
}

/// A response ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The MAD bytes (one MAD, or one RMPP payload).
    pub bytes: Vec<u8>,
    /// The status it carries.
    pub status: u16,
    /// Records it carries.
    pub records: usize,
    /// Records that matched but did not fit.
    pub truncated: bool,
}

impl Answer {
    /// A one-MAD response with `data` (cut to one MAD's data area).
    pub fn single(header: SaHeader, data: &[u8], records: usize) -> Answer {
        let mut bytes = vec![0u8; MAD_LEN];
        header.emit(&mut bytes);
        let n = data.len().min(MAD_LEN - SA_HEADER_LEN);
        bytes[SA_HEADER_LEN..SA_HEADER_LEN + n].copy_from_slice(&data[..n]);
        Answer { bytes, status: header.status, records, truncated: false }
    }

    /// A response with `status` and no data.
    pub fn error(h: &SaHeader, status: u16) -> Answer {
        Answer::single(h.response(status, 0), &[], 0)
    }
}

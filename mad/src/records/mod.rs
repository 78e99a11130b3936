//! SA records: the attributes of the subnet administration class (0x03), one file per record.
//!
//! Each record is a plain struct implementing [`crate::Attribute`], written field by field from
//! the IBTA layout tables (vol. 1, chapter 15.2.5, and 13.4.8 for ClassPortInfo and InformInfo).
//! `LEN` is the record's size in the spec's table; in a GetTable response records sit at a stride
//! of [`stride`] bytes (AttributeOffset × 8), and the padding is zero. Records that embed an SMP
//! attribute (NodeRecord, PortInfoRecord, ...) call that attribute's own parse/emit from
//! [`crate::attrs`] at the right offset, so a byte offset is written once in the crate.
//!
//! Every record also names its ComponentMask bits (`COMP_*`, one per component in spec order,
//! reserved components included) because SA queries select records by component mask.
//!
//! Guarantees: `parse` never panics and fails with [`crate::Error::Truncated`] on short input;
//! reserved bits are ignored on parse and written as zero by `emit`; `emit` never panics, even on
//! a short buffer (it writes what fits). This module does not know the SA MAD header or RMPP.

// The docs here are prose about the IBTA specification, whose record and field names
// (PathRecord, ServiceP_Key, ComponentMask, ...) are spec vocabulary rather than Rust identifiers.
#![allow(clippy::doc_markdown)]

mod class_port_info;
pub mod components;
mod forwarding_records;
mod guid_info_record;
mod inform_info;
mod link_record;
mod mc_member_record;
mod multi_path_record;
mod node_record;
#[cfg(test)]
mod opensm_capture_tests;
mod params;
mod path_record;
mod pkey_table_record;
mod port_info_record;
mod service_record;
mod sm_info_record;
mod switch_info_record;
mod vl_table_records;

pub use class_port_info::ClassPortInfo;
pub use forwarding_records::{LftRecord, MftRecord};
pub use guid_info_record::GuidInfoRecord;
pub use inform_info::{InformInfo, InformInfoRecord};
pub use link_record::LinkRecord;
pub use mc_member_record::{JoinState, McMemberRecord};
pub use multi_path_record::MultiPathRecord;
pub use node_record::NodeRecord;
pub use params::{Mtu, Rate, Selector};
pub use path_record::PathRecord;
pub use pkey_table_record::PKeyTableRecord;
pub use port_info_record::PortInfoRecord;
pub use service_record::ServiceRecord;
pub use sm_info_record::SmInfoRecord;
pub use switch_info_record::SwitchInfoRecord;
pub use vl_table_records::{SlToVlTableRecord, VlArbTableRecord};

use crate::{Attribute, Gid, bits};

/// Bytes between consecutive records of type `A` in a GetTable response: `A::LEN` rounded up to
/// a multiple of 8, since the SA header's AttributeOffset counts 8-byte words.
pub const fn stride<A: Attribute>() -> usize {
    A::LEN.div_ceil(8) * 8
}

/// The ComponentMask bit for component number `n` (0 = first component in the spec's table).
const fn comp(n: u32) -> u64 {
    1u64 << n
}

/// Reads a GID at byte `off` (zeros past the end of `buf`).
fn gid_at(buf: &[u8], off: usize) -> Gid {
    Gid::from_bytes(buf.get(off..).unwrap_or(&[]))
}

/// Writes a GID at byte `off`; bytes past the end of `buf` are dropped.
fn put_gid(buf: &mut [u8], off: usize, gid: Gid) {
    if let Some(tail) = buf.get_mut(off..) {
        gid.write(tail);
    }
}

/// Reads `N` bytes at byte `off` (zeros past the end of `buf`).
fn bytes_at<const N: usize>(buf: &[u8], off: usize) -> [u8; N] {
    let mut out = [0u8; N];
    for (i, b) in out.iter_mut().enumerate() {
        *b = buf.get(off + i).copied().unwrap_or(0);
    }
    out
}

/// Copies `src` to byte `off`; bytes past the end of `buf` are dropped.
fn put_bytes(buf: &mut [u8], off: usize, src: &[u8]) {
    for (i, b) in src.iter().enumerate() {
        if let Some(d) = buf.get_mut(off + i) {
            *d = *b;
        }
    }
}

/// Reads a 1-bit flag at IBTA bit offset `bit`.
fn flag(buf: &[u8], bit: usize) -> bool {
    bits::get(buf, bit, 1) != 0
}

/// Writes a 1-bit flag at IBTA bit offset `bit`.
fn set_flag(buf: &mut [u8], bit: usize, on: bool) {
    bits::set(buf, bit, 1, u64::from(on));
}

/// Parses an embedded SMP attribute that occupies `span` bytes at byte `off` of a record.
///
/// SMP attributes are parsed from their 64-byte SMP payload, while a record holds only the
/// attribute's defined bytes (NodeInfo is 40 bytes in a NodeRecord, SMInfo 21): the span is
/// copied into a zero-filled buffer of the attribute's own length first. The caller has
/// checked that the record is long enough.
fn parse_embedded<A: Attribute>(buf: &[u8], off: usize, span: usize) -> crate::Result<A> {
    let mut tmp = vec![0u8; A::LEN.max(span)];
    put_bytes(&mut tmp, 0, buf.get(off..off + span).unwrap_or(&[]));
    A::parse(&tmp)
}

/// Emits an embedded SMP attribute into the `span` bytes at byte `off` of a record (the
/// counterpart of [`parse_embedded`]); bytes past the end of `buf` are dropped.
fn emit_embedded<A: Attribute>(attr: &A, buf: &mut [u8], off: usize, span: usize) {
    let mut tmp = vec![0u8; A::LEN.max(span)];
    attr.emit(&mut tmp);
    put_bytes(buf, off, tmp.get(..span).unwrap_or(&[]));
}

/// The bytes of `buf` from `off` on (empty past the end).
fn tail(buf: &[u8], off: usize) -> &[u8] {
    buf.get(off..).unwrap_or(&[])
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Helpers shared by the record tests.
    use crate::{Attribute, Error};
    use core::fmt::Debug;

    /// Parses a fixture written as whitespace-separated hex bytes.
    pub fn hex(s: &str) -> Vec<u8> {
        s.split_whitespace().map(|b| u8::from_str_radix(b, 16).expect("fixture hex")).collect()
    }

    /// `parse(emit(x)) == x`, and `emit` into a dirty buffer gives the same bytes.
    pub fn round_trip<A: Attribute + Debug + PartialEq>(x: &A) {
        let bytes = x.to_vec();
        assert_eq!(bytes.len(), A::LEN);
        let back = A::parse(&bytes).expect("parse of emitted bytes");
        assert_eq!(&back, x);
        // emit writes every byte, reserved ones as zero, whatever the buffer held.
        let mut dirty = vec![0xa5u8; A::LEN];
        x.emit(&mut dirty);
        assert_eq!(dirty, bytes);
    }

    /// Every prefix shorter than `LEN` is rejected as truncated (and nothing panics).
    pub fn rejects_short<A: Attribute + Debug>(full: &[u8]) {
        for n in 0..A::LEN.min(full.len()) {
            match A::parse(&full[..n]) {
                Err(Error::Truncated { got, .. }) => assert_eq!(got, n),
                other => panic!("prefix of {n} bytes: expected Truncated, got {other:?}"),
            }
        }
    }

    /// `emit` into a buffer that is too short must not panic.
    pub fn emit_short_is_safe<A: Attribute>(x: &A) {
        for n in [0, 1, A::LEN / 2, A::LEN.saturating_sub(1)] {
            let mut b = vec![0u8; n];
            x.emit(&mut b);
        }
    }
}

//! Subnet management attributes: the 64-byte payloads of SMPs (and the 80-byte Notice).
//!
//! One file per attribute (or small family), each a plain struct implementing
//! [`crate::Attribute`], written field by field from the IBTA layout tables with the
//! [`crate::bits`] helpers. This module owns every byte and bit offset inside those payloads;
//! it knows nothing about the SMP header around them (the SMP module, above this one, carries
//! the payload without reading it) or about what an SM does with the values.
//!
//! Guarantees: `parse` never panics and fails only with [`crate::Error::Truncated`]; reserved bits
//! are ignored on parse and written as zero on emit; enumerated fields keep unknown values as
//! `Unknown(raw)` so that `emit(parse(bytes))` reproduces every defined field.

// The docs here are prose about the IBTA specification, whose attribute and field names
// (NodeInfo, LinearFDBTop, P_KeyTable, ...) are spec vocabulary rather than Rust identifiers.
#![allow(clippy::doc_markdown)]

mod guid_info;
mod lft;
mod mft;
mod node_desc;
mod node_info;
mod notice;
mod notice_details;
mod pkey_table;
mod port_info;
mod port_types;
mod sl2vl;
mod sm_info;
mod switch_info;
mod vl_arb;

pub use guid_info::GuidInfo;
pub use lft::LinearForwardingTable;
pub use mft::{MulticastForwardingTable, PortMask};
pub use node_desc::NodeDescription;
pub use node_info::{NodeInfo, NodeType};
pub use notice::{Notice, NoticeSource, NoticeType, ProducerType};
pub use notice_details::{KeyViolation, NoticeDetails};
pub use pkey_table::PKeyTable;
pub use port_info::{LINK_SPEED_EXT2_XDR, PortInfo, SM_SUPPORTS_EXTENDED_SPEEDS};
pub use port_types::{
    CapabilityMask, CapabilityMask2, LinkDownDefaultState, LinkSpeed, LinkSpeedExt, LinkSpeedExtMask, LinkSpeedMask,
    LinkWidth, LinkWidthMask, Mtu, PhysPortState, PortState,
};
pub use sl2vl::SlToVlTable;
pub use sm_info::{SmInfo, SmState};
pub use switch_info::SwitchInfo;
pub use vl_arb::{VlArbEntry, VlArbitrationTable};

/// Declares a wire enum for a field of at most 8 bits: named variants for the values the spec
/// defines plus `Unknown(raw)` for the rest, with lossless conversions from and to the raw value.
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident : $bits:literal bits {
            $( $(#[$vmeta:meta])* $variant:ident = $value:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
            /// A value the specification does not name; kept as read so that it round-trips.
            /// Build values with `from_raw`, which never yields `Unknown` for a named value.
            Unknown(u8),
        }

        impl $name {
            /// Width of the field on the wire, in bits.
            pub const BITS: usize = $bits;

            /// Decodes a raw field value; bits above [`Self::BITS`] are ignored.
            pub const fn from_raw(raw: u8) -> Self {
                let raw = (raw as u16 & ((1u16 << $bits) - 1)) as u8;
                match raw {
                    $( $value => Self::$variant, )*
                    other => Self::Unknown(other),
                }
            }

            /// The raw field value.
            pub const fn raw(self) -> u8 {
                match self {
                    $( Self::$variant => $value, )*
                    Self::Unknown(v) => v,
                }
            }
        }

        impl Default for $name {
            /// The all-zero wire value.
            fn default() -> Self {
                Self::from_raw(0)
            }
        }

        impl From<u8> for $name {
            fn from(raw: u8) -> Self {
                Self::from_raw(raw)
            }
        }

        impl From<$name> for u8 {
            fn from(v: $name) -> u8 {
                v.raw()
            }
        }
    };
}
pub(crate) use wire_enum;

/// Reads a one-bit flag at IBTA bit offset `bit`.
fn flag(buf: &[u8], bit: usize) -> bool {
    crate::bits::get(buf, bit, 1) != 0
}

/// Reads a field of at most 8 bits at IBTA bit offset `bit`.
fn small(buf: &[u8], bit: usize, width: usize) -> u8 {
    crate::bits::get(buf, bit, width) as u8
}

/// Writes a field of at most 8 bits (truncated to `width`).
fn put_small(buf: &mut [u8], bit: usize, width: usize, v: u8) {
    crate::bits::set(buf, bit, width, u64::from(v));
}

/// Writes a one-bit flag.
fn put_flag(buf: &mut [u8], bit: usize, v: bool) {
    crate::bits::set(buf, bit, 1, u64::from(v));
}

#[cfg(test)]
pub(crate) mod test_util {
    //! Helpers shared by the attribute tests.

    use crate::Attribute;

    /// Asserts that `parse` rejects every prefix shorter than `LEN` with `Truncated`.
    pub fn rejects_short<A: Attribute + core::fmt::Debug>() {
        let buf = vec![0u8; A::LEN];
        for n in 0..A::LEN {
            match A::parse(&buf[..n]) {
                Err(crate::Error::Truncated { need, got, .. }) => {
                    assert_eq!((need, got), (A::LEN, n));
                }
                other => panic!("parse of {n} bytes gave {other:?}"),
            }
        }
    }

    /// Emits into a buffer pre-filled with `0xa5` and checks that only `LEN` bytes are written
    /// and that the result parses back to the same value.
    pub fn emit_parse_roundtrip<A: Attribute + core::fmt::Debug + PartialEq>(a: &A) -> Vec<u8> {
        let mut buf = vec![0xa5u8; A::LEN + 8];
        a.emit(&mut buf);
        assert!(buf[A::LEN..].iter().all(|&b| b == 0xa5), "emit wrote past LEN");
        let back = A::parse(&buf).expect("parse of emitted bytes");
        assert_eq!(&back, a);
        buf.truncate(A::LEN);
        buf
    }
}

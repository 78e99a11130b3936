//! The one error type of the `mad` crate.
//!
//! Every parse failure is a value of [`Error`]; no parser in this crate panics on any input.
//! Messages say what was expected, what was found, and where (which structure, which field).

/// What went wrong while reading or checking MAD bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The buffer is shorter than the structure being read.
    #[error("{what}: need {need} bytes, got {got}")]
    Truncated {
        /// Structure being read, e.g. `"SMP"` or `"PortInfo"`.
        what: &'static str,
        /// Bytes the structure needs.
        need: usize,
        /// Bytes that were available.
        got: usize,
    },
    /// BaseVersion is not 1.
    #[error("MAD base version: expected 1, found {0}")]
    BadBaseVersion(u8),
    /// ClassVersion does not match the management class.
    #[error("class 0x{class:02x}: expected class version {expected}, found {found}")]
    BadClassVersion {
        /// Management class of the MAD.
        class: u8,
        /// Version this crate speaks for that class.
        expected: u8,
        /// Version found in the MAD.
        found: u8,
    },
    /// The management class is not the one the parser was asked for.
    #[error("expected management class {expected}, found 0x{found:02x}")]
    WrongClass {
        /// Human description of the accepted class(es).
        expected: &'static str,
        /// Class found in the MAD.
        found: u8,
    },
    /// A directed-route SMP has a hop count above 63.
    #[error("directed-route hop count {0} exceeds 63")]
    HopCount(u8),
    /// A directed-route SMP has a hop pointer outside `0..=hop_count + 1`.
    #[error("directed-route hop pointer {pointer} out of range for hop count {count}")]
    HopPointer {
        /// HopPointer field.
        pointer: u8,
        /// HopCount field.
        count: u8,
    },
    /// The method is not defined for this class.
    #[error("class 0x{class:02x}: unknown or unsupported method 0x{method:02x}")]
    UnknownMethod {
        /// Management class.
        class: u8,
        /// Raw method byte (R bit included).
        method: u8,
    },
    /// The attribute is not defined (or not supported by this crate) for this class.
    #[error("class 0x{class:02x}: unknown attribute 0x{attr:04x}")]
    UnknownAttribute {
        /// Management class.
        class: u8,
        /// Attribute id.
        attr: u16,
    },
    /// A field holds a value the specification forbids.
    #[error("{what}: invalid value {value:#x}")]
    Invalid {
        /// `"Structure.Field"`.
        what: &'static str,
        /// Offending value.
        value: u64,
    },
}

/// Result alias for this crate.
pub type Result<T> = core::result::Result<T, Error>;

/// Checks that `buf` holds at least `need` bytes for `what`.
///
/// # Errors
/// [`Error::Truncated`] when it does not.
pub fn check_len(what: &'static str, buf: &[u8], need: usize) -> Result<()> {
    if buf.len() < need { Err(Error::Truncated { what, need, got: buf.len() }) } else { Ok(()) }
}

//! `ibsm-mad`: the InfiniBand management datagram (MAD) wire format.
//!
//! This crate owns every byte offset in ibsm. Nothing else in the workspace reads or writes MAD
//! bytes directly. It provides, in the style of smoltcp's `wire` module:
//!
//! - zero-copy views over packets ([`header::Mad`], [`smp::Smp`], [`smp::DrSmp`], [`sa::SaMad`])
//!   whose checked constructors guarantee that no accessor panics afterwards;
//! - plain `Repr` structs with `parse`/`emit` for the headers and for every SMP attribute
//!   ([`attrs`]), SA record ([`records`]) and performance-management attribute ([`perf`]), all
//!   implementing [`Attribute`];
//! - domain newtypes ([`Lid`], [`Guid`], [`PKey`], [`MKey`], [`PortNum`], [`DrPath`], [`Gid`]).
//!
//! Guarantees: parsing never panics on any input (property-tested and fuzzed); malformed input
//! is a typed [`Error`]; unknown enum values are kept as `Unknown(raw)` and round-trip.
//! This crate does no I/O and keeps no state.

pub mod attrs;
pub mod bits;
pub mod decode;
mod error;
pub mod header;
pub mod ids;
pub mod perf;
pub mod records;
pub mod rmpp;
pub mod sa;
pub mod sm_smp;
pub mod smp;
mod types;

pub use error::{Error, Result, check_len};
pub use types::{DrPath, Gid, Guid, Lid, MKey, PKey, PortNum};

/// Size of every MAD on the wire (without RMPP reassembly).
pub const MAD_LEN: usize = 256;

/// A fixed-layout attribute or record that travels in a MAD's data area.
///
/// `parse` reads the first [`Attribute::LEN`] bytes of its input and fails with
/// [`Error::Truncated`] on a shorter buffer; it never panics. `emit` writes exactly `LEN` bytes and
/// requires `buf.len() >= LEN` (it is only ever called on buffers this crate sized).
pub trait Attribute: Sized {
    /// The attribute id used in the MAD header.
    const ID: u16;
    /// Length of the attribute in bytes on the wire.
    const LEN: usize;
    /// Reads the attribute from `buf`.
    fn parse(buf: &[u8]) -> Result<Self>;
    /// Writes the attribute into `buf[..LEN]`.
    fn emit(&self, buf: &mut [u8]);

    /// Convenience: the attribute as a freshly allocated `LEN`-byte vector.
    fn to_vec(&self) -> Vec<u8> {
        let mut v = vec![0u8; Self::LEN];
        self.emit(&mut v);
        v
    }
}

//! Domain newtypes: [`Lid`], [`Guid`], [`Gid`], [`PKey`], [`MKey`], [`PortNum`], [`DrPath`].
//!
//! A LID, a GUID or a key is never a bare integer outside the wire accessors. Each type prints
//! the way infiniband-diags prints it (`0x0000000000200000`, `0x7fff`, `0,1,3`).

use core::fmt;

use crate::{Error, Result};

/// A 16-bit local identifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Lid(pub u16);

impl Lid {
    /// LID 0: no LID assigned.
    pub const UNASSIGNED: Lid = Lid(0);
    /// The permissive LID, used as DLID for directed-route SMPs.
    pub const PERMISSIVE: Lid = Lid(0xffff);
    /// Highest unicast LID.
    pub const MAX_UNICAST: Lid = Lid(0xbfff);
    /// First multicast LID.
    pub const MULTICAST_BASE: Lid = Lid(0xc000);

    /// The raw value.
    pub const fn get(self) -> u16 {
        self.0
    }
    /// `1..=0xbfff`.
    pub const fn is_unicast(self) -> bool {
        self.0 >= 1 && self.0 <= Self::MAX_UNICAST.0
    }
    /// `0xc000..=0xfffe`.
    pub const fn is_multicast(self) -> bool {
        self.0 >= Self::MULTICAST_BASE.0 && self.0 != 0xffff
    }
}

impl fmt::Display for Lid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A 64-bit EUI-64 globally unique identifier (node, port or system image).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Guid(pub u64);

impl Guid {
    /// The raw value.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:016x}", self.0)
    }
}

impl core::str::FromStr for Guid {
    type Err = Error;
    /// Accepts `0x`-prefixed or bare hex, as ibnetdiscover prints both.
    fn from_str(s: &str) -> Result<Self> {
        let h = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(s);
        u64::from_str_radix(h, 16).map(Guid).map_err(|_| Error::Invalid { what: "GUID text", value: 0 })
    }
}

/// A 128-bit global identifier: subnet prefix and interface id (a port GUID).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Gid {
    /// Upper 64 bits.
    pub prefix: u64,
    /// Lower 64 bits.
    pub guid: Guid,
}

impl Gid {
    /// The default subnet prefix `fe80::/64`.
    pub const DEFAULT_PREFIX: u64 = 0xfe80_0000_0000_0000;

    /// Reads 16 bytes (zeros past the end).
    pub fn from_bytes(b: &[u8]) -> Gid {
        Gid { prefix: crate::bits::u64_at(b, 0), guid: Guid(crate::bits::u64_at(b, 8)) }
    }
    /// Writes 16 bytes.
    pub fn write(&self, b: &mut [u8]) {
        crate::bits::put_u64(b, 0, self.prefix);
        crate::bits::put_u64(b, 8, self.guid.0);
    }
}

impl fmt::Display for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // saquery prints GIDs as colon-separated 16-bit groups.
        let p = self.prefix;
        let g = self.guid.0;
        write!(
            f,
            "{:x}:{:x}:{:x}:{:x}:{:x}:{:x}:{:x}:{:x}",
            p >> 48,
            (p >> 32) & 0xffff,
            (p >> 16) & 0xffff,
            p & 0xffff,
            g >> 48,
            (g >> 32) & 0xffff,
            (g >> 16) & 0xffff,
            g & 0xffff
        )
    }
}

/// A partition key: 15-bit base plus the membership bit (bit 15: 1 = full, 0 = limited).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PKey(pub u16);

impl PKey {
    /// The default partition, full membership.
    pub const DEFAULT: PKey = PKey(0xffff);
    /// The invalid P_Key (an empty table entry).
    pub const INVALID: PKey = PKey(0);
    const FULL_BIT: u16 = 0x8000;

    /// Builds a key from a 15-bit base and the membership.
    pub const fn new(base: u16, full: bool) -> PKey {
        PKey((base & 0x7fff) | if full { Self::FULL_BIT } else { 0 })
    }
    /// The raw value.
    pub const fn get(self) -> u16 {
        self.0
    }
    /// The low 15 bits, which name the partition.
    pub const fn base(self) -> u16 {
        self.0 & 0x7fff
    }
    /// Full membership (bit 15 set).
    pub const fn is_full(self) -> bool {
        self.0 & Self::FULL_BIT != 0
    }
    /// Entries with base 0 are invalid and match nothing.
    pub const fn is_valid(self) -> bool {
        self.base() != 0
    }
    /// Two keys match when their bases are equal, valid, and at least one is a full member.
    pub const fn matches(self, other: PKey) -> bool {
        self.is_valid() && self.base() == other.base() && (self.is_full() || other.is_full())
    }
}

impl fmt::Display for PKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:04x}", self.0)
    }
}

/// A 64-bit management key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct MKey(pub u64);

impl fmt::Display for MKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:016x}", self.0)
    }
}

/// A port number on a node: 0 is a switch's management port, 1..=254 are physical ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PortNum(pub u8);

impl PortNum {
    /// The raw value.
    pub const fn get(self) -> u8 {
        self.0
    }
}

impl fmt::Display for PortNum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A directed-route path: the exit port at each hop, as in the SMP InitialPath.
///
/// Hop `i` (1-based) leaves through `port(i)`; index 0 of the wire path is unused, as the spec
/// defines it. At most 63 hops.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DrPath {
    len: u8,
    hops: [u8; 64],
}

impl DrPath {
    /// Most hops a directed route may have.
    pub const MAX_HOPS: usize = 63;

    /// The empty path (the local port).
    pub const fn local() -> DrPath {
        DrPath { len: 0, hops: [0; 64] }
    }

    /// A path from exit ports, first hop first.
    ///
    /// # Errors
    /// [`Error::HopCount`] for more than 63 hops.
    pub fn new(ports: &[u8]) -> Result<DrPath> {
        if ports.len() > Self::MAX_HOPS {
            return Err(Error::HopCount(u8::try_from(ports.len()).unwrap_or(u8::MAX)));
        }
        let mut p = DrPath::local();
        p.hops[1..=ports.len()].copy_from_slice(ports);
        p.len = ports.len() as u8;
        Ok(p)
    }

    /// Reads `count` hops from a 64-byte wire path (byte 0 unused).
    ///
    /// # Errors
    /// [`Error::HopCount`] for `count > 63`; [`Error::Truncated`] for a short buffer.
    pub fn from_wire(path: &[u8], count: u8) -> Result<DrPath> {
        if usize::from(count) > Self::MAX_HOPS {
            return Err(Error::HopCount(count));
        }
        crate::check_len("DR path", path, usize::from(count) + 1)?;
        let mut p = DrPath::local();
        p.hops[..=usize::from(count)].copy_from_slice(&path[..=usize::from(count)]);
        p.hops[0] = 0;
        p.len = count;
        Ok(p)
    }

    /// The path extended by one more hop.
    ///
    /// # Errors
    /// [`Error::HopCount`] when the path already has 63 hops.
    pub fn push(&self, port: u8) -> Result<DrPath> {
        if usize::from(self.len) >= Self::MAX_HOPS {
            return Err(Error::HopCount(self.len.saturating_add(1)));
        }
        let mut p = *self;
        p.len += 1;
        p.hops[usize::from(p.len)] = port;
        Ok(p)
    }

    /// Number of hops.
    pub const fn hop_count(&self) -> u8 {
        self.len
    }

    /// Exit ports, first hop first.
    pub fn ports(&self) -> &[u8] {
        &self.hops[1..=usize::from(self.len)]
    }

    /// The 64-byte wire form (byte 0 zero, unused bytes zero).
    pub const fn wire(&self) -> &[u8; 64] {
        &self.hops
    }
}

impl Default for DrPath {
    fn default() -> Self {
        DrPath::local()
    }
}

impl fmt::Debug for DrPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DrPath({self})")
    }
}

impl fmt::Display for DrPath {
    /// Prints the path the way `smpquery -D` takes it: `0,1,3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0")?;
        for p in self.ports() {
            write!(f, ",{p}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkey_membership() {
        let full = PKey::new(0x7fff, true);
        let lim = PKey::new(0x7fff, false);
        assert_eq!(full, PKey::DEFAULT);
        assert!(full.is_full() && !lim.is_full());
        assert!(full.matches(lim) && lim.matches(full) && !lim.matches(lim));
        assert!(!PKey::INVALID.matches(PKey::INVALID));
    }

    #[test]
    fn drpath_rules() {
        let p = DrPath::new(&[1, 3]).unwrap();
        assert_eq!(p.to_string(), "0,1,3");
        assert_eq!(p.wire()[..4], [0, 1, 3, 0]);
        assert!(DrPath::new(&[1; 64]).is_err());
        let mut q = DrPath::local();
        for _ in 0..63 {
            q = q.push(2).unwrap();
        }
        assert_eq!(q.push(2), Err(Error::HopCount(64)));
        assert_eq!(DrPath::from_wire(&[9, 1, 3], 2).unwrap(), p);
        assert!(DrPath::from_wire(&[0; 64], 64).is_err());
    }

    #[test]
    fn lid_ranges() {
        assert!(Lid(1).is_unicast() && !Lid(0).is_unicast() && !Lid(0xc000).is_unicast());
        assert!(Lid(0xc000).is_multicast() && !Lid::PERMISSIVE.is_multicast());
        assert_eq!("0x0000000000200000".parse::<Guid>().unwrap(), Guid(0x20_0000));
        assert_eq!(Guid(0x20_0000).to_string(), "0x0000000000200000");
    }
}

//! Path parameters shared by the SA records: [`Selector`], [`Mtu`] and [`Rate`].
//!
//! PathRecord, MultiPathRecord and MCMemberRecord carry MTU, rate and packet lifetime as a
//! 2-bit selector plus a 6-bit value. This module owns the typed forms of those codes (IBTA
//! vol. 1, 15.2.5.16). Unknown codes are kept as `Unknown(raw)` so that they round-trip; the
//! selector is exhaustive because its 2 bits have four defined values. No byte offsets live here.

use core::fmt;

/// How a requester wants a value compared (MTUSelector, RateSelector, PacketLifeTimeSelector).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Selector {
    /// 0: greater than the value given.
    #[default]
    GreaterThan,
    /// 1: less than the value given.
    LessThan,
    /// 2: exactly the value given.
    Exactly,
    /// 3: the largest (for lifetime: the smallest) available.
    Largest,
}

impl Selector {
    /// Decodes the low 2 bits of `raw`.
    pub const fn from_raw(raw: u8) -> Selector {
        match raw & 0x3 {
            0 => Selector::GreaterThan,
            1 => Selector::LessThan,
            2 => Selector::Exactly,
            _ => Selector::Largest,
        }
    }

    /// The 2-bit wire code.
    pub const fn raw(self) -> u8 {
        match self {
            Selector::GreaterThan => 0,
            Selector::LessThan => 1,
            Selector::Exactly => 2,
            Selector::Largest => 3,
        }
    }
}

/// A path MTU code, 6 bits on the wire. PortInfo's NeighborMTU and MTUCap use the same codes in
/// 4 bits ([`crate::attrs::Mtu`], which converts into this type); the records need their own
/// type so that every 6-bit code round-trips.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mtu {
    /// 1: 256 bytes.
    Mtu256,
    /// 2: 512 bytes.
    Mtu512,
    /// 3: 1024 bytes.
    Mtu1024,
    /// 4: 2048 bytes.
    Mtu2048,
    /// 5: 4096 bytes.
    Mtu4096,
    /// Any other code, kept as read. Build it only through [`Mtu::from_raw`] so that a known code
    /// is never wrapped here.
    Unknown(u8),
}

impl Default for Mtu {
    fn default() -> Self {
        Mtu::Unknown(0)
    }
}

impl Mtu {
    /// Decodes a code; only the low 6 bits are used.
    pub const fn from_raw(raw: u8) -> Mtu {
        match raw & 0x3f {
            1 => Mtu::Mtu256,
            2 => Mtu::Mtu512,
            3 => Mtu::Mtu1024,
            4 => Mtu::Mtu2048,
            5 => Mtu::Mtu4096,
            other => Mtu::Unknown(other),
        }
    }

    /// The wire code.
    pub const fn raw(self) -> u8 {
        match self {
            Mtu::Mtu256 => 1,
            Mtu::Mtu512 => 2,
            Mtu::Mtu1024 => 3,
            Mtu::Mtu2048 => 4,
            Mtu::Mtu4096 => 5,
            Mtu::Unknown(r) => r,
        }
    }

    /// The MTU in bytes, or `None` for an unknown code.
    pub const fn bytes(self) -> Option<u16> {
        match self {
            Mtu::Mtu256 => Some(256),
            Mtu::Mtu512 => Some(512),
            Mtu::Mtu1024 => Some(1024),
            Mtu::Mtu2048 => Some(2048),
            Mtu::Mtu4096 => Some(4096),
            Mtu::Unknown(_) => None,
        }
    }
}

impl From<crate::attrs::Mtu> for Mtu {
    /// PortInfo's 4-bit MTU codes (NeighborMTU, MTUCap) have the same meaning as the records'
    /// 6-bit codes.
    fn from(m: crate::attrs::Mtu) -> Mtu {
        Mtu::from_raw(m.raw())
    }
}

impl fmt::Display for Mtu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.bytes() {
            Some(b) => write!(f, "{b}"),
            None => write!(f, "unknown MTU code {}", self.raw()),
        }
    }
}

/// Generates [`Rate`] with its code table, so each code and speed is written once.
macro_rules! rates {
    ($($(#[$doc:meta])* $name:ident = $code:literal, $mbps:literal;)*) => {
        /// A static rate code (6 bits on the wire). The codes are not ordered by speed: compare
        /// rates with [`Rate::mbps`], never by code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Rate {
            $($(#[$doc])* $name,)*
            /// Any other code, kept as read. Build it only through [`Rate::from_raw`].
            Unknown(u8),
        }

        impl Rate {
            /// Decodes a code; only the low 6 bits are used.
            pub const fn from_raw(raw: u8) -> Rate {
                match raw & 0x3f {
                    $($code => Rate::$name,)*
                    other => Rate::Unknown(other),
                }
            }

            /// The wire code.
            pub const fn raw(self) -> u8 {
                match self {
                    $(Rate::$name => $code,)*
                    Rate::Unknown(r) => r,
                }
            }

            /// The data rate in Mb/s, or `None` for an unknown code.
            pub const fn mbps(self) -> Option<u32> {
                match self {
                    $(Rate::$name => Some($mbps),)*
                    Rate::Unknown(_) => None,
                }
            }
        }
    };
}

rates! {
    /// 2: 2.5 Gb/s (1x SDR).
    Gbps2_5 = 2, 2_500;
    /// 3: 10 Gb/s.
    Gbps10 = 3, 10_000;
    /// 4: 30 Gb/s.
    Gbps30 = 4, 30_000;
    /// 5: 5 Gb/s.
    Gbps5 = 5, 5_000;
    /// 6: 20 Gb/s.
    Gbps20 = 6, 20_000;
    /// 7: 40 Gb/s.
    Gbps40 = 7, 40_000;
    /// 8: 60 Gb/s.
    Gbps60 = 8, 60_000;
    /// 9: 80 Gb/s.
    Gbps80 = 9, 80_000;
    /// 10: 120 Gb/s.
    Gbps120 = 10, 120_000;
    /// 11: 14 Gb/s (1x FDR).
    Gbps14 = 11, 14_000;
    /// 12: 56 Gb/s.
    Gbps56 = 12, 56_000;
    /// 13: 112 Gb/s.
    Gbps112 = 13, 112_000;
    /// 14: 168 Gb/s.
    Gbps168 = 14, 168_000;
    /// 15: 25 Gb/s (1x EDR).
    Gbps25 = 15, 25_000;
    /// 16: 100 Gb/s.
    Gbps100 = 16, 100_000;
    /// 17: 200 Gb/s.
    Gbps200 = 17, 200_000;
    /// 18: 300 Gb/s.
    Gbps300 = 18, 300_000;
    /// 19: 28 Gb/s.
    Gbps28 = 19, 28_000;
    /// 20: 50 Gb/s (1x HDR).
    Gbps50 = 20, 50_000;
    /// 21: 400 Gb/s.
    Gbps400 = 21, 400_000;
    /// 22: 600 Gb/s.
    Gbps600 = 22, 600_000;
    /// 23: 800 Gb/s (4x XDR, 8x NDR).
    Gbps800 = 23, 800_000;
    /// 24: 1200 Gb/s (12x NDR).
    Gbps1200 = 24, 1_200_000;
}

/// The codes 0..=24 ranked from slowest (1) to fastest (23), as OpenSM orders them
/// (`ordered_rates`): by the data a link carries, so 60 Gb/s (12x DDR, 8b/10b) ranks below
/// 50 Gb/s (1x HDR, 64b/66b) and 30 Gb/s below 25 Gb/s. 0 and 1 are reserved (rank 0).
const RANKS: [u8; 25] = [0, 0, 1, 3, 6, 2, 5, 9, 10, 13, 14, 4, 12, 16, 17, 7, 15, 18, 19, 8, 11, 20, 21, 22, 23];

impl Rate {
    /// The rate under a limit on the codes clients may be given (OpenSM's `max_rate_enum`, for
    /// clients that know only the codes up to `limit`): itself when its code is at most `limit`
    /// (or unknown); else the fastest rate, in OpenSM's order, that is slower than it, no
    /// faster than the limit's rate and whose code is at most `limit`; 2.5 Gb/s when none is.
    /// As OpenSM, the limit is on codes, not speeds: 20 Gb/s (code 6) under limit 4 (30 Gb/s)
    /// becomes 10 Gb/s (code 3), while 40 Gb/s (code 7) under limit 15 (25 Gb/s) stays.
    #[must_use]
    pub fn capped(self, limit: u8) -> Rate {
        let code = self.raw();
        let (Some(&mine), Some(&cap)) = (RANKS.get(usize::from(code)), RANKS.get(usize::from(limit))) else {
            return self;
        };
        if code <= limit || mine == 0 {
            return self;
        }
        (2..=limit)
            .filter_map(|c| RANKS.get(usize::from(c)).map(|&r| (r, c)))
            .filter(|&(r, _)| r < mine && r <= cap)
            .max()
            .map_or(Rate::Gbps2_5, |(_, c)| Rate::from_raw(c))
    }
}

impl Default for Rate {
    fn default() -> Self {
        Rate::Unknown(0)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.mbps() {
            Some(m) if m % 1000 == 0 => write!(f, "{} Gb/s", m / 1000),
            Some(m) => write!(f, "{}.{} Gb/s", m / 1000, (m % 1000) / 100),
            None => write!(f, "unknown rate code {}", self.raw()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_the_spec_table() {
        // Codes from IBTA vol. 1 table "Rate" as restated in OpenSM ib_types.h
        // (IB_PATH_RECORD_RATE_*) and IB_MTU_LEN_*.
        assert_eq!(Rate::from_raw(2).mbps(), Some(2_500));
        assert_eq!(Rate::from_raw(7), Rate::Gbps40);
        assert_eq!(Rate::from_raw(12), Rate::Gbps56);
        assert_eq!(Rate::from_raw(16), Rate::Gbps100);
        assert_eq!(Rate::from_raw(22).mbps(), Some(600_000));
        assert_eq!(Rate::from_raw(23), Rate::Gbps800);
        assert_eq!(Rate::from_raw(24).mbps(), Some(1_200_000));
        assert_eq!(Rate::from_raw(25), Rate::Unknown(25));
        assert_eq!(Rate::from_raw(0), Rate::Unknown(0));
        assert_eq!(Mtu::from_raw(4), Mtu::Mtu2048);
        assert_eq!(Mtu::from_raw(5).bytes(), Some(4096));
        assert_eq!(Mtu::from_raw(6), Mtu::Unknown(6));
        assert_eq!(Selector::from_raw(3), Selector::Largest);
        assert_eq!(Rate::Gbps2_5.to_string(), "2.5 Gb/s");
        assert_eq!(Mtu::Mtu1024.to_string(), "1024");
    }

    #[test]
    fn a_rate_over_the_code_limit_is_reduced_as_opensm_reduces_it() {
        // Worked through OpenSM's ordered_rates by hand.
        let cap = |code: u8, limit: u8| Rate::from_raw(code).capped(limit).raw();
        assert_eq!(cap(7, 4), 4, "40 Gb/s under 30 Gb/s: 28 and 25 Gb/s have codes over 4");
        assert_eq!(cap(6, 4), 3, "20 Gb/s (code 6 > 4) goes to 10 Gb/s, though slower than 30");
        assert_eq!(cap(8, 4), 4, "60 Gb/s to 30 Gb/s");
        assert_eq!(cap(3, 4), 3, "a code under the limit stays");
        assert_eq!(cap(7, 15), 7, "40 Gb/s under code 15 (25 Gb/s): the limit is on codes");
        assert_eq!(cap(16, 12), 12, "100 Gb/s to 56 Gb/s: 120 and 80 Gb/s rank above 56");
        assert_eq!(cap(16, 8), 8, "100 Gb/s to 60 Gb/s");
        assert_eq!(cap(20, 18), 8, "50 Gb/s past code 18: 60 Gb/s (code 8) ranks just below it");
        assert_eq!(cap(23, 18), 18, "800 Gb/s to 300 Gb/s");
        assert_eq!(cap(5, 2), 2, "down to 2.5 Gb/s");
        assert_eq!(cap(24, 63), 24, "63: no limit");
        assert_eq!(Rate::Unknown(40).capped(4), Rate::Unknown(40), "unknown codes are left");
    }

    #[test]
    fn every_code_round_trips() {
        for raw in 0u8..64 {
            assert_eq!(Mtu::from_raw(raw).raw(), raw);
            assert_eq!(Rate::from_raw(raw).raw(), raw);
        }
        for raw in 0u8..4 {
            assert_eq!(Selector::from_raw(raw).raw(), raw);
        }
    }
}

//! Notice (attribute 0x0002): a trap sent to the SM (SubnTrap) or a report the SA forwards.
//!
//! Layout (IBTA 13.4.8.2, cross-checked with libibmad `fields.c` and OpenSM
//! `ib_mad_notice_attr_t`), bit offset/width: IsGeneric 0/1, Type 1/7,
//! ProducerType or VendorID 8/24, TrapNumber or DeviceID 32/16, IssuerLID 48/16,
//! NoticeToggle 64/1, NoticeCount 65/15, DataDetails 80/432 (54 bytes), IssuerGID 512/128.
//!
//! The attribute is 80 bytes: in an SMP's 64-byte data area the IssuerGID falls into the bytes
//! that follow it, so parse a trap SMP from MAD byte 64 onwards (the MAD is 256 bytes long).

use super::notice_details::{self, NoticeDetails};
use super::wire_enum;
use crate::bits;
use crate::{Attribute, Gid, Lid, Result, check_len, ids};

wire_enum! {
    /// Notice.Type: how serious the event is.
    pub enum NoticeType: 7 bits {
        /// Fatal error.
        Fatal = 0,
        /// Urgent (e.g. trap 128, link state change).
        Urgent = 1,
        /// Security violation (bad M_Key, P_Key, Q_Key).
        Security = 2,
        /// Subnet management event (e.g. GID in/out of service).
        SubnetManagement = 3,
        /// Informational (e.g. trap 144, capability change).
        Info = 4,
        /// Empty notice (nothing queued).
        Empty = 0x7f,
    }
}

/// Notice.ProducerType of a generic notice: which kind of node produced it (24 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProducerType {
    /// A channel adapter.
    Ca,
    /// A switch.
    Switch,
    /// A router.
    Router,
    /// A class manager (the SM/SA itself).
    ClassManager,
    /// A value the specification does not name (24 bits), kept so it round-trips.
    Unknown(u32),
}

impl ProducerType {
    /// Decodes the 24-bit field (higher bits ignored).
    pub const fn from_raw(raw: u32) -> ProducerType {
        match raw & 0xff_ffff {
            1 => ProducerType::Ca,
            2 => ProducerType::Switch,
            3 => ProducerType::Router,
            4 => ProducerType::ClassManager,
            other => ProducerType::Unknown(other),
        }
    }

    /// The raw 24-bit value.
    pub const fn raw(self) -> u32 {
        match self {
            ProducerType::Ca => 1,
            ProducerType::Switch => 2,
            ProducerType::Router => 3,
            ProducerType::ClassManager => 4,
            ProducerType::Unknown(v) => v,
        }
    }
}

/// Who defined the notice: the IBTA (a numbered trap) or a vendor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoticeSource {
    /// IsGeneric = 1: a trap defined by the specification.
    Generic {
        /// Kind of node that produced it.
        producer: ProducerType,
        /// Trap number (128 = link state change, 144 = capability change, ...).
        trap_number: u16,
    },
    /// IsGeneric = 0: a vendor-specific notice.
    Vendor {
        /// IEEE OUI of the vendor (24 bits).
        vendor_id: u32,
        /// Vendor-defined device id.
        device_id: u16,
    },
}

/// Notice: one trap or report, with its typed details.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Notice {
    /// Generic trap number and producer, or vendor and device.
    pub source: NoticeSource,
    /// Severity.
    pub notice_type: NoticeType,
    /// LID of the port that issued the notice (where a TrapRepress goes).
    pub issuer_lid: Lid,
    /// Alternates between consecutive notices in a Notice queue.
    pub toggle: bool,
    /// Number of notices lost since the last one was read (15 bits).
    pub count: u16,
    /// DataDetails, typed by trap number for generic notices.
    pub details: NoticeDetails,
    /// GID of the issuer (set in reports; zero in most SMP traps).
    pub issuer_gid: Gid,
}

impl Notice {
    /// A generic trap whose number is taken from `details`; `None` for `NoticeDetails::Raw`,
    /// which has no number (build the struct directly in that case).
    pub fn generic(
        notice_type: NoticeType,
        producer: ProducerType,
        issuer_lid: Lid,
        details: NoticeDetails,
    ) -> Option<Notice> {
        let trap_number = details.trap_number()?;
        Some(Notice {
            source: NoticeSource::Generic { producer, trap_number },
            notice_type,
            issuer_lid,
            toggle: false,
            count: 0,
            details,
            issuer_gid: Gid::default(),
        })
    }

    /// True for a trap defined by the specification.
    pub const fn is_generic(&self) -> bool {
        matches!(self.source, NoticeSource::Generic { .. })
    }

    /// The trap number of a generic notice.
    pub const fn trap_number(&self) -> Option<u16> {
        match self.source {
            NoticeSource::Generic { trap_number, .. } => Some(trap_number),
            NoticeSource::Vendor { .. } => None,
        }
    }
}

impl Attribute for Notice {
    const ID: u16 = ids::attr::NOTICE;
    const LEN: usize = 80;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("Notice", buf, Self::LEN)?;
        let is_generic = bits::get(buf, 0, 1) != 0;
        let producer_or_vendor = bits::get(buf, 8, 24) as u32;
        let number = bits::u16_at(buf, 4);
        let data = &buf[10..10 + notice_details::LEN];
        let (source, details) = if is_generic {
            (
                NoticeSource::Generic { producer: ProducerType::from_raw(producer_or_vendor), trap_number: number },
                NoticeDetails::parse(number, data),
            )
        } else {
            (NoticeSource::Vendor { vendor_id: producer_or_vendor, device_id: number }, NoticeDetails::raw(data))
        };
        Ok(Notice {
            source,
            notice_type: NoticeType::from_raw(bits::get(buf, 1, 7) as u8),
            issuer_lid: Lid(bits::u16_at(buf, 6)),
            toggle: bits::get(buf, 64, 1) != 0,
            count: bits::get(buf, 65, 15) as u16,
            details,
            issuer_gid: Gid::from_bytes(&buf[64..80]),
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        let b = &mut buf[..Self::LEN];
        b.fill(0);
        let (generic, producer_or_vendor, number) = match self.source {
            NoticeSource::Generic { producer, trap_number } => (true, producer.raw(), trap_number),
            NoticeSource::Vendor { vendor_id, device_id } => (false, vendor_id, device_id),
        };
        bits::set(b, 0, 1, u64::from(generic));
        bits::set(b, 1, 7, u64::from(self.notice_type.raw()));
        bits::set(b, 8, 24, u64::from(producer_or_vendor));
        bits::put_u16(b, 4, number);
        bits::put_u16(b, 6, self.issuer_lid.0);
        bits::set(b, 64, 1, u64::from(self.toggle));
        bits::set(b, 65, 15, u64::from(self.count));
        self.details.emit(&mut b[10..10 + notice_details::LEN]);
        self.issuer_gid.write(&mut b[64..80]);
    }
}

#[cfg(test)]
#[path = "notice_tests.rs"]
mod tests;

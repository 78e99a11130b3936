//! The typed partition policy: [`Policy`], [`Partition`], [`Member`], [`McastGroup`] and the
//! multicast-group flags, plus the value checks every front end (partitions.conf, TOML) shares.
//!
//! The model records what the operator wrote, after merging repeated definitions; it does not
//! apply defaults (the implicit default partition, generated P_Keys, inherited group flags).
//! That is the resolver's job. This module does no parsing of whole files and no I/O.

use core::fmt;

use ibsm_mad::{Gid, Guid};

/// The 15-bit base of the default partition (`0x7fff` limited, `0xffff` full).
pub const DEFAULT_PKEY_BASE: u16 = 0x7fff;

/// Name OpenSM gives the implicit default partition; a definition with this name and no P_Key
/// joins the default partition.
pub const DEFAULT_PARTITION_NAME: &str = "Default";

/// A whole partition policy, in definition order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Policy {
    /// Partitions after merging repeated P_Keys (and repeated names without a P_Key).
    pub partitions: Vec<Partition>,
}

impl Policy {
    /// The policy OpenSM applies when there is no partitions.conf at all:
    /// `Default=0x7fff,ipoib : ALL=full ;`.
    pub fn no_file() -> Policy {
        Policy {
            partitions: vec![Partition {
                name: DEFAULT_PARTITION_NAME.to_owned(),
                pkey: Some(DEFAULT_PKEY_BASE),
                ipoib: true,
                members: vec![Member { who: MemberSpec::All, membership: Membership::Full }],
                ..Partition::default()
            }],
        }
    }

    /// The partition with this explicit 15-bit P_Key base, if any.
    pub fn by_pkey(&self, base: u16) -> Option<&Partition> {
        self.partitions.iter().find(|p| p.pkey == Some(base))
    }
}

/// One partition: a P_Key, its flags, its members and its pre-created multicast groups.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Partition {
    /// Name used in logs; may be empty.
    pub name: String,
    /// 15-bit P_Key base (`1..=0x7fff`); `None` means the resolver generates one.
    pub pkey: Option<u16>,
    /// Pin this P_Key at index 0 of each member's table.
    pub indx0: bool,
    /// The partition carries IPoIB: its broadcast group is created with [`Partition::flags`].
    pub ipoib: bool,
    /// Flags of the IPoIB broadcast group, also inherited by the `mgid=` groups.
    pub flags: McastFlags,
    /// Membership the first definition gave to ports written without `=full|limited|both`.
    /// Members always carry their resolved membership; this is kept for rendering.
    pub defmember: Membership,
    /// Members in definition order.
    pub members: Vec<Member>,
    /// Multicast groups from `mgid=` lines, in definition order.
    pub mcast_groups: Vec<McastGroup>,
}

impl Partition {
    /// Folds a later definition of the same partition into this one: the first name and
    /// `defmember` stay, each flag keeps its first explicit value, `indx0`/`ipoib` hold if any
    /// definition sets them, members and groups are appended (identical groups once).
    pub fn merge(&mut self, later: Partition) {
        self.indx0 |= later.indx0;
        self.ipoib |= later.ipoib;
        self.flags.fill_from(&later.flags);
        self.members.extend(later.members);
        for g in later.mcast_groups {
            if !self.mcast_groups.contains(&g) {
                self.mcast_groups.push(g);
            }
        }
    }
}

/// Membership of a port in a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Membership {
    /// Full member (P_Key bit 15 set): may talk to every member.
    Full,
    /// Limited member: may talk to full members only. The partitions.conf default.
    #[default]
    Limited,
    /// Both a full and a limited entry (two entries only with `allow_both_pkeys`, else full).
    Both,
}

impl Membership {
    /// The keyword used in partitions.conf and TOML.
    pub const fn as_str(self) -> &'static str {
        match self {
            Membership::Full => "full",
            Membership::Limited => "limited",
            Membership::Both => "both",
        }
    }
}

impl fmt::Display for Membership {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which end ports a member entry names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemberSpec {
    /// One end port by port GUID.
    PortGuid(Guid),
    /// Every end port (`ALL`).
    All,
    /// Every channel adapter end port (`ALL_CAS`).
    AllCas,
    /// Every switch end port, i.e. switch port 0 (`ALL_SWITCHES`).
    AllSwitches,
    /// Every router end port (`ALL_ROUTERS`).
    AllRouters,
    /// The SM's own port (`SELF`).
    SelfPort,
}

/// A member entry: who, and with which membership.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Member {
    /// The port or port class.
    pub who: MemberSpec,
    /// Its membership.
    pub membership: Membership,
}

/// A multicast group pre-created in a partition (`mgid=` line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McastGroup {
    /// The group's multicast GID (first byte `0xff`).
    pub mgid: Gid,
    /// Flags written on the `mgid=` line only (the partition's flags are inherited at use).
    pub flags: McastFlags,
}

/// Multicast-group flags. `None` / empty means "not written"; the defaults in the field docs
/// apply when the group is created.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct McastFlags {
    /// IBA rate enum (`2` = 2.5 Gb/s, `3` = 10 Gb/s, ...); default 3.
    pub rate: Option<u8>,
    /// IBA MTU enum (`1` = 256 ... `5` = 4096 bytes); default 4 (2048).
    pub mtu: Option<u8>,
    /// Service level `0..=15`; default 0.
    pub sl: Option<u8>,
    /// Scopes `1..=15`, sorted and unique; one group per scope. Default: link-local (2).
    pub scope: Vec<u8>,
    /// Q_Key; default `0x0b1b` for IP groups, 0 otherwise.
    pub qkey: Option<u32>,
    /// Traffic class; default 0.
    pub tclass: Option<u8>,
    /// 20-bit flow label; default 0.
    pub flow_label: Option<u32>,
}

impl McastFlags {
    /// Takes every value this set lacks from `other`; scopes are united.
    pub fn fill_from(&mut self, other: &McastFlags) {
        self.rate = self.rate.or(other.rate);
        self.mtu = self.mtu.or(other.mtu);
        self.sl = self.sl.or(other.sl);
        self.qkey = self.qkey.or(other.qkey);
        self.tclass = self.tclass.or(other.tclass);
        self.flow_label = self.flow_label.or(other.flow_label);
        for &s in &other.scope {
            add_scope(&mut self.scope, s);
        }
    }

    /// Whether no flag is written.
    pub fn is_empty(&self) -> bool {
        *self == McastFlags::default()
    }
}

/// Inserts a scope keeping the list sorted and unique.
pub(crate) fn add_scope(scopes: &mut Vec<u8>, s: u8) {
    if let Err(at) = scopes.binary_search(&s) {
        scopes.insert(at, s);
    }
}

/// Bytes of an IBA MTU enum value (`1..=5`), or `None` for other values.
pub const fn mtu_bytes(mtu: u8) -> Option<u32> {
    match mtu {
        1 => Some(256),
        2 => Some(512),
        3 => Some(1024),
        4 => Some(2048),
        5 => Some(4096),
        _ => None,
    }
}

/// Why a flag value is out of range; shared by the partitions.conf and TOML front ends.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// `mtu=` written in bytes rather than as the IBA enum (an OpenSM pitfall: `mtu=5` means 4096).
    #[error("mtu takes the IBA enum, not bytes: write mtu={enum_value} for {bytes} bytes")]
    MtuInBytes {
        /// The value written.
        bytes: u64,
        /// The enum value meant.
        enum_value: u8,
    },
    /// A value outside the flag's range.
    #[error("{flag}={value} is out of range (expected {expected})")]
    OutOfRange {
        /// The flag.
        flag: &'static str,
        /// The value written.
        value: u64,
        /// The accepted range, in words.
        expected: &'static str,
    },
}

/// The flags [`check_flag`] knows, by canonical partitions.conf spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GroupFlag {
    Rate,
    Mtu,
    Sl,
    Scope,
    QKey,
    TClass,
    FlowLabel,
}

impl GroupFlag {
    /// Recognises a flag name, case-insensitively (`Q_Key`/`qkey`, `FlowLabel`/`flow_label`).
    pub(crate) fn from_name(name: &str) -> Option<GroupFlag> {
        let lower = name.to_ascii_lowercase();
        Some(match lower.as_str() {
            "rate" => GroupFlag::Rate,
            "mtu" => GroupFlag::Mtu,
            "sl" => GroupFlag::Sl,
            "scope" => GroupFlag::Scope,
            "q_key" | "qkey" => GroupFlag::QKey,
            "tclass" => GroupFlag::TClass,
            "flowlabel" | "flow_label" | "flow-label" => GroupFlag::FlowLabel,
            _ => return None,
        })
    }

    /// Canonical partitions.conf spelling.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            GroupFlag::Rate => "rate",
            GroupFlag::Mtu => "mtu",
            GroupFlag::Sl => "sl",
            GroupFlag::Scope => "scope",
            GroupFlag::QKey => "Q_Key",
            GroupFlag::TClass => "TClass",
            GroupFlag::FlowLabel => "FlowLabel",
        }
    }
}

/// Checks `value` for `flag` and stores it in `flags`.
pub(crate) fn set_flag(flags: &mut McastFlags, flag: GroupFlag, value: u64) -> Result<(), ValueError> {
    let range = |expected: &'static str| ValueError::OutOfRange { flag: flag.name(), value, expected };
    match flag {
        GroupFlag::Rate => {
            if !(2..=63).contains(&value) {
                return Err(range("an IBA rate enum 2..=63, e.g. 3 = 10 Gb/s, 7 = 40 Gb/s, 16 = 100 Gb/s"));
            }
            flags.rate = Some(value as u8);
        }
        GroupFlag::Mtu => {
            if let Some(e) = (1u8..=5).find(|&e| mtu_bytes(e).map(u64::from) == Some(value)) {
                return Err(ValueError::MtuInBytes { bytes: value, enum_value: e });
            }
            if !(1..=5).contains(&value) {
                return Err(range("an IBA MTU enum 1..=5: 1 = 256, 2 = 512, 3 = 1024, 4 = 2048, 5 = 4096"));
            }
            flags.mtu = Some(value as u8);
        }
        GroupFlag::Sl => {
            if value > 15 {
                return Err(range("0..=15"));
            }
            flags.sl = Some(value as u8);
        }
        GroupFlag::Scope => {
            if !(1..=15).contains(&value) {
                return Err(range("1..=15, e.g. 2 = link-local, 5 = site-local"));
            }
            add_scope(&mut flags.scope, value as u8);
        }
        GroupFlag::QKey => {
            let v = u32::try_from(value).map_err(|_| range("a 32-bit value"))?;
            flags.qkey = Some(v);
        }
        GroupFlag::TClass => {
            let v = u8::try_from(value).map_err(|_| range("0..=255"))?;
            flags.tclass = Some(v);
        }
        GroupFlag::FlowLabel => {
            if value > 0xf_ffff {
                return Err(range("a 20-bit value 0..=0xfffff"));
            }
            flags.flow_label = Some(value as u32);
        }
    }
    Ok(())
}

/// Parses a multicast GID in IPv6 text form; `None` if it is not IPv6 text.
pub(crate) fn parse_mgid(text: &str) -> Option<Gid> {
    let addr: std::net::Ipv6Addr = text.parse().ok()?;
    let bits = u128::from(addr);
    Some(Gid { prefix: (bits >> 64) as u64, guid: Guid(bits as u64) })
}

/// Formats a GID in compressed IPv6 text form (`ff12:401b::1`).
pub(crate) fn format_mgid(gid: Gid) -> String {
    let bits = (u128::from(gid.prefix) << 64) | u128::from(gid.guid.0);
    std::net::Ipv6Addr::from(bits).to_string()
}

/// Whether a GID is multicast (first byte `0xff`).
pub(crate) const fn is_multicast(gid: Gid) -> bool {
    gid.prefix >> 56 == 0xff
}

//! The multicast groups a policy pre-creates: the IPoIB broadcast group of every partition
//! marked `ipoib` (and of the default partition, always), and the groups of `mgid=` lines.
//!
//! Pure: [`policy_groups`] turns a policy into group specifications; the SA creates the groups
//! and keeps them while the policy names them.
//!
//! Rules:
//! - The IPoIB broadcast group of partition `base` is `ff1S:401b:PPPP::ffff:ffff`, where `PPPP` is
//!   the full-member P_Key (`0x8000 | base`) and `S` each scope of the partition's flags (default
//!   2, link-local): one group per scope.
//! - A `mgid=` group takes the flags written on its line, then the partition's for the rest.
//!   With a scope written (on the line or on the partition) there is one group per scope, the
//!   MGID's scope nibble replaced; with none, the MGID stays as written. (OpenSM 3.3.23 rewrites
//!   the nibble to link-local even then; an operator who wrote `ff15:…` meant site-local.)
//!   An IP group (signature 0x401B or 0x601B) written with P_Key bits 0 (`ff12:401b::1`) gets
//!   the partition's full-member P_Key there, as OpenSM fills it in.
//! - A partition's own `sl=` is a QoS setting: OpenSM applies it only with QoS enabled, and ibsm
//!   has no QoS, so its groups (the broadcast group, `mgid=` lines without their own `sl=`) are
//!   on SL 0, as under OpenSM's default configuration; an `sl=` on an `mgid=` line is kept.
//! - Defaults: MTU 4 (2048), rate 3 (10 Gb/s), SL 0, TClass 0, FlowLabel 0; Q_Key 0x0B1B for IP
//!   groups (signature 0x401B or 0x601B), 0 otherwise.
//! - An MGID named twice is created once, with the first specification.

use ibsm_mad::{Gid, Guid, PKey};

use crate::error::ResolveError;
use crate::model::{DEFAULT_PKEY_BASE, McastFlags, Policy};
use crate::resolve::partitions_in_force;

/// Q_Key of IP-over-IB groups (RFC 4391).
pub const IPOIB_QKEY: u32 = 0x0000_0b1b;

/// Link-local scope, the default.
const LINK_LOCAL: u8 = 2;

/// A multicast group to pre-create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupSpec {
    /// The group's MGID.
    pub mgid: Gid,
    /// The partition's full-member P_Key.
    pub pkey: PKey,
    /// Q_Key.
    pub qkey: u32,
    /// IBA MTU enum.
    pub mtu: u8,
    /// IBA rate enum.
    pub rate: u8,
    /// Service level.
    pub sl: u8,
    /// Scope (the MGID's scope nibble).
    pub scope: u8,
    /// Traffic class.
    pub tclass: u8,
    /// 20-bit flow label.
    pub flow_label: u32,
}

/// The groups `policy` pre-creates, the default partition's IPoIB broadcast group first.
///
/// # Errors
/// As [`crate::resolve`], when the policy's P_Keys cannot be resolved.
pub fn policy_groups(policy: &Policy) -> Result<Vec<GroupSpec>, ResolveError> {
    let mut out: Vec<GroupSpec> = Vec::new();
    let mut push = |g: GroupSpec| {
        if !out.iter().any(|o| o.mgid == g.mgid) {
            out.push(g);
        }
    };
    for (base, part) in partitions_in_force(policy)? {
        let pkey = PKey::new(base, true);
        // The partition's flags without its SL (a QoS setting, see the module doc).
        let part_flags = McastFlags { sl: None, ..part.flags.clone() };
        if part.ipoib || base == DEFAULT_PKEY_BASE {
            for scope in scopes(&part.flags.scope, LINK_LOCAL) {
                let prefix = 0xff10_401b_0000_0000 | u64::from(scope) << 48 | u64::from(pkey.0) << 16;
                push(spec(Gid { prefix, guid: Guid(0xffff_ffff) }, pkey, &part_flags));
            }
        }
        for g in &part.mcast_groups {
            let mut flags = g.flags.clone();
            flags.fill_from(&part_flags);
            let own = (g.mgid.prefix >> 48) as u8 & 0x0f;
            let mut written = g.mgid.prefix;
            if is_ip(written) && (written >> 16) as u16 == 0 {
                written |= u64::from(pkey.0) << 16;
            }
            for scope in scopes(&flags.scope, own) {
                let prefix = written & !(0x000f << 48) | u64::from(scope) << 48;
                push(spec(Gid { prefix, guid: g.mgid.guid }, pkey, &flags));
            }
        }
    }
    Ok(out)
}

/// The scopes written, else `fallback` alone.
fn scopes(written: &[u8], fallback: u8) -> Vec<u8> {
    if written.is_empty() { vec![fallback] } else { written.to_vec() }
}

/// Whether an MGID prefix carries the IPv4 or IPv6 signature (an IP-over-IB group).
fn is_ip(prefix: u64) -> bool {
    let signature = (prefix >> 32) as u16;
    signature == 0x401b || signature == 0x601b
}

fn spec(mgid: Gid, pkey: PKey, flags: &McastFlags) -> GroupSpec {
    let ip = is_ip(mgid.prefix);
    GroupSpec {
        mgid,
        pkey,
        qkey: flags.qkey.unwrap_or(if ip { IPOIB_QKEY } else { 0 }),
        mtu: flags.mtu.unwrap_or(4),
        rate: flags.rate.unwrap_or(3),
        sl: flags.sl.unwrap_or(0),
        scope: (mgid.prefix >> 48) as u8 & 0x0f,
        tclass: flags.tclass.unwrap_or(0),
        flow_label: flags.flow_label.unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_partitions_conf;

    fn gid(text: &str) -> Gid {
        crate::model::parse_mgid(text).unwrap_or_default()
    }

    #[test]
    fn no_file_gives_the_default_broadcast_group() {
        let groups = policy_groups(&Policy::no_file()).unwrap_or_default();
        assert_eq!(groups.len(), 1);
        let g = groups[0];
        assert_eq!(g.mgid, gid("ff12:401b:ffff::ffff:ffff"));
        assert_eq!((g.pkey, g.qkey, g.mtu, g.rate, g.scope), (PKey(0xffff), IPOIB_QKEY, 4, 3, 2));
    }

    #[test]
    fn ipoib_partitions_scopes_and_mgid_lines() {
        let text = "Default=0x7fff : ALL=full ;\n\
                    storage=0x0a01,ipoib,mtu=5,rate=7,sl=1,scope=2,scope=5 : ALL=full ;\n\
                    plain=0x0a02 : ALL ;\n\
                    apps=0x0a03,mtu=3 : mgid=ff15:1234::1,Q_Key=0x10,mtu=4\n, mgid=ff12:401b:8a03::1\n, ALL ;\n\
                    scoped=0x0a04,scope=8 : mgid=ff12:1234::2\n, ALL ;\n";
        let policy = parse_partitions_conf(text).map_err(|e| e.to_string());
        let groups = policy.and_then(|p| policy_groups(&p).map_err(|e| e.to_string()));
        let Ok(groups) = groups else { panic!("{groups:?}") };
        let mgids: Vec<Gid> = groups.iter().map(|g| g.mgid).collect();
        assert_eq!(
            mgids,
            [
                gid("ff12:401b:ffff::ffff:ffff"),
                gid("ff12:401b:8a01::ffff:ffff"),
                gid("ff15:401b:8a01::ffff:ffff"),
                gid("ff15:1234::1"),
                gid("ff12:401b:8a03::1"),
                gid("ff18:1234::2"),
            ]
        );
        let storage = groups[2];
        // The partition's sl=1 is a QoS setting OpenSM ignores without QoS: SL 0.
        assert_eq!((storage.pkey, storage.mtu, storage.rate, storage.sl, storage.scope), (PKey(0x8a01), 5, 7, 0, 5));
        // The line's flags first, then the partition's; Q_Key 0 unless an IP group or written.
        let apps = groups[3];
        assert_eq!((apps.pkey, apps.qkey, apps.mtu, apps.scope), (PKey(0x8a03), 0x10, 4, 5));
        assert_eq!((groups[4].qkey, groups[4].mtu), (IPOIB_QKEY, 3));
        assert_eq!(groups[5].scope, 8);
    }

    /// Found by the differential test against OpenSM (`tests/data/ring-mixed.partitions.conf`):
    /// OpenSM fills an IP group's zero P_Key bits with the partition's and puts groups on SL 0
    /// whatever the partition's `sl=`; a line's own `sl=` stays.
    #[test]
    fn ip_mgid_lines_take_the_partitions_pkey_and_only_their_own_sl() {
        let text = "Default=0x7fff : ALL=full ;\n\
                    storage=0x0a01,ipoib,sl=1 :\n mgid=ff12:401b::707,sl=3\n mgid=ff12:601b::16\n mgid=ff12:1234::9\n ALL ;\n";
        let policy = parse_partitions_conf(text).map_err(|e| e.to_string());
        let groups = policy.and_then(|p| policy_groups(&p).map_err(|e| e.to_string()));
        let Ok(groups) = groups else { panic!("{groups:?}") };
        let got: Vec<(Gid, u8)> = groups.iter().map(|g| (g.mgid, g.sl)).collect();
        assert_eq!(
            got,
            [
                (gid("ff12:401b:ffff::ffff:ffff"), 0),
                (gid("ff12:401b:8a01::ffff:ffff"), 0),
                (gid("ff12:401b:8a01::707"), 3),
                (gid("ff12:601b:8a01::16"), 0),
                (gid("ff12:1234::9"), 0),
            ]
        );
    }
}

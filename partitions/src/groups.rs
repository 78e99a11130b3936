//! The multicast groups a policy pre-creates: the IPoIB broadcast group of every partition
//! marked `ipoib` (the default partition only when so marked, or when there is no policy file:
//! [`crate::Policy::no_file`] marks it), and the groups of `mgid=` lines.
//!
//! Pure: [`policy_groups`] turns a policy into group specifications; the SA creates the groups
//! and keeps them while the policy names them.
//!
//! Rules (OpenSM 3.3.23's, checked against it on ibsim by `tests/ibsim_differential.rs`):
//! - The IPoIB broadcast group of partition `base` is `ff12:401b:PPPP::ffff:ffff`, where `PPPP` is
//!   the full-member P_Key (`0x8000 | base`): link-local whatever the partition's `scope=`, the
//!   group IPoIB clients join by default (the partition's scopes apply to its `mgid=` lines).
//! - A `mgid=` group takes the flags written on its line, then the partition's for the rest.
//!   Its MGID's scope nibble is replaced by each scope written (on the line or on the partition),
//!   one group per scope, else by link-local (2): `mgid=ff15:…` alone is `ff12:…`, as OpenSM's
//!   manual says (`scope=` "overwrites the scope nibble", default 2).
//!   An IP group (signature 0x401B or 0x601B) written with P_Key bits 0 (`ff12:401b::1`) gets
//!   the partition's full-member P_Key there, as OpenSM fills it in; one written with another
//!   partition's P_Key is refused. An IP group other than a broadcast group is created only when
//!   its partition's broadcast group of its scope exists, with its MTU and rate (OpenSM's
//!   `ipoib_mcgroup_creation_validation`, on by default): not in a partition without `ipoib`, nor
//!   at a scope other than link-local.
//! - A partition's own `sl=` is a QoS setting: OpenSM applies it only with QoS enabled, so with
//!   QoS off its groups (the broadcast group, `mgid=` lines without their own `sl=`) are on SL 0,
//!   and with QoS on on the partition's SL; an `sl=` on an `mgid=` line is always kept.
//! - Defaults: MTU 4 (2048), rate 3 (10 Gb/s), SL 0, TClass 0, FlowLabel 0; Q_Key 0x0B1B for IP
//!   groups (signature 0x401B or 0x601B), 0 otherwise.
//! - An MGID named twice is created once, with the first specification.

use ibsm_mad::{Gid, Guid, PKey};

use crate::error::ResolveError;
use crate::model::{McastFlags, Policy};
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

/// The groups `policy` pre-creates, in policy order (the default partition's first), with QoS
/// on (`qos`: the partitions' `sl=` applies) or off.
///
/// # Errors
/// As [`crate::resolve`], when the policy's P_Keys cannot be resolved.
pub fn policy_groups(policy: &Policy, qos: bool) -> Result<Vec<GroupSpec>, ResolveError> {
    let mut out: Vec<GroupSpec> = Vec::new();
    let push = |out: &mut Vec<GroupSpec>, g: GroupSpec| {
        if !out.iter().any(|o| o.mgid == g.mgid) {
            out.push(g);
        }
    };
    for (base, part) in partitions_in_force(policy)? {
        let pkey = PKey::new(base, true);
        // The partition's flags, its SL only with QoS on (see the module doc).
        let part_flags = McastFlags { sl: part.flags.sl.filter(|_| qos), ..part.flags.clone() };
        if part.ipoib {
            push(&mut out, spec(broadcast_mgid(pkey, LINK_LOCAL), pkey, &part_flags));
        }
        for g in &part.mcast_groups {
            let mut flags = g.flags.clone();
            flags.fill_from(&part_flags);
            let mut written = g.mgid.prefix;
            let ip = is_ip(written);
            if ip {
                match (written >> 16) as u16 {
                    0 => written |= u64::from(pkey.0) << 16,
                    bits if bits == pkey.0 => {}
                    // Another partition's P_Key: OpenSM refuses the line.
                    _ => continue,
                }
            }
            for scope in scopes(&flags.scope, LINK_LOCAL) {
                let prefix = written & !(0x000f << 48) | u64::from(scope) << 48;
                let g = spec(Gid { prefix, guid: g.mgid.guid }, pkey, &flags);
                if ip && !ip_group_allowed(&out, &g) {
                    continue;
                }
                push(&mut out, g);
            }
        }
    }
    Ok(out)
}

/// The IPv4 broadcast MGID of a partition (`ff1S:401b:PPPP::ffff:ffff`).
fn broadcast_mgid(pkey: PKey, scope: u8) -> Gid {
    let prefix = 0xff10_401b_0000_0000 | u64::from(scope) << 48 | u64::from(pkey.0) << 16;
    Gid { prefix, guid: Guid(0xffff_ffff) }
}

/// Whether an IP group may be created after the groups `made`: when it is its partition's
/// broadcast group of its scope, or that broadcast group exists with the same MTU and rate
/// (OpenSM's `ipoib_mcgroup_creation_validation`, on by default).
fn ip_group_allowed(made: &[GroupSpec], g: &GroupSpec) -> bool {
    let broadcast = broadcast_mgid(g.pkey, g.scope);
    g.mgid == broadcast || made.iter().any(|b| b.mgid == broadcast && b.mtu == g.mtu && b.rate == g.rate)
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

    /// The groups of the policy `text` (panics on a bad policy: test input).
    fn groups_of(text: &str) -> Vec<GroupSpec> {
        let policy = parse_partitions_conf(text).map_err(|e| e.to_string());
        let groups = policy.and_then(|p| policy_groups(&p, false).map_err(|e| e.to_string()));
        let Ok(groups) = groups else { panic!("{groups:?}") };
        groups
    }

    #[test]
    fn no_file_gives_the_default_broadcast_group() {
        let groups = policy_groups(&Policy::no_file(), false).unwrap_or_default();
        assert_eq!(groups.len(), 1);
        let g = groups[0];
        assert_eq!(g.mgid, gid("ff12:401b:ffff::ffff:ffff"));
        assert_eq!((g.pkey, g.qkey, g.mtu, g.rate, g.scope), (PKey(0xffff), IPOIB_QKEY, 4, 3, 2));
    }

    #[test]
    fn ipoib_partitions_scopes_and_mgid_lines() {
        let text = "Default=0x7fff,ipoib : ALL=full ;\n\
                    storage=0x0a01,ipoib,mtu=5,rate=7,sl=1,scope=2,scope=5 : ALL=full ;\n\
                    plain=0x0a02 : ALL ;\n\
                    apps=0x0a03,ipoib,mtu=3 : mgid=ff15:1234::1,Q_Key=0x10,mtu=4\n, mgid=ff12:401b:8a03::1\n, ALL ;\n\
                    scoped=0x0a04,scope=8 : mgid=ff12:1234::2\n, ALL ;\n";
        let groups = groups_of(text);
        let mgids: Vec<Gid> = groups.iter().map(|g| g.mgid).collect();
        assert_eq!(
            mgids,
            [
                gid("ff12:401b:ffff::ffff:ffff"),
                gid("ff12:401b:8a01::ffff:ffff"),
                gid("ff12:401b:8a03::ffff:ffff"),
                gid("ff12:1234::1"),
                gid("ff12:401b:8a03::1"),
                gid("ff18:1234::2"),
            ]
        );
        let storage = groups[1];
        // The partition's sl=1 is a QoS setting OpenSM ignores without QoS: SL 0.
        assert_eq!((storage.pkey, storage.mtu, storage.rate, storage.sl, storage.scope), (PKey(0x8a01), 5, 7, 0, 2));
        // With QoS on it applies to the partition's groups.
        let policy = parse_partitions_conf(text).unwrap_or_else(|e| panic!("{e}"));
        let with_qos = policy_groups(&policy, true).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(with_qos[1].sl, 1, "the storage broadcast group on the partition's SL");
        assert_eq!(with_qos[0].sl, 0, "the default partition has no sl=");
        // The line's flags first, then the partition's; Q_Key 0 unless an IP group or written.
        let apps = groups[3];
        assert_eq!((apps.pkey, apps.qkey, apps.mtu, apps.scope), (PKey(0x8a03), 0x10, 4, 2));
        assert_eq!((groups[4].qkey, groups[4].mtu), (IPOIB_QKEY, 3));
        assert_eq!(groups[5].scope, 8);
    }

    /// Found by the differential test against OpenSM (`tests/data/ring-mixed.partitions.conf`):
    /// OpenSM fills an IP group's zero P_Key bits with the partition's and puts groups on SL 0
    /// whatever the partition's `sl=`; a line's own `sl=` stays.
    #[test]
    fn ip_mgid_lines_take_the_partitions_pkey_and_only_their_own_sl() {
        let text = "Default=0x7fff,ipoib : ALL=full ;\n\
                    storage=0x0a01,ipoib,sl=1 :\n mgid=ff12:401b::707,sl=3\n mgid=ff12:601b::16\n mgid=ff12:1234::9\n ALL ;\n";
        let groups = groups_of(text);
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

    /// Found by the differential test against OpenSM (`tests/data/ring-mixed.scopes.partitions.conf`):
    /// a default partition without `ipoib` has no broadcast group; an `ipoib` partition's
    /// `scope=` leaves its broadcast group link-local and scopes its `mgid=` lines; an `mgid=`
    /// line without a scope is link-local whatever its MGID says.
    #[test]
    fn broadcast_groups_only_where_marked_and_link_local_scopes_for_mgid_lines() {
        let text = "Default=0x7fff : ALL=full ;\n\
                    gpu=0x0100,ipoib,scope=5 : mgid=ff12:1234::5\n ALL ;\n\
                    apps=0x0200 : mgid=ff15:1234::1\n mgid=ff18:1234::7,scope=8,scope=14\n ALL ;\n";
        let groups = groups_of(text);
        let got: Vec<(Gid, u8)> = groups.iter().map(|g| (g.mgid, g.scope)).collect();
        assert_eq!(
            got,
            [
                (gid("ff12:401b:8100::ffff:ffff"), 2),
                (gid("ff15:1234::5"), 5),
                (gid("ff12:1234::1"), 2),
                (gid("ff18:1234::7"), 8),
                (gid("ff1e:1234::7"), 14),
            ]
        );
    }

    /// Found by the differential test against OpenSM (`tests/data/ring-mixed.scopes.partitions.conf`):
    /// an IP group needs its partition's broadcast group of its scope, with its MTU and rate,
    /// and P_Key bits that are zero or the partition's.
    #[test]
    fn ip_groups_need_their_partitions_broadcast_group() {
        let text = "Default=0x7fff,ipoib : ALL=full ;\n\
                    apps=0x0200 : mgid=ff15:601b::1\n mgid=ff12:401b::2\n ALL ;\n\
                    gpu=0x0100,ipoib,mtu=5 :\n mgid=ff12:401b::3\n mgid=ff12:601b::4,mtu=4\n\
                    mgid=ff12:401b::5,scope=5\n mgid=ff12:401b:8200::6\n mgid=ff12:401b:8100::7\n ALL ;\n";
        let groups = groups_of(text);
        let mgids: Vec<Gid> = groups.iter().map(|g| g.mgid).collect();
        assert_eq!(
            mgids,
            [
                gid("ff12:401b:ffff::ffff:ffff"),
                gid("ff12:401b:8100::ffff:ffff"),
                gid("ff12:401b:8100::3"),
                gid("ff12:401b:8100::7"),
            ]
        );
    }
}

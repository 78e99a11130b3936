//! Property tests: partitions.conf render/parse round trip, TOML round trip, and parsing
//! arbitrary text never panics. Also the TOML form's unit tests.

use ibsm_mad::{Gid, Guid};
use proptest::prelude::*;

use crate::{
    McastFlags, McastGroup, Member, MemberSpec, Membership, Partition, Policy, TomlError, parse_partitions_conf,
    policy_from_toml, policy_to_toml, render_partitions_conf,
};

pub(crate) fn membership() -> impl Strategy<Value = Membership> {
    prop_oneof![Just(Membership::Full), Just(Membership::Limited), Just(Membership::Both)]
}

fn member() -> impl Strategy<Value = Member> {
    member_of(1u64..)
}

/// Members of every kind, those naming a port GUID drawn from `guids`.
pub(crate) fn member_of(guids: impl Strategy<Value = u64> + 'static) -> impl Strategy<Value = Member> {
    let who = prop_oneof![
        guids.prop_map(|g| MemberSpec::PortGuid(Guid(g))),
        Just(MemberSpec::All),
        Just(MemberSpec::AllCas),
        Just(MemberSpec::AllSwitches),
        Just(MemberSpec::AllRouters),
        Just(MemberSpec::SelfPort),
    ];
    (who, membership()).prop_map(|(who, membership)| Member { who, membership })
}

fn flags() -> impl Strategy<Value = McastFlags> {
    (
        proptest::option::of(2u8..=63),
        proptest::option::of(1u8..=5),
        proptest::option::of(0u8..=15),
        proptest::collection::btree_set(1u8..=15, 0..3),
        proptest::option::of(any::<u32>()),
        proptest::option::of(any::<u8>()),
        proptest::option::of(0u32..=0xf_ffff),
    )
        .prop_map(|(rate, mtu, sl, scope, qkey, tclass, flow_label)| McastFlags {
            rate,
            mtu,
            sl,
            scope: scope.into_iter().collect(),
            qkey,
            tclass,
            flow_label,
        })
}

fn group() -> impl Strategy<Value = McastGroup> {
    (any::<u64>(), any::<u64>(), flags()).prop_map(|(p, g, flags)| McastGroup {
        mgid: Gid { prefix: 0xff00_0000_0000_0000 | (p >> 8), guid: Guid(g) },
        flags,
    })
}

/// Policies that partitions.conf can carry: unique names and P_Keys, names that neither start
/// with a digit nor are `Default`, distinct groups within a partition.
fn policy() -> impl Strategy<Value = Policy> {
    let part = (
        "[a-zA-Z_][a-zA-Z0-9_ .-]{0,8}[a-zA-Z0-9]",
        proptest::option::of(1u16..0x7fff),
        any::<bool>(),
        any::<bool>(),
        flags(),
        membership(),
        proptest::collection::vec(member(), 0..5),
        proptest::collection::vec(group(), 0..3),
    );
    proptest::collection::vec(part, 0..5).prop_map(|parts| {
        let mut out = Policy::default();
        for (i, (name, pkey, indx0, ipoib, flags, defmember, members, mut groups)) in parts.into_iter().enumerate() {
            if out.partitions.iter().any(|p| p.pkey.is_some() && p.pkey == pkey) {
                continue;
            }
            groups.dedup_by(|a, b| a == b);
            let mut unique = Vec::new();
            for g in groups {
                if !unique.contains(&g) {
                    unique.push(g);
                }
            }
            out.partitions.push(Partition {
                name: format!("{name}{i}"),
                pkey,
                indx0,
                ipoib,
                flags,
                defmember,
                members,
                mcast_groups: unique,
            });
        }
        out
    })
}

proptest! {
    #[test]
    fn conf_render_parse_round_trip(p in policy()) {
        let text = render_partitions_conf(&p).expect("generated policies are representable");
        prop_assert_eq!(parse_partitions_conf(&text), Ok(p), "{}", text);
    }

    #[test]
    fn toml_round_trip(p in policy()) {
        let text = policy_to_toml(&p).expect("writes");
        prop_assert_eq!(policy_from_toml(&text), Ok(p), "{}", text);
    }

    #[test]
    fn parsing_arbitrary_text_never_panics(text in "\\PC*") {
        let _ = parse_partitions_conf(&text);
    }

    #[test]
    fn parsing_conf_like_text_never_panics(text in "[a-zA-Z0-9_=,:;#\\n \\t.xX-]{0,80}") {
        if let Err(e) = parse_partitions_conf(&text) {
            for x in &e.0 {
                prop_assert!(x.line >= 1 && x.col >= 1);
                prop_assert!(x.line as usize <= text.lines().count().max(1) + 1);
            }
        }
    }

    #[test]
    fn toml_of_arbitrary_text_never_panics(text in "\\PC*") {
        let _ = policy_from_toml(&text);
    }
}

#[test]
fn toml_sample_parses_to_the_same_policy_as_partitions_conf() {
    let toml_text = r#"
[[partition]]
name = "storage"
pkey = 0x0080
ipoib = true
mtu = 5
default-membership = "full"
members = [
    { port = "0x0002c90300001234" },
    { port = "all-cas", membership = "limited" },
    { port = "self", membership = "both" },
]
[[partition.mcast-group]]
mgid = "ff12:401b::1"
sl = 1
scope = [2, 5]
"#;
    let conf = "storage=0x80,ipoib,mtu=5,defmember=full :\n mgid=ff12:401b::1,sl=1,scope=5,scope=2\n \
                0x0002c90300001234, ALL_CAS=limited, SELF=both ;";
    assert_eq!(policy_from_toml(toml_text), parse_partitions_conf(conf).map_err(|_| TomlError::Syntax(String::new())));
}

#[test]
fn toml_errors() {
    assert!(matches!(policy_from_toml("[[partition]]\nbogus = 1\n"), Err(TomlError::Syntax(_))));
    assert!(matches!(policy_from_toml("[[partition]]\npkey = 0\n"), Err(TomlError::Invalid { index: 0, .. })));
    assert!(matches!(policy_from_toml("[[partition]]\npkey = 0x8001\n"), Err(TomlError::Invalid { .. })));
    let mtu = policy_from_toml("[[partition]]\nname = \"x\"\nmtu = 4096\n");
    assert!(matches!(mtu, Err(TomlError::Syntax(_))), "4096 does not fit the u8 field: {mtu:?}");
    assert!(matches!(policy_from_toml("[[partition]]\nmtu = 6\n"), Err(TomlError::Invalid { .. })));
    let bad_port = policy_from_toml("[[partition]]\nmembers = [{ port = \"ALL\" }]\n");
    assert!(matches!(bad_port, Err(TomlError::Invalid { .. })));
    let unicast = policy_from_toml("[[partition]]\n[[partition.mcast-group]]\nmgid = \"fe80::1\"\n");
    assert!(matches!(unicast, Err(TomlError::Invalid { .. })));
    assert_eq!(policy_from_toml(""), Ok(Policy::default()));
}

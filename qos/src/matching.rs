//! Matching a path query (PathRecord / MultiPathRecord) to a QoS level, as OpenSM's QoS
//! manager does: the qos-match-rules in file order, then the qos-ulps lines in file order
//! (`default` aside), then the level named DEFAULT, else the `default` ULP line's SL, else no
//! level ([`QosPolicy::level_of`]; the SA then takes the SL of the path's partition, as OpenSM
//! does with QoS on and no policy).
//!
//! A rule matches when every criterion it has holds: source groups the source port is in,
//! destination groups the destination port is in (both, when it has both); a QoS class,
//! service ID or P_Key (low 15 bits) the query carries and the rule's ranges hold (a rule with
//! such a criterion never matches a query without that component). The `any,
//! source-target-port-guid` line needs both ends in its GUID set, as OpenSM's code has it.

use ibsm_mad::Guid;

use crate::model::{GroupMember, MatchRule, NodeTypeSel, PortGroup, QosPolicy, Range, UlpMatch, any_contains};
use crate::parse::DEFAULT_LEVEL;

/// What a port group can be checked against, for one end of a path.
#[derive(Debug, Clone, Copy)]
pub struct PortFacts<'a> {
    /// Port GUID.
    pub guid: Guid,
    /// The node's NodeDescription.
    pub node_desc: &'a str,
    /// The port's number.
    pub port_num: u8,
    /// What the node is (`Ca`, `Switch` or `Router`).
    pub node_type: NodeTypeSel,
    /// Whether it is the SM's own port.
    pub is_sm: bool,
    /// The P_Keys of the port's table (any membership bit).
    pub pkeys: &'a [u16],
}

/// A path query: its two ends and the components it carries.
#[derive(Clone, Copy)]
pub struct PathQuery<'a> {
    /// The source port.
    pub src: PortFacts<'a>,
    /// The destination port.
    pub dst: PortFacts<'a>,
    /// ServiceID, when the query's component mask has it.
    pub service_id: Option<u64>,
    /// P_Key, when the query has it.
    pub pkey: Option<u16>,
    /// QoSClass, when the query has it.
    pub qos_class: Option<u16>,
    /// P_Key (low 15 bits) of a partition by name, for `partition:` group members.
    pub partition_pkey: &'a dyn Fn(&str) -> Option<u16>,
}

/// What the matched level imposes on a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Level<'p> {
    /// The SL every path of the query uses.
    pub sl: u8,
    /// The largest MTU (IBA code 1..=5), if limited.
    pub mtu_limit: Option<u8>,
    /// The largest rate (IBA code), if limited.
    pub rate_limit: Option<u8>,
    /// PacketLifeTime, if set.
    pub packet_life: Option<u8>,
    /// The P_Keys (low 15 bits) paths of the level must use; empty: any.
    pub pkeys: &'p [Range],
}

fn in_group(g: &PortGroup, p: &PortFacts<'_>, partition_pkey: &dyn Fn(&str) -> Option<u16>) -> bool {
    let pkey_in = |ranges: &[Range]| {
        p.pkeys.iter().any(|&k| ranges.iter().any(|r| r.contains(u64::from(k & 0x7fff)) || r.contains(u64::from(k))))
    };
    g.members.iter().any(|m| match m {
        GroupMember::PortGuids(r) => any_contains(r, p.guid.0),
        GroupMember::PortName { node_desc, port } => *port == p.port_num && node_desc == p.node_desc,
        GroupMember::Pkeys(r) => pkey_in(r),
        GroupMember::Partition(name) => {
            partition_pkey(name).is_some_and(|k| p.pkeys.iter().any(|&pk| pk & 0x7fff == k & 0x7fff))
        }
        GroupMember::NodeTypes(kinds) => kinds.iter().any(|k| match k {
            NodeTypeSel::All => true,
            NodeTypeSel::SelfPort => p.is_sm,
            other => *other == p.node_type,
        }),
    })
}

fn in_groups(policy: &QosPolicy, names: &[String], p: &PortFacts<'_>, q: &PathQuery<'_>) -> bool {
    names.iter().filter_map(|n| policy.group(n)).any(|g| in_group(g, p, q.partition_pkey))
}

/// A criterion on a component the query may lack.
fn component(ranges: &[Range], have: Option<u64>) -> bool {
    ranges.is_empty() || have.is_some_and(|v| any_contains(ranges, v))
}

fn rule_matches(policy: &QosPolicy, r: &MatchRule, q: &PathQuery<'_>) -> bool {
    let src_ok = r.source.is_empty() || in_groups(policy, &r.source, &q.src, q);
    let dst_ok = r.destination.is_empty() || in_groups(policy, &r.destination, &q.dst, q);
    src_ok
        && dst_ok
        && component(&r.qos_class, q.qos_class.map(u64::from))
        && component(&r.service_id, q.service_id)
        && component(&r.pkey, q.pkey.map(|k| u64::from(k & 0x7fff)))
}

fn ulp_matches(m: &UlpMatch, q: &PathQuery<'_>) -> bool {
    let sid = |r: &[Range]| q.service_id.is_some_and(|s| any_contains(r, s));
    let pkey = |r: &[Range]| q.pkey.is_some_and(|k| any_contains(r, u64::from(k & 0x7fff)));
    match m {
        UlpMatch::Default => false,
        UlpMatch::AnyServiceId(r) | UlpMatch::Sdp(r) | UlpMatch::Rds(r) | UlpMatch::Iser(r) => sid(r),
        UlpMatch::AnyPkey(r) | UlpMatch::Ipoib(r) => pkey(r),
        UlpMatch::AnyTargetPortGuid(r) | UlpMatch::Srp(r) => any_contains(r, q.dst.guid.0),
        UlpMatch::AnySourcePortGuid(r) => any_contains(r, q.src.guid.0),
        UlpMatch::AnySourceTargetPortGuid(r) => any_contains(r, q.src.guid.0) && any_contains(r, q.dst.guid.0),
    }
}

impl QosPolicy {
    /// The level a path query gets (SL 0 and no limits when none applies).
    pub fn level_for(&self, q: &PathQuery<'_>) -> Level<'_> {
        self.level_of(q).unwrap_or_default()
    }

    /// The level a path query gets, `None` when no rule, ULP line, DEFAULT level or `default`
    /// line applies (a policy with none of them, as with QoS on and no policy file).
    pub fn level_of(&self, q: &PathQuery<'_>) -> Option<Level<'_>> {
        let of = |name: &str| {
            self.level(name).map(|l| Level {
                sl: l.sl,
                mtu_limit: l.mtu_limit,
                rate_limit: l.rate_limit,
                packet_life: l.packet_life,
                pkeys: &l.pkeys,
            })
        };
        if let Some(r) = self.match_rules.iter().find(|r| rule_matches(self, r, q))
            && let Some(l) = of(&r.level)
        {
            return Some(l);
        }
        if let Some(u) = self.ulps.iter().find(|u| ulp_matches(&u.matcher, q)) {
            return Some(Level { sl: u.sl, ..Level::default() });
        }
        of(DEFAULT_LEVEL).or_else(|| {
            self.ulps.iter().find(|u| u.matcher == UlpMatch::Default).map(|u| Level { sl: u.sl, ..Level::default() })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_qos_policy;

    const FULL: &str = include_str!("../tests/data/full-policy.conf");

    fn port(guid: u64, desc: &'static str, pkeys: &'static [u16]) -> PortFacts<'static> {
        PortFacts { guid: Guid(guid), node_desc: desc, port_num: 1, node_type: NodeTypeSel::Ca, is_sm: false, pkeys }
    }

    fn query<'a>(src: PortFacts<'a>, dst: PortFacts<'a>) -> PathQuery<'a> {
        PathQuery { src, dst, service_id: None, pkey: None, qos_class: None, partition_pkey: &|_| None }
    }

    #[test]
    fn rules_first_then_ulps_in_order_then_the_default() {
        let policy = parse_qos_policy(FULL).expect("parses");
        let (one, two) = (port(0x100, "x", &[0x7fff]), port(0x200, "y", &[0x7fff]));
        assert_eq!(policy.level_for(&query(one, two)).sl, 0, "nothing matches: DEFAULT");
        let q = PathQuery { qos_class: Some(8), ..query(one, two) };
        assert_eq!(policy.level_for(&q).sl, 1, "QoS class 8: LowLatency");
        let sdp = |port: u64| PathQuery { service_id: Some(0x1_0000 + port), ..query(one, two) };
        assert_eq!(policy.level_for(&sdp(30000)).sl, 3);
        assert_eq!(policy.level_for(&sdp(15000)).sl, 3);
        assert_eq!(policy.level_for(&sdp(5)).sl, 4, "sdp without port: the rest of SDP's range");
        assert_eq!(policy.level_for(&PathQuery { service_id: Some(0x106_48ca), ..query(one, two) }).sl, 5, "rds");
        assert_eq!(policy.level_for(&PathQuery { pkey: Some(0x8001), ..query(one, two) }).sl, 7, "ipoib, pkey 1");
        assert_eq!(policy.level_for(&PathQuery { pkey: Some(0xffff), ..query(one, two) }).sl, 8, "ipoib default");
        assert_eq!(policy.level_for(&query(one, port(0x1234, "t", &[]))).sl, 10, "srp target");
        assert_eq!(policy.level_for(&query(port(0x5678, "s", &[]), two)).sl, 12, "source GUID");
        let both = port(0x9abcd, "z", &[]);
        assert_eq!(policy.level_for(&query(both, two)).sl, 0, "source-target needs both ends");
        assert_eq!(
            policy.level_for(&query(both, both)).sl,
            11,
            "the earlier target-port-guid line (0xabc-0xfffff) wins"
        );
        let st = parse_qos_policy("qos-ulps\n default : 0\n any, source-target-port-guid 0x9abcd : 13\nend-qos-ulps\n")
            .expect("parses");
        assert_eq!(st.level_for(&query(both, both)).sl, 13);
        assert_eq!(st.level_for(&query(both, two)).sl, 0);
        // The storage rule: source group by port name, destination by GUID, service ID and P_Key.
        let cn = port(0x300, "cn01 mlx5_0", &[]);
        let target = port(0x0002_c903_0000_0020, "st", &[]);
        let storage = PathQuery { service_id: Some(0x1_0005), pkey: Some(0x0f10), ..query(cn, target) };
        let l = policy.level_for(&storage);
        assert_eq!((l.sl, l.mtu_limit, l.rate_limit, l.packet_life), (2, Some(5), Some(7), Some(18)));
        let no_pkey = PathQuery { pkey: None, ..storage };
        assert_eq!(policy.level_for(&no_pkey).sl, 4, "a rule with a P_Key needs the query's P_Key: the sdp line");
    }

    #[test]
    fn a_policy_with_nothing_that_applies_gives_no_level() {
        // QoS on without a policy file: an empty policy (a file must name a default level).
        let p = QosPolicy::default();
        let (a, b) = (port(1, "a", &[]), port(2, "b", &[]));
        assert_eq!(p.level_of(&query(a, b)), None);
        assert_eq!(p.level_for(&query(a, b)).sl, 0);
    }

    #[test]
    fn a_partition_port_group_holds_the_ports_of_that_partition() {
        let p = parse_qos_policy(
            "port-groups\n port-group\n name: Storage\n partition: storage\n end-port-group\nend-port-groups\n\
             qos-levels\n qos-level\n name: DEFAULT\n sl: 0\n end-qos-level\n qos-level\n name: St\n sl: 5\n \
             pkey: 0x0a01-0x0a02\n end-qos-level\nend-qos-levels\n\
             qos-match-rules\n qos-match-rule\n destination: Storage\n qos-level-name: St\n end-qos-match-rule\n\
             end-qos-match-rules\n",
        )
        .expect("parses");
        let lookup = |name: &str| (name == "storage").then_some(0x0a01);
        let (a, member, other) = (port(1, "a", &[0xffff]), port(2, "b", &[0x8a01]), port(3, "c", &[0x8a02]));
        let q = |dst| PathQuery { partition_pkey: &lookup, ..query(a, dst) };
        let l = p.level_of(&q(member)).expect("a level");
        assert_eq!(l.sl, 5, "a member of the storage partition");
        assert_eq!(l.pkeys, [Range { lo: 0x0a01, hi: 0x0a02 }], "and the level's P_Keys");
        assert_eq!(p.level_of(&q(other)).map(|l| l.sl), Some(0), "not a member: DEFAULT");
    }

    #[test]
    fn without_levels_the_default_ulp_line_gives_the_sl() {
        let p = parse_qos_policy("qos-ulps\n default : 6\n rds : 2\nend-qos-ulps\n").expect("parses");
        let (a, b) = (port(1, "a", &[]), port(2, "b", &[]));
        assert_eq!(p.level_for(&query(a, b)), Level { sl: 6, ..Level::default() });
    }
}

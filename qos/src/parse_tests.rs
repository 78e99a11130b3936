//! Tests of the qos-policy.conf parser: a file using every keyword, refusals with line and
//! reason, and the property that no input makes it panic.

use proptest::prelude::*;

use crate::model::{GroupMember, NodeTypeSel, PortSel, Range, UlpMatch};
use crate::parse_qos_policy;

const FULL: &str = include_str!("../tests/data/full-policy.conf");

#[test]
fn a_policy_with_every_keyword_parses_into_its_model() {
    let p = parse_qos_policy(FULL).expect("the example policy parses");
    assert_eq!(p.port_groups.len(), 4);
    let storage = p.group("storage").expect("group names are case-insensitive");
    assert_eq!(
        storage.members[0],
        GroupMember::PortGuids(vec![
            Range::one(0x0002_c903_0000_0001),
            Range { lo: 0x0002_c903_0000_0010, hi: 0x0002_c903_0000_00ff }
        ])
    );
    assert_eq!(storage.members.len(), 2, "two port-guid lines");
    let cn = p.group("Compute Nodes").unwrap();
    assert_eq!(cn.members[1], GroupMember::PortName { node_desc: "cn02 mlx5_0".to_owned(), port: 1 });
    let tenants = p.group("Tenants").unwrap();
    assert_eq!(tenants.members[0], GroupMember::Partition("TenantA".to_owned()));
    assert_eq!(tenants.members[1], GroupMember::Pkeys(vec![Range { lo: 0x8001, hi: 0x8003 }]));
    assert_eq!(
        p.group("Fabric").unwrap().members[0],
        GroupMember::NodeTypes(vec![NodeTypeSel::Switch, NodeTypeSel::Router, NodeTypeSel::SelfPort])
    );
    let arb = &p.setup.vlarb[0];
    assert_eq!((arb.vl_high_limit, arb.vlarb_high.len(), arb.vlarb_low[0].weight), (Some(10), 2, 128));
    let s = &p.setup.sl2vl[0];
    assert_eq!((s.from.clone(), s.to.clone()), (Some(PortSel::All), Some(PortSel::Ports(vec![1, 3, 4, 5]))));
    assert_eq!(s.table.map(|t| t[15]), Some(15));
    let bulk = p.level("Bulk").unwrap();
    assert_eq!((bulk.sl, bulk.mtu_limit, bulk.rate_limit, bulk.packet_life), (2, Some(5), Some(7), Some(18)));
    assert_eq!(bulk.pkeys, vec![Range::one(0x0001)], "0x8001 read as its base, as OpenSM reads it");
    assert_eq!(p.match_rules.len(), 2);
    assert_eq!(p.match_rules[0].qos_class, vec![Range { lo: 7, hi: 9 }, Range::one(11)]);
    assert_eq!(p.match_rules[1].level, "Bulk");
    let ulps: Vec<(&UlpMatch, u8)> = p.ulps.iter().map(|u| (&u.matcher, u.sl)).collect();
    assert_eq!(ulps.len(), 15);
    assert_eq!(ulps[0], (&UlpMatch::Default, 0));
    assert_eq!(ulps[1], (&UlpMatch::Sdp(vec![Range::one(0x1_0000 + 30000)]), 3));
    assert_eq!(ulps[3], (&UlpMatch::Sdp(vec![Range { lo: 0x1_0000, hi: 0x1_ffff }]), 4));
    assert_eq!(ulps[4], (&UlpMatch::Rds(vec![Range::one(0x106_48ca)]), 5));
    assert_eq!(ulps[5], (&UlpMatch::Iser(vec![Range::one(0x106_0000 + 900)]), 6));
    assert_eq!(ulps[6], (&UlpMatch::Iser(vec![Range::one(0x106_0cbc)]), 6));
    assert_eq!(ulps[8], (&UlpMatch::Ipoib(vec![Range::one(0x7fff)]), 8));
    assert_eq!(ulps[11], (&UlpMatch::Srp(vec![Range::one(0x1234)]), 10));
    assert_eq!(ulps[14], (&UlpMatch::AnySourceTargetPortGuid(vec![Range::one(0x9abcd)]), 13));
    assert_eq!(p.ulps[14].line, 108);
}

#[test]
fn the_shortest_policies_parse() {
    let levels = "qos-levels\n qos-level\n  name: DEFAULT\n  sl: 0\n end-qos-level\nend-qos-levels\n";
    assert_eq!(parse_qos_policy(levels).unwrap().levels.len(), 1);
    let ulps = "qos-ulps\n    default : 0 # default SL\nend-qos-ulps\n";
    assert_eq!(parse_qos_policy(ulps).unwrap().ulps.len(), 1);
}

fn err(text: &str) -> (u32, String) {
    let e = parse_qos_policy(text).expect_err("must be refused");
    (e.line, e.reason)
}

#[test]
fn bad_input_is_refused_with_its_line_and_reason() {
    let head = "qos-ulps\n default : 0\nend-qos-ulps\n";
    let cases: &[(&str, u32, &str)] = &[
        ("", 1, "no default level"),
        ("qos-levels\n qos-level\n  name: Gold\n  sl: 1\n end-qos-level\nend-qos-levels\n", 1, "no default level"),
        ("qos-ulps\n default : 16\nend-qos-ulps\n", 2, "SL 16 is out of range"),
        ("qos-ulps\n default : 0\n", 3, "end of file before end-qos-ulps"),
        ("port-groups\n", 2, "end of file before end-port-groups"),
        ("qos-ulps\n sdp, port-num 70000 : 1\nend-qos-ulps\n", 2, "TCP port number 70000"),
        ("qos-ulps\n nfs : 1\nend-qos-ulps\n", 2, "unknown ULP \"nfs\""),
        ("qos-ulps\n srp : 1\nend-qos-ulps\n", 2, "srp takes target-port-guid"),
        ("qos-ulps\n ipoib, pkey 010 : 1\nend-qos-ulps\n", 2, "octal"),
        ("bogus\n", 1, "expected a section"),
        ("qos-levels\n qos-level\n  name: DEFAULT\n  sl: 0\n  colour: red\n", 5, "unknown key \"colour\""),
        ("qos-levels\n qos-level\n  name: DEFAULT\n end-qos-level\nend-qos-levels\n", 4, "has no sl"),
        ("qos-levels\n qos-level\n  name: DEFAULT\n  sl: 0\n  sl: 1\n", 5, "sl is given twice"),
        ("qos-levels\n qos-level\n  name: DEFAULT\n  sl: 0\n  mtu-limit: 6\n", 5, "mtu-limit"),
        (
            "qos-levels\n qos-level\n  name: DEFAULT\n  sl: 0\n end-qos-level\n qos-level\n  name: default\n  sl: 1\n end-qos-level\n",
            9,
            "already defined on line 2",
        ),
        (
            "qos-levels\n qos-level\n  name: DEFAULT\n  sl: 0\n end-qos-level\nend-qos-levels\nqos-match-rules\n qos-match-rule\n  source: Nowhere\n  qos-level-name: DEFAULT\n end-qos-match-rule\nend-qos-match-rules\n",
            9,
            "port-group \"Nowhere\" is not a port-group",
        ),
        (
            "qos-levels\n qos-level\n  name: DEFAULT\n  sl: 0\n end-qos-level\nend-qos-levels\nqos-match-rules\n qos-match-rule\n  qos-level-name: Gold\n end-qos-match-rule\nend-qos-match-rules\n",
            8,
            "qos-level \"Gold\" is not defined",
        ),
        ("port-groups\n port-group\n  name: A\n  port-name: host1\n", 4, "bad port-name"),
        ("port-groups\n port-group\n  name: A\n  node-type: HUB\n", 4, "unknown node-type"),
        ("port-groups\n port-group\n  use: nameless\n end-port-group\n", 4, "has no name"),
        ("qos-setup\n sl2vl-tables\n  sl2vl-scope\n   group: A\n   sl2vl-table: 0,1\n", 5, "expected 16 VLs"),
        ("qos-setup\n vlarb-tables\n  vlarb-scope\n   vlarb-high: 0:4\n  end-vlarb-scope\n", 5, "names no group"),
        ("qos-setup\n vlarb-tables\n  vlarb-scope\n   vlarb-low: 15:4\n", 4, "VL 15 is out of range"),
    ];
    for (text, line, reason) in cases {
        let (l, r) = err(text);
        assert_eq!(l, *line, "{text:?}: {r}");
        assert!(r.contains(reason), "{text:?}: expected {reason:?} in {r:?}");
    }
    // A policy is fine again once the default exists.
    assert!(parse_qos_policy(head).is_ok());
}

proptest! {
    #[test]
    fn any_text_parses_or_is_refused_without_panicking(text in "(?s).{0,400}") {
        let _ = parse_qos_policy(&text);
    }

    #[test]
    fn lines_made_of_policy_words_never_panic(
        words in proptest::collection::vec(prop_oneof![
            Just("qos-ulps"), Just("end-qos-ulps"), Just("qos-levels"), Just("qos-level"), Just("end-qos-level"),
            Just("end-qos-levels"), Just("port-groups"), Just("port-group"), Just("end-port-group"),
            Just("qos-setup"), Just("vlarb-tables"), Just("vlarb-scope"), Just("sl2vl-tables"),
            Just("sl2vl-scope"), Just("qos-match-rules"), Just("qos-match-rule"), Just("name: DEFAULT"),
            Just("sl: 3"), Just("default : 1"), Just("sdp, port-num 1-0x10 : 2"), Just("group: DEFAULT"),
            Just("vlarb-high: 0:1,14:255"), Just("sl2vl-table: 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15"),
            Just("to: *"), Just("from: 1-0xfe"), Just("port-name: a/P1"), Just("# x"), Just("::"), Just(","),
            Just("qos-level-name: DEFAULT"), Just("any, target-port-guid 0-0xffffffffffffffff : 0"),
        ], 0..40)
    ) {
        let _ = parse_qos_policy(&words.join("\n"));
    }
}

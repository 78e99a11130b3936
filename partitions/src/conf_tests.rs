//! Unit tests of the partitions.conf parser and renderer: every construct, every error with its
//! line:col, and the man page's example configurations (rewritten in our own words).

use ibsm_mad::{Gid, Guid};

use crate::error::ParseErrorKind;
use crate::model::ValueError;
use crate::{
    McastFlags, Member, MemberSpec, Membership, Partition, Policy, parse_partitions_conf, render_partitions_conf,
};

fn parse(text: &str) -> Policy {
    match parse_partitions_conf(text) {
        Ok(p) => p,
        Err(e) => panic!("parse failed:\n{e}"),
    }
}

fn err(text: &str) -> (u32, u32, ParseErrorKind) {
    let e = parse_partitions_conf(text).expect_err("expected an error");
    let first = e.0.into_iter().next().expect("at least one error");
    (first.line, first.col, first.kind)
}

fn m(who: MemberSpec, membership: Membership) -> Member {
    Member { who, membership }
}

fn guid(g: u64) -> MemberSpec {
    MemberSpec::PortGuid(Guid(g))
}

#[test]
fn minimal_definition() {
    let p = parse("Default=0x7fff : ALL, SELF=full ;");
    assert_eq!(p.partitions.len(), 1);
    let d = &p.partitions[0];
    assert_eq!(d.name, "Default");
    assert_eq!(d.pkey, Some(0x7fff));
    assert_eq!(d.members, vec![m(MemberSpec::All, Membership::Limited), m(MemberSpec::SelfPort, Membership::Full)]);
}

#[test]
fn keywords_and_memberships() {
    let p =
        parse("x=0x10: ALL_CAS=both, ALL_SWITCHES=full, ALL_ROUTERS=limited, 0x2134af2306, 1234=f, 0x5=limi, NONE;");
    assert_eq!(
        p.partitions[0].members,
        vec![
            m(MemberSpec::AllCas, Membership::Both),
            m(MemberSpec::AllSwitches, Membership::Full),
            m(MemberSpec::AllRouters, Membership::Limited),
            m(guid(0x21_34af_2306), Membership::Limited),
            m(guid(1234), Membership::Full),
            m(guid(5), Membership::Limited),
        ]
    );
}

#[test]
fn header_flags() {
    let p = parse(
        "storage=0x8080,indx0,ipoib,rate=7,mtu=5,sl=3,scope=5,scope=2,Q_Key=0x1b,TClass=4,FlowLabel=0x12345,defmember=full: 0x1;",
    );
    let s = &p.partitions[0];
    assert_eq!(s.pkey, Some(0x0080), "bit 15 of a written P_Key is ignored");
    assert!(s.indx0 && s.ipoib);
    assert_eq!(
        s.flags,
        McastFlags {
            rate: Some(7),
            mtu: Some(5),
            sl: Some(3),
            scope: vec![2, 5],
            qkey: Some(0x1b),
            tclass: Some(4),
            flow_label: Some(0x12345)
        }
    );
    assert_eq!(s.defmember, Membership::Full);
    assert_eq!(s.members, vec![m(guid(1), Membership::Full)]);
}

#[test]
fn name_and_pkey_forms() {
    let p = parse("=0x20 : ALL;\n0x30 : ALL;\nMy Part : ALL;\n : SELF;");
    let got: Vec<(&str, Option<u16>)> = p.partitions.iter().map(|p| (p.name.as_str(), p.pkey)).collect();
    assert_eq!(got, vec![("", Some(0x20)), ("", Some(0x30)), ("My Part", None), ("", None)]);
}

#[test]
fn comments_continuations_and_several_per_line() {
    let text = "# leading comment\n\
                a = 0x1 :   # definition\n\
                  0x11 ,   # first port\n\
                  0x12\n\
                  0x13=full   # newline separates ports too\n\
                ; b=0x2: ALL; c=0x3:SELF;";
    let p = parse(text);
    assert_eq!(p.partitions.len(), 3);
    assert_eq!(
        p.partitions[0].members,
        vec![m(guid(0x11), Membership::Limited), m(guid(0x12), Membership::Limited), m(guid(0x13), Membership::Full)]
    );
    assert_eq!(p.partitions[2].members, vec![m(MemberSpec::SelfPort, Membership::Limited)]);
}

#[test]
fn empty_inputs() {
    assert_eq!(parse(""), Policy::default());
    assert_eq!(parse("  # only a comment\n\n"), Policy::default());
    assert!(parse("empty=0x9 : ;").partitions[0].members.is_empty());
}

#[test]
fn mgid_lines() {
    let text = "Default=0x7fff,ipoib:\n\
                mgid=ff12:401b::0707,sl=1 # an IPv4 group\n\
                mgid=ff12::1,sl=1,Q_Key=0xDEADBEEF,rate=3,mtu=2\n\
                ALL=full;";
    let p = parse(text);
    let d = &p.partitions[0];
    assert_eq!(d.mcast_groups.len(), 2);
    assert_eq!(d.mcast_groups[0].mgid, Gid { prefix: 0xff12_401b_0000_0000, guid: Guid(0x0707) });
    assert_eq!(d.mcast_groups[0].flags, McastFlags { sl: Some(1), ..McastFlags::default() });
    assert_eq!(
        d.mcast_groups[1].flags,
        McastFlags { sl: Some(1), qkey: Some(0xdead_beef), rate: Some(3), mtu: Some(2), ..McastFlags::default() }
    );
    assert_eq!(d.members, vec![m(MemberSpec::All, Membership::Full)]);
}

#[test]
fn repeated_pkey_merges_first_name_wins() {
    let p = parse("first=0x300 : SELF=full ;\nsecond=0x300,ipoib,mtu=4 : ALL=limited ;");
    assert_eq!(p.partitions.len(), 1);
    let x = &p.partitions[0];
    assert_eq!(x.name, "first");
    assert!(x.ipoib);
    assert_eq!(x.flags.mtu, Some(4));
    assert_eq!(x.members, vec![m(MemberSpec::SelfPort, Membership::Full), m(MemberSpec::All, Membership::Limited)]);
}

#[test]
fn name_without_pkey_merges_by_name_and_default_is_0x7fff() {
    let p = parse("io=0x40 : 0x1 ;\nio : 0x2 ;\nDefault : SELF=full ;\nanon : 0x3;");
    assert_eq!(p.partitions.len(), 3);
    assert_eq!(p.partitions[0].members.len(), 2);
    assert_eq!((p.partitions[1].name.as_str(), p.partitions[1].pkey), ("Default", Some(0x7fff)));
    assert_eq!(p.partitions[2].pkey, None);
}

/// The man page's ShareIO example: defmember applies per statement, explicit values override.
#[test]
fn man_page_share_io_example() {
    let text = "ShareIO = 0x80 , defmember=full : 0x123451, 0x123452;\n\
                # 0x123453, 0x123454 will be limited\n\
                ShareIO = 0x80 : 0x123453, 0x123454, 0x123455=full;\n\
                ShareIO = 0x80 , defmember=limited : 0x123456, 0x123457, 0x123458=full;\n\
                ShareIO = 0x80 , defmember=full : 0x123459, 0x12345a;\n\
                ShareIO = 0x80 , defmember=full : 0x12345b, 0x12345c=limited, 0x12345d;\n";
    let p = parse(text);
    assert_eq!(p.partitions.len(), 1);
    let full: Vec<u64> = p.partitions[0]
        .members
        .iter()
        .filter(|x| x.membership == Membership::Full)
        .filter_map(|x| if let MemberSpec::PortGuid(g) = x.who { Some(g.0) } else { None })
        .collect();
    assert_eq!(full, vec![0x12_3451, 0x12_3452, 0x12_3455, 0x12_3458, 0x12_3459, 0x12_345a, 0x12_345b, 0x12_345d]);
    assert_eq!(p.partitions[0].members.len(), 13);
    assert_eq!(p.partitions[0].defmember, Membership::Full, "first definition's defmember is kept");
}

#[test]
fn man_page_other_examples_parse() {
    let text = "Default=0x7fff : ALL, ALL_SWITCHES=full, SELF=full ;\n\
                NewPartition , ipoib : 0x123456=full, 0x3456789034=limi, 0x2134af2306 ;\n\
                YetAnotherOne = 0x300 : SELF=full ;\n\
                YetAnotherOne = 0x300 : ALL=limited ;\n";
    let p = parse(text);
    assert_eq!(p.partitions.len(), 3);
    assert!(p.partitions[1].ipoib);
    assert_eq!(p.partitions[1].pkey, None);
    assert_eq!(p.partitions[2].members.len(), 2);
}

#[test]
fn errors_with_positions() {
    use ParseErrorKind as K;
    assert!(matches!(err("abc ALL;"), (1, 8, K::ExpectedColon { .. })), "names may hold blanks");
    assert!(matches!(err("a=0x1\n: ALL;"), (1, 6, K::ExpectedColon { .. })));
    assert_eq!(err("a=0x1 : ALL").0, 1);
    assert!(matches!(err("\n  a=0x1 : ALL"), (2, 3, K::Unterminated)));
    assert!(matches!(err("a=0x1ffff : ALL;"), (1, 3, K::BadPkey { .. })));
    assert!(matches!(err("a=0x8000 : ALL;"), (1, 3, K::BadPkey { .. })));
    assert!(matches!(err("a=zz : ALL;"), (1, 3, K::NotANumber(_))));
    assert!(matches!(err("a= : ALL;"), (1, 4, K::MissingValue(_))));
    assert_eq!(err("a=0x1 : 0123;"), (1, 9, K::Octal("0123".into())));
    assert_eq!(err("a=0x1 : 0x0;"), (1, 9, K::BadPort { text: "0x0".into() }));
    assert_eq!(err("a=0x1 : AL;"), (1, 9, K::BadPort { text: "AL".into() }));
    assert_eq!(err("a=0x1 : ALL=ful1;"), (1, 13, K::BadMembership("ful1".into())));
    assert_eq!(err("a=0x1 : ALL=;"), (1, 13, K::MissingValue("ALL".into())));
    assert!(matches!(err("a=0x1,bogus : ALL;"), (1, 7, K::UnknownFlag { .. })));
    assert_eq!(err("a=0x1,ipoib=1 : ALL;"), (1, 13, K::UnexpectedValue("ipoib".into())));
    assert_eq!(err("a=0x1,defmember : ALL;"), (1, 16, K::MissingValue("defmember".into())));
    assert_eq!(err("a=0x1,defmember=x : ALL;"), (1, 17, K::BadMembership("x".into())));
    assert_eq!(err("a=0x1,mtu : ALL;"), (1, 10, K::MissingValue("mtu".into())));
    assert_eq!(err("a=0x1,mtu=4096 : ALL;"), (1, 11, K::Value(ValueError::MtuInBytes { bytes: 4096, enum_value: 5 })));
    assert!(matches!(err("a=0x1,mtu=6 : ALL;"), (1, 11, K::Value(ValueError::OutOfRange { flag: "mtu", .. }))));
    assert!(matches!(err("a=0x1,rate=1 : ALL;"), (1, 12, K::Value(ValueError::OutOfRange { flag: "rate", .. }))));
    assert!(matches!(err("a=0x1,sl=16 : ALL;"), (1, 10, K::Value(ValueError::OutOfRange { flag: "sl", .. }))));
    assert!(matches!(err("a=0x1,scope=0 : ALL;"), (1, 13, K::Value(_))));
    assert!(matches!(err("a=0x1,TClass=256 : ALL;"), (1, 14, K::Value(_))));
    assert!(matches!(err("a=0x1,FlowLabel=0x100000 : ALL;"), (1, 17, K::Value(_))));
    assert!(matches!(err("a=0x1,Q_Key=0x100000000 : ALL;"), (1, 13, K::Value(_))));
    assert!(matches!(err("a=0x1, : ALL;"), (1, 8, K::Unexpected { .. })));
    assert!(matches!(err("a=0x1 : ALL full;"), (1, 13, K::Unexpected { .. })));
    assert!(matches!(err("a=0x1 : :;"), (1, 9, K::Unexpected { .. })));
    assert_eq!(err("a=0x1 :\n  mgid=fe80::1\n ALL;"), (2, 8, K::NotMulticast("fe80::1".into())));
    assert_eq!(err("a=0x1 :\n  mgid=zz\n ALL;"), (2, 8, K::BadGid("zz".into())));
    assert_eq!(err("a=0x1 :\n  mgid=ff12::1:::2\n ALL;"), (2, 8, K::BadGid("ff12::1:::2".into())));
    assert!(matches!(err("a=0x1 :\n mgid=ff12::1,ALL=full\n;"), (2, 15, K::UnknownFlag { .. })));
    assert!(matches!(err("a=0x1 :\n mgid=ff12::1 ALL\n;"), (2, 15, K::Unexpected { .. })));
    assert!(matches!(err("a=0x1 :\n mgid=ff12::1,sl=99\n;"), (2, 18, K::Value(_))));
}

#[test]
fn all_errors_are_collected_and_good_statements_survive_elsewhere() {
    let e = parse_partitions_conf("a=0x1 : bad;\nb=0x2 : ALL;\nc=0x3,mtu=9 : ALL;\n").expect_err("two errors");
    let lines: Vec<u32> = e.0.iter().map(|x| x.line).collect();
    assert_eq!(lines, vec![1, 3]);
    let shown = e.to_string();
    assert!(shown.starts_with("1:9: bad port \"bad\""), "{shown}");
    assert!(shown.contains("\n3:11: mtu=9 is out of range"), "{shown}");
}

#[test]
fn columns_count_characters_not_bytes() {
    assert_eq!(err("é=0x1 : AL;").1, 9);
}

#[test]
fn render_round_trips_the_man_examples() {
    let text = "Default=0x7fff,ipoib,rate=3:\n mgid=ff12:601b::16\n mgid=ff12::1,sl=1,scope=5 # x\n ALL=full;\n\
                ShareIO = 0x80 , defmember=full : 0x123451, 0x123452=both;\n\
                anon : SELF;";
    let p = parse(text);
    let rendered = render_partitions_conf(&p).expect("renderable");
    assert_eq!(parse(&rendered), p, "{rendered}");
}

#[test]
fn render_refuses_what_the_syntax_cannot_carry() {
    for name in ["a:b", " lead", "9lives", "Default", "x;y", "x#y"] {
        let policy = Policy { partitions: vec![Partition { name: name.into(), ..Partition::default() }] };
        assert!(render_partitions_conf(&policy).is_err(), "{name:?}");
    }
    let policy = Policy { partitions: vec![Partition { pkey: Some(0x8000), ..Partition::default() }] };
    assert!(render_partitions_conf(&policy).is_err());
}

#[test]
fn a_repeated_pkey_merges_into_the_first_definition_with_a_warning_naming_both() {
    let text = "a=0x10 : ALL=full ;\n# b repeats a's key\nb=0x10 : 0x0002000000000001=full ;\n";
    let (p, warnings) = crate::parse_partitions_conf_with_warnings(text).expect("valid");
    assert_eq!(p.partitions.len(), 1);
    assert_eq!(
        (p.partitions[0].name.as_str(), p.partitions[0].members.len()),
        ("a", 2),
        "first name kept, members merged"
    );
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(
        warnings[0].to_string(),
        "line 3: partition \"b\" repeats P_Key 0x0010 of partition \"a\" (line 1): merged into \"a\", whose name is kept"
    );
    // The default partition's key under another name: merged into Default, with a warning; the
    // default partition written as such is no warning.
    let (_, warnings) =
        crate::parse_partitions_conf_with_warnings("Default=0x7fff : ALL=full ;\nx=0x7fff : SELF ;\nDefault : ALL ;\n")
            .expect("valid");
    let shown: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "line 2: partition \"x\" has the default partition's P_Key 0x7fff: merged into \"Default\", whose name is kept"
        ]
    );
    // The TOML form says the same, by table.
    let toml = "[[partition]]\nname = \"a\"\npkey = 16\n[[partition]]\nname = \"b\"\npkey = 16\n";
    let (_, warnings) = crate::policy_from_toml_with_warnings(toml).expect("valid");
    assert_eq!(
        warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
        [
            "[[partition]] 1: partition \"b\" repeats P_Key 0x0010 of partition \"a\" ([[partition]] 0): merged into \"a\", whose name is kept"
        ]
    );
}

/// The P_Key space holds 32,766 generated keys (1..=0x7ffe) less the explicit ones: one more
/// is an error at the line of the first partition that does not fit, found in linear time.
#[test]
fn more_generated_pkeys_than_the_space_holds_is_an_error_at_the_first_that_does_not_fit() {
    use std::fmt::Write as _;
    let mut text = String::from("Default=0x7fff : ALL=full ;\nfixed=0x0005 : SELF ;\n");
    for i in 0..32_765 {
        let _ = writeln!(text, "p{i} : ALL=limited ;");
    }
    let start = std::time::Instant::now();
    let p = parse(&text);
    let resolved = crate::resolve(&p, &crate::FabricPorts::default(), crate::ResolveOptions::default()).expect("fits");
    assert_eq!(resolved.partitions.len(), 32_767, "Default, fixed and 32,765 generated");
    assert_eq!(resolved.partitions.last().map(|r| r.base), Some(0x7ffe));
    text.push_str("one-too-many : ALL=limited ;\n");
    let e = parse_partitions_conf(&text).expect_err("no room");
    assert_eq!((e.0.len(), e.0[0].line, e.0[0].col), (1, 32_768, 1), "{e}");
    assert!(
        matches!(&e.0[0].kind, ParseErrorKind::PkeysExhausted { name, explicit: 1, generated: 32_766 } if name == "one-too-many")
    );
    // Quadratic merging took seconds here; linear takes milliseconds.
    assert!(start.elapsed() < std::time::Duration::from_secs(5), "{:?}", start.elapsed());
}

//! Resolver tests: the default partition, membership merging, indx0, generated P_Keys,
//! capacity overflow, enforcement and determinism.

use ibsm_mad::{Guid, PKey, PortNum};

use crate::{
    EndPort, FabricPorts, NodeKind, Policy, ResolveError, ResolveOptions, ResolveWarning, SwitchPeer,
    parse_partitions_conf, resolve,
};

const SM: Guid = Guid(0x100);
const CA1: Guid = Guid(0x101);
const CA2: Guid = Guid(0x102);
const SW: Guid = Guid(0x200);
const RT: Guid = Guid(0x300);

fn port(guid: Guid, kind: NodeKind, cap: u16, peer_port: u8) -> EndPort {
    let peer =
        (kind != NodeKind::Switch).then_some(SwitchPeer { switch: SW, port: PortNum(peer_port), enforce_cap: 4 });
    EndPort { guid, kind, is_sm: guid == SM, pkey_capacity: cap, peer }
}

fn fabric() -> FabricPorts {
    FabricPorts {
        ports: vec![
            port(SM, NodeKind::Ca, 16, 1),
            port(CA1, NodeKind::Ca, 16, 2),
            port(CA2, NodeKind::Ca, 16, 3),
            port(SW, NodeKind::Switch, 16, 0),
            port(RT, NodeKind::Router, 16, 4),
        ],
    }
}

fn policy(text: &str) -> Policy {
    parse_partitions_conf(text).expect("valid test policy")
}

fn keys(raw: &[u16]) -> Vec<PKey> {
    raw.iter().map(|&k| PKey(k)).collect()
}

#[test]
fn empty_file_gives_limited_default_and_full_for_the_sm() {
    let out = resolve(&Policy::default(), &fabric(), ResolveOptions::default()).expect("resolves");
    assert_eq!(out.ports[&SM], keys(&[0xffff]));
    assert_eq!(out.ports[&CA1], keys(&[0x7fff]));
    assert_eq!(out.ports[&SW], keys(&[0x7fff]));
    assert!(out.warnings.is_empty());
}

#[test]
fn no_file_gives_everyone_full_default() {
    let out = resolve(&Policy::no_file(), &fabric(), ResolveOptions::default()).expect("resolves");
    for p in fabric().ports {
        assert_eq!(out.ports[&p.guid], keys(&[0xffff]), "{}", p.guid);
    }
}

#[test]
fn port_classes_and_membership_merging() {
    let text = "a=0x10 : ALL_CAS=limited, 0x101=full ;\n\
                b=0x20 : ALL_SWITCHES=full ;\n\
                c=0x30 : ALL_ROUTERS=both ;\n\
                a=0x10 : 0x102=limited ;\n\
                d=0x40 : ALL_CAS=full, 0x102=limited ;";
    let out = resolve(&policy(text), &fabric(), ResolveOptions::default()).expect("resolves");
    assert_eq!(out.ports[&CA1], keys(&[0x7fff, 0x8010, 0x8040]), "the last entry wins: full after limited");
    assert_eq!(out.ports[&CA2], keys(&[0x7fff, 0x0010, 0x0040]), "the last entry wins: limited after full");
    assert_eq!(out.ports[&SW], keys(&[0x7fff, 0x8020]));
    assert_eq!(out.ports[&RT], keys(&[0x7fff, 0x8030]), "both means full without allow_both_pkeys");
}

#[test]
fn allow_both_pkeys_gives_two_entries_and_last_single_membership_wins() {
    let text = "c=0x30 : ALL_ROUTERS=both, 0x101=full, 0x101=limited ;";
    let opts = ResolveOptions { allow_both_pkeys: true, ..ResolveOptions::default() };
    let out = resolve(&policy(text), &fabric(), opts).expect("resolves");
    assert_eq!(out.ports[&RT], keys(&[0x7fff, 0x0030, 0x8030]), "limited first, as OpenSM");
    assert_eq!(out.ports[&CA1], keys(&[0x7fff, 0x0030]));
}

#[test]
fn file_default_rule_adds_to_the_implicit_one() {
    let out = resolve(&policy("Default=0x7fff : ALL_CAS=full ;"), &fabric(), ResolveOptions::default()).expect("ok");
    assert_eq!(out.ports[&CA1], keys(&[0xffff]));
    assert_eq!(out.ports[&SW], keys(&[0x7fff]), "ports not named stay limited members");
}

#[test]
fn indx0_pins_index_zero_and_conflicts_are_reported() {
    let text = "x=0x40,indx0 : 0x101=full ;\ny=0x05,indx0 : 0x101 ;\nz=0x01 : 0x101;";
    let out = resolve(&policy(text), &fabric(), ResolveOptions::default()).expect("resolves");
    assert_eq!(out.ports[&CA1], keys(&[0x8040, 0x0001, 0x0005, 0x7fff]));
    assert_eq!(out.warnings, vec![ResolveWarning::Indx0Conflict { port: CA1, kept: 0x40, ignored: 0x05 }]);
}

#[test]
fn generated_pkeys_skip_explicit_ones_and_are_deterministic() {
    let text = "g1 : 0x101 ;\nfixed=0x1 : 0x101 ;\ng2 : 0x101 ;\nfixed2=0x3 : 0x102;";
    let p = policy(text);
    let a = resolve(&p, &fabric(), ResolveOptions::default()).expect("resolves");
    let b = resolve(&p, &fabric(), ResolveOptions::default()).expect("resolves");
    assert_eq!(a, b);
    let bases: Vec<(&str, u16)> = a.partitions.iter().map(|x| (x.name.as_str(), x.base)).collect();
    assert_eq!(bases, vec![("Default", 0x7fff), ("g1", 2), ("fixed", 1), ("g2", 4), ("fixed2", 3)]);
}

#[test]
fn pkey_exhaustion_is_an_error() {
    let mut p = Policy::default();
    for i in 0..0x7fff {
        p.partitions.push(crate::Partition { name: format!("p{i}"), ..crate::Partition::default() });
    }
    let e = resolve(&p, &fabric(), ResolveOptions::default());
    assert_eq!(
        e,
        Err(ResolveError::PkeysExhausted { name: "p32766".to_owned(), index: 32_766 }),
        "the first that does not fit"
    );
    p.partitions.pop();
    let start = std::time::Instant::now();
    let ok = crate::partitions_in_force(&p).expect("32,766 generated keys fit");
    assert_eq!((ok.len(), ok.last().map(|(b, _)| *b)), (32_767, Some(0x7ffe)));
    assert!(start.elapsed() < std::time::Duration::from_secs(5), "linear: {:?}", start.elapsed());
}

#[test]
fn capacity_overflow_is_a_warning_with_the_dropped_keys() {
    let mut f = fabric();
    f.ports[1].pkey_capacity = 2;
    let out = resolve(&policy("a=0x1:0x101;b=0x2:0x101;c=0x3:0x101;"), &f, ResolveOptions::default()).expect("ok");
    assert_eq!(out.ports[&CA1], keys(&[0x7fff, 0x0001]));
    assert_eq!(
        out.warnings,
        vec![ResolveWarning::TableOverflow { port: CA1, capacity: 2, dropped: keys(&[0x0002, 0x0003]) }]
    );
}

#[test]
fn enforcement_copies_ca_and_router_keys_within_capacity() {
    let text = "a=0x1:0x101;b=0x2:0x101;c=0x3:0x101;d=0x4:0x101;e=0x5:0x300=full;";
    let opts = ResolveOptions { enforcement: true, ..ResolveOptions::default() };
    let out = resolve(&policy(text), &fabric(), opts).expect("resolves");
    assert_eq!(out.switch_ports[&(SW, PortNum(3))], keys(&[0x7fff]));
    assert_eq!(out.switch_ports[&(SW, PortNum(4))], keys(&[0x7fff, 0x8005]));
    assert!(!out.switch_ports.contains_key(&(SW, PortNum(2))), "5 keys exceed the cap of 4");
    assert!(!out.switch_ports.contains_key(&(SW, PortNum(0))), "switch end ports are not enforced");
    // The SM's port (on switch port 1) is in the default partition only, as a full member (as
    // OpenSM programs it): the policy names it nowhere else.
    assert_eq!(out.switch_ports[&(SW, PortNum(1))], keys(&[0xffff]));
    assert_eq!(out.ports[&SM], keys(&[0xffff]));
    assert_eq!(
        out.warnings,
        vec![ResolveWarning::EnforcementOverflow { switch: SW, port: PortNum(2), needed: 5, capacity: 4 },]
    );
    let off = resolve(&policy(text), &fabric(), ResolveOptions::default()).expect("resolves");
    assert!(off.switch_ports.is_empty());
}

#[test]
fn unknown_members_and_duplicate_ports() {
    let out = resolve(&policy("a=0x9 : 0x999;"), &fabric(), ResolveOptions::default()).expect("resolves");
    assert_eq!(out.warnings, vec![ResolveWarning::MemberNotInFabric { base: 9, guid: Guid(0x999) }]);
    let mut f = fabric();
    f.ports.push(f.ports[0]);
    assert_eq!(resolve(&Policy::default(), &f, ResolveOptions::default()), Err(ResolveError::DuplicatePort(SM)));
}

#[test]
fn the_sms_port_holds_what_the_policy_gives_it_plus_full_default() {
    // OpenSM's rule: full in the default partition (even where the policy makes ALL limited
    // there), otherwise only where the policy names SELF or its GUID.
    let text = "Default=0x7fff : ALL=limited ;\na=0x1 : SELF=limited ;\nb=0x2 : 0x101 ;\nc=0x3 : ALL=full ;";
    let out = resolve(&policy(text), &fabric(), ResolveOptions::default()).expect("resolves");
    assert_eq!(out.ports[&SM], keys(&[0xffff, 0x0001, 0x8003]));
    assert!(!out.ports[&SM].iter().any(|k| k.base() == 0x2), "not in b: the policy does not put it there");
}

#[test]
fn warnings_read_as_sentences_with_hex_guids() {
    let w = ResolveWarning::MemberNotInFabric { base: 0x0a01, guid: Guid(0x0002_c903_0000_1234) };
    assert_eq!(w.to_string(), "partition 0x0a01 names 0x0002c90300001234, which is not a port of the fabric");
    let w = ResolveWarning::TableOverflow { port: Guid(0x10), capacity: 2, dropped: keys(&[0x0002, 0x8003]) };
    assert_eq!(w.to_string(), "port 0x0000000000000010 holds 2 P_Keys; left out: 0x0002, 0x8003");
}

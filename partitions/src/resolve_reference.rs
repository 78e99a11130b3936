//! Test-only: the resolver as it was written first, over maps keyed by port GUID, kept as the
//! reference the resolver (which keeps its books by port position) must agree with on random
//! policies and fabrics: the same tables, enforcement tables, warnings in the same order, and
//! the same errors.

use std::collections::BTreeMap;

use ibsm_mad::{Guid, PKey, PortNum};
use proptest::prelude::*;

use super::*;

fn by_maps(policy: &Policy, fabric: &FabricPorts, opts: ResolveOptions) -> Result<PortPkeys, ResolveError> {
    let mut seen = std::collections::BTreeSet::new();
    for p in &fabric.ports {
        if !seen.insert(p.guid) {
            return Err(ResolveError::DuplicatePort(p.guid));
        }
    }
    let effective = partitions_in_force(policy)?;
    let mut out = PortPkeys {
        partitions: effective
            .iter()
            .map(|(base, p)| ResolvedPartition { name: p.name.clone(), base: *base, sl: p.flags.sl })
            .collect(),
        ..PortPkeys::default()
    };

    // Membership per port per base, and the indx0 base per port.
    let mut member: BTreeMap<Guid, BTreeMap<u16, Flags>> =
        fabric.ports.iter().map(|p| (p.guid, BTreeMap::new())).collect();
    let mut indx0: BTreeMap<Guid, u16> = BTreeMap::new();
    for (base, part) in &effective {
        for m in &part.members {
            let matched: Vec<Guid> = fabric.ports.iter().filter(|p| matches(m, p)).map(|p| p.guid).collect();
            if let (MemberSpec::PortGuid(g), true) = (m.who, matched.is_empty()) {
                out.warnings.push(ResolveWarning::MemberNotInFabric { base: *base, guid: g });
            }
            for guid in matched {
                let Some(table) = member.get_mut(&guid) else { continue };
                let f = table.entry(*base).or_default();
                apply(f, m.membership, opts.allow_both_pkeys);
                if part.indx0 {
                    match indx0.get(&guid) {
                        None => {
                            indx0.insert(guid, *base);
                        }
                        Some(&kept) if kept != *base => {
                            let w = ResolveWarning::Indx0Conflict { port: guid, kept, ignored: *base };
                            if !out.warnings.contains(&w) {
                                out.warnings.push(w);
                            }
                        }
                        Some(_) => {}
                    }
                }
            }
        }
    }
    // The SM's port is a full member of the default partition, through which every port
    // reaches the SA, and of what the policy gives it (`SELF`, its GUID), no more: OpenSM's
    // rule. The policy decides which other partitions the SM's host is in.
    for p in fabric.ports.iter().filter(|p| p.is_sm) {
        let Some(table) = member.get_mut(&p.guid) else { continue };
        table.entry(DEFAULT_PKEY_BASE).or_default().full = true;
    }

    for p in &fabric.ports {
        let flags = member.remove(&p.guid).unwrap_or_default();
        let first = indx0.get(&p.guid).copied().unwrap_or(DEFAULT_PKEY_BASE);
        let mut table = Vec::new();
        // Both keys of one partition (`allow_both_pkeys`): the limited first, as OpenSM.
        let entries = |base: u16, f: Flags, table: &mut Vec<PKey>| {
            if f.limited && (opts.allow_both_pkeys || !f.full) {
                table.push(PKey::new(base, false));
            }
            if f.full {
                table.push(PKey::new(base, true));
            }
        };
        if let Some(f) = flags.get(&first) {
            entries(first, *f, &mut table);
        }
        for (base, f) in flags.iter().filter(|(b, _)| **b != first) {
            entries(*base, *f, &mut table);
        }
        let capacity = usize::from(p.pkey_capacity);
        if table.len() > capacity {
            let dropped = table.split_off(capacity);
            out.warnings.push(ResolveWarning::TableOverflow { port: p.guid, capacity: p.pkey_capacity, dropped });
        }
        out.ports.insert(p.guid, table);
    }

    if opts.enforcement {
        enforcement_by_maps(fabric, &mut out);
    }
    Ok(out)
}

/// Fills the switch-port enforcement tables from the CA and router ports' tables.
fn enforcement_by_maps(fabric: &FabricPorts, out: &mut PortPkeys) {
    let mut caps: BTreeMap<(Guid, PortNum), u16> = BTreeMap::new();
    for p in fabric.ports.iter().filter(|p| p.kind != NodeKind::Switch) {
        let Some(peer) = p.peer else { continue };
        let key = (peer.switch, peer.port);
        let cap = caps.entry(key).or_insert(peer.enforce_cap);
        *cap = (*cap).min(peer.enforce_cap);
        let table = out.switch_ports.entry(key).or_default();
        let keys = out.ports.get(&p.guid).map_or(&[][..], Vec::as_slice);
        for k in keys {
            // A port holding both keys of a partition: its switch port holds the full one (OpenSM).
            let has_full = || keys.contains(&PKey::new(k.base(), true));
            if !table.contains(k) && (k.is_full() || !has_full()) {
                table.push(*k);
            }
        }
    }
    for (key, cap) in caps {
        let needed = out.switch_ports.get(&key).map_or(0, Vec::len);
        if needed > usize::from(cap) {
            out.switch_ports.remove(&key);
            out.warnings.push(ResolveWarning::EnforcementOverflow {
                switch: key.0,
                port: key.1,
                needed,
                capacity: cap,
            });
        }
    }
}

/// Members naming GUIDs 1 to 12, which the fabric's ports draw from too.
fn member() -> impl Strategy<Value = Member> {
    crate::proptests::member_of(1u64..=12)
}

/// Policies with repeated keys, keyless partitions, several indx0 partitions and the default
/// partition named again.
fn policy() -> impl Strategy<Value = Policy> {
    let part = (
        prop_oneof![Just("a"), Just("b"), Just("Default"), Just("")],
        proptest::option::of(prop_oneof![Just(0x7fffu16), 1u16..6]),
        any::<bool>(),
        crate::proptests::membership(),
        proptest::collection::vec(member(), 0..5),
    );
    proptest::collection::vec(part, 0..5).prop_map(|parts| Policy {
        partitions: parts
            .into_iter()
            .map(|(name, pkey, indx0, defmember, members)| Partition {
                name: name.to_owned(),
                pkey,
                indx0,
                defmember,
                members,
                ..Partition::default()
            })
            .collect(),
    })
}

/// End ports with GUIDs 1 to 14 (now and then one twice), small capacities, and CA and router
/// ports on switch ports of two switches, several on one switch port now and then.
fn fabric() -> impl Strategy<Value = FabricPorts> {
    let port = (
        1u64..=14,
        prop_oneof![Just(NodeKind::Ca), Just(NodeKind::Switch), Just(NodeKind::Router)],
        proptest::bool::weighted(0.15),
        0u16..5,
        proptest::option::of((100u64..=101, 1u8..=4, 0u16..4)),
    );
    proptest::collection::vec(port, 0..14).prop_map(|ports| FabricPorts {
        ports: ports
            .into_iter()
            .map(|(g, kind, is_sm, pkey_capacity, peer)| EndPort {
                guid: Guid(g),
                kind,
                is_sm,
                pkey_capacity,
                peer: peer.map(|(s, p, c)| SwitchPeer { switch: Guid(s), port: PortNum(p), enforce_cap: c }),
            })
            .collect(),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn resolve_by_port_position_agrees_with_the_maps_by_guid(
        policy in policy(),
        fabric in fabric(),
        allow_both_pkeys in any::<bool>(),
        enforcement in any::<bool>(),
    ) {
        let opts = ResolveOptions { allow_both_pkeys, enforcement };
        prop_assert_eq!(resolve(&policy, &fabric, opts), by_maps(&policy, &fabric, opts));
    }
}

#[test]
fn the_reference_sees_warnings_and_errors_the_property_compares() {
    // A fabric and policy of the generators' kind that gives every warning, so that the
    // property compares more than empty lists.
    let ca = |g: u64, cap: u16, sw: u8| EndPort {
        guid: Guid(g),
        kind: NodeKind::Ca,
        is_sm: g == 1,
        pkey_capacity: cap,
        peer: Some(SwitchPeer { switch: Guid(100), port: PortNum(sw), enforce_cap: 1 }),
    };
    let fabric = FabricPorts { ports: vec![ca(1, 4, 1), ca(2, 1, 2), ca(3, 4, 2)] };
    let member = |g: u64| Member { who: MemberSpec::PortGuid(Guid(g)), membership: Membership::Full };
    let part = |pkey: u16, members: Vec<Member>| Partition {
        name: format!("p{pkey}"),
        pkey: Some(pkey),
        indx0: true,
        members,
        ..Partition::default()
    };
    let policy = Policy { partitions: vec![part(1, vec![member(2), member(9)]), part(2, vec![member(2)])] };
    let opts = ResolveOptions { allow_both_pkeys: false, enforcement: true };
    let r = by_maps(&policy, &fabric, opts).unwrap();
    let kinds: Vec<std::mem::Discriminant<ResolveWarning>> = r.warnings.iter().map(std::mem::discriminant).collect();
    for w in [
        ResolveWarning::MemberNotInFabric { base: 0, guid: Guid(0) },
        ResolveWarning::Indx0Conflict { port: Guid(0), kept: 0, ignored: 0 },
        ResolveWarning::TableOverflow { port: Guid(0), capacity: 0, dropped: Vec::new() },
        ResolveWarning::EnforcementOverflow { switch: Guid(0), port: PortNum(0), needed: 0, capacity: 0 },
    ] {
        assert!(kinds.contains(&std::mem::discriminant(&w)), "{w:?} in {:?}", r.warnings);
    }
    assert_eq!(resolve(&policy, &fabric, opts), Ok(r));
    let twice = FabricPorts { ports: vec![ca(2, 4, 1), ca(1, 4, 1), ca(2, 4, 1), ca(1, 4, 1)] };
    assert_eq!(by_maps(&policy, &twice, opts), Err(ResolveError::DuplicatePort(Guid(2))));
    assert_eq!(resolve(&policy, &twice, opts), Err(ResolveError::DuplicatePort(Guid(2))));
}

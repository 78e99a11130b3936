//! The resolver: from a [`Policy`] and the fabric's end ports to each port's ordered P_Key
//! table, and optionally to switch-port enforcement tables.
//!
//! Rules, in order:
//! 1. The default partition (`0x7fff`, "Default") always exists with `ALL=limited, SELF=full`
//!    (the SM's own port a full member of it, whatever the policy says, as OpenSM programs it;
//!    of the other partitions only where the policy names it);
//!    a policy definition of `0x7fff` (or named `Default` without a P_Key) only adds to it, as in
//!    OpenSM. [`Policy::no_file`] is the policy to pass when there is no file at all.
//! 2. Repeated P_Keys merge (first name wins); a partition without a P_Key joins an earlier one of
//!    the same non-empty name, else gets the lowest base `>= 1` that no partition of the policy
//!    names explicitly (unlike OpenSM, a generated key never collides with a later explicit one);
//!    none left is [`ResolveError::PkeysExhausted`]. The readers warn about repeated P_Keys
//!    ([`crate::PolicyWarning`]); the resolver merges silently.
//! 3. Members apply in order, and a port's last entry in a partition wins (`full` after
//!    `limited` gives the full key, `limited` after `full` the limited one), as in OpenSM.
//!    `both` means full without `allow_both_pkeys`; with it, two entries, the limited key first
//!    (OpenSM's order).
//! 4. Table order: the `indx0` partition's key(s) at index 0 (first such partition wins, later
//!    ones are a [`ResolveWarning::Indx0Conflict`]), else the default partition's; then the rest
//!    by ascending base, full before limited. Entries past the port's capacity are dropped with a
//!    [`ResolveWarning::TableOverflow`].
//! 5. Enforcement (when asked): each switch port whose peer is a CA or router end port gets that
//!    port's keys (a union if several ports claim it; of a port's two keys of one partition,
//!    the full one alone, as OpenSM). Over the switch's enforcement capacity the
//!    table is withheld, i.e. enforcement is off there, with a [`ResolveWarning::EnforcementOverflow`].
//!
//! The output depends only on the inputs' order and content: no hashing order, no clock.

use std::collections::BTreeMap;

use ibsm_mad::{Guid, PKey, PortNum};

use crate::error::ResolveError;
use crate::model::{DEFAULT_PARTITION_NAME, DEFAULT_PKEY_BASE, Member, MemberSpec, Membership, Partition, Policy};

/// Node type of an end port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// Channel adapter.
    Ca,
    /// Switch (its end port is port 0).
    Switch,
    /// Router.
    Router,
}

/// The switch port a CA or router end port is cabled to, for enforcement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwitchPeer {
    /// Switch node GUID.
    pub switch: Guid,
    /// Switch port number.
    pub port: PortNum,
    /// The switch's enforcement capacity (SwitchInfo PartitionEnforcementCap).
    pub enforce_cap: u16,
}

/// One end port of the fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndPort {
    /// Port GUID.
    pub guid: Guid,
    /// Node type.
    pub kind: NodeKind,
    /// Whether this is the SM's own port (`SELF`).
    pub is_sm: bool,
    /// P_Key table capacity (NodeInfo PartitionCap).
    pub pkey_capacity: u16,
    /// The switch port it is cabled to, if known (CAs and routers).
    pub peer: Option<SwitchPeer>,
}

/// The fabric's end ports, a plain list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FabricPorts {
    /// End ports, each GUID once.
    pub ports: Vec<EndPort>,
}

/// Resolver switches, all off by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResolveOptions {
    /// Let a port hold both the full and the limited key of one partition (OpenSM `allow_both_pkeys`).
    pub allow_both_pkeys: bool,
    /// Compute switch-port enforcement tables.
    pub enforcement: bool,
}

/// A partition as resolved: its final name, P_Key base and `sl=`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPartition {
    /// First name given.
    pub name: String,
    /// 15-bit base, explicit or generated.
    pub base: u16,
    /// Its `sl=`, a QoS setting (OpenSM applies it only with QoS on).
    pub sl: Option<u8>,
}

/// Something the resolver had to give up on, reported rather than hidden.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolveWarning {
    /// A port needs more keys than its table holds; the tail was dropped.
    TableOverflow {
        /// The port.
        port: Guid,
        /// Its capacity.
        capacity: u16,
        /// The keys left out.
        dropped: Vec<PKey>,
    },
    /// A switch port's enforcement table would exceed the switch's capacity; none is set.
    EnforcementOverflow {
        /// Switch node GUID.
        switch: Guid,
        /// Switch port.
        port: PortNum,
        /// Keys needed.
        needed: usize,
        /// Capacity.
        capacity: u16,
    },
    /// A port is a member of several `indx0` partitions; only the first is pinned.
    Indx0Conflict {
        /// The port.
        port: Guid,
        /// The base pinned at index 0.
        kept: u16,
        /// The base that was not.
        ignored: u16,
    },
    /// A member GUID that is not among the fabric's end ports.
    MemberNotInFabric {
        /// The partition's base.
        base: u16,
        /// The GUID.
        guid: Guid,
    },
}

impl std::fmt::Display for ResolveWarning {
    /// A sentence for the log, GUIDs and P_Keys in hex.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResolveWarning::TableOverflow { port, capacity, dropped } => {
                let keys: Vec<String> = dropped.iter().map(ToString::to_string).collect();
                write!(f, "port {port} holds {capacity} P_Keys; left out: {}", keys.join(", "))
            }
            ResolveWarning::EnforcementOverflow { switch, port, needed, capacity } => write!(
                f,
                "switch {switch} port {port} would need {needed} P_Keys to enforce, its capacity is {capacity}: not enforced there"
            ),
            ResolveWarning::Indx0Conflict { port, kept, ignored } => {
                write!(f, "port {port} is in two indx0 partitions: 0x{kept:04x} kept at index 0, 0x{ignored:04x} not")
            }
            ResolveWarning::MemberNotInFabric { base, guid } => {
                write!(f, "partition 0x{base:04x} names {guid}, which is not a port of the fabric")
            }
        }
    }
}

/// The resolver's output.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PortPkeys {
    /// Partitions in resolution order (the default partition first).
    pub partitions: Vec<ResolvedPartition>,
    /// Each end port's P_Key table, index 0 first. Ports in no partition have an empty table.
    pub ports: BTreeMap<Guid, Vec<PKey>>,
    /// Enforcement tables by (switch GUID, port), when asked.
    pub switch_ports: BTreeMap<(Guid, PortNum), Vec<PKey>>,
    /// Everything that could not be honoured.
    pub warnings: Vec<ResolveWarning>,
}

/// Per-port membership flags of one partition.
#[derive(Debug, Clone, Copy, Default)]
struct Flags {
    full: bool,
    limited: bool,
}

/// Resolves a policy against the fabric's end ports.
pub fn resolve(policy: &Policy, fabric: &FabricPorts, opts: ResolveOptions) -> Result<PortPkeys, ResolveError> {
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
        enforcement(fabric, &mut out);
    }
    Ok(out)
}

/// Fills the switch-port enforcement tables from the CA and router ports' tables.
fn enforcement(fabric: &FabricPorts, out: &mut PortPkeys) {
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

/// The partitions in force: the implicit default partition plus the policy's, merged (rule 2
/// of the module doc), each with its 15-bit base, in resolution order. Linear in the number of
/// partitions: the bases in use are a bitmap of the whole P_Key space, and earlier partitions
/// are found by base and by name through indexes.
///
/// # Errors
/// [`ResolveError::BadPkey`] for a base outside `1..=0x7fff`; [`ResolveError::PkeysExhausted`]
/// naming the first partition (and its index in the policy) for which no base is left.
pub fn partitions_in_force(policy: &Policy) -> Result<Vec<(u16, Partition)>, ResolveError> {
    const SPACE: usize = DEFAULT_PKEY_BASE as usize + 1;
    // Every base some partition of the policy names explicitly, and the default one.
    let mut taken = vec![false; SPACE];
    taken[usize::from(DEFAULT_PKEY_BASE)] = true;
    for p in &policy.partitions {
        if let Some(k) = p.pkey.filter(|&k| k != 0 && k <= DEFAULT_PKEY_BASE) {
            taken[usize::from(k)] = true;
        }
    }
    let mut out = vec![(
        DEFAULT_PKEY_BASE,
        Partition {
            name: DEFAULT_PARTITION_NAME.to_owned(),
            pkey: Some(DEFAULT_PKEY_BASE),
            members: vec![
                Member { who: MemberSpec::All, membership: Membership::Limited },
                Member { who: MemberSpec::SelfPort, membership: Membership::Full },
            ],
            ..Partition::default()
        },
    )];
    // Where each base and each (first) name sits in `out`.
    let mut by_base: Vec<Option<usize>> = vec![None; SPACE];
    by_base[usize::from(DEFAULT_PKEY_BASE)] = Some(0);
    let mut by_name: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    by_name.insert(DEFAULT_PARTITION_NAME.to_owned(), 0);
    let mut next: u16 = 1;
    for (index, p) in policy.partitions.iter().enumerate() {
        let target = match p.pkey {
            Some(k) if k == 0 || k > DEFAULT_PKEY_BASE => {
                return Err(ResolveError::BadPkey { name: p.name.clone(), pkey: k });
            }
            Some(k) => by_base[usize::from(k)].ok_or(Some(k)),
            None if !p.name.is_empty() => by_name.get(&p.name).copied().ok_or(None),
            None => Err(None),
        };
        let base = match target {
            Ok(t) => {
                if let Some((_, existing)) = out.get_mut(t) {
                    existing.merge(p.clone());
                }
                continue;
            }
            Err(Some(k)) => k,
            Err(None) => {
                // The lowest base no partition names explicitly and none was given yet; `next`
                // only moves up, so the whole loop costs one pass over the space.
                while next < DEFAULT_PKEY_BASE && taken[usize::from(next)] {
                    next += 1;
                }
                if next >= DEFAULT_PKEY_BASE {
                    return Err(ResolveError::PkeysExhausted { name: p.name.clone(), index });
                }
                taken[usize::from(next)] = true;
                next
            }
        };
        by_base[usize::from(base)] = Some(out.len());
        if !p.name.is_empty() {
            by_name.entry(p.name.clone()).or_insert(out.len());
        }
        out.push((base, p.clone()));
    }
    Ok(out)
}

fn matches(m: &Member, p: &EndPort) -> bool {
    match m.who {
        MemberSpec::PortGuid(g) => g == p.guid,
        MemberSpec::All => true,
        MemberSpec::AllCas => p.kind == NodeKind::Ca,
        MemberSpec::AllSwitches => p.kind == NodeKind::Switch,
        MemberSpec::AllRouters => p.kind == NodeKind::Router,
        MemberSpec::SelfPort => p.is_sm,
    }
}

/// A member entry for a port replaces what earlier entries gave it in that partition, as in
/// OpenSM (`osm_prtn_add_port` takes the port out of both tables first, or with
/// `allow_both_pkeys` the other one): the last entry wins.
fn apply(f: &mut Flags, m: Membership, allow_both: bool) {
    *f = match m {
        Membership::Full => Flags { full: true, limited: false },
        Membership::Limited => Flags { full: false, limited: true },
        Membership::Both => Flags { full: true, limited: allow_both },
    };
}

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
    // The ports by GUID (the duplicate check, and a GUID member's port found without a scan);
    // everything else is kept by the port's position in `fabric.ports`, not in maps by GUID.
    let mut by_guid: Vec<(Guid, usize)> = fabric.ports.iter().enumerate().map(|(i, p)| (p.guid, i)).collect();
    by_guid.sort_unstable();
    if by_guid.windows(2).any(|w| w[0].0 == w[1].0) {
        // The first port (in the fabric's order) whose GUID an earlier one has.
        let mut seen = std::collections::BTreeSet::new();
        if let Some(p) = fabric.ports.iter().find(|p| !seen.insert(p.guid)) {
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

    // The member entries that reach each port, in the order they apply (port position, base,
    // entry; `None`: the SM's port made a full member), and the indx0 base per port.
    let mut entries: Vec<(u32, u16, Option<Membership>)> = Vec::new();
    let mut indx0: Vec<Option<u16>> = vec![None; fabric.ports.len()];
    let mut matched: Vec<usize> = Vec::new();
    for (base, part) in &effective {
        for m in &part.members {
            matched.clear();
            if let MemberSpec::PortGuid(g) = m.who {
                let at = by_guid.partition_point(|(pg, _)| *pg < g);
                matched.extend(by_guid.get(at).filter(|(pg, _)| *pg == g).map(|(_, i)| *i));
                if matched.is_empty() {
                    out.warnings.push(ResolveWarning::MemberNotInFabric { base: *base, guid: g });
                }
            } else {
                matched.extend(fabric.ports.iter().enumerate().filter(|(_, p)| matches(m, p)).map(|(i, _)| i));
            }
            for &i in &matched {
                let Ok(pos) = u32::try_from(i) else { continue };
                entries.push((pos, *base, Some(m.membership)));
                if part.indx0 {
                    match indx0[i] {
                        None => indx0[i] = Some(*base),
                        Some(kept) if kept != *base => {
                            let w = ResolveWarning::Indx0Conflict { port: fabric.ports[i].guid, kept, ignored: *base };
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
    for (i, _) in fabric.ports.iter().enumerate().filter(|(_, p)| p.is_sm) {
        if let Ok(pos) = u32::try_from(i) {
            entries.push((pos, DEFAULT_PKEY_BASE, None));
        }
    }
    // By port, then base; a stable sort keeps each (port, base)'s entries in the order they
    // apply.
    entries.sort_by_key(|&(pos, base, _)| (pos, base));

    let mut tables: Vec<Vec<PKey>> = Vec::with_capacity(fabric.ports.len());
    let mut rest = entries.as_slice();
    for (i, p) in fabric.ports.iter().enumerate() {
        let n = rest.iter().take_while(|(pos, _, _)| usize::try_from(*pos).is_ok_and(|pos| pos == i)).count();
        let (mine, after) = rest.split_at(n);
        rest = after;
        let mut table = port_table(mine, indx0[i].unwrap_or(DEFAULT_PKEY_BASE), opts.allow_both_pkeys);
        let capacity = usize::from(p.pkey_capacity);
        if table.len() > capacity {
            let dropped = table.split_off(capacity);
            out.warnings.push(ResolveWarning::TableOverflow { port: p.guid, capacity: p.pkey_capacity, dropped });
        }
        tables.push(table);
    }

    if opts.enforcement {
        enforcement(fabric, &tables, &mut out);
    }
    // Built in GUID order at once, not inserted one by one.
    out.ports = by_guid.iter().map(|&(g, i)| (g, std::mem::take(&mut tables[i]))).collect();
    Ok(out)
}

/// One port's P_Key table from its member entries (`mine`, by base, each base's in the order
/// they apply; `None`: the SM's port made a full member), `first`'s key(s) first, then by
/// ascending base.
fn port_table(mine: &[(u32, u16, Option<Membership>)], first: u16, allow_both_pkeys: bool) -> Vec<PKey> {
    // The port's flags per base, ascending.
    let mut flags: Vec<(u16, Flags)> = Vec::new();
    for &(_, base, entry) in mine {
        if flags.last().is_none_or(|(b, _)| *b != base) {
            flags.push((base, Flags::default()));
        }
        let Some((_, f)) = flags.last_mut() else { continue };
        match entry {
            Some(membership) => apply(f, membership, allow_both_pkeys),
            None => f.full = true,
        }
    }
    let mut table = Vec::new();
    // Both keys of one partition (`allow_both_pkeys`): the limited first, as OpenSM.
    let entries = |base: u16, f: Flags, table: &mut Vec<PKey>| {
        if f.limited && (allow_both_pkeys || !f.full) {
            table.push(PKey::new(base, false));
        }
        if f.full {
            table.push(PKey::new(base, true));
        }
    };
    if let Some((_, f)) = flags.iter().find(|(b, _)| *b == first) {
        entries(first, *f, &mut table);
    }
    for (base, f) in flags.iter().filter(|(b, _)| *b != first) {
        entries(*base, *f, &mut table);
    }
    table
}

/// Fills the switch-port enforcement tables from the CA and router ports' tables (`tables`,
/// by the ports' positions in `fabric.ports`).
fn enforcement(fabric: &FabricPorts, tables: &[Vec<PKey>], out: &mut PortPkeys) {
    // Each switch port's claims (its capacity as each peer reports it, the peer's position), by
    // switch port; a stable sort keeps each one's claims in the fabric's order.
    let mut claims: Vec<((Guid, PortNum), u16, usize)> = fabric
        .ports
        .iter()
        .enumerate()
        .filter(|(_, p)| p.kind != NodeKind::Switch)
        .filter_map(|(i, p)| p.peer.map(|peer| ((peer.switch, peer.port), peer.enforce_cap, i)))
        .collect();
    claims.sort_by_key(|c| c.0);
    let mut switch_ports = Vec::new();
    for group in claims.chunk_by(|a, b| a.0 == b.0) {
        let Some(&(key, _, _)) = group.first() else { continue };
        let cap = group.iter().map(|c| c.1).min().unwrap_or(0);
        let mut table: Vec<PKey> = Vec::new();
        for &(_, _, i) in group {
            let keys = tables.get(i).map_or(&[][..], Vec::as_slice);
            for k in keys {
                // A port holding both keys of a partition: its switch port holds the full one (OpenSM).
                let has_full = || keys.contains(&PKey::new(k.base(), true));
                if !table.contains(k) && (k.is_full() || !has_full()) {
                    table.push(*k);
                }
            }
        }
        let needed = table.len();
        if needed > usize::from(cap) {
            out.warnings.push(ResolveWarning::EnforcementOverflow {
                switch: key.0,
                port: key.1,
                needed,
                capacity: cap,
            });
        } else {
            switch_ports.push((key, table));
        }
    }
    // In key order already: built at once.
    out.switch_ports = switch_ports.into_iter().collect();
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

#[cfg(test)]
#[path = "resolve_reference.rs"]
mod reference;

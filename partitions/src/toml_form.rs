//! Our TOML form of the partition policy, read with [`policy_from_toml`] and written with
//! [`policy_to_toml`].
//!
//! The schema is defined by private serde types here, never by the model, so the model can
//! change without breaking operators' files. Keys are kebab-case and unknown keys are errors.
//!
//! ```toml
//! [[partition]]
//! name = "storage"
//! pkey = 0x0080              # omit to have one generated
//! ipoib = true
//! mtu = 5                    # IBA enum: 5 = 4096 bytes
//! default-membership = "limited"
//! members = [
//!     { port = "0x0002c90300001234", membership = "full" },
//!     { port = "all-cas" },  # membership omitted: default-membership
//! ]
//! [[partition.mcast-group]]
//! mgid = "ff12:401b::1"
//! sl = 1
//! ```
//!
//! Port names: a GUID (`0x` hex), `all`, `all-cas`, `all-switches`, `all-routers`, `self`.

use serde::{Deserialize, Serialize};

use crate::conf::number;
use crate::error::{Place, PolicyWarning, ResolveError, TomlError};
use crate::model::{
    DEFAULT_PARTITION_NAME, DEFAULT_PKEY_BASE, GroupFlag, McastFlags, McastGroup, Member, MemberSpec, Membership,
    Partition, Policy, format_mgid, is_multicast, parse_mgid, set_flag,
};
use crate::resolve::partitions_in_force;
use ibsm_mad::Guid;

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct PolicyToml {
    #[serde(default, rename = "partition", skip_serializing_if = "Vec::is_empty")]
    partitions: Vec<PartitionToml>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct PartitionToml {
    #[serde(default)]
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pkey: Option<u16>,
    #[serde(default, skip_serializing_if = "is_false")]
    indx0: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    ipoib: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rate: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mtu: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sl: Option<u8>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    scope: Vec<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    qkey: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tclass: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    flow_label: Option<u32>,
    #[serde(default)]
    default_membership: MembershipToml,
    #[serde(default)]
    members: Vec<MemberToml>,
    #[serde(default, rename = "mcast-group", skip_serializing_if = "Vec::is_empty")]
    mcast_groups: Vec<GroupToml>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct MemberToml {
    port: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    membership: Option<MembershipToml>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct GroupToml {
    mgid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rate: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mtu: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sl: Option<u8>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    scope: Vec<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    qkey: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tclass: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    flow_label: Option<u32>,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum MembershipToml {
    Full,
    #[default]
    Limited,
    Both,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_false(b: &bool) -> bool {
    !*b
}

impl From<MembershipToml> for Membership {
    fn from(m: MembershipToml) -> Membership {
        match m {
            MembershipToml::Full => Membership::Full,
            MembershipToml::Limited => Membership::Limited,
            MembershipToml::Both => Membership::Both,
        }
    }
}

impl From<Membership> for MembershipToml {
    fn from(m: Membership) -> MembershipToml {
        match m {
            Membership::Full => MembershipToml::Full,
            Membership::Limited => MembershipToml::Limited,
            Membership::Both => MembershipToml::Both,
        }
    }
}

/// The seven flag values as the TOML tables hold them.
type FlagFields = (Option<u8>, Option<u8>, Option<u8>, Vec<u8>, Option<u32>, Option<u8>, Option<u32>);

/// Checks flag values with the same rules as partitions.conf.
fn flags_from(fields: FlagFields) -> Result<McastFlags, String> {
    let (rate, mtu, sl, scope, qkey, tclass, flow_label) = fields;
    let mut f = McastFlags::default();
    let pairs = [
        (GroupFlag::Rate, rate.map(u64::from)),
        (GroupFlag::Mtu, mtu.map(u64::from)),
        (GroupFlag::Sl, sl.map(u64::from)),
        (GroupFlag::QKey, qkey.map(u64::from)),
        (GroupFlag::TClass, tclass.map(u64::from)),
        (GroupFlag::FlowLabel, flow_label.map(u64::from)),
    ];
    for (g, v) in pairs {
        if let Some(v) = v {
            set_flag(&mut f, g, v).map_err(|e| e.to_string())?;
        }
    }
    for s in scope {
        set_flag(&mut f, GroupFlag::Scope, u64::from(s)).map_err(|e| e.to_string())?;
    }
    Ok(f)
}

fn flags_to(f: &McastFlags) -> FlagFields {
    (f.rate, f.mtu, f.sl, f.scope.clone(), f.qkey, f.tclass, f.flow_label)
}

fn member_from(m: &MemberToml, default: Membership) -> Result<Member, String> {
    let who = match m.port.as_str() {
        "all" => MemberSpec::All,
        "all-cas" => MemberSpec::AllCas,
        "all-switches" => MemberSpec::AllSwitches,
        "all-routers" => MemberSpec::AllRouters,
        "self" => MemberSpec::SelfPort,
        text => match number(text) {
            Ok(g) if g != 0 => MemberSpec::PortGuid(Guid(g)),
            _ => {
                return Err(format!(
                    "bad port {text:?}: expected a non-zero GUID or all, all-cas, all-switches, all-routers, self"
                ));
            }
        },
    };
    Ok(Member { who, membership: m.membership.map_or(default, Membership::from) })
}

fn member_to(m: &Member) -> MemberToml {
    let port = match m.who {
        MemberSpec::PortGuid(g) => g.to_string(),
        MemberSpec::All => "all".to_owned(),
        MemberSpec::AllCas => "all-cas".to_owned(),
        MemberSpec::AllSwitches => "all-switches".to_owned(),
        MemberSpec::AllRouters => "all-routers".to_owned(),
        MemberSpec::SelfPort => "self".to_owned(),
    };
    MemberToml { port, membership: Some(m.membership.into()) }
}

fn partition_from(p: PartitionToml) -> Result<Partition, String> {
    if let Some(k) = p.pkey
        && (k == 0 || k > DEFAULT_PKEY_BASE)
    {
        return Err(format!("pkey {k:#06x} is outside 1..=0x7fff (write the 15-bit base; membership is per member)"));
    }
    let defmember = Membership::from(p.default_membership);
    let flags = flags_from((p.rate, p.mtu, p.sl, p.scope, p.qkey, p.tclass, p.flow_label))?;
    let members = p.members.iter().map(|m| member_from(m, defmember)).collect::<Result<Vec<_>, _>>()?;
    let mut mcast_groups = Vec::with_capacity(p.mcast_groups.len());
    for g in p.mcast_groups {
        let mgid = parse_mgid(&g.mgid).ok_or_else(|| format!("bad mgid {:?}: expected IPv6 text", g.mgid))?;
        if !is_multicast(mgid) {
            return Err(format!("mgid {} is not multicast", g.mgid));
        }
        let flags = flags_from((g.rate, g.mtu, g.sl, g.scope, g.qkey, g.tclass, g.flow_label))
            .map_err(|e| format!("mgid {}: {e}", g.mgid))?;
        mcast_groups.push(McastGroup { mgid, flags });
    }
    Ok(Partition {
        name: p.name,
        pkey: p.pkey,
        indx0: p.indx0,
        ipoib: p.ipoib,
        flags,
        defmember,
        members,
        mcast_groups,
    })
}

fn partition_to(p: &Partition) -> PartitionToml {
    let (rate, mtu, sl, scope, qkey, tclass, flow_label) = flags_to(&p.flags);
    PartitionToml {
        name: p.name.clone(),
        pkey: p.pkey,
        indx0: p.indx0,
        ipoib: p.ipoib,
        rate,
        mtu,
        sl,
        scope,
        qkey,
        tclass,
        flow_label,
        default_membership: p.defmember.into(),
        members: p.members.iter().map(member_to).collect(),
        mcast_groups: p
            .mcast_groups
            .iter()
            .map(|g| {
                let (rate, mtu, sl, scope, qkey, tclass, flow_label) = flags_to(&g.flags);
                GroupToml { mgid: format_mgid(g.mgid), rate, mtu, sl, scope, qkey, tclass, flow_label }
            })
            .collect(),
    }
}

/// Reads a policy from our TOML form. Partitions are taken as written: the TOML form does not
/// merge repeated P_Keys (the resolver does, keeping the first name). The warnings of
/// [`policy_from_toml_with_warnings`] are dropped.
pub fn policy_from_toml(text: &str) -> Result<Policy, TomlError> {
    policy_from_toml_with_warnings(text).map(|(p, _)| p)
}

/// [`policy_from_toml`], with a [`PolicyWarning::DuplicatePkey`] for each table that repeats
/// an earlier one's P_Key (the resolver merges it into the first, whose name is kept). More
/// tables without a P_Key than the P_Key space holds is an error at the first that does not fit.
pub fn policy_from_toml_with_warnings(text: &str) -> Result<(Policy, Vec<PolicyWarning>), TomlError> {
    let raw: PolicyToml = toml::from_str(text).map_err(|e| TomlError::Syntax(e.to_string()))?;
    let mut partitions = Vec::with_capacity(raw.partitions.len());
    for (index, p) in raw.partitions.into_iter().enumerate() {
        let name = p.name.clone();
        partitions.push(partition_from(p).map_err(|reason| TomlError::Invalid { index, name, reason })?);
    }
    let policy = Policy { partitions };
    if let Err(ResolveError::PkeysExhausted { name, index }) = partitions_in_force(&policy) {
        let reason = ResolveError::PkeysExhausted { name: name.clone(), index }.to_string();
        return Err(TomlError::Invalid { index, name, reason });
    }
    let mut warnings = Vec::new();
    let mut first: std::collections::HashMap<u16, usize> = std::collections::HashMap::new();
    for (i, p) in policy.partitions.iter().enumerate() {
        let Some(k) = p.pkey else { continue };
        let kept = if k == DEFAULT_PKEY_BASE {
            (p.name != DEFAULT_PARTITION_NAME).then(|| (DEFAULT_PARTITION_NAME.to_owned(), None))
        } else if let Some(&f) = first.get(&k) {
            policy.partitions.get(f).map(|q| (q.name.clone(), Some(Place::Table(f))))
        } else {
            first.insert(k, i);
            None
        };
        if let Some((kept, kept_at)) = kept {
            warnings.push(PolicyWarning::DuplicatePkey {
                pkey: k,
                kept,
                kept_at,
                merged: p.name.clone(),
                merged_at: Place::Table(i),
            });
        }
    }
    Ok((policy, warnings))
}

/// Writes a policy in our TOML form; [`policy_from_toml`] reads it back unchanged.
pub fn policy_to_toml(policy: &Policy) -> Result<String, TomlError> {
    let raw = PolicyToml { partitions: policy.partitions.iter().map(partition_to).collect() };
    toml::to_string(&raw).map_err(|e| TomlError::Write(e.to_string()))
}

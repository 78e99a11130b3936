//! Writes a [`Policy`] back as partitions.conf text that [`crate::parse_partitions_conf`] reads
//! back to the same policy.
//!
//! Every member is written with its membership, so the output does not depend on `defmember`
//! (which is still written, to round-trip). Flags are written in a fixed order. Names that the
//! syntax cannot carry are refused with a [`RenderError`] rather than written ambiguously.

use core::fmt::Write as _;

use crate::error::RenderError;
use crate::model::{DEFAULT_PARTITION_NAME, DEFAULT_PKEY_BASE, McastFlags, MemberSpec, Policy, format_mgid};

/// Renders a policy as partitions.conf text, one statement per partition.
pub fn render_partitions_conf(policy: &Policy) -> Result<String, RenderError> {
    let mut out = String::new();
    for p in &policy.partitions {
        let bad_name = p.name.contains(['=', ',', ':', ';', '#', '\n', '\r'])
            || p.name.trim_matches([' ', '\t']) != p.name
            || (p.pkey.is_none() && p.name.starts_with(|c: char| c.is_ascii_digit()))
            || (p.pkey.is_none() && p.name == DEFAULT_PARTITION_NAME);
        if bad_name {
            return Err(RenderError::BadName(p.name.clone()));
        }
        out.push_str(&p.name);
        if let Some(k) = p.pkey {
            if k == 0 || k > DEFAULT_PKEY_BASE {
                return Err(RenderError::BadPkey { name: p.name.clone(), pkey: k });
            }
            let _ = write!(out, "=0x{k:04x}");
        }
        if p.indx0 {
            out.push_str(",indx0");
        }
        if p.ipoib {
            out.push_str(",ipoib");
        }
        write_flags(&mut out, &p.flags);
        let _ = writeln!(out, ",defmember={} :", p.defmember);
        for g in &p.mcast_groups {
            let _ = write!(out, "    mgid={}", format_mgid(g.mgid));
            write_flags(&mut out, &g.flags);
            out.push('\n');
        }
        out.push_str("    ");
        for (i, m) in p.members.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            match m.who {
                MemberSpec::PortGuid(g) => out.push_str(&g.to_string()),
                MemberSpec::All => out.push_str("ALL"),
                MemberSpec::AllCas => out.push_str("ALL_CAS"),
                MemberSpec::AllSwitches => out.push_str("ALL_SWITCHES"),
                MemberSpec::AllRouters => out.push_str("ALL_ROUTERS"),
                MemberSpec::SelfPort => out.push_str("SELF"),
            }
            let _ = write!(out, "={}", m.membership);
        }
        out.push_str(" ;\n");
    }
    Ok(out)
}

/// Appends `,flag=value` for every written flag, in a fixed order.
fn write_flags(out: &mut String, f: &McastFlags) {
    if let Some(v) = f.rate {
        let _ = write!(out, ",rate={v}");
    }
    if let Some(v) = f.mtu {
        let _ = write!(out, ",mtu={v}");
    }
    if let Some(v) = f.sl {
        let _ = write!(out, ",sl={v}");
    }
    for s in &f.scope {
        let _ = write!(out, ",scope={s}");
    }
    if let Some(v) = f.qkey {
        let _ = write!(out, ",Q_Key=0x{v:08x}");
    }
    if let Some(v) = f.tclass {
        let _ = write!(out, ",TClass={v}");
    }
    if let Some(v) = f.flow_label {
        let _ = write!(out, ",FlowLabel=0x{v:05x}");
    }
}

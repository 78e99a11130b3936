//! `ibsm partitions show` and `ibsm partitions convert`: read a partition policy (OpenSM's
//! `partitions.conf` grammar or ibsm's TOML form), print it resolved, or write it in the other
//! form.
//!
//! Owns the two commands; reading a policy file is [`load`]'s (the form is chosen by extension,
//! `.toml` or `.conf`, else by content; every error is `FILE:LINE:COL: reason`, all errors of a
//! file at once; warnings, printed on stderr by `show`, name the file and line). Parsing and resolution are the `ibsm-partitions` crate's.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use ibsm::daemon::partition_policy::{Form, load};
use ibsm_mad::records::Rate;
use ibsm_partitions::{
    DEFAULT_PARTITION_NAME, DEFAULT_PKEY_BASE, MemberSpec, Partition, Policy, mtu_bytes, partitions_in_force,
    policy_to_toml, render_partitions_conf,
};

/// `ibsm partitions ...`.
#[derive(Debug, Subcommand)]
pub enum PartitionsCommand {
    /// Print a policy as it resolves: each partition's P_Key (generated ones included), flags
    /// with their meaning, members, and multicast groups.
    Show {
        /// The policy file (partitions.conf grammar, or TOML for a `.toml` file).
        file: PathBuf,
    },
    /// Write a policy in the other form (partitions.conf to TOML, TOML to partitions.conf).
    Convert {
        /// The policy file.
        file: PathBuf,
        /// The form to write (default: the one the file is not in).
        #[arg(long, value_enum)]
        to: Option<Form>,
    },
}

/// Runs a `partitions` subcommand.
pub fn run(command: &PartitionsCommand) -> ExitCode {
    let result = match command {
        PartitionsCommand::Show { file } => load(file).and_then(|(p, _, warnings)| {
            for w in &warnings {
                eprintln!("warning: {w}");
            }
            show(&p).map_err(|e| format!("{}: {e}", file.display()))
        }),
        PartitionsCommand::Convert { file, to } => load(file).and_then(|(p, form, _)| {
            let to = to.unwrap_or(if form == Form::Conf { Form::Toml } else { Form::Conf });
            match to {
                Form::Conf => render_partitions_conf(&p).map_err(|e| format!("{}: {e}", file.display())),
                Form::Toml => policy_to_toml(&p).map_err(|e| format!("{}: {e}", file.display())),
            }
        }),
    };
    match result {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}

fn rate_name(code: u8) -> String {
    Rate::from_raw(code).mbps().map_or_else(|| "unknown".to_owned(), |m| format!("{} Gb/s", f64::from(m) / 1000.0))
}

fn who(m: MemberSpec) -> String {
    match m {
        MemberSpec::PortGuid(g) => format!("0x{:016x}", g.0),
        MemberSpec::All => "ALL".to_owned(),
        MemberSpec::AllCas => "ALL_CAS".to_owned(),
        MemberSpec::AllSwitches => "ALL_SWITCHES".to_owned(),
        MemberSpec::AllRouters => "ALL_ROUTERS".to_owned(),
        MemberSpec::SelfPort => "SELF".to_owned(),
    }
}

/// The policy as it resolves (P_Keys generated where the file gives none, repeated P_Keys
/// merged), one partition per block: P_Key, name, flags with OpenSM's numeric codes and their
/// meaning, members, groups. Linear in the size of the policy.
///
/// # Errors
/// A policy that cannot resolve (no P_Key left to generate one), with the reason.
pub fn show(policy: &Policy) -> Result<String, String> {
    let in_force = partitions_in_force(policy).map_err(|e| e.to_string())?;
    // The default partition as the file defines it (its definitions merged), if it does: shown
    // without the implicit members every policy gives it.
    let mut default: Option<Partition> = None;
    let is_default =
        |p: &&Partition| p.pkey == Some(DEFAULT_PKEY_BASE) || (p.pkey.is_none() && p.name == DEFAULT_PARTITION_NAME);
    for p in policy.partitions.iter().filter(is_default) {
        match &mut default {
            Some(d) => d.merge(p.clone()),
            None => default = Some(p.clone()),
        }
    }
    let mut out = String::new();
    let _ = writeln!(out, "{} partition(s)", in_force.len());
    for (base, merged) in &in_force {
        let p = if *base == DEFAULT_PKEY_BASE { default.as_ref() } else { Some(merged) };
        let _ = write!(out, "0x{base:04x} {:?}", merged.name);
        let Some(p) = p else {
            let _ = writeln!(out, " (implicit: ALL=limited, SELF=full)");
            continue;
        };
        let mut flags = Vec::new();
        if p.ipoib {
            flags.push("ipoib".to_owned());
        }
        if p.indx0 {
            flags.push("indx0".to_owned());
        }
        let f = &p.flags;
        if let Some(m) = f.mtu {
            flags.push(format!(
                "mtu={m} ({} bytes)",
                mtu_bytes(m).map_or_else(|| "unknown".to_owned(), |b| b.to_string())
            ));
        }
        if let Some(r) = f.rate {
            flags.push(format!("rate={r} ({})", rate_name(r)));
        }
        if let Some(sl) = f.sl {
            flags.push(format!("sl={sl}"));
        }
        for s in &f.scope {
            flags.push(format!("scope={s}"));
        }
        if let Some(q) = f.qkey {
            flags.push(format!("qkey=0x{q:08x}"));
        }
        let _ = writeln!(out, "{}{}", if flags.is_empty() { "" } else { " " }, flags.join(" "));
        let _ = writeln!(out, "  defmember={}", p.defmember);
        for m in &p.members {
            let _ = writeln!(out, "  {}={}", who(m.who), m.membership);
        }
        for g in &p.mcast_groups {
            let _ = writeln!(out, "  mgid=0x{:016x}{:016x}", g.mgid.prefix, g.mgid.guid.0);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn show_names_generated_keys_flags_and_members() {
        let p = ibsm_partitions::parse_partitions_conf(
            "Default=0x7fff, ipoib, mtu=4, rate=7 : ALL=full ;\nstorage : 0x0002000000000001=full, ALL=limited ;\n",
        )
        .unwrap();
        let text = show(&p).expect("resolves");
        assert!(text.contains("0x7fff \"Default\" ipoib mtu=4 (2048 bytes) rate=7 (40 Gb/s)"), "{text}");
        assert!(text.contains("0x0001 \"storage\""), "a generated P_Key: {text}");
        assert!(text.contains("  0x0002000000000001=full") && text.contains("  ALL=limited"), "{text}");
    }
}

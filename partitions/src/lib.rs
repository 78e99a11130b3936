//! `ibsm-partitions`: the partition policy of ibsm.
//!
//! It owns four things, all pure functions over text and plain data (no paths, no I/O, no
//! clock, no MADs):
//!
//! - the typed policy model ([`Policy`], [`Partition`], [`Member`], [`McastGroup`]);
//! - two front ends: OpenSM's `partitions.conf` ([`parse_partitions_conf`], written back by
//!   [`render_partitions_conf`]) and our TOML form ([`policy_from_toml`], [`policy_to_toml`]),
//!   each also with the [`PolicyWarning`]s of what a valid file merged (`*_with_warnings`);
//! - the resolver ([`resolve`]) from a policy and a list of fabric end ports to each port's
//!   ordered P_Key table, plus switch-port enforcement tables, and [`partitions_in_force`], the
//!   merged partitions with their final P_Keys (linear in the size of the policy);
//! - the multicast groups a policy pre-creates ([`policy_groups`]).
//!
//! Guarantees: parsing never panics on any input (property-tested and fuzzed, see
//! `partitions/fuzz/`); `parse_partitions_conf(render_partitions_conf(p)) == p` and the TOML round
//! trip hold for every representable policy; resolution is deterministic.

mod conf;
mod error;
mod groups;
mod model;
mod render;
mod resolve;
mod toml_form;

#[cfg(test)]
mod conf_tests;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod resolve_tests;

pub use conf::{parse_partitions_conf, parse_partitions_conf_with_warnings};
pub use error::{ParseError, ParseErrorKind, ParseErrors, Place, PolicyWarning, RenderError, ResolveError, TomlError};
pub use groups::{GroupSpec, IPOIB_QKEY, policy_groups};
pub use model::{
    DEFAULT_PARTITION_NAME, DEFAULT_PKEY_BASE, McastFlags, McastGroup, Member, MemberSpec, Membership, Partition,
    Policy, ValueError, mtu_bytes,
};
pub use render::render_partitions_conf;
pub use resolve::{
    EndPort, FabricPorts, NodeKind, PortPkeys, ResolveOptions, ResolveWarning, ResolvedPartition, SwitchPeer,
    partitions_in_force, resolve,
};
pub use toml_form::{policy_from_toml, policy_from_toml_with_warnings, policy_to_toml};

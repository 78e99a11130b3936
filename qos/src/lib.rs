//! `ibsm-qos`: the QoS policy of ibsm.
//!
//! It owns, all as pure functions over text and plain data (no paths, no I/O, no clock, no
//! MADs):
//!
//! - the typed model of OpenSM's `qos-policy.conf` ([`QosPolicy`]: port groups, qos-setup
//!   tables, QoS levels, match rules, the simplified `qos-ulps` rules) and its parser
//!   ([`parse_qos_policy`]), which refuses bad input with the line and the reason;
//! - OpenSM's simple QoS options ([`QosOptions`], per port class [`PortClass`]) with their TOML
//!   form and the values in force for a class ([`ClassConfig`]);
//! - matching a path query to its QoS level ([`QosPolicy::level_for`], [`PathQuery`]);
//! - resolution ([`resolve`]): options and a view of the fabric's ports to each port's
//!   OperationalVLs, VLHighLimit, VL arbitration blocks and SL2VL tables, as OpenSM sets them;
//! - QoS classes combined with a layered routing engine's layers ([`Classes`]): how many
//!   layers fit, each (class, layer)'s SL and VL, the layered SL2VL and arbitration tables.
//!
//! Guarantees: parsing never panics on any input (property-tested); resolution is
//! deterministic and total over any port view.

mod error;
mod layering;
mod matching;
mod model;
mod options;
mod parse;
mod resolve;
mod values;

#[cfg(test)]
mod parse_tests;

pub use error::{OptionError, ParseError};
pub use layering::Classes;
pub use matching::{Level, PathQuery, PortFacts};
pub use model::{
    DEFAULT_PKEY, GroupMember, ISER_DEFAULT_PORT, MatchRule, NodeTypeSel, PortGroup, PortSel, QosLevel, QosPolicy,
    QosSetup, RDS_DEFAULT_PORT, RDS_ISER_SERVICE_BASE, Range, SDP_SERVICE_BASE, Sl2VlScope, UlpMatch, UlpRule,
    VlArbScope, any_contains,
};
pub use options::{
    ClassConfig, ClassOptions, DEFAULT_HIGH_LIMIT, DEFAULT_MAX_VLS, DEFAULT_SL2VL, DEFAULT_VLARB_HIGH,
    DEFAULT_VLARB_LOW, PortClass, QosOptions,
};
pub use parse::{DEFAULT_LEVEL, parse_qos_policy};
pub use resolve::{NodeKind, NodeQos, NodeView, PortQos, PortView, encoding_for, resolve, vl_count};
pub use values::VLARB_ENTRIES;

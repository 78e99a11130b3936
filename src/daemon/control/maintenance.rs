//! The maintenance controls on the control socket: `sweeping` (`ibsm sweeping off|on`) and
//! `port` (`ibsm port disable|enable NODE PORT`), applied to the core on the SM's loop
//! ([`change`]) and answered with [`SweepingAnswer`] and [`PortToggledAnswer`]. What a hold
//! stops and what a disabled port gets are the core's (`core::maintenance` and the
//! coordinator's side of it); this module only reads the request and writes the answer.

use serde::{Deserialize, Serialize};

use super::{Query, error_line};
use crate::core::Sm;
use crate::core::maintenance::NodeRef;
use crate::daemon::side_queries::Changed;

/// The answer to `sweeping`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepingAnswer {
    /// Sweeping is held now.
    pub held: bool,
    /// It was not so before this request.
    pub changed: bool,
}

/// The answer to `port`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortToggledAnswer {
    /// The node's GUID, `0x` and 16 hex digits.
    pub node: String,
    /// Its NodeDescription (empty when the SM no longer sees it).
    pub desc: String,
    /// The port.
    pub port: u8,
    /// The port is on the disabled list now.
    pub disabled: bool,
    /// The list changed (false: it already was so; the Set is sent again all the same).
    pub changed: bool,
    /// A PortInfo Set was queued (false: the node is not in the fabric the SM sees).
    pub sent: bool,
}

/// Applies a `sweeping` or `port` query to `sm`; any other query is refused.
pub fn change(sm: &mut Sm, query: &Query) -> Changed {
    let refused = |e: &str| Changed { answer: error_line(e), disabled_ports: false, follows: false };
    match query {
        Query::Sweeping(on) => {
            let changed = sm.hold_sweeping(!on);
            let held = sm.sweeping_held_since().is_some();
            tracing::warn!(
                error_id = "sweeping-changed",
                held,
                changed,
                "sweeping {}",
                if held { "held" } else { "on" }
            );
            let answer = serde_json::to_string(&SweepingAnswer { held, changed }).unwrap_or_default();
            Changed { answer, disabled_ports: false, follows: changed && !held }
        }
        Query::PortAdmin { enable, node, port, force } => {
            // A name the node name map gives one node stands for that node.
            let who = match NodeRef::parse(node) {
                NodeRef::Desc(d) => match sm.config().node_names.named(&d).as_slice() {
                    [g] => NodeRef::Guid(*g),
                    _ => NodeRef::Desc(d),
                },
                other => other,
            };
            let done = if *enable { sm.enable_port(&who, *port) } else { sm.disable_port(&who, *port, *force) };
            match done {
                Ok(t) => {
                    let node = format!("{:#018x}", t.node.0);
                    // The name `node-name-map` gives the node, else its NodeDescription.
                    let name = sm.config().node_names.show(t.node, &t.desc);
                    if *enable {
                        tracing::warn!(
                            error_id = "port-enabled",
                            node,
                            name,
                            desc = t.desc,
                            port = t.port.0,
                            "port enabled"
                        );
                    } else {
                        tracing::warn!(
                            error_id = "port-disabled",
                            node,
                            name,
                            desc = t.desc,
                            port = t.port.0,
                            "port disabled"
                        );
                    }
                    let a = PortToggledAnswer {
                        node,
                        desc: t.desc.clone(),
                        port: t.port.0,
                        disabled: !enable,
                        changed: t.changed,
                        sent: t.sent(),
                    };
                    let answer = serde_json::to_string(&a).unwrap_or_default();
                    Changed { answer, disabled_ports: t.changed, follows: true }
                }
                Err(e) => refused(&e),
            }
        }
        _ => refused("not a maintenance control"),
    }
}

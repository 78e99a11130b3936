//! Warming the records an SMP will need before it needs them.
//!
//! The simulated fabric of a large subnet is tens of megabytes of node and port records, and
//! an SMP to a far node first touches most of them: the port it arrives at (read when it
//! arrives, and the way its answer leaves), the port whose M_Key guards the node (a switch's
//! port 0), the port a PortInfo names, the switch's forwarding table. Read one by one where
//! they are used (at the arrival event, then at the SMA's service, ten microseconds of virtual
//! time and many other events later), each is a cache miss the processor waits on alone. When
//! a directed route's walk reaches its end, the node and the arrival port are known and the
//! SMP's attribute can be read, so [`Fabric::warm_sma`] reads those records there, all at
//! once: their misses overlap one another and the walk's own, and the later reads hit.
//!
//! Reads only: nothing here changes the fabric's state, so what the fabric answers, and when,
//! is the same with or without it.

use ibsm_mad::ids;

use super::Fabric;
use super::state::{NodeRef, PortRef};
use crate::topology::NodeKind;

impl Fabric {
    /// A value read from port `p`'s first cache line (what a hop out of `p` reads), to touch
    /// it; `p` is a port of the fabric (a walk's, or one checked against its node's ports).
    #[inline]
    pub(super) fn touch_port(&self, p: PortRef) -> u32 {
        self.ports[p as usize].node
    }

    /// Touches what the SMA of `node` reads for an SMP of attribute `attr` (modifier
    /// `attr_mod`) arriving at port `p`: `p`, the M_Key port's key, and the port or forwarding
    /// table block the attribute names on a switch. `touched` are values read before (the
    /// walk's ports), kept from being optimised away with these.
    #[allow(clippy::inline_always)] // once an SMP, in the walk's end; as a call it took 34 instructions
    #[inline(always)]
    pub(super) fn warm_sma(&self, p: PortRef, node: NodeRef, attr: u16, attr_mod: u32, touched: u32) {
        let Some(n) = self.nodes.get(node) else { return };
        let mut sum = touched ^ self.touch_port(p);
        if n.kind != NodeKind::Switch {
            sum ^= self.ports[p as usize].m_key as u32;
            std::hint::black_box(sum);
            return;
        }
        let port0 = n.first_port;
        sum ^= self.ports[port0 as usize].m_key as u32;
        match attr {
            ids::attr::PORT_INFO => {
                let num = attr_mod & !ibsm_mad::attrs::SM_SUPPORTS_EXTENDED_SPEEDS;
                if num <= u32::from(n.num_ports) {
                    sum ^= self.touch_port(port0 + num);
                }
            }
            ids::attr::LFT => {
                if let Some(sw) = n.switch.and_then(|s| self.switches.get(s as usize)) {
                    sum ^= u32::from(sw.lft_top) ^ sw.lft.slot(attr_mod as usize);
                }
            }
            _ => {}
        }
        std::hint::black_box(sum);
    }
}

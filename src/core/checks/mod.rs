//! Fabric checks: the component that compares what discovery found with what it should be.
//!
//! Owns [`Checks`]: the last comparison with the planned cabling ([`cabling`]: loopback and
//! miscabled cables) and the duplicate GUIDs ([`duplicates`]) of the last completed sweep and of
//! the running one. It takes the subnet being built (`&Subnet`, or `&mut Subnet` where a check
//! takes a cable out of the model by clearing both ends' `remote`), the plan and its two
//! settings, and answers with values: the events to report and whether an end port is left out.
//! It sends nothing and never touches another component's state; the coordinator (`core/mod.rs`)
//! decides when each check runs.

pub mod cabling;
pub mod duplicates;

pub use cabling::{Cabling, subnet_topology};
pub use duplicates::{Quarantine, contradicts};

use ibsm_mad::Guid;

/// The fabric checks' state: the cabling check and the quarantine of duplicated GUIDs.
#[derive(Debug, Clone, Default)]
pub struct Checks {
    /// The last comparison of the fabric with the planned cabling.
    cabling: Cabling,
    /// Duplicate GUIDs of the last completed sweep.
    quarantine: Quarantine,
    /// Duplicate GUIDs found by the running sweep.
    quarantine_sweep: Quarantine,
}

impl Checks {
    /// The last cabling check.
    pub fn cabling(&self) -> &Cabling {
        &self.cabling
    }

    /// The duplicated GUIDs of the last completed sweep.
    pub fn quarantine(&self) -> &Quarantine {
        &self.quarantine
    }

    /// A heavy sweep's discovery starts: its quarantine starts empty.
    pub fn discovery_started(&mut self) {
        self.quarantine_sweep = Quarantine::default();
    }

    /// The end of a sweep: its quarantine becomes the one reported.
    pub fn settle(&mut self) {
        self.quarantine = std::mem::take(&mut self.quarantine_sweep);
    }

    /// Whether the port `end` (node GUID, port) is out of the model on purpose: refused as
    /// miscabled or a loopback, or quarantined by the running sweep.
    pub fn left_out(&self, end: (Guid, u8)) -> bool {
        self.cabling.refused.contains(&end) || self.quarantine_sweep.holds(end)
    }
}

#[cfg(test)]
mod tests {
    use ibsm_mad::{Guid, PortNum};

    use super::*;
    use crate::core::SmEvent;
    use crate::core::testing::star;

    #[test]
    fn a_loopback_cable_is_refused_and_reported_once() {
        let mut s = star(0xa, 0xb);
        let mut c = Checks::default();
        assert_eq!(c.check_cabling(&mut s, None, false), None, "no plan, no loopback: nothing to say");
        s.link((1, PortNum(5)), (1, PortNum(6)));
        let ev = c.check_cabling(&mut s, None, false);
        assert!(matches!(ev, Some(SmEvent::Cabling { refused: 2, .. })), "{ev:?}");
        let refused: Vec<_> = c.cabling().refused.iter().copied().collect();
        assert_eq!(refused, [(Guid(0x20), 5), (Guid(0x20), 6)]);
        assert!(s.nodes[1].ports[5].remote.is_none() && s.nodes[1].ports[6].remote.is_none());
        assert!(c.left_out((Guid(0x20), 6)) && !c.left_out((Guid(0x20), 3)));
        // The same finding again is not reported again; its end is.
        s.link((1, PortNum(5)), (1, PortNum(6)));
        assert_eq!(c.check_cabling(&mut s, None, false), None);
        s.nodes[1].ports[5].remote = None;
        s.nodes[1].ports[6].remote = None;
        assert!(matches!(c.check_cabling(&mut s, None, false), Some(SmEvent::Cabling { refused: 0, .. })));
        assert!(c.cabling().refused.is_empty());
    }

    #[test]
    fn a_missing_planned_cable_is_reported_after_a_quick_sweep() {
        let s = star(0xa, 0xb);
        let plan = subnet_topology(&s);
        let mut c = Checks::default();
        assert_eq!(c.cabling_lost(None, &[((Guid(0x20), 2), (Guid(0x102), 1))]), None, "no plan, nothing to miss");
        assert_eq!(c.cabling_lost(Some(&plan), &[((Guid(0x20), 9), (Guid(0x999), 1))]), None, "not planned");
        let ev = c.cabling_lost(Some(&plan), &[((Guid(0x102), 1), (Guid(0x20), 2))]);
        assert!(
            matches!(ev, Some(SmEvent::Cabling { ref differences, refused: 0 }) if differences.len() == 1),
            "{ev:?}"
        );
        assert_eq!(c.cabling().diff.differences.len(), 1);
    }

    #[test]
    fn end_ports_sharing_a_port_guid_are_quarantined_with_their_cables() {
        let mut s = star(0xab, 0xab);
        let mut c = Checks::default();
        c.discovery_started();
        let events = c.quarantine_duplicate_port_guids(&mut s);
        assert_eq!(events.len(), 1, "{events:?}");
        let SmEvent::DuplicateGuid { guid, ports } = &events[0] else { panic!("{events:?}") };
        assert_eq!(*guid, Guid(0xab));
        assert_eq!(ports, &[(Guid(0x20), 2), (Guid(0x20), 3), (Guid(0x102), 1), (Guid(0x103), 1)]);
        assert!(s.nodes[2].ports[1].remote.is_none() && s.nodes[1].ports[3].remote.is_none());
        assert!(s.nodes[0].ports[1].remote.is_some(), "the SM's own cable stays");
        assert!(c.quarantined_end(&s, 2, PortNum(1)) && c.quarantined_end(&s, 3, PortNum(1)));
        assert!(!c.quarantined_end(&s, 0, PortNum(1)));
        assert!(c.quarantine().guids.is_empty(), "reported only when the sweep ends");
        c.settle();
        assert_eq!(c.quarantine().guids.keys().copied().collect::<Vec<_>>(), [Guid(0xab)]);
        // The next sweep finds it again: known, so not reported again.
        let mut s = star(0xab, 0xab);
        c.discovery_started();
        assert!(c.quarantine_duplicate_port_guids(&mut s).is_empty());
        assert!(c.left_out((Guid(0x102), 1)));
    }

    #[test]
    fn a_node_answering_with_a_known_guid_but_another_shape_contradicts() {
        let s = star(0xa, 0xb);
        let mut ni = s.nodes[2].info;
        assert!(!contradicts(&s, 2, &ni, Some((1, PortNum(2)))), "the same node by the same cable");
        assert!(contradicts(&s, 2, &ni, Some((1, PortNum(3)))), "that port is cabled elsewhere");
        ni.num_ports = 2;
        assert!(contradicts(&s, 2, &ni, Some((1, PortNum(2)))));
    }

    #[test]
    fn a_confirmed_duplicate_takes_out_both_instances_once() {
        let mut s = star(0xa, 0xb);
        let mut c = Checks::default();
        // The CA on port 3 answers with the NodeGUID of the one on port 2.
        let mut ni = s.nodes[2].info;
        ni.port_guid = Guid(0xb);
        let ev = c.quarantine_both(&mut s, 2, &ni, (1, PortNum(3)));
        assert!(matches!(ev, Some(SmEvent::DuplicateGuid { guid: Guid(0x102), .. })), "{ev:?}");
        assert!(s.nodes[2].ports[1].remote.is_none() && s.nodes[1].ports[2].remote.is_none());
        assert!(c.quarantined_end(&s, 2, PortNum(1)));
        assert_eq!(c.quarantine_both(&mut s, 2, &ni, (1, PortNum(3))), None, "already known");
    }
}

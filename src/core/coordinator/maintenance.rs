//! The coordinator's side of maintenance ([`crate::core::maintenance::Maintenance`]): an
//! operator's hold on sweeping and the ports disabled, where they meet the rest of the SM.
//!
//! - `sweeping off` ([`Sm::hold_sweeping`]): from then on this SM, as master, starts no sweep
//!   of any kind (heavy, light, quick, repair, asked for, or brought by traps, a reload, a
//!   partition change or an M_Key lease), so it writes no LFT, P_Key table or PortInfo; a
//!   sweep already running ends first. Traps are still acknowledged and counted, the SA still
//!   answers (multicast joins included), a standby still polls its master and takes over: the
//!   takeover sweep runs, because a subnet needs a master, and the hold stands after it.
//!   `sweeping on` lets go, and a master sweeps at once (heavy: what changed meanwhile is
//!   found and written).
//! - `port disable` and `port enable` ([`Sm::disable_port`], [`Sm::enable_port`]): the
//!   PortInfo Set is queued, the list published to the standbys, and a heavy sweep follows
//!   (unless sweeping is held), so that routes go around the port or over it again.

use std::collections::BTreeSet;

use ibsm_mad::{Guid, PortNum};

use crate::core::Sm;
use crate::core::maintenance::{NodeRef, Toggled};
use crate::core::state::{SmState, SweepPhase};
use crate::sync::Section;

impl Sm {
    /// Holds sweeping (`hold`) or lets it go. `false` when it already was so. Letting go on a
    /// master sweeps now, or right after the running sweep.
    pub fn hold_sweeping(&mut self, hold: bool) -> bool {
        if hold {
            let changed = self.maintenance.hold(self.now);
            if changed {
                self.schedule.stand_by();
            }
            return changed;
        }
        let changed = self.maintenance.release();
        if changed && self.state == SmState::Master {
            self.sweep_soon();
        }
        changed
    }

    /// Since when sweeping is held (the core's clock), if it is.
    pub fn sweeping_held_since(&self) -> Option<u64> {
        self.maintenance.held_since()
    }

    /// Whether this SM, as master, may not start a sweep now.
    pub(in crate::core) fn sweeping_held(&self) -> bool {
        self.maintenance.held() && self.state == SmState::Master
    }

    /// The ports an operator disabled: (node GUID, port).
    pub fn disabled_ports(&self) -> &BTreeSet<(Guid, u8)> {
        self.maintenance.disabled()
    }

    /// Takes the disabled ports recorded by an earlier run ([`Sm::disabled_ports`]).
    pub fn set_disabled_ports(&mut self, ports: impl IntoIterator<Item = (Guid, u8)>) {
        self.maintenance.set_disabled(ports);
    }

    /// Whether `port` of `node` is on the disabled list.
    pub(in crate::core) fn port_disabled(&self, node: Guid, port: PortNum) -> bool {
        self.maintenance.is_disabled(node, port)
    }

    /// Disables `port` of the node `who` names (see [`crate::core::maintenance::Maintenance::disable`]).
    ///
    /// # Errors
    /// Not a master, a sweep running, an unknown node or port, or a port that would cut the
    /// SM off from some node (unless `force`).
    pub fn disable_port(&mut self, who: &NodeRef, port: u8, force: bool) -> Result<Toggled, String> {
        self.may_toggle()?;
        let t = self.maintenance.disable(&self.subnet, who, port, force)?;
        self.toggled(&t);
        Ok(t)
    }

    /// Enables `port` of the node `who` names (see [`crate::core::maintenance::Maintenance::enable`]).
    ///
    /// # Errors
    /// Not a master, a sweep running, or an unknown node or port.
    pub fn enable_port(&mut self, who: &NodeRef, port: u8) -> Result<Toggled, String> {
        self.may_toggle()?;
        let t = self.maintenance.enable(&self.subnet, who, port)?;
        self.toggled(&t);
        Ok(t)
    }

    fn may_toggle(&self) -> Result<(), String> {
        match self.state {
            SmState::Master if self.phase == SweepPhase::Up => Ok(()),
            SmState::Master | SmState::Discovering => Err("a sweep is running; ask again when it ends".to_owned()),
            SmState::Standby => Err("this SM is a standby: ask the master".to_owned()),
            SmState::NotActive => Err("this SM is not active (disabled, or not started)".to_owned()),
        }
    }

    /// After a port was disabled or enabled: the Set queued, the standbys told; the sweep
    /// follows the Set's answer ([`Sm::toggle_answered`]), at once when there is no Set.
    fn toggled(&mut self, t: &Toggled) {
        if t.changed {
            self.publish(&[Section::DisabledPorts]);
        }
        match t.set.clone() {
            Some(set) => self.tx.push(set),
            None => self.sweep_soon(),
        }
    }

    /// The answer to a port's Disabled or Polling Set (or its failure, reported): a sweep, to
    /// route around the port or over it again. The Set names its node by the index of the
    /// sweep before it, which a sweep started meanwhile may have renumbered: nothing is
    /// written into the subnet from the answer; the sweep reads the port again.
    pub(in crate::core) fn toggle_answered(
        &mut self,
        request: &crate::core::transactions::Request,
        outcome: &crate::core::transactions::Outcome,
    ) {
        if let Some(failure) = outcome.failure() {
            let (attr_id, attr_mod) = crate::core::transactions::describe(&request.req);
            self.events.push_back(crate::core::SmEvent::SmpFailed { attr_id, attr_mod, path: request.path, failure });
        }
        self.sweep_soon();
    }
}

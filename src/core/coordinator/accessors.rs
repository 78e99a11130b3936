//! `Sm`'s getters and setters for what lives outside a sweep: the figures, books and tables an
//! operator, the daemon or a test reads (counters, the last report, the snapshot, programmed
//! tables), the persisted state the daemon hands back at start (M_Keys, their neighbour map,
//! P_Key layouts), and the MAD buffers a driver hands back ([`Sm::recycle`]). Each one reads or
//! sets one component's value; none starts anything.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use ibsm_mad::{Guid, Lid};

use crate::core::{
    RequestCounters, Sm, SmConfig, SmState, Subnet, SubnetReport, SweepPhase, babbling, checks, lids::Guid2Lid, mkeys,
    traps,
};

impl Sm {
    /// When the last report ([`Sm::last_report`]) was made, on the core's clock.
    pub fn last_report_at(&self) -> Option<u64> {
        self.sweep.last_report_at()
    }

    /// The transport tells the time without an input (before answering a side query, so that
    /// ages in it are current). Nothing else happens.
    pub fn set_clock(&mut self, now: u64) {
        self.now = self.now.max(now);
    }

    /// How many entries each of the SM's growing tables holds, by name: what the soak checks
    /// against the fabric's size, so that nothing grows with time instead.
    pub fn footprint(&self) -> Vec<(&'static str, usize)> {
        let (queued, in_flight) = self.tx.sizes();
        let mut out = vec![("guid2lid", self.guid2lid.iter().count()), ("lft_cache", self.programming.held_lfts())];
        out.extend(self.partitions.sizes());
        out.extend([
            ("events", self.events.len()),
            ("responses", self.responses.len()),
            ("smps_queued", queued),
            ("smps_in_flight", in_flight),
            ("sms_found", self.election.found().len()),
        ]);
        out.extend(self.mkeys.sizes());
        let [requesters, services, subscriptions, vl_tables, held, aliases] = self.sa.sizes();
        out.extend([requesters, services, subscriptions, ("quarantine", self.checks.quarantine().guids.len())]);
        out.extend([vl_tables, held, aliases]);
        out.extend(self.traps.sizes());
        out.extend(self.perf.sizes());
        out.extend(self.babbling.sizes());
        out
    }

    /// As master: the SM a HANDOVER went out to, until it is answered (and, when accepted,
    /// acknowledged).
    pub fn handing_over_to(&self) -> Option<Guid> {
        self.election.handing_over_to()
    }

    /// Takes back a MAD buffer the driver is done with: a received MAD once
    /// [`Sm::handle_mad`] has returned (the simulated fabric answers in the request's own
    /// buffer), or a [`crate::core::Transmit`]'s bytes once written to the device. The SMPs
    /// sent next are written into such buffers instead of fresh allocations. Only buffers of
    /// exactly 256 bytes with no spare capacity are kept, at most 1,024 (256 KiB); anything
    /// else is dropped. Optional: a driver that never calls it gets fresh buffers, and the same bytes.
    pub fn recycle(&mut self, bytes: Vec<u8>) {
        self.tx.recycle(bytes);
    }

    /// SMP buffers allocated so far: those not taken from the ones the driver handed back
    /// ([`Sm::recycle`]). A driver that hands every buffer back allocates about a window's
    /// worth for a whole bring-up.
    pub fn smp_buffers_made(&self) -> u64 {
        self.tx.buffers_made()
    }

    /// SA answers sent, by attribute and status.
    pub fn sa_counts(&self) -> &crate::sa::counts::SaCounts {
        self.sa.counts()
    }
    /// The last cabling check.
    pub fn cabling(&self) -> &checks::Cabling {
        self.checks.cabling()
    }
    /// The duplicated GUIDs of the last completed sweep.
    pub fn quarantine(&self) -> &checks::Quarantine {
        self.checks.quarantine()
    }
    /// The M_Key each port is believed to hold (by port GUID), to persist in the state
    /// directory as `guid2mkey`.
    pub fn mkeys_held(&self) -> &HashMap<Guid, u64> {
        self.mkeys.held()
    }
    /// Takes the keys ports are known to hold: an earlier run's `guid2mkey`, or OpenSM's.
    pub fn set_mkeys_held(&mut self, keys: HashMap<Guid, u64>) {
        self.mkeys.set_held(keys);
    }
    /// The neighbour map (node GUID, port) to the port GUID cabled there, to persist: after a
    /// restart it names the ports at protect level 2 or 3 before their NodeInfo can be read.
    pub fn mkey_neighbors(&self) -> &HashMap<(Guid, u8), Guid> {
        self.mkeys.neighbors()
    }
    /// Takes a neighbour map persisted by an earlier run ([`Sm::mkey_neighbors`]).
    pub fn set_mkey_neighbors(&mut self, neighbors: HashMap<(Guid, u8), Guid>) {
        self.mkeys.set_neighbors(neighbors);
    }
    /// Bad-M_Key traps (256) received, by the LID that raised them.
    pub fn mkey_violations(&self) -> &BTreeMap<Lid, mkeys::Violations> {
        self.mkeys.violations()
    }
    /// Where end ports are found by LID: the SA's snapshot, or the subnet being swept before
    /// the first one.
    pub(in crate::core) fn ports(&self) -> mkeys::Ports<'_> {
        mkeys::Ports { snapshot: self.sa.snapshot(), subnet: &self.subnet }
    }
    /// Each P_Key table's layout as last written (by port GUID; switch ports by a key of their
    /// own), to persist in the state directory so that indexes survive a restart.
    pub fn pkey_layout(&self) -> &BTreeMap<Guid, Vec<ibsm_mad::PKey>> {
        self.partitions.layout()
    }
    /// Takes the layouts persisted by an earlier run ([`Sm::pkey_layout`]).
    pub fn set_pkey_layout(&mut self, layout: BTreeMap<Guid, Vec<ibsm_mad::PKey>>) {
        self.partitions.set_layout(layout);
    }
    /// SL2VL and VL arbitration tables written since start (QoS).
    pub fn qos_tables_sent(&self) -> u64 {
        self.qos.blocks_sent()
    }
    /// SL2VL tables and VLArbitration blocks this SM holds as written on node `node` (written,
    /// or adopted from the master it took over from).
    pub fn qos_tables_held(&self, node: Guid) -> usize {
        self.qos.tables_held(node)
    }
    /// P_KeyTable blocks written so far.
    pub fn pkey_blocks_sent(&self) -> u64 {
        self.partitions.blocks_sent()
    }
    /// The P_Key table the policy gives each end port (by port GUID), as last resolved and
    /// written; ports whose write failed are absent.
    pub fn port_pkeys(&self) -> &BTreeMap<Guid, Vec<ibsm_mad::PKey>> {
        self.partitions.port_pkeys()
    }
    /// The configuration.
    pub fn config(&self) -> &SmConfig {
        &self.cfg
    }
    /// The SM state.
    pub fn state(&self) -> SmState {
        self.state
    }
    /// The phase of the current (or last) sweep; [`SweepPhase::Up`] when no sweep runs.
    pub fn phase(&self) -> SweepPhase {
        self.phase
    }
    /// The subnet as discovered by the current (or last) sweep.
    pub fn subnet(&self) -> &Subnet {
        &self.subnet
    }
    /// The GUID-to-LID table, updated by every LID assignment; persist it after a sweep.
    pub fn guid2lid(&self) -> &Guid2Lid {
        &self.guid2lid
    }
    /// The core's current time (the latest `now` it was given, or read from the clock of
    /// [`Sm::handle_compute`]).
    pub fn now(&self) -> u64 {
        self.now
    }
    /// The SM's own port GUID (0 until discovery has read it).
    pub fn port_guid(&self) -> Guid {
        self.port_guid
    }
    /// SMPs sent, retried and failed so far: (sent, retried, failed).
    pub fn smp_counters(&self) -> (u64, u64, u64) {
        (self.tx.counters.sent, self.tx.counters.retried, self.tx.counters.failed)
    }
    /// SMP waits for an answer that ran out (each try counted).
    pub fn smp_timeouts(&self) -> u64 {
        self.tx.counters.timed_out
    }
    /// Sweeps completed: (heavy, quick, repair).
    pub fn sweeps_done(&self) -> (u64, u64, u64) {
        self.schedule.done()
    }
    /// Light sweeps completed.
    pub fn light_sweeps(&self) -> u64 {
        self.light.done()
    }
    /// What traps did: counters and unhealthy ports.
    pub fn trap_book(&self) -> &traps::Traps {
        &self.traps
    }
    /// The babbling-port policy's book: the ports it disabled, its counts.
    pub fn babbling(&self) -> &babbling::Babbling {
        &self.babbling
    }
    /// Times this SM took the subnet over from its master.
    pub fn takeovers(&self) -> u64 {
        self.election.takeovers()
    }
    /// Requests received so far, by kind.
    pub fn request_counters(&self) -> RequestCounters {
        self.sa.add_counters(self.counters)
    }
    /// The SA's snapshot of the fabric as the last completed sweep left it (`None` before the
    /// first). Cheap to clone and immutable: readers never wait for a sweep.
    pub fn snapshot(&self) -> Option<Arc<crate::sa::Snapshot>> {
        self.sa.shared()
    }
    /// Multicast group creates refused so far for want of an MLID (NO_RESOURCES).
    pub fn mlid_refusals(&self) -> u64 {
        self.sa.mlid_refusals()
    }
    /// The root switch (node GUID) of `mlid`'s multicast tree on the SA's snapshot, `None`
    /// when no group has that MLID or it has no member.
    pub fn multicast_root(&self, mlid: Lid) -> Option<Guid> {
        self.sa.multicast_root(mlid)
    }
    /// MFT blocks written for multicast groups so far.
    pub fn mft_blocks_sent(&self) -> u64 {
        self.programming.mft_blocks_sent()
    }
    /// What this SM believes `switch`'s multicast table holds for `mlid`: the ports set, or
    /// `None` when it wrote nothing there.
    pub fn programmed_mft(&self, switch: Guid, mlid: Lid) -> Option<Vec<u8>> {
        self.sa.programmed_mft(switch, mlid)
    }
    /// The multicast table blocks this SM wrote to `switch`, by (block, position); `None`
    /// when it wrote none (`ibsm routes dump --format mcfdbs`).
    pub fn mft(&self, switch: Guid) -> Option<&BTreeMap<(u16, u8), ibsm_mad::attrs::MulticastForwardingTable>> {
        self.sa.mft(switch)
    }
    /// Counters of the SA's Reports to subscribers.
    pub fn sa_report_counters(&self) -> crate::sa::inform::ReportCounters {
        self.sa.report_counters()
    }
    /// The report of the last completed sweep.
    pub fn last_report(&self) -> Option<&SubnetReport> {
        self.sweep.last_report()
    }
    /// The routing engine of the chain that routed the last sweep (`None` before any routing).
    pub fn routing_engine_used(&self) -> Option<&str> {
        Some(self.routing.engine_used()).filter(|e| !e.is_empty())
    }
    /// What this SM knows `switch`'s linear forwarding table holds: the blocks it wrote, or read
    /// back during discovery, as a table for LIDs `0..=LinearFDBTop`; LIDs of a block it knows
    /// nothing about are unrouted. `None` when it knows nothing of that switch's table.
    pub fn programmed_lft(&self, switch: Guid) -> Option<std::sync::Arc<ibsm_routing::Lft>> {
        self.programming.programmed_lft(switch)
    }
}

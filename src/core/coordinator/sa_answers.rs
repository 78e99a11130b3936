//! The SA's side of the coordinator: where the SA's values meet the rest. An SA request is
//! answered by [`super::super::sa::Sa`], and what follows happens here: the VL census' reads,
//! the multicast tables its groups need, the GUIDInfo blocks its alias GUIDs need, the
//! standbys' copy; and the snapshot every sweep's end
//! builds from the subnet, the partitions, the programmed tables and the routing engine (a
//! patch of the last one: what did not change is shared; with QoS classes times routing layers
//! in force, the policy's groups and the PathRecords take their class's SLs).

use std::sync::Arc;

use crate::core::{MadSource, Sm, SmEvent, SmState, SweepPhase, requests, sa, transactions::Op};

/// MADs of a batch looked at together ([`Sm::handle_mads`]): enough walks for the processor
/// to have as many cache misses in flight as it can (a core tracks a few tens), few enough
/// that what the look-ahead read is still in cache, and its pages in the TLB, when their
/// answers read it (k = 48, load 10: bursts of 32 served 3.7x the one-by-one rate in the same
/// run, bursts of 256 2.3x).
const AHEAD: usize = 32;

impl Sm {
    /// The sweep's last compute step ([`crate::core::ComputeStep::Snapshot`]): the SA takes a
    /// new snapshot of the swept subnet and the multicast groups the policy names.
    pub(in crate::core) fn install_snapshot(&mut self) {
        let qos = self.cfg.qos.is_some();
        let mut groups = ibsm_partitions::policy_groups(&self.cfg.partitions, qos).unwrap_or_else(|e| {
            self.events.push_back(SmEvent::PartitionWarning(format!("multicast groups of the policy: {e}")));
            ibsm_partitions::policy_groups(&ibsm_partitions::Policy::no_file(), qos).unwrap_or_default()
        });
        // QoS classes times layers: a group of the policy is on its SL's class, layer 0.
        if let Some((classes, layers)) = self.qos_layering() {
            for g in &mut groups {
                g.sl = classes.sl(g.sl, layers, 0);
            }
        }
        // The snapshot is taken with a mark the subnet is settled with: from here, the subnet
        // marks each node it hands out to change, and the next snapshot compares only those.
        let mark = self.sa.next_mark();
        let snap = self.snapshot_from(self.sa.snapshot(), mark);
        self.subnet.nodes.settle(mark);
        self.sa.sweep_done(Arc::new(snap), &groups, &self.subnet, self.now);
    }

    /// A new snapshot of the subnet as it stands, every record copied (public for benchmarks
    /// and tools; the SA answers from [`Sm::snapshot`]).
    pub fn build_snapshot(&self) -> crate::sa::Snapshot {
        self.snapshot_from(None, 0)
    }

    /// A new snapshot of the subnet as it stands, made from the one the SA answers from: what
    /// the end of every sweep takes. It shares every node record that did not change, and the
    /// indexes when no end port changed, and compares only the nodes the subnet marked changed
    /// since that snapshot (public for benchmarks and tools).
    pub fn patch_snapshot(&self) -> crate::sa::Snapshot {
        self.snapshot_from(self.sa.snapshot(), 0)
    }

    /// A new snapshot of the subnet, sharing with `prev` what did not change, taken with
    /// `mark` ([`crate::sa::Snapshot::subnet_mark`]).
    fn snapshot_from(&self, prev: Option<&crate::sa::Snapshot>, mark: u64) -> crate::sa::Snapshot {
        let mut snap = sa::snapshot::build(
            &sa::snapshot::Sources {
                subnet: &self.subnet,
                partitions: &self.partitions,
                programming: &self.programming,
                engine: self.routing.engine_used(),
                port_guid: self.port_guid,
                subnet_prefix: self.cfg.subnet_prefix,
                lmc: self.cfg.lmc,
                subnet_timeout: self.cfg.subnet_timeout,
                qos: self.cfg.qos.as_ref().map(|q| &q.policy),
                allow_both_pkeys: self.cfg.allow_both_pkeys,
                layers: self.routing.layers(),
            },
            prev,
            mark,
        );
        snap.max_rate = self.cfg.max_rate_enum;
        snap.qos_layering = self.qos_layering().map(std::sync::Arc::new);
        snap
    }

    /// MADs that arrived together (a driver's batch, read at `now`): handled as
    /// [`Sm::handle_mad`] handles each, one by one and in order, with the same answers, events
    /// and counts; before that the SA looks ahead at the batch ([`sa::Sa::look_ahead`]: the
    /// walks of its PathRecord Gets done together, their cache misses overlapped), [`AHEAD`]
    /// MADs at a time. `mads` is gone through twice (hence `Clone`, which a slice's iterator
    /// is cheaply).
    pub fn handle_mads<'a, I>(&mut self, now: u64, mads: I)
    where
        I: IntoIterator<Item = (&'a [u8], MadSource)>,
        I::IntoIter: Clone,
    {
        let mut rest = mads.into_iter();
        loop {
            let ahead = rest.clone().take(AHEAD).map(|(bytes, src)| (bytes, src.slid));
            self.sa.look_ahead(self.state == SmState::Master, ahead);
            let mut handled = 0;
            for (bytes, src) in rest.by_ref().take(AHEAD) {
                self.handle_mad(now, bytes, src);
                handled += 1;
            }
            if handled < AHEAD {
                return;
            }
        }
    }

    /// An SA request: the SA answers it (or not), and what follows happens here: the census
    /// reads, the multicast tables, the standbys' copy.
    pub(in crate::core) fn answer_sa(&mut self, h: &ibsm_mad::header::MadHeader, bytes: &[u8], src: &MadSource) {
        // Between its HANDOVER and the answer, a master still serves the SA, but a change it
        // answered now would reach the new master by no state sync (that one no longer takes
        // them): a Set or Delete gets BUSY, and the client's retry finds the new master.
        if self.state == SmState::Master
            && self.election.handing_over_to().is_some()
            && matches!(h.method, ibsm_mad::header::Method::Set | ibsm_mad::header::Method::Delete)
        {
            if let Some(reply) = requests::response_to(bytes, ibsm_mad::ids::status::BUSY, None) {
                self.respond(reply, requests::reply_to(h, src));
            }
            return;
        }
        let live = crate::sa::Live { sm_info: self.sm_info(false), sa_key: self.cfg.sa_key, now: self.now };
        let master = self.state == SmState::Master;
        // The answer is written into a buffer the driver handed back, when there is one.
        let spare = self.tx.spare_buffer();
        let asked = sa::Asked { header: h, bytes, src, live, master, queued: self.responses.len(), spare };
        let done = self.sa.answer(asked);
        if let Some(unused) = done.spare {
            self.tx.recycle(unused);
        }
        // (Pushed, not `extend`ed from the options: an extend from an `Option` went through
        // the deque's general path, ~110 instructions a Get.)
        if let Some(reply) = done.reply {
            self.responses.push_back(reply);
        }
        if let Some(event) = done.event {
            self.events.push_back(event);
        }
        if done.census {
            self.census_pump();
        }
        self.after_answers.multicast |= done.groups_changed;
        self.after_answers.aliases |= done.aliases_changed;
        self.after_answers.publish.extend(done.publish);
    }

    /// Carries out what the SA changes since the last call led to: publishes the sections that
    /// changed, reprograms the multicast tables and the ports' alias GUIDs. Called once the answers are out, and before a
    /// timer is handled (a handover or a sweep sees the changes first).
    pub(in crate::core) fn flush_after_answers(&mut self) {
        // Called before every SMP sent: nearly always nothing to do.
        let a = &self.after_answers;
        if a.publish.is_empty() && !a.multicast && !a.aliases {
            return;
        }
        let after = std::mem::take(&mut self.after_answers);
        if !after.publish.is_empty() {
            let sections: Vec<crate::sync::Section> = after.publish.into_iter().collect();
            self.publish(&sections);
        }
        if after.multicast {
            self.program_multicast();
        }
        if after.aliases {
            self.program_aliases();
        }
    }

    /// Writes the GUIDInfo blocks that differ from what the ports hold for the SA's alias
    /// GUIDs. Only between sweeps; a sweep's end calls it again.
    pub(in crate::core) fn program_aliases(&mut self) {
        if self.phase != SweepPhase::Up || self.state != SmState::Master {
            return;
        }
        for r in self.sa.alias_sets(&self.subnet) {
            self.tx.push(r);
        }
    }

    /// Queues the census' next reads while this SM is master between sweeps, and answers the
    /// requests that waited for it once it is done.
    pub(in crate::core) fn census_pump(&mut self) {
        if self.state != SmState::Master || self.phase != SweepPhase::Up {
            return;
        }
        let pump = self.sa.census_pump(&self.subnet, self.tx.outstanding_for(Op::Census));
        for r in pump.reads {
            self.tx.push(r);
        }
        for (bytes, src) in pump.answer {
            if let Ok(h) = ibsm_mad::header::MadHeader::from_bytes(&bytes) {
                self.answer_sa(&h, &bytes, &src);
            }
        }
    }

    /// Writes the MFT blocks that differ from what the switches hold for the SA's groups. Only
    /// between sweeps; a sweep's end calls it again.
    pub(in crate::core) fn program_multicast(&mut self) {
        if self.phase != SweepPhase::Up {
            return;
        }
        for r in self.sa.multicast_sets(&self.subnet) {
            self.tx.push(r);
        }
    }
}

//! Port bring-up: LIDs onto ports, PortInfo and SwitchInfo configuration, and the link state
//! walk Init → Armed → Active.
//!
//! Owns the AssigningLids, ConfiguringPorts, Arming and Activating phases. Every PortInfo Set is
//! a read-modify-write of the PortInfo discovery read: only LID, LMC, MasterSMLID, SubnetTimeout,
//! GidPrefix (end ports), NeighborMTU and OperationalVLs (linked ports, within both ends' MTUCap
//! and VLCap and `max-op-vls`), PortState and the port settings of [`crate::core::port_settings`]
//! (HOQ lifetimes, VL stall counts, error thresholds, and LinkSpeedEnabled, LinkSpeedExtEnabled
//! and LinkWidthEnabled as `force-link-*` say, OpenSM's defaults writing them only while a port's
//! enabled set differs from its supported set) change; M_Key fields are sent back as read;
//! PortState and PortPhysicalState are 0 ("no change") except when arming or activating. A Set is
//! sent only when something differs. Arming happens for every linked port whose far end was
//! discovered (in the same Set as its configuration when it needs one: a fresh CA port gets its
//! LID and Armed in one SMP, as OpenSM combines them), and activation only once every arm has
//! been answered, so both ends of each link are Armed first. A CA or router port whose
//! NeighborMTU or OperationalVLs changes gets PortState Down in its Set instead, a link bounce as
//! OpenSM's LID manager sends ([`crate::core::port_settings::PortSettings::bounces`]); its answer
//! and the far end go back to Init in the SM's books, and the arming pass brings the link up. A
//! Set's answer tells the port settings which fields the port did not keep
//! ([`crate::core::port_settings::PortSettings::learn`]).

use ibsm_mad::attrs::{Mtu, PortInfo, PortState, SwitchInfo};
use ibsm_mad::{Attribute, Lid, PortNum};

use crate::core::Sm;
use crate::core::events::SmEvent;
use crate::core::lids::{LidRequest, assign};
use crate::core::port_settings::{PortSettings, Target};
use crate::core::state::{Node, NodeIdx, SweepPhase, port_info_set};
use crate::core::transactions::{
    Op, Outcome, PlannedInfo, PortStep, Req, Request, interleave_order, interleaved, spread,
};

/// A configuration Set before it is built: a port's PortInfo Set (`at`: its PortInfo among the
/// configuration's) or a switch's SwitchInfo Set.
#[derive(Debug, Clone, Copy)]
enum ConfSet {
    Port { port: PortNum, step: PortStep, at: usize },
    Switch(SwitchInfo),
}

fn min_mtu(a: Mtu, b: Mtu) -> Mtu {
    if a.raw() == 0 || b.raw() == 0 { a } else { Mtu::from_raw(a.raw().min(b.raw())) }
}

impl Sm {
    /// Gives every end port a LID (pure computation over the discovered subnet). Ports ask in
    /// the subnet's canonical order (nodes by hop count and smallest directed route, ports
    /// ascending), so the LIDs a fresh port gets do not depend on which answers came first;
    /// LIDs from `guid2lid` and LIDs ports hold are kept as [`assign`] says.
    pub(in crate::core) fn assign_lids(&mut self) {
        let events = self.checks.quarantine_duplicate_port_guids(&mut self.subnet);
        self.events.extend(events);
        let mut who: Vec<(NodeIdx, PortNum)> = Vec::new();
        let mut reqs = Vec::new();
        for i in self.subnet.canonical_order() {
            let Some(n) = self.subnet.nodes.get(i) else { continue };
            for p in n.end_ports() {
                let Some(rec) = n.port(p) else { continue };
                let (Some(guid), Some(info)) = (rec.guid, rec.info) else { continue };
                if self.checks.quarantined_end(&self.subnet, i, p) {
                    continue; // a duplicate GUID: no LID until it is resolved
                }
                who.push((i, p));
                reqs.push(LidRequest { guid, current: info.lid });
            }
        }
        let lids = assign(&reqs, self.cfg.lmc, &mut self.guid2lid);
        let mut missing = 0;
        for ((n, p), lid) in who.into_iter().zip(lids) {
            if lid == Lid::UNASSIGNED {
                missing += 1;
            }
            if let Some(rec) = self.subnet.nodes.get_mut(n).and_then(|n| n.port_mut(p)) {
                rec.lid = lid;
            }
        }
        if missing > 0 {
            self.sweep.failed(missing);
            self.events.push_back(SmEvent::LidSpaceExhausted { ports: missing });
        }
    }

    /// The highest LID owned by any end port (base plus `2^lmc - 1`).
    pub(in crate::core) fn max_lid(&self) -> u16 {
        let span = (1u16 << self.cfg.lmc.min(7)) - 1;
        self.subnet
            .nodes
            .iter()
            .flat_map(|n| n.ports.iter().map(|p| p.lid.0))
            .filter(|&l| l != 0)
            .map(|l| l.saturating_add(span))
            .max()
            .unwrap_or(0)
    }

    /// Queues the PortInfo and SwitchInfo Sets that change something. When ports need new
    /// M_Keys, their key Sets go first, alone (see [`crate::core::mkeys::MKeys::key_sets`]), and this runs again when
    /// they are done.
    /// With QoS on and layers in force ([`Sm::qos_layering`]), the QoS setting with its layered
    /// tables (each (class, layer) on a VL of its own); else `None`.
    fn layered_qos_setting(&self) -> Option<crate::core::qos::QosSetting> {
        let q = self.cfg.qos.as_ref()?;
        let (classes, layers) = self.qos_layering()?;
        let options = classes.layered_options(&q.options, layers).ok()?;
        Some(crate::core::qos::QosSetting { options, policy: q.policy.clone() })
    }

    /// The link's share of a port's PortInfo Set: NeighborMTU and OperationalVLs from the two
    /// ends (or, on an enhanced switch port 0, from the port itself) and QoS's VLs and
    /// VLHighLimit. Returns the peer's PortState when the port is linked to a known peer.
    fn link_settings(&self, n: &Node, port: PortNum, info: &PortInfo, after: &mut PortInfo) -> Option<PortState> {
        let p = usize::from(port.0);
        let rec = n.port(port)?;
        let mut peer_state = None;
        if p > 0
            && rec.is_linked()
            && let Some((rn, rp)) = rec.remote
            && let Some(peer) = self.subnet.node(rn).and_then(|n| n.port(rp)).and_then(|r| r.info)
        {
            after.neighbor_mtu = min_mtu(info.mtu_cap, peer.mtu_cap);
            if let Some(vls) = self.cfg.ports.op_vls(info.vl_cap, peer.vl_cap) {
                after.operational_vls = vls;
            }
            peer_state = Some(peer.port_state);
        }
        // An enhanced switch port 0 (no peer), as OpenSM writes it: NeighborMTU its own
        // MTUCap, OperationalVLs what it holds within max-op-vls.
        if p == 0 && n.switch_info.is_some_and(|s| s.enhanced_port0) {
            after.neighbor_mtu = info.mtu_cap;
            after.operational_vls = self.cfg.ports.port0_op_vls(info.operational_vls);
        }
        if let Some((vls, high_limit)) = self.qos.port_settings(n.info.node_guid, port) {
            if p > 0 && rec.is_linked() {
                after.operational_vls = vls;
            }
            after.vl_high_limit = high_limit;
        }
        peer_state
    }

    pub(in crate::core) fn configure_ports(&mut self) {
        let sets = self.mkeys.key_sets(&self.cfg.m_key, &self.subnet);
        if !sets.is_empty() {
            for s in sets {
                self.tx.push(s);
            }
            return;
        }
        let warnings = self.partitions.resolve(
            &self.subnet,
            &self.cfg.partitions,
            self.cfg.part_enforce,
            self.cfg.allow_both_pkeys,
        );
        self.events.extend(warnings);
        // QoS's tables: with layers in force, laid out for classes times layers; with QoS off,
        // QoS's default SL2VL (SL n to VL n within the port's VLs) wherever the chain may
        // layer paths, so that a layered engine's SLs reach their VLs.
        let (layered, default_qos) = (self.layered_qos_setting(), crate::core::qos::QosSetting::default());
        let plain_layers = self.chain_layered() && self.vl_budget() > 1;
        let setting = layered.as_ref().or(self.cfg.qos.as_ref()).or(plain_layers.then_some(&default_qos));
        let warnings = self.qos.resolve(&self.subnet, setting, self.cfg.ports.max_op_vls);
        self.events.extend(warnings);
        let sm_lid = self.subnet.local_lid();
        let top = self.max_lid();
        // The Sets node by node (a port's PortInfo is its entry in `infos`).
        let mut planned: Vec<(NodeIdx, ConfSet)> = Vec::new();
        let mut infos: Vec<PortInfo> = Vec::new();
        for (i, n) in self.subnet.nodes.iter().enumerate().filter(|(_, n)| !n.carried) {
            let is_switch = n.is_switch();
            for (p, rec) in n.ports.iter().enumerate() {
                let Some(info) = rec.info else { continue };
                let port = PortNum(u8::try_from(p).unwrap_or(u8::MAX));
                let before = port_info_set(&info);
                let mut after = before;
                let is_end = if is_switch { p == 0 } else { p > 0 };
                if is_end && rec.lid != Lid::UNASSIGNED {
                    after.lid = rec.lid;
                    after.lmc = self.cfg.lmc;
                    after.master_sm_lid = sm_lid;
                    after.subnet_timeout = self.cfg.subnet_timeout;
                    after.gid_prefix = self.cfg.subnet_prefix;
                    after.client_reregister = self.replication.reregisters(rec.guid) && !is_switch;
                }
                // Partition enforcement on a switch port facing a CA or router.
                let faces_ca = is_switch
                    && p > 0
                    && rec.remote.and_then(|(rn, _)| self.subnet.node(rn)).is_some_and(|r| !r.is_switch());
                if is_switch == (p == 0) {
                    self.cfg.m_key.apply(if is_switch { Some(n.info.port_guid) } else { rec.guid }, &mut after);
                }
                // HOQ lifetime, VL stall count, error thresholds, forced speeds and widths.
                let target = Target::of(&self.subnet, i, port);
                if let Some(t) = &target {
                    self.port_settings.apply(&self.cfg.ports, t, n.info.node_guid, &mut after);
                }
                if let Some((inbound, outbound)) =
                    self.partitions.enforcement_bits(self.cfg.part_enforce, n.info.node_guid, port, faces_ca)
                {
                    after.partition_enforcement_inbound = inbound;
                    after.partition_enforcement_outbound = outbound;
                }
                let disabling = self.maintenance.keep_disabled(n.info.node_guid, port, &info, &mut after);
                let peer_state = self.link_settings(n, port, &info, &mut after);
                // A CA port's new NeighborMTU or OperationalVLs takes a link bounce, as OpenSM's
                // LID manager does it: PortState Down in the same Set (the arming pass brings
                // the link back up).
                let bounce = peer_state.is_some()
                    && !disabling
                    && target.is_some_and(|t| self.port_settings.bounces(&t, n.info.node_guid, &before, &after));
                if bounce {
                    after.port_state = PortState::Down;
                }
                if after != before {
                    // A port in Init whose peer's link is up is armed by the same Set, as OpenSM
                    // does (one SMP instead of two); the arming pass skips it then.
                    let mut step = PortStep::Configure;
                    if !bounce
                        && info.port_state == PortState::Init
                        && !disabling
                        && matches!(peer_state, Some(PortState::Init | PortState::Armed | PortState::Active))
                    {
                        after.port_state = PortState::Armed;
                        step = PortStep::Arm;
                    }
                    planned.push((i, ConfSet::Port { port, step, at: infos.len() }));
                    infos.push(after);
                }
            }
            // PortStateChange is not cleared here: discovery cleared it before reading the
            // ports, and a change since is the light sweep's to find.
            if let Some(si) = n.switch_info.map(|si| SwitchInfo { port_state_change: false, ..si }) {
                let mut want = si;
                want.linear_fdb_top = Lid(top);
                want.life_time_value = self.cfg.switch_life_time;
                if crate::core::sa::multicast::honours_mft_top(n) {
                    want.multicast_fdb_top = crate::core::sa::multicast::mft_top(self.sa.mft(n.info.node_guid));
                }
                if want != si {
                    planned.push((i, ConfSet::Switch(want)));
                }
            }
        }
        // Port and switch settings first, then P_Key tables, then QoS tables, each spread over
        // the nodes. The tables are built once the first port Sets are out (the window full,
        // or every port Set sent): the SMPs of the configuration start a table build earlier,
        // in the same order.
        if planned.is_empty() {
            self.table_sets();
        } else {
            let sets = self.configuration_sets(&planned, infos);
            self.tx.push_feed(sets.into_iter(), Op::Sweep);
            self.sweep.defer_tables();
        }
    }

    /// The configuration's Sets (`planned`, node by node, the PortInfos in `infos`) built in
    /// the order they go ([`interleave_order`], as [`crate::core::transactions::interleaved`]
    /// takes them), their PortInfos one batch in that order: built node by node and taken in
    /// turn, 200,000 Sets at k = 48 touched a new cache line at each, and each PortInfo was a
    /// box of its own to free when its answer came.
    fn configuration_sets(&self, planned: &[(NodeIdx, ConfSet)], infos: Vec<PortInfo>) -> Vec<Request> {
        let order =
            interleave_order(planned.len(), |k| planned.get(k).map(|(n, _)| *n), spread(self.cfg.max_smps_in_flight));
        let in_order = || order.iter().filter_map(|&k| planned.get(k as usize));
        let sent: Vec<PortInfo> = in_order()
            .filter_map(|(_, set)| match set {
                ConfSet::Port { at, .. } => Some(infos.get(*at).copied().unwrap_or_default()),
                ConfSet::Switch(_) => None,
            })
            .collect();
        drop(infos);
        let batch = std::sync::Arc::new(sent);
        let mut next = 0;
        let mut sets = Vec::with_capacity(order.len());
        for &(node, ref set) in in_order() {
            let req = match *set {
                ConfSet::Port { port, step, .. } => {
                    next += 1;
                    let Some(info) = PlannedInfo::of(&batch, next - 1) else { continue };
                    Req::SetPortInfo { node, port, info, step }
                }
                ConfSet::Switch(info) => Req::SetSwitchInfo { node, info },
            };
            let Some(n) = self.subnet.node(node) else { continue };
            let path = match req {
                Req::SetPortInfo { port, .. } => n.path_for(port),
                _ => n.path,
            };
            sets.push(Request::sweep(path, req));
        }
        sets
    }

    /// The configuration's P_Key and QoS table Sets, queued after its port Sets: true if there
    /// is any.
    fn table_sets(&mut self) -> bool {
        let pkeys = self.partitions.pkey_sets(&self.subnet);
        let qos = self.qos_sets();
        let any = !(pkeys.is_empty() && qos.is_empty());
        for feed in [pkeys, qos] {
            self.tx.push_feed(interleaved(feed, spread(self.cfg.max_smps_in_flight)), Op::Sweep);
        }
        any
    }

    /// Builds and queues the configuration's table Sets if they are due ([`Sm::configure_ports`]
    /// left them for after its first port Sets): true if it queued any.
    pub(in crate::core) fn build_due_table_sets(&mut self) -> bool {
        // A sweep that left the configuration (it stopped, or gave way) builds none.
        if !self.sweep.take_tables_due() || self.phase != SweepPhase::ConfiguringPorts {
            return false;
        }
        self.table_sets()
    }

    /// The QoS table Sets of this sweep (the digests published again first where a table is
    /// about to change).
    fn qos_sets(&mut self) -> Vec<Request> {
        let sets = self.qos.table_sets(&self.subnet, self.cfg.use_optimized_slvl);
        self.publish_qos_digests_if_changed();
        sets
    }

    /// Queues PortState Sets for `step` (Arm: linked ports in Init; Activate: ports in Armed).
    pub(in crate::core) fn walk_port_states(&mut self, step: PortStep) {
        let (from, to) = match step {
            PortStep::Arm => (PortState::Init, PortState::Armed),
            _ => (PortState::Armed, PortState::Active),
        };
        // The ports first, then their Sets in a vector of just that size (grown by doubling,
        // a vector of 263,000 Sets could hold as much empty room again).
        let mut ports: Vec<(NodeIdx, PortNum)> = Vec::new();
        for (i, n) in self.subnet.nodes.iter().enumerate().filter(|(_, n)| !n.carried) {
            for (p, rec) in n.ports.iter().enumerate().skip(1) {
                let Some(info) = rec.info else { continue };
                if info.port_state != from || rec.remote.is_none() {
                    continue;
                }
                let port = PortNum(u8::try_from(p).unwrap_or(u8::MAX));
                // A link an operator disabled (at either end) is going down: not brought up.
                let far = rec.remote.and_then(|(rn, rp)| Some((self.subnet.node(rn)?.info.node_guid, rp)));
                if self.port_disabled(n.info.node_guid, port) || far.is_some_and(|(g, fp)| self.port_disabled(g, fp)) {
                    continue;
                }
                ports.push((i, port));
            }
        }
        // Built in the order they go ([`interleave_order`]): taking 166,000 Sets out of a
        // vector in that order touched a new cache line at each.
        // Their PortInfos one batch in that order, shared by the Sets (not a box each).
        let order = interleave_order(ports.len(), |k| Some(ports[k].0), spread(self.cfg.max_smps_in_flight));
        let mut infos = Vec::with_capacity(ports.len());
        let mut sent = Vec::with_capacity(ports.len());
        for (i, port) in order.into_iter().filter_map(|k| ports.get(k as usize).copied()) {
            let Some(n) = self.subnet.node(i) else { continue };
            let Some(rec) = n.port(port) else { continue };
            let Some(info) = rec.info else { continue };
            let mut want = port_info_set(&info);
            want.port_state = to;
            if !n.is_switch() {
                self.cfg.m_key.apply(rec.guid, &mut want);
            }
            infos.push(want);
            sent.push((i, port));
        }
        let batch = std::sync::Arc::new(infos);
        let mut sets = Vec::with_capacity(sent.len());
        for (at, (i, port)) in sent.into_iter().enumerate() {
            let (Some(n), Some(info)) = (self.subnet.node(i), PlannedInfo::of(&batch, at)) else { continue };
            sets.push(Request::sweep(n.path_for(port), Req::SetPortInfo { node: i, port, info, step }));
        }
        self.tx.push_feed(sets.into_iter(), Op::Sweep);
    }

    pub(in crate::core) fn on_set_port_info(
        &mut self,
        request: &Request,
        (node, port, step): (NodeIdx, PortNum, PortStep),
        outcome: &Outcome,
    ) {
        if step == PortStep::Toggle {
            self.toggle_answered(request, outcome);
            return;
        }
        let reply = match outcome {
            Outcome::Reply { status, data } => PortInfo::parse(data).ok().map(|pi| (*status, pi)),
            Outcome::Timeout => None,
        };
        let target = match step {
            PortStep::Configure | PortStep::Toggle => None,
            PortStep::Arm => Some(PortState::Armed),
            PortStep::Activate => Some(PortState::Active),
        };
        let reached = |pi: &PortInfo| match target {
            Some(PortState::Armed) => matches!(pi.port_state, PortState::Armed | PortState::Active),
            Some(t) => pi.port_state == t,
            None => false,
        };
        let ok = match &reply {
            Some((0, _)) => true,
            // A retried state change whose first try did arrive: the port is already there.
            Some((_, pi)) => reached(pi),
            None => false,
        };
        if !ok {
            self.fail(request, outcome);
            return;
        }
        let Some((_, pi)) = reply else { return };
        self.sweep.port_stepped(step);
        self.mkeys.learn_key(&self.subnet, node, port, &pi);
        if let Req::SetPortInfo { info: sent, .. } = &request.req
            && PortSettings::may_learn(sent, &pi)
            && let (Some(t), Some(n)) = (Target::of(&self.subnet, node, port), self.subnet.node(node))
        {
            let guid = n.info.node_guid;
            // Reported at the sweep's end, all ports in one event.
            self.port_settings.learn(&self.cfg.ports, &t, guid, sent, &pi);
            // A bounce retrains the link at both ends: the far end is in Init too (as OpenSM
            // books it), so that the arming pass brings both back up.
            if step == PortStep::Configure && sent.port_state == PortState::Down {
                self.port_settings.bounced(guid, port);
                if let Some((rn, rp)) = n.port(port).and_then(|r| r.remote)
                    && let Some(far) =
                        self.subnet.nodes.get_mut(rn).and_then(|n| n.port_mut(rp)).and_then(|r| r.info.as_mut())
                    && matches!(far.port_state, PortState::Armed | PortState::Active)
                {
                    far.port_state = PortState::Init;
                }
            }
        }
        if let Some(rec) = self.subnet.nodes.get_mut(node).and_then(|n| n.port_mut(port)) {
            rec.info = Some(pi);
        }
        // A port's state written (a babbling port toggled between sweeps, too): the routing
        // view is relinked over every port next.
        self.routing.unsettle_view();
    }

    pub(in crate::core) fn on_set_switch_info(&mut self, request: &Request, node: NodeIdx, outcome: &Outcome) {
        match outcome {
            Outcome::Reply { status: 0, data } => {
                if let (Ok(si), Some(n)) = (SwitchInfo::parse(data), self.subnet.nodes.get_mut(node)) {
                    n.switch_info = Some(si);
                }
            }
            _ => self.fail(request, outcome),
        }
        // Discovery's or a quick sweep's clear of PortStateChange: the switch's ports are read
        // now.
        if self.discovery.cleared(node) {
            self.feed_port_reads();
        }
        self.quick_cleared(node);
    }
}

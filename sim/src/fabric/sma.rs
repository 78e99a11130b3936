//! The subnet management agent of every simulated node: answers SMP Get/Set from the node's
//! state, checks M_Keys (protect bits 0–3, lease timer, violation counter, trap 256), applies the
//! port state machine rules to PortInfo Sets, raises traps 128 and 144, and logs each trap it
//! sends with the TrapRepress that came back for it (one that passed the M_Key check). A port's
//! GUIDInfo table (alias GUIDs, PortInfo.GUIDCap entries) is stored by Set and answered by Get
//! (ibsim's SMA answers Get only).
//!
//! Validity checks follow the IBTA rules: a Set with any invalid field changes nothing and is
//! answered with status 0x001c; an attribute a node does not have (SwitchInfo on a CA) gives
//! 0x000c; an unknown method gives 0x0008; a class version other than 1 gives 0x0004.

use ibsm_mad::attrs::{
    CapabilityMask, LinkDownDefaultState, LinkSpeed, LinkSpeedExt, LinkSpeedExtMask, LinkSpeedMask, LinkWidth,
    LinkWidthMask, Mtu, NodeDescription, NodeInfo, NodeType, PKeyTable, PhysPortState, PortInfo, PortState, SwitchInfo,
};
use ibsm_mad::attrs::{GuidInfo, Notice, NoticeDetails, NoticeType, ProducerType};
use ibsm_mad::header::{Mad, Method};
use ibsm_mad::smp::{DrSmp, Smp};
use ibsm_mad::{Attribute, Guid, Lid, MAD_LEN, MKey, PKey, PortNum, ids};

use super::state::{DEFAULT_SL2VL, LState, PState, PortRef};
use super::{Dest, Event, Fabric};
use crate::topology::NodeKind;

/// What the SMA does with an SMP it received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// `mad` now holds the response; send it back.
    Reply,
    /// Hand the SMP to an agent on the port (SMInfo and the like).
    ToAgent,
    /// Drop without answer (M_Key failure, malformed).
    Silent,
}

/// Result of an attribute handler: a status, with the data area already written.
type Handled = u16;

impl Fabric {
    /// Processes an SMP that arrived at port `p` (for DR, `p` is the arrival port).
    pub(crate) fn sma(&mut self, p: PortRef, mad: &mut [u8; MAD_LEN], is_dr: bool) -> Outcome {
        let hdr = Mad::new_unchecked(&mad[..]);
        if hdr.base_version() != 1 {
            self.stats.dropped_malformed += 1;
            return Outcome::Silent;
        }
        let (method, attr, attr_mod) = (hdr.method().raw(), hdr.attr_id(), hdr.attr_mod());
        let key = if is_dr { DrSmp::new_unchecked(&mad[..]).m_key() } else { Smp::new_unchecked(&mad[..]).m_key() };
        if hdr.class_version() != 1 {
            return self.respond(mad, ids::status::BAD_VERSION);
        }
        if method & ids::method::RESPONSE != 0 {
            return Outcome::ToAgent;
        }
        // M_Key check against the management port of a switch, or the arrival port of a CA.
        let key_port = self.key_port(p);
        let hide_key = match self.mkey_check(key_port, method, key) {
            MkeyVerdict::Pass { hide } => hide,
            MkeyVerdict::Fail => {
                self.stats.dropped_mkey += 1;
                self.trap_256(key_port, mad, is_dr);
                return Outcome::Silent;
            }
        };
        if method == ids::method::SET {
            let node = self.ports[p as usize].node as usize;
            let fault = self.set_faults.iter().find(|f| f.attr == attr && f.node.is_none_or(|n| n == node));
            if let Some(f) = fault.copied() {
                self.stats.sets_refused_by_fault += 1;
                return match f.status {
                    Some(status) => self.respond(mad, status),
                    None => Outcome::Silent,
                };
            }
        }
        let status = match method {
            ids::method::GET | ids::method::SET => {
                let set = method == ids::method::SET;
                let mut data = [0u8; 64];
                data.copy_from_slice(&mad[64..128]);
                let st = self.attribute(p, attr, attr_mod, set, &mut data, hide_key);
                match st {
                    Ok(st) => {
                        mad[64..128].copy_from_slice(&data);
                        st
                    }
                    Err(to_agent) => {
                        debug_assert!(to_agent);
                        return Outcome::ToAgent;
                    }
                }
            }
            ids::method::TRAP_REPRESS => {
                // Past the M_Key check: it stops the trap it names from being repeated.
                let (node, tid) = (self.ports[p as usize].node as usize, hdr_tid(mad));
                let now = self.now;
                let hit = self.traps.iter_mut().rev().find(|t| t.node == node && t.tid == tid);
                match hit.filter(|_| attr == ids::attr::NOTICE) {
                    Some(t) => {
                        t.repressed_at.get_or_insert(now);
                        self.stats.trap_represses += 1;
                    }
                    None => self.stats.trap_represses_unmatched += 1,
                }
                return Outcome::Silent;
            }
            _ => ids::status::BAD_METHOD,
        };
        self.respond(mad, status)
    }

    fn respond(&mut self, mad: &mut [u8; MAD_LEN], status: u16) -> Outcome {
        if let Ok(()) = ibsm_mad::smp::make_response(mad, status) {
            Outcome::Reply
        } else {
            self.stats.dropped_malformed += 1;
            Outcome::Silent
        }
    }

    /// The port whose M_Key guards an SMP arriving at `p`.
    fn key_port(&self, p: PortRef) -> PortRef {
        let node = &self.nodes[self.ports[p as usize].node as usize];
        if node.kind == NodeKind::Switch { node.first_port } else { p }
    }

    /// Dispatches one attribute. `Err(true)` means "not ours: hand to an agent".
    fn attribute(
        &mut self,
        p: PortRef,
        attr: u16,
        attr_mod: u32,
        set: bool,
        data: &mut [u8; 64],
        hide_key: bool,
    ) -> Result<Handled, bool> {
        let node_idx = self.ports[p as usize].node as usize;
        let is_switch = self.nodes[node_idx].kind == NodeKind::Switch;
        let ro = |set: bool| if set { Some(ids::status::BAD_METHOD_ATTR) } else { None };
        let st = match attr {
            ids::attr::NODE_DESC => ro(set).unwrap_or_else(|| self.get_node_desc(node_idx, data)),
            ids::attr::NODE_INFO => ro(set).unwrap_or_else(|| self.get_node_info(p, data)),
            ids::attr::GUID_INFO => self.guid_info(p, attr_mod, set, data),
            ids::attr::PORT_INFO => self.port_info(p, attr_mod, set, data, hide_key),
            ids::attr::PKEY_TABLE => self.pkey_table(p, attr_mod, set, data),
            ids::attr::SWITCH_INFO if is_switch => self.switch_info(node_idx, set, data),
            ids::attr::LFT if is_switch => self.lft(node_idx, attr_mod, set, data),
            ids::attr::MFT if is_switch => self.mft(node_idx, attr_mod, set, data),
            ids::attr::SL2VL_TABLE => self.sl2vl(p, attr_mod, set, data),
            ids::attr::VL_ARB_TABLE => self.vlarb(p, attr_mod, set, data),
            // A CA has no switch attributes: its SMA says so itself, as ibsim's does.
            ids::attr::SWITCH_INFO | ids::attr::LFT | ids::attr::MFT => ids::status::BAD_METHOD_ATTR,
            // SMInfo, and any attribute the SMA has no handler for, go to the agent at the port
            // (the SM there answers; with none, the port answers 0x000c), as in ibsim.
            _ => return Err(true),
        };
        Ok(st)
    }

    fn get_node_desc(&self, node: usize, data: &mut [u8; 64]) -> Handled {
        let name = self.names.get(node).map_or("", String::as_str);
        NodeDescription::new(name).emit(data);
        ids::status::OK
    }

    fn get_node_info(&self, p: PortRef, data: &mut [u8; 64]) -> Handled {
        let port = &self.ports[p as usize];
        let n = &self.nodes[port.node as usize];
        let ni = NodeInfo {
            base_version: 1,
            class_version: 1,
            node_type: match n.kind {
                NodeKind::Switch => NodeType::Switch,
                NodeKind::Ca => NodeType::Ca,
                NodeKind::Router => NodeType::Router,
            },
            num_ports: n.num_ports,
            system_image_guid: n.sys_guid,
            node_guid: n.guid,
            port_guid: port.guid,
            partition_cap: n.partition_cap,
            device_id: n.device_id,
            revision: n.revision,
            local_port_num: PortNum(port.num),
            vendor_id: n.vendor_id,
        };
        ni.emit(data);
        ids::status::OK
    }

    /// GUIDInfo of the port the SMP arrived on (a switch's port 0): block `attr_mod` of its GUIDCap entries. A Set
    /// stores entries 1.. of the block (entry 0 is the port GUID, read-only; entries past
    /// GUIDCap are not kept) and answers the block as stored; a block past GUIDCap is
    /// BAD_FIELD.
    fn guid_info(&mut self, p: PortRef, attr_mod: u32, set: bool, data: &mut [u8; 64]) -> Handled {
        // A switch's table is its port 0's.
        let p = self.key_port(p);
        let port = &mut self.ports[p as usize];
        let cap = usize::from(port.guid_cap.max(1));
        let Ok(block) = usize::try_from(attr_mod) else { return ids::status::BAD_FIELD };
        if block >= cap.div_ceil(GuidInfo::ENTRIES) {
            return ids::status::BAD_FIELD;
        }
        let first = block * GuidInfo::ENTRIES;
        if set {
            let Ok(written) = GuidInfo::parse(data) else { return ids::status::BAD_FIELD };
            for (i, g) in written.guids.iter().enumerate() {
                let index = first + i;
                if index == 0 || index >= cap {
                    continue;
                }
                port.set_alias(index, *g);
            }
        }
        let mut gi = GuidInfo { guids: [Guid(0); 8] };
        for (i, g) in gi.guids.iter_mut().enumerate() {
            let index = first + i;
            *g = match index {
                _ if index >= cap => Guid(0),
                _ => port.alias(index),
            };
        }
        data.fill(0);
        gi.emit(data);
        ids::status::OK
    }

    /// Resolves the port a PortInfo/P_KeyTable/SL2VL/VLArb modifier names, from arrival port `p`.
    fn target_port(&self, p: PortRef, num: u32) -> Option<PortRef> {
        let node = &self.nodes[self.ports[p as usize].node as usize];
        match node.kind {
            NodeKind::Switch => {
                let num = u8::try_from(num).ok()?;
                (num <= node.num_ports).then(|| node.first_port + PortRef::from(num))
            }
            // A CA answers for the port the SMP arrived on (modifier 0 or that port's number).
            _ => (num == 0 || num == u32::from(self.ports[p as usize].num)).then_some(p),
        }
    }

    /// PortInfo of port `q` as answered to an SMP that arrived on port `arrival`; `ext`: the SMP
    /// carried SMSupportExtendedSpeeds (AM bit 31), without which the XDR fields read 0.
    fn port_info_of(&self, q: PortRef, arrival: PortRef, hide_key: bool, ext: bool) -> PortInfo {
        let port = &self.ports[q as usize];
        let node = &self.nodes[port.node as usize];
        let is_switch = node.kind == NodeKind::Switch;
        // A switch's external ports report the switch's LID/LMC/SM LID, held on port 0.
        let base = if is_switch { &self.ports[node.first_port as usize] } else { port };
        let xdr = self.cfg.xdr && ext;
        PortInfo {
            m_key: MKey(if hide_key { 0 } else { base.m_key }),
            gid_prefix: base.gid_prefix,
            lid: Lid(base.lid),
            master_sm_lid: Lid(base.sm_lid),
            capability_mask: CapabilityMask(
                if is_switch {
                    base.cap_mask
                        | if self.cfg.mft_top_supported { super::state::cap::IS_MULTICAST_FDB_TOP_SUPPORTED } else { 0 }
                } else {
                    port.cap_mask
                } | if self.cfg.xdr { super::state::cap::IS_CAPABILITY_MASK2_SUPPORTED } else { 0 },
            ),
            diag_code: 0,
            m_key_lease_period: base.lease,
            // "The link port number this SMP came in on", whatever port it asks about.
            local_port_num: PortNum(self.ports[arrival as usize].num),
            link_width_enabled: LinkWidthMask(port.width_enabled),
            link_width_supported: LinkWidthMask(port.width_supported),
            link_width_active: LinkWidth::from_raw(port.width_active),
            link_speed_supported: LinkSpeedMask(port.speed_supported),
            port_state: PortState::from_raw(port.state as u8),
            port_physical_state: PhysPortState::from_raw(port.phys as u8),
            link_down_default_state: LinkDownDefaultState::from_raw(port.link_down_default),
            m_key_protect_bits: base.protect,
            lmc: base.lmc,
            link_speed_active: LinkSpeed::from_raw(port.speed_active),
            link_speed_enabled: LinkSpeedMask(port.speed_enabled),
            neighbor_mtu: Mtu::from_raw(port.neighbor_mtu),
            master_sm_sl: base.sm_sl,
            vl_cap: port.vl_cap,
            init_type: 0,
            vl_high_limit: port.vl_high_limit,
            vl_arbitration_high_cap: 8,
            vl_arbitration_low_cap: 8,
            init_type_reply: 0,
            mtu_cap: Mtu::from_raw(port.mtu_cap),
            vl_stall_count: port.vl_stall_count,
            hoq_life: port.hoq_life,
            operational_vls: port.op_vls,
            partition_enforcement_inbound: port.part_enf_in,
            partition_enforcement_outbound: port.part_enf_out,
            filter_raw_inbound: port.filter_raw_in,
            filter_raw_outbound: port.filter_raw_out,
            m_key_violations: base.mkey_violations,
            p_key_violations: port.pkey_violations,
            q_key_violations: port.qkey_violations,
            guid_cap: port.guid_cap,
            client_reregister: false,
            multicast_pkey_trap_suppression_enabled: 0,
            subnet_timeout: base.subnet_timeout,
            resp_time_value: port.resp_time,
            local_phy_errors: port.phy_errors_threshold,
            overrun_errors: port.overrun_errors_threshold,
            max_credit_hint: 0,
            link_speed_ext_active2: u8::from(xdr && port.link_up()),
            link_speed_ext_supported2: u8::from(xdr),
            link_speed_ext_enabled2: u8::from(xdr),
            link_round_trip_latency: 0,
            capability_mask2: if self.cfg.xdr {
                ibsm_mad::attrs::CapabilityMask2::IS_EXTENDED_SPEEDS2_SUPPORTED
                    | ibsm_mad::attrs::CapabilityMask2::IS_LINK_SPEED_XDR_SUPPORTED
            } else {
                ibsm_mad::attrs::CapabilityMask2(0)
            },
            link_speed_ext_active: LinkSpeedExt::from_raw(0),
            link_speed_ext_supported: LinkSpeedExtMask(0),
            link_speed_ext_enabled: LinkSpeedExtMask(0),
        }
    }

    fn port_info(&mut self, p: PortRef, attr_mod: u32, set: bool, data: &mut [u8; 64], hide_key: bool) -> Handled {
        let ext = attr_mod & ibsm_mad::attrs::SM_SUPPORTS_EXTENDED_SPEEDS != 0;
        let Some(q) = self.target_port(p, attr_mod & !ibsm_mad::attrs::SM_SUPPORTS_EXTENDED_SPEEDS) else {
            return ids::status::BAD_FIELD;
        };
        if set {
            let Ok(req) = PortInfo::parse(&data[..]) else { return ids::status::BAD_FIELD };
            let st = self.port_info_set(q, &req);
            if st != ids::status::OK {
                // The response carries the unchanged attribute.
                self.port_info_of(q, p, hide_key, ext).emit(data);
                return st;
            }
            self.stats.port_info_sets += 1;
        }
        self.port_info_of(q, p, hide_key, ext).emit(data);
        ids::status::OK
    }

    /// Validates a PortInfo Set completely, then applies it. Nothing changes on an error.
    #[allow(clippy::too_many_lines)] // one check or assignment per PortInfo field, in spec order
    fn port_info_set(&mut self, q: PortRef, req: &PortInfo) -> Handled {
        let bad = ids::status::BAD_FIELD;
        let port = &self.ports[q as usize];
        let node = &self.nodes[port.node as usize];
        let is_switch = node.kind == NodeKind::Switch;
        let base_ref = if is_switch { node.first_port } else { q };
        let is_mgmt = !is_switch || port.num == 0;
        // Field checks.
        if is_mgmt && !(req.lid.0 < 0xc000 && req.master_sm_lid.0 < 0xc000) {
            return bad;
        }
        if req.lmc > 7 {
            return bad;
        }
        if req.operational_vls > port.vl_cap || req.neighbor_mtu.raw() > port.mtu_cap {
            return bad;
        }
        let we = req.link_width_enabled.0;
        if we != 0 && we != 0xff && we & !port.width_supported != 0 {
            return bad;
        }
        let se = req.link_speed_enabled.0;
        if se != 0 && se != 0x0f && se & !port.speed_supported != 0 {
            return bad;
        }
        let phys = match req.port_physical_state {
            PhysPortState::NoChange => None,
            PhysPortState::Polling => Some(PState::Polling),
            PhysPortState::Disabled => Some(PState::Disabled),
            _ => return bad,
        };
        // Port state transitions (IBTA 7.2.x): Down forces a retrain; Armed only from Init with
        // the neighbour at least Init; Active only from Armed with the neighbour Armed/Active.
        // The neighbour's record is read only then (a Set that leaves the state, as most of
        // the configuration's do, does not touch it: a cache miss a Set on a large fabric).
        let peer_state = || port.peer.map(|r| self.ports[r as usize].state);
        let new_state = match req.port_state {
            PortState::NoChange => None,
            PortState::Down => Some(LState::Down),
            PortState::Armed => {
                let ok = port.num != 0 || !is_switch;
                let ok = ok && port.link_up() && port.state == LState::Init;
                let ok = ok && peer_state().is_some_and(|s| matches!(s, LState::Init | LState::Armed | LState::Active));
                if !ok {
                    return bad;
                }
                Some(LState::Armed)
            }
            PortState::Active => {
                let ok = port.link_up() && port.state == LState::Armed;
                let ok = ok && peer_state().is_some_and(|s| matches!(s, LState::Armed | LState::Active));
                if !ok {
                    return bad;
                }
                Some(LState::Active)
            }
            _ => return bad,
        };
        // Apply.
        if req.client_reregister && !is_switch {
            self.stats.client_reregisters += 1;
            if self.reregistrations.len() >= super::TRAP_LOG_LEN {
                self.reregistrations.pop_front();
            }
            self.reregistrations.push_back((port.node as usize, port.num, self.now));
        }
        let old_width = (port.width_enabled, port.speed_enabled);
        {
            let base = &mut self.ports[base_ref as usize];
            if is_mgmt {
                base.lid = req.lid.0;
                base.lmc = req.lmc;
                base.sm_lid = req.master_sm_lid.0;
                base.sm_sl = req.master_sm_sl;
                base.m_key = req.m_key.0;
                base.protect = req.m_key_protect_bits;
                base.lease = req.m_key_lease_period;
                base.gid_prefix = req.gid_prefix;
                base.subnet_timeout = req.subnet_timeout;
                base.mkey_violations = req.m_key_violations;
            }
        }
        let port = &mut self.ports[q as usize];
        if we == 0xff {
            port.width_enabled = port.width_supported;
        } else if we != 0 {
            port.width_enabled = we;
        }
        if se == 0x0f {
            port.speed_enabled = port.speed_supported;
        } else if se != 0 {
            port.speed_enabled = se;
        }
        if req.link_down_default_state != LinkDownDefaultState::NoChange {
            port.link_down_default = req.link_down_default_state.raw();
        }
        port.neighbor_mtu = req.neighbor_mtu.raw();
        port.op_vls = req.operational_vls;
        port.vl_high_limit = req.vl_high_limit;
        port.hoq_life = req.hoq_life;
        port.vl_stall_count = req.vl_stall_count;
        if self.cfg.keeps_error_thresholds {
            port.phy_errors_threshold = req.local_phy_errors;
            port.overrun_errors_threshold = req.overrun_errors;
        }
        port.part_enf_in = req.partition_enforcement_inbound;
        port.part_enf_out = req.partition_enforcement_outbound;
        port.filter_raw_in = req.filter_raw_inbound;
        port.filter_raw_out = req.filter_raw_outbound;
        port.pkey_violations = req.p_key_violations;
        port.qkey_violations = req.q_key_violations;
        let width_changed = old_width != (port.width_enabled, port.speed_enabled);
        if let Some(s) = new_state {
            if s == LState::Down {
                // A retrain: the link drops and comes back to Init on both ends.
                if port.link_up() {
                    self.stats.link_retrains += 1;
                    self.retrain_pulse(q);
                }
            } else {
                self.ports[q as usize].state = s;
            }
        }
        if let Some(ph) = phys {
            let port = &mut self.ports[q as usize];
            let was_disabled = port.phys == PState::Disabled;
            if ph == PState::Disabled {
                port.phys = PState::Disabled;
                port.state = LState::Down;
                self.retrain(q);
            } else if was_disabled {
                port.phys = PState::Polling;
                self.retrain(q);
            }
        }
        if width_changed {
            self.trap_144(base_ref, false);
        }
        ids::status::OK
    }

    /// Link retrain after PortState=Down: both ends pass through Down back to Init at once, and
    /// the far end's switch, if any, marks PortStateChange (no trap), as ibsim does. The port
    /// the Set went to marks nothing: a SubnSet raises no PortStateChange on its own switch.
    fn retrain_pulse(&mut self, q: PortRef) {
        let peer = self.ports[q as usize].peer;
        for r in std::iter::once(q).chain(peer) {
            self.ports[r as usize].state = LState::Init;
        }
        if let Some(r) = peer
            && let Some(s) = self.nodes[self.ports[r as usize].node as usize].switch
        {
            self.switches[s as usize].port_state_change = true;
        }
    }

    /// Number of 32-entry P_Key blocks the port `q` holds.
    fn pkey_blocks(&self, q: PortRef) -> u16 {
        let port = &self.ports[q as usize];
        let node = &self.nodes[port.node as usize];
        let cap = if node.kind == NodeKind::Switch && port.num != 0 { 64 } else { node.partition_cap };
        cap.div_ceil(32)
    }

    fn pkey_table(&mut self, p: PortRef, attr_mod: u32, set: bool, data: &mut [u8; 64]) -> Handled {
        let (port_num, block) = PKeyTable::split_attr_mod(attr_mod);
        let is_switch = self.is_switch_port(p);
        let Some(q) = self.target_port(p, if is_switch { u32::from(port_num.0) } else { 0 }) else {
            return ids::status::BAD_FIELD;
        };
        if block >= self.pkey_blocks(q) {
            return ids::status::BAD_FIELD;
        }
        let start = usize::from(block) * 32;
        if set {
            let Ok(t) = PKeyTable::parse(&data[..]) else { return ids::status::BAD_FIELD };
            let total = usize::from(self.pkey_blocks(q)) * 32;
            let keys = self.ports[q as usize].pkeys_mut(total);
            for (i, k) in t.keys.iter().enumerate() {
                if let Some(e) = keys.get_mut(start + i) {
                    *e = k.0;
                }
            }
        }
        let port = &self.ports[q as usize];
        let mut t = PKeyTable { keys: [PKey(0); 32] };
        for (i, k) in t.keys.iter_mut().enumerate() {
            *k = PKey(port.pkey(start + i));
        }
        t.emit(data);
        ids::status::OK
    }

    fn switch_info(&mut self, node: usize, set: bool, data: &mut [u8; 64]) -> Handled {
        let Some(s) = self.nodes[node].switch else { return ids::status::BAD_METHOD_ATTR };
        let cap = self.cfg.linear_fdb_cap;
        if set {
            let Ok(req) = SwitchInfo::parse(&data[..]) else { return ids::status::BAD_FIELD };
            let mcap = self.mcast_cap(s);
            let top_ok = req.linear_fdb_top.0 < cap;
            // 0, or 0xBFFF (below the multicast range: no entry valid), or an MLID within the cap.
            let mtop_ok = matches!(req.multicast_fdb_top.0, 0 | 0xbfff)
                || (req.multicast_fdb_top.0 >= 0xc000 && req.multicast_fdb_top.0 - 0xc000 < mcap);
            if !top_ok || !mtop_ok {
                self.switch_info_of(s).emit(data);
                return ids::status::BAD_FIELD;
            }
            let sw = &mut self.switches[s as usize];
            sw.lft_top = req.linear_fdb_top.0;
            sw.mft_top = req.multicast_fdb_top.0;
            sw.life_time = req.life_time_value;
            sw.default_port = req.default_port.0;
            sw.default_mcast_primary = req.default_multicast_primary_port.0;
            sw.default_mcast_not_primary = req.default_multicast_not_primary_port.0;
            if req.port_state_change {
                // Write 1 to clear.
                sw.port_state_change = false;
            }
        }
        self.switch_info_of(s).emit(data);
        ids::status::OK
    }

    /// Switch `s`'s MulticastFDBCap: its own when set, else the configuration's.
    fn mcast_cap(&self, s: u32) -> u16 {
        self.switches.get(s as usize).and_then(|sw| sw.mcast_cap).unwrap_or(self.cfg.multicast_fdb_cap)
    }

    fn switch_info_of(&self, s: u32) -> SwitchInfo {
        let sw = &self.switches[s as usize];
        SwitchInfo {
            linear_fdb_cap: self.cfg.linear_fdb_cap,
            random_fdb_cap: 0,
            multicast_fdb_cap: self.mcast_cap(s),
            linear_fdb_top: Lid(sw.lft_top),
            default_port: PortNum(sw.default_port),
            default_multicast_primary_port: PortNum(sw.default_mcast_primary),
            default_multicast_not_primary_port: PortNum(sw.default_mcast_not_primary),
            life_time_value: sw.life_time,
            port_state_change: sw.port_state_change,
            optimized_sl_to_vl_mapping_programming: u8::from(self.cfg.optimized_sl2vl),
            lids_per_port: 0,
            partition_enforcement_cap: 64,
            inbound_enforcement_cap: true,
            outbound_enforcement_cap: true,
            filter_raw_inbound_cap: true,
            filter_raw_outbound_cap: true,
            enhanced_port0: false,
            multicast_fdb_top: Lid(sw.mft_top),
        }
    }

    fn lft(&mut self, node: usize, attr_mod: u32, set: bool, data: &mut [u8; 64]) -> Handled {
        let Some(s) = self.nodes[node].switch else { return ids::status::BAD_METHOD_ATTR };
        let blocks = u32::from(self.cfg.linear_fdb_cap).div_ceil(64);
        if attr_mod >= blocks {
            return ids::status::BAD_FIELD;
        }
        let sw = &mut self.switches[s as usize];
        // A block is its 64 port bytes as they are on the wire (LinearForwardingTable's
        // layout), kept as they were written: the answer to a Set is the block it wrote, which
        // `data` already holds.
        if set {
            // Room for the table up to LinearFDBTop at once: grown block by block, the
            // vector would double and hold up to twice the table.
            let blocks_to_top = usize::from(sw.lft_top) / 64 + 1;
            let changed = sw.lft.set(&mut self.lft_blocks, attr_mod as usize, data, blocks_to_top);
            self.stats.lft_blocks_set += 1;
            self.stats.lft_blocks_changed += u64::from(changed);
            self.stats.last_lft_set_at = self.now;
        } else {
            self.stats.lft_blocks_read += 1;
            data.copy_from_slice(sw.lft.block(&self.lft_blocks, attr_mod as usize));
        }
        ids::status::OK
    }

    fn mft(&mut self, node: usize, attr_mod: u32, set: bool, data: &mut [u8; 64]) -> Handled {
        let Some(s) = self.nodes[node].switch else { return ids::status::BAD_METHOD_ATTR };
        let position = (attr_mod >> 28) as usize;
        let block = (attr_mod & 0x1ff) as usize;
        let entries = usize::from(self.mcast_cap(s));
        let nports = usize::from(self.nodes[node].num_ports);
        if block * 32 >= entries || position * 16 > nports {
            return ids::status::BAD_FIELD;
        }
        let sw = &mut self.switches[s as usize];
        if set {
            if sw.mft.len() < (block + 1) * 32 {
                sw.mft.resize((block + 1) * 32, [0; 16]);
            }
            for i in 0..32 {
                sw.mft[block * 32 + i][position] = ibsm_mad::bits::u16_at(&data[..], i * 2);
            }
        }
        for i in 0..32 {
            let v = sw.mft.get(block * 32 + i).map_or(0, |e| e[position]);
            ibsm_mad::bits::put_u16(&mut data[..], i * 2, v);
        }
        ids::status::OK
    }

    fn sl2vl(&mut self, p: PortRef, attr_mod: u32, set: bool, data: &mut [u8; 64]) -> Handled {
        let is_switch = self.is_switch_port(p);
        let (inp, outp) = (((attr_mod >> 8) & 0xff) as u8, (attr_mod & 0xff) as u8);
        let all_inputs = attr_mod & (1 << 16) != 0;
        if all_inputs && !(is_switch && self.cfg.optimized_sl2vl) {
            return ids::status::BAD_FIELD;
        }
        let slot: &mut [u8; 8] = if is_switch {
            let node = self.ports[p as usize].node as usize;
            let np = self.nodes[node].num_ports;
            if inp > np || outp > np {
                return ids::status::BAD_FIELD;
            }
            let Some(s) = self.nodes[node].switch else { return ids::status::BAD_FIELD };
            if all_inputs {
                if !set {
                    return ids::status::BAD_FIELD;
                }
                let mut table = [0u8; 8];
                table.copy_from_slice(&data[..8]);
                let tbl = &mut self.switches[s as usize].sl2vl;
                for i in 0..=np {
                    match tbl.iter_mut().find(|(k, _)| *k == (i, outp)) {
                        Some(slot) => slot.1 = table,
                        None => tbl.push(((i, outp), table)),
                    }
                }
                return ids::status::OK;
            }
            let tbl = &mut self.switches[s as usize].sl2vl;
            let at = tbl.iter().position(|(k, _)| *k == (inp, outp));
            match (at, set) {
                (Some(i), _) => &mut tbl[i].1,
                // A pair never written holds the default; only a Set stores one.
                (None, false) => {
                    data.fill(0);
                    data[..8].copy_from_slice(&DEFAULT_SL2VL);
                    return ids::status::OK;
                }
                (None, true) => {
                    tbl.push(((inp, outp), DEFAULT_SL2VL));
                    let last = tbl.len() - 1;
                    &mut tbl[last].1
                }
            }
        } else {
            &mut self.ports[p as usize].sl2vl
        };
        if set {
            slot.copy_from_slice(&data[..8]);
        }
        data.fill(0);
        data[..8].copy_from_slice(slot);
        ids::status::OK
    }

    fn vlarb(&mut self, p: PortRef, attr_mod: u32, set: bool, data: &mut [u8; 64]) -> Handled {
        let block = (attr_mod >> 16) as usize;
        let num = attr_mod & 0xffff;
        let is_switch = self.is_switch_port(p);
        let Some(q) = self.target_port(p, if is_switch { num } else { 0 }) else {
            return ids::status::BAD_FIELD;
        };
        // Blocks 2 and 4 hold entries 32..63, past the VLArbitrationLowCap/HighCap of 8 every
        // port reports: refused, as ibsim's ports refuse them.
        if block != 1 && block != 3 {
            return ids::status::BAD_FIELD;
        }
        let port = &mut self.ports[q as usize];
        if !set && port.vlarb().is_none() {
            data.copy_from_slice(&default_vlarb()[block - 1]);
            return ids::status::OK;
        }
        let tables = port.vlarb_mut(default_vlarb);
        if set {
            tables[block - 1].copy_from_slice(&data[..]);
        }
        data.copy_from_slice(&tables[block - 1]);
        ids::status::OK
    }

    /// The IBTA M_Key check for an SMP with `key` and `method` at the guarding port.
    fn mkey_check(&mut self, kp: PortRef, method: u8, key: MKey) -> MkeyVerdict {
        let now = self.now;
        let port = &mut self.ports[kp as usize];
        if port.m_key == 0 || port.m_key == key.0 {
            if port.m_key != 0 {
                // A valid key stops a running lease timer.
                port.lease_deadline = None;
            }
            return MkeyVerdict::Pass { hide: false };
        }
        let is_get = method == ids::method::GET;
        let verdict = match (is_get, port.protect) {
            (true, 0) => return MkeyVerdict::Pass { hide: false },
            (true, 1) => return MkeyVerdict::Pass { hide: true },
            _ => MkeyVerdict::Fail,
        };
        port.mkey_violations = port.mkey_violations.saturating_add(1);
        if port.lease != 0 && port.lease_deadline.is_none() {
            let at = now.plus(u64::from(port.lease) * 1_000_000_000);
            // Never 0: the lease is at least a second.
            port.lease_deadline = std::num::NonZeroU64::new(at.0);
            self.push(at, Event::LeaseCheck(kp));
        }
        verdict
    }

    /// Sends a trap from port `from` (a switch's port 0 or a CA port) to its MasterSMLID.
    pub(crate) fn send_trap(&mut self, from: PortRef, details: NoticeDetails, notice_type: NoticeType) {
        let port = &self.ports[from as usize];
        if port.lid == 0 || port.sm_lid == 0 || port.cap_mask & super::state::cap::IS_TRAP_SUPPORTED == 0 {
            return;
        }
        let (dlid, issuer) = (Lid(port.sm_lid), Lid(port.lid));
        let producer = match self.issuer_type(from) {
            NodeType::Switch => ProducerType::Switch,
            NodeType::Router => ProducerType::Router,
            _ => ProducerType::Ca,
        };
        let Some(notice) = Notice::generic(notice_type, producer, issuer, details) else { return };
        let node = port.node as usize;
        self.nodes[node].trap_tid = self.nodes[node].trap_tid.wrapping_add(1);
        let tid = u64::from(self.nodes[node].trap_tid);
        // The Notice is 80 bytes; an SMP carries its first 64 (IssuerGID is not used in SMPs).
        let mut full = [0u8; 80];
        notice.emit(&mut full);
        let mut data = [0u8; 64];
        data.copy_from_slice(&full[..64]);
        let smp = ibsm_mad::smp::SmpRepr::set_lid(ids::attr::NOTICE, 0, tid, data).with_method(Method::Trap);
        self.stats.traps_sent += 1;
        if self.traps.len() >= super::TRAP_LOG_LEN {
            self.traps.pop_front();
        }
        let number = notice.trap_number().unwrap_or_default();
        self.traps.push_back(super::TrapLog { node, tid, number, sent_at: self.now, repressed_at: None });
        let at = self.sma_slot(node);
        self.inject(at, from, smp.to_bytes(), Dest { dlid, qpn: 0 }, None);
    }

    /// Trap 128 (link state change) from a switch's port 0.
    pub(crate) fn trap_128(&mut self, port0: PortRef) {
        let lid = Lid(self.ports[port0 as usize].lid);
        self.send_trap(port0, NoticeDetails::Trap128 { lid }, NoticeType::Urgent);
    }

    /// Trap 144 for port `p`: its capability mask changed, or (`desc_changed`) its node's
    /// NodeDescription.
    pub(crate) fn trap_144(&mut self, p: PortRef, desc_changed: bool) {
        let port = &self.ports[p as usize];
        let details = NoticeDetails::Trap144 {
            lid: Lid(port.lid),
            other_local_changes: desc_changed,
            capability_mask: CapabilityMask(port.cap_mask),
            capability_mask2_change: false,
            hierarchy_info_change: false,
            sm_priority_change: false,
            link_speed_enabled_change: false,
            link_width_enabled_change: false,
            node_description_change: desc_changed,
            capability_mask2: ibsm_mad::attrs::CapabilityMask2(0),
        };
        self.send_trap(p, details, NoticeType::Info);
    }

    /// Trap 256 (bad M_Key) for an SMP refused at port `kp`.
    fn trap_256(&mut self, kp: PortRef, mad: &[u8; MAD_LEN], is_dr: bool) {
        let hdr = Mad::new_unchecked(&mad[..]);
        let mut return_path = [0u8; 30];
        let (dr_slid, key, hops) = if is_dr {
            let dr = DrSmp::new_unchecked(&mad[..]);
            let n = usize::from(dr.hop_count()).min(30);
            for (i, slot) in return_path.iter_mut().enumerate().take(n) {
                *slot = dr.return_path_port((i + 1) as u8).unwrap_or(0);
            }
            (dr.dr_slid(), dr.m_key(), dr.hop_count())
        } else {
            (Lid(0), Smp::new_unchecked(&mad[..]).m_key(), 0)
        };
        let details = NoticeDetails::Trap256 {
            lid: Lid(self.ports[kp as usize].lid),
            dr_slid,
            method: hdr.method().raw(),
            attribute_id: hdr.attr_id(),
            attribute_modifier: hdr.attr_mod(),
            m_key: key,
            dr_notice: is_dr,
            dr_path_truncated: hops > 30,
            dr_hop_count: hops,
            dr_notice_return_path: return_path,
        };
        self.send_trap(kp, details, NoticeType::Security);
    }

    /// Trap 257 (bad P_Key at a CA port) or 259 (at a switch external port) for a packet with
    /// `key` from `slid` to `dlid` refused at port `p`.
    pub(crate) fn trap_pkey(&mut self, p: PortRef, key: u16, (slid, dlid): (u16, u16), at_switch: bool) {
        let port = &self.ports[p as usize];
        let node = &self.nodes[port.node as usize];
        let (from, switch_lid) =
            if at_switch { (node.first_port, Lid(self.ports[node.first_port as usize].lid)) } else { (p, Lid(0)) };
        let details = if at_switch {
            NoticeDetails::Trap259 {
                data_valid: 0,
                lid1: Lid(slid),
                lid2: Lid(dlid),
                pkey: PKey(key),
                sl: 0,
                qp1: 0,
                qp2: 1,
                gid1: ibsm_mad::Gid::default(),
                gid2: ibsm_mad::Gid::default(),
                switch_lid,
                port_no: PortNum(port.num),
            }
        } else {
            NoticeDetails::Trap257(ibsm_mad::attrs::KeyViolation {
                lid1: Lid(slid),
                lid2: Lid(dlid),
                key: u32::from(key),
                sl: 0,
                qp1: 0,
                qp2: 1,
                gid1: ibsm_mad::Gid::default(),
                gid2: ibsm_mad::Gid::default(),
            })
        };
        self.send_trap(from, details, NoticeType::Security);
    }

    fn issuer_type(&self, p: PortRef) -> NodeType {
        match self.nodes[self.ports[p as usize].node as usize].kind {
            NodeKind::Switch => NodeType::Switch,
            NodeKind::Ca => NodeType::Ca,
            NodeKind::Router => NodeType::Router,
        }
    }

    /// Current GUID of a node (after any `SetGuid` fault).
    pub fn node_guid(&self, node: usize) -> Option<Guid> {
        self.nodes.get(node).map(|n| n.guid)
    }

    /// A switch's LFT entry for `lid` as the switch holds it now (`None` beyond its
    /// LinearFDBTop, unset, or not a switch): what a test judges intermediate tables by.
    pub fn lft_entry(&self, node: usize, lid: u16) -> Option<u8> {
        let sw = self.nodes.get(node)?.switch?;
        self.switches.get(sw as usize)?.lft_port(&self.lft_blocks, lid)
    }
}

/// Outcome of an M_Key check.
enum MkeyVerdict {
    Pass { hide: bool },
    Fail,
}

/// The VL arbitration blocks every port starts with, as ibsim's ports hold them (`smpquery
/// vlarb`): low priority (block 1) VL 0..7 with weights 0,4,4,4,4,4,4,4; high priority (block
/// 3) VL 0..7 with weights 4,0,0,0,0,0,0,0; blocks 2 and 4 empty.
fn default_vlarb() -> [[u8; 64]; 4] {
    let mut t = [[0u8; 64]; 4];
    for vl in 0..8u8 {
        let i = usize::from(vl) * 2;
        t[0][i] = vl;
        t[0][i + 1] = if vl == 0 { 0 } else { 4 };
        t[2][i] = vl;
        t[2][i + 1] = if vl == 0 { 4 } else { 0 };
    }
    t
}

/// The TransactionID of the MAD in `mad`.
fn hdr_tid(mad: &[u8; MAD_LEN]) -> u64 {
    Mad::new_unchecked(&mad[..]).tid()
}

//! Run-time state of nodes, ports and switches, built from a [`Topology`].
//!
//! Ports live in one flat vector (index = `PortRef`), nodes point at their first port, so a
//! 30,000-node fabric is a few allocations. Only what the SMA reports or checks is kept.

use std::num::NonZeroU64;

use ibsm_mad::Guid;

use super::lft::{Lft, LftBlocks};
use crate::topology::{NodeKind, Topology};

/// The SL-to-VL map every port starts with, as ibsim's ports hold it (`smpquery sl2vl`): SL n
/// to VL n for SL 0..=14, SL 15 to VL 7.
pub(crate) const DEFAULT_SL2VL: [u8; 8] = [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xe7];

/// Index of a node in the fabric (same as in the [`Topology`]).
pub type NodeRef = usize;
/// Index of a port in the fabric's flat port table.
pub type PortRef = u32;

/// Logical port state (PortInfo.PortState).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LState {
    Down = 1,
    Init = 2,
    Armed = 3,
    Active = 4,
}

/// Physical port state (PortInfo.PortPhysicalState), reduced to what the sim models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PState {
    Polling = 2,
    Disabled = 3,
    LinkUp = 5,
}

/// One simulated port. For switches, port 0 (the management port) carries the LID, LMC,
/// MasterSMLID and M_Key of the whole switch.
///
/// Laid out by hand (`repr(C)`) in two cache lines, aligned to 64 bytes. The first line holds
/// what a packet leaving through the port reads and writes (node, number, peer, cable, link
/// states, the peer's node and number, and the MAD count) and every field of the port's own
/// that PortInfo answers or a PortInfo Set checks (widths, speeds, MTUs, VLs, the violation
/// counts): a hop, or a PortInfo Get or Set to a switch's external port, touches one line of
/// it. The second line holds the management fields (a CA port's, or a switch's port 0's: M_Key,
/// LID, SM LID, capability mask, lease) and the rest. The k = 48 bring-up crosses 8 M ports and
/// sends 330,000 PortInfo SMPs in a fabric of 25 MB of port records, nearly every first touch
/// a cache miss; the 160-byte record of before spread a PortInfo over three lines.
#[derive(Debug, Clone)]
#[repr(C, align(64))]
pub(crate) struct Port {
    /// PerfMgt counters and the cable's error rate (see the `counters` module); its MAD count
    /// first.
    pub perf: super::counters::PortPerf,
    pub node: u32,
    /// Port at the other end of the cable, if one is plugged (whether or not the link is up).
    pub peer: Option<PortRef>,
    /// The node and number of `peer` (0 without a cable): what a directed route's walk reads
    /// of the port it arrives at, kept where it leaves.
    pub peer_node: u32,
    pub num: u8,
    /// The cable is connected (link faults clear this).
    pub cable: bool,
    pub phys: PState,
    pub state: LState,
    pub peer_num: u8,
    pub width_enabled: u8,
    pub width_supported: u8,
    pub width_active: u8,
    pub speed_enabled: u8,
    pub speed_supported: u8,
    pub speed_active: u8,
    pub link_down_default: u8,
    pub neighbor_mtu: u8,
    pub mtu_cap: u8,
    pub vl_cap: u8,
    pub op_vls: u8,
    pub vl_high_limit: u8,
    pub hoq_life: u8,
    pub vl_stall_count: u8,
    /// PortInfo.LocalPhyErrors and OverrunErrors: the thresholds of traps 129 and 130.
    pub phy_errors_threshold: u8,
    pub overrun_errors_threshold: u8,
    /// PortInfo.GUIDCap: entries in the port's GUIDInfo table (1 unless a test sets more).
    pub guid_cap: u8,
    pub resp_time: u8,
    pub part_enf_in: bool,
    pub part_enf_out: bool,
    pub filter_raw_in: bool,
    pub filter_raw_out: bool,
    pub pkey_violations: u16,
    pub qkey_violations: u16,
    // The second line: management fields, then what few SMPs read.
    pub m_key: u64,
    pub gid_prefix: u64,
    pub guid: Guid,
    /// When a running M_Key lease ends (`None`: no lease timer running). Never 0: a lease
    /// runs for at least a second.
    pub lease_deadline: Option<NonZeroU64>,
    /// P_Key table, VLArbitration tables and alias GUIDs, allocated when first written.
    lazy: Option<Box<PortLazy>>,
    /// SL→VL table (16 nibbles) for CAs and, per output port, the last one written on switches.
    pub sl2vl: [u8; 8],
    pub cap_mask: u32,
    pub lid: u16,
    pub sm_lid: u16,
    pub lease: u16,
    pub mkey_violations: u16,
    pub lmc: u8,
    pub sm_sl: u8,
    pub protect: u8,
    pub subnet_timeout: u8,
}

/// What not every port holds: kept behind one pointer in [`Port`].
#[derive(Debug, Clone, Default)]
struct PortLazy {
    /// P_Key table; empty means the power-on table (entry 0 = 0xffff, rest 0).
    pkeys: Box<[u16]>,
    /// VLArbitration blocks 1..=4 (low, low, high, high), once written.
    vlarb: Option<Box<[[u8; 64]; 4]>>,
    /// The GUIDInfo table's entries 1.. as SubnSet(GUIDInfo) wrote them (entry 0, the port
    /// GUID, is read-only); grown as blocks are written, missing entries read as 0.
    aliases: Vec<Guid>,
}

/// Switch-only state.
#[derive(Debug, Clone)]
pub(crate) struct Switch {
    /// Linear forwarding table, its blocks shared with other switches' (in the fabric's
    /// [`LftBlocks`]); missing entries read as 0xff.
    pub lft: Lft,
    pub lft_top: u16,
    /// Multicast forwarding table: `mft[entry][position]` port-mask words, grown lazily.
    pub mft: Vec<[u16; 16]>,
    pub mft_top: u16,
    /// SwitchInfo.MulticastFDBCap when set for this switch ([`super::Fabric::set_multicast_fdb_cap`]),
    /// else the configuration's.
    pub mcast_cap: Option<u16>,
    pub life_time: u8,
    pub port_state_change: bool,
    pub default_port: u8,
    pub default_mcast_primary: u8,
    pub default_mcast_not_primary: u8,
    /// Per-switch SL2VL tables by (input, output) port, written lazily.
    pub sl2vl: Vec<((u8, u8), [u8; 8])>,
}

impl Switch {
    /// The LFT entry for `lid`: `None` when beyond LinearFDBTop or unset (0xff).
    pub fn lft_port(&self, blocks: &LftBlocks, lid: u16) -> Option<u8> {
        if lid > self.lft_top {
            return None;
        }
        Some(self.lft.entry(blocks, lid)).filter(|&p| p != 0xff)
    }
}

/// One simulated node: 64 bytes, aligned to a cache line, so that reading what a hop or an
/// SMA needs of it (kind, ports, liveness, SMA queue) is one cache miss, not two.
#[derive(Debug, Clone)]
#[repr(align(64))]
pub(crate) struct Node {
    pub kind: NodeKind,
    pub guid: Guid,
    pub sys_guid: Guid,
    pub num_ports: u8,
    /// Index of port 0 (switches) or port 1 (CAs, stored at `first_port`, with a placeholder
    /// port 0 never linked) in the flat port table: ports are `first_port + n` for `n` in
    /// `0..=num_ports`.
    pub first_port: PortRef,
    pub switch: Option<u32>,
    pub alive: bool,
    pub partition_cap: u16,
    pub vendor_id: u32,
    pub device_id: u16,
    pub revision: u32,
    /// Per-node trap TID counter.
    pub trap_tid: u32,
    /// When the node's SMA is done with the SMPs queued so far.
    pub sma_free: super::SimTime,
    /// Restarts so far (SMPs queued at the SMA before a restart are lost).
    pub boots: u32,
}

/// Capability mask bits the simulated ports advertise (IBTA PortInfo.CapabilityMask).
pub(crate) mod cap {
    pub const IS_SM: u32 = 1 << 1;
    pub const IS_NOTICE_SUPPORTED: u32 = 1 << 2;
    pub const IS_TRAP_SUPPORTED: u32 = 1 << 3;
    pub const IS_SL_MAPPING_SUPPORTED: u32 = 1 << 6;
    pub const IS_SYSTEM_IMAGE_GUID_SUPPORTED: u32 = 1 << 11;
    pub const IS_CM_SUPPORTED: u32 = 1 << 16;
    pub const IS_VENDOR_CLASS_SUPPORTED: u32 = 1 << 19;
    pub const IS_CAP_MASK_NOTICE_SUPPORTED: u32 = 1 << 22;
    pub const IS_CAPABILITY_MASK2_SUPPORTED: u32 = 1 << 15;
    pub const IS_CLIENT_REREG_SUPPORTED: u32 = 1 << 25;
    pub const IS_MULTICAST_FDB_TOP_SUPPORTED: u32 = 1 << 30;
    pub const CA_DEFAULT: u32 = IS_TRAP_SUPPORTED
        | IS_SL_MAPPING_SUPPORTED
        | IS_SYSTEM_IMAGE_GUID_SUPPORTED
        | IS_CM_SUPPORTED
        | IS_VENDOR_CLASS_SUPPORTED
        | IS_CAP_MASK_NOTICE_SUPPORTED
        | IS_CLIENT_REREG_SUPPORTED;
    pub const SWITCH_DEFAULT: u32 =
        IS_NOTICE_SUPPORTED | IS_TRAP_SUPPORTED | IS_SL_MAPPING_SUPPORTED | IS_SYSTEM_IMAGE_GUID_SUPPORTED;
}

impl Port {
    fn power_on(node: u32, num: u8, guid: Guid, is_switch: bool) -> Port {
        let cap_mask = if is_switch { cap::SWITCH_DEFAULT } else { cap::CA_DEFAULT };
        Port {
            node,
            num,
            guid,
            peer: None,
            peer_node: 0,
            peer_num: 0,
            cable: false,
            phys: PState::Polling,
            state: LState::Down,
            lid: 0,
            lmc: 0,
            sm_lid: 0,
            sm_sl: 0,
            m_key: 0,
            protect: 0,
            lease: 0,
            lease_deadline: None,
            mkey_violations: 0,
            pkey_violations: 0,
            qkey_violations: 0,
            cap_mask,
            gid_prefix: ibsm_mad::Gid::DEFAULT_PREFIX,
            subnet_timeout: 0,
            resp_time: 0x10,
            // As ibsim's ports power on: NeighborMTU at MTUCap, OperationalVLs at VLCap (an SM
            // that caps either changes it, and bounces a CA port's link for it, as OpenSM does).
            neighbor_mtu: 5,
            mtu_cap: 5,
            vl_cap: 4,
            op_vls: 4,
            vl_high_limit: 0,
            hoq_life: 0,
            // As ibsim's ports power on: VL stall count 7, no error thresholds.
            vl_stall_count: 7,
            phy_errors_threshold: 0,
            overrun_errors_threshold: 0,
            width_enabled: 0x03,
            width_supported: 0x03,
            width_active: 0x02,
            speed_enabled: 0x07,
            speed_supported: 0x07,
            speed_active: 0x01,
            link_down_default: 2,
            part_enf_in: false,
            part_enf_out: false,
            filter_raw_in: false,
            filter_raw_out: false,
            sl2vl: DEFAULT_SL2VL,
            lazy: None,
            perf: super::counters::PortPerf::default(),
            guid_cap: 1,
        }
    }

    /// The port's physical link is up (cable present, not disabled, both ends trained).
    pub fn link_up(&self) -> bool {
        self.phys == PState::LinkUp
    }

    /// The port forwards LID-routed traffic.
    pub fn is_active(&self) -> bool {
        self.link_up() && self.state == LState::Active
    }

    /// `dlid` falls in this port's LID range (LID .. LID + 2^LMC - 1).
    pub fn owns_lid(&self, dlid: u16) -> bool {
        self.lid != 0 && dlid >= self.lid && u32::from(dlid) < u32::from(self.lid) + (1u32 << self.lmc.min(7))
    }

    /// The VLArbitration tables (blocks 1..=4) once written; `None` while at their power-on
    /// values.
    pub fn vlarb(&self) -> Option<&[[u8; 64]; 4]> {
        self.lazy.as_ref()?.vlarb.as_deref()
    }

    /// The VLArbitration tables to write, `init` filling them at the first write.
    pub fn vlarb_mut(&mut self, init: impl FnOnce() -> [[u8; 64]; 4]) -> &mut [[u8; 64]; 4] {
        self.lazy.get_or_insert_with(Box::default).vlarb.get_or_insert_with(|| Box::new(init()))
    }

    /// Back to the power-on VLArbitration tables.
    pub fn reset_vlarb(&mut self) {
        if let Some(lazy) = self.lazy.as_mut() {
            lazy.vlarb = None;
        }
    }

    /// GUIDInfo entry `index` (1.. ; entry 0 is the port GUID): 0 when never written.
    pub fn alias(&self, index: usize) -> Guid {
        let Some(i) = index.checked_sub(1) else { return self.guid };
        self.lazy.as_ref().and_then(|l| l.aliases.get(i).copied()).unwrap_or(Guid(0))
    }

    /// Writes GUIDInfo entry `index` (1..; entry 0 is read-only and ignored).
    pub fn set_alias(&mut self, index: usize, guid: Guid) {
        let Some(i) = index.checked_sub(1) else { return };
        let aliases = &mut self.lazy.get_or_insert_with(Box::default).aliases;
        if aliases.len() <= i {
            aliases.resize(i + 1, Guid(0));
        }
        aliases[i] = guid;
    }

    /// Current P_Key table entry `i` (power-on table when never written).
    pub fn pkey(&self, i: usize) -> u16 {
        let keys = self.pkeys();
        if keys.is_empty() { if i == 0 { 0xffff } else { 0 } } else { keys.get(i).copied().unwrap_or(0) }
    }

    /// The P_Key table as written (empty: the power-on table, entry 0 = 0xffff, rest 0).
    pub fn pkeys(&self) -> &[u16] {
        self.lazy.as_ref().map_or(&[], |l| &l.pkeys)
    }

    /// The P_Key table to write: `len` entries, the power-on table at the first write.
    pub fn pkeys_mut(&mut self, len: usize) -> &mut [u16] {
        let lazy = self.lazy.get_or_insert_with(Box::default);
        if lazy.pkeys.is_empty() {
            let mut fresh = vec![0; len];
            if let Some(first) = fresh.first_mut() {
                *first = 0xffff;
            }
            lazy.pkeys = fresh.into_boxed_slice();
        }
        &mut lazy.pkeys
    }

    /// Back to the power-on P_Key table.
    pub fn reset_pkeys(&mut self) {
        if let Some(lazy) = self.lazy.as_mut() {
            lazy.pkeys = Box::default();
        }
    }
}

/// Builds the node, port and switch tables from a topology at power-on.
pub(crate) fn build(topo: &Topology) -> (Vec<Node>, Vec<Port>, Vec<Switch>) {
    let mut nodes = Vec::with_capacity(topo.nodes.len());
    let total_ports: usize = topo.nodes.iter().map(|n| usize::from(n.num_ports) + 1).sum();
    let mut ports = Vec::with_capacity(total_ports);
    let mut switches = Vec::new();
    let mut first: Vec<PortRef> = Vec::with_capacity(topo.nodes.len());
    for (i, tn) in topo.nodes.iter().enumerate() {
        let is_switch = tn.kind == NodeKind::Switch;
        let first_port = ports.len() as PortRef;
        first.push(first_port);
        for p in 0..=tn.num_ports {
            let mut port = Port::power_on(i as u32, p, tn.port_guid(p), is_switch);
            if is_switch && p == 0 {
                // The management port is always up and Active.
                port.phys = PState::LinkUp;
                port.state = LState::Active;
            }
            ports.push(port);
        }
        let switch = if is_switch {
            switches.push(Switch {
                lft: Lft::default(),
                lft_top: 0,
                mft: Vec::new(),
                mft_top: 0,
                mcast_cap: None,
                life_time: 0,
                port_state_change: false,
                default_port: 0,
                default_mcast_primary: 0xff,
                default_mcast_not_primary: 0xff,
                sl2vl: Vec::new(),
            });
            Some((switches.len() - 1) as u32)
        } else {
            None
        };
        nodes.push(Node {
            kind: tn.kind,
            guid: tn.node_guid,
            sys_guid: tn.sys_guid,
            num_ports: tn.num_ports,
            first_port,
            switch,
            alive: true,
            partition_cap: if is_switch { 8 } else { 64 },
            vendor_id: tn.vendor_id,
            device_id: tn.device_id,
            revision: tn.revision,
            trap_tid: 0,
            sma_free: super::SimTime(0),
            boots: 0,
        });
    }
    // Cables.
    for (i, tn) in topo.nodes.iter().enumerate() {
        for (p, link) in tn.links.iter().enumerate() {
            if let Some(peer) = link {
                let Some(&pf) = first.get(peer.node) else { continue };
                let me = first[i] + p as PortRef;
                let them = pf + PortRef::from(peer.port);
                if let Some(port) = ports.get_mut(me as usize) {
                    port.peer = Some(them);
                    port.peer_node = peer.node as u32;
                    port.peer_num = peer.port;
                    port.cable = true;
                    port.phys = PState::LinkUp;
                    port.state = LState::Init;
                    if let Some(w) = peer.attrs.width {
                        port.width_active = w;
                    }
                    if let Some(s) = peer.attrs.speed {
                        port.speed_active = s;
                    }
                }
            }
        }
    }
    (nodes, ports, switches)
}

#[cfg(test)]
mod tests {
    /// A k=56 fat tree has 311,000 simulated ports: each byte of a port record is 0.3 MB of the
    /// fabric's memory. What few ports use (P_Key and VLArbitration tables, alias GUIDs, error
    /// counters) sits behind a pointer; this keeps the record to two cache lines.
    #[test]
    fn a_port_record_is_two_cache_lines() {
        assert_eq!(std::mem::size_of::<super::Port>(), 128);
        assert_eq!(std::mem::align_of::<super::Port>(), 64);
    }

    /// A node record is one cache line.
    #[test]
    fn a_node_record_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<super::Node>(), 64);
        assert_eq!(std::mem::align_of::<super::Node>(), 64);
    }

    /// What a hop reads and writes of a port, and what a PortInfo of a switch's external port
    /// reads of it (its management fields are port 0's), sit in its first cache line; the
    /// management fields of a CA port or a switch's port 0 in its second.
    #[test]
    fn a_hop_and_a_port_info_touch_one_line_of_a_port() {
        use super::Port;
        use std::mem::{offset_of, size_of_val};
        let p = Port::power_on(0, 1, ibsm_mad::Guid(1), true);
        macro_rules! span {
            ($f:ident) => {
                (offset_of!(Port, $f), offset_of!(Port, $f) + size_of_val(&p.$f))
            };
        }
        let first = [
            span!(node),
            span!(peer),
            span!(num),
            span!(cable),
            span!(phys),
            span!(state),
            span!(peer_node),
            span!(peer_num),
            (offset_of!(Port, perf), offset_of!(Port, perf) + super::super::counters::PortPerf::COUNTS_LEN),
            span!(width_enabled),
            span!(width_supported),
            span!(width_active),
            span!(speed_enabled),
            span!(speed_supported),
            span!(speed_active),
            span!(link_down_default),
            span!(neighbor_mtu),
            span!(mtu_cap),
            span!(vl_cap),
            span!(op_vls),
            span!(vl_high_limit),
            span!(hoq_life),
            span!(vl_stall_count),
            span!(phy_errors_threshold),
            span!(overrun_errors_threshold),
            span!(guid_cap),
            span!(resp_time),
            span!(part_enf_in),
            span!(part_enf_out),
            span!(filter_raw_in),
            span!(filter_raw_out),
            span!(pkey_violations),
            span!(qkey_violations),
        ];
        for (i, (start, end)) in first.into_iter().enumerate() {
            assert!(end <= 64, "first-line field {i} of Port spans {start}..{end}");
        }
        let second = [
            span!(m_key),
            span!(gid_prefix),
            span!(cap_mask),
            span!(lid),
            span!(sm_lid),
            span!(lease),
            span!(mkey_violations),
            span!(lmc),
            span!(sm_sl),
            span!(protect),
            span!(subnet_timeout),
        ];
        for (i, (start, end)) in second.into_iter().enumerate() {
            assert!(start >= 64 && end <= 128, "management field {i} of Port spans {start}..{end}");
        }
    }
}

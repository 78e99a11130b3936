//! Port settings: the PortInfo fields the SM writes on linked ports beyond addressing and state,
//! with OpenSM's defaults and OpenSM's choice of which port gets which value.
//!
//! Owns [`PortConfig`] (head-of-queue lifetime and VL stall count for switch-to-switch and
//! leaf ports, `max-op-vls`, the local PHY and overrun error thresholds, the forced link speed,
//! extended speed and width) and [`PortSettings`], which writes them into a PortInfo the
//! bring-up is building ([`PortSettings::apply`]) and remembers the ports that do not keep a
//! setting ([`PortSettings::learn`]), so that a port whose firmware ignores a field (ibsim keeps
//! no error thresholds) is not sent the same Set at every sweep; the ports found since the last
//! sweep's end are handed over together ([`PortSettings::take_found`]) for one summary event, as
//! are the ports whose link a sweep bounced ([`PortSettings::take_bounced`]). It sends nothing
//! and reads no clock: the bring-up decides whether a Set goes out (only when a field differs).
//!
//! Which ports get which value (OpenSM's link manager): a switch port with a peer gets the leaf
//! HOQ lifetime and VL stall count when the peer is a CA or router, the switch-to-switch ones
//! otherwise; a router port with a peer gets the leaf HOQ lifetime; CA ports get neither. The
//! error thresholds and forced speeds and widths go to every linked port and to an enhanced
//! switch port 0 (a base port 0 has no link). A forced width above 1X/4X/8X/12X (2X and up) needs
//! CapabilityMask2.IsLinkWidth2XSupported; a forced extended speed needs both ends to advertise
//! extended speeds. The special values 255 (width), 15 (speed) and 31 (extended speed) mean "set
//! to what the port supports" and are written only while the port's enabled set differs from its
//! supported set; 0 leaves the field alone.
//!
//! Link MTU and VLs ([`PortConfig::op_vls`], [`PortConfig::port0_op_vls`], which the bring-up
//! writes): a linked port's NeighborMTU is the smaller MTUCap of the two ends and its
//! OperationalVLs the smaller VLCap within `max-op-vls`; an enhanced switch port 0 gets its own
//! MTUCap as NeighborMTU and its OperationalVLs capped by `max-op-vls`, as OpenSM writes them.
//! OpenSM has no MTU option.
//!
//! Link bounce ([`PortSettings::bounces`]), as OpenSM's LID manager does it: the Set that changes
//! a CA or router port's NeighborMTU or OperationalVLs (from what the port reported) carries
//! PortState Down, so that the link retrains with them (IBTA 7.2.7: a port's link must pass
//! through its initialization for these to take effect). That holds in any state, Init at first
//! bring-up included; switch ports are never bounced (their NeighborMTU and OperationalVLs are
//! written without it, as OpenSM's link manager does). A port whose answer to a bounce still
//! lacks the values (ibsim keeps no NeighborMTU) is remembered like any setting it does not keep,
//! and not bounced again until the config changes: the fields are still written, the link left up.

use std::collections::HashMap;

use ibsm_mad::attrs::{
    CapabilityMask, CapabilityMask2, LinkSpeedExtMask, LinkSpeedMask, LinkWidthMask, NodeType, PortInfo, PortState,
};
use ibsm_mad::{Guid, PortNum};

use super::state::{NodeIdx, Subnet};

/// The port settings of [`super::SmConfig`]; `Default` gives OpenSM's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortConfig {
    /// PortInfo.HOQLife of switch ports cabled to switches (default 0x12, OpenSM's
    /// `head_of_queue_lifetime`).
    pub hoq_life: u8,
    /// PortInfo.HOQLife of switch ports cabled to CAs and routers, and of router ports
    /// (default 0x10, OpenSM's `leaf_head_of_queue_lifetime`).
    pub leaf_hoq_life: u8,
    /// PortInfo.VLStallCount of switch ports cabled to switches (default 7, OpenSM's
    /// `vl_stall_count`).
    pub vl_stall_count: u8,
    /// PortInfo.VLStallCount of switch ports cabled to CAs and routers (default 7, OpenSM's
    /// `leaf_vl_stall_count`).
    pub leaf_vl_stall_count: u8,
    /// Cap on PortInfo.OperationalVLs, coded like VLCap (1 = VL0 ... 5 = VL0-14; default 5,
    /// OpenSM's `max_op_vls`).
    pub max_op_vls: u8,
    /// PortInfo.LocalPhyErrors: the threshold for trap 129 (default 8, OpenSM's
    /// `local_phy_errors_threshold`).
    pub local_phy_errors: u8,
    /// PortInfo.OverrunErrors: the threshold for trap 130 (default 8, OpenSM's
    /// `overrun_errors_threshold`).
    pub overrun_errors: u8,
    /// PortInfo.LinkSpeedEnabled to write: 0 leaves it, 1..=7 a set of SDR/DDR/QDR, 15 (the
    /// default, as OpenSM) sets it to LinkSpeedSupported.
    pub force_link_speed: u8,
    /// PortInfo.LinkSpeedExtEnabled to write on links whose ends both have extended speeds:
    /// 0 leaves it, 1..=15 a set of FDR/EDR/HDR/NDR, 30 disables extended speeds, 31 (the
    /// default, as OpenSM) sets it to LinkSpeedExtSupported.
    pub force_link_speed_ext: u8,
    /// PortInfo.LinkWidthEnabled to write: 0 leaves it, 1..=31 a set of 1X/4X/8X/12X/2X, 255
    /// (the default, as OpenSM) sets it to LinkWidthSupported.
    pub force_link_width: u8,
}

impl Default for PortConfig {
    fn default() -> Self {
        PortConfig {
            hoq_life: 0x12,
            leaf_hoq_life: 0x10,
            vl_stall_count: 7,
            leaf_vl_stall_count: 7,
            max_op_vls: 5,
            local_phy_errors: 8,
            overrun_errors: 8,
            force_link_speed: LinkSpeedMask::SET_TO_SUPPORTED.0,
            force_link_speed_ext: LinkSpeedExtMask::SET_TO_SUPPORTED.0,
            force_link_width: LinkWidthMask::SET_TO_SUPPORTED.0,
        }
    }
}

impl PortConfig {
    /// Whether `v` is a value OpenSM accepts for `force_link_speed` (0, 1..=7, 15).
    pub const fn valid_speed(v: u8) -> bool {
        v <= 7 || v == 15
    }

    /// Whether `v` is a value OpenSM accepts for `force_link_speed_ext` (0..=15, 30, 31).
    pub const fn valid_speed_ext(v: u8) -> bool {
        v <= 15 || v == 30 || v == 31
    }

    /// Whether `v` is a value OpenSM accepts for `force_link_width` (0..=31, 255).
    pub const fn valid_width(v: u8) -> bool {
        v <= 31 || v == 255
    }

    /// OperationalVLs for a link whose ends have `mine` and `peer` VLCap: the smaller, within
    /// `max_op_vls`; `None` when a VLCap is 0 (a non-compliant port: leave the field as read).
    pub fn op_vls(&self, mine: u8, peer: u8) -> Option<u8> {
        let vls = mine.min(peer);
        (vls > 0).then(|| vls.min(self.max_op_vls.max(1)))
    }

    /// OperationalVLs of an enhanced switch port 0 (no peer) holding `current`: as OpenSM's
    /// link manager, what it holds (0 taken as 1: VL0) within `max_op_vls`.
    pub fn port0_op_vls(&self, current: u8) -> u8 {
        current.max(1).min(self.max_op_vls.max(1))
    }
}

/// One group of PortInfo fields the settings write, as a bit of [`Kept`].
mod group {
    pub const HOQ: u8 = 1;
    pub const VL_STALL: u8 = 2;
    pub const THRESHOLDS: u8 = 4;
    pub const WIDTH: u8 = 8;
    pub const SPEED: u8 = 16;
    pub const SPEED_EXT: u8 = 32;
    /// NeighborMTU and OperationalVLs after a link bounce.
    pub const LINK: u8 = 64;
    pub const NAMES: [(u8, &str); 7] = [
        (HOQ, "head-of-queue lifetime"),
        (VL_STALL, "VL stall count"),
        (THRESHOLDS, "error thresholds"),
        (WIDTH, "link width enabled"),
        (SPEED, "link speed enabled"),
        (SPEED_EXT, "extended link speed enabled"),
        (LINK, "neighbor MTU and operational VLs after a link bounce"),
    ];
}

/// The groups of fields a port did not keep (bits of `group`).
type Kept = u8;

/// What [`PortSettings::apply`] needs to know of a port and its peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// The node's type.
    pub node_type: NodeType,
    /// The port's number.
    pub port: PortNum,
    /// A switch's port 0 is enhanced (has a link layer of its own).
    pub enhanced_port0: bool,
    /// CapabilityMask of the port (of port 0 for a switch's ports).
    pub caps: CapabilityMask,
    /// CapabilityMask2 of the port (of port 0 for a switch's ports).
    pub caps2: CapabilityMask2,
    /// The port at the other end of the cable, when discovered.
    pub peer: Option<Peer>,
}

/// The far end of a link, as [`Target`] needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    /// The peer's node is a switch.
    pub is_switch: bool,
    /// Its CapabilityMask (port 0's for a switch).
    pub caps: CapabilityMask,
}

impl Target {
    /// The target for `port` of node `node` in `subnet`, or `None` when either is unknown.
    pub fn of(subnet: &Subnet, node: NodeIdx, port: PortNum) -> Option<Target> {
        let n = subnet.node(node)?;
        let rec = n.port(port)?;
        let caps_of = |n: &super::state::Node, p: PortNum| {
            let at = if n.is_switch() { PortNum(0) } else { p };
            n.port(at).and_then(|r| r.info).map(|i| (i.capability_mask, i.capability_mask2))
        };
        let (caps, caps2) = caps_of(n, port).unwrap_or((CapabilityMask(0), CapabilityMask2(0)));
        let peer = rec.remote.and_then(|(rn, rp)| {
            let r = subnet.node(rn)?;
            let (caps, _) = caps_of(r, rp)?;
            Some(Peer { is_switch: r.is_switch(), caps })
        });
        Some(Target {
            node_type: n.info.node_type,
            port,
            enhanced_port0: n.switch_info.is_some_and(|s| s.enhanced_port0),
            caps,
            caps2,
            peer,
        })
    }

    /// The port carries a link the settings apply to: a linked port with a discovered peer,
    /// or an enhanced switch port 0.
    fn has_link(&self) -> bool {
        if self.port.0 == 0 { self.node_type == NodeType::Switch && self.enhanced_port0 } else { self.peer.is_some() }
    }
}

/// The port settings component: applies [`PortConfig`] and remembers which ports did not keep
/// which settings.
#[derive(Debug, Default)]
pub struct PortSettings {
    /// Per (node GUID, port): the groups of fields the port answered a Set without keeping.
    unkept: HashMap<(Guid, u8), Kept>,
    /// Ports found not keeping a setting since the last [`PortSettings::take_found`]: the
    /// sweep's summary for the log.
    found: Vec<NotKept>,
    /// Ports whose link was bounced since the last [`PortSettings::take_bounced`].
    bounced: Vec<(Guid, PortNum)>,
}

/// A port found not keeping some settings: its node GUID, the port, the groups' names.
pub type NotKept = (Guid, PortNum, Vec<&'static str>);

impl PortSettings {
    /// Writes the settings into `info` (a PortInfo about to be Set on the port `t` of the node
    /// `node_guid`), leaving alone the groups the port is known not to keep.
    pub fn apply(&self, cfg: &PortConfig, t: &Target, node_guid: Guid, info: &mut PortInfo) {
        let skip = self.unkept.get(&(node_guid, t.port.0)).copied().unwrap_or(0);
        write(cfg, t, info, !skip);
    }

    /// Whether the Set writing `after` over `before` (the port's PortInfo as read) on port `t`
    /// of node `node_guid` bounces the link (carries PortState Down): a CA or router port whose
    /// NeighborMTU or OperationalVLs changes, unless it did not keep them after a bounce before.
    pub fn bounces(&self, t: &Target, node_guid: Guid, before: &PortInfo, after: &PortInfo) -> bool {
        let unkept = self.unkept.get(&(node_guid, t.port.0)).is_some_and(|k| k & group::LINK != 0);
        t.node_type != NodeType::Switch
            && t.port.0 != 0
            && t.peer.is_some()
            && !unkept
            && link_fields(after) != link_fields(before)
    }

    /// Whether [`PortSettings::learn`] could find anything in the answer `got` to the Set
    /// `sent`: not when the Set bounced nothing and the answer holds every field the settings
    /// read and write as sent (what the config asks differs from `got` exactly where it
    /// differs from `sent`, and a group the Set did not carry is not judged). Needs no
    /// [`Target`], so the answers of a sweep's 330,000 arming and activation Sets skip the
    /// peer's node and port records (a cache miss each on a large fabric).
    pub fn may_learn(sent: &PortInfo, got: &PortInfo) -> bool {
        sent.port_state == PortState::Down || setting_fields(sent) != setting_fields(got)
    }

    /// Learns from the answer to a Set which settings the port did not keep: a group the Set
    /// carried (`sent` already held what the config asks) that the answer `got` still lacks;
    /// after a bounce (`sent` carried PortState Down), NeighborMTU and OperationalVLs too.
    /// Returns the names of the groups newly found, and keeps them for [`PortSettings::take_found`].
    pub fn learn(
        &mut self,
        cfg: &PortConfig,
        t: &Target,
        node_guid: Guid,
        sent: &PortInfo,
        got: &PortInfo,
    ) -> Vec<&'static str> {
        // Most ports keep everything: no map entry for them (one per port of a 165,888-port
        // fabric otherwise), and the Set is judged only when the answer lacks something.
        let mut lacking = differing(cfg, t, got);
        if sent.port_state == PortState::Down && link_fields(got) != link_fields(sent) {
            lacking |= group::LINK;
        }
        if lacking == 0 {
            return Vec::new();
        }
        let key = (node_guid, t.port.0);
        let held = self.unkept.get(&key).copied().unwrap_or(0);
        let new = !differing(cfg, t, sent) & lacking & !held;
        if new == 0 {
            return Vec::new();
        }
        self.unkept.insert(key, held | new);
        let names: Vec<&'static str> =
            group::NAMES.iter().filter(|(g, _)| new & g != 0).map(|(_, name)| *name).collect();
        if !names.is_empty() {
            self.found.push((node_guid, t.port, names.clone()));
        }
        names
    }

    /// The ports found not keeping a setting since the last call, in the order found (the
    /// coordinator reports them once per sweep, in one event).
    pub fn take_found(&mut self) -> Vec<NotKept> {
        std::mem::take(&mut self.found)
    }

    /// Notes that the Set bouncing port `port` of node `node_guid` was answered.
    pub fn bounced(&mut self, node_guid: Guid, port: PortNum) {
        self.bounced.push((node_guid, port));
    }

    /// The ports bounced since the last call, in the order answered (one event per sweep).
    pub fn take_bounced(&mut self) -> Vec<(Guid, PortNum)> {
        std::mem::take(&mut self.bounced)
    }

    /// Forgets what ports did not keep (the config changed: try again).
    pub fn forget(&mut self) {
        self.unkept.clear();
        self.found.clear();
    }

    /// Ports known not to keep some setting.
    pub fn unkept_ports(&self) -> usize {
        self.unkept.values().filter(|k| **k != 0).count()
    }
}

/// The fields a link bounce retrains with: NeighborMTU and OperationalVLs.
fn link_fields(info: &PortInfo) -> (u8, u8) {
    (info.neighbor_mtu.raw(), info.operational_vls)
}

/// Every PortInfo field [`write`] reads or writes (the Target aside): two PortInfos alike in
/// these differ from what the settings would write in the same groups ([`differing`]).
fn setting_fields(info: &PortInfo) -> [u8; 10] {
    [
        info.hoq_life,
        info.vl_stall_count,
        info.local_phy_errors,
        info.overrun_errors,
        info.link_width_enabled.0,
        info.link_width_supported.0,
        info.link_speed_enabled.0,
        info.link_speed_supported.0,
        info.link_speed_ext_enabled.0,
        info.link_speed_ext_supported.0,
    ]
}

/// The groups whose fields in `info` differ from what the settings would write.
fn differing(cfg: &PortConfig, t: &Target, info: &PortInfo) -> Kept {
    let mut want = *info;
    write(cfg, t, &mut want, Kept::MAX);
    let mut out = 0;
    if want.hoq_life != info.hoq_life {
        out |= group::HOQ;
    }
    if want.vl_stall_count != info.vl_stall_count {
        out |= group::VL_STALL;
    }
    if (want.local_phy_errors, want.overrun_errors) != (info.local_phy_errors, info.overrun_errors) {
        out |= group::THRESHOLDS;
    }
    if want.link_width_enabled != info.link_width_enabled {
        out |= group::WIDTH;
    }
    if want.link_speed_enabled != info.link_speed_enabled {
        out |= group::SPEED;
    }
    if want.link_speed_ext_enabled != info.link_speed_ext_enabled {
        out |= group::SPEED_EXT;
    }
    out
}

/// Writes the settings of the groups in `only` into `info`.
fn write(cfg: &PortConfig, t: &Target, info: &mut PortInfo, only: Kept) {
    if !t.has_link() {
        return;
    }
    let on = |g: u8| only & g != 0;
    if t.port.0 != 0
        && let Some(peer) = t.peer
    {
        match t.node_type {
            NodeType::Router if on(group::HOQ) => info.hoq_life = cfg.leaf_hoq_life,
            NodeType::Switch => {
                let (hoq, stall) = if peer.is_switch {
                    (cfg.hoq_life, cfg.vl_stall_count)
                } else {
                    (cfg.leaf_hoq_life, cfg.leaf_vl_stall_count)
                };
                if on(group::HOQ) {
                    info.hoq_life = hoq;
                }
                if on(group::VL_STALL) {
                    info.vl_stall_count = stall;
                }
            }
            _ => {}
        }
    }
    if on(group::THRESHOLDS) {
        info.local_phy_errors = cfg.local_phy_errors;
        info.overrun_errors = cfg.overrun_errors;
    }
    let width = cfg.force_link_width;
    let width_ok = width < LinkWidthMask::X2.0 || t.caps2.contains(CapabilityMask2::IS_LINK_WIDTH_2X_SUPPORTED);
    if on(group::WIDTH)
        && width != 0
        && width_ok
        && (width != LinkWidthMask::SET_TO_SUPPORTED.0 || info.link_width_enabled != info.link_width_supported)
    {
        info.link_width_enabled = LinkWidthMask(width);
    }
    let speed = cfg.force_link_speed;
    if on(group::SPEED)
        && speed != 0
        && (speed != LinkSpeedMask::SET_TO_SUPPORTED.0 || info.link_speed_enabled != info.link_speed_supported)
    {
        info.link_speed_enabled = LinkSpeedMask(speed);
    }
    let ext = cfg.force_link_speed_ext;
    let both_ext = t.caps.contains(CapabilityMask::IS_EXTENDED_SPEEDS_SUPPORTED)
        && t.peer.is_some_and(|p| p.caps.contains(CapabilityMask::IS_EXTENDED_SPEEDS_SUPPORTED));
    if on(group::SPEED_EXT)
        && t.port.0 != 0
        && both_ext
        && ext != 0
        && (ext != LinkSpeedExtMask::SET_TO_SUPPORTED.0 || info.link_speed_ext_enabled != info.link_speed_ext_supported)
    {
        info.link_speed_ext_enabled = LinkSpeedExtMask(ext);
    }
}

#[cfg(test)]
#[path = "port_settings_tests.rs"]
mod tests;

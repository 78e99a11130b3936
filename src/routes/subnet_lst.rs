//! OpenSM's `opensm-subnet.lst` (written at every sweep into its dump directory), made from the
//! SA's snapshot: one line per direction of every cable, the near end's node and port, the far
//! end's, and the link's width, state and speed, nodes in OpenSM's order (its node table's
//! GUID order) and ports by number, so that the file diffs clean against OpenSM's on the same
//! fabric with the same LIDs.
//!
//! The fields are OpenSM's, quirks included, since scripts parse them: the far end's VenID has
//! eight digits and its DevID is the 16-bit value byte-swapped into 32 bits and printed with
//! `%04X` (`D2F00000` for device 0xD2F0); a node whose end port's LID is its MasterSMLID is
//! `CA-SM`/`SW-SM`; speeds are `2.5`, `5`, `10`, or with extended speeds `14`, `25`, `50`, and
//! `??` for anything else (NDR and XDR included, as OpenSM 3.3 prints them).

use std::fmt::Write as _;

use ibsm_mad::attrs::{CapabilityMask, CapabilityMask2, LinkSpeed, LinkSpeedExt, NodeType, PortInfo, PortState};

use crate::core::NodeNames;
use crate::sa::snapshot::{SnapNode, Snapshot};

/// The whole file; nodes `names` names (`node-name-map`) are shown by that name, as OpenSM
/// shows them by its `node_name_map_name`.
pub fn render(snap: &Snapshot, names: &NodeNames) -> String {
    let mut out = String::new();
    for n in snap.nodes_in_guid_order() {
        let Some(node) = snap.node(n) else { continue };
        for p in 1..node.ports.len() {
            let Ok(port) = u8::try_from(p) else { break };
            let Some(near) = node.ports.get(p) else { continue };
            let (Some(info), Some((rn, rp))) = (near.info.as_ref(), near.remote) else { continue };
            let Some(far) = snap.node(rn) else { continue };
            end(&mut out, node, port, false, names);
            end(&mut out, far, rp, true, names);
            let default = default_info(node, port).unwrap_or(info);
            let _ = writeln!(out, "PHY={} LOG={} SPD={}", width(info, default), state(info), speed(info, default));
        }
    }
    out
}

/// The PortInfo that holds a node's LID and capabilities: port 0 of a switch, the port itself
/// of a CA or router.
fn default_info(node: &SnapNode, port: u8) -> Option<&PortInfo> {
    let at = if node.is_switch() { 0 } else { usize::from(port) };
    node.ports.get(at).and_then(|p| p.info.as_ref())
}

/// `{ SW Ports:04 SystemGUID:... {desc} LID:0004 PN:01 } `.
fn end(out: &mut String, node: &SnapNode, port: u8, far: bool, names: &NodeNames) {
    let kind = match node.info.node_type {
        NodeType::Switch => "SW",
        NodeType::Ca => "CA",
        NodeType::Router => "Rt",
        NodeType::Unknown(_) => "**",
    };
    let default = default_info(node, port);
    let lid = default.map_or(0, |i| i.lid.0);
    let sm = if default.is_some_and(|i| i.lid == i.master_sm_lid) { "-SM" } else { "" };
    let guid = node.ports.get(usize::from(port)).map_or(0, |p| p.guid.0);
    let i = &node.info;
    let _ = write!(
        out,
        "{{ {kind}{sm} Ports:{:02X} SystemGUID:{:016x} NodeGUID:{:016x} PortGUID:{guid:016x} ",
        i.num_ports, i.system_image_guid.0, i.node_guid.0
    );
    if far {
        // OpenSM prints the far end's 16-bit DevID through a 32-bit byte swap.
        let dev = u32::from(i.device_id.swap_bytes()).swap_bytes();
        let _ = write!(out, "VenID:{:08X} DevID:{dev:04X} ", i.vendor_id);
    } else {
        let _ = write!(out, "VenID:{:06X} DevID:{:04X} ", i.vendor_id, i.device_id);
    }
    let desc = names.show(i.node_guid, &node.desc);
    let _ = write!(out, "Rev:{:08X} {{{desc}}} LID:{lid:04X} PN:{port:02X} }} ", i.revision);
}

fn width(info: &PortInfo, default: &PortInfo) -> &'static str {
    match info.link_width_active.raw() {
        1 => "1x",
        2 => "4x",
        4 => "8x",
        8 => "12x",
        16 if default.capability_mask2.contains(CapabilityMask2::IS_LINK_WIDTH_2X_SUPPORTED) => "2x",
        _ => "??",
    }
}

fn state(info: &PortInfo) -> &'static str {
    match info.port_state {
        PortState::Active => "ACT",
        PortState::Armed => "ARM",
        PortState::Init => "INI",
        _ => "DWN",
    }
}

fn speed(info: &PortInfo, default: &PortInfo) -> &'static str {
    let base = match info.link_speed_active {
        LinkSpeed::Sdr => "2.5",
        LinkSpeed::Ddr => "5",
        LinkSpeed::Qdr => "10",
        _ => "??",
    };
    if !default.capability_mask.contains(CapabilityMask::IS_EXTENDED_SPEEDS_SUPPORTED) {
        return base;
    }
    match info.link_speed_ext_active {
        LinkSpeedExt::None => base,
        LinkSpeedExt::Fdr => "14",
        LinkSpeedExt::Edr => "25",
        LinkSpeedExt::Hdr => "50",
        _ => "??",
    }
}

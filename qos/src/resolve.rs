//! Resolution: the simple QoS options and a view of the fabric's ports turned into what each
//! port should hold: OperationalVLs, VLHighLimit, the VL arbitration blocks and the SL2VL tables
//! (on a switch, one per input/output port pair). A pure function; programming compares its
//! result with what the ports hold and writes the differences.
//!
//! The rules follow OpenSM's QoS manager, so that both SMs leave a fabric in the same state:
//! - OperationalVLs is the smaller of the port's VLCap and its peer's VLCap. `max-vls` is
//!   checked but bounds nothing: OpenSM 3.3.23 reads `qos_*max_vls` and leaves OperationalVLs
//!   to its link manager (seen under ibsim: `qos_swe_max_vls 4` left switch ports at VL0-7;
//!   `tests/ibsim_qos.rs`).
//! - A VL in a table is masked to the port's operational VLs (`vl & (count - 1)` with count a
//!   power of two, 15 VLs masking nothing); SL2VL's VL 15 (drop) is kept.
//! - A port with one data VL gets no arbitration table and VLHighLimit 0. Otherwise the low and
//!   high tables are written block by block up to the port's VLArbitrationLowCap /
//!   HighCap; entries past the capacity in a block are zero.
//! - SL2VL is written only where the port (on a switch, port 0) says IsSLMappingSupported;
//!   on a switch for every input port to every output port whose link is not down, port 0 as
//!   an output only when it is enhanced.
//! - Classes: CA ports use `qos.ca`, router ports `qos.rtr`, switch external ports `qos.swe`,
//!   an enhanced switch port 0 `qos.sw0` (a base port 0 has no VLs to set).
//!
//! The qos-setup section of a policy file is parsed but, as in OpenSM, not applied here.

use ibsm_mad::Guid;
use ibsm_mad::attrs::SlToVlTable;
use ibsm_mad::attrs::{VlArbEntry, VlArbitrationTable};

use crate::error::OptionError;
use crate::options::{ClassConfig, PortClass, QosOptions};

/// What a node is, for the choice of option class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// A channel adapter.
    Ca,
    /// A router.
    Router,
    /// A switch; `enhanced_port0` when its port 0 is an enhanced port 0 (SwitchInfo).
    Switch {
        /// SwitchInfo.EnhancedPort0.
        enhanced_port0: bool,
    },
}

/// One port as QoS needs to see it (from its PortInfo and its peer's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortView {
    /// The port number (0 for switch port 0).
    pub num: u8,
    /// Whether the link is up (PortState not Down); port 0 counts as up.
    pub up: bool,
    /// PortInfo.VLCap (1 = VL0 .. 5 = VL0-14).
    pub vl_cap: u8,
    /// The peer port's VLCap, when there is a peer.
    pub peer_vl_cap: Option<u8>,
    /// PortInfo.VLArbitrationHighCap (entries).
    pub vl_arb_high_cap: u8,
    /// PortInfo.VLArbitrationLowCap (entries).
    pub vl_arb_low_cap: u8,
    /// CapabilityMask.IsSLMappingSupported (on a switch only port 0's is looked at).
    pub sl_mapping: bool,
}

/// One node: its kind, its GUID and its ports (a switch lists port 0 too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeView {
    /// NodeGUID.
    pub guid: Guid,
    /// What it is.
    pub kind: NodeKind,
    /// Its ports; a switch's port 0 included, a CA's ports by their numbers.
    pub ports: Vec<PortView>,
}

/// What one port should hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortQos {
    /// The port number.
    pub num: u8,
    /// PortInfo.OperationalVLs (encoding 1..=5).
    pub operational_vls: u8,
    /// PortInfo.VLHighLimit.
    pub vl_high_limit: u8,
    /// VL arbitration blocks: (block selector 1..=4, see [`VlArbitrationTable`], table).
    pub vlarb: Vec<(u16, VlArbitrationTable)>,
    /// SL2VL tables to this port as output: (input port, table). An end port's one table has
    /// input port 0.
    pub sl2vl: Vec<(u8, SlToVlTable)>,
}

/// What one node's ports should hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeQos {
    /// NodeGUID.
    pub guid: Guid,
    /// The ports QoS sets, in port order.
    pub ports: Vec<PortQos>,
}

/// Data VLs of an OperationalVLs / VLCap encoding (1 => 1, 2 => 2, 3 => 4, 4 => 8, 5 => 15).
pub const fn vl_count(encoding: u8) -> u8 {
    match encoding {
        0 | 1 => 1,
        2 => 2,
        3 => 4,
        4 => 8,
        _ => 15,
    }
}

/// The largest encoding whose VL count is at most `max_vls`.
pub const fn encoding_for(max_vls: u8) -> u8 {
    match max_vls {
        0 | 1 => 1,
        2 | 3 => 2,
        4..=7 => 3,
        8..=14 => 4,
        _ => 5,
    }
}

/// The mask OpenSM applies to a VL on a port with `op_vls` operational.
fn vl_mask(op_vls: u8) -> u8 {
    let op = op_vls.clamp(1, 5);
    ((1u16 << (op - 1)) - 1) as u8
}

fn op_vls(port: PortView) -> u8 {
    let cap = port.vl_cap.clamp(1, 5);
    let peer = port.peer_vl_cap.map_or(5, |c| c.clamp(1, 5));
    cap.min(peer)
}

fn vlarb_blocks(port: PortView, op: u8, cfg: &ClassConfig) -> Vec<(u16, VlArbitrationTable)> {
    let mask = vl_mask(op);
    let block = |entries: &[VlArbEntry], len: usize| {
        let mut t = VlArbitrationTable::default();
        for (slot, e) in t.entries.iter_mut().zip(entries).take(len) {
            *slot = VlArbEntry { vl: e.vl & mask, weight: e.weight };
        }
        t
    };
    let mut out = Vec::new();
    let (low, high) = (usize::from(port.vl_arb_low_cap), usize::from(port.vl_arb_high_cap));
    if low > 0 {
        out.push((VlArbitrationTable::LOW_0_31, block(&cfg.vlarb_low[..32], low.min(32))));
    }
    if low > 32 {
        out.push((VlArbitrationTable::LOW_32_63, block(&cfg.vlarb_low[32..], low % 32)));
    }
    if high > 0 {
        out.push((VlArbitrationTable::HIGH_0_31, block(&cfg.vlarb_high[..32], high.min(32))));
    }
    if high > 32 {
        out.push((VlArbitrationTable::HIGH_32_63, block(&cfg.vlarb_high[32..], high % 32)));
    }
    out
}

fn sl2vl(op: u8, cfg: &ClassConfig) -> SlToVlTable {
    let mask = vl_mask(op);
    SlToVlTable { vls: cfg.sl2vl.map(|vl| if vl == 15 { 15 } else { vl & mask }) }
}

/// The arbitration part of a port: (VLHighLimit, blocks).
fn arbitration(port: PortView, op: u8, cfg: &ClassConfig) -> (u8, Vec<(u16, VlArbitrationTable)>) {
    if port.vl_cap <= 1 { (0, Vec::new()) } else { (cfg.high_limit, vlarb_blocks(port, op, cfg)) }
}

/// What every port of `nodes` should hold under `options`.
///
/// # Errors
/// An option value that cannot be read (checked before any port is looked at).
pub fn resolve(options: &QosOptions, nodes: &[NodeView]) -> Result<Vec<NodeQos>, OptionError> {
    let ca = options.config(PortClass::Ca)?;
    let rtr = options.config(PortClass::Router)?;
    let swe = options.config(PortClass::SwitchExternal)?;
    let sw0 = options.config(PortClass::SwitchPort0)?;
    let mut out = Vec::with_capacity(nodes.len());
    for node in nodes {
        let ports = match node.kind {
            NodeKind::Ca | NodeKind::Router => {
                let cfg = if node.kind == NodeKind::Ca { &ca } else { &rtr };
                node.ports.iter().map(|p| end_port(*p, cfg)).collect()
            }
            NodeKind::Switch { enhanced_port0 } => switch_ports(node, enhanced_port0, &swe, &sw0),
        };
        out.push(NodeQos { guid: node.guid, ports });
    }
    Ok(out)
}

fn end_port(p: PortView, cfg: &ClassConfig) -> PortQos {
    let op = op_vls(p);
    let (vl_high_limit, vlarb) = arbitration(p, op, cfg);
    let sl2vl = if p.sl_mapping { vec![(0, sl2vl(op, cfg))] } else { Vec::new() };
    PortQos { num: p.num, operational_vls: op, vl_high_limit, vlarb, sl2vl }
}

fn switch_ports(node: &NodeView, enhanced_port0: bool, swe: &ClassConfig, sw0: &ClassConfig) -> Vec<PortQos> {
    let sl_mapping = node.ports.iter().find(|p| p.num == 0).is_some_and(|p| p.sl_mapping);
    let inputs: Vec<u8> = {
        let max = node.ports.iter().map(|p| p.num).max().unwrap_or(0);
        (0..=max).collect()
    };
    let mut out = Vec::new();
    let mut ports: Vec<&PortView> = node.ports.iter().collect();
    ports.sort_by_key(|p| p.num);
    for p in ports {
        if p.num == 0 {
            if !enhanced_port0 {
                continue;
            }
            // Port 0 as an output of every input uses the external ports' table, then its own
            // (input 0) the sw0 one, as OpenSM writes them in that order.
            let op = op_vls(*p);
            let (vl_high_limit, vlarb) = arbitration(*p, op, sw0);
            let mut tables = Vec::new();
            if sl_mapping {
                let ext = sl2vl(op, swe);
                tables = inputs.iter().map(|&i| (i, if i == 0 { sl2vl(op, sw0) } else { ext })).collect();
            }
            out.push(PortQos { num: 0, operational_vls: op, vl_high_limit, vlarb, sl2vl: tables });
            continue;
        }
        if !p.up {
            continue;
        }
        let op = op_vls(*p);
        let (vl_high_limit, vlarb) = arbitration(*p, op, swe);
        let tables = if sl_mapping { inputs.iter().map(|&i| (i, sl2vl(op, swe))).collect() } else { Vec::new() };
        out.push(PortQos { num: p.num, operational_vls: op, vl_high_limit, vlarb, sl2vl: tables });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(num: u8, vl_cap: u8, peer: Option<u8>) -> PortView {
        PortView { num, up: true, vl_cap, peer_vl_cap: peer, vl_arb_high_cap: 8, vl_arb_low_cap: 8, sl_mapping: true }
    }

    fn opts() -> QosOptions {
        let mut o = QosOptions::default();
        o.set_opensm("qos_ca_sl2vl", "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15").unwrap();
        o.set_opensm("qos_ca_vlarb_low", "0:0,1:64,2:128,3:192,4:0,5:64,6:64,7:64").unwrap();
        o.set_opensm("qos_ca_vlarb_high", "0:4").unwrap();
        o.set_opensm("qos_ca_high_limit", "6").unwrap();
        o.set_opensm("qos_swe_high_limit", "3").unwrap();
        o
    }

    #[test]
    fn an_end_port_gets_masked_tables_and_operational_vls_bounded_by_both_ends() {
        let ca = NodeView { guid: Guid(1), kind: NodeKind::Ca, ports: vec![port(1, 4, Some(3))] };
        let r = resolve(&opts(), &[ca]).unwrap();
        let p = &r[0].ports[0];
        assert_eq!(p.operational_vls, 3, "VLCap 4 (8 VLs), peer 3 (4 VLs): 4 VLs");
        assert_eq!(p.vl_high_limit, 6);
        let (_, t) = &p.sl2vl[0];
        assert_eq!(&t.vls[..8], &[0, 1, 2, 3, 0, 1, 2, 3], "VL masked to 0..=3");
        assert_eq!(t.vls[15], 15, "VL 15 (drop) is kept");
        assert_eq!(p.vlarb.len(), 2, "one low and one high block for caps of 8 entries");
        let (sel, low) = &p.vlarb[0];
        assert_eq!(*sel, VlArbitrationTable::LOW_0_31);
        assert_eq!(low.entries[3], VlArbEntry { vl: 3, weight: 192 });
        assert_eq!(low.entries[5], VlArbEntry { vl: 1, weight: 64 }, "VL 5 masked to 1");
        assert_eq!(p.vlarb[1].1.entries[0], VlArbEntry { vl: 0, weight: 4 });
    }

    #[test]
    fn max_vls_leaves_operational_vls_to_the_link_as_opensm_does_and_one_vl_means_no_arbitration() {
        let mut o = opts();
        o.set_opensm("qos_ca_max_vls", "2").unwrap();
        let ca = NodeView { guid: Guid(1), kind: NodeKind::Ca, ports: vec![port(1, 5, None)] };
        assert_eq!(resolve(&o, &[ca]).unwrap()[0].ports[0].operational_vls, 5, "VLCap 15, no peer: 15 VLs");
        let one = NodeView { guid: Guid(2), kind: NodeKind::Ca, ports: vec![port(1, 1, None)] };
        let p = &resolve(&opts(), &[one]).unwrap()[0].ports[0];
        assert_eq!((p.operational_vls, p.vl_high_limit, p.vlarb.len()), (1, 0, 0));
        assert!(p.sl2vl[0].1.vls[..15].iter().all(|&v| v == 0));
    }

    #[test]
    fn a_switch_gets_a_table_per_input_for_each_live_output() {
        let mut ports = vec![port(0, 4, None), port(1, 4, Some(4)), port(2, 4, Some(4)), port(3, 4, None)];
        ports[3].up = false;
        let sw = NodeView { guid: Guid(9), kind: NodeKind::Switch { enhanced_port0: false }, ports };
        let r = resolve(&opts(), std::slice::from_ref(&sw)).unwrap();
        let nums: Vec<u8> = r[0].ports.iter().map(|p| p.num).collect();
        assert_eq!(nums, vec![1, 2], "base port 0 and the down port 3 are left alone");
        let p1 = &r[0].ports[0];
        assert_eq!(p1.sl2vl.iter().map(|(i, _)| *i).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
        assert_eq!(p1.vl_high_limit, 3, "switch external ports use qos.swe");
        assert_eq!(p1.sl2vl[0].1.vls[15], 7, "the default SL2VL sends SL 15 to VL 7");
        let mut no_map = sw.clone();
        no_map.ports[0].sl_mapping = false;
        assert!(resolve(&opts(), &[no_map]).unwrap()[0].ports.iter().all(|p| p.sl2vl.is_empty()));
        let enhanced = NodeView { kind: NodeKind::Switch { enhanced_port0: true }, ..sw };
        let r = resolve(&opts(), &[enhanced]).unwrap();
        assert_eq!(r[0].ports[0].num, 0, "an enhanced port 0 is set");
        assert_eq!(r[0].ports[0].sl2vl.len(), 4);
    }

    #[test]
    fn large_arbitration_caps_fill_second_blocks() {
        let mut p = port(1, 5, None);
        p.vl_arb_low_cap = 40;
        p.vl_arb_high_cap = 32;
        let ca = NodeView { guid: Guid(1), kind: NodeKind::Ca, ports: vec![p] };
        let r = resolve(&QosOptions::default(), &[ca]).unwrap();
        let sels: Vec<u16> = r[0].ports[0].vlarb.iter().map(|(s, _)| *s).collect();
        assert_eq!(sels, vec![1, 2, 3]);
    }
}

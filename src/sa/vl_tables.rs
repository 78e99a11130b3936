//! SLtoVLMappingTableRecord and VLArbitrationTableRecord (Get, GetTable): each port's SL-to-VL
//! map and VL arbitration blocks, as the SM read them from the ports.
//!
//! Owns [`VlTables`], the tables by node GUID (read by the core's census, `core::sa::census`,
//! which fills it), and the two queries. A switch has a map per (input port, output port) pair,
//! ports 0..=N both, and arbitration blocks per port 0..=N (1 and 3; 2 and 4, entries 32..63,
//! where the port's caps exceed 32); a CA port has one map (its record carries ports 0/0) and
//! its own blocks. A table whose read failed has no record. Tables repeat across a fabric, so
//! each is stored once and ports hold 16-bit indexes: a 48-port switch's 2,401 maps take 4.8 KB.
//! Ports are selected as for NodeRecord (an untrusted requester sees only ports it can talk
//! to); a switch's records also by their port and block components, a CA's by its LID (and
//! block) only, as OpenSM does.

use std::collections::HashMap;
use std::hash::Hash;

use ibsm_mad::attrs::{SlToVlTable, VlArbitrationTable};
use ibsm_mad::records::{SlToVlTableRecord, VlArbTableRecord};
use ibsm_mad::{Attribute, Guid, PortNum};

use super::answer::Table;
use super::node_record::candidates;
use super::snapshot::Snapshot;
use super::{Answer, Limits, Query};

/// No table: not read yet, or the read failed.
const NONE: u16 = u16::MAX;

/// Values stored once, by 16-bit index.
#[derive(Debug, Clone, Default)]
struct Pool<T> {
    values: Vec<T>,
    index: HashMap<T, u16>,
}

impl<T: Copy + Eq + Hash> Pool<T> {
    /// The index of `v`, added if new; [`NONE`] when the pool is full (65,535 distinct tables).
    fn intern(&mut self, v: T) -> u16 {
        if let Some(&i) = self.index.get(&v) {
            return i;
        }
        let Ok(i) = u16::try_from(self.values.len()).map_err(|_| ()).and_then(|i| (i < NONE).then_some(i).ok_or(()))
        else {
            return NONE;
        };
        self.values.push(v);
        self.index.insert(v, i);
        i
    }

    fn get(&self, i: u16) -> Option<&T> {
        self.values.get(usize::from(i))
    }
}

/// The tables of one node.
#[derive(Debug, Clone)]
pub struct NodeTables {
    /// Ports 0..=`last` exist.
    last: u8,
    switch: bool,
    /// Switch: the map of (input, output) at `input * (last + 1) + output`. CA: the map of port
    /// `p` at `p`.
    sl2vl: Vec<u16>,
    /// Blocks 1..=4 of port `p` at `p`.
    vlarb: Vec<[u16; 4]>,
}

impl NodeTables {
    fn sl2vl_at(&self, input: u8, output: u8) -> Option<usize> {
        let (i, o, w) = (usize::from(input), usize::from(output), usize::from(self.last) + 1);
        if self.switch { (i < w && o < w).then_some(i * w + o) } else { (input == 0 && o < w).then_some(o) }
    }
}

/// What one table read is: an SMP attribute modifier and where its answer goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VlRead {
    /// SLtoVLMappingTable of a switch's (input, output) pair; of CA port `output` (input 0).
    Sl2Vl {
        /// The input port (0 for a CA).
        input: u8,
        /// The output port (the CA port).
        output: u8,
    },
    /// VLArbitrationTable block 1..=4 of port `port`.
    VlArb {
        /// The port.
        port: u8,
        /// The block selector, 1..=4.
        block: u8,
    },
}

impl VlRead {
    /// Attribute id and modifier of the SMP (a CA answers for the port the SMP reaches, so its
    /// modifiers name no port).
    pub fn smp(self, switch: bool) -> (u16, u32) {
        match self {
            VlRead::Sl2Vl { input, output } if switch => {
                (SlToVlTable::ID, SlToVlTable::attr_mod(PortNum(input), PortNum(output)))
            }
            VlRead::Sl2Vl { .. } => (SlToVlTable::ID, 0),
            VlRead::VlArb { port, block } => {
                let port = if switch { port } else { 0 };
                (VlArbitrationTable::ID, VlArbitrationTable::attr_mod(block.into(), PortNum(port)))
            }
        }
    }
}

/// Every node's tables, by node GUID.
#[derive(Debug, Clone, Default)]
pub struct VlTables {
    nodes: HashMap<Guid, NodeTables>,
    sl2vl: Pool<SlToVlTable>,
    vlarb: Pool<VlArbitrationTable>,
}

impl VlTables {
    /// Nodes with tables.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether no node has tables.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Whether `node` has an entry (its reads were started).
    pub fn has(&self, node: Guid) -> bool {
        self.nodes.contains_key(&node)
    }

    /// Starts `node`'s entry (every table unread) and lists its reads: for a switch with ports
    /// 0..=`last`, every (input, output) map and every port's blocks; for a CA, the map and
    /// blocks of each port in `ca_ports`. `caps` gives a port's VLArbitrationLowCap and
    /// HighCap when known: blocks 2 and 4 (entries 32..63) are read only where they exist.
    pub fn start(
        &mut self,
        node: Guid,
        (switch, last): (bool, u8),
        ca_ports: &[u8],
        caps: impl Fn(u8) -> Option<(u8, u8)>,
    ) -> Vec<(u8, VlRead)> {
        let w = usize::from(last) + 1;
        let sl2vl = vec![NONE; if switch { w * w } else { w }];
        self.nodes.insert(node, NodeTables { last, switch, sl2vl, vlarb: vec![[NONE; 4]; w] });
        let mut reads = Vec::new();
        let ports: Vec<u8> = if switch { (0..=last).collect() } else { ca_ports.to_vec() };
        for &p in &ports {
            // Reads go to port 0 of a switch, to the port itself on a CA.
            let at = if switch { 0 } else { p };
            if switch {
                reads.extend((0..=last).map(|input| (0, VlRead::Sl2Vl { input, output: p })));
            } else {
                reads.push((at, VlRead::Sl2Vl { input: 0, output: p }));
            }
            let (low, high) = caps(p).unwrap_or((u8::MAX, u8::MAX));
            let blocks = [(1, true), (2, low > 32), (3, true), (4, high > 32)];
            reads.extend(blocks.iter().filter(|b| b.1).map(|&(block, _)| (at, VlRead::VlArb { port: p, block })));
        }
        reads
    }

    /// Stores the answer to `read` of `node` (`data`: the SMP's data area).
    pub fn store(&mut self, node: Guid, read: VlRead, data: &[u8]) {
        let Some(n) = self.nodes.get_mut(&node) else { return };
        match read {
            VlRead::Sl2Vl { input, output } => {
                let (Some(at), Ok(t)) = (n.sl2vl_at(input, output), SlToVlTable::parse(data)) else { return };
                n.sl2vl[at] = self.sl2vl.intern(t);
            }
            VlRead::VlArb { port, block } => {
                let Ok(t) = VlArbitrationTable::parse(data) else { return };
                let b = usize::from(block).wrapping_sub(1);
                if let Some(slot) = n.vlarb.get_mut(usize::from(port)).and_then(|p| p.get_mut(b)) {
                    *slot = self.vlarb.intern(t);
                }
            }
        }
    }

    /// Forgets the nodes `keep` says no.
    pub fn retain(&mut self, mut keep: impl FnMut(Guid) -> bool) {
        self.nodes.retain(|&g, _| keep(g));
    }

    fn sl2vl(&self, n: &NodeTables, input: u8, output: u8) -> Option<SlToVlTable> {
        let i = *n.sl2vl.get(n.sl2vl_at(input, output)?)?;
        self.sl2vl.get(i).copied()
    }

    fn vlarb(&self, n: &NodeTables, port: u8, block: u8) -> Option<VlArbitrationTable> {
        let i = *n.vlarb.get(usize::from(port))?.get(usize::from(block).checked_sub(1)?)?;
        self.vlarb.get(i).copied()
    }
}

/// The values of a key component: the template's when the mask names it, else `0..=last`.
fn range(mask: u64, bit: u64, template: u8, last: u8) -> std::ops::RangeInclusive<u8> {
    if mask & bit != 0 { template..=template } else { 0..=last }
}

/// Get/GetTable(SLtoVLMappingTableRecord).
pub(super) fn sl2vl_query(snap: &Snapshot, vl: &VlTables, q: &Query<'_>, limits: &Limits) -> Answer {
    type R = SlToVlTableRecord;
    let mut t = Table::new::<R>(q, limits);
    let (mask, tmpl) = (q.header.comp_mask, R::parse(q.template).unwrap_or_default());
    'ports: for at in candidates(snap, q, R::COMP_LID, 0) {
        let (Some(node), Some(port)) = (snap.node(at.0), snap.port(at)) else { continue };
        let Some(n) = vl.nodes.get(&node.info.node_guid) else { continue };
        let lid = port.lid;
        if n.switch {
            // Output port by output port, each from every input port (OpenSM's order).
            for output in range(mask, R::COMP_OUTPUT_PORT_NUM, tmpl.output_port.0, n.last) {
                for input in range(mask, R::COMP_INPUT_PORT_NUM, tmpl.input_port.0, n.last) {
                    let Some(table) = vl.sl2vl(n, input, output) else { continue };
                    let rec = R { lid, input_port: PortNum(input), output_port: PortNum(output), table };
                    if !t.offer(q, &rec) {
                        break 'ports;
                    }
                }
            }
        } else if let Some(table) = vl.sl2vl(n, 0, at.1) {
            // A CA's map has no ports to select by: its port components are not compared (as
            // OpenSM does).
            if !t.push(&R { lid, input_port: PortNum(0), output_port: PortNum(0), table }) {
                break;
            }
        }
    }
    t.answer(q, limits)
}

/// Get/GetTable(VLArbitrationTableRecord).
pub(super) fn vlarb_query(snap: &Snapshot, vl: &VlTables, q: &Query<'_>, limits: &Limits) -> Answer {
    type R = VlArbTableRecord;
    let mut t = Table::new::<R>(q, limits);
    let (mask, tmpl) = (q.header.comp_mask, R::parse(q.template).unwrap_or_default());
    'ports: for at in candidates(snap, q, R::COMP_LID, 0) {
        let (Some(node), Some(port)) = (snap.node(at.0), snap.port(at)) else { continue };
        let Some(n) = vl.nodes.get(&node.info.node_guid) else { continue };
        // A CA's blocks carry its port number whatever port the query names (as OpenSM does).
        let ports =
            if n.switch { range(mask, R::COMP_OUTPUT_PORT_NUM, tmpl.output_port.0, n.last) } else { at.1..=at.1 };
        for p in ports {
            for block in range(mask, R::COMP_BLOCK_NUM, tmpl.block_num, 4) {
                let Some(table) = vl.vlarb(n, p, block) else { continue };
                let rec = R { lid: port.lid, output_port: PortNum(p), block_num: block, table };
                let kept = if n.switch { t.offer(q, &rec) } else { t.push(&rec) };
                if !kept {
                    break 'ports;
                }
            }
        }
    }
    t.answer(q, limits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cover_every_table_once() {
        let mut vl = VlTables::default();
        let reads = vl.start(Guid(1), (true, 4), &[], |_| None);
        // 5 x 5 maps and 5 ports x 4 blocks, all through port 0.
        assert_eq!(reads.len(), 25 + 20);
        assert!(reads.iter().all(|r| r.0 == 0));
        let mut uniq = reads.clone();
        uniq.dedup();
        assert_eq!(uniq.len(), reads.len());
        let ca = vl.start(Guid(2), (false, 2), &[1, 2], |p| (p == 2).then_some((8, 64)));
        assert_eq!(ca.len(), 5 + 4, "port 1: a map, blocks 1..=4; port 2 (caps 8, 64): a map, blocks 1, 3, 4");
        assert!(ca.contains(&(2, VlRead::VlArb { port: 2, block: 4 })));
        assert!(!ca.contains(&(2, VlRead::VlArb { port: 2, block: 2 })));
        assert_eq!(VlRead::VlArb { port: 2, block: 3 }.smp(false), (VlArbitrationTable::ID, 0x3_0000));
        assert_eq!(VlRead::VlArb { port: 2, block: 3 }.smp(true), (VlArbitrationTable::ID, 0x3_0002));
        assert_eq!(VlRead::Sl2Vl { input: 1, output: 3 }.smp(true), (SlToVlTable::ID, 0x0103));
    }

    #[test]
    fn stores_by_pair_and_shares_equal_tables() {
        let mut vl = VlTables::default();
        vl.start(Guid(1), (true, 2), &[], |_| None);
        let a = [0x01, 0x23, 0x45, 0x67, 0x01, 0x23, 0x45, 0x67];
        for input in 0..=2 {
            vl.store(Guid(1), VlRead::Sl2Vl { input, output: 1 }, &a);
        }
        vl.store(Guid(1), VlRead::Sl2Vl { input: 2, output: 2 }, &[0x11; 8]);
        // Out of range and unknown nodes are ignored.
        vl.store(Guid(1), VlRead::Sl2Vl { input: 3, output: 0 }, &a);
        vl.store(Guid(9), VlRead::Sl2Vl { input: 0, output: 0 }, &a);
        vl.store(Guid(1), VlRead::VlArb { port: 1, block: 0 }, &[0; 64]);
        vl.store(Guid(1), VlRead::VlArb { port: 1, block: 5 }, &[0; 64]);
        let n = &vl.nodes[&Guid(1)];
        assert_eq!(vl.sl2vl.values.len(), 2);
        assert_eq!(vl.sl2vl(n, 0, 1), vl.sl2vl(n, 2, 1));
        assert_eq!(vl.sl2vl(n, 2, 2).map(|t| t.vls[0]), Some(1));
        assert_eq!(vl.sl2vl(n, 0, 0), None, "never read");
        assert!(n.vlarb.iter().all(|b| b.iter().all(|&i| i == NONE)));
        vl.retain(|g| g != Guid(1));
        assert!(vl.is_empty());
    }
}

//! ComponentMask layouts: where each component of a record lies, so that an SA can select
//! records by the components a query names without a hand-written comparison per field.
//!
//! A record's components, in the spec's order (component `n` is ComponentMask bit `n`), tile
//! the record: each starts where the previous one ends, reserved components included. So a
//! layout is the list of start bits ([`Components::STARTS`]); the last component runs to the
//! record's end. [`matches`] compares two emitted records on the masked components bit for bit.
//!
//! Only records whose components are plain values are given a layout here. PathRecord,
//! MultiPathRecord and MCMemberRecord carry selectors (MTU, rate, lifetime "greater than" ...)
//! and GIDs that name ports rather than compare as bytes; the SA matches those by meaning.

use crate::Attribute;
use crate::bits;
use crate::records::{
    GuidInfoRecord, InformInfoRecord, LftRecord, LinkRecord, McMemberRecord, MftRecord, NodeRecord, PKeyTableRecord,
    PortInfoRecord, ServiceRecord, SlToVlTableRecord, SmInfoRecord, SwitchInfoRecord, VlArbTableRecord,
};

/// A record type whose components are plain bit ranges.
pub trait Components: Attribute {
    /// Start bit of each component, ascending; component `n` ends where `n + 1` starts, the
    /// last one at `LEN * 8`.
    const STARTS: &'static [u16];
}

/// Whether `query` and `candidate` (both emitted records of type `A`, at least `A::LEN` bytes;
/// missing bytes read as zero) agree on every component named in `mask`. Mask bits past the
/// record's last component are ignored (they name nothing; the SA decides whether that is an
/// error).
pub fn matches<A: Components>(mask: u64, query: &[u8], candidate: &[u8]) -> bool {
    let starts = A::STARTS;
    let end = (A::LEN * 8) as u16;
    let mut m = mask;
    while m != 0 {
        let n = m.trailing_zeros() as usize;
        m &= m - 1;
        let Some(&from) = starts.get(n) else { break };
        let to = starts.get(n + 1).copied().unwrap_or(end);
        if !same_bits(query, candidate, usize::from(from), usize::from(to)) {
            return false;
        }
    }
    true
}

/// Whether `a` and `b` hold the same bits in `from..to` (IBTA bit numbering).
fn same_bits(a: &[u8], b: &[u8], from: usize, to: usize) -> bool {
    let mut bit = from;
    while bit < to {
        let width = (to - bit).min(64);
        if bits::get(a, bit, width) != bits::get(b, bit, width) {
            return false;
        }
        bit += width;
    }
    true
}

/// NodeInfo's component starts (bits, relative to the attribute): BaseVersion, ClassVersion,
/// NodeType, NumPorts, SystemImageGUID, NodeGUID, PortGUID, PartitionCap, DeviceID, Revision,
/// LocalPortNum, VendorID.
macro_rules! node_info_at {
    ($o:expr) => {
        [$o, $o + 8, $o + 16, $o + 24, $o + 32, $o + 96, $o + 160, $o + 224, $o + 240, $o + 256, $o + 288, $o + 296]
    };
}

const NODE_RECORD: [u16; 15] = {
    let ni: [u16; 12] = node_info_at!(32);
    let mut s = [0u16; 15];
    s[1] = 16;
    let mut i = 0;
    while i < 12 {
        s[2 + i] = ni[i];
        i += 1;
    }
    s[14] = 352; // NodeDescription
    s
};

impl Components for NodeRecord {
    const STARTS: &'static [u16] = &NODE_RECORD;
}

/// PortInfo's components (bits relative to the attribute), reserved ranges included, in the
/// PortInfoRecord's order from M_Key on.
const PORT_INFO: [u16; 55] = [
    0, 64, 128, 144, 160, 192, 208, 224, 232, 240, 248, 256, 260, 264, 268, 272, 274, 277, 280, 284, 288, 292, 296,
    300, 304, 312, 320, 328, 332, 336, 339, 344, 348, 349, 350, 351, 352, 368, 384, 400, 408, 409, 411, 416, 419, 424,
    428, 432, 448, 456, 480, 496, 500, 504, 507,
];

const PORT_INFO_RECORD: [u16; 58] = {
    let mut s = [0u16; 58];
    s[1] = 16; // PortNum
    s[2] = 24; // Options
    let mut i = 0;
    while i < PORT_INFO.len() {
        s[3 + i] = 32 + PORT_INFO[i];
        i += 1;
    }
    s
};

impl Components for PortInfoRecord {
    const STARTS: &'static [u16] = &PORT_INFO_RECORD;
}

impl Components for SwitchInfoRecord {
    // LID, reserved, then SwitchInfo from bit 32: LinearFDBCap, RandomFDBCap, MulticastFDBCap,
    // LinearFDBTop, DefaultPort, DefaultMulticastPrimaryPort, DefaultMulticastNotPrimaryPort,
    // LifeTimeValue, PortStateChange, OptimizedSLtoVLMappingProgramming, LIDsPerPort,
    // PartitionEnforcementCap, the four enforcement/filter caps, EnhancedPort0, reserved,
    // MulticastFDBTop.
    const STARTS: &'static [u16] =
        &[0, 16, 32, 48, 64, 80, 96, 104, 112, 120, 125, 126, 128, 144, 160, 161, 162, 163, 164, 165, 176];
}

impl Components for SmInfoRecord {
    // LID, reserved, GUID, SM_Key, ActCount, Priority, SMState.
    const STARTS: &'static [u16] = &[0, 16, 32, 96, 160, 192, 196];
}

impl Components for LinkRecord {
    // FromLID, FromPort, ToPort, ToLID.
    const STARTS: &'static [u16] = &[0, 16, 24, 32];
}

impl Components for LftRecord {
    // LID, BlockNum, reserved, LinearForwardingTable.
    const STARTS: &'static [u16] = &[0, 16, 32, 64];
}

impl Components for MftRecord {
    // LID, Position, reserved, BlockNum, reserved, MulticastForwardingTable.
    const STARTS: &'static [u16] = &[0, 16, 20, 23, 32, 64];
}

impl Components for PKeyTableRecord {
    // LID, BlockNum, PortNum, reserved, P_KeyTable.
    const STARTS: &'static [u16] = &[0, 16, 32, 40, 64];
}

impl Components for SlToVlTableRecord {
    // LID, InputPortNum, OutputPortNum, reserved, SLtoVLMappingTable.
    const STARTS: &'static [u16] = &[0, 16, 24, 32, 64];
}

impl Components for VlArbTableRecord {
    // LID, OutputPortNum, BlockNum, reserved, VLArbitrationTable.
    const STARTS: &'static [u16] = &[0, 16, 24, 32, 64];
}

impl Components for GuidInfoRecord {
    // LID, BlockNum, reserved (8 bits), reserved (32 bits), GUID 0 .. GUID 7.
    const STARTS: &'static [u16] = &[0, 16, 24, 32, 64, 128, 192, 256, 320, 384, 448, 512];
}

const SERVICE_RECORD: [u16; 37] = {
    // ServiceID, ServiceGID, ServiceP_Key, reserved, ServiceLease, ServiceKey, ServiceName,
    // then ServiceData8[0..16], ServiceData16[0..8], ServiceData32[0..4], ServiceData64[0..2].
    let mut s = [0u16; 37];
    let head = [0, 64, 192, 208, 224, 256, 384];
    let mut i = 0;
    while i < 7 {
        s[i] = head[i];
        i += 1;
    }
    let mut k = 0;
    while k < 16 {
        s[7 + k] = 896 + 8 * k as u16;
        k += 1;
    }
    k = 0;
    while k < 8 {
        s[23 + k] = 1024 + 16 * k as u16;
        k += 1;
    }
    k = 0;
    while k < 4 {
        s[31 + k] = 1152 + 32 * k as u16;
        k += 1;
    }
    s[35] = 1280;
    s[36] = 1344;
    s
};

impl Components for ServiceRecord {
    const STARTS: &'static [u16] = &SERVICE_RECORD;
}

impl Components for InformInfoRecord {
    // SubscriberGID, Enum, reserved, then InformInfo from bit 192: GID, LIDRangeBegin,
    // LIDRangeEnd, reserved, IsGeneric, Subscribe, Type, TrapNumber/DeviceID, QPN, reserved,
    // RespTimeValue, reserved, ProducerType/VendorID.
    const STARTS: &'static [u16] = &[0, 128, 144, 192, 320, 336, 352, 368, 376, 384, 400, 416, 440, 443, 448, 456];
}

impl Components for McMemberRecord {
    // MGID, PortGID, Q_Key, MLID, MTUSelector, MTU, TClass, P_Key, RateSelector, Rate,
    // PacketLifeTimeSelector, PacketLifeTime, SL, FlowLabel, HopLimit, Scope, JoinState,
    // ProxyJoin, reserved.
    const STARTS: &'static [u16] =
        &[0, 128, 256, 288, 304, 306, 312, 320, 336, 338, 344, 346, 352, 356, 376, 384, 388, 392, 393];
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::{NodeDescription, NodeInfo, PortInfo};
    use crate::{Guid, Lid, PortNum};

    fn starts_tile<A: Components>() {
        let s = A::STARTS;
        assert_eq!(s[0], 0);
        assert!(s.windows(2).all(|w| w[0] < w[1]), "ascending");
        assert!(usize::from(*s.last().unwrap()) < A::LEN * 8, "inside the record");
    }

    #[test]
    fn layouts_tile_their_records_and_have_one_start_per_component() {
        starts_tile::<NodeRecord>();
        starts_tile::<PortInfoRecord>();
        starts_tile::<SwitchInfoRecord>();
        starts_tile::<SmInfoRecord>();
        starts_tile::<LinkRecord>();
        starts_tile::<LftRecord>();
        starts_tile::<PKeyTableRecord>();
        starts_tile::<SlToVlTableRecord>();
        starts_tile::<VlArbTableRecord>();
        starts_tile::<GuidInfoRecord>();
        starts_tile::<MftRecord>();
        assert_eq!(GuidInfoRecord::STARTS.len(), (GuidInfoRecord::COMP_GUID0 << 7).trailing_zeros() as usize + 1);
        starts_tile::<ServiceRecord>();
        starts_tile::<InformInfoRecord>();
        starts_tile::<McMemberRecord>();
        assert_eq!(McMemberRecord::STARTS.len(), McMemberRecord::COMP_RESERVED1.trailing_zeros() as usize + 1);
        let a = McMemberRecord { join_state: crate::records::JoinState(1), ..McMemberRecord::default() };
        let b = McMemberRecord { join_state: crate::records::JoinState(2), ..a };
        assert!(!matches::<McMemberRecord>(McMemberRecord::COMP_JOIN_STATE, &a.to_vec(), &b.to_vec()));
        assert!(matches::<McMemberRecord>(!McMemberRecord::COMP_JOIN_STATE, &a.to_vec(), &b.to_vec()));
        assert_eq!(
            InformInfoRecord::STARTS.len(),
            InformInfoRecord::COMP_PRODUCER_TYPE_VENDOR_ID.trailing_zeros() as usize + 1
        );
        assert_eq!(ServiceRecord::STARTS.len(), ServiceRecord::COMP_DATA64_0.trailing_zeros() as usize + 2);
        let mut a = ServiceRecord::default();
        let b = a;
        a.data64[1] = 9;
        assert!(!matches::<ServiceRecord>(1 << 36, &a.to_vec(), &b.to_vec()));
        assert!(matches::<ServiceRecord>(!(1u64 << 36), &a.to_vec(), &b.to_vec()));
        a = b;
        a.data16[3] = 1;
        assert!(!matches::<ServiceRecord>(1 << 26, &a.to_vec(), &b.to_vec()));
        assert!(matches::<ServiceRecord>(!(1u64 << 26), &a.to_vec(), &b.to_vec()));
        assert_eq!(NodeRecord::STARTS.len(), NodeRecord::COMP_NODE_DESCRIPTION.trailing_zeros() as usize + 1);
        assert_eq!(
            PortInfoRecord::STARTS.len(),
            PortInfoRecord::COMP_LINK_SPEED_EXT_ENABLED.trailing_zeros() as usize + 1
        );
        assert_eq!(
            SwitchInfoRecord::STARTS.len(),
            SwitchInfoRecord::COMP_MULTICAST_FDB_TOP.trailing_zeros() as usize + 1
        );
    }

    /// Changing one field of a record changes exactly the component that names it.
    #[test]
    fn each_field_belongs_to_its_own_component() {
        let base = NodeRecord {
            lid: Lid(7),
            node_info: NodeInfo::parse(&[0u8; 64])
                .map(|n| NodeInfo { node_guid: Guid(0x10), port_guid: Guid(0x11), num_ports: 2, ..n })
                .unwrap(),
            node_description: NodeDescription::new("h1"),
        };
        let b = base.to_vec();
        let check = |other: NodeRecord, comp: u64| {
            let o = other.to_vec();
            assert!(!matches::<NodeRecord>(comp, &b, &o), "component {comp:#x} sees the change");
            assert!(matches::<NodeRecord>(!comp, &b, &o), "no other component does");
        };
        check(NodeRecord { lid: Lid(8), ..base }, NodeRecord::COMP_LID);
        let mut ni = base.node_info;
        ni.port_guid = Guid(0x12);
        check(NodeRecord { node_info: ni, ..base }, NodeRecord::COMP_PORT_GUID);
        let mut ni = base.node_info;
        ni.local_port_num = PortNum(2);
        check(NodeRecord { node_info: ni, ..base }, NodeRecord::COMP_LOCAL_PORT_NUM);
        check(NodeRecord { node_description: NodeDescription::new("h2"), ..base }, NodeRecord::COMP_NODE_DESCRIPTION);

        let pir =
            PortInfoRecord { endport_lid: Lid(3), port_num: PortNum(1), options: 0, port_info: PortInfo::default() };
        let p = pir.to_vec();
        let mut other = pir;
        other.port_info.lid = Lid(9);
        let o = other.to_vec();
        assert!(!matches::<PortInfoRecord>(PortInfoRecord::COMP_LID, &p, &o));
        assert!(matches::<PortInfoRecord>(!PortInfoRecord::COMP_LID, &p, &o));
        let mut other = pir;
        other.port_info.subnet_timeout = 18;
        let o = other.to_vec();
        assert!(!matches::<PortInfoRecord>(PortInfoRecord::COMP_SUBNET_TIMEOUT, &p, &o));
        assert!(matches::<PortInfoRecord>(!PortInfoRecord::COMP_SUBNET_TIMEOUT, &p, &o));
        // An empty mask matches anything; short buffers read as zeros and never panic.
        assert!(matches::<PortInfoRecord>(0, &p, &o));
        assert!(matches::<PortInfoRecord>(u64::MAX, &[], &[]));
    }
}

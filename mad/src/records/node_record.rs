//! NodeRecord (IBTA vol. 1, 15.2.5.2): a node's NodeInfo and NodeDescription, keyed by LID.
//!
//! Layout: LID at byte 0, 16 reserved bits, NodeInfo's 40 defined bytes at byte 4 and
//! NodeDescription's 64 bytes at byte 44; 108 bytes. The embedded attributes are read and
//! written by [`crate::attrs::NodeInfo`] and [`crate::attrs::NodeDescription`].

use crate::attrs::{NodeDescription, NodeInfo};
use crate::records::{comp, emit_embedded, parse_embedded};
use crate::{Attribute, Lid, Result, bits, check_len, ids};

/// NodeRecord.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeRecord {
    /// LID of the port the record describes (the base LID; port 0's for a switch).
    pub lid: Lid,
    /// NodeInfo as read through that port.
    pub node_info: NodeInfo,
    /// NodeDescription.
    pub node_description: NodeDescription,
}

impl NodeRecord {
    const INFO_OFF: usize = 4;
    /// Bytes of NodeInfo that the spec defines, i.e. the span it takes in a NodeRecord.
    const INFO_SPAN: usize = 40;
    const DESC_OFF: usize = Self::INFO_OFF + Self::INFO_SPAN;

    /// ComponentMask: LID.
    pub const COMP_LID: u64 = comp(0);
    /// ComponentMask: the reserved 16 bits after LID.
    pub const COMP_RESERVED1: u64 = comp(1);
    /// ComponentMask: NodeInfo.BaseVersion.
    pub const COMP_BASE_VERSION: u64 = comp(2);
    /// ComponentMask: NodeInfo.ClassVersion.
    pub const COMP_CLASS_VERSION: u64 = comp(3);
    /// ComponentMask: NodeInfo.NodeType.
    pub const COMP_NODE_TYPE: u64 = comp(4);
    /// ComponentMask: NodeInfo.NumPorts.
    pub const COMP_NUM_PORTS: u64 = comp(5);
    /// ComponentMask: NodeInfo.SystemImageGUID.
    pub const COMP_SYSTEM_IMAGE_GUID: u64 = comp(6);
    /// ComponentMask: NodeInfo.NodeGUID.
    pub const COMP_NODE_GUID: u64 = comp(7);
    /// ComponentMask: NodeInfo.PortGUID.
    pub const COMP_PORT_GUID: u64 = comp(8);
    /// ComponentMask: NodeInfo.PartitionCap.
    pub const COMP_PARTITION_CAP: u64 = comp(9);
    /// ComponentMask: NodeInfo.DeviceID.
    pub const COMP_DEVICE_ID: u64 = comp(10);
    /// ComponentMask: NodeInfo.Revision.
    pub const COMP_REVISION: u64 = comp(11);
    /// ComponentMask: NodeInfo.LocalPortNum.
    pub const COMP_LOCAL_PORT_NUM: u64 = comp(12);
    /// ComponentMask: NodeInfo.VendorID.
    pub const COMP_VENDOR_ID: u64 = comp(13);
    /// ComponentMask: NodeDescription.
    pub const COMP_NODE_DESCRIPTION: u64 = comp(14);
}

impl Attribute for NodeRecord {
    const ID: u16 = ids::sa_attr::NODE_RECORD;
    const LEN: usize = Self::DESC_OFF + 64;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("NodeRecord", buf, Self::LEN)?;
        Ok(NodeRecord {
            lid: Lid(bits::u16_at(buf, 0)),
            node_info: parse_embedded(buf, Self::INFO_OFF, Self::INFO_SPAN)?,
            node_description: parse_embedded(buf, Self::DESC_OFF, 64)?,
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        let end = Self::LEN.min(buf.len());
        buf[..end].fill(0);
        bits::put_u16(buf, 0, self.lid.0);
        emit_embedded(&self.node_info, buf, Self::INFO_OFF, Self::INFO_SPAN);
        emit_embedded(&self.node_description, buf, Self::DESC_OFF, 64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::NodeType;
    use crate::records::testutil::{emit_short_is_safe, hex, rejects_short, round_trip};
    use crate::{Guid, PortNum};
    use proptest::prelude::*;

    /// libibmad 44.0 `mad_set_field`/`mad_set_field64`/`mad_set_array` with IB_SA_NR_*_F:
    /// LID=5 BaseVersion=1 ClassVersion=1 NodeType=2 NumPorts=36
    /// SystemImageGUID=0x0002c90300000100 NodeGUID=..0101 PortGUID=..0102 PartitionCap=8
    /// DeviceID=0xc738 Revision=0xa1 LocalPortNum=7 VendorID=0x2c9 NodeDesc="ibsm switch one".
    const LIBIBMAD: &str = "
        00 05 00 00 01 01 02 24 00 02 c9 03 00 00 01 00
        00 02 c9 03 00 00 01 01 00 02 c9 03 00 00 01 02
        00 08 c7 38 00 00 00 a1 07 00 02 c9 69 62 73 6d
        20 73 77 69 74 63 68 20 6f 6e 65 00 00 00 00 00
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
        00 00 00 00 00 00 00 00 00 00 00 00";

    fn expected() -> NodeRecord {
        NodeRecord {
            lid: Lid(5),
            node_info: NodeInfo {
                base_version: 1,
                class_version: 1,
                node_type: NodeType::Switch,
                num_ports: 36,
                system_image_guid: Guid(0x0002_c903_0000_0100),
                node_guid: Guid(0x0002_c903_0000_0101),
                port_guid: Guid(0x0002_c903_0000_0102),
                partition_cap: 8,
                device_id: 0xc738,
                revision: 0xa1,
                local_port_num: PortNum(7),
                vendor_id: 0x2c9,
            },
            node_description: NodeDescription::new("ibsm switch one"),
        }
    }

    #[test]
    fn parse_libibmad_fixture() {
        assert_eq!(NodeRecord::parse(&hex(LIBIBMAD)).unwrap(), expected());
    }

    #[test]
    fn emit_matches_libibmad_fixture() {
        assert_eq!(expected().to_vec(), hex(LIBIBMAD));
    }

    #[test]
    fn short_input_is_truncated() {
        rejects_short::<NodeRecord>(&hex(LIBIBMAD));
        emit_short_is_safe(&expected());
    }

    proptest! {
        #[test]
        fn round_trips(b in proptest::collection::vec(any::<u8>(), NodeRecord::LEN)) {
            round_trip(&NodeRecord::parse(&b).unwrap());
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = NodeRecord::parse(&b);
        }
    }
}

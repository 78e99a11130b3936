//! NodeInfo (attribute 0x0011): what a node is: type, port count, GUIDs, vendor and device.
//!
//! Layout (IBTA 14.2.5.3), bit offsets from the start of the attribute: BaseVersion 0/8,
//! ClassVersion 8/8, NodeType 16/8, NumberOfPorts 24/8, SystemImageGUID 32/64, NodeGUID 96/64,
//! PortGUID 160/64, PartitionCap 224/16, DeviceID 240/16, Revision 256/32, LocalPortNum 288/8,
//! VendorID 296/24. Bytes 40..64 are reserved.

use super::wire_enum;
use crate::bits;
use crate::{Attribute, Guid, PortNum, Result, check_len, ids};

wire_enum! {
    /// NodeInfo.NodeType: what kind of node answered.
    pub enum NodeType: 8 bits {
        /// Channel adapter (an HCA or TCA): an end node.
        Ca = 1,
        /// Switch: forwards packets between its ports by LFT/MFT.
        Switch = 2,
        /// Router: connects subnets.
        Router = 3,
    }
}

const _: () = {
    assert!(NodeType::Ca.raw() == ids::node_type::CA);
    assert!(NodeType::Switch.raw() == ids::node_type::SWITCH);
    assert!(NodeType::Router.raw() == ids::node_type::ROUTER);
};

/// NodeInfo: the identity of a node, as seen through the port the SMP arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeInfo {
    /// MAD base version the node supports (1).
    pub base_version: u8,
    /// SMP class version the node supports (1).
    pub class_version: u8,
    /// Channel adapter, switch or router.
    pub node_type: NodeType,
    /// Number of physical ports (a switch's management port 0 is not counted).
    pub num_ports: u8,
    /// GUID shared by all nodes of one chassis or system; zero when not supported.
    pub system_image_guid: Guid,
    /// GUID of the node itself; the key that identifies it across sweeps.
    pub node_guid: Guid,
    /// GUID of the port the SMP arrived on (a switch reports its node GUID for every port).
    pub port_guid: Guid,
    /// Number of P_Key table entries the node supports (per port for a CA).
    pub partition_cap: u16,
    /// Vendor-assigned device id (e.g. 0xc738 for a ConnectX-3 era switch).
    pub device_id: u16,
    /// Vendor-assigned device revision.
    pub revision: u32,
    /// Number of the port the SMP arrived on (0 for a switch's management port).
    pub local_port_num: PortNum,
    /// IEEE OUI of the vendor (24 bits; e.g. 0x0002c9 for Mellanox).
    pub vendor_id: u32,
}

impl Attribute for NodeInfo {
    const ID: u16 = ids::attr::NODE_INFO;
    const LEN: usize = 64;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("NodeInfo", buf, Self::LEN)?;
        Ok(NodeInfo {
            base_version: buf[0],
            class_version: buf[1],
            node_type: NodeType::from_raw(buf[2]),
            num_ports: buf[3],
            system_image_guid: Guid(bits::u64_at(buf, 4)),
            node_guid: Guid(bits::u64_at(buf, 12)),
            port_guid: Guid(bits::u64_at(buf, 20)),
            partition_cap: bits::u16_at(buf, 28),
            device_id: bits::u16_at(buf, 30),
            revision: bits::u32_at(buf, 32),
            local_port_num: PortNum(buf[36]),
            vendor_id: bits::get(buf, 296, 24) as u32,
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        buf[..Self::LEN].fill(0);
        buf[0] = self.base_version;
        buf[1] = self.class_version;
        buf[2] = self.node_type.raw();
        buf[3] = self.num_ports;
        bits::put_u64(buf, 4, self.system_image_guid.0);
        bits::put_u64(buf, 12, self.node_guid.0);
        bits::put_u64(buf, 20, self.port_guid.0);
        bits::put_u16(buf, 28, self.partition_cap);
        bits::put_u16(buf, 30, self.device_id);
        bits::put_u32(buf, 32, self.revision);
        buf[36] = self.local_port_num.0;
        bits::set(buf, 296, 24, u64::from(self.vendor_id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::test_util::{emit_parse_roundtrip, rejects_short};
    use proptest::prelude::*;

    /// ibsim 0.10 `net` example, `smpquery -D nodeinfo 0` (Switch1), GetResp data bytes 64..128.
    /// smpquery printed: Switch, 8 ports, all GUIDs 0x200000, PartCap 8, Revision 0xa1, port 0.
    const IBSIM_SWITCH: [u8; 64] = [
        0x01, 0x01, 0x02, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0xa1,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];

    /// Same fabric, `smpquery -D nodeinfo 0,1` (Hca1 through Switch1 port 1).
    /// smpquery printed: Channel Adapter, 2 ports, SystemGuid/Guid 0x100000, PortGuid 0x100001,
    /// PartCap 64, LocalPort 1.
    const IBSIM_HCA: [u8; 64] = [
        0x01, 0x01, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x01, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0xa1,
        0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];

    /// Encoded by libibmad 44.0 `mad_set_field` (a throw-away C program): router, 36 ports,
    /// SystemGuid 0x0002c90300001111, Guid ..2222, PortGuid ..3333, PartCap 128, DevId 0xc738,
    /// Revision 0xb2, LocalPort 17, VendorId 0x0002c9.
    const LIBIBMAD_ROUTER: [u8; 64] = [
        0x01, 0x01, 0x03, 0x24, 0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x11, 0x11, 0x00, 0x02, 0xc9, 0x03, 0x00, 0x00,
        0x22, 0x22, 0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x33, 0x33, 0x00, 0x80, 0xc7, 0x38, 0x00, 0x00, 0x00, 0xb2,
        0x11, 0x00, 0x02, 0xc9, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];

    fn router() -> NodeInfo {
        NodeInfo {
            base_version: 1,
            class_version: 1,
            node_type: NodeType::Router,
            num_ports: 36,
            system_image_guid: Guid(0x0002_c903_0000_1111),
            node_guid: Guid(0x0002_c903_0000_2222),
            port_guid: Guid(0x0002_c903_0000_3333),
            partition_cap: 128,
            device_id: 0xc738,
            revision: 0xb2,
            local_port_num: PortNum(17),
            vendor_id: 0x0000_02c9,
        }
    }

    #[test]
    fn deconstruct_ibsim_switch() {
        let n = NodeInfo::parse(&IBSIM_SWITCH).unwrap();
        assert_eq!((n.base_version, n.class_version), (1, 1));
        assert_eq!(n.node_type, NodeType::Switch);
        assert_eq!(n.num_ports, 8);
        assert_eq!(n.system_image_guid, Guid(0x20_0000));
        assert_eq!(n.node_guid, Guid(0x20_0000));
        assert_eq!(n.port_guid, Guid(0x20_0000));
        assert_eq!(n.partition_cap, 8);
        assert_eq!(n.device_id, 0);
        assert_eq!(n.revision, 0xa1);
        assert_eq!(n.local_port_num, PortNum(0));
        assert_eq!(n.vendor_id, 0);
    }

    #[test]
    fn deconstruct_ibsim_hca() {
        let n = NodeInfo::parse(&IBSIM_HCA).unwrap();
        assert_eq!(n.node_type, NodeType::Ca);
        assert_eq!(n.num_ports, 2);
        assert_eq!(n.node_guid, Guid(0x10_0000));
        assert_eq!(n.port_guid, Guid(0x10_0001));
        assert_eq!(n.partition_cap, 64);
        assert_eq!(n.local_port_num, PortNum(1));
        assert_eq!(n.to_vec(), IBSIM_HCA);
    }

    #[test]
    fn construct_matches_libibmad() {
        assert_eq!(router().to_vec(), LIBIBMAD_ROUTER);
        assert_eq!(NodeInfo::parse(&LIBIBMAD_ROUTER).unwrap(), router());
        assert_eq!(NodeInfo::parse(&IBSIM_SWITCH).unwrap().to_vec(), IBSIM_SWITCH);
    }

    #[test]
    fn short_and_unknown() {
        rejects_short::<NodeInfo>();
        let mut b = IBSIM_SWITCH;
        b[2] = 9;
        let n = NodeInfo::parse(&b).unwrap();
        assert_eq!(n.node_type, NodeType::Unknown(9));
        assert_eq!(n.to_vec(), b);
    }

    prop_compose! {
        fn arb_node_info()(
            v in any::<(u8, u8, u8, u8)>(),
            g in any::<(u64, u64, u64)>(),
            w in any::<(u16, u16, u32, u8, u32)>(),
        ) -> NodeInfo {
            NodeInfo {
                base_version: v.0,
                class_version: v.1,
                node_type: NodeType::from_raw(v.2),
                num_ports: v.3,
                system_image_guid: Guid(g.0),
                node_guid: Guid(g.1),
                port_guid: Guid(g.2),
                partition_cap: w.0,
                device_id: w.1,
                revision: w.2,
                local_port_num: PortNum(w.3),
                vendor_id: w.4 & 0xff_ffff,
            }
        }
    }

    proptest! {
        #[test]
        fn roundtrip(n in arb_node_info()) {
            emit_parse_roundtrip(&n);
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = NodeInfo::parse(&b);
        }
    }
}

//! LinkRecord (IBTA vol. 1, 15.2.5.13): one physical link between two ports, seen from its
//! FromLID/FromPort end. 6 bytes; the SA builds these from its topology.

use crate::records::comp;
use crate::{Attribute, Lid, PortNum, Result, bits, check_len, ids};

/// LinkRecord.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkRecord {
    /// FromLID: the LID of the node at the near end (port 0's LID for a switch).
    pub from_lid: Lid,
    /// FromPort: the port number at the near end.
    pub from_port: PortNum,
    /// ToPort: the port number at the far end.
    pub to_port: PortNum,
    /// ToLID: the LID of the node at the far end.
    pub to_lid: Lid,
}

impl LinkRecord {
    /// ComponentMask: FromLID.
    pub const COMP_FROM_LID: u64 = comp(0);
    /// ComponentMask: FromPort.
    pub const COMP_FROM_PORT: u64 = comp(1);
    /// ComponentMask: ToPort.
    pub const COMP_TO_PORT: u64 = comp(2);
    /// ComponentMask: ToLID.
    pub const COMP_TO_LID: u64 = comp(3);
}

impl Attribute for LinkRecord {
    const ID: u16 = ids::sa_attr::LINK_RECORD;
    const LEN: usize = 6;

    fn parse(buf: &[u8]) -> Result<Self> {
        check_len("LinkRecord", buf, Self::LEN)?;
        Ok(LinkRecord {
            from_lid: Lid(bits::u16_at(buf, 0)),
            from_port: PortNum(bits::get(buf, 16, 8) as u8),
            to_port: PortNum(bits::get(buf, 24, 8) as u8),
            to_lid: Lid(bits::u16_at(buf, 4)),
        })
    }

    fn emit(&self, buf: &mut [u8]) {
        bits::put_u16(buf, 0, self.from_lid.0);
        bits::set(buf, 16, 8, self.from_port.0.into());
        bits::set(buf, 24, 8, self.to_port.0.into());
        bits::put_u16(buf, 4, self.to_lid.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::testutil::{emit_short_is_safe, hex, rejects_short, round_trip};
    use proptest::prelude::*;

    /// OpenSM 3.3.23 `ib_link_record_t`: FromLID=3 FromPort=17 ToPort=1 ToLID=0x102.
    const OPENSM: &str = "00 03 11 01 01 02";

    fn expected() -> LinkRecord {
        LinkRecord { from_lid: Lid(3), from_port: PortNum(17), to_port: PortNum(1), to_lid: Lid(0x102) }
    }

    #[test]
    fn parse_fixture() {
        assert_eq!(LinkRecord::parse(&hex(OPENSM)).unwrap(), expected());
    }

    #[test]
    fn emit_matches_fixture() {
        assert_eq!(expected().to_vec(), hex(OPENSM));
    }

    #[test]
    fn short_input_is_truncated() {
        rejects_short::<LinkRecord>(&hex(OPENSM));
        emit_short_is_safe(&expected());
    }

    proptest! {
        #[test]
        fn round_trips(b in proptest::collection::vec(any::<u8>(), LinkRecord::LEN)) {
            round_trip(&LinkRecord::parse(&b).unwrap());
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..16)) {
            let _ = LinkRecord::parse(&b);
        }
    }
}

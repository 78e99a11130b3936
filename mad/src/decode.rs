//! One entry point from untrusted MAD bytes to typed values: [`decode`].
//!
//! Owns: the mapping from (class, attribute id) to the attribute types of [`crate::attrs`] and
//! the record types of [`crate::records`]. It validates the common header
//! ([`MadHeader::validate`]), then the class's own header ([`SmpRepr`], [`SaHeader`]), then the
//! payload. It is what the SM core calls on every received MAD and what the fuzz target
//! (`mad/fuzz/fuzz_targets/mad_decode.rs`) drives.
//!
//! Guarantees: never panics on any input (property-tested here, fuzzed there); every failure
//! is a typed [`Error`]. It does not decide what a MAD means for the SM.

use crate::attrs::{
    GuidInfo, LinearForwardingTable, MulticastForwardingTable, NodeDescription, NodeInfo, Notice, PKeyTable, PortInfo,
    SlToVlTable, SmInfo, SwitchInfo, VlArbitrationTable,
};
use crate::header::{MadHeader, Method, MgmtClass};
use crate::records::{
    ClassPortInfo, GuidInfoRecord, InformInfo, InformInfoRecord, LftRecord, LinkRecord, McMemberRecord, MftRecord,
    MultiPathRecord, NodeRecord, PKeyTableRecord, PathRecord, PortInfoRecord, ServiceRecord, SmInfoRecord,
    SwitchInfoRecord,
};
use crate::sa::{SA_HEADER_LEN, SaHeader, records};
use crate::smp::SmpRepr;
use crate::{Attribute, Error, Result};

/// Offset of the SMP data area in a MAD.
const SMP_DATA_OFFSET: usize = 64;

/// Declares a typed attribute enum and its by-id parser.
macro_rules! attribute_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident($ty:ty), )* }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum $name {
            $( $(#[$vmeta])* $variant($ty), )*
        }

        impl $name {
            /// Parses the attribute `attr` of class `class` from `buf`.
            ///
            /// # Errors
            /// [`Error::UnknownAttribute`] for an id this enum does not cover; the attribute's
            /// own parse errors otherwise.
            pub fn parse(class: u8, attr: u16, buf: &[u8]) -> Result<$name> {
                $(
                    if attr == <$ty as Attribute>::ID {
                        return <$ty as Attribute>::parse(buf).map($name::$variant);
                    }
                )*
                Err(Error::UnknownAttribute { class, attr })
            }

            /// The attribute id of this value.
            pub const fn attr_id(&self) -> u16 {
                match self {
                    $( $name::$variant(_) => <$ty as Attribute>::ID, )*
                }
            }
        }
    };
}

attribute_enum! {
    /// A subnet management attribute carried by an SMP.
    pub enum SmpAttr {
        /// Notice (traps).
        Notice(Notice),
        /// `NodeDescription`.
        NodeDescription(NodeDescription),
        /// `NodeInfo`.
        NodeInfo(NodeInfo),
        /// `SwitchInfo`.
        SwitchInfo(SwitchInfo),
        /// `GUIDInfo`.
        GuidInfo(GuidInfo),
        /// `PortInfo`.
        PortInfo(PortInfo),
        /// `P_KeyTable`.
        PKeyTable(PKeyTable),
        /// `SLtoVLMappingTable`.
        SlToVlTable(SlToVlTable),
        /// `VLArbitrationTable`.
        VlArbitrationTable(VlArbitrationTable),
        /// `LinearForwardingTable`.
        LinearForwardingTable(LinearForwardingTable),
        /// `MulticastForwardingTable`.
        MulticastForwardingTable(MulticastForwardingTable),
        /// `SMInfo`.
        SmInfo(SmInfo),
    }
}

attribute_enum! {
    /// A subnet administration attribute (record) carried by an SA MAD.
    pub enum SaRecord {
        /// `ClassPortInfo`.
        ClassPortInfo(ClassPortInfo),
        /// Notice (in Report/ReportResp).
        Notice(Notice),
        /// `InformInfo`.
        InformInfo(InformInfo),
        /// `NodeRecord`.
        NodeRecord(NodeRecord),
        /// `PortInfoRecord`.
        PortInfoRecord(PortInfoRecord),
        /// `SwitchInfoRecord`.
        SwitchInfoRecord(SwitchInfoRecord),
        /// `LinearForwardingTableRecord`.
        LftRecord(LftRecord),
        /// `MulticastForwardingTableRecord`.
        MftRecord(MftRecord),
        /// `SMInfoRecord`.
        SmInfoRecord(SmInfoRecord),
        /// `InformInfoRecord`.
        InformInfoRecord(InformInfoRecord),
        /// `LinkRecord`.
        LinkRecord(LinkRecord),
        /// `GUIDInfoRecord`.
        GuidInfoRecord(GuidInfoRecord),
        /// `ServiceRecord`.
        ServiceRecord(ServiceRecord),
        /// `P_KeyTableRecord`.
        PKeyTableRecord(PKeyTableRecord),
        /// `PathRecord`.
        PathRecord(PathRecord),
        /// `MCMemberRecord`.
        McMemberRecord(McMemberRecord),
        /// `MultiPathRecord`.
        MultiPathRecord(MultiPathRecord),
    }
}

/// A decoded MAD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// An SMP (LID-routed or directed route) and its attribute.
    Smp {
        /// The SMP headers and raw data (boxed: it is 200-odd bytes of paths and data).
        smp: Box<SmpRepr>,
        /// The attribute parsed from the data.
        attr: SmpAttr,
    },
    /// An SA MAD and its records: every record at the AttributeOffset stride for
    /// `GetTableResp` (none when the offset is 0), otherwise the one record at the start of
    /// the data.
    Sa {
        /// The SA header.
        header: SaHeader,
        /// The records.
        records: Vec<SaRecord>,
    },
    /// A valid MAD of a class whose payload this crate does not decode (performance
    /// management).
    Other(MadHeader),
    /// A MAD with a readable header whose method or attribute this crate has no type for:
    /// the header (TID, class, method, attribute) is kept so that a responder can still
    /// answer it, e.g. with status 0x000c.
    Unsupported {
        /// The common header.
        header: MadHeader,
        /// Why it could not be decoded ([`Error::UnknownAttribute`] or
        /// [`Error::UnknownMethod`]).
        error: Error,
    },
}

/// Validates and decodes one MAD.
///
/// # Errors
/// [`Error::Truncated`]; the header checks of [`MadHeader::validate`]
/// ([`Error::BadBaseVersion`], [`Error::WrongClass`], [`Error::BadClassVersion`],
/// [`Error::UnknownMethod`] is not an error but [`Decoded::Unsupported`]); the DR checks
/// ([`Error::HopCount`], [`Error::HopPointer`]); and the attribute's own parse errors. An
/// unknown attribute gives [`Decoded::Unsupported`] with the header.
pub fn decode(buf: &[u8]) -> Result<Decoded> {
    let header = MadHeader::from_bytes(buf)?;
    match decode_body(buf, header) {
        Err(error @ (Error::UnknownAttribute { .. } | Error::UnknownMethod { .. })) => {
            Ok(Decoded::Unsupported { header, error })
        }
        other => other,
    }
}

fn decode_body(buf: &[u8], header: MadHeader) -> Result<Decoded> {
    header.validate()?;
    let class = header.mgmt_class.raw();
    match header.mgmt_class {
        MgmtClass::SubnLid | MgmtClass::SubnDr => {
            let smp = Box::new(SmpRepr::parse(buf)?);
            // The data area starts at byte 64; Notice runs past its 64 bytes into the reserved
            // area, so each attribute reads from there to the end of the MAD.
            let data = buf.get(SMP_DATA_OFFSET..).unwrap_or(&[]);
            let attr = SmpAttr::parse(class, smp.attr_id, data)?;
            Ok(Decoded::Smp { smp, attr })
        }
        MgmtClass::SubnAdm => {
            let header = SaHeader::from_bytes(buf)?;
            let data = buf.get(SA_HEADER_LEN..).unwrap_or(&[]);
            let records = if header.method == Method::GetTableResp {
                records(data, header.attr_offset)
                    .map(|rec| SaRecord::parse(class, header.attr_id, rec))
                    .collect::<Result<Vec<_>>>()?
            } else {
                vec![SaRecord::parse(class, header.attr_id, data)?]
            };
            Ok(Decoded::Sa { header, records })
        }
        MgmtClass::Perf | MgmtClass::Unknown(_) => Ok(Decoded::Other(header)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::NodeType;
    use crate::header::hex_dump;
    use crate::ids::{attr, sa_attr};
    use crate::sa::tests::NR_RESP;
    use crate::smp::tests::{DR_RESP, LID_RESP};
    use crate::{DrPath, Guid, Lid};
    use proptest::prelude::*;

    #[test]
    fn decodes_captured_smp_responses() {
        for dump in [DR_RESP, LID_RESP] {
            let Ok(Decoded::Smp { smp, attr: SmpAttr::NodeInfo(ni) }) = decode(&hex_dump(dump)) else {
                panic!("not a NodeInfo SMP");
            };
            assert_eq!(smp.method, Method::GetResp);
            // What smpquery printed for Switch1.
            assert_eq!((ni.node_type, ni.num_ports), (NodeType::Switch, 8));
            assert_eq!(ni.node_guid, Guid(0x20_0000));
        }
    }

    #[test]
    fn decodes_captured_table_response() {
        let Ok(Decoded::Sa { header, records }) = decode(&hex_dump(NR_RESP)) else {
            panic!("not an SA MAD");
        };
        assert_eq!(header.attr_id, sa_attr::NODE_RECORD);
        assert_eq!(records.len(), 1);
        let SaRecord::NodeRecord(nr) = &records[0] else { panic!("not a NodeRecord") };
        // What saquery printed: lid 2, CA, port GUID 0x100001.
        assert_eq!(nr.lid, Lid(2));
        assert_eq!(nr.node_info.port_guid, Guid(0x10_0001));
        assert_eq!(records[0].attr_id(), sa_attr::NODE_RECORD);
    }

    #[test]
    fn decodes_own_requests() {
        let path = DrPath::new(&[1, 3]).unwrap();
        let get = SmpRepr::get_dr(&path, attr::PORT_INFO, 3, 7).to_bytes();
        let Ok(Decoded::Smp { smp, attr }) = decode(&get) else { panic!("not an SMP") };
        assert_eq!((smp.attr_mod, attr.attr_id()), (3, attr::PORT_INFO));
        let req = crate::sa::SaHeader::request(Method::GetTable, sa_attr::PATH_RECORD, 0, 9).to_mad(&[]).unwrap();
        assert!(matches!(
            decode(&req),
            Ok(Decoded::Sa { records, .. }) if matches!(records[..], [SaRecord::PathRecord(_)])
        ));
    }

    #[test]
    fn rejections() {
        let unsupported = |buf: &[u8]| match decode(buf) {
            Ok(Decoded::Unsupported { header, error }) => Some((header.tid, header.attr_id, error)),
            _ => None,
        };
        let mut unknown = SmpRepr::get_lid(0xff90, 0, 1).to_bytes();
        assert_eq!(unsupported(&unknown), Some((1, 0xff90, Error::UnknownAttribute { class: 1, attr: 0xff90 })));
        unknown[3] = 0x12; // GetTable is not an SMP method
        assert_eq!(unsupported(&unknown), Some((1, 0xff90, Error::UnknownMethod { class: 1, method: 0x12 })));
        let mut sa = hex_dump(NR_RESP);
        sa[17] = 0x39; // TraceRecord: no type for it
        let tid = MadHeader::from_bytes(&sa).unwrap().tid;
        assert_eq!(unsupported(&sa), Some((tid, 0x39, Error::UnknownAttribute { class: 3, attr: 0x39 })));
        sa[2] = 1;
        assert!(matches!(decode(&sa), Err(Error::BadClassVersion { class: 3, .. })));
        assert!(matches!(decode(&[1, 1, 1]), Err(Error::Truncated { .. })));
        let mut perf = [0u8; 256];
        perf[..4].copy_from_slice(&[1, 4, 1, 1]);
        assert!(matches!(decode(&perf), Ok(Decoded::Other(h)) if h.mgmt_class == MgmtClass::Perf));
        perf[1] = 0x09;
        assert!(matches!(decode(&perf), Err(Error::WrongClass { found: 9, .. })));
    }

    proptest! {
        #[test]
        fn never_panics(mut buf in proptest::collection::vec(any::<u8>(), 0..=300), k in 0u8..4) {
            // Steer most inputs past the header checks so payload parsers get exercised.
            if buf.len() >= 4 && k > 0 {
                let (class, version) = [(1, 1), (0x81, 1), (3, 2)][usize::from(k - 1)];
                buf[..3].copy_from_slice(&[1, class, version]);
            }
            let _ = decode(&buf);
        }
    }
}

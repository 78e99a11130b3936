//! Numeric identifiers from the IBTA specification: management classes, methods, attribute ids,
//! MAD status codes and node types. Only constants live here (a leaf: it imports nothing); the
//! typed enums that wrap them are in the header module, which imports these.

/// Management classes.
pub mod class {
    /// Subnet management, LID-routed.
    pub const SUBN_LID: u8 = 0x01;
    /// Subnet administration.
    pub const SUBN_ADM: u8 = 0x03;
    /// Performance management.
    pub const PERF: u8 = 0x04;
    /// Subnet management, directed route.
    pub const SUBN_DR: u8 = 0x81;
}

/// Methods (the R bit, 0x80, marks responses).
pub mod method {
    /// Get.
    pub const GET: u8 = 0x01;
    /// Set.
    pub const SET: u8 = 0x02;
    /// Send.
    pub const SEND: u8 = 0x03;
    /// Trap.
    pub const TRAP: u8 = 0x05;
    /// Report.
    pub const REPORT: u8 = 0x06;
    /// TrapRepress.
    pub const TRAP_REPRESS: u8 = 0x07;
    /// GetTable (SA).
    pub const GET_TABLE: u8 = 0x12;
    /// GetTraceTable (SA).
    pub const GET_TRACE_TABLE: u8 = 0x13;
    /// GetMulti (SA).
    pub const GET_MULTI: u8 = 0x14;
    /// Delete (SA).
    pub const DELETE: u8 = 0x15;
    /// The response bit.
    pub const RESPONSE: u8 = 0x80;
    /// GetResp.
    pub const GET_RESP: u8 = 0x81;
    /// ReportResp.
    pub const REPORT_RESP: u8 = 0x86;
    /// GetTableResp (SA).
    pub const GET_TABLE_RESP: u8 = 0x92;
    /// GetMultiResp (SA).
    pub const GET_MULTI_RESP: u8 = 0x94;
    /// DeleteResp (SA).
    pub const DELETE_RESP: u8 = 0x95;
}

/// Attribute ids shared by SMPs and SA.
pub mod attr {
    /// ClassPortInfo.
    pub const CLASS_PORT_INFO: u16 = 0x0001;
    /// Notice.
    pub const NOTICE: u16 = 0x0002;
    /// InformInfo.
    pub const INFORM_INFO: u16 = 0x0003;
    /// NodeDescription.
    pub const NODE_DESC: u16 = 0x0010;
    /// NodeInfo.
    pub const NODE_INFO: u16 = 0x0011;
    /// SwitchInfo.
    pub const SWITCH_INFO: u16 = 0x0012;
    /// GUIDInfo.
    pub const GUID_INFO: u16 = 0x0014;
    /// PortInfo.
    pub const PORT_INFO: u16 = 0x0015;
    /// P_KeyTable.
    pub const PKEY_TABLE: u16 = 0x0016;
    /// SLtoVLMappingTable.
    pub const SL2VL_TABLE: u16 = 0x0017;
    /// VLArbitrationTable.
    pub const VL_ARB_TABLE: u16 = 0x0018;
    /// LinearForwardingTable.
    pub const LFT: u16 = 0x0019;
    /// RandomForwardingTable.
    pub const RFT: u16 = 0x001a;
    /// MulticastForwardingTable.
    pub const MFT: u16 = 0x001b;
    /// SMInfo.
    pub const SM_INFO: u16 = 0x0020;
}

/// SA attribute ids (class 0x03).
pub mod sa_attr {
    /// ClassPortInfo.
    pub const CLASS_PORT_INFO: u16 = 0x0001;
    /// Notice.
    pub const NOTICE: u16 = 0x0002;
    /// InformInfo.
    pub const INFORM_INFO: u16 = 0x0003;
    /// NodeRecord.
    pub const NODE_RECORD: u16 = 0x0011;
    /// PortInfoRecord.
    pub const PORT_INFO_RECORD: u16 = 0x0012;
    /// SLtoVLMappingTableRecord.
    pub const SL2VL_RECORD: u16 = 0x0013;
    /// SwitchInfoRecord.
    pub const SWITCH_INFO_RECORD: u16 = 0x0014;
    /// LinearForwardingTableRecord.
    pub const LFT_RECORD: u16 = 0x0015;
    /// RandomForwardingTableRecord.
    pub const RFT_RECORD: u16 = 0x0016;
    /// MulticastForwardingTableRecord.
    pub const MFT_RECORD: u16 = 0x0017;
    /// SMInfoRecord.
    pub const SM_INFO_RECORD: u16 = 0x0018;
    /// InformInfoRecord.
    pub const INFORM_INFO_RECORD: u16 = 0x00f3;
    /// LinkRecord.
    pub const LINK_RECORD: u16 = 0x0020;
    /// GUIDInfoRecord.
    pub const GUID_INFO_RECORD: u16 = 0x0030;
    /// ServiceRecord.
    pub const SERVICE_RECORD: u16 = 0x0031;
    /// P_KeyTableRecord.
    pub const PKEY_TABLE_RECORD: u16 = 0x0033;
    /// PathRecord.
    pub const PATH_RECORD: u16 = 0x0035;
    /// VLArbitrationTableRecord.
    pub const VL_ARB_RECORD: u16 = 0x0036;
    /// MCMemberRecord.
    pub const MC_MEMBER_RECORD: u16 = 0x0038;
    /// TraceRecord.
    pub const TRACE_RECORD: u16 = 0x0039;
    /// MultiPathRecord.
    pub const MULTI_PATH_RECORD: u16 = 0x003a;
}

/// Performance management attribute ids (class 0x04).
pub mod perf_attr {
    /// ClassPortInfo.
    pub const CLASS_PORT_INFO: u16 = 0x0001;
    /// PortSamplesControl.
    pub const PORT_SAMPLES_CONTROL: u16 = 0x0010;
    /// PortSamplesResult.
    pub const PORT_SAMPLES_RESULT: u16 = 0x0011;
    /// PortCounters.
    pub const PORT_COUNTERS: u16 = 0x0012;
    /// PortCountersExtended.
    pub const PORT_COUNTERS_EXTENDED: u16 = 0x001d;
}

/// MAD status codes (the 15-bit status; for DR SMPs bit 15 is the D bit and not part of it).
pub mod status {
    /// Success.
    pub const OK: u16 = 0x0000;
    /// Busy, retry later.
    pub const BUSY: u16 = 0x0001;
    /// Redirect required.
    pub const REDIRECT: u16 = 0x0002;
    /// Class version not supported.
    pub const BAD_VERSION: u16 = 0x0004;
    /// Method not supported.
    pub const BAD_METHOD: u16 = 0x0008;
    /// Method/attribute combination not supported.
    pub const BAD_METHOD_ATTR: u16 = 0x000c;
    /// One or more fields in the attribute or modifier are invalid.
    pub const BAD_FIELD: u16 = 0x001c;
    /// SA: no records matched (class-specific status 1 in bits 8..15).
    pub const SA_NO_RECORDS: u16 = 0x0300;
    /// SA: insufficient resources.
    pub const SA_NO_RESOURCES: u16 = 0x0100;
    /// SA: request invalid.
    pub const SA_REQ_INVALID: u16 = 0x0200;
    /// SA: too many records for a Get.
    pub const SA_TOO_MANY_RECORDS: u16 = 0x0400;
    /// SA: invalid GID.
    pub const SA_INVALID_GID: u16 = 0x0500;
    /// SA: insufficient components.
    pub const SA_INSUFFICIENT_COMPONENTS: u16 = 0x0600;
    /// SA: request denied.
    pub const SA_REQ_DENIED: u16 = 0x0700;
}

/// NodeInfo.NodeType values.
pub mod node_type {
    /// Channel adapter.
    pub const CA: u8 = 1;
    /// Switch.
    pub const SWITCH: u8 = 2;
    /// Router.
    pub const ROUTER: u8 = 3;
}

//! Byte-fixture tests for SA records against captures of `saquery` talking to `OpenSM` under ibsim,
//! and against records encoded by libibmad (`capture/sa_set.c`).
//!
//! For each fixture: decode the SA MAD header and the first record of `OpenSM`'s response, check
//! the values against what `saquery` printed for that same packet, check that `OpenSM`'s
//! `AttributeOffset` matches our record length, then re-encode the header and the record and
//! compare with the captured bytes. `OpenSM`'s buffer holds stale bytes after the last record
//! (fixtures README), so only the header and the records are compared.

mod common;

use std::net::Ipv6Addr;

use common::Fixture;
use ibsm_mad::Attribute;
use ibsm_mad::attrs::{NodeType, PortState};
use ibsm_mad::header::MadHeader;
use ibsm_mad::records::{
    ClassPortInfo, LinkRecord, McMemberRecord, NodeRecord, PathRecord, PortInfoRecord, ServiceRecord, stride,
};
use ibsm_mad::sa::{SaHeader, SaMad};
use ibsm_mad::{Gid, Guid};

macro_rules! fixture {
    ($name:literal) => {
        Fixture::parse($name, include_str!(concat!("fixtures/", $name, ".fix")))
    };
}

// SA data area starts after the 56-byte SA header (IBTA 15.2.1.1).
const SA_DATA: usize = 56;

// Header checks shared by every SA fixture; returns the response header.
fn check_sa_headers(f: &Fixture, attr_id: u16) -> MadHeader {
    let mut hs = Vec::new();
    for sec in ["request", "response"] {
        let b = f.bytes(sec);
        let h = MadHeader::from_bytes(b).unwrap_or_else(|e| panic!("{}: {e}", f.name));
        h.validate().unwrap_or_else(|e| panic!("{}: {sec}: {e}", f.name));
        assert_eq!((h.mgmt_class.raw(), h.class_version, h.attr_id), (0x03, 2, attr_id), "{}", f.name);
        let mut out = [0u8; 24];
        h.emit(&mut out);
        f.assert_bytes_eq(sec, 0, &out, "MAD header re-emitted");
        // The whole 56-byte SA header (RMPP, SM_Key, AttributeOffset, ComponentMask) too.
        let sh = SaHeader::from_bytes(b).unwrap_or_else(|e| panic!("{}: {sec}: SaHeader: {e}", f.name));
        let mut out = [0u8; SA_DATA];
        sh.emit(&mut out);
        assert_eq!(f.assert_bytes_eq(sec, 0, &out, "SA header re-emitted"), SA_DATA);
        assert_eq!(usize::from(sh.attr_offset), attribute_offset(b));
        assert_eq!(sh.comp_mask, u64::from_be_bytes(b[48..56].try_into().unwrap()));
        let view = SaMad::new_checked(b).unwrap_or_else(|e| panic!("{}: SaMad: {e}", f.name));
        assert_eq!(view.data(), &b[SA_DATA..]);
        hs.push(h);
    }
    let (req, rsp) = (hs[0], hs[1]);
    // SubnAdmSet is answered with SubnAdmGetResp (IBTA 15.2.5); others set the R bit.
    let expected = if req.method.raw() == 0x02 { 0x81 } else { req.method.raw() | 0x80 };
    assert_eq!(rsp.method.raw(), expected, "{}: response method", f.name);
    assert_eq!(rsp.status, 0, "{}: status", f.name);
    assert_eq!(rsp.tid & 0xffff_ffff, req.tid & 0xffff_ffff, "{}: TID", f.name);
    rsp
}

// AttributeOffset of a MAD (SA header bytes 44..46), in 8-byte words.
fn attribute_offset(mad: &[u8]) -> usize {
    usize::from(u16::from_be_bytes([mad[44], mad[45]]))
}

// Decodes record `index` of `section`, re-emits it and compares the bytes.
fn record<A: Attribute + core::fmt::Debug>(f: &Fixture, section: &str, index: usize) -> A {
    let b = f.bytes(section);
    let off = SA_DATA + index * stride::<A>();
    let r = A::parse(&b[off..]).unwrap_or_else(|e| panic!("{}: parse: {e}", f.name));
    let out = r.to_vec();
    let n = f.assert_bytes_eq(section, off, &out, "record re-emitted");
    assert!(n > 0, "{}: nothing compared", f.name);
    r
}

// First record of a GetTable response, after checking OpenSM's AttributeOffset against `A::LEN`.
fn table_record<A: Attribute + core::fmt::Debug>(f: &Fixture) -> A {
    let rsp = f.bytes("response");
    assert_eq!(attribute_offset(rsp) * 8, stride::<A>(), "{}: AttributeOffset vs LEN", f.name);
    record(f, "response", 0)
}

fn gid_from_tool(s: &str) -> Gid {
    let a: Ipv6Addr = s.parse().unwrap_or_else(|_| panic!("not a GID: {s}"));
    Gid::from_bytes(&a.octets())
}

#[test]
fn classportinfo() {
    let f = fixture!("sa_classportinfo");
    let h = check_sa_headers(&f, 0x0001);
    assert_eq!(h.method.raw(), 0x81);
    let c: ClassPortInfo = record(&f, "response", 0);
    assert_eq!(u64::from(c.base_version), f.tool_num("Base version"));
    assert_eq!(u64::from(c.class_version), f.tool_num("Class version"));
    assert_eq!(u64::from(c.capability_mask), f.tool_num("Capability mask"));
    assert_eq!(u64::from(c.capability_mask2), f.tool_num("Capability mask 2"));
    assert_eq!(u64::from(c.resp_time_value), f.tool_num("Response time value"));
    assert_eq!(c.redirect_gid, gid_from_tool(f.tool_value("Redirect GID")));
    assert_eq!(u64::from(c.redirect_lid.get()), f.tool_num("Redirect LID"));
    assert_eq!(u64::from(c.redirect_pkey.get()), f.tool_num("Redirect PKey"));
    assert_eq!(u64::from(c.redirect_qp), f.tool_num("Redirect QP"));
    assert_eq!(u64::from(c.redirect_qkey), f.tool_num("Redirect QKey"));
    let tc_sl_fl = f.tool_num("Redirect TC/SL/FL");
    assert_eq!(tc_sl_fl, u64::from(c.redirect_tc) << 24 | u64::from(c.redirect_sl) << 20 | u64::from(c.redirect_fl));
    assert_eq!(c.trap_gid, gid_from_tool(f.tool_value("Trap GID")));
    assert_eq!(u64::from(c.trap_lid.get()), f.tool_num("Trap LID"));
    assert_eq!(u64::from(c.trap_pkey.get()), f.tool_num("Trap PKey"));
    assert_eq!(f.tool_num("Trap HL/QP"), u64::from(c.trap_hl) << 24 | u64::from(c.trap_qp));
    assert_eq!(u64::from(c.trap_qkey), f.tool_num("Trap QKey"));
}

#[test]
fn noderecord() {
    let f = fixture!("sa_noderecord");
    check_sa_headers(&f, 0x0011);
    let r: NodeRecord = table_record(&f);
    let ni = &r.node_info;
    assert_eq!(u64::from(r.lid.get()), f.tool_num("lid"));
    assert_eq!(u64::from(ni.base_version), f.tool_num("base_version"));
    assert_eq!(u64::from(ni.class_version), f.tool_num("class_version"));
    assert_eq!(f.tool_value("node_type"), "Channel Adapter");
    assert_eq!(ni.node_type, NodeType::Ca);
    assert_eq!(u64::from(ni.num_ports), f.tool_num("num_ports"));
    assert_eq!(ni.system_image_guid, Guid(f.tool_num("sys_guid")));
    assert_eq!(ni.node_guid, Guid(f.tool_num("node_guid")));
    assert_eq!(ni.port_guid, Guid(f.tool_num("port_guid")));
    assert_eq!(u64::from(ni.partition_cap), f.tool_num("partition_cap"));
    assert_eq!(u64::from(ni.device_id), f.tool_num("device_id"));
    assert_eq!(u64::from(ni.revision), f.tool_num("revision"));
    assert_eq!(u64::from(ni.local_port_num.get()), f.tool_num("port_num"));
    assert_eq!(u64::from(ni.vendor_id), f.tool_num("vendor_id"));
    assert_eq!(r.node_description.text(), f.tool_value("NodeDescription"));
}

#[test]
fn portinforecord() {
    let f = fixture!("sa_portinforecord");
    check_sa_headers(&f, 0x0012);
    let r: PortInfoRecord = table_record(&f);
    assert_eq!(u64::from(r.endport_lid.get()), f.tool_num("EndPortLid"));
    assert_eq!(u64::from(r.port_num.get()), f.tool_num("PortNum"));
    assert_eq!(u64::from(r.options), f.tool_num("Options"));
    let pi = &r.port_info;
    assert_eq!(pi.gid_prefix, f.tool_num("GidPrefix"));
    assert_eq!(u64::from(pi.lid.get()), f.tool_num("Lid"));
    assert_eq!(u64::from(pi.master_sm_lid.get()), f.tool_num("SMLid"));
    assert_eq!(u64::from(pi.capability_mask.bits()), f.tool_num("CapMask"));
    assert_eq!(u64::from(pi.m_key_lease_period), f.tool_num("MkeyLeasePeriod"));
    assert_eq!(u64::from(pi.local_port_num.get()), f.tool_num("LocalPort"));
    assert_eq!(f.tool_value("LinkState"), "Active");
    assert_eq!(pi.port_state, PortState::Active);
    assert_eq!(u64::from(pi.vl_stall_count), f.tool_num("VLStallCount"));
    assert_eq!(u64::from(pi.subnet_timeout), f.tool_num("SubnetTimeout"));
}

#[test]
fn linkrecord() {
    let f = fixture!("sa_linkrecord");
    check_sa_headers(&f, 0x0020);
    let r: LinkRecord = table_record(&f);
    assert_eq!(u64::from(r.from_lid.get()), f.tool_num("FromLID"));
    assert_eq!(u64::from(r.from_port.get()), f.tool_num("FromPort"));
    assert_eq!(u64::from(r.to_port.get()), f.tool_num("ToPort"));
    assert_eq!(u64::from(r.to_lid.get()), f.tool_num("ToLID"));
}

fn check_path_record(f: &Fixture, r: &PathRecord) {
    assert_eq!(r.service_id, f.tool_num("service_id"));
    assert_eq!(r.dgid, gid_from_tool(f.tool_value("dgid")));
    assert_eq!(r.sgid, gid_from_tool(f.tool_value("sgid")));
    assert_eq!(u64::from(r.dlid.get()), f.tool_num("dlid"));
    assert_eq!(u64::from(r.slid.get()), f.tool_num("slid"));
    let hfr = u64::from(r.raw_traffic) << 31 | u64::from(r.flow_label) << 8 | u64::from(r.hop_limit);
    assert_eq!(hfr, f.tool_num("hop_flow_raw"));
    assert_eq!(u64::from(r.tclass), f.tool_num("tclass"));
    assert_eq!(u64::from(r.reversible) << 7 | u64::from(r.numb_path), f.tool_num("num_path_revers"));
    assert_eq!(u64::from(r.pkey.get()), f.tool_num("pkey"));
    assert_eq!(u64::from(r.qos_class), f.tool_num("qos_class"));
    assert_eq!(u64::from(r.sl), f.tool_num("sl"));
    assert_eq!(u64::from(r.mtu_selector.raw() << 6 | r.mtu.raw()), f.tool_num("mtu"));
    assert_eq!(u64::from(r.rate_selector.raw() << 6 | r.rate.raw()), f.tool_num("rate"));
    assert_eq!(u64::from(r.packet_life_time_selector.raw() << 6 | r.packet_life_time), f.tool_num("pkt_life"));
    assert_eq!(u64::from(r.preference), f.tool_num("preference"));
}

#[test]
fn pathrecord() {
    let f = fixture!("sa_pathrecord");
    check_sa_headers(&f, 0x0035);
    let r: PathRecord = table_record(&f);
    check_path_record(&f, &r);
    // The request carried only SLID/DLID (saquery --src-to-dst 5:6): decode it as well.
    let q: PathRecord = record(&f, "request", 0);
    assert_eq!((q.slid.get(), q.dlid.get()), (r.slid.get(), r.dlid.get()));
}

// A PathRecord encoded by libibmad's own field table (sa_set.c `pr`); the values are the ones
// the C program set, listed in the fixture's comment.
#[test]
fn pathrecord_libibmad_encoded() {
    let f = fixture!("lib_pathrecord");
    let b = f.bytes("record");
    let r = PathRecord::parse(b).unwrap();
    assert_eq!(r.dgid, Gid { prefix: 0xfe80_0000_0000_0000, guid: Guid(0x10_000a) });
    assert_eq!(r.sgid, Gid { prefix: 0xfe80_0000_0000_0000, guid: Guid(0x10_0007) });
    assert_eq!((r.dlid.get(), r.slid.get(), r.numb_path, r.sl), (6, 5, 1, 3));
    assert_eq!(r.to_vec(), b, "re-emitted PathRecord differs from libibmad's encoding");
}

#[test]
fn servicerecord() {
    let f = fixture!("sa_servicerecord");
    check_sa_headers(&f, 0x0031);
    let r: ServiceRecord = table_record(&f);
    assert_eq!(r.service_id, f.tool_num("ServiceID"));
    assert_eq!(r.service_gid, gid_from_tool(f.tool_value("ServiceGID")));
    assert_eq!(u64::from(r.service_pkey.get()), f.tool_num("ServiceP_Key"));
    assert_eq!(u64::from(r.service_lease), f.tool_num("ServiceLease"));
    let name_len = r.service_name.iter().position(|&c| c == 0).unwrap_or(64);
    assert_eq!(std::str::from_utf8(&r.service_name[..name_len]).unwrap(), f.tool_value("ServiceName"));
    for (i, v) in r.data8.iter().enumerate() {
        assert_eq!(u64::from(*v), f.tool_num(&format!("ServiceData8.{}", i + 1)));
    }
    for (i, v) in r.data16.iter().enumerate() {
        assert_eq!(u64::from(*v), f.tool_num(&format!("ServiceData16.{}", i + 1)));
    }
    for (i, v) in r.data32.iter().enumerate() {
        assert_eq!(u64::from(*v), f.tool_num(&format!("ServiceData32.{}", i + 1)));
    }
    // ServiceData64.2 sits at MAD bytes 224..232: umad2sim garbage when OpenSM received the Set
    // and again when saquery received this response (README), so only .1 is comparable.
    assert_eq!(r.data64[0], f.tool_num("ServiceData64.1"));
}

// The SubnAdmSet that registered the service, encoded by libibmad: it decodes to what saquery
// later printed for the stored record (bytes 224.. of the Set are umad2sim garbage, README).
#[test]
fn servicerecord_set_libibmad_encoded() {
    let f = fixture!("sa_servicerecord_set");
    let h = check_sa_headers(&f, 0x0031);
    assert_eq!(h.method.raw(), 0x81, "SubnAdmSet is answered with GetResp");
    let listed = fixture!("sa_servicerecord");
    let q = ServiceRecord::parse(&f.bytes("request")[SA_DATA..]).unwrap();
    assert_eq!(q.service_id, listed.tool_num("ServiceID"));
    assert_eq!(q.service_gid, gid_from_tool(listed.tool_value("ServiceGID")));
    assert_eq!(u64::from(q.service_lease), listed.tool_num("ServiceLease"));
    assert_eq!(q.service_key[0], 0x11, "sa_set.c sets key byte 0 to 0x11");
    assert_eq!(q.service_key[15], 0x22, "sa_set.c sets key byte 15 to 0x22");
    for (i, v) in q.data32.iter().enumerate() {
        assert_eq!(u64::from(*v), listed.tool_num(&format!("ServiceData32.{}", i + 1)));
    }
    // Re-emit and compare the whole 176-byte record as libibmad wrote it.
    let out = q.to_vec();
    assert_eq!(out.len(), 176);
    assert_eq!(&out[..], &f.bytes("request")[SA_DATA..SA_DATA + 176]);
}

fn check_mcmember(f: &Fixture, r: &McMemberRecord) {
    assert_eq!(r.mgid, gid_from_tool(f.tool_value("MGID")));
    assert_eq!(r.port_gid, gid_from_tool(f.tool_value("PortGid")));
    assert_eq!(u64::from(r.qkey), f.tool_num("qkey"));
    assert_eq!(u64::from(r.mlid.get()), f.tool_num("mlid"));
    assert_eq!(u64::from(r.mtu_selector.raw() << 6 | r.mtu.raw()), f.tool_num("mtu"));
    assert_eq!(u64::from(r.tclass), f.tool_num("TClass"));
    assert_eq!(u64::from(r.pkey.get()), f.tool_num("pkey"));
    assert_eq!(u64::from(r.rate_selector.raw() << 6 | r.rate.raw()), f.tool_num("rate"));
    assert_eq!(u64::from(r.packet_life_time_selector.raw() << 6 | r.packet_life_time), f.tool_num("pkt_life"));
    assert_eq!(u64::from(r.sl), f.tool_num("SL"));
    assert_eq!(u64::from(r.flow_label), f.tool_num("FlowLabel"));
    assert_eq!(u64::from(r.hop_limit), f.tool_num("HopLimit"));
    assert_eq!(u64::from(r.scope), f.tool_num("Scope"));
    assert_eq!(u64::from(r.join_state.0), f.tool_num("JoinState"));
    assert_eq!(u64::from(r.proxy_join), f.tool_num("ProxyJoin"));
}

#[test]
fn mcmemberrecord() {
    let f = fixture!("sa_mcmemberrecord");
    check_sa_headers(&f, 0x0038);
    let r: McMemberRecord = table_record(&f);
    check_mcmember(&f, &r);
}

// The join sent by sa_set.c (libibmad-encoded) and OpenSM's answer to it.
#[test]
fn mcmemberrecord_join_libibmad_encoded() {
    let f = fixture!("sa_mcmemberrecord_join");
    check_sa_headers(&f, 0x0038);
    let q: McMemberRecord = record(&f, "request", 0);
    assert_eq!(q.port_gid, Gid { prefix: 0xfe80_0000_0000_0000, guid: Guid(0x10_0007) });
    assert_eq!((q.qkey, q.pkey.get(), q.join_state.0), (0x0b1b, 0xffff, 1));
    // The component mask sa_set.c sent: MGID, PortGID, Q_Key, P_Key, JoinState.
    let mask = u64::from_be_bytes(f.bytes("request")[48..56].try_into().unwrap());
    assert_eq!(mask, McMemberRecord::COMP_MGID | McMemberRecord::COMP_PORT_GID | 1 << 2 | 1 << 7 | 1 << 16);
    // OpenSM's answer: the group's MLID, as listed by saquery MCMR.
    let a: McMemberRecord = record(&f, "response", 0);
    let listed = fixture!("sa_mcmemberrecord");
    assert_eq!(u64::from(a.mlid.get()), listed.tool_num("mlid"));
    assert_eq!(a.mgid, gid_from_tool(listed.tool_value("MGID")));
    assert_eq!(a.port_gid, q.port_gid);
}

#[test]
fn informinforecord_empty_table() {
    let f = fixture!("sa_informinforecord_empty");
    let h = check_sa_headers(&f, 0x00f3);
    assert_eq!(h.method.raw(), 0x92);
    // No subscriptions: OpenSM answers with AttributeOffset 0 and saquery prints no record.
    assert_eq!(attribute_offset(f.bytes("response")), 0);
    assert!(f.tool.iter().all(|l| !l.contains("InformInfoRecord dump")));
}

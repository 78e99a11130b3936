//! Byte-fixture tests for traps (Notice) and `OpenSM`'s own directed-route SMPs, captured from
//! ibsim's Verbose 3 dump (see `fixtures/README.md`).
//!
//! Expected values come from the capture's context: the LIDs that `ibnetdiscover`/`smpquery`
//! reported for the fabric, the `CapabilityMask` `smpquery` printed for the same kind of port, and
//! the DR path in the SMP itself; never from ibsm's encoder.

mod common;

use common::{Fixture, smp_round_trip};
use ibsm_mad::Attribute;
use ibsm_mad::attrs::{Notice, NoticeDetails, NoticeSource, NoticeType, ProducerType};
use ibsm_mad::smp::SmpRoute;

macro_rules! fixture {
    ($name:literal) => {
        Fixture::parse($name, include_str!(concat!("fixtures/", $name, ".fix")))
    };
}

// A Notice sits at MAD byte 64 and is 80 bytes long (it runs past the 64-byte SMP data area).
const NOTICE: core::ops::Range<usize> = 64..144;

// Decodes the trap and OpenSM's TrapRepress, checks both carry the same Notice, and re-emits it.
fn check_trap(f: &Fixture) -> Notice {
    let trap = smp_round_trip(f, "trap");
    assert_eq!((trap.method.raw(), trap.attr_id, trap.route), (0x05, 0x0002, SmpRoute::Lid), "{}", f.name);
    let repress = smp_round_trip(f, "repress");
    assert_eq!((repress.method.raw(), repress.attr_id), (0x07, 0x0002), "{}", f.name);
    assert_eq!(repress.tid, trap.tid, "{}: TrapRepress echoes the TID", f.name);
    let n = Notice::parse(&f.bytes("trap")[NOTICE]).unwrap_or_else(|e| panic!("{}: {e}", f.name));
    let n2 = Notice::parse(&f.bytes("repress")[NOTICE]).unwrap();
    assert_eq!(n, n2, "{}: trap and repress carry the same Notice", f.name);
    let compared = f.assert_bytes_eq("trap", NOTICE.start, &n.to_vec(), "Notice re-emitted");
    assert_eq!(compared, Notice::LEN);
    n
}

// Console `Unlink "Hca4"`: Switch2 (LID 3, the switch Hca4 is cabled to in net.2sw2path4hca)
// reports a link state change.
#[test]
fn trap128_link_state_change() {
    let f = fixture!("trap128_unlink");
    let switch2 = fixture!("smp_switchinfo_lid"); // smpquery switchinfo 3: "# Switch info: Lid 3"
    assert_eq!(switch2.tool[0], "# Switch info: Lid 3");
    let n = check_trap(&f);
    assert!(n.is_generic());
    assert_eq!(n.source, NoticeSource::Generic { producer: ProducerType::Switch, trap_number: 128 });
    assert_eq!(n.notice_type, NoticeType::Urgent);
    assert_eq!(n.issuer_lid.get(), 3);
    assert_eq!(n.details, NoticeDetails::Trap128 { lid: n.issuer_lid });
}

// issm opened on Hca2 (LID 4): its CapabilityMask gains IsSM (bit 1) on top of the mask that
// `smpquery portinfo` printed for every CA port of this fabric (0x50c048).
#[test]
fn trap144_capability_mask_change() {
    let f = fixture!("trap144_issm");
    let ca = fixture!("smp_portinfo_ca_lid");
    let ca_mask = ca.tool_num("CapMask") as u32;
    let n = check_trap(&f);
    assert_eq!(n.source, NoticeSource::Generic { producer: ProducerType::Ca, trap_number: 144 });
    assert_eq!(n.notice_type, NoticeType::Info);
    assert_eq!(n.issuer_lid.get(), 4);
    let NoticeDetails::Trap144 { lid, capability_mask, .. } = n.details else {
        panic!("expected Trap144 details, got {:?}", n.details);
    };
    assert_eq!(lid.get(), 4);
    assert_eq!(capability_mask.bits(), ca_mask | 0x2, "CapabilityMask with IsSM");
}

// OpenSM's discovery: a DR Get(NodeInfo) two or more hops out, with its initial path.
#[test]
fn opensm_directed_route_discovery() {
    let f = fixture!("smp_opensm_dr_nodeinfo_hops");
    let smp = smp_round_trip(&f, "request");
    assert_eq!((smp.method.raw(), smp.attr_id), (0x01, 0x0011));
    let SmpRoute::Directed { d_bit, hop_pointer, hop_count, initial_path, .. } = smp.route else {
        panic!("not directed route");
    };
    let raw = f.bytes("request");
    assert!(hop_count >= 2);
    assert!(!d_bit, "outbound");
    assert_eq!(hop_pointer, 0, "ibsim requires hop pointer 0 (ibsim.md §7)");
    assert_eq!(initial_path.hop_count(), hop_count);
    assert_eq!(initial_path.ports(), &raw[129..=128 + usize::from(hop_count)]);
    // OpenSM runs on Hca1, cabled to Switch1 port 1: every discovery path leaves through port 1.
    assert_eq!(initial_path.ports()[0], 1);
}

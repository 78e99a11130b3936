//! Tests of [`super::Notice`] and its typed details.

use super::*;
use crate::attrs::notice_details::KeyViolation;
use crate::attrs::port_types::{CapabilityMask, CapabilityMask2};
use crate::attrs::test_util::{emit_parse_roundtrip, rejects_short};
use crate::{Guid, MKey, PKey, PortNum};
use proptest::prelude::*;

/// Trap 128 as ibsim 0.10 builds it (`encode_trap128` in `sim_mad.c` sets IsGeneric 1, Type 1,
/// ProducerType 2, TrapNumber 128, IssuerLID, Toggle 0, Count 0 and NoticeDataLID with
/// libibmad's `mad_set_field`), reproduced here by the same libibmad 44.0 calls for LID 3.
const IBSIM_TRAP128_LID3: [u8; 16] =
    [0x81, 0x00, 0x00, 0x02, 0x00, 0x80, 0x00, 0x03, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00];

/// Trap 144 encoded by libibmad 44.0 `mad_set_field`: IsGeneric 1, Type 4, Producer 1 (CA),
/// TrapNumber 144, IssuerLID 7, Toggle 1, Count 0x1234, NoticeDataTrap144LID 7,
/// NoticeDataTrap144CapMask 0x0250084a (ibsim sets these same fields when IsSM toggles).
const LIBIBMAD_TRAP144: [u8; 20] = [
    0x84, 0x00, 0x00, 0x01, 0x00, 0x90, 0x00, 0x07, 0x92, 0x34, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x02, 0x50, 0x08,
    0x4a,
];

fn pad(head: &[u8]) -> [u8; 80] {
    let mut b = [0u8; 80];
    b[..head.len()].copy_from_slice(head);
    b
}

#[test]
fn deconstruct_trap128() {
    let n = Notice::parse(&pad(&IBSIM_TRAP128_LID3)).unwrap();
    assert!(n.is_generic());
    assert_eq!(n.source, NoticeSource::Generic { producer: ProducerType::Switch, trap_number: 128 });
    assert_eq!(n.notice_type, NoticeType::Urgent);
    assert_eq!(n.issuer_lid, Lid(3));
    assert!(!n.toggle);
    assert_eq!(n.count, 0);
    assert_eq!(n.details, NoticeDetails::Trap128 { lid: Lid(3) });
    assert_eq!(n.issuer_gid, Gid::default());
}

#[test]
fn construct_trap128() {
    let n = Notice::generic(NoticeType::Urgent, ProducerType::Switch, Lid(3), NoticeDetails::Trap128 { lid: Lid(3) })
        .unwrap();
    assert_eq!(n.to_vec(), pad(&IBSIM_TRAP128_LID3));
}

fn trap144() -> Notice {
    Notice {
        source: NoticeSource::Generic { producer: ProducerType::Ca, trap_number: 144 },
        notice_type: NoticeType::Info,
        issuer_lid: Lid(7),
        toggle: true,
        count: 0x1234,
        details: NoticeDetails::Trap144 {
            lid: Lid(7),
            other_local_changes: false,
            capability_mask: CapabilityMask(0x0250_084a),
            capability_mask2_change: false,
            hierarchy_info_change: false,
            sm_priority_change: false,
            link_speed_enabled_change: false,
            link_width_enabled_change: false,
            node_description_change: false,
            capability_mask2: CapabilityMask2(0),
        },
        issuer_gid: Gid::default(),
    }
}

#[test]
fn trap144_matches_libibmad() {
    let n = Notice::parse(&pad(&LIBIBMAD_TRAP144)).unwrap();
    assert_eq!(n, trap144());
    assert_eq!(n.trap_number(), Some(144));
    assert_eq!(trap144().to_vec(), pad(&LIBIBMAD_TRAP144));
}

#[test]
fn trap144_change_flags() {
    // Per OpenSM's TRAP_144_MASK_* (DataDetails bytes 10..12) and local_changes (byte 5 bit 0).
    let mut b = pad(&LIBIBMAD_TRAP144);
    b[15] = 0x01;
    b[20] = 0x00;
    b[21] = 0x25; // CapabilityMask2Change | LinkSpeedEnabledChange | NodeDescriptionChange
    b[22] = 0x00;
    b[23] = 0x30;
    let n = Notice::parse(&b).unwrap();
    let NoticeDetails::Trap144 {
        other_local_changes,
        capability_mask2_change,
        hierarchy_info_change,
        sm_priority_change,
        link_speed_enabled_change,
        link_width_enabled_change,
        node_description_change,
        capability_mask2,
        ..
    } = n.details
    else {
        panic!("not trap 144: {n:?}");
    };
    assert!(other_local_changes && capability_mask2_change && link_speed_enabled_change);
    assert!(node_description_change);
    assert!(!hierarchy_info_change && !sm_priority_change && !link_width_enabled_change);
    assert_eq!(capability_mask2, CapabilityMask2(0x30));
    assert_eq!(n.to_vec(), b);
}

/// Trap 256 laid out per OpenSM `ntc_256` (and Wireshark's dissector): LIDADDR at details
/// byte 2, DRSLID 4, Method 6, AttributeID 8, AttributeModifier 10, M_Key 14, the
/// DRNotice/DRPathTruncated/DRHopCount byte at 23, the return path from 24. Details start at
/// Notice byte 10.
#[test]
fn trap256_offsets() {
    let mut b = [0u8; 80];
    b[..8].copy_from_slice(&[0x82, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x09]);
    let d = 10;
    b[d + 2..d + 4].copy_from_slice(&[0x00, 0x09]);
    b[d + 4..d + 6].copy_from_slice(&[0xff, 0xff]);
    b[d + 6] = 0x02;
    b[d + 8..d + 10].copy_from_slice(&[0x00, 0x15]);
    b[d + 10..d + 14].copy_from_slice(&[0x00, 0x00, 0x00, 0x03]);
    b[d + 14..d + 22].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    b[d + 23] = 0x80 | 0x02;
    b[d + 24..d + 27].copy_from_slice(&[0, 1, 3]);
    let n = Notice::parse(&b).unwrap();
    assert_eq!(n.notice_type, NoticeType::Security);
    let mut path = [0u8; 30];
    path[1] = 1;
    path[2] = 3;
    assert_eq!(
        n.details,
        NoticeDetails::Trap256 {
            lid: Lid(9),
            dr_slid: Lid(0xffff),
            method: 2,
            attribute_id: 0x15,
            attribute_modifier: 3,
            m_key: MKey(0x0102_0304_0506_0708),
            dr_notice: true,
            dr_path_truncated: false,
            dr_hop_count: 2,
            dr_notice_return_path: path,
        }
    );
    assert_eq!(n.to_vec(), b);
}

/// Traps 257 and 259 laid out per OpenSM `ntc_257_258` / `ntc_259`.
#[test]
fn trap257_and_259_offsets() {
    let mut b = [0u8; 80];
    b[..8].copy_from_slice(&[0x82, 0x00, 0x00, 0x01, 0x01, 0x01, 0x00, 0x05]);
    let d = 10;
    b[d + 2..d + 4].copy_from_slice(&[0x00, 0x05]);
    b[d + 4..d + 6].copy_from_slice(&[0x00, 0x06]);
    b[d + 6..d + 10].copy_from_slice(&[0x00, 0x00, 0x80, 0x01]);
    b[d + 10..d + 14].copy_from_slice(&[0x30, 0x00, 0x00, 0x01]);
    b[d + 14..d + 18].copy_from_slice(&[0x00, 0x12, 0x34, 0x56]);
    b[d + 18] = 0xfe;
    b[d + 19] = 0x80;
    b[d + 33] = 0x11;
    b[d + 49] = 0x22;
    let n = Notice::parse(&b).unwrap();
    let mut gid1 = Gid { prefix: 0xfe80_0000_0000_0000, guid: Guid(0x11) };
    assert_eq!(
        n.details,
        NoticeDetails::Trap257(KeyViolation {
            lid1: Lid(5),
            lid2: Lid(6),
            key: 0x8001,
            sl: 3,
            qp1: 1,
            qp2: 0x12_3456,
            gid1,
            gid2: Gid { prefix: 0, guid: Guid(0x22) },
        })
    );
    assert_eq!(n.to_vec(), b);

    let mut c = [0u8; 80];
    c[..8].copy_from_slice(&[0x82, 0x00, 0x00, 0x02, 0x01, 0x03, 0x00, 0x02]);
    c[d..d + 2].copy_from_slice(&[0xff, 0x80]);
    c[d + 2..d + 4].copy_from_slice(&[0x00, 0x05]);
    c[d + 4..d + 6].copy_from_slice(&[0x00, 0x06]);
    c[d + 6..d + 8].copy_from_slice(&[0x80, 0x01]);
    c[d + 8..d + 12].copy_from_slice(&[0x70, 0x00, 0x00, 0x01]);
    c[d + 12..d + 16].copy_from_slice(&[0x00, 0x00, 0x00, 0x01]);
    c[d + 31] = 0x11;
    c[d + 48..d + 50].copy_from_slice(&[0x00, 0x02]);
    c[d + 50] = 7;
    gid1.prefix = 0;
    let n = Notice::parse(&c).unwrap();
    assert_eq!(
        n.details,
        NoticeDetails::Trap259 {
            data_valid: 0xff80,
            lid1: Lid(5),
            lid2: Lid(6),
            pkey: PKey(0x8001),
            sl: 7,
            qp1: 1,
            qp2: 1,
            gid1,
            gid2: Gid::default(),
            switch_lid: Lid(2),
            port_no: PortNum(7),
        }
    );
    assert_eq!(n.to_vec(), c);
}

#[test]
fn traps_129_to_131_name_a_port() {
    // Trap 130 from a switch at LID 4 about its port 9: DataDetails reserved(2), LID(2), port(1).
    let mut b = [0u8; 80];
    b[..8].copy_from_slice(&[0x81, 0x00, 0x00, 0x02, 0x00, 0x82, 0x00, 0x04]);
    b[12..15].copy_from_slice(&[0x00, 0x04, 0x09]);
    let n = Notice::parse(&b).unwrap();
    assert_eq!(n.details, NoticeDetails::PortHealth { trap: 130, lid: Lid(4), port: PortNum(9) });
    assert_eq!(n.to_vec(), b);
}

#[test]
fn untyped_and_vendor_notices_are_raw() {
    // Trap 145 (system image GUID changed) has no typed variant: bytes survive as they are.
    let mut b = [0u8; 80];
    b[..8].copy_from_slice(&[0x81, 0x00, 0x00, 0x02, 0x00, 0x91, 0x00, 0x04]);
    for (i, x) in b[10..64].iter_mut().enumerate() {
        *x = i as u8;
    }
    b[64..80].copy_from_slice(&[0xab; 16]);
    let n = Notice::parse(&b).unwrap();
    assert!(matches!(n.details, NoticeDetails::Raw(_)));
    assert_eq!(n.issuer_gid, Gid { prefix: 0xabab_abab_abab_abab, guid: Guid(0xabab_abab_abab_abab) });
    assert_eq!(n.to_vec(), b);

    // IsGeneric = 0: VendorID 0x0002c9, DeviceID 0x1003.
    b[..6].copy_from_slice(&[0x04, 0x00, 0x02, 0xc9, 0x10, 0x03]);
    let v = Notice::parse(&b).unwrap();
    assert_eq!(v.source, NoticeSource::Vendor { vendor_id: 0x0000_02c9, device_id: 0x1003 });
    assert_eq!(v.trap_number(), None);
    assert_eq!(v.to_vec(), b);
    rejects_short::<Notice>();
}

fn gid() -> impl Strategy<Value = Gid> {
    any::<(u64, u64)>().prop_map(|(p, g)| Gid { prefix: p, guid: Guid(g) })
}

fn key_violation() -> impl Strategy<Value = KeyViolation> {
    (any::<(u16, u16, u32, u8, u32, u32)>(), gid(), gid()).prop_map(|(v, gid1, gid2)| KeyViolation {
        lid1: Lid(v.0),
        lid2: Lid(v.1),
        key: v.2,
        sl: v.3 & 0xf,
        qp1: v.4 & 0xff_ffff,
        qp2: v.5 & 0xff_ffff,
        gid1,
        gid2,
    })
}

fn typed_details() -> impl Strategy<Value = NoticeDetails> {
    prop_oneof![
        gid().prop_map(|gid| NoticeDetails::Trap64 { gid }),
        gid().prop_map(|gid| NoticeDetails::Trap65 { gid }),
        gid().prop_map(|mgid| NoticeDetails::Trap66 { mgid }),
        gid().prop_map(|mgid| NoticeDetails::Trap67 { mgid }),
        any::<u16>().prop_map(|l| NoticeDetails::Trap128 { lid: Lid(l) }),
        (129u16..=131, any::<u16>(), any::<u8>()).prop_map(|(trap, l, p)| NoticeDetails::PortHealth {
            trap,
            lid: Lid(l),
            port: PortNum(p)
        }),
        any::<(u16, u32, u16, u8)>().prop_map(|(l, m, m2, f)| NoticeDetails::Trap144 {
            lid: Lid(l),
            other_local_changes: f & 0x40 != 0,
            capability_mask: CapabilityMask(m),
            capability_mask2_change: f & 0x20 != 0,
            hierarchy_info_change: f & 0x10 != 0,
            sm_priority_change: f & 0x08 != 0,
            link_speed_enabled_change: f & 0x04 != 0,
            link_width_enabled_change: f & 0x02 != 0,
            node_description_change: f & 0x01 != 0,
            capability_mask2: CapabilityMask2(m2),
        }),
        (any::<(u16, u16, u8, u16, u32, u64, u8)>(), any::<[u8; 30]>()).prop_map(|(v, p)| {
            NoticeDetails::Trap256 {
                lid: Lid(v.0),
                dr_slid: Lid(v.1),
                method: v.2,
                attribute_id: v.3,
                attribute_modifier: v.4,
                m_key: MKey(v.5),
                dr_notice: v.6 & 0x80 != 0,
                dr_path_truncated: v.6 & 0x40 != 0,
                dr_hop_count: v.6 & 0x3f,
                dr_notice_return_path: p,
            }
        }),
        key_violation().prop_map(NoticeDetails::Trap257),
        key_violation().prop_map(NoticeDetails::Trap258),
        (any::<(u16, u16, u16, u16, u8, u32, u32)>(), gid(), gid(), any::<(u16, u8)>()).prop_map(
            |(v, gid1, gid2, s)| NoticeDetails::Trap259 {
                data_valid: v.0,
                lid1: Lid(v.1),
                lid2: Lid(v.2),
                pkey: PKey(v.3),
                sl: v.4 & 0xf,
                qp1: v.5 & 0xff_ffff,
                qp2: v.6 & 0xff_ffff,
                gid1,
                gid2,
                switch_lid: Lid(s.0),
                port_no: PortNum(s.1),
            }
        ),
    ]
}

prop_compose! {
    fn arb_notice()(
        typed in typed_details(),
        raw_a in any::<[u8; 27]>(),
        raw_b in any::<[u8; 27]>(),
        kind in 0u8..3,
        head in any::<(u8, u32, u16, u16, bool, u16)>(),
        issuer_gid in gid(),
    ) -> Notice {
        let mut raw = [0u8; 54];
        raw[..27].copy_from_slice(&raw_a);
        raw[27..].copy_from_slice(&raw_b);
        // Trap numbers without a typed variant keep their details raw.
        let untyped = if matches!(head.2, 64..=67 | 128..=131 | 144 | 256..=259) { 145 } else { head.2 };
        let (source, details) = match kind {
            0 => (
                NoticeSource::Generic {
                    producer: ProducerType::from_raw(head.1),
                    trap_number: typed.trap_number().unwrap_or_default(),
                },
                typed,
            ),
            1 => (
                NoticeSource::Generic { producer: ProducerType::from_raw(head.1), trap_number: untyped },
                NoticeDetails::Raw(raw),
            ),
            _ => (
                NoticeSource::Vendor { vendor_id: head.1 & 0xff_ffff, device_id: head.2 },
                NoticeDetails::Raw(raw),
            ),
        };
        Notice {
            source,
            notice_type: NoticeType::from_raw(head.0),
            issuer_lid: Lid(head.3),
            toggle: head.4,
            count: head.5 & 0x7fff,
            details,
            issuer_gid,
        }
    }
}

proptest! {
    #[test]
    fn roundtrip(n in arb_notice()) {
        emit_parse_roundtrip(&n);
    }

    #[test]
    fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..100)) {
        if let Ok(n) = Notice::parse(&b) {
            prop_assert_eq!(Notice::parse(&n.to_vec()).unwrap(), n);
        }
    }
}

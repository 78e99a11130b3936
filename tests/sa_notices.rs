//! SA event subscriptions on the simulated fabric: InformInfo subscribe and InformInfoRecord, and
//! the Reports subscribers get (forwarded traps, ports in and out of service, multicast groups
//! created and deleted), retried until acknowledged.

use std::collections::HashSet;

use ibsm::transport::sim::SimDriver;
use ibsm_mad::header::Method;
use ibsm_mad::ids::status;
use ibsm_mad::sa::{SA_HEADER_LEN, SaHeader, request};
use ibsm_mad::{Attribute, Gid, Guid, MAD_LEN, PKey};
use ibsm_sim::fabric::Dest;
use ibsm_topology::NodeKind;

mod support;

use support::sa::*;

#[test]
fn subscribers_get_reports_of_traps_and_of_ports_leaving_until_they_acknowledge() {
    use ibsm_mad::attrs::{Notice, NoticeDetails};
    use ibsm_mad::records::{InformInfo, InformInfoRecord};
    let topo = example("fat-tree-2l-k4.net");
    let (mut drv, probe, probe_guid, sm) = subscribed_probe(&topo);
    let victim = (0..topo.nodes.len()).rev().find(|&i| topo.nodes[i].kind == NodeKind::Ca).expect("a host");
    let send = |drv: &mut SimDriver, bytes: &[u8; MAD_LEN]| drv.fabric.send(probe, bytes, Dest { dlid: sm, qpn: 1 });
    let all = inform_all();
    // An untrusted subscription to a security trap (256 to 259) by number is refused; the
    // trap next to them is not.
    for trap in 255..=260u16 {
        let one = InformInfo { trap_number_or_device_id: trap, ..all };
        send(&mut drv, &request(Method::Set, 0, 0x6200 + u64::from(trap), &one).unwrap());
        let r = listen(&mut drv, probe).expect("answer");
        let want = if (256..=259).contains(&trap) { status::SA_REQ_DENIED } else { status::OK };
        assert_eq!(SaHeader::from_bytes(&r.mad[..]).unwrap().status, want, "trap {trap}");
        if want == status::OK {
            // Unsubscribe again, so that the records below see the catch-all only.
            let off = InformInfo { subscribe: false, ..one };
            send(&mut drv, &request(Method::Set, 0, 0x6300 + u64::from(trap), &off).unwrap());
            let r = listen(&mut drv, probe).expect("answer");
            assert_eq!(SaHeader::from_bytes(&r.mad[..]).unwrap().status, status::OK, "unsubscribe {trap}");
        }
    }
    // The probe sees its subscription.
    send(&mut drv, &request(Method::GetTable, 0, 0x63, &InformInfoRecord::parse(&[0; 60]).unwrap()).unwrap());
    let r = listen(&mut drv, probe).expect("answer");
    let rec = InformInfoRecord::parse(&r.mad[SA_HEADER_LEN..]).unwrap();
    assert_eq!(rec.subscriber_gid, Gid { prefix: PREFIX, guid: probe_guid });
    assert_eq!(rec.inform_info.trap_number_or_device_id, 0xffff);

    // The victim's cable is pulled at its leaf: the leaf traps (128), the SM forwards that and
    // sweeps; the victim's port is gone (65).
    let leaf = topo.nodes[victim].peer(1).expect("cabled");
    drv.fabric.inject_fault(ibsm_sim::fabric::Fault::LinkDown { node: leaf.node, port: leaf.port });
    let heard = hear_for(&mut drv, probe, 5_000_000_000);
    let reports: Vec<(u64, Notice)> = heard
        .iter()
        .filter_map(|r| {
            let h = SaHeader::from_bytes(&r.mad[..]).ok()?;
            (h.method == Method::Report).then(|| (h.tid, Notice::parse(&r.mad[SA_HEADER_LEN..]).expect("notice")))
        })
        .collect();
    let of = |n: u16| reports.iter().filter(|(_, r)| r.trap_number() == Some(n)).count();
    assert!(of(128) >= 1, "trap 128 forwarded: {reports:?}");
    let gone = Gid { prefix: PREFIX, guid: topo.nodes[victim].port_guid(1) };
    let lost: Vec<&(u64, Notice)> = reports.iter().filter(|(_, r)| r.trap_number() == Some(65)).collect();
    assert!(!lost.is_empty(), "65 for the lost port");
    assert!(lost.iter().all(|(_, n)| n.details == NoticeDetails::Trap65 { gid: gone }));
    // Nothing was acknowledged: every Report went out four times (first try and three retries).
    let tids: HashSet<u64> = reports.iter().map(|(t, _)| *t).collect();
    assert_eq!(reports.len(), tids.len() * 4, "{} reports, {} distinct", reports.len(), tids.len());
    let c = drv.sm.sa_report_counters();
    assert_eq!((c.expired, c.acknowledged), (tids.len() as u64, 0));

    // The cable comes back: the port returns (64); this time the probe acknowledges.
    drv.fabric.inject_fault(ibsm_sim::fabric::Fault::LinkUp { node: leaf.node, port: leaf.port });
    let mut acked = 0;
    let mut back = 0;
    let end = drv.now() + 5_000_000_000;
    while drv.now() < end {
        for r in hear_for(&mut drv, probe, 1_000_000) {
            let Ok(h) = SaHeader::from_bytes(&r.mad[..]) else { continue };
            if h.method != Method::Report {
                continue;
            }
            let n = Notice::parse(&r.mad[SA_HEADER_LEN..]).unwrap();
            if n.details == (NoticeDetails::Trap64 { gid: gone }) {
                back += 1;
            }
            let mut resp = r.mad;
            resp[3] = 0x86; // ReportResp
            send(&mut drv, &resp);
            acked += 1;
        }
    }
    assert_eq!(back, 1, "64 for the returning port, once: acknowledged, so not retried");
    let c2 = drv.sm.sa_report_counters();
    assert_eq!(c2.acknowledged, acked);
    assert_eq!(c2.expired, c.expired, "nothing more given up");
}

#[test]
fn subscribers_hear_of_multicast_groups_created_and_deleted() {
    use ibsm_mad::attrs::{Notice, NoticeDetails};
    use ibsm_mad::records::{JoinState, McMemberRecord};
    let topo = example("fat-tree-2l-k4.net");
    let (mut drv, probe, probe_guid, sm) = subscribed_probe(&topo);
    let send = |drv: &mut SimDriver, bytes: &[u8; MAD_LEN]| drv.fabric.send(probe, bytes, Dest { dlid: sm, qpn: 1 });
    // A group created and deleted by the probe: 66, then 67, with its MGID.
    let mgid = Gid { prefix: 0xff12_a01c_0000_0000, guid: Guid(0x66) };
    let me = McMemberRecord {
        mgid,
        port_gid: Gid { prefix: PREFIX, guid: probe_guid },
        qkey: 5,
        pkey: PKey(0xffff),
        join_state: JoinState::FULL_MEMBER,
        ..McMemberRecord::default()
    };
    let create = MC_CREATE;
    let mut group_notices = Vec::new();
    for (method, mask) in [
        (Method::Set, create),
        (Method::Delete, McMemberRecord::COMP_MGID | McMemberRecord::COMP_PORT_GID | McMemberRecord::COMP_JOIN_STATE),
    ] {
        send(&mut drv, &request(method, mask, 0x70, &me).unwrap());
        for r in hear_for(&mut drv, probe, 100_000_000) {
            let Ok(h) = SaHeader::from_bytes(&r.mad[..]) else { continue };
            if h.method == Method::Report {
                group_notices.push(Notice::parse(&r.mad[SA_HEADER_LEN..]).unwrap().details);
                let mut resp = r.mad;
                resp[3] = 0x86;
                send(&mut drv, &resp);
            } else {
                assert_eq!(h.status, status::OK, "{method:?}");
            }
        }
    }
    assert_eq!(group_notices, vec![NoticeDetails::Trap66 { mgid }, NoticeDetails::Trap67 { mgid }]);
}

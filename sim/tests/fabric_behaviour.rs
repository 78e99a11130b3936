//! Behaviour of the simulated fabric as an SM sees it: directed routes, LID routing through
//! LFTs, the port state machine, attribute validity checks, M_Keys, P_Keys (the membership rule at
//! CA ports, the partition only at enforcing switch ports), traps and faults.
//! Every test drives raw MAD bytes through `Fabric` in virtual time.

use ibsm_mad::attrs::{LinearForwardingTable, NodeInfo, NodeType, PhysPortState, PortInfo, PortState, SwitchInfo};
use ibsm_mad::header::{Mad, Method};
use ibsm_mad::smp::{DrSmp, SmpRepr};
use ibsm_mad::{Attribute, DrPath, Guid, Lid, MKey, PortNum, ids};
use ibsm_sim::fabric::{Dest, Fabric, Fault, LinkRule, SimConfig, SimTime};
use ibsm_sim::topology::Topology;

mod common;

use common::{Bench, NET, to64};

#[test]
fn directed_routes_reach_every_node_with_its_facts() {
    let mut b = Bench::new(1);
    // Hop 0: our own CA.
    let (st, d) = b.dr_get(&[], ids::attr::NODE_INFO, 0).expect("local NodeInfo");
    assert_eq!(st, 0);
    let ni = NodeInfo::parse(&d).expect("parse");
    assert_eq!(ni.node_type, NodeType::Ca);
    assert_eq!(ni.node_guid, b.topo.nodes[b.node("H1")].node_guid);
    // One hop: S1, entered on port 1.
    let ni = NodeInfo::parse(&b.dr_get(&[1], ids::attr::NODE_INFO, 0).expect("S1").1).expect("parse");
    assert_eq!((ni.node_type, ni.num_ports, ni.local_port_num), (NodeType::Switch, 4, PortNum(1)));
    // Three hops: S1 -> S2 (port 3) -> H4 (S2 port 2).
    let ni = NodeInfo::parse(&b.dr_get(&[1, 3, 2], ids::attr::NODE_INFO, 0).expect("H4").1).expect("parse");
    assert_eq!(ni.node_guid, b.topo.nodes[b.node("H4")].node_guid);
    assert_eq!(ni.local_port_num, PortNum(1));
    // Unconnected port 4 of S1: no answer at all (dropped), and counted.
    let before = b.f.stats().dropped_no_route;
    assert!(b.dr_get(&[1, 4], ids::attr::NODE_INFO, 0).is_none());
    assert_eq!(b.f.stats().dropped_no_route, before + 1);
    // A path through a CA is not forwarded.
    assert!(b.dr_get(&[1, 2, 1], ids::attr::NODE_INFO, 0).is_none());
}

#[test]
fn response_carries_the_return_path_and_d_bit() {
    let mut b = Bench::new(1);
    let p = DrPath::new(&[1, 3, 1]).expect("path");
    let smp = SmpRepr::get_dr(&p, ids::attr::NODE_INFO, 0, 77);
    b.f.send(b.sm, &smp.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
    b.run();
    let r = b.f.recv(b.sm).expect("response");
    let dr = DrSmp::new_checked(&r.mad[..]).expect("valid DR SMP");
    assert!(dr.d_bit());
    assert_eq!(dr.hop_pointer(), 0, "back at the requester");
    assert_eq!(dr.hop_count(), 3);
    // Arrival ports on the way: S1 via 1, S2 via 3, H3 via 1.
    assert_eq!(dr.return_route().expect("route").ports(), &[1, 3, 1]);
    assert_eq!(r.slid, Lid::PERMISSIVE);
    assert_eq!(Mad::new_unchecked(&r.mad[..]).method(), Method::GetResp);
}

#[test]
fn a_boxed_send_is_answered_as_a_copied_one_in_the_same_box() {
    let answer = |boxed: bool| {
        let mut b = Bench::new(1);
        let p = DrPath::new(&[1, 3, 1]).expect("path");
        let bytes = SmpRepr::get_dr(&p, ids::attr::NODE_INFO, 0, 77).to_bytes();
        let dest = Dest { dlid: Lid::PERMISSIVE, qpn: 0 };
        let sent = Box::new(bytes);
        let at: *const u8 = sent.as_ptr();
        if boxed {
            b.f.send_boxed(b.sm, sent, dest, 0);
        } else {
            b.f.send(b.sm, &sent, dest);
        }
        b.run();
        let r = b.f.recv(b.sm).expect("response");
        assert!(b.f.recv(b.sm).is_none());
        (*r.mad, r.slid, r.at, std::ptr::eq(r.mad.as_ptr(), at), b.f.stats().sent)
    };
    let (copied, boxed) = (answer(false), answer(true));
    assert_eq!((copied.0, copied.1, copied.2, copied.4), (boxed.0, boxed.1, boxed.2, boxed.4));
    assert_eq!(Mad::new_unchecked(&boxed.0[..]).method(), Method::GetResp);
    // The answer came back in the box sent: no copy of the MAD on the way.
    assert!(boxed.3, "the answer is in the box the request was sent in");
}

#[test]
fn port_state_machine_follows_the_rules() {
    let mut b = Bench::new(1);
    // Linked ports start Init/LinkUp, unlinked ones Down/Polling, switch port 0 Active.
    let pi = b.port_info(&[1], 1);
    assert_eq!((pi.port_state, pi.port_physical_state), (PortState::Init, PhysPortState::LinkUp));
    let pi = b.port_info(&[1], 4);
    assert_eq!((pi.port_state, pi.port_physical_state), (PortState::Down, PhysPortState::Polling));
    assert_eq!(b.port_info(&[1], 0).port_state, PortState::Active);
    // Init -> Active is refused (must arm first) and changes nothing.
    assert_eq!(b.set_port(&[1], 1, |pi| pi.port_state = PortState::Active), ids::status::BAD_FIELD);
    assert_eq!(b.port_info(&[1], 1).port_state, PortState::Init);
    // Arming an unlinked port is refused.
    assert_eq!(b.set_port(&[1], 4, |pi| pi.port_state = PortState::Armed), ids::status::BAD_FIELD);
    // Arm one end: fine. Activate it while the neighbour is still Init: refused.
    assert_eq!(b.set_port(&[1], 1, |pi| pi.port_state = PortState::Armed), 0);
    assert_eq!(b.set_port(&[1], 1, |pi| pi.port_state = PortState::Active), ids::status::BAD_FIELD);
    // Arm the other end, then both go Active.
    assert_eq!(b.set_port(&[], 1, |pi| pi.port_state = PortState::Armed), 0);
    assert_eq!(b.set_port(&[1], 1, |pi| pi.port_state = PortState::Active), 0);
    assert_eq!(b.port_info(&[1], 1).port_state, PortState::Active);
    // Re-sending Active is an invalid transition.
    assert_eq!(b.set_port(&[1], 1, |pi| pi.port_state = PortState::Active), ids::status::BAD_FIELD);
    // An invalid field (OperationalVLs above VLCap) rejects the whole Set: the LID is not taken.
    let vl_cap = b.port_info(&[1], 0).vl_cap;
    let st = b.set_port(&[1], 0, |pi| {
        pi.lid = Lid(9);
        pi.operational_vls = vl_cap + 1;
    });
    assert_eq!(st, ids::status::BAD_FIELD);
    assert_eq!(b.port_info(&[1], 0).lid, Lid(0));
}

#[test]
fn attribute_errors_have_the_spec_statuses() {
    let mut b = Bench::new(1);
    // SwitchInfo asked of a CA.
    assert_eq!(b.dr_get(&[], ids::attr::SWITCH_INFO, 0).expect("answer").0, ids::status::BAD_METHOD_ATTR);
    // Unknown attribute.
    assert_eq!(b.dr_get(&[1], 0x0033, 0).expect("answer").0, ids::status::BAD_METHOD_ATTR);
    // Set of a read-only attribute.
    assert_eq!(b.dr_set(&[1], ids::attr::NODE_INFO, 0, [0; 64]).expect("answer").0, ids::status::BAD_METHOD_ATTR);
    // LFT block beyond LinearFDBCap.
    assert_eq!(b.dr_get(&[1], ids::attr::LFT, 100_000).expect("answer").0, ids::status::BAD_FIELD);
    // PortInfo of a port the switch does not have.
    assert_eq!(b.dr_get(&[1], ids::attr::PORT_INFO, 9).expect("answer").0, ids::status::BAD_FIELD);
    // Unknown method.
    let tid = b.next_tid();
    let p = DrPath::new(&[1]).expect("path");
    let smp = SmpRepr::get_dr(&p, ids::attr::NODE_INFO, 0, tid).with_method(Method::Unknown(0x04));
    let r = b.exchange(smp, Dest { dlid: Lid::PERMISSIVE, qpn: 0 }).expect("answer");
    assert_eq!(r.0, ids::status::BAD_METHOD);
    // Class version 2 on an SMP: bad version, answered.
    let tid = b.next_tid();
    let mut bytes = SmpRepr::get_dr(&p, ids::attr::NODE_INFO, 0, tid).to_bytes();
    Mad::new_unchecked(&mut bytes[..]).set_class_version(2);
    b.f.send(b.sm, &bytes, Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
    b.run();
    let r = b.f.recv(b.sm).expect("answer");
    assert_eq!(DrSmp::new_unchecked(&r.mad[..]).status(), ids::status::BAD_VERSION);
    // A DR SMP whose hop pointer is not 0 is dropped silently and counted as malformed.
    let before = b.f.stats().dropped_malformed;
    let mut bytes = SmpRepr::get_dr(&p, ids::attr::NODE_INFO, 0, 99).to_bytes();
    DrSmp::new_unchecked(&mut bytes[..]).set_hop_pointer(1).expect("in range");
    b.f.send(b.sm, &bytes, Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
    b.run();
    assert!(b.f.recv(b.sm).is_none());
    assert_eq!(b.f.stats().dropped_malformed, before + 1);
}

#[test]
fn lid_routing_follows_the_lfts_and_needs_active_ports() {
    let mut b = Bench::new(1);
    // Before bring-up nothing is LID-reachable.
    assert!(b.lid_get(3, ids::attr::NODE_INFO, 0).is_none());
    b.bring_up();
    // S2 (LID 3) and H4 (LID 6) answer LID-routed Gets.
    let ni = NodeInfo::parse(&b.lid_get(3, ids::attr::NODE_INFO, 0).expect("S2").1).expect("parse");
    assert_eq!(ni.node_guid, b.topo.nodes[b.node("S2")].node_guid);
    let ni = NodeInfo::parse(&b.lid_get(6, ids::attr::NODE_INFO, 0).expect("H4").1).expect("parse");
    assert_eq!(ni.node_guid, b.topo.nodes[b.node("H4")].node_guid);
    // A LID beyond LinearFDBTop is dropped.
    assert!(b.lid_get(7, ids::attr::NODE_INFO, 0).is_none());
    // Remove S1's entry for LID 6: dropped.
    let mut lft = LinearForwardingTable::parse(&b.dr_get(&[1], ids::attr::LFT, 0).expect("LFT").1).expect("parse");
    lft.ports[6] = PortNum(0xff);
    assert_eq!(b.dr_set(&[1], ids::attr::LFT, 0, to64(&lft)).expect("set").0, 0);
    assert!(b.lid_get(6, ids::attr::NODE_INFO, 0).is_none());
    // LID 5 still works, until S2's port 1 is retrained (PortState Down -> back to Init).
    assert!(b.lid_get(5, ids::attr::NODE_INFO, 0).is_some());
    assert_eq!(b.set_port(&[1, 3], 1, |pi| pi.port_state = PortState::Down), 0);
    assert_eq!(b.port_info(&[1, 3], 1).port_state, PortState::Init);
    assert!(b.lid_get(5, ids::attr::NODE_INFO, 0).is_none(), "port not Active");
}

#[test]
fn a_down_set_on_a_ca_port_retrains_its_link_as_ibsim_does() {
    let mut b = Bench::new(1);
    // Powered on as ibsim's ports are: NeighborMTU at MTUCap, OperationalVLs at VLCap.
    let pi = b.port_info(&[1, 2], 1);
    assert_eq!((pi.neighbor_mtu, pi.operational_vls), (pi.mtu_cap, pi.vl_cap));
    b.bring_up();
    let state_change = |b: &mut Bench| {
        let (_, d) = b.dr_get(&[1], ids::attr::SWITCH_INFO, 0).expect("SwitchInfo");
        SwitchInfo::parse(&d).expect("parse")
    };
    // Clear S1's PortStateChange (written as 1), and drain what the SM port received so far.
    let si = state_change(&mut b);
    assert_eq!(b.dr_set(&[1], ids::attr::SWITCH_INFO, 0, to64(&si)).expect("SwitchInfo Set").0, 0);
    assert!(!state_change(&mut b).port_state_change);
    while b.f.recv(b.sm).is_some() {}
    // H2 (on S1 port 2) gets OperationalVLs 2 (VL0-1) with PortState Down in the same Set.
    let retrains = b.f.stats().link_retrains;
    let st = b.set_port(&[1, 2], 1, |pi| {
        pi.port_state = PortState::Down;
        pi.operational_vls = 2;
    });
    assert_eq!(st, 0);
    assert_eq!(b.f.stats().link_retrains, retrains + 1);
    // Both ends are back in Init at once, the link up, the new value kept.
    let h2 = b.port_info(&[1, 2], 1);
    assert_eq!(
        (h2.port_state, h2.port_physical_state, h2.operational_vls),
        (PortState::Init, PhysPortState::LinkUp, 2)
    );
    assert_eq!(b.port_info(&[1], 2).port_state, PortState::Init);
    // S1 marks PortStateChange for its port; no trap is sent. Its other links stay Active.
    assert!(state_change(&mut b).port_state_change);
    b.run();
    assert!(!std::iter::from_fn(|| b.f.recv(b.sm)).any(|r| Mad::new_unchecked(&r.mad[..]).method() == Method::Trap));
    for port in [1, 3] {
        assert_eq!(b.port_info(&[1], port).port_state, PortState::Active, "S1 port {port}");
    }
}

#[test]
fn link_faults_change_port_state_and_raise_trap_128() {
    let mut b = Bench::new(1);
    b.bring_up();
    let s2 = b.node("S2");
    b.f.inject_fault(Fault::LinkDown { node: s2, port: 2 });
    b.run();
    // Trap 128 from S2 (LID 3) reached the SM.
    let mut traps = Vec::new();
    while let Some(r) = b.f.recv(b.sm) {
        let h = Mad::new_unchecked(&r.mad[..]);
        if h.method() == Method::Trap {
            let n = ibsm_mad::attrs::Notice::parse(&r.mad[64..]).expect("Notice parses");
            traps.push((r.slid, n.trap_number()));
        }
    }
    assert_eq!(traps, vec![(Lid(3), Some(128))]);
    let pi = b.port_info(&[1, 3], 2);
    assert_eq!((pi.port_state, pi.port_physical_state), (PortState::Down, PhysPortState::Polling));
    let (_, d) = b.dr_get(&[1, 3], ids::attr::SWITCH_INFO, 0).expect("SwitchInfo");
    assert!(SwitchInfo::parse(&d).expect("parse").port_state_change);
    // Link back: Init, another trap.
    b.f.inject_fault(Fault::LinkUp { node: s2, port: 2 });
    b.run();
    assert!(std::iter::from_fn(|| b.f.recv(b.sm)).any(|r| Mad::new_unchecked(&r.mad[..]).method() == Method::Trap));
    assert_eq!(b.port_info(&[1, 3], 2).port_state, PortState::Init);
}

#[test]
fn crashed_node_is_silent_and_restarts_at_power_on() {
    let mut b = Bench::new(1);
    b.bring_up();
    let s2 = b.node("S2");
    b.f.schedule(b.f.now().plus(1_000), Fault::Crash(s2));
    b.run();
    assert!(b.dr_get(&[1, 3], ids::attr::NODE_INFO, 0).is_none());
    assert_eq!(b.port_info(&[1], 3).port_state, PortState::Down, "S1's side of the cable");
    b.f.inject_fault(Fault::Restart(s2));
    b.run();
    let pi = b.port_info(&[1, 3], 0);
    assert_eq!(pi.lid, Lid(0), "power-on state");
    assert_eq!(b.port_info(&[1, 3], 3).port_state, PortState::Init);
}

#[test]
fn mkey_protection_levels_lease_and_trap_256() {
    let mut b = Bench::new(1);
    b.bring_up();
    // Give S2 an M_Key with protect bits 2 and a 1 s lease.
    assert_eq!(
        b.set_port(&[1, 3], 0, |pi| {
            pi.m_key = MKey(0xdead);
            pi.m_key_protect_bits = 2;
            pi.m_key_lease_period = 1;
        }),
        0
    );
    // Wrong key (ours is 0): Get refused silently, counter up, trap 256 to the SM.
    assert!(b.dr_get(&[1, 3], ids::attr::NODE_INFO, 0).is_none());
    let tid = b.next_tid();
    let p = DrPath::new(&[1, 3]).expect("path");
    let pi_req = SmpRepr::get_dr(&p, ids::attr::PORT_INFO, 0, tid).with_m_key(MKey(0xdead));
    let (st, d) = b.exchange(pi_req, Dest { dlid: Lid::PERMISSIVE, qpn: 0 }).expect("right key answers");
    assert_eq!(st, 0);
    let pi = PortInfo::parse(&d).expect("parse");
    assert_eq!(pi.m_key_violations, 1);
    assert_eq!(pi.m_key, MKey(0xdead));
    // Protect bits 1: Gets with the wrong key pass but the M_Key reads as zero.
    let tid = b.next_tid();
    let mut pi1 = pi;
    pi1.m_key_protect_bits = 1;
    pi1.port_state = PortState::NoChange;
    pi1.port_physical_state = PhysPortState::NoChange;
    let set = SmpRepr::set_dr(&p, ids::attr::PORT_INFO, 0, tid, to64(&pi1)).with_m_key(MKey(0xdead));
    assert_eq!(b.exchange(set, Dest { dlid: Lid::PERMISSIVE, qpn: 0 }).expect("set").0, 0);
    let pi = b.port_info(&[1, 3], 0);
    assert_eq!(pi.m_key, MKey(0), "hidden from a wrong key");
    // A Set with the wrong key fails whatever the protect bits.
    assert!(b.dr_set(&[1, 3], ids::attr::PORT_INFO, 0, to64(&pi)).is_none());
    // Lease: after the violation above, the lease (1 s) expires and protect bits drop to 0.
    b.f.advance_to(b.f.now().plus(2_000_000_000));
    assert_eq!(b.port_info(&[1, 3], 0).m_key_protect_bits, 0);
    // Trap 256 reached the SM from S2 (LID 3), naming the refused attribute.
    let traps: Vec<_> = b
        .unsolicited
        .iter()
        .filter(|r| Mad::new_unchecked(&r.mad[..]).method() == Method::Trap)
        .filter_map(|r| ibsm_mad::attrs::Notice::parse(&r.mad[64..]).ok().map(|n| (r.slid, n)))
        .collect();
    let t256: Vec<_> = traps.iter().filter(|(_, n)| n.trap_number() == Some(256)).collect();
    assert!(!t256.is_empty(), "trap 256 expected, got {traps:?}");
    let (slid, n) = t256[0];
    assert_eq!(*slid, Lid(3));
    match n.details {
        ibsm_mad::attrs::NoticeDetails::Trap256 { lid, attribute_id, dr_notice, .. } => {
            assert_eq!((lid, attribute_id, dr_notice), (Lid(3), ids::attr::NODE_INFO, true));
        }
        other => panic!("trap 256 details expected, got {other:?}"),
    }
}

/// An LFT Set is answered with the block as the switch now holds it (what it wrote), a Get of
/// the block reads the same, and a block never written reads as 0xff throughout.
#[test]
fn an_lft_set_answers_the_block_it_wrote_and_a_get_reads_it_back() {
    let mut b = Bench::new(1);
    let mut block = [0xffu8; 64];
    for (i, e) in block.iter_mut().enumerate().take(40) {
        *e = (i % 5) as u8;
    }
    let (st, answer) = b.dr_set(&[1, 3], ids::attr::LFT, 2, block).expect("Set answered");
    assert_eq!((st, answer), (0, block));
    assert_eq!(b.dr_get(&[1, 3], ids::attr::LFT, 2).expect("Get answered"), (0, block));
    assert_eq!(b.dr_get(&[1, 3], ids::attr::LFT, 1).expect("unwritten block"), (0, [0xff; 64]));
    assert_eq!(b.f.stats().lft_blocks_set, 1);
    assert_eq!(b.f.stats().lft_blocks_read, 2);
}

/// An M_Key guards a node's SMPs while a port of it holds one, whichever: a CA whose two ports
/// took keys still guards the second after the first takes a zero key back, and its first port
/// answers keyless SMPs again; a switch that takes its key back answers them again too; a
/// restart clears every key.
#[test]
fn a_node_guards_its_smps_while_any_port_of_it_holds_an_m_key() {
    const TWO_PORTS: &str = r#"
Switch 4 "S1"
[1] "H1"[1]
[2] "H5"[2]
[3] "S2"[3]

Switch 4 "S2"
[1] "H5"[1]
[3] "S1"[3]

Hca 1 "H1"
[1] "S1"[1]

Hca 2 "H5"
[1] "S2"[1]
[2] "S1"[2]
"#;
    const DR: Dest = Dest { dlid: Lid::PERMISSIVE, qpn: 0 };
    let mut b = Bench::with_net(TWO_PORTS, 1);
    let (h5p1, h5p2, s1): (&[u8], &[u8], &[u8]) = (&[1, 3, 1], &[1, 2], &[1]);
    // Gives port `port` at `path` the M_Key `key` (protect bits 3), asking with `old`.
    let set_key = |b: &mut Bench, path: &[u8], port: u32, old: u64, key: u64| -> u16 {
        let p = DrPath::new(path).expect("path");
        let get = SmpRepr::get_dr(&p, ids::attr::PORT_INFO, port, b.next_tid()).with_m_key(MKey(old));
        let (st, d) = b.exchange(get, DR).expect("PortInfo read with the key");
        assert_eq!(st, 0);
        let mut pi = PortInfo::parse(&d).expect("parse");
        pi.m_key = MKey(key);
        pi.m_key_protect_bits = 3;
        pi.port_state = PortState::NoChange;
        pi.port_physical_state = PhysPortState::NoChange;
        let set = SmpRepr::set_dr(&p, ids::attr::PORT_INFO, port, b.next_tid(), to64(&pi)).with_m_key(MKey(old));
        b.exchange(set, DR).map_or(u16::MAX, |r| r.0)
    };
    let answers = |b: &mut Bench, path: &[u8]| b.dr_get(path, ids::attr::NODE_INFO, 0).is_some();
    assert!(answers(&mut b, h5p1) && answers(&mut b, h5p2));
    assert_eq!(set_key(&mut b, h5p1, 1, 0, 0xbeef), 0);
    assert_eq!(set_key(&mut b, h5p2, 2, 0, 0xcafe), 0);
    assert!(!answers(&mut b, h5p1) && !answers(&mut b, h5p2), "both H5 ports guard their SMPs");
    // Port 1 takes a zero key back: it answers keyless SMPs again; port 2 keeps its key.
    assert_eq!(set_key(&mut b, h5p1, 1, 0xbeef, 0), 0);
    assert!(answers(&mut b, h5p1));
    assert!(!answers(&mut b, h5p2), "port 2 still holds its key");
    // A switch's key (on port 0) guards every SMP to it until it takes a zero key back.
    assert_eq!(set_key(&mut b, s1, 0, 0, 0x5a), 0);
    assert!(!answers(&mut b, s1));
    assert_eq!(set_key(&mut b, s1, 0, 0x5a, 0), 0);
    assert!(answers(&mut b, s1));
    // A restart clears H5's keys.
    let h5 = b.node("H5");
    b.f.inject_fault(Fault::Crash(h5));
    b.f.inject_fault(Fault::Restart(h5));
    b.run();
    assert!(answers(&mut b, h5p2), "H5 after its restart");
}

#[test]
fn drop_rules_are_reproducible_from_the_seed() {
    fn losses(seed: u64) -> Vec<bool> {
        let mut b = Bench::new(seed);
        b.f.inject_fault(Fault::AddRule(LinkRule::global_drop(0.3)));
        (0..40).map(|_| b.dr_get(&[1, 3, 1], ids::attr::NODE_INFO, 0).is_none()).collect()
    }
    let a = losses(7);
    assert_eq!(a, losses(7), "same seed, same losses (seed 7)");
    assert_ne!(a, losses(8), "another seed, other losses");
    let lost = a.iter().filter(|&&l| l).count();
    // 6 cable crossings per exchange at 30%: most exchanges lose something, not all.
    assert!((10..40).contains(&lost), "lost {lost} of 40 (seed 7)");
}

#[test]
fn delay_rules_shift_arrival_times() {
    let mut b = Bench::new(3);
    b.f.send(
        b.sm,
        &SmpRepr::get_dr(&DrPath::new(&[1]).expect("p"), ids::attr::NODE_INFO, 0, 1).to_bytes(),
        Dest { dlid: Lid::PERMISSIVE, qpn: 0 },
    );
    b.run();
    let fast = b.f.recv(b.sm).expect("answer").at;
    let start = b.f.now();
    b.f.inject_fault(Fault::AddRule(LinkRule::global_delay(1_000_000, 0)));
    b.f.send(
        b.sm,
        &SmpRepr::get_dr(&DrPath::new(&[1]).expect("p"), ids::attr::NODE_INFO, 0, 2).to_bytes(),
        Dest { dlid: Lid::PERMISSIVE, qpn: 0 },
    );
    b.run();
    let slow = b.f.recv(b.sm).expect("answer").at;
    assert!(slow.0 - start.0 >= fast.0 + 2_000_000, "two crossings, 1 ms each");
    assert!(SimTime(0) < fast);
}

#[test]
fn duplicate_guids_are_visible() {
    let mut b = Bench::new(1);
    let h1_guid = b.topo.nodes[b.node("H1")].node_guid;
    let h4 = b.node("H4");
    b.f.inject_fault(Fault::SetGuid { node: h4, guid: h1_guid });
    let ni = NodeInfo::parse(&b.dr_get(&[1, 3, 2], ids::attr::NODE_INFO, 0).expect("H4").1).expect("parse");
    assert_eq!(ni.node_guid, h1_guid);
}

#[test]
fn guid_info_block_0_holds_the_port_guid() {
    let mut b = Bench::new(1);
    let (st, d) = b.dr_get(&[1, 3, 2], ids::attr::GUID_INFO, 0).expect("GUIDInfo");
    assert_eq!(st, 0);
    let gi = ibsm_mad::attrs::GuidInfo::parse(&d).expect("parse");
    assert_eq!(gi.guids[0], b.topo.nodes[b.node("H4")].port_guid(1));
    // GUIDCap 1: a Set keeps nothing but answers the block; block 1 does not exist.
    let mut set = ibsm_mad::attrs::GuidInfo::default();
    set.guids[1] = Guid(0xaa);
    let (st, d) = b.dr_set(&[1, 3, 2], ids::attr::GUID_INFO, 0, to64(&set)).expect("answer");
    assert_eq!(st, 0);
    assert_eq!(ibsm_mad::attrs::GuidInfo::parse(&d).expect("parse").guids[1], Guid(0));
    assert_eq!(b.dr_get(&[1, 3, 2], ids::attr::GUID_INFO, 1).expect("answer").0, ids::status::BAD_FIELD);
}

#[test]
fn guid_info_set_stores_alias_guids_up_to_guid_cap_and_entry_0_stays_the_port_guid() {
    let mut b = Bench::new(1);
    let h4 = b.node("H4");
    let port_guid = b.topo.nodes[h4].port_guid(1);
    b.f.set_guid_cap(h4, 1, 12);
    let pi = b.port_info(&[1, 3, 2], 1);
    assert_eq!(pi.guid_cap, 12);
    let mut set = ibsm_mad::attrs::GuidInfo { guids: core::array::from_fn(|i| Guid(0xa0 + i as u64)) };
    let (st, d) = b.dr_set(&[1, 3, 2], ids::attr::GUID_INFO, 0, to64(&set)).expect("answer");
    assert_eq!(st, 0);
    let got = ibsm_mad::attrs::GuidInfo::parse(&d).expect("parse");
    assert_eq!(got.guids[0], port_guid, "entry 0 is read-only");
    assert_eq!(got.guids[1..], set.guids[1..]);
    // Block 1 holds entries 8..11; 12..15 are past GUIDCap and stay 0.
    set.guids = core::array::from_fn(|i| Guid(0xb0 + i as u64));
    let (st, d) = b.dr_set(&[1, 3, 2], ids::attr::GUID_INFO, 1, to64(&set)).expect("answer");
    assert_eq!(st, 0);
    let got = ibsm_mad::attrs::GuidInfo::parse(&d).expect("parse");
    assert_eq!(got.guids[..4], set.guids[..4]);
    assert!(got.guids[4..].iter().all(|g| *g == Guid(0)));
    let table = b.f.port_guids(h4, 1).expect("H4 port 1");
    assert_eq!(table.len(), 12);
    assert_eq!((table[0], table[7], table[8], table[11]), (port_guid, Guid(0xa7), Guid(0xb0), Guid(0xb3)));
    let (st, d) = b.dr_get(&[1, 3, 2], ids::attr::GUID_INFO, 0).expect("GUIDInfo");
    assert_eq!((st, ibsm_mad::attrs::GuidInfo::parse(&d).expect("parse").guids[3]), (0, Guid(0xa3)));
    assert_eq!(b.dr_set(&[1, 3, 2], ids::attr::GUID_INFO, 2, to64(&set)).expect("answer").0, ids::status::BAD_FIELD);
}

/// A GSI (SA-class) request from the SM's agent at H1 to `dlid`, with the P_Key at `pkey_index`.
fn gsi_to(b: &mut Bench, dlid: u16, pkey_index: u16, tid: u64) {
    let mut mad = [0u8; 256];
    let hdr = ibsm_mad::header::MadHeader {
        base_version: 1,
        mgmt_class: ibsm_mad::header::MgmtClass::SubnAdm,
        class_version: 2,
        method: Method::Get,
        status: 0,
        class_specific: 0,
        tid,
        attr_id: ids::sa_attr::NODE_RECORD,
        attr_mod: 0,
    };
    hdr.emit(&mut mad);
    b.f.send_pkey(b.sm, &mad, Dest { dlid: Lid(dlid), qpn: 1 }, pkey_index);
    b.run();
}

fn set_pkeys(b: &mut Bench, path: &[u8], attr_mod: u32, keys: &[u16]) {
    let mut t = ibsm_mad::attrs::PKeyTable { keys: [ibsm_mad::PKey(0); 32] };
    for (i, k) in keys.iter().enumerate() {
        t.keys[i] = ibsm_mad::PKey(*k);
    }
    assert_eq!(b.dr_set(path, ids::attr::PKEY_TABLE, attr_mod, to64(&t)).expect("P_KeyTable Set").0, 0);
}

fn traps(b: &mut Bench) -> Vec<u16> {
    let mut v: Vec<u16> = b
        .unsolicited
        .drain(..)
        .chain(std::iter::from_fn(|| b.f.recv(b.sm)))
        .filter(|r| Mad::new_unchecked(&r.mad[..]).method() == Method::Trap)
        .filter_map(|r| ibsm_mad::attrs::Notice::parse(&r.mad[64..]).ok()?.trap_number())
        .collect();
    v.sort_unstable();
    v
}

#[test]
fn pkeys_are_enforced_at_ca_ports_and_enforcing_switch_ports() {
    let mut b = Bench::new(1);
    b.bring_up();
    let h4 = b.node("H4");
    let client = b.f.attach(h4, 1).expect("agent at H4");
    // H4 only in partition 0x0001 (full); the SM's port keeps 0xffff at index 0, 0x8001 at 1.
    set_pkeys(&mut b, &[1, 3, 2], 0, &[0x8001]);
    set_pkeys(&mut b, &[], 0, &[0xffff, 0x8001]);
    let _ = traps(&mut b);
    // Default partition: refused at H4, counted, trap 257.
    gsi_to(&mut b, 6, 0, 1);
    assert!(b.f.recv(client).is_none());
    assert_eq!(b.port_info(&[1, 3, 2], 1).p_key_violations, 1);
    assert_eq!(traps(&mut b), vec![257]);
    // Partition 0x0001: delivered, with the key it carried.
    gsi_to(&mut b, 6, 1, 2);
    let got = b.f.recv(client).expect("delivered");
    assert_eq!(got.pkey, ibsm_mad::PKey(0x8001));
    assert_eq!(got.slid, Lid(1));
    // A limited member cannot talk to a limited member.
    set_pkeys(&mut b, &[1, 3, 2], 0, &[0x0001]);
    set_pkeys(&mut b, &[], 0, &[0xffff, 0x0001]);
    gsi_to(&mut b, 6, 1, 3);
    assert!(b.f.recv(client).is_none());
    // Back to full members, then turn on outbound enforcement at S2's port 2 (towards H4),
    // whose table lacks 0x0001: refused at the switch, trap 259.
    set_pkeys(&mut b, &[1, 3, 2], 0, &[0x8001]);
    set_pkeys(&mut b, &[], 0, &[0xffff, 0x8001]);
    set_pkeys(&mut b, &[1, 3], ibsm_mad::attrs::PKeyTable::attr_mod(PortNum(2), 0), &[0xffff]);
    assert_eq!(b.set_port(&[1, 3], 2, |pi| pi.partition_enforcement_outbound = true), 0);
    let _ = traps(&mut b);
    gsi_to(&mut b, 6, 1, 4);
    assert!(b.f.recv(client).is_none());
    assert_eq!(traps(&mut b), vec![259]);
    // SMPs are never P_Key checked.
    assert!(b.lid_get(6, ids::attr::NODE_INFO, 0).is_some());
}

#[test]
fn an_enforcing_switch_port_checks_the_partition_and_the_receiving_ca_the_membership() {
    use ibsm_mad::attrs::PKeyTable;
    let mut b = Bench::new(1);
    b.bring_up();
    let h4 = b.node("H4");
    let client = b.f.attach(h4, 1).expect("agent at H4");
    // H1 (the sender) a limited member of 0x0001, at index 1; S1's port 1, facing it, holds
    // H1's table (the limited key only) and enforces both ways, as an SM programs it.
    set_pkeys(&mut b, &[], 0, &[0xffff, 0x0001]);
    set_pkeys(&mut b, &[1], PKeyTable::attr_mod(PortNum(1), 0), &[0x0001]);
    let enforce = |pi: &mut PortInfo| {
        pi.partition_enforcement_inbound = true;
        pi.partition_enforcement_outbound = true;
    };
    assert_eq!(b.set_port(&[1], 1, enforce), 0);
    // H4 a full member of 0x0001: the switch port passes the limited packet, H4 takes it.
    set_pkeys(&mut b, &[1, 3, 2], 0, &[0x8001]);
    let _ = traps(&mut b);
    gsi_to(&mut b, 6, 1, 1);
    assert_eq!(b.f.recv(client).expect("limited to full, across the enforcing port").pkey, ibsm_mad::PKey(0x0001));
    assert_eq!(traps(&mut b), Vec::<u16>::new());
    // H4 a limited member too: the switch passes it, H4 drops it, counts it and traps (257).
    set_pkeys(&mut b, &[1, 3, 2], 0, &[0x0001]);
    gsi_to(&mut b, 6, 1, 2);
    assert!(b.f.recv(client).is_none());
    assert_eq!(traps(&mut b), vec![257]);
    assert_eq!(b.port_info(&[1, 3, 2], 1).p_key_violations, 1);
    // Another partition (H4 a full member of it, the switch port not): the switch drops it (259).
    set_pkeys(&mut b, &[], 0, &[0xffff, 0x8002]);
    set_pkeys(&mut b, &[1, 3, 2], 0, &[0x8002]);
    gsi_to(&mut b, 6, 1, 3);
    assert!(b.f.recv(client).is_none());
    assert_eq!(traps(&mut b), vec![259]);
}

#[test]
fn sminfo_goes_to_the_sm_agent_at_the_port_and_its_answer_comes_back() {
    let mut b = Bench::new(1);
    // No SM at H4: the node itself answers "unsupported".
    assert_eq!(b.dr_get(&[1, 3, 2], ids::attr::SM_INFO, 0).expect("answer").0, ids::status::BAD_METHOD_ATTR);
    let h4 = b.node("H4");
    let standby = b.f.attach(h4, 1).expect("agent at H4");
    b.f.set_is_sm(standby, true);
    // The master's DR SMInfo Get reaches the standby as a request, at the end of its route.
    let p = DrPath::new(&[1, 3, 2]).expect("path");
    b.f.send(b.sm, &SmpRepr::get_dr(&p, ids::attr::SM_INFO, 0, 42).to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
    b.run();
    let req = b.f.recv(standby).expect("SMInfo request delivered to the standby");
    let dr = DrSmp::new_checked(&req.mad[..]).expect("DR SMP");
    assert!(!dr.d_bit());
    assert_eq!(dr.hop_pointer(), 4, "hop count + 1 at the destination");
    assert_eq!(Mad::new_unchecked(&req.mad[..]).attr_id(), ids::attr::SM_INFO);
    // The standby answers by turning the request around; it walks the return path home.
    let mut resp = *req.mad;
    let info = ibsm_mad::attrs::SmInfo {
        guid: b.topo.nodes[h4].port_guid(1),
        sm_key: 0,
        act_count: 7,
        priority: 3,
        sm_state: ibsm_mad::attrs::SmState::Standby,
    };
    info.emit(&mut resp[64..128]);
    ibsm_mad::smp::make_response(&mut resp, 0).expect("response");
    b.f.send(standby, &resp, Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
    b.run();
    let got = b.f.recv(b.sm).expect("answer back at the master");
    assert_eq!(Mad::new_unchecked(&got.mad[..]).tid() & 0xffff_ffff, 42);
    let back = ibsm_mad::attrs::SmInfo::parse(&got.mad[64..128]).expect("SMInfo");
    assert_eq!((back.sm_state, back.priority, back.act_count), (ibsm_mad::attrs::SmState::Standby, 3, 7));
}

#[test]
fn sa_requests_reach_the_sm_by_lid_and_answers_return() {
    let mut b = Bench::new(1);
    b.bring_up();
    let h3 = b.node("H3");
    let client = b.f.attach(h3, 1).expect("saquery-like client at H3");
    // The client sends an SA Get to the SM's LID (1) on QP1.
    let mut mad = [0u8; 256];
    ibsm_mad::header::MadHeader {
        base_version: 1,
        mgmt_class: ibsm_mad::header::MgmtClass::SubnAdm,
        class_version: 2,
        method: Method::GetTable,
        status: 0,
        class_specific: 0,
        tid: 9,
        attr_id: ids::sa_attr::NODE_RECORD,
        attr_mod: 0,
    }
    .emit(&mut mad);
    b.f.send(client, &mad, Dest { dlid: Lid(1), qpn: 1 });
    b.run();
    let req = b.f.recv(b.sm).expect("SA request at the SM");
    assert_eq!((req.slid, req.sqpn), (Lid(5), 1));
    // The SM answers to the source LID; the client gets it (TID upper bits name the client).
    let mut resp = *req.mad;
    Mad::new_unchecked(&mut resp[..]).set_method(Method::GetTableResp);
    b.f.send(b.sm, &resp, Dest { dlid: req.slid, qpn: req.sqpn });
    b.run();
    let got = b.f.recv(client).expect("SA answer at the client");
    assert_eq!(Mad::new_unchecked(&got.mad[..]).method(), Method::GetTableResp);
    assert_eq!(got.slid, Lid(1));
}

#[test]
fn an_sm_on_a_switch_port_0_gets_its_answers_and_local_port_num_is_the_arrival_port() {
    let topo = Topology::parse_str(NET, "test.net").expect("parses");
    let mut f = Fabric::new(&topo, SimConfig::default());
    let s1 = topo.find("S1").expect("S1");
    let sm = f.attach(s1, 0).expect("switch port 0");
    let p = DrPath::new(&[3]).expect("path");
    f.send(sm, &SmpRepr::get_dr(&p, ids::attr::PORT_INFO, 1, 5).to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
    f.run_until_idle(SimTime(1_000_000_000));
    let r = f.recv(sm).expect("answer delivered to the agent on port 0");
    let pi = PortInfo::parse(&r.mad[64..128]).expect("PortInfo");
    // S2's port 1 was asked about; the SMP came in on S2's port 3.
    assert_eq!(pi.local_port_num, PortNum(3));
    assert_eq!(pi.port_state, PortState::Init);
}

/// Sends `n` directed-route NodeInfo Gets along each of `paths` at once (TIDs 1.., path after
/// path) from H1 on a fabric with `timing` and `seed`, runs the fabric until idle, and returns
/// every answer's (TID, arrival time), in arrival order.
fn burst(
    timing: ibsm_sim::fabric::Timing,
    seed: u64,
    paths: &[&[u8]],
    n: u64,
    rule: Option<LinkRule>,
) -> Vec<(u64, SimTime)> {
    let topo = Topology::parse_str(NET, "test.net").expect("parses");
    let mut f = Fabric::new(&topo, SimConfig { seed, timing, ..SimConfig::default() });
    let sm = f.attach(topo.find("H1").expect("H1"), 1).expect("attach");
    if let Some(r) = rule {
        f.inject_fault(Fault::AddRule(r));
    }
    let mut tid = 0;
    for path in paths {
        let p = DrPath::new(path).expect("path");
        for _ in 0..n {
            tid += 1;
            let smp = SmpRepr::get_dr(&p, ids::attr::NODE_INFO, 0, tid);
            f.send(sm, &smp.to_bytes(), Dest { dlid: Lid::PERMISSIVE, qpn: 0 });
        }
    }
    f.run_until_idle(SimTime(10_000_000_000));
    std::iter::from_fn(|| f.recv(sm)).map(|r| (Mad::new_unchecked(&r.mad[..]).tid() & 0xffff_ffff, r.at)).collect()
}

#[test]
fn a_burst_to_one_switch_queues_at_its_sma() {
    let t = ibsm_sim::fabric::Timing::default();
    assert_eq!((t.switch_sma_ns, t.ca_sma_ns), (10_000, 10_000), "10 µs per SMP by default");
    let n = 20;
    let got = burst(t, 1, &[&[1]], n, None);
    assert_eq!(got.len(), 20, "every SMP answered");
    // Served one at a time, in arrival order: the answers leave one service time apart.
    assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), (1..=n).collect::<Vec<_>>());
    let first = 2 * t.hop_ns + t.switch_sma_ns;
    for (i, (_, at)) in got.iter().enumerate() {
        assert_eq!(at.0, first + i as u64 * t.switch_sma_ns, "answer {i}");
    }
    let last = got.last().expect("answers").1;
    assert!(last.0 >= n * t.switch_sma_ns, "{n} SMPs take at least {n} service times: {last:?}");
}

#[test]
fn smas_of_different_nodes_serve_in_parallel_and_cas_have_their_own_service_time() {
    let t = ibsm_sim::fabric::Timing { switch_sma_ns: 10_000, ca_sma_ns: 3_000, ..Default::default() };
    let n = 10;
    // S1 (one hop) and S2 (two hops) each take their ten SMPs in parallel with the other.
    let got = burst(t, 1, &[&[1], &[1, 3]], n, None);
    assert_eq!(got.len(), 20);
    let last = got.iter().map(|g| g.1).max().expect("answers");
    assert_eq!(last.0, 4 * t.hop_ns + n * t.switch_sma_ns, "S2's last answer; not 2n service times");
    // H1's own SMA (no hop) and H3's (three hops) serve at the CA rate.
    let own = burst(t, 1, &[&[]], n, None);
    assert_eq!(own.iter().map(|g| g.1.0).collect::<Vec<_>>(), (1..=n).map(|i| i * 3_000).collect::<Vec<_>>());
    let h3 = burst(t, 1, &[&[1, 3, 1]], 1, None);
    assert_eq!(h3, [(1, SimTime(6 * t.hop_ns + 3_000))]);
}

#[test]
fn a_zero_service_time_answers_every_smp_at_once() {
    let t = ibsm_sim::fabric::Timing::default().with_sma_ns(0);
    assert_eq!((t.switch_sma_ns, t.ca_sma_ns), (0, 0));
    let got = burst(t, 1, &[&[1]], 20, None);
    assert_eq!(got.len(), 20);
    assert!(got.iter().all(|g| g.1 == SimTime(2 * t.hop_ns)), "no service time, no queue: {got:?}");
}

#[test]
fn sma_queueing_is_deterministic_for_a_seed() {
    // Jitter on every cable makes arrivals (and so the queue order) depend on the seed.
    let jitter = Some(LinkRule::global_delay(0, 30_000));
    let t = ibsm_sim::fabric::Timing::default();
    let a = burst(t, 5, &[&[1], &[1, 3], &[1, 3, 2]], 8, jitter);
    assert_eq!(a.len(), 24);
    assert_eq!(a, burst(t, 5, &[&[1], &[1, 3], &[1, 3, 2]], 8, jitter), "same seed, same answers at the same times");
    assert_ne!(a, burst(t, 6, &[&[1], &[1, 3], &[1, 3, 2]], 8, jitter), "another seed, other times");
}

#[test]
fn smps_queued_at_an_sma_are_lost_when_the_node_restarts() {
    let topo = Topology::parse_str(NET, "test.net").expect("parses");
    let mut f = Fabric::new(&topo, SimConfig::default());
    let sm = f.attach(topo.find("H1").expect("H1"), 1).expect("attach");
    let p = DrPath::new(&[1, 3]).expect("path");
    for tid in 1..=5 {
        f.send(
            sm,
            &SmpRepr::get_dr(&p, ids::attr::NODE_INFO, 0, tid).to_bytes(),
            Dest { dlid: Lid::PERMISSIVE, qpn: 0 },
        );
    }
    // S2 has served two SMPs when it crashes; it is back before it would have served the rest.
    let s2 = topo.find("S2").expect("S2");
    f.schedule(SimTime(25_000), Fault::Crash(s2));
    f.schedule(SimTime(26_000), Fault::Restart(s2));
    f.run_until_idle(SimTime(1_000_000_000));
    let answers = std::iter::from_fn(|| f.recv(sm))
        .filter(|r| Mad::new_unchecked(&r.mad[..]).method().is_response())
        .map(|r| Mad::new_unchecked(&r.mad[..]).tid() & 0xffff_ffff)
        .collect::<Vec<_>>();
    assert_eq!(answers, [1, 2]);
    assert_eq!(f.stats().dropped_unreachable, 3);
}

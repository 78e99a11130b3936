use ibsm_mad::attrs::{
    CapabilityMask, CapabilityMask2, LinkSpeedExtMask, LinkSpeedMask, LinkWidthMask, NodeType, PortInfo, PortState,
};
use ibsm_mad::{Guid, PortNum};

use super::{Peer, PortConfig, PortSettings, Target};

const EXT: CapabilityMask = CapabilityMask::IS_EXTENDED_SPEEDS_SUPPORTED;

fn target(node_type: NodeType, port: u8, peer: Option<bool>) -> Target {
    Target {
        node_type,
        port: PortNum(port),
        enhanced_port0: false,
        caps: EXT,
        caps2: CapabilityMask2(0),
        peer: peer.map(|is_switch| Peer { is_switch, caps: EXT }),
    }
}

/// A port as the simulated and ibsim's ports power on: HOQ 0, VL stall 7, no thresholds,
/// enabled sets equal to the supported ones.
fn fresh() -> PortInfo {
    PortInfo {
        vl_stall_count: 7,
        link_width_enabled: LinkWidthMask(3),
        link_width_supported: LinkWidthMask(3),
        link_speed_enabled: LinkSpeedMask(7),
        link_speed_supported: LinkSpeedMask(7),
        link_speed_ext_enabled: LinkSpeedExtMask(3),
        link_speed_ext_supported: LinkSpeedExtMask(3),
        ..PortInfo::default()
    }
}

fn custom() -> PortConfig {
    PortConfig {
        hoq_life: 0x13,
        leaf_hoq_life: 0x0e,
        vl_stall_count: 3,
        leaf_vl_stall_count: 5,
        local_phy_errors: 4,
        overrun_errors: 6,
        ..PortConfig::default()
    }
}

fn applied(cfg: &PortConfig, t: &Target, info: PortInfo) -> PortInfo {
    let mut out = info;
    PortSettings::default().apply(cfg, t, Guid(1), &mut out);
    out
}

#[test]
fn each_kind_of_port_gets_opensms_values() {
    let cfg = custom();
    // Switch port toward a switch: the inner HOQ and stall count, the thresholds.
    let inner = applied(&cfg, &target(NodeType::Switch, 3, Some(true)), fresh());
    assert_eq!((inner.hoq_life, inner.vl_stall_count, inner.local_phy_errors, inner.overrun_errors), (0x13, 3, 4, 6));
    // Switch port toward a CA: the leaf values.
    let leaf = applied(&cfg, &target(NodeType::Switch, 1, Some(false)), fresh());
    assert_eq!((leaf.hoq_life, leaf.vl_stall_count, leaf.local_phy_errors), (0x0e, 5, 4));
    // CA port: thresholds only.
    let ca = applied(&cfg, &target(NodeType::Ca, 1, Some(true)), fresh());
    assert_eq!((ca.hoq_life, ca.vl_stall_count, ca.local_phy_errors, ca.overrun_errors), (0, 7, 4, 6));
    // Router port: the leaf HOQ, no stall count.
    let router = applied(&cfg, &target(NodeType::Router, 1, Some(true)), fresh());
    assert_eq!((router.hoq_life, router.vl_stall_count, router.local_phy_errors), (0x0e, 7, 4));
    // A switch port without a peer, and a base switch port 0: nothing.
    assert_eq!(applied(&cfg, &target(NodeType::Switch, 2, None), fresh()), fresh());
    assert_eq!(applied(&cfg, &target(NodeType::Switch, 0, None), fresh()), fresh());
    // An enhanced port 0: the thresholds, no HOQ (it has no cable).
    let mut esp0 = target(NodeType::Switch, 0, None);
    esp0.enhanced_port0 = true;
    let enhanced = applied(&cfg, &esp0, fresh());
    assert_eq!((enhanced.hoq_life, enhanced.local_phy_errors, enhanced.overrun_errors), (0, 4, 6));
}

#[test]
fn the_defaults_change_nothing_on_a_port_that_has_them_and_write_supported_sets_only_when_they_differ() {
    let cfg = PortConfig::default();
    let t = target(NodeType::Switch, 3, Some(true));
    let mut has = fresh();
    (has.hoq_life, has.local_phy_errors, has.overrun_errors) = (0x12, 8, 8);
    assert_eq!(applied(&cfg, &t, has), has, "nothing to write: no Set");
    // Enabled narrower than supported: OpenSM's 255 / 15 / 31 ("as supported") are written.
    let mut narrow = has;
    narrow.link_width_supported = LinkWidthMask(0x0b);
    narrow.link_speed_supported = LinkSpeedMask(0x0f);
    narrow.link_speed_ext_supported = LinkSpeedExtMask(0x0f);
    let w = applied(&cfg, &t, narrow);
    // 255 is above 2X (16): OpenSM writes it only to ports that advertise 2X.
    assert_eq!(w.link_width_enabled, LinkWidthMask(3));
    let mut t2x = t;
    t2x.caps2 = CapabilityMask2::IS_LINK_WIDTH_2X_SUPPORTED;
    assert_eq!(applied(&cfg, &t2x, narrow).link_width_enabled, LinkWidthMask::SET_TO_SUPPORTED);
    assert_eq!(w.link_speed_enabled, LinkSpeedMask::SET_TO_SUPPORTED);
    assert_eq!(w.link_speed_ext_enabled, LinkSpeedExtMask::SET_TO_SUPPORTED);
}

#[test]
fn forced_speeds_and_widths_follow_opensms_conditions() {
    let cfg =
        PortConfig { force_link_speed: 1, force_link_speed_ext: 30, force_link_width: 2, ..PortConfig::default() };
    let t = target(NodeType::Ca, 1, Some(true));
    let f = applied(&cfg, &t, fresh());
    assert_eq!((f.link_speed_enabled.0, f.link_speed_ext_enabled.0, f.link_width_enabled.0), (1, 30, 2));
    // Extended speeds only where both ends have them.
    let mut one_sided = t;
    one_sided.peer = Some(Peer { is_switch: true, caps: CapabilityMask(0) });
    assert_eq!(applied(&cfg, &one_sided, fresh()).link_speed_ext_enabled.0, 3);
    // A width with 2X in it only on a port that advertises 2X.
    let two_x = PortConfig { force_link_width: 0x12, ..PortConfig::default() };
    assert_eq!(applied(&two_x, &t, fresh()).link_width_enabled.0, 3, "no 2X support: left");
    let mut with_2x = t;
    with_2x.caps2 = CapabilityMask2::IS_LINK_WIDTH_2X_SUPPORTED;
    assert_eq!(applied(&two_x, &with_2x, fresh()).link_width_enabled.0, 0x12);
    // 0: left alone.
    let zero =
        PortConfig { force_link_speed: 0, force_link_speed_ext: 0, force_link_width: 0, ..PortConfig::default() };
    let mut narrow = fresh();
    narrow.link_width_supported = LinkWidthMask(0x0b);
    let z = applied(&zero, &t, narrow);
    assert_eq!((z.link_width_enabled.0, z.link_speed_enabled.0, z.link_speed_ext_enabled.0), (3, 7, 3));
}

#[test]
fn max_op_vls_caps_the_smaller_vl_cap() {
    let cfg = PortConfig { max_op_vls: 2, ..PortConfig::default() };
    assert_eq!(cfg.op_vls(4, 3), Some(2));
    assert_eq!(cfg.op_vls(1, 4), Some(1));
    assert_eq!(PortConfig::default().op_vls(4, 3), Some(3));
    assert_eq!(PortConfig::default().op_vls(0, 3), None, "a non-compliant VLCap: left as read");
    // An enhanced switch port 0: what it holds, within max-op-vls (0 read as VL0).
    assert_eq!((cfg.port0_op_vls(4), cfg.port0_op_vls(1), cfg.port0_op_vls(0)), (2, 1, 1));
    assert_eq!(PortConfig::default().port0_op_vls(4), 4);
}

#[test]
fn a_port_that_does_not_keep_a_setting_is_not_sent_it_again() {
    let cfg = PortConfig::default();
    let t = target(NodeType::Switch, 3, Some(true));
    let mut s = PortSettings::default();
    let mut sent = fresh();
    s.apply(&cfg, &t, Guid(9), &mut sent);
    assert_eq!((sent.hoq_life, sent.local_phy_errors), (0x12, 8));
    // The answer: HOQ kept, the thresholds not (as ibsim's ports answer).
    let got = PortInfo { local_phy_errors: 0, overrun_errors: 0, ..sent };
    assert_eq!(s.learn(&cfg, &t, Guid(9), &sent, &got), vec!["error thresholds"]);
    assert_eq!(s.learn(&cfg, &t, Guid(9), &sent, &got), Vec::<&str>::new(), "reported once");
    let found = s.take_found();
    assert_eq!(found, vec![(Guid(9), t.port, vec!["error thresholds"])], "kept for the sweep's summary, once");
    assert!(s.take_found().is_empty(), "handed over once");
    let mut again = got;
    s.apply(&cfg, &t, Guid(9), &mut again);
    assert_eq!(again, got, "nothing left to write: no Set at the next sweep");
    // Another port, or another port of the node, still gets them.
    let mut other = fresh();
    s.apply(&cfg, &t, Guid(10), &mut other);
    assert_eq!(other.local_phy_errors, 8);
    // A Set that did not carry the settings (an M_Key Set) teaches nothing.
    let mut t2 = s;
    t2.forget();
    assert_eq!(t2.learn(&cfg, &t, Guid(9), &fresh(), &fresh()), Vec::<&str>::new());
    assert_eq!(t2.unkept_ports(), 0);
}

#[test]
fn a_ca_ports_new_mtu_or_vls_bounce_its_link_and_nothing_else_does() {
    let s = PortSettings::default();
    let read = PortInfo { operational_vls: 4, neighbor_mtu: ibsm_mad::attrs::Mtu::from_raw(5), ..fresh() };
    let vls = PortInfo { operational_vls: 2, ..read };
    let mtu = PortInfo { neighbor_mtu: ibsm_mad::attrs::Mtu::from_raw(4), ..read };
    let ca = target(NodeType::Ca, 1, Some(true));
    assert!(s.bounces(&ca, Guid(1), &read, &vls) && s.bounces(&ca, Guid(1), &read, &mtu));
    assert!(s.bounces(&target(NodeType::Router, 2, Some(true)), Guid(1), &read, &vls), "a router port too");
    assert!(!s.bounces(&ca, Guid(1), &read, &read), "nothing changes");
    // Other fields change without a bounce.
    assert!(!s.bounces(&ca, Guid(1), &read, &PortInfo { hoq_life: 3, ..read }));
    // Switch ports (linked or port 0) and a port with no discovered peer are not bounced.
    assert!(!s.bounces(&target(NodeType::Switch, 3, Some(false)), Guid(1), &read, &vls));
    assert!(!s.bounces(&target(NodeType::Switch, 0, None), Guid(1), &read, &vls));
    assert!(!s.bounces(&target(NodeType::Ca, 1, None), Guid(1), &read, &vls));
}

#[test]
fn a_port_that_does_not_keep_its_link_values_after_a_bounce_is_not_bounced_again() {
    let cfg = PortConfig::default();
    let ca = target(NodeType::Ca, 1, Some(true));
    let mut s = PortSettings::default();
    let read = PortInfo { operational_vls: 4, neighbor_mtu: ibsm_mad::attrs::Mtu::from_raw(4), ..fresh() };
    let mut want = PortInfo { neighbor_mtu: ibsm_mad::attrs::Mtu::from_raw(3), ..read };
    s.apply(&cfg, &ca, Guid(7), &mut want);
    assert!(s.bounces(&ca, Guid(7), &read, &want));
    let sent = PortInfo { port_state: PortState::Down, ..want };
    // Kept (the answer holds what was sent, the link back in Init): nothing learnt.
    let kept = PortInfo { port_state: PortState::Init, ..want };
    assert!(s.learn(&cfg, &ca, Guid(7), &sent, &kept).is_empty());
    assert!(s.bounces(&ca, Guid(7), &read, &want), "still bounced while it keeps them");
    // Not kept (ibsim keeps no NeighborMTU): reported once, and no bounce from then on.
    let lost = PortInfo { port_state: PortState::Init, neighbor_mtu: read.neighbor_mtu, ..want };
    assert_eq!(s.learn(&cfg, &ca, Guid(7), &sent, &lost), vec!["neighbor MTU and operational VLs after a link bounce"]);
    assert!(!s.bounces(&ca, Guid(7), &read, &want));
    assert!(s.bounces(&ca, Guid(8), &read, &want), "another node is");
    // A Set without PortState Down teaches nothing of the link values.
    let mut t = PortSettings::default();
    assert!(t.learn(&cfg, &ca, Guid(7), &want, &lost).is_empty());
    // A config change tries again.
    s.forget();
    assert!(s.bounces(&ca, Guid(7), &read, &want));
}

#[test]
fn an_answer_that_holds_what_was_sent_teaches_nothing_and_skips_the_target() {
    let cfg = PortConfig::default();
    let t = target(NodeType::Switch, 3, Some(true));
    let mut sent = fresh();
    PortSettings::default().apply(&cfg, &t, Guid(9), &mut sent);
    // The arming and activation Sets: the port's answer with only its state changed.
    let armed = PortInfo { port_state: PortState::Armed, ..sent };
    assert!(!PortSettings::may_learn(&sent, &armed));
    // The answers learn judges: a field not kept, and any bounce.
    assert!(PortSettings::may_learn(&sent, &PortInfo { local_phy_errors: 0, ..sent }));
    assert!(PortSettings::may_learn(&PortInfo { port_state: PortState::Down, ..sent }, &sent));
    // 255 (set to supported) sent, the supported set answered: judged.
    let to_supported = PortInfo { link_width_enabled: LinkWidthMask::SET_TO_SUPPORTED, ..fresh() };
    assert!(PortSettings::may_learn(&to_supported, &fresh()));

    // Wherever may_learn says no, learn finds nothing: every field the settings read or write
    // varied on its own, in the Set and in the answer, for each kind of port.
    let variants = |base: PortInfo| {
        let mut out = vec![base];
        for v in [0u8, 3, 8, 0x10, 0x12] {
            out.push(PortInfo { hoq_life: v, ..base });
            out.push(PortInfo { vl_stall_count: v, ..base });
            out.push(PortInfo { local_phy_errors: v, ..base });
            out.push(PortInfo { overrun_errors: v, ..base });
        }
        for v in [1u8, 2, 3, 255] {
            out.push(PortInfo { link_width_enabled: LinkWidthMask(v), ..base });
            out.push(PortInfo { link_width_supported: LinkWidthMask(v), ..base });
        }
        for v in [1u8, 7, 15] {
            out.push(PortInfo { link_speed_enabled: LinkSpeedMask(v), ..base });
            out.push(PortInfo { link_speed_supported: LinkSpeedMask(v), ..base });
        }
        for v in [0u8, 1, 3, 31] {
            out.push(PortInfo { link_speed_ext_enabled: LinkSpeedExtMask(v), ..base });
            out.push(PortInfo { link_speed_ext_supported: LinkSpeedExtMask(v), ..base });
        }
        out
    };
    let kinds = [
        target(NodeType::Switch, 3, Some(true)),
        target(NodeType::Switch, 3, Some(false)),
        target(NodeType::Ca, 1, Some(true)),
        target(NodeType::Router, 2, Some(true)),
    ];
    let mut skipped = 0;
    for cfg in [PortConfig::default(), custom()] {
        for t in &kinds {
            for sent in variants(sent) {
                let states = [PortState::Init, PortState::Armed, PortState::Active];
                for got in variants(sent).into_iter().chain(states.map(|s| PortInfo { port_state: s, ..sent })) {
                    if PortSettings::may_learn(&sent, &got) {
                        continue;
                    }
                    skipped += 1;
                    let mut s = PortSettings::default();
                    assert!(s.learn(&cfg, t, Guid(9), &sent, &got).is_empty(), "{t:?} sent {sent:?} got {got:?}");
                    assert_eq!(s.unkept_ports(), 0);
                }
            }
        }
    }
    assert!(skipped > 100, "the shortcut was exercised ({skipped})");
}

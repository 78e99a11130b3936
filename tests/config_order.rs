//! The configuration's send order: a bring-up's first configuration SMPs go out before its
//! P_Key (and QoS) table Sets are built. The port and switch Sets are queued by the
//! configuration step; the tables are built once the window has taken the first of them
//! (under ibsim that build no longer leaves the fabric with nothing in flight). What the fabric
//! sees keeps its order: every port and switch Set of the configuration before the first table
//! Set, the same tables written, every port Active.

mod support;

use ibsm::core::{ComputeStep, Guid2Lid, Sm, SmConfig, SweepPhase};
use ibsm::transport::sim::SimDriver;
use ibsm_topology::{GenSpec, Topology};
use support::by_hand;

const SEED: u64 = 5;
const SET: u8 = 0x02;
const PORT_INFO: u16 = 0x0015;
const SWITCH_INFO: u16 = 0x0012;
const PKEY_TABLE: u16 = 0x0016;

/// (method, attribute) of an SMP the SM sent.
fn kind(bytes: &[u8]) -> (u8, u16) {
    (bytes[3], u16::from_be_bytes([bytes[16], bytes[17]]))
}

/// Runs the compute steps due, and a routing job offered (on this thread, at once).
fn compute(drv: &mut SimDriver) {
    let mut ran = None;
    loop {
        let now = drv.now();
        if let Some(job) = drv.sm.take_route_job() {
            drv.sm.finish_route(job.run(), now);
            ran = None;
            continue;
        }
        // A step left waiting with no job to take: nothing more to do now.
        let Some(step) = drv.sm.poll_compute().filter(|&s| ran != Some(s)) else { return };
        drv.sm.handle_compute(&mut || now);
        ran = Some(step);
    }
}

/// One step by hand: the compute steps, the SM's MADs out (recorded), the fabric to its next
/// event or the SM's next timer, the MADs in, the timers. False when nothing is left to happen.
fn step(drv: &mut SimDriver, sent: &mut Vec<(u8, u16)>) -> bool {
    compute(drv);
    by_hand::send_all(drv, |bytes| sent.push(kind(bytes)));
    by_hand::to_next_event(drv)
}

#[test]
fn the_first_port_sets_go_before_the_tables_are_built_and_the_order_is_kept() {
    let topo: Topology = GenSpec::fat_tree(3, 8).generate().expect("generates");
    let cfg = SmConfig::default();
    let window = cfg.max_smps_in_flight;
    let mut drv = SimDriver::new(&topo, SEED, Sm::new(cfg, Guid2Lid::default()), None).expect("attach");
    let now = drv.now();
    drv.sm.start_sweep(now);
    let mut sent = Vec::new();
    // Up to the configuration step (discovery answered, LIDs assigned), where the early
    // route's job is offered before the configuration is built.
    while drv.sm.poll_compute() != Some(ComputeStep::Configure) {
        if drv.sm.poll_compute() == Some(ComputeStep::AssignLids) {
            let now = drv.now();
            drv.sm.handle_compute(&mut || now);
            continue;
        }
        assert!(step(&mut drv, &mut sent), "stopped in {:?} before the configuration", drv.sm.phase());
    }
    let discovery = sent.len();
    let blocks_before = drv.sm.pkey_blocks_sent();
    let job = drv.sm.take_route_job().expect("the early route offered");

    // The configuration built: its first window goes out, port and switch Sets only.
    let now = drv.now();
    drv.sm.handle_compute(&mut || now);
    assert_eq!(drv.sm.phase(), SweepPhase::ConfiguringPorts);
    assert!(drv.sm.pkey_layout().is_empty(), "no P_Key table laid out before the first Set goes");
    by_hand::send_all(&mut drv, |bytes| sent.push(kind(bytes)));
    assert!(!drv.sm.pkey_layout().is_empty(), "the tables laid out once the window is full");
    drv.sm.finish_route(job.run(), now);
    let first = &sent[discovery..];
    assert_eq!(first.len(), window, "a full window of the configuration at once");
    assert!(
        first.iter().all(|&(m, a)| m == SET && (a == PORT_INFO || a == SWITCH_INFO)),
        "the first window holds port and switch Sets only: {first:x?}"
    );

    // The rest of the bring-up, recorded.
    while drv.sm.phase() != SweepPhase::Up || drv.sm.last_report().is_none() {
        assert!(step(&mut drv, &mut sent), "stopped in {:?}", drv.sm.phase());
    }
    let report = drv.sm.last_report().expect("a report").clone();
    assert!(report.complete, "{report:?}");
    assert_eq!(report.ports_not_active, 0, "{report:?}");
    let config = &sent[discovery..];
    let tables: Vec<usize> = (0..config.len()).filter(|&i| config[i] == (SET, PKEY_TABLE)).collect();
    let first_table = *tables.first().expect("P_Key tables written");
    // Port Sets of the configuration: those before the first LFT block (the arming and
    // activation Sets come after the tables).
    let first_lft = config.iter().position(|&(m, a)| m == SET && a == 0x0019).expect("LFT blocks written");
    let last_port_set = (0..first_lft)
        .filter(|&i| config[i].0 == SET && (config[i].1 == PORT_INFO || config[i].1 == SWITCH_INFO))
        .max()
        .expect("port Sets");
    assert!(last_port_set < first_table, "every port and switch Set before the first table Set");
    assert!(tables.iter().all(|&i| i < first_lft), "the tables within the configuration");
    let written = drv.sm.pkey_blocks_sent() - blocks_before;
    assert_eq!(written, u64::try_from(tables.len()).expect("fits"), "each table Set sent once, and counted");
    // Every CA port and the switches' port 0 hold a table; every CA-facing switch port too.
    let cas = topo.nodes.iter().filter(|n| n.kind == ibsm_topology::NodeKind::Ca).count();
    assert!(tables.len() >= 2 * cas, "{} tables for {cas} CAs", tables.len());
}

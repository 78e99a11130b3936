//! Failover on the simulated fabric: a master and a standby on a generated fat tree, the master
//! killed, the standby master with the subnet up. Criterion measures the wall time of the
//! takeover (from the kill to the new master's subnet-up report); the virtual time the fabric
//! saw (the figure the failover target is about: death to SA answering) and the LFT blocks the
//! takeover wrote are printed once per fabric, with the CPU time of that takeover on this
//! thread (the SM and the simulator, which share it): the figure to read on a loaded machine,
//! where wall time is stretched by others. `IBSM_BENCH_K48=1` adds the 27,648-HCA tree.

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use ibsm::core::lids::Guid2Lid;
use ibsm::core::{Sm, SmConfig, SmEvent, SmState, SubnetReport};
use ibsm::transport::sim::SimSms;
use ibsm_topology::{GenSpec, NodeKind, Topology};

/// A master (priority 9) and a standby (5) on the first two hosts, settled.
fn pair(topo: &Topology) -> SimSms {
    let hosts: Vec<(usize, u8)> =
        (0..topo.nodes.len()).filter(|&i| topo.nodes[i].kind == NodeKind::Ca).take(2).map(|i| (i, 1)).collect();
    let sms = [9, 5]
        .iter()
        .zip(&hosts)
        .map(|(&p, &at)| (Sm::new(SmConfig { priority: p, ..SmConfig::default() }, Guid2Lid::default()), at))
        .collect();
    let mut h = SimSms::new(topo, 1, sms).expect("attach");
    h.start(0);
    h.run_until(600_000_000_000, |i, e| i == 0 && matches!(e, SmEvent::SubnetUp(_)));
    h.start(1);
    h.run_until(h.now() + 600_000_000_000, |i, e| i == 1 && matches!(e, SmEvent::Standby { .. }));
    assert_eq!((h.sms[0].sm.state(), h.sms[1].sm.state()), (SmState::Master, SmState::Standby));
    // The master learns of its standby from its first poll and syncs it.
    let stood_by = h.now();
    let current = h
        .run_until(h.now() + 600_000_000_000, |i, e| i == 0 && matches!(e, SmEvent::SyncPeer { state: "current", .. }));
    assert!(current.is_some(), "the standby was never current");
    let s = h.sms[0].sm.sync_status();
    SYNC.with(|c| c.set((h.now() - stood_by, s.messages)));
    h
}

thread_local! {
    /// Virtual ns from standing by to current, and the sync messages it took (last pair).
    static SYNC: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// Kills the master and runs to the standby's subnet-up: (virtual ns from the kill, report).
fn take_over(mut h: SimSms) -> (u64, SubnetReport) {
    let died = h.now();
    h.kill(0);
    let up = h.run_until(died + 600_000_000_000, |i, e| i == 1 && matches!(e, SmEvent::SubnetUp(r) if r.complete));
    match up {
        Some((_, SmEvent::SubnetUp(r))) => (h.now() - died, r),
        other => panic!("no takeover: {other:?}"),
    }
}

/// CPU time this thread has used, ns (the scheduler's account, `/proc/thread-self/schedstat`;
/// 0 where there is none).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

fn failover(c: &mut Criterion) {
    let mut g = c.benchmark_group("failover");
    g.sample_size(10);
    let mut fabrics = vec![("k8-3level", GenSpec::fat_tree(3, 8)), ("k24-3level", GenSpec::fat_tree(3, 24))];
    if std::env::var_os("IBSM_BENCH_K48").is_some() {
        fabrics.push(("k48-3level", GenSpec::fat_tree(3, 48)));
    }
    for (name, spec) in fabrics {
        let topo = spec.generate().expect("generates");
        let h = pair(&topo);
        let (sync_ns, messages) = SYNC.with(std::cell::Cell::get);
        eprintln!(
            "{name}: standby current {:.3} s (virtual) after it stood by, {messages} sync messages",
            sync_ns as f64 / 1e9
        );
        let cpu0 = thread_cpu_ns();
        let (ns, r) = take_over(h);
        let cpu = thread_cpu_ns().saturating_sub(cpu0);
        eprintln!(
            "{name}: {} CAs: master again {:.3} s (virtual) after the kill, {:.3} s of CPU (SM and simulator); takeover sweep {} SMPs, {} LFT blocks written, {} unchanged",
            r.cas,
            ns as f64 / 1e9,
            cpu as f64 / 1e9,
            r.smps_sent,
            r.lft_blocks_sent,
            r.lft_blocks_unchanged
        );
        g.bench_function(name, |b| b.iter_batched(|| pair(&topo), take_over, BatchSize::LargeInput));
    }
    g.finish();
}

criterion_group!(benches, failover);
criterion_main!(benches);

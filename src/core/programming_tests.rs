//! Tests of [`super::Programming`]: plans, held tables, read-backs and digests.

use ibsm_mad::attrs::SwitchInfo;
use ibsm_mad::{Lid, PortNum};

use super::*;
use crate::core::testing::star;

/// The star, its switch holding LIDs up to `top`, with a LID on every end port.
fn fabric(top: u16) -> Subnet {
    let mut s = star(0x102, 0x103);
    s.nodes[1].switch_info =
        Some(SwitchInfo { linear_fdb_top: Lid(top), linear_fdb_cap: 1024, ..SwitchInfo::default() });
    for (n, p, lid) in [(0, 1, 1), (1, 0, 2), (2, 1, 3), (3, 1, 4)] {
        s.nodes[n].ports[p].lid = Lid(lid);
    }
    s
}

/// A plan with its Sets made.
struct Made {
    sets: Vec<Request>,
    unchanged: u64,
}

fn plan_of(plan: LftPlan) -> Made {
    Made { sets: plan.sets.collect(), unchanged: plan.unchanged }
}

fn blocks(reqs: &[Request]) -> Vec<u32> {
    reqs.iter()
        .map(|r| match r.req {
            Req::GetLft { block, .. } | Req::SetLft { block, .. } => block,
            _ => u32::MAX,
        })
        .collect()
}

#[test]
fn a_switch_whose_table_is_unknown_is_read_back_and_its_blocks_are_kept() {
    let s = fabric(100);
    let mut p = Programming::default();
    p.switch_info_read(&s, 1);
    assert_eq!(blocks(&p.take_read_backs()), [0, 1], "LIDs 0..=100: two blocks");
    assert!(p.take_read_backs().is_empty(), "queued once");
    let mut t = LinearForwardingTable::unrouted();
    t.ports[3] = PortNum(2);
    p.lft_read(Guid(0x20), 0, t);
    p.lft_read(Guid(0x99), 0, t);
    assert_eq!(p.held_lfts(), 1, "only switches being read back are kept");
    let lft = p.programmed_lft(Guid(0x20)).expect("known");
    assert_eq!(lft.top(), 100);
    assert_eq!(lft.entry(3), Some(PortNum(2)));
    assert_eq!(lft.entry(70), ibsm_routing::Lft::unrouted(100).entry(70), "block 1 unknown: unrouted");
    // The same top again: trusted. Another master on it: read back.
    p.switch_info_read(&s, 1);
    assert!(p.take_read_backs().is_empty());
    p.distrust(&s, 1, Lid(9));
    assert_eq!(blocks(&p.take_read_backs()), [0, 1]);
    // A switch that holds nothing is not read.
    p.switch_info_read(&fabric(0), 1);
    assert!(p.take_read_backs().is_empty());
    assert_eq!(p.held_lfts(), 0);
    p.distrust(&s, 1, Lid(9));
    assert!(p.take_read_backs().is_empty(), "nothing believed, nothing to distrust");
}

#[test]
fn only_blocks_that_differ_from_what_a_switch_holds_are_written() {
    let mut s = fabric(4);
    let minhop = vec!["minhop".to_owned()];
    let mut routing = super::super::lft::Routing::default();
    let job = routing.job(&s, 0, (&minhop, &ibsm_routing::EngineOptions::default()), 1, &[]).0;
    routing.apply(job.run(), true, &minhop);
    let (switches, routes) = routing.routes().expect("routed");
    let mut p = Programming::default();
    let plan = plan_of(p.lft_sets(&s, switches, routes));
    assert_eq!((blocks(&plan.sets), plan.unchanged), (vec![0], 0));
    for r in &plan.sets {
        let Req::SetLft { block, table, .. } = &r.req else { continue };
        let mut data = [0u8; 64];
        table.block(*block).emit(&mut data);
        p.lft_written(&s.nodes[1], *block, &data);
    }
    let plan = plan_of(p.lft_sets(&s, switches, routes));
    assert_eq!((plan.sets.len(), plan.unchanged), (0, 1));
    assert_eq!(p.programmed_lft(Guid(0x20)).and_then(|l| l.entry(3)), Some(PortNum(2)));
    // The same table again is not compared (it is known whole), but a block written or
    // read since makes it compared again.
    let plan = plan_of(p.lft_sets(&s, switches, routes));
    assert_eq!((plan.sets.len(), plan.unchanged), (0, 1));
    let mut other = block_of(&routes.tables[0], 0);
    other.ports[3] = PortNum(1);
    let mut data = [0u8; 64];
    other.emit(&mut data);
    p.lft_written(&s.nodes[1], 0, &data);
    let plan = plan_of(p.lft_sets(&s, switches, routes));
    assert_eq!((blocks(&plan.sets), plan.unchanged), (vec![0], 0), "a block written since is compared");
    // A switch that did not answer this sweep keeps what it holds.
    s.nodes[1].carried = true;
    let plan = plan_of(p.lft_sets(&s, switches, routes));
    assert_eq!((plan.sets.len(), plan.unchanged), (0, 0));
    p.mft_written();
    assert_eq!(p.mft_blocks_sent(), 1);
}

/// Two switches with tables of three blocks (LIDs 0..=150) and one (LIDs 0..=10): the
/// subnet (switch nodes 1, 4 and 5) and the tables.
fn three_switches() -> (Subnet, Routes) {
    let mk = |top: u16, port: u8| {
        let mut t = Lft::unrouted(top);
        for p in t.entries_mut() {
            *p = PortNum(port);
        }
        t
    };
    let routes = Routes { tables: [mk(150, 1), mk(10, 2), mk(150, 3)].into_iter().map(std::sync::Arc::new).collect() };
    let mut s = fabric(150);
    let first = s.nodes[1].clone();
    for guid in [0x21, 0x22] {
        let mut n = first.clone();
        n.info.node_guid = Guid(guid);
        s.nodes.push(n);
    }
    (s, routes)
}

/// Block `block` of `t` as the bytes of a Set.
fn emitted(t: &Lft, block: u32) -> [u8; 64] {
    let mut data = [0u8; 64];
    block_of(t, block).emit(&mut data);
    data
}

/// A programming component that knows switch node 1 of `s` holds `table` whole (a plan of
/// it written and every Set answered).
fn holding_whole(s: &Subnet, table: &std::sync::Arc<Lft>) -> Programming {
    let mut p = Programming::default();
    let routes = Routes { tables: vec![std::sync::Arc::clone(table)] };
    for r in plan_of(p.lft_sets(s, &[1], &routes)).sets {
        let Req::SetLft { block, .. } = r.req else { continue };
        p.lft_written(&s.nodes[1], block, &emitted(table, block));
    }
    assert_eq!(plan_of(p.lft_sets(s, &[1], &routes)).unchanged, 3, "held whole");
    p
}

#[test]
fn a_repair_delta_limits_the_comparison_to_the_blocks_of_its_lids() {
    let s = fabric(150);
    let old = std::sync::Arc::new(Lft::from(vec![PortNum(1); 151]));
    let mut new = (*old).clone();
    new.set(70, PortNum(2));
    new.set(140, PortNum(2));
    let routes = Routes { tables: vec![std::sync::Arc::new(new)] };
    let sent = |p: &mut Programming, delta: TableDelta| {
        let plan = plan_of(p.lft_sets_ranked(&s, &[1], &routes, None, Some(&[Some(delta)])));
        (blocks(&plan.sets), plan.unchanged)
    };
    // The delta of the table the switch holds: its blocks compared, the others taken as equal.
    let delta = TableDelta { from: std::sync::Arc::clone(&old), lids: vec![70, 140] };
    assert_eq!(sent(&mut holding_whole(&s, &old), delta), (vec![1, 2], 1));
    // Only the delta's blocks are looked at: one that left out LID 140 (never made so)
    // would not write block 2.
    let short = TableDelta { from: std::sync::Arc::clone(&old), lids: vec![70] };
    assert_eq!(sent(&mut holding_whole(&s, &old), short.clone()), (vec![1], 2));
    // A delta from another table than the one held (even an equal one) is not used.
    let equal = std::sync::Arc::new((*old).clone());
    let elsewhere = TableDelta { from: equal, lids: vec![70] };
    assert_eq!(sent(&mut holding_whole(&s, &old), elsewhere), (vec![1, 2], 1));
    // Nor when the switch is not known to hold a table whole.
    assert_eq!(sent(&mut Programming::default(), short), (vec![0, 1, 2], 0));
}

#[test]
fn a_write_rank_puts_the_lowest_ranked_switch_first() {
    let (s, routes) = three_switches();
    let mut p = Programming::default();
    p.lft_written(&s.nodes[1], 1, &emitted(&routes.tables[0], 1));
    p.lft_written(&s.nodes[5], 0, &emitted(&routes.tables[2], 0));
    // With a write rank (a layered repair's), the lowest-ranked switch goes first, each
    // switch's blocks in order, ties block by block.
    let plan = plan_of(p.lft_sets_ranked(&s, &[1, 4, 5], &routes, Some(&[1, 1, 0]), None));
    let ranked: Vec<(NodeIdx, u32)> = plan
        .sets
        .iter()
        .filter_map(|r| match &r.req {
            Req::SetLft { node, block, .. } => Some((*node, *block)),
            _ => None,
        })
        .collect();
    assert_eq!(ranked, [(5, 1), (5, 2), (1, 0), (4, 0), (1, 2)]);
}

#[test]
fn sets_go_block_by_block_within_groups_of_switches_group_after_group() {
    let (s, routes) = three_switches();
    let order = |spread: usize| -> Vec<(NodeIdx, u32)> {
        let plan = Programming::spread(spread).lft_sets_ranked(&s, &[1, 4, 5], &routes, None, None);
        plan.sets
            .map(|r| match r.req {
                Req::SetLft { node, block, .. } => (node, block),
                _ => (usize::MAX, u32::MAX),
            })
            .collect()
    };
    // Switch 4's table has one block, the others three.
    assert_eq!(order(3), [(1, 0), (4, 0), (5, 0), (1, 1), (5, 1), (1, 2), (5, 2)]);
    assert_eq!(order(crate::core::transactions::spread(64)), order(3));
    assert_eq!(order(0), order(3), "0: every switch in turn");
    // Two switches at a time: the first two block by block, then the third.
    assert_eq!(order(2), [(1, 0), (4, 0), (1, 1), (1, 2), (5, 0), (5, 1), (5, 2)]);
    assert_eq!(order(1), [(1, 0), (1, 1), (1, 2), (4, 0), (5, 0), (5, 1), (5, 2)]);
    assert_eq!(crate::core::transactions::spread(64), 256);
}

#[test]
fn sets_go_block_by_block_across_switches_and_only_where_a_block_differs() {
    let (s, routes) = three_switches();
    let switches = [1, 4, 5];
    let mut prog = Programming::default();
    // Switch 0x20 holds block 1 already, 0x22 holds block 0 and a block 2 that differs
    // only past LID 150 (where the table is unrouted).
    let emit = |t: &Lft, block: u32| {
        let mut data = [0u8; 64];
        block_of(t, block).emit(&mut data);
        data
    };
    prog.lft_written(&s.nodes[1], 1, &emit(&routes.tables[0], 1));
    prog.lft_written(&s.nodes[5], 0, &emit(&routes.tables[2], 0));
    let mut wrong = block_of(&routes.tables[2], 2);
    wrong.ports[63] = PortNum(3);
    let mut data = [0u8; 64];
    wrong.emit(&mut data);
    prog.lft_written(&s.nodes[5], 2, &data);
    let plan = plan_of(prog.lft_sets(&s, &switches, &routes));
    let sets: Vec<(NodeIdx, u32, PortNum)> = plan
        .sets
        .iter()
        .filter_map(|r| match &r.req {
            Req::SetLft { node, block, table } => Some((*node, *block, table.block(*block).ports[0])),
            _ => None,
        })
        .collect();
    let (a, b, c) = (PortNum(1), PortNum(2), PortNum(3));
    assert_eq!(sets, [(1, 0, a), (4, 0, b), (5, 1, c), (1, 2, a), (5, 2, c)]);
    assert_eq!(plan.unchanged, 2);
    // Past the table's end a block is unrouted.
    let Req::SetLft { table, block, .. } = &plan.sets[4].req else { panic!("a Set") };
    let table = table.block(*block);
    assert_eq!(table.ports[150 - 128], c);
    assert_eq!(table.ports[150 - 128 + 1], LinearForwardingTable::UNROUTED);
    // Switch 0x21 has one block: none past it.
    assert!(!sets.iter().any(|&(n, b, _)| n == 4 && b > 0));
}

/// Answers a planned Set as the switch would: the block written.
fn answer(p: &mut Programming, s: &Subnet, r: &Request) {
    let Req::SetLft { node, block, table } = &r.req else { panic!("a Set") };
    let mut data = [0u8; 64];
    table.block(*block).emit(&mut data);
    p.lft_written(&s.nodes[*node], *block, &data);
}

#[test]
fn a_switch_whose_planned_blocks_were_all_answered_holds_the_routing_table_itself() {
    let mut t = Lft::unrouted(150);
    t.entries_mut().fill(PortNum(1));
    let routes = Routes { tables: vec![Arc::new(t.clone())] };
    let s = fabric(150);
    let switches = [1];
    let mut p = Programming::default();
    let plan = plan_of(p.lft_sets(&s, &switches, &routes));
    assert_eq!(blocks(&plan.sets), [0, 1, 2]);
    // Block 0 answered twice (a retry), block 1 once, block 2 never (its Set failed).
    for i in [0, 0, 1] {
        answer(&mut p, &s, &plan.sets[i]);
    }
    let held = p.programmed_lft(Guid(0x20)).expect("held");
    assert!(!Arc::ptr_eq(&held, &routes.tables[0]), "not whole with a block unanswered");
    let plan = plan_of(p.lft_sets(&s, &switches, &routes));
    assert_eq!((blocks(&plan.sets), plan.unchanged), (vec![2], 2));
    answer(&mut p, &s, &plan.sets[0]);
    let held = p.programmed_lft(Guid(0x20)).expect("held");
    assert!(Arc::ptr_eq(&held, &routes.tables[0]), "the routing table itself, not a copy");
    assert_eq!(p.held(Guid(0x20)).map(|h| h.blocks.len()), Some(0), "no blocks kept beside it");
    let plan = plan_of(p.lft_sets(&s, &switches, &routes));
    assert_eq!((plan.sets.len(), plan.unchanged), (0, 3));
    // Another table, one block different: compared against the whole table, that block.
    t.set(70, PortNum(2));
    let routes2 = Routes { tables: vec![Arc::new(t)] };
    let plan = plan_of(p.lft_sets(&s, &switches, &routes2));
    assert_eq!((blocks(&plan.sets), plan.unchanged), (vec![1], 2));
    // Something else written to the switch before the answer ends the count.
    let mut other = block_of(&routes2.tables[0], 0);
    other.ports[5] = PortNum(3);
    let mut data = [0u8; 64];
    other.emit(&mut data);
    p.lft_written(&s.nodes[1], 0, &data);
    answer(&mut p, &s, &plan.sets[0]);
    let held = p.programmed_lft(Guid(0x20)).expect("held");
    assert!(!Arc::ptr_eq(&held, &routes2.tables[0]));
    assert_eq!(held.entry(5), Some(PortNum(3)), "what was written last");
    assert_eq!(held.entry(70), Some(PortNum(2)));
}

#[test]
fn answered_blocks_are_known_by_the_plans_table_and_only_blocks_a_new_plan_changes_are_copied() {
    let mut t1 = Lft::unrouted(200);
    t1.entries_mut().fill(PortNum(1));
    let t1 = Arc::new(t1);
    let s = fabric(200);
    let switches = [1];
    let mut p = Programming::default();
    let plan = plan_of(p.lft_sets(&s, &switches, &Routes { tables: vec![Arc::clone(&t1)] }));
    assert_eq!(blocks(&plan.sets), [0, 1, 2, 3]);
    for i in [0, 2] {
        answer(&mut p, &s, &plan.sets[i]);
    }
    let copies = |p: &Programming| p.held(Guid(0x20)).map(|h| h.blocks.iter().flatten().count());
    assert_eq!(copies(&p), Some(0), "answered blocks are not copied");
    let held = p.programmed_lft(Guid(0x20)).expect("held");
    assert_eq!(
        (held.entry(5), held.entry(70), held.entry(130)),
        (Some(PortNum(1)), Some(Lft::UNROUTED), Some(PortNum(1)))
    );
    // Something else written to block 2: that block is the write, not the table's.
    let mut other = block_of(&t1, 2);
    other.ports[0] = PortNum(4);
    let mut data = [0u8; 64];
    other.emit(&mut data);
    p.lft_written(&s.nodes[1], 2, &data);
    assert_eq!(
        p.programmed_lft(Guid(0x20)).map(|l| (l.entry(128), l.entry(129))),
        Some((Some(PortNum(4)), Some(PortNum(1))))
    );
    // Written whole, then a table with block 1 changed: only block 1 of the old is copied.
    let plan = plan_of(p.lft_sets(&s, &switches, &Routes { tables: vec![Arc::clone(&t1)] }));
    for r in &plan.sets {
        answer(&mut p, &s, r);
    }
    assert!(p.programmed_lft(Guid(0x20)).is_some_and(|h| Arc::ptr_eq(&h, &t1)));
    let mut t2 = (*t1).clone();
    t2.set(70, PortNum(2));
    let routes2 = Routes { tables: vec![Arc::new(t2)] };
    let plan = plan_of(p.lft_sets(&s, &switches, &routes2));
    assert_eq!((blocks(&plan.sets), plan.unchanged), (vec![1], 3));
    assert_eq!(copies(&p), Some(1), "the block the plan changes, as the switch holds it until answered");
    assert_eq!(p.programmed_lft(Guid(0x20)).and_then(|l| l.entry(70)), Some(PortNum(1)));
    answer(&mut p, &s, &plan.sets[0]);
    assert!(p.programmed_lft(Guid(0x20)).is_some_and(|h| Arc::ptr_eq(&h, &routes2.tables[0])));
}

#[test]
fn digests_a_takeover_sweep_did_not_use_are_dropped_at_its_end() {
    let s = fabric(100);
    // Used by the sweep that reads the switch: nothing is read back.
    let mut p = Programming::default();
    p.adopt_digests([(Guid(0x20), 100, 7)], Some(Lid(1)));
    p.switch_info_read(&s, 1);
    assert!(p.take_read_backs().is_empty());
    // A switch the sweep did not reach is read back when found later.
    let mut p = Programming::default();
    p.adopt_digests([(Guid(0x20), 100, 7)], Some(Lid(1)));
    p.sweep_finished();
    p.switch_info_read(&s, 1);
    assert_eq!(blocks(&p.take_read_backs()), [0, 1], "read back, not vouched for");
}

#[test]
fn a_block_holds_the_tables_block_only_with_every_entry_equal_and_the_rest_unrouted() {
    // 100 entries: block 0 whole, block 1 of 36 entries (LIDs 64..99), the rest unrouted.
    let t = Lft::from((0..100u8).map(|i| PortNum(i % 7 + 1)).collect::<Vec<_>>());
    for b in 0..2u32 {
        let block = block_of(&t, b);
        assert!(holds(&block, &t, b), "block {b} as built");
        let n = t.block(b as usize).len();
        for i in [0, n / 2, n - 1, 63] {
            let mut other = block;
            other.ports[i] = PortNum(other.ports[i].0 ^ 0x10);
            assert!(!holds(&other, &t, b), "block {b}: entry {i} differs");
        }
    }
    assert!(!holds(&block_of(&t, 0), &t, 1), "another block's entries");
}

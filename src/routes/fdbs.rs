//! OpenSM's route dumps that people diff: `opensm.fdbs` (every switch's unicast route to every
//! LID, with its hop count and whether it is a shortest one) and `opensm.mcfdbs` (every
//! switch's multicast forwarding table), written by `ibsm routes dump --format fdbs|mcfdbs`.
//!
//! The layout, as OpenSM 3.3 writes it (`osm_dump.c`):
//! - fdbs, per switch: `dump_ucast_routes: Switch 0x<guid>`, the title line
//!   `LID    : Port : Hops : Optimal`, then for every LID from 1 to the highest in use one line
//!   `0x<LID> : ` (four upper-case hex digits) followed by `UNREACHABLE` (no port owns the LID,
//!   or the table has no route), `PPP  : HOPS UNKNOWN` (no switch path leaves by that port), or
//!   `PPP  : HH   : yes` / `PPP  : HH   : No N hop path possible via port Q!`.
//! - The hop count is that of the shortest path leaving by the routed port, over switches (each
//!   cable one hop), not of the path the tables take further on; towards a CA it is that of its
//!   switch plus one (0 plus one on the CA's own switch, whichever port is routed). A switch
//!   reaches its own LID by port 0 in 0 hops. "Optimal" compares it with the least over all
//!   ports. On a `No` line OpenSM names the port its own min-hop balancing would pick; ibsm
//!   names the lowest-numbered port at the least hop count.
//! - mcfdbs, per switch that forwards any multicast LID: a blank line, `Switch 0x<guid>`,
//!   `LID    : Out Port(s)`, then per MLID in order `0x<MLID> :` and ` 0x<PPP> ` per port
//!   (three upper-case hex digits) in ascending order.
//!
//! Switches come in GUID order (OpenSM's order is its table's, which can differ; compare per
//! switch). Both are pure functions of the plan and tables (fdbs) or the MFT blocks (mcfdbs).

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write;

use ibsm_mad::Guid;
use ibsm_mad::attrs::MulticastForwardingTable;
use ibsm_routing::{FabricView, NodeId, Routes};

use super::plan::Plan;

/// No path (OpenSM's `OSM_NO_PATH`).
const NO_PATH: u8 = 0xff;

/// What owns a LID, for the hop count.
#[derive(Debug, Clone, Copy)]
enum Target {
    /// A switch, by view index.
    Switch(usize),
    /// A CA or router port, with the switch its cable reaches (none when not cabled to one).
    Ca(Option<usize>),
}

/// Switch-to-switch hop counts over cables between distinct switches, [`NO_PATH`] when none.
struct Hops {
    n: usize,
    dist: Vec<u8>,
}

impl Hops {
    fn of(view: &FabricView) -> Hops {
        let n = view.switches.len();
        let adj: Vec<Vec<usize>> = view
            .switches
            .iter()
            .enumerate()
            .map(|(s, sw)| {
                sw.ports
                    .iter()
                    .filter_map(|p| match p.map(|nb| nb.node) {
                        Some(NodeId::Switch(t)) if t != s && t < n => Some(t),
                        _ => None,
                    })
                    .collect()
            })
            .collect();
        let mut dist = vec![NO_PATH; n * n];
        let mut queue = VecDeque::new();
        for from in 0..n {
            let row = &mut dist[from * n..(from + 1) * n];
            row[from] = 0;
            queue.push_back(from);
            while let Some(u) = queue.pop_front() {
                let next = row[u].saturating_add(1);
                for &v in &adj[u] {
                    if row[v] == NO_PATH && next < NO_PATH {
                        row[v] = next;
                        queue.push_back(v);
                    }
                }
            }
        }
        Hops { n, dist }
    }

    /// Least hops from switch `a` to switch `b`.
    fn least(&self, a: usize, b: usize) -> u8 {
        if a < self.n && b < self.n { self.dist[a * self.n + b] } else { NO_PATH }
    }

    /// Hops from switch `s` to switch `t` leaving by `port`: 0 by port 0 to itself, one more
    /// than the neighbour's least when the port is cabled to another switch.
    fn via(&self, view: &FabricView, s: usize, port: u8, t: usize) -> u8 {
        if port == 0 {
            return if s == t { 0 } else { NO_PATH };
        }
        let nb = view.switches.get(s).and_then(|sw| sw.ports.get(usize::from(port)).copied().flatten());
        match nb.map(|nb| nb.node) {
            Some(NodeId::Switch(u)) if u != s => match self.least(u, t) {
                NO_PATH => NO_PATH,
                h => h.saturating_add(1),
            },
            _ => NO_PATH,
        }
    }

    /// The lowest-numbered port of `s` that reaches `t` in `best` hops.
    fn best_port(&self, view: &FabricView, s: usize, t: usize, best: u8) -> u8 {
        let ports = view.switches.get(s).map_or(0, |sw| sw.ports.len());
        (0..ports).filter_map(|p| u8::try_from(p).ok()).find(|&p| self.via(view, s, p, t) == best).unwrap_or(0)
    }
}

/// The owner of every LID up to the highest in use.
fn targets(view: &FabricView) -> Vec<Option<Target>> {
    let max = view.max_lid();
    let span = view.lids_per_port();
    let mut out = vec![None; usize::from(max) + 1];
    let mut mark = |base: u16, t: Target| {
        if base == 0 {
            return;
        }
        for l in base..=base.saturating_add(span - 1).min(max) {
            out[usize::from(l)] = Some(t);
        }
    };
    for (s, sw) in view.switches.iter().enumerate() {
        mark(sw.lid.0, Target::Switch(s));
    }
    for ca in &view.cas {
        for p in &ca.ports {
            let attached = match p.neighbor.map(|nb| nb.node) {
                Some(NodeId::Switch(s)) => Some(s),
                _ => None,
            };
            mark(p.lid.0, Target::Ca(attached));
        }
    }
    out
}

/// The tables as OpenSM's `opensm.fdbs`; `only` limits it to one switch (view index).
pub fn fdbs(plan: &Plan, routes: &Routes, only: Option<usize>) -> String {
    let view = &plan.view;
    let hops = Hops::of(view);
    let owners = targets(view);
    let mut out = String::new();
    for s in super::dump::switch_order(plan, only) {
        let _ = write!(
            out,
            "dump_ucast_routes: Switch 0x{:016x}\nLID    : Port : Hops : Optimal\n",
            view.switches[s].guid.0
        );
        let lft = routes.tables.get(s);
        for (lid, owner) in owners.iter().enumerate().skip(1) {
            let _ = write!(out, "0x{lid:04X} : ");
            let port = u16::try_from(lid).ok().and_then(|l| lft?.port_for(ibsm_mad::Lid(l)));
            let (Some(owner), Some(port)) = (owner, port) else {
                out.push_str("UNREACHABLE\n");
                continue;
            };
            let p = port.0;
            // The switch whose hop count stands for the LID, the hops by the routed port and the
            // least, and one more for a CA beyond its switch.
            let (t, num, extra) = match *owner {
                Target::Switch(t) => (t, hops.via(view, s, p, t), 0),
                Target::Ca(Some(t)) if t == s => (t, 0, 1),
                Target::Ca(Some(t)) => (t, hops.via(view, s, p, t), 1),
                Target::Ca(None) => (s, NO_PATH, 0),
            };
            if num == NO_PATH {
                let _ = writeln!(out, "{p:03}  : HOPS UNKNOWN");
                continue;
            }
            let best = hops.least(s, t);
            let _ = write!(out, "{p:03}  : {:02}   : ", num + extra);
            if best == num {
                out.push_str("yes\n");
            } else {
                let q = hops.best_port(view, s, t, best);
                let _ = writeln!(out, "No {} hop path possible via port {q}!", best.saturating_add(extra));
            }
        }
    }
    out
}

/// Each switch's multicast table as OpenSM's `opensm.mcfdbs`: `switches` in the order to print,
/// each with its MFT blocks keyed by (block, position).
pub fn mcfdbs<'a>(
    switches: impl IntoIterator<Item = (Guid, &'a BTreeMap<(u16, u8), MulticastForwardingTable>)>,
) -> String {
    let mut out = String::new();
    for (guid, blocks) in switches {
        // MLID to its ports, ascending.
        let mut by_mlid: BTreeMap<u32, Vec<u16>> = BTreeMap::new();
        for (&(block, position), table) in blocks {
            for (entry, mask) in (0u32..).zip(&table.masks) {
                let mlid = 0xc000 + u32::from(block) * 32 + entry;
                for port in mask.ports(position) {
                    by_mlid.entry(mlid).or_default().push(u16::from(port.0));
                }
            }
        }
        if by_mlid.is_empty() {
            continue;
        }
        let _ = write!(out, "\nSwitch 0x{:016x}\nLID    : Out Port(s)\n", guid.0);
        for (mlid, mut ports) in by_mlid {
            ports.sort_unstable();
            let _ = write!(out, "0x{mlid:04X} :");
            for p in ports {
                let _ = write!(out, " 0x{p:03X} ");
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::lids::Guid2Lid;
    use ibsm_mad::PortNum;
    use ibsm_mad::attrs::PortMask;
    use ibsm_routing::Lft;
    use ibsm_topology::Topology;

    const FABRIC: &str = include_str!("../../examples/fabrics/fat-tree-2l-k4.net");

    /// The 2-level k = 4 tree: leaf-0 has h0 on port 1 and spine-0, spine-1 on ports 3, 4;
    /// h2 hangs from leaf-1.
    fn small() -> Plan {
        let topo = Topology::parse_str(FABRIC, "fat-tree-2l-k4.net").expect("fabric");
        super::super::plan(&topo, 0, Guid2Lid::default(), None)
    }

    fn lid_of(plan: &Plan, name: &str) -> u16 {
        (0..plan.owners.len()).find(|&l| plan.owners[l].as_ref().is_some_and(|o| o.name == name)).unwrap() as u16
    }

    fn index_of(plan: &Plan, name: &str) -> usize {
        plan.switch_names.iter().position(|n| n == name).unwrap()
    }

    /// A line of `text`'s block for switch `s`, for `lid`.
    fn line<'t>(text: &'t str, plan: &Plan, s: usize, lid: u16) -> &'t str {
        let head = format!("Switch 0x{:016x}", plan.view.switches[s].guid.0);
        let block = text.split("dump_ucast_routes: ").find(|b| b.starts_with(&head)).unwrap();
        let key = format!("0x{lid:04X} : ");
        block.lines().find(|l| l.starts_with(&key)).unwrap()
    }

    #[test]
    fn hop_counts_optimal_and_not_unreachable_and_unknown() {
        let plan = small();
        let max = plan.view.max_lid();
        assert_eq!(max, 14);
        let (leaf0, leaf1, spine0) = (index_of(&plan, "leaf-0"), index_of(&plan, "leaf-1"), index_of(&plan, "spine-0"));
        let (h0, h1) = (lid_of(&plan, "h0"), lid_of(&plan, "h2"));
        let l1 = plan.view.switches[leaf1].lid.0;
        let sp0 = plan.view.switches[spine0].lid.0;
        let mut tables: Vec<Lft> = plan.view.switches.iter().map(|_| Lft::unrouted(max)).collect();
        let set = |t: &mut Vec<Lft>, s: usize, lid: u16, p: u8| t[s].entries_mut()[usize::from(lid)] = PortNum(p);
        // leaf-0: its own LID by port 0, h0 by port 1, h2 up by port 3 (2 + 1 hops), leaf-1 by
        // port 1 (toward h0: no switch path), spine-0 by port 4 (via spine-1 and a leaf: 3, not 1).
        set(&mut tables, leaf0, plan.view.switches[leaf0].lid.0, 0);
        set(&mut tables, leaf0, h0, 1);
        set(&mut tables, leaf0, h1, 3);
        set(&mut tables, leaf0, l1, 1);
        set(&mut tables, leaf0, sp0, 4);
        let routes = Routes::from_tables(tables);
        let text = fdbs(&plan, &routes, None);
        assert_eq!(text.matches("dump_ucast_routes: Switch 0x").count(), 6);
        assert!(text.contains("LID    : Port : Hops : Optimal\n"));
        let at = |lid| line(&text, &plan, leaf0, lid).to_owned();
        assert_eq!(
            at(plan.view.switches[leaf0].lid.0),
            format!("0x{:04X} : 000  : 00   : yes", plan.view.switches[leaf0].lid.0)
        );
        assert_eq!(at(h0), format!("0x{h0:04X} : 001  : 01   : yes"));
        assert_eq!(at(h1), format!("0x{h1:04X} : 003  : 03   : yes"));
        assert_eq!(at(l1), format!("0x{l1:04X} : 001  : HOPS UNKNOWN"));
        assert_eq!(at(sp0), format!("0x{sp0:04X} : 004  : 03   : No 1 hop path possible via port 3!"));
        // spine-1's table is empty: every LID unreachable.
        let spine1 = index_of(&plan, "spine-1");
        assert_eq!(line(&text, &plan, spine1, h0), format!("0x{h0:04X} : UNREACHABLE"));
        // One switch only.
        let one = fdbs(&plan, &routes, Some(leaf0));
        assert_eq!(one.matches("dump_ucast_routes").count(), 1);
        assert_eq!(one.lines().count(), 2 + usize::from(max));
    }

    #[test]
    fn a_ca_routed_away_from_its_own_switch_is_still_one_hop() {
        // OpenSM counts a CA on the switch itself as 0 + 1 hops whichever port is routed.
        let plan = small();
        let max = plan.view.max_lid();
        let leaf0 = index_of(&plan, "leaf-0");
        let h0 = lid_of(&plan, "h0");
        let mut tables: Vec<Lft> = plan.view.switches.iter().map(|_| Lft::unrouted(max)).collect();
        tables[leaf0].entries_mut()[usize::from(h0)] = PortNum(3);
        let text = fdbs(&plan, &Routes::from_tables(tables), Some(leaf0));
        assert_eq!(line(&text, &plan, leaf0, h0), format!("0x{h0:04X} : 003  : 01   : yes"));
    }

    #[test]
    fn mcfdbs_lists_switches_with_entries_and_their_ports_in_order() {
        let mut a: BTreeMap<(u16, u8), MulticastForwardingTable> = BTreeMap::new();
        let mut t = MulticastForwardingTable::default();
        t.masks[0] = PortMask((1 << 3) | (1 << 1));
        t.masks[2] = PortMask(1 << 15);
        a.insert((0, 0), t);
        let mut high = MulticastForwardingTable::default();
        high.masks[0] = PortMask(1 << 2); // port 18
        a.insert((0, 1), high);
        let mut b1 = MulticastForwardingTable::default();
        b1.masks[1] = PortMask(1);
        a.insert((1, 0), b1); // MLID 0xc021, port 0
        let empty: BTreeMap<(u16, u8), MulticastForwardingTable> = BTreeMap::new();
        let text = mcfdbs([(Guid(0x20), &a), (Guid(0x21), &empty)]);
        assert_eq!(
            text,
            "\nSwitch 0x0000000000000020\nLID    : Out Port(s)\n\
             0xC000 : 0x001  0x003  0x012 \n0xC002 : 0x00F \n0xC021 : 0x000 \n"
        );
        assert_eq!(mcfdbs([(Guid(0x21), &empty)]), "");
    }
}

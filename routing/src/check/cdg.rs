//! Credit loops: the channel dependency graph of the tables and a search for one cycle.
//!
//! A channel is a directed switch-to-switch link. Channel `a = (x -> s)` depends on channel
//! `b = (s -> y)` when some switch `x` sends a LID to `s` and `s` sends the same LID on to `y`.
//! Every switch's route to every owned LID counts (switches originate traffic too). Links to CAs
//! are left out: nothing depends on a CA's ingress, and a CA's egress depends on nothing else.

use super::report::Channel;
use super::{CdgTraffic, CreditLoops, Fabric, Next};
use crate::graph::Owner;

/// One bit per possible egress port (0..=255) of the switch a channel leads to.
type PortSet = [u64; 4];

fn add(set: &mut PortSet, p: u8) {
    set[usize::from(p >> 6)] |= 1u64 << (p & 63);
}

/// Builds the dependency graph and returns one cycle, if any.
pub(super) fn credit_loops(f: &Fabric<'_>, traffic: CdgTraffic) -> CreditLoops {
    let mut deps: Vec<PortSet> = vec![[0; 4]; f.next.len()];
    let mut host_switches: Vec<usize> = f.hosts.iter().map(|h| h.attach).collect();
    host_switches.sort_unstable();
    host_switches.dedup();
    let mut on_path = vec![false; f.switches()];
    for (lid, o) in f.owner.iter().enumerate() {
        if *o == Owner::None {
            continue;
        }
        let Ok(lid) = u16::try_from(lid) else { break };
        let to_ca = matches!(o, Owner::Port(..));
        let all_sources = match traffic {
            CdgTraffic::All => true,
            CdgTraffic::DataPlane => to_ca,
            CdgTraffic::CaToCa => {
                if !to_ca {
                    continue;
                }
                false
            }
        };
        if !all_sources {
            mark_paths(f, lid, &host_switches, &mut on_path);
        }
        for (s, &on) in on_path.iter().enumerate() {
            if !all_sources && !on {
                continue;
            }
            let Some(p1) = f.port(s, lid) else { continue };
            let Some(c1) = f.chan(s, p1) else { continue };
            let Next::Switch(n) = f.next[c1] else { continue };
            let Some(p2) = f.port(n, lid) else { continue };
            if let Some(c2) = f.chan(n, p2)
                && matches!(f.next[c2], Next::Switch(_))
            {
                add(&mut deps[c1], p2.0);
            }
        }
    }
    match find_cycle(f, &deps) {
        Some(cycle) => CreditLoops::Found(cycle.into_iter().filter_map(|c| channel(f, c)).collect()),
        None => CreditLoops::None,
    }
}

/// Marks the switches that packets from CA ports to `lid` pass through.
fn mark_paths(f: &Fabric<'_>, lid: u16, starts: &[usize], on_path: &mut [bool]) {
    on_path.fill(false);
    for &start in starts {
        let mut cur = start;
        for _ in 0..=on_path.len() {
            if on_path[cur] {
                break;
            }
            on_path[cur] = true;
            let Some(p) = f.port(cur, lid) else { break };
            match f.next(cur, p) {
                Next::Switch(n) => cur = n,
                _ => break,
            }
        }
    }
}

fn channel(f: &Fabric<'_>, c: usize) -> Option<Channel> {
    let (s, port) = f.chan_parts(c)?;
    let Next::Switch(n) = *f.next.get(c)? else { return None };
    Some(Channel { switch: f.switch_guid(s), port, to: f.switch_guid(n) })
}

/// The channels `c` depends on, as channel indices.
fn successors<'b>(f: &'b Fabric<'_>, deps: &'b [PortSet], c: usize) -> impl Iterator<Item = usize> + 'b {
    let n = match f.next.get(c) {
        Some(Next::Switch(n)) => Some(*n),
        _ => None,
    };
    let set = deps.get(c).copied().unwrap_or([0; 4]);
    (0u16..256).filter_map(move |p| {
        let p = p as u8;
        let bit = set[usize::from(p >> 6)] >> (p & 63) & 1;
        if bit == 0 {
            return None;
        }
        f.chan(n?, ibsm_mad::PortNum(p))
    })
}

/// Iterative depth-first search; on a back edge, the cycle is the stack from its target up.
fn find_cycle(f: &Fabric<'_>, deps: &[PortSet]) -> Option<Vec<usize>> {
    const WHITE: u8 = 0;
    const GREY: u8 = 1;
    const BLACK: u8 = 2;
    let mut color = vec![WHITE; deps.len()];
    let mut stack: Vec<(usize, Vec<usize>)> = Vec::new();
    for root in 0..deps.len() {
        if color[root] != WHITE || deps[root] == [0; 4] {
            continue;
        }
        color[root] = GREY;
        stack.push((root, successors(f, deps, root).collect()));
        while let Some((c, succ)) = stack.last_mut() {
            let c = *c;
            let Some(next) = succ.pop() else {
                color[c] = BLACK;
                stack.pop();
                continue;
            };
            match color.get(next).copied() {
                Some(WHITE) => {
                    color[next] = GREY;
                    let s = successors(f, deps, next).collect();
                    stack.push((next, s));
                }
                Some(GREY) => {
                    let from = stack.iter().position(|(x, _)| *x == next)?;
                    return Some(stack[from..].iter().map(|(x, _)| *x).collect());
                }
                _ => {}
            }
        }
    }
    None
}

//! The early-exit cycle search over the channel dependency graph, on flat arrays.
//!
//! Owns: an iterative three-colour depth-first search that stops at the first back edge. It is
//! the check's first test for credit loops: on an acyclic graph (a healthy fabric) it is 5 to 15
//! times faster than petgraph's component search (`BENCHMARKS.md`, "Graph analyses"), which
//! then runs only to describe the loops found. It finds *a* cycle, not the components, and
//! which cycle depends on the visit order; it is also the tests' independent oracle for `scc`.
//! Guarantees: never panics, no recursion.

use super::cdg::ChannelDeps;

const WHITE: u8 = 0;
const GREY: u8 = 1;
const BLACK: u8 = 2;

/// One cycle as node numbers in dependency order, or `None` if the graph is acyclic.
pub(super) fn first_cycle(deps: &ChannelDeps) -> Option<Vec<usize>> {
    let n = deps.channels().len();
    let mut color = vec![WHITE; n];
    // Each frame: a node and the position of its next successor to try.
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for root in 0..n {
        if color[root] != WHITE {
            continue;
        }
        color[root] = GREY;
        stack.push((root, 0));
        while let Some(&mut (c, ref mut at)) = stack.last_mut() {
            let Some(next) = deps.succ_of(c).get(*at).map(|&x| x as usize) else {
                color[c] = BLACK;
                stack.pop();
                continue;
            };
            *at += 1;
            match color.get(next).copied() {
                Some(WHITE) => {
                    color[next] = GREY;
                    stack.push((next, 0));
                }
                Some(GREY) => {
                    let from = stack.iter().position(|&(x, _)| x == next)?;
                    return Some(stack[from..].iter().map(|&(x, _)| x).collect());
                }
                _ => {}
            }
        }
    }
    None
}

//! The credit-loop verdict on a channel dependency graph ([`ChannelDeps`], built in `cdg`): the
//! entry points that pick an analysis.
//!
//! Owns the choice between the two searches: `dfs` (an early-exit search on the flat arrays: is
//! there a cycle?) and `scc` (petgraph's strongly connected components: how many loops, how many
//! channels, and an example). [`ChannelDeps::credit_loops`] runs the first and, only if it finds
//! a cycle, the second: on the k = 48 fat tree ruling loops out takes the flat search 8.5 ms and
//! petgraph 130 ms (`BENCHMARKS.md`, "Graph analyses"), and a healthy fabric has nothing more to
//! report. These methods live here, not in `cdg`, so that the graph does not import the searches
//! that read it.

use super::cdg::ChannelDeps;
use super::report::{CdgStats, CreditLoops};
use super::{dfs, scc};

impl ChannelDeps {
    /// The check's credit-loop verdict and the graph's figures: the same answer as
    /// [`ChannelDeps::scc_analysis`], but an acyclic graph is recognised by the faster
    /// [`ChannelDeps::first_cycle_dfs`] and skips the component search.
    pub fn credit_loops(&self) -> (CreditLoops, CdgStats) {
        if self.first_cycle_dfs().is_none() {
            let stats =
                CdgStats { channels: self.channels().len(), dependencies: self.dependencies(), ..CdgStats::default() };
            return (CreditLoops::None, stats);
        }
        self.scc_analysis()
    }

    /// The credit-loop verdict and the graph's figures from petgraph's strongly connected
    /// components: every cyclic component counted, and a shortest cycle through the lowest
    /// channel of the lowest cyclic component as the example.
    pub fn scc_analysis(&self) -> (CreditLoops, CdgStats) {
        scc::analyse(self)
    }

    /// One cycle found by an early-exit depth-first search on the flat arrays, as node numbers
    /// in dependency order, or `None` if the graph is acyclic. Which cycle depends on the visit
    /// order.
    pub fn first_cycle_dfs(&self) -> Option<Vec<usize>> {
        dfs::first_cycle(self)
    }
}

//! Routing: the component [`Routing`] calls the routing engine on the discovered subnet
//! (described by [`Subnet::describe`](super::state::Subnet::describe) and built into a routing
//! view by [`crate::fabric_view::build`], as the offline planner's is; a subnet that changed
//! only in links since gets the last view relinked instead, [`super::relink`]), in place or
//! as a [`RouteJob`] a driver runs elsewhere.
//!
//! Owns the Routing phase's state: the tables of the running sweep, the last full route, the
//! job out and how the last tables were made. The tables come from the `ibsm-routing` engine
//! chain named in the configuration; [`block_of`] cuts them into blocks of 64 LIDs, which
//! `programming` writes where they differ from what a switch holds. Nothing here knows a byte
//! offset, sends an SMP or touches another component's state. A layered engine (`dfsssp`) gets
//! the fabric's VLs as its layer budget ([`vl_budget`]; with QoS on, its share of them per
//! class); the layer of every path it gives is
//! kept with the tables ([`Routing::layers`]) for the SA's PathRecord SLs.
//!
//! The last full route is kept as the base: a fabric equal to it gets its tables again without
//! routing (a cable back, a sweep that found nothing new), and a fabric that is the base less
//! some cables gets the base's tables repaired: a fat tree's by
//! [`ibsm_routing::ftree::FatTree::repair`] (only the LIDs that crossed a lost cable move), a
//! layered engine's (`dfsssp`, `nue`) by [`ibsm_routing::dfsssp::repair::repair`] (only the
//! paths that crossed it move, each kept on its layer where that stays free of credit loops;
//! nue's repair is used only where every pair keeps its layer, as its full route does).
//! Anything else is routed in full and becomes the base. A layered repair is written in one
//! pass only where the repair found every mix of the base's entries and its own free of credit
//! loops and the switches held the base's tables; else in two ([`interim_tables`]: the changed
//! entries unrouted first, the new ones once every Set of that pass is answered). So is a
//! layered engine's full route over tables the switches hold (a re-route, a reload that
//! changes the layers, a repair declined), and any layered tables of an SM that has written
//! none since it started or took over: it starts from what the switches hold, read back or
//! vouched for by the last master ([`Routing::hold_actual`]). A fat tree's
//! repair says which LIDs of which tables it moved ([`Routing::deltas`]), and so does its
//! undoing (the base again once the cable is back), so that the LFT diff compares only those.
//! A fat tree's full route counts its tables' entries per port once, with the route
//! ([`ibsm_routing::ftree::PortLoads`]), so that its repairs copy a table's counts instead of
//! counting it (most of the compute of an edge cable's cut at k = 48), and keeps the fabric
//! indexed and ranked ([`ibsm_routing::ftree::Shape`]), so that a repair takes the lost links
//! out of it instead of setting up the whole new fabric.

use ibsm_mad::attrs::LinearForwardingTable;
use ibsm_routing::EngineOptions;
use ibsm_routing::chain::Chain;
use ibsm_routing::dfsssp::repair::repair as layered_repair;
use ibsm_routing::dfsssp::{Dfsssp, PathLayers};
use ibsm_routing::ftree::{FatTree, PortLoads, Shape};
use ibsm_routing::nue::Nue;
use ibsm_routing::{FabricView, Lft, Routes, TableDelta};
use std::sync::Arc;

pub use super::events::RouteMode;
use super::events::SmEvent;
use super::relink::LastView;
use super::state::{NodeIdx, Subnet};
use crate::fabric_view::{AvoidedLinks, avoid_links, build};

/// Block `block` of `table` as an attribute (entries past the table are unrouted).
pub fn block_of(table: &Lft, block: u32) -> LinearForwardingTable {
    let mut b = LinearForwardingTable::unrouted();
    for (e, &p) in b.ports.iter_mut().zip(table.block(block as usize)) {
        *e = p;
    }
    b
}

/// Every end port of a CA or router of `subnet` (port GUID, NodeGUID, port number), as
/// [`crate::fabric_view::end_ports`] lists them from its description.
fn ca_end_ports(subnet: &Subnet) -> impl Iterator<Item = (ibsm_mad::Guid, ibsm_mad::Guid, ibsm_mad::PortNum)> + '_ {
    subnet
        .nodes
        .iter()
        .filter(|n| !n.is_switch())
        .flat_map(|n| n.end_ports().filter_map(move |num| Some((n.port(num)?.guid?, n.info.node_guid, num))))
}

/// The layers a layered engine may use on `subnet`, as OpenSM's dfsssp counts its VLs: the data
/// VLs of the link with the fewest, among the switch-to-switch and CA links, as the port
/// settings set OperationalVLs (the smaller VLCap of the two ends, within `max_op_vls`). With
/// QoS on (`qos_classes`: its classes), those VLs are shared among the classes
/// ([`ibsm_qos::Classes::layers`]: min(V / C, 16 / C)). One where a switch cannot map SLs (no
/// IsSLMappingSupported on its port 0): the layers' SLs would not reach their VLs.
pub fn vl_budget(subnet: &Subnet, max_op_vls: u8, qos_classes: Option<&ibsm_qos::Classes>) -> u8 {
    use ibsm_mad::attrs::CapabilityMask;
    let mut budget = 15u8;
    for n in subnet.nodes.iter().filter(|n| !n.carried) {
        if n.is_switch()
            && !n
                .ports
                .first()
                .and_then(|r| r.info)
                .is_some_and(|i| i.capability_mask.contains(CapabilityMask::IS_SL_MAPPING_SUPPORTED))
        {
            return 1;
        }
        for rec in n.ports.iter().skip(1).filter(|r| r.is_linked()) {
            let Some(info) = rec.info else { continue };
            let Some(peer) = rec.remote.and_then(|(rn, rp)| subnet.node(rn)?.port(rp)?.info) else { continue };
            let enc = info.vl_cap.min(peer.vl_cap).min(max_op_vls.max(1));
            if enc > 0 {
                budget = budget.min(ibsm_qos::vl_count(enc));
            }
        }
    }
    qos_classes.map_or(budget, |c| c.layers(budget))
}

/// The last full route: the fabric, its tables, the engine that made them and the chain asked;
/// and the last repair of it (with its layers), while the fabric stays degraded (a second sweep over the same
/// fabric, as the traps of both ends of a cable bring, takes it again).
#[derive(Debug, Clone)]
pub struct RouteBase {
    view: Arc<FabricView>,
    routes: Arc<Routes>,
    engine: String,
    chain: String,
    /// The layer of every path, from a layered engine.
    layers: Option<Arc<PathLayers>>,
    repaired: Option<Repair>,
    /// A fat tree's per-port counts of `routes`, worked out with the route so that a repair
    /// need not count the tables it changes ([`PortLoads`]).
    loads: Option<Arc<PortLoads>>,
    /// A fat tree's fabric indexed and ranked, worked out with the route so that a repair
    /// takes the lost links out of it instead of setting the new fabric up ([`Shape`]).
    shape: Option<Arc<Shape>>,
}

/// A repair of the base: the fabric, its tables, how they were made, their layers, and how
/// each table differs from the base's.
type Repair = (Arc<FabricView>, Arc<Routes>, RouteMode, Option<Arc<PathLayers>>, Option<Deltas>);

/// How each table of a route differs from another route's table of the same switch
/// ([`TableDelta`]; `None`: not known, or the same `Arc`), in the switches' order.
pub type Deltas = Arc<Vec<Option<TableDelta>>>;

/// Tables found without a full route: the tables, how, the engine, the layers, the order in
/// which to write the switches (a layered repair's rank), the tables to write first where
/// the repair is written in two passes ([`interim_tables`]), and how the tables differ from
/// those of the route before, where known.
type Reused = (
    Arc<Routes>,
    RouteMode,
    String,
    Option<Arc<PathLayers>>,
    Option<Arc<Vec<u32>>>,
    Option<Arc<Routes>>,
    Option<Deltas>,
);

mod early;
pub use early::EarlyEnd;
mod sl_moves;
pub use sl_moves::{sls_moved, sources_moved};

/// The tables the switches held before this sweep, by switch GUID (node indices may change
/// between sweeps).
type Held = (Vec<ibsm_mad::Guid>, Arc<Routes>);

/// The routing of one sweep, detached from the SM: a pure computation (the routing view, the
/// engine chain and the last full route) that a driver may run on another thread while the SM
/// goes on answering ([`Sm::take_route_job`], [`RouteJob::run`], [`Sm::finish_route`]).
#[derive(Debug)]
pub struct RouteJob {
    /// Shared with the last view ([`LastView`]) unless links were left out of it.
    view: Arc<FabricView>,
    switch_nodes: Vec<NodeIdx>,
    chain: Vec<String>,
    options: EngineOptions,
    base: Option<RouteBase>,
    epoch: u64,
    /// What the switches held before: the last sweep's tables, or where its writes did not
    /// all succeed, what the SM knows each switch holds ([`Routing::hold_actual`]).
    held: Option<Held>,
    /// `held` is what the switches hold, not the last sweep's tables: a layered engine's
    /// tables, even reused, are written in two passes from it.
    unsure: bool,
}

/// What a [`RouteJob`] produced.
#[derive(Debug)]
pub struct RouteDone {
    switch_nodes: Vec<NodeIdx>,
    outcome: Result<(Arc<Routes>, RouteMode, String), String>,
    layers: Option<Arc<PathLayers>>,
    /// The order in which to write the switches, from a layered repair.
    rank: Option<Arc<Vec<u32>>>,
    /// A layered repair written in two passes: the tables to write first.
    interim: Option<Arc<Routes>>,
    /// The switches' GUIDs, in the tables' order.
    guids: Vec<ibsm_mad::Guid>,
    /// How the tables differ from the route before, where a repair (or its undoing) knows.
    deltas: Option<Deltas>,
    declined: Vec<(String, String)>,
    base: Option<RouteBase>,
    epoch: u64,
}

/// How the base's tables differ from those of its last repair (`repaired`), switch by switch:
/// where the repair moved a table's entries, the base's table differs from it there and
/// nowhere else. `None` when the repair's switches are not the base's, index by index (a
/// switch was left out of it), or it kept no deltas.
fn undo_deltas(base: &FabricView, routes: &Routes, repaired: &Repair) -> Option<Deltas> {
    let (view, repaired_routes, _, _, deltas) = repaired;
    let deltas = deltas.as_ref()?;
    let aligned = view.switches.len() == base.switches.len()
        && view.switches.iter().zip(&base.switches).all(|(v, b)| v.guid == b.guid)
        && repaired_routes.tables.len() == routes.tables.len()
        && deltas.len() == routes.tables.len();
    if !aligned {
        return None;
    }
    let undone = deltas
        .iter()
        .zip(&repaired_routes.tables)
        .zip(&routes.tables)
        .map(|((d, moved), base_table)| {
            let d = d.as_ref()?;
            // The delta was taken against this very table (else it says nothing of it).
            Arc::ptr_eq(&d.from, base_table).then(|| TableDelta { from: Arc::clone(moved), lids: d.lids.clone() })
        })
        .collect();
    Some(Arc::new(undone))
}

impl RouteJob {
    /// Tables (and their layers) without a full route, from the base, when the fabric allows it.
    fn reuse_base(&mut self, chain: &str) -> Option<Reused> {
        let view = &*self.view;
        let b = self.base.as_mut().filter(|b| b.chain == chain)?;
        // Layered tables reused over switches whose tables are not the last sweep's (its
        // writes did not all succeed): written in two passes from what they hold.
        let layered = [Dfsssp::NAME, Nue::NAME].contains(&b.engine.as_str());
        let guids: Vec<_> = view.switches.iter().map(|s| s.guid).collect();
        let unsure = |routes: &Arc<Routes>| {
            let held = self.held.as_ref().filter(|_| self.unsure && layered)?;
            Some(Arc::new(interim_tables(&held.0, &held.1, &guids, routes)))
        };
        if Arc::ptr_eq(&b.view, &self.view) || *b.view == *view {
            // The repair undone: its tables differ from the base's where it moved them.
            let deltas = b.repaired.take().and_then(|r| undo_deltas(&b.view, &b.routes, &r));
            let reused = (Arc::clone(&b.routes), RouteMode::Reused, b.engine.clone(), b.layers.clone());
            let interim = unsure(&reused.0);
            return Some((reused.0, reused.1, reused.2, reused.3, None, interim, deltas));
        }
        if let Some((_, routes, _, layers, deltas)) =
            b.repaired.as_ref().filter(|(v, ..)| Arc::ptr_eq(v, &self.view) || **v == *view)
        {
            let reused = (Arc::clone(routes), RouteMode::Reused, b.engine.clone(), layers.clone());
            let interim = unsure(&reused.0);
            return Some((reused.0, reused.1, reused.2, reused.3, None, interim, deltas.clone()));
        }
        // A layered engine's routes are repaired keeping each path's layer where it can.
        if let Some(engine) = [Dfsssp::NAME, Nue::NAME].into_iter().find(|&n| n == b.engine) {
            let budget = self.options.max_layers.unwrap_or(Dfsssp::DEFAULT_LAYERS);
            let r = layered_repair(&b.view, &b.routes, b.layers.as_deref(), view, budget, engine)?.ok()?;
            // Nue's full route never moves a pair's SL on a fault: a repair that would is dropped.
            if engine == Nue::NAME && r.stranded > 0 {
                return None;
            }
            let routes = Arc::new(r.layered.routes);
            // One pass only from the base's own tables, which the repair judged; from anything
            // else (an earlier repair) the changed entries are dropped first.
            let held = self.held.as_ref();
            let from_base = held.is_some_and(|(_, t)| Arc::ptr_eq(t, &b.routes));
            let interim = held
                .filter(|_| !(r.one_pass && from_base))
                .map(|(by, t)| Arc::new(interim_tables(by, t, &guids, &routes)));
            let passes = if interim.is_some() { 2 } else { 1 };
            let mode = RouteMode::Repaired { lids: r.lids, entries: r.entries, stranded: r.stranded, passes };
            let layers = Some(r.layered.layers).filter(|l| l.used() > 1).map(Arc::new);
            b.repaired = Some((Arc::clone(&self.view), Arc::clone(&routes), mode, layers.clone(), None));
            return Some((routes, mode, b.engine.clone(), layers, Some(Arc::new(r.rank)), interim, None));
        }
        // Repair knows plain ftree only: a tree ranked from compute nodes is routed in full.
        if b.layers.is_some() || b.engine != FatTree::NAME || self.options.hosts.is_some() {
            return None;
        }
        let r = FatTree.repair_shaped(&b.view, &b.routes, b.loads.as_deref(), b.shape.as_deref(), view)?.ok()?;
        let mode = RouteMode::Repaired { lids: r.lids, entries: r.entries, stranded: 0, passes: 1 };
        let routes = Arc::new(r.routes);
        let deltas = Some(Arc::new(r.deltas));
        b.repaired = Some((Arc::clone(&self.view), Arc::clone(&routes), mode, None, deltas.clone()));
        Some((routes, mode, b.engine.clone(), None, None, None, deltas))
    }

    /// Routes: from the base when it can, else with the engine chain (a full route becomes the
    /// new base).
    pub fn run(mut self) -> RouteDone {
        // The base is reused only with the same chain and the same hints.
        let mut chain_name = self.chain.join(",");
        if !self.options.roots.is_empty() {
            chain_name = format!("{chain_name} roots {:?}", self.options.roots);
        }
        if self.options.tuning != ibsm_routing::Tuning::default() {
            chain_name = format!("{chain_name} tuning {:?}", self.options.tuning);
        }
        if let Some(h) = &self.options.hosts {
            chain_name = format!("{chain_name} hosts {h:?}");
        }
        if let Some(t) = &self.options.tables {
            // The same tables file as read once (a reload reads it into a new one).
            chain_name = format!("{chain_name} tables {:p}", Arc::as_ptr(t));
        }
        if let Some(m) = self.options.max_layers {
            chain_name = format!("{chain_name} layers {m}");
        }
        let guids: Vec<_> = self.view.switches.iter().map(|s| s.guid).collect();
        let mut declined = Vec::new();
        let mut layers = None;
        let mut rank = None;
        let mut interim = None;
        let mut deltas = None;
        let outcome = if let Some((routes, mode, engine, l, r, i, d)) = self.reuse_base(&chain_name) {
            layers = l;
            rank = r;
            interim = i;
            deltas = d;
            Ok((routes, mode, engine))
        } else {
            match Chain::from_names_with(&self.chain, &self.options)
                .map_err(|e| e.to_string())
                .and_then(|c| c.run(&self.view).map_err(|e| e.to_string()))
            {
                Ok(out) => {
                    declined = out.declined.into_iter().map(|d| (d.engine.to_owned(), d.error.to_string())).collect();
                    let routes = Arc::new(out.routes);
                    // One layer is no layering: every path on SL 0, as any engine's.
                    layers = out.layers.filter(|l| l.used() > 1).map(Arc::new);
                    // A layered route over tables the switches hold (a re-route, a reload
                    // that changes the layers, a repair declined, a takeover): nothing judged
                    // the mixes of the two, so the changed entries are dropped first.
                    if [Dfsssp::NAME, Nue::NAME].contains(&out.engine)
                        && let Some((by, held)) = self.held.as_ref()
                    {
                        let first = interim_tables(by, held, &guids, &routes);
                        let same = first.tables.iter().zip(&routes.tables).all(|(a, b)| Arc::ptr_eq(a, b));
                        interim = (!same).then(|| Arc::new(first));
                    }
                    // What a later repair would count on every table it changes, counted once
                    // now, while no fault waits on it (a fat tree's repair only).
                    let repairable = out.engine == FatTree::NAME && layers.is_none() && self.options.hosts.is_none();
                    let loads = repairable.then(|| Arc::new(PortLoads::count(&routes)));
                    let shape = repairable.then(|| Shape::of(&self.view).map(Arc::new)).flatten();
                    self.base = Some(RouteBase {
                        view: self.view,
                        routes: Arc::clone(&routes),
                        engine: out.engine.to_owned(),
                        chain: chain_name,
                        layers: layers.clone(),
                        repaired: None,
                        loads,
                        shape,
                    });
                    Ok((routes, RouteMode::Full, out.engine.to_owned()))
                }
                Err(e) => Err(e),
            }
        };
        RouteDone {
            switch_nodes: self.switch_nodes,
            outcome,
            layers,
            rank,
            interim,
            guids,
            deltas,
            declined,
            base: self.base,
            epoch: self.epoch,
        }
    }
}

/// The routing component: the tables of the running sweep, the last full route they may be
/// reused or repaired from, the job out and how the last tables were made. It takes the subnet
/// and the settings it needs as arguments and answers with values (a [`RouteJob`], the events
/// of a [`RouteDone`]); it queues nothing and touches no other component's state.
#[derive(Debug, Default)]
pub struct Routing {
    /// The tables of the running sweep, by switch node, once routed.
    routes: Option<(Vec<NodeIdx>, Arc<Routes>)>,
    /// The engine of the chain that routed the last sweep.
    engine_used: String,
    /// The layer (SL) of every path of the last tables, with the switch nodes in the layers'
    /// order, when a layered engine made them on more than one layer.
    layers: Option<(Vec<NodeIdx>, Arc<PathLayers>)>,
    /// The order in which to write the last tables' switches (a layered repair's rank, in the
    /// switches' order), when one was given.
    rank: Option<Arc<Vec<u32>>>,
    /// The tables the switches held before this sweep (the last sweep's, by switch GUID).
    held: Option<Held>,
    /// The GUIDs of the switches of `routes`, in their order.
    guids: Vec<ibsm_mad::Guid>,
    /// The running sweep's first pass, where its repair is written in two: the held tables
    /// with every entry the repair changes unrouted ([`interim_tables`]).
    interim: Option<Arc<Routes>>,
    /// How the last tables differ from those of the route before, where known.
    deltas: Option<Deltas>,
    /// The last full route, which later sweeps reuse or repair.
    base: Option<RouteBase>,
    /// How the last tables were made.
    mode: RouteMode,
    /// A [`RouteJob`] is out: the sweep waits for its [`RouteDone`].
    job_out: bool,
    /// The driver takes routing as a job instead of the core running it in place.
    offload: bool,
    /// Bumped when the base is dropped, so that a job out does not bring it back.
    epoch: u64,
    /// The last tables' LFT writes did not all succeed (or are under way): the switches may
    /// hold a mix of tables, and the next job starts from what they hold.
    unsure: bool,
    /// This SM wrote LFTs since it started or last took the subnet over. Until it has, what
    /// the switches hold is someone else's (a master that died between the two passes of a
    /// repair may have left any mix of its old and new tables): a layered engine's next
    /// tables are written in two passes from what they hold ([`Routing::hold_actual`]).
    wrote: bool,
    /// The switch GUIDs of the last route's rows of sources, in their order (those of `layers`
    /// where it has layers; a plain route's too, its paths all on layer 0).
    layer_guids: Vec<ibsm_mad::Guid>,
    /// A full route of this running master moved some pair's SL ([`sls_moved`]); set until
    /// its LFT writes all succeed, then `reregister`.
    sls_moved: bool,
    /// The tables of a route that moved SLs are all written: the hosts should ask for their
    /// paths again ([`Routing::take_reregister`]).
    reregister: bool,
    /// A running master's repair (or a repair undone) moved the SLs of pairs from these source
    /// switches ([`sources_moved`]); held until its LFT writes all succeed, then
    /// `reregister_at`.
    sls_moved_at: Vec<ibsm_mad::Guid>,
    /// The tables of a repair that moved SLs are all written: the CA ports at these switches
    /// should ask for their paths again ([`Routing::take_reregister_at`]).
    reregister_at: Vec<ibsm_mad::Guid>,
    /// The last routing view built, which a sweep that changed only links derives its own from.
    last_view: Option<LastView>,
    /// A standby's route of the fabric it found, wanted or out ([`Routing::want_prime`]).
    prime: Prime,
    /// The sweep's route made while its ports are configured ([`Routing::want_early`]).
    early: early::Early,
}

/// Where a standby's advance route stands: a takeover whose discovery finds the fabric the
/// standby found reuses it as its base instead of routing (the takeover's time is then the
/// sweep's SMPs and the LFT check, not the engine's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Prime {
    #[default]
    Idle,
    /// To be routed: by the driver as a job, or in place.
    Wanted,
    /// The job is out; its result becomes the base, never the tables.
    Out,
}

/// What applying a [`RouteDone`] gave: the events to report, and whether routing failed (the
/// sweep counts a failure and leaves the tables alone).
#[derive(Debug, Default)]
pub struct Applied {
    /// Engines that declined, or the failure.
    pub events: Vec<SmEvent>,
    /// No engine of the chain routed the fabric.
    pub failed: bool,
}

impl Routing {
    /// The next sweep routes from scratch.
    pub fn force_full(&mut self) {
        self.base = None;
        // A job out now must not bring its base back.
        self.epoch += 1;
    }

    /// A standby asks for a route of the fabric it found, kept as the base (only where there is
    /// none: an SM that was master keeps its own).
    pub fn want_prime(&mut self) {
        if self.base.is_none() && !self.job_out {
            self.prime = Prime::Wanted;
        }
    }

    /// A standby's route is wanted and no job is out: the caller makes the job
    /// ([`Routing::job`]) and marks it out with [`Routing::prime_taken`].
    pub fn prime_wanted(&self) -> bool {
        self.prime == Prime::Wanted && !self.job_out
    }

    /// The standby's route job was made.
    pub fn prime_taken(&mut self) {
        self.prime = Prime::Out;
    }

    /// The job whose result comes back is the standby's route (its tables are never used).
    pub fn take_prime_out(&mut self) -> bool {
        let out = self.prime == Prime::Out;
        if out {
            self.prime = Prime::Idle;
        }
        out
    }

    /// No standby's route is wanted any more (a sweep routes).
    pub fn drop_prime(&mut self) {
        if self.prime == Prime::Wanted {
            self.prime = Prime::Idle;
        }
    }

    /// Whether the driver runs routing as a job.
    pub fn offloaded(&self) -> bool {
        self.offload
    }

    /// The driver runs routing as a job (`on`), or the core runs it in place.
    pub fn set_offload(&mut self, on: bool) {
        self.offload = on;
    }

    /// Whether a job is out (the sweep waits for its result).
    pub fn job_out(&self) -> bool {
        self.job_out
    }

    /// A sweep starts: no tables yet.
    pub fn sweep_started(&mut self) {
        if let Some((_, r)) = self.routes.take() {
            self.held = Some((std::mem::take(&mut self.guids), r));
        }
        self.interim = None;
        self.deltas = None;
    }

    /// The LFT writes of the running sweep begin: until [`Routing::written`] says they all
    /// succeeded, the switches may hold any mix of the old and new tables.
    pub fn writing(&mut self) {
        self.unsure = true;
    }

    /// The running sweep's LFT writes ended: all answered (`ok`), or some failed (or a first
    /// pass was written without its second).
    pub fn written(&mut self, ok: bool) {
        self.unsure = !ok;
        self.wrote = true;
        if ok && std::mem::take(&mut self.sls_moved) {
            self.reregister = true;
        }
        if ok {
            let at = std::mem::take(&mut self.sls_moved_at);
            self.reregister_at.extend(at);
            self.reregister_at.sort_unstable();
            self.reregister_at.dedup();
        }
    }

    /// Whether a full route that moved some pair's SL has had all its LFTs written since the
    /// last call: the hosts' path SLs are stale, and ClientReregister makes them ask again.
    pub fn take_reregister(&mut self) -> bool {
        std::mem::take(&mut self.reregister)
    }

    /// The switches (GUIDs, sorted) from which a repair, or a repair undone, moved some pair's
    /// SL, once all its LFTs are written, since the last call: the CA ports that hang off them
    /// hold stale PathRecord SLs (and only they), and ClientReregister makes them ask again.
    pub fn take_reregister_at(&mut self) -> Vec<ibsm_mad::Guid> {
        std::mem::take(&mut self.reregister_at)
    }

    /// This SM takes the subnet over (or back): the tables it wrote before, if any, may have
    /// been overwritten since, and another master's writes may have stopped between passes.
    /// The next job starts from what the switches hold ([`Routing::hold_actual`]).
    pub fn took_over(&mut self) {
        self.wrote = false;
        self.held = None;
    }

    /// Whether what the switches hold is not this SM's (it has written no LFT since it started
    /// or took over): a layered engine's next job starts from what they hold, gathered from
    /// every switch ([`Routing::hold_actual`]).
    pub fn fresh(&self) -> bool {
        !self.wrote
    }

    /// The base's table of each switch, by GUID (a standby's route of the fabric it found,
    /// or a master's last full route): what a switch the last master vouched for holds, when
    /// the digests agree.
    pub fn base_tables(&self) -> Option<std::collections::HashMap<ibsm_mad::Guid, Arc<Lft>>> {
        let b = self.base.as_ref()?;
        Some(b.view.switches.iter().map(|s| s.guid).zip(b.routes.tables.iter().cloned()).collect())
    }

    /// Before a job: where the last writes did not all succeed, the tables the switches held
    /// before are taken as `actual` gives them (what the SM knows each switch holds, by GUID;
    /// a switch it knows nothing of is left out), not as the last sweep's tables. A layered
    /// engine's tables are then written in two passes from them, so that no state mixes an
    /// entry the switches were meant to drop with one of the new tables.
    ///
    /// With `switches` (every switch of the subnet, given where the chain is layered), an SM
    /// that has written no LFT since it started or took over ([`Routing::fresh`]) takes what
    /// `actual` gives for each of them (read back, or vouched for by the last master's digest)
    /// as held, whatever it held before: the layered tables are then written in two passes
    /// from what the switches hold. A switch `actual` knows nothing of is left out (it gets
    /// its new table in the first pass); none known, nothing is held (a fabric never routed).
    pub fn hold_actual(
        &mut self,
        switches: Option<&[ibsm_mad::Guid]>,
        actual: impl Fn(ibsm_mad::Guid) -> Option<Arc<Lft>>,
    ) {
        if let Some(all) = switches.filter(|_| !self.wrote) {
            let (guids, tables): (Vec<_>, Vec<_>) = all.iter().filter_map(|&g| Some((g, actual(g)?))).unzip();
            self.held = (!guids.is_empty()).then(|| (guids, Arc::new(Routes { tables })));
            self.unsure = self.held.is_some();
            return;
        }
        if !self.unsure {
            return;
        }
        let Some((guids, _)) = self.held.as_ref() else { return };
        let (guids, tables): (Vec<_>, Vec<_>) = guids.iter().filter_map(|&g| Some((g, actual(g)?))).unzip();
        self.held = Some((guids, Arc::new(Routes { tables })));
    }

    /// How each of the last tables differs from the same switch's table in the route before,
    /// where a repair (or its undoing) knows it ([`TableDelta`]), in the switches' order.
    pub fn deltas(&self) -> Option<&[Option<TableDelta>]> {
        self.deltas.as_deref().map(Vec::as_slice)
    }

    /// The tables to write before the running sweep's, where its repair is written in two
    /// passes ([`interim_tables`]); taken once: the second pass writes [`Routing::routes`].
    pub fn take_interim(&mut self) -> Option<Arc<Routes>> {
        self.interim.take()
    }

    /// The tables to write before the running sweep's, where its repair is written in two
    /// passes.
    pub fn interim(&self) -> Option<&Arc<Routes>> {
        self.interim.as_ref()
    }

    /// The tables of the running sweep (switch nodes and their tables), once routed.
    pub fn routes(&self) -> Option<&(Vec<NodeIdx>, Arc<Routes>)> {
        self.routes.as_ref()
    }

    /// The engine that routed the last sweep (empty before any).
    pub fn engine_used(&self) -> &str {
        &self.engine_used
    }

    /// The layer of every path of the last tables (switch nodes in the layers' order), when
    /// they use more than one layer.
    pub fn layers(&self) -> Option<&(Vec<NodeIdx>, Arc<PathLayers>)> {
        self.layers.as_ref()
    }

    /// The order in which to write the switches of the last tables (lowest first), when a
    /// layered repair gave one.
    pub fn write_rank(&self) -> Option<&[u32]> {
        self.rank.as_deref().map(Vec::as_slice)
    }

    /// How the last tables were made.
    pub fn mode(&self) -> RouteMode {
        self.mode
    }

    /// The routing job of `subnet` with `lmc`, the engine `chain` and its `options`, a layered
    /// engine using at most `vl_budget` layers ([`vl_budget`]), the links of the ports `avoid`
    /// left out of its view where that cuts no LID off ([`avoid_links`]: what was left out and
    /// what was kept comes back with the job); it takes the base along, and holds the sweep
    /// ([`Routing::job_out`]) until [`Routing::apply`].
    pub fn job(
        &mut self,
        subnet: &Subnet,
        lmc: u8,
        (chain, options): (&[String], &EngineOptions),
        vl_budget: u8,
        avoid: &[(ibsm_mad::Guid, ibsm_mad::PortNum)],
    ) -> (RouteJob, AvoidedLinks) {
        // Only links changed since the last view: derived from it (only the ports a quick sweep
        // touched, where the view was settled since), else described and built.
        let relinked = self.last_view.as_mut().is_some_and(|l| l.relink_touched(subnet, lmc) || l.relink(subnet, lmc));
        let last = match self.last_view.take().filter(|_| relinked) {
            Some(last) => last,
            None => LastView::new(build(&subnet.describe(), lmc)),
        };
        let (mut view, switch_nodes) = (Arc::clone(last.view().0), last.view().1.to_vec());
        self.last_view = Some(last);
        let avoided =
            if avoid.is_empty() { AvoidedLinks::default() } else { avoid_links(Arc::make_mut(&mut view), avoid) };
        self.job_out = true;
        // The compute and I/O node lists name ports by GUID: resolved against this fabric.
        let mut options = options.resolve_ports(ca_end_ports(subnet));
        // A layered engine gets no more layers than the fabric's VLs hold (the configured budget
        // within that), or it declines and the chain's next engine routes. Never minimal routes
        // that can deadlock on fewer VLs than they need.
        let budget = vl_budget.max(1);
        options.max_layers = Some(options.max_layers.map_or(budget, |m| m.min(budget)));
        let held = self.held.clone();
        let job = RouteJob {
            unsure: self.unsure,
            view,
            switch_nodes,
            chain: chain.to_vec(),
            options,
            base: self.base.take(),
            epoch: self.epoch,
            held,
        };
        (job, avoided)
    }

    /// At the end of a sweep, between faults: the last view brought up to `subnet` over every
    /// port (and copied if the base shares it), so that the next quick sweep's relink sets only
    /// the ports it touches ([`Routing::touch_view`]). A view the subnet no longer matches is
    /// dropped (the next job builds anew).
    pub fn settle_view(&mut self, subnet: &Subnet, lmc: u8) {
        if self.last_view.as_mut().is_some_and(|l| !l.settle(subnet, lmc)) {
            self.last_view = None;
        }
    }

    /// A quick sweep changed the subnet's ports `ports` (links lost) and nothing else.
    pub fn touch_view(&mut self, ports: &[(NodeIdx, ibsm_mad::PortNum)]) {
        if let Some(l) = self.last_view.as_mut() {
            l.touch(ports);
        }
    }

    /// Anything else of the subnet may have changed (a heavy sweep, a port's state written):
    /// the next job relinks the view over every port.
    pub fn unsettle_view(&mut self) {
        if let Some(l) = self.last_view.as_mut() {
            l.unsettle();
        }
    }

    /// Keeps the job's base (unless it was dropped meanwhile), and with `use_tables` its tables,
    /// or its failure (`chain` names the engines in the event).
    pub fn apply(&mut self, done: RouteDone, use_tables: bool, chain: &[String]) -> Applied {
        self.job_out = false;
        if done.epoch == self.epoch {
            self.base = done.base;
        }
        let mut out = Applied::default();
        if !use_tables {
            return out;
        }
        for (engine, reason) in done.declined {
            out.events.push(SmEvent::EngineDeclined { engine, reason });
        }
        match done.outcome {
            Ok((routes, mode, engine)) => {
                // A layered route whose pairs' two directions may be on different layers: an RC
                // responder's replies, on the requester's SL, can close a loop on a VL.
                if let (RouteMode::Full, Some(l)) = (mode, done.layers.as_deref())
                    && !l.paired()
                {
                    out.events.push(SmEvent::LayersNotPaired { engine: engine.clone(), layers: l.used() });
                }
                // A running master's full route that moves a pair's SL: once written, the
                // hosts are told to ask for their paths again.
                if mode == RouteMode::Full && self.wrote && !self.engine_used.is_empty() {
                    let old = (self.layer_guids.as_slice(), self.layers.as_ref().map(|(_, l)| &**l));
                    self.sls_moved |= sls_moved(old, (&done.guids, done.layers.as_deref()));
                }
                // A repair (or its undoing) moves only the SLs of the pairs it stranded (or
                // brings back): the CA ports at their source switches are told, once written.
                // (The same layers again, as a sweep that found nothing new reuses them: none.)
                let same = matches!((&self.layers, &done.layers), (Some((_, a)), Some(b)) if Arc::ptr_eq(a, b));
                if mode != RouteMode::Full && self.wrote && !self.engine_used.is_empty() && !same {
                    let old = (self.layer_guids.as_slice(), self.layers.as_ref().map(|(_, l)| &**l));
                    let at = sources_moved(old, (&done.guids, done.layers.as_deref()));
                    self.sls_moved_at.extend(at);
                }
                self.engine_used = engine;
                self.mode = mode;
                self.layer_guids = done.guids.clone();
                self.layers = done.layers.map(|l| (done.switch_nodes.clone(), l));
                self.rank = done.rank;
                self.interim = done.interim;
                self.guids = done.guids;
                self.deltas = done.deltas;
                self.routes = Some((done.switch_nodes, routes));
            }
            Err(reason) => {
                self.mode = RouteMode::Full;
                self.deltas = None;
                out.failed = true;
                out.events.push(SmEvent::RoutingFailed { engine: chain.join(","), reason });
            }
        }
        out
    }
}

/// The first pass of a repair written in two: each switch's held table (`held`, by the
/// switch GUIDs `held_guids`) with every entry that `new` (by `guids`) changes set unrouted.
/// While it is written every path is a prefix of its old one, and while `new` is written after
/// it a prefix of its new one: no state has a dependency that neither the old nor the new
/// tables have. Packets to the moved LIDs are dropped at the unrouted entries meanwhile. A
/// switch the held tables do not have gets its new table at once.
pub fn interim_tables(held_guids: &[ibsm_mad::Guid], held: &Routes, guids: &[ibsm_mad::Guid], new: &Routes) -> Routes {
    let at: std::collections::HashMap<ibsm_mad::Guid, usize> =
        held_guids.iter().enumerate().map(|(i, &n)| (n, i)).collect();
    let tables = guids
        .iter()
        .zip(&new.tables)
        .map(|(n, t)| match at.get(n).and_then(|&i| held.tables.get(i)) {
            Some(h) if h == t => Arc::clone(t),
            Some(h) => {
                let ports: Vec<_> = t
                    .iter()
                    .enumerate()
                    .map(|(lid, p)| if h.entry(lid) == Some(p) { p } else { Lft::UNROUTED })
                    .collect();
                Arc::new(Lft::from(ports))
            }
            None => Arc::clone(t),
        })
        .collect();
    Routes { tables }
}

#[cfg(test)]
mod tests {
    use ibsm_mad::Lid;

    use super::*;
    use crate::core::testing::star;

    #[test]
    fn the_interim_tables_unroute_what_changes_matching_switches_by_guid() {
        let t = |p: &[u8]| Arc::new(Lft::from(p.iter().map(|&x| ibsm_mad::PortNum(x)).collect::<Vec<_>>()));
        let (a, b, c) = (ibsm_mad::Guid(1), ibsm_mad::Guid(2), ibsm_mad::Guid(3));
        let held = Routes { tables: vec![t(&[0, 1, 2, 3]), t(&[0, 4, 4, 4])] };
        // The new tables in another switch order, and a switch the held tables lack.
        let new = Routes { tables: vec![t(&[0, 4, 5, 4]), t(&[0, 1, 2, 6]), t(&[0, 7, 7, 7])] };
        let got = interim_tables(&[a, b], &held, &[b, a, c], &new);
        let ports = |i: usize| got.tables[i].iter().map(|p| p.0).collect::<Vec<_>>();
        assert_eq!(ports(0), [0, 4, 255, 4]);
        assert_eq!(ports(1), [0, 1, 2, 255]);
        assert_eq!(ports(2), [0, 7, 7, 7]);
        // A table that does not change is shared, not copied.
        let same = interim_tables(&[a], &held, &[a], &Routes { tables: vec![Arc::clone(&held.tables[0])] });
        assert!(Arc::ptr_eq(&same.tables[0], &held.tables[0]));
    }

    #[test]
    fn an_sm_that_wrote_nothing_yet_holds_what_the_switches_hold() {
        let t = Arc::new(Lft::from(vec![ibsm_mad::PortNum(0), ibsm_mad::PortNum(1)]));
        let (a, b) = (ibsm_mad::Guid(1), ibsm_mad::Guid(2));
        let mut r = Routing::default();
        assert!(r.fresh());
        // A switch nothing is known of is left out.
        r.hold_actual(Some(&[a, b]), |g| (g == a).then(|| Arc::clone(&t)));
        let (guids, held) = r.held.as_ref().expect("held");
        assert_eq!(guids, &[a]);
        assert!(Arc::ptr_eq(&held.tables[0], &t) && r.unsure);
        // Nothing known (a fabric never routed): nothing held, one pass.
        r.hold_actual(Some(&[b]), |_| None);
        assert!(r.held.is_none() && !r.unsure);
        // Once it wrote, its own record stands until it takes the subnet over again.
        r.written(true);
        assert!(!r.fresh());
        r.hold_actual(Some(&[a]), |_| Some(Arc::clone(&t)));
        assert!(r.held.is_none());
        r.took_over();
        assert!(r.fresh());
    }

    /// The star with a LID on every end port.
    pub(super) fn fabric() -> Subnet {
        let mut s = star(0x102, 0x103);
        for (n, p, lid) in [(0, 1, 1), (1, 0, 2), (2, 1, 3), (3, 1, 4)] {
            s.nodes[n].ports[p].lid = Lid(lid);
        }
        s
    }

    pub(super) fn chain(names: &[&str]) -> Vec<String> {
        names.iter().map(|&n| n.to_owned()).collect()
    }

    #[test]
    fn a_full_route_becomes_the_base_and_an_equal_fabric_reuses_it() {
        let s = fabric();
        let minhop = chain(&["minhop"]);
        let mut r = Routing::default();
        let job = r.job(&s, 0, (&minhop, &EngineOptions::default()), 1, &[]).0;
        assert!(r.job_out());
        let applied = r.apply(job.run(), true, &minhop);
        assert!(!applied.failed && applied.events.is_empty(), "{applied:?}");
        assert!(!r.job_out());
        assert_eq!((r.engine_used(), r.mode()), ("minhop", RouteMode::Full));
        let (switches, routes) = r.routes().expect("tables");
        assert_eq!(switches, &[1]);
        let lft = &routes.tables[0];
        assert_eq!(lft.entry(3), Some(ibsm_mad::PortNum(2)), "LID 3 leaves by port 2");
        r.sweep_started();
        assert!(r.routes().is_none());
        let again = r.job(&s, 0, (&minhop, &EngineOptions::default()), 1, &[]).0.run();
        r.apply(again, true, &minhop);
        assert_eq!(r.mode(), RouteMode::Reused);
        // Forced to route in full: a job out at that moment does not bring the base back.
        let job = r.job(&s, 0, (&minhop, &EngineOptions::default()), 1, &[]).0;
        r.force_full();
        r.apply(job.run(), true, &minhop);
        assert_eq!(r.mode(), RouteMode::Reused, "the job took the base along");
        let done = r.job(&s, 0, (&minhop, &EngineOptions::default()), 1, &[]).0.run();
        r.apply(done, true, &minhop);
        assert_eq!(r.mode(), RouteMode::Full, "its base was dropped");
    }

    /// One copy of the view: the last view, the job made from it and the base it becomes share
    /// it; a relink after a cable cut copies it, leaving the base the fabric it routed.
    #[test]
    fn the_last_view_the_job_and_the_base_share_one_view() {
        let mut s = fabric();
        let minhop = chain(&["minhop"]);
        let mut r = Routing::default();
        let last = |r: &Routing| Arc::clone(r.last_view.as_ref().expect("a last view").view().0);
        let job = r.job(&s, 0, (&minhop, &EngineOptions::default()), 1, &[]).0;
        assert!(Arc::ptr_eq(&job.view, &last(&r)), "the job's view is the last view");
        r.apply(job.run(), true, &minhop);
        assert!(Arc::ptr_eq(&r.base.as_ref().expect("a base").view, &last(&r)), "and the base's");
        let routed = (*last(&r)).clone();
        r.sweep_started();
        // The cable between the switch and the CA with LID 3 lost at both ends.
        for (n, p) in [(1, 2), (2, 1)] {
            if let Some(info) = s.nodes[n].ports[p].info.as_mut() {
                info.port_state = ibsm_mad::attrs::PortState::Down;
            }
        }
        let job = r.job(&s, 0, (&minhop, &EngineOptions::default()), 1, &[]).0;
        assert!(Arc::ptr_eq(&job.view, &last(&r)), "relinked, and shared with the job again");
        assert_ne!(*job.view, routed, "the cut is in the relinked view");
        assert_eq!(*job.base.as_ref().expect("the base").view, routed, "the base keeps the fabric it routed");
    }

    #[test]
    fn a_chain_that_cannot_route_is_a_failure_and_a_late_result_is_dropped() {
        let s = fabric();
        let bad = chain(&["no-such-engine"]);
        let mut r = Routing::default();
        let done = r.job(&s, 0, (&bad, &EngineOptions::default()), 1, &[]).0.run();
        let applied = r.apply(done, true, &bad);
        assert!(applied.failed);
        assert!(
            matches!(applied.events.as_slice(), [SmEvent::RoutingFailed { engine, .. }] if engine == "no-such-engine"),
            "{applied:?}"
        );
        assert!(r.routes().is_none());
        let minhop = chain(&["minhop"]);
        let done = r.job(&s, 0, (&minhop, &EngineOptions::default()), 1, &[]).0.run();
        let applied = r.apply(done, false, &minhop);
        assert!(!applied.failed && applied.events.is_empty());
        assert!(r.routes().is_none() && r.engine_used().is_empty(), "the sweep ended: no tables taken");
        assert!(!r.job_out());
    }
}

//! The coordinator: `Sm`'s own code, where the components' answers meet.
//!
//! These files and `core/mod.rs` are the only places with `impl Sm`. A component (discovery,
//! programming, partitions, M_Keys, the SA, the election, replication, the checks, the
//! schedule, light and quick sweeps, traps, port settings, the babbling-port policy) owns its state and answers with values; it never
//! reaches into `Sm` or into another component. Something has to take those answers and apply
//! them in order (queue the SMPs, change the SM's state, start a sweep, hand one component's
//! result to the next), and that is the only code allowed to touch several components at once.
//! Keeping it here, a file per concept, keeps the order of effects readable in one place and
//! makes an `impl Sm` anywhere else a visible exception in review. No state lives here: the
//! fields are `Sm`'s (in `core/mod.rs`) or the components'.
//!
//! - [`accessors`]: `Sm`'s getters and the setters of persisted state (M_Keys, P_Key
//!   layouts): one component's value each, nothing started.
//! - [`babbling`]: the babbling-port policy's traps counted, ports disabled and enabled again
//!   ([`super::babbling`] owns the counts and deadlines).
//! - [`bringup`]: LIDs onto ports, PortInfo and SwitchInfo configuration, the Init → Armed →
//!   Active walk (not yet a component: its state is still fields of `Sm`).
//! - [`discovery`]: each discovery answer fed into the subnet being built and to the
//!   components that learn from it ([`super::discovery`] owns what exploration keeps).
//! - [`early_route`]: the route made while the ports are configured, and checked to be of the
//!   fabric they left ([`super::lft::Routing`] keeps where it stands).
//! - [`maintenance`]: an operator's hold on sweeping and the ports disabled: which sweeps a
//!   hold stops, the Sets queued and the sweep after them.
//! - [`mastership`]: acting on the election's answers (stand by, take over, hand over, poll,
//!   nudge) and answering SMInfo on the SM's own port ([`super::election`] owns the rules).
//! - [`perf_sweeps`]: when the performance manager may send and start a PM sweep, and stopping
//!   it on a standby ([`super::perf`] owns the reads and the books).
//! - [`reconfig`]: a configuration read again while the SM runs, each change applied as it needs.
//! - [`sa_answers`]: an SA request answered and what follows (census reads, multicast tables,
//!   the standbys' copy); the snapshot a sweep's end builds ([`super::sa`] owns the SA).
//! - [`scheduling`]: the sweeps the trap book, light and quick sweeps and the schedule ask for,
//!   started; the handling of a trap.
//! - [`sync_sections`]: which component each replicated section comes from and goes back to
//!   ([`super::replication`] owns the protocol's state).

pub(super) mod accessors;
pub(super) mod babbling;
pub(super) mod bringup;
pub(super) mod discovery;
pub(super) mod early_route;
pub(super) mod maintenance;
pub(super) mod mastership;
pub(super) mod perf_sweeps;
pub(super) mod reconfig;
pub(super) mod sa_answers;
pub(super) mod scheduling;
pub(super) mod sync_sections;

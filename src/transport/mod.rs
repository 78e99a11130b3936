//! Transports: what carries the SM core's MADs to a fabric and back. Each one owns its clock
//! and its I/O; the core never sees either.
//!
//! - [`sim`]: the in-process simulated fabric of `ibsm-sim`, in virtual time.
//! - [`umad`]: a real (or ibsim-emulated) port through the kernel's `ib_umad` ABI; the
//!   wall-clock loop that runs the core on it is the daemon's (`daemon::umad_loop`).
//! - [`cpu_clock`]: the calling thread's CPU time, which the simulated transport may charge
//!   the SM's computing with instead of the wall clock's.
//! - [`priority`]: the routing thread's lower CPU priority, so that the loop answering MADs
//!   keeps its core while a route is computed.
//!
//! Transports import nothing from the layers above them: the loops that run the core on them
//! for a process, with signals, reloads and the control socket, are the daemon's.

pub mod cpu_clock;
pub mod priority;
pub mod sim;
pub mod umad;

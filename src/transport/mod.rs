//! Transports: what carries the SM core's MADs to a fabric and back. Each one owns its clock
//! and its I/O; the core never sees either.
//!
//! - [`sim`]: the in-process simulated fabric of `ibsm-sim`, in virtual time.
//! - [`umad`]: a real (or ibsim-emulated) port through the kernel's `ib_umad` ABI, and
//!   [`umad_driver`], the wall-clock loop that runs the core on it.

pub mod sim;
pub mod umad;
pub mod umad_driver;

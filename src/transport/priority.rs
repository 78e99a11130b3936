//! The CPU priority of the routing thread: the one OS call besides the umad device's that the
//! daemon makes through libc (a nice increment for the calling thread).
//!
//! A full re-route of a large fabric keeps the engines' worker threads busy for up to a second;
//! the event loop meanwhile answers the SA and the fabric's MADs. On a management node with
//! few cores the two compete, so the routing thread gives way: its nice value is raised by
//! [`ROUTE_THREAD_NICE`] (Linux keeps the nice value per thread, and the threads it starts
//! inherit it), and the scheduler then gives the event loop most of a contended core while the
//! routing uses what is left, and every core when the SA is quiet.

#![allow(unsafe_code)]

/// How far below the event loop the routing thread runs (a nice increment: CFS gives a thread
/// at +10 about a tenth of the weight of one at +0).
pub const ROUTE_THREAD_NICE: i32 = 10;

/// Raises the calling thread's nice value by `by` (lowers its CPU priority), and with it that of
/// the threads it starts from now on. Best effort: an error (none is expected, lowering one's
/// own priority needs no privilege) leaves the priority as it was.
pub fn lower_this_thread(by: i32) {
    // SAFETY: `nice` takes an integer and touches no memory of ours; on Linux it changes the
    // calling thread's nice value only. Its return value is ignored on purpose (see above).
    unsafe {
        libc::nice(by);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The increment applies to the calling thread only, and a thread it starts inherits it.
    #[test]
    fn a_thread_lowers_its_own_priority_and_its_children_inherit_it() {
        // SAFETY (test): getpriority reads the calling thread's nice value.
        let nice_of_this = || unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        let before = nice_of_this();
        let (mine, child) = std::thread::spawn(move || {
            lower_this_thread(3);
            let mine = nice_of_this();
            let child = std::thread::spawn(nice_of_this).join().expect("child");
            (mine, child)
        })
        .join()
        .expect("thread");
        assert_eq!(mine, (before + 3).min(19));
        assert_eq!(child, mine, "a thread started by the routing thread inherits its priority");
        assert_eq!(nice_of_this(), before, "the calling thread of the test is untouched");
    }
}

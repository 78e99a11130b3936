//! The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), for the simulated transport's
//! `ComputeTime::ThreadCpu`: the one libc call of this module.
//!
//! Unlike the wall clock, a thread's CPU time does not run while the thread waits for a core,
//! so on a machine loaded by other work it stays near what the same work takes on a quiet one.

#![allow(unsafe_code)]

/// The calling thread's CPU time, ns since some fixed point of the thread; `None` when the
/// clock cannot be read (no such clock on this system).
pub fn thread_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call, and
    // `clock_gettime` writes only into it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &raw mut ts) };
    if rc != 0 {
        return None;
    }
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u64::try_from(ts.tv_nsec).ok()?;
    Some(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The clock runs while the thread works and not while it waits: a thread blocked while
    /// another works uses less of its CPU time than the worker does.
    #[test]
    fn the_thread_clock_counts_work_and_not_waiting() {
        let (tx, rx) = std::sync::mpsc::channel();
        let before = thread_cpu_ns().expect("the clock reads");
        let worker = std::thread::spawn(move || {
            let start = thread_cpu_ns().expect("the clock reads");
            let mut x = 0u64;
            for i in 0..20_000_000u64 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
            let used = thread_cpu_ns().expect("the clock reads") - start;
            tx.send((used, x)).expect("the waiting thread listens");
        });
        let (worked, _) = rx.recv().expect("the worker sends");
        let waited = thread_cpu_ns().expect("the clock reads") - before;
        worker.join().expect("the worker ends");
        assert!(worked > 0, "the worker's clock ran");
        assert!(waited < worked, "the waiting thread used {waited} ns, the worker {worked} ns");
    }
}

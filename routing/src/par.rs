//! Data parallelism without a thread pool: contiguous chunks of a slice taken from a shared queue
//! by scoped threads, one per available core, the calling thread included. Used by the engines
//! for work that is independent across items (switches, destinations), so the result never
//! depends on the number of threads or on scheduling.
//!
//! If a thread cannot be spawned, the calling thread does its share: no panic, same result.

use std::num::NonZeroUsize;
use std::sync::{Mutex, PoisonError};
use std::thread;

/// Threads to use: the available parallelism, at most 64.
pub(crate) fn threads() -> usize {
    thread::available_parallelism().map_or(1, NonZeroUsize::get).min(64)
}

/// Calls `f(offset, chunk)` on contiguous chunks of `items` (`offset` = index of the chunk's
/// first item), in parallel when there are at least `min_chunk` items per thread.
pub(crate) fn for_chunks<T: Send>(items: &mut [T], min_chunk: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    let n = threads().min(items.len() / min_chunk.max(1)).max(1);
    if n == 1 {
        f(0, items);
        return;
    }
    let size = items.len().div_ceil(n * 4).max(1);
    let queue: Mutex<Vec<(usize, &mut [T])>> =
        Mutex::new(items.chunks_mut(size).enumerate().map(|(i, c)| (i * size, c)).rev().collect());
    let work = || {
        loop {
            let job = queue.lock().unwrap_or_else(PoisonError::into_inner).pop();
            let Some((offset, chunk)) = job else { break };
            f(offset, chunk);
        }
    };
    thread::scope(|scope| {
        for _ in 1..n {
            // A failed spawn only means less help: the calling thread drains the queue anyway.
            let _ = thread::Builder::new().spawn_scoped(scope, work);
        }
        work();
    });
}

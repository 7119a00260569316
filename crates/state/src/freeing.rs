//! Freeing a large state on a thread of its own: dropping millions of entries takes
//! seconds of a core, which a streamlet handing partitions over or stopping (and the
//! process it ends) need not wait for.

/// States with at least this many entries are freed on a thread of their own.
const BACKGROUND_ENTRIES: usize = 100_000;

/// The name of the threads freeing states (at most 15 bytes, as Linux keeps it), which
/// benchmarks look for to wait until a stopped member's memory is freed.
const THREAD_NAME: &str = "runnel-freeing";

/// Drops `state`, which holds `entries` entries: on a thread of its own when it is large
/// (inline if the thread cannot be started).
pub fn free<T: Send + 'static>(state: T, entries: usize) {
    if entries < BACKGROUND_ENTRIES {
        drop(state);
        return;
    }
    // A failed spawn drops the closure, and the state with it, here.
    let _ = std::thread::Builder::new()
        .name(THREAD_NAME.to_owned())
        .spawn(move || drop(state));
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn a_large_state_is_freed_elsewhere_and_a_small_one_at_once() {
        let small = Arc::new(());
        free(small.clone(), 10);
        assert_eq!(Arc::strong_count(&small), 1);

        let large = Arc::new(());
        free(large.clone(), BACKGROUND_ENTRIES);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Arc::strong_count(&large) > 1 {
            assert!(
                Instant::now() < deadline,
                "the freeing thread dropped its part"
            );
            std::thread::yield_now();
        }
    }
}

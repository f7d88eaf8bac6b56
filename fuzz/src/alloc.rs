//! A counting global allocator, so a target can say how much memory one input may use and
//! an allocation sized from a claimed length (rather than from bytes actually received) is
//! caught at once, with the input that caused it, whatever sanitizer the build uses.
//!
//! libFuzzer's own `-malloc_limit_mb` needs a sanitizer's malloc hooks; this works with
//! `--sanitizer none` too, and is per input rather than per process.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The allocator: the system one, counting live bytes.
pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);
static PEAK: AtomicUsize = AtomicUsize::new(0);

#[global_allocator]
static GLOBAL: Counting = Counting;

fn grow(n: usize) {
    let live = LIVE.fetch_add(n, Relaxed).wrapping_add(n);
    if live > PEAK.load(Relaxed) {
        PEAK.store(live, Relaxed);
    }
    let limit = LIMIT.load(Relaxed);
    // A panic being reported (its message, a backtrace) is not the input's doing.
    if live > limit && !std::thread::panicking() {
        // Lift the limit first: reporting must not recurse into this check.
        LIMIT.store(usize::MAX, Relaxed);
        let mut msg = [0u8; 160];
        let mut w = &mut msg[..];
        let _ = writeln!(
            w,
            "omq-fuzz: memory budget exceeded: {} bytes live, budget ends at {} (asked for {})",
            live, limit, n
        );
        let left = w.len();
        let _ = std::io::stderr().write_all(&msg[..msg.len() - left]);
        std::process::abort();
    }
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counters are only
// bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grow(layout.size());
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grow(layout.size());
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            grow(new_size - layout.size());
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Relaxed);
        }
        System.realloc(ptr, layout, new_size)
    }
}

/// While alive, the process aborts (a crash libFuzzer records) as soon as more than `bytes`
/// are allocated on top of what was live when the budget was set.
#[derive(Debug)]
pub struct Budget {
    base: usize,
}

/// Sets a budget for the current input.
pub fn budget(bytes: usize) -> Budget {
    let base = LIVE.load(Relaxed);
    PEAK.store(base, Relaxed);
    LIMIT.store(base.saturating_add(bytes), Relaxed);
    Budget { base }
}

impl Budget {
    /// The most allocated at once since the budget was set.
    pub fn peak(&self) -> usize {
        PEAK.load(Relaxed).saturating_sub(self.base)
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        LIMIT.store(usize::MAX, Relaxed);
    }
}

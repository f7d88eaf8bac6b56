//! What the hostile-peer suite measures about its own process: heap bytes, resident memory,
//! open descriptors and panics on any thread.
//!
//! Each nextest test runs in a process of its own, so the process *is* the victim (plus a small
//! attacker thread whose own allocations are kept to a few megabytes). Two memory measures are
//! taken because they catch different failures:
//!
//! - **Heap bytes**, counted by [`CountingAlloc`], which every hostile test binary installs as
//!   its global allocator. A buffer reserved from a peer's announced frame size shows up here
//!   at once, even though the kernel backs none of its pages until bytes arrive; resident
//!   memory alone would miss a 1 GiB `reserve` that is never written.
//! - **Resident memory** (`VmRSS`, and the peak `VmHWM`, reset at the baseline by writing `5` to
//!   `/proc/self/clear_refs`), which counts what the kernel really backs, including anything
//!   allocated outside the Rust allocator.
//!
//! A case asserts that both peaks stay within its bound over the baseline taken just before
//! the attack.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

/// One mebibyte, the unit bounds are written in.
pub const MB: usize = 1 << 20;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// A global allocator that forwards to [`System`] and counts live and peak heap bytes.
///
/// Install it in a test binary with
/// `#[global_allocator] static A: conformance::hostile::mem::CountingAlloc = CountingAlloc;`.
#[derive(Debug)]
pub struct CountingAlloc;

fn grew(n: usize) {
    let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

fn shrank(n: usize) {
    LIVE.fetch_sub(n, Ordering::Relaxed);
}

// The suite's one `unsafe`: a global allocator cannot be written without it.
#[allow(unsafe_code)]
// SAFETY: every method forwards its arguments unchanged to the system allocator, which upholds
// `GlobalAlloc`'s contract; the bookkeeping is a few relaxed atomics that never allocate, never
// panic (wrapping arithmetic on usize) and never touch the memory handed out.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        p
    }
}

/// True when [`CountingAlloc`] is this binary's global allocator (it has counted something).
pub fn counting_alloc_installed() -> bool {
    let probe = std::hint::black_box(vec![0u8; 64]);
    let seen = LIVE.load(Ordering::Relaxed) >= 64;
    drop(probe);
    seen
}

/// Live heap bytes.
pub fn heap_live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// A `/proc/self/status` field in bytes (`VmRSS`, `VmHWM`).
fn status_bytes(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Resident memory now.
pub fn rss() -> usize {
    status_bytes("VmRSS")
}

/// Open descriptors of this process (entries of `/proc/self/fd`, less the one reading it).
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count().saturating_sub(1))
        .unwrap_or(0)
}

/// Growth over a [`Baseline`], in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Growth {
    /// Heap bytes (counted by [`CountingAlloc`]).
    pub heap: usize,
    /// Resident bytes.
    pub rss: usize,
}

impl Growth {
    /// The larger of the two.
    pub fn max(&self) -> usize {
        self.heap.max(self.rss)
    }
}

impl std::fmt::Display for Growth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "heap +{:.1} MB, rss +{:.1} MB",
            self.heap as f64 / MB as f64,
            self.rss as f64 / MB as f64
        )
    }
}

/// Memory just before an attack; peaks are reset so later peaks belong to the attack.
#[derive(Debug, Clone, Copy)]
pub struct Baseline {
    heap: usize,
    rss: usize,
}

impl Baseline {
    /// Resets the heap peak and the kernel's `VmHWM` and records where both stand.
    pub fn take() -> Baseline {
        let heap = heap_live();
        PEAK.store(heap, Ordering::Relaxed);
        // Resetting VmHWM needs Linux 4.0; where it fails the peak is only less precise.
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        Baseline { heap, rss: rss() }
    }

    /// Peak growth since the baseline.
    pub fn peak(&self) -> Growth {
        Growth {
            heap: PEAK.load(Ordering::Relaxed).saturating_sub(self.heap),
            rss: status_bytes("VmHWM").saturating_sub(self.rss),
        }
    }

    /// Growth now (memory still held).
    pub fn now(&self) -> Growth {
        Growth {
            heap: heap_live().saturating_sub(self.heap),
            rss: rss().saturating_sub(self.rss),
        }
    }

    /// Heap growth now, cheap enough to poll between an attacker's writes.
    pub fn heap_now(&self) -> usize {
        heap_live().saturating_sub(self.heap)
    }
}

static PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Records every panic of every thread from now on (then runs the usual hook), so a panic
/// inside a runtime's task, which tokio catches and the process survives, still fails the case.
pub fn watch_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let thread = std::thread::current();
            let line = format!("thread '{}': {info}", thread.name().unwrap_or("?"));
            PANICS.lock().unwrap_or_else(|p| p.into_inner()).push(line);
            previous(info);
        }));
    });
}

/// The panics recorded so far.
pub fn panics() -> Vec<String> {
    PANICS.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

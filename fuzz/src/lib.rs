//! Shared pieces of the omq-core fuzz targets: the memory budget, fixed keys and entropy,
//! session set-ups, the session harness the mechanism targets share, and the seed corpus
//! generator (`cargo run --example seeds`).
//!
//! Known omq-core bugs that are being fixed elsewhere are worked around so fuzzing can go on;
//! each workaround names its bug and is switched off by `OMQ_FUZZ_CHECK_KNOWN=1`, which turns
//! the check back on to confirm a fix.

pub mod alloc;
pub mod reader;
pub mod seeds;
pub mod session;
pub mod setup;

use std::sync::OnceLock;
use std::time::Instant;

/// True when `OMQ_FUZZ_CHECK_KNOWN` is set (and not `0`): known bugs are checked too,
/// instead of being worked around.
pub fn check_known() -> bool {
    static FLAG: OnceLock<bool> = OnceLock::new();
    *FLAG.get_or_init(|| {
        std::env::var("OMQ_FUZZ_CHECK_KNOWN").is_ok_and(|v| !v.is_empty() && v != "0")
    })
}

/// The base of every fake clock: read once, so only offsets from it matter.
pub fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

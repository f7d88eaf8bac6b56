//! Shared pieces of the omq-core fuzz targets: the memory budget, fixed keys and entropy,
//! session set-ups, the session harness the mechanism targets share, and the seed corpus
//! generator (`cargo run --example seeds`).
//!
//! The bugs the first fuzzing runs met (issue 12's findings and four of the fuzzer's own) are
//! fixed in omq-core, and every check is on. Each old workaround still names its bug and can
//! be switched back on with `OMQ_FUZZ_CHECK_KNOWN=0`, to fuzz an older omq-core.

pub mod alloc;
pub mod reader;
pub mod seeds;
pub mod session;
pub mod setup;

use std::sync::OnceLock;
use std::time::Instant;

/// True unless `OMQ_FUZZ_CHECK_KNOWN=0`: the once-known bugs are checked (they are fixed),
/// instead of being worked around.
pub fn check_known() -> bool {
    static FLAG: OnceLock<bool> = OnceLock::new();
    *FLAG.get_or_init(|| std::env::var("OMQ_FUZZ_CHECK_KNOWN").map_or(true, |v| v != "0"))
}

/// The base of every fake clock: read once, so only offsets from it matter.
pub fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

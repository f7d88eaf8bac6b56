//! A CURVE server session fed a peer's stream: see `omq_fuzz::session` for the input format and
//! the invariants checked.
#![no_main]

use libfuzzer_sys::fuzz_target;
use omq_fuzz::setup::Side;

fuzz_target!(|data: &[u8]| {
    omq_fuzz::session::run(Side::CurveServer, data);
});

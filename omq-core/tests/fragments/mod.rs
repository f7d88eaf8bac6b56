//! Cutting a byte stream into the pieces a network might deliver, and feeding them to a
//! session while checking what it promises of its buffer, for the property tests.

use std::time::{Duration, Instant};

use bytes::BytesMut;
use omq_core::Session;
use proptest::prelude::*;

/// Cuts `data` at the given points (taken modulo its length + 1, sorted, deduplicated): the
/// pieces, in order, some possibly empty, together `data`.
pub(crate) fn split_at_points(data: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
    points.sort_unstable();
    points.dedup();
    let mut out = Vec::new();
    let mut last = 0;
    for p in points {
        out.push(data[last..p].to_vec());
        last = p;
    }
    out.push(data[last..].to_vec());
    out
}

/// Feeds `input` to `s` in the pieces `cuts` makes, draining its events and output after each
/// (and, with `expire_each`, running its timers an hour ahead), and checks what a session
/// promises of its buffer on the way: once failed it stays failed; while it has not, nothing
/// decodable is left behind, the read room never follows a size the peer merely announced,
/// and with MAXMSGSIZE (`max`) at most one frame header beyond it stays buffered. Returns
/// whether the session failed.
pub(crate) fn feed_checked(
    s: &mut Session,
    input: &[u8],
    cuts: &[usize],
    max: Option<u64>,
    now: Instant,
    expire_each: bool,
) -> Result<bool, TestCaseError> {
    let mut buf = BytesMut::new();
    let mut failed = false;
    for piece in split_at_points(input, cuts) {
        buf.extend_from_slice(&piece);
        let r = s.handle_input(&mut buf, now);
        if failed {
            prop_assert!(r.is_err(), "a failed session recovered");
        }
        failed |= r.is_err();
        while s.poll_event().is_some() {}
        while s.poll_transmit().is_some() {}
        if !failed {
            prop_assert!(!s.input_pending(&buf), "a whole frame was left undecoded");
            prop_assert!(
                s.read_hint(&buf) <= omq_core::session::READ_BATCH.max(buf.len()),
                "read room {} for {} buffered",
                s.read_hint(&buf),
                buf.len()
            );
            if let (Some(max), Some(_)) = (max, s.peer_greeting()) {
                prop_assert!(buf.len() as u64 <= max + 9 || s.error().is_some());
            }
        }
        if expire_each {
            let _ = s.handle_timeout(now + Duration::from_secs(3600));
        }
    }
    Ok(failed)
}

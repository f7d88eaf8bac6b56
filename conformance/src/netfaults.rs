//! Pieces the network fault tests and the soak share: checkable payloads, a small seeded
//! generator, timeouts on any runtime, and samples of a process's memory and descriptors.

use std::future::Future;
use std::time::Duration;

use omq_driver::{Message, Runtime};

/// The body of message `seq` of stream `tag`: its length and every byte follow from both, so a
/// receiver can tell a lost, duplicated, reordered or corrupted message from the right one.
pub fn body(tag: u64, seq: u64, max_len: usize) -> Vec<u8> {
    let h = mix(tag ^ seq.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let len = (h % (max_len as u64 + 1)) as usize;
    (0..len)
        .map(|i| (mix(h.wrapping_add(i as u64 / 8)) >> ((i % 8) * 8)) as u8)
        .collect()
}

/// Message `seq` of stream `tag`: a 16-byte header (tag, seq), then its [`body`].
pub fn numbered(tag: u64, seq: u64, max_len: usize) -> Message {
    let mut head = tag.to_le_bytes().to_vec();
    head.extend_from_slice(&seq.to_le_bytes());
    Message::multipart([head, body(tag, seq, max_len)])
}

/// Checks `m` is an intact [`numbered`] message of stream `tag` (its last two parts: envelopes
/// before them are ignored) and returns its sequence number.
pub fn check(m: &Message, tag: u64, max_len: usize) -> Result<u64, String> {
    let parts = m.parts();
    if parts.len() < 2 {
        return Err(format!("{} parts, want at least 2", parts.len()));
    }
    let (head, b) = (&parts[parts.len() - 2], &parts[parts.len() - 1]);
    if head.len() != 16 {
        return Err(format!("header of {} bytes", head.len()));
    }
    let t = u64::from_le_bytes(head[..8].try_into().expect("8 bytes"));
    let seq = u64::from_le_bytes(head[8..].try_into().expect("8 bytes"));
    if t != tag {
        return Err(format!("stream {t}, want {tag}"));
    }
    if b[..] != body(tag, seq, max_len)[..] {
        return Err(format!("message {seq} of stream {tag} corrupted"));
    }
    Ok(seq)
}

/// splitmix64's finaliser.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A seeded generator for choices in tests (not cryptographic).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// From a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(mix(seed) | 1)
    }
    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }
    /// Uniform in `lo..hi` (hi > lo).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo)
    }
    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

/// Sleeps on runtime `R`.
pub async fn sleep<R: Runtime>(d: Duration) {
    R::sleep_until(R::now() + d).await;
}

/// Runs `f` for at most `d` on runtime `R`; None if the time ran out.
pub async fn timeout<R: Runtime, F: Future>(d: Duration, f: F) -> Option<F::Output> {
    use futures_util::future::{select, Either};
    let f = std::pin::pin!(f);
    let t = std::pin::pin!(sleep::<R>(d));
    match select(f, t).await {
        Either::Left((v, _)) => Some(v),
        Either::Right(_) => None,
    }
}

/// Resident memory of this process in bytes.
pub fn self_rss() -> u64 {
    crate::netns::rss_bytes(std::process::id()).unwrap_or(0)
}

/// Open descriptors of this process.
pub fn self_fds() -> usize {
    crate::netns::open_fds(std::process::id()).unwrap_or(0)
}

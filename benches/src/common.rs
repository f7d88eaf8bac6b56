//! What every implementation's cell shares: how the two sides are placed on threads, how the
//! timestamps of a run become metrics, and the endpoints a cell uses.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::spec::{Cell, Transport};

/// Metric name and value, as the child prints them.
pub type Samples = Vec<(String, f64)>;

/// First byte of a PUB/SUB message: a paced data message.
pub const TAG_DATA: u8 = b'D';
/// First byte of a PUB/SUB message: a flood-phase message.
pub const TAG_FLOOD: u8 = b'F';
/// First byte of a PUB/SUB message: a probe sent until every subscriber has seen one.
pub const TAG_HELLO: u8 = b'H';
/// First byte of a PUB/SUB message: the end marker, repeated until every subscriber saw it.
pub const TAG_END: u8 = b'E';

/// How often the publisher repeats a probe or end marker.
pub const PROBE_EVERY: Duration = Duration::from_millis(1);

/// A current-thread tokio runtime (I/O and timers enabled).
pub fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Worker threads of the multi-threaded variant: one per core of this machine.
pub fn mt_workers() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// Runs two sides to completion. Single-threaded layout: each side on its own OS thread with
/// its own current-thread runtime (so a socket's connection tasks run on its side's thread).
/// Multi-threaded layout: both sides spawned as tasks on one multi-threaded runtime with one
/// worker per core, free to move between workers.
pub fn run_pair<A, B>(mt: bool, a: A, b: B) -> (A::Output, B::Output)
where
    A: Future + Send + 'static,
    A::Output: Send + 'static,
    B: Future + Send + 'static,
    B::Output: Send + 'static,
{
    if mt {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(mt_workers())
            .enable_all()
            .build()
            .expect("tokio runtime");
        rt.block_on(async move {
            let ha = tokio::spawn(a);
            let hb = tokio::spawn(b);
            (ha.await.expect("side a"), hb.await.expect("side b"))
        })
    } else {
        let ta = std::thread::Builder::new()
            .name("side-a".into())
            .spawn(move || current_thread().block_on(a))
            .expect("thread");
        let tb = std::thread::Builder::new()
            .name("side-b".into())
            .spawn(move || current_thread().block_on(b))
            .expect("thread");
        (ta.join().expect("side a"), tb.join().expect("side b"))
    }
}

/// Runs three parties, each built and run on an OS thread of its own with its own
/// current-thread runtime (the single-threaded layout of [`run_pair`], for the proxy cells).
/// Each party is a closure that builds its future on its thread, so the future need not be
/// `Send` (zmq.rs's `proxy` future is not).
pub fn run_three<A, FA, B, FB, C, FC>(a: A, b: B, c: C) -> (FA::Output, FB::Output, FC::Output)
where
    A: FnOnce() -> FA + Send + 'static,
    FA: Future + 'static,
    FA::Output: Send + 'static,
    B: FnOnce() -> FB + Send + 'static,
    FB: Future + 'static,
    FB::Output: Send + 'static,
    C: FnOnce() -> FC + Send + 'static,
    FC: Future + 'static,
    FC::Output: Send + 'static,
{
    let spawn = |name: &str| std::thread::Builder::new().name(name.into());
    let ta = spawn("side-a")
        .spawn(move || current_thread().block_on(a()))
        .expect("thread");
    let tb = spawn("side-b")
        .spawn(move || current_thread().block_on(b()))
        .expect("thread");
    let tc = spawn("side-c")
        .spawn(move || current_thread().block_on(c()))
        .expect("thread");
    (
        ta.join().expect("side a"),
        tb.join().expect("side b"),
        tc.join().expect("side c"),
    )
}

/// The endpoint a receiving side binds, in the syntax of libzmq and omq (`*` ports are
/// translated by the implementations that need it).
pub fn bind_endpoint(cell: &Cell) -> String {
    match cell.transport {
        Transport::Tcp => "tcp://127.0.0.1:0".into(),
        Transport::Ipc => format!("ipc://{}", ipc_path()),
        Transport::Inproc => "inproc://omq-bench".into(),
    }
}

/// The filesystem path of this process's ipc socket (one cell per process, so the pid is
/// enough to keep concurrent runs apart).
pub fn ipc_path() -> String {
    format!("/tmp/omq-bench-{}.ipc", std::process::id())
}

/// The payload every implementation copies into each message it sends.
pub fn payload(size: usize) -> Vec<u8> {
    (0..size).map(|i| (i % 251) as u8).collect()
}

/// A PUB/SUB payload: the tag, a 4-byte sequence number (set per message), then filler.
pub fn tagged(size: usize, tag: u8) -> Vec<u8> {
    let mut p = payload(size.max(5));
    p[0] = tag;
    set_seq(&mut p, 0);
    p
}

/// Writes the sequence number of a tagged payload.
pub fn set_seq(p: &mut [u8], seq: usize) {
    p[1..5].copy_from_slice(&(seq as u32).to_le_bytes());
}

/// Reads the sequence number of a tagged payload (0 if it is too short).
pub fn seq_of(p: &[u8]) -> usize {
    p.get(1..5)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
}

/// Timestamps of a PUSH/PULL run.
#[derive(Debug, Clone, Copy)]
pub struct ThrTimes {
    /// Just before the first measured send.
    pub first_send: Instant,
    /// Just after the first measured message was received.
    pub first_recv: Instant,
    /// Just after the last measured message was received.
    pub last_recv: Instant,
}

impl ThrTimes {
    /// Receiver-side msg/s (as perf/local_thr: count over first-to-last receive) and
    /// end-to-end msg/s (count over first send to last receive).
    pub fn metrics(&self, n: usize) -> Samples {
        let recv = self.last_recv.duration_since(self.first_recv).as_secs_f64();
        let e2e = self.last_recv.duration_since(self.first_send).as_secs_f64();
        vec![
            ("recv_msg_s".into(), n as f64 / recv.max(1e-9)),
            ("e2e_msg_s".into(), n as f64 / e2e.max(1e-9)),
        ]
    }
}

/// p50, p99 and mean of round-trip times, in microseconds.
pub fn latency_metrics(rtts: &mut [Duration]) -> Samples {
    rtts.sort_unstable();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let pick = |q: f64| us(rtts[((rtts.len() as f64 * q) as usize).min(rtts.len() - 1)]);
    let mean = rtts.iter().map(|d| us(*d)).sum::<f64>() / rtts.len() as f64;
    vec![
        ("rtt_p50_us".into(), pick(0.50)),
        ("rtt_p99_us".into(), pick(0.99)),
        ("rtt_mean_us".into(), mean),
    ]
}

/// Most data messages the publisher lets any subscriber fall behind by in the paced phase
/// (half the default HWM, so nothing is dropped while subscribers keep up).
pub const WINDOW: usize = 500;

/// A subscriber reads the clock every this many data messages.
const TIME_EVERY: usize = 64;

/// A subscriber reports its progress every this many data messages.
const PROGRESS_EVERY: usize = WINDOW / 4;

/// How long the publisher waits for subscribers that make no progress before it goes on (they
/// lost messages: the share delivered shows it).
pub const STALL: Duration = Duration::from_millis(5);

/// What one subscriber saw.
#[derive(Debug, Clone, Copy)]
pub struct SubResult {
    /// Paced data messages received.
    pub received: usize,
    /// When the last paced data message arrived.
    pub last: Option<Instant>,
    /// Flood-phase messages received.
    pub flood_received: usize,
}

/// Timestamps of a PUB/SUB run.
#[derive(Debug, Clone)]
pub struct PubTimes {
    /// Just before the first paced data message was published.
    pub first_send: Instant,
    /// Just before the first flood message was published.
    pub flood_first: Instant,
    /// Just after the last flood message was published.
    pub flood_last: Instant,
}

/// Metrics of a PUB/SUB run. Paced phase (the publisher keeps every subscriber within
/// [`WINDOW`] messages): aggregate delivered msg/s and share delivered. Flood phase (publish as
/// fast as possible; PUB drops at HWM): publisher msg/s and share delivered.
pub fn pubsub_metrics(n: usize, p: &PubTimes, subs: &[SubResult]) -> Samples {
    let total: usize = subs.iter().map(|s| s.received).sum();
    let flood: usize = subs.iter().map(|s| s.flood_received).sum();
    let last = subs.iter().filter_map(|s| s.last).max();
    let agg = last.map_or(0.0, |l| {
        total as f64 / l.duration_since(p.first_send).as_secs_f64().max(1e-9)
    });
    let flood_send = p.flood_last.duration_since(p.flood_first).as_secs_f64();
    let all = (n * subs.len()) as f64;
    vec![
        ("agg_msg_s".into(), agg),
        ("delivered_pct".into(), 100.0 * total as f64 / all),
        ("flood_pub_msg_s".into(), n as f64 / flood_send.max(1e-9)),
        ("flood_delivered_pct".into(), 100.0 * flood as f64 / all),
    ]
}

/// What the publisher and its subscribers share (in-process, outside the sockets): how far
/// each subscriber got, who has seen a probe, who has seen the end.
#[derive(Debug)]
pub struct Fanout {
    /// Paced messages per subscriber.
    pub n: usize,
    /// Per subscriber: one past the highest paced sequence number received.
    counts: Vec<AtomicUsize>,
    ready: AtomicUsize,
    done: AtomicUsize,
    notify: tokio::sync::Notify,
    publisher: std::sync::OnceLock<std::thread::Thread>,
}

impl Fanout {
    /// Shared state for `subs` subscribers of `n` paced messages.
    pub fn new(n: usize, subs: usize) -> Arc<Fanout> {
        Arc::new(Fanout {
            n,
            counts: (0..subs).map(|_| AtomicUsize::new(0)).collect(),
            ready: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            notify: tokio::sync::Notify::new(),
            publisher: std::sync::OnceLock::new(),
        })
    }

    /// Subscribers ready (their subscription is in place: they received a probe).
    pub fn ready(&self) -> usize {
        self.ready.load(Ordering::Acquire)
    }

    /// Subscribers that received the end marker.
    pub fn done(&self) -> usize {
        self.done.load(Ordering::Acquire)
    }

    fn min(&self) -> usize {
        self.counts
            .iter()
            .map(|c| c.load(Ordering::Acquire))
            .min()
            .unwrap_or(0)
    }

    fn progress(&self) {
        self.notify.notify_one();
        if let Some(t) = self.publisher.get() {
            t.unpark();
        }
    }

    /// Async publisher: waits until every subscriber has seen a paced message numbered
    /// `target - 1` or later, or until no subscriber has made progress for [`STALL`] (a
    /// message was dropped); false in that case.
    pub async fn wait_async(&self, target: usize) -> bool {
        loop {
            let m = self.min();
            if m >= target {
                return true;
            }
            if tokio::time::timeout(STALL, self.notify.notified())
                .await
                .is_err()
                && self.min() == m
            {
                return false;
            }
        }
    }

    /// As [`Fanout::wait_async`] on any runtime: `sleep` is the runtime's timer.
    pub async fn wait_with<S: Future<Output = ()>>(
        &self,
        target: usize,
        sleep: impl Fn(Duration) -> S,
    ) -> bool {
        loop {
            let m = self.min();
            if m >= target {
                return true;
            }
            let notified = std::pin::pin!(self.notify.notified());
            let timer = std::pin::pin!(sleep(STALL));
            if let futures_util::future::Either::Right(_) =
                futures_util::future::select(notified, timer).await
            {
                if self.min() == m {
                    return false;
                }
            }
        }
    }

    /// Blocking publisher: as [`Fanout::wait_async`], parking the calling thread.
    pub fn wait_blocking(&self, target: usize) -> bool {
        let _ = self.publisher.set(std::thread::current());
        let mut since = Instant::now();
        let mut last = self.min();
        loop {
            let m = self.min();
            if m >= target {
                return true;
            }
            if m != last {
                last = m;
                since = Instant::now();
            } else if since.elapsed() >= STALL {
                return false;
            }
            std::thread::park_timeout(STALL / 4);
        }
    }

    /// The bookkeeping of subscriber `i`.
    pub fn tally(self: &Arc<Self>, i: usize) -> SubTally {
        SubTally {
            fanout: self.clone(),
            index: i,
            ready: false,
            result: SubResult {
                received: 0,
                last: None,
                flood_received: 0,
            },
        }
    }
}

/// One subscriber's bookkeeping, fed every message it receives.
#[derive(Debug)]
pub struct SubTally {
    fanout: Arc<Fanout>,
    index: usize,
    ready: bool,
    /// What it saw so far.
    pub result: SubResult,
}

impl SubTally {
    /// Accounts for one received message (its first part); true at the end marker.
    pub fn on_message(&mut self, msg: &[u8]) -> bool {
        match msg.first().copied() {
            Some(TAG_DATA) => {
                let r = &mut self.result;
                r.received += 1;
                let progress = seq_of(msg) + 1;
                // Reading the clock costs as much as a small message: read it every
                // TIME_EVERY messages and at the last one (if the last ones were dropped, the
                // end time is early by at most TIME_EVERY messages).
                if r.received.is_multiple_of(TIME_EVERY) || progress == self.fanout.n {
                    r.last = Some(Instant::now());
                }
                self.fanout.counts[self.index].fetch_max(progress, Ordering::AcqRel);
                if r.received.is_multiple_of(PROGRESS_EVERY) || progress == self.fanout.n {
                    self.fanout.progress();
                }
                false
            }
            Some(TAG_FLOOD) => {
                self.result.flood_received += 1;
                false
            }
            Some(TAG_HELLO) => {
                if !self.ready {
                    self.ready = true;
                    self.fanout.ready.fetch_add(1, Ordering::AcqRel);
                }
                false
            }
            Some(TAG_END) => {
                self.fanout.done.fetch_add(1, Ordering::AcqRel);
                true
            }
            _ => false,
        }
    }
}

//! What a run measures: the cells of each pattern, their message counts, and the order they
//! run in (every repeat goes over every cell once, and each cell's implementations run one
//! after the other in an order that rotates between repeats).

use std::time::Duration;

use crate::spec::{Cell, Impl, Pattern, Transport};

/// Run-wide settings from the command line.
#[derive(Debug, Clone)]
pub struct Config {
    /// Fewer sizes, messages and repeats.
    pub quick: bool,
    /// Repeats of every cell.
    pub repeats: usize,
    /// Patterns to measure (all by default).
    pub patterns: Vec<Pattern>,
    /// Transports to measure (all by default).
    pub transports: Vec<Transport>,
    /// Implementations to measure (all by default).
    pub impls: Vec<Impl>,
    /// Message sizes for PUSH/PULL (the defaults of the mode unless given).
    pub sizes: Option<Vec<usize>>,
    /// Count allocations per message.
    pub allocs: bool,
    /// Count instructions per message under callgrind.
    pub callgrind: bool,
    /// Scale every message count by this factor.
    pub scale: f64,
    /// Time limit of one child process.
    pub timeout: Duration,
}

impl Config {
    /// The settings of a full run, or of a quick one.
    pub fn new(quick: bool) -> Config {
        Config {
            quick,
            repeats: if quick { 3 } else { 5 },
            patterns: vec![
                Pattern::PushPull,
                Pattern::ReqRep,
                Pattern::PubSub,
                Pattern::Curve,
                Pattern::Proxy,
                Pattern::ProxyLat,
                Pattern::CurveClients,
            ],
            transports: vec![Transport::Tcp, Transport::Ipc, Transport::Inproc],
            impls: Impl::ALL.to_vec(),
            sizes: None,
            allocs: true,
            callgrind: true,
            scale: 1.0,
            timeout: Duration::from_secs(if quick { 30 } else { 90 }),
        }
    }

    /// PUSH/PULL message sizes.
    pub fn thr_sizes(&self) -> Vec<usize> {
        self.sizes.clone().unwrap_or_else(|| {
            if self.quick {
                vec![64, 1024, 16384]
            } else {
                vec![8, 64, 256, 1024, 4096, 16384, 65536]
            }
        })
    }

    /// REQ/REP message sizes.
    pub fn lat_sizes(&self) -> Vec<usize> {
        if self.quick {
            vec![64]
        } else {
            vec![64, 1024, 16384]
        }
    }

    /// PUB/SUB message sizes.
    pub fn pubsub_sizes(&self) -> Vec<usize> {
        if self.quick {
            vec![64]
        } else {
            vec![64, 1024]
        }
    }

    /// Proxy throughput message sizes (tcp only): 128 B, and 1 KiB in a full run.
    pub fn proxy_sizes(&self) -> Vec<usize> {
        if self.quick {
            vec![128]
        } else {
            vec![128, 1024]
        }
    }

    /// Proxy round-trip message sizes (tcp only): 64 B, and 1 KiB in a full run.
    pub fn proxylat_sizes(&self) -> Vec<usize> {
        if self.quick {
            vec![64]
        } else {
            vec![64, 1024]
        }
    }

    /// Proxy throughput messages for a size: half the PUSH/PULL count (every message crosses
    /// two connections and a third party on the same two cores, so it runs at about half the
    /// PUSH/PULL rate or less, and each run lasts about as long).
    pub fn proxy_count(&self, size: usize) -> usize {
        (self.thr_count(size) / 2).max(10)
    }

    /// CURVE PUSH/PULL message sizes (tcp only).
    pub fn curve_sizes(&self) -> Vec<usize> {
        vec![64, 1024, 16384]
    }

    /// CURVE PUSH/PULL messages for a size: a quarter of the plain count (CURVE runs at a
    /// fraction of plain speed, and the run must stay within its time).
    pub fn curve_count(&self, size: usize) -> usize {
        (self.thr_count(size) / 4).max(10)
    }

    fn scaled(&self, n: usize) -> usize {
        ((n as f64 * self.scale) as usize).max(10)
    }

    /// PUSH/PULL messages for a size: enough for a stable median, few enough for the run to
    /// stay within its time.
    pub fn thr_count(&self, size: usize) -> usize {
        let full = match size {
            0..=64 => 2_000_000,
            65..=256 => 1_500_000,
            257..=1024 => 500_000,
            1025..=4096 => 150_000,
            4097..=16384 => 40_000,
            _ => 15_000,
        };
        self.scaled(if self.quick { full / 4 } else { full })
    }

    /// REQ/REP round trips measured, and warm-up round trips.
    pub fn lat_counts(&self) -> (usize, usize) {
        if self.quick {
            (self.scaled(2_000), 200)
        } else {
            (self.scaled(10_000), 1_000)
        }
    }

    /// PUB/SUB messages published.
    pub fn pubsub_count(&self, size: usize) -> usize {
        let full = if size <= 64 { 200_000 } else { 100_000 };
        self.scaled(if self.quick { full / 2 } else { full })
    }

    /// The cell groups of the run: each group is one measurement point, with one cell per
    /// implementation (those that lack the transport are left out and noted).
    pub fn groups(&self) -> Vec<Vec<Cell>> {
        let mut groups = Vec::new();
        let impls_for = |p: Pattern| -> Vec<Impl> {
            self.impls
                .iter()
                .copied()
                .filter(|i| !(p == Pattern::PubSub && *i == Impl::Raw))
                .filter(|i| p != Pattern::Curve || i.has_curve())
                .filter(|i| !p.is_scale() || i.is_omq() || *i == Impl::Libzmq)
                .collect()
        };
        for &p in &self.patterns {
            let (sizes, subs_list): (Vec<usize>, Vec<usize>) = match p {
                Pattern::PushPull => (self.thr_sizes(), vec![1]),
                Pattern::ReqRep => (self.lat_sizes(), vec![1]),
                Pattern::PubSub => (self.pubsub_sizes(), vec![1, 8]),
                Pattern::Curve => (self.curve_sizes(), vec![1]),
                Pattern::Proxy => (self.proxy_sizes(), vec![1]),
                Pattern::ProxyLat => (self.proxylat_sizes(), vec![1]),
                Pattern::Scale => (vec![64], SCALE_PEERS.to_vec()),
                Pattern::ScalePub => (vec![1024], SCALE_PEERS.to_vec()),
                Pattern::ScaleCurve => (vec![1024], SCALE_CURVE_PEERS.to_vec()),
                Pattern::CurveClients => (CURVE_CLIENTS_SIZES.to_vec(), CURVE_CLIENTS.to_vec()),
            };
            for &t in &self.transports {
                // REQ/REP latency is measured over tcp and ipc; inproc only for PUSH/PULL
                // throughput; PUB/SUB, CURVE and the proxy cells over tcp only.
                if t == Transport::Inproc && p != Pattern::PushPull {
                    continue;
                }
                if (p.is_scale()
                    || matches!(
                        p,
                        Pattern::PubSub | Pattern::Curve | Pattern::Proxy | Pattern::ProxyLat
                    ))
                    && t != Transport::Tcp
                {
                    continue;
                }
                for &subs in &subs_list {
                    for &size in &sizes {
                        let (count, warmup) = match p {
                            Pattern::PushPull => {
                                let n = self.thr_count(size);
                                (n, (n / 10).min(1000))
                            }
                            Pattern::ReqRep => self.lat_counts(),
                            Pattern::PubSub => (self.pubsub_count(size), 0),
                            Pattern::Curve => {
                                let n = self.curve_count(size);
                                (n, (n / 10).min(1000))
                            }
                            Pattern::Proxy => {
                                let n = self.proxy_count(size);
                                (n, (n / 10).min(1000))
                            }
                            Pattern::ProxyLat => self.lat_counts(),
                            Pattern::Scale => {
                                (self.scaled(if self.quick { 100_000 } else { 200_000 }), 0)
                            }
                            Pattern::ScaleCurve => {
                                (self.scaled(if self.quick { 100_000 } else { 200_000 }), 0)
                            }
                            // Sealed in advance: the peers hold them all in memory (about
                            // 220 MB at 1 KiB, 330 MB at 16 KiB, full mode).
                            Pattern::CurveClients => {
                                let full = if size <= 1024 { 200_000 } else { 20_000 };
                                (self.scaled(if self.quick { full / 2 } else { full }), 0)
                            }
                            // Deliveries (messages × subscribers) of about 1M, or 2M.
                            Pattern::ScalePub => (
                                self.scaled(if self.quick { 1_000_000 } else { 2_000_000 } / subs),
                                0,
                            ),
                        };
                        let cells = impls_for(p)
                            .into_iter()
                            .map(|imp| Cell {
                                imp,
                                transport: t,
                                pattern: p,
                                size,
                                count: if imp == Impl::Raw && p == Pattern::PushPull {
                                    count * raw_factor(size)
                                } else {
                                    count
                                },
                                warmup,
                                subs,
                            })
                            .collect::<Vec<_>>();
                        if !cells.is_empty() {
                            groups.push(cells);
                        }
                    }
                }
            }
        }
        groups
    }
}

/// Peers of the scale cells (not run unless asked for: `--only scale,scalepub`).
pub const SCALE_PEERS: [usize; 2] = [1_000, 10_000];

/// Peer counts of the CURVE scale cell: one client and four (does the crypto of several
/// connections run in parallel?), and a thousand (how fast are CURVE handshakes served?).
pub const SCALE_CURVE_PEERS: [usize; 3] = [1, 4, 1_000];

/// Clients of the `curveclients` cell: one, and the four.
pub const CURVE_CLIENTS: [usize; 2] = [1, 4];

/// Message sizes of the `curveclients` cell.
pub const CURVE_CLIENTS_SIZES: [usize; 2] = [1024, 16 * 1024];

/// How many times more messages the raw stream carries in a PUSH/PULL cell: it runs 3–20×
/// faster than any ZeroMQ at small sizes, and a run of a few milliseconds would measure
/// scheduler noise rather than the stream. Rates do not depend on the count once the stream is
/// in steady state (warm-up excluded), so this only makes its runs last about as long.
pub fn raw_factor(size: usize) -> usize {
    match size {
        0..=64 => 8,
        65..=1024 => 4,
        1025..=4096 => 2,
        _ => 1,
    }
}

/// The order of a run: for each repeat, every group, its implementations rotated by the repeat
/// and group index so that no implementation always runs first (or right after another).
pub fn schedule(groups: &[Vec<Cell>], repeats: usize) -> Vec<(usize, Cell)> {
    let mut order = Vec::new();
    for r in 0..repeats {
        for (g, cells) in groups.iter().enumerate() {
            let k = cells.len();
            for j in 0..k {
                order.push((r, cells[(j + r + g) % k].clone()));
            }
        }
    }
    order
}

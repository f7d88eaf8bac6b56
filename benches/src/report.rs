//! Results: the samples of every repeat, their medians and spread, the machine they were taken
//! on, and the TSV and markdown written at the end of a run.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::spec::Impl;

/// Where a value belongs: implementation, transport, pattern (`pubsub-N` with N subscribers),
/// message size, metric.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// Implementation name.
    pub imp: String,
    /// Transport name (`-` where none applies).
    pub transport: String,
    /// Pattern label.
    pub pattern: String,
    /// Message size in bytes.
    pub size: usize,
    /// Metric name.
    pub metric: String,
}

impl Key {
    /// A key.
    pub fn new(imp: &str, transport: &str, pattern: &str, size: usize, metric: &str) -> Key {
        Key {
            imp: imp.into(),
            transport: transport.into(),
            pattern: pattern.into(),
            size,
            metric: metric.into(),
        }
    }
}

/// Median, min, max and number of samples.
#[derive(Debug, Clone, Copy)]
pub struct Stat {
    /// The median.
    pub median: f64,
    /// The smallest sample.
    pub min: f64,
    /// The largest sample.
    pub max: f64,
    /// How many samples.
    pub n: usize,
}

impl Stat {
    /// Statistics of a non-empty sample.
    pub fn of(samples: &[f64]) -> Option<Stat> {
        if samples.is_empty() {
            return None;
        }
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let m = s.len() / 2;
        let median = if s.len() % 2 == 1 {
            s[m]
        } else {
            (s[m - 1] + s[m]) / 2.0
        };
        Some(Stat {
            median,
            min: s[0],
            max: s[s.len() - 1],
            n: s.len(),
        })
    }
}

/// Everything a run measured.
#[derive(Debug, Default)]
pub struct Store {
    /// Every sample of every metric, in the order taken.
    pub samples: BTreeMap<Key, Vec<f64>>,
    /// Why a cell has no (or fewer) values: "n/a (...)", "failed: ...", "timeout".
    pub notes: BTreeMap<(String, String, String, usize), String>,
}

impl Store {
    /// Adds one sample.
    pub fn add(&mut self, key: Key, value: f64) {
        self.samples.entry(key).or_default().push(value);
    }

    /// Notes why a cell lacks values (the first note per cell is kept).
    pub fn note(&mut self, imp: &str, transport: &str, pattern: &str, size: usize, why: &str) {
        self.notes
            .entry((imp.into(), transport.into(), pattern.into(), size))
            .or_insert_with(|| why.to_string());
    }

    /// The statistics of one metric.
    pub fn stat(&self, key: &Key) -> Option<Stat> {
        self.samples.get(key).and_then(|s| Stat::of(s))
    }

    /// The note of a cell.
    pub fn note_of(&self, imp: &str, transport: &str, pattern: &str, size: usize) -> Option<&str> {
        self.notes
            .get(&(imp.into(), transport.into(), pattern.into(), size))
            .map(String::as_str)
    }

    /// Median of a metric.
    pub fn median(
        &self,
        imp: &str,
        transport: &str,
        pattern: &str,
        size: usize,
        metric: &str,
    ) -> Option<f64> {
        self.stat(&Key::new(imp, transport, pattern, size, metric))
            .map(|s| s.median)
    }

    /// TSV of medians and spread: `impl transport pattern size metric value`; the spread is
    /// filed as `metric:min`, `metric:max` and `metric:runs`.
    pub fn tsv(&self) -> String {
        let mut out = String::from("impl\ttransport\tpattern\tsize\tmetric\tvalue\n");
        for (k, v) in &self.samples {
            let Some(s) = Stat::of(v) else { continue };
            for (suffix, val) in [
                ("", s.median),
                (":min", s.min),
                (":max", s.max),
                (":runs", s.n as f64),
            ] {
                let _ = writeln!(
                    out,
                    "{}\t{}\t{}\t{}\t{}{}\t{}",
                    k.imp,
                    k.transport,
                    k.pattern,
                    k.size,
                    k.metric,
                    suffix,
                    num(val)
                );
            }
        }
        for ((imp, t, p, size), why) in &self.notes {
            let _ = writeln!(out, "{imp}\t{t}\t{p}\t{size}\tnote\t{why}");
        }
        out
    }

    /// TSV of every sample, with the repeat it came from.
    pub fn samples_tsv(&self) -> String {
        let mut out = String::from("impl\ttransport\tpattern\tsize\tmetric\tvalue\trepeat\n");
        for (k, v) in &self.samples {
            for (i, val) in v.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "{}\t{}\t{}\t{}\t{}\t{}\t{}",
                    k.imp,
                    k.transport,
                    k.pattern,
                    k.size,
                    k.metric,
                    num(*val),
                    i + 1
                );
            }
        }
        out
    }
}

/// A number for TSV: integers plainly, others with enough digits.
fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

/// A rate in short form: 1.23M, 456k, 789.
pub fn rate(v: f64) -> String {
    if v >= 9.995e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e5 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else if v >= 1e3 {
        format!("{:.2}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// A size in short form: 64 B, 1 KiB, 64 KiB.
pub fn size(b: usize) -> String {
    if b >= 1024 && b.is_multiple_of(1024) {
        format!("{} KiB", b / 1024)
    } else {
        format!("{b} B")
    }
}

/// A table cell: median with the spread, or the cell's note, or a dash.
pub fn cell_text(store: &Store, key: &Key, fmt: fn(f64) -> String) -> String {
    match store.stat(key) {
        Some(s) if s.n > 1 => format!("{} ({}–{})", fmt(s.median), fmt(s.min), fmt(s.max)),
        Some(s) => fmt(s.median),
        None => store
            .note_of(&key.imp, &key.transport, &key.pattern, key.size)
            .unwrap_or("–")
            .to_string(),
    }
}

/// A ratio of two optional medians.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
        _ => "–".into(),
    }
}

/// The machine and software a run used.
#[derive(Debug, Clone)]
pub struct Machine {
    /// Lines of `key: value`.
    pub lines: Vec<(String, String)>,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The 1-, 5- and 15-minute load averages.
pub fn load_average() -> String {
    read("/proc/loadavg")
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

impl Machine {
    /// Probes the machine now.
    pub fn probe(mode: &str) -> Machine {
        let cpu = read("/proc/cpuinfo")
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map_or_else(|| "unknown".into(), |(_, v)| v.trim().to_string());
        let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
        let mem = read("/proc/meminfo")
            .lines()
            .find(|l| l.starts_with("MemTotal"))
            .map_or_else(String::new, |l| {
                l.trim_start_matches("MemTotal:").trim().to_string()
            });
        let lines = vec![
            ("mode".into(), mode.into()),
            ("date (unix)".into(), now_unix().to_string()),
            ("cpus (nproc)".into(), nproc.to_string()),
            ("cpu model".into(), cpu),
            ("memory".into(), mem),
            (
                "kernel".into(),
                read("/proc/sys/kernel/osrelease").trim().to_string(),
            ),
            ("load average at start".into(), load_average()),
            ("rustc".into(), env!("BENCH_RUSTC_VERSION").into()),
            ("libzmq (linked, system)".into(), crate::libzmq::version()),
            ("omq".into(), env!("CARGO_PKG_VERSION").into()),
            ("crates".into(), env!("BENCH_DEP_VERSIONS").into()),
        ];
        Machine { lines }
    }

    /// As plain text.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for (k, v) in &self.lines {
            let _ = writeln!(s, "{k:24} {v}");
        }
        s
    }

    /// As a markdown list.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        for (k, v) in &self.lines {
            let _ = writeln!(s, "- {k}: {v}");
        }
        s
    }
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// How each implementation is laid out on threads (the same for every cell).
pub fn thread_layout() -> String {
    let mut s = String::new();
    for i in Impl::ALL {
        let text = match i {
            Impl::OmqTokio => "each side on its own OS thread with a current-thread tokio runtime; the socket's connection tasks run on that thread",
            Impl::OmqTokioMt => "one multi-threaded tokio runtime (one worker per core) runs every connection task; each side's application code blocks on it (Handle::block_on) from its own OS thread",
            Impl::OmqTokioTasks => "both sides spawned as tasks of one multi-threaded tokio runtime (one worker per core), as in a #[tokio::main] application; every connection task on the same workers (PUSH/PULL and CURVE cells only)",
            Impl::OmqCompio => "each side on its own OS thread with its own compio runtime (io_uring driver where the kernel allows it); the socket's connection tasks run on that thread",
            Impl::OmqMonoio => "each side on its own OS thread with its own monoio runtime (FusionDriver: io_uring where the kernel allows it, timers on); the socket's connection tasks run on that thread",
            Impl::OmqGlommio => "each side on its own OS thread with its own glommio executor (io_uring); the socket's connection tasks run on that thread",
            Impl::Libzmq => "each side on its own OS thread with its own zmq context (1 I/O thread each, libzmq's default); inproc: one context shared by both sides",
            Impl::Zmqrs => "each side on its own OS thread with a current-thread tokio runtime",
            Impl::Raw => "each side on its own OS thread with a current-thread tokio runtime; plain TcpStream/UnixStream, 64 KiB writes of pre-framed messages (no per-message copy), 64 KiB reads that walk the frame headers; PUSH/PULL cells carry 8× (≤ 64 B), 4× (≤ 1 KiB) or 2× (4 KiB) the messages so that its runs last long enough to measure",
        };
        let _ = writeln!(s, "- {i}: {text}");
    }
    s.push_str(
        "- every process runs one implementation for one cell; cells are interleaved across \
         implementations and repeats\n- default socket options everywhere (HWM 1000 send and \
         receive, TCP_NODELAY on, no CONFLATE); PUSH/PULL and PUB/SUB: the receiving side \
         binds, REQ/REP: REP binds\n- proxy cells: three parties (producer or client, proxy, \
         consumer or worker), each laid out as one side above (omq-tokio-mt: all three block \
         on the one shared runtime; libzmq: three contexts, so three I/O threads); the proxy \
         binds both its sockets and the other two connect\n",
    );
    s
}

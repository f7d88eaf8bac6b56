//! Two network namespaces joined by an impaired link, for fault tests on real TCP stacks.
//!
//! [`Link::new`] makes namespaces `omq-PID-N-a` and `omq-PID-N-b` (unique per process and per
//! link, so parallel tests never collide), each holding one TUN device with an address
//! ([`Link::ADDR_A`], [`Link::ADDR_B`]), and starts a *wire*: threads that carry every IP packet
//! from one TUN device to the other, applying an [`Impairment`] on the way (delay, jitter,
//! reordering, loss, duplication, a rate limit, a partition). The kernels on both sides are real
//! TCP stacks: retransmission, congestion control and keepalives all happen as on a real network.
//!
//! Why a wire in user space rather than `veth` + `tc qdisc netem`: the kernels this suite runs on
//! (the CI image included) are built without `sch_netem` (`CONFIG_NET_SCH_NETEM` is not set), and
//! without nftables' `queue`; only `tbf`/`htb` exist, which cannot delay or reorder. The wire does
//! what netem would, per packet, in both directions, and its conditions change at run time
//! ([`Link::set`]). The MTU is the devices' own ([`Link::set_mtu`]), so the kernels segment as
//! they would on such a link. Traffic only ever flows between the two namespaces made here.
//!
//! Code runs inside a namespace either on a thread ([`in_netns`]: the thread calls `setns`, and
//! every socket it or its runtime opens lives there) or as a process ([`netns_command`]:
//! `ip netns exec`). Dropping the [`Link`] stops the wire and deletes both namespaces, also
//! when the test panics; namespaces of a process killed before that (a test timeout) are
//! removed by the next [`Link::new`]. Root is required; [`Link::new`] fails with a clear
//! message otherwise.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the wire does to packets; the same in both directions.
#[derive(Debug, Clone, PartialEq)]
pub struct Impairment {
    /// Base one-way delay.
    pub delay: Duration,
    /// Each packet's delay is uniform in `delay ± jitter` (so packets reorder, as with netem).
    pub jitter: Duration,
    /// Probability (0..=1) that a packet is dropped.
    pub loss: f64,
    /// Probability that a packet skips the delay and overtakes those queued before it.
    pub reorder: f64,
    /// Probability that a packet is delivered twice.
    pub duplicate: f64,
    /// Bits per second of the link (None: unlimited). Packets queue behind each other.
    pub rate_bps: Option<u64>,
    /// Every packet is dropped, in both directions, without any error on either side.
    pub partitioned: bool,
}

impl Impairment {
    /// A clean link: no delay, no loss.
    pub const CLEAN: Impairment = Impairment {
        delay: Duration::ZERO,
        jitter: Duration::ZERO,
        loss: 0.0,
        reorder: 0.0,
        duplicate: 0.0,
        rate_bps: None,
        partitioned: false,
    };

    /// The lossy link: 5 % loss, 20 ms ± 10 ms, 5 % reordered.
    pub fn lossy() -> Impairment {
        Impairment {
            delay: Duration::from_millis(20),
            jitter: Duration::from_millis(10),
            loss: 0.05,
            reorder: 0.05,
            ..Impairment::CLEAN
        }
    }
}

/// Packets the wire holds at most per direction (a router's queue; more are tail-dropped).
const QUEUE_LIMIT: usize = 1000;

/// Counts of what the wire did, both directions together.
#[derive(Debug, Default)]
pub struct WireStats {
    /// Packets read from either device.
    pub packets: AtomicU64,
    /// Packets dropped by loss, partition or a full queue.
    pub dropped: AtomicU64,
    /// Packets delivered twice.
    pub duplicated: AtomicU64,
}

static LINKS: AtomicU64 = AtomicU64::new(0);

/// Two namespaces, a TUN device in each, and the wire between them. Dropping it removes all.
#[derive(Debug)]
pub struct Link {
    ns: [String; 2],
    dev: [String; 2],
    impairment: Arc<Mutex<Impairment>>,
    stats: Arc<WireStats>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

/// A command's failure, with what it printed.
fn run(args: &[&str]) -> io::Result<()> {
    let out = Command::new(args[0]).args(&args[1..]).output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "`{}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

impl Link {
    /// The address of namespace A's side.
    pub const ADDR_A: &'static str = "10.231.0.1";
    /// The address of namespace B's side.
    pub const ADDR_B: &'static str = "10.231.0.2";

    /// Makes the namespaces and starts a clean wire. Fails (does not skip) without root.
    pub fn new() -> io::Result<Link> {
        let euid = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("Uid:"))
                    .and_then(|l| l.split_whitespace().nth(2).map(str::to_owned))
            })
            .unwrap_or_default();
        if euid != "0" {
            return Err(io::Error::other(
                "network fault tests need root (network namespaces, TUN devices): \
                 run them as root, as CI does (scripts/test.sh)",
            ));
        }
        sweep_stale();
        let pid = std::process::id();
        let n = LINKS.fetch_add(1, Ordering::Relaxed);
        let mut link = Link {
            ns: [format!("omq-{pid}-{n}-a"), format!("omq-{pid}-{n}-b")],
            // IFNAMSIZ: at most 15 bytes.
            dev: [format!("oq{pid}x{n}a"), format!("oq{pid}x{n}b")],
            impairment: Arc::new(Mutex::new(Impairment::CLEAN)),
            stats: Arc::new(WireStats::default()),
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::new(),
        };
        // From here on, Drop cleans up whatever was made.
        let mut tuns = Vec::new();
        for (i, addr) in [Self::ADDR_A, Self::ADDR_B].into_iter().enumerate() {
            let (ns, dev) = (&link.ns[i], &link.dev[i]);
            run(&["ip", "netns", "add", ns])?;
            tuns.push(open_tun(dev)?);
            run(&["ip", "link", "set", "dev", dev, "netns", ns])?;
            let x = |args: &[&str]| {
                let mut v = vec!["ip", "netns", "exec", ns.as_str()];
                v.extend_from_slice(args);
                run(&v)
            };
            x(&["ip", "link", "set", "lo", "up"])?;
            x(&["ip", "addr", "add", &format!("{addr}/24"), "dev", dev])?;
            x(&["ip", "link", "set", "dev", dev, "up"])?;
        }
        let b = Arc::new(tuns.pop().expect("two devices"));
        let a = Arc::new(tuns.pop().expect("two devices"));
        link.threads.extend(wire(&a, &b, &link));
        link.threads.extend(wire(&b, &a, &link));
        Ok(link)
    }

    /// The namespace names (A, B).
    pub fn netns(&self) -> (&str, &str) {
        (&self.ns[0], &self.ns[1])
    }

    /// A handle that changes the wire's conditions from other threads. It does not keep the
    /// namespaces alive: the `Link`'s owner (the test's main thread) stays the one that removes
    /// them, also when it panics.
    pub fn control(&self) -> Control {
        Control(Arc::clone(&self.impairment))
    }

    /// Changes the wire's conditions from now on (packets already queued keep their times).
    pub fn set(&self, i: Impairment) {
        self.control().set(i);
    }

    /// The conditions now.
    pub fn impairment(&self) -> Impairment {
        self.control().impairment()
    }

    /// Drops every packet from now on (true) or lets them through again (false).
    pub fn partition(&self, on: bool) {
        self.control().partition(on);
    }

    /// Sets the MTU of both devices.
    pub fn set_mtu(&self, mtu: u32) -> io::Result<()> {
        for i in 0..2 {
            run(&[
                "ip",
                "netns",
                "exec",
                &self.ns[i],
                "ip",
                "link",
                "set",
                "dev",
                &self.dev[i],
                "mtu",
                &mtu.to_string(),
            ])?;
        }
        Ok(())
    }

    /// What the wire did so far.
    pub fn stats(&self) -> &WireStats {
        &self.stats
    }
}

/// Changes a [`Link`]'s conditions; see [`Link::control`].
#[derive(Debug, Clone)]
pub struct Control(Arc<Mutex<Impairment>>);

impl Control {
    /// See [`Link::set`].
    pub fn set(&self, i: Impairment) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = i;
    }

    /// See [`Link::impairment`].
    pub fn impairment(&self) -> Impairment {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// See [`Link::partition`].
    pub fn partition(&self, on: bool) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).partitioned = on;
    }
}

/// Removes namespaces `omq-PID-*` left by processes that are gone (killed before their `Link`
/// was dropped, e.g. by a test timeout).
fn sweep_stale() {
    let Ok(dir) = std::fs::read_dir("/run/netns") else {
        return;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("omq-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = run(&["ip", "netns", "del", &name]);
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        // Deleting a namespace destroys the devices in it.
        for ns in &self.ns {
            let _ = run(&["ip", "netns", "del", ns]);
        }
    }
}

/// Opens a new TUN device (IP packets, no packet-info header) in the current namespace.
#[allow(unsafe_code)]
fn open_tun(name: &str) -> io::Result<File> {
    const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")?;
    let mut req = [0u8; 40]; // struct ifreq: name[16], then a union starting with the flags
    req[..name.len()].copy_from_slice(name.as_bytes());
    let flags = (libc::IFF_TUN | libc::IFF_NO_PI) as u16;
    req[16..18].copy_from_slice(&flags.to_ne_bytes());
    // SAFETY: `req` is a buffer the size of `struct ifreq` that outlives the call, and the fd is
    // open.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF as _, req.as_mut_ptr()) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}

/// Waits until `fd` is readable or `ms` pass; true when readable.
#[allow(unsafe_code)]
fn readable(fd: RawFd, ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut p, 1, ms) > 0 }
}

/// A packet waiting on the wire, ordered by when it is due.
struct Due {
    at: Instant,
    seq: u64,
    bytes: Vec<u8>,
}

impl PartialEq for Due {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Due {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        // Reversed: BinaryHeap is a max-heap and the earliest is wanted first.
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

type Queue = Arc<(Mutex<std::collections::BinaryHeap<Due>>, Condvar)>;

/// A small xorshift generator: the wire's randomness, seeded per direction.
struct Rng(u64);
impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Starts one direction of the wire: a reader that schedules, a writer that delivers.
fn wire(from: &Arc<File>, to: &Arc<File>, link: &Link) -> [JoinHandle<()>; 2] {
    let queue: Queue = Arc::new(Default::default());
    let reader = {
        let (from, queue, stop) = (Arc::clone(from), Arc::clone(&queue), link.stop.clone());
        let (imp, stats) = (Arc::clone(&link.impairment), Arc::clone(&link.stats));
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
            | 1;
        std::thread::spawn(move || {
            let mut rng = Rng(seed ^ (Arc::as_ptr(&from) as u64));
            let mut buf = vec![0u8; 65536];
            let mut seq = 0u64;
            let mut link_free = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                if !readable(from.as_raw_fd(), 50) {
                    continue;
                }
                let n = match io::Read::read(&mut &*from, &mut buf) {
                    Ok(n) => n,
                    Err(_) => continue,
                };
                stats.packets.fetch_add(1, Ordering::Relaxed);
                let i = imp.lock().unwrap_or_else(|p| p.into_inner()).clone();
                let (lock, cv) = &*queue;
                let mut q = lock.lock().unwrap_or_else(|p| p.into_inner());
                if i.partitioned || rng.unit() < i.loss || q.len() >= QUEUE_LIMIT {
                    stats.dropped.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let now = Instant::now();
                // The link serialises packets at its rate; the delay comes on top.
                let sent = match i.rate_bps {
                    Some(bps) if bps > 0 => {
                        let start = link_free.max(now);
                        link_free =
                            start + Duration::from_nanos(n as u64 * 8 * 1_000_000_000 / bps);
                        link_free
                    }
                    _ => now,
                };
                let delay = if rng.unit() < i.reorder {
                    Duration::ZERO
                } else {
                    let j = i.jitter.as_secs_f64() * (2.0 * rng.unit() - 1.0);
                    Duration::from_secs_f64((i.delay.as_secs_f64() + j).max(0.0))
                };
                let copies = if rng.unit() < i.duplicate { 2 } else { 1 };
                if copies == 2 {
                    stats.duplicated.fetch_add(1, Ordering::Relaxed);
                }
                for _ in 0..copies {
                    seq += 1;
                    q.push(Due {
                        at: sent + delay,
                        seq,
                        bytes: buf[..n].to_vec(),
                    });
                }
                cv.notify_one();
            }
        })
    };
    let writer = {
        let (to, queue, stop) = (Arc::clone(to), queue, link.stop.clone());
        std::thread::spawn(move || {
            let (lock, cv) = &*queue;
            let mut q = lock.lock().unwrap_or_else(|p| p.into_inner());
            while !stop.load(Ordering::Relaxed) {
                let now = Instant::now();
                let wait = match q.peek() {
                    Some(d) if d.at <= now => {
                        let d = q.pop().expect("peeked");
                        drop(q);
                        // A full device queue or a device going away drops the packet, as a
                        // real link would.
                        let _ = io::Write::write(&mut &*to, &d.bytes);
                        q = lock.lock().unwrap_or_else(|p| p.into_inner());
                        continue;
                    }
                    Some(d) => (d.at - now).min(Duration::from_millis(50)),
                    None => Duration::from_millis(50),
                };
                q = cv
                    .wait_timeout(q, wait)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
        })
    };
    [reader, writer]
}

/// Runs `f` on a new thread inside namespace `ns`: every socket it (or a runtime it starts)
/// opens lives there. Threads it starts inherit the namespace.
pub fn in_netns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> JoinHandle<T> {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        enter_netns(&path).unwrap_or_else(|e| panic!("entering {path}: {e}"));
        f()
    })
}

/// Moves the calling thread into the namespace whose handle is at `path`.
#[allow(unsafe_code)]
fn enter_netns(path: &str) -> io::Result<()> {
    let f = File::open(path)?;
    // SAFETY: a valid namespace fd; setns(CLONE_NEWNET) affects only the calling thread.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A command that runs `program` inside namespace `ns` (`ip netns exec`, which execs in place:
/// the child's pid is the program's, so it can be SIGKILLed).
pub fn netns_command(ns: &str, program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns]).arg(program);
    c
}

/// Resident memory of process `pid` in bytes (`VmRSS`), or None if it is gone.
pub fn rss_bytes(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = s
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// Open file descriptors of process `pid`, or None if it is gone.
pub fn open_fds(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

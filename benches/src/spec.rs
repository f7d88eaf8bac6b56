//! What one cell is: an implementation, a transport, a pattern, a message size and a count.
//! The parent process writes a cell as `key=value` arguments and the child parses them back.

use std::fmt;
use std::str::FromStr;

/// An implementation under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Impl {
    /// omq on tokio, each side on its own OS thread with a current-thread runtime.
    OmqTokio,
    /// omq on tokio, one multi-threaded runtime (one worker per core) running every connection
    /// task; each side's application code blocks on it from its own OS thread.
    OmqTokioMt,
    /// omq on tokio, both sides as tasks of one multi-threaded runtime (one worker per core):
    /// the shape of a `#[tokio::main]` application. PUSH/PULL and CURVE only.
    OmqTokioTasks,
    /// omq on compio (io_uring where available), each side on its own OS thread and runtime.
    OmqCompio,
    /// omq on monoio (FusionDriver: io_uring where available), each side on its own OS thread
    /// and runtime.
    OmqMonoio,
    /// omq on glommio (io_uring), each side on its own OS thread and executor.
    OmqGlommio,
    /// libzmq through the `zmq` crate, one context (one I/O thread) per side.
    Libzmq,
    /// zmq.rs (the `zeromq` crate) on tokio, each side on its own current-thread runtime.
    Zmqrs,
    /// Pre-framed ZMTP frames over a plain tokio socket: the ceiling.
    Raw,
}

impl Impl {
    /// Every implementation, in table order.
    pub const ALL: [Impl; 9] = [
        Impl::OmqTokio,
        Impl::OmqTokioMt,
        Impl::OmqTokioTasks,
        Impl::OmqCompio,
        Impl::OmqMonoio,
        Impl::OmqGlommio,
        Impl::Libzmq,
        Impl::Zmqrs,
        Impl::Raw,
    ];

    /// The name used in arguments, TSV and tables.
    pub fn name(self) -> &'static str {
        match self {
            Impl::OmqTokio => "omq-tokio",
            Impl::OmqTokioMt => "omq-tokio-mt",
            Impl::OmqTokioTasks => "omq-tokio-tasks",
            Impl::OmqCompio => "omq-compio",
            Impl::OmqMonoio => "omq-monoio",
            Impl::OmqGlommio => "omq-glommio",
            Impl::Libzmq => "libzmq",
            Impl::Zmqrs => "zmq.rs",
            Impl::Raw => "raw-tokio",
        }
    }

    /// Whether this is one of omq's backends.
    pub fn is_omq(self) -> bool {
        matches!(
            self,
            Impl::OmqTokio
                | Impl::OmqTokioMt
                | Impl::OmqTokioTasks
                | Impl::OmqCompio
                | Impl::OmqMonoio
                | Impl::OmqGlommio
        )
    }

    /// Whether this implementation has CURVE (omq and libzmq; zmq.rs has no CURVE and the raw
    /// stream no security).
    pub fn has_curve(self) -> bool {
        self.is_omq() || self == Impl::Libzmq
    }

    /// Whether this implementation can run the pattern over the transport at all (a cell it
    /// lacks is printed as "n/a" with this reason).
    pub fn lacks(self, p: Pattern, t: Transport) -> Option<&'static str> {
        match (self, p, t) {
            (
                Impl::OmqTokioTasks,
                Pattern::PushPull | Pattern::Curve | Pattern::CurveClients,
                _,
            ) => None,
            (Impl::OmqTokioTasks, _, _) => {
                Some("n/a (omq-tokio-tasks: PUSH/PULL and CURVE cells only)")
            }
            (Impl::Zmqrs, _, Transport::Inproc) => Some("n/a (zmq.rs has no inproc)"),
            (Impl::Raw, _, Transport::Inproc) => Some("n/a (no raw inproc stream)"),
            // `zeromq::proxy` takes two sockets that each both send and receive
            // (`SocketSend + SocketRecv`): a PULL frontend cannot send, a PUSH backend cannot
            // receive, so the streamer does not compile. Its ROUTER/DEALER broker does.
            (Impl::Zmqrs, Pattern::Proxy, _) => {
                Some("n/a (zmq.rs's proxy needs sockets that both send and receive: not PULL/PUSH)")
            }
            (Impl::Raw, Pattern::Proxy | Pattern::ProxyLat, _) => {
                Some("n/a (a raw byte stream has no proxy)")
            }
            (Impl::Raw | Impl::Zmqrs, p, _) if p.is_scale() => {
                Some("n/a (scale cells: omq backends and libzmq)")
            }
            _ => None,
        }
    }
}

impl fmt::Display for Impl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Impl {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Impl::ALL
            .into_iter()
            .find(|i| i.name() == s)
            .ok_or_else(|| format!("unknown implementation {s:?}"))
    }
}

/// A transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Transport {
    /// Loopback TCP (127.0.0.1).
    Tcp,
    /// Unix domain socket under /tmp.
    Ipc,
    /// In-process.
    Inproc,
}

impl Transport {
    /// The name used in arguments, TSV and tables.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Ipc => "ipc",
            Transport::Inproc => "inproc",
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Transport {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "tcp" => Ok(Transport::Tcp),
            "ipc" => Ok(Transport::Ipc),
            "inproc" => Ok(Transport::Inproc),
            _ => Err(format!("unknown transport {s:?}")),
        }
    }
}

/// A messaging pattern and what is measured on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pattern {
    /// PUSH/PULL throughput.
    PushPull,
    /// REQ/REP round-trip latency.
    ReqRep,
    /// PUB/SUB fan-out with `subs` subscribers.
    PubSub,
    /// PUSH/PULL throughput with CURVE (the receiver is the CURVE server).
    Curve,
    /// Throughput through a proxy: PUSH -> [PULL | proxy | PUSH] -> PULL, three parties.
    Proxy,
    /// Round trips through a proxy: REQ -> [ROUTER | proxy | DEALER] -> REP, three parties.
    ProxyLat,
    /// `subs` DEALERs (in a second process) on one ROUTER: connect rate, memory per
    /// connection, steady throughput (see `scale.rs`).
    Scale,
    /// `subs` SUBs (in a second process) on one PUB: connect rate, memory per connection,
    /// fan-out throughput.
    ScalePub,
    /// `subs` CURVE DEALERs (in a second process) on one CURVE ROUTER: handshakes per second,
    /// memory per connection, and steady throughput of 1 KiB messages (issue 14's multi-client
    /// and handshake-rate cells).
    ScaleCurve,
    /// `subs` CURVE clients (in a second process) that seal all their messages before the
    /// clock starts and then only write them, into one CURVE ROUTER: how the ROUTER's box
    /// opening scales with connections when the peers cost little (issue 14's multi-client
    /// cell).
    CurveClients,
}

impl Pattern {
    /// The name used in arguments, TSV and tables.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::PushPull => "pushpull",
            Pattern::ReqRep => "reqrep",
            Pattern::PubSub => "pubsub",
            Pattern::Curve => "curve",
            Pattern::Proxy => "proxy",
            Pattern::ProxyLat => "proxylat",
            Pattern::Scale => "scale",
            Pattern::ScalePub => "scalepub",
            Pattern::ScaleCurve => "scalecurve",
            Pattern::CurveClients => "curveclients",
        }
    }

    /// The cells with N peers in a second process and the measured socket in its own
    /// (`scale.rs`): omq backends and libzmq only, tcp only.
    pub fn is_scale(self) -> bool {
        matches!(
            self,
            Pattern::Scale | Pattern::ScalePub | Pattern::ScaleCurve | Pattern::CurveClients
        )
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Pattern {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "pushpull" => Ok(Pattern::PushPull),
            "reqrep" => Ok(Pattern::ReqRep),
            "pubsub" => Ok(Pattern::PubSub),
            "curve" => Ok(Pattern::Curve),
            "proxy" => Ok(Pattern::Proxy),
            "proxylat" => Ok(Pattern::ProxyLat),
            "scale" => Ok(Pattern::Scale),
            "scalepub" => Ok(Pattern::ScalePub),
            "scalecurve" => Ok(Pattern::ScaleCurve),
            "curveclients" => Ok(Pattern::CurveClients),
            _ => Err(format!("unknown pattern {s:?}")),
        }
    }
}

/// One measurement, run in a process of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// Who is measured.
    pub imp: Impl,
    /// Over what.
    pub transport: Transport,
    /// Doing what.
    pub pattern: Pattern,
    /// Message size in bytes.
    pub size: usize,
    /// Messages (or round trips) measured.
    pub count: usize,
    /// Messages (or round trips) before the measurement starts.
    pub warmup: usize,
    /// PUB/SUB: number of subscribers (1 otherwise).
    pub subs: usize,
}

impl Cell {
    /// The cell as child-process arguments.
    pub fn to_args(&self) -> Vec<String> {
        vec![
            format!("impl={}", self.imp),
            format!("transport={}", self.transport),
            format!("pattern={}", self.pattern),
            format!("size={}", self.size),
            format!("count={}", self.count),
            format!("warmup={}", self.warmup),
            format!("subs={}", self.subs),
        ]
    }

    /// Parses child-process arguments.
    pub fn from_args(args: &[String]) -> Result<Cell, String> {
        let mut cell = Cell {
            imp: Impl::OmqTokio,
            transport: Transport::Tcp,
            pattern: Pattern::PushPull,
            size: 64,
            count: 100_000,
            warmup: 1000,
            subs: 1,
        };
        for a in args {
            let (k, v) = a
                .split_once('=')
                .ok_or_else(|| format!("expected key=value, got {a:?}"))?;
            let num = || v.parse::<usize>().map_err(|e| format!("{k}: {e}"));
            match k {
                "impl" => cell.imp = v.parse()?,
                "transport" => cell.transport = v.parse()?,
                "pattern" => cell.pattern = v.parse()?,
                "size" => cell.size = num()?,
                "count" => cell.count = num()?,
                "warmup" => cell.warmup = num()?,
                "subs" => cell.subs = num()?,
                _ => return Err(format!("unknown key {k:?}")),
            }
        }
        if cell.count == 0 || cell.subs == 0 {
            return Err("count and subs must be at least 1".into());
        }
        if matches!(cell.pattern, Pattern::PubSub | Pattern::ScalePub) && cell.size < 5 {
            return Err(
                "pubsub messages carry a tag and a sequence number: size must be at least 5".into(),
            );
        }
        Ok(cell)
    }

    /// The pattern as filed in results: `pubsub-N` carries the subscriber count.
    pub fn pattern_label(&self) -> String {
        match self.pattern {
            Pattern::PubSub => format!("pubsub-{}", self.subs),
            Pattern::Scale => format!("scale-{}", self.subs),
            Pattern::ScalePub => format!("scalepub-{}", self.subs),
            Pattern::ScaleCurve => format!("scalecurve-{}", self.subs),
            Pattern::CurveClients => format!("curveclients-{}", self.subs),
            p => p.name().to_string(),
        }
    }
}

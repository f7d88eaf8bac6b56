//! # omq-tokio
//!
//! omq on tokio. `Socket` is `Send + Sync + Clone` and works from `tokio::spawn` on the
//! multi-threaded runtime.
//!
//! ```no_run
//! use omq_tokio::{Message, Options, Socket, SocketType};
//! # async fn demo() -> Result<(), omq_tokio::Error> {
//! let pull = Socket::new(SocketType::Pull, Options::default())?;
//! let ep = pull.bind("tcp://127.0.0.1:0").await?;
//! let push = Socket::new(SocketType::Push, Options::default().send_hwm(10_000))?;
//! push.connect(&ep.to_string()).await?;
//! push.send(Message::from("hello")).await?;
//! let msg: Message = pull.recv().await?;
//! # Ok(()) }
//! ```
//!
//! This crate only implements omq-driver's executor traits for tokio; every rule lives in
//! omq-core and the driver.

use std::future::Future;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use omq_core::options::TransportOptions;
use omq_driver::net;
use omq_driver::{Datagram, Listener, ReadHalf, Runtime, Task, WriteHalf};
use tokio::io::AsyncReadExt;
use tokio::net::{tcp, unix, TcpListener, TcpSocket, TcpStream, UnixListener, UnixStream};

pub use omq_driver::{
    generate_keypair, proxy, proxy_steerable, AsEndpoint, AuthReply, AuthRequest, Authenticator,
    Credentials, CurveAllowList, CurveKeyPair, CurvePublicKey, CurveSecretKey,
    Endpoint as ResolvedEndpoint, Error, EventKind, MechanismConfig, Message, MessageError,
    MonitorEvent, Options, OsRng, Part, ProxyStatistics, ReconnectStop, RouterNotify, SocketOption,
    SocketType, TrySendError,
};

/// A ZeroMQ socket on tokio.
pub type Socket = omq_driver::Socket<Tokio>;

/// A stream of monitor events.
pub type Monitor = omq_driver::Monitor<Tokio>;

/// The reading half of a socket, as a `futures` `Stream` (`Socket::stream`).
pub type SocketStream = omq_driver::SocketStream<Tokio>;

/// The writing half of a socket, as a `futures` `Sink` (`Socket::sink`).
pub type SocketSink = omq_driver::SocketSink<Tokio>;

/// The tokio runtime, for omq-driver.
#[derive(Debug, Clone, Copy)]
pub struct Tokio;

/// Reading half of a tcp or ipc stream.
#[derive(Debug)]
pub enum Reader {
    /// TCP.
    Tcp(tcp::OwnedReadHalf),
    /// Unix domain socket.
    Ipc(unix::OwnedReadHalf),
}

/// Writing half of a tcp or ipc stream.
#[derive(Debug)]
pub enum Writer {
    /// TCP.
    Tcp(tcp::OwnedWriteHalf),
    /// Unix domain socket.
    Ipc(unix::OwnedWriteHalf),
}

/// A bound listener.
#[derive(Debug)]
pub enum TokioListener {
    /// TCP.
    Tcp(TcpListener),
    /// Unix domain socket, with its path removed when dropped.
    Ipc(UnixListener, net::IpcPath),
}

impl ReadHalf for Reader {
    async fn read(mut self, mut buf: BytesMut) -> (Self, BytesMut, io::Result<usize>) {
        let r = match &mut self {
            Reader::Tcp(h) => h.read_buf(&mut buf).await,
            Reader::Ipc(h) => h.read_buf(&mut buf).await,
        };
        (self, buf, r)
    }

    fn peer_address(&self) -> Option<String> {
        match self {
            Reader::Tcp(h) => h.peer_addr().ok().map(|a| a.ip().to_string()),
            Reader::Ipc(_) => None,
        }
    }
}

impl WriteHalf for Writer {
    async fn write(self, chunks: Vec<Bytes>) -> (Self, Vec<Bytes>, io::Result<usize>) {
        // Each attempt makes its slices on the stack and lets go of them before it waits: a
        // list held across the wait was an allocation a write, which on the multi-threaded
        // runtime (a few messages a write) came to 0.01-0.06 allocations a message.
        loop {
            let tried = match &self {
                Writer::Tcp(h) => with_slices(&chunks, |s| h.try_write_vectored(s)),
                Writer::Ipc(h) => with_slices(&chunks, |s| h.try_write_vectored(s)),
            };
            match tried {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                r => return (self, chunks, r),
            }
            let ready = match &self {
                Writer::Tcp(h) => h.writable().await,
                Writer::Ipc(h) => h.writable().await,
            };
            if let Err(e) = ready {
                return (self, chunks, Err(e));
            }
        }
    }
}

/// The most chunks one write passes to the kernel (the driver hands no more; a longer list
/// is written in part, as any write may be).
const WRITE_SLICES: usize = 64;

/// Calls `f` with `chunks` as I/O slices made on the stack (at most [`WRITE_SLICES`]).
fn with_slices<T>(chunks: &[Bytes], f: impl FnOnce(&[IoSlice<'_>]) -> T) -> T {
    let n = chunks.len().min(WRITE_SLICES);
    let mut slices = [IoSlice::new(&[]); WRITE_SLICES];
    for (slice, chunk) in slices.iter_mut().zip(&chunks[..n]) {
        *slice = IoSlice::new(chunk);
    }
    f(&slices[..n])
}

/// A udp socket (RADIO and DISH over `udp://`).
#[derive(Debug)]
pub struct TokioDatagram(tokio::net::UdpSocket);

impl Datagram for TokioDatagram {
    async fn send(self, datagram: Bytes) -> (Self, io::Result<usize>) {
        let r = self.0.send(&datagram).await;
        (self, r)
    }

    async fn recv(self, mut buf: BytesMut) -> (Self, BytesMut, io::Result<usize>) {
        let r = self.0.recv_buf_from(&mut buf).await.map(|(n, _)| n);
        (self, buf, r)
    }
}

impl Listener<Tokio> for TokioListener {
    async fn accept(self) -> (Self, io::Result<(Reader, Writer)>) {
        let r = match &self {
            TokioListener::Tcp(l) => l.accept().await.and_then(|(s, _)| tcp_halves(s)),
            TokioListener::Ipc(l, _) => l.accept().await.map(|(s, _)| ipc_halves(s)),
        };
        (self, r)
    }
}

fn tcp_halves(s: TcpStream) -> io::Result<(Reader, Writer)> {
    s.set_nodelay(true)?;
    let (r, w) = s.into_split();
    Ok((Reader::Tcp(r), Writer::Tcp(w)))
}

fn ipc_halves(s: UnixStream) -> (Reader, Writer) {
    let (r, w) = s.into_split();
    (Reader::Ipc(r), Writer::Ipc(w))
}

impl Runtime for Tokio {
    type Reader = Reader;
    type Writer = Writer;
    type Listener = TokioListener;
    type Datagram = TokioDatagram;

    fn datagram(socket: std::net::UdpSocket) -> io::Result<TokioDatagram> {
        Ok(TokioDatagram(tokio::net::UdpSocket::from_std(socket)?))
    }

    fn spawn(task: Task<Self>) {
        // Outside a runtime (a socket dropped after its runtime is gone) there is nothing to
        // run the task on; the socket then closes without its background linger.
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(task.run());
        }
    }

    fn now() -> Instant {
        Instant::now()
    }

    fn sleep_until(deadline: Instant) -> impl Future<Output = ()> {
        tokio::time::sleep_until(deadline.into())
    }

    /// On the multi-threaded scheduler with more than one worker only. A task a worker wakes
    /// goes to that worker's LIFO slot, which the other workers do not steal from, and they are
    /// woken only when a worker has two tasks queued: the chain of wake-ups between two
    /// sockets' tasks and their connection tasks could stay on one worker for a whole run
    /// while the other slept (half the rate, in a third of the 4 KiB runs measured). A yield
    /// after each read puts the connection task in the queue others steal from and wakes a
    /// parked worker. Not with one worker (the Python binding's runtime): there is no other.
    fn yields_after_input() -> bool {
        tokio::runtime::Handle::try_current().is_ok_and(|h| {
            h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
                && h.metrics().num_workers() > 1
        })
    }

    /// On the multi-threaded scheduler with more than one worker: the socket's user may be
    /// another worker's task or a thread blocking on the runtime. Measured (docs/PERFORMANCE.md,
    /// "Properties stamped where they are read"): omq-tokio-mt tcp 64 B +43%, the tasks layout
    /// -3%, the Python binding's one-worker runtime level (its reading threads take turns on
    /// the GIL), so not there.
    fn reads_elsewhere() -> bool {
        tokio::runtime::Handle::try_current().is_ok_and(|h| {
            h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
                && h.metrics().num_workers() > 1
        })
    }

    /// On the multi-threaded scheduler (any number of workers): the sender may be a thread
    /// blocking on the runtime (or the Python binding's threads), or a task on another worker
    /// than its connection's. See docs/PERFORMANCE.md, "The outbox".
    fn stages_sends() -> bool {
        tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
    }

    async fn connect_tcp(addr: SocketAddr, t: &TransportOptions) -> io::Result<(Reader, Writer)> {
        let sock = net::tcp_connect_socket(&addr, t)?;
        let s = TcpSocket::from_std_stream(sock.into())
            .connect(addr)
            .await?;
        tcp_halves(s)
    }

    fn ipc_stream(s: std::os::unix::net::UnixStream) -> io::Result<(Reader, Writer)> {
        s.set_nonblocking(true)?;
        Ok(ipc_halves(UnixStream::from_std(s)?))
    }

    fn tcp_listener(l: std::net::TcpListener) -> io::Result<TokioListener> {
        Ok(TokioListener::Tcp(TcpListener::from_std(l)?))
    }

    fn ipc_listener(
        l: std::os::unix::net::UnixListener,
        path: net::IpcPath,
    ) -> io::Result<TokioListener> {
        Ok(TokioListener::Ipc(UnixListener::from_std(l)?, path))
    }

    async fn blocking<T: Send + 'static>(
        f: impl FnOnce() -> io::Result<T> + Send + 'static,
    ) -> io::Result<T> {
        tokio::task::spawn_blocking(f).await?
    }
}

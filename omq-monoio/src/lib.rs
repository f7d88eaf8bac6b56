//! # omq-monoio
//!
//! omq on monoio: io_uring with owned buffers, or monoio's epoll (`legacy`) driver where
//! io_uring is unavailable (`FusionDriver` picks; both are supported), one runtime per thread.
//! Sockets are used from inside a monoio runtime built with `enable_timer()` (omq needs
//! timers). Monoio is thread-per-core and so is this backend: every background task of a socket
//! (connections, listeners, timers) is `!Send` and runs on the runtime of the thread whose call
//! started it, so use each socket from one runtime thread. (The `Socket` handle is only shared
//! state behind a lock, so the type is nominally `Send + Sync`; a socket used from several
//! threads spreads its tasks over their runtimes, which works but is not the model.) Dropping
//! a socket's last handle, on any thread, wakes its background close on its runtime;
//! `close().await` before the runtime ends when queued messages must get out. A runtime you
//! build yourself should end with [`close_orphans`] ([`block_on`] does): monoio does not drop
//! the tasks still pending when it is dropped.
//!
//! ```no_run
//! use omq_monoio::{Message, Options, Socket, SocketType};
//! # async fn demo() -> Result<(), omq_monoio::Error> {
//! let pull = Socket::new(SocketType::Pull, Options::default())?;
//! let ep = pull.bind("tcp://127.0.0.1:0").await?;
//! let push = Socket::new(SocketType::Push, Options::default().send_hwm(10_000))?;
//! push.connect(&ep.to_string()).await?;
//! push.send(Message::from("hello")).await?;
//! let msg: Message = pull.recv().await?;
//! # Ok(()) }
//! // On a thread of its own:
//! // monoio::RuntimeBuilder::<monoio::FusionDriver>::new().enable_timer().build()?.block_on(demo())
//! ```
//!
//! This crate only implements omq-driver's executor traits for monoio; every rule lives in
//! omq-core and the driver. Reads go straight into the driver's `BytesMut` (appended after its
//! current length, no copy); writes hand the driver's `Bytes` chunks to one `writev`, made at
//! once when the socket has room (`omq_driver::net::write_now`), by the driver otherwise.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use monoio::buf::{IoBufMut, IoVecBuf};
use monoio::io::{AsyncReadRent, AsyncWriteRent, OwnedReadHalf, OwnedWriteHalf, Splitable};
use monoio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use omq_core::options::TransportOptions;
use omq_driver::net;
use omq_driver::{Datagram, Listener, ReadHalf, Runtime, Task, WriteHalf};

pub use omq_driver::{
    generate_keypair, proxy, proxy_steerable, AsEndpoint, AuthReply, AuthRequest, Authenticator,
    Credentials, CurveAllowList, CurveKeyPair, CurvePublicKey, CurveSecretKey,
    Endpoint as ResolvedEndpoint, Error, EventKind, MechanismConfig, Message, MessageError,
    MonitorEvent, Options, OsRng, Part, ProxyStatistics, ReconnectStop, RouterNotify, SocketOption,
    SocketType, TrySendError,
};

/// A ZeroMQ socket on monoio.
pub type Socket = omq_driver::Socket<Monoio>;

/// A stream of monitor events.
pub type Monitor = omq_driver::Monitor<Monoio>;

/// The reading half of a socket, as a `futures` `Stream` (`Socket::stream`).
pub type SocketStream = omq_driver::SocketStream<Monoio>;

/// The writing half of a socket, as a `futures` `Sink` (`Socket::sink`).
pub type SocketSink = omq_driver::SocketSink<Monoio>;

/// The monoio runtime, for omq-driver.
#[derive(Debug, Clone, Copy)]
pub struct Monoio;

/// Reading half of a tcp or ipc stream.
#[derive(Debug)]
pub enum Reader {
    /// TCP.
    Tcp(OwnedReadHalf<TcpStream>),
    /// Unix domain socket.
    Ipc(OwnedReadHalf<UnixStream>),
}

/// Writing half of a tcp or ipc stream (shuts down writing when dropped, as tokio's does).
#[derive(Debug)]
pub enum Writer {
    /// TCP, and the stream's descriptor (monoio's halves do not lend it).
    Tcp(OwnedWriteHalf<TcpStream>, RawFd),
    /// Unix domain socket, and its descriptor.
    Ipc(OwnedWriteHalf<UnixStream>, RawFd),
}

/// The stream's descriptor, for a write made without the driver (`borrow_fd`).
impl AsRawFd for Writer {
    fn as_raw_fd(&self) -> RawFd {
        let (Writer::Tcp(_, fd) | Writer::Ipc(_, fd)) = self;
        *fd
    }
}

/// A bound listener.
#[derive(Debug)]
pub enum MonoioListener {
    /// TCP.
    Tcp(TcpListener),
    /// Unix domain socket, with its path removed when dropped.
    Ipc(UnixListener, net::IpcPath),
}

fn tcp_halves(s: TcpStream) -> io::Result<(Reader, Writer)> {
    s.set_nodelay(true)?;
    let fd = s.as_raw_fd();
    let (r, w) = s.into_split();
    Ok((Reader::Tcp(r), Writer::Tcp(w, fd)))
}

/// monoio's streams and listeners own their descriptor but do not implement `AsFd` (nor do
/// its stream halves, which is why `Writer` keeps its stream's number).
#[allow(unsafe_code)]
fn borrow_fd<T: AsRawFd>(s: &T) -> std::os::fd::BorrowedFd<'_> {
    // SAFETY: `s` keeps this descriptor open while it lives (a listener or stream owns it, a
    // `Writer`'s half shares ownership of its stream), and the borrow cannot outlive `s`.
    unsafe { std::os::fd::BorrowedFd::borrow_raw(s.as_raw_fd()) }
}

fn ipc_halves(s: UnixStream) -> (Reader, Writer) {
    let fd = s.as_raw_fd();
    let (r, w) = s.into_split();
    (Reader::Ipc(r), Writer::Ipc(w, fd))
}

/// Whether a descriptor handed to monoio must be non-blocking: its legacy driver needs that,
/// its io_uring driver works on blocking ones (the sockets monoio makes itself are blocking
/// there, and io_uring may hand EAGAIN back for an `O_NONBLOCK` descriptor instead of waiting).
fn nonblocking() -> bool {
    monoio::utils::is_legacy()
}

impl ReadHalf for Reader {
    async fn read(mut self, mut buf: BytesMut) -> (Self, BytesMut, io::Result<usize>) {
        // A full buffer would read 0 bytes, which means end of stream: grow it first, as
        // tokio's `read_buf` does.
        if buf.len() == buf.capacity() {
            buf.reserve(omq_driver::READ_SIZE);
        }
        // monoio's `BytesMut` reads at offset 0; a view from `len` to the capacity makes the
        // kernel append after the bytes the driver has not consumed yet, and the length grows
        // by what arrived.
        let len = buf.len();
        let spare = buf.slice_mut(len..);
        let (r, spare) = match &mut self {
            Reader::Tcp(s) => s.read(spare).await,
            Reader::Ipc(s) => s.read(spare).await,
        };
        (self, spare.into_inner(), r)
    }

    fn peer_address(&self) -> Option<String> {
        match self {
            Reader::Tcp(h) => h.peer_addr().ok().map(|a| a.ip().to_string()),
            Reader::Ipc(_) => None,
        }
    }
}

/// Most iovecs one `writev` takes (Linux's UIO_MAXIOV).
const IOV_MAX: usize = 1024;

/// The driver's chunks and their iovecs, owned together: if the write's future is dropped
/// while io_uring still holds the operation, monoio keeps this alive until the kernel is done,
/// so the memory the iovecs point to stays valid.
struct Chunks {
    iovecs: Vec<libc::iovec>,
    chunks: Vec<Bytes>,
}

impl Chunks {
    fn new(chunks: Vec<Bytes>) -> Chunks {
        let iovecs = chunks
            .iter()
            .take(IOV_MAX)
            .map(|c| libc::iovec {
                iov_base: c.as_ptr() as *mut libc::c_void,
                iov_len: c.len(),
            })
            .collect();
        Chunks { iovecs, chunks }
    }
}

// SAFETY: the iovecs point into the heap data of the `Bytes` in `chunks`, which this value
// owns and never changes; that data does not move when `Chunks` (or its vectors) moves, and
// `Bytes` never mutates it. The iovec array itself is a heap allocation that stays put.
#[allow(unsafe_code)]
unsafe impl IoVecBuf for Chunks {
    fn read_iovec_ptr(&self) -> *const libc::iovec {
        self.iovecs.as_ptr()
    }

    fn read_iovec_len(&self) -> usize {
        self.iovecs.len()
    }
}

impl WriteHalf for Writer {
    /// One `writev`, returning what it wrote: the driver keeps the rest after a partial write
    /// (monoio's `write_vectored_all` would resend what was already written).
    /// A write the socket has room for is made at once (`net::write_now`); only one that
    /// would wait goes to the driver.
    async fn write(mut self, chunks: Vec<Bytes>) -> (Self, Vec<Bytes>, io::Result<usize>) {
        match net::write_now(borrow_fd(&self), &chunks) {
            Ok(Some(n)) => return (self, chunks, Ok(n)),
            Ok(None) => {}
            Err(e) => return (self, chunks, Err(e)),
        }
        let iov = Chunks::new(chunks);
        let (r, iov) = match &mut self {
            Writer::Tcp(s, _) => s.writev(iov).await,
            Writer::Ipc(s, _) => s.writev(iov).await,
        };
        (self, iov.chunks, r)
    }
}

/// A udp socket (RADIO and DISH over `udp://`).
#[derive(Debug)]
pub struct MonoioDatagram(monoio::net::udp::UdpSocket);

impl Datagram for MonoioDatagram {
    async fn send(self, datagram: Bytes) -> (Self, io::Result<usize>) {
        let (r, _) = self.0.send(datagram).await;
        (self, r)
    }

    async fn recv(self, buf: BytesMut) -> (Self, BytesMut, io::Result<usize>) {
        // As a read: a view of the spare capacity, so the length grows by what arrived.
        let len = buf.len();
        let (r, spare) = self.0.recv(buf.slice_mut(len..)).await;
        (self, spare.into_inner(), r)
    }
}

impl Listener<Monoio> for MonoioListener {
    /// Accepts by readiness on both drivers: a connection already waiting is taken at once
    /// (`net::accept_now`; an io_uring accept completes only when the runtime next collects
    /// completions, once per turn of a busy task queue), otherwise the listener waits to be
    /// readable and tries again. The listener is non-blocking for that; the accepted stream
    /// is made the way the driver wants it.
    async fn accept(self) -> (Self, io::Result<(Reader, Writer)>) {
        let r = loop {
            let taken = match &self {
                MonoioListener::Tcp(l) => net::accept_now(borrow_fd(l)),
                MonoioListener::Ipc(l, _) => net::accept_now(borrow_fd(l)),
            };
            match taken {
                Ok(Some(fd)) => break self.adopt(fd),
                Ok(None) => {}
                Err(e) => break Err(e),
            }
            let ready = match &self {
                MonoioListener::Tcp(l) => l.readable(false).await,
                MonoioListener::Ipc(l, _) => l.readable(false).await,
            };
            if let Err(e) = ready {
                break Err(e);
            }
        };
        (self, r)
    }
}

impl MonoioListener {
    /// The halves of a stream accepted on this listener.
    fn adopt(&self, fd: std::os::fd::OwnedFd) -> io::Result<(Reader, Writer)> {
        match self {
            MonoioListener::Tcp(_) => {
                let s = std::net::TcpStream::from(fd);
                s.set_nonblocking(nonblocking())?;
                tcp_halves(TcpStream::from_std(s)?)
            }
            MonoioListener::Ipc(..) => {
                let s = std::os::unix::net::UnixStream::from(fd);
                s.set_nonblocking(nonblocking())?;
                Ok(ipc_halves(UnixStream::from_std(s)?))
            }
        }
    }
}

impl Runtime for Monoio {
    type Reader = Reader;
    type Writer = Writer;
    type Listener = MonoioListener;
    type Datagram = MonoioDatagram;

    fn datagram(socket: std::net::UdpSocket) -> io::Result<MonoioDatagram> {
        Ok(MonoioDatagram(monoio::net::udp::UdpSocket::from_std(
            socket,
        )?))
    }

    /// Spawns on the current thread's monoio runtime. Dropping monoio's `JoinHandle` detaches
    /// the task (it does not cancel it). Panics outside a monoio runtime.
    fn spawn(task: Task<Self>) {
        drop(monoio::spawn(task.run()));
    }

    fn now() -> Instant {
        Instant::now()
    }

    fn sleep_until(deadline: Instant) -> impl Future<Output = ()> {
        monoio::time::sleep_until(monoio::time::Instant::from_std(deadline))
    }

    /// monoio puts a task that is woken while it runs at the front of its queue, so the
    /// default (a wake-up of itself) would run it again at once: a task of its own, spawned
    /// behind the others, wakes it instead.
    fn yield_now() -> impl Future<Output = ()> + Send {
        let mut asked = false;
        std::future::poll_fn(move |cx| {
            if std::mem::replace(&mut asked, true) {
                return std::task::Poll::Ready(());
            }
            let waker = cx.waker().clone();
            drop(monoio::spawn(async move { waker.wake() }));
            std::task::Poll::Pending
        })
    }

    // Listeners come from omq-driver's helpers (socket2/std), not monoio's `bind`, whose
    // SO_REUSEPORT this kernel refuses on Unix sockets. monoio has no blocking pool: names are
    // looked up on a thread of their own (`blocking`'s default).
    /// monoio's own connect (an io_uring op, or a non-blocking connect on epoll) makes the
    /// socket the way its driver wants it; TCP_NODELAY and the connection options are set on
    /// the result.
    async fn connect_tcp(addr: SocketAddr, t: &TransportOptions) -> io::Result<(Reader, Writer)> {
        let s = TcpStream::connect_addr(addr).await?;
        net::apply_tcp_options(borrow_fd(&s), t)?;
        tcp_halves(s)
    }

    fn ipc_stream(s: std::os::unix::net::UnixStream) -> io::Result<(Reader, Writer)> {
        s.set_nonblocking(nonblocking())?;
        Ok(ipc_halves(UnixStream::from_std(s)?))
    }

    /// Non-blocking on both drivers: its accept goes by readiness (see `MonoioListener`).
    fn tcp_listener(l: std::net::TcpListener) -> io::Result<MonoioListener> {
        l.set_nonblocking(true)?;
        Ok(MonoioListener::Tcp(TcpListener::from_std(l)?))
    }

    fn ipc_listener(
        l: std::os::unix::net::UnixListener,
        path: net::IpcPath,
    ) -> io::Result<MonoioListener> {
        l.set_nonblocking(true)?;
        Ok(MonoioListener::Ipc(UnixListener::from_std(l)?, path))
    }
}

/// Runs `f` to completion on a fresh monoio runtime on the current thread (`FusionDriver`:
/// io_uring where the kernel allows it, epoll otherwise; timers enabled), then closes the
/// sockets `f` left open ([`close_orphans`]) before the runtime ends.
pub fn block_on<F: Future>(f: F) -> io::Result<F::Output> {
    let mut rt = monoio::RuntimeBuilder::<monoio::FusionDriver>::new()
        .enable_timer()
        .build()?;
    Ok(rt.block_on(run_then_close(f)))
}

/// Runs `f`, then closes the sockets it left open ([`close_orphans`]): the body of
/// [`block_on`], for a runtime built by hand (another driver, other options).
pub async fn run_then_close<F: Future>(f: F) -> F::Output {
    omq_driver::run_then_close::<Monoio, F>(f).await
}

/// Closes every socket still open on this thread's runtime; run it last on a runtime you
/// built yourself, before it ends ([`block_on`] does). monoio does not drop the tasks still
/// pending when it is dropped, so without this the sockets' listeners and connections could
/// stay open for the life of the process. Each socket first sends what it has queued, within
/// its LINGER (capped at 5 s); what it could not is reported through `tracing` (see
/// `omq_driver::close_orphans`).
pub async fn close_orphans() {
    omq_driver::close_orphans::<Monoio>().await;
}

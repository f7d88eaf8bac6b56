//! # omq-glommio
//!
//! omq on glommio: io_uring, thread-per-core. Nothing here needs `Send`, and sockets are meant
//! to be used as `!Send` values: each socket lives on one thread, inside that thread's glommio
//! executor. Every background task of a socket (connections, listeners, timers) runs on the
//! executor of the thread that started it, and starting one (bind, connect, dropping the last
//! handle) panics outside a glommio executor. (The `Socket` type itself is nominally `Send`,
//! being omq-driver's shared handle; moving one to another thread's executor is not
//! supported.) Dropping a socket's last handle, on any thread, wakes its background close on
//! its executor; `close().await` before the executor ends when queued messages must get out.
//! An executor you build yourself should end with [`close_orphans`]. [`block_on`] runs a future on a fresh executor on the current thread, after checking
//! that io_uring is usable ([`check_io_uring`]): glommio itself panics or exits without it.
//!
//! ```no_run
//! use omq_glommio::{Message, Options, Socket, SocketType};
//! # fn main() -> std::io::Result<()> {
//! omq_glommio::block_on(async {
//!     let pull = Socket::new(SocketType::Pull, Options::default())?;
//!     let ep = pull.bind("tcp://127.0.0.1:0").await?;
//!     let push = Socket::new(SocketType::Push, Options::default().send_hwm(10_000))?;
//!     push.connect(&ep.to_string()).await?;
//!     push.send(Message::from("hello")).await?;
//!     let msg: Message = pull.recv().await?;
//!     Ok::<_, omq_glommio::Error>(())
//! })?
//! .expect("omq");
//! # Ok(()) }
//! ```
//!
//! This crate only implements omq-driver's executor traits for glommio; every rule lives in
//! omq-core and the driver. glommio's streams wait for readiness (io_uring poll) and then
//! `recv`/`send` into borrowed slices, with no `writev`: reads go through glommio straight into
//! the driver's `BytesMut`, and writes are one `writev` on the descriptor, with glommio only
//! waiting for writability when the socket is full. One stream serves both halves (glommio
//! streams do not split); a read and a write can be pending on it at once.
//!
//! glommio 0.9's unix-domain types expose no descriptor (no `AsRawFd`, and its `UnixListener`
//! cannot adopt one), so ipc sockets go through glommio's tcp types, whose operations (accept,
//! recv, send, poll) are the same system calls on any stream socket. The tcp-only calls
//! (TCP_NODELAY, the peer address) are made for tcp only.

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use futures_io::{AsyncRead, AsyncWrite};
use glommio::net::{TcpListener, TcpStream};
use glommio::{LocalExecutor, LocalExecutorBuilder, Placement};
use omq_core::options::TransportOptions;
use omq_driver::net;
use omq_driver::READ_SIZE;
use omq_driver::{Datagram, Listener, ReadHalf, Runtime, Task, WriteHalf};

pub use omq_driver::{
    generate_keypair, proxy, proxy_steerable, AsEndpoint, AuthReply, AuthRequest, Authenticator,
    Credentials, CurveAllowList, CurveKeyPair, CurvePublicKey, CurveSecretKey,
    Endpoint as ResolvedEndpoint, Error, EventKind, MechanismConfig, Message, MessageError,
    MonitorEvent, Options, OsRng, Part, ProxyStatistics, ReconnectStop, RouterNotify, SocketOption,
    SocketType, TrySendError,
};

/// A ZeroMQ socket on glommio.
pub type Socket = omq_driver::Socket<Glommio>;

/// A stream of monitor events.
pub type Monitor = omq_driver::Monitor<Glommio>;

/// The reading half of a socket, as a `futures` `Stream` (`Socket::stream`).
pub type SocketStream = omq_driver::SocketStream<Glommio>;

/// The writing half of a socket, as a `futures` `Sink` (`Socket::sink`).
pub type SocketSink = omq_driver::SocketSink<Glommio>;

/// The glommio runtime, for omq-driver.
#[derive(Debug, Clone, Copy)]
pub struct Glommio;

/// A connected stream socket (tcp, or unix-domain for ipc), shared by its two halves.
#[derive(Debug)]
struct Conn {
    stream: TcpStream,
    tcp: bool,
}

/// Reading half of a tcp or ipc stream.
#[derive(Debug)]
pub struct Reader(Rc<RefCell<Conn>>);

/// Writing half of a tcp or ipc stream.
#[derive(Debug)]
pub struct Writer(Rc<RefCell<Conn>>);

/// A bound listener.
#[derive(Debug)]
pub enum GlommioListener {
    /// TCP.
    Tcp(TcpListener),
    /// Unix domain socket (through glommio's tcp listener, see the crate docs), with its path
    /// removed when dropped.
    Ipc(TcpListener, net::IpcPath),
}

/// glommio's types take and show raw descriptors only (`FromRawFd`, `AsRawFd`), never
/// `OwnedFd` or `AsFd`: the conversions that need `unsafe` live here.
#[allow(unsafe_code)]
mod fd {
    use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};

    /// Hands a bound, listening stream socket (tcp or unix) over to glommio. (glommio binds
    /// its own tcp listeners with SO_REUSEPORT, which lets two sockets share a port.)
    pub(crate) fn listener(fd: OwnedFd) -> glommio::net::TcpListener {
        // SAFETY: `into_raw_fd` gives up our ownership of an open, listening socket, so the
        // glommio listener becomes its only owner and the only one to close it.
        unsafe { glommio::net::TcpListener::from_raw_fd(fd.into_raw_fd()) }
    }

    /// Hands a connected stream socket (tcp or unix) over to glommio.
    pub(crate) fn stream(fd: OwnedFd) -> glommio::net::TcpStream {
        // SAFETY: as above, for an open, connected stream socket.
        unsafe { glommio::net::TcpStream::from_raw_fd(fd.into_raw_fd()) }
    }

    /// One non-blocking `recv` into the spare capacity of `buf` (at most `max` bytes), which
    /// it need not initialise first: an idle connection's read buffer is never touched, so it
    /// costs address space, not resident memory.
    pub(crate) fn recv_into(
        s: &glommio::net::TcpStream,
        buf: &mut bytes::BytesMut,
        max: usize,
    ) -> std::io::Result<usize> {
        let fd = borrow(s);
        let spare = buf.spare_capacity_mut();
        let len = spare.len().min(max);
        let n =
            socket2::SockRef::from(&fd).recv_with_flags(&mut spare[..len], libc::MSG_DONTWAIT)?;
        // SAFETY: `recv` initialised the first `n` bytes of the spare capacity, which follow
        // the buffer's current length.
        unsafe { buf.set_len(buf.len() + n) };
        Ok(n)
    }

    /// The descriptor of a glommio stream, borrowed.
    pub(crate) fn borrow(s: &glommio::net::TcpStream) -> BorrowedFd<'_> {
        // SAFETY: the glommio stream owns the descriptor and closes it only when dropped,
        // which cannot happen while the returned borrow (tied to `&s`) lives.
        unsafe { BorrowedFd::borrow_raw(s.as_raw_fd()) }
    }
}

impl Conn {
    fn wrap(stream: TcpStream, tcp: bool) -> io::Result<(Reader, Writer)> {
        let sock = fd::borrow(&stream);
        let sock = socket2::SockRef::from(&sock);
        if tcp {
            sock.set_tcp_nodelay(true)?;
        }
        // glommio accepts with plain accept(2) when a connection is already waiting, which
        // leaves the descriptor inheritable by child processes (its io_uring accept does not).
        sock.set_cloexec(true)?;
        let c = Rc::new(RefCell::new(Conn { stream, tcp }));
        Ok((Reader(c.clone()), Writer(c)))
    }

    /// One `writev` (glommio has none: its `poll_write_vectored` is the futures-io default,
    /// which writes the first slice only). When the socket is full, glommio's `poll_write`
    /// arms its writability poll and the next wake-up tries the `writev` again; should the
    /// socket have drained in between, that `poll_write` writes the first slice itself, which
    /// is still a correct (short) write.
    fn poll_writev(&mut self, cx: &mut Context<'_>, chunks: &[Bytes]) -> Poll<io::Result<usize>> {
        match net::send_now(fd::borrow(&self.stream), chunks) {
            Ok(Some(n)) => return Poll::Ready(Ok(n)),
            Ok(None) => {}
            Err(e) => return Poll::Ready(Err(e)),
        }
        let first = chunks.first().map_or(&[][..], |b| &b[..]);
        Pin::new(&mut self.stream).poll_write(cx, first)
    }
}

impl Conn {
    /// Reads into the spare capacity of `buf`, after the bytes the driver has not consumed
    /// yet. glommio reads only into initialised slices, and zeroing the driver's buffer for
    /// every read made each idle connection's 64 KiB read buffer resident (77 KB per idle
    /// connection against 17 KB on the other backends). So glommio reads into a small scratch
    /// slice (its `poll_read` is what waits for readability, and it keeps its own readiness
    /// polls in order), the few bytes are copied, and when the scratch came back full the rest
    /// is read with a non-blocking `recv` straight into the uninitialised room.
    fn poll_read_into(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Poll<io::Result<usize>> {
        let mut scratch = [0u8; SCRATCH];
        let room = (buf.capacity() - buf.len()).min(SCRATCH);
        let n = match Pin::new(&mut self.stream).poll_read(cx, &mut scratch[..room]) {
            Poll::Ready(Ok(n)) => n,
            other => return other,
        };
        buf.extend_from_slice(&scratch[..n]);
        if n < room || buf.len() == buf.capacity() {
            return Poll::Ready(Ok(n));
        }
        loop {
            match fd::recv_into(&self.stream, buf, READ_SIZE - n) {
                Ok(more) => return Poll::Ready(Ok(n + more)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // Nothing more now, or an error the next read reports: what came stands.
                Err(_) => return Poll::Ready(Ok(n)),
            }
        }
    }
}

/// The scratch slice glommio reads into while it waits for a socket to become readable.
const SCRATCH: usize = 2048;

impl ReadHalf for Reader {
    async fn read(self, mut buf: BytesMut) -> (Self, BytesMut, io::Result<usize>) {
        // A full buffer would read 0 bytes, which means end of stream: grow it first.
        if buf.len() == buf.capacity() {
            buf.reserve(READ_SIZE);
        }
        let r = poll_fn(|cx| self.0.borrow_mut().poll_read_into(cx, &mut buf)).await;
        (self, buf, r)
    }

    fn peer_address(&self) -> Option<String> {
        let c = self.0.borrow();
        c.tcp
            .then(|| c.stream.peer_addr().ok().map(|a| a.ip().to_string()))
            .flatten()
    }
}

impl WriteHalf for Writer {
    async fn write(self, chunks: Vec<Bytes>) -> (Self, Vec<Bytes>, io::Result<usize>) {
        let r = poll_fn(|cx| self.0.borrow_mut().poll_writev(cx, &chunks)).await;
        (self, chunks, r)
    }
}

/// A udp socket (RADIO and DISH over `udp://`), with the initialised room it reads into
/// (glommio reads only into `&mut [u8]`): zeroed once, not per datagram.
#[derive(Debug)]
pub struct GlommioDatagram {
    socket: glommio::net::UdpSocket,
    room: Box<[u8]>,
}

/// The largest udp payload, so no datagram is cut short.
const DATAGRAM_ROOM: usize = 65_536;

impl Datagram for GlommioDatagram {
    async fn send(self, datagram: Bytes) -> (Self, io::Result<usize>) {
        let r = self.socket.send(&datagram).await.map_err(io::Error::from);
        (self, r)
    }

    async fn recv(mut self, mut buf: BytesMut) -> (Self, BytesMut, io::Result<usize>) {
        let want = buf.capacity().saturating_sub(buf.len()).max(1);
        let room = &mut self.room[..want.min(DATAGRAM_ROOM)];
        let r = self.socket.recv_from(room).await.map(|(n, _)| n);
        if let Ok(n) = r {
            buf.extend_from_slice(&room[..n]);
        }
        (self, buf, r.map_err(io::Error::from))
    }
}

impl Listener<Glommio> for GlommioListener {
    async fn accept(self) -> (Self, io::Result<(Reader, Writer)>) {
        let (l, tcp) = match &self {
            GlommioListener::Tcp(l) => (l, true),
            GlommioListener::Ipc(l, _) => (l, false),
        };
        let r = match l.accept().await {
            Ok(s) => Conn::wrap(s, tcp),
            Err(e) => Err(e.into()),
        };
        (self, r)
    }
}

impl Runtime for Glommio {
    type Reader = Reader;
    type Writer = Writer;
    type Listener = GlommioListener;
    type Datagram = GlommioDatagram;

    fn datagram(socket: std::net::UdpSocket) -> io::Result<GlommioDatagram> {
        Ok(GlommioDatagram {
            socket: glommio::net::UdpSocket::from(socket2_04::Socket::from(socket)),
            room: vec![0; DATAGRAM_ROOM].into_boxed_slice(),
        })
    }

    /// Spawns on the current thread's glommio executor and detaches (dropping a glommio
    /// `Task` would cancel it). Panics outside a glommio executor.
    fn spawn(task: Task<Self>) {
        glommio::spawn_local(task.run()).detach();
    }

    fn now() -> Instant {
        Instant::now()
    }

    async fn sleep_until(deadline: Instant) {
        glommio::timer::Timer::new(deadline.saturating_duration_since(Instant::now())).await;
    }

    /// glommio connects only sockets it makes itself (an io_uring connect); TCP_NODELAY and
    /// the connection options are set once it is connected.
    async fn connect_tcp(addr: SocketAddr, t: &TransportOptions) -> io::Result<(Reader, Writer)> {
        let s = TcpStream::connect(addr).await.map_err(io::Error::from)?;
        net::apply_tcp_options(fd::borrow(&s), t)?;
        Conn::wrap(s, true)
    }

    /// glommio's own unix connect cannot reach abstract names; std's stream is handed over.
    fn ipc_stream(s: std::os::unix::net::UnixStream) -> io::Result<(Reader, Writer)> {
        Conn::wrap(fd::stream(s.into()), false)
    }

    /// Blocking, as glommio's own listeners are: it accepts with io_uring.
    fn tcp_listener(l: std::net::TcpListener) -> io::Result<GlommioListener> {
        l.set_nonblocking(false)?;
        Ok(GlommioListener::Tcp(fd::listener(l.into())))
    }

    fn ipc_listener(
        l: std::os::unix::net::UnixListener,
        path: net::IpcPath,
    ) -> io::Result<GlommioListener> {
        l.set_nonblocking(false)?;
        Ok(GlommioListener::Ipc(fd::listener(l.into()), path))
    }

    async fn blocking<T: Send + 'static>(
        f: impl FnOnce() -> io::Result<T> + Send + 'static,
    ) -> io::Result<T> {
        glommio::executor().spawn_blocking(f).await
    }
}

/// Bytes glommio registers with io_uring for its own buffers: omq never uses them (sockets
/// read into the driver's buffers), so the least glommio accepts, which also stays far below
/// the locked-memory limit (RLIMIT_MEMLOCK) that registered buffers count against.
pub const IO_MEMORY: usize = 64 * 1024;

/// Checks that io_uring is usable and has every operation glommio needs. glommio panics
/// (no io_uring: an old kernel, a seccomp filter, `kernel.io_uring_disabled`) or exits the
/// process (missing operations) instead of returning an error; call this first.
pub fn check_io_uring() -> io::Result<()> {
    use io_uring::opcode as op;
    let unavailable =
        |e: io::Error| io::Error::new(e.kind(), format!("io_uring is unavailable: {e}"));
    let ring = io_uring::IoUring::new(2).map_err(unavailable)?;
    let mut probe = io_uring::Probe::new();
    ring.submitter()
        .register_probe(&mut probe)
        .map_err(unavailable)?;
    // glommio's own list (sys/uring.rs, GLOMMIO_URING_OPS): kernel 5.8 or later.
    let needed = [
        op::Nop::CODE,
        op::Readv::CODE,
        op::Writev::CODE,
        op::Fsync::CODE,
        op::ReadFixed::CODE,
        op::WriteFixed::CODE,
        op::PollAdd::CODE,
        op::PollRemove::CODE,
        op::SendMsg::CODE,
        op::RecvMsg::CODE,
        op::Timeout::CODE,
        op::TimeoutRemove::CODE,
        op::Accept::CODE,
        op::LinkTimeout::CODE,
        op::Connect::CODE,
        op::Fallocate::CODE,
        op::OpenAt::CODE,
        op::Close::CODE,
        op::Statx::CODE,
        op::Read::CODE,
        op::Write::CODE,
        op::Send::CODE,
        op::Recv::CODE,
    ];
    match needed.iter().find(|&&code| !probe.is_supported(code)) {
        Some(code) => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("io_uring lacks operation {code}, which glommio needs (kernel 5.8 or later)"),
        )),
        None => Ok(()),
    }
}

/// The locked-memory limit (RLIMIT_MEMLOCK) glommio's executor refuses to start below,
/// whatever its `io_memory`.
pub const MIN_MEMLOCK: u64 = 512 * 1024;

/// A glommio executor on the current thread, not pinned to a CPU, with [`IO_MEMORY`], after
/// [`check_io_uring`] and a check of the locked-memory limit ([`MIN_MEMLOCK`]).
pub fn executor() -> io::Result<LocalExecutor> {
    check_io_uring()?;
    let (memlock, _) = rlimit::getrlimit(rlimit::Resource::MEMLOCK)?;
    if memlock < MIN_MEMLOCK {
        return Err(io::Error::new(
            io::ErrorKind::OutOfMemory,
            format!(
                "glommio needs a locked-memory limit of at least {MIN_MEMLOCK} bytes; \
                 RLIMIT_MEMLOCK is {memlock} (raise `ulimit -l`)"
            ),
        ));
    }
    LocalExecutorBuilder::new(Placement::Unbound)
        .io_memory(IO_MEMORY)
        .make()
        .map_err(io::Error::from)
}

/// Runs `f` to completion on a fresh glommio [`executor`] on the current thread, then closes
/// the sockets `f` left open ([`close_orphans`]) before the executor ends. Panics if a glommio
/// executor already runs on this thread.
pub fn block_on<F: Future>(f: F) -> io::Result<F::Output> {
    Ok(executor()?.run(run_then_close(f)))
}

/// Runs `f`, then closes the sockets it left open ([`close_orphans`]): the body of
/// [`block_on`], for an executor built by hand (other placement or options).
pub async fn run_then_close<F: Future>(f: F) -> F::Output {
    omq_driver::run_then_close::<Glommio, F>(f).await
}

/// Closes every socket still open on this thread's executor; run it last on an executor you
/// built yourself, before it ends ([`block_on`] does). glommio never drops the tasks still
/// pending when its executor is dropped, so without this the sockets' listeners and
/// connections would stay open for the life of the process. Each socket first sends what it
/// has queued, within its LINGER (capped at 5 s); what it could not is reported through
/// `tracing` (see `omq_driver::close_orphans`).
pub async fn close_orphans() {
    omq_driver::close_orphans::<Glommio>().await;
}

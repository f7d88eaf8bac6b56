//! # omq-compio
//!
//! omq on compio: completion-based I/O (io_uring on Linux, with a readiness-based `polling`
//! fallback where io_uring is unavailable), one runtime per thread. Sockets are used from
//! inside a compio runtime; every background task of a socket runs on the runtime of the
//! thread that started it, and none of them needs `Send`. Dropping a socket's last handle
//! starts its background close, so drop it inside the runtime too (as with tokio), and
//! `close().await` before the runtime ends when queued messages must get out.
//!
//! ```no_run
//! use omq_compio::{Message, Options, Socket, SocketType};
//! # async fn demo() -> Result<(), omq_compio::Error> {
//! let pull = Socket::new(SocketType::Pull, Options::default())?;
//! let ep = pull.bind("tcp://127.0.0.1:0").await?;
//! let push = Socket::new(SocketType::Push, Options::default().send_hwm(10_000))?;
//! push.connect(&ep.to_string()).await?;
//! push.send(Message::from("hello")).await?;
//! let msg: Message = pull.recv().await?;
//! # Ok(()) }
//! ```
//!
//! This crate only implements omq-driver's executor traits for compio; every rule lives in
//! omq-core and the driver. Reads go straight into the driver's `BytesMut` (appended after its
//! current length, no copy); writes hand the driver's `Bytes` chunks to one vectored send,
//! made at once when the socket has room (`omq_driver::net::write_now`), on the ring otherwise.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use compio::buf::{BufResult, IntoInner, IoBufMut};
use compio::io::{AsyncRead, AsyncWrite};
use compio::net::{TcpListener, TcpSocket, TcpStream, UnixListener, UnixStream};
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

/// A ZeroMQ socket on compio.
pub type Socket = omq_driver::Socket<Compio>;

/// A stream of monitor events.
pub type Monitor = omq_driver::Monitor<Compio>;

/// The reading half of a socket, as a `futures` `Stream` (`Socket::stream`).
pub type SocketStream = omq_driver::SocketStream<Compio>;

/// The writing half of a socket, as a `futures` `Sink` (`Socket::sink`).
pub type SocketSink = omq_driver::SocketSink<Compio>;

/// The compio runtime, for omq-driver.
#[derive(Debug, Clone, Copy)]
pub struct Compio;

/// Reading half of a tcp or ipc stream (compio's owned halves share one descriptor).
#[derive(Debug)]
pub enum Reader {
    /// TCP.
    Tcp(TcpStream),
    /// Unix domain socket.
    Ipc(UnixStream),
}

/// Writing half of a tcp or ipc stream.
#[derive(Debug)]
pub enum Writer {
    /// TCP.
    Tcp(TcpStream),
    /// Unix domain socket.
    Ipc(UnixStream),
}

/// A bound listener.
#[derive(Debug)]
pub enum CompioListener {
    /// TCP.
    Tcp(TcpListener),
    /// Unix domain socket, with its path removed when dropped.
    Ipc(UnixListener, net::IpcPath),
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

impl ReadHalf for Reader {
    async fn read(mut self, mut buf: BytesMut) -> (Self, BytesMut, io::Result<usize>) {
        // A full buffer would read 0 bytes, which means end of stream: grow it first, as
        // tokio's `read_buf` does.
        if buf.len() == buf.capacity() {
            buf.reserve(omq_driver::READ_SIZE);
        }
        // `uninit()` exposes only the spare capacity, so the kernel appends after the bytes
        // the driver has not consumed yet; the length grows by what arrived.
        let spare = buf.uninit();
        let BufResult(r, spare) = match &mut self {
            Reader::Tcp(s) => s.read(spare).await,
            Reader::Ipc(s) => s.read(spare).await,
        };
        (self, spare.into_inner(), r)
    }

    fn peer_address(&self) -> Option<String> {
        match self {
            Reader::Tcp(s) => s.peer_addr().ok().map(|a| a.ip().to_string()),
            Reader::Ipc(_) => None,
        }
    }
}

impl WriteHalf for Writer {
    /// A write the socket has room for is made at once (`net::write_now`); only one that
    /// would wait goes to the ring.
    async fn write(mut self, chunks: Vec<Bytes>) -> (Self, Vec<Bytes>, io::Result<usize>) {
        let now = match &self {
            Writer::Tcp(s) => net::write_now(s, &chunks),
            Writer::Ipc(s) => net::write_now(s, &chunks),
        };
        match now {
            Ok(Some(n)) => return (self, chunks, Ok(n)),
            Ok(None) => {}
            Err(e) => return (self, chunks, Err(e)),
        }
        let BufResult(r, chunks) = match &mut self {
            Writer::Tcp(s) => s.write_vectored(chunks).await,
            Writer::Ipc(s) => s.write_vectored(chunks).await,
        };
        (self, chunks, r)
    }
}

/// A udp socket (RADIO and DISH over `udp://`).
#[derive(Debug)]
pub struct CompioDatagram(compio::net::UdpSocket);

impl Datagram for CompioDatagram {
    async fn send(self, datagram: Bytes) -> (Self, io::Result<usize>) {
        let BufResult(r, _) = self.0.send(datagram).await;
        (self, r)
    }

    async fn recv(self, buf: BytesMut) -> (Self, BytesMut, io::Result<usize>) {
        // As a read: the kernel writes into the spare capacity only.
        let BufResult(r, spare) = self.0.recv_from(buf.uninit()).await;
        (self, spare.into_inner(), r.map(|(n, _)| n))
    }
}

impl Listener<Compio> for CompioListener {
    async fn accept(self) -> (Self, io::Result<(Reader, Writer)>) {
        let r = match &self {
            // A connection already waiting is taken at once (see `net::accept_now`).
            CompioListener::Tcp(l) => match net::accept_now(l) {
                Ok(Some(fd)) => TcpStream::from_std(fd.into()).and_then(tcp_halves),
                Ok(None) => l.accept().await.and_then(|(s, _)| tcp_halves(s)),
                Err(e) => Err(e),
            },
            CompioListener::Ipc(l, _) => match net::accept_now(l) {
                Ok(Some(fd)) => UnixStream::from_std(fd.into()).map(ipc_halves),
                Ok(None) => l.accept().await.map(|(s, _)| ipc_halves(s)),
                Err(e) => Err(e),
            },
        };
        (self, r)
    }
}

impl Runtime for Compio {
    type Reader = Reader;
    type Writer = Writer;
    type Listener = CompioListener;
    type Datagram = CompioDatagram;

    fn datagram(socket: std::net::UdpSocket) -> io::Result<CompioDatagram> {
        Ok(CompioDatagram(compio::net::UdpSocket::from_std(socket)?))
    }

    /// Spawns on the current thread's compio runtime and detaches (dropping a compio
    /// `JoinHandle` would cancel the task). Panics outside a compio runtime.
    fn spawn(task: Task<Self>) {
        compio::runtime::spawn(task.run()).detach();
    }

    fn now() -> Instant {
        Instant::now()
    }

    fn sleep_until(deadline: Instant) -> impl Future<Output = ()> {
        compio::time::sleep_until(deadline)
    }

    async fn connect_tcp(addr: SocketAddr, t: &TransportOptions) -> io::Result<(Reader, Writer)> {
        let sock = net::tcp_connect_socket(&addr, t)?;
        let sock = TcpSocket::from_std_stream(sock.into())?;
        tcp_halves(sock.connect(addr).await?)
    }

    fn ipc_stream(s: std::os::unix::net::UnixStream) -> io::Result<(Reader, Writer)> {
        s.set_nonblocking(true)?;
        Ok(ipc_halves(UnixStream::from_std(s)?))
    }

    /// Non-blocking (as the driver makes it; set again, since `accept` first tries a plain
    /// accept, which must not wait).
    fn tcp_listener(l: std::net::TcpListener) -> io::Result<CompioListener> {
        l.set_nonblocking(true)?;
        Ok(CompioListener::Tcp(TcpListener::from_std(l)?))
    }

    fn ipc_listener(
        l: std::os::unix::net::UnixListener,
        path: net::IpcPath,
    ) -> io::Result<CompioListener> {
        l.set_nonblocking(true)?;
        Ok(CompioListener::Ipc(UnixListener::from_std(l)?, path))
    }

    async fn blocking<T: Send + 'static>(
        f: impl FnOnce() -> io::Result<T> + Send + 'static,
    ) -> io::Result<T> {
        compio::runtime::spawn_blocking(f).await?
    }
}

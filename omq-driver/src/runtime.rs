//! The executor traits: the small surface a runtime must provide.
//!
//! Owned buffers throughout: a read takes a `BytesMut` and gives it back filled, a write takes
//! the chunks and gives them back, and each operation takes its half of the stream by value
//! and returns it. That is what completion-based runtimes (io_uring) need — the kernel holds the
//! buffer while the operation runs — and readiness-based ones (tokio) serve it without a copy.
//! Taking the half by value also makes the operation's future `'static`, so a connection task
//! keeps a read in flight while it writes, and never drops a read that has taken bytes.
//!
//! Nothing here says `Send`. The driver's futures are generic; each backend spawns them with its
//! concrete types ([`Runtime::spawn`]), so the compiler checks `Send` for tokio, where it holds,
//! and nowhere else (thread-per-core runtimes spawn `!Send` futures).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use omq_core::options::TransportOptions;
use omq_core::Endpoint;

use crate::net;
use crate::tasks::Task;

/// The reading half of a connected byte stream.
pub trait ReadHalf: Sized + 'static {
    /// Reads into the spare capacity of `buf` (appending after its current length) and returns
    /// the half, the buffer, and how many bytes arrived (0: end of stream).
    fn read(self, buf: BytesMut) -> impl Future<Output = (Self, BytesMut, io::Result<usize>)>;

    /// The peer's address, as libzmq's `Peer-Address` property gives it (the IP for tcp);
    /// `None` when the transport has none worth showing.
    fn peer_address(&self) -> Option<String> {
        None
    }
}

/// The writing half of a connected byte stream.
pub trait WriteHalf: Sized + 'static {
    /// Writes from the chunks in order (one vectored write where the runtime has one) and
    /// returns the half, the chunks, and how many bytes were written (possibly fewer than all).
    fn write(
        self,
        chunks: Vec<Bytes>,
    ) -> impl Future<Output = (Self, Vec<Bytes>, io::Result<usize>)>;
}

/// A udp socket (`udp://`, RADIO and DISH only): bound, and connected where it sends. One
/// operation at a time, each taking the socket by value, as the stream halves do.
pub trait Datagram: Sized + 'static {
    /// Sends one datagram to the connected address; returns the socket and the bytes sent.
    fn send(self, datagram: Bytes) -> impl Future<Output = (Self, io::Result<usize>)>;

    /// Receives one datagram into the spare capacity of `buf` (appending after its length)
    /// and returns the socket, the buffer, and the datagram's length.
    fn recv(self, buf: BytesMut) -> impl Future<Output = (Self, BytesMut, io::Result<usize>)>;
}

/// The two halves of a connected stream.
pub type Halves<R> = (<R as Runtime>::Reader, <R as Runtime>::Writer);

/// A bound listener.
pub trait Listener<R: Runtime>: Sized + 'static {
    /// Waits for the next connection.
    fn accept(self) -> impl Future<Output = (Self, io::Result<Halves<R>>)>;
}

/// A runtime omq can run on.
pub trait Runtime: Sized + 'static {
    /// Reading half of a tcp or ipc stream.
    type Reader: ReadHalf + std::fmt::Debug;
    /// Writing half of a tcp or ipc stream.
    type Writer: WriteHalf + std::fmt::Debug;
    /// A tcp or ipc listener.
    type Listener: Listener<Self> + std::fmt::Debug;
    /// A udp socket.
    type Datagram: Datagram + std::fmt::Debug;

    /// Runs a driver task in the background. The backend spawns it with its own executor; this
    /// is the only place where tasks start.
    fn spawn(task: Task<Self>);

    /// The current time.
    fn now() -> Instant;

    /// Completes at `deadline`.
    fn sleep_until(deadline: Instant) -> impl Future<Output = ()>;

    /// Lets the runtime's other runnable tasks run before the caller goes on (a listener does
    /// after every burst of accepts). The default wakes the task while it runs and returns
    /// `Pending` once, which puts it behind the others on tokio, compio, glommio and
    /// async-io; a runtime that runs such a task again at once (monoio) overrides it.
    fn yield_now() -> impl Future<Output = ()> + Send {
        YieldNow(false)
    }

    /// Whether a connection task yields ([`Runtime::yield_now`]) after each read it has
    /// decoded and delivered. For a work-stealing runtime whose workers keep the tasks they
    /// wake to themselves: a yield puts the connection task where an idle worker can take it
    /// (omq-tokio on its multi-threaded scheduler, docs/PERFORMANCE.md "The tasks layout: one
    /// worker or two"). Default: no.
    fn yields_after_input() -> bool {
        false
    }

    /// Whether a socket's user may read its messages on another thread than the one its
    /// connection tasks decode them on (a multi-threaded scheduler, or application threads
    /// blocking on one). Then each message gets the peer's properties as it is read
    /// ([`omq_core::connection::Connection::leave_properties_to_reader`]), so the reference count those
    /// properties share is taken and let go of on the reading thread, not passed between
    /// cores with every message. Default: no (a thread-per-core runtime reads where it
    /// decodes, and stamping while decoding costs it less).
    fn reads_elsewhere() -> bool {
        false
    }

    /// Whether sockets made on this runtime take sends of the load-balanced types ahead of
    /// the socket's lock, through a lock-free queue a connection task moves in batches (the
    /// outbox, `omq-driver/src/outbox.rs`). For a runtime whose connection tasks may run on
    /// another thread than the sender (a multi-threaded scheduler, or application threads
    /// blocking on one): the sender and the connection task then stop passing the socket's
    /// lock between cores with every message. Asked once, when a socket is made. Default: no
    /// (a thread-per-core runtime sends where its connections run, and the lock never leaves
    /// that core).
    fn stages_sends() -> bool {
        false
    }

    /// Connects to one tcp address, with TCP_NODELAY and the connection options set:
    /// [`net::tcp_connect_socket`] makes such a socket for a runtime that connects one it is
    /// given; one that makes its own socket in its connect calls [`net::apply_tcp_options`] on
    /// the result.
    fn connect_tcp(
        addr: SocketAddr,
        options: &TransportOptions,
    ) -> impl Future<Output = io::Result<Halves<Self>>>;

    /// Takes over a connected unix-domain stream (blocking, as std made it).
    fn ipc_stream(stream: UnixStream) -> io::Result<Halves<Self>>;

    /// Takes over a bound, listening, non-blocking tcp listener ([`net::tcp_listener`]: BACKLOG
    /// and the connection options are set, and accepted connections inherit them; they need
    /// TCP_NODELAY set when accepted).
    fn tcp_listener(listener: std::net::TcpListener) -> io::Result<Self::Listener>;

    /// Takes over a bound, listening, non-blocking unix-domain listener ([`net::ipc_listener`])
    /// and the guard that removes its socket file when the listener goes.
    fn ipc_listener(listener: UnixListener, path: net::IpcPath) -> io::Result<Self::Listener>;

    /// Runs a blocking call (the system's resolver) off the runtime's thread. Provided: on a
    /// thread of its own; a runtime with a blocking pool uses that instead.
    fn blocking<T: Send + 'static>(
        f: impl FnOnce() -> io::Result<T> + Send + 'static,
    ) -> impl Future<Output = io::Result<T>> {
        net::on_own_thread(f)
    }

    /// Connects to a tcp or ipc endpoint. Provided ([`net::connect`]): host names looked up
    /// with [`Runtime::blocking`] (IPv6 addresses only with `options.ipv6`), each address tried
    /// in turn with [`Runtime::connect_tcp`]; ipc through std and [`Runtime::ipc_stream`].
    fn connect(
        endpoint: &Endpoint,
        options: &TransportOptions,
    ) -> impl Future<Output = io::Result<Halves<Self>>> {
        net::connect::<Self>(endpoint, options)
    }

    /// Binds a tcp or ipc endpoint and returns the listener with the endpoint as bound (port 0
    /// resolved). Provided ([`net::bind`]): the listener made by [`net::tcp_listener`] or
    /// [`net::ipc_listener`] and handed to [`Runtime::tcp_listener`] or
    /// [`Runtime::ipc_listener`].
    fn bind(
        endpoint: &Endpoint,
        options: &TransportOptions,
    ) -> impl Future<Output = io::Result<(Self::Listener, String)>> {
        net::bind::<Self>(endpoint, options)
    }

    /// Takes over a udp socket the driver made ([`net::udp_bind`], [`net::udp_connect`]: bound, connected where it sends, non-blocking). Called
    /// inside the runtime.
    fn datagram(socket: std::net::UdpSocket) -> io::Result<Self::Datagram>;
}

/// Pending once (waking itself first), then ready: [`Runtime::yield_now`]'s default.
#[derive(Debug)]
struct YieldNow(bool);

impl Future for YieldNow {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if std::mem::replace(&mut self.0, true) {
            return std::task::Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

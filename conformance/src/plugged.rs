//! A fifth executor that no backend crate uses, plugged in from outside to prove the suite is a
//! product: async-io's reactor and timers with async-executor's single-threaded executor, its
//! streams carried through omq-driver's futures-io adapter. Nothing here touches omq-core.
//!
//! This is the whole of what a new runtime needs: the executor traits (here ~110 lines), then
//! `interop_suite!` / `local_suite!` or [`crate::report::run_suite`].

use std::cell::OnceCell;
use std::future::Future;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::unix::net::{UnixListener, UnixStream};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use async_executor::LocalExecutor;
use async_io::{Async, Timer};
use bytes::{Bytes, BytesMut};
use futures_io::{AsyncRead, AsyncWrite};
use omq_core::options::TransportOptions;
use omq_driver::futures_io::{split, Reader, Writer};
use omq_driver::net;
use omq_driver::{Datagram, Listener, Runtime, Task};

use crate::backend::Backend;

/// async-io + async-executor.
#[derive(Debug, Clone, Copy)]
pub struct AsyncIo;

/// A tcp or unix stream under async-io.
#[derive(Debug)]
pub enum Stream {
    /// TCP.
    Tcp(Async<TcpStream>),
    /// Unix domain socket.
    Unix(Async<UnixStream>),
}

macro_rules! delegate {
    ($self:ident, $s:ident => $e:expr) => {
        match $self.get_mut() {
            Stream::Tcp($s) => $e,
            Stream::Unix($s) => $e,
        }
    };
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        delegate!(self, s => Pin::new(s).poll_read(cx, buf))
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        delegate!(self, s => Pin::new(s).poll_write(cx, buf))
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        delegate!(self, s => Pin::new(s).poll_write_vectored(cx, bufs))
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        delegate!(self, s => Pin::new(s).poll_flush(cx))
    }
    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        delegate!(self, s => Pin::new(s).poll_close(cx))
    }
}

/// A listener under async-io (an ipc listener removes its file when dropped).
#[derive(Debug)]
pub enum AsyncListener {
    /// TCP.
    Tcp(Async<TcpListener>),
    /// Unix domain socket.
    Unix(Async<UnixListener>, net::IpcPath),
}

fn halves(s: Stream, peer: Option<String>) -> (Reader<Stream>, Writer<Stream>) {
    split(s, peer)
}

impl Listener<AsyncIo> for AsyncListener {
    async fn accept(self) -> (Self, io::Result<(Reader<Stream>, Writer<Stream>)>) {
        let r = match &self {
            AsyncListener::Tcp(l) => l.accept().await.and_then(|(s, addr)| {
                s.get_ref().set_nodelay(true)?;
                Ok(halves(Stream::Tcp(s), Some(addr.ip().to_string())))
            }),
            AsyncListener::Unix(l, _) => {
                l.accept().await.map(|(s, _)| halves(Stream::Unix(s), None))
            }
        };
        (self, r)
    }
}

thread_local! {
    static EXECUTOR: OnceCell<&'static LocalExecutor<'static>> = const { OnceCell::new() };
}

fn executor() -> &'static LocalExecutor<'static> {
    // One executor per thread, alive for the thread's life (leaked on purpose: tasks it runs
    // may outlive any one `block_on`).
    EXECUTOR.with(|e| *e.get_or_init(|| Box::leak(Box::new(LocalExecutor::new()))))
}

/// A udp socket under async-io, with the initialised room it reads into (async-io reads only
/// into `&mut [u8]`): zeroed once, not per datagram.
#[derive(Debug)]
pub struct AsyncDatagram {
    socket: Async<UdpSocket>,
    room: Box<[u8]>,
}

/// The largest udp payload, so no datagram is cut short.
const DATAGRAM_ROOM: usize = 65_536;

impl Datagram for AsyncDatagram {
    async fn send(self, datagram: Bytes) -> (Self, io::Result<usize>) {
        let r = self.socket.send(&datagram).await;
        (self, r)
    }

    async fn recv(mut self, mut buf: BytesMut) -> (Self, BytesMut, io::Result<usize>) {
        let want = buf.capacity().saturating_sub(buf.len()).max(1);
        let room = &mut self.room[..want.min(DATAGRAM_ROOM)];
        let r = self.socket.recv_from(room).await.map(|(n, _)| n);
        if let Ok(n) = r {
            buf.extend_from_slice(&room[..n]);
        }
        (self, buf, r)
    }
}

impl Runtime for AsyncIo {
    type Reader = Reader<Stream>;
    type Writer = Writer<Stream>;
    type Listener = AsyncListener;
    type Datagram = AsyncDatagram;

    fn datagram(socket: UdpSocket) -> io::Result<AsyncDatagram> {
        Ok(AsyncDatagram {
            socket: Async::new(socket)?,
            room: vec![0; DATAGRAM_ROOM].into_boxed_slice(),
        })
    }

    fn spawn(task: Task<Self>) {
        executor().spawn(task.run()).detach();
    }

    fn now() -> Instant {
        Instant::now()
    }

    async fn sleep_until(deadline: Instant) {
        Timer::at(deadline).await;
    }

    async fn connect_tcp(
        addr: SocketAddr,
        t: &TransportOptions,
    ) -> io::Result<(Reader<Stream>, Writer<Stream>)> {
        let s = Async::<TcpStream>::connect(addr).await?;
        s.get_ref().set_nodelay(true)?;
        net::apply_tcp_options(s.get_ref(), t)?;
        Ok(halves(Stream::Tcp(s), Some(addr.ip().to_string())))
    }

    fn ipc_stream(s: UnixStream) -> io::Result<(Reader<Stream>, Writer<Stream>)> {
        Ok(halves(Stream::Unix(Async::new(s)?), None))
    }

    fn tcp_listener(l: TcpListener) -> io::Result<AsyncListener> {
        Ok(AsyncListener::Tcp(Async::new(l)?))
    }

    fn ipc_listener(l: UnixListener, path: net::IpcPath) -> io::Result<AsyncListener> {
        Ok(AsyncListener::Unix(Async::new(l)?, path))
    }
}

/// The suite's backend for [`AsyncIo`].
#[derive(Debug)]
pub struct AsyncIoBackend;

impl Backend for AsyncIoBackend {
    type R = AsyncIo;
    const NAME: &'static str = "async-io (plugged in)";
    fn block_on<F: Future>(f: F) -> F::Output {
        // The executor outlives this call, and its tasks run only while a `block_on` does:
        // close what the scenario left open before returning, or the sockets' listeners (and
        // their ipc files) would stay for the life of the thread.
        async_io::block_on(executor().run(omq_driver::run_then_close::<AsyncIo, F>(f)))
    }
    fn spawn<F: Future<Output = ()> + Send + 'static>(f: F) {
        executor().spawn(f).detach();
    }
}

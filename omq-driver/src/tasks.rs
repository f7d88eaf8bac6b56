//! The driver's background tasks, generic over the runtime. None of them spawns anything
//! itself: new work goes through [`Runtime::spawn`], implemented by each backend with its
//! concrete types, so `Send` is checked where it holds.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use futures_util::future::{Fuse, FusedFuture, FutureExt};
use futures_util::{pin_mut, select_biased};
use omq_core::connection::Connection;
use omq_core::mechanism::Entropy;
use omq_core::pipe::PipeId;
use omq_core::{CloseReason, Endpoint, SessionConfig};

use crate::runtime::{Listener, ReadHalf, Runtime, WriteHalf};
use crate::shared::Shared;
use crate::signal::{Signal, CLOSE, DROPPED, RESUME};

/// Room a backend makes when handed a full buffer (the core's batch size); the driver
/// otherwise sizes reads from [`omq_core::connection::Connection::read_hint`].
pub const READ_SIZE: usize = omq_core::session::READ_BATCH;

/// Most chunks handed to one vectored write.
pub(crate) const MAX_CHUNKS: usize = 64;

/// A background task of the driver, for [`Runtime::spawn`] to run (`task.run()`) on the
/// backend's executor. Opaque: what it does is the driver's business.
#[derive(Debug)]
pub struct Task<R: Runtime>(Work<R>);

/// Hands `work` to the backend's executor.
pub(crate) fn spawn<R: Runtime>(work: Work<R>) {
    R::spawn(Task(work));
}

/// What a [`Task`] does.
#[derive(Debug)]
pub(crate) enum Work<R: Runtime> {
    /// Connect, then run the connection.
    Dial(DialTask),
    /// Run an accepted connection.
    Connection(Box<ConnectionTask<R>>),
    /// Accept connections on a bound endpoint.
    Listener(ListenerTask<R>),
    /// Fire the socket's timers (reconnection).
    Timer(TimerTask),
    /// Flush and stop a socket whose last handle was dropped.
    Close(CloseTask),
    /// Receive on a DISH's udp socket (a RADIO's runs inside its dial).
    Udp(Box<crate::udp::UdpTask<R>>),
}

impl<R: Runtime> Task<R> {
    /// Runs the task to completion.
    pub async fn run(self) {
        self.0.run().await
    }
}

impl<R: Runtime> Work<R> {
    async fn run(self) {
        #[cfg(feature = "tracing")]
        let span = self.span();
        let run = async move {
            match self {
                Work::Dial(t) => t.run::<R>().await,
                Work::Connection(t) => t.run().await,
                Work::Listener(t) => t.run().await,
                Work::Timer(t) => t.run::<R>().await,
                Work::Close(t) => t.run::<R>().await,
                Work::Udp(t) => t.run().await,
            }
        };
        #[cfg(feature = "tracing")]
        let run = tracing::Instrument::instrument(run, span);
        run.await
    }

    /// The span the task runs in: one per connection (dialled or accepted) and per listener,
    /// under its socket's span; what the core reports from within (handshake, disconnect,
    /// reconnection) carries it.
    #[cfg(feature = "tracing")]
    fn span(&self) -> tracing::Span {
        match self {
            Work::Dial(t) => tracing::info_span!(
                parent: &t.shared.span,
                "omq.connection",
                endpoint = %t.endpoint,
                pipe = ?t.pipe,
                mechanism = ?t.shared.lock().core.options().get_mechanism().name(),
                peer_address = tracing::field::Empty,
            ),
            Work::Connection(t) => tracing::info_span!(
                parent: &t.shared.span,
                "omq.connection",
                pipe = ?t.pipe,
                mechanism = ?t.config.mechanism.name(),
                peer_address = tracing::field::Empty,
            ),
            Work::Listener(t) => {
                tracing::info_span!(parent: &t.shared.span, "omq.listener", endpoint = %t.endpoint)
            }
            Work::Timer(t) => t.shared.span.clone(),
            Work::Close(t) => t.keeper.shared.span.clone(),
            Work::Udp(t) => {
                tracing::info_span!(parent: &t.shared.span, "omq.udp", pipe = ?t.pipe)
            }
        }
    }
}

/// Dials an endpoint for a pipe.
#[derive(Debug)]
pub(crate) struct DialTask {
    pub(crate) shared: Arc<Shared>,
    pub(crate) pipe: PipeId,
    pub(crate) endpoint: Endpoint,
}

impl DialTask {
    async fn run<R: Runtime>(self) {
        let DialTask {
            shared,
            pipe,
            endpoint,
        } = self;
        let transport = {
            let mut st = shared.lock();
            st.core.handle_dialing(pipe);
            st.core.options().transport().clone()
        };
        if let Endpoint::Udp { host, port } = &endpoint {
            return crate::udp::dial::<R>(shared, pipe, host, *port, &transport).await;
        }
        // CONNECT_TIMEOUT bounds one attempt; the socket then schedules the next as after any
        // failed connect.
        let result = match transport.connect_timeout {
            None => R::connect(&endpoint, &transport).await,
            Some(limit) => {
                let connect = R::connect(&endpoint, &transport).fuse();
                let timer = R::sleep_until(R::now() + limit).fuse();
                pin_mut!(connect, timer);
                select_biased! {
                    r = connect => r,
                    _ = timer => Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "CONNECT_TIMEOUT expired",
                    )),
                }
            }
        };
        let started = shared.with(|st| match result {
            // The socket finished closing while we connected: the stream goes with it.
            Ok(_) if st.stopped => None,
            Ok((reader, writer)) => {
                let config = st.core.handle_connected(pipe, R::now())?;
                let signal = Arc::new(Signal::default());
                st.conns.insert(pipe, signal.clone());
                Some((reader, writer, config, signal))
            }
            Err(e) => {
                let refused = matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound
                );
                st.core.handle_connect_failed(pipe, refused, R::now());
                None
            }
        });
        if let Some((reader, writer, config, signal)) = started {
            ConnectionTask::<R> {
                shared,
                pipe,
                reader,
                writer,
                config,
                signal,
            }
            .run()
            .await;
        }
    }
}

/// Runs the socket's reconnection timers.
#[derive(Debug)]
pub(crate) struct TimerTask {
    pub(crate) shared: Arc<Shared>,
}

impl TimerTask {
    async fn run<R: Runtime>(self) {
        let shared = self.shared;
        loop {
            let deadline = {
                let mut st = shared.lock();
                match st.core.poll_timeout() {
                    Some(t) if !st.stopped => t,
                    _ => {
                        st.timer_running = false;
                        return;
                    }
                }
            };
            let sleep = R::sleep_until(deadline).fuse();
            let woken = shared.timer.wait().fuse();
            pin_mut!(sleep, woken);
            select_biased! {
                _ = sleep => shared.with(|st| st.core.handle_timeout(R::now())),
                bits = woken => if bits & CLOSE != 0 {
                    shared.lock().timer_running = false;
                    return;
                }
            }
        }
    }
}

/// Connections a listener accepts in a row before it lets the runtime's other tasks run.
const ACCEPT_BURST: u32 = 64;

/// Accepts connections on one bound endpoint until told to stop.
#[derive(Debug)]
pub(crate) struct ListenerTask<R: Runtime> {
    pub(crate) shared: Arc<Shared>,
    pub(crate) listener: R::Listener,
    pub(crate) endpoint: String,
    pub(crate) signal: Arc<Signal>,
}

impl<R: Runtime> ListenerTask<R> {
    async fn run(self) {
        let (shared, signal) = (self.shared.clone(), self.signal.clone());
        self.serve().await;
        // The listener (and any accept in flight) is dropped by now. On io_uring the kernel
        // still holds the socket until the cancelled accept completes, which the runtime sees
        // on its next turn: give it one, then whoever unbinds or closes may bind again.
        R::sleep_until(R::now() + std::time::Duration::from_millis(2)).await;
        signal.done.store(true, Ordering::Release);
        shared.released.notify(usize::MAX);
    }

    async fn serve(self) {
        let ListenerTask {
            shared,
            listener,
            endpoint,
            signal,
        } = self;
        let accept = listener.accept().fuse();
        pin_mut!(accept);
        let mut accepted = 0u32;
        loop {
            let stop = signal.wait().fuse();
            pin_mut!(stop);
            select_biased! {
                bits = stop => if bits & CLOSE != 0 { return },
                (listener, result) = accept => {
                    match result {
                        Ok((reader, writer)) => {
                            let conn_signal = Arc::new(Signal::default());
                            let (pipe, config) = shared.with(|st| {
                                let (pipe, config) = st.core.handle_accepted(&endpoint, R::now());
                                st.conns.insert(pipe, conn_signal.clone());
                                (pipe, config)
                            });
                            spawn::<R>(Work::Connection(Box::new(ConnectionTask {
                                shared: shared.clone(),
                                pipe,
                                reader,
                                writer,
                                config,
                                signal: conn_signal,
                            })));
                        }
                        Err(e) => {
                            let errno = i64::from(e.raw_os_error().unwrap_or(0));
                            shared.with(|st| st.core.handle_accept_failed(&endpoint, errno));
                            // Out of descriptors or a connection reset before accept: wait a
                            // little instead of spinning, as libzmq does.
                            R::sleep_until(R::now() + std::time::Duration::from_millis(100)).await;
                        }
                    }
                    // Every backend takes a waiting connection at once, so a burst of connects
                    // is accepted in one go: let the runtime's other tasks run now and then.
                    accepted = accepted.wrapping_add(1);
                    if accepted.is_multiple_of(ACCEPT_BURST) {
                        R::yield_now().await;
                    }
                    accept.set(listener.accept().fuse());
                }
            }
        }
    }
}

/// One connection: its session, its stream halves, a read always in flight while reading is
/// wanted, and whatever is queued written in one vectored write whenever the stream is free.
#[derive(Debug)]
pub(crate) struct ConnectionTask<R: Runtime> {
    pub(crate) shared: Arc<Shared>,
    pub(crate) pipe: PipeId,
    pub(crate) reader: R::Reader,
    pub(crate) writer: R::Writer,
    pub(crate) config: SessionConfig,
    pub(crate) signal: Arc<Signal>,
}

/// Why a connection's loop ended.
enum End {
    /// The socket asked for it (it has already forgotten the pipe).
    Asked,
    /// The connection ended by itself.
    Lost(CloseReason),
}

fn never<T>() -> impl Future<Output = T> {
    futures_util::future::pending()
}

impl<R: Runtime> ConnectionTask<R> {
    async fn run(self) {
        let ConnectionTask {
            shared,
            pipe,
            reader,
            writer,
            config,
            signal,
        } = self;
        let mut guard = LostGuard::<R> {
            shared: shared.clone(),
            pipe,
            armed: true,
            _runtime: std::marker::PhantomData,
        };
        let mut config = config;
        // Fresh OS randomness for every connection's security handshake (the core never
        // draws its own).
        config.entropy = Some(Entropy::generate(&mut rand_core::OsRng));
        config.peer_address = reader.peer_address();
        #[cfg(feature = "tracing")]
        if let Some(address) = &config.peer_address {
            tracing::Span::current().record("peer_address", address.as_str());
        }
        let mut conn = Connection::new(pipe, config, R::now());
        if R::reads_elsewhere() {
            conn.leave_properties_to_reader();
        }
        let read = reader
            .read(BytesMut::with_capacity(conn.read_hint(&[])))
            .fuse();
        let write = Fuse::terminated();
        pin_mut!(read, write);
        // `write` gets its type from the first `set` below.
        let mut writer = Some(writer);
        let mut idle_reader: Option<(R::Reader, BytesMut)> = None;
        let mut pending: VecDeque<Bytes> = VecDeque::new();
        // The list the last write handed back, empty, kept for the next one: a new list for
        // every write was an allocation a write.
        let mut spare: Vec<Bytes> = Vec::new();
        let mut pending_bytes = 0usize;
        let mut in_write = 0usize;
        let end = loop {
            // After every input, drain every output.
            // What leaves the pipe is counted as unflushed in the same critical section, so a
            // closing socket never sees "pipe empty" before it sees the bytes it still owes.
            let pulled = shared.with(|st| {
                // What senders queued ahead of the lock goes first (see `outbox`).
                st.settle_outbox(&shared);
                let r = conn.pull(&mut st.core);
                let owed = conn.queued_transmit() + pending_bytes + in_write;
                signal.unflushed.store(owed, Ordering::Release);
                r
            });
            if pulled.is_err() {
                break End::Lost(CloseReason::Eof);
            }
            // Take from the session only what the next write carries: the rest stays queued
            // there, where MAX_QUEUED_TRANSMIT bounds it and the pipe's SNDHWM holds the rest.
            // `pending` only ever holds what a partial write left over.
            if let Some(w) = writer.take() {
                while pending.len() < MAX_CHUNKS {
                    match conn.poll_transmit() {
                        Some(c) => {
                            pending_bytes += c.len();
                            pending.push_back(c);
                        }
                        None => break,
                    }
                }
                if pending.is_empty() {
                    writer = Some(w);
                } else {
                    let mut chunks = std::mem::take(&mut spare);
                    chunks.extend(pending.drain(..));
                    in_write = pending_bytes;
                    pending_bytes = 0;
                    write.set(w.write(chunks).fuse());
                }
            }
            let queued = conn.queued_transmit() + pending_bytes + in_write;
            signal.unflushed.store(queued, Ordering::Release);
            if queued == 0 && shared.closing.load(Ordering::Acquire) {
                // A closing socket may be waiting for exactly this.
                shared.flushed.notify(usize::MAX);
            }
            // STREAM: the application closed this connection, and all it wrote before is out.
            if queued == 0 && conn.close_requested() {
                break End::Lost(CloseReason::Eof);
            }
            if conn.wants_read() {
                if let Some((r, mut buf)) = idle_reader.take() {
                    make_room(&conn, &mut buf);
                    read.set(r.read(buf).fuse());
                }
            }
            let deadline = conn.poll_timeout();
            let timer = async move {
                match deadline {
                    Some(t) => R::sleep_until(t).await,
                    None => never::<()>().await,
                }
            }
            .fuse();
            let woken = signal.wait().fuse();
            pin_mut!(timer, woken);
            select_biased! {
                bits = woken => {
                    if bits & CLOSE != 0 {
                        break End::Asked;
                    }
                    if bits & RESUME != 0 {
                        // Deliver what waited, then decode what the idle buffer still holds
                        // before reading more.
                        let r = match idle_reader.as_mut() {
                            Some((_, buf)) => drain_input::<R>(&shared, &mut conn, buf, true),
                            None => {
                                shared.with(|st| conn.deliver(&mut st.core, R::now()));
                                Ok(())
                            }
                        };
                        if let Err(e) = r {
                            break End::Lost(CloseReason::Session(e));
                        }
                    }
                }
                (w, mut chunks, result) = write => {
                    in_write = 0;
                    match result {
                        Ok(mut n) => {
                            // Keep what a partial write left, in order, ahead of newer chunks.
                            let mut rest = VecDeque::new();
                            for mut c in chunks.drain(..) {
                                if n >= c.len() {
                                    n -= c.len();
                                } else {
                                    c.advance(n);
                                    n = 0;
                                    rest.push_back(c);
                                }
                            }
                            while let Some(c) = rest.pop_back() {
                                pending_bytes += c.len();
                                pending.push_front(c);
                            }
                            spare = chunks;
                            writer = Some(w);
                        }
                        Err(e) => break End::Lost(CloseReason::Io(e.kind())),
                    }
                }
                (r, mut buf, result) = read => {
                    match result {
                        Ok(0) => break End::Lost(CloseReason::Eof),
                        Ok(_) => {
                            let r2 = drain_input::<R>(&shared, &mut conn, &mut buf, false);
                            if let Err(e) = r2 {
                                // Last words (an ERROR command) go out on a best-effort basis.
                                while let Some(c) = conn.poll_transmit() {
                                    pending.push_back(c);
                                }
                                if let Some(w) = writer.take() {
                                    if !pending.is_empty() {
                                        let _ = w.write(pending.drain(..).collect()).await;
                                    }
                                }
                                break End::Lost(CloseReason::Session(e));
                            }
                            if R::yields_after_input() {
                                R::yield_now().await;
                            }
                            if conn.wants_read() {
                                make_room(&conn, &mut buf);
                                read.set(r.read(buf).fuse());
                            } else {
                                idle_reader = Some((r, buf));
                            }
                        }
                        Err(e) => break End::Lost(CloseReason::Io(e.kind())),
                    }
                }
                _ = timer => {
                    let r = shared.with(|st| conn.handle_timeout(&mut st.core, R::now()));
                    if let Err(e) = r {
                        break End::Lost(CloseReason::Session(e));
                    }
                }
            }
        };
        guard.armed = false;
        signal.unflushed.store(0, Ordering::Release);
        shared.with(|st| {
            if let End::Lost(reason) = end {
                st.conns.remove(&pipe);
                st.core.handle_closed(pipe, &reason, R::now());
            }
        });
        // Dropping `read` and `write` here releases the stream; an io_uring backend's futures
        // keep their buffers alive until the kernel is done with them.
        let _ = (read.is_terminated(), write.is_terminated());
    }
}

/// Gives `buf` the room the next read needs, just before that read starts. The core sizes the
/// room; it never passes on what a peer merely announces. Grows by a whole batch at least, so
/// small reads do not each grow the buffer.
///
/// Only a read about to start asks for room: a reader paused at RCVHWM may hold most of a
/// batch still undecoded, and making room then would move (or grow) all of it for a read that
/// is not yet wanted. Once the paused bytes are decoded, what is left to move is at most the
/// start of one frame.
fn make_room(conn: &Connection, buf: &mut BytesMut) {
    let room = conn.read_hint(buf);
    if buf.capacity() - buf.len() < room {
        let batch = if conn.session().is_ready() {
            READ_SIZE
        } else {
            0
        };
        buf.reserve(room.max(batch));
    }
}

/// Decodes `buf` a batch at a time (outside the socket's lock; only handing each batch to the
/// socket takes it) until no whole frame is left or the socket has no room. With `resume`,
/// first delivers what waited for room.
fn drain_input<R: Runtime>(
    shared: &Arc<Shared>,
    conn: &mut Connection,
    buf: &mut BytesMut,
    resume: bool,
) -> Result<(), omq_core::SessionError> {
    if resume && !shared.with(|st| conn.deliver(&mut st.core, R::now())) {
        return Ok(());
    }
    loop {
        if !conn.wants_read() || (resume && !conn.input_pending(buf)) {
            return Ok(());
        }
        let now = R::now();
        let decoded = conn.handle_bytes(buf, now);
        if let Some(request) = conn.take_auth_request() {
            // Asked outside the socket's lock: an authenticator may wait (for a ZAP handler
            // in another thread), and the socket's other users must not wait with it.
            let options = shared.with(|st| st.core.options().clone());
            conn.handle_auth_reply(options.authenticate(&request), R::now());
        }
        shared.with(|st| conn.finish_input(&mut st.core, decoded, now))?;
        if !conn.input_pending(buf) {
            return Ok(());
        }
    }
}

/// Tells the socket a connection is gone if its task unwinds from a panic (a bug, but one that
/// must cost only that connection, never leak its pipe). A task dropped by a runtime shutting
/// down is left alone: the socket is going away with it, and nothing may be spawned then.
struct LostGuard<R: Runtime> {
    shared: Arc<Shared>,
    pipe: PipeId,
    armed: bool,
    _runtime: std::marker::PhantomData<fn() -> R>,
}

impl<R: Runtime> Drop for LostGuard<R> {
    fn drop(&mut self) {
        if self.armed && std::thread::panicking() {
            let pipe = self.pipe;
            self.shared.with(|st| {
                st.conns.remove(&pipe);
                let reason = CloseReason::Io(std::io::ErrorKind::Other);
                st.core.handle_closed(pipe, &reason, R::now());
            });
        }
    }
}

/// How often a closing socket looks again without being woken (a safety net).
const CLOSE_RECHECK: std::time::Duration = std::time::Duration::from_millis(100);

/// The socket's keeper (see [`crate::shared::Keeper`]): waits on the socket's runtime until
/// the last handle is dropped, then closes the socket in the background, flushing for at most
/// LINGER (capped at [`crate::socket::DROP_LINGER_CAP`]).
#[derive(Debug)]
pub(crate) struct CloseTask {
    pub(crate) keeper: KeeperGuard,
}

impl CloseTask {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        CloseTask {
            keeper: KeeperGuard {
                shared,
                armed: true,
            },
        }
    }

    async fn run<R: Runtime>(self) {
        let mut keeper = self.keeper;
        let shared = keeper.shared.clone();
        loop {
            let bits = shared.keeper.wait().await;
            if bits & DROPPED != 0 {
                let linger = {
                    let st = shared.lock();
                    if st.stopped {
                        break;
                    }
                    st.core
                        .options()
                        .get_linger()
                        .map_or(crate::socket::DROP_LINGER_CAP, |l| {
                            l.min(crate::socket::DROP_LINGER_CAP)
                        })
                };
                let _ = close::<R>(&shared, Some(linger)).await;
                break;
            }
            if bits & CLOSE != 0 {
                break;
            }
        }
        keeper.armed = false;
        shared.lock().keeper = crate::shared::Keeper::Gone;
    }
}

thread_local! {
    /// Sockets whose keeper was started on this thread (see [`close_orphans`]).
    static KEEPERS: std::cell::RefCell<Vec<std::sync::Weak<Shared>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Remembers that `shared`'s keeper starts on this thread. Sockets gone since are forgotten
/// whenever the list would grow (amortised, so many sockets cost no quadratic time).
pub(crate) fn register_keeper(shared: &Arc<Shared>) {
    KEEPERS.with(|k| {
        let mut k = k.borrow_mut();
        if k.len() == k.capacity() {
            k.retain(|w| w.strong_count() > 0);
        }
        k.push(Arc::downgrade(shared));
    });
}

/// Closes every socket still open whose tasks run on this thread, as libzmq's context
/// termination does: each first sends what it has queued, for as long as its LINGER allows
/// (capped at [`crate::socket::DROP_LINGER_CAP`], as for a dropped socket), then lets go of
/// its connections and listeners. Thread-per-core runtimes (glommio, monoio) never drop the
/// tasks still pending when the runtime itself is dropped: those tasks would keep the sockets'
/// listeners and connections open for the life of the process, and the sockets' keepers would
/// never run. Run this on such a runtime just before it ends (`omq_glommio::block_on` and
/// `omq_monoio::block_on` do): the runtime still runs meanwhile, so a reply sent just before
/// its socket was dropped still goes out. What LINGER could not send in time is reported (a
/// `WARN` through `tracing`). tokio and compio drop their tasks with the runtime, and sockets
/// close by themselves there.
pub async fn close_orphans<R: Runtime>() {
    let open: Vec<Arc<Shared>> = KEEPERS.with(|k| {
        k.borrow_mut()
            .drain(..)
            .filter_map(|w| w.upgrade())
            .collect()
    });
    // All at once: each waits out its own LINGER, so the runtime's end takes the longest one
    // (at most DROP_LINGER_CAP), not their sum.
    futures_util::future::join_all(open.into_iter().map(|shared| async move {
        let linger = shared
            .with(|st| st.core.options().get_linger())
            .map_or(crate::socket::DROP_LINGER_CAP, |l| {
                l.min(crate::socket::DROP_LINGER_CAP)
            });
        let flushed = close::<R>(&shared, Some(linger)).await;
        shared.lock().keeper = crate::shared::Keeper::Gone;
        #[cfg(feature = "tracing")]
        if !flushed && !linger.is_zero() {
            tracing::warn!(
                ?linger,
                "omq socket closed as its runtime ended, with messages LINGER could not send in \
                 time: they are discarded"
            );
        }
        #[cfg(not(feature = "tracing"))]
        let _ = flushed;
    }))
    .await;
}

/// Runs `f`, then [`close_orphans`]: the whole life of an application on a runtime that does
/// not drop its pending tasks when it ends (glommio, monoio, an executor kept for the life of
/// the thread), so that what the application's sockets owe is sent within LINGER and their
/// listeners (and ipc files) and connections are let go of.
pub async fn run_then_close<R: Runtime, F: std::future::Future>(f: F) -> F::Output {
    // Boxed: in a debug build the future would otherwise sit on the caller's stack in more
    // than one copy (a large scenario's overflowed a test thread's stack).
    let out = Box::pin(f).await;
    close_orphans::<R>().await;
    out
}

/// Marks the keeper gone when its task ends or is dropped unfinished (its runtime shut down).
/// Dropped unfinished after the last handle was dropped, it closes the socket on the spot, as
/// the handle would have.
#[derive(Debug)]
pub(crate) struct KeeperGuard {
    shared: Arc<Shared>,
    armed: bool,
}

impl Drop for KeeperGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let dropped = {
            let mut st = self.shared.lock();
            st.keeper = crate::shared::Keeper::Gone;
            st.dropped
        };
        if dropped {
            self.shared.close_now();
        }
    }
}

/// Closes the core, waits up to `linger` (None: forever) until everything queued has been
/// written, then stops every connection, listener and timer of the socket.
pub(crate) async fn close<R: Runtime>(
    shared: &Arc<Shared>,
    linger: Option<std::time::Duration>,
) -> bool {
    shared.closing.store(true, Ordering::Release);
    // Listeners stop at once, as libzmq's do (only what is queued lingers): a closing socket
    // takes no new peers, and the core has reported each listener CLOSED.
    let listeners: Vec<Arc<Signal>> = shared.with(|st| {
        st.close_outbox(shared);
        st.core.close();
        if let Some(inbox) = &shared.inbox {
            inbox.clear();
        }
        st.listeners.drain().map(|(_, s)| s).collect()
    });
    for s in &listeners {
        s.raise(CLOSE);
    }
    // What is on its way to in-process peers goes now (their receivers may not be looking).
    crate::inproc::flush_all(shared);
    let deadline = linger.map(|l| R::now() + l);
    let flushed = loop {
        // Listen before looking, so a change between the look and the wait is not missed.
        let listener = shared.flushed.listen();
        let pending = {
            let mut st = shared.lock();
            st.close_checks += 1;
            st.core.has_pending_output()
                || st
                    .conns
                    .values()
                    .any(|s| s.unflushed.load(crate::socket::UNFLUSHED_ORDER) > 0)
                || st.inproc.values().any(|l| l.in_flight())
        };
        if !pending {
            break true;
        }
        if deadline.is_some_and(|d| R::now() >= d) {
            break false;
        }
        // Woken when a connection has written everything or the core changes; the periodic
        // look is only a safety net, not a poll.
        let step = R::now() + CLOSE_RECHECK;
        let sleep = R::sleep_until(deadline.map_or(step, |d| d.min(step))).fuse();
        let woken = listener.fuse();
        pin_mut!(sleep, woken);
        select_biased! {
            _ = woken => {}
            _ = sleep => {}
        }
    };
    shared.with(|st| {
        st.stopped = true;
        for (_, s) in st.conns.drain() {
            s.raise(CLOSE);
        }
    });
    shared.timer.raise(CLOSE);
    crate::inproc::release_all(shared);
    released::<R>(shared, &listeners).await;
    flushed
}

/// Waits (a bounded while) until the listeners told to stop have let go of their sockets, so
/// the addresses can be bound again as soon as close or unbind returns.
pub(crate) async fn released<R: Runtime>(shared: &Shared, listeners: &[Arc<Signal>]) {
    let deadline = R::now() + RELEASE_WAIT;
    loop {
        let listener = shared.released.listen();
        if listeners.iter().all(|s| s.done.load(Ordering::Acquire)) || R::now() >= deadline {
            return;
        }
        let sleep = R::sleep_until(deadline).fuse();
        let woken = listener.fuse();
        pin_mut!(sleep, woken);
        select_biased! {
            _ = woken => {}
            _ = sleep => {}
        }
    }
}

/// The longest close or unbind waits for a listener to let go of its socket.
const RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

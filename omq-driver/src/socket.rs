//! The user-facing socket, the same on every backend (each re-exports it with its runtime).

use std::future::Future;
use std::hash::{BuildHasher, RandomState};
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_util::future::FutureExt;
use futures_util::{pin_mut, select_biased};
use omq_core::{Endpoint, Message, MonitorEvent, Options, SocketOption, SocketType};

use crate::error::Error;
use crate::inbox::Inbox;
use crate::runtime::Runtime;
use crate::shared::{Keeper, Shared, State};
use crate::signal::{Signal, CLOSE, DROPPED};
use crate::stream::SINK_BATCH;
use crate::tasks::ListenerTask;

/// The first step of every send: through the outbox where it takes the message (the send is
/// then done, and the enclosing function returns `Ok`), else the locked path
/// ([`Shared::lock_send`]), whose guard and result it gives. A macro rather than a function:
/// handing the guard and result back through an `Option` cost a socket without an outbox 31
/// instructions a message (callgrind, omq-tokio tcp 64 B).
macro_rules! lock_or_stage {
    ($shared:expr, $msg:expr) => {
        if $shared.outbox.is_none() {
            $shared.lock_send($msg)
        } else {
            match $shared.stage_or_lock($msg) {
                Some(locked) => locked,
                None => return Ok(()),
            }
        }
    };
}

/// How long a dropped socket keeps flushing in the background at most, whatever its LINGER:
/// dropping must never keep a process busy forever. `close().await` is the guaranteed flush.
pub const DROP_LINGER_CAP: Duration = Duration::from_secs(5);

/// A ZeroMQ socket on runtime `R`. Cloning gives another handle to the same socket.
pub struct Socket<R: Runtime> {
    handle: Arc<Handle<R>>,
}

impl<R: Runtime> Clone for Socket<R> {
    fn clone(&self) -> Self {
        Socket {
            handle: self.handle.clone(),
        }
    }
}

impl<R: Runtime> std::fmt::Debug for Socket<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Socket")
            .field("type", &self.handle.socket_type)
            .finish()
    }
}

struct Handle<R: Runtime> {
    shared: Arc<Shared>,
    socket_type: SocketType,
    _runtime: PhantomData<fn() -> R>,
}

impl<R: Runtime> Drop for Handle<R> {
    fn drop(&mut self) {
        // The last user handle is gone. Nothing is spawned here: this may run on any thread,
        // with or without a runtime. The keeper task, on the socket's runtime, flushes for at
        // most LINGER (capped) and stops every task of the socket; with no keeper left (the
        // runtime is gone, or the socket never bound or connected), the socket closes now.
        let keeper = {
            let mut st = self.shared.lock();
            st.dropped = true;
            st.keeper
        };
        if keeper == Keeper::Running {
            self.shared.keeper.raise(DROPPED);
        } else {
            self.shared.close_now();
        }
    }
}

/// What `bind`, `connect`, `unbind` and `disconnect` take: endpoint text (`&str`, `String`)
/// or an [`Endpoint`] (what `bind` returns), so a bound endpoint can be passed on as it is.
pub trait AsEndpoint {
    /// The endpoint as text.
    fn as_endpoint(&self) -> std::borrow::Cow<'_, str>;
}

impl AsEndpoint for &str {
    fn as_endpoint(&self) -> std::borrow::Cow<'_, str> {
        std::borrow::Cow::Borrowed(self)
    }
}

impl AsEndpoint for String {
    fn as_endpoint(&self) -> std::borrow::Cow<'_, str> {
        std::borrow::Cow::Borrowed(self)
    }
}

impl AsEndpoint for &String {
    fn as_endpoint(&self) -> std::borrow::Cow<'_, str> {
        std::borrow::Cow::Borrowed(self.as_str())
    }
}

impl AsEndpoint for Endpoint {
    fn as_endpoint(&self) -> std::borrow::Cow<'_, str> {
        std::borrow::Cow::Owned(self.to_string())
    }
}

impl AsEndpoint for &Endpoint {
    fn as_endpoint(&self) -> std::borrow::Cow<'_, str> {
        std::borrow::Cow::Owned(self.to_string())
    }
}

/// A message that could not be sent without waiting, given back with the reason.
#[derive(Debug)]
pub struct TrySendError {
    /// Why.
    pub error: Error,
    /// The message, unsent.
    pub message: Message,
}

/// Counts a waiting task in the state while it waits (and stops counting if its future is
/// dropped), so dispatch only checks readiness when someone waits.
struct Waiting<'a> {
    shared: &'a Shared,
    send: bool,
}

impl<'a> Waiting<'a> {
    fn new(shared: &'a Shared, st: &mut State, send: bool) -> Self {
        if send {
            st.send_waiters += 1;
        } else {
            st.recv_waiters += 1;
        }
        Waiting { shared, send }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        if self.send {
            st.send_waiters -= 1;
        } else {
            st.recv_waiters -= 1;
        }
    }
}

fn seed() -> u64 {
    RandomState::new().hash_one(Instant::now())
}

impl<R: Runtime> Socket<R> {
    /// A socket of type `t`. Fails when an option is invalid or does not apply to the type.
    pub fn new(t: SocketType, options: Options) -> Result<Self, Error> {
        let core = omq_core::Socket::new(t, options, seed())?;
        Ok(Socket {
            handle: Arc::new(Handle {
                shared: Shared::new::<R>(core),
                socket_type: t,
                _runtime: PhantomData,
            }),
        })
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.handle.shared
    }

    /// Starts the socket's keeper task (once), on the runtime that runs this bind or connect.
    fn start_keeper(&self) {
        let start = {
            let mut st = self.shared().lock();
            let start = st.keeper == Keeper::NotStarted && !st.stopped;
            if start {
                st.keeper = Keeper::Running;
            }
            start
        };
        if start {
            crate::tasks::register_keeper(self.shared());
            crate::tasks::spawn::<R>(crate::tasks::Work::Close(crate::tasks::CloseTask::new(
                self.shared().clone(),
            )));
        }
    }

    /// The socket's type.
    pub fn socket_type(&self) -> SocketType {
        self.handle.socket_type
    }

    /// Binds to an endpoint and returns it as bound (`tcp://127.0.0.1:0` comes back with its
    /// real port).
    pub async fn bind(&self, endpoint: impl AsEndpoint) -> Result<Endpoint, Error> {
        let endpoint = endpoint.as_endpoint();
        let bind = self.bind_text(&endpoint);
        // LISTENING / BIND_FAILED are reported inside the socket's span.
        #[cfg(feature = "tracing")]
        let bind = tracing::Instrument::instrument(bind, self.shared().span.clone());
        bind.await
    }

    async fn bind_text(&self, endpoint: &str) -> Result<Endpoint, Error> {
        self.start_keeper();
        let ep = self.shared().lock().core.bind(endpoint)?;
        if let Endpoint::Inproc(name) = &ep {
            return match crate::inproc::bind(self.shared(), name) {
                Ok(resolved) => {
                    self.shared()
                        .with(|st| st.core.handle_bound(endpoint, &resolved));
                    Ok(ep)
                }
                Err(e) => {
                    self.shared()
                        .with(|st| st.core.handle_bind_failed(endpoint, 98));
                    Err(Error::Io(e))
                }
            };
        }
        let transport = self.shared().lock().core.options().transport().clone();
        if let Endpoint::Udp { host, port } = &ep {
            return crate::udp::bind::<R>(self.shared(), endpoint, host, *port, &transport).await;
        }
        match R::bind(&ep, &transport).await {
            Ok((listener, resolved)) => {
                // Backends bind lz4+tcp:// and zstd+tcp:// as tcp and say so; the scheme is ours.
                let resolved = ep.rescheme(resolved);
                let signal = Arc::new(Signal::default());
                let mut st = self.shared().lock();
                st.core.handle_bound(endpoint, &resolved);
                st.listeners.insert(resolved.clone(), signal.clone());
                self.shared().finish(st);
                crate::tasks::spawn::<R>(crate::tasks::Work::Listener(ListenerTask {
                    shared: self.shared().clone(),
                    listener,
                    endpoint: resolved.clone(),
                    signal,
                }));
                Ok(resolved.parse()?)
            }
            Err(e) => {
                let mut st = self.shared().lock();
                st.core
                    .handle_bind_failed(endpoint, i64::from(e.raw_os_error().unwrap_or(0)));
                self.shared().finish(st);
                Err(Error::Io(e))
            }
        }
    }

    /// Stops listening on a bound endpoint and closes the connections accepted on it.
    /// Returns once the listener has let go of the address (within a bounded wait), so the
    /// same endpoint can be bound again at once.
    pub async fn unbind(&self, endpoint: impl AsEndpoint) -> Result<(), Error> {
        let endpoint = &*endpoint.as_endpoint();
        let stopped = {
            let mut st = self.shared().lock();
            st.settle_outbox(self.shared());
            let resolved = st.core.unbind(endpoint)?;
            let stopped = st.listeners.remove(&resolved);
            if let Some(s) = &stopped {
                s.raise(CLOSE);
            }
            if let Some(name) = resolved.strip_prefix("inproc://") {
                crate::inproc::unbind(self.shared(), name);
            }
            self.shared().finish(st);
            stopped
        };
        if let Some(s) = stopped {
            crate::tasks::released::<R>(self.shared(), &[s]).await;
        }
        Ok(())
    }

    /// Connects to an endpoint, now and after every loss of the connection. Works before the
    /// peer binds: messages queue for it (unless IMMEDIATE).
    pub async fn connect(&self, endpoint: impl AsEndpoint) -> Result<(), Error> {
        let endpoint = &*endpoint.as_endpoint();
        let _: Endpoint = endpoint.parse()?;
        self.start_keeper();
        let mut st = self.shared().lock();
        st.core.connect(endpoint, R::now())?;
        self.shared().finish(st);
        Ok(())
    }

    /// PEER: connects (as [`Socket::connect`]) and returns the routing id of the peer it
    /// dials, as libzmq's `zmq_connect_peer`: send to it with
    /// [`Message::with_routing_id`]; its messages arrive with that id.
    pub async fn connect_peer(&self, endpoint: impl AsEndpoint) -> Result<u32, Error> {
        let endpoint = &*endpoint.as_endpoint();
        let _: Endpoint = endpoint.parse()?;
        self.start_keeper();
        let mut st = self.shared().lock();
        let id = st.core.connect_peer(endpoint, R::now())?;
        self.shared().finish(st);
        Ok(id)
    }

    /// DISH: joins a group (libzmq's `zmq_join`); every RADIO peer is told.
    pub fn join(&self, group: impl AsRef<[u8]>) -> Result<(), Error> {
        let mut st = self.shared().lock();
        st.core.join(group.as_ref())?;
        self.shared().finish(st);
        Ok(())
    }

    /// DISH: leaves a group (libzmq's `zmq_leave`).
    pub fn leave(&self, group: impl AsRef<[u8]>) -> Result<(), Error> {
        let mut st = self.shared().lock();
        st.core.leave(group.as_ref())?;
        self.shared().finish(st);
        Ok(())
    }

    /// Stops connecting to an endpoint and drops what was queued for it.
    pub async fn disconnect(&self, endpoint: impl AsEndpoint) -> Result<(), Error> {
        let endpoint = &*endpoint.as_endpoint();
        // What waits parked for an in-process peer is on its way, as if in the lane: it goes
        // before the pipe is dropped.
        self.shared().settle_out();
        let mut st = self.shared().lock();
        // What was sent before goes where it would have gone, as if the outbox were not there.
        st.settle_outbox(self.shared());
        st.core.disconnect(endpoint)?;
        self.shared().finish(st);
        Ok(())
    }

    /// Sends a message, waiting up to SNDTIMEO (forever by default) while no peer has room.
    /// A send that returned `Ok` is queued whole; one whose future is dropped before
    /// completing has sent nothing.
    pub async fn send(&self, msg: impl Into<Message>) -> Result<(), Error> {
        // The first attempt needs none of the waiting machinery (a listener, a timer: 432
        // bytes on tokio), and a caller moves its whole future into place at every send: only
        // a send that must wait builds it, in a box of its own, as the listener it waits on
        // already is.
        let msg = {
            let shared = self.shared();
            let (st, r) = lock_or_stage!(shared, msg.into());
            match r {
                Ok(()) => {
                    shared.finish(st);
                    return Ok(());
                }
                Err(e) => match Error::from_send(e) {
                    (Error::WouldBlock, m)
                        if st.core.options().get_send_timeout() != Some(Duration::ZERO) =>
                    {
                        m
                    }
                    (err, _) => return Err(err),
                },
            }
        };
        Box::pin(self.send_waiting(msg)).await
    }

    /// [`Socket::send`] once the first attempt found no room.
    async fn send_waiting(&self, mut msg: Message) -> Result<(), Error> {
        let shared = self.shared();
        let mut deadline: Option<Option<Instant>> = None;
        loop {
            // Listens before it looks (a notification in between is not lost), on this
            // future's own stack: the box it lives in is the wait's only allocation.
            event_listener::listener!(shared.send_ready => listener);
            let _waiting = {
                let (mut st, r) = shared.lock_send(msg);
                match r {
                    Ok(()) => {
                        shared.finish(st);
                        return Ok(());
                    }
                    Err(e) => {
                        let (err, m) = Error::from_send(e);
                        let timeout = st.core.options().get_send_timeout();
                        if !matches!(err, Error::WouldBlock) || timeout == Some(Duration::ZERO) {
                            return Err(err);
                        }
                        // The clock is read only once a send has to wait.
                        deadline.get_or_insert_with(|| timeout.map(|t| R::now() + t));
                        msg = m;
                        Waiting::new(shared, &mut st, true)
                    }
                }
            };
            if !wait_until::<R>(listener, deadline.flatten()).await {
                return Err(Error::WouldBlock);
            }
        }
    }

    /// Sends without waiting. On failure the message comes back inside the error (large, but
    /// returned by value so the failure path allocates nothing).
    #[allow(clippy::result_large_err)]
    pub fn try_send(&self, msg: impl Into<Message>) -> Result<(), TrySendError> {
        let shared = self.shared();
        let (st, r) = lock_or_stage!(shared, msg.into());
        match r {
            Ok(()) => {
                self.shared().finish(st);
                Ok(())
            }
            Err(e) => {
                let (error, message) = Error::from_send(e);
                Err(TrySendError { error, message })
            }
        }
    }

    /// Receives a message, waiting up to RCVTIMEO (forever by default). A receive whose
    /// future is dropped before completing takes nothing off the queue.
    pub async fn recv(&self) -> Result<Message, Error> {
        // As in `send`: the waiting machinery is built, boxed, only for a receive that waits.
        {
            let shared = self.shared();
            if let Some(m) = shared.recv_ahead() {
                return Ok(m);
            }
            let (st, r) = shared.lock_recv();
            match r {
                Ok(m) => {
                    shared.finish(st);
                    return Ok(m);
                }
                Err(omq_core::RecvError::WouldBlock)
                    if st.core.options().get_recv_timeout() != Some(Duration::ZERO) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Box::pin(self.recv_waiting()).await
    }

    /// [`Socket::recv`] once the first look found nothing.
    async fn recv_waiting(&self) -> Result<Message, Error> {
        let shared = self.shared();
        let mut deadline: Option<Option<Instant>> = None;
        loop {
            event_listener::listener!(shared.recv_ready => listener);
            let _waiting = {
                let (mut st, r) = shared.lock_recv();
                match r {
                    Ok(m) => {
                        shared.finish(st);
                        return Ok(m);
                    }
                    Err(omq_core::RecvError::WouldBlock) => {
                        let timeout = st.core.options().get_recv_timeout();
                        if timeout == Some(Duration::ZERO) {
                            return Err(Error::WouldBlock);
                        }
                        deadline.get_or_insert_with(|| timeout.map(|t| R::now() + t));
                        Waiting::new(shared, &mut st, false)
                    }
                    Err(e) => return Err(e.into()),
                }
            };
            if !wait_until::<R>(listener, deadline.flatten()).await {
                return Err(Error::WouldBlock);
            }
        }
    }

    /// Receives up to `max` messages without waiting, appended to `out`, under one lock (one
    /// wake-up of the socket's tasks for the batch instead of one per message). Returns how many
    /// arrived; 0 when none was waiting. An error other than "nothing to receive" comes back
    /// only when no message was taken.
    pub fn try_recv_many(
        &self,
        out: &mut impl Extend<Message>,
        max: usize,
    ) -> Result<usize, Error> {
        let shared = self.shared();
        if max == 0 {
            return Ok(0);
        }
        let (mut st, first) = shared.lock_recv();
        let mut first = Some(first);
        let mut n = 0;
        while n < max {
            let r = match first.take() {
                Some(r) => r,
                None => st.recv(shared),
            };
            match r {
                Ok(m) => {
                    out.extend(std::iter::once(m));
                    n += 1;
                }
                Err(omq_core::RecvError::WouldBlock) => break,
                Err(e) if n == 0 => return Err(e.into()),
                Err(_) => break,
            }
        }
        shared.finish(st);
        Ok(n)
    }

    /// Sends messages from the front of `msgs` without waiting, under one lock, until one
    /// cannot go now; what went is removed from `msgs`. Returns how many went. An error other
    /// than "would block" comes back with the failing message put back at the front.
    pub fn try_send_many(
        &self,
        msgs: &mut std::collections::VecDeque<Message>,
    ) -> Result<usize, Error> {
        self.send_many(msgs, false).0
    }

    /// [`Socket::try_send_many`]; with `room`, also how many more messages the socket would
    /// take after them, counted up to a sink's batch ([`omq_core::Socket::send_room`] with
    /// [`SINK_BATCH`]), seen under the same lock (0 without).
    pub(crate) fn send_many(
        &self,
        msgs: &mut std::collections::VecDeque<Message>,
        room: bool,
    ) -> (Result<usize, Error>, usize) {
        let shared = self.shared();
        let mut st = shared.lock();
        let mut n = 0;
        let mut failed = None;
        let mut settled = false;
        while let Some(m) = msgs.pop_front() {
            match st.send(shared, m) {
                Ok(()) => n += 1,
                // Out of room with messages parked on an in-process link: move them (outside
                // the lock, as `Shared::lock_send` does) and go on, once.
                Err(omq_core::SendError::WouldBlock(m)) if !settled && st.parks_out(shared) => {
                    msgs.push_front(m);
                    settled = true;
                    shared.finish(st);
                    shared.settle_out();
                    st = shared.lock();
                }
                Err(e) => {
                    let (err, m) = Error::from_send(e);
                    msgs.push_front(m);
                    if !matches!(err, Error::WouldBlock) {
                        failed = Some(err);
                    }
                    break;
                }
            }
        }
        let mut left = if room {
            st.send_room(shared, SINK_BATCH)
        } else {
            0
        };
        if room && left == 0 && failed.is_none() && !settled && st.parks_out(shared) {
            // No room while this socket parked messages on in-process links: move them first.
            shared.finish(st);
            shared.settle_out();
            st = shared.lock();
            left = st.send_room(shared, SINK_BATCH);
            shared.finish(st);
        } else if n > 0 {
            shared.finish(st);
        }
        match failed {
            Some(e) => (Err(e), 0),
            None => (Ok(n), left),
        }
    }

    /// Receives without waiting.
    pub fn try_recv(&self) -> Result<Message, Error> {
        if let Some(m) = self.shared().recv_ahead() {
            return Ok(m);
        }
        let (st, r) = self.shared().lock_recv();
        let m = r?;
        self.shared().finish(st);
        Ok(m)
    }

    /// Subscribes to a topic prefix (SUB; XPUB with XPUB_MANUAL).
    pub fn subscribe(&self, topic: impl AsRef<[u8]>) -> Result<(), Error> {
        let mut st = self.shared().lock();
        st.core.subscribe(topic.as_ref())?;
        self.shared().finish(st);
        Ok(())
    }

    /// Unsubscribes from a topic prefix.
    pub fn unsubscribe(&self, topic: impl AsRef<[u8]>) -> Result<(), Error> {
        let mut st = self.shared().lock();
        st.core.unsubscribe(topic.as_ref())?;
        self.shared().finish(st);
        Ok(())
    }

    /// Changes an option on the live socket.
    pub fn set_option(&self, opt: SocketOption) -> Result<(), Error> {
        let mut st = self.shared().lock();
        st.core.set_option(opt)?;
        self.shared().finish(st);
        Ok(())
    }

    /// A one-line-per-pipe dump of the socket's state, for diagnosing a stuck socket.
    #[doc(hidden)]
    pub fn debug_dump(&self) -> String {
        let st = self.shared().lock();
        let mut out = format!(
            "{} send_waiters={} recv_waiters={} conns={} monitor={} close_checks={}\n",
            self.socket_type(),
            st.send_waiters,
            st.recv_waiters,
            st.conns.len(),
            st.core
                .monitor_queued()
                .map_or("off".to_string(), |n| n.to_string()),
            st.close_checks
        );
        if self.shared().outbox.is_some() {
            out += &format!(
                "  outbox lent={} stashed={} mover={:?}\n",
                st.outbox.lent(),
                st.outbox.stash.len(),
                st.mover
            );
        }
        if let Some(n) = self
            .shared()
            .inbox
            .as_ref()
            .map(Inbox::len)
            .filter(|&n| n > 0)
        {
            out += &format!("  inbox taken_ahead={n}\n");
        }
        for p in st.core.pipes().iter() {
            out += &format!("  {p:?}\n");
        }
        out
    }

    /// The socket's options.
    pub fn options(&self) -> Options {
        self.shared().lock().core.options().clone()
    }

    /// libzmq's TOPICS_COUNT: how many distinct topics a SUB or XSUB is subscribed to, or a
    /// PUB's or XPUB's peers are subscribed to; `None` for a type without topics.
    pub fn topics_count(&self) -> Option<usize> {
        self.shared().lock().core.topics_count()
    }

    /// A stream of monitor events (libzmq's zmq_socket_monitor), from now on.
    pub fn monitor(&self) -> Monitor<R> {
        let mut st = self.shared().lock();
        st.core.set_monitor(true);
        st.monitors += 1;
        drop(st);
        Monitor {
            shared: self.shared().clone(),
            listener: None,
            done: false,
            _runtime: PhantomData,
        }
    }

    /// Closes the socket: waits up to LINGER for queued messages to be written (including
    /// messages for peers not connected yet, which keep being dialled meanwhile), then stops
    /// every connection and listener. This is the guaranteed flush: `Ok` means everything
    /// queued was written; [`Error::LingerExpired`] means LINGER ran out first.
    pub async fn close(self) -> Result<(), Error> {
        let shared = self.shared().clone();
        let linger = shared.lock().core.options().get_linger();
        let flushed = crate::tasks::close::<R>(&shared, linger).await;
        // The keeper has nothing left to do.
        shared.keeper.raise(CLOSE);
        if flushed {
            Ok(())
        } else {
            Err(Error::LingerExpired)
        }
    }
}

/// Waits for `listener` or the deadline; false when the deadline came first.
async fn wait_until<R: Runtime>(
    listener: impl Future<Output = ()>,
    deadline: Option<Instant>,
) -> bool {
    match deadline {
        None => {
            listener.await;
            true
        }
        Some(d) => {
            let l = listener.fuse();
            let t = R::sleep_until(d).fuse();
            pin_mut!(l, t);
            select_biased! {
                _ = l => true,
                _ = t => false,
            }
        }
    }
}

/// Monitor events of a socket, as a `Stream`. Ends after MONITOR_STOPPED.
pub struct Monitor<R: Runtime> {
    shared: Arc<Shared>,
    listener: Option<event_listener::EventListener>,
    done: bool,
    _runtime: PhantomData<fn() -> R>,
}

impl<R: Runtime> std::fmt::Debug for Monitor<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Monitor").finish()
    }
}

impl<R: Runtime> futures_core::Stream for Monitor<R> {
    type Item = MonitorEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<MonitorEvent>> {
        let shared = self.shared.clone();
        loop {
            if self.done {
                return Poll::Ready(None);
            }
            {
                let mut st = shared.lock();
                if let Some(e) = st.core.poll_monitor() {
                    if e.kind == omq_core::EventKind::MonitorStopped {
                        self.done = true;
                    }
                    self.listener = None;
                    return Poll::Ready(Some(e));
                }
                if self.listener.is_none() {
                    self.listener = Some(shared.monitor_ready.listen());
                    continue;
                }
            }
            let l = self.listener.as_mut().expect("set above");
            match Pin::new(l).poll(cx) {
                Poll::Ready(()) => self.listener = None,
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl<R: Runtime> Drop for Monitor<R> {
    /// The last monitor dropped stops monitoring, so no event queue grows for a reader that
    /// is gone.
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        st.monitors = st.monitors.saturating_sub(1);
        if st.monitors == 0 {
            st.core.drop_monitor();
        }
    }
}

/// Keeps `Ordering` in use for the close helper's load of `unflushed`.
pub(crate) const UNFLUSHED_ORDER: Ordering = Ordering::Acquire;

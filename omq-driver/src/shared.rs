//! The state a socket's tasks share: the core socket behind a lock, the wake-up signals of its
//! connections, listeners and timer, and the events its user-facing futures wait on.
//!
//! Rule: whoever changes the core (a user call, a connection, a timer) calls
//! [`State::dispatch`] before letting go of the lock, which routes the core's actions to the
//! tasks they concern and wakes the waiters whose wait may be over. After every input, drain
//! every output.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

use event_listener::Event;
use omq_core::pipe::PipeId;
use omq_core::{Action, Endpoint, Message, RecvError, SendError, Socket as Core};

use crate::inbox::Inbox;
use crate::outbox::{Locked, Mover, Outbox, OUTBOX_CAP};
use crate::runtime::Runtime;
use crate::signal::{Signal, CLOSE, FLUSH, RESUME, TIMER};
use crate::tasks::{DialTask, TimerTask};

/// A hasher for pipe ids (already unique small integers): one multiplication instead of
/// SipHash on the per-message path.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct PipeIdHasher(u64);

impl std::hash::Hasher for PipeIdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map keyed by pipe id.
pub(crate) type PipeMap<V> = HashMap<PipeId, V, std::hash::BuildHasherDefault<PipeIdHasher>>;

/// What the user-facing socket and its background tasks share.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The core socket and the registry of tasks.
    pub(crate) state: Mutex<State>,
    /// A send may now succeed.
    pub(crate) send_ready: Event,
    /// A receive may now succeed.
    pub(crate) recv_ready: Event,
    /// Monitor events are waiting.
    pub(crate) monitor_ready: Event,
    /// Something a closing socket waits for may have happened: a connection wrote out
    /// everything it owed, or the closed core changed.
    pub(crate) flushed: Event,
    /// A listener task has ended and released its socket.
    pub(crate) released: Event,
    /// The socket is closing: connections tell [`Shared::flushed`] when they have written
    /// everything (only then, so the message path pays nothing for it).
    pub(crate) closing: std::sync::atomic::AtomicBool,
    /// Sends taken ahead of the lock (see `outbox`), where the runtime and the type allow.
    pub(crate) outbox: Option<Outbox<Message, Arc<Signal>>>,
    /// Messages a receive took ahead of the application (see `inbox`), for the types whose
    /// receive keeps no state.
    pub(crate) inbox: Option<Inbox<Message>>,
    /// The core's socket type, readable without the lock.
    socket_type: omq_core::SocketType,
    /// Wakes the timer task when the deadline moves.
    pub(crate) timer: Signal,
    /// Wakes the socket's keeper task (see [`Keeper`]): `DROPPED` when the last user handle
    /// is gone, `CLOSE` when `close()` has finished.
    pub(crate) keeper: Signal,
    /// Starts tasks on the socket's own runtime. Stored as a plain function pointer so that
    /// code holding only a `Shared` (an inproc peer on another backend, say) starts them on
    /// the right runtime.
    starter: fn(&Arc<Shared>, Start),
    /// The socket's span (`tracing` feature): the parent of its connections' spans.
    #[cfg(feature = "tracing")]
    pub(crate) span: tracing::Span,
}

/// The core and the registry, behind [`Shared::state`].
#[derive(Debug)]
pub(crate) struct State {
    /// The sans-io socket.
    pub(crate) core: Core,
    /// The wake-up signal of each live connection, by pipe.
    pub(crate) conns: PipeMap<Arc<Signal>>,
    /// The stop signal of each listener, by resolved endpoint.
    pub(crate) listeners: HashMap<String, Arc<Signal>>,
    /// Tasks waiting in `send`.
    pub(crate) send_waiters: usize,
    /// Tasks waiting in `recv`.
    pub(crate) recv_waiters: usize,
    /// How many times a closing socket has looked whether everything was written (shown by
    /// `debug_dump`: a close must wait on events, not poll).
    pub(crate) close_checks: usize,
    /// The socket has finished closing: nothing may start any more (a dial or a timer that
    /// would bring a connection back to a socket nobody owns).
    pub(crate) stopped: bool,
    /// Live monitor streams (the last one dropped stops monitoring).
    pub(crate) monitors: usize,
    /// The timer task is alive.
    pub(crate) timer_running: bool,
    /// inproc links, by the local pipe they serve.
    pub(crate) inproc: PipeMap<Arc<crate::inproc::Link>>,
    /// Lanes into this socket found empty while their sender had parked messages in its own
    /// pipe (link, sending end): [`Shared::lock_recv`] moves them over outside this lock.
    pub(crate) parked: Vec<(Arc<crate::inproc::Link>, usize)>,
    /// Where the socket's keeper task is.
    pub(crate) keeper: Keeper,
    /// The last user handle has been dropped.
    pub(crate) dropped: bool,
    /// The outbox's locked half: what it lent and what it stashed.
    pub(crate) outbox: Locked<Message>,
    /// The connection whose task moves the outbox when woken.
    pub(crate) mover: Option<PipeId>,
}

/// A connection task moves the outbox on its next turn: woken as for something to send.
impl Mover for Arc<Signal> {
    fn wake(&self) {
        self.raise(FLUSH);
    }
}

/// The keeper is the task that closes a socket when its last handle is dropped. It is spawned
/// with the socket's first bind or connect (inside the socket's runtime, where its other tasks
/// start), and waits. Dropping the handle only raises a signal, which is safe from any thread
/// and with or without a runtime: if the runtime still runs, the keeper wakes there and honours
/// LINGER; if the runtime is gone (and the keeper with it), the handle closes the socket on the
/// spot ([`Shared::close_now`]) and reports what LINGER could not send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keeper {
    /// Never started: the socket has not bound or connected yet.
    NotStarted,
    /// Spawned and waiting.
    Running,
    /// Finished, or dropped with its runtime.
    Gone,
}

/// Work the dispatch found that needs a task to start (done after the lock is released).
#[derive(Debug)]
pub(crate) enum Start {
    /// Dial for a pipe.
    Dial(PipeId, Endpoint),
    /// Run the socket's timer.
    Timer,
    /// Move messages across an inproc link from the given end (done inline, not as a task).
    Transfer(Arc<crate::inproc::Link>, usize),
    /// An inproc link ended on this side: tell the other side.
    Unlink(Arc<crate::inproc::Link>),
}

/// Starts one piece of work on runtime `R` (the `starter` of sockets made on `R`).
pub(crate) fn start_on<R: Runtime>(shared: &Arc<Shared>, start: Start) {
    match start {
        Start::Dial(pipe, Endpoint::Inproc(name)) => crate::inproc::connect(shared, pipe, &name),
        Start::Dial(pipe, endpoint) => {
            crate::tasks::spawn::<R>(crate::tasks::Work::Dial(DialTask {
                shared: shared.clone(),
                pipe,
                endpoint,
            }))
        }
        Start::Timer => crate::tasks::spawn::<R>(crate::tasks::Work::Timer(TimerTask {
            shared: shared.clone(),
        })),
        Start::Transfer(link, from) => link.transfer_lane(from),
        Start::Unlink(link) => link.unlink(shared),
    }
}

impl Shared {
    /// A shared state around a core socket whose tasks run on `R`.
    pub(crate) fn new<R: Runtime>(core: Core) -> Arc<Shared> {
        let socket_type = core.socket_type();
        // Only the types whose sends only wait for room get an outbox (see `outbox`).
        let stages = R::stages_sends() && socket_type.send_only_waits(&Message::from("x"));
        #[cfg(feature = "tracing")]
        let span = {
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tracing::info_span!("omq.socket", socket = %core.socket_type(), n)
        };
        Arc::new(Shared {
            state: Mutex::new(State {
                core,
                conns: PipeMap::default(),
                listeners: HashMap::new(),
                send_waiters: 0,
                recv_waiters: 0,
                monitors: 0,
                close_checks: 0,
                stopped: false,
                timer_running: false,
                inproc: PipeMap::default(),
                parked: Vec::new(),
                keeper: Keeper::NotStarted,
                dropped: false,
                outbox: Locked::default(),
                mover: None,
            }),
            send_ready: Event::new(),
            recv_ready: Event::new(),
            monitor_ready: Event::new(),
            flushed: Event::new(),
            released: Event::new(),
            closing: std::sync::atomic::AtomicBool::new(false),
            outbox: stages.then(Outbox::default),
            inbox: socket_type.receives_without_state().then(Inbox::default),
            socket_type,
            timer: Signal::default(),
            keeper: Signal::default(),
            starter: start_on::<R>,
            #[cfg(feature = "tracing")]
            span,
        })
    }

    /// Locks the state (a panic elsewhere does not make the socket unusable).
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A message a receive took ahead (see `inbox`), without the lock.
    #[inline]
    pub(crate) fn recv_ahead(&self) -> Option<Message> {
        self.inbox.as_ref()?.pop()
    }

    /// Locks and receives, moving over what in-process senders parked (see `inproc`) when
    /// nothing else is there: their pipes are locked only after this lock is let go, as the
    /// two sockets' locks are never held together. Every receive path goes through here.
    pub(crate) fn lock_recv(
        self: &Arc<Self>,
    ) -> (MutexGuard<'_, State>, Result<Message, RecvError>) {
        let mut st = self.lock();
        loop {
            let r = st.recv(self);
            if r.is_ok() {
                st.take_ahead(self);
            }
            if !matches!(r, Err(RecvError::WouldBlock)) || st.parked.is_empty() {
                return (st, r);
            }
            let parked = std::mem::take(&mut st.parked);
            drop(st);
            for (link, from) in parked {
                link.transfer_lane(from);
            }
            st = self.lock();
        }
    }

    /// Locks and sends; when the core has no room and this socket parked messages on
    /// in-process links, moves those over (outside the lock) and tries once more. Every
    /// send path goes through here.
    pub(crate) fn lock_send(
        self: &Arc<Self>,
        msg: Message,
    ) -> (MutexGuard<'_, State>, Result<(), SendError>) {
        let mut st = self.lock();
        match st.send(self, msg) {
            Err(SendError::WouldBlock(m)) if st.parks_out(self) => {
                drop(st);
                self.settle_out();
                let mut st = self.lock();
                let r = st.send(self, m);
                (st, r)
            }
            r => (st, r),
        }
    }

    /// A send on a socket with an outbox: through the outbox without the lock if it has
    /// credit out and the message is one whose send only waits for room (`None`: sent),
    /// otherwise [`Shared::lock_send`]. One load before the locked path for a socket whose
    /// outbox lends nothing (no connection yet, or in-process peers only).
    pub(crate) fn stage_or_lock(
        self: &Arc<Self>,
        msg: Message,
    ) -> Option<(MutexGuard<'_, State>, Result<(), SendError>)> {
        let Some(outbox) = &self.outbox else {
            return Some(self.lock_send(msg));
        };
        if !outbox.has_credit() || !self.socket_type.send_only_waits(&msg) {
            return Some(self.lock_send(msg));
        }
        match outbox.try_stage(msg) {
            crate::outbox::Staged::Done => None,
            crate::outbox::Staged::DrainHere => {
                self.with(|st| st.settle_outbox(self));
                None
            }
            crate::outbox::Staged::NoCredit(m) => Some(self.lock_send(m)),
        }
    }

    /// Moves over every in-process link on which this socket parked messages in its own
    /// pipe. Takes this socket's lock (and the peers') itself: call it without holding it.
    pub(crate) fn settle_out(self: &Arc<Self>) {
        let links: Vec<(Arc<crate::inproc::Link>, usize)> = {
            let st = self.lock();
            st.inproc
                .values()
                .map(|l| (l.clone(), l.end_of(self)))
                .filter(|(l, from)| l.parked(*from))
                .collect()
        };
        for (link, from) in links {
            link.transfer_lane(from);
        }
    }

    /// Runs `f` on the locked state, dispatches, unlocks, and starts what the dispatch asked
    /// for. Async code uses this so no lock guard ever lives across an `.await`.
    pub(crate) fn with<T>(self: &Arc<Self>, f: impl FnOnce(&mut State) -> T) -> T {
        let mut st = self.lock();
        let t = f(&mut st);
        self.finish(st);
        t
    }

    /// Closes the socket at once, without waiting and without a runtime: used when the last
    /// handle is dropped and no keeper task is left to close it in the background (the
    /// runtime is gone, or the socket never bound or connected). Stops every task that may
    /// still run, lets go of in-process links, and reports (a `WARN` through `tracing`, with
    /// the `tracing` feature) what LINGER promised but nobody is left to send. Does nothing on a socket already stopped.
    pub(crate) fn close_now(self: &Arc<Self>) {
        let _ = self.stop_now();
    }

    /// [`Shared::close_now`], returning the stop signals of the listeners it stopped.
    pub(crate) fn stop_now(self: &Arc<Self>) -> Vec<Arc<Signal>> {
        self.closing
            .store(true, std::sync::atomic::Ordering::Release);
        #[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
        let (owed, linger, listeners) = {
            let mut st = self.lock();
            if st.stopped {
                return Vec::new();
            }
            st.close_outbox(self);
            st.core.close();
            if let Some(inbox) = &self.inbox {
                inbox.clear();
            }
            let owed = st.core.has_pending_output()
                || st
                    .conns
                    .values()
                    .any(|s| s.unflushed.load(std::sync::atomic::Ordering::Acquire) > 0)
                || st.inproc.values().any(|l| l.in_flight());
            st.stopped = true;
            for (_, s) in st.conns.drain() {
                s.raise(CLOSE);
            }
            let listeners: Vec<Arc<Signal>> = st.listeners.drain().map(|(_, s)| s).collect();
            let linger = st.core.options().get_linger();
            self.finish(st);
            (owed, linger, listeners)
        };
        for s in &listeners {
            s.raise(CLOSE);
        }
        self.timer.raise(CLOSE);
        self.keeper.raise(CLOSE);
        crate::inproc::release_all(self);
        #[cfg(feature = "tracing")]
        if owed && linger != Some(std::time::Duration::ZERO) {
            tracing::warn!(
                ?linger,
                "omq socket closed with messages still queued and no runtime left to send \
                 them: LINGER not honoured, the messages are discarded (close().await the \
                 socket inside its runtime to flush it)"
            );
        }
        listeners
    }

    /// Dispatches, releases the lock, then starts what the dispatch asked for.
    pub(crate) fn finish(self: &Arc<Self>, mut st: MutexGuard<'_, State>) {
        let mut starts = Vec::new();
        st.dispatch(self, &mut starts);
        drop(st);
        // Most calls start nothing: skip even making the iterator.
        if !starts.is_empty() {
            for s in starts {
                (self.starter)(self, s);
            }
        }
    }
}

impl State {
    /// Sends through the core, after what the outbox holds (so every send keeps its order):
    /// while the outbox still holds messages the core had no room for, this one waits too.
    #[inline(always)]
    pub(crate) fn send(&mut self, shared: &Shared, msg: Message) -> Result<(), SendError> {
        if shared.outbox.is_some() && !self.outbox.is_idle() && !self.outbox_lets_send(shared) {
            return Err(SendError::WouldBlock(msg));
        }
        self.core.send(msg)
    }

    /// Before a locked send on a socket whose outbox lent something: moves the outbox into
    /// the core, and says whether this send may go now (nothing stashed ahead of it, and
    /// room beyond what senders are queueing this instant, so SNDHWM stays exact). The room
    /// the outbox lent and nobody took is taken back for this send.
    #[cold]
    fn outbox_lets_send(&mut self, shared: &Shared) -> bool {
        let Some(outbox) = &shared.outbox else {
            return true;
        };
        self.settle_outbox(shared);
        if !self.outbox.stash.is_empty() {
            return false;
        }
        outbox.reclaim(&mut self.outbox);
        let lent = self.outbox.lent();
        lent == 0 || self.core.send_room(lent + 1) > lent
    }

    /// Moves what the outbox holds into the core, in order; what finds no room stays in the
    /// outbox's stash. Cheap when nothing is owed (one load).
    #[inline]
    pub(crate) fn settle_outbox(&mut self, shared: &Shared) {
        if let Some(outbox) = &shared.outbox {
            if outbox.needs_drain(&self.outbox) {
                let core = &mut self.core;
                outbox.drain(&mut self.outbox, |m| {
                    core.send(m).map_err(SendError::into_message)
                });
            }
        }
    }

    /// Room the core has that senders through the outbox have not taken: what a batch sender
    /// may count on (the credit nobody took is taken back for it).
    pub(crate) fn send_room(&mut self, shared: &Shared, enough: usize) -> usize {
        if let Some(outbox) = &shared.outbox {
            self.settle_outbox(shared);
            outbox.reclaim(&mut self.outbox);
        }
        if !self.outbox.stash.is_empty() {
            return 0;
        }
        let lent = self.outbox.lent();
        self.core
            .send_room(enough.saturating_add(lent))
            .saturating_sub(lent)
    }

    /// Before the core closes: takes the outbox's credit back, waits out the senders between
    /// credit and queue, and moves everything they queued into the core, so LINGER covers
    /// every send that returned `Ok`.
    pub(crate) fn close_outbox(&mut self, shared: &Shared) {
        if let Some(outbox) = &shared.outbox {
            let core = &mut self.core;
            outbox.revoke(&mut self.outbox, |m| {
                core.send(m).map_err(SendError::into_message)
            });
            outbox.set_mover(&mut self.outbox, None);
            self.mover = None;
        }
    }

    /// Keeps the outbox's mover a live connection and lends it the core's room. With no
    /// connection left, no credit is lent, and senders that still hold some drain themselves.
    #[inline]
    fn tend_outbox(&mut self, shared: &Shared) {
        // No connection (in-process peers only, or none yet) and nothing lent: nothing to do.
        if shared.outbox.is_some()
            && !(self.mover.is_none() && self.conns.is_empty() && self.outbox.is_idle())
        {
            self.tend_outbox_now(shared);
        }
    }

    fn tend_outbox_now(&mut self, shared: &Shared) {
        let Some(outbox) = &shared.outbox else {
            return;
        };
        let gone = self.mover.is_some_and(|p| !self.conns.contains_key(&p));
        if gone || (self.mover.is_none() && !self.conns.is_empty() && !self.stopped) {
            let next = if self.stopped || self.core.is_closed() {
                None
            } else {
                self.conns.iter().next().map(|(p, s)| (*p, s.clone()))
            };
            self.mover = next.as_ref().map(|(p, _)| *p);
            outbox.set_mover(&mut self.outbox, next.map(|(_, s)| s));
        }
        // After any change of mover: a sender that woke the old one is drained here.
        self.settle_outbox(shared);
        // Nothing is lent without a mover (in-process peers only, say): no room to count.
        if self.mover.is_some() && !self.core.is_closed() {
            outbox.grant(&mut self.outbox, self.core.send_room(OUTBOX_CAP));
        }
    }

    /// Whether this socket parked messages on any of its in-process links.
    pub(crate) fn parks_out(&self, shared: &Shared) -> bool {
        self.inproc.values().any(|l| l.parked(l.end_of(shared)))
    }

    /// Receives from the core; with nothing there, first takes in what in-process peers have
    /// on their way (see `inproc`). Every receive path reaches it through
    /// [`Shared::lock_recv`].
    #[inline]
    pub(crate) fn recv(&mut self, shared: &Shared) -> Result<Message, RecvError> {
        // What a receive took ahead is older than anything still in the core.
        if let Some(m) = shared.inbox.as_ref().and_then(Inbox::pop) {
            return Ok(m);
        }
        loop {
            match self.core.recv() {
                Err(RecvError::WouldBlock)
                    if !self.inproc.is_empty() && crate::inproc::Link::pull(shared, self) > 0 => {}
                r => return r,
            }
        }
    }

    /// After a receive that got its message: takes what else the core holds now, up to the
    /// inbox's room, ahead of the application (see `inbox`). Only what is queued: nothing is
    /// pulled off in-process links for it, and a CONFLATE socket, whose queue keeps only the
    /// newest message, takes nothing ahead.
    #[inline]
    fn take_ahead(&mut self, shared: &Shared) {
        if let Some(inbox) = &shared.inbox {
            if self.inproc.is_empty() && !self.core.options().get_conflate() {
                inbox.fill(|| self.core.recv().ok());
            }
        }
    }

    /// Routes the core's actions and wakes waiters. Call with the lock held, after any change.
    pub(crate) fn dispatch(&mut self, shared: &Shared, starts: &mut Vec<Start>) {
        self.tend_outbox(shared);
        self.dispatch_actions(shared, starts);
        // The outbox's mover went with a connection closed just now: find another (and drain
        // for whoever woke the old one) before anyone relies on it.
        while self.mover.is_some_and(|p| !self.conns.contains_key(&p)) {
            self.tend_outbox(shared);
            self.dispatch_actions(shared, starts);
        }
        if self.send_waiters > 0 && self.core.can_send() {
            shared.send_ready.notify(usize::MAX);
        }
        if self.recv_waiters > 0
            && (self.core.can_recv() || shared.inbox.as_ref().is_some_and(|i| !i.is_empty()))
        {
            shared.recv_ready.notify(usize::MAX);
        }
        if self.monitors > 0 {
            shared.monitor_ready.notify(usize::MAX);
        }
        if self.core.is_closed() {
            shared.flushed.notify(usize::MAX);
        }
        if self.core.poll_timeout().is_some() && !self.stopped {
            if self.timer_running {
                shared.timer.raise(TIMER);
            } else {
                self.timer_running = true;
                starts.push(Start::Timer);
            }
        }
    }

    /// Routes the core's actions to the tasks they concern (see [`State::dispatch`]).
    #[inline(always)]
    fn dispatch_actions(&mut self, shared: &Shared, starts: &mut Vec<Start>) {
        while let Some(action) = self.core.poll_action() {
            match action {
                Action::Dial { pipe, endpoint } if !self.stopped => {
                    starts.push(Start::Dial(pipe, endpoint))
                }
                Action::Close { pipe } => {
                    if let Some(s) = self.conns.remove(&pipe) {
                        s.raise(CLOSE);
                    }
                    if let Some(link) = self.inproc.remove(&pipe) {
                        starts.push(Start::Unlink(link));
                    }
                }
                Action::Flush { pipe } => {
                    if let Some(s) = self.conns.get(&pipe) {
                        s.raise(FLUSH);
                    } else if let Some(link) = self.inproc.get(&pipe) {
                        // Into the lane now, under this lock; to the peer only if it must.
                        let from = link.end_of(shared);
                        let eager = self.core.is_closed() || shared.closing.load(Ordering::Relaxed);
                        if link.take(from, &mut self.core, eager).needs_mover() {
                            starts.push(Start::Transfer(link.clone(), from));
                        }
                    }
                }
                Action::ResumeRead { pipe } => {
                    if let Some(s) = self.conns.get(&pipe) {
                        s.raise(RESUME);
                    } else if let Some(link) = self.inproc.get(&pipe) {
                        starts.push(Start::Transfer(link.clone(), 1 - link.end_of(shared)));
                    }
                }
                _ => {}
            }
        }
    }
}

//! `inproc://`: sockets of one process joined without sessions, framing or copies.
//!
//! A link joins one pipe of each socket. Messages move by value from one socket's outgoing
//! queue into the other's incoming queue through a lane (one per direction), only as many as
//! the receiving queue has room for, so the link holds exactly SNDHWM + RCVHWM messages, as
//! libzmq's inproc does. The sender's dispatch takes each message into the lane under its own
//! lock; the receiver takes the lane in whole when it has nothing left to receive, so a busy
//! receiver is neither locked nor woken per message. Only when the receiver found the lane
//! empty (it may be waiting) does the sender deliver at once, with one wake-up. While the
//! receiver is busy the sender does not even touch the lane per message: it puts one message
//! in, marks the lane `parked`, and leaves the rest in its own pipe; the receiver, when it has
//! read the lane dry, moves the sender's pipe over in one batch ([`Shared::lock_recv`]), and a
//! sender that runs out of room does the same ([`Shared::lock_send`]). Moves happen
//! inline, in whichever task found messages or room, never in a task of their own. The two
//! sockets' locks are never held together; a lane's lock is taken inside either.
//!
//! Names are per process and shared by every backend. Connecting to a name before it is bound
//! works: the connecting pipe queues, and the link forms when the name is bound.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Instant;

use bytes::Bytes;
use omq_core::pipe::{Command, PipeId};
use omq_core::wire::metadata::{Metadata, IDENTITY, SOCKET_TYPE};
use omq_core::Message;
use omq_core::{CloseReason, PeerInfo, SessionError, Socket as Core};

use crate::shared::{Shared, State};

#[derive(Debug, Default)]
struct Registry {
    bound: HashMap<String, Weak<Shared>>,
    waiting: HashMap<String, Vec<(Weak<Shared>, PipeId)>>,
}

fn registry() -> &'static Mutex<Registry> {
    static R: OnceLock<Mutex<Registry>> = OnceLock::new();
    R.get_or_init(Default::default)
}

fn lock_registry() -> std::sync::MutexGuard<'static, Registry> {
    registry().lock().unwrap_or_else(|e| e.into_inner())
}

/// One side of a link.
#[derive(Debug)]
struct End {
    shared: Weak<Shared>,
    pipe: PipeId,
}

/// Two pipes of two sockets joined in-process.
#[derive(Debug)]
pub(crate) struct Link {
    ends: [End; 2],
    /// `lanes[i]` carries what `ends[i]` sends to the other end.
    lanes: [Mutex<Lane>; 2],
}

/// One direction of a link: messages taken off the sending pipe and not yet in the receiving
/// one. The sender takes into the lane under its own lock only (one short lock of the lane
/// per message, never the receiver's socket); the receiver takes the whole lane in when it
/// runs out of messages. The receiver's socket is locked by the sender only when the
/// receiver may be waiting (`idle`), when a command must arrive, when the room has to be
/// looked at again, or when the sender closes. The lane holds no more than the receiving
/// pipe's room, so the link holds exactly SNDHWM + RCVHWM messages.
#[derive(Debug)]
struct Lane {
    /// Commands taken from the sending pipe, in order (delivered before the messages, as the
    /// core sends a pipe's commands before its messages).
    cmds: Vec<Command>,
    /// Messages taken from the sending pipe, in order.
    q: VecDeque<Message>,
    /// An empty queue swapped in when `q` is delivered, so delivering allocates nothing; the
    /// sending pipe and the lane trade queues the same way when the lane takes everything.
    spare: VecDeque<Message>,
    /// The same for `cmds`.
    spare_cmds: Vec<Command>,
    /// How many more messages `q` may take: the receiving pipe's room, as last seen under
    /// the receiver's lock, minus what `q` holds. A lower bound (reading only makes room).
    /// Commands do not count: they take no room in the receiving pipe.
    room: usize,
    /// The receiver found `q` empty and may be waiting: whoever takes next delivers at once.
    idle: bool,
    /// The sender stopped taking while the receiver was busy: what follows waits in the
    /// sending pipe (which keeps its pending `Flush`, so further sends emit none and touch
    /// neither the lane nor the receiver) until someone moves it with
    /// [`Link::transfer_lane`]: the receiver once it has read the lane dry, or the sender
    /// when it needs the room. Read and written under the lane's lock only, where `take`
    /// decides: either the sender saw `idle`, or the receiver sees `parked`.
    parked: bool,
}

impl Default for Lane {
    fn default() -> Self {
        Lane {
            cmds: Vec::new(),
            q: VecDeque::new(),
            spare: VecDeque::new(),
            spare_cmds: Vec::new(),
            room: 0,
            idle: true,
            parked: false,
        }
    }
}

fn lock(lane: &Mutex<Lane>) -> std::sync::MutexGuard<'_, Lane> {
    lane.lock().unwrap_or_else(|e| e.into_inner())
}

/// How [`Link::take`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Took {
    /// The sending pipe is empty (its next message comes with a new `Flush`). `deliver`: the
    /// lane must go to the receiver now: it may be waiting, a command is among what was
    /// taken (commands go at once: the peer may never receive), or the taker is eager (a
    /// closing sender, or a mover).
    Drained { deliver: bool },
    /// The receiver is busy: one message went into the lane and the rest waits in the pipe.
    Parked,
    /// The lane holds all the room the receiver had; the pipe may hold more.
    Full,
}

impl Took {
    /// Whether a mover ([`Link::transfer_lane`]) must run.
    pub(crate) fn needs_mover(self) -> bool {
        match self {
            Took::Drained { deliver } => deliver,
            Took::Parked => false,
            Took::Full => true,
        }
    }
}

/// Binds an inproc name for a socket and joins every connection waiting for it.
pub(crate) fn bind(shared: &Arc<Shared>, name: &str) -> std::io::Result<String> {
    let waiting = {
        let mut reg = lock_registry();
        if reg.bound.get(name).is_some_and(|w| w.strong_count() > 0) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AddrInUse,
                format!("inproc://{name} is already bound"),
            ));
        }
        reg.bound.insert(name.into(), Arc::downgrade(shared));
        reg.waiting.remove(name).unwrap_or_default()
    };
    for (weak, pipe) in waiting {
        if let Some(connector) = weak.upgrade() {
            join(&connector, pipe, shared, name);
        }
    }
    Ok(format!("inproc://{name}"))
}

/// Releases a bound name.
pub(crate) fn unbind(shared: &Arc<Shared>, name: &str) {
    let mut reg = lock_registry();
    if reg
        .bound
        .get(name)
        .is_some_and(|w| w.as_ptr() == Arc::as_ptr(shared))
    {
        reg.bound.remove(name);
    }
}

/// Lets go of everything a closing socket has in-process: its bound names and its links.
/// What it parked goes first, as it would have been in the lanes.
pub(crate) fn release_all(shared: &Arc<Shared>) {
    lock_registry()
        .bound
        .retain(|_, w| w.as_ptr() != Arc::as_ptr(shared));
    shared.settle_out();
    let links: Vec<Arc<Link>> = shared.with(|st| st.inproc.drain().map(|(_, l)| l).collect());
    for link in links {
        link.unlink(shared);
    }
}

/// The connecting side's dial: join now if the name is bound, or wait for the bind.
pub(crate) fn connect(shared: &Arc<Shared>, pipe: PipeId, name: &str) {
    let binder = {
        let mut reg = lock_registry();
        match reg.bound.get(name).and_then(Weak::upgrade) {
            Some(b) => b,
            None => {
                reg.waiting
                    .entry(name.into())
                    .or_default()
                    .push((Arc::downgrade(shared), pipe));
                return;
            }
        }
    };
    join(shared, pipe, &binder, name);
}

fn peer_info(st: &crate::shared::State) -> PeerInfo {
    let t = st.core.socket_type();
    let mut props = Metadata::new();
    props.insert(SOCKET_TYPE, Bytes::from_static(t.name().as_bytes()));
    let rid = st.core.options().get_routing_id().clone();
    if t.sends_identity() {
        props.insert(IDENTITY, rid.clone());
    }
    PeerInfo {
        socket_type: t,
        routing_id: t.sends_identity().then_some(rid),
        properties: Arc::new(props),
        zmtp_minor: 1,
    }
}

fn join(connector: &Arc<Shared>, pipe: PipeId, binder: &Arc<Shared>, name: &str) {
    if Arc::ptr_eq(connector, binder) {
        // A socket connected to itself: refuse like an incompatible peer.
        connector.with(|st| {
            st.core
                .handle_closed(pipe, &CloseReason::Eof, Instant::now());
        });
        return;
    }
    let now = Instant::now();
    let endpoint = format!("inproc://{name}");
    let (connector_info, connector_type) = {
        let mut st = connector.lock();
        if st.core.handle_connected(pipe, now).is_none() {
            return;
        }
        let info = peer_info(&st);
        (info, st.core.socket_type())
    };
    let (binder_pipe, binder_info, binder_type) = {
        let mut st = binder.lock();
        let (p, _) = st.core.handle_accepted(&endpoint, now);
        let info = peer_info(&st);
        (p, info, st.core.socket_type())
    };
    if !connector_type.is_compatible(binder_type) {
        let err = SessionError::Incompatible {
            local: connector_type,
            peer: binder_type,
        };
        connector.with(|st| {
            st.core
                .handle_closed(pipe, &CloseReason::Session(err.clone()), now)
        });
        binder.with(|st| {
            st.core
                .handle_closed(binder_pipe, &CloseReason::Session(err), now)
        });
        return;
    }
    let link = Arc::new(Link {
        ends: [
            End {
                shared: Arc::downgrade(connector),
                pipe,
            },
            End {
                shared: Arc::downgrade(binder),
                pipe: binder_pipe,
            },
        ],
        lanes: Default::default(),
    });
    connector.with(|st| {
        st.inproc.insert(pipe, link.clone());
        st.core.handle_ready(pipe, binder_info, now);
    });
    binder.with(|st| {
        st.inproc.insert(binder_pipe, link.clone());
        st.core.handle_ready(binder_pipe, connector_info, now);
    });
    link.transfer();
}

impl Link {
    /// The index of `shared`'s end of the link.
    pub(crate) fn end_of(&self, shared: &Shared) -> usize {
        usize::from(!std::ptr::eq(self.ends[0].shared.as_ptr(), shared))
    }

    /// Takes what the sending pipe of end `from` has into its lane, as far as the receiver has
    /// room, under the sender's lock (the dispatch of the pipe's `Flush`). A busy receiver
    /// (not `idle`) gets one message and the lane is `parked`: the rest stays in the pipe.
    pub(crate) fn take(&self, from: usize, core: &mut Core, eager: bool) -> Took {
        let pipe = self.ends[from].pipe;
        let mut guard = lock(&self.lanes[from]);
        let lane = &mut *guard;
        let defer = !lane.idle && !eager;
        let (cmds, msgs) = (lane.cmds.len(), lane.q.len());
        // A busy receiver: no message moves now (the pipe keeps its pending `Flush`, so the
        // sender's next messages emit none); the receiver moves them all when it needs them.
        let max = if defer { 0 } else { lane.room };
        // O(1) when the lane is empty and everything fits: the queues trade places.
        let drained = core.transmit_into(pipe, &mut lane.cmds, &mut lane.q, max);
        let command = lane.cmds.len() > cmds;
        lane.room -= lane.q.len() - msgs;
        if drained {
            lane.parked = false;
            let any = !lane.q.is_empty() || !lane.cmds.is_empty();
            return Took::Drained {
                deliver: any && (lane.idle || command || eager),
            };
        }
        if defer && !command {
            lane.parked = true;
            return Took::Parked;
        }
        // The room ran out (the receiver asks for more with `ResumeRead` once it has read
        // some), or commands came with messages held back: a mover takes the rest.
        lane.parked = false;
        Took::Full
    }

    /// Delivers lane `from` into the receiving socket's pipe, under the receiver's lock, and
    /// learns how much room is left. `idle`: the receiver found its queue empty and may wait,
    /// so if the lane is empty too the next taker delivers at once. Returns how many items
    /// were delivered, and whether the lane was empty and parked (the caller must move the
    /// sender's pipe over, outside its own lock).
    fn deliver(&self, from: usize, core: &mut Core, idle: bool) -> (usize, bool) {
        let pipe = self.ends[1 - from].pipe;
        let (mut cmds, mut batch) = {
            let mut guard = lock(&self.lanes[from]);
            let lane = &mut *guard;
            if lane.q.is_empty() && lane.cmds.is_empty() {
                // A parked lane is not idle: the receiver is about to move it itself.
                lane.idle |= idle && !lane.parked;
                lane.room = core.inbound_room(pipe);
                return (0, lane.parked);
            }
            lane.idle = false;
            let spare = std::mem::take(&mut lane.spare);
            let spare_cmds = std::mem::take(&mut lane.spare_cmds);
            (
                std::mem::replace(&mut lane.cmds, spare_cmds),
                std::mem::replace(&mut lane.q, spare),
            )
        };
        let n = cmds.len() + batch.len();
        for c in cmds.drain(..) {
            match c {
                Command::Subscribe(t) => core.handle_subscribe(pipe, t),
                Command::Cancel(t) => core.handle_cancel(pipe, t),
                Command::Join(g) => core.handle_join(pipe, g),
                Command::Leave(g) => core.handle_leave(pipe, g),
                // Command is non-exhaustive: a later kind has no meaning between two
                // in-process sockets of this version.
                _ => {}
            }
        }
        for m in batch.drain(..) {
            // Room was counted (the lane never holds more than the pipe's room) and only
            // this lane fills this pipe.
            let _ = core.handle_message(pipe, m);
        }
        let room = core.inbound_room(pipe);
        {
            let mut lane = lock(&self.lanes[from]);
            lane.room = room.saturating_sub(lane.q.len());
            lane.spare = batch;
            lane.spare_cmds = cmds;
        }
        // A closing sender may be waiting for exactly these.
        if let Some(src) = self.ends[from].shared.upgrade() {
            if src.closing.load(Ordering::Acquire) {
                src.flushed.notify(usize::MAX);
            }
        }
        (n, false)
    }

    /// Moves what can move, both ways.
    pub(crate) fn transfer(&self) {
        self.transfer_lane(0);
        self.transfer_lane(1);
    }

    /// Moves what can move from end `from` to the other: delivers the lane, takes what the
    /// sending pipe has as far as there is room, and delivers that. It goes round again only
    /// while the room ran out (the receiver then has as much as it can hold and asks for more
    /// with `ResumeRead` once it has read some); a sending pipe found empty emits a `Flush`
    /// with its next message, so a sender that keeps sending does not keep its mover (often
    /// the receiver's task) moving message by message. Any task may call it at any time: the
    /// lane keeps the order, whoever takes or delivers.
    pub(crate) fn transfer_lane(&self, from: usize) {
        let (Some(src), Some(dst)) = (
            self.ends[from].shared.upgrade(),
            self.ends[1 - from].shared.upgrade(),
        ) else {
            // Nobody is left to move it: parked would send every receive here again.
            lock(&self.lanes[from]).parked = false;
            return;
        };
        loop {
            dst.with(|st| self.deliver(from, &mut st.core, false));
            let took = src.with(|st| {
                {
                    let mut lane = lock(&self.lanes[from]);
                    if lane.room == 0 {
                        if !lane.q.is_empty() || !lane.cmds.is_empty() {
                            // A parked message took the last room: deliver it, look again.
                            return Took::Full;
                        }
                        // The receiver is full; its `ResumeRead` brings a mover back.
                        lane.parked = false;
                        return Took::Drained { deliver: false };
                    }
                }
                self.take(from, &mut st.core, true)
            });
            match took {
                Took::Full => {}
                Took::Drained { deliver: true } | Took::Parked => {
                    dst.with(|st| self.deliver(from, &mut st.core, false));
                    return;
                }
                _ => return,
            }
        }
    }

    /// Under the receiving socket's lock, when it found nothing to receive: delivers every
    /// lane into it. Returns how many items were delivered; 0 marks the lanes idle, so the
    /// next message is delivered at once (with a wake-up).
    /// A lane found empty and parked is listed in `st.parked` for [`Shared::lock_recv`].
    pub(crate) fn pull(shared: &Shared, st: &mut State) -> usize {
        let State {
            core,
            inproc,
            parked,
            ..
        } = st;
        let mut n = 0;
        for link in inproc.values() {
            let from = 1 - link.end_of(shared);
            let (k, p) = link.deliver(from, core, true);
            n += k;
            if p && !parked
                .iter()
                .any(|(l, f)| Arc::ptr_eq(l, link) && *f == from)
            {
                parked.push((link.clone(), from));
            }
        }
        n
    }

    /// Whether the sender at end `from` left messages parked in its pipe.
    pub(crate) fn parked(&self, from: usize) -> bool {
        lock(&self.lanes[from]).parked
    }

    /// True while messages are between the two pipes (taken from one, not yet in the other).
    pub(crate) fn in_flight(&self) -> bool {
        self.lanes.iter().any(|l| {
            let lane = lock(l);
            !lane.q.is_empty() || !lane.cmds.is_empty()
        })
    }

    /// The side of `shared` let go of the link: the other side receives what is on its way
    /// to it, then sees the connection end.
    pub(crate) fn unlink(&self, shared: &Arc<Shared>) {
        let now = Instant::now();
        for (i, end) in self.ends.iter().enumerate() {
            let Some(s) = end.shared.upgrade() else {
                continue;
            };
            if Arc::ptr_eq(&s, shared) {
                continue;
            }
            s.with(|st| {
                if st.inproc.remove(&end.pipe).is_some() {
                    self.deliver(1 - i, &mut st.core, false);
                    st.core.handle_closed(end.pipe, &CloseReason::Eof, now);
                }
            });
        }
    }
}

/// Delivers everything a closing socket has on its way to its in-process peers.
pub(crate) fn flush_all(shared: &Arc<Shared>) {
    let links: Vec<Arc<Link>> = shared.with(|st| st.inproc.values().cloned().collect());
    for link in links {
        link.transfer_lane(link.end_of(shared));
    }
}

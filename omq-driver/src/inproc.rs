//! `inproc://`: sockets of one process joined without sessions, framing or copies.
//!
//! A link joins one pipe of each socket. Messages move by value from one socket's outgoing
//! queue straight into the other's incoming queue, only as many as the receiving queue has room
//! for, so the link holds exactly SNDHWM + RCVHWM messages, as libzmq's inproc does. The move
//! happens inline, in whichever task's dispatch found messages or room (the sender's `send`, the
//! receiver's `recv`), never in a task of its own: no wake-up, no thread hop. The two sockets'
//! locks are never held together, and one link moves messages in one task at a time.
//!
//! Names are per process and shared by every backend. Connecting to a name before it is bound
//! works: the connecting pipe queues, and the link forms when the name is bound.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Instant;

use bytes::Bytes;
use omq_core::pipe::{Command, Outbound, PipeId};
use omq_core::wire::metadata::{Metadata, IDENTITY, SOCKET_TYPE};
use omq_core::{CloseReason, PeerInfo, SessionError};

use crate::shared::Shared;

/// Most messages moved per lock of the sending socket.
const BATCH: usize = 256;

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
pub struct Link {
    ends: [End; 2],
    /// Held while messages move, so one link moves in one task at a time; holds the batch
    /// buffer, reused so moving allocates nothing.
    moving: Mutex<Vec<Outbound>>,
    /// Set by a task that found the link busy: the mover goes round again.
    again: AtomicBool,
    /// Messages taken off a sending pipe and not yet in the receiving one. Set under the
    /// sender's lock as they leave its pipe, so a closing sender that finds its pipe empty also
    /// finds them here and waits for them instead of unlinking them away.
    in_flight: AtomicUsize,
}

/// Binds an inproc name for a socket and joins every connection waiting for it.
pub fn bind(shared: &Arc<Shared>, name: &str) -> std::io::Result<String> {
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
pub fn unbind(shared: &Arc<Shared>, name: &str) {
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
pub fn release_all(shared: &Arc<Shared>) {
    lock_registry()
        .bound
        .retain(|_, w| w.as_ptr() != Arc::as_ptr(shared));
    let links: Vec<Arc<Link>> = shared.with(|st| st.inproc.drain().map(|(_, l)| l).collect());
    for link in links {
        link.unlink(shared);
    }
}

/// The connecting side's dial: join now if the name is bound, or wait for the bind.
pub fn connect(shared: &Arc<Shared>, pipe: PipeId, name: &str) {
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
        moving: Mutex::new(Vec::new()),
        again: AtomicBool::new(false),
        in_flight: AtomicUsize::new(0),
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
    /// Moves what can move, both ways. Any task may call it at any time; if another task is
    /// already moving this link, that task goes round again on this one's behalf.
    pub fn transfer(&self) {
        // Announce the request before trying the lock: whoever holds it either sees the flag
        // in its loop, or sees it after unlocking and comes back.
        self.again.store(true, Ordering::Release);
        loop {
            let Ok(mut batch) = self.moving.try_lock() else {
                return;
            };
            while self.again.swap(false, Ordering::AcqRel) {
                self.move_one_way(0, 1, &mut batch);
                self.move_one_way(1, 0, &mut batch);
            }
            drop(batch);
            if !self.again.load(Ordering::Acquire) {
                return;
            }
        }
    }

    fn move_one_way(&self, from: usize, to: usize, batch: &mut Vec<Outbound>) {
        let (Some(src), Some(dst)) = (
            self.ends[from].shared.upgrade(),
            self.ends[to].shared.upgrade(),
        ) else {
            return;
        };
        let (src_pipe, dst_pipe) = (self.ends[from].pipe, self.ends[to].pipe);
        let mut room = dst.lock().core.inbound_room(dst_pipe);
        loop {
            if room == 0 {
                return;
            }
            src.with(|st| {
                while batch.len() < room.min(BATCH) {
                    match st.core.poll_transmit(src_pipe) {
                        Some(o) => batch.push(o),
                        None => break,
                    }
                }
                self.in_flight.store(batch.len(), Ordering::Release);
            });
            if batch.is_empty() {
                return;
            }
            // Deliver, and learn the room left in the same critical section.
            room = dst.with(|st| {
                for o in batch.drain(..) {
                    match o {
                        Outbound::Message(m) => {
                            // Room was counted and only this link fills this pipe.
                            let _ = st.core.handle_message(dst_pipe, m);
                        }
                        Outbound::Command(Command::Subscribe(t)) => {
                            st.core.handle_subscribe(dst_pipe, t)
                        }
                        Outbound::Command(Command::Cancel(t)) => st.core.handle_cancel(dst_pipe, t),
                        Outbound::Command(Command::Join(g)) => st.core.handle_join(dst_pipe, g),
                        Outbound::Command(Command::Leave(g)) => st.core.handle_leave(dst_pipe, g),
                        // Outbound and Command are non-exhaustive: a later kind has no
                        // meaning between two in-process sockets of this version.
                        _ => {}
                    }
                }
                st.core.inbound_room(dst_pipe)
            });
            self.in_flight.store(0, Ordering::Release);
            // A closing sender may be waiting for exactly these.
            src.flushed.notify(usize::MAX);
        }
    }

    /// True while messages are between the two pipes (see `in_flight`).
    pub fn in_flight(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) > 0
    }

    /// The side of `shared` let go of the link: the other side sees the connection end.
    pub fn unlink(&self, shared: &Arc<Shared>) {
        let now = Instant::now();
        for end in &self.ends {
            let Some(s) = end.shared.upgrade() else {
                continue;
            };
            if Arc::ptr_eq(&s, shared) {
                continue;
            }
            s.with(|st| {
                if st.inproc.remove(&end.pipe).is_some() {
                    st.core.handle_closed(end.pipe, &CloseReason::Eof, now);
                }
            });
        }
    }
}

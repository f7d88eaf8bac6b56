//! `udp://` for RADIO and DISH (spec 48): one task per udp socket. A RADIO's connect gets a
//! socket connected to the DISH's address (or multicast group) and a task that sends every
//! message its pipe holds as one datagram; a DISH's bind gets a bound socket and a task that
//! hands every datagram to its pipe. No handshake, no commands, no reconnection (there is no
//! connection to lose): the core treats the pipe as ready at once (`handle_datagram_*`).
//!
//! UDP loses what it cannot carry, and so does this: a datagram that arrives while the DISH's
//! queue is at RCVHWM, or that is malformed, is dropped (as libzmq's udp engine does), and a
//! message too large for a datagram is not sent (the `tracing` feature reports both). A DISH
//! never stops reading: the kernel's buffer is all the backpressure udp has.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures_util::future::FutureExt;
use futures_util::{pin_mut, select_biased};
use omq_core::endpoint::{Endpoint, Host};
use omq_core::options::TransportOptions;
use omq_core::pipe::{Outbound, PipeId};
use omq_core::wire::datagram::{self, MAX_RECEIVED};

use crate::error::Error;
use crate::runtime::{Datagram, Runtime};
use crate::shared::Shared;
use crate::signal::{Signal, CLOSE};

/// Most datagrams taken from the pipe under one lock.
const BATCH: usize = 64;

/// What a udp task does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// A RADIO's connect: datagrams out.
    Send,
    /// A DISH's bind: datagrams in.
    Receive,
}

/// The task of one udp socket.
#[derive(Debug)]
pub(crate) struct UdpTask<R: Runtime> {
    pub(crate) shared: Arc<Shared>,
    pub(crate) pipe: PipeId,
    socket: R::Datagram,
    signal: Arc<Signal>,
    role: Role,
}

/// DISH: binds `endpoint` and starts receiving on it; returns the endpoint as bound.
pub(crate) async fn bind<R: Runtime>(
    shared: &Arc<Shared>,
    requested: &str,
    host: &Host,
    port: u16,
    transport: &TransportOptions,
) -> Result<Endpoint, Error> {
    let made = {
        let (h, t) = (host.clone(), transport.clone());
        crate::net::off_thread_for_names::<R, _>(host, move || crate::net::udp_bind(&h, port, &t))
            .await
            .and_then(|(socket, resolved)| Ok((R::datagram(socket)?, resolved)))
    };
    let (socket, resolved) = match made {
        Ok(made) => made,
        Err(e) => {
            shared.with(|st| {
                st.core
                    .handle_bind_failed(requested, i64::from(e.raw_os_error().unwrap_or(0)))
            });
            return Err(Error::Io(e));
        }
    };
    let signal = Arc::new(Signal::default());
    let pipe = shared.with(|st| {
        st.core.handle_bound(requested, &resolved);
        let pipe = st.core.handle_datagram_bound(&resolved, R::now());
        st.conns.insert(pipe, signal.clone());
        // The same signal stops it on unbind, and tells unbind when the port is free.
        st.listeners.insert(resolved.clone(), signal.clone());
        pipe
    });
    crate::tasks::spawn::<R>(crate::tasks::Work::Udp(Box::new(UdpTask {
        shared: shared.clone(),
        pipe,
        socket,
        signal,
        role: Role::Receive,
    })));
    Ok(resolved.parse()?)
}

/// RADIO: opens the socket for a connect's pipe and sends from it until the pipe is closed.
/// A failure to open it is a failed connect (retried after RECONNECT_IVL).
pub(crate) async fn dial<R: Runtime>(
    shared: Arc<Shared>,
    pipe: PipeId,
    host: &Host,
    port: u16,
    transport: &TransportOptions,
) {
    let made = {
        let (h, t) = (host.clone(), transport.clone());
        crate::net::off_thread_for_names::<R, _>(host, move || {
            crate::net::udp_connect(&h, port, &t)
        })
        .await
        .and_then(R::datagram)
    };
    let signal = Arc::new(Signal::default());
    let socket = shared.with(|st| match made {
        Ok(_) if st.stopped => None,
        Ok(socket) => {
            if !st.core.handle_datagram_connected(pipe, R::now()) {
                return None;
            }
            st.conns.insert(pipe, signal.clone());
            Some(socket)
        }
        Err(e) => {
            let refused = e.kind() == std::io::ErrorKind::NotFound;
            st.core.handle_connect_failed(pipe, refused, R::now());
            None
        }
    });
    if let Some(socket) = socket {
        UdpTask::<R> {
            shared,
            pipe,
            socket,
            signal,
            role: Role::Send,
        }
        .run()
        .await;
    }
}

impl<R: Runtime> UdpTask<R> {
    pub(crate) async fn run(self) {
        let (shared, signal) = (self.shared.clone(), self.signal.clone());
        match self.role {
            Role::Send => self.send().await,
            Role::Receive => self.receive().await,
        }
        signal.unflushed.store(0, Ordering::Release);
        signal.done.store(true, Ordering::Release);
        shared.released.notify(usize::MAX);
    }

    async fn send(self) {
        let UdpTask {
            shared,
            pipe,
            mut socket,
            signal,
            ..
        } = self;
        loop {
            let batch = take(&shared, pipe, &signal);
            if batch.is_empty() {
                if signal.wait().await & CLOSE != 0 {
                    return;
                }
                continue;
            }
            for d in batch {
                let len = d.len();
                let (s, r) = socket.send(d).await;
                socket = s;
                // A refused datagram (an ICMP error from an earlier one, say) is lost as udp
                // loses things; the socket itself goes on.
                let _ = r;
                signal.unflushed.fetch_sub(len, Ordering::AcqRel);
            }
            if signal.take() & CLOSE != 0 {
                return;
            }
        }
    }

    async fn receive(self) {
        let UdpTask {
            shared,
            pipe,
            socket,
            signal,
            ..
        } = self;
        let recv = socket.recv(BytesMut::with_capacity(MAX_RECEIVED)).fuse();
        pin_mut!(recv);
        loop {
            let stop = signal.wait().fuse();
            pin_mut!(stop);
            select_biased! {
                bits = stop => if bits & CLOSE != 0 { return },
                (socket, mut buf, r) = recv => {
                    match r {
                        // One copy per datagram: the read buffer is reused, and a queued
                        // message holds only its own bytes.
                        Ok(n) => deliver(&shared, pipe, Bytes::copy_from_slice(&buf[..n])),
                        Err(_) => {
                            // Nothing a udp socket reports here is worth more than a pause.
                            R::sleep_until(R::now() + std::time::Duration::from_millis(10)).await;
                        }
                    }
                    buf.clear();
                    recv.set(socket.recv(buf).fuse());
                }
            }
        }
    }
}

/// Takes up to [`BATCH`] messages from the pipe as datagrams, counted as unflushed in the same
/// critical section (so a closing socket waits for them, as LINGER says).
fn take(shared: &Arc<Shared>, pipe: PipeId, signal: &Signal) -> Vec<Bytes> {
    shared.with(|st| {
        let mut out = Vec::new();
        while out.len() < BATCH {
            match st.core.poll_transmit(pipe) {
                Some(Outbound::Message(m)) => match datagram::encode(&m) {
                    Ok(d) => out.push(d),
                    Err(_e) => {
                        #[cfg(feature = "tracing")]
                        tracing::debug!(error = %_e, "udp: message not sent");
                    }
                },
                // A RADIO queues no commands; nothing else goes over udp.
                Some(_) => {}
                None => break,
            }
        }
        let bytes: usize = out.iter().map(Bytes::len).sum();
        signal.unflushed.store(bytes, Ordering::Release);
        out
    })
}

/// Hands one datagram to the DISH's pipe, or drops it (malformed, or the queue is full).
fn deliver(shared: &Arc<Shared>, pipe: PipeId, d: Bytes) {
    let Ok(msg) = datagram::decode(d) else {
        #[cfg(feature = "tracing")]
        tracing::debug!("udp: malformed datagram dropped");
        return;
    };
    shared.with(|st| {
        if st.core.handle_message(pipe, msg).is_err() {
            #[cfg(feature = "tracing")]
            tracing::debug!("udp: datagram dropped at RCVHWM");
        }
    });
}

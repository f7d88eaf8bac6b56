//! Paranoid Pirate (zguide chapter 4, `ppqueue` / `ppworker`): a load-balancing queue and
//! workers that watch each other with heartbeats, so that either side can crash and come
//! back. Clients are Lazy Pirate clients (`zguide_lazy_pirate.rs`), which retry on their own.
//!
//! - The queue is the load-balancing broker (`zguide_lbbroker.rs`) with a memory: a worker is
//!   free from its last sign of life (READY, HEARTBEAT or a reply) until it has been silent for
//!   `liveness` heartbeat intervals; the queue heartbeats every free worker each interval.
//! - A worker is a DEALER (it sends heartbeats whenever it likes, which a REQ could not). When
//!   the queue has been silent for `liveness` intervals it drops its socket, waits, and starts
//!   over with a new one and a new READY, waiting twice as long after each failure (up to a
//!   maximum) so that a queue that is down is not hammered.
//!
//! ZMTP has heartbeats of its own (`Options::heartbeat_ivl`), which find a dead connection;
//! these are application heartbeats: they tell the queue that the worker is still serving, and
//! the worker that the queue still knows it.
//!
//! ```text
//! cargo run -p conformance --example zguide_paranoid_pirate                     # all of it
//! cargo run -p conformance --example zguide_paranoid_pirate -- queue &          # :5555 clients, :5556 workers
//! cargo run -p conformance --example zguide_paranoid_pirate -- worker &         # kill and restart either
//! cargo run -p conformance --example zguide_lazy_pirate -- client 10
//! cargo run -p conformance --example zguide_paranoid_pirate -- --runtime monoio # or compio, glommio
//! ```

#[path = "zguide/runtime.rs"]
mod runtime;

/// The clients (which bring their own copy of `runtime`).
#[allow(dead_code, unreachable_pub, clippy::duplicate_mod)]
#[path = "zguide_lazy_pirate.rs"]
mod lazy_pirate;

use std::cell::Cell;
use std::collections::VecDeque;
use std::pin::pin;
use std::time::{Duration, Instant};

use futures_util::future::{select, Either};
use omq_driver::{Error, Message, Options, Part, Runtime, Socket, SocketType};

const FRONTEND: &str = "tcp://127.0.0.1:5555";
const BACKEND: &str = "tcp://127.0.0.1:5556";

const READY: &[u8] = b"READY";
const HEARTBEAT: &[u8] = b"HEARTBEAT";

/// The heartbeat settings both sides agree on.
#[derive(Debug, Clone, Copy)]
pub struct Heartbeat {
    /// How often each side sends a heartbeat.
    pub interval: Duration,
    /// How many intervals of silence mean the other side is gone.
    pub liveness: u32,
    /// The longest a worker waits before trying again.
    pub reconnect_max: Duration,
}

impl Default for Heartbeat {
    /// The zguide's: a heartbeat a second, three missed ones are a failure, back off up to 32 s.
    fn default() -> Self {
        Heartbeat {
            interval: Duration::from_secs(1),
            liveness: 3,
            reconnect_max: Duration::from_secs(32),
        }
    }
}

impl Heartbeat {
    fn expiry(&self) -> Duration {
        self.interval * self.liveness
    }
}

/// A free worker: its routing id and when the queue stops believing in it.
#[derive(Debug)]
struct Free {
    id: Part,
    expires: Instant,
}

/// Binds a ROUTER for clients on `frontend` and one for workers on `backend`, and hands each
/// request to the free worker that has waited longest, until its future is dropped.
pub async fn queue<R: Runtime>(frontend: &str, backend: &str, hb: Heartbeat) -> Result<(), Error> {
    // LINGER 0: a queue that stops does not wait to deliver to workers that may be gone.
    let options = Options::default().linger(Some(Duration::ZERO));
    let clients = Socket::<R>::new(SocketType::Router, options.clone())?;
    clients.bind(frontend).await?;
    // ROUTER_HANDOVER: a worker that comes back under its name takes the name over, even
    // before the queue has seen its old connection close.
    let workers = Socket::<R>::new(SocketType::Router, options.router_handover(true))?;
    workers.bind(backend).await?;

    let mut free: VecDeque<Free> = VecDeque::new();
    let mut heartbeat_at = R::now() + hb.interval;
    loop {
        // Workers are always heard, clients only while a worker is free, and the heartbeat
        // timer always runs. A `recv` that loses the race has taken nothing.
        let woken = {
            let tick = pin!(R::sleep_until(heartbeat_at));
            let from_worker = pin!(workers.recv());
            if free.is_empty() {
                match select(from_worker, tick).await {
                    Either::Left((m, _)) => Some(Either::Left(m?)),
                    Either::Right(_) => None,
                }
            } else {
                let from_client = pin!(clients.recv());
                match select(select(from_worker, from_client), tick).await {
                    Either::Left((Either::Left((m, _)), _)) => Some(Either::Left(m?)),
                    Either::Left((Either::Right((m, _)), _)) => Some(Either::Right(m?)),
                    Either::Right(_) => None,
                }
            }
        };
        match woken {
            // From a worker: any message is a sign of life, and makes it free (again).
            Some(Either::Left(mut msg)) => {
                let Some(id) = msg.pop_front() else { continue };
                free.retain(|w| w.id != id);
                free.push_back(Free {
                    id,
                    expires: R::now() + hb.expiry(),
                });
                match msg.parts() {
                    [control] if control[..] == *READY || control[..] == *HEARTBEAT => {}
                    [other] => println!("queue: invalid message from worker: {other:?}"),
                    _ => clients.send(msg).await?, // a reply, with its client's envelope
                }
            }
            // From a client: [client, request id, "", request], to the longest-free worker.
            Some(Either::Right(mut msg)) => {
                let worker = free
                    .pop_front()
                    .expect("clients are read only while a worker is free");
                msg.push_front(worker.id);
                workers.send(msg).await?;
            }
            None => {}
        }
        let now = R::now();
        if now >= heartbeat_at {
            for w in &free {
                workers
                    .send(Message::multipart([w.id.clone(), Part::from(HEARTBEAT)]))
                    .await?;
            }
            heartbeat_at = now + hb.interval;
        }
        free.retain(|w| w.expires > now);
    }
}

/// What a worker has been through, for whoever runs it (the test looks at it).
#[derive(Debug, Default)]
pub struct WorkerStats {
    /// Requests answered.
    pub served: Cell<usize>,
    /// Times the worker gave up on the queue and started over.
    pub reconnects: Cell<usize>,
}

/// A worker named `name`: connects a DEALER to the queue's `backend`, says READY and echoes
/// requests, heartbeating both ways; starts over with backoff whenever the queue goes silent.
/// Runs until its future is dropped.
pub async fn worker<R: Runtime>(
    backend: &str,
    name: &str,
    hb: Heartbeat,
    stats: &WorkerStats,
) -> Result<(), Error> {
    let mut backoff = hb.interval;
    loop {
        // RCVTIMEO is the heartbeat interval: a `recv` that times out is a missed heartbeat.
        // LINGER 0: heartbeats queued for a dead queue are dropped with the socket.
        let options = Options::default()
            .routing_id(name.to_string().into())
            .recv_timeout(Some(hb.interval))
            .linger(Some(Duration::ZERO));
        let dealer = Socket::<R>::new(SocketType::Dealer, options)?;
        dealer.connect(backend).await?;
        dealer.send(READY).await?;
        let mut liveness = hb.liveness;
        let mut heartbeat_at = R::now() + hb.interval;
        while liveness > 0 {
            match dealer.recv().await {
                // [client, request id, "", request]: the echo is the same message.
                Ok(request) if request.len() > 1 => {
                    dealer.send(request).await?;
                    stats.served.set(stats.served.get() + 1);
                    liveness = hb.liveness;
                    backoff = hb.interval;
                }
                Ok(msg) if msg.parts()[0][..] == *HEARTBEAT => liveness = hb.liveness,
                Ok(msg) => println!("{name}: invalid message: {msg:?}"),
                Err(Error::WouldBlock) => liveness -= 1,
                Err(e) => return Err(e),
            }
            if R::now() >= heartbeat_at {
                heartbeat_at = R::now() + hb.interval;
                dealer.send(HEARTBEAT).await?;
            }
        }
        println!("{name}: heartbeat failure, can't reach queue; reconnecting in {backoff:?}");
        // A dropped socket starts nothing more (not even a pending redial), so the next
        // worker socket can take the same routing id at the queue.
        drop(dealer);
        R::sleep_until(R::now() + backoff).await;
        backoff = (backoff * 2).min(hb.reconnect_max);
        stats.reconnects.set(stats.reconnects.get() + 1);
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (rt, args) = runtime::args();
    let role = args.first().map_or("all", String::as_str);
    let hb = Heartbeat::default();
    runtime::on_runtime!(rt.as_str(), |R| async move {
        match role {
            "queue" => queue::<R>(FRONTEND, BACKEND, hb).await?,
            "worker" => {
                let name = format!("worker-{}", std::process::id());
                worker::<R>(BACKEND, &name, hb, &WorkerStats::default()).await?
            }
            _ => {
                let stats = [WorkerStats::default(), WorkerStats::default()];
                let services = pin!(async {
                    let (q, a, b) = futures_util::join!(
                        queue::<R>(FRONTEND, BACKEND, hb),
                        worker::<R>(BACKEND, "worker-1", hb, &stats[0]),
                        worker::<R>(BACKEND, "worker-2", hb, &stats[1]),
                    );
                    q.and(a).and(b)
                });
                let patience = lazy_pirate::Patience::default();
                let client = pin!(lazy_pirate::client::<R>(FRONTEND, 10, patience));
                match select(services, client).await {
                    Either::Left((ended, _)) => ended?,
                    Either::Right((replies, _)) => drop(replies?),
                };
            }
        }
        Ok(())
    })
}

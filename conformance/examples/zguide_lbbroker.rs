//! Load-balancing broker (zguide chapter 3, `lbbroker`): a ROUTER for clients, a ROUTER for
//! workers, and a queue of the workers that are free.
//!
//! The DEALER of `zguide_broker` hands requests out round-robin, whether a worker is busy or
//! not. Here each worker (a REQ) says "READY" when it starts, and its every reply also means
//! "ready again", so the broker knows who is free and gives each request to the worker that
//! has waited longest (least recently used). While no worker is free the broker stops reading
//! clients: their requests wait in the sockets' queues, not in the broker.
//!
//! Envelopes: a client's request reaches the broker as `[client, "", request]`; the broker
//! sends `[worker, "", client, "", request]`, which the worker's REQ receives as
//! `[client, "", request]`; the worker replies `[client, "", reply]`, and the broker strips the
//! worker's id and sends the rest to the client.
//!
//! ```text
//! cargo run -p conformance --example zguide_lbbroker                      # all of it in one process
//! cargo run -p conformance --example zguide_lbbroker -- --runtime compio  # or monoio, glommio
//! ```

#[path = "zguide/runtime.rs"]
mod runtime;

use std::collections::{BTreeMap, VecDeque};
use std::pin::pin;
use std::time::Duration;

use futures_util::future::{join_all, select, try_join_all, Either};
use omq_driver::{Error, Message, Options, Part, Runtime, Socket, SocketType};

const FRONTEND: &str = "ipc:///tmp/omq-zguide-lbbroker-frontend.sock";
const BACKEND: &str = "ipc:///tmp/omq-zguide-lbbroker-backend.sock";

/// Runs the broker until it has passed `replies` replies back to clients; returns how many
/// each worker gave.
pub async fn broker<R: Runtime>(
    frontend: &str,
    backend: &str,
    replies: usize,
) -> Result<BTreeMap<String, usize>, Error> {
    let clients = Socket::<R>::new(SocketType::Router, Options::default())?;
    clients.bind(frontend).await?;
    let workers = Socket::<R>::new(SocketType::Router, Options::default())?;
    workers.bind(backend).await?;

    let mut free: VecDeque<Part> = VecDeque::new();
    let mut served = BTreeMap::new();
    let mut passed = 0;
    while passed < replies {
        // Workers are always heard; clients only while a worker is free. (Both `recv`s are
        // cancel-safe: the one that loses the race has taken nothing.)
        let next = if free.is_empty() {
            Either::Left(workers.recv().await?)
        } else {
            match select(pin!(workers.recv()), pin!(clients.recv())).await {
                Either::Left((from_worker, _)) => Either::Left(from_worker?),
                Either::Right((from_client, _)) => Either::Right(from_client?),
            }
        };
        match next {
            // [worker, "", "READY"] or [worker, "", client, "", reply]
            Either::Left(mut msg) => {
                let Some(worker) = msg.pop_front() else {
                    continue;
                };
                msg.pop_front(); // the empty delimiter
                free.push_back(worker.clone());
                if msg.len() > 1 {
                    *served
                        .entry(String::from_utf8_lossy(&worker).into_owned())
                        .or_default() += 1;
                    clients.send(msg).await?;
                    passed += 1;
                }
            }
            // [client, "", request]
            Either::Right(mut msg) => {
                let worker = free
                    .pop_front()
                    .expect("read clients only while a worker is free");
                msg.push_front(Part::default());
                msg.push_front(worker);
                workers.send(msg).await?;
            }
        }
    }
    clients.close().await?; // flushes the last replies
    Ok(served)
}

/// A worker: a REQ named `name` that says READY, then answers each request with
/// "OK from NAME"; for ever.
pub async fn worker<R: Runtime>(backend: &str, name: &str) -> Result<(), Error> {
    let req = Socket::<R>::new(
        SocketType::Req,
        Options::default().routing_id(name.to_string().into()),
    )?;
    req.connect(backend).await?;
    req.send("READY").await?;
    loop {
        // [client, "", request]: answer with the same envelope.
        let mut msg = req.recv().await?;
        if let Some(body) = msg.parts_mut().last_mut() {
            *body = Part::from(format!("OK from {name}"));
        }
        req.send(msg).await?;
    }
}

/// A client: a REQ that sends `requests` "HELLO"s through the broker and returns the replies.
pub async fn client<R: Runtime>(frontend: &str, requests: usize) -> Result<Vec<String>, Error> {
    let req = Socket::<R>::new(SocketType::Req, Options::default())?;
    req.connect(frontend).await?;
    let mut replies = Vec::with_capacity(requests);
    for _ in 0..requests {
        req.send("HELLO").await?;
        let reply: Message = req.recv().await?;
        replies.push(String::from_utf8_lossy(&reply.parts()[0]).into_owned());
    }
    Ok(replies)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (rt, _) = runtime::args();
    runtime::on_runtime!(rt.as_str(), |R| async move {
        let (clients, requests) = (4, 5);
        let workers = pin!(join_all(
            ["worker-1", "worker-2", "worker-3"].map(|w| worker::<R>(BACKEND, w))
        ));
        let broker = broker::<R>(FRONTEND, BACKEND, clients * requests);
        let clients = async {
            // A moment for the workers to connect and say READY, so that the load spreads from
            // the first request (the broker would only know the first worker otherwise).
            R::sleep_until(R::now() + Duration::from_millis(300)).await;
            try_join_all((0..clients).map(|_| client::<R>(FRONTEND, requests))).await
        };
        let rest = pin!(futures_util::future::try_join(broker, clients));
        match select(workers, rest).await {
            Either::Left((ended, _)) => ended.into_iter().collect::<Result<(), _>>()?,
            Either::Right((done, _)) => {
                let (served, replies) = done?;
                println!("replies: {replies:?}");
                println!("served per worker: {served:?}");
            }
        };
        Ok(())
    })
}

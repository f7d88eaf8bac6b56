//! Request-reply broker (zguide chapter 2, `rrclient` / `rrbroker` / `rrworker`, and
//! `msgqueue`): clients (REQ) -> ROUTER | proxy | DEALER -> workers (REP).
//!
//! Clients and workers only know the broker's two endpoints, never each other, so either side
//! can grow or shrink. The broker is the built-in `proxy`: the ROUTER prefixes each request
//! with the client's routing id, the DEALER spreads requests over the workers, and the reply
//! finds its way back by that envelope. REQ and REP do not notice the broker at all.
//!
//! ```text
//! cargo run -p conformance --example zguide_broker                     # all of it in one process
//! cargo run -p conformance --example zguide_broker -- broker &         # tcp://127.0.0.1:5559 and :5560
//! cargo run -p conformance --example zguide_broker -- worker &         # as many as you like
//! cargo run -p conformance --example zguide_broker -- client 10
//! cargo run -p conformance --example zguide_broker -- --runtime monoio # or compio, glommio
//! ```
//! Clients and workers can be libzmq's `rrclient` and `rrworker`; the tests send a libzmq REQ
//! through this broker.

#[path = "zguide/runtime.rs"]
mod runtime;

use futures_util::future::{join_all, select, try_join_all, Either};
use omq_driver::{proxy, Error, Options, Runtime, Socket, SocketType};

const FRONTEND: &str = "tcp://127.0.0.1:5559";
const BACKEND: &str = "tcp://127.0.0.1:5560";

/// Binds a ROUTER for clients on `frontend` and a DEALER for workers on `backend`, and
/// forwards between them until its future is dropped.
pub async fn broker<R: Runtime>(frontend: &str, backend: &str) -> Result<(), Error> {
    let clients = Socket::<R>::new(SocketType::Router, Options::default())?;
    clients.bind(frontend).await?;
    let workers = Socket::<R>::new(SocketType::Dealer, Options::default())?;
    workers.bind(backend).await?;
    proxy(&clients, &workers, None).await
}

/// Connects a REP to the broker's `backend` and answers every request with "World from NAME".
pub async fn worker<R: Runtime>(backend: &str, name: &str) -> Result<(), Error> {
    let rep = Socket::<R>::new(SocketType::Rep, Options::default())?;
    rep.connect(backend).await?;
    loop {
        let request = rep.recv().await?;
        println!("{name}: {}", String::from_utf8_lossy(&request.parts()[0]));
        rep.send(format!("World from {name}")).await?;
    }
}

/// Connects a REQ to the broker's `frontend`, sends `requests` "Hello"s and returns the
/// replies.
pub async fn client<R: Runtime>(frontend: &str, requests: usize) -> Result<Vec<String>, Error> {
    let req = Socket::<R>::new(SocketType::Req, Options::default())?;
    req.connect(frontend).await?;
    let mut replies = Vec::with_capacity(requests);
    for _ in 0..requests {
        req.send("Hello").await?;
        let reply = req.recv().await?;
        replies.push(String::from_utf8_lossy(&reply.parts()[0]).into_owned());
    }
    Ok(replies)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (rt, args) = runtime::args();
    let role = args.first().map_or("all", String::as_str);
    let n = args.get(1).map_or(Ok(10), |n| n.parse())?;
    runtime::on_runtime!(rt.as_str(), |R| async move {
        match role {
            "broker" => broker::<R>(FRONTEND, BACKEND).await?,
            "worker" => worker::<R>(BACKEND, &format!("worker-{}", std::process::id())).await?,
            "client" => {
                for reply in client::<R>(FRONTEND, n).await? {
                    println!("client: {reply}");
                }
            }
            // Two workers, three clients; the broker and workers run for ever.
            _ => {
                let services = std::pin::pin!(async {
                    let workers =
                        join_all(["worker-1", "worker-2"].map(|w| worker::<R>(BACKEND, w)));
                    let (b, w) = futures_util::join!(broker::<R>(FRONTEND, BACKEND), workers);
                    b.and(w.into_iter().collect())
                });
                let clients =
                    std::pin::pin!(try_join_all((0..3).map(|_| client::<R>(FRONTEND, n))));
                match select(services, clients).await {
                    Either::Left((ended, _)) => ended?,
                    Either::Right((replies, _)) => println!("clients: {:?}", replies?),
                };
            }
        }
        Ok(())
    })
}

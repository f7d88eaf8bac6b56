//! Hello World (zguide chapter 1, `hwserver` / `hwclient`): request-reply at its simplest. A REP
//! server answers each "Hello" with "World"; a REQ client sends one request at a time and waits
//! for its reply. The sockets keep the lockstep: a REQ cannot send twice without a reply in
//! between, and a REP cannot reply before it has a request.
//!
//! ```text
//! cargo run -p conformance --example zguide_hello                     # server and client together
//! cargo run -p conformance --example zguide_hello -- server &         # on tcp://127.0.0.1:5555
//! cargo run -p conformance --example zguide_hello -- client 10
//! cargo run -p conformance --example zguide_hello -- --runtime monoio # or compio, glommio
//! ```
//! Either side can be libzmq's `hwserver` or `hwclient`; the tests run this client against a
//! libzmq REP.

#[path = "zguide/runtime.rs"]
mod runtime;

use futures_util::future::try_join;
use omq_driver::{Error, Options, Runtime, Socket, SocketType};

const ENDPOINT: &str = "tcp://127.0.0.1:5555";

/// Binds a REP to `endpoint` and answers `requests` requests with "World".
pub async fn server<R: Runtime>(endpoint: &str, requests: usize) -> Result<(), Error> {
    let rep = Socket::<R>::new(SocketType::Rep, Options::default())?;
    rep.bind(endpoint).await?;
    for _ in 0..requests {
        let request = rep.recv().await?;
        println!("server: {}", String::from_utf8_lossy(&request.parts()[0]));
        rep.send("World").await?;
    }
    // `send` only queues; closing waits until the last reply is written.
    rep.close().await
}

/// Connects a REQ to `endpoint`, sends "Hello" `requests` times and returns the replies.
/// Connecting before the server has bound is fine: the request waits for it.
pub async fn client<R: Runtime>(endpoint: &str, requests: usize) -> Result<Vec<String>, Error> {
    let req = Socket::<R>::new(SocketType::Req, Options::default())?;
    req.connect(endpoint).await?;
    let mut replies = Vec::with_capacity(requests);
    for n in 0..requests {
        req.send("Hello").await?;
        let reply = req.recv().await?;
        let reply = String::from_utf8_lossy(&reply.parts()[0]).into_owned();
        println!("client: reply {n}: {reply}");
        replies.push(reply);
    }
    Ok(replies)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (rt, args) = runtime::args();
    let role = args.first().map_or("both", String::as_str);
    let n = args.get(1).map_or(Ok(10), |n| n.parse())?;
    runtime::on_runtime!(rt.as_str(), |R| async move {
        match role {
            "server" => server::<R>(ENDPOINT, n).await?,
            "client" => drop(client::<R>(ENDPOINT, n).await?),
            _ => drop(try_join(server::<R>(ENDPOINT, n), client::<R>(ENDPOINT, n)).await?),
        }
        Ok(())
    })
}

//! Lazy Pirate (zguide chapter 4, `lpclient` / `lpserver`): reliable request-reply on the
//! client side alone. The client waits a limited time for each reply, sends the request again
//! when none comes, and gives up after a few tries.
//!
//! In the zguide the client closes and reopens its REQ socket to escape the send/recv
//! lockstep. With two options it keeps its socket: REQ_RELAXED lets it send again before a
//! reply, and REQ_CORRELATE tags each request so that a late reply to an earlier try is
//! dropped instead of being taken for the answer. RCVTIMEO is the timeout, and LINGER 0 lets
//! a client that gave up exit without waiting to deliver to a server that is not there.
//!
//! The server echoes each request, but fails one in three: alternately it drops the request
//! (as a server that crashed would lose it) and answers it late (as an overloaded one would).
//! It is a ROUTER so that it can drop a request; a REP must answer before reading again.
//!
//! ```text
//! cargo run -p conformance --example zguide_lazy_pirate                     # both
//! cargo run -p conformance --example zguide_lazy_pirate -- server &         # tcp://127.0.0.1:5555
//! cargo run -p conformance --example zguide_lazy_pirate -- client 10
//! cargo run -p conformance --example zguide_lazy_pirate -- client 3         # after killing the server: gives up
//! cargo run -p conformance --example zguide_lazy_pirate -- --runtime monoio # or compio, glommio
//! ```

#[path = "zguide/runtime.rs"]
mod runtime;

use std::time::Duration;

use futures_util::future::{select, Either};
use omq_driver::{Error, Options, Runtime, Socket, SocketType};

const ENDPOINT: &str = "tcp://127.0.0.1:5555";

/// How long a client waits for each reply, and how many times it asks again.
#[derive(Debug, Clone, Copy)]
pub struct Patience {
    /// The wait for one reply.
    pub timeout: Duration,
    /// How many times a request is sent again before giving up.
    pub retries: usize,
}

impl Default for Patience {
    /// The zguide's: 2.5 s, 3 retries.
    fn default() -> Self {
        Patience {
            timeout: Duration::from_millis(2500),
            retries: 3,
        }
    }
}

/// Sends the requests "1", "2", ... up to `requests`, each until the server echoes it or
/// `patience` runs out. Returns the replies: all of them, or fewer when the client gave up.
pub async fn client<R: Runtime>(
    endpoint: &str,
    requests: usize,
    patience: Patience,
) -> Result<Vec<String>, Error> {
    let options = Options::default()
        .req_relaxed(true)
        .req_correlate(true)
        .recv_timeout(Some(patience.timeout))
        .linger(Some(Duration::ZERO));
    let req = Socket::<R>::new(SocketType::Req, options)?;
    req.connect(endpoint).await?;
    let mut replies = Vec::with_capacity(requests);
    for seq in 1..=requests {
        let request = seq.to_string();
        let mut retries_left = patience.retries;
        loop {
            req.send(request.as_str()).await?;
            match req.recv().await {
                Ok(reply) if reply.parts()[0] == *request.as_bytes() => {
                    println!("client: server replied OK ({request})");
                    replies.push(request);
                    break;
                }
                // Something else: not our answer, so this try failed too.
                Ok(reply) => println!("client: malformed reply from server: {reply:?}"),
                Err(Error::WouldBlock) => {} // no reply in time
                Err(e) => return Err(e),
            }
            if retries_left == 0 {
                println!("client: server seems to be offline, abandoning");
                return Ok(replies);
            }
            retries_left -= 1;
            println!("client: no response from server, retrying ({request})");
        }
    }
    Ok(replies)
}

/// Binds a ROUTER to `endpoint` and echoes requests until its future is dropped, except that
/// of every three requests it drops one or, alternately, answers it only after `stall`.
pub async fn server<R: Runtime>(endpoint: &str, stall: Duration) -> Result<(), Error> {
    let router = Socket::<R>::new(SocketType::Router, Options::default())?;
    router.bind(endpoint).await?;
    for count in 1usize.. {
        // [client, request id, "", body]: sent back as it is, it is the echo.
        let request = router.recv().await?;
        let body = String::from_utf8_lossy(&request.parts()[request.len() - 1]).into_owned();
        match count % 6 {
            3 => {
                println!("server: dropping request {body}");
                continue;
            }
            0 => {
                println!("server: overloaded, request {body} waits");
                R::sleep_until(R::now() + stall).await;
            }
            _ => println!("server: normal request ({body})"),
        }
        router.send(request).await?;
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (rt, args) = runtime::args();
    let role = args.first().map_or("both", String::as_str);
    let n = args.get(1).map_or(Ok(10), |n| n.parse())?;
    let patience = Patience::default();
    // Late enough that the client has asked again in the meantime.
    let stall = patience.timeout * 3 / 2;
    runtime::on_runtime!(rt.as_str(), |R| async move {
        match role {
            "server" => server::<R>(ENDPOINT, stall).await?,
            "client" => drop(client::<R>(ENDPOINT, n, patience).await?),
            _ => {
                let server = std::pin::pin!(server::<R>(ENDPOINT, stall));
                let client = std::pin::pin!(client::<R>(ENDPOINT, n, patience));
                match select(server, client).await {
                    Either::Left((ended, _)) => ended?,
                    Either::Right((replies, _)) => drop(replies?),
                }
            }
        }
        Ok(())
    })
}

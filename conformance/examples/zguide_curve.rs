//! Ironhouse (the zguide's "Securing ZeroMQ" chapter and CZMQ's `ironhouse`): a CURVE server
//! that only lets in the clients it knows. Everything on the wire is encrypted and
//! authenticated; the server knows its clients by their long-term public keys, and a client
//! knows the server by its public key.
//!
//! In libzmq the allow-list is a ZAP handler on another thread (CZMQ's `zauth`); in omq it is
//! an `Authenticator` in the server's options (`CurveAllowList` here, or any closure), asked
//! during the handshake. A client whose key is not listed gets an ERROR and no connection:
//! its requests wait, never sent, and its monitor reports the failed handshake, which is how
//! this client tells "refused" from "slow".
//!
//! ```text
//! cargo run -p conformance --example zguide_curve                     # a server, a known and an unknown client
//! cargo run -p conformance --example zguide_curve -- --runtime monoio # or compio, glommio
//! ```

#[path = "zguide/runtime.rs"]
mod runtime;

use std::pin::pin;
use std::time::Duration;

use futures_util::future::{select, Either};
use futures_util::StreamExt;
use omq_driver::{
    generate_keypair, CurveAllowList, CurveKeyPair, CurvePublicKey, Error, EventKind,
    MechanismConfig, Options, OsRng, ReconnectStop, Runtime, Socket, SocketType,
};

const ENDPOINT: &str = "tcp://127.0.0.1:5555";

/// Binds a REP with CURVE (`keys`) on `endpoint`, admitting only the clients whose public
/// keys are in `allowed`, and answers every request with "World" until its future is dropped.
pub async fn server<R: Runtime>(
    endpoint: &str,
    keys: CurveKeyPair,
    allowed: &[CurvePublicKey],
) -> Result<(), Error> {
    let options = Options::default()
        .mechanism(MechanismConfig::curve_server(keys))
        .authenticator(CurveAllowList::new(allowed.iter().map(|k| *k.as_bytes())));
    let rep = Socket::<R>::new(SocketType::Rep, options)?;
    // The monitor shows the clients the allow-list turned away.
    let mut events = rep.monitor();
    rep.bind(endpoint).await?;
    loop {
        // Whichever comes first; the other (cancel-safe) is dropped having taken nothing.
        let next = match select(pin!(rep.recv()), events.next()).await {
            Either::Left((request, _)) => Either::Left(request?),
            Either::Right((event, _)) => Either::Right(event),
        };
        match next {
            Either::Left(request) => {
                println!("server: {}", String::from_utf8_lossy(&request.parts()[0]));
                rep.send("World").await?;
            }
            Either::Right(Some(e)) if e.kind == EventKind::HandshakeFailedAuth => {
                println!("server: refused a client ({})", e.endpoint);
            }
            Either::Right(_) => {}
        }
    }
}

/// How a client's request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The server answered.
    Reply(String),
    /// The handshake failed: the server refused us.
    Refused(EventKind),
    /// Nothing within the timeout.
    NoReply,
}

/// Connects a REQ with CURVE (`keys`, trusting `server_key`) to `endpoint`, sends "Hello"
/// and says how it went, waiting at most `timeout`.
pub async fn client<R: Runtime>(
    endpoint: &str,
    server_key: CurvePublicKey,
    keys: CurveKeyPair,
    timeout: Duration,
) -> Result<Outcome, Error> {
    let options = Options::default()
        .mechanism(MechanismConfig::curve_client(server_key, keys))
        .recv_timeout(Some(timeout))
        // A refused key stays refused: do not knock again. And do not wait to deliver.
        .reconnect_stop(ReconnectStop {
            handshake_failed: true,
            ..ReconnectStop::default()
        })
        .linger(Some(Duration::ZERO));
    let req = Socket::<R>::new(SocketType::Req, options)?;
    let mut events = req.monitor();
    req.connect(endpoint).await?;
    req.send("Hello").await?;
    let refused = async {
        while let Some(e) = events.next().await {
            if matches!(
                e.kind,
                EventKind::HandshakeFailedAuth
                    | EventKind::HandshakeFailedNoDetail
                    | EventKind::HandshakeFailedProtocol
            ) {
                return e.kind;
            }
        }
        std::future::pending().await
    };
    let outcome = match select(pin!(req.recv()), pin!(refused)).await {
        Either::Left((Ok(reply), _)) => {
            Outcome::Reply(String::from_utf8_lossy(&reply.parts()[0]).into_owned())
        }
        Either::Left((Err(Error::WouldBlock), _)) => Outcome::NoReply,
        Either::Left((Err(e), _)) => return Err(e),
        Either::Right((kind, _)) => Outcome::Refused(kind),
    };
    Ok(outcome)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (rt, _) = runtime::args();
    runtime::on_runtime!(rt.as_str(), |R| async move {
        let server_keys = generate_keypair(&mut OsRng);
        let server_key = *server_keys.public();
        let known = generate_keypair(&mut OsRng);
        let stranger = generate_keypair(&mut OsRng);
        let allowed = [*known.public()];
        let server = pin!(server::<R>(ENDPOINT, server_keys, &allowed));
        let timeout = Duration::from_secs(5);
        let clients = pin!(async {
            let known = client::<R>(ENDPOINT, server_key, known, timeout).await?;
            println!("known client: {known:?}");
            let stranger = client::<R>(ENDPOINT, server_key, stranger, timeout).await?;
            println!("unknown client: {stranger:?}");
            Ok::<_, Error>(())
        });
        match select(server, clients).await {
            Either::Left((ended, _)) => ended?,
            Either::Right((done, _)) => done?,
        };
        Ok(())
    })
}

//! CURVE and PLAIN against libzmq on every backend: libzmq as server and as client, for
//! PUSH/PULL, REQ/REP and DEALER/ROUTER. The server binds; with PLAIN, libzmq's server runs its
//! ZAP handler (it refuses every client without one).

use std::time::Duration;

use omq_driver::{generate_keypair, Message, Options, OsRng, Runtime, Socket, SocketType};

use crate::async_peer::AsyncPeer;
use crate::backend::Backend;

const T: Duration = Duration::from_secs(10);

/// The security mechanism of a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mech {
    /// CurveZMQ.
    Curve,
    /// PLAIN username and password.
    Plain,
}

/// The socket pattern of a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// The client pushes to the server (omq PUSH as client, omq PULL as server).
    PushPull,
    /// The client requests, the server replies.
    ReqRep,
    /// DEALER client, ROUTER server.
    DealerRouter,
}

/// Runs one case on backend `B`.
pub fn run_secure<B: Backend>(mech: Mech, pattern: Pattern, omq_is_server: bool) {
    B::block_on(async move {
        let peer = AsyncPeer::spawn().unwrap_or_else(|e| panic!("{e}"));
        case::<B::R>(&peer, mech, pattern, omq_is_server).await;
    });
}

fn parts(m: &Message) -> Vec<Vec<u8>> {
    m.parts().iter().map(|p| p.to_vec()).collect()
}

async fn case<R: Runtime>(peer: &AsyncPeer, mech: Mech, pattern: Pattern, omq_server: bool) {
    use SocketType as S;
    let (client_type, server_type, zc, zs) = match pattern {
        Pattern::PushPull => (S::Push, S::Pull, "PUSH", "PULL"),
        Pattern::ReqRep => (S::Req, S::Rep, "REQ", "REP"),
        Pattern::DealerRouter => (S::Dealer, S::Router, "DEALER", "ROUTER"),
    };
    let server_keys = generate_keypair(&mut OsRng);
    let client_keys = generate_keypair(&mut OsRng);
    let server_secret = server_keys.secret().to_z85().to_string();
    let server_public = server_keys.public().to_z85();
    let client_public = client_keys.public().to_z85();
    let client_secret = client_keys.secret().to_z85().to_string();
    let base = Options::default()
        .recv_timeout(Some(T))
        .send_timeout(Some(T))
        .routing_id("omq-peer".into());
    let omq_opts = match (mech, omq_server) {
        (Mech::Curve, true) => base
            .curve_server(true)
            .curve_secretkey(server_secret.as_bytes()),
        (Mech::Curve, false) => base
            .curve_serverkey(server_public.as_bytes())
            .curve_publickey(client_public.as_bytes())
            .curve_secretkey(client_secret.as_bytes()),
        (Mech::Plain, true) => base.plain_server(true),
        (Mech::Plain, false) => base.plain_username("admin").plain_password("secret"),
    };
    let omq_type = if omq_server { server_type } else { client_type };
    let omq = Socket::<R>::new(omq_type, omq_opts).unwrap();
    let zmq_type = if omq_server { zc } else { zs };
    let (ss, sp, cp, cs) = (
        server_secret.clone(),
        server_public.clone(),
        client_public,
        client_secret,
    );
    peer.call(move |p| {
        p.socket(1, zmq_type).unwrap();
        p.setsockopt(1, "LINGER", 0).unwrap();
        p.setsockopt(1, "ROUTING_ID", &b"zmq-peer"[..]).unwrap();
        match (mech, omq_server) {
            (Mech::Curve, true) => {
                p.setsockopt(1, "CURVE_SERVERKEY", sp.as_str()).unwrap();
                p.setsockopt(1, "CURVE_PUBLICKEY", cp.as_str()).unwrap();
                p.setsockopt(1, "CURVE_SECRETKEY", cs.as_str()).unwrap();
            }
            (Mech::Curve, false) => {
                p.setsockopt(1, "CURVE_SERVER", 1).unwrap();
                p.setsockopt(1, "CURVE_SECRETKEY", ss.as_str()).unwrap();
            }
            (Mech::Plain, true) => {
                p.setsockopt(1, "PLAIN_USERNAME", "admin").unwrap();
                p.setsockopt(1, "PLAIN_PASSWORD", "secret").unwrap();
            }
            (Mech::Plain, false) => {
                p.cmd("zap_start plain admin secret").unwrap();
                p.setsockopt(1, "PLAIN_SERVER", 1).unwrap();
            }
        }
    })
    .await;
    if omq_server {
        let ep = omq.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
        peer.call(move |p| p.connect(1, &ep).unwrap()).await;
    } else {
        let ep = peer.call(|p| p.bind(1, "tcp://127.0.0.1:*").unwrap()).await;
        omq.connect(&ep).await.unwrap();
    }
    let body: Vec<Vec<u8>> = vec![b"sealed".to_vec(), vec![], vec![0xee; 20_000]];
    let zsend = |parts: Vec<Vec<u8>>| async move {
        peer.call(move |p| {
            let refs: Vec<&[u8]> = parts.iter().map(|v| &v[..]).collect();
            p.send(1, &refs).unwrap()
        })
        .await
    };
    // libzmq's zmq_poll can return before its timeout when the socket's signalling descriptor
    // fires for internal work (the ZAP exchange, a pipe attach): retry until the deadline.
    let zrecv = || async {
        peer.call(|p| {
            let deadline = std::time::Instant::now() + T;
            loop {
                match p.recv(1, T) {
                    Ok(m) => return m,
                    Err(e) if e.is_timeout() && std::time::Instant::now() < deadline => {}
                    Err(e) => panic!("libzmq received nothing: {e}"),
                }
            }
        })
        .await
    };
    match (pattern, omq_server) {
        (Pattern::PushPull, false) => {
            omq.send(Message::multipart(body.clone())).await.unwrap();
            assert_eq!(zrecv().await, body);
        }
        (Pattern::PushPull, true) => {
            zsend(body.clone()).await;
            assert_eq!(parts(&omq.recv().await.unwrap()), body);
        }
        (Pattern::ReqRep, false) => {
            omq.send(Message::multipart(body.clone())).await.unwrap();
            assert_eq!(zrecv().await, body);
            zsend(vec![b"reply".to_vec()]).await;
            assert_eq!(parts(&omq.recv().await.unwrap()), vec![b"reply".to_vec()]);
        }
        (Pattern::ReqRep, true) => {
            zsend(body.clone()).await;
            let got = omq.recv().await.unwrap();
            assert_eq!(parts(&got), body);
            omq.send(got).await.unwrap();
            assert_eq!(zrecv().await, body);
        }
        (Pattern::DealerRouter, false) => {
            omq.send(Message::multipart(body.clone())).await.unwrap();
            let got = zrecv().await;
            assert_eq!(got[0], b"omq-peer");
            assert_eq!(got[1..], body[..]);
            zsend(got).await;
            assert_eq!(parts(&omq.recv().await.unwrap()), body);
        }
        (Pattern::DealerRouter, true) => {
            zsend(body.clone()).await;
            let got = omq.recv().await.unwrap();
            assert_eq!(got.parts()[0][..], b"zmq-peer"[..]);
            assert_eq!(parts(&got)[1..], body[..]);
            omq.send(got).await.unwrap();
            assert_eq!(zrecv().await, body);
        }
    }
}

/// Instantiates every security case for a backend.
#[macro_export]
macro_rules! secure_suite {
    ($backend:ty) => {
        mod secure {
            use $crate::secure::{run_secure, Mech, Pattern};
            $crate::secure_suite!(@cases $backend;
                curve_push_pull_omq_client: Curve PushPull false,
                curve_push_pull_omq_server: Curve PushPull true,
                curve_req_rep_omq_client: Curve ReqRep false,
                curve_req_rep_omq_server: Curve ReqRep true,
                curve_dealer_router_omq_client: Curve DealerRouter false,
                curve_dealer_router_omq_server: Curve DealerRouter true,
                plain_push_pull_omq_client: Plain PushPull false,
                plain_push_pull_omq_server: Plain PushPull true,
                plain_req_rep_omq_client: Plain ReqRep false,
                plain_req_rep_omq_server: Plain ReqRep true,
                plain_dealer_router_omq_client: Plain DealerRouter false,
                plain_dealer_router_omq_server: Plain DealerRouter true
            );
        }
    };
    (@cases $backend:ty; $($name:ident : $mech:ident $pattern:ident $server:literal),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                run_secure::<$backend>(Mech::$mech, Pattern::$pattern, $server);
            }
        )*
    };
}

//! The zguide examples (`examples/zguide_*.rs`), each run whole: every part of a pattern in one
//! process on real sockets, and the outcome checked. The examples' own code runs here, each
//! file included with `#[path]`, so what CI tests is exactly what a reader runs by hand.
//!
//! A part is a real libzmq in one case (a REP for the hello-world client), and patterns run on
//! a thread-per-core backend (monoio, compio, glommio) as well as tokio. Time is only ever an
//! upper bound, with wide slack: the suite runs on small, busy machines.

#[allow(dead_code, unreachable_pub)]
#[path = "../examples/zguide_hello.rs"]
mod hello;

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use conformance::async_peer::AsyncPeer;
use conformance::backend::{Backend, CompioBackend, GlommioBackend, MonoioBackend, TokioBackend};
use futures_util::future::{join, select, try_join, Either};
use omq_driver::Runtime;

/// The most any one test may take. Far above what they need (a few seconds), so that only a
/// hang fails.
const LIMIT: Duration = Duration::from_secs(30);

static UNIQUE: AtomicU64 = AtomicU64::new(0);

/// An ipc endpoint no other test uses.
fn ipc(tag: &str) -> String {
    format!(
        "ipc:///tmp/omq-zguide-{tag}-{}-{}.sock",
        std::process::id(),
        UNIQUE.fetch_add(1, Ordering::Relaxed)
    )
}

/// `f`, or a panic once [`LIMIT`] has passed.
async fn within<R: Runtime, F: Future>(f: F) -> F::Output {
    match select(pin!(f), pin!(R::sleep_until(R::now() + LIMIT))).await {
        Either::Left((v, _)) => v,
        Either::Right(_) => panic!("took more than {LIMIT:?}"),
    }
}

fn libzmq() -> AsyncPeer {
    AsyncPeer::spawn().unwrap_or_else(|e| panic!("{e}"))
}

// 1. Hello world

fn hello_world<B: Backend>() {
    B::block_on(within::<B::R, _>(async {
        let ep = ipc("hello");
        let ((), replies) = try_join(hello::server::<B::R>(&ep, 5), hello::client::<B::R>(&ep, 5))
            .await
            .unwrap();
        assert_eq!(replies, vec!["World"; 5]);
    }))
}

#[test]
fn hello_world_on_tokio() {
    hello_world::<TokioBackend>()
}

#[test]
fn hello_world_on_monoio() {
    hello_world::<MonoioBackend>()
}

#[test]
fn hello_world_on_compio() {
    hello_world::<CompioBackend>()
}

#[test]
fn hello_world_on_glommio() {
    hello_world::<GlommioBackend>()
}

#[test]
fn hello_world_client_against_a_libzmq_rep() {
    type B = TokioBackend;
    B::block_on(within::<<B as Backend>::R, _>(async {
        let peer = libzmq();
        let ep = peer
            .call(|p| {
                p.socket(1, "REP").unwrap();
                p.bind(1, "tcp://127.0.0.1:*").unwrap()
            })
            .await;
        let server = peer.call(|p| {
            (0..3)
                .map(|_| {
                    let request = p.recv(1, LIMIT).unwrap();
                    p.send(1, &[b"World"]).unwrap();
                    request
                })
                .collect::<Vec<_>>()
        });
        let (requests, replies) = join(server, hello::client::<<B as Backend>::R>(&ep, 3)).await;
        assert_eq!(replies.unwrap(), vec!["World"; 3]);
        assert_eq!(requests, vec![vec![b"Hello".to_vec()]; 3]);
    }))
}

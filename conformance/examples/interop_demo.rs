//! omq at work against a real libzmq: an omq-core session (driven by the blocking test
//! driver) connects as DEALER to a libzmq ROUTER over TCP, sends multipart requests, and checks
//! every reply the libzmq side routes back.
//!
//! Run with `scripts/demo.sh [COUNT]`.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::Bytes;
use conformance::blocking::BlockingSession;
use conformance::libzmq_peer::LibzmqPeer;
use omq_core::{Message, SessionConfig, SocketType};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let count: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(1000);
    let t = Duration::from_secs(10);

    let mut z = LibzmqPeer::spawn()?;
    println!("libzmq {} (curve: {})", z.version(), z.has_curve());
    z.socket(1, "ROUTER")?;
    let ep = z.bind(1, "tcp://127.0.0.1:*")?;
    println!("libzmq ROUTER bound at {ep}");

    let port: u16 = ep.rsplit(':').next().unwrap_or_default().parse()?;
    let mut cfg = SessionConfig::new(SocketType::Dealer);
    cfg.routing_id = Bytes::from_static(b"omq-demo");
    cfg.metadata.insert("X-Demo", Bytes::from_static(b"yes"));
    let mut omq = BlockingSession::new(TcpStream::connect(("127.0.0.1", port))?, cfg)?;
    omq.handshake(t)?;
    let peer = omq.session.peer().expect("ready");
    println!(
        "omq DEALER connected: peer is {} speaking ZMTP 3.{}",
        peer.socket_type, peer.zmtp_minor
    );

    let start = Instant::now();
    for i in 0..count {
        let body = format!("request {i}");
        omq.send(&Message::multipart([&b""[..], body.as_bytes()]))?;
        // libzmq's ROUTER sees [routing id, "", body]; route a reply back to us.
        let req = z.recv(1, t)?;
        assert_eq!(req[0], b"omq-demo");
        let reply = format!("reply {i}");
        z.send(1, &[&req[0], b"", reply.as_bytes()])?;
        let got = omq.recv(t)?;
        assert_eq!(&got.parts()[1][..], reply.as_bytes());
    }
    let took = start.elapsed();
    println!(
        "{count} request/reply round trips through libzmq in {:.1} ms ({:.0} µs each, \
         mostly the test peer's command pipe)",
        took.as_secs_f64() * 1e3,
        took.as_secs_f64() * 1e6 / count as f64
    );
    Ok(())
}

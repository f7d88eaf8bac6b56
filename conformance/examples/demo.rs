//! omq at work: tokio sockets over tcp and ipc, talking to each other and to a real libzmq.
//!
//! Run with `scripts/demo.sh`.

use std::time::{Duration, Instant};

use conformance::libzmq_peer::LibzmqPeer;
use omq_tokio::{Message, Options, Socket, SocketType};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(200_000);

    // 1. PUSH/PULL throughput over tcp, omq to omq.
    let pull = Socket::new(SocketType::Pull, Options::default())?;
    let ep = pull.bind("tcp://127.0.0.1:0").await?.to_string();
    let push = Socket::new(SocketType::Push, Options::default())?;
    push.connect(&ep).await?;
    let sender = tokio::spawn(async move {
        let body = [7u8; 64];
        for _ in 0..n {
            push.send(Message::from(&body)).await.expect("send");
        }
        push.close().await.expect("close");
    });
    let start = Instant::now();
    for _ in 0..n {
        pull.recv().await?;
    }
    let took = start.elapsed();
    sender.await?;
    println!(
        "PUSH/PULL tcp: {n} x 64 B in {:.0} ms = {:.2} M msg/s",
        took.as_secs_f64() * 1e3,
        n as f64 / took.as_secs_f64() / 1e6
    );

    // 2. REQ/REP round trips over ipc.
    let path = format!("ipc:///tmp/omq-demo-{}.sock", std::process::id());
    let rep = Socket::new(SocketType::Rep, Options::default())?;
    rep.bind(&path).await?;
    let server = tokio::spawn(async move {
        while let Ok(m) = rep.recv().await {
            if rep.send(m).await.is_err() {
                break;
            }
        }
    });
    let req = Socket::new(SocketType::Req, Options::default())?;
    req.connect(&path).await?;
    let rounds = 2_000;
    let mut lat = Vec::with_capacity(rounds);
    for i in 0..rounds {
        let t = Instant::now();
        req.send(Message::from(format!("ping {i}"))).await?;
        req.recv().await?;
        lat.push(t.elapsed());
    }
    lat.sort();
    println!(
        "REQ/REP ipc: {rounds} round trips, p50 {:.1} µs, p99 {:.1} µs",
        lat[rounds / 2].as_secs_f64() * 1e6,
        lat[rounds * 99 / 100].as_secs_f64() * 1e6
    );
    server.abort();

    // 3. Interop: a real libzmq SUB and PULL, fed by omq.
    let mut z = LibzmqPeer::spawn()?;
    println!("libzmq {} (curve: {})", z.version(), z.has_curve());
    z.socket(1, "SUB")?;
    z.setsockopt(1, "SUBSCRIBE", &b"weather"[..])?;
    let zep = z.bind(1, "tcp://127.0.0.1:*")?;
    let publ = Socket::new(SocketType::Pub, Options::default())?;
    publ.connect(&zep).await?;
    let mut got = None;
    for _ in 0..200 {
        publ.send(Message::from("sports: ignored")).await?;
        publ.send(Message::multipart(["weather", "sunny, 21 C"]))
            .await?;
        if let Ok(m) = z.recv(1, Duration::from_millis(10)) {
            got = Some(m);
            break;
        }
    }
    let got = got.ok_or("libzmq SUB never received")?;
    println!(
        "omq PUB -> libzmq SUB: {:?}",
        got.iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect::<Vec<_>>()
    );

    z.socket(2, "PUSH")?;
    let pull = Socket::new(SocketType::Pull, Options::default())?;
    let ep = pull.bind("tcp://127.0.0.1:0").await?.to_string();
    z.connect(2, &ep)?;
    z.send(2, &[b"from", b"libzmq"])?;
    let m = pull.recv().await?;
    println!(
        "libzmq PUSH -> omq PULL: {:?} (peer is {})",
        m.parts()
            .iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect::<Vec<_>>(),
        String::from_utf8_lossy(m.property("Socket-Type").unwrap_or(b"?"))
    );
    Ok(())
}

//! Quick PUSH/PULL throughput check: each side on its own OS thread with its own glommio
//! executor. `cargo run --release -p omq-glommio --example glommio_throughput -- [tcp|ipc|inproc] SIZE COUNT`
//! (the full side-by-side comparison lives in benches/).

use std::time::Instant;

use omq_glommio::{Message, Options, Socket, SocketType};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let transport = args.get(1).map_or("tcp", |s| s.as_str()).to_string();
    let size: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(64);
    let count: usize = args
        .get(3)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let ep = match transport.as_str() {
        "ipc" => format!("ipc:///tmp/omq-throughput-{}.sock", std::process::id()),
        "inproc" => "inproc://throughput".to_string(),
        _ => "tcp://127.0.0.1:0".to_string(),
    };
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let receiver = std::thread::spawn(move || {
        omq_glommio::block_on(async move {
            let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
            let bound = pull.bind(&ep).await.unwrap().to_string();
            tx.send(bound).unwrap();
            pull.recv().await.unwrap();
            let start = Instant::now();
            for _ in 1..count {
                pull.recv().await.unwrap();
            }
            start.elapsed()
        })
        .expect("glommio executor")
    });
    let bound = rx.recv().unwrap();
    // inproc names are per process: the sender runs on this thread of the same process.
    let sender = move || {
        omq_glommio::block_on(async move {
            let push = Socket::new(SocketType::Push, Options::default()).unwrap();
            push.connect(&bound).await.unwrap();
            let body = vec![7u8; size];
            for _ in 0..count {
                push.send(Message::from(&body[..])).await.unwrap();
            }
            push.close().await.unwrap();
        })
        .expect("glommio executor")
    };
    sender();
    let took = receiver.join().unwrap();
    println!(
        "{transport} {size} B: {:.2} M msg/s, {:.0} MB/s",
        count as f64 / took.as_secs_f64() / 1e6,
        (count * size) as f64 / took.as_secs_f64() / 1e6
    );
}

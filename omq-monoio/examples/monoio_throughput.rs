//! Quick PUSH/PULL throughput check: each side on its own OS thread with its own monoio
//! runtime. `cargo run --release -p omq-monoio --example monoio_throughput -- [tcp|ipc|inproc] SIZE COUNT [legacy]`
//! (`legacy` forces the epoll driver; the full side-by-side comparison lives in benches/).

use std::time::Instant;

use omq_monoio::{Message, Options, Socket, SocketType};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let transport = args.get(1).map_or("tcp", |s| s.as_str()).to_string();
    let size: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(64);
    let count: usize = args
        .get(3)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let legacy = args.get(4).is_some_and(|s| s == "legacy");
    let block_on = move |f: std::pin::Pin<
        Box<dyn std::future::Future<Output = Option<std::time::Duration>>>,
    >| {
        if legacy {
            monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
                .enable_timer()
                .build()
                .expect("runtime")
                .block_on(f)
        } else {
            monoio::RuntimeBuilder::<monoio::FusionDriver>::new()
                .enable_timer()
                .build()
                .expect("runtime")
                .block_on(f)
        }
    };
    let ep = match transport.as_str() {
        "ipc" => format!("ipc:///tmp/omq-throughput-{}.sock", std::process::id()),
        "inproc" => "inproc://throughput".to_string(),
        _ => "tcp://127.0.0.1:0".to_string(),
    };
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let receiver = std::thread::spawn(move || {
        block_on(Box::pin(async move {
            let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
            let bound = pull.bind(&ep).await.unwrap().to_string();
            tx.send(bound).unwrap();
            pull.recv().await.unwrap();
            let start = Instant::now();
            for _ in 1..count {
                pull.recv().await.unwrap();
            }
            Some(start.elapsed())
        }))
    });
    let bound = rx.recv().unwrap();
    // inproc names are per process: the sender runs on this thread of the same process.
    let sender = move || {
        block_on(Box::pin(async move {
            let push = Socket::new(SocketType::Push, Options::default()).unwrap();
            push.connect(&bound).await.unwrap();
            let body = vec![7u8; size];
            for _ in 0..count {
                push.send(Message::from(&body[..])).await.unwrap();
            }
            push.close().await.unwrap();
            None
        }))
    };
    sender();
    let took = receiver.join().unwrap().expect("the receiver times");
    println!(
        "{transport} {size} B{}: {:.2} M msg/s, {:.0} MB/s",
        if legacy { " (legacy)" } else { "" },
        count as f64 / took.as_secs_f64() / 1e6,
        (count * size) as f64 / took.as_secs_f64() / 1e6
    );
}

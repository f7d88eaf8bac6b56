//! Cancellation under load: send and recv futures dropped at random points (raced against
//! short timers in `select!`) never lose, duplicate or reorder a message, and never split one.

use std::time::Duration;

use omq_tokio::{Message, Options, Socket, SocketType};

/// A small deterministic generator for the race timings.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    /// A future that completes after a random small number of scheduler turns: racing it
    /// against an operation drops that operation at an arbitrary point of its wait.
    fn interrupt(&mut self) -> impl std::future::Future<Output = ()> {
        let turns = self.next() % 4;
        async move {
            for _ in 0..turns {
                tokio::task::yield_now().await;
            }
        }
    }
}

async fn run(endpoint: &str) {
    let n = 3000u32;
    let pull = Socket::new(SocketType::Pull, Options::default().recv_hwm(5)).unwrap();
    let ep = pull.bind(endpoint).await.unwrap().to_string();
    let push = Socket::new(SocketType::Push, Options::default().send_hwm(5)).unwrap();
    push.connect(&ep).await.unwrap();
    let sender = tokio::spawn(async move {
        let mut rng = Lcg(1);
        let mut cancelled = 0u32;
        let mut i = 0u32;
        while i < n {
            // Three parts, so a split message would show.
            let msg = Message::multipart([i.to_be_bytes(), i.to_be_bytes(), i.to_be_bytes()]);
            tokio::select! {
                r = push.send(msg) => { r.unwrap(); i += 1; }
                _ = rng.interrupt() => { cancelled += 1; }
            }
        }
        push.close().await.unwrap();
        cancelled
    });
    let mut rng = Lcg(2);
    let mut next = 0u32;
    let mut cancelled = 0u32;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while next < n {
        assert!(tokio::time::Instant::now() < deadline, "stalled at {next}");
        tokio::select! {
            r = pull.recv() => {
                let m = r.unwrap();
                assert_eq!(m.len(), 3, "whole message");
                for p in m.parts() {
                    assert_eq!(p[..], next.to_be_bytes(), "exactly once, in order");
                }
                next += 1;
                if rng.next().is_multiple_of(64) {
                    // A slow reader now and then, so the sender waits at its HWM.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
            _ = rng.interrupt() => { cancelled += 1; }
        }
    }
    let sender_cancelled = sender.await.unwrap();
    assert!(pull.try_recv().is_err(), "nothing extra");
    // The test only means something if futures were really dropped mid-flight.
    eprintln!("{sender_cancelled} + {cancelled} cancellations");
    assert!(
        sender_cancelled + cancelled > 50,
        "{sender_cancelled} + {cancelled} cancellations"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_futures_over_tcp() {
    run("tcp://127.0.0.1:0").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_futures_over_inproc() {
    run("inproc://cancellation-test").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_futures_over_ipc() {
    run("ipc:///tmp/omq-tokio-cancellation.sock").await;
}

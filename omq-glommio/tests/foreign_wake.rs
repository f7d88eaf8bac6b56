//! Wakes from another thread reach a glommio executor that is parking or parked.
//!
//! omq's sockets are used from any thread, and a send or receive from another thread wakes
//! the executor that runs the socket's connections through glommio's foreign-wake path. A lost
//! wake would leave the executor asleep until its next preemption timer (100 ms), so thousands
//! of ping-pongs would take minutes instead of well under a second; timing is only bounded from
//! above, with wide slack. (Written while trying a patched glommio whose executor skips its
//! `membarrier` before sleeping: see docs/PERFORMANCE.md, "REQ/REP on glommio".)

use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

/// Ping-pongs: each one has the executor park (or start to) while the other thread wakes it.
const ROUNDS: usize = 5_000;

/// Upper bound for the whole exchange (normally well under a second).
const LIMIT: Duration = Duration::from_secs(60);

#[derive(Default)]
struct Ping {
    set: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Ping {
    /// From the other thread: set the flag, then wake whoever waits.
    fn ring(&self) {
        self.set.store(true, Ordering::Release);
        if let Some(w) = self.waker.lock().expect("waker").take() {
            w.wake();
        }
    }

    /// On the executor: wait until the flag is set, and clear it.
    async fn wait(&self) {
        poll_fn(|cx| {
            *self.waker.lock().expect("waker") = Some(cx.waker().clone());
            if self.set.swap(false, Ordering::AcqRel) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
    }
}

#[test]
fn wakes_from_another_thread_reach_a_parking_executor() {
    let ping = Arc::new(Ping::default());
    let (ack_tx, ack_rx) = mpsc::channel::<usize>();
    let p = ping.clone();
    let executor = std::thread::spawn(move || {
        omq_glommio::block_on(async move {
            for i in 0..ROUNDS {
                p.wait().await;
                ack_tx.send(i).expect("ack");
            }
        })
        .expect("glommio executor");
    });
    let start = Instant::now();
    for i in 0..ROUNDS {
        ping.ring();
        let left = LIMIT.saturating_sub(start.elapsed());
        match ack_rx.recv_timeout(left) {
            Ok(n) => assert_eq!(n, i),
            Err(e) => panic!(
                "round {i} of {ROUNDS} not acknowledged within {LIMIT:?} of the start ({e}): \
                 a wake from this thread did not reach the parked executor"
            ),
        }
    }
    executor.join().expect("executor thread");
}

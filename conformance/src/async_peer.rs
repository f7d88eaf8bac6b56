//! The libzmq peer, usable from async tests on any runtime: the blocking [`LibzmqPeer`] lives
//! on a thread of its own and each call waits for its reply on a runtime-agnostic channel, so a
//! test never blocks the executor its omq sockets run on (a single-threaded runtime would
//! otherwise stall while libzmq waits for omq).

use std::sync::mpsc;
use std::thread;

use futures_channel::oneshot;

use crate::libzmq_peer::{LibzmqPeer, PeerError};

type Job = Box<dyn FnOnce(&mut LibzmqPeer) + Send>;

/// A libzmq peer process behind a thread.
#[derive(Debug)]
pub struct AsyncPeer {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl AsyncPeer {
    /// Starts a libzmq peer process and its thread.
    pub fn spawn() -> Result<AsyncPeer, PeerError> {
        Self::start(LibzmqPeer::spawn()?)
    }

    /// Starts the draft peer (libzmq with its draft API) and its thread.
    pub fn spawn_draft() -> Result<AsyncPeer, PeerError> {
        Self::start(LibzmqPeer::spawn_draft()?)
    }

    fn start(mut peer: LibzmqPeer) -> Result<AsyncPeer, PeerError> {
        let (tx, rx) = mpsc::channel::<Job>();
        let thread = thread::spawn(move || {
            while let Ok(job) = rx.recv() {
                job(&mut peer);
            }
        });
        Ok(AsyncPeer {
            jobs: Some(tx),
            thread: Some(thread),
        })
    }

    /// Runs `f` on the peer and waits for its result without blocking the executor.
    pub async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut LibzmqPeer) -> T + Send + 'static,
    ) -> T {
        let (tx, rx) = oneshot::channel();
        self.jobs
            .as_ref()
            .expect("peer running")
            .send(Box::new(move |p| {
                let _ = tx.send(f(p));
            }))
            .expect("peer thread alive");
        rx.await.expect("peer thread answered")
    }
}

impl Drop for AsyncPeer {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

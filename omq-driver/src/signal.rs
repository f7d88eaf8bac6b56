//! A wake-up flag set for one task, independent of any runtime: other tasks raise bits, the
//! owner waits until some bit is up and takes them all.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use atomic_waker::AtomicWaker;

/// There is something to send.
pub(crate) const FLUSH: u8 = 1;
/// The incoming queue has room again.
pub(crate) const RESUME: u8 = 2;
/// Stop: close the connection (or the listener).
pub(crate) const CLOSE: u8 = 4;
/// The timer deadline changed.
pub(crate) const TIMER: u8 = 8;
/// The socket's last user handle was dropped: its keeper task closes it.
pub(crate) const DROPPED: u8 = 16;

/// Bits raised for a task, and its waker.
#[derive(Debug, Default)]
pub(crate) struct Signal {
    bits: AtomicU8,
    waker: AtomicWaker,
    /// Bytes the connection still has to write (read by close to honour LINGER).
    pub(crate) unflushed: AtomicUsize,
    /// The task has ended and let go of what it held (a listener its socket).
    pub(crate) done: AtomicBool,
}

impl Signal {
    /// Raises `bits` and wakes the owner.
    pub(crate) fn raise(&self, bits: u8) {
        self.bits.fetch_or(bits, Ordering::AcqRel);
        self.waker.wake();
    }

    /// Waits until a bit is up; returns and clears them all.
    pub(crate) fn wait(&self) -> Wait<'_> {
        Wait(self)
    }

    /// Takes the raised bits without waiting.
    pub(crate) fn take(&self) -> u8 {
        self.bits.swap(0, Ordering::AcqRel)
    }
}

/// Future of [`Signal::wait`].
#[derive(Debug)]
pub(crate) struct Wait<'a>(&'a Signal);

impl Future for Wait<'_> {
    type Output = u8;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u8> {
        let bits = self.0.take();
        if bits != 0 {
            return Poll::Ready(bits);
        }
        self.0.waker.register(cx.waker());
        let bits = self.0.take();
        if bits != 0 {
            Poll::Ready(bits)
        } else {
            Poll::Pending
        }
    }
}

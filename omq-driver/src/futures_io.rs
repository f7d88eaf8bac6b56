//! The bridge for byte streams omq does not own: any `futures_io::AsyncRead + AsyncWrite`
//! stream (a smol or async-std socket, glommio's, a TLS or SSH stream, a user's own transport)
//! serves as the driver's read and write halves through this adapter.
//!
//! futures-io reads into initialized slices, so the spare capacity of the read buffer is
//! zeroed before each read (a memset the owned-buffer backends do not pay); writes are real
//! vectored writes when the stream implements `poll_write_vectored`.

use std::io::{self, IoSlice};

use bytes::{Bytes, BytesMut};
use futures_io::{AsyncRead, AsyncWrite};
use futures_util::io::{AsyncReadExt, AsyncWriteExt};

use crate::runtime::{ReadHalf, WriteHalf};

/// The reading half of a futures-io stream.
#[derive(Debug)]
pub struct Reader<S> {
    inner: futures_util::io::ReadHalf<S>,
    peer: Option<String>,
}

/// The writing half of a futures-io stream.
#[derive(Debug)]
pub struct Writer<S> {
    inner: futures_util::io::WriteHalf<S>,
}

/// Splits a stream into halves the driver can keep busy at the same time. `peer` is what
/// received messages show as their `Peer-Address`.
pub fn split<S: AsyncRead + AsyncWrite>(stream: S, peer: Option<String>) -> (Reader<S>, Writer<S>) {
    let (r, w) = stream.split();
    (Reader { inner: r, peer }, Writer { inner: w })
}

/// Least spare room offered to a read.
const MIN_READ: usize = 16 * 1024;

impl<S: AsyncRead + AsyncWrite + 'static> ReadHalf for Reader<S> {
    async fn read(mut self, mut buf: BytesMut) -> (Self, BytesMut, io::Result<usize>) {
        let start = buf.len();
        let room = (buf.capacity() - start).max(MIN_READ);
        buf.resize(start + room, 0);
        let r = self.inner.read(&mut buf[start..]).await;
        buf.truncate(start + *r.as_ref().unwrap_or(&0));
        (self, buf, r)
    }

    fn peer_address(&self) -> Option<String> {
        self.peer.clone()
    }
}

impl<S: AsyncRead + AsyncWrite + 'static> WriteHalf for Writer<S> {
    async fn write(mut self, chunks: Vec<Bytes>) -> (Self, Vec<Bytes>, io::Result<usize>) {
        let slices: Vec<IoSlice<'_>> = chunks.iter().map(|c| IoSlice::new(c)).collect();
        let r = self.inner.write_vectored(&slices).await;
        drop(slices);
        (self, chunks, r)
    }
}

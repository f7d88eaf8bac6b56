//! The ceiling: the same byte stream a ZMTP connection carries (pre-framed short/long frames),
//! over a plain tokio socket, with no protocol, queue or message object in between. The sender
//! writes a prepared buffer of frames (no per-message copy); the receiver reads into a 64 KiB
//! buffer and walks the frame headers to count messages, as a ZMTP decoder must at least do.
//! Each side on its own OS thread with a current-thread runtime, as omq-tokio.

use std::time::Instant;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::oneshot;

use crate::common::{self, Samples, ThrTimes};
use crate::spec::{Cell, Pattern, Transport};

/// Bytes read at a time (omq's read size).
const READ_SIZE: usize = 64 * 1024;

/// Bytes of frames prepared for one write.
const BATCH: usize = 64 * 1024;

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Runs one cell.
pub fn run(cell: &Cell) -> Result<Samples, String> {
    match (cell.pattern, cell.transport) {
        (_, Transport::Inproc) => Err("raw: no inproc stream".into()),
        (Pattern::PushPull, _) => Ok(push_pull(cell)),
        (Pattern::ReqRep, _) => Ok(req_rep(cell)),
        (Pattern::PubSub, _) => Err("raw: no fan-out ceiling".into()),
        (Pattern::Curve, _) => Err("raw: no security".into()),
        (Pattern::Proxy | Pattern::ProxyLat, _) => Err("raw: no proxy".into()),
        (Pattern::Scale | Pattern::ScalePub | Pattern::ScaleCurve | Pattern::CurveClients, _) => {
            Err("raw: no scale cell".into())
        }
    }
}

/// One ZMTP data frame (flags 0, short or long length) around `payload`.
pub fn frame(payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(payload.len() + 9);
    if payload.len() < 256 {
        f.extend_from_slice(&[0, payload.len() as u8]);
    } else {
        f.push(0x02);
        f.extend_from_slice(&(payload.len() as u64).to_be_bytes());
    }
    f.extend_from_slice(payload);
    f
}

/// Counts complete frames in a byte stream split anywhere.
#[derive(Debug, Default)]
pub struct FrameCounter {
    /// Body bytes still to skip in the current frame.
    skip: u64,
    hdr: [u8; 9],
    hdr_len: usize,
}

impl FrameCounter {
    /// Feeds bytes; returns how many frames they completed.
    pub fn feed(&mut self, mut data: &[u8]) -> usize {
        let mut done = 0;
        while !data.is_empty() {
            if self.skip > 0 {
                let k = self.skip.min(data.len() as u64);
                self.skip -= k;
                data = &data[k as usize..];
                if self.skip == 0 {
                    done += 1;
                }
                continue;
            }
            self.hdr[self.hdr_len] = data[0];
            self.hdr_len += 1;
            data = &data[1..];
            let need = if self.hdr[0] & 0x02 != 0 { 9 } else { 2 };
            if self.hdr_len == need {
                let len = if need == 9 {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(&self.hdr[1..9]);
                    u64::from_be_bytes(b)
                } else {
                    u64::from(self.hdr[1])
                };
                self.hdr_len = 0;
                if len == 0 {
                    done += 1;
                } else {
                    self.skip = len;
                }
            }
        }
        done
    }
}

async fn listen(cell: &Cell) -> (Listener, String) {
    match cell.transport {
        Transport::Tcp => {
            let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = l.local_addr().expect("addr").to_string();
            (Listener::Tcp(l), addr)
        }
        _ => {
            let path = common::ipc_path();
            let _ = std::fs::remove_file(&path);
            let l = UnixListener::bind(&path).expect("bind");
            (Listener::Unix(l, path.clone()), path)
        }
    }
}

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, String),
}

impl Listener {
    async fn accept(self) -> Box<dyn Io> {
        match self {
            Listener::Tcp(l) => {
                let (s, _) = l.accept().await.expect("accept");
                s.set_nodelay(true).expect("nodelay");
                Box::new(s)
            }
            Listener::Unix(l, path) => {
                let (s, _) = l.accept().await.expect("accept");
                let _ = std::fs::remove_file(path);
                Box::new(s)
            }
        }
    }
}

async fn connect(transport: Transport, addr: &str) -> Box<dyn Io> {
    match transport {
        Transport::Tcp => {
            let s = TcpStream::connect(addr).await.expect("connect");
            s.set_nodelay(true).expect("nodelay");
            Box::new(s)
        }
        _ => Box::new(UnixStream::connect(addr).await.expect("connect")),
    }
}

/// Writes `count` frames from a buffer holding `per_batch` copies of a frame of `frame_len`.
async fn write_frames(s: &mut Box<dyn Io>, batch: &[u8], frame_len: usize, count: usize) {
    let per_batch = batch.len() / frame_len;
    let mut left = count;
    while left > 0 {
        let k = left.min(per_batch);
        s.write_all(&batch[..k * frame_len]).await.expect("write");
        left -= k;
    }
}

fn push_pull(cell: &Cell) -> Samples {
    let (n, warm, size) = (cell.count, cell.warmup, cell.size);
    let transport = cell.transport;
    let cell2 = cell.clone();
    let (ep_tx, ep_rx) = oneshot::channel::<String>();
    let (ready_tx, ready_rx) = oneshot::channel::<()>();
    let (done_tx, done_rx) = oneshot::channel::<()>();
    let receiver = async move {
        let (l, addr) = listen(&cell2).await;
        ep_tx.send(addr).expect("endpoint");
        let mut s = l.accept().await;
        let mut buf = vec![0u8; READ_SIZE];
        let mut counter = FrameCounter::default();
        let mut seen = 0usize;
        let mut ready_tx = Some(ready_tx);
        if warm == 0 {
            ready_tx.take().expect("ready").send(()).expect("ready");
        }
        let mut first = None;
        let last = loop {
            let k = s.read(&mut buf).await.expect("read");
            assert!(k > 0, "raw: sender closed early");
            seen += counter.feed(&buf[..k]);
            if seen >= warm {
                if let Some(tx) = ready_tx.take() {
                    tx.send(()).expect("ready");
                }
            }
            if first.is_none() && seen > warm {
                first = Some(Instant::now());
            }
            if seen >= warm + n {
                break Instant::now();
            }
        };
        let _ = done_tx.send(());
        (first.expect("first"), last)
    };
    let sender = async move {
        let mut s = connect(transport, &ep_rx.await.expect("endpoint")).await;
        let f = frame(&common::payload(size));
        let per_batch = (BATCH / f.len()).max(1);
        let batch: Vec<u8> = f
            .iter()
            .copied()
            .cycle()
            .take(per_batch * f.len())
            .collect();
        write_frames(&mut s, &batch, f.len(), warm).await;
        ready_rx.await.expect("ready");
        let t0 = Instant::now();
        write_frames(&mut s, &batch, f.len(), n).await;
        done_rx.await.expect("done");
        t0
    };
    let ((first_recv, last_recv), first_send) = common::run_pair(false, receiver, sender);
    ThrTimes {
        first_send,
        first_recv,
        last_recv,
    }
    .metrics(n)
}

/// Reads until one whole frame has arrived.
async fn read_frame(s: &mut Box<dyn Io>, buf: &mut [u8], counter: &mut FrameCounter) {
    loop {
        let k = s.read(buf).await.expect("read");
        assert!(k > 0, "raw: peer closed early");
        if counter.feed(&buf[..k]) > 0 {
            return;
        }
    }
}

fn req_rep(cell: &Cell) -> Samples {
    let (n, warm, size) = (cell.count, cell.warmup, cell.size);
    let total = n + warm;
    let transport = cell.transport;
    let cell2 = cell.clone();
    let (ep_tx, ep_rx) = oneshot::channel::<String>();
    let server = async move {
        let (l, addr) = listen(&cell2).await;
        ep_tx.send(addr).expect("endpoint");
        let mut s = l.accept().await;
        let f = frame(&common::payload(size));
        let mut buf = vec![0u8; READ_SIZE];
        let mut counter = FrameCounter::default();
        for _ in 0..total {
            read_frame(&mut s, &mut buf, &mut counter).await;
            s.write_all(&f).await.expect("write");
        }
    };
    let client = async move {
        let mut s = connect(transport, &ep_rx.await.expect("endpoint")).await;
        let f = frame(&common::payload(size));
        let mut buf = vec![0u8; READ_SIZE];
        let mut counter = FrameCounter::default();
        let mut rtts = Vec::with_capacity(n);
        for i in 0..total {
            let t = Instant::now();
            s.write_all(&f).await.expect("write");
            read_frame(&mut s, &mut buf, &mut counter).await;
            if i >= warm {
                rtts.push(t.elapsed());
            }
        }
        rtts
    };
    let ((), mut rtts) = common::run_pair(false, server, client);
    common::latency_metrics(&mut rtts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_frames_split_anywhere() {
        let mut stream = Vec::new();
        for size in [0usize, 1, 8, 255, 256, 300, 70_000] {
            stream.extend(frame(&vec![7u8; size]));
        }
        for chunk in [1usize, 2, 3, 7, 64, 1000, stream.len()] {
            let mut c = FrameCounter::default();
            let n: usize = stream.chunks(chunk).map(|b| c.feed(b)).sum();
            assert_eq!(n, 7, "chunk {chunk}");
        }
    }
}

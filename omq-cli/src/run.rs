//! The socket loop, written once for every omq-driver runtime.
//!
//! Nothing here names a runtime: timeouts are the socket's own RCVTIMEO/SNDTIMEO, and standard
//! input is read on a plain thread that hands lines over through a bounded channel (so a slow
//! peer holds the reader back instead of buffering all of stdin).

use std::collections::HashMap;
use std::future::Future;
use std::io::{self, BufRead, Write};
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use futures_channel::mpsc;
use futures_util::future::{poll_fn, select, Either};
use futures_util::StreamExt;
use omq_driver::{
    Error, EventKind, Message, Monitor, Options, Part, Runtime, Socket, SocketOption, SocketType,
};

use crate::args::{Config, Mode, ProxyConfig, ProxySocket};
use crate::Failure;

/// Lines read ahead of the socket.
const STDIN_AHEAD: usize = 64;

/// How a loop ended without failing.
#[derive(Debug, PartialEq, Eq)]
enum End {
    /// End of input, or COUNT reached: close, flushing within the linger.
    Done,
    /// Whoever reads our stdout went away: stop quietly.
    StdoutClosed,
}

/// Runs the socket `config` describes until the end of input, COUNT, or a failure.
pub(crate) async fn run<R: Runtime>(config: Config) -> Result<(), Failure> {
    let mut options = Options::default().mechanism(config.mechanism.clone());
    if let Some(t) = config.timeout {
        options = options.recv_timeout(Some(t)).send_timeout(Some(t));
    }
    if let Some(l) = config.linger {
        options = options.linger(Some(l));
    }
    if let Some(d) = &config.compression_dict {
        options = options.compression_dict(Some(d.clone()));
    }
    if config.compression_auto_train {
        options = options.compression_auto_train(true);
    }
    if let Some(l) = config.compression_level {
        options = options.compression_level(l);
    }
    let socket =
        Socket::<R>::new(config.socket_type, options).map_err(|e| Failure::Usage(e.to_string()))?;
    for ep in &config.binds {
        let bound = socket
            .bind(ep)
            .await
            .map_err(|e| Failure::Usage(format!("cannot bind to {ep}: {e}")))?;
        announce_bound(ep, &bound);
    }
    // A sender watches its connections come up: see `wait_connected`.
    let mut monitor =
        (config.mode == Mode::Send && !config.connects.is_empty()).then(|| socket.monitor());
    for ep in &config.connects {
        socket
            .connect(ep)
            .await
            .map_err(|e| Failure::Usage(format!("cannot connect to {ep}: {e}")))?;
    }
    let end = match config.mode {
        Mode::Send => send_lines(&socket, &config).await?,
        Mode::Recv => receive(&socket, &config).await?,
    };
    // Only what we sent needs flushing: lines, or echoed replies. A receiver has nothing that
    // matters left (at most its subscriptions), so it does not wait for a peer that is gone.
    let flush = end == End::Done && (config.mode == Mode::Send || config.echo);
    if !flush {
        let _ = socket.set_option(SocketOption::Linger(Some(Duration::ZERO)));
    } else if let Some(monitor) = &mut monitor {
        let deadline = config.linger.map(|l| R::now() + l);
        let down = wait_connected::<R>(monitor, &config.connects, deadline).await;
        // PUB drops what no subscriber wants anyway; other senders queued messages for the
        // endpoint that never came up, and they are lost.
        if !down.is_empty() && !matches!(config.socket_type, SocketType::Pub | SocketType::XPub) {
            return Err(Failure::Other(format!(
                "gave up within the linger: no connection to {}; anything queued for it is lost",
                down.join(", ")
            )));
        }
        if let Some(d) = deadline {
            let left = d.saturating_duration_since(R::now());
            let _ = socket.set_option(SocketOption::Linger(Some(left)));
        }
    }
    socket
        .close()
        .await
        .map_err(|e| Failure::Other(format!("closing the socket: {e}")))
}

/// Waits until every connect endpoint has a connection whose handshake is done, or the
/// deadline passes; gives the endpoints still without one.
///
/// Messages sent before a connection is up wait in that connection's queue, but the socket's
/// close only lingers for connections that are up (and stops redialling), so closing right after
/// `seq 5 | omq push --connect ... --send` would drop them. libzmq's close with LINGER -1 waits
/// for the connection instead; this wait gives the tool that behaviour.
async fn wait_connected<R: Runtime>(
    monitor: &mut Monitor<R>,
    endpoints: &[String],
    deadline: Option<Instant>,
) -> Vec<String> {
    // udp has no connection to wait for: its datagrams go out as soon as its socket opens.
    let mut up: HashMap<&str, bool> = endpoints
        .iter()
        .filter(|e| !e.starts_with("udp://"))
        .map(|e| (e.as_str(), false))
        .collect();
    let down = |up: &HashMap<&str, bool>| -> Vec<String> {
        let mut v: Vec<String> = up
            .iter()
            .filter(|(_, &u)| !u)
            .map(|(e, _)| e.to_string())
            .collect();
        v.sort();
        v
    };
    while up.values().any(|&u| !u) {
        let event = match deadline {
            None => monitor.next().await,
            Some(d) => match select(monitor.next(), pin!(R::sleep_until(d))).await {
                Either::Left((event, _)) => event,
                Either::Right(_) => return down(&up),
            },
        };
        let Some(event) = event else {
            return down(&up);
        };
        let now_up = match event.kind {
            EventKind::HandshakeSucceeded => true,
            EventKind::Disconnected => false,
            _ => continue,
        };
        if let Some(u) = up.get_mut(event.endpoint.as_str()) {
            *u = now_up;
        }
    }
    Vec::new()
}

/// `--send`: each line of stdin out as a message; a REQ or a CLIENT prints each reply.
async fn send_lines<R: Runtime>(socket: &Socket<R>, config: &Config) -> Result<End, Failure> {
    let mut lines = stdin_lines(STDIN_AHEAD);
    let mut sent: u64 = 0;
    while config.count.is_none_or(|n| sent < n) {
        let Some(line) = lines.next().await else {
            break;
        };
        let line = line.map_err(|e| Failure::Other(format!("reading stdin: {e}")))?;
        let mut msg = to_message(&line, config.split.as_deref());
        if let Some(group) = &config.group {
            msg = msg.with_group(group.clone());
        }
        socket
            .send(msg)
            .await
            .map_err(|e| send_failure(e, config.timeout))?;
        sent += 1;
        if matches!(config.socket_type, SocketType::Req | SocketType::Client) {
            let reply = socket
                .recv()
                .await
                .map_err(|e| recv_failure(e, config.timeout, "no reply"))?;
            if !print(&reply, &config.join)? {
                return Ok(End::StdoutClosed);
            }
        }
    }
    Ok(End::Done)
}

/// `--recv`: each message to stdout; with `--echo`, back to its sender.
async fn receive<R: Runtime>(socket: &Socket<R>, config: &Config) -> Result<End, Failure> {
    for prefix in &config.subscribe {
        let subscribed = if config.socket_type == SocketType::XSub {
            // XSUB subscribes by sending the subscription as a message.
            let mut m = Vec::with_capacity(prefix.len() + 1);
            m.push(1);
            m.extend_from_slice(prefix);
            socket
                .send(Message::from(m))
                .await
                .map_err(|e| send_failure(e, config.timeout))
        } else {
            socket
                .subscribe(prefix)
                .map_err(|e| Failure::Other(format!("subscribing: {e}")))
        };
        subscribed?;
    }
    for group in &config.join_groups {
        socket
            .join(group)
            .map_err(|e| Failure::Other(format!("joining: {e}")))?;
    }
    let mut received: u64 = 0;
    while config.count.is_none_or(|n| received < n) {
        let msg = socket
            .recv()
            .await
            .map_err(|e| recv_failure(e, config.timeout, "nothing received"))?;
        received += 1;
        if config.echo {
            socket
                .send(msg.clone())
                .await
                .map_err(|e| send_failure(e, config.timeout))?;
        }
        // A DISH's message prints behind its group.
        let shown = match msg.group() {
            Some(g) => {
                let body = msg.parts().first().map(|p| p.to_vec()).unwrap_or_default();
                Message::multipart([g.to_vec(), body])
            }
            None => msg,
        };
        if !print(&shown, &config.join)? {
            return Ok(End::StdoutClosed);
        }
    }
    Ok(End::Done)
}

/// A line as a message: one part, or parts split on `delim`.
fn to_message(line: &[u8], delim: Option<&[u8]>) -> Message {
    let Some(delim) = delim else {
        return Message::from(line);
    };
    let mut msg = Message::new();
    let mut rest = line;
    while let Some(at) = rest.windows(delim.len()).position(|w| w == delim) {
        msg.push(Part::copy_from_slice(&rest[..at]));
        rest = &rest[at + delim.len()..];
    }
    msg.push(Part::copy_from_slice(rest));
    msg
}

/// Writes a message as one line and flushes. False when stdout is closed.
fn print(msg: &Message, join: &[u8]) -> Result<bool, Failure> {
    let mut out = io::stdout().lock();
    let written = (|| {
        for (i, part) in msg.parts().iter().enumerate() {
            if i > 0 {
                out.write_all(join)?;
            }
            out.write_all(part)?;
        }
        out.write_all(b"\n")?;
        out.flush()
    })();
    match written {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(Failure::Other(format!("writing stdout: {e}"))),
    }
}

fn recv_failure(e: Error, timeout: Option<Duration>, what: &str) -> Failure {
    match (e, timeout) {
        (Error::WouldBlock, Some(t)) => Failure::Timeout(format!("{what} within {t:?}")),
        (e, _) => Failure::Other(format!("receiving: {e}")),
    }
}

fn send_failure(e: Error, timeout: Option<Duration>) -> Failure {
    match (e, timeout) {
        (Error::WouldBlock, Some(t)) => {
            Failure::Timeout(format!("could not send within {t:?} (no peer ready)"))
        }
        (e, _) => Failure::Other(format!("sending: {e}")),
    }
}

/// Lines of stdin (without their `\n`), read on a thread of their own, `ahead` at most
/// waiting. The stream ends at end of input; a read error is its last item.
fn stdin_lines(ahead: usize) -> mpsc::Receiver<io::Result<Vec<u8>>> {
    let (mut tx, rx) = mpsc::channel(ahead);
    let reader = move || {
        let mut stdin = io::stdin().lock();
        loop {
            let mut line = Vec::new();
            let item = match stdin.read_until(b'\n', &mut line) {
                Ok(0) => return,
                Ok(_) => {
                    if line.last() == Some(&b'\n') {
                        line.pop();
                    }
                    Ok(line)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => Err(e),
            };
            let last = item.is_err();
            if block_on(poll_fn(|cx| tx.poll_ready(cx))).is_err() || tx.start_send(item).is_err() {
                return; // the socket side is gone
            }
            if last {
                return;
            }
        }
    };
    // Without the thread there is no input: the channel's sender is dropped and the stream
    // ends at once, which reads as empty input.
    let _ = thread::Builder::new()
        .name("omq-stdin".into())
        .spawn(reader);
    rx
}

/// Runs a future to completion on the current (plain) thread.
fn block_on<F: Future>(f: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        thread::park();
    }
}

/// Says on stderr which port a tcp endpoint (plain, `lz4+tcp` or `zstd+tcp`) or a udp one bound
/// to when the system chose it (`:0` or `:*`), so a script or test can connect to it without
/// guessing.
fn announce_bound(ep: &str, bound: &impl std::fmt::Display) {
    let ports = ep.contains("tcp://") || ep.starts_with("udp://");
    if ports && (ep.ends_with(":0") || ep.ends_with(":*")) {
        eprintln!("omq: bound to {bound}");
    }
}

/// Makes, binds or connects one proxy socket.
async fn proxy_socket<R: Runtime>(spec: &ProxySocket) -> Result<Socket<R>, Failure> {
    let socket = Socket::<R>::new(spec.socket_type, Options::default())
        .map_err(|e| Failure::Usage(e.to_string()))?;
    let ep = &spec.endpoint;
    if spec.bind {
        let bound = socket
            .bind(ep)
            .await
            .map_err(|e| Failure::Usage(format!("cannot bind to {ep}: {e}")))?;
        announce_bound(ep, &bound);
    } else {
        socket
            .connect(ep)
            .await
            .map_err(|e| Failure::Usage(format!("cannot connect to {ep}: {e}")))?;
    }
    Ok(socket)
}

/// Runs `omq proxy` until a socket fails.
pub(crate) async fn proxy<R: Runtime>(config: ProxyConfig) -> Result<(), Failure> {
    let frontend = proxy_socket::<R>(&config.frontend).await?;
    let backend = proxy_socket::<R>(&config.backend).await?;
    let capture = match &config.capture {
        Some(c) => Some(proxy_socket::<R>(c).await?),
        None => None,
    };
    omq_driver::proxy(&frontend, &backend, capture.as_ref())
        .await
        .map_err(|e| Failure::Other(format!("proxy stopped: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(m: &Message) -> Vec<&[u8]> {
        m.parts().iter().map(|p| p.as_slice()).collect()
    }

    #[test]
    fn lines_split_on_the_delimiter() {
        assert_eq!(parts(&to_message(b"a b", None)), [b"a b"]);
        assert_eq!(parts(&to_message(b"", None)), [b""]);
        let m = to_message(b"a::b::::c", Some(b"::"));
        assert_eq!(parts(&m), [&b"a"[..], b"b", b"", b"c"]);
        assert_eq!(parts(&to_message(b"::", Some(b"::"))), [b"", b""]);
    }
}

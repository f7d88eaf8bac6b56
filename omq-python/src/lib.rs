//! The native half of the `omq` Python package: a runtime thread per context and a socket
//! whose blocking calls release the GIL and wake up for Ctrl-C. The pyzmq-shaped API
//! (constants, sugar, Poller, asyncio) is Python, in `python/omq/`.

// pyo3 0.22's #[pymethods] expansion converts PyErr into PyErr, which newer clippy flags.
#![allow(clippy::useless_conversion)]

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::future::{select_all, FutureExt};
use futures_util::{SinkExt, StreamExt};
use omq_core::wire::metadata::Metadata;
use omq_tokio::{
    AuthReply, AuthRequest, Authenticator, Credentials, CurveKeyPair, CurvePublicKey,
    CurveSecretKey, Error, MechanismConfig, Message, MessageError, Options, Part, ReconnectStop,
    RouterNotify, SocketOption, SocketType,
};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyBytes, PyDict, PyList};
use tokio::runtime::Handle;

/// How long a blocking call waits at a time before looking at Python's signals (Ctrl-C).
const SLICE: Duration = Duration::from_millis(50);
/// How long a blocking receive keeps looking (GIL released) before it sleeps.
const SPIN: Duration = Duration::from_micros(50);

// libzmq's errno values (Linux), as pyzmq reports them.
const EAGAIN: i32 = 11;
const ENOENT: i32 = 2;
const EINVAL: i32 = 22;
const ENOTSUP: i32 = 95;
const EPROTONOSUPPORT: i32 = 93;
const ENOTSOCK: i32 = 88;
const EHOSTUNREACH: i32 = 113;
const EMSGSIZE: i32 = 90;
const ENODEV: i32 = 19;
const ENAMETOOLONG: i32 = 36;
const HAUSNUMERO: i32 = 156384712;
const EFSM: i32 = HAUSNUMERO + 51;
const ENOCOMPATPROTO: i32 = HAUSNUMERO + 52;
const ETERM: i32 = HAUSNUMERO + 53;

/// Python is exiting (set by `omq`'s atexit handler, on the thread that runs it).
static EXITING: AtomicBool = AtomicBool::new(false);
static EXIT_THREAD: Mutex<Option<std::thread::ThreadId>> = Mutex::new(None);
/// Threads that finished a GIL-free section and are taking the GIL back.
static RETURNING: AtomicUsize = AtomicUsize::new(0);

/// Runs `f` without the GIL, and takes the GIL back only while the interpreter is not
/// finalizing. A thread that asks for the GIL after finalization began is ended by the
/// interpreter with a forced unwind, which aborts the process when it meets Rust frames
/// ("FATAL: exception not rethrown"). So once `omq`'s atexit handler ran, a thread other than
/// the exiting one (a daemon thread: the others were joined) stays parked here instead, as a
/// daemon thread blocked in libzmq stays blocked; and the handler waits for the threads
/// already on their way back ([`RETURNING`]) before it lets finalization start. Every GIL
/// release of this module goes through here.
fn without_gil<T, F>(py: Python<'_>, f: F) -> T
where
    F: Send + FnOnce() -> T,
    T: Send,
{
    let r = py.allow_threads(|| {
        park_if_exiting();
        let r = f();
        // SeqCst on both sides (here and in `exiting`): either this thread sees EXITING and
        // parks, or the exiting thread sees it counted and waits for it.
        RETURNING.fetch_add(1, Ordering::SeqCst);
        if EXITING.load(Ordering::SeqCst) && !is_exit_thread() {
            RETURNING.fetch_sub(1, Ordering::SeqCst);
            park_forever();
        }
        r
    });
    RETURNING.fetch_sub(1, Ordering::SeqCst);
    r
}

fn is_exit_thread() -> bool {
    *lock(&EXIT_THREAD) == Some(std::thread::current().id())
}

fn park_forever() -> ! {
    loop {
        std::thread::park();
    }
}

/// Inside a GIL-free section: parks for good once Python is exiting (see [`without_gil`]).
fn park_if_exiting() {
    if EXITING.load(Ordering::SeqCst) && !is_exit_thread() {
        park_forever();
    }
}

/// Python is exiting (atexit): from now on no other thread takes the GIL back from omq
/// (see [`without_gil`]); returns once those on their way back have it, or after 2 s.
#[pyfunction]
fn exiting(py: Python<'_>) {
    *lock(&EXIT_THREAD) = Some(std::thread::current().id());
    EXITING.store(true, Ordering::SeqCst);
    py.allow_threads(|| {
        let until = Instant::now() + Duration::from_secs(2);
        while RETURNING.load(Ordering::SeqCst) > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

static MAKE_ERROR: GILOnceCell<PyObject> = GILOnceCell::new();

/// A `zmq.ZMQError` (or its subclass for the errno: `Again`, `ContextTerminated`).
fn zerr(errno: i32, msg: impl Into<String>) -> PyErr {
    let msg = msg.into();
    Python::with_gil(|py| {
        let make = MAKE_ERROR.get_or_try_init(py, || -> PyResult<PyObject> {
            Ok(py.import("omq.error")?.getattr("_make")?.unbind())
        });
        match make.and_then(|f| f.call1(py, (errno, msg))) {
            Ok(e) => PyErr::from_value(e.into_bound(py)),
            Err(e) => e,
        }
    })
}

fn errno_of(e: &Error) -> i32 {
    match e {
        Error::WouldBlock => EAGAIN,
        Error::InvalidState => EFSM,
        Error::NotSupported => ENOTSUP,
        Error::HostUnreachable => EHOSTUNREACH,
        Error::InvalidMessage(_) => EMSGSIZE,
        Error::Endpoint(omq_core::endpoint::EndpointError::UnsupportedTransport(_)) => {
            EPROTONOSUPPORT
        }
        Error::Endpoint(omq_core::endpoint::EndpointError::IpcPathTooLong { .. }) => ENAMETOOLONG,
        Error::Endpoint(_) | Error::Option(_) | Error::UnsupportedType(_) => EINVAL,
        Error::NotInUse(_) => ENOENT,
        Error::Closed => ENOTSOCK,
        Error::LingerExpired => EAGAIN,
        Error::Io(io) => io.raw_os_error().unwrap_or(match io.kind() {
            std::io::ErrorKind::AddrInUse => 98,
            std::io::ErrorKind::AddrNotAvailable => 99,
            std::io::ErrorKind::ConnectionRefused => 111,
            std::io::ErrorKind::NotFound => ENOENT,
            std::io::ErrorKind::PermissionDenied => 13,
            _ => EINVAL,
        }),
        _ => EINVAL,
    }
}

fn to_py(e: Error) -> PyErr {
    zerr(errno_of(&e), e.to_string())
}

/// libzmq's errno for a bind or connect that fails: ENOCOMPATPROTO for a transport the socket
/// type cannot use (udp on anything but RADIO/DISH), ENODEV for a bind to a name that does not
/// resolve (an OS error with no errno and no kind [`errno_of`] knows: the resolver's);
/// otherwise as [`to_py`].
fn endpoint_err(e: Error, binding: bool) -> PyErr {
    match &e {
        Error::NotSupported => zerr(ENOCOMPATPROTO, e.to_string()),
        Error::Io(io) if binding && io.raw_os_error().is_none() && errno_of(&e) == EINVAL => {
            zerr(ENODEV, e.to_string())
        }
        _ => to_py(e),
    }
}

/// Runs `make()`'s future on the runtime with the GIL released, a slice at a time, checking
/// for signals between slices. `None` when `timeout` passed first.
fn wait<T, F>(
    py: Python<'_>,
    handle: &Handle,
    timeout: Option<Duration>,
    make: impl FnMut() -> F,
) -> PyResult<Option<T>>
where
    F: Future<Output = T> + Send,
    T: Send,
{
    wait_or_term(py, handle, timeout, None, make)
}

/// [`wait`], raising ETERM once `term` is set (the context is terminating).
fn wait_or_term<T, F>(
    py: Python<'_>,
    handle: &Handle,
    timeout: Option<Duration>,
    term: Option<&AtomicBool>,
    mut make: impl FnMut() -> F,
) -> PyResult<Option<T>>
where
    F: Future<Output = T> + Send,
    T: Send,
{
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        let slice = match deadline {
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    return Ok(None);
                }
                (d - now).min(SLICE)
            }
            None => SLICE,
        };
        let fut = make();
        // Polled on this thread, parked between wake-ups: no timer of the runtime's, so a
        // wait neither asks the runtime thread to re-arm its timers nor meets a runtime that
        // shut down meanwhile (at exit), and its slice ends on time whatever the worker does.
        let r = without_gil(py, || {
            let _g = handle.enter();
            block_on_for(fut, slice)
        });
        if let Some(v) = r {
            return Ok(Some(v));
        }
        py.check_signals()?;
        if term.is_some_and(|t| t.load(Ordering::Relaxed)) {
            return Err(zerr(ETERM, "Context was terminated"));
        }
    }
}

fn ms_to_timeout(ms: i64) -> Option<Duration> {
    (ms >= 0).then(|| Duration::from_millis(ms as u64))
}

/// One runtime thread for a context: tokio's multi-thread scheduler with a single worker.
#[pyclass(module = "omq._omq", frozen)]
struct Runtime {
    rt: Mutex<Option<tokio::runtime::Runtime>>,
    handle: Handle,
    terminated: Arc<AtomicBool>,
    /// `term()` began: every operation of the context's sockets but close() raises ETERM.
    terminating: Arc<AtomicBool>,
    /// Closes still flushing in the background (LINGER not 0), which `term()` waits for.
    pending: Pending,
}

type Pending = Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>;

impl Drop for Runtime {
    fn drop(&mut self) {
        // Never block here: this may run with the GIL held while a runtime task waits for it.
        if let Some(rt) = lock(&self.rt).take() {
            rt.shutdown_background();
        }
    }
}

#[pymethods]
impl Runtime {
    #[new]
    #[pyo3(signature = (threads = 1))]
    fn new(threads: usize) -> PyResult<Self> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.clamp(1, 64))
            .thread_name("omq-io")
            .enable_all()
            .build()
            .map_err(|e| zerr(EINVAL, e.to_string()))?;
        let handle = rt.handle().clone();
        Ok(Runtime {
            rt: Mutex::new(Some(rt)),
            handle,
            terminated: Arc::new(AtomicBool::new(false)),
            terminating: Arc::new(AtomicBool::new(false)),
            pending: Pending::default(),
        })
    }

    /// Waits (GIL released, Ctrl-C honoured) until the sockets still flushing after close have
    /// finished, at most `timeout_ms` (-1: forever). True when none is left.
    #[pyo3(signature = (timeout_ms = -1))]
    fn wait_closes(&self, py: Python<'_>, timeout_ms: i64) -> PyResult<bool> {
        let handles = std::mem::take(&mut *lock(&self.pending));
        if handles.is_empty() || lock(&self.rt).is_none() {
            return Ok(true);
        }
        let handles = Arc::new(Mutex::new(handles));
        let done = wait(py, &self.handle, ms_to_timeout(timeout_ms), || {
            let hs = handles.clone();
            async move {
                // The handles stay in the list: a slice that ends drops only this future.
                while lock(&hs).iter().any(|h| !h.is_finished()) {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            }
        });
        if !matches!(done, Ok(Some(()))) {
            // Interrupted or timed out: what is still flushing stays for the next wait.
            let mut p = lock(&self.pending);
            p.extend(lock(&handles).drain(..).filter(|h| !h.is_finished()));
        }
        Ok(done?.is_some())
    }

    /// Starts terminating: blocked and later operations on the sockets raise ETERM.
    fn begin_term(&self) {
        self.terminating.store(true, Ordering::SeqCst);
    }

    /// Stops the runtime thread; sockets of this context raise ETERM from now on.
    fn shutdown(&self, py: Python<'_>) {
        self.terminating.store(true, Ordering::SeqCst);
        self.terminated.store(true, Ordering::SeqCst);
        let rt = lock(&self.rt).take();
        if let Some(rt) = rt {
            without_gil(py, || rt.shutdown_timeout(Duration::from_millis(500)));
        }
    }

    #[getter]
    fn closed(&self) -> bool {
        self.terminated.load(Ordering::SeqCst)
    }
}

/// Where a ZAP handler binds (ZAP, spec 27): a socket bound here answers the authentication
/// requests of every server socket (PLAIN, CURVE, NULL with a ZAP_DOMAIN).
const ZAP_ENDPOINT: &str = "inproc://zeromq.zap.01";
/// How many sockets are bound at [`ZAP_ENDPOINT`] (inproc names are per process in omq). With
/// none, every peer is let in, as libzmq does without a handler.
static ZAP_HANDLERS: AtomicUsize = AtomicUsize::new(0);
static ZAP_SEQUENCE: AtomicU64 = AtomicU64::new(1);
/// How long a handshake waits for the ZAP handler's answer before refusing the peer (500).
const ZAP_TIMEOUT: Duration = Duration::from_secs(10);

/// Every socket's authenticator: asks the ZAP handler bound at [`ZAP_ENDPOINT`], if any, with
/// libzmq's request and reads its reply, so that pyzmq's `zmq.auth` (or any handler written
/// against libzmq) decides who gets in. The driver asks outside the socket's lock; the wait
/// runs in `block_in_place` so the runtime's other work goes on meanwhile.
struct Zap {
    handle: Handle,
    /// The socket's ROUTING_ID, the request's "identity" frame.
    identity: Arc<Mutex<Bytes>>,
}

impl Authenticator for Zap {
    fn authenticate(&self, request: &AuthRequest) -> AuthReply {
        if ZAP_HANDLERS.load(Ordering::SeqCst) == 0 {
            return AuthReply::allow();
        }
        tokio::task::block_in_place(|| self.ask(request))
    }
}

/// The address ZAP reports: the peer's IP without its port.
fn zap_address(peer: &str) -> &str {
    match peer.rsplit_once(':') {
        Some((host, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => {
            host.trim_start_matches('[').trim_end_matches(']')
        }
        _ => peer,
    }
}

impl Zap {
    fn ask(&self, request: &AuthRequest) -> AuthReply {
        let seq = ZAP_SEQUENCE.fetch_add(1, Ordering::Relaxed).to_string();
        let mut frames: Vec<Part> = vec![
            Part::from(&b""[..]),
            Part::from(&b"1.0"[..]),
            Part::from(seq.clone()),
            Part::from(request.zap_domain.clone()),
            Part::from(zap_address(&request.peer_address).to_string()),
            Part::from(lock(&self.identity).clone()),
        ];
        match &request.credentials {
            Credentials::Plain { username, password } => {
                frames.push(Part::from(&b"PLAIN"[..]));
                frames.push(Part::from(username.clone()));
                frames.push(Part::from(password.as_slice()));
            }
            Credentials::Curve { client_key } => {
                frames.push(Part::from(&b"CURVE"[..]));
                frames.push(Part::from(&client_key.as_bytes()[..]));
            }
            _ => frames.push(Part::from(&b"NULL"[..])),
        }
        let _g = self.handle.enter();
        let exchange = async {
            let dealer = omq_tokio::Socket::new(SocketType::Dealer, Options::default())?;
            dealer.set_option(SocketOption::Linger(Some(Duration::ZERO)))?;
            dealer.connect(ZAP_ENDPOINT).await?;
            dealer.send(Message::multipart(frames)).await?;
            let reply = loop {
                let m = dealer.recv().await?;
                // [empty, version, request id, status code, status text, user id, metadata]
                let p = m.parts();
                if p.len() >= 6 && p[2].as_slice() == seq.as_bytes() {
                    break m;
                }
            };
            let _ = dealer.close().await;
            Ok::<Message, Error>(reply)
        };
        let reply = match block_on_for(exchange, ZAP_TIMEOUT) {
            Some(Ok(m)) => m,
            Some(Err(e)) => return AuthReply::with_status(500, format!("ZAP: {e}")),
            None => return AuthReply::with_status(500, "the ZAP handler did not answer"),
        };
        let p = reply.parts();
        let text = |i: usize| String::from_utf8_lossy(p[i].as_slice()).into_owned();
        let status = std::str::from_utf8(p[3].as_slice())
            .ok()
            .and_then(|s| s.parse::<u16>().ok())
            .unwrap_or(500);
        let mut out = AuthReply::with_status(status, text(4));
        if p.len() > 5 && !p[5].is_empty() {
            out = out.user_id(Bytes::copy_from_slice(p[5].as_slice()));
        }
        if let Some(meta) = p.get(6) {
            for (name, value) in zmtp_properties(meta.as_slice()) {
                out = out.property(&name, value);
            }
        }
        out
    }
}

/// ZMTP properties (a name length byte, the name, a 4-byte value length, the value, ...), as
/// a ZAP reply's metadata frame carries them; parsing stops at the first malformed one.
fn zmtp_properties(mut b: &[u8]) -> Vec<(String, Bytes)> {
    let mut out = Vec::new();
    while let Some((&n, rest)) = b.split_first() {
        let n = n as usize;
        if rest.len() < n + 4 {
            break;
        }
        let name = String::from_utf8_lossy(&rest[..n]).into_owned();
        let len = u32::from_be_bytes([rest[n], rest[n + 1], rest[n + 2], rest[n + 3]]) as usize;
        let rest = &rest[n + 4..];
        if rest.len() < len {
            break;
        }
        out.push((name, Bytes::copy_from_slice(&rest[..len])));
        b = &rest[len..];
    }
    out
}

/// Wakes the thread that waits in [`block_on_for`].
struct Unpark(std::thread::Thread);

impl std::task::Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs `fut` on this thread until it is done or `limit` passed, needing nothing of the
/// runtime's drivers (inproc moves messages inline), so it works wherever it is called.
fn block_on_for<F: Future>(fut: F, limit: Duration) -> Option<F::Output> {
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    let deadline = Instant::now() + limit;
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return Some(v);
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::park_timeout(deadline - now);
    }
}

/// The properties of a received message as a dict (names to str), for `Frame.get`.
fn properties<'py>(py: Python<'py>, meta: Option<&Metadata>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    if let Some(m) = meta {
        for (name, value) in m.iter() {
            d.set_item(name, String::from_utf8_lossy(value))?;
        }
    }
    Ok(d)
}

#[derive(Default)]
struct Rx {
    /// The rest of the message being read frame by frame.
    parts: VecDeque<Part>,
    /// Whole messages taken off the socket by a readiness wait, not yet read.
    stash: VecDeque<Message>,
    /// The properties of the message `parts` belongs to.
    meta: Option<Arc<Metadata>>,
}

/// What a socket has read but not handed out, shared with the runtime's readiness waits
/// (which stash a message they received, and say so, without the GIL).
#[derive(Default)]
struct RxShared {
    rx: Mutex<Rx>,
    /// `rx` holds frames or messages: set by whoever changes it, under its lock (see
    /// [`RxGuard`]), so a receive with nothing held looks at the socket without taking `rx`'s
    /// lock at all (it took it twice a message).
    held: AtomicBool,
    stashed: tokio::sync::Notify,
}

/// `RxShared::rx` locked; on unlock, `held` says again whether it holds anything.
struct RxGuard<'a> {
    rx: std::sync::MutexGuard<'a, Rx>,
    held: &'a AtomicBool,
}

impl std::ops::Deref for RxGuard<'_> {
    type Target = Rx;
    fn deref(&self) -> &Rx {
        &self.rx
    }
}

impl std::ops::DerefMut for RxGuard<'_> {
    fn deref_mut(&mut self) -> &mut Rx {
        &mut self.rx
    }
}

impl Drop for RxGuard<'_> {
    fn drop(&mut self) {
        let held = !self.rx.parts.is_empty() || !self.rx.stash.is_empty();
        if held != self.held.load(Ordering::Relaxed) {
            self.held.store(held, Ordering::Release);
        }
    }
}

impl RxShared {
    /// Locks what was read and not handed out.
    fn lock(&self) -> RxGuard<'_> {
        RxGuard {
            rx: lock(&self.rx),
            held: &self.held,
        }
    }

    /// Whether frames or messages may be held: false means none are, as of the last change
    /// (a receive then goes to the socket, as it would after finding `rx` empty).
    fn maybe_held(&self) -> bool {
        self.held.load(Ordering::Acquire)
    }

    fn has_some(&self) -> bool {
        let rx = self.lock();
        !rx.parts.is_empty() || !rx.stash.is_empty()
    }

    /// Waits until a message is stashed or the socket has one; takes it into the stash.
    async fn readable(&self, sock: &omq_tokio::Socket) {
        loop {
            let stashed = self.stashed.notified();
            futures_util::pin_mut!(stashed);
            stashed.as_mut().enable();
            if self.has_some() {
                return;
            }
            futures_util::select_biased! {
                () = stashed.fuse() => {}
                m = sock.recv().fuse() => {
                    if let Ok(m) = m {
                        self.lock().stash.push_back(m);
                        self.stashed.notify_waiters();
                    }
                    return;
                }
            }
        }
    }
}

#[derive(Default)]
struct Security {
    curve_server: bool,
    curve_public: Option<[u8; 32]>,
    curve_secret: Option<[u8; 32]>,
    curve_serverkey: Option<[u8; 32]>,
    plain_server: bool,
    plain_user: Option<Vec<u8>>,
    plain_pass: Option<Vec<u8>>,
}

/// A socket. `omq.Socket` (Python) subclasses it for pyzmq's API.
#[pyclass(module = "omq._omq", subclass, frozen)]
struct RawSocket {
    /// The socket; kept after close (which closes it), so the hot path takes no lock.
    sock: omq_tokio::Socket,
    closed: AtomicBool,
    handle: Handle,
    terminated: Arc<AtomicBool>,
    terminating: Arc<AtomicBool>,
    socket_type: i32,
    rx: Arc<RxShared>,
    /// Frames sent with SNDMORE, waiting for the message's last frame.
    tx: Mutex<Vec<Part>>,
    /// `tx` holds frames (set under its lock), so a one-frame send skips the lock.
    tx_held: AtomicBool,
    rcvtimeo: AtomicI64,
    sndtimeo: AtomicI64,
    linger: AtomicI64,
    security: Mutex<Security>,
    monitor: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    pending: Pending,
    /// REQ: a request went out, its reply is not read yet. REP: a request was read, its reply
    /// not sent yet. Neither socket can send in the other state (POLLOUT says so).
    turn: AtomicBool,
    /// ROUTING_ID, which the ZAP requests of this socket carry.
    identity: Arc<Mutex<Bytes>>,
    /// Bound at the ZAP endpoint (counted in [`ZAP_HANDLERS`]).
    zap_handler: AtomicBool,
    /// ZMQ_FD, once asked for.
    fd: Mutex<Option<FdSignal>>,
    fd_on: AtomicBool,
}

/// ZMQ_FD: a descriptor that becomes readable when the socket's events may have changed, for
/// select/epoll/asyncio loops, as libzmq's: edge-like, so after it fires the application reads
/// EVENTS (which clears it) and receives or sends until EVENTS says no more. It is one end of
/// a Unix socket pair; a one-shot wait on the runtime writes a byte to the other end when an
/// event that was not ready (at the last EVENTS, or at an EAGAIN) becomes ready.
struct FdSignal {
    read: std::os::unix::net::UnixStream,
    write: Arc<std::os::unix::net::UnixStream>,
    watch: Option<tokio::task::JoinHandle<()>>,
}

fn poke(w: &std::os::unix::net::UnixStream) {
    use std::io::Write;
    // Full (WouldBlock): it is readable already, which is all a poke is for.
    let _ = (&*w).write(&[1]);
}

impl RawSocket {
    fn zap_unbound(&self) {
        if self.zap_handler.swap(false, Ordering::SeqCst) {
            ZAP_HANDLERS.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Drop for RawSocket {
    fn drop(&mut self) {
        // A socket collected without close(): omq's own drop flushes it in the background
        // (at most LINGER, capped at 5 s), not waited for by term().
        if let Some(m) = lock(&self.monitor).take() {
            let _ = m.send(());
        }
        self.zap_unbound();
    }
}

fn socket_type(t: i32) -> Option<SocketType> {
    Some(match t {
        0 => SocketType::Pair,
        1 => SocketType::Pub,
        2 => SocketType::Sub,
        3 => SocketType::Req,
        4 => SocketType::Rep,
        5 => SocketType::Dealer,
        6 => SocketType::Router,
        7 => SocketType::Pull,
        8 => SocketType::Push,
        9 => SocketType::XPub,
        10 => SocketType::XSub,
        11 => SocketType::Stream,
        12 => SocketType::Server,
        13 => SocketType::Client,
        14 => SocketType::Radio,
        15 => SocketType::Dish,
        16 => SocketType::Gather,
        17 => SocketType::Scatter,
        19 => SocketType::Peer,
        20 => SocketType::Channel,
        _ => return None,
    })
}

/// From this size on, a `bytes` is sent without copying it: the message holds the bytes object,
/// and its reference is dropped through pyo3's pool when the message is gone. 1 KiB tcp
/// PUSH/PULL sending one bytes object over and over (as bench.py does): 0.29 M/s against
/// 0.22 M/s when copied (4 KiB was the threshold before); with a new bytes object per message
/// the two were level (0.19-0.26 M/s either way). Below 512 B copying costs less than the
/// reference's round trip.
const ZERO_COPY_MIN: usize = 512;

/// A message part from bytes or anything with the buffer protocol.
fn part_of(obj: &Bound<'_, PyAny>) -> PyResult<Part> {
    if let Ok(b) = obj.downcast::<PyBytes>() {
        return Ok(part_of_bytes(b));
    }
    // Anything else with the buffer protocol (bytearray, memoryview, numpy...): bytes(obj).
    // Not str or int: bytes() would encode or zero-fill them.
    if obj.is_instance_of::<pyo3::types::PyString>() || obj.is_instance_of::<pyo3::types::PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "expected bytes or a buffer, not {}",
            obj.get_type().name()?
        )));
    }
    let b = obj.py().get_type::<PyBytes>().call1((obj,)).map_err(|_| {
        PyTypeError::new_err("expected bytes or an object with the buffer protocol")
    })?;
    let b = b.downcast::<PyBytes>()?;
    Ok(Part::from(b.as_bytes()))
}

/// A frame of a `bytes` object: copied when small, else held without a copy (the message
/// keeps the immutable bytes object).
fn part_of_bytes(b: &Bound<'_, PyBytes>) -> Part {
    if b.as_bytes().len() < ZERO_COPY_MIN {
        return Part::from(b.as_bytes());
    }
    let backed = pyo3::pybacked::PyBackedBytes::from(b.clone());
    Part::from(Bytes::from_owner(backed))
}

fn key_of(v: &Bound<'_, PyAny>) -> PyResult<[u8; 32]> {
    let b: Vec<u8> = if let Ok(s) = v.extract::<String>() {
        s.into_bytes()
    } else {
        part_of(v)?.as_slice().to_vec()
    };
    match b.len() {
        32 => Ok(b.try_into().expect("32 bytes")),
        40 => {
            let text = std::str::from_utf8(&b).map_err(|_| zerr(EINVAL, "bad Z85 key"))?;
            omq_core::z85::decode_key(text).map_err(|e| zerr(EINVAL, e.to_string()))
        }
        n => Err(zerr(
            EINVAL,
            format!("a CURVE key is 32 bytes or 40 in Z85, not {n}"),
        )),
    }
}

fn int_of(v: &Bound<'_, PyAny>) -> PyResult<i64> {
    v.extract::<i64>()
        .map_err(|_| PyTypeError::new_err("this option takes an int"))
}

/// An int option's value, refused with EINVAL outside `lo..=hi`: libzmq's range for it, so a
/// value libzmq refuses (SNDHWM -1, LINGER -2, IMMEDIATE 2) is not taken as something else.
fn int_in(v: &Bound<'_, PyAny>, lo: i64, hi: i64) -> PyResult<i64> {
    let n = int_of(v)?;
    if (lo..=hi).contains(&n) {
        Ok(n)
    } else {
        Err(zerr(EINVAL, "Invalid argument"))
    }
}

/// The largest value of a C `int` option.
const INT_MAX: i64 = i32::MAX as i64;

/// libzmq's on/off options that take any value from 0 (on when not 0).
fn flag_of(v: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(int_in(v, 0, INT_MAX)? != 0)
}

/// libzmq's on/off options that take 0 or 1 only.
fn strict_flag_of(v: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(int_in(v, 0, 1)? != 0)
}

fn bytes_of(v: &Bound<'_, PyAny>) -> PyResult<Bytes> {
    if v.is_instance_of::<pyo3::types::PyString>() {
        return Err(PyTypeError::new_err(
            "unicode not allowed, use setsockopt_string",
        ));
    }
    Ok(Bytes::copy_from_slice(part_of(v)?.as_slice()))
}

fn group_of(v: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    match v.extract::<String>() {
        Ok(s) => Ok(s.into_bytes()),
        Err(_) => Ok(bytes_of(v)?.to_vec()),
    }
}

fn opt_bytes(v: &Bound<'_, PyAny>) -> PyResult<Option<Bytes>> {
    let b = bytes_of(v)?;
    Ok((!b.is_empty()).then_some(b))
}

fn ms(v: i64) -> Duration {
    Duration::from_millis(v.max(0) as u64)
}

fn ms_opt(v: i64) -> Option<Duration> {
    (v > 0).then(|| ms(v))
}

impl RawSocket {
    fn sock(&self) -> PyResult<&omq_tokio::Socket> {
        if self.closed.load(Ordering::Acquire) {
            return Err(zerr(ENOTSOCK, "Socket operation on non-socket"));
        }
        if self.terminating.load(Ordering::Relaxed) {
            return Err(zerr(ETERM, "Context was terminated"));
        }
        Ok(&self.sock)
    }

    /// A whole message: the stash first, then the socket, waiting unless `nonblock`.
    fn recv_msg(&self, py: Python<'_>, nonblock: bool) -> PyResult<Message> {
        let sock = self.sock()?;
        let timeout = ms_to_timeout(self.rcvtimeo.load(Ordering::Relaxed));
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            if self.rx.maybe_held() {
                if let Some(m) = self.rx.lock().stash.pop_front() {
                    self.received();
                    return Ok(m);
                }
            }
            match sock.try_recv() {
                Ok(m) => {
                    self.received();
                    return Ok(m);
                }
                Err(Error::WouldBlock) if !nonblock => {}
                Err(e) => {
                    if matches!(e, Error::WouldBlock) {
                        self.fd_again();
                    }
                    return Err(to_py(e));
                }
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) {
                self.fd_again();
                return Err(zerr(EAGAIN, "Resource temporarily unavailable"));
            }
            // A reply is often a few microseconds away: look again for a moment, without
            // the GIL, before sleeping (a wake-up costs more than that).
            let spun = without_gil(py, || {
                let until = Instant::now() + SPIN;
                loop {
                    std::thread::yield_now();
                    match sock.try_recv() {
                        Err(Error::WouldBlock) if Instant::now() < until => {}
                        r => return r.ok(),
                    }
                }
            });
            if let Some(m) = spun {
                self.received();
                return Ok(m);
            }
            // Wait until a message is there (in the stash, where a concurrent wait may also
            // have put one); another thread may take it first, so look again.
            let r = wait_or_term(py, &self.handle, left, Some(&self.terminating), || {
                let rx = self.rx.clone();
                let s = sock.clone();
                async move { rx.readable(&s).await }
            })?;
            if r.is_none() {
                self.fd_again();
                return Err(zerr(EAGAIN, "Resource temporarily unavailable"));
            }
            self.sock()?;
        }
    }

    fn send_msg(&self, py: Python<'_>, msg: Message, nonblock: bool) -> PyResult<()> {
        let sock = self.sock()?;
        let msg = match sock.try_send(msg) {
            Ok(()) => {
                self.sent();
                return Ok(());
            }
            Err(e) if matches!(e.error, Error::WouldBlock) && !nonblock => e.message,
            // libzmq's ROUTER and STREAM take a lone routing id (no body after it) and drop it
            // without an error, ROUTER_MANDATORY or not; pyzmq code relies on that (a broker
            // passing a malformed reply on must not raise). omq's Rust API says it is invalid.
            Err(e) if matches!(e.error, Error::InvalidMessage(MessageError::NoRoutingId)) => {
                self.sent();
                return Ok(());
            }
            Err(e) => {
                if matches!(e.error, Error::WouldBlock) {
                    self.fd_again();
                }
                return Err(to_py(e.error));
            }
        };
        let timeout = ms_to_timeout(self.sndtimeo.load(Ordering::Relaxed));
        let r = wait_or_term(py, &self.handle, timeout, Some(&self.terminating), || {
            let s = sock.clone();
            let m = msg.clone();
            async move { s.send(m).await }
        })?;
        match r {
            Some(Ok(())) => {
                self.sent();
                Ok(())
            }
            Some(Err(e)) => Err(to_py(e)),
            None => {
                self.fd_again();
                Err(zerr(EAGAIN, "Resource temporarily unavailable"))
            }
        }
    }

    fn apply_security(&self, sock: &omq_tokio::Socket, sec: &Security) -> PyResult<()> {
        let mech = if sec.curve_server {
            match sec.curve_secret {
                Some(s) => MechanismConfig::curve_server(CurveKeyPair::from_secret(
                    CurveSecretKey::from_bytes(s),
                )),
                None => return Ok(()),
            }
        } else if let (Some(server), Some(secret)) = (sec.curve_serverkey, sec.curve_secret) {
            let pair = CurveKeyPair::from_secret(CurveSecretKey::from_bytes(secret));
            MechanismConfig::curve_client(CurvePublicKey::from(server), pair)
        } else if sec.plain_server {
            MechanismConfig::plain_server()
        } else if let (Some(u), Some(p)) = (&sec.plain_user, &sec.plain_pass) {
            MechanismConfig::plain_client(u, p).map_err(|e| zerr(EINVAL, e.to_string()))?
        } else {
            return Ok(());
        };
        sock.set_option(SocketOption::Mechanism(mech))
            .map_err(to_py)
    }

    /// The frames sent with SNDMORE so far (taken: the message is being completed).
    fn take_tx(&self) -> Vec<Part> {
        if !self.tx_held.load(Ordering::Acquire) {
            return Vec::new();
        }
        let mut tx = lock(&self.tx);
        self.tx_held.store(false, Ordering::Release);
        std::mem::take(&mut *tx)
    }

    /// Keeps frames sent with SNDMORE for the message's last frame.
    fn hold_tx(&self, parts: impl IntoIterator<Item = Part>) {
        let mut tx = lock(&self.tx);
        tx.extend(parts);
        self.tx_held.store(!tx.is_empty(), Ordering::Release);
    }

    fn readable(&self, sock: &omq_tokio::Socket) -> bool {
        let mut rx = self.rx.lock();
        if !rx.parts.is_empty() || !rx.stash.is_empty() {
            return true;
        }
        match sock.try_recv() {
            Ok(m) => {
                rx.stash.push_back(m);
                true
            }
            Err(_) => false,
        }
    }
}

static FRAME: GILOnceCell<PyObject> = GILOnceCell::new();
static TRACKER: GILOnceCell<PyObject> = GILOnceCell::new();

fn finished_tracker(py: Python<'_>) -> PyResult<PyObject> {
    TRACKER
        .get_or_try_init(py, || -> PyResult<PyObject> {
            Ok(py
                .import("omq.sugar")?
                .getattr("_FINISHED_TRACKER")?
                .unbind())
        })
        .map(|t| t.clone_ref(py))
}

impl RawSocket {
    fn send_frame(&self, py: Python<'_>, part: Part, flags: i32) -> PyResult<()> {
        self.sock()?;
        if flags & 2 != 0 {
            self.hold_tx([part]);
            return Ok(());
        }
        let earlier = self.take_tx();
        if earlier.is_empty() {
            return self.send_msg(py, Message::multipart([part]), flags & 1 != 0);
        }
        let n = earlier.len();
        let msg = Message::multipart(earlier.into_iter().chain(std::iter::once(part)));
        match self.send_msg(py, msg.clone(), flags & 1 != 0) {
            Ok(()) => Ok(()),
            Err(e) => {
                // A message the socket refuses (EFSM, ENOTSUP, EHOSTUNREACH...) is refused
                // whole: libzmq refuses its first frame, so nothing of it stays to be sent
                // ahead of the next message. When it only could not go yet (EAGAIN, or an
                // interrupt), the frames before this one stay pending, as libzmq's do once
                // it took the first: sending the last frame again sends the message.
                let refused = e
                    .value(py)
                    .getattr("errno")
                    .and_then(|v| v.extract::<i32>())
                    .is_ok_and(|errno| errno != EAGAIN);
                let mut tx = lock(&self.tx);
                if tx.is_empty() && !refused {
                    tx.extend(msg.into_parts().take(n));
                    self.tx_held.store(true, Ordering::Release);
                }
                Err(e)
            }
        }
    }

    /// One frame, and with `want_meta` the properties of its message.
    fn recv_frame<'py>(
        &self,
        py: Python<'py>,
        flags: i32,
        want_meta: bool,
    ) -> PyResult<(Bound<'py, PyBytes>, Option<Extra>)> {
        // One look under the lock: the rest of a message being read, else a stashed message
        // (what `recv_msg` would look at first; it checks the socket is open, so do we).
        let stashed = if !self.rx.maybe_held() {
            // Nothing held: the socket itself, once, before the waiting path.
            // (An error other than "nothing there" is the waiting path's to report.)
            self.sock()?.try_recv().ok()
        } else {
            let mut rx = self.rx.lock();
            if let Some(p) = rx.parts.pop_front() {
                let extra = want_meta.then(|| Extra {
                    meta: rx.meta.clone(),
                    routing_id: None,
                    group: None,
                });
                return Ok((PyBytes::new(py, p.as_slice()), extra));
            }
            self.sock()?;
            rx.stash.pop_front()
        };
        let msg = match stashed {
            Some(m) => {
                self.received();
                m
            }
            None => self.recv_msg(py, flags & 1 != 0)?,
        };
        let several = msg.len() > 1;
        if !several && !want_meta {
            // The common case: one frame, no properties wanted; the metadata's count (shared
            // with the runtime thread that set it) is left alone.
            let b = PyBytes::new(py, msg.parts().first().map_or(&[][..], |p| p.as_slice()));
            return Ok((b, None));
        }
        let meta = msg.shared_metadata().cloned();
        let extra = want_meta.then(|| Extra {
            meta: meta.clone(),
            routing_id: msg.routing_id(),
            group: msg.group().map(Bytes::copy_from_slice),
        });
        let mut parts = msg.into_parts();
        let first = parts.next();
        if several {
            let mut rx = self.rx.lock();
            rx.parts.extend(parts);
            rx.meta = meta;
        }
        let b = PyBytes::new(py, first.as_ref().map_or(&[][..], |p| p.as_slice()));
        Ok((b, extra))
    }
}

/// What `recv(copy=False)` puts on its Frame besides the bytes: the message's properties and,
/// for the draft types, its routing id (SERVER, PEER) and group (DISH).
struct Extra {
    meta: Option<Arc<Metadata>>,
    routing_id: Option<u32>,
    group: Option<Bytes>,
}

impl RawSocket {
    /// Whether the REQ/REP state allows a send now.
    fn may_send(&self) -> bool {
        match self.socket_type {
            3 => !self.turn.load(Ordering::Relaxed),
            4 => self.turn.load(Ordering::Relaxed),
            _ => true,
        }
    }

    fn writable(&self, sock: &omq_tokio::Socket) -> bool {
        self.may_send() && writable(sock)
    }

    fn sent(&self) {
        if self.socket_type == 3 {
            self.turn.store(true, Ordering::Relaxed);
        } else if self.socket_type == 4 {
            self.turn.store(false, Ordering::Relaxed);
        }
    }

    fn received(&self) {
        if self.socket_type == 3 {
            self.turn.store(false, Ordering::Relaxed);
        } else if self.socket_type == 4 {
            self.turn.store(true, Ordering::Relaxed);
        }
    }
}

fn writable(sock: &omq_tokio::Socket) -> bool {
    let mut sink = sock.sink();
    let waker = futures_util::task::noop_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    matches!(sink.poll_ready_unpin(&mut cx), Poll::Ready(Ok(())))
}

#[pymethods]
impl RawSocket {
    #[new]
    fn new(runtime: &Runtime, socket_type_: i32) -> PyResult<Self> {
        if runtime.terminating.load(Ordering::SeqCst) {
            return Err(zerr(ETERM, "Context was terminated"));
        }
        let t = socket_type(socket_type_)
            .ok_or_else(|| zerr(EINVAL, format!("unknown socket type {socket_type_}")))?;
        let identity = Arc::new(Mutex::new(Bytes::new()));
        let zap = Zap {
            handle: runtime.handle.clone(),
            identity: identity.clone(),
        };
        let sock = {
            let _g = runtime.handle.enter();
            omq_tokio::Socket::new(t, Options::default().authenticator(zap)).map_err(to_py)?
        };
        // The type's own default (zero for SUB, XSUB and DISH), in ms; -1 forever.
        let linger = sock
            .options()
            .get_linger()
            .map_or(-1, |d| d.as_millis() as i64);
        Ok(RawSocket {
            sock,
            closed: AtomicBool::new(false),
            handle: runtime.handle.clone(),
            terminated: runtime.terminated.clone(),
            terminating: runtime.terminating.clone(),
            socket_type: socket_type_,
            rx: Arc::default(),
            tx: Mutex::default(),
            tx_held: AtomicBool::new(false),
            rcvtimeo: AtomicI64::new(-1),
            sndtimeo: AtomicI64::new(-1),
            linger: AtomicI64::new(linger),
            security: Mutex::default(),
            monitor: Mutex::default(),
            pending: runtime.pending.clone(),
            turn: AtomicBool::new(false),
            identity,
            zap_handler: AtomicBool::new(false),
            fd: Mutex::default(),
            fd_on: AtomicBool::new(false),
        })
    }

    #[getter]
    fn closed(&self) -> bool {
        self.terminated.load(Ordering::Relaxed) || self.closed.load(Ordering::Acquire)
    }

    #[getter]
    fn socket_type(&self) -> i32 {
        self.socket_type
    }

    /// Binds; returns the endpoint as bound (the real port for `:0` / `:*`).
    fn bind(&self, py: Python<'_>, endpoint: &str) -> PyResult<String> {
        let sock = self.sock()?;
        let ep = endpoint.replace(":*", ":0");
        let r = wait(py, &self.handle, None, || {
            let s = sock.clone();
            let ep = ep.clone();
            async move { s.bind(ep).await }
        })?;
        match r {
            Some(Ok(e)) => {
                if endpoint == ZAP_ENDPOINT && !self.zap_handler.swap(true, Ordering::SeqCst) {
                    ZAP_HANDLERS.fetch_add(1, Ordering::SeqCst);
                }
                Ok(e.to_string())
            }
            Some(Err(e)) => Err(endpoint_err(e, true)),
            None => Err(zerr(EAGAIN, "bind timed out")),
        }
    }

    fn connect(&self, py: Python<'_>, endpoint: &str) -> PyResult<()> {
        let sock = self.sock()?;
        let ep = endpoint.to_string();
        let _g = self.handle.enter();
        without_gil(py, || self.handle.block_on(sock.connect(ep)))
            .map_err(|e| endpoint_err(e, false))
    }

    fn unbind(&self, py: Python<'_>, endpoint: &str) -> PyResult<()> {
        let sock = self.sock()?;
        let ep = endpoint.to_string();
        let r = wait(py, &self.handle, None, || {
            let s = sock.clone();
            let ep = ep.clone();
            async move { s.unbind(ep).await }
        })?;
        if endpoint == ZAP_ENDPOINT {
            self.zap_unbound();
        }
        r.unwrap_or(Ok(())).map_err(to_py)
    }

    fn disconnect(&self, py: Python<'_>, endpoint: &str) -> PyResult<()> {
        let sock = self.sock()?;
        let ep = endpoint.to_string();
        let _g = self.handle.enter();
        without_gil(py, || self.handle.block_on(sock.disconnect(ep))).map_err(to_py)
    }

    /// Sends one frame; SNDMORE (2) holds it until the last frame. pyzmq's signature: `copy`
    /// is moot (omq always copies), `track` returns a tracker that is done.
    #[pyo3(signature = (data, flags = 0, copy = true, track = false, routing_id = None, group = None))]
    #[allow(unused_variables, clippy::too_many_arguments)]
    fn send(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        flags: i32,
        copy: bool,
        track: bool,
        routing_id: Option<&Bound<'_, PyAny>>,
        group: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyObject> {
        // The common case first: a `bytes` object and no draft-type routing.
        if routing_id.is_none() && group.is_none() {
            if let Ok(b) = data.downcast_exact::<PyBytes>() {
                self.send_frame(py, part_of_bytes(b), flags)?;
                return if track {
                    finished_tracker(py)
                } else {
                    Ok(py.None())
                };
            }
        }
        if data.is_instance_of::<pyo3::types::PyString>() {
            return Err(PyTypeError::new_err(
                "str objects cannot be sent: use send_string",
            ));
        }
        // Draft types: the peer (SERVER, PEER) or group (RADIO) of a one-frame message, from
        // the arguments or from a Frame's own attributes, as pyzmq.
        let attr = |name: &str| -> PyResult<Option<Bound<'_, PyAny>>> {
            if data.is_instance_of::<PyBytes>() {
                return Ok(None);
            }
            match data.getattr(name) {
                Ok(v) if !v.is_none() => Ok(Some(v)),
                _ => Ok(None),
            }
        };
        let routing_id = match routing_id {
            Some(r) => Some(r.clone()),
            None => attr("routing_id")?,
        };
        let group = match group {
            Some(g) => Some(g.clone()),
            None => attr("group")?,
        };
        if routing_id.is_some() || group.is_some() {
            let mut msg = Message::multipart(
                self.take_tx()
                    .into_iter()
                    .chain(std::iter::once(part_of(data)?)),
            );
            if let Some(r) = routing_id {
                let id: u32 = r
                    .extract()
                    .map_err(|_| PyTypeError::new_err("routing_id is an int"))?;
                msg.set_routing_id(id);
            }
            if let Some(g) = group {
                msg.set_group(group_of(&g)?);
            }
            self.send_msg(py, msg, flags & 1 != 0)?;
        } else {
            self.send_frame(py, part_of(data)?, flags)?;
        }
        if track {
            return finished_tracker(py);
        }
        Ok(py.None())
    }

    /// Sends a whole message (frames before it with SNDMORE come first).
    #[pyo3(signature = (parts, flags = 0))]
    fn send_multipart(&self, py: Python<'_>, parts: &Bound<'_, PyAny>, flags: i32) -> PyResult<()> {
        let mut msg = Message::new();
        for p in self.take_tx() {
            msg.push(p);
        }
        for item in parts.try_iter()? {
            msg.push(part_of(&item?)?);
        }
        if flags & 2 != 0 {
            self.hold_tx(msg.into_parts());
            return Ok(());
        }
        self.send_msg(py, msg, flags & 1 != 0)
    }

    /// Receives one frame (NOBLOCK = 1): bytes, or a `Frame` with `copy=False`.
    #[pyo3(signature = (flags = 0, copy = true, track = false))]
    #[allow(unused_variables)]
    fn recv(&self, py: Python<'_>, flags: i32, copy: bool, track: bool) -> PyResult<PyObject> {
        let (b, extra) = self.recv_frame(py, flags, !copy)?;
        if copy {
            return Ok(b.into_any().unbind());
        }
        let frame = FRAME.get_or_try_init(py, || -> PyResult<PyObject> {
            Ok(py.import("omq.sugar")?.getattr("Frame")?.unbind())
        })?;
        let f = frame.call1(py, (b,))?;
        f.setattr(py, "more", self.rcvmore())?;
        if let Some(x) = extra {
            f.setattr(py, "_properties", properties(py, x.meta.as_deref())?)?;
            if let Some(id) = x.routing_id {
                f.setattr(py, "routing_id", id)?;
            }
            if let Some(g) = x.group {
                f.setattr(py, "group", String::from_utf8_lossy(&g))?;
            }
        }
        Ok(f)
    }

    /// `recv_multipart`, with the properties of the message (for `copy=False`'s frames).
    #[pyo3(signature = (flags = 0))]
    fn recv_multipart_props<'py>(
        &self,
        py: Python<'py>,
        flags: i32,
    ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyDict>)> {
        let (rest, meta) = {
            let mut rx = self.rx.lock();
            (rx.parts.drain(..).collect::<Vec<Part>>(), rx.meta.clone())
        };
        if !rest.is_empty() {
            let list = PyList::new(py, rest.iter().map(|p| PyBytes::new(py, p.as_slice())))?;
            return Ok((list, properties(py, meta.as_deref())?));
        }
        let msg = self.recv_msg(py, flags & 1 != 0)?;
        let list = PyList::new(
            py,
            msg.parts().iter().map(|p| PyBytes::new(py, p.as_slice())),
        )?;
        Ok((list, properties(py, msg.metadata())?))
    }

    /// Receives the rest of a message (all of it when no frame of it was read yet).
    #[pyo3(signature = (flags = 0))]
    fn recv_multipart<'py>(&self, py: Python<'py>, flags: i32) -> PyResult<Bound<'py, PyList>> {
        let rest: Vec<Part> = self.rx.lock().parts.drain(..).collect();
        if !rest.is_empty() {
            return PyList::new(py, rest.iter().map(|p| PyBytes::new(py, p.as_slice())));
        }
        let msg = self.recv_msg(py, flags & 1 != 0)?;
        PyList::new(
            py,
            msg.parts().iter().map(|p| PyBytes::new(py, p.as_slice())),
        )
    }

    #[getter]
    fn rcvmore(&self) -> bool {
        self.rx.maybe_held() && !self.rx.lock().parts.is_empty()
    }

    /// DISH: joins a group (str or bytes).
    fn join(&self, group: &Bound<'_, PyAny>) -> PyResult<()> {
        let g = group_of(group)?;
        self.sock()?.join(g).map_err(to_py)
    }

    /// DISH: leaves a group.
    fn leave(&self, group: &Bound<'_, PyAny>) -> PyResult<()> {
        let g = group_of(group)?;
        self.sock()?.leave(g).map_err(to_py)
    }

    fn subscribe(&self, topic: &Bound<'_, PyAny>) -> PyResult<()> {
        let t = bytes_of(topic)?;
        self.sock()?.subscribe(&t).map_err(to_py)
    }

    fn unsubscribe(&self, topic: &Bound<'_, PyAny>) -> PyResult<()> {
        let t = bytes_of(topic)?;
        self.sock()?.unsubscribe(&t).map_err(to_py)
    }

    /// Sets an option by libzmq's number. Raises EINVAL for one omq does not have.
    #[pyo3(name = "_set")]
    fn set_opt(&self, opt: i32, value: &Bound<'_, PyAny>) -> PyResult<()> {
        use SocketOption as O;
        let sock = self.sock()?;
        let o = match opt {
            6 => return self.subscribe(value),
            7 => return self.unsubscribe(value),
            27 => {
                self.rcvtimeo
                    .store(int_in(value, -1, INT_MAX)?, Ordering::Relaxed);
                return Ok(());
            }
            28 => {
                self.sndtimeo
                    .store(int_in(value, -1, INT_MAX)?, Ordering::Relaxed);
                return Ok(());
            }
            1 => {
                let v = int_in(value, 0, INT_MAX)? as usize;
                sock.set_option(O::SndHwm(v)).map_err(to_py)?;
                O::RcvHwm(v)
            }
            23 => O::SndHwm(int_in(value, 0, INT_MAX)? as usize),
            24 => O::RcvHwm(int_in(value, 0, INT_MAX)? as usize),
            17 => {
                let v = int_in(value, -1, INT_MAX)?;
                self.linger.store(v, Ordering::Relaxed);
                O::Linger(ms_to_timeout(v))
            }
            5 => {
                let id = bytes_of(value)?;
                *lock(&self.identity) = id.clone();
                O::RoutingId(id)
            }
            61 => O::ConnectRoutingId(bytes_of(value)?),
            33 => O::RouterMandatory(flag_of(value)?),
            56 => O::RouterHandover(flag_of(value)?),
            51 => O::ProbeRouter(flag_of(value)?),
            97 => O::RouterNotify(
                RouterNotify::from_bits(int_of(value)? as i32)
                    .ok_or_else(|| zerr(EINVAL, "bad ROUTER_NOTIFY"))?,
            ),
            73 => O::StreamNotify(strict_flag_of(value)?),
            52 => O::ReqCorrelate(flag_of(value)?),
            53 => O::ReqRelaxed(flag_of(value)?),
            54 => O::Conflate(strict_flag_of(value)?),
            22 => {
                let v = int_of(value)?;
                O::MaxMsgSize((v >= 0).then_some(v as u64))
            }
            39 => O::Immediate(strict_flag_of(value)?),
            18 => {
                let v = int_in(value, -1, INT_MAX)?;
                O::ReconnectIvl((v >= 0).then(|| ms(v)))
            }
            21 => O::ReconnectIvlMax(ms(int_in(value, 0, INT_MAX)?)),
            109 => {
                let v = int_of(value)?;
                O::ReconnectStop(ReconnectStop {
                    conn_refused: v & 1 != 0,
                    handshake_failed: v & 2 != 0,
                    after_disconnect: v & 4 != 0,
                })
            }
            66 => O::HandshakeIvl(ms_opt(int_in(value, 0, INT_MAX)?)),
            75 => O::HeartbeatIvl(ms_opt(int_in(value, 0, INT_MAX)?)),
            // libzmq keeps it in tenths of a second (rounded towards zero, so -99..=-1 is
            // 0), at most 0xffff of them.
            76 => O::HeartbeatTtl(ms(int_in(value, -99, 6_553_599)?.max(0) / 100 * 100)),
            77 => O::HeartbeatTimeout(ms_opt(int_in(value, 0, INT_MAX)?)),
            40 => O::XpubVerbose(flag_of(value)?),
            78 => O::XpubVerboser(flag_of(value)?),
            71 => O::XpubManual(flag_of(value)?),
            72 => O::XpubWelcomeMsg(opt_bytes(value)?),
            69 => O::XpubNodrop(flag_of(value)?),
            115 => O::XsubVerboseUnsubscribe(flag_of(value)?),
            74 => O::InvertMatching(int_of(value)? != 0),
            55 => O::ZapDomain(bytes_of(value)?),
            34 => {
                let v = int_in(value, -1, 1)?;
                O::TcpKeepalive((v >= 0).then_some(v != 0))
            }
            36 => {
                let v = int_in(value, -1, INT_MAX)?;
                O::TcpKeepaliveIdle((v > 0).then(|| Duration::from_secs(v as u64)))
            }
            35 => {
                let v = int_in(value, -1, INT_MAX)?;
                O::TcpKeepaliveCnt((v > 0).then_some(v as u32))
            }
            37 => {
                let v = int_in(value, -1, INT_MAX)?;
                O::TcpKeepaliveIntvl((v > 0).then(|| Duration::from_secs(v as u64)))
            }
            // libzmq takes 0 (the kernel's least); omq's listener wants at least 1.
            19 => O::Backlog(int_in(value, 0, INT_MAX)?.max(1) as i32),
            11 => {
                let v = int_in(value, -1, INT_MAX)?;
                O::SndBuf((v > 0).then_some(v as usize))
            }
            12 => {
                let v = int_in(value, -1, INT_MAX)?;
                O::RcvBuf((v > 0).then_some(v as usize))
            }
            57 => {
                let v = int_in(value, 0, INT_MAX)?;
                O::Tos((v > 0).then_some(v.clamp(0, 255) as u8))
            }
            42 => O::Ipv6(strict_flag_of(value)?),
            31 => O::Ipv6(!strict_flag_of(value)?),
            79 => O::ConnectTimeout(ms_opt(int_in(value, 0, INT_MAX)?)),
            80 => O::TcpMaxRt(ms_opt(int_in(value, 0, INT_MAX)?)),
            92 => {
                let b = bytes_of(value)?;
                O::BindToDevice((!b.is_empty()).then(|| String::from_utf8_lossy(&b).into_owned()))
            }
            110 => O::HelloMsg(opt_bytes(value)?),
            111 => O::DisconnectMsg(opt_bytes(value)?),
            114 => O::HiccupMsg(opt_bytes(value)?),
            95 => {
                let b = bytes_of(value)?;
                let text = String::from_utf8_lossy(&b).into_owned();
                let (k, v) = text
                    .split_once(':')
                    .ok_or_else(|| zerr(EINVAL, "METADATA is \"X-Name:value\""))?;
                O::Metadata(k.to_string(), Bytes::copy_from_slice(v.as_bytes()))
            }
            44..=50 => {
                let mut sec = lock(&self.security);
                match opt {
                    44 => sec.plain_server = strict_flag_of(value)?,
                    45 => sec.plain_user = Some(bytes_of(value)?.to_vec()),
                    46 => sec.plain_pass = Some(bytes_of(value)?.to_vec()),
                    47 => sec.curve_server = strict_flag_of(value)?,
                    48 => sec.curve_public = Some(key_of(value)?),
                    49 => sec.curve_secret = Some(key_of(value)?),
                    _ => sec.curve_serverkey = Some(key_of(value)?),
                }
                return self.apply_security(sock, &sec);
            }
            // Accepted and without effect in omq (multicast, batching, fast paths), in
            // libzmq's ranges: RATE, MULTICAST_HOPS, MULTICAST_MAXTPDU and the batch sizes
            // from 1, RECOVERY_IVL and PRIORITY from 0.
            8 | 25 | 84 | 101 | 102 => {
                int_in(value, 1, INT_MAX)?;
                return Ok(());
            }
            9 | 112 => {
                int_in(value, 0, INT_MAX)?;
                return Ok(());
            }
            4 | 93 | 94 | 96 | 113 => {
                int_of(value)?;
                return Ok(());
            }
            _ => {
                return Err(zerr(
                    EINVAL,
                    format!("socket option {opt} is not supported by omq"),
                ))
            }
        };
        sock.set_option(o).map_err(to_py)
    }

    /// The current value of the options omq keeps itself (others are tracked in Python).
    #[pyo3(name = "_get")]
    fn get_opt(&self, opt: i32) -> PyResult<i64> {
        let sock = self.sock()?;
        Ok(match opt {
            27 => self.rcvtimeo.load(Ordering::Relaxed),
            28 => self.sndtimeo.load(Ordering::Relaxed),
            17 => self.linger.load(Ordering::Relaxed),
            13 => i64::from(self.rcvmore()),
            23 => sock.options().get_send_hwm() as i64,
            24 => sock.options().get_recv_hwm() as i64,
            16 => i64::from(self.socket_type),
            116 => sock.topics_count().map_or_else(
                || Err(zerr(EINVAL, "TOPICS_COUNT is for PUB, XPUB, SUB and XSUB")),
                |n| Ok(i64::try_from(n).unwrap_or(i64::MAX)),
            )?,
            15 => {
                self.fd_clear();
                let mut ev: i32 = 0;
                if self.readable(sock) {
                    ev |= 1;
                }
                if self.writable(sock) {
                    ev |= 2;
                }
                self.fd_arm(ev);
                i64::from(ev)
            }
            14 => i64::from(self.fd_get()?),
            _ => return Err(zerr(EINVAL, format!("option {opt} is not readable here"))),
        })
    }

    /// The events (POLLIN 1, POLLOUT 2) of `mask` that are ready now.
    fn poll_now(&self, mask: i32) -> PyResult<i32> {
        let sock = self.sock()?;
        let mut ev = 0;
        if mask & 1 != 0 && self.readable(sock) {
            ev |= 1;
        }
        if mask & 2 != 0 && self.writable(sock) {
            ev |= 2;
        }
        Ok(ev)
    }

    /// Closes the socket: flushes in the background for up to LINGER (`linger` overrides it,
    /// in ms; -1 forever). `wait` blocks until that is done.
    #[pyo3(signature = (linger = None))]
    fn close(&self, py: Python<'_>, linger: Option<i64>) -> PyResult<()> {
        let first = !self.closed.swap(true, Ordering::AcqRel);
        // A monitor is not stopped here: closing reports CLOSED for each bound endpoint and
        // then MONITOR_STOPPED, as libzmq's close does, and that ends it.
        self.zap_unbound();
        if let Some(f) = lock(&self.fd).take() {
            self.fd_on.store(false, Ordering::Release);
            if let Some(w) = f.watch {
                w.abort();
            }
        }
        if !first {
            return Ok(());
        }
        let sock = self.sock.clone();
        if self.terminated.load(Ordering::Relaxed) {
            return Ok(());
        }
        if let Some(l) = linger {
            self.linger.store(l, Ordering::Relaxed);
            let _ = sock.set_option(SocketOption::Linger(ms_to_timeout(l)));
        }
        let l = self.linger.load(Ordering::Relaxed);
        // No linger: close at once. Otherwise the runtime flushes (at most LINGER) while
        // Python goes on, as libzmq's close does; Context.term waits for it.
        let _g = self.handle.enter();
        if l == 0 {
            let _ = without_gil(py, || self.handle.block_on(sock.close()));
        } else {
            let h = self.handle.spawn(async move {
                let _ = sock.close().await;
            });
            let mut p = lock(&self.pending);
            p.retain(|h| !h.is_finished());
            p.push(h);
        }
        Ok(())
    }

    /// Starts a monitor: events go as libzmq's two-frame messages to a PAIR bound at
    /// `endpoint` (inproc), for the events in `mask`.
    fn start_monitor(&self, py: Python<'_>, endpoint: &str, mask: i64) -> PyResult<()> {
        let sock = self.sock()?;
        let pair = {
            let _g = self.handle.enter();
            omq_tokio::Socket::new(SocketType::Pair, Options::default()).map_err(to_py)?
        };
        let ep = endpoint.to_string();
        let _g = self.handle.enter();
        without_gil(py, || self.handle.block_on(pair.bind(ep.as_str()))).map_err(to_py)?;
        let mut events = sock.monitor();
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let event = |code: u32, value: i64, endpoint: String| {
            let mut head = Vec::with_capacity(6);
            head.extend_from_slice(&(code as u16).to_le_bytes());
            head.extend_from_slice(&(value as u32).to_le_bytes());
            Message::multipart([Part::from(head), Part::from(endpoint)])
        };
        self.handle.spawn(async move {
            let mut stopping = false;
            loop {
                let e = if stopping {
                    // Stopped: what the socket reported before that still goes out.
                    events.next().now_or_never().flatten()
                } else {
                    tokio::select! {
                        biased;
                        e = events.next() => e,
                        _ = &mut stopped => {
                            stopping = true;
                            continue;
                        }
                    }
                };
                // The socket's own MONITOR_STOPPED (it closed, after CLOSED for each endpoint)
                // ends the stream; it is sent once, below.
                let Some(e) = e.filter(|e| e.kind != omq_core::EventKind::MonitorStopped) else {
                    break;
                };
                let code = e.kind.code();
                if i64::from(code) & mask == 0 {
                    continue;
                }
                if pair.send(event(code, e.value, e.endpoint)).await.is_err() {
                    break;
                }
            }
            // libzmq's last event, whatever the mask: MONITOR_STOPPED.
            let _ = pair.try_send(event(0x400, 0, String::new()));
            let _ = pair.set_option(SocketOption::Linger(Some(Duration::from_secs(1))));
            let _ = pair.close().await;
        });
        if let Some(old) = lock(&self.monitor).replace(stop) {
            let _ = old.send(());
        }
        Ok(())
    }

    fn stop_monitor(&self) {
        if let Some(m) = lock(&self.monitor).take() {
            let _ = m.send(());
        }
    }
}

type Wait = futures_util::future::BoxFuture<'static, ()>;

impl RawSocket {
    /// Futures that complete when the events of `mask` (POLLIN 1, POLLOUT 2) may be ready.
    fn waits(&self, m: i32, waits: &mut Vec<Wait>) -> PyResult<()> {
        let sock = self.sock()?;
        if m & 1 != 0 {
            let rx = self.rx.clone();
            let so = sock.clone();
            waits.push(async move { rx.readable(&so).await }.boxed());
        }
        if m & 2 != 0 && self.may_send() {
            let mut sink = sock.sink();
            waits.push(
                async move {
                    let _ = futures_util::future::poll_fn(|cx| sink.poll_ready_unpin(cx)).await;
                }
                .boxed(),
            );
        }
        Ok(())
    }

    /// ZMQ_FD's descriptor, made on first use (and readable at once: look at EVENTS).
    fn fd_get(&self) -> PyResult<i32> {
        use std::os::fd::AsRawFd;
        self.sock()?;
        let mut fd = lock(&self.fd);
        if let Some(f) = fd.as_ref() {
            return Ok(f.read.as_raw_fd());
        }
        let io = |e: std::io::Error| zerr(errno_of(&Error::Io(e)), "cannot make ZMQ_FD");
        let (read, write) = std::os::unix::net::UnixStream::pair().map_err(io)?;
        read.set_nonblocking(true).map_err(io)?;
        write.set_nonblocking(true).map_err(io)?;
        poke(&write);
        let n = read.as_raw_fd();
        *fd = Some(FdSignal {
            read,
            write: Arc::new(write),
            watch: None,
        });
        self.fd_on.store(true, Ordering::Release);
        Ok(n)
    }

    /// EVENTS is being read: clears ZMQ_FD's signal.
    fn fd_clear(&self) {
        use std::io::Read;
        if !self.fd_on.load(Ordering::Acquire) {
            return;
        }
        if let Some(f) = lock(&self.fd).as_ref() {
            let mut buf = [0u8; 64];
            while matches!((&f.read).read(&mut buf), Ok(n) if n > 0) {}
        }
    }

    /// Makes ZMQ_FD readable once one of the events not in `ready` becomes ready.
    fn fd_arm(&self, ready: i32) {
        if !self.fd_on.load(Ordering::Acquire) {
            return;
        }
        let want = !ready & 3;
        let mut waits = Vec::new();
        if want == 0 || self.waits(want, &mut waits).is_err() || waits.is_empty() {
            return;
        }
        let mut fd = lock(&self.fd);
        let Some(f) = fd.as_mut() else { return };
        let w = f.write.clone();
        let h = self.handle.spawn(async move {
            select_all(waits).await;
            poke(&w);
        });
        if let Some(old) = f.watch.replace(h) {
            old.abort();
        }
    }

    /// An operation would block: ZMQ_FD fires when that may change.
    fn fd_again(&self) {
        if self.fd_on.load(Ordering::Acquire) {
            let sock = &self.sock;
            let mut ready = 0;
            if self.readable(sock) {
                ready |= 1;
            }
            if self.writable(sock) {
                ready |= 2;
            }
            self.fd_arm(ready);
        }
    }
}

/// One future per (socket, event) of `items` that completes when it is ready: a receive that
/// completes leaves its message in the socket's stash; a sink ready for a message has room.
fn readiness(_py: Python<'_>, items: &[(Py<RawSocket>, i32)]) -> PyResult<(Vec<Wait>, Handle)> {
    let mut waits = Vec::new();
    let mut handle = None;
    for (s, m) in items {
        let raw = s.get();
        handle.get_or_insert_with(|| raw.handle.clone());
        raw.waits(*m, &mut waits)?;
    }
    let handle = handle.ok_or_else(|| zerr(EINVAL, "nothing to wait for"))?;
    if waits.is_empty() {
        // Nothing can become ready by itself (a REQ waiting for its reply polled for POLLOUT
        // only): wait for the timeout.
        waits.push(futures_util::future::pending().boxed());
    }
    Ok((waits, handle))
}

/// A readiness wait started by [`watch`].
#[pyclass(module = "omq._omq", frozen)]
struct Watch(Mutex<Option<tokio::task::JoinHandle<()>>>);

#[pymethods]
impl Watch {
    fn cancel(&self) {
        if let Some(h) = lock(&self.0).take() {
            h.abort();
        }
    }
}

/// Calls `callback()` (on the runtime thread, with the GIL) once one of `items` is ready, for
/// asyncio: the callback hands over to the event loop with `call_soon_threadsafe`.
#[pyfunction]
fn watch(py: Python<'_>, items: Vec<(Py<RawSocket>, i32)>, callback: PyObject) -> PyResult<Watch> {
    let (waits, handle) = readiness(py, &items)?;
    let h = handle.spawn(async move {
        if !waits.is_empty() {
            select_all(waits).await;
        }
        Python::with_gil(|py| {
            if let Err(e) = callback.call0(py) {
                e.write_unraisable(py, None);
            }
        });
    });
    Ok(Watch(Mutex::new(Some(h))))
}

/// Waits until one of `items` ((socket, mask) pairs) is ready, at most `timeout_ms`
/// (negative: forever). Returns the ready events, one int per item.
#[pyfunction]
fn poll(py: Python<'_>, items: Vec<(Py<RawSocket>, i32)>, timeout_ms: i64) -> PyResult<Vec<i32>> {
    let ready = |py: Python<'_>| -> PyResult<Vec<i32>> {
        items
            .iter()
            .map(|(s, m)| {
                let s = s.borrow(py);
                if s.closed() {
                    return Err(zerr(ENOTSOCK, "Socket operation on non-socket"));
                }
                s.poll_now(*m)
            })
            .collect()
    };
    let deadline =
        (timeout_ms >= 0).then(|| Instant::now() + Duration::from_millis(timeout_ms as u64));
    loop {
        let r = ready(py)?;
        if r.iter().any(|&e| e != 0) {
            return Ok(r);
        }
        let left = match deadline {
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    return Ok(r);
                }
                Some(d - now)
            }
            None => None,
        };
        if items.is_empty() {
            let slice = left.unwrap_or(SLICE).min(SLICE);
            without_gil(py, || std::thread::sleep(slice));
            py.check_signals()?;
            continue;
        }
        let (mut waits, handle) = readiness(py, &items)?;
        let slice = left.unwrap_or(SLICE).min(SLICE);
        let r = wait(py, &handle, Some(slice), || {
            let w = std::mem::take(&mut waits);
            async move {
                if !w.is_empty() {
                    select_all(w).await;
                }
            }
        })?;
        let _ = r;
        py.check_signals()?;
    }
}

/// libzmq's `zmq_proxy`: forwards between two sockets until one fails (or Ctrl-C).
#[pyfunction]
#[pyo3(signature = (frontend, backend, capture = None))]
fn proxy(
    py: Python<'_>,
    frontend: &RawSocket,
    backend: &RawSocket,
    capture: Option<&RawSocket>,
) -> PyResult<()> {
    let f = frontend.sock()?.clone();
    let b = backend.sock()?.clone();
    let c = capture.map(|c| c.sock().cloned()).transpose()?;
    run_proxy(py, frontend, async move {
        omq_tokio::proxy(&f, &b, c.as_ref()).await
    })
}

/// libzmq's `zmq_proxy_steerable`: [`proxy`], steered by the commands read from `control`
/// (PAUSE, RESUME, TERMINATE, STATISTICS); returns after TERMINATE.
#[pyfunction]
#[pyo3(signature = (frontend, backend, capture = None, control = None))]
fn proxy_steerable(
    py: Python<'_>,
    frontend: &RawSocket,
    backend: &RawSocket,
    capture: Option<&RawSocket>,
    control: Option<&RawSocket>,
) -> PyResult<()> {
    let Some(control) = control else {
        return proxy(py, frontend, backend, capture);
    };
    let f = frontend.sock()?.clone();
    let b = backend.sock()?.clone();
    let c = capture.map(|c| c.sock().cloned()).transpose()?;
    let k = control.sock()?.clone();
    run_proxy(py, frontend, async move {
        omq_tokio::proxy_steerable(&f, &b, c.as_ref(), &k)
            .await
            .map(|_| ())
    })
}

/// Runs a proxy on the frontend's runtime and waits for it, GIL released, until it ends, the
/// context terminates or Ctrl-C (which stops it).
fn run_proxy<F>(py: Python<'_>, frontend: &RawSocket, proxy: F) -> PyResult<()>
where
    F: Future<Output = Result<(), Error>> + Send + 'static,
{
    let run = {
        let _g = frontend.handle.enter();
        frontend.handle.spawn(proxy)
    };
    let run = Arc::new(Mutex::new(run));
    let term = Some(&*frontend.terminating);
    let r = wait_or_term(py, &frontend.handle, None, term, || {
        let run = run.clone();
        futures_util::future::poll_fn(move |cx| lock(&run).poll_unpin(cx))
    });
    match r {
        Ok(Some(Ok(Ok(())))) | Ok(None) => Ok(()),
        Ok(Some(Ok(Err(e)))) => Err(to_py(e)),
        Ok(Some(Err(_))) => Err(zerr(ETERM, "proxy stopped")),
        Err(e) => {
            lock(&run).abort();
            Err(e)
        }
    }
}

/// A new CURVE key pair as (public, secret), Z85 bytes.
#[pyfunction]
fn curve_keypair<'py>(py: Python<'py>) -> (Bound<'py, PyBytes>, Bound<'py, PyBytes>) {
    let pair = omq_tokio::generate_keypair(&mut omq_tokio::OsRng);
    (
        PyBytes::new(py, pair.public().to_z85().as_bytes()),
        PyBytes::new(py, pair.secret().to_z85().as_bytes()),
    )
}

/// The public key (Z85) of a secret key (Z85 or 32 bytes).
#[pyfunction]
fn curve_public<'py>(py: Python<'py>, secret: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let s = CurveSecretKey::from_bytes(key_of(secret)?);
    Ok(PyBytes::new(py, s.public_key().to_z85().as_bytes()))
}

#[pyfunction]
fn z85_encode<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let p = part_of(data)?;
    let s = omq_core::z85::encode(p.as_slice()).map_err(|e| zerr(EINVAL, e.to_string()))?;
    Ok(PyBytes::new(py, s.as_bytes()))
}

#[pyfunction]
fn z85_decode<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let p = if let Ok(s) = data.extract::<String>() {
        Part::from(s)
    } else {
        part_of(data)?
    };
    let v = omq_core::z85::decode(p.as_slice()).map_err(|e| zerr(EINVAL, e.to_string()))?;
    Ok(PyBytes::new(py, &v))
}

#[pymodule]
fn _omq(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Runtime>()?;
    m.add_class::<RawSocket>()?;
    m.add_function(wrap_pyfunction!(poll, m)?)?;
    m.add_function(wrap_pyfunction!(proxy, m)?)?;
    m.add_function(wrap_pyfunction!(exiting, m)?)?;
    m.add_function(wrap_pyfunction!(proxy_steerable, m)?)?;
    m.add_function(wrap_pyfunction!(watch, m)?)?;
    m.add_class::<Watch>()?;
    m.add_function(wrap_pyfunction!(curve_keypair, m)?)?;
    m.add_function(wrap_pyfunction!(curve_public, m)?)?;
    m.add_function(wrap_pyfunction!(z85_encode, m)?)?;
    m.add_function(wrap_pyfunction!(z85_decode, m)?)?;
    Ok(())
}

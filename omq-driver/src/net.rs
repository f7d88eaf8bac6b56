//! Socket creation shared by every backend: sockets are made and configured with `socket2` (or
//! std) here and handed to the runtime, so TCP_NODELAY, SO_REUSEADDR, the listen backlog and
//! ipc path handling are the same everywhere. A backend says only how its runtime wraps a std
//! socket and connects one tcp address ([`Runtime::connect_tcp`], [`Runtime::ipc_stream`],
//! [`Runtime::tcp_listener`], [`Runtime::ipc_listener`]); [`connect`] and [`bind`], which
//! [`Runtime::connect`] and [`Runtime::bind`] are unless overridden, do the rest once: which
//! endpoint is which, name lookup off the runtime's thread, trying each address of a name.
//!
//! Three things exist on Linux only: abstract ipc names (`ipc://@name`), BINDTODEVICE
//! (SO_BINDTODEVICE) and TCP_MAXRT (TCP_USER_TIMEOUT). Elsewhere (macOS, the BSDs) asking for
//! one is an `Unsupported` error, never silently ignored.

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::os::fd::AsFd;
use std::os::unix::net::{SocketAddr as UnixAddr, UnixListener, UnixStream};
use std::path::PathBuf;

use omq_core::endpoint::{Endpoint, Host};
use omq_core::options::TransportOptions;
use socket2::{Domain, Protocol, SockAddr, SockRef, Socket, TcpKeepalive, Type};

use crate::runtime::{Halves, Runtime};

/// Resolves a tcp host (literal addresses without any lookup; names through the system
/// resolver, which blocks: call it off the I/O thread where the runtime has no async resolver).
/// Without IPV6, `*` is every IPv4 interface and names give their IPv4 addresses only (as
/// libzmq); an IPv6 literal is taken as written either way. With it, `*` is every interface of
/// both families.
pub fn resolve(host: &Host, port: u16, ipv6: bool) -> io::Result<Vec<SocketAddr>> {
    match host {
        Host::Any if ipv6 => Ok(vec![SocketAddr::from(([0u16; 8], port))]),
        Host::Any => Ok(vec![SocketAddr::from(([0, 0, 0, 0], port))]),
        Host::Ip(ip) => Ok(vec![SocketAddr::new(*ip, port)]),
        Host::Name(name) => {
            let addrs: Vec<SocketAddr> = (name.as_str(), port)
                .to_socket_addrs()?
                .filter(|a| ipv6 || a.is_ipv4())
                .collect();
            if addrs.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("host {name} has no address"),
                ));
            }
            Ok(addrs)
        }
    }
}

/// Resolves the host of an endpoint to bind: as [`resolve`], except that a name which is a
/// network interface's (`tcp://eth0:5555`, libzmq's "interface name" form) means that
/// interface's address: its first IPv4 address, or with IPV6 its first address of either
/// family, as libzmq takes it. A name no interface has is looked up as a host name.
pub fn resolve_bind(host: &Host, port: u16, ipv6: bool) -> io::Result<Vec<SocketAddr>> {
    if let Host::Name(name) = host {
        if let Some(ip) = interface_address(name, ipv6)? {
            return Ok(vec![SocketAddr::new(ip, port)]);
        }
    }
    resolve(host, port, ipv6)
}

/// The first address of the interface called `name` (IPv4, or with `ipv6` either family);
/// None when no interface has that name and such an address.
fn interface_address(name: &str, ipv6: bool) -> io::Result<Option<IpAddr>> {
    let found = nix::ifaddrs::getifaddrs()
        .map_err(io::Error::from)?
        .filter(|i| i.interface_name == name)
        .find_map(|i| {
            let a = i.address?;
            if let Some(v4) = a.as_sockaddr_in() {
                Some(IpAddr::from(*std::net::SocketAddrV4::from(*v4).ip()))
            } else if ipv6 {
                a.as_sockaddr_in6().map(|v6| IpAddr::from(v6.ip()))
            } else {
                None
            }
        });
    Ok(found)
}

/// Applies the connection options (TCP_KEEPALIVE*, SNDBUF, RCVBUF, TOS, TCP_MAXRT,
/// BINDTODEVICE) to a tcp socket: before it connects or listens where the runtime lets us make
/// the socket, right after it connects where the runtime makes it itself. Accepted connections
/// inherit them from their listener (the kernel copies them; the conformance suite reads them
/// back on every backend).
pub fn apply_tcp_options(socket: impl AsFd, t: &TransportOptions) -> io::Result<()> {
    let s = SockRef::from(&socket);
    if let Some(device) = &t.bind_to_device {
        bind_device(&s, device)?;
    }
    match t.tcp_keepalive {
        // As libzmq: the timings apply only where keepalive is switched on.
        Some(true) => {
            let mut ka = TcpKeepalive::new();
            if let Some(d) = t.tcp_keepalive_idle {
                ka = ka.with_time(d);
            }
            if let Some(d) = t.tcp_keepalive_intvl {
                ka = ka.with_interval(d);
            }
            if let Some(n) = t.tcp_keepalive_cnt {
                ka = ka.with_retries(n);
            }
            s.set_tcp_keepalive(&ka)?;
        }
        Some(false) => s.set_keepalive(false)?,
        None => {}
    }
    if let Some(n) = t.sndbuf {
        s.set_send_buffer_size(n)?;
    }
    if let Some(n) = t.rcvbuf {
        s.set_recv_buffer_size(n)?;
    }
    if let Some(tos) = t.tos {
        // The socket's family, from its address (bound or not, the kernel reports it).
        if s.local_addr()?.is_ipv6() {
            s.set_tclass_v6(u32::from(tos))?;
        } else {
            s.set_tos_v4(u32::from(tos))?;
        }
    }
    if let Some(d) = t.tcp_maxrt {
        set_tcp_maxrt(&s, d)?;
    }
    Ok(())
}

/// SO_BINDTODEVICE (Linux only).
fn bind_device(s: &SockRef<'_>, device: &str) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    return s.bind_device(Some(device.as_bytes()));
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (s, device);
        Err(linux_only("BINDTODEVICE"))
    }
}

/// TCP_MAXRT as TCP_USER_TIMEOUT (Linux only).
fn set_tcp_maxrt(s: &SockRef<'_>, d: std::time::Duration) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    return s.set_tcp_user_timeout(Some(d));
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (s, d);
        Err(linux_only("TCP_MAXRT"))
    }
}

/// The error for an option or address form that exists on Linux only.
#[cfg(not(target_os = "linux"))]
fn linux_only(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{what} exists on Linux only"),
    )
}

/// A non-blocking tcp socket for connecting to `addr`, with TCP_NODELAY and the connection
/// options set.
pub fn tcp_connect_socket(addr: &SocketAddr, t: &TransportOptions) -> io::Result<Socket> {
    let s = Socket::new(
        Domain::for_address(*addr),
        Type::STREAM,
        Some(Protocol::TCP),
    )?;
    s.set_tcp_nodelay(true)?;
    s.set_nonblocking(true)?;
    apply_tcp_options(&s, t)?;
    Ok(s)
}

/// A bound, listening, non-blocking tcp listener (BACKLOG and the connection options set,
/// dual-stack for `*` with IPV6) and its resolved endpoint text.
pub fn tcp_listener(
    host: &Host,
    port: u16,
    t: &TransportOptions,
) -> io::Result<(std::net::TcpListener, String)> {
    let addr = resolve_bind(host, port, t.ipv6)?[0];
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    s.set_reuse_address(true)?;
    s.set_nonblocking(true)?;
    if addr.is_ipv6() && matches!(host, Host::Any) {
        s.set_only_v6(false)?;
    }
    apply_tcp_options(&s, t)?;
    s.bind(&SockAddr::from(addr))?;
    s.listen(t.backlog)?;
    let listener: std::net::TcpListener = s.into();
    let local = listener.local_addr()?;
    Ok((listener, format!("tcp://{local}")))
}

/// Takes a connection that is already waiting on a non-blocking listener (those made by
/// [`tcp_listener`] and [`ipc_listener`]), without waiting: `Ok(None)` when none is.
///
/// For completion-based backends, to call before handing an accept to their ring. A ring
/// completes an accept when the runtime next collects completions, which a busy runtime (a PUB
/// with thousands of subscribers, say) does once per turn of its whole task queue: there, a
/// burst of connects was taken at a few a second while the kernel's queue overflowed. A
/// readiness backend (tokio) and glommio already accept this way.
pub fn accept_now(listener: impl AsFd) -> io::Result<Option<std::os::fd::OwnedFd>> {
    match SockRef::from(&listener).accept() {
        Ok((socket, _)) => Ok(Some(socket.into())),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes `chunks` to a connected stream socket without waiting: one `sendmsg` with
/// `MSG_DONTWAIT` (and `MSG_NOSIGNAL`: a closed peer is an `EPIPE` error, never a signal),
/// whatever blocking mode the descriptor is in. `Ok(None)` when the socket has no room, and
/// without trying when the write is longer than [`WRITE_NOW_MAX`].
///
/// For completion-based backends, to call before handing a write to their ring: a ring
/// completes the write only when the runtime next collects completions, so a connection task
/// waits for the ring's round for every write even when the socket had room, which a PUB
/// writing to thousands of subscribers pays thousands of times a message.
pub fn write_now(socket: impl AsFd, chunks: &[bytes::Bytes]) -> io::Result<Option<usize>> {
    let n = chunks.len().min(WRITE_NOW_SLICES);
    if chunks[..n].iter().map(|c| c.len()).sum::<usize>() > WRITE_NOW_MAX {
        return Ok(None);
    }
    send_now(socket, chunks)
}

/// [`write_now`] without its bound: one `sendmsg` of (at most 64 of) `chunks` with
/// `MSG_DONTWAIT | MSG_NOSIGNAL`, `Ok(None)` when the socket has no room. For a readiness
/// backend whose runtime has no vectored write of its own (glommio), which waits for
/// writability itself when the socket is full.
pub fn send_now(socket: impl AsFd, chunks: &[bytes::Bytes]) -> io::Result<Option<usize>> {
    let n = chunks.len().min(WRITE_NOW_SLICES);
    let mut slices = [io::IoSlice::new(&[]); WRITE_NOW_SLICES];
    for (slice, chunk) in slices.iter_mut().zip(&chunks[..n]) {
        *slice = io::IoSlice::new(chunk);
    }
    let flags = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL;
    match SockRef::from(&socket).send_vectored_with_flags(&slices[..n], flags) {
        Ok(written) => Ok(Some(written)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
        Err(e) => Err(e),
    }
}

/// The longest write [`write_now`] makes; a longer one is left to the ring. A write that
/// long is a stream running ahead of its reader (the socket is likely full), and there the
/// ring was measured faster: PUSH/PULL over tcp with every write tried at once ran at
/// 0.76-0.97x (16 KiB messages) and 0.82-0.90x (64 KiB) on omq-compio, against 1.03-1.07x with
/// this bound, while a PUB's writes to 10,000 subscribers (up to 200 KiB each) keep their gain.
pub const WRITE_NOW_MAX: usize = 256 * 1024;

/// The most chunks [`write_now`] passes to one `sendmsg` (the driver hands at most this many
/// to a write; a longer list is written in part, as any write may be).
const WRITE_NOW_SLICES: usize = 64;

/// A DISH's udp socket, bound to `host:port` and non-blocking, and its resolved endpoint
/// text. A multicast address is joined on every interface (the socket binds its port on all
/// of them, with SO_REUSEADDR, so several DISHes on one host can share a group).
pub fn udp_bind(
    host: &Host,
    port: u16,
    t: &TransportOptions,
) -> io::Result<(std::net::UdpSocket, String)> {
    let addr = resolve_bind(host, port, t.ipv6)?[0];
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    s.set_reuse_address(true)?;
    s.set_nonblocking(true)?;
    if let Some(n) = t.rcvbuf {
        s.set_recv_buffer_size(n)?;
    }
    if let Some(device) = &t.bind_to_device {
        bind_device(&SockRef::from(&s), device)?;
    }
    match addr.ip() {
        std::net::IpAddr::V4(group) if group.is_multicast() => {
            s.bind(&SockAddr::from(SocketAddr::from(([0, 0, 0, 0], port))))?;
            s.join_multicast_v4(&group, &std::net::Ipv4Addr::UNSPECIFIED)?;
        }
        std::net::IpAddr::V6(group) if group.is_multicast() => {
            s.bind(&SockAddr::from(SocketAddr::from(([0u16; 8], port))))?;
            s.join_multicast_v6(&group, 0)?;
        }
        _ => {
            if addr.is_ipv6() && matches!(host, Host::Any) {
                s.set_only_v6(false)?;
            }
            s.bind(&SockAddr::from(addr))?;
        }
    }
    let bound = s.local_addr()?.as_socket().map_or(port, |a| a.port());
    // A multicast DISH is named by its group, a wildcard one by `*`.
    let text = match host {
        Host::Any => format!("udp://*:{bound}"),
        _ => format!("udp://{}", SocketAddr::new(addr.ip(), bound)),
    };
    Ok((s.into(), text))
}

/// A RADIO's udp socket, connected to `host:port` (unicast or a multicast group; multicast
/// datagrams loop back to DISHes on this host) and non-blocking.
pub fn udp_connect(
    host: &Host,
    port: u16,
    t: &TransportOptions,
) -> io::Result<std::net::UdpSocket> {
    if matches!(host, Host::Any) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a RADIO connects to a host, not to *",
        ));
    }
    let addr = resolve(host, port, t.ipv6)?[0];
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    s.set_nonblocking(true)?;
    if let Some(n) = t.sndbuf {
        s.set_send_buffer_size(n)?;
    }
    if let Some(device) = &t.bind_to_device {
        bind_device(&SockRef::from(&s), device)?;
    }
    if let Some(tos) = t.tos {
        match addr {
            SocketAddr::V6(_) => s.set_tclass_v6(u32::from(tos))?,
            SocketAddr::V4(_) => s.set_tos_v4(u32::from(tos))?,
        }
    }
    if addr.ip().is_multicast() {
        match addr {
            SocketAddr::V4(_) => s.set_multicast_loop_v4(true)?,
            SocketAddr::V6(_) => s.set_multicast_loop_v6(true)?,
        }
    }
    s.connect(&SockAddr::from(addr))?;
    Ok(s.into())
}

/// Sets TCP_NODELAY on an accepted or connected std stream.
pub fn configure_tcp(stream: &std::net::TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    stream.set_nonblocking(true)
}

/// The address of an ipc endpoint: a filesystem path, or a Linux abstract name after `@`
/// (an `Unsupported` error elsewhere).
pub fn ipc_addr(path: &str) -> io::Result<UnixAddr> {
    match path.strip_prefix('@') {
        #[cfg(target_os = "linux")]
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            UnixAddr::from_abstract_name(name.as_bytes())
        }
        #[cfg(not(target_os = "linux"))]
        Some(_) => Err(linux_only("an abstract ipc name (`@`)")),
        None => UnixAddr::from_pathname(path),
    }
}

/// Removes a bound ipc socket file when dropped (abstract names leave no file).
#[derive(Debug)]
pub struct IpcPath(Option<PathBuf>);

impl Drop for IpcPath {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            // Already gone (someone else removed it) is fine; anything else cannot be
            // reported from a destructor, and the next bind replaces a stale file anyway.
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Binds an ipc endpoint, replacing a stale socket file left by a dead process (one nobody
/// accepts on), but never one that is in use.
pub fn ipc_listener(path: &str, backlog: i32) -> io::Result<(UnixListener, IpcPath, String)> {
    let addr = ipc_addr(path)?;
    if !path.starts_with('@') {
        let p = PathBuf::from(path);
        if p.exists() {
            match UnixStream::connect(&p) {
                Ok(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::AddrInUse,
                        format!("ipc://{path} is in use"),
                    ))
                }
                Err(_) => std::fs::remove_file(&p)?,
            }
        }
    }
    let l = UnixListener::bind_addr(&addr)?;
    // std listens with its own backlog; listening again sets ours (BACKLOG).
    SockRef::from(&l).listen(backlog)?;
    l.set_nonblocking(true)?;
    // Only a file we bound ourselves is ours to remove: a bind that lost a race to another
    // process must not delete that process's socket.
    let guard = IpcPath((!path.starts_with('@')).then(|| PathBuf::from(path)));
    Ok((l, guard, format!("ipc://{path}")))
}

/// What [`Runtime::connect`] does unless a runtime overrides it: host names looked up with
/// [`Runtime::blocking`] (addresses and `*` inline), each address tried in turn with
/// [`Runtime::connect_tcp`], ipc connected with std and handed to [`Runtime::ipc_stream`].
pub async fn connect<R: Runtime>(
    endpoint: &Endpoint,
    t: &TransportOptions,
) -> io::Result<Halves<R>> {
    match endpoint {
        Endpoint::Tcp { host, port, .. } => {
            let (h, port, ipv6) = (host.clone(), *port, t.ipv6);
            let addrs = for_names(host, move || resolve(&h, port, ipv6), R::blocking).await?;
            connect_any(addrs, |addr| R::connect_tcp(addr, t)).await
        }
        // A unix connect completes at once (or is refused); std reaches abstract names too.
        Endpoint::Ipc(path) => R::ipc_stream(UnixStream::connect_addr(&ipc_addr(path)?)?),
        other => Err(not_a_stream(other)),
    }
}

/// What [`Runtime::bind`] does unless a runtime overrides it: the listener made by
/// [`tcp_listener`] (host names looked up with [`Runtime::blocking`]) or [`ipc_listener`],
/// handed to [`Runtime::tcp_listener`] or [`Runtime::ipc_listener`], and the endpoint as bound.
pub async fn bind<R: Runtime>(
    endpoint: &Endpoint,
    t: &TransportOptions,
) -> io::Result<(R::Listener, String)> {
    match endpoint {
        Endpoint::Tcp { host, port, .. } => {
            let (h, port, t) = (host.clone(), *port, t.clone());
            let (l, resolved) =
                for_names(host, move || tcp_listener(&h, port, &t), R::blocking).await?;
            Ok((R::tcp_listener(l)?, resolved))
        }
        Endpoint::Ipc(path) => {
            let (l, guard, resolved) = ipc_listener(path, t.backlog)?;
            Ok((R::ipc_listener(l, guard)?, resolved))
        }
        other => Err(not_a_stream(other)),
    }
}

/// The error for an endpoint a stream backend cannot carry (inproc and udp are the driver's).
fn not_a_stream(endpoint: &Endpoint) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{} is not a stream transport", endpoint.transport()),
    )
}

/// Runs `f` with [`Runtime::blocking`] when `host` is a name to look up (the system resolver
/// blocks), and inline for addresses and `*`: for udp, which the driver opens itself.
pub(crate) async fn off_thread_for_names<R: Runtime, T: Send + 'static>(
    host: &Host,
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    for_names(host, f, R::blocking).await
}

/// Runs `f` through `off_thread` (which moves a blocking call off the runtime's thread) when
/// `host` is a name to look up; for addresses and `*` the call is quick and runs inline.
async fn for_names<T, F, Fut>(host: &Host, f: F, off_thread: impl FnOnce(F) -> Fut) -> io::Result<T>
where
    F: FnOnce() -> io::Result<T>,
    Fut: Future<Output = io::Result<T>>,
{
    match host {
        Host::Name(_) => off_thread(f).await,
        _ => f(),
    }
}

/// Runs `f` on a thread of its own ([`Runtime::blocking`] unless a runtime has a pool).
pub(crate) async fn on_own_thread<T: Send + 'static>(
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    let (tx, rx) = futures_channel::oneshot::channel();
    std::thread::Builder::new()
        .name("omq-resolve".into())
        .spawn(move || {
            let _ = tx.send(f());
        })?;
    rx.await
        .map_err(|_| io::Error::other("the resolver thread died"))?
}

/// Tries `connect` on each resolved address in turn and returns the first success, or the
/// last failure (what libzmq does with a name that resolves to several addresses).
async fn connect_any<T, F, Fut>(addrs: Vec<SocketAddr>, mut connect: F) -> io::Result<T>
where
    F: FnMut(SocketAddr) -> Fut,
    Fut: Future<Output = io::Result<T>>,
{
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no address to connect to");
    for addr in addrs {
        match connect(addr).await {
            Ok(t) => return Ok(t),
            Err(e) => last = e,
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_now_never_waits() {
        use std::io::Read;
        // Blocking descriptors, as monoio's io_uring driver keeps them: the flags alone must
        // keep the call from waiting.
        let (a, mut b) = UnixStream::pair().unwrap();
        let chunks = [
            bytes::Bytes::from_static(b"ab"),
            bytes::Bytes::from_static(b"cd"),
        ];
        assert_eq!(write_now(&a, &chunks).unwrap(), Some(4));
        let mut got = [0u8; 4];
        b.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"abcd", "every chunk, in order");
        // Filled up: a partial write at the edge, then no room, without blocking.
        let big = [bytes::Bytes::from(vec![7u8; 8 << 10])];
        let mut total = 0;
        let none = loop {
            match write_now(&a, &big).unwrap() {
                Some(n) => total += n,
                None => break true,
            }
            assert!(total < 1 << 30, "a socket buffer never fills");
        };
        assert!(none && total > 0);
        // The peer gone: EPIPE comes back as an error.
        drop(b);
        let e = write_now(&a, &chunks).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe);
    }

    #[test]
    fn a_long_write_is_left_to_the_ring() {
        let (a, _b) = UnixStream::pair().unwrap();
        let long = [
            bytes::Bytes::from(vec![1u8; WRITE_NOW_MAX]),
            bytes::Bytes::from_static(b"x"),
        ];
        assert_eq!(
            write_now(&a, &long).unwrap(),
            None,
            "not tried, though there is room"
        );
        assert_eq!(
            write_now(&a, &long[..1]).unwrap().map(|n| n > 0),
            Some(true)
        );
    }

    #[test]
    fn write_now_takes_at_most_its_slices() {
        use std::io::Read;
        let (a, mut b) = UnixStream::pair().unwrap();
        let chunks: Vec<bytes::Bytes> = (0..WRITE_NOW_SLICES + 3)
            .map(|i| bytes::Bytes::from(vec![i as u8; 1]))
            .collect();
        assert_eq!(write_now(&a, &chunks).unwrap(), Some(WRITE_NOW_SLICES));
        let mut got = vec![0u8; WRITE_NOW_SLICES];
        b.read_exact(&mut got).unwrap();
        let want: Vec<u8> = (0..WRITE_NOW_SLICES).map(|i| i as u8).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn tos_is_set_for_the_sockets_own_family() {
        // An unbound socket: its family comes from the kernel, IP_TOS for IPv4 and
        // IPV6_TCLASS for IPv6.
        let mut t = TransportOptions::default();
        t.tos = Some(0x28);
        let v4 = tcp_connect_socket(&"127.0.0.1:9".parse().unwrap(), &t).unwrap();
        assert_eq!(v4.tos_v4().unwrap(), 0x28);
        let v6 = tcp_connect_socket(&"[::1]:9".parse().unwrap(), &t).unwrap();
        assert_eq!(v6.tclass_v6().unwrap(), 0x28);
    }

    #[cfg(not(target_os = "linux"))]
    #[test]
    fn linux_only_options_are_refused_elsewhere() {
        let mut t = TransportOptions::default();
        t.bind_to_device = Some("lo0".into());
        let addr = "127.0.0.1:9".parse().unwrap();
        let e = tcp_connect_socket(&addr, &t).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Unsupported);
        let mut t = TransportOptions::default();
        t.tcp_maxrt = Some(std::time::Duration::from_secs(1));
        let e = tcp_connect_socket(&addr, &t).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Unsupported);
        assert_eq!(
            ipc_addr("@abstract").unwrap_err().kind(),
            io::ErrorKind::Unsupported
        );
    }
}

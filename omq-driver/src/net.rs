//! Socket creation shared by every backend: sockets are made and configured with `socket2` (or
//! std) here and handed to the runtime, so TCP_NODELAY, SO_REUSEADDR, the listen backlog and
//! ipc path handling are the same everywhere.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr as UnixAddr, UnixListener, UnixStream};
use std::path::PathBuf;

use omq_core::endpoint::{Endpoint, Host};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

/// libzmq's default listen backlog.
pub const BACKLOG: i32 = 100;

/// Resolves a tcp host (literal addresses without any lookup; names through the system
/// resolver, which blocks: call it off the I/O thread where the runtime has no async resolver).
pub fn resolve(host: &Host, port: u16) -> io::Result<Vec<SocketAddr>> {
    match host {
        Host::Any => Ok(vec![SocketAddr::from(([0, 0, 0, 0], port))]),
        Host::Name(name) => {
            if let Ok(ip) = name.parse::<std::net::IpAddr>() {
                return Ok(vec![SocketAddr::new(ip, port)]);
            }
            let addrs: Vec<SocketAddr> = (name.as_str(), port).to_socket_addrs()?.collect();
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

/// A non-blocking tcp socket for connecting to `addr`, with TCP_NODELAY set.
pub fn tcp_connect_socket(addr: &SocketAddr) -> io::Result<Socket> {
    let s = Socket::new(
        Domain::for_address(*addr),
        Type::STREAM,
        Some(Protocol::TCP),
    )?;
    s.set_tcp_nodelay(true)?;
    s.set_nonblocking(true)?;
    Ok(s)
}

/// A bound, listening, non-blocking tcp listener and its resolved endpoint text.
pub fn tcp_listener(host: &Host, port: u16) -> io::Result<(std::net::TcpListener, String)> {
    let addr = resolve(host, port)?[0];
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    s.set_reuse_address(true)?;
    s.set_nonblocking(true)?;
    s.bind(&SockAddr::from(addr))?;
    s.listen(BACKLOG)?;
    let listener: std::net::TcpListener = s.into();
    let local = listener.local_addr()?;
    Ok((listener, format!("tcp://{local}")))
}

/// Sets TCP_NODELAY on an accepted or connected std stream.
pub fn configure_tcp(stream: &std::net::TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    stream.set_nonblocking(true)
}

/// The address of an ipc endpoint: a filesystem path, or a Linux abstract name after `@`.
pub fn ipc_addr(path: &str) -> io::Result<UnixAddr> {
    match path.strip_prefix('@') {
        Some(name) => UnixAddr::from_abstract_name(name.as_bytes()),
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
pub fn ipc_listener(path: &str) -> io::Result<(UnixListener, IpcPath, String)> {
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
    l.set_nonblocking(true)?;
    // Only a file we bound ourselves is ours to remove: a bind that lost a race to another
    // process must not delete that process's socket.
    let guard = IpcPath((!path.starts_with('@')).then(|| PathBuf::from(path)));
    Ok((l, guard, format!("ipc://{path}")))
}

/// The error for an endpoint a stream backend cannot carry (inproc is handled by the driver).
pub fn not_a_stream(endpoint: &Endpoint) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{} is not a stream transport", endpoint.transport()),
    )
}

/// Tries `connect` on each resolved address in turn and returns the first success, or the
/// last failure (what libzmq does with a name that resolves to several addresses).
pub async fn connect_any<T, F, Fut>(addrs: Vec<SocketAddr>, mut connect: F) -> io::Result<T>
where
    F: FnMut(SocketAddr) -> Fut,
    Fut: std::future::Future<Output = io::Result<T>>,
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

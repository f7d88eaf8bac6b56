//! TCP ports for tests, without the race of "bind port 0, read the port, close, hope".
//!
//! A test that needs a port *before* anything listens on it (a connect that must precede the
//! bind, a process that binds later, a refused dial) used to bind port 0, read the port and
//! close the socket: in between, another process on the machine could be given the same port.
//! [`reserve_tcp_port`] keeps the port bound, but not listening, with SO_REUSEADDR, for as long
//! as the [`ReservedPort`] lives. On Linux that means:
//!
//! - a dial to the port is refused (nothing listens), as on a free port;
//! - a later listener that also sets SO_REUSEADDR (omq's listeners and libzmq's both do) can
//!   bind and listen on it;
//! - nobody else gets it meanwhile: binding port 0 and choosing an ephemeral port for an
//!   outgoing connection both skip a port someone holds, and a bind without SO_REUSEADDR fails.

use std::net::{Ipv4Addr, SocketAddr};

use socket2::{Domain, Protocol, Socket, Type};

/// A loopback TCP port held (bound, not listening) until this is dropped.
#[derive(Debug)]
pub struct ReservedPort {
    _holder: Socket,
    port: u16,
}

impl ReservedPort {
    /// The port number.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `tcp://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("tcp://127.0.0.1:{}", self.port)
    }
}

/// Holds a free loopback port: see the module's documentation for what holding means.
pub fn reserve_tcp_port() -> ReservedPort {
    let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).expect("tcp socket");
    s.set_reuse_address(true).expect("SO_REUSEADDR");
    s.bind(&SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into())
        .expect("bind 127.0.0.1:0");
    let port = s
        .local_addr()
        .expect("local address")
        .as_socket()
        .expect("an inet address")
        .port();
    ReservedPort { _holder: s, port }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::ErrorKind;
    use std::net::TcpStream;

    #[test]
    fn a_held_port_refuses_dials_and_plain_binds_but_admits_a_reusing_listener() {
        let held = reserve_tcp_port();
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, held.port()));
        let e = TcpStream::connect(addr).expect_err("nothing listens yet");
        assert_eq!(e.kind(), ErrorKind::ConnectionRefused);
        let plain = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        assert!(
            plain.bind(&addr.into()).is_err(),
            "held against plain binds"
        );
        let l = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        l.set_reuse_address(true).unwrap();
        l.bind(&addr.into()).unwrap();
        l.listen(8).unwrap();
        TcpStream::connect(addr).expect("the reusing listener takes dials");
    }
}

//! Endpoints: `tcp://host:port`, `ipc://path` (or `ipc://@abstract`), `inproc://name`, and the
//! compressed tcp transports `lz4+tcp://host:port` and `zstd+tcp://host:port` (see
//! [`crate::compress`]), which dial and listen exactly as tcp does.
//!
//! Parsing is pure; resolving host names and binding belong to the driver.

use std::fmt;
use std::str::FromStr;

use crate::compress::Compression;

/// An endpoint could not be parsed or uses a transport omq does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EndpointError {
    /// No `transport://` prefix.
    #[error("endpoint {0:?} has no transport (expected tcp://, ipc://, inproc://, udp://, lz4+tcp:// or zstd+tcp://)")]
    MissingTransport(String),
    /// A transport omq does not implement (pgm, epgm, norm, vmci, ws...).
    #[error(
        "transport {0:?} is not supported (omq has tcp, ipc, inproc, udp, lz4+tcp and zstd+tcp)"
    )]
    UnsupportedTransport(String),
    /// An ipc path (or abstract name) longer than a Unix socket address holds: 107 bytes on
    /// Linux (libzmq's ENAMETOOLONG).
    #[error("ipc path {path:?} is {len} bytes long; a Unix socket address holds at most {max}")]
    IpcPathTooLong {
        /// The path as given.
        path: String,
        /// Its length in bytes (an abstract name's without the `@`).
        len: usize,
        /// The most there is room for.
        max: usize,
    },
    /// The address part is malformed.
    #[error("invalid {transport} address {address:?}: {reason}")]
    InvalidAddress {
        /// The transport.
        transport: &'static str,
        /// The address as given.
        address: String,
        /// What is wrong.
        reason: &'static str,
    },
}

/// A tcp or udp host: `*` (any interface, for bind), an address, or a name to resolve. The
/// endpoint parser tells an address from a name once, so a backend never guesses again.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// `*`: every interface.
    Any,
    /// An IPv4 or IPv6 address (IPv6 written in brackets in the endpoint).
    Ip(std::net::IpAddr),
    /// A name to resolve.
    Name(String),
}

/// A parsed endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Endpoint {
    /// `tcp://host:port`; port 0 (or `*`) binds an ephemeral port. `lz4+tcp://` and
    /// `zstd+tcp://` are tcp too, with [`Endpoint::Tcp::compression`] set: a backend dials and
    /// listens as for tcp, and the session compresses.
    Tcp {
        /// Host part (brackets removed from IPv6 literals).
        host: Host,
        /// Port (0: any).
        port: u16,
        /// The compressed transport (`lz4+tcp://`, `zstd+tcp://`), None for plain tcp.
        compression: Option<Compression>,
    },
    /// `ipc://path`; a leading `@` names a Linux abstract socket.
    Ipc(String),
    /// `inproc://name`.
    Inproc(String),
    /// `udp://host:port` (RADIO connects, DISH binds; spec 48). A multicast address joins
    /// its group: a DISH binding `udp://239.0.0.1:5555` receives what a RADIO connected to
    /// the same endpoint sends.
    Udp {
        /// Host part (`*` binds every interface).
        host: Host,
        /// Port.
        port: u16,
    },
}

impl Endpoint {
    /// Whether the endpoint names one peer to dial. Connecting needs an address and a port:
    /// `*` for either is for binding (libzmq refuses it with EINVAL), and port 0, which
    /// nothing listens on, would only be dialled and refused for ever.
    pub fn check_dialable(&self) -> Result<(), EndpointError> {
        let (transport, host, port) = match self {
            Endpoint::Tcp { host, port, .. } => ("tcp", host, *port),
            Endpoint::Udp { host, port } => ("udp", host, *port),
            Endpoint::Ipc(_) | Endpoint::Inproc(_) => return Ok(()),
        };
        let reason = if *host == Host::Any {
            "a connection needs an address to dial, not *"
        } else if port == 0 {
            "a connection needs a port to dial, not * or 0"
        } else {
            return Ok(());
        };
        let text = self.to_string();
        Err(EndpointError::InvalidAddress {
            transport,
            address: text
                .split_once("://")
                .map_or(text.clone(), |(_, a)| a.into()),
            reason,
        })
    }

    /// The transport name.
    pub fn transport(&self) -> &'static str {
        match self {
            Endpoint::Tcp {
                compression: Some(c),
                ..
            } => c.scheme(),
            Endpoint::Tcp { .. } => "tcp",
            Endpoint::Ipc(_) => "ipc",
            Endpoint::Inproc(_) => "inproc",
            Endpoint::Udp { .. } => "udp",
        }
    }
}

impl Endpoint {
    /// The compressed transport this endpoint runs, if any.
    pub fn compression(&self) -> Option<Compression> {
        match self {
            Endpoint::Tcp { compression, .. } => *compression,
            _ => None,
        }
    }

    /// `resolved`, an address a backend bound for this endpoint and wrote as `tcp://...`,
    /// with this endpoint's scheme (`lz4+tcp://...` for a compressed one).
    pub fn rescheme(&self, resolved: String) -> String {
        match (self.compression(), resolved.strip_prefix("tcp://")) {
            (Some(c), Some(addr)) => format!("{}://{addr}", c.scheme()),
            _ => resolved,
        }
    }
}

impl FromStr for Endpoint {
    type Err = EndpointError;

    fn from_str(s: &str) -> Result<Self, EndpointError> {
        let Some((transport, address)) = s.split_once("://") else {
            return Err(EndpointError::MissingTransport(s.into()));
        };
        let bad = |transport, reason| EndpointError::InvalidAddress {
            transport,
            address: address.into(),
            reason,
        };
        let compression = Compression::from_scheme(transport);
        let transport = if compression.is_some() {
            "tcp"
        } else {
            transport
        };
        match transport {
            "tcp" => {
                let (host, port) = host_port(address).map_err(|reason| bad("tcp", reason))?;
                Ok(Endpoint::Tcp {
                    host,
                    port,
                    compression,
                })
            }
            "udp" => {
                let (host, port) = host_port(address).map_err(|reason| bad("udp", reason))?;
                Ok(Endpoint::Udp { host, port })
            }
            "ipc" => {
                if address.is_empty() || address == "@" {
                    return Err(bad("ipc", "empty path"));
                }
                let len = address.strip_prefix('@').unwrap_or(address).len();
                if len > IPC_PATH_MAX {
                    return Err(EndpointError::IpcPathTooLong {
                        path: address.into(),
                        len,
                        max: IPC_PATH_MAX,
                    });
                }
                Ok(Endpoint::Ipc(address.into()))
            }
            "inproc" => {
                if address.is_empty() {
                    return Err(bad("inproc", "empty name"));
                }
                Ok(Endpoint::Inproc(address.into()))
            }
            other => Err(EndpointError::UnsupportedTransport(other.into())),
        }
    }
}

/// The longest ipc path in bytes: `sun_path` holds 108 with the path's terminating NUL (an
/// abstract name's leading NUL, written `@`, takes that byte instead).
pub const IPC_PATH_MAX: usize = 107;

/// `host:port` of tcp and udp: `*` or a name or an IPv4 literal or a bracketed IPv6 one, then
/// a port number or `*` (0: any).
fn host_port(address: &str) -> Result<(Host, u16), &'static str> {
    // libzmq accepts "source;dest" (and, for udp, "interface;group"); omq does not (yet).
    if address.contains(';') {
        return Err("source addresses are not supported");
    }
    let Some((host, port)) = address.rsplit_once(':') else {
        return Err("expected host:port");
    };
    let port = if port == "*" {
        0
    } else {
        port.parse::<u16>()
            .map_err(|_| "port must be a number from 0 to 65535 or *")?
    };
    let host = if host == "*" {
        Host::Any
    } else if let Some(inner) = host.strip_prefix('[') {
        let Some(inner) = inner.strip_suffix(']') else {
            return Err("unclosed [ in IPv6 address");
        };
        match inner.parse::<std::net::Ipv6Addr>() {
            Ok(ip) => Host::Ip(ip.into()),
            Err(_) => return Err("invalid IPv6 address"),
        }
    } else if host.is_empty() {
        return Err("empty host");
    } else if host.contains(':') {
        return Err("IPv6 addresses must be in brackets");
    } else if let Ok(ip) = host.parse::<std::net::Ipv4Addr>() {
        Host::Ip(ip.into())
    } else {
        Host::Name(host.into())
    };
    Ok((host, port))
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Tcp {
                host,
                port,
                compression,
            } => {
                let scheme = compression.map_or("tcp", Compression::scheme);
                match host {
                    Host::Any => write!(f, "{scheme}://*:{port}"),
                    Host::Ip(ip) => {
                        write!(f, "{scheme}://{}", std::net::SocketAddr::new(*ip, *port))
                    }
                    Host::Name(h) => write!(f, "{scheme}://{h}:{port}"),
                }
            }
            Endpoint::Ipc(p) => write!(f, "ipc://{p}"),
            Endpoint::Inproc(n) => write!(f, "inproc://{n}"),
            Endpoint::Udp { host, port } => match host {
                Host::Any => write!(f, "udp://*:{port}"),
                Host::Ip(ip) => write!(f, "udp://{}", std::net::SocketAddr::new(*ip, *port)),
                Host::Name(h) => write!(f, "udp://{h}:{port}"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ipc_path_fits_a_unix_socket_address() {
        let longest = "x".repeat(IPC_PATH_MAX);
        for ok in [format!("ipc://{longest}"), format!("ipc://@{longest}")] {
            assert!(ok.parse::<Endpoint>().is_ok(), "{ok}");
        }
        for long in [format!("ipc://{longest}y"), format!("ipc://@{longest}y")] {
            assert!(
                matches!(
                    long.parse::<Endpoint>(),
                    Err(EndpointError::IpcPathTooLong {
                        len: 108,
                        max: 107,
                        ..
                    })
                ),
                "{long}"
            );
        }
    }

    #[test]
    fn only_an_address_and_a_port_can_be_dialled() {
        for text in [
            "tcp://127.0.0.1:*",
            "tcp://127.0.0.1:0",
            "tcp://*:5555",
            "tcp://*:*",
            "tcp://localhost:*",
            "lz4+tcp://[::1]:0",
            "udp://*:5555",
            "udp://127.0.0.1:*",
        ] {
            let ep: Endpoint = text.parse().unwrap();
            assert!(
                matches!(
                    ep.check_dialable(),
                    Err(EndpointError::InvalidAddress { .. })
                ),
                "{text}"
            );
        }
        for text in [
            "tcp://127.0.0.1:5555",
            "tcp://localhost:1",
            "udp://239.0.0.1:5555",
            "ipc://@x",
            "inproc://x",
        ] {
            let ep: Endpoint = text.parse().unwrap();
            assert_eq!(ep.check_dialable(), Ok(()), "{text}");
        }
    }

    #[test]
    fn parses_the_usual_forms() {
        let ep: Endpoint = "tcp://127.0.0.1:5555".parse().unwrap();
        assert_eq!(ep.to_string(), "tcp://127.0.0.1:5555");
        let ep: Endpoint = "tcp://[::1]:0".parse().unwrap();
        assert_eq!(ep.to_string(), "tcp://[::1]:0");
        let ep: Endpoint = "tcp://*:*".parse().unwrap();
        assert_eq!(
            ep,
            Endpoint::Tcp {
                host: Host::Any,
                port: 0,
                compression: None,
            }
        );
        for scheme in ["lz4+tcp", "zstd+tcp"] {
            let text = format!("{scheme}://127.0.0.1:5555");
            let ep: Endpoint = text.parse().unwrap();
            assert_eq!(ep.to_string(), text);
            assert_eq!(ep.compression().unwrap().scheme(), scheme);
            assert_eq!(ep.transport(), scheme);
            assert_eq!(
                ep.rescheme("tcp://127.0.0.1:4000".into()),
                format!("{scheme}://127.0.0.1:4000")
            );
        }
        assert!("lz4+ipc://x".parse::<Endpoint>().is_err());
        assert_eq!(
            "ipc://@abstract".parse::<Endpoint>().unwrap(),
            Endpoint::Ipc("@abstract".into())
        );
        assert_eq!(
            "inproc://x".parse::<Endpoint>().unwrap(),
            Endpoint::Inproc("x".into())
        );
    }

    #[test]
    fn refuses_bad_ones_clearly() {
        for bad in [
            "127.0.0.1:5555",
            "tcp://127.0.0.1",
            "tcp://:5555",
            "tcp://host:70000",
            "tcp://::1:5",
            "tcp://[::1:5",
            "ipc://",
            "ipc://@",
            "inproc://",
            "pgm://eth0;239.0.0.1:5555",
        ] {
            assert!(bad.parse::<Endpoint>().is_err(), "{bad}");
        }
        for bad in [
            "udp://x",
            "udp://:1",
            "udp://[::1:5",
            "udp://eth0;239.0.0.1:5555",
        ] {
            assert!(
                matches!(
                    bad.parse::<Endpoint>(),
                    Err(EndpointError::InvalidAddress {
                        transport: "udp",
                        ..
                    })
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            "norm://x:1".parse::<Endpoint>(),
            Err(EndpointError::UnsupportedTransport(_))
        ));
    }

    #[test]
    fn an_address_is_told_from_a_name_once() {
        let host = |s: &str| match s.parse::<Endpoint>().unwrap() {
            Endpoint::Tcp { host, .. } | Endpoint::Udp { host, .. } => host,
            other => panic!("{other:?}"),
        };
        assert_eq!(host("tcp://10.1.2.3:1"), Host::Ip([10, 1, 2, 3].into()));
        assert_eq!(
            host("udp://[::1]:1"),
            Host::Ip(std::net::Ipv6Addr::LOCALHOST.into())
        );
        assert_eq!(host("tcp://localhost:1"), Host::Name("localhost".into()));
        assert_eq!(host("tcp://10.1.2:1"), Host::Name("10.1.2".into()));
        assert_eq!(host("tcp://*:1"), Host::Any);
    }

    #[test]
    fn parses_udp_as_tcp_is_parsed() {
        for text in [
            "udp://127.0.0.1:5555",
            "udp://*:5555",
            "udp://[::1]:7",
            "udp://239.0.0.1:1",
        ] {
            let ep: Endpoint = text.parse().unwrap();
            assert_eq!(ep.to_string(), text);
            assert_eq!(ep.transport(), "udp");
            assert_eq!(ep.compression(), None);
        }
        assert_eq!(
            "udp://*:*".parse::<Endpoint>().unwrap(),
            Endpoint::Udp {
                host: Host::Any,
                port: 0
            }
        );
    }
}

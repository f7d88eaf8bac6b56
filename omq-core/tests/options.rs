//! Socket options as libzmq defines them: which socket types accept each option, the ranges
//! of values, the integer forms, and libzmq's names.

use std::time::Duration;

use bytes::Bytes;
use omq_core::options::{OptionError, OptionName, RouterNotify};
use omq_core::{Options, SocketType};

use OptionName as N;
use SocketType as T;

/// The types each type-specific option applies to, as libzmq accepts them; every other option
/// applies to every type.
fn libzmq_types(name: OptionName) -> Option<&'static [SocketType]> {
    Some(match name {
        N::ConnectRoutingId => &[T::Router, T::Stream],
        N::RouterMandatory | N::RouterHandover | N::RouterNotify => &[T::Router],
        N::StreamNotify => &[T::Stream],
        N::HelloMsg => &[T::Router, T::Dealer, T::Server, T::Client, T::Peer],
        N::DisconnectMsg => &[T::Router, T::Server, T::Peer],
        N::HiccupMsg => &[T::Dealer, T::Client, T::Peer],
        N::ProbeRouter => &[T::Router, T::Dealer, T::Req],
        N::ReqCorrelate | N::ReqRelaxed => &[T::Req],
        N::Conflate => &[T::Dealer, T::Pull, T::Push, T::Pub, T::Sub],
        N::Subscribe | N::Unsubscribe => &[T::Sub, T::XPub],
        N::XpubVerbose | N::XpubVerboser | N::XpubManual | N::XpubWelcomeMsg => &[T::XPub],
        N::XpubNodrop => &[T::Pub, T::XPub],
        N::XsubVerboseUnsubscribe => &[T::XSub],
        N::MaxSubscriptions => &[T::Pub, T::XPub, T::Radio],
        N::InvertMatching => &[T::Pub, T::XPub, T::Sub, T::XSub],
        _ => return None,
    })
}

#[test]
fn each_option_applies_to_the_types_libzmq_accepts_it_on() {
    let names = [
        N::SndHwm,
        N::Linger,
        N::RoutingId,
        N::ConnectRoutingId,
        N::RouterMandatory,
        N::RouterHandover,
        N::RouterNotify,
        N::StreamNotify,
        N::HelloMsg,
        N::DisconnectMsg,
        N::HiccupMsg,
        N::ProbeRouter,
        N::ReqCorrelate,
        N::ReqRelaxed,
        N::Conflate,
        N::Subscribe,
        N::Unsubscribe,
        N::XpubVerbose,
        N::XpubVerboser,
        N::XpubManual,
        N::XpubWelcomeMsg,
        N::XpubNodrop,
        N::XsubVerboseUnsubscribe,
        N::MaxSubscriptions,
        N::InvertMatching,
        N::MaxMsgSize,
        N::HeartbeatIvl,
        N::CompressionLevel,
    ];
    for name in names {
        for t in SocketType::ALL {
            let want = libzmq_types(name).is_none_or(|types| types.contains(&t));
            assert_eq!(name.applies_to(t), want, "{name} on {t:?}");
        }
    }
    // IMMEDIATE: everywhere but PEER (whose connect_peer names a pipe at once).
    for t in SocketType::ALL {
        assert_eq!(
            N::Immediate.applies_to(t),
            t != T::Peer,
            "IMMEDIATE on {t:?}"
        );
    }
}

#[test]
fn an_option_on_the_wrong_type_is_refused_by_name() {
    let o = Options::default().req_correlate(true);
    assert_eq!(
        o.validate(T::Dealer),
        Err(OptionError::NotApplicable {
            option: N::ReqCorrelate,
            socket_type: T::Dealer
        })
    );
    assert_eq!(o.validate(T::Req), Ok(()));
}

#[test]
fn router_notify_has_libzmqs_integer_form() {
    for bits in 0..=3 {
        let n = RouterNotify::from_bits(bits).expect("a known flag set");
        assert_eq!(n.connect, bits & 1 != 0, "{bits}");
        assert_eq!(n.disconnect, bits & 2 != 0, "{bits}");
        assert_eq!(n.bits(), bits);
    }
    for bits in [4, 5, 8, -1, i32::MIN] {
        assert_eq!(RouterNotify::from_bits(bits), None, "{bits}");
    }
}

/// Whether a value is accepted, checked as a socket would (on a DEALER, which takes all these).
fn accepted(o: Options) -> bool {
    match o.validate(T::Dealer) {
        Ok(()) => true,
        Err(OptionError::InvalidValue { .. }) => false,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn values_are_checked_at_libzmqs_bounds() {
    let d = Options::default;
    let ms = Duration::from_millis;
    let s = Duration::from_secs;
    // HEARTBEAT_TTL travels in deciseconds in a 16-bit field: at most 6553.599 s.
    assert!(accepted(d().heartbeat_ttl(ms(6_553_599))));
    assert!(!accepted(d().heartbeat_ttl(ms(6_553_600))));
    // ZAP_DOMAIN: at most 255 bytes.
    assert!(accepted(d().zap_domain(Bytes::from(vec![b'z'; 255]))));
    assert!(!accepted(d().zap_domain(Bytes::from(vec![b'z'; 256]))));
    // Keepalive: whole seconds, at least one probe.
    assert!(accepted(d().tcp_keepalive_cnt(Some(1))));
    assert!(!accepted(d().tcp_keepalive_cnt(Some(0))));
    assert!(accepted(d().tcp_keepalive_cnt(None)));
    assert!(accepted(d().tcp_keepalive_idle(Some(s(5)))));
    assert!(!accepted(d().tcp_keepalive_idle(Some(ms(1500)))));
    assert!(accepted(d().tcp_keepalive_intvl(Some(s(2)))));
    assert!(!accepted(d().tcp_keepalive_intvl(Some(ms(2500)))));
    // BACKLOG: at least 1.
    assert!(accepted(d().backlog(1)));
    assert!(!accepted(d().backlog(0)));
    assert!(!accepted(d().backlog(-1)));
    // TCP_MAXRT: milliseconds in 32 bits.
    assert!(accepted(d().tcp_maxrt(Some(ms(u64::from(u32::MAX))))));
    assert!(!accepted(d().tcp_maxrt(Some(ms(u64::from(u32::MAX) + 1)))));
    // BINDTODEVICE: an interface name of 1 to 15 bytes.
    assert!(accepted(d().bind_to_device(Some("a".repeat(15)))));
    assert!(!accepted(d().bind_to_device(Some("a".repeat(16)))));
    assert!(!accepted(d().bind_to_device(Some(String::new()))));
    // COMPRESSION_LEVEL: the levels the zstd encoder has.
    for level in [-7, 0, 1, 4] {
        assert!(accepted(d().compression_level(level)), "{level}");
    }
    for level in [-8, 5, 22] {
        assert!(!accepted(d().compression_level(level)), "{level}");
    }
    // COMPRESSION_DICT: 1 to 8192 bytes.
    assert!(accepted(
        d().compression_dict(Some(Bytes::from(vec![1; 8192])))
    ));
    assert!(!accepted(
        d().compression_dict(Some(Bytes::from(vec![1; 8193])))
    ));
    assert!(!accepted(d().compression_dict(Some(Bytes::new()))));
    // ROUTING_ID: 1 to 255 bytes, not starting with a zero byte.
    assert!(accepted(d().routing_id(Bytes::from(vec![b'r'; 255]))));
    assert!(!accepted(d().routing_id(Bytes::from(vec![b'r'; 256]))));
    assert!(!accepted(d().routing_id(Bytes::new())));
    assert!(!accepted(d().routing_id(Bytes::from_static(b"\0id"))));
    // Application properties: X- and at least one more character from the token set.
    assert!(accepted(d().metadata("X-a", "v")));
    assert!(accepted(d().metadata("X-Trace.id_1+2", "v")));
    assert!(!accepted(d().metadata("X-", "v")));
    assert!(!accepted(d().metadata("Y-ab", "v")));
    assert!(!accepted(d().metadata("X-a b", "v")));
}

#[test]
fn the_first_invalid_value_is_the_one_reported() {
    let o = Options::default()
        .backlog(0)
        .zap_domain(Bytes::from(vec![0; 300]));
    match o.validate(T::Dealer) {
        Err(OptionError::InvalidValue { option, .. }) => assert_eq!(option, N::Backlog),
        other => panic!("{other:?}"),
    }
}

#[test]
fn options_are_named_as_in_libzmq() {
    for (name, text) in [
        (N::SndHwm, "SNDHWM"),
        (N::RcvHwm, "RCVHWM"),
        (N::RouterMandatory, "ROUTER_MANDATORY"),
        (N::XpubWelcomeMsg, "XPUB_WELCOME_MSG"),
        (N::MaxSubscriptions, "MAX_SUBSCRIPTIONS"),
    ] {
        assert_eq!(name.as_str(), text);
        assert_eq!(name.to_string(), text);
    }
}

#[test]
fn zero_means_the_system_default_for_buffers_and_no_limit_for_transport_timeouts() {
    // libzmq: SNDBUF/RCVBUF 0 (or -1) leave the kernel's size; CONNECT_TIMEOUT and TCP_MAXRT
    // 0 mean none. Any positive value is kept as given.
    use omq_core::options::SocketOption as O;
    let mut s = omq_core::Socket::new(T::Dealer, Options::default(), 1).unwrap();
    let second = Duration::from_secs(1);
    for opt in [
        O::SndBuf(Some(1)),
        O::RcvBuf(Some(1)),
        O::ConnectTimeout(Some(second)),
        O::TcpMaxRt(Some(second)),
    ] {
        s.set_option(opt).unwrap();
    }
    let t = s.options().transport();
    assert_eq!((t.sndbuf, t.rcvbuf), (Some(1), Some(1)));
    assert_eq!(
        (t.connect_timeout, t.tcp_maxrt),
        (Some(second), Some(second))
    );
    for opt in [
        O::SndBuf(Some(0)),
        O::RcvBuf(Some(0)),
        O::ConnectTimeout(Some(Duration::ZERO)),
        O::TcpMaxRt(Some(Duration::ZERO)),
    ] {
        s.set_option(opt).unwrap();
    }
    let t = s.options().transport();
    assert_eq!((t.sndbuf, t.rcvbuf), (None, None));
    assert_eq!((t.connect_timeout, t.tcp_maxrt), (None, None));
}

#[test]
fn the_high_water_marks_read_back_as_set() {
    use omq_core::options::SocketOption as O;
    let mut s = omq_core::Socket::new(T::Dealer, Options::default(), 1).unwrap();
    assert_eq!(
        (s.options().get_send_hwm(), s.options().get_recv_hwm()),
        (1000, 1000),
        "libzmq's defaults"
    );
    s.set_option(O::SndHwm(7)).unwrap();
    s.set_option(O::RcvHwm(9)).unwrap();
    assert_eq!(
        (s.options().get_send_hwm(), s.options().get_recv_hwm()),
        (7, 9)
    );
}

#[test]
fn linger_timeouts_routing_id_and_mechanism_read_back_as_set() {
    use omq_core::options::SocketOption as O;
    let (a, b, c) = (
        Duration::from_millis(1),
        Duration::from_millis(2),
        Duration::from_millis(3),
    );
    let mut s = omq_core::Socket::new(T::Dealer, Options::default().plain_server(true), 1).unwrap();
    s.set_option(O::Linger(Some(a))).unwrap();
    s.set_option(O::SndTimeo(Some(b))).unwrap();
    s.set_option(O::RcvTimeo(Some(c))).unwrap();
    s.set_option(O::RoutingId(Bytes::from_static(b"me")))
        .unwrap();
    let o = s.options();
    assert_eq!(
        (o.get_linger(), o.get_send_timeout(), o.get_recv_timeout()),
        (Some(a), Some(b), Some(c))
    );
    assert_eq!(&o.get_routing_id()[..], b"me");
    assert_eq!(
        o.get_mechanism(),
        &omq_core::mechanism::MechanismConfig::plain_server()
    );
}

/// HEARTBEAT_TTL of zero (the default) sends no TTL in PINGs; any other value is sent.
#[test]
fn a_zero_heartbeat_ttl_sends_none() {
    let s = omq_core::Socket::new(T::Dealer, Options::default(), 1).unwrap();
    assert_eq!(s.session_config().heartbeat_ttl, None);
    let ttl = Duration::from_secs(2);
    let s = omq_core::Socket::new(T::Dealer, Options::default().heartbeat_ttl(ttl), 1).unwrap();
    assert_eq!(s.session_config().heartbeat_ttl, Some(ttl));
}

/// udp:// is for a DISH binding and a RADIO connecting; any other pairing is refused at once.
#[test]
fn udp_is_for_a_dish_binding_and_a_radio_connecting() {
    let now = std::time::Instant::now();
    let ep = "udp://127.0.0.1:5556";
    let socket = |t| omq_core::Socket::new(t, Options::default(), 1).unwrap();
    assert!(socket(T::Dish).bind(ep).is_ok());
    assert!(socket(T::Radio).connect(ep, now).is_ok());
    let wrong = |r: Result<omq_core::Endpoint, omq_core::SocketError>| {
        matches!(r, Err(omq_core::SocketError::WrongType { .. }))
    };
    assert!(wrong(socket(T::Radio).bind(ep)));
    assert!(wrong(socket(T::Dish).connect(ep, now)));
    assert!(wrong(socket(T::Pub).bind(ep)));
    assert!(wrong(socket(T::Sub).connect(ep, now)));
}

/// libzmq's LINGER is zero for SUB, XSUB and DISH unless set (their queues hold subscriptions,
/// and an XSUB's messages, for publishers that may never come), infinite for every other type;
/// a LINGER that was set is kept, infinite included.
#[test]
fn linger_is_zero_for_subscribers_unless_set() {
    for t in SocketType::ALL {
        let s = omq_core::Socket::new(t, Options::default(), 1).unwrap();
        let want = matches!(t, T::Sub | T::XSub | T::Dish).then_some(Duration::ZERO);
        assert_eq!(s.options().get_linger(), want, "{t:?}");
        for set in [None, Some(Duration::from_secs(1))] {
            let s = omq_core::Socket::new(t, Options::default().linger(set), 1).unwrap();
            assert_eq!(s.options().get_linger(), set, "{t:?} with LINGER set");
        }
    }
}

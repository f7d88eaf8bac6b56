//! The embedding example (`examples/embedded.rs`: omq-core sockets on a plain `mio` loop, no
//! async runtime) against a real libzmq, both ways. The example's own code is what runs here.

#[allow(dead_code, unreachable_pub)]
#[path = "../examples/embedded.rs"]
mod embedded;

use std::time::Duration;

use conformance::libzmq_peer::LibzmqPeer;

fn libzmq() -> LibzmqPeer {
    LibzmqPeer::spawn().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn an_embedded_req_asks_a_libzmq_rep_and_reconnects_until_it_is_there() {
    // The REP binds only after the REQ has started: the embedded socket keeps redialling.
    // The port is held (refusing dials) until the REP binds it.
    let port = conformance::ports::reserve_tcp_port();
    let ep = port.endpoint();
    let server = std::thread::spawn({
        let ep = ep.clone();
        move || {
            std::thread::sleep(Duration::from_millis(300));
            let mut peer = libzmq();
            peer.socket(1, "REP").unwrap();
            peer.bind(1, &ep).unwrap();
            for _ in 0..3 {
                let req = peer.recv(1, Duration::from_secs(20)).unwrap();
                let parts: Vec<&[u8]> = req.iter().map(Vec::as_slice).collect();
                peer.send(1, &parts).unwrap();
            }
            peer
        }
    });
    let replies = embedded::ask(&ep, 3).unwrap();
    let bodies: Vec<Vec<u8>> = replies.iter().map(|m| m.parts()[0].to_vec()).collect();
    assert_eq!(
        bodies,
        [&b"request 0"[..], b"request 1", b"request 2"].map(<[u8]>::to_vec)
    );
    drop(server.join().unwrap());
}

#[test]
fn an_embedded_rep_serves_a_libzmq_req() {
    let (tx, rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        embedded::serve("tcp://127.0.0.1:0", 2, |bound| {
            tx.send(bound.to_string()).unwrap()
        })
    });
    let ep = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    let mut peer = libzmq();
    peer.socket(1, "REQ").unwrap();
    peer.connect(1, &ep).unwrap();
    for body in [&b"hello"[..], b"again"] {
        peer.send(1, &[body]).unwrap();
        assert_eq!(
            peer.recv(1, Duration::from_secs(20)).unwrap(),
            vec![body.to_vec()]
        );
    }
    server.join().unwrap().unwrap();
}

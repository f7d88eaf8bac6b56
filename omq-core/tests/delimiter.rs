//! REQ and REP keep the empty delimiter in front of a request or reply as a flag of the
//! message, so that a one-part request or reply is one part inline and allocates nothing. These
//! tests pin what the flag must never change: what goes on the wire, what a socket of another
//! type receives in process (the delimiter as a part), and what an application sees (no
//! delimiter, no flag).

use std::time::Instant;

use omq_core::pipe::{Outbound, PipeId};
use omq_core::sim::Pair;
use omq_core::{Message, Options, PeerInfo, SessionConfig, SessionEvent, SocketType};

/// A core socket of type `t` with one ready peer of type `peer`.
fn socket(t: SocketType, peer: SocketType) -> (omq_core::Socket, PipeId) {
    let now = Instant::now();
    let mut s = omq_core::Socket::new(t, Options::default(), 1).unwrap();
    let (pipe, _) = s.handle_accepted("inproc://delimiter", now);
    s.handle_ready(pipe, PeerInfo::new(peer), now);
    (s, pipe)
}

/// The one message `s` queued for `pipe`, as an in-process transport takes it.
fn taken(s: &mut omq_core::Socket, pipe: PipeId) -> Message {
    let mut got: Vec<Message> = std::iter::from_fn(|| s.poll_transmit(pipe))
        .filter_map(|o| match o {
            Outbound::Message(m) => Some(m),
            _ => None,
        })
        .collect();
    assert_eq!(got.len(), 1);
    got.pop().unwrap()
}

#[test]
fn a_request_and_its_reply_cross_in_process_as_one_part_behind_the_flag() {
    let (mut req, req_pipe) = socket(SocketType::Req, SocketType::Rep);
    let (mut rep, rep_pipe) = socket(SocketType::Rep, SocketType::Req);
    req.send(Message::from("question")).unwrap();
    let request = taken(&mut req, req_pipe);
    assert!(request.delimited());
    assert_eq!(request.len(), 1, "the delimiter is no part of its own");
    assert_eq!(request, Message::multipart(["", "question"]));

    rep.handle_message(rep_pipe, request).unwrap();
    let body = rep.recv().unwrap();
    assert!(!body.delimited(), "an application never sees the flag");
    assert_eq!(body, Message::from("question"));
    assert_eq!(body.len(), 1);

    rep.send(Message::from("answer")).unwrap();
    let reply = taken(&mut rep, rep_pipe);
    assert!(reply.delimited());
    assert_eq!(reply.len(), 1);
    assert_eq!(reply, Message::multipart(["", "answer"]));

    req.handle_message(req_pipe, reply).unwrap();
    let got = req.recv().unwrap();
    assert!(!got.delimited());
    assert_eq!(got, Message::from("answer"));
}

#[test]
fn a_router_or_dealer_peer_gets_the_delimiter_as_a_part() {
    // A REQ sends to a ROUTER with the delimiter as a part: the ROUTER (in process, say)
    // takes the message as it is.
    let (mut req, req_pipe) = socket(SocketType::Req, SocketType::Router);
    req.send(Message::from("q")).unwrap();
    let request = taken(&mut req, req_pipe);
    assert!(!request.delimited());
    assert_eq!(request.len(), 2);

    let (mut router, router_pipe) = socket(SocketType::Router, SocketType::Req);
    router.handle_message(router_pipe, request).unwrap();
    let got = router.recv().unwrap();
    assert_eq!(got.len(), 3, "routing id, delimiter, body");
    assert!(got.parts()[1].is_empty());
    assert_eq!(&got.parts()[2][..], b"q");

    // A REP replies to a DEALER the same way, whether the request came with the delimiter
    // as a part (in process) or as the flag (a session reads it so).
    let (mut rep, rep_pipe) = socket(SocketType::Rep, SocketType::Dealer);
    let (mut req2, req2_pipe) = socket(SocketType::Req, SocketType::Rep);
    req2.send(Message::from("flagged")).unwrap();
    let flagged = taken(&mut req2, req2_pipe);
    assert!(flagged.delimited());
    for request in [Message::multipart(["", "ask"]), flagged] {
        rep.handle_message(rep_pipe, request).unwrap();
        assert_eq!(rep.recv().unwrap().len(), 1);
        rep.send(Message::from("told")).unwrap();
        let reply = taken(&mut rep, rep_pipe);
        let (mut dealer, dealer_pipe) = socket(SocketType::Dealer, SocketType::Rep);
        dealer.handle_message(dealer_pipe, reply).unwrap();
        let got = dealer.recv().unwrap();
        assert!(!got.delimited());
        assert_eq!(got.len(), 2);
        assert_eq!(got, Message::multipart(["", "told"]));
    }
}

#[test]
fn a_reply_behind_routing_ids_keeps_them_as_parts() {
    let (mut rep, rep_pipe) = socket(SocketType::Rep, SocketType::Dealer);
    rep.handle_message(rep_pipe, Message::multipart(["id", "", "ask"]))
        .unwrap();
    assert_eq!(rep.recv().unwrap(), Message::from("ask"));
    rep.send(Message::from("told")).unwrap();
    let reply = taken(&mut rep, rep_pipe);
    assert!(!reply.delimited());
    assert_eq!(reply.len(), 3);
    assert_eq!(reply, Message::multipart(["id", "", "told"]));
}

fn cfg(t: SocketType) -> SessionConfig {
    SessionConfig::new(t)
}

/// The messages `end` received since the last call.
fn fresh(end: &mut omq_core::sim::End) -> Vec<Message> {
    std::mem::take(&mut end.events)
        .into_iter()
        .filter_map(|e| match e {
            SessionEvent::Message(m) => Some(m),
            _ => None,
        })
        .collect()
}

#[test]
fn a_req_or_rep_session_reads_the_delimiter_into_the_flag_and_writes_it_back() {
    let mut p = Pair::new(cfg(SocketType::Req), cfg(SocketType::Rep));
    p.drive();
    p.a.session
        .send_message(&Message::multipart(["", "ping"]))
        .unwrap();
    p.drive();
    let got = fresh(&mut p.b);
    assert_eq!(got, vec![Message::multipart(["", "ping"])]);
    assert!(got[0].delimited());
    assert_eq!(got[0].len(), 1);

    // Written back from the flag, read back into it.
    p.b.session.send_message(&got[0]).unwrap();
    p.drive();
    let back = fresh(&mut p.a);
    assert_eq!(back, vec![Message::multipart(["", "ping"])]);
    assert!(back[0].delimited());

    // Only the first empty part, and only in front of more: a lone empty part, or a second
    // empty part, stays a part.
    p.a.session
        .send_message(&Message::multipart(["", "", "x"]))
        .unwrap();
    p.a.session.send_message(&Message::multipart([""])).unwrap();
    p.a.session
        .send_message(&Message::multipart(["id", "", "x"]))
        .unwrap();
    p.drive();
    let got = fresh(&mut p.b);
    assert_eq!(
        got,
        vec![
            Message::multipart(["", "", "x"]),
            Message::multipart([""]),
            Message::multipart(["id", "", "x"]),
        ]
    );
    let shape: Vec<(bool, usize)> = got.iter().map(|m| (m.delimited(), m.len())).collect();
    assert_eq!(shape, [(true, 2), (false, 1), (false, 3)]);
}

#[test]
fn the_flag_goes_on_the_wire_as_the_empty_frame_it_stands_for() {
    // A REP's flagged reply to a DEALER, whose session keeps every part.
    let mut p = Pair::new(cfg(SocketType::Dealer), cfg(SocketType::Rep));
    p.drive();
    p.a.session
        .send_message(&Message::multipart(["", "ask"]))
        .unwrap();
    p.drive();
    let request = fresh(&mut p.b).pop().unwrap();
    assert!(request.delimited());
    p.b.session.send_message(&request).unwrap();
    p.drive();
    let got = fresh(&mut p.a);
    assert_eq!(got, vec![Message::multipart(["", "ask"])]);
    assert!(!got[0].delimited());
    assert_eq!(got[0].len(), 2);
}

#[test]
fn the_flag_counts_against_max_parts() {
    let mut rep = cfg(SocketType::Rep);
    rep.max_parts = 2;
    let mut p = Pair::new(cfg(SocketType::Req), rep);
    p.drive();
    p.a.session
        .send_message(&Message::multipart(["", "a"]))
        .unwrap();
    p.drive();
    assert_eq!(fresh(&mut p.b).len(), 1);
    assert!(p.b.error.is_none(), "two parts on the wire, two allowed");
    p.a.session
        .send_message(&Message::multipart(["", "a", "b"]))
        .unwrap();
    p.drive();
    assert!(fresh(&mut p.b).is_empty());
    assert!(p.b.error.is_some(), "three parts on the wire, two allowed");
}

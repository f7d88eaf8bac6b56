//! The actions a socket asks of its driver, as a driver sees them: `Action::Flush` is
//! edge-triggered (one per pipe until the driver has taken everything queued), and only for a
//! pipe whose connection is up. The simulated network pulls from every connection on each
//! step, so its end-to-end tests would pass with no Flush at all; a real driver writes only
//! when asked, and a lost Flush is a stalled connection.

use std::time::Instant;

use omq_core::pipe::{Outbound, PipeId};
use omq_core::socket::Action;
use omq_core::{Message, Options, PeerInfo, Socket, SocketType};

fn flushes(s: &mut Socket) -> Vec<PipeId> {
    std::iter::from_fn(|| s.poll_action())
        .filter_map(|a| match a {
            Action::Flush { pipe } => Some(pipe),
            _ => None,
        })
        .collect()
}

fn transmitted(s: &mut Socket, pipe: PipeId) -> Vec<Message> {
    std::iter::from_fn(|| s.poll_transmit(pipe))
        .filter_map(|o| match o {
            Outbound::Message(m) => Some(m),
            _ => None,
        })
        .collect()
}

#[test]
fn a_flush_is_asked_once_per_batch_and_again_after_the_driver_drained_it() {
    let now = Instant::now();
    let mut s = Socket::new(SocketType::Push, Options::default(), 1).unwrap();
    let (pipe, _) = s.handle_accepted("tcp://127.0.0.1:1", now);
    s.handle_ready(pipe, PeerInfo::new(SocketType::Pull), now);
    assert!(s.can_send(), "a PUSH with a ready peer takes a send");
    let _ = flushes(&mut s);
    let _ = transmitted(&mut s, pipe);
    assert!(
        flushes(&mut s).is_empty(),
        "nothing queued, nothing to flush"
    );

    s.send(Message::from("one")).unwrap();
    assert_eq!(flushes(&mut s), [pipe], "a message queued: one Flush");
    s.send(Message::from("two")).unwrap();
    assert!(
        flushes(&mut s).is_empty(),
        "a Flush the driver has not acted on yet covers the next message too"
    );
    assert_eq!(
        transmitted(&mut s, pipe),
        [Message::from("one"), Message::from("two")]
    );
    // `poll_transmit` said None: the next message needs a new Flush.
    s.send(Message::from("three")).unwrap();
    assert_eq!(flushes(&mut s), [pipe]);
    assert_eq!(transmitted(&mut s, pipe), [Message::from("three")]);
}

#[test]
fn no_flush_for_a_pipe_whose_connection_is_not_up() {
    let now = Instant::now();
    let mut s = Socket::new(SocketType::Push, Options::default(), 1).unwrap();
    // A connecting PUSH queues for its peer before the connection exists (libzmq does), but
    // there is nothing to write to yet.
    s.connect("tcp://127.0.0.1:1", now).unwrap();
    let _ = std::iter::from_fn(|| s.poll_action()).count();
    s.send(Message::from("early")).unwrap();
    assert!(
        flushes(&mut s).is_empty(),
        "asked to flush a connection that is not up"
    );
}

/// A command asks for a Flush even while one is pending: the in-process driver may hold a
/// pipe's messages back (its Flush stays pending), and a subscription must still go at once.
#[test]
fn a_command_asks_for_a_flush_even_while_one_is_pending() {
    let now = Instant::now();
    let mut s = Socket::new(SocketType::XSub, Options::default(), 1).unwrap();
    let (pipe, _) = s.handle_accepted("inproc://x", now);
    s.handle_ready(pipe, PeerInfo::new(SocketType::XPub), now);
    let _ = flushes(&mut s);
    s.send(Message::from("data")).unwrap();
    assert_eq!(flushes(&mut s), [pipe]);
    s.send(Message::from(&b"\x01topic"[..])).unwrap();
    assert_eq!(flushes(&mut s), [pipe], "the subscription asks again");
    // A pipe that is not up asks nothing, command or not.
    let mut idle = Socket::new(SocketType::Sub, Options::default(), 1).unwrap();
    idle.connect("tcp://127.0.0.1:1", now).unwrap();
    let _ = std::iter::from_fn(|| idle.poll_action()).count();
    idle.subscribe(b"t").unwrap();
    assert!(flushes(&mut idle).is_empty());
}

/// `transmit_into`, the bulk form of `poll_transmit`: commands first and all of them, then at
/// most `max` messages in order; the pipe counts as drained (the next message asks for a new
/// Flush) only when nothing is left, and an inactive pipe gives nothing.
#[test]
fn transmit_into_moves_commands_then_at_most_max_messages() {
    use omq_core::pipe::Command;
    use std::collections::VecDeque;
    let now = Instant::now();
    let mut s = Socket::new(SocketType::XSub, Options::default(), 1).unwrap();
    let (pipe, _) = s.handle_accepted("inproc://x", now);
    s.handle_ready(pipe, PeerInfo::new(SocketType::XPub), now);
    let _ = flushes(&mut s);
    for m in ["a", "b", "c"] {
        s.send(Message::from(m)).unwrap();
    }
    s.send(Message::from(&b"\x01t"[..])).unwrap();
    let _ = flushes(&mut s);
    let (mut cmds, mut msgs) = (Vec::new(), VecDeque::new());
    assert!(
        !s.transmit_into(pipe, &mut cmds, &mut msgs, 0),
        "messages remain"
    );
    assert_eq!(cmds, [Command::Subscribe(bytes::Bytes::from_static(b"t"))]);
    assert!(msgs.is_empty(), "max 0 moves no message");
    assert!(!s.transmit_into(pipe, &mut cmds, &mut msgs, 2));
    assert_eq!(msgs, [Message::from("a"), Message::from("b")]);
    assert_eq!(cmds.len(), 1, "no command was left to move");
    // Still undrained: the Flush is still pending, so a new message asks for none.
    s.send(Message::from("d")).unwrap();
    assert!(flushes(&mut s).is_empty());
    assert!(
        s.transmit_into(pipe, &mut cmds, &mut msgs, 5),
        "everything fits"
    );
    assert_eq!(
        msgs,
        ["a", "b", "c", "d"].map(Message::from),
        "appended, in order"
    );
    // Drained: the next message asks for a Flush again.
    s.send(Message::from("e")).unwrap();
    assert_eq!(flushes(&mut s), [pipe]);
    // Into an empty queue, everything at once (the queues trade places).
    let mut fresh = VecDeque::new();
    assert!(s.transmit_into(pipe, &mut cmds, &mut fresh, 1));
    assert_eq!(fresh, [Message::from("e")]);
    // An unknown or inactive pipe gives nothing.
    s.handle_closed(pipe, &omq_core::CloseReason::Eof, now);
    s.send(Message::from("f")).ok();
    let mut none = VecDeque::new();
    assert!(s.transmit_into(pipe, &mut cmds, &mut none, 9));
    assert!(none.is_empty());
}

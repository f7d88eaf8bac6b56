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

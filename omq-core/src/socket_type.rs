//! Socket types, their wire names, and which pairs may talk (specs 23, 37, 41, 48, 49, 51, 52).

use std::fmt;

/// The ZeroMQ socket types, including the draft thread-safe family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SocketType {
    /// Exclusive pair (spec 31).
    Pair,
    /// Publisher (spec 29).
    Pub,
    /// Subscriber (spec 29).
    Sub,
    /// Requester (spec 28).
    Req,
    /// Replier (spec 28).
    Rep,
    /// Asynchronous requester (spec 28).
    Dealer,
    /// Asynchronous replier, addressing peers by routing id (spec 28).
    Router,
    /// Pipeline receiver (spec 30).
    Pull,
    /// Pipeline sender (spec 30).
    Push,
    /// Publisher that sees subscriptions (spec 29).
    XPub,
    /// Subscriber that sends subscriptions as messages (spec 29).
    XSub,
    /// Draft: single-part client (spec 41).
    Client,
    /// Draft: single-part server (spec 41).
    Server,
    /// Draft: group publisher (spec 48).
    Radio,
    /// Draft: group subscriber (spec 48).
    Dish,
    /// Draft: single-part PUSH (spec 49).
    Scatter,
    /// Draft: single-part PULL (spec 49).
    Gather,
    /// Draft: peer-to-peer (spec 51).
    Peer,
    /// Draft: single-part PAIR (spec 52).
    Channel,
    /// Raw TCP: no ZMTP at all; each peer's bytes arrive behind a generated routing id.
    Stream,
}

impl SocketType {
    /// Every socket type, for tests and tables.
    pub const ALL: [SocketType; 20] = [
        SocketType::Pair,
        SocketType::Pub,
        SocketType::Sub,
        SocketType::Req,
        SocketType::Rep,
        SocketType::Dealer,
        SocketType::Router,
        SocketType::Pull,
        SocketType::Push,
        SocketType::XPub,
        SocketType::XSub,
        SocketType::Client,
        SocketType::Server,
        SocketType::Radio,
        SocketType::Dish,
        SocketType::Scatter,
        SocketType::Gather,
        SocketType::Peer,
        SocketType::Channel,
        SocketType::Stream,
    ];

    /// The name sent in the READY command's Socket-Type property.
    pub fn name(self) -> &'static str {
        match self {
            SocketType::Pair => "PAIR",
            SocketType::Pub => "PUB",
            SocketType::Sub => "SUB",
            SocketType::Req => "REQ",
            SocketType::Rep => "REP",
            SocketType::Dealer => "DEALER",
            SocketType::Router => "ROUTER",
            SocketType::Pull => "PULL",
            SocketType::Push => "PUSH",
            SocketType::XPub => "XPUB",
            SocketType::XSub => "XSUB",
            SocketType::Client => "CLIENT",
            SocketType::Server => "SERVER",
            SocketType::Radio => "RADIO",
            SocketType::Dish => "DISH",
            SocketType::Scatter => "SCATTER",
            SocketType::Gather => "GATHER",
            SocketType::Peer => "PEER",
            SocketType::Channel => "CHANNEL",
            SocketType::Stream => "STREAM",
        }
    }

    /// Parses a wire name (exact, upper case, as libzmq sends and expects).
    pub fn from_name(name: &[u8]) -> Option<SocketType> {
        SocketType::ALL
            .iter()
            .copied()
            .find(|t| t.name().as_bytes() == name)
    }

    /// Whether a socket of this type may talk to a peer of type `peer`.
    pub fn is_compatible(self, peer: SocketType) -> bool {
        use SocketType::*;
        match self {
            Pair => peer == Pair,
            Pub | XPub => matches!(peer, Sub | XSub),
            Sub | XSub => matches!(peer, Pub | XPub),
            Req => matches!(peer, Rep | Router),
            Rep => matches!(peer, Req | Dealer),
            Dealer => matches!(peer, Rep | Dealer | Router),
            Router => matches!(peer, Req | Dealer | Router),
            Pull => peer == Push,
            Push => peer == Pull,
            Client => peer == Server,
            Server => peer == Client,
            Radio => peer == Dish,
            Dish => peer == Radio,
            Scatter => peer == Gather,
            Gather => peer == Scatter,
            Peer => peer == Peer,
            Channel => peer == Channel,
            // A STREAM speaks no ZMTP: no ZMTP peer is one.
            Stream => false,
        }
    }

    /// Whether this type announces its routing id in READY's Identity property (libzmq does
    /// so for REQ, DEALER and ROUTER only).
    pub fn sends_identity(self) -> bool {
        matches!(
            self,
            SocketType::Req | SocketType::Dealer | SocketType::Router
        )
    }

    /// Whether subscriptions from this type's peers arrive at this type (PUB, XPUB: the
    /// ZMTP 3.0 `\x01topic` / `\x00topic` messages are subscriptions here).
    pub fn receives_subscriptions(self) -> bool {
        matches!(self, SocketType::Pub | SocketType::XPub)
    }

    /// Whether this type's LINGER is zero unless set (SUB, XSUB, DISH: libzmq's default, so
    /// that closing one never waits for subscriptions, or an XSUB's messages, to reach a
    /// publisher that may never come).
    pub(crate) fn lingers_zero_by_default(self) -> bool {
        matches!(self, SocketType::Sub | SocketType::XSub | SocketType::Dish)
    }

    /// Whether this type keeps the empty delimiter in front of a request or reply as a flag of
    /// the message instead of a part (REQ, REP: see `Message`'s `delimited`).
    pub(crate) fn flags_delimiter(self) -> bool {
        matches!(self, SocketType::Req | SocketType::Rep)
    }

    /// Whether a receive on this type keeps no state: it takes the next whole message from
    /// its peers' queues in fair turn, and taking one changes nothing but those queues (PULL,
    /// SUB, XSUB, DEALER, ROUTER, PAIR; DISH, GATHER, SERVER, CLIENT, CHANNEL, PEER, STREAM).
    /// Not REQ and REP (a receive moves their state machine), XPUB (its receive hands out
    /// subscriptions it also acts on) or the types that cannot receive. A driver may take a
    /// few such messages ahead of the application, under one lock, and hand them out in order.
    pub fn receives_without_state(self) -> bool {
        use SocketType::*;
        matches!(
            self,
            Pull | Sub
                | XSub
                | Dealer
                | Router
                | Pair
                | Dish
                | Gather
                | Server
                | Client
                | Channel
                | Peer
                | Stream
        )
    }

    /// Whether sending `msg` on this type can only succeed or find no room (SNDHWM, or no
    /// peer): the load-balanced types, whose send keeps no state and picks no peer by the
    /// message (PUSH, DEALER and PAIR; SCATTER, CLIENT and CHANNEL with a single part), and a
    /// message that is not empty. A driver may take such a message ahead of the socket within
    /// the room [`crate::Socket::send_room`] reports, and know its send cannot fail otherwise
    /// (but for a socket closed meanwhile).
    pub fn send_only_waits(self, msg: &crate::Message) -> bool {
        use SocketType::*;
        !msg.is_empty()
            && match self {
                Push | Dealer | Pair => true,
                Scatter | Client | Channel => msg.len() == 1,
                _ => false,
            }
    }
}

/// A name that is not a socket type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown socket type {0:?}")]
pub struct UnknownSocketType(pub String);

impl std::str::FromStr for SocketType {
    type Err = UnknownSocketType;

    /// Parses a socket type name without regard to case (`"push"`, `"XPUB"`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SocketType::ALL
            .iter()
            .copied()
            .find(|t| t.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownSocketType(s.into()))
    }
}

impl fmt::Display for SocketType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in SocketType::ALL {
            assert_eq!(SocketType::from_name(t.name().as_bytes()), Some(t));
        }
        assert_eq!(SocketType::from_name(b"push"), None);
        assert_eq!("push".parse::<SocketType>(), Ok(SocketType::Push));
        assert_eq!("XPub".parse::<SocketType>(), Ok(SocketType::XPub));
        assert_eq!("stream".parse::<SocketType>(), Ok(SocketType::Stream));
        assert!("streamer".parse::<SocketType>().is_err());
    }

    #[test]
    fn every_receiving_type_but_req_rep_and_xpub_receives_without_state() {
        use SocketType::*;
        for t in SocketType::ALL {
            // PUB, PUSH, RADIO and SCATTER cannot receive; REQ and REP move their state
            // machine with each receive; XPUB acts on the subscriptions it hands out.
            let expected = !matches!(t, Pub | Push | Radio | Scatter | Req | Rep | XPub);
            assert_eq!(t.receives_without_state(), expected, "{t}");
        }
    }

    #[test]
    fn only_req_dealer_and_router_announce_an_identity() {
        // As libzmq: a PUSH or a SUB with ROUTING_ID set still sends no Identity property.
        for t in SocketType::ALL {
            let expected = matches!(t, SocketType::Req | SocketType::Dealer | SocketType::Router);
            assert_eq!(t.sends_identity(), expected, "{t}");
        }
    }

    #[test]
    fn compatibility_is_symmetric() {
        for a in SocketType::ALL {
            for b in SocketType::ALL {
                assert_eq!(a.is_compatible(b), b.is_compatible(a), "{a} {b}");
            }
        }
        assert!(SocketType::Req.is_compatible(SocketType::Router));
        assert!(!SocketType::Req.is_compatible(SocketType::Req));
        assert!(!SocketType::Push.is_compatible(SocketType::Sub));
    }
}

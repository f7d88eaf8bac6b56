//! ROUTER's identity table (spec 28): every peer is known by a routing id: the one the
//! CONNECT_ROUTING_ID option assigned to its connection, else the Identity it announced, else a
//! generated one (5 bytes: a zero byte, then a 32-bit counter that starts at a random value, as
//! libzmq makes them, so they never collide with application ids, which may not start with 0).

use std::collections::HashMap;

use bytes::{BufMut, Bytes, BytesMut};

use crate::pipe::PipeId;

/// The outcome of naming a new peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identified {
    /// The peer is known by this id.
    Named(Bytes),
    /// The id is taken and handover is off: the newcomer is refused (libzmq closes it).
    Refused,
    /// The id was taken and handover is on: the newcomer takes it; the old pipe must go.
    TookOver {
        /// The routing id.
        id: Bytes,
        /// The pipe that had it.
        old: PipeId,
    },
}

/// Routing ids to pipes.
#[derive(Debug)]
pub struct RouterTable {
    by_id: HashMap<Bytes, PipeId>,
    next_generated: u32,
}

impl RouterTable {
    /// An empty table whose generated ids count up from `start`.
    pub fn new(start: u32) -> Self {
        RouterTable {
            by_id: HashMap::new(),
            next_generated: start,
        }
    }

    /// Names a peer that has completed its handshake.
    pub fn identify(
        &mut self,
        pipe: PipeId,
        assigned: Option<Bytes>,
        announced: Option<&Bytes>,
        handover: bool,
    ) -> Identified {
        let from_peer = assigned.is_none();
        let wanted = assigned.or_else(|| announced.filter(|a| !a.is_empty()).cloned());
        let Some(id) = wanted else {
            let id = self.generate();
            self.by_id.insert(id.clone(), pipe);
            return Identified::Named(id);
        };
        match self.by_id.get(&id).copied() {
            None => {
                self.by_id.insert(id.clone(), pipe);
                Identified::Named(id)
            }
            Some(_) if !handover => Identified::Refused,
            // Ids starting with a zero byte are the ones we generate: a peer that announces
            // one (a guess at another peer's generated id) may not take that peer's slot over.
            Some(_) if from_peer && id.first() == Some(&0) => Identified::Refused,
            Some(old) => {
                self.by_id.insert(id.clone(), pipe);
                Identified::TookOver { id, old }
            }
        }
    }

    fn generate(&mut self) -> Bytes {
        loop {
            let n = self.next_generated;
            self.next_generated = self.next_generated.wrapping_add(1);
            let mut b = BytesMut::with_capacity(5);
            b.put_u8(0);
            b.put_u32(n);
            let id = b.freeze();
            if !self.by_id.contains_key(&id) {
                return id;
            }
        }
    }

    /// The pipe known by `id`.
    pub fn lookup(&self, id: &[u8]) -> Option<PipeId> {
        self.by_id.get(id).copied()
    }

    /// Forgets `id` if it still names `pipe`.
    pub fn remove(&mut self, id: &[u8], pipe: PipeId) {
        if self.by_id.get(id) == Some(&pipe) {
            self.by_id.remove(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipe::{Origin, PipeState, Pipes};

    fn pipes(n: usize) -> Vec<PipeId> {
        let mut pipes = Pipes::default();
        (0..n)
            .map(|_| pipes.insert(Origin::Connect(0), PipeState::Active))
            .collect()
    }

    #[test]
    fn generated_ids_are_a_zero_then_a_counter() {
        let p = pipes(2);
        let mut t = RouterTable::new(0x0102_0304);
        assert_eq!(
            t.identify(p[0], None, None, false),
            Identified::Named(Bytes::from_static(&[0, 1, 2, 3, 4]))
        );
        // An empty announced id counts as none.
        assert_eq!(
            t.identify(p[1], None, Some(&Bytes::new()), false),
            Identified::Named(Bytes::from_static(&[0, 1, 2, 3, 5]))
        );
        assert_eq!(t.lookup(&[0, 1, 2, 3, 4]), Some(p[0]));
        assert_eq!(t.lookup(&[0, 1, 2, 3, 5]), Some(p[1]));
    }

    #[test]
    fn generation_skips_ids_in_use() {
        let p = pipes(2);
        let mut t = RouterTable::new(7);
        let taken = Bytes::from_static(&[0, 0, 0, 0, 7]);
        assert_eq!(
            t.identify(p[0], Some(taken.clone()), None, false),
            Identified::Named(taken)
        );
        assert_eq!(
            t.identify(p[1], None, None, false),
            Identified::Named(Bytes::from_static(&[0, 0, 0, 0, 8]))
        );
    }

    #[test]
    fn assigned_beats_announced() {
        let p = pipes(1);
        let mut t = RouterTable::new(0);
        let assigned = Bytes::from_static(b"mine");
        assert_eq!(
            t.identify(
                p[0],
                Some(assigned.clone()),
                Some(&Bytes::from_static(b"theirs")),
                false
            ),
            Identified::Named(assigned)
        );
        assert_eq!(t.lookup(b"theirs"), None);
    }

    #[test]
    fn a_taken_id_is_refused_or_handed_over() {
        let p = pipes(3);
        let mut t = RouterTable::new(0);
        let id = Bytes::from_static(b"peer");
        assert_eq!(
            t.identify(p[0], None, Some(&id), false),
            Identified::Named(id.clone())
        );
        assert_eq!(
            t.identify(p[1], None, Some(&id), false),
            Identified::Refused
        );
        assert_eq!(t.lookup(&id), Some(p[0]));
        assert_eq!(
            t.identify(p[2], None, Some(&id), true),
            Identified::TookOver {
                id: id.clone(),
                old: p[0]
            }
        );
        assert_eq!(t.lookup(&id), Some(p[2]));
    }

    #[test]
    fn a_peer_cannot_take_over_a_generated_id() {
        let p = pipes(2);
        let mut t = RouterTable::new(0);
        let Identified::Named(generated) = t.identify(p[0], None, None, true) else {
            panic!("named");
        };
        assert_eq!(
            t.identify(p[1], None, Some(&generated), true),
            Identified::Refused
        );
        assert_eq!(t.lookup(&generated), Some(p[0]));
    }

    #[test]
    fn remove_forgets_the_id_only_for_its_pipe() {
        let p = pipes(3);
        let mut t = RouterTable::new(0);
        let id = Bytes::from_static(b"peer");
        t.identify(p[0], None, Some(&id), true);
        t.identify(p[1], None, Some(&id), true);
        // The old pipe's removal must not take the id from the newcomer.
        t.remove(&id, p[0]);
        assert_eq!(t.lookup(&id), Some(p[1]));
        t.remove(&id, p[1]);
        assert_eq!(t.lookup(&id), None);
        // The id is free again.
        assert_eq!(
            t.identify(p[2], None, Some(&id), false),
            Identified::Named(id)
        );
    }
}

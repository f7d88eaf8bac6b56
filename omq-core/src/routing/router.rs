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

//! Load balancing: each message goes to the next pipe in turn that has room under SNDHWM
//! (spec 28 and 30's round robin). A full pipe is skipped, not waited for; when every pipe is
//! full, or there are none, sending would block.

use crate::pipe::{PipeId, Pipes};

/// Round robin over attached pipes.
#[derive(Debug, Default)]
pub struct LoadBalancer {
    ring: Vec<PipeId>,
    next: usize,
}

impl LoadBalancer {
    /// Adds a pipe at the end of the turn order.
    pub fn add(&mut self, id: PipeId) {
        if !self.ring.contains(&id) {
            self.ring.push(id);
        }
    }

    /// Removes a pipe, keeping everyone else's turn.
    pub fn remove(&mut self, id: PipeId) {
        if let Some(i) = self.ring.iter().position(|&p| p == id) {
            self.ring.remove(i);
            if i < self.next {
                self.next -= 1;
            }
            if self.next >= self.ring.len() {
                self.next = 0;
            }
        }
    }

    /// The pipe whose turn it is among those with room, advancing the turn past it.
    pub fn pick(&mut self, pipes: &Pipes, hwm: usize) -> Option<PipeId> {
        let n = self.ring.len();
        for k in 0..n {
            let i = (self.next + k) % n;
            let id = self.ring[i];
            if pipes.get(id).is_some_and(|p| p.has_room(hwm)) {
                self.next = (i + 1) % n;
                return Some(id);
            }
        }
        None
    }

    /// Whether some pipe has room (so a send would not block).
    pub fn has_room(&self, pipes: &Pipes, hwm: usize) -> bool {
        self.ring
            .iter()
            .any(|&id| pipes.get(id).is_some_and(|p| p.has_room(hwm)))
    }

    /// The attached pipes, in turn order.
    pub fn pipes(&self) -> &[PipeId] {
        &self.ring
    }

    /// Number of attached pipes.
    pub fn len(&self) -> usize {
        self.ring.len()
    }

    /// True when no pipe is attached.
    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }
}

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

    /// How many messages [`LoadBalancer::pick`] would place, one after another, before it
    /// finds no pipe with room, counted only until the count reaches `enough`: the free room
    /// of the pipes in ring order, summed up to the first pipe that brings it to `enough`
    /// (unbounded with `hwm` 0 and at least one pipe). So a sink asking for a batch looks at
    /// one pipe or a few, not at every peer.
    pub fn room(&self, pipes: &Pipes, hwm: usize, enough: usize) -> usize {
        let mut sum = 0usize;
        for p in self.ring.iter().filter_map(|&id| pipes.get(id)) {
            if sum >= enough {
                break;
            }
            sum = sum.saturating_add(if hwm == 0 {
                usize::MAX
            } else {
                hwm.saturating_sub(p.out.len())
            });
        }
        sum
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;
    use crate::pipe::{Origin, PipeState};

    fn setup(n: usize) -> (Pipes, Vec<PipeId>, LoadBalancer) {
        let mut pipes = Pipes::default();
        let mut lb = LoadBalancer::default();
        let ids: Vec<PipeId> = (0..n)
            .map(|_| pipes.insert(Origin::Connect(0), PipeState::Active))
            .collect();
        for &id in &ids {
            lb.add(id);
        }
        (pipes, ids, lb)
    }

    fn fill(pipes: &mut Pipes, id: PipeId, n: usize) {
        for _ in 0..n {
            pipes.get_mut(id).unwrap().out.push_back(Message::from("x"));
        }
    }

    #[test]
    fn round_robin() {
        let (pipes, ids, mut lb) = setup(3);
        let picks: Vec<PipeId> = (0..6).map(|_| lb.pick(&pipes, 0).unwrap()).collect();
        assert_eq!(picks, [ids[0], ids[1], ids[2], ids[0], ids[1], ids[2]]);
    }

    #[test]
    fn full_pipes_are_skipped_and_all_full_blocks() {
        let (mut pipes, ids, mut lb) = setup(3);
        fill(&mut pipes, ids[1], 2);
        assert_eq!(lb.pick(&pipes, 2), Some(ids[0]));
        assert_eq!(lb.pick(&pipes, 2), Some(ids[2]));
        assert_eq!(lb.pick(&pipes, 2), Some(ids[0]));
        assert!(lb.has_room(&pipes, 2));
        fill(&mut pipes, ids[0], 2);
        fill(&mut pipes, ids[2], 2);
        assert!(!lb.has_room(&pipes, 2));
        assert_eq!(lb.pick(&pipes, 2), None);
        // HWM 0 is unlimited.
        assert!(lb.has_room(&pipes, 0));
        assert!(lb.pick(&pipes, 0).is_some());
    }

    #[test]
    fn no_pipes_blocks() {
        let (pipes, _, mut lb) = setup(0);
        assert!(lb.is_empty());
        assert!(!lb.has_room(&pipes, 0));
        assert_eq!(lb.pick(&pipes, 0), None);
    }

    #[test]
    fn removing_keeps_everyone_elses_turn() {
        let (pipes, ids, mut lb) = setup(4);
        assert_eq!(lb.pick(&pipes, 0), Some(ids[0]));
        assert_eq!(lb.pick(&pipes, 0), Some(ids[1]));
        // Next is ids[2]; removing one before it must not skip it.
        lb.remove(ids[0]);
        assert_eq!(lb.pick(&pipes, 0), Some(ids[2]));
        // Removing the one whose turn it is passes the turn to the one after it.
        lb.remove(ids[3]);
        assert_eq!(lb.pick(&pipes, 0), Some(ids[1]));
        assert_eq!(lb.pipes(), &[ids[1], ids[2]]);
        assert_eq!(lb.len(), 2);
        lb.remove(ids[1]);
        lb.remove(ids[2]);
        assert!(lb.is_empty());
        assert_eq!(lb.pick(&pipes, 0), None);
    }

    #[test]
    fn adding_twice_adds_once_and_a_closed_pipe_is_skipped() {
        let (mut pipes, ids, mut lb) = setup(2);
        lb.add(ids[0]);
        assert_eq!(lb.len(), 2);
        pipes.remove(ids[0]);
        assert_eq!(lb.pick(&pipes, 0), Some(ids[1]));
        assert_eq!(lb.pick(&pipes, 0), Some(ids[1]));
    }
}

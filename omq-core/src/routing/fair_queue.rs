//! Fair queuing: receive one message from each pipe that has any, in turn, so a busy peer
//! cannot starve a quiet one (spec 28 and 30). Pipes with messages wait in a ring; taking a
//! message moves its pipe to the back if it has more.

use std::collections::VecDeque;

use crate::message::Message;
use crate::pipe::{PipeId, Pipes};

/// The ring of pipes with messages waiting.
#[derive(Debug, Default)]
pub struct FairQueue {
    ready: VecDeque<PipeId>,
}

impl FairQueue {
    /// Notes that a pipe has a message (call when its queue goes from empty to not).
    pub fn notify(&mut self, pipes: &mut Pipes, id: PipeId) {
        if let Some(p) = pipes.get_mut(id) {
            if !p.queued_for_read {
                p.queued_for_read = true;
                self.ready.push_back(id);
            }
        }
    }

    /// Takes the next message in turn.
    #[inline(always)]
    pub fn pop(&mut self, pipes: &mut Pipes) -> Option<(PipeId, Message)> {
        while let Some(id) = self.ready.pop_front() {
            let Some(p) = pipes.get_mut(id) else {
                continue;
            };
            p.queued_for_read = false;
            // The peer's properties go on here, on the reading thread (see
            // `Session::leave_properties_to_reader`), in place: the message is moved once.
            if let (Some(props), Some(front)) = (&p.properties, p.inbound.front_mut()) {
                front.stamp_metadata(props);
            }
            let Some(msg) = p.inbound.pop_front() else {
                continue;
            };
            if !p.inbound.is_empty() {
                p.queued_for_read = true;
                self.ready.push_back(id);
            }
            return Some((id, msg));
        }
        None
    }

    /// Whether any message is waiting.
    pub fn has_message(&self, pipes: &Pipes) -> bool {
        self.ready
            .iter()
            .any(|&id| pipes.get(id).is_some_and(|p| !p.inbound.is_empty()))
    }

    /// Forgets a pipe.
    pub fn remove(&mut self, id: PipeId) {
        self.ready.retain(|&p| p != id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipe::{Origin, PipeState};

    fn pipes(n: usize) -> (Pipes, Vec<PipeId>) {
        let mut pipes = Pipes::default();
        let ids = (0..n)
            .map(|_| pipes.insert(Origin::Connect(0), PipeState::Active))
            .collect();
        (pipes, ids)
    }

    fn arrive(fq: &mut FairQueue, pipes: &mut Pipes, id: PipeId, body: &str) {
        pipes
            .get_mut(id)
            .unwrap()
            .inbound
            .push_back(Message::from(body));
        fq.notify(pipes, id);
    }

    fn body(m: &Message) -> &[u8] {
        &m.parts()[0][..]
    }

    #[test]
    fn takes_one_message_from_each_pipe_in_turn() {
        let (mut pipes, ids) = pipes(2);
        let mut fq = FairQueue::default();
        for b in ["a1", "a2", "a3"] {
            arrive(&mut fq, &mut pipes, ids[0], b);
        }
        arrive(&mut fq, &mut pipes, ids[1], "b1");
        let order: Vec<(PipeId, Vec<u8>)> = std::iter::from_fn(|| fq.pop(&mut pipes))
            .map(|(id, m)| (id, body(&m).to_vec()))
            .collect();
        assert_eq!(
            order,
            vec![
                (ids[0], b"a1".to_vec()),
                (ids[1], b"b1".to_vec()),
                (ids[0], b"a2".to_vec()),
                (ids[0], b"a3".to_vec()),
            ]
        );
        assert!(fq.pop(&mut pipes).is_none());
    }

    #[test]
    fn has_message_follows_the_queues() {
        let (mut pipes, ids) = pipes(2);
        let mut fq = FairQueue::default();
        assert!(!fq.has_message(&pipes));
        arrive(&mut fq, &mut pipes, ids[1], "x");
        assert!(fq.has_message(&pipes));
        assert!(fq.pop(&mut pipes).is_some());
        assert!(!fq.has_message(&pipes));
        // A pipe in the ring whose queue was emptied behind the queue's back has nothing.
        arrive(&mut fq, &mut pipes, ids[0], "y");
        pipes.get_mut(ids[0]).unwrap().inbound.clear();
        assert!(!fq.has_message(&pipes));
    }

    #[test]
    fn a_removed_pipe_is_not_read_any_more() {
        let (mut pipes, ids) = pipes(2);
        let mut fq = FairQueue::default();
        arrive(&mut fq, &mut pipes, ids[0], "from a");
        arrive(&mut fq, &mut pipes, ids[1], "from b");
        fq.remove(ids[0]);
        // The pipe still holds its message, but the queue no longer offers it.
        let (id, m) = fq.pop(&mut pipes).unwrap();
        assert_eq!((id, body(&m)), (ids[1], &b"from b"[..]));
        assert!(fq.pop(&mut pipes).is_none());
        assert!(!fq.has_message(&pipes));
    }

    #[test]
    fn notify_twice_queues_a_pipe_once() {
        let (mut pipes, ids) = pipes(1);
        let mut fq = FairQueue::default();
        arrive(&mut fq, &mut pipes, ids[0], "1");
        arrive(&mut fq, &mut pipes, ids[0], "2");
        assert_eq!(fq.ready.len(), 1);
        assert!(fq.pop(&mut pipes).is_some());
        assert!(fq.pop(&mut pipes).is_some());
        assert!(fq.pop(&mut pipes).is_none());
        assert!(!pipes.get(ids[0]).unwrap().queued_for_read);
    }

    #[test]
    fn a_closed_pipe_is_skipped() {
        let (mut pipes, ids) = pipes(2);
        let mut fq = FairQueue::default();
        arrive(&mut fq, &mut pipes, ids[0], "gone");
        arrive(&mut fq, &mut pipes, ids[1], "here");
        pipes.remove(ids[0]);
        assert_eq!(fq.pop(&mut pipes).map(|(id, _)| id), Some(ids[1]));
        assert!(fq.pop(&mut pipes).is_none());
    }
}

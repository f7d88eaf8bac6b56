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
    pub fn pop(&mut self, pipes: &mut Pipes) -> Option<(PipeId, Message)> {
        while let Some(id) = self.ready.pop_front() {
            let Some(p) = pipes.get_mut(id) else {
                continue;
            };
            p.queued_for_read = false;
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

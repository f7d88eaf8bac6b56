//! Prefix tries for publish/subscribe (spec 29): a message matches a subscription when the
//! subscription is a prefix of the message's first part. Matching walks the message's bytes
//! down the trie once, collecting what hangs off every node it passes, so its cost grows with
//! the length of the matching prefixes, not with the number of subscriptions.
//!
//! One generic trie serves both sides: the publisher's maps topics to the set of pipes
//! subscribed ([`PipeSet`]), the subscriber's counts how often it subscribed to each topic
//! ([`u32`]), so duplicate subscriptions need as many unsubscriptions.

use bytes::Bytes;

use crate::pipe::PipeId;

/// What a node holds for its topic.
pub trait TopicValue: Default {
    /// True when the topic has no subscription left (the node can be pruned).
    fn is_empty(&self) -> bool;
}

impl TopicValue for u32 {
    fn is_empty(&self) -> bool {
        *self == 0
    }
}

/// The pipes subscribed to one topic (each at most once).
pub type PipeSet = Vec<PipeId>;

impl TopicValue for PipeSet {
    fn is_empty(&self) -> bool {
        Vec::is_empty(self)
    }
}

#[derive(Debug, Default)]
struct Node<V> {
    value: V,
    /// Children sorted by byte.
    children: Vec<(u8, Node<V>)>,
}

impl<V: TopicValue> Node<V> {
    fn child(&self, b: u8) -> Option<&Node<V>> {
        self.children
            .binary_search_by_key(&b, |(k, _)| *k)
            .ok()
            .map(|i| &self.children[i].1)
    }

    fn is_prunable(&self) -> bool {
        self.value.is_empty() && self.children.is_empty()
    }
}

/// A prefix trie of topics.
#[derive(Debug, Default)]
pub struct Trie<V> {
    root: Node<V>,
}

impl<V: TopicValue> Trie<V> {
    /// An empty trie.
    pub fn new() -> Self {
        Trie {
            root: Node::default(),
        }
    }

    /// The value for `topic`, created if missing.
    fn entry(&mut self, topic: &[u8]) -> &mut V {
        let mut node = &mut self.root;
        for &b in topic {
            let i = match node.children.binary_search_by_key(&b, |(k, _)| *k) {
                Ok(i) => i,
                Err(i) => {
                    node.children.insert(i, (b, Node::default()));
                    i
                }
            };
            node = &mut node.children[i].1;
        }
        &mut node.value
    }

    /// Applies `f` to the value of `topic` if it exists, then prunes empty nodes on the way
    /// back up. Returns what `f` returned (None when the topic is absent).
    fn update<R>(&mut self, topic: &[u8], f: impl FnOnce(&mut V) -> R) -> Option<R> {
        fn go<V: TopicValue, R>(
            node: &mut Node<V>,
            topic: &[u8],
            f: impl FnOnce(&mut V) -> R,
        ) -> Option<R> {
            let Some((&b, rest)) = topic.split_first() else {
                return Some(f(&mut node.value));
            };
            let i = node.children.binary_search_by_key(&b, |(k, _)| *k).ok()?;
            let r = go(&mut node.children[i].1, rest, f);
            if node.children[i].1.is_prunable() {
                node.children.remove(i);
            }
            r
        }
        go(&mut self.root, topic, f)
    }

    /// Visits the value of every topic that is a prefix of `data` (the empty topic first).
    pub fn for_each_prefix(&self, data: &[u8], mut f: impl FnMut(&V)) {
        let mut node = &self.root;
        if !node.value.is_empty() {
            f(&node.value);
        }
        for &b in data {
            match node.child(b) {
                Some(n) => node = n,
                None => return,
            }
            if !node.value.is_empty() {
                f(&node.value);
            }
        }
    }

    /// Every topic with its value, in byte order.
    pub fn topics(&self) -> Vec<(Bytes, &V)> {
        fn go<'a, V: TopicValue>(
            node: &'a Node<V>,
            prefix: &mut Vec<u8>,
            out: &mut Vec<(Bytes, &'a V)>,
        ) {
            if !node.value.is_empty() {
                out.push((Bytes::copy_from_slice(prefix), &node.value));
            }
            for (b, child) in &node.children {
                prefix.push(*b);
                go(child, prefix, out);
                prefix.pop();
            }
        }
        let mut out = Vec::new();
        go(&self.root, &mut Vec::new(), &mut out);
        out
    }

    /// True when no topic is subscribed.
    pub fn is_empty(&self) -> bool {
        self.root.is_prunable()
    }
}

impl Trie<u32> {
    /// Counts a subscription; true when it is the topic's first.
    pub fn add(&mut self, topic: &[u8]) -> bool {
        let c = self.entry(topic);
        *c += 1;
        *c == 1
    }

    /// Counts an unsubscription; true when it removed the topic's last subscription. An
    /// unsubscription from a topic never subscribed does nothing and returns false.
    pub fn remove(&mut self, topic: &[u8]) -> bool {
        self.update(topic, |c| {
            if *c == 0 {
                return false;
            }
            *c -= 1;
            *c == 0
        })
        .unwrap_or(false)
    }

    /// Whether any subscribed topic is a prefix of `data`.
    pub fn matches(&self, data: &[u8]) -> bool {
        let mut any = false;
        self.for_each_prefix(data, |_| any = true);
        any
    }
}

impl Trie<PipeSet> {
    /// Subscribes `pipe` to `topic`; true when the topic had no subscriber before.
    pub fn add(&mut self, topic: &[u8], pipe: PipeId) -> bool {
        let set = self.entry(topic);
        let first = set.is_empty();
        if !set.contains(&pipe) {
            set.push(pipe);
        }
        first
    }

    /// Unsubscribes `pipe` from `topic`; true when that left the topic without subscribers.
    pub fn remove(&mut self, topic: &[u8], pipe: PipeId) -> bool {
        self.update(topic, |set| match set.iter().position(|&p| p == pipe) {
            Some(i) => {
                set.swap_remove(i);
                set.is_empty()
            }
            None => false,
        })
        .unwrap_or(false)
    }

    /// Unsubscribes `pipe` from everything; returns the topics left without subscribers.
    pub fn remove_pipe(&mut self, pipe: PipeId) -> Vec<Bytes> {
        let topics: Vec<Bytes> = self
            .topics()
            .into_iter()
            .filter(|(_, set)| set.contains(&pipe))
            .map(|(t, _)| t)
            .collect();
        topics
            .into_iter()
            .filter(|t| self.remove(t, pipe))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_prefixes() {
        let mut t: Trie<u32> = Trie::new();
        assert!(t.add(b"ab"));
        assert!(!t.add(b"ab"));
        assert!(t.matches(b"abc"));
        assert!(!t.matches(b"a"));
        assert!(!t.remove(b"ab"));
        assert!(t.remove(b"ab"));
        assert!(!t.remove(b"ab"));
        assert!(t.is_empty());
        assert!(t.add(b""));
        assert!(t.matches(b""));
        assert!(t.matches(b"anything"));
    }
}

//! Prefix tries for publish/subscribe (spec 29): a message matches a subscription when the
//! subscription is a prefix of the message's first part. Matching walks the message's bytes
//! down the trie once, collecting what hangs off every node it passes, so its cost grows with
//! the length of the matching prefixes, not with the number of subscriptions.
//!
//! One generic trie serves both sides: the publisher's maps topics to the set of pipes
//! subscribed ([`PipeSet`]), the subscriber's counts how often it subscribed to each topic
//! ([`u32`]), so duplicate subscriptions need as many unsubscriptions.
//!
//! Topics come from peers, so the trie must hold up against hostile ones:
//!
//! - It is compressed (a radix tree): a node exists only where a topic ends or where topics
//!   part ways, and the edge into it is a run of bytes. A 64 KiB topic is one node, not 65 536.
//! - Each node keeps its whole topic, the path from the root, as one [`Bytes`]; its edge is
//!   what follows the parent's path. Splitting an edge when a topic ends or branches inside it,
//!   and merging two edges when the node between them goes, then copy nothing but the new
//!   topic. Memory stays below twice the bytes of the distinct topics (a node where topics
//!   only branch keeps a path shorter than a topic below it, a different one for each such
//!   node) plus a constant per topic.
//! - Nothing recurses: a topic's length or the nesting of topics must not be able to exhaust
//!   the stack. Walks keep their own stacks, and dropping the trie takes it apart in a loop.

use std::fmt;

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

/// A node: the root (empty path), a topic's end, or a point where topics part ways. Outside
/// the root, a node without a value has at least two children; [`Node::tidied`] restores that
/// after a value empties.
#[derive(Default)]
struct Node<V> {
    /// The node's topic, from the root. The edge from the parent is the part after the
    /// parent's path, never empty.
    path: Bytes,
    value: V,
    /// Sorted by the first byte of their edge (`child.path[self.path.len()]`), which differs
    /// between siblings.
    children: Vec<Node<V>>,
}

impl<V: TopicValue> Node<V> {
    fn new(path: Bytes) -> Self {
        Node {
            path,
            value: V::default(),
            children: Vec::new(),
        }
    }

    /// Where the child whose edge starts with `b` is, or would go.
    fn find(&self, b: u8) -> Result<usize, usize> {
        let depth = self.path.len();
        self.children.binary_search_by_key(&b, |c| c.path[depth])
    }

    /// The child whose whole edge `key` continues with, if any (`key` extends this node's
    /// path). Compares only the edge, so a walk down costs the length of `key`.
    fn child_towards(&self, key: &[u8]) -> Option<&Node<V>> {
        let depth = self.path.len();
        let child = &self.children[self.find(*key.get(depth)?).ok()?];
        (key.get(depth..child.path.len()) == Some(&child.path[depth..])).then_some(child)
    }

    /// This node as its parent should keep it once its value may have emptied: as is while
    /// it holds a value or branches, replaced by its only child (whose path already spans
    /// both edges), or gone.
    fn tidied(mut self) -> Option<Self> {
        if !self.value.is_empty() {
            return Some(self);
        }
        match self.children.len() {
            0 => None,
            1 => self.children.pop(),
            _ => {
                // Lets go of what an emptied value may still hold (a set's capacity).
                self.value = V::default();
                Some(self)
            }
        }
    }

    /// Gives back the children's room once most of it is unused, so that memory follows
    /// the subscriptions down after cancels (to nothing when no child is left).
    fn shrink_children(&mut self) {
        if self.children.len() <= self.children.capacity() / 4 {
            self.children.shrink_to_fit();
        }
    }

    /// Tidies `self.children[i]` after its value may have emptied.
    fn tidy_child(&mut self, i: usize) {
        if !self.children[i].value.is_empty() {
            return;
        }
        match std::mem::take(&mut self.children[i]).tidied() {
            Some(child) => self.children[i] = child,
            None => {
                self.children.remove(i);
                self.shrink_children();
            }
        }
    }
}

/// Walks down from `node` along `key` to the node whose path is `depth` bytes long, which the
/// caller knows is there. Follows first bytes only: the caller has already checked the edges.
fn descend_mut<'a, V: TopicValue>(
    mut node: &'a mut Node<V>,
    key: &[u8],
    depth: usize,
) -> Option<&'a mut Node<V>> {
    while node.path.len() < depth {
        let i = node.find(key[node.path.len()]).ok()?;
        node = &mut node.children[i];
    }
    Some(node)
}

/// A prefix trie of topics.
#[derive(Default)]
pub struct Trie<V> {
    root: Node<V>,
    /// How many topics hold a value: libzmq's TOPICS_COUNT, kept as the values fill and
    /// empty so that reading it walks nothing.
    topics: usize,
}

impl<V: TopicValue> Trie<V> {
    /// An empty trie.
    pub fn new() -> Self {
        Trie {
            root: Node::default(),
            topics: 0,
        }
    }

    /// The value for `topic`, created if missing. The caller makes it non-empty: a node
    /// without a value must not stay with fewer than two children.
    fn entry(&mut self, topic: &[u8]) -> &mut V {
        let mut node = &mut self.root;
        loop {
            let depth = node.path.len();
            let Some(&b) = topic.get(depth) else {
                return &mut node.value;
            };
            let i = match node.find(b) {
                Ok(i) => i,
                Err(i) => {
                    let leaf = Node::new(Bytes::copy_from_slice(topic));
                    node.children.insert(i, leaf);
                    return &mut node.children[i].value;
                }
            };
            let child = &mut node.children[i];
            let end = child.path.len().min(topic.len());
            let same = child.path[depth..end]
                .iter()
                .zip(&topic[depth..end])
                .take_while(|(a, b)| a == b)
                .count();
            let split = depth + same;
            if split < child.path.len() {
                // The topic ends or turns off inside the edge: a node at that point takes the
                // child's place, with the child below it. The next turn of the loop returns
                // that node's value or hangs the topic's own leaf beside the child.
                let below = std::mem::take(child);
                *child = Node::new(Bytes::copy_from_slice(&topic[..split]));
                child.children.reserve_exact(2);
                child.children.push(below);
            }
            node = child;
        }
    }

    /// Applies `f` to the value of `topic` if it exists, then prunes what that emptied.
    /// Returns what `f` returned (None when the topic is absent).
    fn update<R>(&mut self, topic: &[u8], f: impl FnOnce(&mut V) -> R) -> Option<R> {
        // First find the topic's node and the depths of the two nodes above it: removing a
        // node changes its parent's children, and can leave the parent, if it holds no value,
        // with a single child to be merged into the grandparent.
        let (mut parent, mut grandparent) = (None, None);
        let mut node = &self.root;
        while node.path.len() < topic.len() {
            (grandparent, parent) = (parent, Some(node.path.len()));
            node = node.child_towards(topic)?;
        }
        // Then come back down, mutably, to the highest node that may change.
        match (grandparent, parent) {
            (_, None) => {
                let r = f(&mut self.root.value);
                if self.root.value.is_empty() {
                    self.root.value = V::default();
                }
                Some(r)
            }
            (None, Some(_)) => Self::update_child(&mut self.root, topic, f),
            (Some(depth), Some(_)) => {
                let grandparent = descend_mut(&mut self.root, topic, depth)?;
                let i = grandparent.find(topic[depth]).ok()?;
                let r = Self::update_child(&mut grandparent.children[i], topic, f);
                grandparent.tidy_child(i);
                r
            }
        }
    }

    /// [`Trie::update`] once down at the parent of `topic`'s node.
    fn update_child<R>(
        parent: &mut Node<V>,
        topic: &[u8],
        f: impl FnOnce(&mut V) -> R,
    ) -> Option<R> {
        let i = parent.find(topic[parent.path.len()]).ok()?;
        let r = f(&mut parent.children[i].value);
        parent.tidy_child(i);
        Some(r)
    }

    /// Visits the value of every topic that is a prefix of `data` (the empty topic first).
    pub fn for_each_prefix(&self, data: &[u8], mut f: impl FnMut(&V)) {
        let mut node = &self.root;
        loop {
            if !node.value.is_empty() {
                f(&node.value);
            }
            match node.child_towards(data) {
                Some(child) => node = child,
                None => return,
            }
        }
    }

    /// Every topic with its value, in byte order. The topics share the trie's bytes.
    pub fn topics(&self) -> Vec<(Bytes, &V)> {
        let mut out = Vec::new();
        // Depth first, parents before children, children in byte order: byte order.
        let mut stack = vec![std::slice::from_ref(&self.root).iter()];
        while let Some(level) = stack.last_mut() {
            let Some(node) = level.next() else {
                stack.pop();
                continue;
            };
            if !node.value.is_empty() {
                out.push((node.path.clone(), &node.value));
            }
            if !node.children.is_empty() {
                stack.push(node.children.iter());
            }
        }
        out
    }

    /// How many topics are subscribed (each counted once, however many subscriptions it has).
    pub fn len(&self) -> usize {
        self.topics
    }

    /// True when no topic is subscribed.
    pub fn is_empty(&self) -> bool {
        self.root.value.is_empty() && self.root.children.is_empty()
    }
}

/// Takes the tree apart in a loop: the derived drop would recurse once per level, and the
/// levels are as many as a peer's nested topics.
impl<V> Drop for Trie<V> {
    fn drop(&mut self) {
        let mut pending = std::mem::take(&mut self.root.children);
        while let Some(mut node) = pending.pop() {
            pending.append(&mut node.children);
        }
    }
}

/// The topics and their values (a derived `Debug` would recurse).
impl<V: TopicValue + fmt::Debug> fmt::Debug for Trie<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.topics()).finish()
    }
}

impl Trie<u32> {
    /// Counts a subscription; true when it is the topic's first.
    pub fn add(&mut self, topic: &[u8]) -> bool {
        let c = self.entry(topic);
        *c += 1;
        let first = *c == 1;
        self.topics += usize::from(first);
        first
    }

    /// Counts an unsubscription; true when it removed the topic's last subscription. An
    /// unsubscription from a topic never subscribed does nothing and returns false.
    pub fn remove(&mut self, topic: &[u8]) -> bool {
        let last = self
            .update(topic, |c| {
                if *c == 0 {
                    return false;
                }
                *c -= 1;
                *c == 0
            })
            .unwrap_or(false);
        self.topics -= usize::from(last);
        last
    }

    /// Whether any subscribed topic is a prefix of `data`.
    pub fn matches(&self, data: &[u8]) -> bool {
        let mut any = false;
        self.for_each_prefix(data, |_| any = true);
        any
    }
}

/// Takes `pipe` out of `set`; true when that left the set empty.
fn unsubscribe(set: &mut PipeSet, pipe: PipeId) -> bool {
    match set.iter().position(|&p| p == pipe) {
        Some(i) => {
            set.swap_remove(i);
            set.is_empty()
        }
        None => false,
    }
}

/// What one (un)subscription changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Change {
    /// The pipe's own subscriptions changed (it was not subscribed to the topic before a
    /// subscription, or was before an unsubscription): what a per-peer count follows.
    pub pipe: bool,
    /// The topic gained its first subscriber, or lost its last: what XPUB passes up.
    pub topic: bool,
}

impl Trie<PipeSet> {
    /// Subscribes `pipe` to `topic`.
    pub fn add(&mut self, topic: &[u8], pipe: PipeId) -> Change {
        let set = self.entry(topic);
        let first = set.is_empty();
        let new = !set.contains(&pipe);
        if new {
            set.push(pipe);
        }
        self.topics += usize::from(first);
        Change {
            pipe: new,
            topic: first,
        }
    }

    /// Unsubscribes `pipe` from `topic`.
    pub fn remove(&mut self, topic: &[u8], pipe: PipeId) -> Change {
        let change = self
            .update(topic, |set| {
                let was = set.contains(&pipe);
                Change {
                    pipe: was,
                    topic: unsubscribe(set, pipe),
                }
            })
            .unwrap_or_default();
        self.topics -= usize::from(change.topic);
        change
    }

    /// Unsubscribes `pipe` from everything; returns the topics left without subscribers, in
    /// byte order.
    ///
    /// One walk over the nodes: each is moved out of its parent on the way down (its topic
    /// noted if it empties) and put back tidied on the way up, after its children, so that
    /// what empties is pruned in the same pass.
    pub fn remove_pipe(&mut self, pipe: PipeId) -> Vec<Bytes> {
        /// A node being walked: its children before `next` are done, and the first `kept`
        /// slots hold those that stay (the rest of those before `next` are empty).
        struct Frame<V> {
            node: Node<V>,
            next: usize,
            kept: usize,
        }
        let mut emptied = Vec::new();
        let mut root = std::mem::take(&mut self.root);
        if unsubscribe(&mut root.value, pipe) {
            emptied.push(root.path.clone());
        }
        let mut stack = vec![Frame {
            node: root,
            next: 0,
            kept: 0,
        }];
        while let Some(top) = stack.last_mut() {
            if let Some(slot) = top.node.children.get_mut(top.next) {
                top.next += 1;
                let mut child = std::mem::take(slot);
                if unsubscribe(&mut child.value, pipe) {
                    emptied.push(child.path.clone());
                }
                stack.push(Frame {
                    node: child,
                    next: 0,
                    kept: 0,
                });
                continue;
            }
            let Some(Frame { mut node, kept, .. }) = stack.pop() else {
                break;
            };
            node.children.truncate(kept);
            node.shrink_children();
            match stack.last_mut() {
                Some(parent) => {
                    if let Some(node) = node.tidied() {
                        parent.node.children[parent.kept] = node;
                        parent.kept += 1;
                    }
                }
                None => {
                    if node.value.is_empty() {
                        node.value = PipeSet::new();
                    }
                    self.root = node;
                }
            }
        }
        self.topics -= emptied.len();
        emptied
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::pipe::{Origin, PipeState, Pipes};

    /// What a value holds on the heap, for [`heap_bytes`].
    trait ValueBytes {
        fn heap_bytes(&self) -> usize;
    }

    impl ValueBytes for u32 {
        fn heap_bytes(&self) -> usize {
            0
        }
    }

    impl ValueBytes for PipeSet {
        fn heap_bytes(&self) -> usize {
            self.capacity() * size_of::<PipeId>()
        }
    }

    /// The heap bytes the trie holds: paths, children arrays and what values own.
    fn heap_bytes<V: TopicValue + ValueBytes>(t: &Trie<V>) -> usize {
        let mut total = 0;
        let mut stack = vec![&t.root];
        while let Some(n) = stack.pop() {
            total +=
                n.path.len() + n.value.heap_bytes() + n.children.capacity() * size_of::<Node<V>>();
            stack.extend(&n.children);
        }
        total
    }

    fn node_count<V>(t: &Trie<V>) -> usize {
        let mut count = 0;
        let mut stack = vec![&t.root];
        while let Some(n) = stack.pop() {
            count += 1;
            stack.extend(&n.children);
        }
        count
    }

    /// The shape the code relies on: paths extend their parent's by a non-empty edge,
    /// siblings are sorted by distinct first bytes, and a node other than the root holds a
    /// value or branches.
    fn check_shape<V: TopicValue>(t: &Trie<V>) {
        assert!(t.root.path.is_empty());
        let mut stack = vec![&t.root];
        while let Some(n) = stack.pop() {
            let depth = n.path.len();
            for c in &n.children {
                assert!(c.path.len() > depth && c.path.starts_with(&n.path));
                assert!(!c.value.is_empty() || c.children.len() >= 2);
            }
            for w in n.children.windows(2) {
                assert!(w[0].path[depth] < w[1].path[depth]);
            }
            stack.extend(&n.children);
        }
    }

    fn pipes(n: usize) -> Vec<PipeId> {
        let mut table = Pipes::default();
        (0..n)
            .map(|_| table.insert(Origin::Connect(0), PipeState::Active))
            .collect()
    }

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

    #[test]
    fn nodes_only_where_topics_end_or_part() {
        let mut t: Trie<u32> = Trie::new();
        t.add(b"abcdef");
        assert_eq!(node_count(&t), 2);
        // Parts inside the edge: a node at "abc" with both below.
        t.add(b"abcxyz");
        assert_eq!(node_count(&t), 4);
        // Ends at the existing fork, then inside an edge.
        t.add(b"abc");
        t.add(b"abcd");
        assert_eq!(node_count(&t), 5);
        assert!(!t.remove(b"ab"));
        assert!(!t.remove(b"abcde"));
        check_shape(&t);
        // "abc" keeps a value and two children; emptying it leaves the fork.
        assert!(t.remove(b"abc"));
        assert_eq!(node_count(&t), 5);
        // "abcd" is left with one child and no value: "abcdef" takes its place.
        assert!(t.remove(b"abcd"));
        assert_eq!(node_count(&t), 4);
        // The fork at "abc" is left with one child: merged the same way.
        assert!(t.remove(b"abcxyz"));
        assert_eq!(node_count(&t), 2);
        assert!(t.matches(b"abcdefg"));
        assert!(!t.matches(b"abcde"));
        check_shape(&t);
        assert!(t.remove(b"abcdef"));
        assert!(t.is_empty());
        assert_eq!(heap_bytes(&t), 0);
    }

    #[test]
    fn children_room_is_given_back_once_three_quarters_is_unused() {
        // Not on every cancel (a reallocation each time), but once at most a quarter of the
        // room is used: memory follows a mass cancel down.
        let mut t: Trie<u32> = Trie::new();
        for b in 0..64u8 {
            t.add(&[b]);
        }
        assert_eq!(t.root.children.capacity(), 64);
        t.remove(&[0]);
        assert_eq!(t.root.children.capacity(), 64, "one cancel keeps the room");
        for b in 1..48u8 {
            t.remove(&[b]);
        }
        assert_eq!(t.root.children.len(), 16);
        assert_eq!(t.root.children.capacity(), 16, "a quarter used: shrunk");
        for b in 48..60u8 {
            t.remove(&[b]);
        }
        assert_eq!(
            t.root.children.capacity(),
            4,
            "and again at a quarter of that"
        );
        check_shape(&t);
    }

    #[test]
    fn remove_pipe_prunes_in_one_walk() {
        let [a, b] = pipes(2)[..] else { unreachable!() };
        let mut t: Trie<PipeSet> = Trie::new();
        for topic in [&b""[..], b"x", b"xa", b"xab", b"xb", b"y"] {
            t.add(topic, a);
        }
        t.add(b"xa", b);
        t.add(b"z", b);
        let emptied = t.remove_pipe(a);
        assert_eq!(emptied, [&b""[..], b"x", b"xab", b"xb", b"y"]);
        check_shape(&t);
        assert_eq!(node_count(&t), 3);
        assert_eq!(
            t.topics(),
            [
                (Bytes::from_static(b"xa"), &vec![b]),
                (Bytes::from_static(b"z"), &vec![b])
            ]
        );
        assert_eq!(t.remove_pipe(b), [&b"xa"[..], b"z"]);
        assert!(t.is_empty());
        assert_eq!(heap_bytes(&t), 0);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Add(Vec<u8>, usize),
        Remove(Vec<u8>, usize),
        RemovePipe(usize),
        Probe(Vec<u8>),
    }

    /// Topics over three letters and up to five bytes, so that they share prefixes, split
    /// each other's edges and nest often.
    fn op() -> impl Strategy<Value = Op> {
        let topic = || proptest::collection::vec(b'a'..b'd', 0..6);
        prop_oneof![
            4 => (topic(), 0usize..3).prop_map(|(t, p)| Op::Add(t, p)),
            3 => (topic(), 0usize..3).prop_map(|(t, p)| Op::Remove(t, p)),
            1 => (0usize..3).prop_map(Op::RemovePipe),
            2 => proptest::collection::vec(b'a'..b'd', 0..8).prop_map(Op::Probe),
        ]
    }

    /// The model's counterpart of [`unsubscribe`], with the same set order.
    fn model_unsubscribe(model: &mut BTreeMap<Vec<u8>, PipeSet>, topic: &[u8], p: PipeId) -> bool {
        let Some(set) = model.get_mut(topic) else {
            return false;
        };
        let emptied = unsubscribe(set, p);
        if set.is_empty() {
            model.remove(topic);
        }
        emptied
    }

    /// Memory stays within twice the topic bytes plus a constant per topic.
    fn assert_bounded<V: TopicValue + ValueBytes, K>(t: &Trie<V>, model: &BTreeMap<Vec<u8>, K>) {
        let bytes: usize = model.keys().map(Vec::len).sum();
        let bound = 2 * bytes + (model.len() + 1) * 16 * size_of::<Node<V>>();
        assert!(heap_bytes(t) <= bound, "{} > {bound}", heap_bytes(t));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The publisher's trie behaves as a sorted map of topics to pipe lists, pipe order
        /// included, after every step; emptying it in any way gives all memory back.
        #[test]
        fn pipe_trie_equals_a_map(
            ops in proptest::collection::vec(op(), 0..120),
            by_pipe in any::<bool>(),
        ) {
            let ids = pipes(3);
            let mut t: Trie<PipeSet> = Trie::new();
            let mut model: BTreeMap<Vec<u8>, PipeSet> = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Add(topic, p) => {
                        let set = model.entry(topic.clone()).or_default();
                        let first = set.is_empty();
                        let new = !set.contains(&ids[p]);
                        if new {
                            set.push(ids[p]);
                        }
                        prop_assert_eq!(t.add(&topic, ids[p]), Change { pipe: new, topic: first });
                    }
                    Op::Remove(topic, p) => {
                        let was = model.get(&topic).is_some_and(|s| s.contains(&ids[p]));
                        let emptied = model_unsubscribe(&mut model, &topic, ids[p]);
                        prop_assert_eq!(
                            t.remove(&topic, ids[p]),
                            Change { pipe: was, topic: emptied }
                        );
                    }
                    Op::RemovePipe(p) => {
                        let topics: Vec<Vec<u8>> = model.keys().cloned().collect();
                        let want: Vec<Vec<u8>> = topics
                            .into_iter()
                            .filter(|topic| model_unsubscribe(&mut model, topic, ids[p]))
                            .collect();
                        let got: Vec<Vec<u8>> =
                            t.remove_pipe(ids[p]).iter().map(|b| b.to_vec()).collect();
                        prop_assert_eq!(got, want);
                    }
                    Op::Probe(data) => {
                        let mut got = Vec::new();
                        t.for_each_prefix(&data, |set| got.push(set.clone()));
                        let want: Vec<PipeSet> = (0..=data.len())
                            .filter_map(|k| model.get(&data[..k]).cloned())
                            .collect();
                        prop_assert_eq!(got, want);
                    }
                }
                let got: Vec<(Vec<u8>, PipeSet)> =
                    t.topics().into_iter().map(|(k, v)| (k.to_vec(), v.clone())).collect();
                let want: Vec<(Vec<u8>, PipeSet)> = model.clone().into_iter().collect();
                prop_assert_eq!(got, want);
                prop_assert_eq!(t.is_empty(), model.is_empty());
                prop_assert_eq!(t.len(), model.len());
                check_shape(&t);
                assert_bounded(&t, &model);
            }
            if by_pipe {
                for &p in &ids {
                    t.remove_pipe(p);
                }
            } else {
                for (topic, set) in &model {
                    for &p in set.iter().rev() {
                        t.remove(topic, p);
                    }
                }
            }
            prop_assert!(t.is_empty());
            prop_assert_eq!(heap_bytes(&t), heap_bytes(&Trie::<PipeSet>::new()));
        }

        /// The subscriber's trie behaves as a sorted map of topics to counts.
        #[test]
        fn count_trie_equals_a_map(ops in proptest::collection::vec(op(), 0..120)) {
            let mut t: Trie<u32> = Trie::new();
            let mut model: BTreeMap<Vec<u8>, u32> = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Add(topic, _) => {
                        let c = model.entry(topic.clone()).or_default();
                        *c += 1;
                        prop_assert_eq!(t.add(&topic), *c == 1);
                    }
                    Op::Remove(topic, _) => {
                        let want = match model.get_mut(&topic) {
                            Some(c) => {
                                *c -= 1;
                                *c == 0
                            }
                            None => false,
                        };
                        model.retain(|_, c| *c > 0);
                        prop_assert_eq!(t.remove(&topic), want);
                    }
                    // Once each: drops a count from every topic.
                    Op::RemovePipe(_) => {
                        for (topic, c) in &mut model {
                            *c -= 1;
                            prop_assert_eq!(t.remove(topic), *c == 0);
                        }
                        model.retain(|_, c| *c > 0);
                    }
                    Op::Probe(data) => {
                        let mut got = Vec::new();
                        t.for_each_prefix(&data, |&c| got.push(c));
                        let want: Vec<u32> = (0..=data.len())
                            .filter_map(|k| model.get(&data[..k]).copied())
                            .collect();
                        prop_assert_eq!(t.matches(&data), !want.is_empty());
                        prop_assert_eq!(got, want);
                    }
                }
                let got: Vec<(Vec<u8>, u32)> =
                    t.topics().into_iter().map(|(k, &v)| (k.to_vec(), v)).collect();
                let want: Vec<(Vec<u8>, u32)> = model.clone().into_iter().collect();
                prop_assert_eq!(got, want);
                prop_assert_eq!(t.is_empty(), model.is_empty());
                prop_assert_eq!(t.len(), model.len());
                check_shape(&t);
                assert_bounded(&t, &model);
            }
            for (topic, &c) in &model {
                for _ in 0..c {
                    t.remove(topic);
                }
            }
            prop_assert!(t.is_empty());
            prop_assert_eq!(heap_bytes(&t), heap_bytes(&Trie::<u32>::new()));
        }
    }
}

//! Property tests of the draft patterns on the simulated network, against naive models: what a
//! set of DISHes receives from a RADIO equals, message for message, what their joined groups
//! select at the time of sending; a SERVER's reply reaches exactly the CLIENT whose routing id
//! it carries, in order; SCATTER deals single parts out in turn and GATHER takes them all.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use proptest::prelude::*;

use omq_core::simnet::{Net, SockId};
use omq_core::{Message, Options, SocketType};

const SETTLE: Duration = Duration::from_millis(5);
const GROUPS: [&str; 4] = ["a", "b", "ab", "ba"];

#[derive(Debug, Clone)]
enum GroupOp {
    Join(usize, usize),
    Leave(usize, usize),
    Send(usize),
}

fn group_op(dishes: usize) -> impl Strategy<Value = GroupOp> {
    prop_oneof![
        2 => (0..dishes, 0..GROUPS.len()).prop_map(|(d, g)| GroupOp::Join(d, g)),
        1 => (0..dishes, 0..GROUPS.len()).prop_map(|(d, g)| GroupOp::Leave(d, g)),
        5 => (0..GROUPS.len()).prop_map(GroupOp::Send),
    ]
}

fn drain(net: &mut Net, s: SockId) -> Vec<(Vec<u8>, Message)> {
    let mut out = Vec::new();
    while let Ok(m) = net.recv(s) {
        out.push((m.group().unwrap_or_default().to_vec(), m));
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Exact group filtering: a DISH gets a message iff it had joined exactly that group when
    /// the message was sent (prefixes do not count), once, in the order sent.
    #[test]
    fn dishes_receive_exactly_their_groups(ops in proptest::collection::vec(group_op(3), 1..60)) {
        let mut net = Net::new(3);
        let radio = net.socket(SocketType::Radio, Options::default().send_hwm(0)).unwrap();
        let ep = net.bind(radio, "tcp://*:0").unwrap();
        let dishes: Vec<SockId> = (0..3)
            .map(|_| net.socket(SocketType::Dish, Options::default().recv_hwm(0)).unwrap())
            .collect();
        for &d in &dishes {
            net.connect(d, &ep).unwrap();
        }
        net.run_for(SETTLE);
        let mut joined: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); dishes.len()];
        let mut want: Vec<Vec<(Vec<u8>, Message)>> = vec![Vec::new(); dishes.len()];
        for (n, op) in ops.into_iter().enumerate() {
            match op {
                GroupOp::Join(d, g) => {
                    let r = net.get(dishes[d]).join(GROUPS[g].as_bytes());
                    prop_assert_eq!(r.is_ok(), joined[d].insert(g));
                }
                GroupOp::Leave(d, g) => {
                    let r = net.get(dishes[d]).leave(GROUPS[g].as_bytes());
                    prop_assert_eq!(r.is_ok(), joined[d].remove(&g));
                }
                GroupOp::Send(g) => {
                    let m = Message::from(format!("m{n}")).with_group(GROUPS[g]);
                    net.send(radio, m.clone()).unwrap();
                    for (d, j) in joined.iter().enumerate() {
                        if j.contains(&g) {
                            want[d].push((GROUPS[g].as_bytes().to_vec(), m.clone()));
                        }
                    }
                }
            }
            // JOIN and LEAVE reach the RADIO before the next step, as the model assumes.
            net.run_for(SETTLE);
        }
        for (d, &s) in dishes.iter().enumerate() {
            prop_assert_eq!(drain(&mut net, s), want[d].clone(), "dish {}", d);
        }
    }

    /// Replies by routing id: whatever order the SERVER answers in, each CLIENT gets exactly
    /// the replies addressed to it, in the order they were sent.
    #[test]
    fn a_server_reaches_exactly_the_client_it_addresses(
        sends in proptest::collection::vec(0usize..4, 1..40),
        order in proptest::collection::vec(any::<prop::sample::Index>(), 40),
    ) {
        let mut net = Net::new(5);
        let server = net.socket(SocketType::Server, Options::default().send_hwm(0).recv_hwm(0)).unwrap();
        let ep = net.bind(server, "tcp://*:0").unwrap();
        let clients: Vec<SockId> = (0..4)
            .map(|_| net.socket(SocketType::Client, Options::default().recv_hwm(0)).unwrap())
            .collect();
        for &c in &clients {
            net.connect(c, &ep).unwrap();
        }
        net.run_for(SETTLE);
        for (n, &c) in sends.iter().enumerate() {
            net.send(clients[c], Message::from(format!("{c}:{n}"))).unwrap();
        }
        net.run_for(SETTLE);
        let mut received = Vec::new();
        while let Ok(m) = net.recv(server) {
            received.push(m);
        }
        prop_assert_eq!(received.len(), sends.len());
        // The client each routing id stands for, learnt from the requests' bodies.
        let mut who: HashMap<u32, usize> = HashMap::new();
        for m in &received {
            let c: usize = std::str::from_utf8(&m.parts()[0]).unwrap().split(':').next().unwrap().parse().unwrap();
            let id = m.routing_id().unwrap();
            prop_assert_eq!(*who.entry(id).or_insert(c), c, "one id per client");
        }
        let mut want: Vec<Vec<Message>> = vec![Vec::new(); clients.len()];
        for (i, at) in order.iter().take(received.len()).enumerate() {
            let pick = at.index(received.len());
            let m = &received[pick];
            let reply = Message::from(format!("re {}", i)).with_routing_id(m.routing_id().unwrap());
            want[who[&m.routing_id().unwrap()]].push(Message::from(format!("re {}", i)));
            net.send(server, reply).unwrap();
        }
        net.run_for(SETTLE);
        for (c, &s) in clients.iter().enumerate() {
            let mut got = Vec::new();
            while let Ok(m) = net.recv(s) {
                got.push(m);
            }
            prop_assert_eq!(&got, &want[c], "client {}", c);
        }
    }

    /// SCATTER deals out in turn to its GATHERs (equal shares, as round robin with room
    /// everywhere); together they receive every part exactly once.
    #[test]
    fn scatter_deals_in_turn_and_gather_takes_all(n in 1usize..60, gathers in 1usize..4) {
        let mut net = Net::new(7);
        let scatter = net.socket(SocketType::Scatter, Options::default().send_hwm(0)).unwrap();
        let ep = net.bind(scatter, "tcp://*:0").unwrap();
        let gs: Vec<SockId> = (0..gathers)
            .map(|_| net.socket(SocketType::Gather, Options::default().recv_hwm(0)).unwrap())
            .collect();
        for &g in &gs {
            net.connect(g, &ep).unwrap();
        }
        net.run_for(SETTLE);
        for i in 0..n {
            net.send(scatter, Message::from(format!("{i}"))).unwrap();
        }
        net.run_for(SETTLE);
        let mut all = Vec::new();
        for &g in &gs {
            let mut got = Vec::new();
            while let Ok(m) = net.recv(g) {
                got.push(std::str::from_utf8(&m.parts()[0]).unwrap().parse::<usize>().unwrap());
            }
            let share = got.len();
            prop_assert!(share == n / gathers || share == n / gathers + 1, "share {} of {}", share, n);
            all.extend(got);
        }
        all.sort_unstable();
        prop_assert_eq!(all, (0..n).collect::<Vec<_>>());
    }
}

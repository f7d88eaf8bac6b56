//! RADIO and DISH over multicast `udp://` on every backend: one RADIO connected to a group
//! reaches every DISH bound to it, each filtering by the groups it joined.
//!
//! Runs inside a network namespace of its own (root, as CI runs), whose loopback carries
//! multicast, so no datagram leaves the machine.

use std::process::Command;
use std::time::Duration;

use conformance::backend::{Backend, CompioBackend, GlommioBackend, MonoioBackend, TokioBackend};
use conformance::netns::in_netns;
use omq_driver::{Message, Options, Runtime, Socket, SocketType};

const T: Duration = Duration::from_secs(10);

/// A namespace whose loopback routes multicast; deleted when dropped.
struct Ns(String);

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("running ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {} (these tests need root)",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Ns {
    fn new(tag: &str) -> Ns {
        let name = format!("omq-mc-{}-{tag}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        ip(&["netns", "add", &name]);
        let ns = Ns(name);
        ip(&["-n", &ns.0, "link", "set", "lo", "up", "multicast", "on"]);
        ip(&["-n", &ns.0, "route", "add", "224.0.0.0/4", "dev", "lo"]);
        ns
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

async fn within<R: Runtime, F: std::future::Future>(f: F) -> F::Output {
    use futures_util::future::{select, Either};
    match select(Box::pin(f), Box::pin(R::sleep_until(R::now() + T))).await {
        Either::Left((v, _)) => v,
        Either::Right(_) => panic!("not within {T:?}"),
    }
}

async fn two_dishes_one_radio<R: Runtime>() {
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let ep = format!("udp://239.192.7.7:{port}");
    let mut dishes = Vec::new();
    for group in ["news", "weather"] {
        let d = Socket::<R>::new(SocketType::Dish, Options::default()).unwrap();
        assert_eq!(d.bind(&ep).await.unwrap().to_string(), ep);
        d.join(group).unwrap();
        d.join("all").unwrap();
        dishes.push(d);
    }
    let radio = Socket::<R>::new(SocketType::Radio, Options::default()).unwrap();
    radio.connect(&ep).await.unwrap();
    for (group, body) in [
        ("news", "n1"),
        ("weather", "w1"),
        ("other", "x"),
        ("all", "a1"),
    ] {
        radio
            .send(Message::from(body).with_group(group))
            .await
            .unwrap();
    }
    for (d, first) in dishes.iter().zip(["n1", "w1"]) {
        assert_eq!(
            within::<R, _>(d.recv()).await.unwrap(),
            Message::from(first)
        );
        let m = within::<R, _>(d.recv()).await.unwrap();
        assert_eq!(m.group(), Some(&b"all"[..]));
        assert_eq!(m, Message::from("a1"));
    }
    radio.close().await.unwrap();
}

fn run<B: Backend>() {
    let ns = Ns::new(B::NAME);
    in_netns(&ns.0, || B::block_on(two_dishes_one_radio::<B::R>()))
        .join()
        .expect("the multicast test panicked");
}

#[test]
fn multicast_reaches_every_dish_on_tokio() {
    run::<TokioBackend>();
}

#[test]
fn multicast_reaches_every_dish_on_compio() {
    run::<CompioBackend>();
}

#[test]
fn multicast_reaches_every_dish_on_monoio() {
    run::<MonoioBackend>();
}

#[test]
fn multicast_reaches_every_dish_on_glommio() {
    run::<GlommioBackend>();
}

//! The zguide examples (`examples/zguide_*.rs`), each run whole: every part of a pattern in one
//! process on real sockets, and the outcome checked. The examples' own code runs here, each
//! file included with `#[path]`, so what CI tests is exactly what a reader runs by hand.
//!
//! Some parts are a real libzmq instead (a REP for the hello-world client, a REQ through the
//! broker, CURVE clients against the allow-list), and patterns run on a thread-per-core
//! backend (monoio, compio, glommio) as well as tokio. Time is only ever an upper bound, with
//! wide slack: the suite runs on small, busy machines.

// Each example brings its own copy of `examples/zguide/runtime.rs` (and the Paranoid Pirate
// one its Lazy Pirate client), as it does when built alone.
#![allow(clippy::duplicate_mod)]

#[allow(dead_code, unreachable_pub)]
#[path = "../examples/zguide_hello.rs"]
mod hello;

#[allow(dead_code, unreachable_pub)]
#[path = "../examples/zguide_weather.rs"]
mod weather;

#[allow(dead_code, unreachable_pub)]
#[path = "../examples/zguide_tasks.rs"]
mod tasks;

#[allow(dead_code, unreachable_pub)]
#[path = "../examples/zguide_broker.rs"]
mod broker;

#[allow(dead_code, unreachable_pub)]
#[path = "../examples/zguide_lbbroker.rs"]
mod lbbroker;

#[allow(dead_code, unreachable_pub)]
#[path = "../examples/zguide_lazy_pirate.rs"]
mod lazy_pirate;

#[allow(dead_code, unreachable_pub)]
#[path = "../examples/zguide_paranoid_pirate.rs"]
mod paranoid_pirate;

#[allow(dead_code, unreachable_pub)]
#[path = "../examples/zguide_clone.rs"]
mod clone;

#[allow(dead_code, unreachable_pub)]
#[path = "../examples/zguide_curve.rs"]
mod curve;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use conformance::async_peer::AsyncPeer;
use conformance::backend::{Backend, CompioBackend, GlommioBackend, MonoioBackend, TokioBackend};
use futures_util::future::{join, join_all, select, try_join, try_join3, try_join_all, Either};
use omq_driver::{generate_keypair, Error, OsRng, Runtime};

/// The most any one test may take. Far above what they need (a few seconds), so that only a
/// hang fails.
const LIMIT: Duration = Duration::from_secs(30);

static UNIQUE: AtomicU64 = AtomicU64::new(0);

/// An ipc endpoint no other test uses (as a `&str` by deref). Its socket file is removed
/// when this is dropped: a part stopped by dropping its future may not get to remove it
/// (on monoio, a listener still open when `block_on` returns leaves its file behind).
struct Ipc(String);

impl std::ops::Deref for Ipc {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl Drop for Ipc {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0["ipc://".len()..]);
    }
}

fn ipc(tag: &str) -> Ipc {
    Ipc(format!(
        "ipc:///tmp/omq-zguide-{tag}-{}-{}.sock",
        std::process::id(),
        UNIQUE.fetch_add(1, Ordering::Relaxed)
    ))
}

/// A tcp endpoint on a port that is free, chosen below the kernel's ephemeral range (32768 up
/// on Linux), from which `bind` to port 0 and outgoing connections draw theirs: so no other
/// socket on the machine is handed it meanwhile, and the parts can connect before the part
/// that binds it exists, or bind it again after a restart (where ipc would race with the old
/// socket's file).
fn tcp() -> String {
    loop {
        let n = UNIQUE.fetch_add(1, Ordering::Relaxed) + u64::from(std::process::id()) * 97;
        let port = 20_000 + (n * 7919 % 12_000) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return format!("tcp://127.0.0.1:{port}");
        }
    }
}

/// `f`, or a panic once [`LIMIT`] has passed.
async fn within<R: Runtime, F: Future>(f: F) -> F::Output {
    match select(pin!(f), pin!(R::sleep_until(R::now() + LIMIT))).await {
        Either::Left((v, _)) => v,
        Either::Right(_) => panic!("took more than {LIMIT:?}"),
    }
}

/// Runs `work` beside `service`, a part that runs for ever (a server, a broker, workers), and
/// gives `work`'s result; dropping `service` then stops it.
async fn beside<T>(
    service: impl Future<Output = Result<(), Error>>,
    work: impl Future<Output = T>,
) -> T {
    match select(pin!(service), pin!(work)).await {
        Either::Left((ended, _)) => panic!("a service stopped: {ended:?}"),
        Either::Right((result, _)) => result,
    }
}

/// Sleeps on the runtime's timer.
async fn sleep<R: Runtime>(d: Duration) {
    R::sleep_until(R::now() + d).await
}

fn libzmq() -> AsyncPeer {
    AsyncPeer::spawn().unwrap_or_else(|e| panic!("{e}"))
}

// 1. Hello world

fn hello_world<B: Backend>() {
    B::block_on(within::<B::R, _>(async {
        let ep = ipc("hello");
        let ((), replies) = try_join(hello::server::<B::R>(&ep, 5), hello::client::<B::R>(&ep, 5))
            .await
            .unwrap();
        assert_eq!(replies, vec!["World"; 5]);
    }))
}

#[test]
fn hello_world_on_tokio() {
    hello_world::<TokioBackend>()
}

#[test]
fn hello_world_on_monoio() {
    hello_world::<MonoioBackend>()
}

#[test]
fn hello_world_on_compio() {
    hello_world::<CompioBackend>()
}

#[test]
fn hello_world_on_glommio() {
    hello_world::<GlommioBackend>()
}

#[test]
fn hello_world_client_against_a_libzmq_rep() {
    type B = TokioBackend;
    B::block_on(within::<<B as Backend>::R, _>(async {
        let peer = libzmq();
        let ep = peer
            .call(|p| {
                p.socket(1, "REP").unwrap();
                p.bind(1, "tcp://127.0.0.1:*").unwrap()
            })
            .await;
        let server = peer.call(|p| {
            (0..3)
                .map(|_| {
                    let request = p.recv(1, LIMIT).unwrap();
                    p.send(1, &[b"World"]).unwrap();
                    request
                })
                .collect::<Vec<_>>()
        });
        let (requests, replies) = join(server, hello::client::<<B as Backend>::R>(&ep, 3)).await;
        assert_eq!(replies.unwrap(), vec!["World"; 3]);
        assert_eq!(requests, vec![vec![b"Hello".to_vec()]; 3]);
    }))
}

// 2. Weather updates

fn weather<B: Backend>() {
    B::block_on(within::<B::R, _>(async {
        let ep = ipc("weather");
        let zips = [10001, 10077];
        let clients = try_join_all(zips.map(|zip| weather::client::<B::R>(&ep, zip, 50)));
        let samples = beside(weather::server::<B::R>(&ep), clients).await.unwrap();
        for (zip, updates) in zips.iter().zip(&samples) {
            assert_eq!(updates.len(), 50);
            assert!(
                updates.iter().all(|u| u.zip == *zip),
                "only zip {zip}: {updates:?}"
            );
            assert!(updates.iter().all(|u| (-80..135).contains(&u.temperature)));
            let mean = updates
                .iter()
                .map(|u| f64::from(u.temperature))
                .sum::<f64>()
                / 50.0;
            let average = weather::average(updates);
            assert!((average - mean).abs() < 1e-9, "{average} vs {mean}");
            assert!((-80.0..135.0).contains(&average));
        }
    }))
}

#[test]
fn weather_on_tokio() {
    weather::<TokioBackend>()
}

#[test]
fn weather_on_monoio() {
    weather::<MonoioBackend>()
}

// 3. Ventilator, workers and sink

fn divide_and_conquer<B: Backend>() {
    B::block_on(within::<B::R, _>(async {
        let (tasks_ep, sink_ep) = (ipc("tasks"), ipc("sink"));
        let names = ["worker-1", "worker-2", "worker-3"];
        let workers = join_all(names.map(|n| tasks::worker::<B::R>(&tasks_ep, &sink_ep, n)));
        let workers = async { workers.await.into_iter().collect() };
        let batch = try_join(
            tasks::ventilator::<B::R>(&tasks_ep, &sink_ep, names.len(), 30, 10),
            tasks::sink::<B::R>(&sink_ep, 30),
        );
        let (sent_ms, tally) = beside(workers, batch).await.unwrap();
        assert_eq!(tally.total_ms, sent_ms, "every task's work summed");
        assert_eq!(tally.per_worker.values().sum::<usize>(), 30);
        // The ventilator waited for all three, so the round-robin fans out to each.
        assert_eq!(
            tally.per_worker.keys().collect::<Vec<_>>(),
            names.iter().collect::<Vec<_>>(),
            "{tally:?}"
        );
    }))
}

#[test]
fn divide_and_conquer_on_tokio() {
    divide_and_conquer::<TokioBackend>()
}

#[test]
fn divide_and_conquer_on_compio() {
    divide_and_conquer::<CompioBackend>()
}

// 4. Request-reply broker

fn broker<B: Backend>() {
    B::block_on(within::<B::R, _>(async {
        let (front, back) = (ipc("front"), ipc("back"));
        let services = async {
            let workers =
                join_all(["worker-1", "worker-2"].map(|w| broker::worker::<B::R>(&back, w)));
            let (b, w) = join(broker::broker::<B::R>(&front, &back), workers).await;
            b.and(w.into_iter().collect())
        };
        let clients = try_join_all((0..3).map(|_| broker::client::<B::R>(&front, 4)));
        let replies = beside(services, clients).await.unwrap();
        for replies in replies {
            assert_eq!(replies.len(), 4);
            for r in replies {
                assert!(
                    r == "World from worker-1" || r == "World from worker-2",
                    "{r}"
                );
            }
        }
    }))
}

#[test]
fn broker_on_tokio() {
    broker::<TokioBackend>()
}

#[test]
fn broker_on_monoio() {
    broker::<MonoioBackend>()
}

#[test]
fn broker_serves_a_libzmq_req_beside_an_omq_one() {
    type R = <TokioBackend as Backend>::R;
    TokioBackend::block_on(within::<R, _>(async {
        let (front, back) = (tcp(), ipc("back"));
        let services = async {
            let (b, w) = join(
                broker::broker::<R>(&front, &back),
                broker::worker::<R>(&back, "omq-worker"),
            )
            .await;
            b.and(w)
        };
        let peer = libzmq();
        let ep = front.clone();
        let zmq_client = peer.call(move |p| {
            p.socket(1, "REQ").unwrap();
            p.connect(1, &ep).unwrap();
            (0..4)
                .map(|_| {
                    p.send(1, &[b"Hello"]).unwrap();
                    p.recv(1, LIMIT).unwrap()
                })
                .collect::<Vec<_>>()
        });
        let clients = join(zmq_client, broker::client::<R>(&front, 4));
        let (zmq_replies, omq_replies) = beside(services, clients).await;
        assert_eq!(
            zmq_replies,
            vec![vec![b"World from omq-worker".to_vec()]; 4]
        );
        assert_eq!(omq_replies.unwrap(), vec!["World from omq-worker"; 4]);
    }))
}

// 5. Load-balancing broker

fn load_balancing_broker<B: Backend>() {
    B::block_on(within::<B::R, _>(async {
        let (front, back) = (ipc("lb-front"), ipc("lb-back"));
        let names = ["worker-1", "worker-2", "worker-3"];
        let workers = join_all(names.map(|w| lbbroker::worker::<B::R>(&back, w)));
        let workers = async { workers.await.into_iter().collect() };
        let (clients, requests) = (4, 5);
        let run = try_join(
            lbbroker::broker::<B::R>(&front, &back, clients * requests),
            try_join_all((0..clients).map(|_| lbbroker::client::<B::R>(&front, requests))),
        );
        let (served, replies) = beside(workers, run).await.unwrap();
        // Every request answered, and the broker's count per worker is what the clients got.
        let mut got: BTreeMap<String, usize> = BTreeMap::new();
        for replies in &replies {
            assert_eq!(replies.len(), requests);
            for r in replies {
                let worker = r.strip_prefix("OK from ").expect(r);
                assert!(names.contains(&worker), "{r}");
                *got.entry(worker.to_string()).or_default() += 1;
            }
        }
        assert_eq!(served, got);
        assert_eq!(served.values().sum::<usize>(), clients * requests);
    }))
}

#[test]
fn load_balancing_broker_on_tokio() {
    load_balancing_broker::<TokioBackend>()
}

#[test]
fn load_balancing_broker_on_compio() {
    load_balancing_broker::<CompioBackend>()
}

// 6. Lazy Pirate

fn lazy_pirate<B: Backend>() {
    B::block_on(within::<B::R, _>(async {
        let ep = ipc("lazy");
        let patience = lazy_pirate::Patience {
            timeout: Duration::from_millis(500),
            retries: 3,
        };
        // Answers late enough that the client has asked again meanwhile.
        let stall = patience.timeout * 3 / 2;
        let replies = beside(
            lazy_pirate::server::<B::R>(&ep, stall),
            lazy_pirate::client::<B::R>(&ep, 10, patience),
        )
        .await
        .unwrap();
        let expected: Vec<String> = (1..=10).map(|n| n.to_string()).collect();
        assert_eq!(
            replies, expected,
            "every request answered despite the drops"
        );
    }))
}

#[test]
fn lazy_pirate_on_tokio() {
    lazy_pirate::<TokioBackend>()
}

#[test]
fn lazy_pirate_on_monoio() {
    lazy_pirate::<MonoioBackend>()
}

#[test]
fn lazy_pirate_gives_up_on_a_server_that_is_not_there() {
    type R = <MonoioBackend as Backend>::R;
    MonoioBackend::block_on(within::<R, _>(async {
        let patience = lazy_pirate::Patience {
            timeout: Duration::from_millis(200),
            retries: 2,
        };
        let start = Instant::now();
        let replies = lazy_pirate::client::<R>(&ipc("nobody"), 3, patience)
            .await
            .unwrap();
        assert!(replies.is_empty());
        // It gave up after three tries of the first request: at least 600 ms, well under
        // the limit.
        assert!(start.elapsed() < Duration::from_secs(20));
    }))
}

// 7. Paranoid Pirate

fn paranoid_pirate<B: Backend>() {
    type Stats = paranoid_pirate::WorkerStats;
    B::block_on(within::<B::R, _>(async {
        let (front, back) = (tcp(), tcp());
        let hb = paranoid_pirate::Heartbeat {
            interval: Duration::from_millis(200),
            liveness: 3,
            reconnect_max: Duration::from_millis(1600),
        };
        let patience = lazy_pirate::Patience {
            timeout: Duration::from_secs(1),
            retries: 5,
        };
        // A queue that comes back binds again as soon as the old one has let go of the ports.
        let queue = || async {
            loop {
                match paranoid_pirate::queue::<B::R>(&front, &back, hb).await {
                    Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::AddrInUse => {
                        sleep::<B::R>(Duration::from_millis(50)).await
                    }
                    ended => return ended,
                }
            }
        };
        let stats = [Stats::default(), Stats::default()];
        let workers = async {
            let (a, b) = join(
                paranoid_pirate::worker::<B::R>(&back, "worker-1", hb, &stats[0]),
                paranoid_pirate::worker::<B::R>(&back, "worker-2", hb, &stats[1]),
            )
            .await;
            a.and(b)
        };
        let scenario = async {
            // The workers start with no queue: they give up on it and try again, backing off.
            sleep::<B::R>(Duration::from_millis(1500)).await;
            let first = beside(queue(), lazy_pirate::client::<B::R>(&front, 5, patience)).await;
            // The queue is gone (its future dropped) for a second, then back; the client asks
            // meanwhile and retries until it is served.
            let second = async {
                sleep::<B::R>(Duration::from_secs(1)).await;
                queue().await
            };
            let second = beside(second, lazy_pirate::client::<B::R>(&front, 5, patience)).await;
            (first.unwrap(), second.unwrap())
        };
        let (first, second) = beside(workers, scenario).await;
        let expected: Vec<String> = (1..=5).map(|n| n.to_string()).collect();
        assert_eq!(first, expected);
        assert_eq!(second, expected);
        for s in &stats {
            assert!(s.reconnects.get() >= 1, "{s:?}");
        }
        assert!(
            stats.iter().map(|s| s.served.get()).sum::<usize>() >= 10,
            "{stats:?}"
        );
    }))
}

#[test]
fn paranoid_pirate_on_tokio() {
    on_a_large_stack(paranoid_pirate::<TokioBackend>)
}

#[test]
fn paranoid_pirate_on_monoio() {
    on_a_large_stack(paranoid_pirate::<MonoioBackend>)
}

/// Runs `f` on a thread with a 64 MiB stack. The paranoid pirate scenario nests a queue, two
/// workers and a client in one future; an unoptimised build lays out large frames while
/// polling it, and on the test harness's 2 MiB thread it overflowed in some fresh builds.
fn on_a_large_stack(f: fn()) {
    let t = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(f)
        .expect("test thread");
    if let Err(panic) = t.join() {
        std::panic::resume_unwind(panic);
    }
}

// 8. Clone

fn clone<B: Backend>() {
    B::block_on(within::<B::R, _>(async {
        let (snapshots, updates) = (ipc("snapshots"), ipc("updates"));
        let changes = 1000;
        // One client from the start, one that joins while the store is being made.
        let late = async {
            sleep::<B::R>(Duration::from_millis(50)).await;
            clone::client::<B::R>(&snapshots, &updates, changes).await
        };
        let (server, early, late) = try_join3(
            clone::server::<B::R>(&snapshots, &updates, changes, 50, 2),
            clone::client::<B::R>(&snapshots, &updates, changes),
            late,
        )
        .await
        .unwrap();
        assert_eq!(server.sequence, changes);
        assert!(!server.map.is_empty());
        assert_eq!(early, server);
        assert_eq!(late, server);
    }))
}

#[test]
fn clone_on_tokio() {
    clone::<TokioBackend>()
}

#[test]
fn clone_on_compio() {
    clone::<CompioBackend>()
}

// 9. CURVE with an allow-list

fn curve_allow_list<B: Backend>() {
    B::block_on(within::<B::R, _>(async {
        let ep = tcp();
        let server_keys = generate_keypair(&mut OsRng);
        let server_key = *server_keys.public();
        let (known, stranger) = (generate_keypair(&mut OsRng), generate_keypair(&mut OsRng));
        let allowed = [*known.public()];
        let t = LIMIT / 2;
        let clients = async {
            let a = curve::client::<B::R>(&ep, server_key, known, t).await?;
            let b = curve::client::<B::R>(&ep, server_key, stranger, t).await?;
            Ok::<_, Error>((a, b))
        };
        let (known, stranger) = beside(curve::server::<B::R>(&ep, server_keys, &allowed), clients)
            .await
            .unwrap();
        assert_eq!(known, curve::Outcome::Reply("World".into()));
        assert!(
            matches!(stranger, curve::Outcome::Refused(_)),
            "{stranger:?}"
        );
    }))
}

#[test]
fn curve_allow_list_on_tokio() {
    curve_allow_list::<TokioBackend>()
}

#[test]
fn curve_allow_list_on_monoio() {
    curve_allow_list::<MonoioBackend>()
}

#[test]
fn curve_allow_list_with_libzmq_clients() {
    type R = <TokioBackend as Backend>::R;
    TokioBackend::block_on(within::<R, _>(async {
        let ep = tcp();
        let server_keys = generate_keypair(&mut OsRng);
        let server_key = server_keys.public().to_z85();
        let (known, stranger) = (generate_keypair(&mut OsRng), generate_keypair(&mut OsRng));
        let allowed = [*known.public()];
        let peer = libzmq();
        let ep2 = ep.clone();
        let clients = peer.call(move |p| {
            assert!(p.has_curve(), "libzmq built without CURVE");
            for (id, keys) in [(1, &known), (2, &stranger)] {
                p.socket(id, "REQ").unwrap();
                p.setsockopt(id, "LINGER", 0).unwrap();
                p.setsockopt(id, "CURVE_SERVERKEY", server_key.as_str())
                    .unwrap();
                p.setsockopt(id, "CURVE_PUBLICKEY", keys.public().to_z85().as_str())
                    .unwrap();
                p.setsockopt(id, "CURVE_SECRETKEY", keys.secret().to_z85().as_str())
                    .unwrap();
                p.monitor(id).unwrap();
                p.connect(id, &ep2).unwrap();
                p.send(id, &[b"Hello"]).unwrap();
            }
            let reply = p.recv(1, LIMIT).unwrap();
            // libzmq reports the refusal as an authentication failure with ZAP's status.
            let refused = loop {
                match p.event(2, LIMIT) {
                    Ok((name, value, _)) if name.starts_with("HANDSHAKE_FAILED") => {
                        break (name, value)
                    }
                    Ok(_) => {}
                    Err(e) => panic!("no refusal: {e}"),
                }
            };
            (reply, refused)
        });
        let (reply, refused) =
            beside(curve::server::<R>(&ep, server_keys, &allowed), clients).await;
        assert_eq!(reply, vec![b"World".to_vec()]);
        assert_eq!(refused, ("HANDSHAKE_FAILED_AUTH".to_string(), 400));
    }))
}

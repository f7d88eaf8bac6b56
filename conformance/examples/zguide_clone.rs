//! Clone (zguide chapter 5, `clonesrv2`..`clonesrv5`, simplified): sharing a key-value store.
//! The server holds the store and publishes every change on a PUB, numbered in sequence; a
//! client that joins late asks a ROUTER for a snapshot ("ICANHAZ?"), gets every key with the
//! sequence number the store had then ("KTHXBAI" ends the snapshot), and from then on applies
//! the published changes numbered after it.
//!
//! The client subscribes before it asks, so no change falls between the snapshot and the
//! updates; it even waits until the subscription is live (the first published message has
//! arrived), and simply skips the updates the snapshot already holds. While it has no change
//! to publish, the server publishes "HUGZ" with its current sequence number once an interval,
//! so a client always gets that first message, and learns how far the store has got.
//!
//! Wire formats: an update or a snapshot entry is `[key, sequence (8 bytes, big-endian), value]`;
//! a snapshot request is `["ICANHAZ?"]` from a DEALER; the snapshot ends with
//! `["KTHXBAI", sequence, ""]`.
//!
//! ```text
//! cargo run -p conformance --example zguide_clone                       # a server and two clients
//! cargo run -p conformance --example zguide_clone -- server 100000 &    # changes to make
//! cargo run -p conformance --example zguide_clone -- client 100000      # sequence to catch up to
//! cargo run -p conformance --example zguide_clone -- --runtime compio   # or monoio, glommio
//! ```

#[path = "zguide/runtime.rs"]
mod runtime;

use std::collections::BTreeMap;
use std::pin::pin;
use std::time::Duration;

use futures_util::future::{select, try_join3, Either};
use omq_driver::{Error, Message, Options, OsRng, Part, Runtime, Socket, SocketType};
use rand_chacha::rand_core::RngCore;

const SNAPSHOTS: &str = "tcp://127.0.0.1:5556";
const UPDATES: &str = "tcp://127.0.0.1:5557";

const ICANHAZ: &[u8] = b"ICANHAZ?";
const KTHXBAI: &[u8] = b"KTHXBAI";
const HUGZ: &[u8] = b"HUGZ";

/// How often an idle server says HUGZ.
const HUGZ_INTERVAL: Duration = Duration::from_millis(100);

/// The store: key -> value, and the sequence number of the last change applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Store {
    /// The entries.
    pub map: BTreeMap<String, String>,
    /// The last change's sequence number (0: none yet).
    pub sequence: u64,
}

fn entry(key: &[u8], sequence: u64, value: &[u8]) -> Message {
    Message::multipart([
        Part::from(key),
        Part::from(sequence.to_be_bytes()),
        Part::from(value),
    ])
}

/// `[key, sequence, value]`, parsed.
fn parse(msg: &Message) -> Option<(String, u64, String)> {
    let [key, sequence, value] = msg.parts() else {
        return None;
    };
    let text = |p: &Part| String::from_utf8_lossy(p).into_owned();
    Some((
        text(key),
        u64::from_be_bytes((&sequence[..]).try_into().ok()?),
        text(value),
    ))
}

/// Runs the server: binds a ROUTER for snapshots on `snapshots` and a PUB for updates on
/// `updates`, makes `changes` random changes to `keys` keys (a small batch each millisecond),
/// and answers snapshot requests all along. Returns its store once it has made every change
/// and served `clients` snapshots.
pub async fn server<R: Runtime>(
    snapshots: &str,
    updates: &str,
    changes: u64,
    keys: u32,
    clients: usize,
) -> Result<Store, Error> {
    let router = Socket::<R>::new(SocketType::Router, Options::default())?;
    router.bind(snapshots).await?;
    let publisher = Socket::<R>::new(SocketType::Pub, Options::default())?;
    publisher.bind(updates).await?;

    let mut store = Store::default();
    let mut served = 0;
    let mut hugz_at = R::now();
    while store.sequence < changes || served < clients {
        // While there are changes to make, the next batch is due in a millisecond; after
        // that, the next HUGZ.
        let due = if store.sequence < changes {
            R::now() + Duration::from_millis(1)
        } else {
            hugz_at
        };
        let request = {
            let request = pin!(router.recv());
            match select(request, pin!(R::sleep_until(due))).await {
                Either::Left((request, _)) => Some(request?),
                Either::Right(_) => None,
            }
        };
        match request {
            // [client, "ICANHAZ?"]: every entry, then KTHXBAI with the sequence number.
            Some(request) => {
                let [client, command] = request.parts() else {
                    continue;
                };
                if command[..] != *ICANHAZ {
                    continue;
                }
                for (key, value) in &store.map {
                    let mut e = entry(key.as_bytes(), store.sequence, value.as_bytes());
                    e.push_front(client.clone());
                    router.send(e).await?;
                }
                let mut end = entry(KTHXBAI, store.sequence, b"");
                end.push_front(client.clone());
                router.send(end).await?;
                served += 1;
            }
            None if store.sequence < changes => {
                for _ in 0..10.min(changes - store.sequence) {
                    store.sequence += 1;
                    let key = format!("key-{}", OsRng.next_u32() % keys);
                    let value = format!("value-{}", OsRng.next_u32());
                    publisher
                        .send(entry(key.as_bytes(), store.sequence, value.as_bytes()))
                        .await?;
                    store.map.insert(key, value);
                }
            }
            None => {
                publisher.send(entry(HUGZ, store.sequence, b"")).await?;
                hugz_at = R::now() + HUGZ_INTERVAL;
            }
        }
    }
    println!(
        "server: {} keys at sequence {}",
        store.map.len(),
        store.sequence
    );
    // Closing flushes the last snapshot and updates to the clients.
    router.close().await?;
    publisher.close().await?;
    Ok(store)
}

/// Runs a client: subscribes to `updates`, gets a snapshot from `snapshots`, then applies
/// updates until its store has reached sequence number `until`. Returns the store.
pub async fn client<R: Runtime>(
    snapshots: &str,
    updates: &str,
    until: u64,
) -> Result<Store, Error> {
    let subscriber = Socket::<R>::new(SocketType::Sub, Options::default())?;
    subscriber.connect(updates).await?;
    subscriber.subscribe("")?;
    // The first message proves the subscription live: from now on no update is missed.
    let first = subscriber.recv().await?;

    let dealer = Socket::<R>::new(SocketType::Dealer, Options::default())?;
    dealer.connect(snapshots).await?;
    dealer.send(ICANHAZ).await?;
    let mut store = Store::default();
    loop {
        let Some((key, sequence, value)) = parse(&dealer.recv().await?) else {
            continue;
        };
        if key.as_bytes() == KTHXBAI {
            store.sequence = sequence;
            break;
        }
        store.map.insert(key, value);
    }
    println!(
        "client: snapshot of {} keys at sequence {}",
        store.map.len(),
        store.sequence
    );

    // Updates, the first one included; those the snapshot holds are skipped, HUGZ too.
    let mut next = Some(first);
    while store.sequence < until {
        let msg = match next.take() {
            Some(m) => m,
            None => subscriber.recv().await?,
        };
        let Some((key, sequence, value)) = parse(&msg) else {
            continue;
        };
        if key.as_bytes() != HUGZ && sequence > store.sequence {
            store.map.insert(key, value);
            store.sequence = sequence;
        }
    }
    println!(
        "client: {} keys at sequence {}",
        store.map.len(),
        store.sequence
    );
    Ok(store)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (rt, args) = runtime::args();
    let role = args.first().map_or("all", String::as_str);
    let changes = args.get(1).map_or(Ok(10_000), |n| n.parse())?;
    runtime::on_runtime!(rt.as_str(), |R| async move {
        match role {
            "server" => drop(server::<R>(SNAPSHOTS, UPDATES, changes, 100, usize::MAX).await?),
            "client" => drop(client::<R>(SNAPSHOTS, UPDATES, changes).await?),
            _ => {
                // One client from the start, one that joins when the store is half made.
                let late = async {
                    R::sleep_until(R::now() + Duration::from_millis(changes / 20)).await;
                    client::<R>(SNAPSHOTS, UPDATES, changes).await
                };
                let (server, early, late) = try_join3(
                    server::<R>(SNAPSHOTS, UPDATES, changes, 100, 2),
                    client::<R>(SNAPSHOTS, UPDATES, changes),
                    late,
                )
                .await?;
                println!(
                    "the clients have the server's store: {}",
                    early == server && late == server
                );
            }
        }
        Ok(())
    })
}

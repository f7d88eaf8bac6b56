//! Weather updates (zguide chapter 1, `wuserver` / `wuclient`): publish-subscribe with
//! filtering. The server publishes "ZIP TEMPERATURE HUMIDITY" for random zip codes, for ever,
//! to whoever listens; a client subscribes to one zip code and averages the temperatures it
//! gets. The filtering happens at the publisher (the subscription travels to it), so a client
//! never sees, nor costs the network, the other zip codes.
//!
//! A subscription is a prefix: "10001 " with its space, so that zip 10001 does not also match
//! 100010. The server uses a hundred zip codes (the zguide uses a hundred thousand) so that a
//! client collects its sample in a moment.
//!
//! ```text
//! cargo run -p conformance --example zguide_weather                       # server and a client
//! cargo run -p conformance --example zguide_weather -- server &           # on tcp://127.0.0.1:5556
//! cargo run -p conformance --example zguide_weather -- client 10042 100   # zip, updates
//! cargo run -p conformance --example zguide_weather -- --runtime compio   # or monoio, glommio
//! ```

#[path = "zguide/runtime.rs"]
mod runtime;

use std::time::Duration;

use futures_util::future::{select, Either};
use omq_driver::{Error, Options, OsRng, Runtime, Socket, SocketType};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

const ENDPOINT: &str = "tcp://127.0.0.1:5556";

/// The zip codes the server reports on.
pub const ZIPS: std::ops::Range<u32> = 10000..10100;

/// Binds a PUB to `endpoint` and publishes random weather updates until its future is dropped.
pub async fn server<R: Runtime>(endpoint: &str) -> Result<(), Error> {
    let publisher = Socket::<R>::new(SocketType::Pub, Options::default())?;
    publisher.bind(endpoint).await?;
    let mut rng = ChaCha8Rng::seed_from_u64(OsRng.next_u64());
    let mut random = |n: u32| rng.next_u32() % n;
    loop {
        // A PUB never waits: a subscriber that cannot keep up loses updates. So the server
        // publishes in batches and pauses between them, or on a single-threaded runtime it
        // would never let anything else run.
        for _ in 0..100 {
            let zip = ZIPS.start + random(ZIPS.len() as u32);
            let temperature = random(215) as i32 - 80;
            let humidity = random(50) + 10;
            publisher
                .send(format!("{zip:05} {temperature} {humidity}"))
                .await?;
        }
        R::sleep_until(R::now() + Duration::from_millis(1)).await;
    }
}

/// One update, as a client parsed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Update {
    /// The zip code.
    pub zip: u32,
    /// Degrees.
    pub temperature: i32,
    /// Percent.
    pub humidity: u32,
}

impl Update {
    fn parse(text: &[u8]) -> Option<Update> {
        let text = std::str::from_utf8(text).ok()?;
        let mut fields = text.split(' ').map(str::parse::<i64>);
        let mut next = || fields.next()?.ok();
        Some(Update {
            zip: next()?.try_into().ok()?,
            temperature: next()?.try_into().ok()?,
            humidity: next()?.try_into().ok()?,
        })
    }
}

/// The mean temperature of some updates.
pub fn average(updates: &[Update]) -> f64 {
    let sum: i64 = updates.iter().map(|u| i64::from(u.temperature)).sum();
    sum as f64 / updates.len().max(1) as f64
}

/// Connects a SUB to `endpoint`, subscribes to `zip` and collects `count` updates.
pub async fn client<R: Runtime>(
    endpoint: &str,
    zip: u32,
    count: usize,
) -> Result<Vec<Update>, Error> {
    let subscriber = Socket::<R>::new(SocketType::Sub, Options::default())?;
    subscriber.connect(endpoint).await?;
    subscriber.subscribe(format!("{zip:05} "))?;
    let mut updates = Vec::with_capacity(count);
    while updates.len() < count {
        let msg = subscriber.recv().await?;
        // Whatever arrives matches the prefix; one that does not parse is skipped.
        updates.extend(Update::parse(&msg.parts()[0]));
    }
    println!(
        "average temperature for zip code {zip:05} over {count} updates: {:.1}",
        average(&updates)
    );
    Ok(updates)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (rt, args) = runtime::args();
    let role = args.first().map_or("both", String::as_str);
    let zip = args.get(1).map_or(Ok(10001), |z| z.parse())?;
    let count = args.get(2).map_or(Ok(100), |n| n.parse())?;
    runtime::on_runtime!(rt.as_str(), |R| async move {
        match role {
            "server" => server::<R>(ENDPOINT).await?,
            "client" => drop(client::<R>(ENDPOINT, zip, count).await?),
            // The server runs for ever: stop it when the client has its sample.
            _ => {
                let server = std::pin::pin!(server::<R>(ENDPOINT));
                let client = std::pin::pin!(client::<R>(ENDPOINT, zip, count));
                match select(server, client).await {
                    Either::Left((ended, _)) => ended?,
                    Either::Right((updates, _)) => drop(updates?),
                }
            }
        }
        Ok(())
    })
}

//! Divide and conquer (zguide chapter 1, `taskvent` / `taskwork` / `tasksink`): a pipeline.
//! The ventilator PUSHes tasks, which fan out round-robin to however many workers PULL them;
//! each worker PUSHes its result to the sink, which PULLs them all in (fan-in). Adding workers
//! makes the batch finish sooner, with no change anywhere else.
//!
//! A task is a number of milliseconds of "work" (the worker sleeps). The ventilator first
//! tells the sink a batch starts, so the sink can time it. It also waits for the workers to
//! connect before sending, as the zguide's ventilator waits for Enter: tasks sent while only
//! one worker is connected would all go to that one.
//!
//! ```text
//! cargo run -p conformance --example zguide_tasks                     # all of it, 3 workers
//! cargo run -p conformance --example zguide_tasks -- sink &           # tcp://127.0.0.1:5558
//! cargo run -p conformance --example zguide_tasks -- worker &         # as many as you like
//! cargo run -p conformance --example zguide_tasks -- ventilator 1 100 # workers to wait for, tasks
//! cargo run -p conformance --example zguide_tasks -- --runtime compio # or monoio, glommio
//! ```

#[path = "zguide/runtime.rs"]
mod runtime;

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::{join_all, select, try_join, Either};
use futures_util::StreamExt;
use omq_driver::{Error, EventKind, Message, Options, OsRng, Runtime, Socket, SocketType};
use rand_chacha::rand_core::RngCore;

const TASKS: &str = "tcp://127.0.0.1:5557";
const SINK: &str = "tcp://127.0.0.1:5558";

/// Sends `tasks` tasks of 1 to `max_ms` milliseconds to the workers once `workers` of them are
/// connected, and returns the total work sent, in milliseconds.
pub async fn ventilator<R: Runtime>(
    tasks_endpoint: &str,
    sink_endpoint: &str,
    workers: usize,
    tasks: usize,
    max_ms: u32,
) -> Result<u64, Error> {
    let sender = Socket::<R>::new(SocketType::Push, Options::default())?;
    // Watch connections come in (from before the bind, so none is missed).
    let mut events = sender.monitor();
    sender.bind(tasks_endpoint).await?;
    let mut connected = 0;
    while connected < workers {
        match events.next().await {
            Some(e) if e.kind == EventKind::HandshakeSucceeded => connected += 1,
            Some(_) => {}
            None => return Err(Error::Closed),
        }
    }
    drop(events);

    let sink = Socket::<R>::new(SocketType::Push, Options::default())?;
    sink.connect(sink_endpoint).await?;
    sink.send("0").await?; // the start of the batch

    let mut total = 0;
    for _ in 0..tasks {
        let workload = OsRng.next_u32() % max_ms + 1;
        total += u64::from(workload);
        sender.send(workload.to_string()).await?;
    }
    println!("ventilator: {tasks} tasks, {total} ms of work in all");
    // Both sockets only queue; closing waits until everything is written.
    sender.close().await?;
    sink.close().await?;
    Ok(total)
}

/// Takes tasks from the ventilator, does them, and reports each to the sink as
/// `[name, milliseconds]`; for ever.
pub async fn worker<R: Runtime>(
    tasks_endpoint: &str,
    sink_endpoint: &str,
    name: &str,
) -> Result<(), Error> {
    let receiver = Socket::<R>::new(SocketType::Pull, Options::default())?;
    receiver.connect(tasks_endpoint).await?;
    let sender = Socket::<R>::new(SocketType::Push, Options::default())?;
    sender.connect(sink_endpoint).await?;
    loop {
        let task = receiver.recv().await?;
        let ms = number(&task.parts()[0]);
        R::sleep_until(R::now() + Duration::from_millis(ms)).await; // the "work"
        sender
            .send(Message::multipart([name.to_string(), ms.to_string()]))
            .await?;
    }
}

/// What the sink collected.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// The work done, in milliseconds, summed over all results.
    pub total_ms: u64,
    /// Results per worker.
    pub per_worker: BTreeMap<String, usize>,
}

/// Binds a PULL to `endpoint` and collects `tasks` results, timed from the first message.
///
/// The start of the batch comes from the ventilator and the results from the workers, each
/// over a connection of its own, and a fair queue keeps no order between connections: a
/// short task's result can arrive before the start does (the zguide's `tasksink`, which takes
/// its first message for the start, then miscounts). So results are told from the start by
/// their shape, whenever each arrives.
pub async fn sink<R: Runtime>(endpoint: &str, tasks: usize) -> Result<Tally, Error> {
    let receiver = Socket::<R>::new(SocketType::Pull, Options::default())?;
    receiver.bind(endpoint).await?;
    let mut start = None;
    let mut tally = Tally::default();
    let mut results = 0;
    while results < tasks {
        let msg = receiver.recv().await?;
        start.get_or_insert_with(R::now);
        let [name, ms] = msg.parts() else {
            continue; // the start of the batch
        };
        results += 1;
        tally.total_ms += number(ms);
        *tally
            .per_worker
            .entry(String::from_utf8_lossy(name).into_owned())
            .or_default() += 1;
    }
    let start = start.unwrap_or_else(R::now);
    println!(
        "sink: {tasks} results, {} ms of work, in {:?} by {:?}",
        tally.total_ms,
        start.elapsed(),
        tally.per_worker
    );
    Ok(tally)
}

/// A decimal number from a message part; anything else counts as no work.
fn number(part: &[u8]) -> u64 {
    std::str::from_utf8(part)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (rt, args) = runtime::args();
    let role = args.first().map_or("all", String::as_str);
    let workers = args.get(1).map_or(Ok(3), |n| n.parse())?;
    let tasks = args.get(2).map_or(Ok(100), |n| n.parse())?;
    runtime::on_runtime!(rt.as_str(), |R| async move {
        match role {
            "ventilator" => drop(ventilator::<R>(TASKS, SINK, workers, tasks, 100).await?),
            "worker" => worker::<R>(TASKS, SINK, &format!("worker-{}", std::process::id())).await?,
            "sink" => drop(sink::<R>(SINK, tasks).await?),
            _ => {
                let names: Vec<String> = (1..=workers).map(|n| format!("worker-{n}")).collect();
                let workers = join_all(names.iter().map(|n| worker::<R>(TASKS, SINK, n)));
                let batch = std::pin::pin!(try_join(
                    ventilator::<R>(TASKS, SINK, names.len(), tasks, 100),
                    sink::<R>(SINK, tasks),
                ));
                // The workers run for ever; the batch is done when the sink has everything.
                match select(workers, batch).await {
                    Either::Left((ended, _)) => ended.into_iter().collect::<Result<(), _>>()?,
                    Either::Right((done, _)) => drop(done?),
                };
            }
        }
        Ok(())
    })
}

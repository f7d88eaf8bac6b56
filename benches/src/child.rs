//! Running one cell in a child process (the harness re-executes itself with `cell ARGS`), with
//! a time limit, and reading back the metrics it prints.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::Samples;
use crate::spec::{Cell, Impl, Transport};

/// Prefix of a result line printed by a child.
pub const RESULT: &str = "RESULT";

/// Runs the cell in this process and prints its metrics (the child's side).
pub fn run_here(args: &[String]) -> Result<(), String> {
    let cell = Cell::from_args(args)?;
    if let Some(why) = cell.imp.lacks(cell.pattern, cell.transport) {
        return Err(why.into());
    }
    let result = match cell.imp {
        _ if cell.pattern.is_scale() => crate::scale::run(&cell),
        Impl::OmqTokio
        | Impl::OmqTokioMt
        | Impl::OmqTokioTasks
        | Impl::OmqCompio
        | Impl::OmqMonoio
        | Impl::OmqGlommio => crate::omq::run(&cell),
        Impl::Libzmq => crate::libzmq::run(&cell),
        Impl::Zmqrs => crate::zmqrs::run(&cell),
        Impl::Raw => crate::raw::run(&cell),
    };
    if cell.transport == Transport::Ipc {
        let _ = std::fs::remove_file(crate::common::ipc_path());
    }
    for (metric, value) in result? {
        println!("{RESULT}\t{metric}\t{value}");
    }
    Ok(())
}

/// How to start a child: extra environment and an optional wrapper command (valgrind).
#[derive(Debug, Default, Clone)]
pub struct Launch {
    /// Environment variables to set.
    pub env: Vec<(String, String)>,
    /// A command (and its arguments) to run the child under.
    pub wrapper: Vec<String>,
    /// How long the child may run.
    pub timeout: Duration,
}

/// What became of a child.
#[derive(Debug)]
pub enum Outcome {
    /// It printed these metrics.
    Ok(Samples),
    /// It failed, with this explanation.
    Failed(String),
    /// It ran out of time and was killed.
    Timeout,
}

/// Runs `cell` in a new process of this executable and collects its metrics.
pub fn run(cell: &Cell, launch: &Launch) -> Outcome {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return Outcome::Failed(format!("current_exe: {e}")),
    };
    let mut cmd = match launch.wrapper.split_first() {
        Some((w, rest)) => {
            let mut c = Command::new(w);
            c.args(rest).arg(&exe);
            c
        }
        None => Command::new(&exe),
    };
    cmd.arg("cell")
        .args(cell.to_args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in &launch.env {
        cmd.env(k, v);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return Outcome::Failed(format!("spawn: {e}")),
    };
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + launch.timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() >= deadline => {
                // Our own child, by its handle.
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Outcome::Failed(format!("wait: {e}")),
        }
    };
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    if cell.transport == Transport::Ipc {
        // A killed child cannot clean up its socket file.
        let _ = std::fs::remove_file(format!("/tmp/omq-bench-{}.ipc", child.id()));
    }
    let Some(status) = status else {
        return Outcome::Timeout;
    };
    let samples: Samples = stdout
        .lines()
        .filter_map(|l| {
            let mut it = l.split('\t');
            (it.next() == Some(RESULT)).then_some(())?;
            let metric = it.next()?.to_string();
            let value = it.next()?.parse::<f64>().ok()?;
            Some((metric, value))
        })
        .collect();
    if status.success() && !samples.is_empty() {
        Outcome::Ok(samples)
    } else {
        // A panic's message is the line after "panicked at"; otherwise the last line said.
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        let why = match lines.iter().position(|l| l.contains("panicked at")) {
            Some(i) => lines[i..(i + 2).min(lines.len())].join(" "),
            None => lines.last().copied().unwrap_or("no output").to_string(),
        };
        Outcome::Failed(format!("{status}: {why}"))
    }
}

//! The suite as one call: [`run_suite`] runs every scenario on a backend and returns a report
//! of what passed, for whoever brings a new runtime and wants to know where it stands.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use crate::backend::Backend;
use crate::local::{run_local, LocalTransport, Pairing};
use crate::scenarios::{run, Scenario, Transport};

/// One scenario's outcome.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// What ran (scenario, transport, who binds).
    pub name: String,
    /// Whether it passed.
    pub passed: bool,
    /// The failure message, if any.
    pub detail: String,
    /// How long it took.
    pub took: Duration,
}

/// Every outcome for one backend.
#[derive(Debug, Clone)]
pub struct Report {
    /// The backend's name.
    pub backend: &'static str,
    /// Outcomes in the order run.
    pub outcomes: Vec<Outcome>,
}

impl Report {
    /// Number of scenarios that passed.
    pub fn passed(&self) -> usize {
        self.outcomes.iter().filter(|o| o.passed).count()
    }

    /// Number that failed.
    pub fn failed(&self) -> usize {
        self.outcomes.len() - self.passed()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "omq conformance suite on {}", self.backend)?;
        for o in &self.outcomes {
            let mark = if o.passed { "pass" } else { "FAIL" };
            write!(
                f,
                "  {mark}  {:<48} {:>7.1} ms",
                o.name,
                o.took.as_secs_f64() * 1e3
            )?;
            if !o.passed {
                write!(f, "  {}", o.detail)?;
            }
            writeln!(f)?;
        }
        writeln!(f, "{} passed, {} failed", self.passed(), self.failed())
    }
}

fn attempt(name: String, f: impl FnOnce()) -> Outcome {
    let start = Instant::now();
    let r = catch_unwind(AssertUnwindSafe(f));
    let detail = match &r {
        Ok(()) => String::new(),
        Err(p) => p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panicked".into()),
    };
    Outcome {
        name,
        passed: r.is_ok(),
        detail,
        took: start.elapsed(),
    }
}

/// Runs every interop scenario (against libzmq; tcp and ipc, either side binding) and every
/// omq-to-omq pairing (tcp, ipc, inproc, lz4+tcp, zstd+tcp) on backend `B`.
pub fn run_suite<B: Backend>() -> Report {
    run_selected::<B>(&Scenario::ALL, &Pairing::ALL)
}

/// Runs the given interop scenarios and omq-to-omq pairings, each in all its variants
/// ([`variants`] names them), on backend `B`: a part of the suite, for a quick look.
pub fn run_selected<B: Backend>(scenarios: &[Scenario], pairings: &[Pairing]) -> Report {
    let outcomes = plan::<B>(scenarios, pairings)
        .into_iter()
        .map(|(name, run)| attempt(name, run))
        .collect();
    Report {
        backend: B::NAME,
        outcomes,
    }
}

/// The names of every variant [`run_selected`] runs for these scenarios and pairings, in order,
/// without running them.
pub fn variants(scenarios: &[Scenario], pairings: &[Pairing]) -> Vec<String> {
    // Naming needs no backend; any one will do to build the plan.
    plan::<crate::plugged::AsyncIoBackend>(scenarios, pairings)
        .into_iter()
        .map(|(name, _)| name)
        .collect()
}

type Variant = (String, Box<dyn FnOnce()>);

fn plan<B: Backend>(scenarios: &[Scenario], pairings: &[Pairing]) -> Vec<Variant> {
    let mut all: Vec<Variant> = Vec::new();
    for &s in scenarios {
        for t in [Transport::Tcp, Transport::Ipc] {
            for binds in [true, false] {
                let who = if binds { "omq binds" } else { "libzmq binds" };
                let name = format!("interop {s:?} {t:?} ({who})");
                all.push((name, Box::new(move || run::<B>(s, t, binds))));
            }
        }
    }
    for &p in pairings {
        for t in [
            LocalTransport::Tcp,
            LocalTransport::Ipc,
            LocalTransport::Inproc,
            LocalTransport::Lz4Tcp,
            LocalTransport::ZstdTcp,
        ] {
            let name = format!("omq-omq {p:?} {t:?}");
            all.push((name, Box::new(move || run_local::<B>(p, t))));
        }
    }
    all
}

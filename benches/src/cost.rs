//! Per-message cost at steady state: heap allocations (an LD_PRELOAD malloc counter built from
//! `alloc_counter.c`) and user-space instructions (valgrind's callgrind), counted the same way
//! for every implementation and for the whole process (both sides, and libzmq's I/O threads).
//!
//! Each figure is a difference of two runs of the same PUSH/PULL tcp cell with different
//! message counts, divided by the difference in messages: connection setup, warm-up and
//! teardown cancel out, and what remains is the cost of one more message through the sender,
//! the connection and the receiver.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::child::{self, Launch, Outcome};
use crate::report::{Key, Stat, Store};
use crate::spec::{Cell, Impl, Pattern, Transport};

/// The implementations whose cost is counted: every omq backend and layout, then the others.
pub const IMPLS: [Impl; 9] = Impl::ALL;

/// Sizes at which allocations are counted (8 B fits inline everywhere; 64 B is the issue's).
pub const ALLOC_SIZES: [usize; 2] = [8, 64];

/// Size at which instructions are counted.
pub const INSTR_SIZE: usize = 64;

const SOURCE: &str = include_str!("../alloc_counter.c");

fn cell(imp: Impl, size: usize, count: usize) -> Cell {
    Cell {
        imp,
        transport: Transport::Tcp,
        pattern: Pattern::PushPull,
        size,
        count,
        warmup: 1000,
        subs: 1,
    }
}

/// Builds the malloc counter into `dir`; returns its path or why it could not be built.
pub fn build_counter(dir: &Path) -> Result<PathBuf, String> {
    let src = dir.join("alloc_counter.c");
    let lib = dir.join("libomq_bench_alloc.so");
    std::fs::write(&src, SOURCE).map_err(|e| format!("writing {}: {e}", src.display()))?;
    let out = Command::new("gcc")
        .args(["-O2", "-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .output()
        .map_err(|e| format!("gcc: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "gcc failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(lib)
}

fn read_counter(path: &Path) -> Option<(f64, f64)> {
    let text = std::fs::read_to_string(path).ok()?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    Some((field("allocs ")?, field("bytes ")?))
}

/// Counts allocations per message for every implementation and size, `repeats` times each.
pub fn allocations(
    dir: &Path,
    repeats: usize,
    quick: bool,
    store: &mut Store,
    log: &mut dyn FnMut(&str),
) {
    let lib = match build_counter(dir) {
        Ok(l) => l,
        Err(why) => {
            for imp in IMPLS {
                for size in ALLOC_SIZES {
                    store.note(
                        imp.name(),
                        "tcp",
                        "pushpull-cost",
                        size,
                        &format!("n/a ({why})"),
                    );
                }
            }
            log(&format!("allocation counter: n/a ({why})"));
            return;
        }
    };
    let (n1, n2) = if quick {
        (20_000, 100_000)
    } else {
        (50_000, 250_000)
    };
    for r in 0..repeats {
        for size in ALLOC_SIZES {
            for imp in IMPLS {
                let mut counts = Vec::new();
                for n in [n1, n2] {
                    let out = dir.join(format!("allocs-{}-{size}-{n}.txt", imp.name()));
                    let _ = std::fs::remove_file(&out);
                    let launch = Launch {
                        env: vec![
                            ("LD_PRELOAD".into(), lib.display().to_string()),
                            ("OMQ_BENCH_ALLOC_OUT".into(), out.display().to_string()),
                        ],
                        wrapper: vec![],
                        timeout: Duration::from_secs(60),
                    };
                    match child::run(&cell(imp, size, n), &launch) {
                        Outcome::Ok(_) => counts.push(read_counter(&out)),
                        other => {
                            store.note(
                                imp.name(),
                                "tcp",
                                "pushpull-cost",
                                size,
                                &format!("{other:?}"),
                            );
                            counts.push(None);
                        }
                    }
                }
                if let [Some((a1, b1)), Some((a2, b2))] = counts[..] {
                    let dn = (n2 - n1) as f64;
                    let allocs = (a2 - a1) / dn;
                    let bytes = (b2 - b1) / dn;
                    store.add(
                        Key::new(imp.name(), "tcp", "pushpull", size, "allocs_per_msg"),
                        allocs,
                    );
                    store.add(
                        Key::new(imp.name(), "tcp", "pushpull", size, "alloc_bytes_per_msg"),
                        bytes,
                    );
                    log(&format!(
                        "[allocs {}/{repeats}] {size} B {}: {allocs:.2} allocations, {bytes:.0} bytes per message",
                        r + 1,
                        imp.name()
                    ));
                }
            }
        }
    }
}

fn read_callgrind(path: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
}

/// The environment an implementation's cell runs with under callgrind. valgrind does not run
/// io_uring (a cell on it waits for completions that never come), so omq-compio and
/// omq-monoio are counted on their epoll drivers (the bench's `OMQ_BENCH_EPOLL`: the same omq
/// code, readiness instead of completions), and omq-glommio, which has no other driver, is not
/// counted.
fn under_valgrind(imp: Impl) -> Result<Vec<(String, String)>, &'static str> {
    match imp {
        Impl::OmqGlommio => Err("n/a (io_uring only; valgrind cannot run io_uring)"),
        Impl::OmqCompio | Impl::OmqMonoio => Ok(vec![("OMQ_BENCH_EPOLL".into(), "1".into())]),
        _ => Ok(vec![]),
    }
}

/// Whether valgrind can be run.
pub fn have_valgrind() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Counts user-space instructions per message under callgrind (once: the count is nearly
/// deterministic: repeated pairs agree to a few instructions per message).
pub fn instructions(dir: &Path, quick: bool, store: &mut Store, log: &mut dyn FnMut(&str)) {
    if !have_valgrind() {
        for imp in IMPLS {
            store.note(
                imp.name(),
                "tcp",
                "pushpull-cost",
                INSTR_SIZE,
                "n/a (valgrind not installed)",
            );
        }
        log("instructions: n/a (valgrind not installed)");
        return;
    }
    let (n1, n2) = if quick {
        (10_000, 60_000)
    } else {
        (20_000, 200_000)
    };
    for imp in IMPLS {
        let env = match under_valgrind(imp) {
            Ok(env) => env,
            Err(why) => {
                store.note(imp.name(), "tcp", "pushpull-cost", INSTR_SIZE, why);
                log(&format!("[callgrind] {INSTR_SIZE} B {}: {why}", imp.name()));
                continue;
            }
        };
        let mut irs = Vec::new();
        for n in [n1, n2] {
            let out = dir.join(format!("callgrind-{}-{INSTR_SIZE}-{n}.out", imp.name()));
            let launch = Launch {
                env: env.clone(),
                wrapper: vec![
                    "valgrind".into(),
                    "-q".into(),
                    "--tool=callgrind".into(),
                    format!("--callgrind-out-file={}", out.display()),
                ],
                timeout: Duration::from_secs(600),
            };
            match child::run(&cell(imp, INSTR_SIZE, n), &launch) {
                Outcome::Ok(_) => irs.push(read_callgrind(&out)),
                other => {
                    store.note(
                        imp.name(),
                        "tcp",
                        "pushpull-cost",
                        INSTR_SIZE,
                        &format!("{other:?}"),
                    );
                    irs.push(None);
                }
            }
        }
        if let [Some(i1), Some(i2)] = irs[..] {
            let per = (i2 - i1) / (n2 - n1) as f64;
            store.add(
                Key::new(imp.name(), "tcp", "pushpull", INSTR_SIZE, "instr_per_msg"),
                per,
            );
            log(&format!(
                "[callgrind] {INSTR_SIZE} B {}: {per:.0} instructions per message",
                imp.name()
            ));
        }
    }
}

/// The median of a cost metric, if measured.
pub fn median(store: &Store, imp: Impl, size: usize, metric: &str) -> Option<Stat> {
    store.stat(&Key::new(imp.name(), "tcp", "pushpull", size, metric))
}

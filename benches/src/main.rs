//! omq-bench: omq beside libzmq, zmq.rs and a raw byte stream, in one run, with one method.
//!
//! ```text
//! omq-bench [--quick] [--out DIR] [--repeats N] [--only P,..] [--transports T,..]
//!           [--impls I,..] [--sizes S,..] [--scale F] [--no-allocs] [--no-callgrind]
//! omq-bench cell impl=I transport=T pattern=P size=S count=N warmup=W subs=K
//! omq-bench compression [COUNT]
//! ```
//!
//! The first form is the harness: it prints the machine and versions, runs every cell in a
//! child process of its own (the second form), repeats and interleaves them, and writes
//! `results.tsv`, `samples.tsv` and `results.md` to the output directory (default
//! `target/bench`). See docs/PERFORMANCE.md.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use benches::child::{self, Launch, Outcome};
use benches::plan::{self, Config};
use benches::report::{self, Key, Machine, Store};
use benches::spec::{self, Impl, Pattern, Transport};
use benches::{common, cost, tables};

const USAGE: &str = "\
usage: omq-bench [--quick] [--out DIR] [--repeats N]
                 [--only pushpull,reqrep,pubsub,curve,proxy,proxylat,scale,scalepub]
                 [--transports tcp,ipc,inproc] [--impls omq-tokio,omq-tokio-mt,omq-compio,omq-monoio,omq-glommio,
                 libzmq,zmq.rs,raw-tokio]
                 [--sizes 64,1024] [--scale F] [--no-allocs] [--no-callgrind]
       omq-bench cell impl=I transport=T pattern=P size=S count=N warmup=W subs=K
       omq-bench compression [COUNT]   # lz4+tcp/zstd+tcp ratio and CPU on 2 KiB JSON
       omq-bench curve-crypto [COUNT] [omq|libsodium SIZE]  # CURVE seal+open, no sockets
       omq-bench json [COUNT]          # those records, one per line";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("json") {
        // The same records, one per line, for scripts/bench-shaped-link.sh.
        let count: u64 = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(20_000);
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        for i in 0..count {
            out.write_all(&benches::compression::json_record(i, 2048))
                .and_then(|()| out.write_all(b"\n"))
                .expect("stdout");
        }
        return;
    }
    if args.first().map(String::as_str) == Some("compression") {
        let count = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(20_000);
        benches::compression::run(count);
        return;
    }
    if args.first().map(String::as_str) == Some("curve-crypto") {
        let count = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(200_000);
        let size = args.get(3).and_then(|n| n.parse().ok());
        benches::curve_crypto::run(count, args.get(2).map(String::as_str), size);
        return;
    }
    if args.first().map(String::as_str) == Some("peers") {
        if let Err(e) = benches::scale::peers_main(&args[1..]) {
            eprintln!("peers failed: {e}");
            std::process::exit(1);
        }
        return;
    }
    if args.first().map(String::as_str) == Some("cell") {
        if let Err(e) = child::run_here(&args[1..]) {
            eprintln!("cell failed: {e}");
            std::process::exit(1);
        }
        return;
    }
    let (cfg, out) = match parse(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    harness(&cfg, &out);
}

fn list<T: std::str::FromStr<Err = String>>(v: &str) -> Result<Vec<T>, String> {
    v.split(',')
        .filter(|s| !s.is_empty())
        .map(str::parse)
        .collect()
}

fn parse(args: &[String]) -> Result<(Config, PathBuf), String> {
    let quick = args.iter().any(|a| a == "--quick");
    let mut cfg = Config::new(quick);
    let mut out = PathBuf::from("target/bench");
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{a} needs a value"))
        };
        match a.as_str() {
            "--quick" => {}
            "--out" => out = PathBuf::from(val()?),
            "--repeats" => cfg.repeats = val()?.parse().map_err(|e| format!("--repeats: {e}"))?,
            "--only" => cfg.patterns = list::<Pattern>(&val()?)?,
            "--transports" => cfg.transports = list::<Transport>(&val()?)?,
            "--impls" => cfg.impls = list::<Impl>(&val()?)?,
            "--sizes" => {
                cfg.sizes = Some(
                    val()?
                        .split(',')
                        .map(|s| s.parse::<usize>().map_err(|e| format!("--sizes: {e}")))
                        .collect::<Result<_, _>>()?,
                )
            }
            "--scale" => cfg.scale = val()?.parse().map_err(|e| format!("--scale: {e}"))?,
            "--no-allocs" => cfg.allocs = false,
            "--no-callgrind" => cfg.callgrind = false,
            "-h" | "--help" => return Err("omq-bench: the side-by-side benchmark".into()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if cfg.repeats == 0 {
        return Err("--repeats must be at least 1".into());
    }
    Ok((cfg, out))
}

fn log(line: &str) {
    let mut e = std::io::stderr().lock();
    let _ = writeln!(e, "{line}");
}

fn headline(cell: &spec::Cell, samples: &common::Samples) -> String {
    let get = |m: &str| samples.iter().find(|(k, _)| k == m).map(|(_, v)| *v);
    match cell.pattern {
        Pattern::PushPull | Pattern::Curve | Pattern::Proxy => format!(
            "e2e {} recv {} msg/s",
            get("e2e_msg_s").map_or("?".into(), report::rate),
            get("recv_msg_s").map_or("?".into(), report::rate)
        ),
        Pattern::ReqRep | Pattern::ProxyLat => format!(
            "p50 {:.1} µs p99 {:.1} µs",
            get("rtt_p50_us").unwrap_or(f64::NAN),
            get("rtt_p99_us").unwrap_or(f64::NAN)
        ),
        Pattern::PubSub => format!(
            "agg {} msg/s, {:.1}% delivered",
            get("agg_msg_s").map_or("?".into(), report::rate),
            get("delivered_pct").unwrap_or(f64::NAN)
        ),
        Pattern::Scale | Pattern::ScalePub | Pattern::ScaleCurve | Pattern::CurveClients => {
            format!(
                "{} conn in {:.2} s, {:.1} KiB/conn (peak {:.1}), {} msg/s",
                cell.subs,
                get("conn_s").unwrap_or(f64::NAN),
                get("kb_per_conn").unwrap_or(f64::NAN),
                get("peak_kb_per_conn").unwrap_or(f64::NAN),
                get("steady_msg_s")
                    .or(get("fanout_msg_s"))
                    .map_or("?".into(), report::rate)
            )
        }
    }
}

fn harness(cfg: &Config, out: &PathBuf) {
    let started = Instant::now();
    let mode = if cfg.quick { "quick" } else { "full" };
    let machine = Machine::probe(mode);
    let layout = report::thread_layout();
    println!("# omq-bench ({mode})\n");
    println!("{}", machine.text());
    println!("thread layout:\n{layout}");
    if let Err(e) = std::fs::create_dir_all(out) {
        eprintln!("cannot create {}: {e}", out.display());
        std::process::exit(1);
    }

    let mut store = Store::default();
    let groups = cfg.groups();
    // Cells an implementation cannot run are noted, not run.
    for g in &groups {
        for c in g {
            if let Some(why) = c.imp.lacks(c.pattern, c.transport) {
                store.note(
                    c.imp.name(),
                    c.transport.name(),
                    &c.pattern_label(),
                    c.size,
                    why,
                );
            }
        }
    }
    let runnable: Vec<Vec<spec::Cell>> = groups
        .into_iter()
        .map(|g| {
            g.into_iter()
                .filter(|c| c.imp.lacks(c.pattern, c.transport).is_none())
                .collect()
        })
        .collect();
    let order = plan::schedule(&runnable, cfg.repeats);
    let launch = Launch {
        timeout: cfg.timeout,
        ..Launch::default()
    };
    let total = order.len();
    for (k, (r, cell)) in order.iter().enumerate() {
        let t = Instant::now();
        let outcome = child::run(cell, &launch);
        let p = cell.pattern_label();
        let what = format!(
            "[{:>4}/{total}] r{} {} {} {} {}",
            k + 1,
            r + 1,
            p,
            cell.transport,
            report::size(cell.size),
            cell.imp
        );
        match outcome {
            Outcome::Ok(samples) => {
                log(&format!(
                    "{what}: {} ({:.1}s)",
                    headline(cell, &samples),
                    t.elapsed().as_secs_f64()
                ));
                for (m, v) in samples {
                    store.add(
                        Key::new(cell.imp.name(), cell.transport.name(), &p, cell.size, &m),
                        v,
                    );
                }
            }
            Outcome::Failed(why) => {
                log(&format!("{what}: FAILED {why}"));
                store.note(
                    cell.imp.name(),
                    cell.transport.name(),
                    &p,
                    cell.size,
                    &format!("failed: {why}"),
                );
            }
            Outcome::Timeout => {
                log(&format!("{what}: TIMEOUT after {:?}", cfg.timeout));
                store.note(
                    cell.imp.name(),
                    cell.transport.name(),
                    &p,
                    cell.size,
                    "timeout",
                );
            }
        }
    }
    if cfg.allocs {
        let reps = cfg.repeats.min(3);
        cost::allocations(out, reps, cfg.quick, &mut store, &mut |l: &str| log(l));
    }
    if cfg.callgrind {
        cost::instructions(out, cfg.quick, &mut store, &mut |l: &str| log(l));
    }

    let elapsed = started.elapsed();
    let end_load = report::load_average();
    let md = format!(
        "## omq-bench results ({mode}, {} repeats, medians with min–max)\n\n{}- load average at end: {end_load}\n- wall time: {:.0} s\n\nThread layout:\n\n{layout}{}",
        cfg.repeats,
        machine.markdown(),
        elapsed.as_secs_f64(),
        tables::markdown(cfg, &store)
    );
    println!("{md}");
    let write = |name: &str, text: &str| {
        let p = out.join(name);
        if let Err(e) = std::fs::write(&p, text) {
            eprintln!("writing {}: {e}", p.display());
        }
    };
    write("results.md", &md);
    write("results.tsv", &store.tsv());
    write("samples.tsv", &store.samples_tsv());
    log(&format!(
        "wrote {0}/results.md, {0}/results.tsv, {0}/samples.tsv in {1:.0} s",
        out.display(),
        elapsed.as_secs_f64()
    ));
}

//! The markdown report: one table per pattern and transport, the per-message costs, and the
//! bars of issue 6 (and issue 16, the proxy) checked cell by cell against the same run's
//! figures.

use std::fmt::Write as _;

use crate::cost;
use crate::plan::Config;
use crate::report::{cell_text, rate, ratio, size, Key, Store};
use crate::spec::{Impl, Transport};

fn us(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn pct(v: f64) -> String {
    format!("{v:.1}%")
}

fn plain(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// One cell per implementation: the tcp cell `label` at `size`, its `metric` shown by `fmt`.
fn tcp_cells(
    store: &Store,
    impls: &[Impl],
    label: &str,
    size: usize,
    metric: &str,
    fmt: fn(f64) -> String,
) -> Vec<String> {
    impls
        .iter()
        .map(|i| cell_text(store, &Key::new(i.name(), "tcp", label, size, metric), fmt))
        .collect()
}

/// The whole markdown report (without the machine header).
pub fn markdown(cfg: &Config, store: &Store) -> String {
    let mut md = String::new();
    let impls: Vec<Impl> = cfg.impls.clone();
    let head = |md: &mut String, first: &[&str], impls: &[Impl], extra: &[&str]| {
        let mut cols: Vec<String> = first.iter().map(|s| s.to_string()).collect();
        cols.extend(impls.iter().map(|i| i.name().to_string()));
        cols.extend(extra.iter().map(|s| s.to_string()));
        let _ = writeln!(md, "| {} |", cols.join(" | "));
        let _ = writeln!(md, "|{}|", vec!["---"; cols.len()].join("|"));
    };
    let omq = Impl::OmqTokio.name();

    if cfg.patterns.contains(&crate::spec::Pattern::PushPull) {
        for &t in &cfg.transports {
            for (metric, title) in [
                (
                    "e2e_msg_s",
                    "end-to-end msg/s (N ÷ (last receive − first send))",
                ),
                (
                    "recv_msg_s",
                    "receiver-side msg/s (N ÷ (last receive − first receive), as perf/local_thr)",
                ),
            ] {
                let _ = writeln!(md, "\n### PUSH/PULL {t}: {title}\n");
                let extra: &[&str] = if t == Transport::Inproc {
                    &["omq ÷ libzmq"]
                } else {
                    &["omq ÷ libzmq", "omq ÷ zmq.rs", "omq ÷ raw"]
                };
                head(&mut md, &["size"], &impls, extra);
                for s in cfg.thr_sizes() {
                    let mut row = vec![size(s)];
                    for i in &impls {
                        row.push(cell_text(
                            store,
                            &Key::new(i.name(), t.name(), "pushpull", s, metric),
                            rate,
                        ));
                    }
                    let m = |imp: &str| store.median(imp, t.name(), "pushpull", s, metric);
                    row.push(ratio(m(omq), m("libzmq")));
                    if t != Transport::Inproc {
                        row.push(ratio(m(omq), m("zmq.rs")));
                        row.push(ratio(m(omq), m("raw-tokio")));
                    }
                    let _ = writeln!(md, "| {} |", row.join(" | "));
                }
            }
        }
    }

    if cfg.patterns.contains(&crate::spec::Pattern::ReqRep) {
        let _ = writeln!(
            md,
            "\n### REQ/REP round trip, µs: p50 (spread of the p50 over repeats) · p99 · mean\n"
        );
        head(&mut md, &["transport", "size"], &impls, &[]);
        for &t in &cfg.transports {
            if t == Transport::Inproc {
                continue;
            }
            for s in cfg.lat_sizes() {
                let mut row = vec![t.name().to_string(), size(s)];
                for i in &impls {
                    let k = |m: &str| Key::new(i.name(), t.name(), "reqrep", s, m);
                    let p50 = cell_text(store, &k("rtt_p50_us"), us);
                    let rest = match (store.stat(&k("rtt_p99_us")), store.stat(&k("rtt_mean_us"))) {
                        (Some(p99), Some(mean)) => {
                            format!(" · {} · {}", us(p99.median), us(mean.median))
                        }
                        _ => String::new(),
                    };
                    row.push(format!("{p50}{rest}"));
                }
                let _ = writeln!(md, "| {} |", row.join(" | "));
            }
        }
    }

    if cfg.patterns.contains(&crate::spec::Pattern::PubSub) {
        let _ = writeln!(
            md,
            "\n### PUB/SUB tcp\n\nPaced phase: the publisher lets no subscriber fall more than {} \
             messages behind (in-process counters, outside the sockets), so subscribers keep up; \
             figures: messages delivered per second, all subscribers together (delivered ÷ \
             (last delivery − first publish)) with spread, and the share delivered. Flood phase \
             (same run, after the paced one): the publisher sends as fast as it can; figures: \
             publisher msg/s and share delivered (PUB drops at HWM by design).\n",
            crate::common::WINDOW
        );
        let ps: Vec<Impl> = impls.iter().copied().filter(|i| *i != Impl::Raw).collect();
        head(&mut md, &["subscribers", "size"], &ps, &["omq ÷ libzmq"]);
        for subs in [1, 8] {
            let p = format!("pubsub-{subs}");
            for s in cfg.pubsub_sizes() {
                let mut row = vec![subs.to_string(), size(s)];
                for i in &ps {
                    let k = |m: &str| Key::new(i.name(), "tcp", &p, s, m);
                    let agg = cell_text(store, &k("agg_msg_s"), rate);
                    let rest = match (
                        store.stat(&k("delivered_pct")),
                        store.stat(&k("flood_pub_msg_s")),
                        store.stat(&k("flood_delivered_pct")),
                    ) {
                        (Some(d), Some(pb), Some(fd)) => format!(
                            " · {} · flood: pub {}, {}",
                            pct(d.median),
                            rate(pb.median),
                            pct(fd.median)
                        ),
                        _ => String::new(),
                    };
                    row.push(format!("{agg}{rest}"));
                }
                let m = |imp: &str| store.median(imp, "tcp", &p, s, "agg_msg_s");
                row.push(ratio(m(omq), m("libzmq")));
                let _ = writeln!(md, "| {} |", row.join(" | "));
            }
        }
    }

    if cfg.patterns.contains(&crate::spec::Pattern::Curve) {
        let cs: Vec<Impl> = impls.iter().copied().filter(|i| i.has_curve()).collect();
        for (metric, title) in [
            (
                "e2e_msg_s",
                "end-to-end msg/s (N ÷ (last receive − first send))",
            ),
            (
                "recv_msg_s",
                "receiver-side msg/s (N ÷ (last receive − first receive))",
            ),
        ] {
            let _ = writeln!(
                md,
                "\n### CURVE PUSH/PULL tcp: {title}\n\nThe receiver (PULL, bind) is the CURVE \
                 server; keys from omq's `generate_keypair`, passed to both as Z85 text.\n"
            );
            head(&mut md, &["size"], &cs, &["omq ÷ libzmq"]);
            for s in cfg.curve_sizes() {
                let mut row = vec![size(s)];
                for i in &cs {
                    row.push(cell_text(
                        store,
                        &Key::new(i.name(), "tcp", "curve", s, metric),
                        rate,
                    ));
                }
                let m = |imp: &str| store.median(imp, "tcp", "curve", s, metric);
                row.push(ratio(m(omq), m("libzmq")));
                let _ = writeln!(md, "| {} |", row.join(" | "));
            }
        }
    }

    if cfg.patterns.contains(&crate::spec::Pattern::Proxy) {
        let _ = writeln!(
            md,
            "\n### Proxy tcp: PUSH → [PULL | proxy | PUSH] → PULL, consumer msg/s (N ÷ (last \
             receive − first receive))\n\nThree parties on three threads: producer, proxy \
             (omq: `proxy_steerable`; libzmq: `zmq_proxy_steerable`; both stopped with TERMINATE \
             over an inproc PAIR), consumer. The proxy binds both sides.\n"
        );
        head(&mut md, &["size"], &impls, &["omq ÷ libzmq"]);
        for s in cfg.proxy_sizes() {
            let mut row = vec![size(s)];
            for i in &impls {
                row.push(cell_text(
                    store,
                    &Key::new(i.name(), "tcp", "proxy", s, "recv_msg_s"),
                    rate,
                ));
            }
            let m = |imp: &str| store.median(imp, "tcp", "proxy", s, "recv_msg_s");
            row.push(ratio(m(omq), m("libzmq")));
            let _ = writeln!(md, "| {} |", row.join(" | "));
        }
    }

    for (pattern, title, size_of, steady, steady_title, peers) in [
        (
            crate::spec::Pattern::Scale,
            "N DEALERs → one ROUTER",
            64,
            "steady_msg_s",
            "steady msg/s received (the peers send round robin over all N)",
            &crate::plan::SCALE_PEERS[..],
        ),
        (
            crate::spec::Pattern::ScalePub,
            "one PUB → N SUBs, 1 KiB",
            1024,
            "fanout_msg_s",
            "fan-out deliveries/s, all subscribers together",
            &crate::plan::SCALE_PEERS[..],
        ),
        (
            crate::spec::Pattern::ScaleCurve,
            "N CURVE DEALERs → one CURVE ROUTER, 1 KiB (connections/s = handshakes served)",
            1024,
            "steady_msg_s",
            "steady msg/s received (the peers send round robin over all N)",
            &crate::plan::SCALE_CURVE_PEERS[..],
        ),
    ] {
        if !cfg.patterns.contains(&pattern) {
            continue;
        }
        let peers_are = if pattern == crate::spec::Pattern::ScalePub {
            "SUBs that are omq-core sessions over tokio streams, no socket behind them"
        } else {
            "omq sockets"
        };
        let _ = writeln!(
            md,
            "\n### Connection scale tcp: {title}\n\nThe peers run in a second process ({peers_are} \
             on a two-worker tokio runtime, the same for every column). Connect: seconds until \
             all N have handshaken and carried a first message. Memory: resident memory of the \
             measured process with the N connections up and idle, less the same before they \
             came, ÷ N (KiB; peak from VmHWM).\n"
        );
        head(&mut md, &["N", "figure"], &impls, &[]);
        for &n in peers {
            let label = format!("{}-{n}", pattern.name());
            for (metric, what, fmt) in [
                ("conn_s", "connect, s", plain as fn(f64) -> String),
                ("conn_per_s", "connections/s", rate),
                ("kb_per_conn", "KiB per idle connection", plain),
                ("peak_kb_per_conn", "peak KiB per connection", plain),
                (steady, steady_title, rate),
            ] {
                let mut row = vec![n.to_string(), what.to_string()];
                row.extend(tcp_cells(store, &impls, &label, size_of, metric, fmt));
                let _ = writeln!(md, "| {} |", row.join(" | "));
            }
        }
    }

    if cfg.patterns.contains(&crate::spec::Pattern::CurveClients) {
        let _ = writeln!(
            md,
            "\n### CURVE fan-in tcp: N clients → one CURVE ROUTER\n\nThe clients run in a \
             second process, each omq-core's session over a blocking socket on a thread of its \
             own; each seals all its messages before the clock starts and then only writes \
             them, so the peers take little of the CPU the ROUTER needs. msg/s: messages \
             received ÷ time. cores: the measured process's CPU time over that phase ÷ its \
             wall time. The last rows: N = 4 ÷ N = 1 per implementation (issue 14's \
             multi-client bar: 1.6×).\n"
        );
        head(&mut md, &["size", "N", "figure"], &impls, &[]);
        let sizes = crate::plan::CURVE_CLIENTS_SIZES;
        for s in sizes {
            for &n in &crate::plan::CURVE_CLIENTS {
                let label = format!("curveclients-{n}");
                for (metric, what, fmt) in [
                    ("steady_msg_s", "msg/s", rate as fn(f64) -> String),
                    ("steady_cores", "cores", plain),
                ] {
                    let mut row = vec![size(s), n.to_string(), what.to_string()];
                    row.extend(tcp_cells(store, &impls, &label, s, metric, fmt));
                    let _ = writeln!(md, "| {} |", row.join(" | "));
                }
            }
        }
        for s in sizes {
            let mut row = vec![size(s), "4 ÷ 1".to_string(), "msg/s".to_string()];
            for i in &impls {
                let m = |n: usize| {
                    store.median(
                        i.name(),
                        "tcp",
                        &format!("curveclients-{n}"),
                        s,
                        "steady_msg_s",
                    )
                };
                row.push(ratio(m(4), m(1)));
            }
            let _ = writeln!(md, "| {} |", row.join(" | "));
        }
    }

    if cfg.patterns.contains(&crate::spec::Pattern::ProxyLat) {
        let _ = writeln!(
            md,
            "\n### Proxy tcp: REQ → [ROUTER | proxy | DEALER] → REP round trip, µs: p50 (spread \
             of the p50 over repeats) · p99 · mean\n\nThree parties on three threads: client, \
             proxy (zmq.rs: `zeromq::proxy`, raced against a done signal), worker. The last \
             column is libzmq's p50 ÷ omq-tokio's: how many times as many round trips a second \
             omq-tokio's median makes.\n"
        );
        head(&mut md, &["size"], &impls, &["libzmq ÷ omq"]);
        for s in cfg.proxylat_sizes() {
            let mut row = vec![size(s)];
            for i in &impls {
                let k = |m: &str| Key::new(i.name(), "tcp", "proxylat", s, m);
                let p50 = cell_text(store, &k("rtt_p50_us"), us);
                let rest = match (store.stat(&k("rtt_p99_us")), store.stat(&k("rtt_mean_us"))) {
                    (Some(p99), Some(mean)) => {
                        format!(" · {} · {}", us(p99.median), us(mean.median))
                    }
                    _ => String::new(),
                };
                row.push(format!("{p50}{rest}"));
            }
            let m = |imp: &str| store.median(imp, "tcp", "proxylat", s, "rtt_p50_us");
            row.push(ratio(m("libzmq"), m(omq)));
            let _ = writeln!(md, "| {} |", row.join(" | "));
        }
    }

    if cfg.allocs || cfg.callgrind {
        let _ = writeln!(
            md,
            "\n### Per-message cost, PUSH/PULL tcp, whole process (sender, receiver and any I/O \
             threads), steady state\n\nDifference of two runs with different message counts, \
             divided by the difference in messages. Allocations: LD_PRELOAD malloc counter \
             (`benches/alloc_counter.c`), median of the repeats. Instructions: valgrind \
             callgrind, user space only, one pair of runs (repeated pairs agree within a few \
             instructions per message); under valgrind the threads run one at a time, so \
             batching differs from a native run, and it cannot run io_uring: omq-compio and \
             omq-monoio are counted on their epoll drivers, omq-glommio not at all.\n"
        );
        let _ = writeln!(
            md,
            "| implementation | allocations/msg 8 B | allocations/msg 64 B | bytes allocated/msg 64 B | instructions/msg 64 B |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|");
        for imp in cost::IMPLS {
            let get = |s: usize, m: &str| {
                cell_text(store, &Key::new(imp.name(), "tcp", "pushpull", s, m), plain)
            };
            let na = |s: usize| {
                store
                    .note_of(imp.name(), "tcp", "pushpull-cost", s)
                    .map(str::to_string)
            };
            let pick = |s: usize, m: &str, on: bool| {
                if !on {
                    "not measured in this mode".to_string()
                } else {
                    let v = get(s, m);
                    if v == "–" {
                        na(s).unwrap_or(v)
                    } else {
                        v
                    }
                }
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} |",
                imp.name(),
                pick(8, "allocs_per_msg", cfg.allocs),
                pick(64, "allocs_per_msg", cfg.allocs),
                pick(64, "alloc_bytes_per_msg", cfg.allocs),
                pick(cost::INSTR_SIZE, "instr_per_msg", cfg.callgrind),
            );
        }
    }

    md.push_str(&bar(cfg, store));
    md
}

/// The bar of issue 6 (and issue 16's for the proxy), cell by cell, for each omq variant.
pub fn bar(cfg: &Config, store: &Store) -> String {
    let variants: Vec<&str> = cfg
        .impls
        .iter()
        .filter(|i| i.is_omq())
        .map(|i| i.name())
        .collect();
    let mut md = String::from(
        "\n### The bar (issue 6; rows marked issue 13, 14 or 16: those issues), checked against this run's medians\n\n| cell | requirement |",
    );
    for v in &variants {
        let _ = write!(md, " {v} | met |");
    }
    md.push_str("\n|---|---|");
    for _ in &variants {
        md.push_str("---|---|");
    }
    md.push('\n');
    let variants = &variants[..];
    let mark = |ok: Option<bool>| match ok {
        Some(true) => "yes",
        Some(false) => "**no**",
        None => "–",
    };
    if cfg.patterns.contains(&crate::spec::Pattern::PushPull) {
        for &t in &cfg.transports {
            let tn = t.name();
            if t == Transport::Inproc {
                for s in cfg.thr_sizes() {
                    let m = |imp: &str| store.median(imp, tn, "pushpull", s, "e2e_msg_s");
                    let target = m("libzmq");
                    let mut row = format!(
                        "| PUSH/PULL inproc {} e2e | ≥ libzmq inproc (= {}) ",
                        size(s),
                        target.map_or("–".into(), rate)
                    );
                    for v in variants {
                        let got = m(v);
                        let ok = got.zip(target).map(|(g, t)| g >= t);
                        let share = got
                            .zip(target)
                            .map_or(String::new(), |(g, t)| format!(" ({:.0}%)", 100.0 * g / t));
                        let _ = write!(
                            row,
                            "| {}{} | {} ",
                            got.map_or("–".into(), rate),
                            share,
                            mark(ok)
                        );
                    }
                    md.push_str(&row);
                    md.push_str("|\n");
                }
                continue;
            }
            for s in cfg.thr_sizes() {
                let m = |imp: &str| store.median(imp, tn, "pushpull", s, "e2e_msg_s");
                let (lz, zr, raw) = (m("libzmq"), m("zmq.rs"), m("raw-tokio"));
                let best = match (lz, zr) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
                let (req, target): (String, Option<f64>) = if s <= 256 {
                    ("≥ 2× libzmq".into(), lz.map(|v| 2.0 * v))
                } else if s <= 4096 {
                    ("≥ 2× best of libzmq, zmq.rs".into(), best.map(|v| 2.0 * v))
                } else {
                    (
                        "≥ best of libzmq, zmq.rs and ≥ ½ raw".into(),
                        match (best, raw) {
                            (Some(b), Some(r)) => Some(b.max(r / 2.0)),
                            (b, r) => b.or(r.map(|r| r / 2.0)),
                        },
                    )
                };
                let mut row = format!(
                    "| PUSH/PULL {tn} {} e2e | {req} (= {}) ",
                    size(s),
                    target.map_or("–".into(), rate)
                );
                for v in variants {
                    let got = m(v);
                    let ok = got.zip(target).map(|(g, t)| g >= t);
                    let share = got
                        .zip(target)
                        .map_or(String::new(), |(g, t)| format!(" ({:.0}%)", 100.0 * g / t));
                    let _ = write!(
                        row,
                        "| {}{} | {} ",
                        got.map_or("–".into(), rate),
                        share,
                        mark(ok)
                    );
                }
                md.push_str(&row);
                md.push_str("|\n");
                let mut row = format!(
                    "| PUSH/PULL {tn} {} e2e | ≥ ¼ raw (= {}) ",
                    size(s),
                    raw.map_or("–".into(), |r| rate(r / 4.0))
                );
                for v in variants {
                    let got = m(v);
                    let ok = got.zip(raw).map(|(g, r)| g >= r / 4.0);
                    let share = got.zip(raw).map_or(String::new(), |(g, r)| {
                        format!(" ({:.0}% of raw)", 100.0 * g / r)
                    });
                    let _ = write!(
                        row,
                        "| {}{} | {} ",
                        got.map_or("–".into(), rate),
                        share,
                        mark(ok)
                    );
                }
                md.push_str(&row);
                md.push_str("|\n");
            }
        }
    }
    if cfg.patterns.contains(&crate::spec::Pattern::ReqRep) {
        for &t in &cfg.transports {
            if t == Transport::Inproc {
                continue;
            }
            for s in cfg.lat_sizes() {
                let m = |imp: &str| store.median(imp, t.name(), "reqrep", s, "rtt_p50_us");
                let best = match (m("libzmq"), m("zmq.rs")) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                let mut row = format!(
                    "| REQ/REP {} {} p50 | ≤ best of libzmq, zmq.rs (= {} µs) ",
                    t.name(),
                    size(s),
                    best.map_or("–".into(), us)
                );
                for v in variants {
                    let got = m(v);
                    let ok = got.zip(best).map(|(g, b)| g <= b);
                    let _ = write!(row, "| {} µs | {} ", got.map_or("–".into(), us), mark(ok));
                }
                md.push_str(&row);
                md.push_str("|\n");
            }
        }
    }
    if cfg.patterns.contains(&crate::spec::Pattern::PubSub) {
        for s in cfg.pubsub_sizes() {
            let m = |imp: &str, metric: &str| store.median(imp, "tcp", "pubsub-8", s, metric);
            let target = m("libzmq", "agg_msg_s").map(|v| 2.0 * v);
            let mut row = format!(
                "| PUB/SUB tcp 8 subscribers {} | all delivered, ≥ 2× libzmq aggregate (= {}) ",
                size(s),
                target.map_or("–".into(), rate)
            );
            for v in variants {
                let got = m(v, "agg_msg_s");
                let del = m(v, "delivered_pct");
                let ok = match (got, target, del) {
                    (Some(g), Some(t), Some(d)) => Some(g >= t && d >= 99.999),
                    _ => None,
                };
                let _ = write!(
                    row,
                    "| {} · {} | {} ",
                    got.map_or("–".into(), rate),
                    del.map_or("–".into(), pct),
                    mark(ok)
                );
            }
            md.push_str(&row);
            md.push_str("|\n");
        }
    }
    if cfg.patterns.contains(&crate::spec::Pattern::Curve) {
        for s in cfg.curve_sizes() {
            let m = |imp: &str| store.median(imp, "tcp", "curve", s, "e2e_msg_s");
            let target = m("libzmq").map(|v| 2.0 * v);
            let mut row = format!(
                "| CURVE PUSH/PULL tcp {} e2e | ≥ 2× libzmq CURVE (= {}) ",
                size(s),
                target.map_or("–".into(), rate)
            );
            for v in variants {
                let got = m(v);
                let ok = got.zip(target).map(|(g, t)| g >= t);
                let share = got
                    .zip(target)
                    .map_or(String::new(), |(g, t)| format!(" ({:.0}%)", 100.0 * g / t));
                let _ = write!(
                    row,
                    "| {}{} | {} ",
                    got.map_or("–".into(), rate),
                    share,
                    mark(ok)
                );
            }
            md.push_str(&row);
            md.push_str("|\n");
        }
    }
    if cfg.patterns.contains(&crate::spec::Pattern::CurveClients) {
        for s in crate::plan::CURVE_CLIENTS_SIZES {
            let m = |imp: &str, n: usize| {
                store.median(imp, "tcp", &format!("curveclients-{n}"), s, "steady_msg_s")
            };
            let mut row = format!(
                "| CURVE 4 clients → ROUTER tcp {} (issue 14) | ≥ 1.6× one client ",
                size(s)
            );
            for v in variants {
                let got = m(v, 4).zip(m(v, 1)).map(|(four, one)| four / one);
                let _ = write!(
                    row,
                    "| {} | {} ",
                    got.map_or("–".into(), |r| format!("{r:.2}×")),
                    mark(got.map(|r| r >= 1.6))
                );
            }
            md.push_str(&row);
            md.push_str(
                "|
",
            );
        }
    }
    if cfg.patterns.contains(&crate::spec::Pattern::Proxy) {
        for s in cfg.proxy_sizes() {
            let m = |imp: &str| store.median(imp, "tcp", "proxy", s, "recv_msg_s");
            let target = m("libzmq").map(|v| 2.0 * v);
            let mut row = format!(
                "| proxy PUSH/PULL tcp {} (issue 16) | ≥ 2× libzmq's zmq_proxy (= {}) ",
                size(s),
                target.map_or("–".into(), rate)
            );
            for v in variants {
                let got = m(v);
                let ok = got.zip(target).map(|(g, t)| g >= t);
                let share = got
                    .zip(target)
                    .map_or(String::new(), |(g, t)| format!(" ({:.0}%)", 100.0 * g / t));
                let _ = write!(
                    row,
                    "| {}{} | {} ",
                    got.map_or("–".into(), rate),
                    share,
                    mark(ok)
                );
            }
            md.push_str(&row);
            md.push_str("|\n");
        }
    }
    if cfg.patterns.contains(&crate::spec::Pattern::ProxyLat) {
        for s in cfg.proxylat_sizes() {
            let m = |imp: &str| store.median(imp, "tcp", "proxylat", s, "rtt_p50_us");
            // Twice the round trips per second: half libzmq's round-trip time.
            let target = m("libzmq").map(|v| v / 2.0);
            let mut row = format!(
                "| proxy REQ/REP tcp {} p50 (issue 16) | ≤ ½ libzmq's through zmq_proxy (= {} µs) ",
                size(s),
                target.map_or("–".into(), us)
            );
            for v in variants {
                let got = m(v);
                let ok = got.zip(target).map(|(g, t)| g <= t);
                let x = got
                    .zip(m("libzmq"))
                    .map_or(String::new(), |(g, l)| format!(" ({:.2}×)", l / g));
                let _ = write!(
                    row,
                    "| {} µs{} | {} ",
                    got.map_or("–".into(), us),
                    x,
                    mark(ok)
                );
            }
            md.push_str(&row);
            md.push_str("|\n");
        }
    }
    md.push_str(&issue13_rows(cfg, store, variants));
    md
}

/// Issue 13's rows (the per-message path): inproc at twice libzmq's inproc up to 1 KiB; the
/// multi-threaded tokio layouts at 0.8× the current-thread omq-tokio in every PUSH/PULL cell;
/// no allocation per message up to 64 B and at most half libzmq's instructions per 64 B
/// message, on every backend the cost pass measured.
fn issue13_rows(cfg: &Config, store: &Store, variants: &[&str]) -> String {
    let mut md = String::new();
    let mark = |ok: Option<bool>| match ok {
        Some(true) => "yes",
        Some(false) => "**no**",
        None => "–",
    };
    if cfg.patterns.contains(&crate::spec::Pattern::PushPull) {
        if cfg.transports.contains(&Transport::Inproc) {
            for s in cfg.thr_sizes().into_iter().filter(|&s| s <= 1024) {
                let m = |imp: &str| store.median(imp, "inproc", "pushpull", s, "e2e_msg_s");
                let target = m("libzmq").map(|v| 2.0 * v);
                let mut row = format!(
                    "| PUSH/PULL inproc {} e2e (issue 13) | ≥ 2× libzmq inproc (= {}) ",
                    size(s),
                    target.map_or("–".into(), rate)
                );
                for v in variants {
                    let got = m(v);
                    let share = got
                        .zip(target)
                        .map_or(String::new(), |(g, t)| format!(" ({:.0}%)", 100.0 * g / t));
                    let _ = write!(
                        row,
                        "| {}{share} | {} ",
                        got.map_or("–".into(), rate),
                        mark(got.zip(target).map(|(g, t)| g >= t))
                    );
                }
                md.push_str(&row);
                md.push_str("|\n");
            }
        }
        for &t in &cfg.transports {
            for s in cfg.thr_sizes() {
                let m = |imp: &str| store.median(imp, t.name(), "pushpull", s, "e2e_msg_s");
                let base = m(Impl::OmqTokio.name());
                let mut row = format!(
                    "| PUSH/PULL {} {} e2e, multi-threaded tokio (issue 13) | ≥ 0.8× omq-tokio (= {}) ",
                    t.name(),
                    size(s),
                    base.map_or("–".into(), |b| rate(0.8 * b))
                );
                for v in variants {
                    let multi = [Impl::OmqTokioMt.name(), Impl::OmqTokioTasks.name()].contains(v);
                    let got = m(v).filter(|_| multi);
                    let ratio = got.zip(base).map(|(g, b)| g / b);
                    let _ = write!(
                        row,
                        "| {} | {} ",
                        ratio.map_or("–".into(), |r| format!("{r:.2}×")),
                        mark(ratio.map(|r| r >= 0.8))
                    );
                }
                md.push_str(&row);
                md.push_str("|\n");
            }
        }
    }
    // Allocations and instructions: from the cost pass, every backend it measured.
    let cost_row = |md: &mut String,
                    cell: &str,
                    req: String,
                    metric: &str,
                    size: usize,
                    ok: &dyn Fn(f64) -> bool| {
        let _ = write!(md, "| {cell} | {req} ");
        for v in variants {
            let got = Impl::ALL
                .iter()
                .find(|i| i.name() == *v)
                .and_then(|&i| cost::median(store, i, size, metric))
                .map(|s| s.median);
            let _ = write!(
                md,
                "| {} | {} ",
                got.map_or("not measured".into(), plain),
                mark(got.map(ok))
            );
        }
        md.push_str("|\n");
    };
    if cfg.allocs {
        for s in cost::ALLOC_SIZES {
            cost_row(
                &mut md,
                &format!("allocations, {} (issue 13)", size(s)),
                "0 per message".into(),
                "allocs_per_msg",
                s,
                &|v| v < 0.01,
            );
        }
    }
    if cfg.callgrind {
        let l =
            cost::median(store, Impl::Libzmq, cost::INSTR_SIZE, "instr_per_msg").map(|s| s.median);
        cost_row(
            &mut md,
            &format!("instructions, {} (issue 13)", size(cost::INSTR_SIZE)),
            format!(
                "≤ ½ libzmq (= {})",
                l.map_or("–".into(), |l| plain(l / 2.0))
            ),
            "instr_per_msg",
            cost::INSTR_SIZE,
            &|v| l.is_some_and(|l| v <= l / 2.0),
        );
    }
    md
}

//! The `omq` binary, run as a person would: pipelines between two `omq` processes, exit codes,
//! key generation, CURVE and PLAIN, and every standard socket pair against a real libzmq (the
//! conformance crate's peer process) in both directions.
//!
//! Every wait is bounded ([`WAIT`]); a process still running at the end of a test is killed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use conformance::libzmq_peer::LibzmqPeer;

const BIN: &str = env!("CARGO_BIN_EXE_omq");

/// The most any single step may take before the test fails.
const WAIT: Duration = Duration::from_secs(30);

/// A running `omq`, its stdout as lines, its stderr kept.
struct Omq {
    args: Vec<String>,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<u8>>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

fn omq(args: &[&str]) -> Omq {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start omq");
    let (tx, lines) = mpsc::channel();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    thread::spawn(move || loop {
        let mut line = Vec::new();
        match out.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                if line.last() == Some(&b'\n') {
                    line.pop();
                }
                if tx.send(line).is_err() {
                    return;
                }
            }
        }
    });
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let sink = stderr.clone();
    let mut err = child.stderr.take().unwrap();
    thread::spawn(move || {
        let mut buf = [0; 1024];
        while let Ok(n @ 1..) = err.read(&mut buf) {
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    Omq {
        args: args.iter().map(|s| s.to_string()).collect(),
        stdin: child.stdin.take(),
        child,
        lines,
        stderr,
    }
}

impl Omq {
    fn write_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn input(mut self, text: &str) -> Self {
        self.stdin
            .as_mut()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        self.close_stdin();
        self
    }

    fn close_stdin(&mut self) {
        self.stdin = None;
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    /// The endpoint this `omq` reported binding (`omq: bound to ...` on stderr, printed when
    /// the system chose the port), within [`WAIT`].
    fn bound(&self) -> String {
        let start = Instant::now();
        loop {
            // Whole lines only: stderr is read as it comes, and a line read half-written
            // would give a cut endpoint (an empty one was seen).
            if let Some(line) = self
                .stderr()
                .split_inclusive('\n')
                .filter_map(|l| l.strip_suffix('\n'))
                .find_map(|l| l.strip_prefix("omq: bound to "))
            {
                return line.trim().to_owned();
            }
            assert!(
                start.elapsed() < WAIT,
                "omq {:?} reported no bound endpoint; stderr: {}",
                self.args,
                self.stderr()
            );
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// The next line of output, within `timeout`.
    fn line_within(&self, timeout: Duration) -> Option<Vec<u8>> {
        self.lines.recv_timeout(timeout).ok()
    }

    /// The next `n` lines of output.
    fn lines(&self, n: usize) -> Vec<String> {
        (0..n)
            .map(|i| {
                let line = self.line_within(WAIT).unwrap_or_else(|| {
                    panic!(
                        "omq {:?}: line {i} of {n} not printed within {WAIT:?}; stderr: {}",
                        self.args,
                        self.stderr()
                    )
                });
                String::from_utf8(line).unwrap()
            })
            .collect()
    }

    fn exited(&mut self) -> Option<i32> {
        self.child
            .try_wait()
            .unwrap()
            .map(|s| s.code().expect("exited, not killed"))
    }

    /// The exit code, within [`WAIT`].
    fn wait(&mut self) -> i32 {
        let start = Instant::now();
        loop {
            if let Some(code) = self.exited() {
                // Let the stderr reader catch up.
                thread::sleep(Duration::from_millis(20));
                return code;
            }
            if start.elapsed() > WAIT {
                let _ = self.child.kill();
                panic!(
                    "omq {:?} still running after {WAIT:?}; stderr: {}",
                    self.args,
                    self.stderr()
                );
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits for exit 0.
    fn success(&mut self) {
        let code = self.wait();
        assert_eq!(code, 0, "omq {:?}: stderr: {}", self.args, self.stderr());
    }
}

impl Drop for Omq {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `omq` to the end with `input` on stdin: (exit code, stdout, stderr).
fn run(args: &[&str], input: &str) -> (i32, String, String) {
    let mut p = omq(args).input(input);
    let code = p.wait();
    let mut out = String::new();
    // Until the reader thread sees the end of stdout.
    while let Ok(line) = p.lines.recv_timeout(WAIT) {
        out.push_str(&String::from_utf8_lossy(&line));
        out.push('\n');
    }
    (code, out, p.stderr())
}

/// A tcp endpoint whose port the binding `omq` lets the system choose; [`Omq::bound`] reads
/// back which. (Picking a free port here and handing it over raced with other processes.)
const ANY_TCP: &str = "tcp://127.0.0.1:0";

/// Where to connect to `binder`, which was told to bind `ep`: the port it reported when the
/// system chose it, else `ep` itself.
fn connect_to(binder: &Omq, ep: &str) -> String {
    if ep.ends_with(":0") {
        binder.bound()
    } else {
        ep.to_owned()
    }
}

/// A fresh ipc endpoint of this test process.
fn ipc(tag: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("ipc:///tmp/omq-cli-{}-{n}-{tag}.sock", std::process::id())
}

fn libzmq() -> LibzmqPeer {
    LibzmqPeer::spawn().unwrap_or_else(|e| panic!("{e}"))
}

fn keygen() -> (String, String) {
    let (code, out, err) = run(&["keygen"], "");
    assert_eq!(code, 0, "{err}");
    let mut public = None;
    let mut secret = None;
    for line in out.lines() {
        match line.split_once(": ") {
            Some(("public", k)) => public = Some(k.to_owned()),
            Some(("secret", k)) => secret = Some(k.to_owned()),
            _ => panic!("unexpected keygen line {line:?}"),
        }
    }
    (public.unwrap(), secret.unwrap())
}

fn strings(parts: Vec<Vec<u8>>) -> Vec<String> {
    parts
        .into_iter()
        .map(|p| String::from_utf8(p).unwrap())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// omq to omq

fn pipeline(ep: &str) {
    let mut pull = omq(&["pull", "--bind", ep, "--recv", "-n", "5"]);
    let ep = connect_to(&pull, ep);
    let mut push = omq(&["PUSH", "--connect", &ep, "--send"]).input("1\n2\n3\n4\n5\n");
    assert_eq!(pull.lines(5), ["1", "2", "3", "4", "5"]);
    pull.success();
    push.success();
}

#[test]
fn push_pull_over_tcp() {
    pipeline(ANY_TCP);
}

#[test]
fn push_pull_over_lz4_and_zstd_tcp() {
    for scheme in ["lz4+tcp", "zstd+tcp"] {
        pipeline(&ANY_TCP.replacen("tcp", scheme, 1));
    }
    // With a trained dictionary and long, compressible lines.
    let ep = ANY_TCP.replacen("tcp", "lz4+tcp", 1);
    let line = "{\"sensor\":\"t-1\",\"unit\":\"C\",\"value\":21.5}".repeat(20);
    let input: String = (0..150).map(|_| format!("{line}\n")).collect();
    let mut pull = omq(&["pull", "--bind", &ep, "--recv", "-n", "150"]);
    let ep = pull.bound();
    let mut push = omq(&[
        "push",
        "--connect",
        &ep,
        "--send",
        "--compression-auto-train",
    ])
    .input(&input);
    let got = pull.lines(150);
    assert!(got.iter().all(|l| *l == line), "lines changed on the way");
    pull.success();
    push.success();
}

#[test]
fn push_pull_over_ipc() {
    pipeline(&ipc("pipeline"));
}

#[test]
fn a_binding_sender_waits_for_its_receiver() {
    let ep = ipc("bound-push");
    let mut push = omq(&["push", "--bind", &ep, "--send"]).input("a\nb\nc\n");
    // The PUSH has bound (its socket file is there) before the PULL starts.
    let path = ep.trim_start_matches("ipc://");
    let start = Instant::now();
    while !std::path::Path::new(path).exists() {
        assert!(
            start.elapsed() < WAIT,
            "push never bound: {}",
            push.stderr()
        );
        thread::sleep(Duration::from_millis(5));
    }
    let mut pull = omq(&["pull", "--connect", &ep, "--recv", "-n", "3"]);
    assert_eq!(pull.lines(3), ["a", "b", "c"]);
    pull.success();
    push.success();
}

#[test]
fn a_sender_that_connects_before_the_bind_delivers_everything() {
    // Held (not listening) until the PULL binds it: dials are refused meanwhile.
    let port = conformance::ports::reserve_tcp_port();
    let ep = port.endpoint();
    let mut push = omq(&["push", "--connect", &ep, "--send"]).input("x\ny\n");
    // Give the PUSH time to dial and be refused at least once (it redials every 100 ms): the
    // case is a connect that precedes the bind. On a slow machine it may not have dialled yet,
    // which only makes the case easier, never a false failure.
    thread::sleep(Duration::from_millis(300));
    let mut pull = omq(&["pull", "--bind", &ep, "--recv", "-n", "2"]);
    assert_eq!(pull.lines(2), ["x", "y"]);
    pull.success();
    push.success();
}

#[test]
fn count_stops_a_sender_early() {
    let ep = ipc("count");
    let mut pull = omq(&["pull", "--bind", &ep, "--recv", "--timeout", "1"]);
    let mut push = omq(&["push", "--connect", &ep, "--send", "-n", "2"]).input("1\n2\n3\n");
    assert_eq!(pull.lines(2), ["1", "2"]);
    push.success();
    assert_eq!(pull.wait(), 1, "no third message, so the timeout");
}

#[test]
fn req_rep_with_echo() {
    let ep = ipc("echo");
    let mut rep = omq(&["rep", "--bind", &ep, "--recv", "--echo", "-n", "3"]);
    let mut req = omq(&["req", "--connect", &ep, "--send"]).input("one\ntwo\nthree\n");
    assert_eq!(req.lines(3), ["one", "two", "three"]);
    assert_eq!(rep.lines(3), ["one", "two", "three"]);
    req.success();
    rep.success();
}

#[test]
fn client_server_with_echo() {
    let mut server = omq(&["server", "--bind", ANY_TCP, "--recv", "--echo", "-n", "2"]);
    let ep = server.bound();
    let mut client = omq(&["client", "--connect", &ep, "--send"]).input("one\ntwo\n");
    assert_eq!(client.lines(2), ["one", "two"]);
    assert_eq!(server.lines(2), ["one", "two"]);
    client.success();
    server.success();
    // Single parts only: a line split into parts is refused with a clear error.
    let (code, _, err) = run(
        &[
            "client",
            "--connect",
            &conformance::ports::reserve_tcp_port().endpoint(),
            "--send",
            "--delim",
            ",",
        ],
        "a,b\n",
    );
    assert_ne!(code, 0);
    assert!(err.contains("single-part"), "{err}");
}

#[test]
fn scatter_gather_pipeline() {
    let ep = ipc("scatter");
    let mut gather = omq(&["gather", "--bind", &ep, "--recv", "-n", "3"]);
    let mut scatter = omq(&["scatter", "--connect", &ep, "--send"]).input("1\n2\n3\n");
    assert_eq!(gather.lines(3), ["1", "2", "3"]);
    scatter.success();
    gather.success();
}

#[test]
fn radio_dish_over_udp_and_tcp() {
    // udp: the DISH binds, the RADIO connects; over tcp either may bind (here the RADIO). The
    // DISH prints each message behind its group. The binding side starts first, on a port the
    // system chooses.
    for (any, dish_binds) in [("udp://127.0.0.1:0", true), (ANY_TCP, false)] {
        let dish = |side: &str, ep: &str| {
            omq(&[
                "dish", side, ep, "--recv", "--join", "news", "--join", "sport", "-n", "3",
            ])
        };
        let radio = |side: &str, ep: &str, group: &str| {
            omq(&["radio", side, ep, "--send", "--group", group])
        };
        let (mut dish, mut news, mut weather) = if dish_binds {
            let dish = dish("--bind", any);
            let ep = dish.bound();
            // Over udp a second RADIO sends a group the DISH did not join: udp carries every
            // group, so the DISH's own filter is what keeps it out.
            let (news, weather) = (
                radio("--connect", &ep, "news"),
                radio("--connect", &ep, "weather"),
            );
            (dish, news, Some(weather))
        } else {
            let news = radio("--bind", any, "news");
            (dish("--connect", &news.bound()), news, None)
        };
        let ep = any;
        // The DISH's joins (tcp) or the RADIO's first datagrams may take a moment: send until it
        // has had its three; a group it did not join never shows.
        let start = Instant::now();
        let mut i = 0;
        while dish.exited().is_none() {
            assert!(start.elapsed() < WAIT, "{ep}: {}", dish.stderr());
            news.write_line(&format!("hello{i}"));
            if let Some(w) = &mut weather {
                w.write_line(&format!("rain{i}"));
            }
            i += 1;
            thread::sleep(Duration::from_millis(20));
        }
        dish.success();
        let got = dish.lines(3);
        assert!(
            got.iter().all(|l| l.starts_with("news\thello")),
            "{ep}: {got:?}"
        );
        news.close_stdin();
        news.success();
        if let Some(mut w) = weather {
            w.close_stdin();
            w.success();
        }
    }
    // Each type needs its group option, and only its own.
    for (args, want) in [
        (
            &["radio", "--connect", "udp://127.0.0.1:1", "--send"][..],
            "--group",
        ),
        (
            &["dish", "--bind", "udp://127.0.0.1:0", "--recv"][..],
            "--join",
        ),
        (
            &[
                "pub",
                "--bind",
                "tcp://127.0.0.1:0",
                "--send",
                "--group",
                "g",
            ][..],
            "radio",
        ),
        (
            &[
                "sub",
                "--connect",
                "tcp://127.0.0.1:1",
                "--recv",
                "--join",
                "g",
            ][..],
            "dish",
        ),
        (
            &[
                "dish",
                "--bind",
                "udp://127.0.0.1:0",
                "--send",
                "--join",
                "g",
            ][..],
            "cannot send",
        ),
    ] {
        let (code, _, err) = run(args, "");
        assert_ne!(code, 0, "{args:?}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn router_echo_keeps_the_envelope() {
    let mut router = omq(&["router", "--bind", ANY_TCP, "--recv", "--echo", "-n", "2"]);
    let ep = router.bound();
    let mut req = omq(&["req", "--connect", &ep, "--send"]).input("a\nb\n");
    assert_eq!(req.lines(2), ["a", "b"]);
    // ROUTER prints [routing id, empty delimiter, body], bytes as received: the generated id
    // is 5 bytes, a zero then 4 random ones, which may happen to be a tab (split from the end)
    // or a newline (the printed line then arrives in pieces: join them back).
    for body in ["a", "b"] {
        let end = format!("\t\t{body}");
        let mut line = router.line_within(WAIT).expect("router printed nothing");
        while line.len() < 5 + end.len() {
            let rest = router
                .line_within(WAIT)
                .expect("router printed half a line");
            line.push(b'\n');
            line.extend_from_slice(&rest);
        }
        assert!(line.ends_with(end.as_bytes()), "{line:?}");
        assert_eq!(line.len(), 5 + end.len(), "{line:?}");
        assert_eq!(line[0], 0, "{line:?}");
    }
    req.success();
    router.success();
}

#[test]
fn pub_sub_filters_on_subscriptions() {
    let mut publisher = omq(&["pub", "--bind", ANY_TCP, "--send"]);
    let ep = publisher.bound();
    let mut sub = omq(&[
        "sub",
        "--connect",
        &ep,
        "--recv",
        "--subscribe",
        "a",
        "--subscribe",
        "c",
        "-n",
        "6",
    ]);
    // Subscriptions take a moment to reach the publisher: publish until the subscriber has had
    // its six.
    let start = Instant::now();
    let mut i = 0;
    while sub.exited().is_none() {
        assert!(start.elapsed() < WAIT, "sub: {}", sub.stderr());
        for topic in ["a", "b", "c"] {
            publisher.write_line(&format!("{topic}{i}"));
        }
        i += 1;
        thread::sleep(Duration::from_millis(20));
    }
    sub.success();
    let got = sub.lines(6);
    assert!(
        got.iter().all(|l| l.starts_with('a') || l.starts_with('c')),
        "{got:?}"
    );
    assert!(got.iter().any(|l| l.starts_with('c')), "{got:?}");
    publisher.close_stdin();
    publisher.success();
}

#[test]
fn multipart_with_delim() {
    let ep = ipc("multipart");
    let mut tabbed = omq(&["pull", "--bind", &ep, "--recv", "-n", "2"]);
    let mut push =
        omq(&["push", "--connect", &ep, "--send", "--delim", ","]).input("a,b,,c\nsingle\n");
    assert_eq!(tabbed.lines(2), ["a\tb\t\tc", "single"]);
    tabbed.success();
    push.success();

    // The same parts printed with another delimiter (given as an escape).
    let ep = ipc("multipart2");
    let mut piped = omq(&[
        "pull", "--bind", &ep, "--recv", "-n", "1", "--delim", "\\x7c",
    ]);
    let mut push = omq(&["push", "--connect", &ep, "--send", "--delim", "::"]).input("x::y::z\n");
    assert_eq!(piped.lines(1), ["x|y|z"]);
    piped.success();
    push.success();
}

#[test]
fn timeouts_exit_1() {
    let started = Instant::now();
    let (code, out, err) = run(
        &[
            "pull",
            "--bind",
            &ipc("timeout"),
            "--recv",
            "--timeout",
            "0.3",
        ],
        "",
    );
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("within"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));

    // A REQ whose reply never comes.
    let (code, _, err) = run(
        &[
            "req",
            "--connect",
            &ipc("noreply"),
            "--send",
            "--timeout",
            "0.3",
        ],
        "hello\n",
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no reply"), "{err}");

    // A bound PUSH that nobody pulls from.
    let (code, _, err) = run(
        &[
            "push",
            "--bind",
            &ipc("nopull"),
            "--send",
            "--timeout",
            "0.3",
        ],
        "hello\n",
    );
    assert_eq!(code, 1, "{err}");
}

#[test]
fn a_sender_whose_peer_never_comes_fails_after_its_linger() {
    let (code, _, err) = run(
        &[
            "push",
            "--connect",
            &ipc("nobody"),
            "--send",
            "--linger",
            "200",
        ],
        "lost\n",
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no connection"), "{err}");
}

fn assert_usage_error(args: &[&str], expect: &str) {
    let (code, out, err) = run(args, "");
    assert_eq!(code, 2, "{args:?}: {err}");
    assert!(out.is_empty(), "{args:?}: {out}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.starts_with("omq: "), "{args:?}: {err}");
    assert!(err.contains(expect), "{args:?}: {err:?} lacks {expect:?}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
}

#[test]
fn bad_endpoints_exit_2() {
    assert_usage_error(
        &["pull", "--bind", "tcp://nohost", "--recv"],
        "tcp://nohost",
    );
    assert_usage_error(&["pull", "--bind", "udp://x:1", "--recv"], "not supported");
    assert_usage_error(
        &["pull", "--bind", "tcp://127.0.0.1:70000", "--recv"],
        "port",
    );
    assert_usage_error(&["push", "--connect", "127.0.0.1:5", "--send"], "transport");
    assert_usage_error(&["push", "--connect", "inproc://x", "--send"], "use ipc://");
    assert_usage_error(
        &["pull", "--bind", "ipc:///nonexistent-dir/x.sock", "--recv"],
        "cannot bind",
    );
    // Address in use.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let ep = format!("tcp://127.0.0.1:{}", l.local_addr().unwrap().port());
    assert_usage_error(&["pull", "--bind", &ep, "--recv"], "in use");
}

#[test]
fn bad_arguments_exit_2() {
    assert_usage_error(
        &["pul", "--bind", "tcp://127.0.0.1:1", "--recv"],
        "unknown socket type",
    );
    assert_usage_error(
        &[
            "pull",
            "--bind",
            "tcp://127.0.0.1:1",
            "--recv",
            "--backend",
            "nope",
        ],
        "unknown backend",
    );
    assert_usage_error(&["pull", "--recv"], "--bind");
    assert_usage_error(&["pull", "--bind", "tcp://127.0.0.1:1"], "--send");
    assert_usage_error(
        &["pull", "--bind", "tcp://127.0.0.1:1", "--send"],
        "cannot send",
    );
    assert_usage_error(&["rep", "--bind", "tcp://127.0.0.1:1", "--recv"], "--echo");
    assert_usage_error(
        &[
            "pull",
            "--bind",
            "tcp://127.0.0.1:1",
            "--recv",
            "-n",
            "many",
        ],
        "many",
    );
    assert_usage_error(
        &[
            "pull",
            "--bind",
            "tcp://127.0.0.1:1",
            "--recv",
            "--curve-server",
            "short",
        ],
        "40 Z85",
    );
    assert_usage_error(
        &[
            "pull",
            "--bind",
            "tcp://127.0.0.1:1",
            "--recv",
            "--plain",
            "nopassword",
        ],
        "USER:PASS",
    );
    // No arguments at all: the help, and exit 2.
    let (code, _, err) = run(&[], "");
    assert_eq!(code, 2);
    assert!(err.contains("Usage"), "{err}");
}

#[test]
fn help_is_useful() {
    let (code, out, _) = run(&["--help"], "");
    assert_eq!(code, 0);
    for needle in [
        "--bind",
        "--connect",
        "--send",
        "--recv",
        "--delim",
        "--timeout",
        "--curve-server",
        "--plain-server",
        "ANY username",
        "keygen",
        "Exit status",
        "seq 5",
    ] {
        assert!(out.contains(needle), "--help lacks {needle:?}:\n{out}");
    }
}

#[test]
fn keygen_prints_a_z85_keypair() {
    const Z85: &str =
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
    let (code, out, _) = run(&["keygen"], "");
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].starts_with("public: ") && lines[1].starts_with("secret: "));
    let (public, secret) = keygen();
    for key in [&public, &secret] {
        assert_eq!(key.len(), 40, "{key}");
        assert!(key.chars().all(|c| Z85.contains(c)), "{key}");
    }
    // The public key belongs to the secret key, and every run makes a new pair.
    let derived = omq_core::mechanism::CurveSecretKey::from_z85(&secret)
        .unwrap()
        .public_key()
        .to_z85();
    assert_eq!(derived, public);
    assert_ne!(keygen().1, secret);
}

#[test]
fn curve_pipeline() {
    let (public, secret) = keygen();
    let mut pull = omq(&[
        "pull",
        "--bind",
        ANY_TCP,
        "--recv",
        "-n",
        "2",
        "--curve-server",
        &secret,
    ]);
    let ep = pull.bound();
    let mut push = omq(&[
        "push",
        "--connect",
        &ep,
        "--send",
        "--curve-serverkey",
        &public,
    ])
    .input("secret one\nsecret two\n");
    assert_eq!(pull.lines(2), ["secret one", "secret two"]);
    pull.success();
    push.success();

    // With a client keypair of its own, over ipc, REQ/REP.
    let (client_public, client_secret) = keygen();
    let _ = client_public;
    let ep = ipc("curve");
    let mut rep = omq(&[
        "rep",
        "--bind",
        &ep,
        "--recv",
        "--echo",
        "-n",
        "1",
        "--curve-server",
        &secret,
    ]);
    let mut req = omq(&[
        "req",
        "--connect",
        &ep,
        "--send",
        "--curve-serverkey",
        &public,
        "--curve-secretkey",
        &client_secret,
    ])
    .input("ping\n");
    assert_eq!(req.lines(1), ["ping"]);
    req.success();
    rep.success();
}

#[test]
fn curve_with_the_wrong_server_key_delivers_nothing() {
    let (_, secret) = keygen();
    let (other_public, _) = keygen();
    let ep = ipc("wrongkey");
    let mut pull = omq(&[
        "pull",
        "--bind",
        &ep,
        "--recv",
        "--timeout",
        "1",
        "--curve-server",
        &secret,
    ]);
    let (code, _, err) = run(
        &[
            "push",
            "--connect",
            &ep,
            "--send",
            "--linger",
            "500",
            "--curve-serverkey",
            &other_public,
        ],
        "intercepted?\n",
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(pull.wait(), 1, "{}", pull.stderr());
    assert!(pull.line_within(Duration::ZERO).is_none());
}

#[test]
fn plain_pipeline() {
    let mut pull = omq(&[
        "pull",
        "--bind",
        ANY_TCP,
        "--recv",
        "-n",
        "1",
        "--plain-server",
    ]);
    let ep = pull.bound();
    let mut push =
        omq(&["push", "--connect", &ep, "--send", "--plain", "user:pa:ss"]).input("logged in\n");
    assert_eq!(pull.lines(1), ["logged in"]);
    pull.success();
    push.success();
}

// ---------------------------------------------------------------------------------------------
// omq against libzmq, both directions for each standard pair

const T: Duration = Duration::from_secs(10);

#[test]
fn libzmq_push_pull() {
    let mut z = libzmq();
    // omq PUSH -> libzmq PULL.
    z.socket(1, "PULL").unwrap();
    let ep = z.bind(1, "tcp://127.0.0.1:*").unwrap();
    let mut push = omq(&["push", "--connect", &ep, "--send", "--delim", ","]).input("a\nb,c\n");
    assert_eq!(strings(z.recv(1, T).unwrap()), ["a"]);
    assert_eq!(strings(z.recv(1, T).unwrap()), ["b", "c"]);
    push.success();

    // libzmq PUSH -> omq PULL.
    let ep = ipc("zpush");
    let mut pull = omq(&["pull", "--bind", &ep, "--recv", "-n", "2"]);
    z.socket(2, "PUSH").unwrap();
    z.connect(2, &ep).unwrap();
    z.send(2, &[b"one"]).unwrap();
    z.send(2, &[b"two", b"parts"]).unwrap();
    assert_eq!(pull.lines(2), ["one", "two\tparts"]);
    pull.success();
}

#[test]
fn libzmq_req_rep() {
    let mut z = libzmq();
    // omq REQ -> libzmq REP.
    z.socket(1, "REP").unwrap();
    let ep = z.bind(1, "tcp://127.0.0.1:*").unwrap();
    let mut req = omq(&["req", "--connect", &ep, "--send"]).input("q1\nq2\n");
    for q in ["q1", "q2"] {
        assert_eq!(strings(z.recv(1, T).unwrap()), [q]);
        z.send(1, &[format!("answer to {q}").as_bytes()]).unwrap();
    }
    assert_eq!(req.lines(2), ["answer to q1", "answer to q2"]);
    req.success();

    // libzmq REQ -> omq REP --echo.
    let ep = ipc("zreq");
    let mut rep = omq(&["rep", "--bind", &ep, "--recv", "--echo", "-n", "2"]);
    z.socket(2, "REQ").unwrap();
    z.connect(2, &ep).unwrap();
    for q in ["first", "second"] {
        z.send(2, &[q.as_bytes()]).unwrap();
        assert_eq!(strings(z.recv(2, T).unwrap()), [q]);
    }
    assert_eq!(rep.lines(2), ["first", "second"]);
    rep.success();
}

#[test]
fn libzmq_dealer_router() {
    let mut z = libzmq();
    // omq DEALER -> libzmq ROUTER: the router sees [id, parts...].
    z.socket(1, "ROUTER").unwrap();
    let ep = z.bind(1, "tcp://127.0.0.1:*").unwrap();
    let mut dealer = omq(&["dealer", "--connect", &ep, "--send", "--delim", "|"]).input("x|y\n");
    let got = z.recv(1, T).unwrap();
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(strings(got[1..].to_vec()), ["x", "y"]);
    dealer.success();

    // libzmq DEALER -> omq ROUTER --echo.
    let ep = ipc("zdealer");
    let mut router = omq(&["router", "--bind", &ep, "--recv", "--echo", "-n", "1"]);
    z.socket(2, "DEALER").unwrap();
    z.setsockopt(2, "ROUTING_ID", "d1").unwrap();
    z.connect(2, &ep).unwrap();
    z.send(2, &[b"hi", b"there"]).unwrap();
    assert_eq!(strings(z.recv(2, T).unwrap()), ["hi", "there"]);
    assert_eq!(router.lines(1), ["d1\thi\tthere"]);
    router.success();

    // libzmq REQ -> omq ROUTER --echo: the envelope goes back as it came.
    let ep = ipc("zreq-router");
    let mut router = omq(&["router", "--bind", &ep, "--recv", "--echo", "-n", "1"]);
    z.socket(3, "REQ").unwrap();
    z.setsockopt(3, "ROUTING_ID", "r1").unwrap();
    z.connect(3, &ep).unwrap();
    z.send(3, &[b"req"]).unwrap();
    assert_eq!(strings(z.recv(3, T).unwrap()), ["req"]);
    assert_eq!(router.lines(1), ["r1\t\treq"]);
    router.success();

    // libzmq ROUTER -> omq DEALER: the router names the dealer at connect.
    let ep = ipc("zrouter");
    let mut dealer = omq(&["dealer", "--bind", &ep, "--recv", "-n", "1"]);
    z.socket(4, "ROUTER").unwrap();
    z.setsockopt(4, "ROUTER_MANDATORY", 1).unwrap();
    z.setsockopt(4, "CONNECT_ROUTING_ID", "omq").unwrap();
    z.connect(4, &ep).unwrap();
    let start = Instant::now();
    loop {
        match z.send(4, &[b"omq", b"to", b"you"]) {
            Ok(()) => break,
            Err(e) if e.errno() == Some("EHOSTUNREACH") && start.elapsed() < T => {
                thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(dealer.lines(1), ["to\tyou"]);
    dealer.success();
}

#[test]
fn libzmq_pub_sub() {
    let mut z = libzmq();
    // omq PUB -> libzmq SUB.
    let mut publisher = omq(&["pub", "--bind", ANY_TCP, "--send"]);
    let ep = publisher.bound();
    z.socket(1, "SUB").unwrap();
    z.setsockopt(1, "SUBSCRIBE", "news").unwrap();
    z.connect(1, &ep).unwrap();
    let start = Instant::now();
    let got = loop {
        assert!(start.elapsed() < WAIT, "libzmq SUB got nothing");
        publisher.write_line("sport 1");
        publisher.write_line("news 1");
        match z.recv(1, Duration::from_millis(50)) {
            Ok(m) => break m,
            Err(e) if e.is_timeout() => {}
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(strings(got), ["news 1"]);
    publisher.close_stdin();
    publisher.success();

    // libzmq PUB -> omq SUB.
    z.socket(2, "PUB").unwrap();
    let ep = z.bind(2, "tcp://127.0.0.1:*").unwrap();
    let mut sub = omq(&[
        "sub",
        "--connect",
        &ep,
        "--recv",
        "--subscribe",
        "news",
        "-n",
        "3",
    ]);
    let start = Instant::now();
    while sub.exited().is_none() {
        assert!(start.elapsed() < WAIT, "omq sub: {}", sub.stderr());
        z.send(2, &[b"sport"]).unwrap();
        z.send(2, &[b"news", b"flash"]).unwrap();
        thread::sleep(Duration::from_millis(20));
    }
    sub.success();
    assert_eq!(sub.lines(3), ["news\tflash", "news\tflash", "news\tflash"]);
}

#[test]
fn libzmq_xpub_xsub() {
    let mut z = libzmq();
    // omq XSUB (subscribing by message) <- libzmq XPUB.
    z.socket(1, "XPUB").unwrap();
    let ep = z.bind(1, "tcp://127.0.0.1:*").unwrap();
    let mut xsub = omq(&[
        "xsub",
        "--connect",
        &ep,
        "--recv",
        "--subscribe",
        "t",
        "-n",
        "1",
    ]);
    assert_eq!(z.recv(1, T).unwrap(), [b"\x01t".to_vec()]);
    z.send(1, &[b"other"]).unwrap();
    z.send(1, &[b"topic data"]).unwrap();
    assert_eq!(xsub.lines(1), ["topic data"]);
    xsub.success();

    // libzmq XSUB -> omq XPUB: the subscription arrives as a message.
    let ep = ipc("zxsub");
    let mut xpub = omq(&["xpub", "--bind", &ep, "--recv", "-n", "1"]);
    z.socket(2, "XSUB").unwrap();
    z.connect(2, &ep).unwrap();
    z.send(2, &[b"\x01news"]).unwrap();
    assert_eq!(xpub.lines(1), ["\x01news"]);
    xpub.success();

    // omq XPUB --send -> libzmq SUB.
    let mut xpub = omq(&["xpub", "--bind", ANY_TCP, "--send"]);
    let ep = xpub.bound();
    z.socket(3, "SUB").unwrap();
    z.setsockopt(3, "SUBSCRIBE", "").unwrap();
    z.connect(3, &ep).unwrap();
    let start = Instant::now();
    let got = loop {
        assert!(
            start.elapsed() < WAIT,
            "libzmq SUB got nothing from omq XPUB"
        );
        xpub.write_line("hello");
        match z.recv(3, Duration::from_millis(50)) {
            Ok(m) => break m,
            Err(e) if e.is_timeout() => {}
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(strings(got), ["hello"]);
    xpub.close_stdin();
    xpub.success();
}

#[test]
fn libzmq_pair() {
    let mut z = libzmq();
    // omq PAIR -> libzmq PAIR.
    z.socket(1, "PAIR").unwrap();
    let ep = z.bind(1, "tcp://127.0.0.1:*").unwrap();
    let mut pair = omq(&["pair", "--connect", &ep, "--send"]).input("p1\np2\n");
    assert_eq!(strings(z.recv(1, T).unwrap()), ["p1"]);
    assert_eq!(strings(z.recv(1, T).unwrap()), ["p2"]);
    pair.success();

    // libzmq PAIR -> omq PAIR.
    let ep = ipc("zpair");
    let mut pair = omq(&["pair", "--bind", &ep, "--recv", "-n", "2"]);
    z.socket(2, "PAIR").unwrap();
    z.connect(2, &ep).unwrap();
    z.send(2, &[b"q1"]).unwrap();
    z.send(2, &[b"q2", b""]).unwrap();
    assert_eq!(pair.lines(2), ["q1", "q2\t"]);
    pair.success();
}

#[test]
fn libzmq_curve_both_ways() {
    let mut z = libzmq();
    assert!(z.has_curve(), "this libzmq has no CURVE");
    let (server_public, server_secret) = keygen();
    let (client_public, client_secret) = keygen();

    // libzmq PULL as the CURVE server, omq PUSH as the client.
    z.socket(1, "PULL").unwrap();
    z.setsockopt(1, "CURVE_SERVER", 1).unwrap();
    z.setsockopt(1, "CURVE_SECRETKEY", server_secret.as_str())
        .unwrap();
    let ep = z.bind(1, "tcp://127.0.0.1:*").unwrap();
    let mut push = omq(&[
        "push",
        "--connect",
        &ep,
        "--send",
        "--curve-serverkey",
        &server_public,
    ])
    .input("to libzmq\n");
    assert_eq!(strings(z.recv(1, T).unwrap()), ["to libzmq"]);
    push.success();

    // omq PULL as the CURVE server, libzmq PUSH as the client.
    let ep = ipc("zcurve");
    let mut pull = omq(&[
        "pull",
        "--bind",
        &ep,
        "--recv",
        "-n",
        "1",
        "--curve-server",
        &server_secret,
    ]);
    z.socket(2, "PUSH").unwrap();
    z.setsockopt(2, "CURVE_SERVERKEY", server_public.as_str())
        .unwrap();
    z.setsockopt(2, "CURVE_PUBLICKEY", client_public.as_str())
        .unwrap();
    z.setsockopt(2, "CURVE_SECRETKEY", client_secret.as_str())
        .unwrap();
    z.connect(2, &ep).unwrap();
    z.send(2, &[b"from libzmq"]).unwrap();
    assert_eq!(pull.lines(1), ["from libzmq"]);
    pull.success();
}

#[test]
fn libzmq_plain_client_to_omq() {
    // Only this way round: libzmq 4.3.4's PLAIN server refuses every client when no ZAP
    // handler runs, and the peer process has none.
    let mut z = libzmq();
    let ep = ipc("zplain");
    let mut pull = omq(&["pull", "--bind", &ep, "--recv", "-n", "1", "--plain-server"]);
    z.socket(2, "PUSH").unwrap();
    z.setsockopt(2, "PLAIN_USERNAME", "admin").unwrap();
    z.setsockopt(2, "PLAIN_PASSWORD", "secret").unwrap();
    z.connect(2, &ep).unwrap();
    z.send(2, &[b"plain"]).unwrap();
    assert_eq!(pull.lines(1), ["plain"]);
    pull.success();
}

// ---------------------------------------------------------------------------------------------
// Other backends

/// Each backend, to and from libzmq and to and from the tokio backend.
fn backend_both_ways(backend: &str) {
    let mut z = libzmq();
    // omq --backend X PUSH -> libzmq PULL.
    z.socket(1, "PULL").unwrap();
    let ep = z.bind(1, "tcp://127.0.0.1:*").unwrap();
    let mut push = omq(&["push", "--backend", backend, "--connect", &ep, "--send"]).input("x\ny\n");
    assert_eq!(strings(z.recv(1, T).unwrap()), ["x"]);
    assert_eq!(strings(z.recv(1, T).unwrap()), ["y"]);
    push.success();
    // libzmq REQ -> omq --backend X REP --echo.
    let ep = ipc(&format!("rep-{backend}"));
    let mut rep = omq(&[
        "rep",
        "--backend",
        backend,
        "--bind",
        &ep,
        "--recv",
        "--echo",
        "-n",
        "1",
    ]);
    z.socket(2, "REQ").unwrap();
    z.connect(2, &ep).unwrap();
    z.send(2, &[b"ping"]).unwrap();
    assert_eq!(strings(z.recv(2, T).unwrap()), ["ping"]);
    assert_eq!(rep.lines(1), ["ping"]);
    rep.success();
    // tokio PULL <- X PUSH.
    let mut pull = omq(&["pull", "--bind", ANY_TCP, "--recv", "-n", "2"]);
    let ep = pull.bound();
    let mut push = omq(&["push", "--backend", backend, "--connect", &ep, "--send"]).input("1\n2\n");
    assert_eq!(pull.lines(2), ["1", "2"]);
    pull.success();
    push.success();
}

#[test]
fn compio_backend_both_ways() {
    backend_both_ways("compio");
}

#[test]
fn monoio_backend_both_ways() {
    backend_both_ways("monoio");
}

#[test]
fn glommio_backend_both_ways() {
    backend_both_ways("glommio");
}

// ---------------------------------------------------------------------------------------------
// omq proxy

#[test]
fn proxy_streams_between_processes_with_a_capture() {
    let (front, back, tap) = (ipc("proxy-in"), ipc("proxy-out"), ipc("proxy-tap"));
    let mut proxy = omq(&[
        "proxy",
        "--frontend",
        &format!("pull,@{front}"),
        "--backend",
        &format!("push,@{back}"),
        "--capture",
        &format!("push,@{tap}"),
    ]);
    let mut pull = omq(&["pull", "--connect", &back, "--recv", "-n", "3"]);
    let mut captured = omq(&["pull", "--connect", &tap, "--recv", "-n", "3"]);
    let mut push = omq(&["push", "--connect", &front, "--send"]).input("a\nb\nc\n");
    assert_eq!(pull.lines(3), ["a", "b", "c"]);
    assert_eq!(captured.lines(3), ["a", "b", "c"]);
    pull.success();
    captured.success();
    push.success();
    assert_eq!(proxy.exited(), None, "the proxy runs until killed");
}

#[test]
fn a_libzmq_req_reaches_an_omq_rep_through_an_omq_broker() {
    let back = ipc("broker-back");
    let mut broker = omq(&[
        "proxy",
        "--frontend",
        &format!("router,@{ANY_TCP}"),
        "--backend",
        &format!("dealer,@{back}"),
    ]);
    let front = broker.bound();
    let mut rep = omq(&["rep", "--connect", &back, "--recv", "--echo", "-n", "2"]);
    let mut peer = libzmq();
    peer.socket(1, "REQ").unwrap();
    peer.connect(1, &front).unwrap();
    for body in [&b"ping"[..], b"pong"] {
        peer.send(1, &[body]).unwrap();
        assert_eq!(peer.recv(1, WAIT).unwrap(), vec![body.to_vec()]);
    }
    assert_eq!(rep.lines(2), ["ping", "pong"]);
    rep.success();
    assert_eq!(broker.exited(), None);
}

#[test]
fn proxy_arguments_are_checked() {
    for (args, expect) in [
        (
            vec![
                "proxy",
                "--frontend",
                "router",
                "--backend",
                "dealer,@tcp://*:1",
            ],
            "expected TYPE,@ENDPOINT",
        ),
        (
            vec![
                "proxy",
                "--frontend",
                "rooter,@tcp://*:1",
                "--backend",
                "dealer,tcp://h:1",
            ],
            "unknown socket type",
        ),
        (
            vec![
                "proxy",
                "--frontend",
                "router,@nope://x",
                "--backend",
                "dealer,tcp://h:1",
            ],
            "--frontend",
        ),
    ] {
        let (code, _, err) = run(&args, "");
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
    }
}

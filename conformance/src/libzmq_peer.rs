//! A real libzmq, driven from tests as a separate process.
//!
//! Interop tests need a reference implementation on the other end of the wire.
//! Rather than linking libzmq into the test binaries (unsafe FFI, a C build step
//! in every crate, a libzmq crash taking the whole test run down), each
//! [`LibzmqPeer`] is its own process: `zmq-peer/zmq_peer.c`, compiled on first
//! use by [`peer_binary`], and driven by line commands over stdin/stdout. Being
//! a process means a test can SIGKILL it ([`LibzmqPeer::kill`]) and start a new
//! one to exercise reconnects and fault handling, and a hang in libzmq becomes
//! a failed test (every reply has a deadline) instead of a stuck run.
//!
//! # Protocol
//!
//! One command per line, exactly one reply line per command. Binary data is
//! lower-case hex so any byte (NUL, newline, 0xff) survives a line protocol; an
//! empty part is `-`; wherever bytes are accepted, `str:TEXT` (no spaces) is
//! accepted too, and `null` passes a NULL pointer to `zmq_setsockopt`.
//! Replies are `ok [...]` or `err <ERRNO-NAME> <strerror text>`. The full
//! command list is at the top of `zmq_peer.c`; the typed helpers here cover it.
//!
//! ```text
//! ready libzmq 4.3.4 curve=1          (printed once at start)
//! socket 1 PUSH                    -> ok
//! bind 1 tcp://127.0.0.1:*         -> ok tcp://127.0.0.1:41235
//! send 1 - 00ff0a str:hi           -> ok
//! recv 2 1000                      -> ok - 00ff0a 6869   | err EAGAIN ...
//! event 1 1000                     -> ok LISTENING 13 tcp://127.0.0.1:41235
//! ```

use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

/// How long to wait for any reply beyond the command's own timeout. A peer
/// that says nothing for this long is stuck; the test fails rather than hangs.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long [`Drop`] waits after `exit` before it SIGKILLs the peer.
const EXIT_GRACE: Duration = Duration::from_secs(1);

/// Keep at most this much of the peer's stderr (the tail) for error messages.
const STDERR_TAIL: usize = 16 * 1024;

/// What to tell a person whose machine can't build the peer.
const INSTALL_HINT: &str = "install libzmq and its build tools with \
     `apt-get install libzmq3-dev pkg-config gcc` (Debian/Ubuntu), or run scripts/test.sh";

/// Everything that can go wrong while building or driving a peer.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum PeerError {
    /// A build prerequisite (gcc, pkg-config, libzmq headers) is missing.
    /// The message says what to install. Tests fail with it; they never skip.
    Setup(String),
    /// `gcc` ran but failed to build `zmq_peer.c`.
    Build {
        /// The command line that failed.
        command: String,
        /// What gcc printed.
        output: String,
    },
    /// An I/O error talking to or starting the peer process.
    Io {
        /// What we were doing.
        context: String,
        /// The underlying error.
        source: Arc<io::Error>,
    },
    /// The peer answered `err ERRNO TEXT` (libzmq refused the operation, or the
    /// command was malformed: `EINVAL`).
    Command {
        /// The command we sent (shortened if long).
        command: String,
        /// The errno name, e.g. `EINVAL`, `EHOSTUNREACH`, `EFSM`.
        errno: String,
        /// The rest of the line (libzmq's strerror text or the peer's reason).
        message: String,
    },
    /// `recv`/`event` found nothing within the caller's timeout (libzmq
    /// EAGAIN). Distinct from [`PeerError::Command`] so tests can expect it.
    Timeout {
        /// The command we sent.
        command: String,
    },
    /// The peer didn't answer within its deadline; it is stuck (e.g. blocked in
    /// a send) and the handle is unusable from now on.
    NoReply {
        /// The command we sent.
        command: String,
        /// How long we waited.
        waited: Duration,
        /// Tail of the peer's stderr.
        stderr: String,
    },
    /// The peer process is gone (exited, crashed or killed).
    Exited {
        /// The command we were running.
        command: String,
        /// Exit status if known.
        status: Option<String>,
        /// Tail of the peer's stderr (libzmq assertion messages end up here).
        stderr: String,
    },
    /// A reply that doesn't follow the protocol, or a command that can't be
    /// expressed in it (e.g. an argument containing whitespace).
    Protocol {
        /// The command we sent, or tried to.
        command: String,
        /// What was wrong.
        detail: String,
    },
}

impl PeerError {
    /// The errno name for [`PeerError::Command`] (`"EAGAIN"` for a timeout).
    pub fn errno(&self) -> Option<&str> {
        match self {
            PeerError::Command { errno, .. } => Some(errno),
            PeerError::Timeout { .. } => Some("EAGAIN"),
            _ => None,
        }
    }

    /// True for [`PeerError::Timeout`].
    pub fn is_timeout(&self) -> bool {
        matches!(self, PeerError::Timeout { .. })
    }

    fn io(context: impl Into<String>, source: io::Error) -> Self {
        PeerError::Io {
            context: context.into(),
            source: Arc::new(source),
        }
    }
}

impl fmt::Display for PeerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeerError::Setup(msg) => write!(f, "cannot build the libzmq peer: {msg}"),
            PeerError::Build { command, output } => {
                write!(f, "building the libzmq peer failed: `{command}`:\n{output}")
            }
            PeerError::Io { context, source } => write!(f, "libzmq peer: {context}: {source}"),
            PeerError::Command {
                command,
                errno,
                message,
            } => write!(f, "libzmq peer: `{command}` failed: {errno} {message}"),
            PeerError::Timeout { command } => {
                write!(f, "libzmq peer: `{command}` timed out (EAGAIN)")
            }
            PeerError::NoReply {
                command,
                waited,
                stderr,
            } => {
                write!(
                    f,
                    "libzmq peer: no reply to `{command}` within {waited:?}; the peer is stuck"
                )?;
                write_stderr(f, stderr)
            }
            PeerError::Exited {
                command,
                status,
                stderr,
            } => {
                write!(f, "libzmq peer exited during `{command}`")?;
                if let Some(status) = status {
                    write!(f, " ({status})")?;
                }
                write_stderr(f, stderr)
            }
            PeerError::Protocol { command, detail } => {
                write!(f, "libzmq peer: bad exchange for `{command}`: {detail}")
            }
        }
    }
}

fn write_stderr(f: &mut fmt::Formatter<'_>, stderr: &str) -> fmt::Result {
    let stderr = stderr.trim();
    if stderr.is_empty() {
        Ok(())
    } else {
        write!(f, "; its stderr:\n{stderr}")
    }
}

impl std::error::Error for PeerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PeerError::Io { source, .. } => Some(&**source),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------
// Building the peer

/// Path of the compiled peer, building it on first use in this process.
///
/// The binary lives in `<target dir>/zmq-peer/zmq_peer-<hash>`, named by a hash of
/// its source, its compiler flags and the libzmq it links, so any change to one of
/// them builds a new one. Each build writes a uniquely named temporary
/// file and renames it into place, so test processes running in parallel
/// (nextest runs one per test) never see a half-written binary.
///
/// Errors say what to install; callers should fail the test with them.
pub fn peer_binary() -> Result<PathBuf, PeerError> {
    static BINARY: OnceLock<Result<PathBuf, PeerError>> = OnceLock::new();
    BINARY.get_or_init(|| build_peer(Flavour::System)).clone()
}

/// Path of the draft peer: the same source with libzmq's draft API (CLIENT/SERVER,
/// RADIO/DISH, SCATTER/GATHER, PEER/CHANNEL), linked statically against the libzmq 4.3.5 that
/// this crate's build script compiled with drafts from the `zeromq-src` crate.
pub fn draft_peer_binary() -> Result<PathBuf, PeerError> {
    static BINARY: OnceLock<Result<PathBuf, PeerError>> = OnceLock::new();
    BINARY.get_or_init(|| build_peer(Flavour::Draft)).clone()
}

/// Which libzmq a peer runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavour {
    /// The system's libzmq (Debian's, found with pkg-config).
    System,
    /// libzmq with its draft API, built by `build.rs`.
    Draft,
}

fn source_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("zmq-peer")
        .join("zmq_peer.c")
}

/// The cargo target directory: `$CARGO_TARGET_DIR`, else the ancestor of the
/// running test binary that holds cargo's `CACHEDIR.TAG`, else
/// `<workspace>/target`.
fn target_dir() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")))
        .to_path_buf();
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        let dir = PathBuf::from(dir);
        return if dir.is_absolute() {
            dir
        } else {
            workspace.join(dir)
        };
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe
            .ancestors()
            .skip(1)
            .find(|d| d.join("CACHEDIR.TAG").is_file())
        {
            return dir.to_path_buf();
        }
    }
    workspace.join("target")
}

fn build_peer(flavour: Flavour) -> Result<PathBuf, PeerError> {
    let source = source_path();
    let text = std::fs::read(&source).map_err(|e| {
        PeerError::Setup(format!(
            "the peer source {} is missing or unreadable: {e}",
            source.display()
        ))
    })?;
    let dir = target_dir().join("zmq-peer");
    let (name, flags) = match flavour {
        Flavour::System => ("zmq_peer", pkg_config_flags()?),
        Flavour::Draft => ("zmq_peer_draft", draft_flags()),
    };
    // The binary is named by what went into it: the source, the flags and the library it
    // links (its path, size and modification time), so an edited source or a reinstalled
    // libzmq gives a new binary whatever the clocks say.
    let library = linked_library(flavour)?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&text, &mut h);
    std::hash::Hash::hash(&flags, &mut h);
    std::hash::Hash::hash(&library_identity(&library), &mut h);
    let binary = dir.join(format!("{name}-{:016x}", std::hash::Hasher::finish(&h)));
    if binary.is_file() {
        return Ok(binary);
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| PeerError::io(format!("creating {}", dir.display()), e))?;

    static BUILD_COUNTER: AtomicU64 = AtomicU64::new(0);
    let tmp = dir.join(format!(
        "{name}.tmp.{}.{}",
        std::process::id(),
        BUILD_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let mut gcc = Command::new("gcc");
    gcc.args(["-O2", "-Wall", "-o"])
        .arg(&tmp)
        .arg(&source)
        .args(&flags)
        .arg("-lpthread");
    let command = format!("{gcc:?}");
    let output = match gcc.output() {
        Ok(output) => output,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(PeerError::Setup(format!("gcc not found; {INSTALL_HINT}")))
        }
        Err(e) => return Err(PeerError::io("running gcc", e)),
    };
    if !output.status.success() {
        let _ = std::fs::remove_file(&tmp);
        let mut text = String::from_utf8_lossy(&output.stderr).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stdout));
        if text.contains("zmq.h") {
            text.push_str(&format!("\n(libzmq headers missing? {INSTALL_HINT})"));
        }
        return Err(PeerError::Build {
            command,
            output: text,
        });
    }
    std::fs::rename(&tmp, &binary).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        PeerError::io(format!("moving the peer into {}", binary.display()), e)
    })?;
    Ok(binary)
}

/// The libzmq a peer flavour runs on: the shared library pkg-config names (resolved through
/// its symlinks), or the static one the build script made.
fn linked_library(flavour: Flavour) -> Result<PathBuf, PeerError> {
    match flavour {
        Flavour::Draft => Ok(Path::new(env!("OMQ_DRAFT_LIBZMQ")).join("lib/libzmq.a")),
        Flavour::System => {
            let out = Command::new("pkg-config")
                .args(["--variable=libdir", "libzmq"])
                .output()
                .map_err(|e| PeerError::Setup(format!("pkg-config: {e}; {INSTALL_HINT}")))?;
            let dir = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            let so = Path::new(&dir).join("libzmq.so");
            std::fs::canonicalize(&so)
                .map_err(|e| PeerError::Setup(format!("{}: {e}; {INSTALL_HINT}", so.display())))
        }
    }
}

/// What identifies a library file without reading it all: path, size, modification time.
fn library_identity(path: &Path) -> (PathBuf, u64, Option<SystemTime>) {
    let meta = std::fs::metadata(path).ok();
    (
        path.to_path_buf(),
        meta.as_ref().map_or(0, |m| m.len()),
        meta.and_then(|m| m.modified().ok()),
    )
}

/// Checks, from the running peer's memory map, that it runs on the libzmq it was built for:
/// the system's shared library, or (the draft peer, linked statically) no shared libzmq at
/// all. A peer that silently ran on another libzmq would make every interop test prove
/// nothing.
fn check_linkage(pid: u32, flavour: Flavour) -> Result<(), PeerError> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .map_err(|e| PeerError::io("reading the peer's memory map", e))?;
    let mapped: Vec<&str> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| p.contains("libzmq"))
        .collect();
    let ok = match flavour {
        Flavour::Draft => mapped.is_empty(),
        Flavour::System => {
            let want = linked_library(flavour)?;
            !mapped.is_empty() && mapped.iter().all(|p| Path::new(p) == want)
        }
    };
    if ok {
        Ok(())
    } else {
        Err(PeerError::Setup(format!(
            "the {flavour:?} peer runs on {mapped:?}, not the libzmq it was built for"
        )))
    }
}

/// Compiler flags for the draft peer: the draft API on, the headers and static library the
/// build script made, and what a static C++ libzmq needs.
fn draft_flags() -> Vec<String> {
    let out = Path::new(env!("OMQ_DRAFT_LIBZMQ"));
    vec![
        "-DZMQ_BUILD_DRAFT_API".into(),
        format!("-I{}", out.join("source").join("include").display()),
        out.join("lib").join("libzmq.a").display().to_string(),
        "-lstdc++".into(),
    ]
}

fn pkg_config_flags() -> Result<Vec<String>, PeerError> {
    let output = match Command::new("pkg-config")
        .args(["--cflags", "--libs", "libzmq"])
        .output()
    {
        Ok(output) => output,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(PeerError::Setup(format!(
                "pkg-config not found; {INSTALL_HINT}"
            )))
        }
        Err(e) => return Err(PeerError::io("running pkg-config", e)),
    };
    if !output.status.success() {
        return Err(PeerError::Setup(format!(
            "pkg-config does not know libzmq ({}); {INSTALL_HINT}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect())
}

// ---------------------------------------------------------------------------
// Wire encoding

/// Encodes bytes as one protocol token: lower-case hex, or `-` when empty.
pub fn encode_part(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    if bytes.is_empty() {
        return "-".to_owned();
    }
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}

/// Decodes one protocol token (`-`, hex, or `str:TEXT`) into bytes.
pub fn decode_part(token: &str) -> Option<Vec<u8>> {
    if token == "-" {
        return Some(Vec::new());
    }
    if let Some(text) = token.strip_prefix("str:") {
        return Some(text.as_bytes().to_vec());
    }
    if token.is_empty() || token.len() % 2 != 0 {
        return None;
    }
    let nibble = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    token
        .as_bytes()
        .chunks(2)
        .map(|pair| Some(nibble(pair[0])? << 4 | nibble(pair[1])?))
        .collect()
}

/// A value for [`LibzmqPeer::setsockopt`]: integers for integer options, bytes
/// (sent as hex) for binary and string options, or `Null` for libzmq's
/// "NULL pointer, length 0" (which resets e.g. `PLAIN_USERNAME`).
///
/// Strings convert to their bytes, so a Z85 key or a PLAIN password can be
/// passed as `&str`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptValue {
    /// A decimal integer option.
    Int(i64),
    /// A binary or string option.
    Bytes(Vec<u8>),
    /// NULL with length 0.
    Null,
}

impl OptValue {
    fn token(&self) -> String {
        match self {
            OptValue::Int(v) => v.to_string(),
            OptValue::Bytes(b) => encode_part(b),
            OptValue::Null => "null".to_owned(),
        }
    }
}

impl From<i32> for OptValue {
    fn from(v: i32) -> Self {
        OptValue::Int(v.into())
    }
}

impl From<i64> for OptValue {
    fn from(v: i64) -> Self {
        OptValue::Int(v)
    }
}

impl From<bool> for OptValue {
    fn from(v: bool) -> Self {
        OptValue::Int(v.into())
    }
}

impl From<&[u8]> for OptValue {
    fn from(v: &[u8]) -> Self {
        OptValue::Bytes(v.to_vec())
    }
}

impl<const N: usize> From<&[u8; N]> for OptValue {
    fn from(v: &[u8; N]) -> Self {
        OptValue::Bytes(v.to_vec())
    }
}

impl From<Vec<u8>> for OptValue {
    fn from(v: Vec<u8>) -> Self {
        OptValue::Bytes(v)
    }
}

impl From<&str> for OptValue {
    fn from(v: &str) -> Self {
        OptValue::Bytes(v.as_bytes().to_vec())
    }
}

/// A message as the draft peer received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DraftMessage {
    /// Its routing id (SERVER, PEER), 0 when it has none.
    pub rid: u32,
    /// Its group (DISH), if any.
    pub group: Option<Vec<u8>>,
    /// Its one part.
    pub part: Vec<u8>,
}

// ---------------------------------------------------------------------------
// The peer process

/// One libzmq process, owned by a test.
///
/// Sockets inside it are named by small integer ids the test chooses. Every
/// call waits for the peer's reply (with a deadline), so calls are ordered
/// with respect to libzmq exactly as written. Dropping the handle asks the
/// peer to exit (closing sockets with linger 0) and SIGKILLs it if it doesn't
/// within a second.
#[derive(Debug)]
pub struct LibzmqPeer {
    child: Child,
    stdin: Option<ChildStdin>,
    replies: Receiver<io::Result<String>>,
    stderr: Arc<Mutex<String>>,
    version: String,
    curve: bool,
    /// Set once a reply went missing: the reply stream can no longer be
    /// matched to commands.
    broken: Option<String>,
    killed: bool,
}

impl LibzmqPeer {
    /// Builds the peer if needed, starts it, and checks its `ready` line.
    pub fn spawn() -> Result<Self, PeerError> {
        Self::spawn_binary(peer_binary()?, Flavour::System)
    }

    /// The draft peer ([`draft_peer_binary`]): libzmq 4.3.5 with its draft API, which adds
    /// the `sendx`, `recvx`, `connectpeer`, `join` and `leave` commands.
    pub fn spawn_draft() -> Result<Self, PeerError> {
        Self::spawn_binary(draft_peer_binary()?, Flavour::Draft)
    }

    fn spawn_binary(binary: PathBuf, flavour: Flavour) -> Result<Self, PeerError> {
        // Nothing of the test's environment may swap libzmq under the peer.
        let mut child = Command::new(&binary)
            .env_remove("LD_PRELOAD")
            .env_remove("LD_LIBRARY_PATH")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| PeerError::io(format!("starting {}", binary.display()), e))?;

        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, replies) = mpsc::channel();
        thread::Builder::new()
            .name("zmq-peer-stdout".into())
            .spawn(move || {
                let mut reader = BufReader::new(stdout);
                loop {
                    let mut line = String::new();
                    match reader.read_line(&mut line) {
                        Ok(0) => break,
                        Ok(_) => {
                            let line = line.trim_end_matches(['\n', '\r']).to_owned();
                            if tx.send(Ok(line)).is_err() {
                                break;
                            }
                        }
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            break;
                        }
                    }
                }
            })
            .map_err(|e| PeerError::io("starting the stdout reader thread", e))?;

        let stderr = Arc::new(Mutex::new(String::new()));
        let mut child_stderr = child.stderr.take().expect("stderr is piped");
        let sink = Arc::clone(&stderr);
        thread::Builder::new()
            .name("zmq-peer-stderr".into())
            .spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = child_stderr.read(&mut buf) {
                    let mut tail = sink.lock().unwrap_or_else(|p| p.into_inner());
                    tail.push_str(&String::from_utf8_lossy(&buf[..n]));
                    if tail.len() > STDERR_TAIL {
                        let mut cut = tail.len() - STDERR_TAIL;
                        while !tail.is_char_boundary(cut) {
                            cut += 1;
                        }
                        tail.drain(..cut);
                    }
                }
            })
            .map_err(|e| PeerError::io("starting the stderr reader thread", e))?;

        let stdin = child.stdin.take();
        let mut peer = LibzmqPeer {
            child,
            stdin,
            replies,
            stderr,
            version: String::new(),
            curve: false,
            broken: None,
            killed: false,
        };
        let ready = peer.read_reply("(startup)", REPLY_TIMEOUT)?;
        let bad = |detail: &str| PeerError::Protocol {
            command: "(startup)".into(),
            detail: format!("{detail}: {ready:?}"),
        };
        let mut words = ready.split_whitespace();
        if words.next() != Some("ready") || words.next() != Some("libzmq") {
            return Err(bad("expected `ready libzmq X.Y.Z curve=N`"));
        }
        peer.version = words
            .next()
            .ok_or_else(|| bad("no version in the ready line"))?
            .to_owned();
        peer.curve = match words.next() {
            Some("curve=1") => true,
            Some("curve=0") => false,
            _ => return Err(bad("no curve=0|1 in the ready line")),
        };
        // Once it said ready, libzmq is loaded: check it is the one the peer was built for.
        check_linkage(peer.pid(), flavour)?;
        Ok(peer)
    }

    /// libzmq's version as reported by `zmq_version`, e.g. `"4.3.4"`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Whether this libzmq was built with CURVE (`zmq_has("curve")`).
    pub fn has_curve(&self) -> bool {
        self.curve
    }

    /// The peer's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends one raw command line and returns the text after `ok` (empty if
    /// none). An `err` reply becomes [`PeerError::Command`].
    pub fn cmd(&mut self, line: &str) -> Result<String, PeerError> {
        self.cmd_within(line, REPLY_TIMEOUT)
    }

    fn cmd_within(&mut self, line: &str, deadline: Duration) -> Result<String, PeerError> {
        let shown = shorten(line);
        if line.contains(['\n', '\r']) {
            return Err(PeerError::Protocol {
                command: shown,
                detail: "a command must be a single line".into(),
            });
        }
        if let Some(reason) = &self.broken {
            return Err(PeerError::Protocol {
                command: shown,
                detail: format!("the peer is unusable: {reason}"),
            });
        }
        let written = match self.stdin.as_mut() {
            Some(stdin) => stdin
                .write_all(line.as_bytes())
                .and_then(|()| stdin.write_all(b"\n"))
                .and_then(|()| stdin.flush()),
            None => Err(io::ErrorKind::BrokenPipe.into()),
        };
        if let Err(e) = written {
            return Err(if e.kind() == io::ErrorKind::BrokenPipe {
                self.exited(shown)
            } else {
                PeerError::io(format!("writing `{shown}`"), e)
            });
        }
        let reply = self.read_reply(&shown, deadline)?;
        if reply == "ok" {
            return Ok(String::new());
        }
        if let Some(rest) = reply.strip_prefix("ok ") {
            return Ok(rest.to_owned());
        }
        if let Some(rest) = reply.strip_prefix("err ") {
            let (errno, message) = rest.split_once(' ').unwrap_or((rest, ""));
            return Err(PeerError::Command {
                command: shown,
                errno: errno.to_owned(),
                message: message.to_owned(),
            });
        }
        Err(PeerError::Protocol {
            command: shown,
            detail: format!("unexpected reply {:?}", shorten(&reply)),
        })
    }

    fn read_reply(&mut self, shown: &str, deadline: Duration) -> Result<String, PeerError> {
        match self.replies.recv_timeout(deadline) {
            Ok(Ok(line)) => Ok(line),
            Ok(Err(e)) => {
                self.broken = Some(format!("reading its stdout failed: {e}"));
                Err(PeerError::io(format!("reading the reply to `{shown}`"), e))
            }
            Err(RecvTimeoutError::Timeout) => {
                self.broken = Some(format!("no reply to `{shown}` within {deadline:?}"));
                Err(PeerError::NoReply {
                    command: shown.to_owned(),
                    waited: deadline,
                    stderr: self.stderr_tail(),
                })
            }
            Err(RecvTimeoutError::Disconnected) => Err(self.exited(shown.to_owned())),
        }
    }

    fn exited(&mut self, command: String) -> PeerError {
        // Give the process a moment to be reaped so the status is known.
        let start = Instant::now();
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break Some(describe(status)),
                Ok(None) if start.elapsed() < Duration::from_millis(200) => {
                    thread::sleep(Duration::from_millis(5));
                }
                _ => break None,
            }
        };
        // The stderr reader may still be draining; give it a moment too.
        thread::sleep(Duration::from_millis(20));
        self.broken = Some("the process exited".into());
        PeerError::Exited {
            command,
            status,
            stderr: self.stderr_tail(),
        }
    }

    fn stderr_tail(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// `socket ID TYPE`: creates a socket (TYPE as in libzmq without `ZMQ_`,
    /// e.g. `"ROUTER"`).
    pub fn socket(&mut self, id: u32, kind: &str) -> Result<(), PeerError> {
        self.cmd(&format!("socket {id} {kind}")).map(drop)
    }

    /// `setsockopt ID NAME VALUE` (NAME without `ZMQ_`, e.g. `"SNDHWM"`).
    pub fn setsockopt(
        &mut self,
        id: u32,
        name: &str,
        value: impl Into<OptValue>,
    ) -> Result<(), PeerError> {
        let value = value.into().token();
        self.cmd(&format!("setsockopt {id} {name} {value}"))
            .map(drop)
    }

    /// `getsockopt ID NAME`, the raw token: decimal for integers, hex (or `-`)
    /// for binary options, `str:TEXT` for strings and CURVE keys (Z85), plain
    /// text for `LAST_ENDPOINT`.
    pub fn getsockopt(&mut self, id: u32, name: &str) -> Result<String, PeerError> {
        self.cmd(&format!("getsockopt {id} {name}"))
    }

    /// An integer option.
    pub fn getsockopt_int(&mut self, id: u32, name: &str) -> Result<i64, PeerError> {
        let token = self.getsockopt(id, name)?;
        token.parse().map_err(|_| PeerError::Protocol {
            command: format!("getsockopt {id} {name}"),
            detail: format!("not an integer: {token:?}"),
        })
    }

    /// A binary or string option, decoded to bytes (e.g. `ROUTING_ID`).
    pub fn getsockopt_bytes(&mut self, id: u32, name: &str) -> Result<Vec<u8>, PeerError> {
        let token = self.getsockopt(id, name)?;
        decode_part(&token).ok_or_else(|| PeerError::Protocol {
            command: format!("getsockopt {id} {name}"),
            detail: format!("not hex, - or str:TEXT: {token:?}"),
        })
    }

    /// `bind ID ENDPOINT`; returns the resolved endpoint (`LAST_ENDPOINT`), so
    /// `tcp://127.0.0.1:*` comes back with the real port.
    pub fn bind(&mut self, id: u32, endpoint: &str) -> Result<String, PeerError> {
        self.cmd(&format!("bind {id} {endpoint}"))
    }

    /// `connect ID ENDPOINT`.
    pub fn connect(&mut self, id: u32, endpoint: &str) -> Result<(), PeerError> {
        self.cmd(&format!("connect {id} {endpoint}")).map(drop)
    }

    /// `unbind ID ENDPOINT`.
    pub fn unbind(&mut self, id: u32, endpoint: &str) -> Result<(), PeerError> {
        self.cmd(&format!("unbind {id} {endpoint}")).map(drop)
    }

    /// `disconnect ID ENDPOINT`.
    pub fn disconnect(&mut self, id: u32, endpoint: &str) -> Result<(), PeerError> {
        self.cmd(&format!("disconnect {id} {endpoint}")).map(drop)
    }

    /// Sends `parts` as one multipart message, blocking as libzmq does (set
    /// `SNDTIMEO` if it may block; a peer blocked for [`REPLY_TIMEOUT`] fails
    /// the test with [`PeerError::NoReply`]).
    pub fn send(&mut self, id: u32, parts: &[&[u8]]) -> Result<(), PeerError> {
        self.cmd(&send_line(id, false, parts)).map(drop)
    }

    /// Like [`send`](Self::send) with `ZMQ_DONTWAIT`: `Ok(false)` when libzmq
    /// says EAGAIN (HWM reached, no peer), `Ok(true)` when sent.
    pub fn try_send(&mut self, id: u32, parts: &[&[u8]]) -> Result<bool, PeerError> {
        match self.cmd(&send_line(id, true, parts)) {
            Ok(_) => Ok(true),
            Err(e) if e.errno() == Some("EAGAIN") => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Receives one whole multipart message, waiting up to `timeout`.
    /// Nothing arriving is [`PeerError::Timeout`].
    pub fn recv(&mut self, id: u32, timeout: Duration) -> Result<Vec<Vec<u8>>, PeerError> {
        let line = format!("recv {id} {}", millis(timeout));
        let reply = self.timed(&line, timeout)?;
        decode_parts(&line, reply.split_whitespace())
    }

    /// Like [`recv`](Self::recv), also returning the message property
    /// `property` (`zmq_msg_gets`, e.g. `"User-Id"`, `"Socket-Type"`,
    /// `"Peer-Address"`), `None` if the message doesn't have it.
    pub fn recv_meta(
        &mut self,
        id: u32,
        timeout: Duration,
        property: &str,
    ) -> Result<(Option<String>, Vec<Vec<u8>>), PeerError> {
        let line = format!("recvmeta {id} {} {property}", millis(timeout));
        let reply = self.timed(&line, timeout)?;
        let mut tokens = reply.split_whitespace();
        let meta = match tokens.next() {
            Some("-") => None,
            Some(token) => {
                let bytes = decode_part(token).ok_or_else(|| PeerError::Protocol {
                    command: shorten(&line),
                    detail: format!("bad property token {token:?}"),
                })?;
                Some(String::from_utf8_lossy(&bytes).into_owned())
            }
            None => {
                return Err(PeerError::Protocol {
                    command: shorten(&line),
                    detail: "empty reply".into(),
                })
            }
        };
        Ok((meta, decode_parts(&line, tokens)?))
    }

    /// `monitor ID`: starts `zmq_socket_monitor` for all events; read them
    /// with [`event`](Self::event).
    pub fn monitor(&mut self, id: u32) -> Result<(), PeerError> {
        self.cmd(&format!("monitor {id}")).map(drop)
    }

    /// The next monitor event of socket `id` as `(NAME, value, endpoint)`,
    /// e.g. `("LISTENING", 13, "tcp://127.0.0.1:5555")`; NAME is libzmq's
    /// `ZMQ_EVENT_` suffix, value its fd/errno/reconnect interval/protocol
    /// error code, endpoint empty when libzmq gave none. Nothing within
    /// `timeout` is [`PeerError::Timeout`]. Still readable after
    /// [`close`](Self::close), for the final CLOSED / MONITOR_STOPPED.
    pub fn event(
        &mut self,
        id: u32,
        timeout: Duration,
    ) -> Result<(String, i64, String), PeerError> {
        let line = format!("event {id} {}", millis(timeout));
        let reply = self.timed(&line, timeout)?;
        let bad = || PeerError::Protocol {
            command: line.clone(),
            detail: format!("expected `NAME VALUE ENDPOINT`, got {reply:?}"),
        };
        let mut words = reply.split_whitespace();
        let name = words.next().ok_or_else(bad)?.to_owned();
        let value = words.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?;
        let endpoint = match words.next().ok_or_else(bad)? {
            "-" => String::new(),
            ep => ep.to_owned(),
        };
        Ok((name, value, endpoint))
    }

    /// Draft peer: `sendx ID RID GROUP PART`: one part, to routing id `rid` (0: none), in
    /// `group` (None: none).
    pub fn sendx(
        &mut self,
        id: u32,
        rid: u32,
        group: Option<&[u8]>,
        part: &[u8],
    ) -> Result<(), PeerError> {
        let group = group.map_or_else(|| "-".to_owned(), encode_part);
        self.cmd(&format!("sendx {id} {rid} {group} {}", encode_part(part)))
            .map(drop)
    }

    /// Draft peer: receives one message with its routing id (0: none) and group.
    pub fn recvx(&mut self, id: u32, timeout: Duration) -> Result<DraftMessage, PeerError> {
        let line = format!("recvx {id} {}", timeout.as_millis());
        let reply = self.timed(&line, timeout)?;
        let bad = || PeerError::Protocol {
            command: line.clone(),
            detail: format!("expected `RID GROUP PART`: {reply:?}"),
        };
        let mut words = reply.split_whitespace();
        let rid = words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
        let group = match words.next().ok_or_else(bad)? {
            "-" => None,
            g => Some(decode_part(g).ok_or_else(bad)?),
        };
        let part = decode_part(words.next().ok_or_else(bad)?).ok_or_else(bad)?;
        Ok(DraftMessage { rid, group, part })
    }

    /// Draft peer: `zmq_connect_peer`; the routing id of the peer it dials.
    pub fn connect_peer(&mut self, id: u32, endpoint: &str) -> Result<u32, PeerError> {
        let line = format!("connectpeer {id} {endpoint}");
        let reply = self.cmd(&line)?;
        reply.trim().parse().map_err(|_| PeerError::Protocol {
            command: line,
            detail: format!("expected a routing id: {reply:?}"),
        })
    }

    /// Draft peer: DISH joins (`on`) or leaves a group.
    pub fn join(&mut self, id: u32, group: &[u8], on: bool) -> Result<(), PeerError> {
        let verb = if on { "join" } else { "leave" };
        self.cmd(&format!("{verb} {id} {}", encode_part(group)))
            .map(drop)
    }

    /// `close ID` (linger 0). The id can then be reused.
    pub fn close(&mut self, id: u32) -> Result<(), PeerError> {
        self.cmd(&format!("close {id}")).map(drop)
    }

    /// SIGKILLs the peer at once (no linger, no goodbye on the wire) and reaps
    /// it. Later commands fail with [`PeerError::Exited`].
    pub fn kill(&mut self) -> Result<(), PeerError> {
        self.killed = true;
        match self.child.kill() {
            Ok(()) => {}
            // Already exited: nothing to kill.
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => {}
            Err(e) => return Err(PeerError::io("killing the peer", e)),
        }
        self.child
            .wait()
            .map_err(|e| PeerError::io("reaping the peer", e))?;
        self.stdin = None;
        Ok(())
    }

    /// A command whose own timeout adds to the reply deadline; EAGAIN from it
    /// means "nothing within the timeout".
    fn timed(&mut self, line: &str, timeout: Duration) -> Result<String, PeerError> {
        match self.cmd_within(line, REPLY_TIMEOUT.saturating_add(timeout)) {
            Err(PeerError::Command { command, errno, .. }) if errno == "EAGAIN" => {
                Err(PeerError::Timeout { command })
            }
            other => other,
        }
    }
}

impl Drop for LibzmqPeer {
    fn drop(&mut self) {
        if self.killed {
            return;
        }
        if let Some(mut stdin) = self.stdin.take() {
            // `exit` closes every socket with linger 0; closing stdin (EOF)
            // asks the same if the peer is between commands anyway.
            let _ = stdin.write_all(b"exit\n").and_then(|()| stdin.flush());
        }
        let start = Instant::now();
        while start.elapsed() < EXIT_GRACE {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) => thread::sleep(Duration::from_millis(5)),
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn send_line(id: u32, dontwait: bool, parts: &[&[u8]]) -> String {
    let mut line = format!("send {id}");
    if dontwait {
        line.push_str(" dontwait");
    }
    for part in parts {
        line.push(' ');
        line.push_str(&encode_part(part));
    }
    line
}

fn decode_parts<'a>(
    line: &str,
    tokens: impl Iterator<Item = &'a str>,
) -> Result<Vec<Vec<u8>>, PeerError> {
    tokens
        .map(|token| {
            decode_part(token).ok_or_else(|| PeerError::Protocol {
                command: shorten(line),
                detail: format!("bad message part {:?}", shorten(token)),
            })
        })
        .collect()
}

/// Milliseconds for the peer's timeouts (it takes a C int).
fn millis(timeout: Duration) -> u128 {
    timeout.as_millis().min(i32::MAX as u128)
}

/// Commands can carry megabytes of hex; keep error messages readable.
fn shorten(text: &str) -> String {
    const MAX: usize = 200;
    if text.len() <= MAX {
        return text.to_owned();
    }
    let mut cut = MAX;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}... ({} bytes)", &text[..cut], text.len())
}

fn describe(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("killed by signal {signal}");
        }
    }
    status.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_round_trip_through_hex() {
        for bytes in [&b""[..], b"\x00", b"\xff\x0a\x00abc", b"hello world"] {
            assert_eq!(decode_part(&encode_part(bytes)).as_deref(), Some(bytes));
        }
        assert_eq!(encode_part(b""), "-");
        assert_eq!(encode_part(b"\x00\xff\x0a"), "00ff0a");
        assert_eq!(decode_part("str:abc").as_deref(), Some(&b"abc"[..]));
        assert_eq!(decode_part("0A").as_deref(), Some(&b"\n"[..]));
        assert_eq!(decode_part("abc"), None);
        assert_eq!(decode_part("zz"), None);
        assert_eq!(decode_part(""), None);
    }

    #[test]
    fn option_values_become_tokens() {
        assert_eq!(OptValue::from(5).token(), "5");
        assert_eq!(OptValue::from(-1i64).token(), "-1");
        assert_eq!(OptValue::from(true).token(), "1");
        assert_eq!(OptValue::from(b"A\x00").token(), "4100");
        assert_eq!(OptValue::from("").token(), "-");
        assert_eq!(OptValue::Null.token(), "null");
    }

    #[test]
    fn long_commands_are_shortened_in_errors() {
        let long = "send 1 ".to_owned() + &"ab".repeat(1000);
        let short = shorten(&long);
        assert!(short.len() < 260, "{short}");
        assert!(short.ends_with("(2007 bytes)"), "{short}");
    }
}

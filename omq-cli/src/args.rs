//! Command-line arguments: clap's parse, then the checks that turn it into a [`Config`].
//!
//! Every mistake becomes a [`Failure::Usage`] (one line on stderr, exit 2); clap's own
//! multi-line errors are folded into one line too.

use std::ffi::OsString;
use std::time::Duration;

use bytes::Bytes;
use clap::error::ErrorKind;
use clap::{ArgGroup, Parser, Subcommand};
use omq_core::mechanism::{generate_keypair, CurveKeyPair, CurvePublicKey, CurveSecretKey};
use omq_core::{MechanismConfig, SocketType};

use crate::backend::Backend;
use crate::Failure;

const EXAMPLES: &str = "\
Examples:
  omq pull --bind tcp://127.0.0.1:5555 --recv &
  seq 5 | omq push --connect tcp://127.0.0.1:5555 --send

  omq rep --bind ipc:///tmp/echo.sock --recv --echo &
  echo hello | omq req --connect ipc:///tmp/echo.sock --send      # prints hello

  omq sub --connect tcp://127.0.0.1:5556 --recv --subscribe weather.
  omq keygen                                                         # a CURVE keypair
  omq proxy --frontend router,@tcp://*:5559 --backend dealer,@tcp://*:5560  # a broker

Exit status: 0 done (end of input, or COUNT messages), 1 timeout or runtime failure,
2 bad arguments or endpoints.";

/// A zmqcat: ZeroMQ sockets from the shell.
///
/// With --send, each line of standard input is one message; with --recv, each message received
/// is printed on one line. The socket binds and connects to every endpoint given (tcp://host:port,
/// ipc://path, ipc://@abstract, and the compressed lz4+tcp://host:port and zstd+tcp://host:port,
/// which talk to omq.rs and pyomq).
#[derive(Parser, Debug)]
#[command(
    name = "omq",
    version,
    override_usage = "omq TYPE (--bind EP | --connect EP)... (--send | --recv) [OPTIONS]\n       omq keygen\n       omq proxy --frontend TYPE,[@]EP --backend TYPE,[@]EP [--capture TYPE,[@]EP]",
    after_help = EXAMPLES,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    disable_help_subcommand = true,
    arg_required_else_help = true,
    group(ArgGroup::new("direction").args(["send", "recv"]).required(true)),
    group(ArgGroup::new("endpoints").args(["bind", "connect"]).required(true).multiple(true)),
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Sub>,

    /// Socket type (any case): push, pull, req, rep, dealer, router, pub, sub, xpub, xsub, pair
    #[arg(value_name = "TYPE", required = true)]
    socket_type: Option<String>,

    /// Bind to this endpoint (repeatable). A tcp port of 0 or * picks a free port, printed on
    /// stderr.
    #[arg(long, value_name = "EP")]
    bind: Vec<String>,

    /// Connect to this endpoint (repeatable); works before the peer binds.
    #[arg(long, value_name = "EP")]
    connect: Vec<String>,

    /// Send each line of stdin as one message; REQ and CLIENT print each reply. At end of input the
    /// socket is closed, flushing within --linger.
    #[arg(long)]
    send: bool,

    /// Print each message received on one line (parts joined by --delim, default a tab),
    /// bytes as received.
    #[arg(long)]
    recv: bool,

    /// Stop after COUNT messages (sent, or received) and exit 0.
    #[arg(short = 'n', long = "count", value_name = "COUNT")]
    count: Option<u64>,

    /// Runtime to run on: tokio (default), compio, monoio or glommio.
    #[arg(long, value_name = "NAME", default_value = "tokio")]
    backend: String,

    /// SUB/XSUB: receive only messages starting with PREFIX (repeatable; default: everything).
    #[arg(long, value_name = "PREFIX", allow_hyphen_values = true)]
    subscribe: Vec<OsString>,

    /// RADIO: send each line to GROUP (at most 255 bytes).
    #[arg(long, value_name = "GROUP")]
    group: Option<OsString>,

    /// DISH: receive the messages of GROUP (repeatable; at least one). Each prints as the
    /// group, the delimiter, then the body.
    #[arg(long = "join", value_name = "GROUP")]
    join_groups: Vec<OsString>,

    /// REP/ROUTER/SERVER with --recv: reply to each request with the request itself.
    #[arg(long)]
    echo: bool,

    /// Split each input line into message parts on STR, and join parts with it on output
    /// (default: input lines are single-part; output parts are joined with a tab). The escapes
    /// \t \n \r \0 \\ \xHH are understood.
    #[arg(long, value_name = "STR", allow_hyphen_values = true)]
    delim: Option<OsString>,

    /// With --recv: exit 1 if no message arrives within SECS (per message). With --send: exit
    /// 1 if a send cannot go out, or a REQ's reply does not come, within SECS.
    #[arg(long, value_name = "SECS")]
    timeout: Option<f64>,

    /// How long closing at the end may spend flushing unsent messages (default: until sent).
    #[arg(long, value_name = "MS")]
    linger: Option<u64>,

    /// CURVE server with this secret key (40 Z85 characters, from `omq keygen`); its public
    /// key is what clients pass to --curve-serverkey. Clients with any key are accepted.
    #[arg(
        long,
        value_name = "SECRETKEY",
        allow_hyphen_values = true,
        help_heading = "Security",
        conflicts_with_all = ["curve_serverkey", "plain", "plain_server"]
    )]
    curve_server: Option<String>,

    /// CURVE client of the server with this public key (40 Z85 characters).
    #[arg(
        long,
        value_name = "PUBKEY",
        allow_hyphen_values = true,
        help_heading = "Security",
        conflicts_with_all = ["plain", "plain_server"]
    )]
    curve_serverkey: Option<String>,

    /// CURVE client's own secret key (default: a fresh key for this run).
    #[arg(
        long,
        value_name = "SECRET",
        allow_hyphen_values = true,
        help_heading = "Security",
        requires = "curve_serverkey"
    )]
    curve_secretkey: Option<String>,

    /// PLAIN client logging in as USER with password PASS (split at the first ':').
    #[arg(
        long,
        value_name = "USER:PASS",
        help_heading = "Security",
        conflicts_with = "plain_server"
    )]
    plain: Option<String>,

    /// PLAIN server. It accepts ANY username and password (no authenticator yet): PLAIN
    /// only tells the peer who you claim to be, and sends the password in clear.
    #[arg(long, help_heading = "Security")]
    plain_server: bool,

    /// lz4+tcp:// and zstd+tcp:// endpoints: ship this dictionary (a file of 1 to 8192 bytes;
    /// raw bytes for lz4, a ZDICT blob from `zstd --train` for zstd) and compress with it.
    #[arg(long, value_name = "FILE", help_heading = "Compression")]
    compression_dict: Option<std::path::PathBuf>,

    /// lz4+tcp:// and zstd+tcp:// endpoints: train a dictionary from the first messages sent
    /// and ship it.
    #[arg(long, help_heading = "Compression")]
    compression_auto_train: bool,

    /// zstd+tcp:// endpoints: compression level, -7 to 4 (default 1).
    #[arg(
        long,
        value_name = "LEVEL",
        allow_hyphen_values = true,
        help_heading = "Compression"
    )]
    compression_level: Option<i32>,
}

#[derive(Subcommand, Debug)]
enum Sub {
    /// Print a new CURVE keypair in Z85, as `public: KEY` and `secret: KEY` lines.
    Keygen,
    /// Run a proxy between two sockets until killed: ROUTER/DEALER (a broker), XSUB/XPUB (a
    /// forwarder) or PULL/PUSH (a streamer). Each socket is TYPE,@EP to bind or TYPE,EP to
    /// connect, e.g. `omq proxy --frontend router,@tcp://*:5559 --backend
    /// dealer,@tcp://*:5560`.
    Proxy {
        /// The frontend socket: TYPE,@EP (bind) or TYPE,EP (connect).
        #[arg(long, value_name = "TYPE,[@]EP")]
        frontend: String,
        /// The backend socket: TYPE,@EP (bind) or TYPE,EP (connect).
        #[arg(long, value_name = "TYPE,[@]EP")]
        backend: String,
        /// A socket that gets a copy of every message, both ways (e.g. push,@ipc:///tmp/tap).
        #[arg(long, value_name = "TYPE,[@]EP")]
        capture: Option<String>,
        /// Runtime to run on: tokio (default), compio, monoio or glommio.
        #[arg(long, value_name = "NAME", default_value = "tokio")]
        runtime: String,
    },
}

/// One socket of a proxy, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProxySocket {
    pub(crate) socket_type: SocketType,
    /// Bind (true) or connect.
    pub(crate) bind: bool,
    pub(crate) endpoint: String,
}

/// What `omq proxy` runs, checked.
#[derive(Debug)]
pub(crate) struct ProxyConfig {
    pub(crate) frontend: ProxySocket,
    pub(crate) backend: ProxySocket,
    pub(crate) capture: Option<ProxySocket>,
    pub(crate) runtime: Backend,
}

fn proxy_socket(flag: &str, spec: &str) -> Result<ProxySocket, Failure> {
    let Some((t, ep)) = spec.split_once(',') else {
        return Err(usage(format!(
            "{flag} {spec:?}: expected TYPE,@ENDPOINT (bind) or TYPE,ENDPOINT (connect)"
        )));
    };
    let socket_type = parse_type(t)?;
    let (bind, endpoint) = match ep.strip_prefix('@') {
        Some(e) => (true, e),
        None => (false, ep),
    };
    if let Err(e) = endpoint.parse::<omq_core::Endpoint>() {
        return Err(usage(format!("{flag} {endpoint:?}: {e}")));
    }
    Ok(ProxySocket {
        socket_type,
        bind,
        endpoint: endpoint.to_string(),
    })
}

/// Whether a run sends or receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Lines of stdin out.
    Send,
    /// Messages in, to stdout.
    Recv,
}

/// What to run, checked.
#[derive(Debug)]
pub(crate) struct Config {
    pub(crate) socket_type: SocketType,
    pub(crate) binds: Vec<String>,
    pub(crate) connects: Vec<String>,
    pub(crate) mode: Mode,
    pub(crate) count: Option<u64>,
    pub(crate) backend: Backend,
    pub(crate) subscribe: Vec<Vec<u8>>,
    /// RADIO: the group each line goes to.
    pub(crate) group: Option<Vec<u8>>,
    /// DISH: the groups joined.
    pub(crate) join_groups: Vec<Vec<u8>>,
    pub(crate) echo: bool,
    /// Splits input lines (None: a line is one part).
    pub(crate) split: Option<Vec<u8>>,
    /// Joins output parts.
    pub(crate) join: Vec<u8>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) linger: Option<Duration>,
    pub(crate) mechanism: MechanismConfig,
    /// COMPRESSION_DICT, read from --compression-dict.
    pub(crate) compression_dict: Option<Bytes>,
    pub(crate) compression_auto_train: bool,
    pub(crate) compression_level: Option<i32>,
}

/// What the command line asks for.
#[derive(Debug)]
pub(crate) enum Command {
    /// Print help or version (already rendered) to stdout and exit 0.
    Print(String),
    /// Print a keypair.
    Keygen,
    /// Run a socket.
    Run(Box<Config>),
    /// Run a proxy.
    Proxy(Box<ProxyConfig>),
}

/// The socket types, by their command-line names: the standard ones, then the draft types
/// that need no routing id to send (PEER does: use the library).
const TYPES: [(&str, SocketType); 18] = [
    ("push", SocketType::Push),
    ("pull", SocketType::Pull),
    ("req", SocketType::Req),
    ("rep", SocketType::Rep),
    ("dealer", SocketType::Dealer),
    ("router", SocketType::Router),
    ("pub", SocketType::Pub),
    ("sub", SocketType::Sub),
    ("xpub", SocketType::XPub),
    ("xsub", SocketType::XSub),
    ("pair", SocketType::Pair),
    ("client", SocketType::Client),
    ("server", SocketType::Server),
    ("scatter", SocketType::Scatter),
    ("gather", SocketType::Gather),
    ("channel", SocketType::Channel),
    ("radio", SocketType::Radio),
    ("dish", SocketType::Dish),
];

fn usage(text: impl Into<String>) -> Failure {
    Failure::Usage(text.into())
}

/// Parses the command line (program name first).
pub(crate) fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command, Failure> {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            return match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    Ok(Command::Print(e.render().to_string()))
                }
                // `omq` alone: the help, on stderr, as a usage error.
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    Err(Failure::Help(e.render().to_string()))
                }
                _ => Err(usage(one_line(&e.render().to_string()))),
            };
        }
    };
    match cli.command {
        Some(Sub::Keygen) => return Ok(Command::Keygen),
        Some(Sub::Proxy {
            frontend,
            backend,
            capture,
            runtime,
        }) => {
            let config = ProxyConfig {
                frontend: proxy_socket("--frontend", &frontend)?,
                backend: proxy_socket("--backend", &backend)?,
                capture: capture.map(|c| proxy_socket("--capture", &c)).transpose()?,
                runtime: Backend::from_name(&runtime)?,
            };
            return Ok(Command::Proxy(Box::new(config)));
        }
        None => {}
    }
    check(cli).map(|c| Command::Run(Box::new(c)))
}

/// Folds clap's error text (a headline, maybe indented detail lines, then usage) into one line.
fn one_line(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(line);
    }
    let out = out.strip_prefix("error: ").unwrap_or(&out).to_owned();
    format!("{out} (see omq --help)")
}

fn parse_type(name: &str) -> Result<SocketType, Failure> {
    let lower = name.to_ascii_lowercase();
    TYPES
        .iter()
        .find(|(n, _)| *n == lower)
        .map(|&(_, t)| t)
        .ok_or_else(|| {
            let names: Vec<&str> = TYPES.iter().map(|(n, _)| *n).collect();
            usage(format!(
                "unknown socket type {name:?} (expected one of {})",
                names.join(", ")
            ))
        })
}

fn check(cli: Cli) -> Result<Config, Failure> {
    use SocketType as T;
    let name = cli.socket_type.unwrap_or_default();
    let t = parse_type(&name)?;
    let backend = Backend::from_name(&cli.backend)?;
    let mode = if cli.send { Mode::Send } else { Mode::Recv };
    let lname = name.to_ascii_lowercase();
    match (mode, t) {
        (Mode::Send, T::Server) => {
            return Err(usage(
                "a server answers its clients: use --recv --echo (client --send sends to it)",
            ))
        }
        (Mode::Send, T::Pull | T::Sub | T::Gather | T::Dish) => {
            return Err(usage(format!("a {lname} socket cannot send: use --recv")))
        }
        (Mode::Send, T::Rep) => {
            return Err(usage(
                "a rep socket answers requests: use --recv --echo (req --send sends requests)",
            ))
        }
        (Mode::Recv, T::Push | T::Pub | T::Scatter | T::Radio) => {
            return Err(usage(format!(
                "a {lname} socket cannot receive: use --send"
            )))
        }
        (Mode::Recv, T::Req) => {
            return Err(usage(
                "a req socket sends first: use --send (it prints each reply)",
            ))
        }
        (Mode::Recv, T::Rep) if !cli.echo => {
            return Err(usage(
                "a rep socket must answer each request before the next: add --echo",
            ))
        }
        _ => {}
    }
    if cli.echo && !(mode == Mode::Recv && matches!(t, T::Rep | T::Router | T::Server)) {
        return Err(usage(
            "--echo is for rep, router and server sockets with --recv",
        ));
    }
    if !cli.subscribe.is_empty() && !matches!(t, T::Sub | T::XSub) {
        return Err(usage("--subscribe is for sub and xsub sockets"));
    }
    match (t, &cli.group, cli.join_groups.is_empty()) {
        (T::Radio, None, _) => return Err(usage("a radio sends to a group: add --group GROUP")),
        (T::Dish, _, true) => {
            return Err(usage(
                "a dish receives the groups it joins: add --join GROUP",
            ))
        }
        (T::Radio | T::Dish, _, _) => {}
        (_, Some(_), _) => return Err(usage("--group is for radio sockets")),
        (_, _, false) => return Err(usage("--join is for dish sockets")),
        _ => {}
    }
    let group = cli.group.map(os_bytes);
    let join_groups: Vec<Vec<u8>> = cli.join_groups.into_iter().map(os_bytes).collect();
    if group
        .iter()
        .chain(&join_groups)
        .any(|g| g.len() > omq_core::message::MAX_GROUP)
    {
        return Err(usage("a group is at most 255 bytes"));
    }
    if let Some(ep) = cli
        .bind
        .iter()
        .chain(&cli.connect)
        .find(|ep| ep.starts_with("inproc://"))
    {
        return Err(usage(format!(
            "{ep}: inproc:// only reaches sockets in the same process; use ipc:// between processes"
        )));
    }
    if cli.count == Some(0) {
        return Err(usage("-n COUNT must be at least 1"));
    }
    let timeout = cli
        .timeout
        .map(|s| {
            Duration::try_from_secs_f64(s)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    usage(format!(
                        "--timeout {s}: expected a positive number of seconds"
                    ))
                })
        })
        .transpose()?;
    let delim = cli.delim.map(|d| unescape(&os_bytes(d))).transpose()?;
    if delim.as_ref().is_some_and(|d| d.is_empty()) {
        return Err(usage("--delim may not be empty"));
    }
    let mut subscribe: Vec<Vec<u8>> = cli.subscribe.into_iter().map(os_bytes).collect();
    if subscribe.is_empty() && matches!(t, T::Sub | T::XSub) {
        subscribe.push(Vec::new());
    }
    let compression_dict = cli
        .compression_dict
        .map(|path| {
            std::fs::read(&path)
                .map(Bytes::from)
                .map_err(|e| usage(format!("--compression-dict {}: {e}", path.display())))
        })
        .transpose()?;
    if compression_dict
        .as_ref()
        .is_some_and(|d| d.is_empty() || d.len() > omq_core::compress::MAX_DICT)
    {
        return Err(usage("--compression-dict: a dictionary is 1 to 8192 bytes"));
    }
    if let Some(l) = cli.compression_level {
        if !omq_core::compress::LEVELS.contains(&l) {
            return Err(usage(format!(
                "--compression-level {l}: zstd+tcp has -7 to 4"
            )));
        }
    }
    let mechanism = mechanism(
        cli.curve_server,
        cli.curve_serverkey,
        cli.curve_secretkey,
        cli.plain,
        cli.plain_server,
    )?;
    Ok(Config {
        socket_type: t,
        binds: cli.bind,
        connects: cli.connect,
        mode,
        count: cli.count,
        backend,
        subscribe,
        group,
        join_groups,
        echo: cli.echo,
        join: delim.clone().unwrap_or_else(|| b"\t".to_vec()),
        split: delim,
        timeout,
        linger: cli.linger.map(Duration::from_millis),
        mechanism,
        compression_dict,
        compression_auto_train: cli.compression_auto_train,
        compression_level: cli.compression_level,
    })
}

fn os_bytes(s: OsString) -> Vec<u8> {
    use std::os::unix::ffi::OsStringExt;
    s.into_vec()
}

/// Undoes the escapes \t \n \r \0 \\ \xHH; any other backslash stays as it is.
fn unescape(s: &[u8]) -> Result<Vec<u8>, Failure> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'\\' || i + 1 == s.len() {
            out.push(s[i]);
            i += 1;
            continue;
        }
        let (byte, used) = match s[i + 1] {
            b't' => (b'\t', 2),
            b'n' => (b'\n', 2),
            b'r' => (b'\r', 2),
            b'0' => (0, 2),
            b'\\' => (b'\\', 2),
            b'x' => {
                let hex = s
                    .get(i + 2..i + 4)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| usage("--delim: \\x needs two hex digits"))?;
                (hex, 4)
            }
            _ => (b'\\', 1),
        };
        out.push(byte);
        i += used;
    }
    Ok(out)
}

/// A key given on the command line: exactly 40 Z85 characters.
fn z85_arg(flag: &str, text: &str) -> Result<(), Failure> {
    if text.len() != 40 {
        return Err(usage(format!(
            "--{flag}: a key is 40 Z85 characters (from omq keygen), got {}",
            text.len()
        )));
    }
    Ok(())
}

fn secret_key(flag: &str, text: &str) -> Result<CurveSecretKey, Failure> {
    z85_arg(flag, text)?;
    CurveSecretKey::from_z85(text).map_err(|e| usage(format!("--{flag}: {e}")))
}

fn mechanism(
    curve_server: Option<String>,
    curve_serverkey: Option<String>,
    curve_secretkey: Option<String>,
    plain: Option<String>,
    plain_server: bool,
) -> Result<MechanismConfig, Failure> {
    if let Some(secret) = curve_server {
        let secret = secret_key("curve-server", &secret)?;
        return Ok(MechanismConfig::curve_server(CurveKeyPair::from_secret(
            secret,
        )));
    }
    if let Some(server) = curve_serverkey {
        z85_arg("curve-serverkey", &server)?;
        let server = CurvePublicKey::from_z85(&server)
            .map_err(|e| usage(format!("--curve-serverkey: {e}")))?;
        let keypair = match curve_secretkey {
            Some(secret) => CurveKeyPair::from_secret(secret_key("curve-secretkey", &secret)?),
            None => generate_keypair(&mut rand_core::OsRng),
        };
        return Ok(MechanismConfig::curve_client(server, keypair));
    }
    if let Some(login) = plain {
        let (user, pass) = login
            .split_once(':')
            .ok_or_else(|| usage("--plain: expected USER:PASS"))?;
        return MechanismConfig::plain_client(user, pass)
            .map_err(|e| usage(format!("--plain: {e}")));
    }
    if plain_server {
        return Ok(MechanismConfig::plain_server());
    }
    Ok(MechanismConfig::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Command, Failure> {
        parse(
            std::iter::once("omq")
                .chain(args.iter().copied())
                .map(OsString::from),
        )
    }

    fn usage_text(args: &[&str]) -> String {
        match run(args) {
            Err(Failure::Usage(text)) => text,
            other => panic!("{args:?}: expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn a_full_command_line() {
        let Ok(Command::Run(c)) = run(&[
            "SUB",
            "--connect",
            "tcp://127.0.0.1:1",
            "--bind",
            "ipc://@x",
            "--recv",
            "-n",
            "3",
            "--subscribe",
            "-a",
            "--subscribe",
            "b",
            "--delim",
            "\\t|",
            "--timeout",
            "0.5",
            "--linger",
            "10",
        ]) else {
            panic!()
        };
        assert_eq!(c.socket_type, SocketType::Sub);
        assert_eq!(c.mode, Mode::Recv);
        assert_eq!(c.count, Some(3));
        assert_eq!(c.subscribe, vec![b"-a".to_vec(), b"b".to_vec()]);
        assert_eq!(c.split.as_deref(), Some(&b"\t|"[..]));
        assert_eq!(c.timeout, Some(Duration::from_millis(500)));
        assert_eq!(c.linger, Some(Duration::from_millis(10)));
        assert_eq!(c.binds, ["ipc://@x"]);
    }

    #[test]
    fn sub_subscribes_to_everything_by_default() {
        let Ok(Command::Run(c)) = run(&["sub", "--connect", "tcp://h:1", "--recv"]) else {
            panic!()
        };
        assert_eq!(c.subscribe, vec![Vec::<u8>::new()]);
        assert_eq!(c.join, b"\t");
        assert_eq!(c.split, None);
    }

    #[test]
    fn mistakes_are_one_line() {
        for args in [
            &["push", "--send"][..],
            &["push", "--bind", "tcp://a:1"],
            &["push", "--bind", "tcp://a:1", "--send", "--recv"],
            &["push", "--bind", "tcp://a:1", "--send", "--bogus"],
            &["push", "--bind", "tcp://a:1", "--send", "-n", "x"],
            &["pull", "--bind", "tcp://a:1", "--send"],
            &["req", "--bind", "tcp://a:1", "--recv"],
            &["rep", "--bind", "tcp://a:1", "--recv"],
            &["pull", "--bind", "tcp://a:1", "--recv", "--echo"],
            &["pull", "--bind", "tcp://a:1", "--recv", "--subscribe", "x"],
            &["pull", "--bind", "tcp://a:1", "--recv", "--timeout", "-1"],
            &["bogus", "--bind", "tcp://a:1", "--recv"],
            &[
                "pull",
                "--bind",
                "tcp://a:1",
                "--recv",
                "--backend",
                "quantum",
            ],
            &[
                "pull",
                "--bind",
                "tcp://a:1",
                "--recv",
                "--curve-server",
                "short",
            ],
            &[
                "pull",
                "--bind",
                "tcp://a:1",
                "--recv",
                "--plain",
                "nocolon",
            ],
            &[
                "pull",
                "--bind",
                "tcp://a:1",
                "--recv",
                "--plain",
                "a:b",
                "--plain-server",
            ],
            &[
                "pull",
                "--bind",
                "tcp://a:1",
                "--recv",
                "--curve-secretkey",
                "x",
            ],
        ] {
            let text = usage_text(args);
            assert!(!text.contains('\n'), "{args:?}: {text}");
            assert!(!text.is_empty());
        }
        assert_eq!(
            usage_text(&[
                "pull",
                "--bind",
                "tcp://a:1",
                "--recv",
                "--backend",
                "quantum"
            ]),
            "unknown backend \"quantum\" (available: tokio, compio, monoio, glommio)"
        );
        assert!(usage_text(&["Bogus", "--bind", "x", "--recv"]).contains("unknown socket type"));
    }

    #[test]
    fn keygen_and_help() {
        assert!(matches!(run(&["keygen"]), Ok(Command::Keygen)));
        let Ok(Command::Print(help)) = run(&["--help"]) else {
            panic!()
        };
        assert!(
            help.contains("keygen") && help.contains("--curve-server"),
            "{help}"
        );
        assert!(help.contains("ANY username"), "{help}");
        assert!(matches!(run(&[]), Err(Failure::Help(_))));
    }

    #[test]
    fn escapes() {
        assert_eq!(unescape(b"a\\tb\\x41\\\\\\q\\").unwrap(), b"a\tbA\\\\q\\");
        assert!(unescape(b"\\xZ1").is_err());
    }

    #[test]
    fn keys_and_logins() {
        let kp = generate_keypair(&mut rand_core::OsRng);
        let secret = kp.secret().to_z85();
        let public = kp.public().to_z85();
        let m = mechanism(Some(secret.to_string()), None, None, None, false).unwrap();
        assert_eq!(m.as_server(), Some(true));
        let m = mechanism(None, Some(public.clone()), None, None, false).unwrap();
        assert_eq!(m.as_server(), Some(false));
        let m = mechanism(None, Some(public), Some(secret.to_string()), None, false).unwrap();
        assert_eq!(m, MechanismConfig::curve_client(*kp.public(), kp.clone()));
        let m = mechanism(None, None, None, Some("u:p:q".into()), false).unwrap();
        assert_eq!(m, MechanismConfig::plain_client("u", "p:q").unwrap());
        // 32 characters would be taken as raw key bytes by the library: refused here.
        assert!(mechanism(Some("x".repeat(32)), None, None, None, false).is_err());
    }
}

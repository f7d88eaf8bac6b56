//! Interop with pyomq (omq.rs's Python binding, from PyPI) over `lz4+tcp://` and
//! `zstd+tcp://`, run on every backend.
//!
//! `conformance/pyomq/peer.py` runs in the venv `scripts/install-deps.sh` makes
//! (`~/.cache/omq/pyomq-venv`, or the python named by `OMQ_PYOMQ_PYTHON`). It opens a PULL and
//! a PUSH and echoes every message it receives: what omq compresses pyomq decodes, and what
//! pyomq compresses (with its own dictionary or the one it trains) omq decodes. A missing
//! venv fails the test: it never skips.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use bytes::Bytes;
use omq_core::compress::{Compression, TrainingParams};
use omq_core::mechanism::MechanismConfig;
use omq_driver::{Message, Options, Runtime, Socket, SocketType};

use crate::backend::Backend;

/// The python that has pyomq.
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("OMQ_PYOMQ_PYTHON") {
        return p.into();
    }
    let home = std::env::var_os("HOME").expect("HOME is set");
    let p = PathBuf::from(home).join(".cache/omq/pyomq-venv/bin/python");
    assert!(
        p.exists(),
        "{} is missing: run scripts/install-deps.sh (it installs pyomq into that venv)",
        p.display()
    );
    p
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("pyomq/peer.py")
}

/// What the two sides do about dictionaries and security.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// No dictionary either way.
    NoDict,
    /// Both sides configured with the same dictionary (COMPRESSION_DICT).
    StaticDict,
    /// Both sides train one from their traffic (COMPRESSION_AUTO_TRAIN).
    Trained,
    /// PLAIN (pyomq the server) with trained dictionaries. (pyomq 0.21 cannot run CURVE over
    /// a compressed transport even with itself, so CURVE with compression is tested
    /// omq-to-omq only.)
    PlainAuth,
}

/// A JSON record (about `len` bytes) of the kind these transports are for.
pub fn json(i: usize, len: usize) -> Vec<u8> {
    let mut s = String::new();
    let mut k = 0;
    while s.len() < len {
        s.push_str(&format!(
            "{{\"id\":{i},\"seq\":{k},\"host\":\"node-{}\",\"metric\":\"cpu.load\",\"value\":{}.{}}},",
            i % 5,
            (i * 7 + k) % 100,
            (i * 13 + k) % 10
        ));
        k += 1;
    }
    s.truncate(len);
    s.into_bytes()
}

/// The messages sent: multipart, with small parts (sent as they are), JSON of a few sizes
/// (compressed), an empty part, incompressible bytes, and a large compressible part.
pub fn messages(count: usize) -> Vec<Message> {
    (0..count)
        .map(|i| match i % 5 {
            0 => Message::multipart([b"topic".to_vec(), json(i, 2000)]),
            1 => Message::multipart([json(i, 300), Vec::new(), json(i, 90)]),
            2 => Message::from(json(i, 700)),
            3 => {
                let mut x = (i as u32).wrapping_mul(2_654_435_761) | 1;
                let noise: Vec<u8> = (0..1500)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 17;
                        x ^= x << 5;
                        x as u8
                    })
                    .collect();
                Message::multipart([b"bin".to_vec(), noise])
            }
            _ if i % 50 == 4 => Message::from(json(i, 200_000)),
            _ => Message::from(json(i, 64)),
        })
        .collect()
}

/// A ZDICT dictionary for zstd, or raw bytes for LZ4, the same on both sides.
fn shared_dict(kind: Compression) -> Bytes {
    match kind {
        Compression::Lz4 => Bytes::from(json(1_000_000, 2048)),
        _ => {
            let mut t = omq_core::compress::train::Trainer::new(TrainingParams::for_kind(kind));
            for i in 0..1000 {
                t.sample(&json(i, 300));
            }
            t.train(kind, 99).expect("a dictionary")
        }
    }
}

struct Peer {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Peer {
    fn spawn(role: &str, scheme: &str, mode: &str, count: usize, eps: &[String]) -> Peer {
        let mut child = Command::new(python())
            .arg(script())
            .args([role, scheme, mode, &count.to_string()])
            .args(eps)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the pyomq peer");
        let out = BufReader::new(child.stdout.take().expect("piped"));
        Peer { child, out }
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.out.read_line(&mut l).expect("read the peer");
        assert!(!l.is_empty(), "the pyomq peer exited before it was ready");
        l.trim().to_string()
    }

    /// Waits (bounded) for the peer to exit and asserts it succeeded.
    fn finish(mut self) {
        for _ in 0..600 {
            if let Some(status) = self.child.try_wait().expect("wait") {
                assert!(status.success(), "the pyomq peer failed: {status}");
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        panic!("the pyomq peer did not finish within 30 s");
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs the echo exchange with pyomq on backend `B`: `omq_binds` says which side listens.
pub fn run_pyomq<B: Backend>(kind: Compression, mode: Mode, omq_binds: bool) {
    let scheme = kind.scheme();
    let count = if kind == Compression::Zstd && mode != Mode::NoDict {
        250
    } else {
        150
    };
    let dict = shared_dict(kind);
    let tmp = std::env::temp_dir().join(format!(
        "omq-pyomq-dict-{}-{scheme}-{mode:?}-{omq_binds}",
        std::process::id()
    ));
    let mut options = Options::default()
        .recv_timeout(Some(Duration::from_secs(20)))
        .send_timeout(Some(Duration::from_secs(20)));
    let py_mode = match mode {
        Mode::NoDict => "none".to_string(),
        Mode::StaticDict => {
            let hex: String = dict.iter().map(|b| format!("{b:02x}")).collect();
            std::fs::File::create(&tmp)
                .and_then(|mut f| f.write_all(hex.as_bytes()))
                .expect("write the dictionary");
            options = options.compression_dict(Some(dict.clone()));
            format!("static:{}", tmp.display())
        }
        Mode::Trained => {
            options = options.compression_auto_train(true);
            "train".into()
        }
        Mode::PlainAuth => {
            options = options
                .compression_auto_train(true)
                .mechanism(MechanismConfig::plain_client("u", "p").expect("short credentials"));
            "train,plain".into()
        }
    };
    let sent = messages(count);
    let got = B::block_on(exchange::<B::R>(
        options,
        scheme,
        &py_mode,
        omq_binds,
        sent.clone(),
    ));
    let _ = std::fs::remove_file(&tmp);
    assert_eq!(got.len(), sent.len());
    for (i, (g, s)) in got.iter().zip(&sent).enumerate() {
        assert!(g == s, "message {i} came back changed");
    }
}

async fn exchange<R: Runtime>(
    options: Options,
    scheme: &str,
    py_mode: &str,
    omq_binds: bool,
    sent: Vec<Message>,
) -> Vec<Message> {
    let push = Socket::<R>::new(SocketType::Push, options.clone()).unwrap();
    let pull = Socket::<R>::new(SocketType::Pull, options).unwrap();
    let peer = if omq_binds {
        let any = format!("{scheme}://127.0.0.1:0");
        let to_py = push.bind(&any).await.unwrap().to_string();
        let from_py = pull.bind(&any).await.unwrap().to_string();
        assert!(to_py.starts_with(scheme), "bound as {to_py}");
        // The peer's PULL connects to our PUSH, its PUSH to our PULL.
        let mut p = Peer::spawn("connect", scheme, py_mode, sent.len(), &[to_py, from_py]);
        assert_eq!(p.line(), "connected");
        p
    } else {
        let mut p = Peer::spawn("bind", scheme, py_mode, sent.len(), &[]);
        let line = p.line();
        let (py_in, py_out) = line.split_once(' ').expect("two endpoints");
        assert!(py_in.starts_with(scheme), "pyomq bound {py_in}");
        push.connect(py_in).await.unwrap();
        pull.connect(py_out).await.unwrap();
        p
    };
    let mut got = Vec::with_capacity(sent.len());
    for m in sent {
        push.send(m).await.unwrap();
    }
    for _ in 0..got.capacity() {
        got.push(pull.recv().await.expect("an echo from pyomq"));
    }
    peer.finish();
    got
}

/// Instantiates the pyomq interop cases for a backend.
#[macro_export]
macro_rules! pyomq_suite {
    ($backend:ty) => {
        mod pyomq_interop {
            use omq_core::compress::Compression::{Lz4, Zstd};
            use $crate::pyomq::{run_pyomq, Mode};
            #[test]
            fn lz4_no_dict() {
                run_pyomq::<$backend>(Lz4, Mode::NoDict, false);
                run_pyomq::<$backend>(Lz4, Mode::NoDict, true);
            }
            #[test]
            fn zstd_no_dict() {
                run_pyomq::<$backend>(Zstd, Mode::NoDict, true);
                run_pyomq::<$backend>(Zstd, Mode::NoDict, false);
            }
            #[test]
            fn lz4_static_dict() {
                run_pyomq::<$backend>(Lz4, Mode::StaticDict, true);
                run_pyomq::<$backend>(Lz4, Mode::StaticDict, false);
            }
            #[test]
            fn zstd_static_dict() {
                run_pyomq::<$backend>(Zstd, Mode::StaticDict, false);
                run_pyomq::<$backend>(Zstd, Mode::StaticDict, true);
            }
            #[test]
            fn lz4_trained() {
                run_pyomq::<$backend>(Lz4, Mode::Trained, false);
                run_pyomq::<$backend>(Lz4, Mode::Trained, true);
            }
            #[test]
            fn zstd_trained() {
                run_pyomq::<$backend>(Zstd, Mode::Trained, true);
                run_pyomq::<$backend>(Zstd, Mode::Trained, false);
            }
            #[test]
            fn lz4_plain_mechanism() {
                run_pyomq::<$backend>(Lz4, Mode::PlainAuth, false);
            }
            #[test]
            fn zstd_plain_mechanism() {
                run_pyomq::<$backend>(Zstd, Mode::PlainAuth, false);
            }
        }
    };
}

//! Automatic detection of a missing io_uring, tested for real: a child process runs with a
//! seccomp filter that refuses io_uring_setup (as an old kernel or a strict container would).
//! omq-compio and omq-monoio must fall back to their epoll drivers and still carry messages;
//! omq-glommio, which has no fallback, must say so with a clear error instead of panicking.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use omq_compio::{Message, Options, Socket, SocketType};

const CHILD: &str = "OMQ_NO_URING_CHILD";

fn no_uring_binary() -> PathBuf {
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("zmq-peer/no_uring.c");
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().join("no-uring");
    std::fs::create_dir_all(&dir).unwrap();
    let binary = dir.join("no_uring");
    let tmp = dir.join(format!("no_uring.{}", std::process::id()));
    let out = Command::new("gcc")
        .args(["-O2", "-Wall", "-o"])
        .arg(&tmp)
        .arg(&source)
        .output()
        .expect("gcc (install it with apt-get install gcc, or run scripts/test.sh)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::rename(&tmp, &binary).unwrap();
    binary
}

fn driver_name() -> String {
    let rt = compio::runtime::RuntimeBuilder::new().build().unwrap();
    format!("{:?}", rt.driver_type())
}

#[test]
fn compio_falls_back_to_epoll_when_io_uring_is_refused() {
    // Here io_uring works: compio picks it.
    assert_eq!(
        driver_name(),
        "IoUring",
        "this machine is expected to have io_uring"
    );
    let out = Command::new(no_uring_binary())
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_without_io_uring",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("driver Poll, 100 messages crossed"), "{text}");
    assert!(
        text.contains("monoio fell back: 100 messages crossed"),
        "{text}"
    );
    assert!(text.contains("glommio refused clearly"), "{text}");
}

/// Runs only inside the filtered child (started by the test above).
#[test]
#[ignore = "run by compio_falls_back_to_epoll_when_io_uring_is_refused in a filtered child"]
fn child_without_io_uring() {
    assert_eq!(
        std::env::var(CHILD).as_deref(),
        Ok("1"),
        "run by the parent test only"
    );
    let driver = driver_name();
    assert_eq!(driver, "Poll");
    let rt = compio::runtime::RuntimeBuilder::new().build().unwrap();
    let n = rt.block_on(async {
        let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
        let ep = pull.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
        let push = Socket::new(SocketType::Push, Options::default()).unwrap();
        push.connect(&ep).await.unwrap();
        for i in 0..100u32 {
            push.send(Message::from(i.to_be_bytes())).await.unwrap();
        }
        let mut n = 0;
        for i in 0..100u32 {
            let m = compio::time::timeout(Duration::from_secs(10), pull.recv())
                .await
                .unwrap()
                .unwrap();
            assert_eq!(m.parts()[0][..], i.to_be_bytes());
            n += 1;
        }
        n
    });
    println!("driver {driver}, {n} messages crossed");

    // monoio's fusion driver probes io_uring and takes its legacy (epoll) driver instead.
    let n = monoio::RuntimeBuilder::<monoio::FusionDriver>::new()
        .enable_timer()
        .build()
        .unwrap()
        .block_on(async {
            let pull = omq_monoio::Socket::new(SocketType::Pull, Options::default()).unwrap();
            let ep = pull.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
            let push = omq_monoio::Socket::new(SocketType::Push, Options::default()).unwrap();
            push.connect(&ep).await.unwrap();
            for i in 0..100u32 {
                push.send(Message::from(i.to_be_bytes())).await.unwrap();
            }
            for i in 0..100u32 {
                let m = pull.recv().await.unwrap();
                assert_eq!(m.parts()[0][..], i.to_be_bytes());
            }
            100
        });
    println!("monoio fell back: {n} messages crossed");

    // glommio cannot run without io_uring: a clear error, not a panic.
    let e = omq_glommio::block_on(async {}).expect_err("io_uring_setup was refused");
    assert!(e.to_string().contains("io_uring is unavailable"), "{e}");
    println!("glommio refused clearly: {e}");
}

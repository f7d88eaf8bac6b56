//! Where io_uring is refused (a seccomp filter, `kernel.io_uring_disabled`), building an
//! executor is a clear error, not glommio's panic. The refusal is injected into a child
//! process (this test binary, re-run) by strace's fault injection; without strace, or where
//! it cannot trace, the test says so and passes.

use std::process::Command;

const CHILD: &str = "OMQ_GLOMMIO_IO_URING_REFUSED_CHILD";
const NAME: &str = "refused_io_uring_is_a_clear_error";

#[test]
fn refused_io_uring_is_a_clear_error() {
    if std::env::var_os(CHILD).is_some() {
        let e = omq_glommio::block_on(async {}).expect_err("io_uring_setup was refused");
        assert!(e.to_string().contains("io_uring is unavailable"), "{e}");
        assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied);
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("strace")
        .args(["-f", "-qq", "-o", "/dev/null"])
        .args(["-e", "inject=io_uring_setup:error=EPERM"])
        .arg(exe)
        .args(["--exact", NAME, "--nocapture"])
        .env(CHILD, "1")
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => return eprintln!("skipped: strace not runnable ({e})"),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && stderr.starts_with("strace:") {
        return eprintln!("skipped: strace cannot trace here: {stderr}");
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "child ran no test:\n{stdout}");
}

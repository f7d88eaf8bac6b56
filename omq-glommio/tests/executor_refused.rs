//! Where glommio cannot run, building an executor is a clear error, not glommio's panic or
//! exit. Each case runs in a child process (this test binary, re-run with one test selected)
//! so that what it breaks stays there.

use std::process::{Command, Output};

const CHILD: &str = "OMQ_GLOMMIO_REFUSED_CHILD";

fn in_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// Runs test `name` of this binary in a child process, behind `wrapper` (a command and its
/// arguments) if any.
fn child(name: &str, wrapper: &[&str]) -> std::io::Result<Output> {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = match wrapper.split_first() {
        Some((prog, args)) => {
            let mut c = Command::new(prog);
            c.args(args).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    cmd.args(["--exact", name, "--nocapture"])
        .env(CHILD, "1")
        .output()
}

fn assert_child_passed(out: &Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "child ran no test:\n{stdout}");
}

// A refused io_uring (seccomp) is tested in conformance/tests/io_uring_fallback.rs, with the
// other backends' fallbacks.

#[test]
fn too_little_locked_memory_is_a_clear_error() {
    if in_child() {
        let (_, hard) = rlimit::getrlimit(rlimit::Resource::MEMLOCK).unwrap();
        rlimit::setrlimit(rlimit::Resource::MEMLOCK, 64 * 1024, hard).unwrap();
        let e = omq_glommio::block_on(async {}).expect_err("RLIMIT_MEMLOCK is too low");
        assert!(e.to_string().contains("ulimit -l"), "{e}");
        return;
    }
    assert_child_passed(&child("too_little_locked_memory_is_a_clear_error", &[]).unwrap());
}

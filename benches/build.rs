//! Records the compiler and the dependency versions the harness was built with, so every run
//! can print them.

use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(&rustc)
        .arg("-V")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map_or_else(|| "unknown".into(), |s| s.trim().to_string());
    println!("cargo:rustc-env=BENCH_RUSTC_VERSION={version}");

    let lock = std::fs::read_to_string("../Cargo.lock").unwrap_or_default();
    let mut deps = Vec::new();
    for name in [
        "tokio", "compio", "monoio", "glommio", "zmq", "zmq-sys", "zeromq", "bytes",
    ] {
        let versions = lock_versions(&lock, name);
        if !versions.is_empty() {
            deps.push(format!("{name} {}", versions.join("/")));
        }
    }
    println!("cargo:rustc-env=BENCH_DEP_VERSIONS={}", deps.join(", "));
    println!("cargo:rerun-if-changed=../Cargo.lock");
    println!("cargo:rerun-if-changed=build.rs");
}

/// The versions of package `name` in a Cargo.lock.
fn lock_versions(lock: &str, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == format!("name = \"{name}\"") {
            if let Some(v) = lines
                .next()
                .and_then(|l| l.trim().strip_prefix("version = "))
            {
                out.push(v.trim_matches('"').to_string());
            }
        }
    }
    out
}

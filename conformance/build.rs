//! Builds a libzmq with its draft API (CLIENT/SERVER, RADIO/DISH and udp, SCATTER/GATHER,
//! PEER/CHANNEL) from the source that the `zeromq-src` crate bundles, for the draft-type interop
//! tests: Debian's libzmq has no draft API. The tests compile their draft peer process
//! (`zmq-peer/zmq_peer.c` with `ZMQ_BUILD_DRAFT_API`) against it; see
//! `src/libzmq_peer.rs`. Nothing in omq links it.

fn main() {
    // libzmq's own compiler warnings are not ours to fix: keep the build output readable.
    std::env::set_var("CXXFLAGS", "-w");
    std::env::set_var("CFLAGS", "-w");
    zeromq_src::Build::new().enable_draft(true).build();
    // zeromq-src leaves the library in OUT_DIR/lib and the headers in OUT_DIR/source/include.
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    println!("cargo:rustc-env=OMQ_DRAFT_LIBZMQ={out}");
    println!("cargo:rerun-if-changed=build.rs");
}

//! omq's conformance suite: the tools its tests share.
//!
//! - [`libzmq_peer`]: a real libzmq in a process of its own, driven by line commands.
//! - [`async_peer`]: the same peer, callable from async tests on any runtime.
//! - [`backend`]: the runtimes the scenarios run on.
//! - [`local`]: omq-to-omq scenarios over tcp, ipc and inproc, run on every backend.
//! - [`scenarios`]: interop scenarios written once, run on every backend.
//! - [`plugged`]: a fifth executor plugged in from outside (async-io), as a worked example.
//! - [`report`]: the whole suite in one call, with a readable report.
//! - [`blocking`]: a minimal blocking driver for one omq-core session on a TCP stream.
//! - [`draft`]: the draft socket types against a libzmq built with its draft API.
//! - [`hostile`]: hostile peers (raw ZMTP bytes) against omq over real sockets, on every backend.
//! - [`pyomq`]: `lz4+tcp://` and `zstd+tcp://` interop with pyomq (omq.rs), on every backend.
//! - [`pyomq_draft`]: the draft socket types against pyomq, on every backend.
//! - [`netns`]: two network namespaces joined by an impaired link (loss, delay, partitions).
//! - [`ports`]: TCP ports held for a test until something listens on them.

pub mod api;
pub mod async_peer;
pub mod backend;
pub mod blocking;
pub mod draft;
pub mod hostile;
pub mod libzmq_peer;
pub mod local;
pub mod monitor_order;
pub mod netfaults;
pub mod netns;
pub mod plugged;
pub mod ports;
pub mod pyomq;
pub mod pyomq_draft;
pub mod report;
pub mod restarts;
pub mod scenarios;
pub mod secure;
pub mod sockopts;
pub mod streams;

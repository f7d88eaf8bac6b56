//! The omq benchmark harness as a library: the cells of every implementation, the child-process
//! runner, the run plan, the per-message cost counters and the report. The `omq-bench` binary
//! (src/main.rs) drives them; see docs/PERFORMANCE.md.

pub mod child;
pub mod common;
pub mod compression;
pub mod cost;
pub mod curve_crypto;
pub mod libzmq;
pub mod omq;
pub mod plan;
pub mod raw;
pub mod report;
pub mod scale;
pub mod spec;
pub mod tables;
pub mod zmqrs;

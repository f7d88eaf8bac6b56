//! omq's conformance suite: the tools its tests share.
//!
//! - [`libzmq_peer`]: a real libzmq in a process of its own, driven by line commands.
//! - [`blocking`]: a minimal blocking driver for one omq-core session on a TCP stream.

pub mod blocking;
pub mod libzmq_peer;

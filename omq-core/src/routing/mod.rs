//! Routing strategies as plain data structures over the socket's pipes: load balancing for
//! sending, fair queuing for receiving, and the per-type rules built on them (ROUTER's identity
//! table, REQ's and REP's envelopes and state, publish/subscribe matching).

pub mod fair_queue;
pub mod load_balance;
pub mod rep;
pub mod req;
pub mod router;
pub mod trie;

pub use fair_queue::FairQueue;
pub use load_balance::LoadBalancer;

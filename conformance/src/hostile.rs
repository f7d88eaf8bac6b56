//! Hostile peers against omq over real sockets: what the suite measures ([`mem`]) and the raw
//! ZMTP its attackers speak ([`raw`]).

pub mod mem;
pub mod raw;

//! The ZMTP wire format: greeting, frames, commands, metadata, and the transmit queue that
//! turns frames into chunks for a vectored write.

pub mod command;
pub mod datagram;
pub mod frame;
pub mod greeting;
pub mod metadata;
pub mod tx;

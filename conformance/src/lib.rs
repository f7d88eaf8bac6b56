pub mod libzmq_peer;

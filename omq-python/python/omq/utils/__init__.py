"""pyzmq's zmq.utils, the parts omq has."""

//! Every interop scenario against libzmq, on omq-compio (io_uring) and on its epoll fallback.

mod io_uring {
    conformance::interop_suite!(conformance::backend::CompioBackend);
}
mod poll {
    conformance::interop_suite!(conformance::backend::CompioPollBackend);
}

mod security {
    conformance::secure_suite!(conformance::backend::CompioBackend);
}

// The draft types against libzmq built with its draft API.
conformance::draft_suite!(conformance::backend::CompioBackend);

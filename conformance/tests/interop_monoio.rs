//! Every interop scenario against libzmq, on omq-monoio (io_uring) and on its legacy (epoll)
//! driver.

mod io_uring {
    conformance::interop_suite!(conformance::backend::MonoioBackend);
}
mod legacy {
    conformance::interop_suite!(conformance::backend::MonoioLegacyBackend);
}

mod security {
    conformance::secure_suite!(conformance::backend::MonoioBackend);
}

// The draft types against libzmq built with its draft API.
conformance::draft_suite!(conformance::backend::MonoioBackend);

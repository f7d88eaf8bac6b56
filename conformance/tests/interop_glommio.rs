//! Every interop scenario against libzmq, on omq-glommio (io_uring, thread-per-core).

conformance::interop_suite!(conformance::backend::GlommioBackend);

mod security {
    conformance::secure_suite!(conformance::backend::GlommioBackend);
}

// The draft types against libzmq built with its draft API.
conformance::draft_suite!(conformance::backend::GlommioBackend);

//! Every interop scenario against libzmq, on omq-glommio (io_uring, thread-per-core).

conformance::interop_suite!(conformance::backend::GlommioBackend);

mod security {
    conformance::secure_suite!(conformance::backend::GlommioBackend);
}

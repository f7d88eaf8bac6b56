//! Every interop scenario against libzmq, on omq-tokio.

conformance::interop_suite!(conformance::backend::TokioBackend);

mod security {
    conformance::secure_suite!(conformance::backend::TokioBackend);
}

// The draft types against libzmq built with its draft API.
conformance::draft_suite!(conformance::backend::TokioBackend);

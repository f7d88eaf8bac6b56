//! Every interop scenario against libzmq, on omq-tokio.

conformance::interop_suite!(conformance::backend::TokioBackend);

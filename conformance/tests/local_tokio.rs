//! omq-to-omq scenarios over tcp, ipc and inproc, on omq-tokio.

conformance::local_suite!(conformance::backend::TokioBackend);

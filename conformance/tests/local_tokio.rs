//! omq-to-omq scenarios over tcp, ipc and inproc, on omq-tokio.

conformance::local_suite!(conformance::backend::TokioBackend);

mod user_api {
    conformance::api_suite!(conformance::backend::TokioBackend);
}

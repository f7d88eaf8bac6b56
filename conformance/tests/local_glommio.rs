//! omq-to-omq scenarios over tcp, ipc and inproc, on omq-glommio.

conformance::local_suite!(conformance::backend::GlommioBackend);

mod user_api {
    conformance::api_suite!(conformance::backend::GlommioBackend);
}

//! omq-to-omq scenarios over tcp, ipc and inproc, on omq-monoio (io_uring and legacy epoll).

mod io_uring {
    conformance::local_suite!(conformance::backend::MonoioBackend);
}
mod legacy {
    conformance::local_suite!(conformance::backend::MonoioLegacyBackend);
}

mod user_api_io_uring {
    conformance::api_suite!(conformance::backend::MonoioBackend);
}

mod user_api_legacy {
    conformance::api_suite!(conformance::backend::MonoioLegacyBackend);
}

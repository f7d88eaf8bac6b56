//! omq-to-omq scenarios over tcp, ipc and inproc, on omq-compio (io_uring and epoll).

mod io_uring {
    conformance::local_suite!(conformance::backend::CompioBackend);
}
mod poll {
    conformance::local_suite!(conformance::backend::CompioPollBackend);
}

mod user_api_io_uring {
    conformance::api_suite!(conformance::backend::CompioBackend);
}

mod user_api_poll {
    conformance::api_suite!(conformance::backend::CompioPollBackend);
}

//! What a lost connection loses, against a libzmq peer SIGKILLed and restarted
//! (`conformance::restarts`): on tokio and on an io_uring backend (monoio).

mod tokio {
    conformance::restart_suite!(conformance::backend::TokioBackend);
}

mod monoio {
    conformance::restart_suite!(conformance::backend::MonoioBackend);
}

//! Hostile peers against omq-compio over real sockets, on io_uring and on the epoll fallback
//! (see conformance/src/hostile.rs).

#[global_allocator]
static HEAP: conformance::hostile::mem::CountingAlloc = conformance::hostile::mem::CountingAlloc;

mod io_uring {
    conformance::hostile_suite!(conformance::backend::CompioBackend);
}

mod poll {
    conformance::hostile_suite!(conformance::backend::CompioPollBackend);
}

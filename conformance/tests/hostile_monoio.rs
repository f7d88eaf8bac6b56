//! Hostile peers against omq-monoio over real sockets, on io_uring (fusion) and on the legacy
//! epoll driver (see conformance/src/hostile.rs).

#[global_allocator]
static HEAP: conformance::hostile::mem::CountingAlloc = conformance::hostile::mem::CountingAlloc;

mod io_uring {
    conformance::hostile_suite!(conformance::backend::MonoioBackend);
}

mod legacy {
    conformance::hostile_suite!(conformance::backend::MonoioLegacyBackend);
}

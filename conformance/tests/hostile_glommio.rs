//! Hostile peers against omq-glommio over real sockets (see conformance/src/hostile.rs).

#[global_allocator]
static HEAP: conformance::hostile::mem::CountingAlloc = conformance::hostile::mem::CountingAlloc;

conformance::hostile_suite!(conformance::backend::GlommioBackend);

//! lz4+tcp:// and zstd+tcp:// interop with pyomq (omq.rs, from PyPI) on omq-monoio.

conformance::pyomq_suite!(conformance::backend::MonoioBackend);

// The draft types against pyomq.
conformance::pyomq_draft_suite!(conformance::backend::MonoioBackend);

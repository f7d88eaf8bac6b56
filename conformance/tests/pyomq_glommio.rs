//! lz4+tcp:// and zstd+tcp:// interop with pyomq (omq.rs, from PyPI) on omq-glommio.

conformance::pyomq_suite!(conformance::backend::GlommioBackend);

// The draft types against pyomq.
conformance::pyomq_draft_suite!(conformance::backend::GlommioBackend);

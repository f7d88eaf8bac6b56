//! lz4+tcp:// and zstd+tcp:// interop with pyomq (omq.rs, from PyPI) on omq-tokio.

conformance::pyomq_suite!(conformance::backend::TokioBackend);

// The draft types against pyomq.
conformance::pyomq_draft_suite!(conformance::backend::TokioBackend);

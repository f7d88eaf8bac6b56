//! lz4+tcp:// and zstd+tcp:// interop with pyomq (omq.rs, from PyPI) on omq-glommio.

conformance::pyomq_suite!(conformance::backend::GlommioBackend);
